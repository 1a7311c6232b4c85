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
