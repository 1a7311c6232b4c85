"""evaluate_memory: exact parameter counts and the estimate per method on the tiny model.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations





def test_evaluate_memory_counts_parameters_exactly(chain):
    chain.upto("evaluate_memory")
    from transformers import AutoModelForCausalLM

    out = chain.step("evaluate_memory")
    model = AutoModelForCausalLM.from_pretrained(chain.tiny)
    assert out["shape"]["n_params"] == sum(p.numel() for p in model.parameters())
    assert len(out["estimates"]) == 6
    assert out["recommended"] == {"method": "lora", "activation_checkpointing": False}
    est = {(e["method"], e["activation_checkpointing"]): e for e in out["estimates"]}
    assert est[("lora", True)]["components"]["layers"] < est[("lora", False)]["components"]["layers"]
    assert est[("qlora", False)]["components"]["weights"] < est[("lora", False)]["components"]["weights"]
    assert all(e["fits"] and e["instance"]["count"] == 1 for e in out["estimates"])


def test_several_gpus_price_each_method_as_it_may_be_sharded():
    """Two GPUs: the rows price ZeRO-3, QLoRA ZeRO-2 (its 4-bit weights are not sharded: the spec refuses ZeRO-3,
    seen in the pty test), GaLore plain DDP — each one a plan the strategy step would accept."""
    from recipes.evaluate_memory import training_for

    for method, dist in (("full", "zero3"), ("lora", "zero3"), ("qlora", "zero2"), ("galore", "ddp")):
        t = training_for(method, True, 512, 2)
        assert t.distribution == dist
        t.check()
