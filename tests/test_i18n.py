"""The catalogue: every key in both languages with the same placeholders, and every key the code uses exists."""
from __future__ import annotations

import re
import string
from pathlib import Path

import recipes
from wizard import catalogue, i18n
from wizard.session import STATUSES

ROOT = Path(__file__).resolve().parent.parent
PREFIXES = catalogue.NAMESPACES
KEY_LITERAL = re.compile(r"""["']((?:%s)\.[a-z0-9_]+(?:\.[a-z0-9_]+)*)["']""" % "|".join(PREFIXES))


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_key_has_both_languages_with_the_same_placeholders():
    for key, entry in i18n.CATALOG.items():
        assert set(entry) == set(i18n.LANGS), key
        assert all(entry[lang].strip() for lang in i18n.LANGS), key
        assert fields(entry["en"]) == fields(entry["zh"]), key


def test_every_key_used_in_the_code_exists():
    used = set()
    for path in list((ROOT / "wizard").rglob("*.py")) + list((ROOT / "recipes").rglob("*.py")):
        if "catalogue" not in path.parts:  # the catalogue itself names every key
            used |= set(KEY_LITERAL.findall(path.read_text()))
    used |= {f"step.{n}.{part}" for n in recipes.STEPS for part in ("title", "desc")}
    used |= {f"status.{s}" for s in STATUSES}
    used |= {f"memory.part.{p}" for p in ("weights", "reference", "adapter", "gradients", "optimizer", "layers", "attention_scores",
                                          "logits", "allocator", "cuda_context", "compile")}
    used |= {f"training.mem.{k}" for k in ("cuda_peak_reserved", "cpu_peak_rss", "None")}
    missing = sorted(k for k in used if k not in i18n.CATALOG)
    assert not missing, missing
    assert len(used) > 150  # the scan really found the code's keys


def test_the_catalogue_has_one_module_per_namespace(tmp_path, monkeypatch):
    """Each namespace's keys live in wizard/catalogue/<namespace>.py and nowhere else; a stray key is refused."""
    files = {p.stem for p in (ROOT / "wizard" / "catalogue").glob("*.py")} - {"__init__"}
    assert files == set(catalogue.NAMESPACES)
    assert {k.split(".")[0] for k in i18n.CATALOG} == set(catalogue.NAMESPACES)
    assert set(recipes.STEPS) - {"chat"} <= set(catalogue.NAMESPACES)  # every step that says anything has its own
    import importlib

    mod = importlib.import_module("wizard.catalogue.chat")
    monkeypatch.setitem(mod.MESSAGES, "deploy.stray", {"en": "x", "zh": "x"})
    import pytest

    with pytest.raises(ValueError, match="deploy.stray"):
        catalogue.load()


def test_language_comes_from_flag_then_locale():
    assert i18n.detect_lang(["--lang", "zh"], {}) == "zh"
    assert i18n.detect_lang(["--lang=en"], {"LANG": "zh_CN.UTF-8"}) == "en"
    assert i18n.detect_lang([], {"LANG": "zh_CN.UTF-8"}) == "zh"
    assert i18n.detect_lang([], {"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert i18n.detect_lang([], {}) == "en"


def test_nested_messages_render_in_the_current_language():
    from recipes.base import msg

    m = msg("deploy.backend.label", backend="vllm", state=msg("deploy.not_installed_short"))
    assert i18n.render(m) == "vllm (not installed)"
    i18n.set_lang("zh")
    try:
        assert i18n.render(m) == "vllm（未安装）"
    finally:
        i18n.set_lang("en")


def test_the_evaluation_s_metric_names_are_said_in_the_reader_s_language():
    """The acceptance trial: the zh table and report said "held-out loss", "(tie)", "vs". The session keeps them in
    English (data); they are shown through the catalogue."""
    from recipes.handoff import Evaluation, metric_words

    figures = "loss 2.0 vs 3.0, rouge_l 0.07 vs 0.07 (tie)"
    ev = Evaluation(verdict={"beats": True, "checks": {"loss": True, "rouge_l": None}, "figures": figures})
    i18n.set_lang("zh")
    try:
        assert metric_words("held-out loss", i18n.t) == "留出集损失"  # no space between Han words (trial U)
        said = i18n.render(ev.headline(i18n.t)[1])
        assert "损失 2.0 对比 3.0" in said and "（持平）" in said and " vs " not in said, said
        assert "3.0，" in said and ", " not in said, said  # no ASCII ", " between Chinese words (N12)
        assert i18n.t("engine.reopened", keys=["a.x", "a.y"], step="a", later=["b", "c"]).count("、") == 2
        # a name in a list that is also a catalogue key stays a name (trial J: the question's text was pasted in)
        assert "choose_strategy.max_steps、" in i18n.t("engine.reopened", keys=["choose_strategy.max_steps", "a.y"],
                                                      step="a", later=["b"])
    finally:
        i18n.set_lang("en")
    assert metric_words("held-out preference accuracy (unpaired: AUC)", i18n.t) == \
        "held-out preference accuracy (unpaired: AUC)"  # English: as recorded
    assert figures in i18n.render(ev.headline(i18n.t)[1])


def test_every_approximate_name_of_the_memory_model_is_said_in_both_languages():
    """The estimate's "approximate" entries were shown as recorded in the zh UI ("llava without checkpointing,
    vision": issue 46's tryout): each name the memory model can write has a catalogue entry, English as recorded."""
    from recipes.memory import model as memory

    names = [*memory.APPROXIMATE_NAMES, "llava" + memory.NO_CKPT_SUFFIX, "quantized:gptq", "something-new"]
    for name in names:
        m = memory.approximate_words(name)
        assert m.key in i18n.CATALOG, name
        assert i18n.render(m) == name  # English: as recorded
    i18n.set_lang("zh")
    try:
        assert i18n.render(memory.approximate_words("llava" + memory.NO_CKPT_SUFFIX)) == "llava（不开检查点）"
        assert i18n.render(memory.approximate_words("vision")) == "视觉部分"
    finally:
        i18n.set_lang("en")


def test_hints_name_yichui_as_it_was_typed():
    """Issue 46 item 1 (trial I): with yichui not on PATH, every hint prints the path that started it — a command
    (`yichui resume …`), the help option, and `yichui` alone — but not words that merely contain the name."""
    from wizard import i18n

    i18n.set_command(".venv/bin/yichui", ["resume", "show"])
    try:
        pat = i18n._command[1]
        out = pat.sub(".venv/bin/yichui", "run `yichui resume X`; `yichui -h`; `yichui` starts one; "
                                          "YICHUI_HOME, ~/.yichui`, yichui-serve, the yichui project")
        assert out == ("run `.venv/bin/yichui resume X`; `.venv/bin/yichui -h`; `.venv/bin/yichui` starts one; "
                       "YICHUI_HOME, ~/.yichui`, yichui-serve, the yichui project")
        assert i18n.t("session.none_unfinished", home="/h") == \
            "No unfinished session in /h: `.venv/bin/yichui` starts a new one."
    finally:
        i18n.set_command("yichui", [])


def test_every_breakdown_row_and_column_has_words():
    """The memory breakdown's parts and moments are catalogue keys made at run time (``memory.part.<part>``,
    ``memory.phase.<moment>[_peak]``): every one that a plan of each objective, method and engine produces is in the
    catalogue (the DPO reference's moment once showed its key)."""
    import json
    from dataclasses import replace

    from recipes.memory import model as memory
    from recipes.training.spec import TrainingSpec

    shape = memory.shape_from_config(json.loads((ROOT / "bench" / "configs" / "qwen2.5-0.5b" / "config.json")
                                                .read_text()))
    base = TrainingSpec(micro_batch=2)
    plans = [base, replace(base, objective="dpo"), replace(base, objective="kto"), replace(base, objective="grpo", grad_accum=4),
             replace(base, method="full", objective="dpo"), replace(base, method="qlora"), replace(base, method="dora"),
             replace(base, method="full", distribution="zero3", processes=2), replace(base, method="full", distribution="fsdp2",
                                                                                 processes=2),
             replace(base, compile_layers=True), replace(base, activation_checkpointing=False)]
    keys = set()
    for t in plans:
        cols, rows = memory.breakdown(memory.estimate(shape, t))
        keys |= set(cols) | {r[0] for r in rows}
    assert {"memory.part.reference_forward", "memory.phase.generation", "memory.part.gathered"} <= keys
    missing = sorted(k for k in keys if k not in i18n.CATALOG)
    assert not missing, missing


def test_commands_in_chinese_text_keep_their_placeholders():
    """Issue 46 trial L (L2): `yichui chat 会话` — a command's placeholder translated reads as text to type; commands
    stay as the shell takes them (SESSION, PATH, …) in every language."""
    import re

    bad = {k: v["zh"] for k, v in i18n.CATALOG.items() if re.search(r"yichui [a-z][a-z -]* (会话|路径|步骤)", v["zh"])}
    assert not bad, bad
