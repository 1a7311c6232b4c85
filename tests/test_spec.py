"""TrainingSpec as the one home of the cross-field rules (issue 45): every rule a spec breaks, each with the fields
it involves, so that the wizard says each at a question of its own and `estimate`, the planner and the trainer refuse
the same first one."""
import dataclasses

import pytest

from recipes.base import Refusal
from recipes.training.spec import TrainingSpec

FIELDS = {f.name for f in dataclasses.fields(TrainingSpec)}


def test_every_rule_broken_is_listed_with_its_fields_and_check_raises_the_first():
    t = TrainingSpec(method="qlora", distribution="zero3", processes=2, liger=True, compile_layers=True)
    found = t.problems()
    keys = [p.refusal.key for p in found]
    assert keys == ["training.qlora_sharded", "training.liger_and_compile",
                    "training.qlora_and_compile"], keys
    assert all(set(p.fields) <= FIELDS and p.fields for p in found)
    with pytest.raises(Refusal) as e:
        t.check()
    assert e.value.key == keys[0]
    # per field: the liger question hears Liger's rule only; a field no rule names hears nothing
    assert [p.refusal.key for p in t.problems("liger")] == ["training.liger_and_compile"]
    assert [p.refusal.key for p in t.problems("method")] == ["training.qlora_sharded",
                                                             "training.qlora_and_compile"]
    assert t.problems("lora_rank") == [] and TrainingSpec().problems() == []


@pytest.mark.parametrize("spec,field,key", [
    (dict(objective="dpo", method="galore"), "method", "training.objective_unsupported"),
    (dict(objective="dpo", packing=True), "packing", "training.objective_unsupported"),
    (dict(objective="kto", micro_batch=1), "micro_batch", "training.kto_micro_batch"),
    (dict(objective="grpo", micro_batch=3, num_generations=4), "grad_accum", "training.grpo_groups"),
    (dict(objective="grpo", completion_length=600, seq_len=512), "seq_len", "training.grpo_completion"),
    (dict(objective="grpo", rewards=("file",)), "reward_file", "training.reward_file_missing"),
    (dict(training_backend="unsloth", method="dora"), "training_backend", "training.unsloth_unsupported"),
    (dict(offload="optimizer"), "distribution", "training.offload_needs_sharding"),
    (dict(sequence_parallel=2, processes=2, distribution="zero2"), "sequence_parallel", "training.sp_needs_zero3"),
])
def test_each_rule_names_the_fields_whose_questions_say_it(spec, field, key):
    t = TrainingSpec(**spec)
    assert [p.refusal.key for p in t.problems(field)][:1] == [key]
    assert all(key != p.refusal.key for p in t.problems("learning_rate"))


def test_a_value_of_the_wrong_type_is_named_alone():
    """A hand-edited "lots" is that field's problem; no cross-field rule is asked of it (they would compare a text
    with a number)."""
    t = TrainingSpec(micro_batch="lots", objective="grpo")  # type: ignore[arg-type]
    assert [(p.fields, p.refusal.key) for p in t.problems()] == [(("micro_batch",), "training.bad_number")]


def test_the_gpu_count_question_takes_what_the_trainer_takes():
    """Issue 46, trial E: "How many GPUs?" took 99, then the strategy step refused "processes = 99 … give 1 to 64" and
    ended the run. The question now holds the trainer's own range, so a typo is asked again at once."""
    import types

    import recipes
    from recipes.training.spec import limits
    from wizard.engine import check

    (q,) = [q for q in recipes.load("evaluate_memory").questions(types.SimpleNamespace(task="finetune"))
            if q.key == "gpu_count"]
    lo, hi = limits("processes")
    assert check(q, str(hi), {})[1] is None and check(q, str(lo), {})[1] is None
    refused = check(q, "99", {})[1]
    assert refused.key == "answer.out_of_range" and refused.args["hi"] == hi == 64
