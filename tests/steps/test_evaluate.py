"""evaluate: the verdict of fine-tuned against base.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations





def test_the_verdict_says_when_fine_tuning_did_not_help():
    """evaluate.verdict: every metric both models have must favour the fine-tuned one (lower loss, higher ROUGE-L)."""
    from recipes import evaluate

    better = {"heldout:base": {"loss": 3.0, "rouge_l": 0.1}, "heldout:finetuned": {"loss": 2.0, "rouge_l": 0.4}}
    assert evaluate.verdict(better) == {"beats": True, "checks": {"loss": True, "rouge_l": True},
                                        "figures": "loss 2.0 vs 3.0, rouge_l 0.4 vs 0.1"}
    worse = {"heldout:base": {"loss": 2.0, "rouge_l": 0.4}, "heldout:finetuned": {"loss": 2.5, "rouge_l": 0.5}}
    assert evaluate.verdict(worse)["checks"] == {"loss": False, "rouge_l": True} and not evaluate.verdict(worse)["beats"]
    endpoint_only = {"heldout:base": {"loss": None, "rouge_l": 0.2}, "heldout:finetuned": {"loss": None, "rouge_l": 0.2}}
    tie = evaluate.verdict(endpoint_only)  # a tie is neither a gain nor a loss: nothing moved, no verdict
    assert tie["checks"] == {"rouge_l": None} and tie["beats"] is None and "(tie)" in tie["figures"]
    # issue 46 item 11: loss improved and ROUGE-L tied at 0.0 (a tiny model) was "did NOT beat the base"
    moved = {"heldout:base": {"loss": 3.0, "rouge_l": 0.0}, "heldout:finetuned": {"loss": 2.0, "rouge_l": 0.0}}
    assert evaluate.verdict(moved) == {"beats": True, "checks": {"loss": True, "rouge_l": None},
                                       "figures": "loss 2.0 vs 3.0, rouge_l 0.0 vs 0.0 (tie)"}
    assert evaluate.verdict({"heldout:finetuned": {"loss": 1.0}}) is None  # no base: nothing to compare
    # issue 46's tryout: loss far better, ROUGE-L a little worse, on 2 held-out conversations, was a bold "does NOT
    # beat the base": said as mixed (better on loss, worse on ROUGE-L), and the report gives no bold verdict on 2
    from recipes.handoff import Evaluation
    from wizard import i18n
    from wizard import i18n

    split = {"heldout:base": {"loss": 6.3681, "rouge_l": 0.1227}, "heldout:finetuned": {"loss": 3.9289, "rouge_l": 0.1055}}
    v = evaluate.verdict(split)
    assert v["beats"] is False and v["mixed"] == {"better": ["loss"], "worse": ["rouge_l"]}
    warn, line = Evaluation(verdict=v).headline(i18n.t)
    text = i18n.render(line)
    assert warn and "better than the base on loss and worse on rouge_l" in text and "NOT" not in text, text


def test_the_report_keeps_a_multi_line_reply_apart_and_speaks_the_session_s_language(tmp_path):
    """Issue 46 item 14: report.md ran a multi-line answer into the next label, and was English in a Chinese
    session. Each reply is now a block quote of its own; every sentence comes from the catalogue."""
    import types

    from recipes import evaluate
    from wizard import i18n

    parts = {"heldout:base": {"loss": 3.0, "rouge_l": 0.1, "where": None},
             "heldout:finetuned": {"loss": 2.0, "rouge_l": 0.4, "where": None}}
    examples = [{"prompt": "List two colours.", "reference": "red\nblue", "base": "green", "finetuned": "- red\n- blue"}]
    config = {"models": {"base": "/m/base", "finetuned": "/m/ft"}}
    for lang, beats, label, ft in (("en", "**The fine-tuned model beats the base**", "**reference**:", "finetuned"),
                                   ("zh", "**微调后的模型优于基座模型**", "**参考答案**:", "微调后")):
        i18n.set_lang(lang)
        try:
            ctx = types.SimpleNamespace(t=i18n.t, session_id="s1")
            (tmp_path / lang).mkdir()
            report, _ = evaluate.write_report(ctx, tmp_path / lang, config, parts, ["base", "finetuned"], [], examples)
        finally:
            i18n.set_lang("en")
        text = report.read_text()
        assert beats in text and label in text, text
        # the models named in the report's language (the 46 tryout C: "base"/"finetuned" in the zh report)
        assert f"**{ft}**:\n\n> - red\n> - blue\n" in text and "> red\n> blue\n" in text, text


def test_too_few_held_out_gives_the_figures_without_a_verdict(tmp_path):
    """The 46 tryout C: with 2 held-out conversations the warning said "a verdict wants 10 or more" and the next line
    gave one ("The fine-tuned model beats the base …"). Below Evaluation.FEW_HELDOUT the headline is the figures,
    said as a warning, with no verdict; from it on, the verdict."""
    from recipes.handoff import Evaluation
    from wizard import i18n

    v = {"beats": True, "checks": {"loss": True}, "figures": "loss 2.0 vs 3.0"}
    warn, line = Evaluation(verdict=v, heldout_samples=2).headline()
    assert warn and line.key == "evaluate.few_figures" and line.args == {"n": 2, "figures": "loss 2.0 vs 3.0"}
    assert "too few to judge" in i18n.render(line) and "beats" not in i18n.render(line)
    warn, line = Evaluation(verdict=v, heldout_samples=Evaluation.FEW_HELDOUT).headline()
    assert not warn and line.key == "evaluate.beats"
    # report.md says the same: the figures, no verdict (the 46 tryout D: "不足以下结论：微调后的模型优于基座模型")
    import types

    from recipes import evaluate

    parts = {"heldout:base": {"loss": 3.0, "rouge_l": 0.1, "where": None},
             "heldout:finetuned": {"loss": 2.0, "rouge_l": 0.4, "where": None}}
    for lang, verdict_words in (("en", "beats"), ("zh", "优于")):
        i18n.set_lang(lang)
        try:
            (tmp_path / lang).mkdir()
            def t(x, **k):  # a step context's t: a catalogue key or a Msg
                return i18n.t(x, **k) if isinstance(x, str) else i18n.render(x)

            report, _ = evaluate.write_report(types.SimpleNamespace(t=t, session_id="s1"), tmp_path / lang,
                                              {"models": {"base": "/m/b", "finetuned": "/m/f"}}, parts,
                                              ["base", "finetuned"], [], [], heldout=2)
            few = i18n.t("evaluate.few_figures", n=2, figures="").split("：")[0].split(":")[0]
        finally:
            i18n.set_lang("en")
        text = report.read_text()
        assert few in text and verdict_words not in text, text


def test_a_kto_evaluation_without_both_kinds_held_out_says_why_it_has_no_preference_score():
    """Trial W: KTO on labelled replies with one held out showed loss and ROUGE only — the preference score the
    README promises was left out without a word. The step warns with why (one kind held out) and the ways on."""
    from recipes import evaluate
    from wizard import i18n

    both = [{"prompt": "Hi?", "completion": "Hello.", "label": True},
            {"prompt": "Hi?", "completion": "Go away.", "label": False}]
    said = evaluate.kto_unranked("kto", "training", [])  # preference_split gives [] for one kind
    text = i18n.render(said) if said is not None else ""
    assert "one kind only, or no labelled replies" in text and "val_ratio" in text, text
    assert evaluate.kto_unranked("kto", "training", both) is None
    assert evaluate.kto_unranked("kto", "none", []) is None  # no held-out set asked for: nothing to say
    assert evaluate.kto_unranked("dpo", "training", []) is None and evaluate.kto_unranked("sft", "file", []) is None
