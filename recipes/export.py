"""Step 6 — export: merge the LoRA adapter into the base, make the quantized formats the chosen serving engine
loads, and prove each one is still the model.

After QLoRA the base is reloaded unquantized before merging (never merge into 4-bit weights); the merge is checked
against the unmerged adapter model (largest logit difference). The export carries the tokenizer, the chat template
used in training and a generation config whose EOS tokens include the template's end token. Quantized formats
(recipes/quantization/quantize.py) are made from the merged model; calibration samples come from the training split, the quality
check (recipes/quantization/quality.py) runs on held-out ones (the validation split, else training records after the calibration
ones). Every artifact gets a model card (README.md) saying how it was made and what the check measured. Each
artifact is written into a temp folder and renamed when complete, so a half-written export never looks finished;
an interrupted export resumes with the artifacts not yet recorded.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from recipes.rundir import RunDir
from recipes.data import datasets, split
from recipes.envs import envs_dir
from recipes.hub.snapshot import size_text
from recipes.memory import model as memory
from recipes.quantization import quality
from recipes.quantization import quantize
from recipes.base import Choice, Ctx, Question, Record, StepError, in_range, msg
from recipes.handoff import Download, Evaluation, ExportResult, ModelChoice, StrategyChoice, TrainingResult, trusted
from recipes.training.spec import FULL_WEIGHTS
from recipes.serving import engines
from recipes.serving import spec as specs

name = "export"
requires = ("select_model", "choose_strategy", "download", "train")
SMOKE_QUESTION = "What is LoRA?"  # when training left no sample question (the quantize task)
SMOKE_TOKENS = 128  # the greedy reply of the stop check must end within this many tokens


def _default_engine(ctx: Ctx, gpu: bool) -> str:
    """The first GPU engine (vLLM, SGLang, LMDeploy) installed here, else transformers: a default the deploy step
    can then start (it refuses an engine that is not installed)."""
    if gpu:
        for e in specs.GPU_ENGINES:
            if engines.find(e, envs_dir(ctx.home)):
                return e
    return "transformers"


def questions(ctx: Ctx) -> list[Question]:
    gpu = bool(memory.detect_gpus())
    config = ctx.result(ModelChoice).config or {}  # unknown before select_model: checked when known
    n_train = ctx.result(StrategyChoice).data.n_train

    envs = envs_dir(ctx.home)
    loads = lambda engine: quantize.engine_formats(engine, envs, engines.cache_dir(ctx.home))  # noqa: E731

    def formats_ok(v, a):
        engine = a.get("serve_with", "transformers")
        for f in v:
            if f not in quantize.FORMATS:
                continue  # the engine names it as not a choice
            if f not in loads(engine):
                return msg("export.engine_cannot_load", engine=engine, format=f,
                           engines=[e for e in quantize.engines() if f in loads(e)])
            why = quantize.unsupported(f, config, gpu)
            if why:
                return msg(why[0], **why[1])
        return None

    calibrated = lambda a: any(quantize.FORMATS[f].calibrated for f in a.get("formats", []))  # noqa: E731
    as_is = ctx.task == "quantize" and not ctx.result(TrainingResult).adapter_dir

    def engine_here(v, a):
        """A GPU engine for a session that deploys on this machine: refused at once where there is no GPU (the
        deploy step would refuse it after the export's work, issue 46 item 6); an engine the deploy step does not
        launch (llama.cpp) likewise (it failed there with a KeyError after training and export: the tester's N7); a
        quantize-only session may export for an engine on another machine."""
        import recipes

        deploys = "deploy" in recipes.TASKS.get(ctx.task, ())
        if v not in specs.SPECS and deploys:  # llama.cpp: a GGUF export target the deploy step does not launch
            return msg("export.engine_not_deployed", engine=v, engines=list(specs.ENGINES), session=ctx.session_id)
        if v in specs.GPU_ENGINES and not gpu and deploys:
            return msg("export.engine_needs_gpu", engine=v, session=ctx.session_id)
        return None

    def check_data(v, a):
        try:
            datasets.load(v, skip_bad=True)
        except datasets.DataError as e:
            return e.msg
        return None

    return [
        Question("dtype", "select", "export.dtype", default="auto",
                 choices=[Choice("auto", msg("export.dtype.auto")), Choice("bfloat16", "bfloat16"),
                          Choice("float16", "float16"), Choice("float32", "float32")]),
        Question("serve_with", "select", "export.serve_with", default=lambda a: _default_engine(ctx, gpu),
                 choices=[Choice(e, msg("export.engine." + e)) for e in quantize.engines()], validate=engine_here),
        Question("formats", "checkbox", "export.formats",
                 # a vision-language model: merged only (the quantizers are for text models so far)
                 default=lambda a: [f for f in ("bnb-4bit",) if f in loads(a["serve_with"])
                                    and not isinstance(config.get("vision_config"), dict)],
                 choices=lambda a: [Choice(f, msg("export.format." + f))
                                    for f in loads(a["serve_with"]) if f != "merged"],
                 validate=formats_ok),
        Question("calibration_samples", "int", "export.calibration_samples", when=calibrated,
                 default=min(128, max(n_train, quantize.MIN_CALIBRATION)),
                 validate=lambda v, a: msg("export.too_few_calibration", n=v, min=quantize.MIN_CALIBRATION)
                 if v < quantize.MIN_CALIBRATION else msg("export.calibration_over", n=v, records=n_train)
                 if n_train and v > n_train else None),
        Question("calibration_seq_len", "int", "export.calibration_seq_len", when=calibrated,
                 default=min(512, ctx.result(StrategyChoice).spec().seq_len),
                 validate=in_range(16, 32768)),
        # at most the held-out conversations there are (16 asked of 2 warned on every run: issue 46 trial J, J8)
        Question("quality_samples", "int", "export.quality_samples", validate=in_range(1, 10000),
                 default=min(16, ctx.result(StrategyChoice).data.n_validation or 16),
                 when=lambda a: bool(a.get("formats"))),
        Question("calibration_data", "path", "export.calibration_data", validate=check_data,
                 default=lambda a: str(datasets.bundled_dataset_path()),
                 when=lambda a: as_is and bool(a.get("formats"))),
    ]


@contextlib.contextmanager
def _atomic_dir(final: Path):
    """Yield a temp folder beside ``final``; it replaces ``final`` on success and is removed on failure."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp makes 0700: the export is a folder like any other (issue 46 item 21)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def merge(base_dir: str, adapter_dir: str | None, method: str, out: Path, dtype: str, code: bool = False,
          image_size: int = 0) -> dict | None:
    """Merge ``adapter_dir`` into the unquantized base (a pre-quantized one dequantized first), or copy a full
    fine-tune; with method "none" and no adapter: the base itself; and save to ``out`` (safetensors).
    ``dtype``: "auto" (transformers: the config's dtype, else the checkpoint's) or a torch dtype name.
    ``code``: the user's recorded yes to the model's own code (trust_remote_code; save_pretrained copies the code).
    ``image_size``: a vision-language model trained at at most ``image_size``² pixels per image (a dynamic-resolution
    processor): its processor files say so, so the merged model is served as it was trained (0: the base's).

    Returns:
        for an adapter, the merge check: the largest absolute difference between the logits of the adapter model
        (unmerged, on the unquantized base) and of the merged model on a probe sentence; None for a full model.
    """
    from transformers import AutoTokenizer, CompressedTensorsConfig, GenerationConfig

    import torch

    from recipes.model import prequantized
    from recipes.model.vision import PROCESSOR_FILES, auto_model_class, trained_class, write_max_pixels
    from recipes.model.vision import max_pixels as vision_max_pixels

    # the class the trainer trained (image-text-to-text for Qwen2-VL, LLaVA, …; it says so beside the adapter)
    AutoModelForCausalLM = auto_model_class(base_dir, trained_class(adapter_dir) if adapter_dir else None)  # noqa: N806
    tok = AutoTokenizer.from_pretrained(adapter_dir if adapter_dir and (Path(adapter_dir) / "tokenizer_config.json")
                                        .exists() else base_dir, trust_remote_code=code)
    check = None
    # a pre-quantized base (LoRA trained on it kept quantized): dequantized, the adapter merged into that
    dense = {"quantization_config": CompressedTensorsConfig(dequantize=True)} \
        if prequantized.read(json.loads((Path(base_dir) / "config.json").read_text())) else {}
    if method == "none":  # the quantize task: the downloaded model as it is, in the chosen dtype
        model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=dtype, trust_remote_code=code, **dense)
    elif method in FULL_WEIGHTS:  # every weight trained: the trainer saved a whole model
        model = AutoModelForCausalLM.from_pretrained(adapter_dir, dtype=dtype, trust_remote_code=code)
    else:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(base_dir, dtype=dtype, trust_remote_code=code,  # also QLoRA's
                                                    **dense)
        peft_model = PeftModel.from_pretrained(base, adapter_dir).eval()
        _all_adapter_weights_loaded(peft_model, Path(str(adapter_dir)))
        probe = tok("The merged model must answer like the adapter model.", return_tensors="pt")["input_ids"]
        with torch.no_grad():
            before = peft_model(probe).logits.float()
            model = peft_model.merge_and_unload()
            after = model(probe).logits.float()
        check = {"max_abs_logit_diff": float((before - after).abs().max()), "dtype": str(model.dtype),
                 "tokens": int(probe.shape[1])}
    try:
        gen = GenerationConfig.from_pretrained(base_dir)
    except OSError:
        gen = GenerationConfig()
    eos = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id] if gen.eos_token_id is not None else []
    if tok.eos_token_id is not None and tok.eos_token_id not in eos:
        eos.append(tok.eos_token_id)  # the template's end-of-turn token: without it servers never stop
    gen.eos_token_id = eos
    if gen.pad_token_id is None and tok.pad_token_id is not None:
        gen.pad_token_id = tok.pad_token_id
    model.generation_config = gen
    model.save_pretrained(out)
    tok.save_pretrained(out)
    for name in PROCESSOR_FILES:  # a vision-language model's processor (image settings, template) as the base has it
        if (Path(base_dir) / name).is_file() and not (out / name).exists():
            shutil.copyfile(Path(base_dir) / name, out / name)
    if image_size and vision_max_pixels(out):
        write_max_pixels(out, image_size ** 2)
    return check


def _all_adapter_weights_loaded(peft_model, adapter_dir: Path) -> None:
    """Every tensor of the adapter file found its module in the model (peft only warns about the others, and a merge
    of nothing passes the logit check).

    Raises:
        StepError("export.adapter_mismatch"): names the count and the first missing tensor.
    """
    from peft import get_peft_model_state_dict
    from safetensors import safe_open

    path = adapter_dir / "adapter_model.safetensors"
    if not path.is_file():
        return
    with safe_open(str(path), "pt") as f:
        saved = set(f.keys())
    loaded = set(get_peft_model_state_dict(peft_model).keys())
    missing = sorted(saved - loaded)
    if missing:
        raise StepError("export.adapter_mismatch", n=len(missing), total=len(saved), example=missing[0][:160],
                        path=str(adapter_dir))


def _size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def _size_beside(d: Path) -> int:
    """Bytes of a model folder's files other than its weights (tokenizer, configs): each export copies them."""
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()
               and p.suffix not in (".safetensors", ".bin", ".pt", ".gguf"))


def _linear_share(config: dict | None) -> float:
    """The share of the parameters in the decoder's linear layers (what a quantized export quantizes), from the
    memory model's shape of config.json; 1.0 (every byte quantized: the smallest copy) when it cannot be read."""
    try:
        shape = memory.shape_from_config(config or {})
        return min(1.0, shape.n_linear / shape.n_params) if shape.n_params else 1.0
    except Exception:  # a config the memory model refuses was said at step 2; here only a size is estimated
        return 1.0


def _texts(ctx: Ctx, model_dir: str, n_calibration: int, n_quality: int, code: bool = False) -> tuple[list[str], list[str], str]:
    """Calibration texts (the first of the training split) and held-out texts (the validation split, else the
    training records after the calibration ones, else — too few records — training records), rendered through the
    model's chat template, and the catalogue key naming where the held-out ones come from."""
    from transformers import AutoTokenizer

    train, held, source = _splits(ctx, n_calibration)
    tok = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=code)
    render = lambda c: tok.apply_chat_template(c, tokenize=False)  # noqa: E731
    return [render(c) for c in train[:n_calibration]], [render(c) for c in held[:n_quality]], source


def _splits(ctx: Ctx, n_calibration: int) -> tuple[list, list, str]:
    """The conversations :func:`_texts` renders: (training split, held-out ones, the catalogue key naming where the
    held-out ones come from)."""
    cs = ctx.result(StrategyChoice)
    skip = cs.data.skip_bad_records
    if cs.data.path:
        objective = cs.spec().objective  # split as the trainer split them, then read as conversations
        train, held = (split.as_conversations(x, objective) for x in
                       datasets.train_validation(split.records(cs.data.path, objective, skip), cs.data.val_ratio))
    else:  # nothing was trained (the quantize task): the calibration file answers both
        convs = datasets.load(ctx.answers("export").get("calibration_data") or str(datasets.bundled_dataset_path()),
                              skip_bad=True).conversations
        train, held = datasets.train_validation(convs, 0.25)
    source = "export.held_out.validation"
    if not held:
        held, source = (train[n_calibration:], "export.held_out.after_calibration") if len(train) > n_calibration \
            else (train, "export.held_out.training")
    return train, held, source


PARITY_PROMPTS = 2  # held-out questions the parity gate asks beside the sample question (recipes/serving/parity.py)


def _parity_questions(ctx: Ctx, question: str) -> list[str]:
    """Up to :data:`PARITY_PROMPTS` held-out questions other than ``question``: each conversation's first user turn
    when it is plain text (an image turn is left out). [] for a session that trained nothing, or whose data
    can no longer be read."""
    if not ctx.result(StrategyChoice).data.path:
        return []
    try:
        _, held, _ = _splits(ctx, 0)
    except datasets.DataError:  # the data moved or changed since training: the gate asks the sample question alone
        return []
    out: list[str] = []
    for conv in held:
        first = next((m.get("content") for m in conv if isinstance(m, dict) and m.get("role") == "user"), None)
        if isinstance(first, str) and first.strip() and first != question and first not in out:
            out.append(first)
        if len(out) == PARITY_PROMPTS:
            break
    return out


def run(ctx: Ctx, answers: dict) -> ExportResult:
    """The export (:func:`_export`); a disk that fills while a copy is written — the space check passed, then
    something else took the space, or a library wrote more than the estimate — is one line naming the folder, not the
    library's raw error (the tester's 21-19, issue 46): the copy being written was a temporary folder, removed on the
    next run; the copies finished before it are kept and reused.

    Raises:
        StepError("export.disk_full"): no space left while writing."""
    try:
        return _export(ctx, answers)
    except Exception as e:  # OSError ENOSPC, or safetensors' SafetensorError wrapping "os error 28"
        if getattr(e, "errno", None) == errno.ENOSPC or "No space left on device" in str(e):
            edir = RunDir(ctx.run_dir).export
            raise StepError("export.disk_full", path=str(edir), free=size_text(shutil.disk_usage(edir).free)) from None
        raise


def _export(ctx: Ctx, answers: dict) -> ExportResult:
    code = trusted(ctx)
    train = ctx.result(TrainingResult)
    base_dir = str(ctx.result(Download).model_dir)
    adapter = train.adapter_dir
    as_is = not adapter and not train.method  # nothing trained: quantize the downloaded model as it is
    method = "none" if as_is else str(train.method)
    if not as_is and (not adapter or not Path(adapter).is_dir()):
        raise StepError("export.no_adapter", path=str(adapter))
    formats = list(answers.get("formats", []))  # validated against the model, engine and machine (formats_ok)
    edir = RunDir(ctx.run_dir).export
    merged = edir / "merged"
    # partial outputs of an interrupted export, reused only for the same trained result and the same answers
    key = {"source": _source_id(Path(adapter or base_dir)), "dtype": answers["dtype"],
           "calibration": [answers.get("calibration_samples"), answers.get("calibration_seq_len")],
           "quality_samples": answers.get("quality_samples", 0)}
    previous = ctx.result(ExportResult)
    if previous.key != key:
        previous = ExportResult()
    done = {f: a for f, a in previous.artifacts.items() if Path(a["dir"]).is_dir()}  # renamed when complete
    # the merged model in its dtype ≈ the base's size; each quantized copy quantizes the decoder's linear layers only
    # (bits / 16 of their share; embeddings, LM head and norms stay 16-bit: most of a small model), plus its
    # tokenizer and card; 5 % more for what each library writes beside (the tester's 21-19: 3.9 MiB said, 4.3 needed)
    base_bytes = _size(Path(base_dir))
    linear = _linear_share(ctx.result(ModelChoice).config)
    need = 1.05 * ((0 if previous.merged_dir and merged.is_dir() else base_bytes) + sum(
        base_bytes * (linear * quantize.FORMATS[f].bits / 16 + 1 - linear) + _size_beside(Path(base_dir))
        for f in formats if f not in done))
    edir.mkdir(parents=True, exist_ok=True)
    for stale in edir.glob(".*.*"):  # temp folders of an export killed mid-write (this session's lock is ours)
        if stale.is_dir() and stale.name.split(".")[1] in ("merged", *quantize.FORMATS):
            shutil.rmtree(stale, ignore_errors=True)
    if shutil.disk_usage(edir).free < need:
        raise StepError("export.no_space", need=size_text(int(need)), free=size_text(shutil.disk_usage(edir).free),
                        path=str(edir))

    reused = bool(previous.merged_dir) and (merged / "config.json").exists()
    if reused:
        check = previous.merge_check
    else:
        ctx.info(msg("export.as_is" if as_is else "export.merging", method=method, path=str(merged)))
        with _atomic_dir(merged) as tmp:
            check = merge(base_dir, adapter, method, tmp, answers["dtype"], code,
                          ctx.result(StrategyChoice).spec().image_size)
            (tmp / "README.md").write_text(card(ctx, "merged", {"format": "merged"}, check))
        ctx.record(key=key, merged_dir=str(merged), merged_bytes=_size(merged), merge_check=check, artifacts=done)
    if check:
        ctx.info(msg("export.merge_check", diff=f"{check['max_abs_logit_diff']:.2e}", dtype=check["dtype"]))
    question = train.samples.get("question") or SMOKE_QUESTION
    # the merged model's own reply, measured again unless this very folder was measured (a session file is input)
    merged_id = _source_id(merged)
    merged_smoke = previous.merged_smoke
    if not (reused and isinstance(merged_smoke, dict) and merged_smoke.get("merged") == merged_id
            and isinstance(merged_smoke.get("stopped"), bool) and "prompt_ids" in merged_smoke):
        more = [] if train.sample_image else _parity_questions(ctx, question)
        merged_smoke = quality.reply(merged, question, SMOKE_TOKENS, code, image=train.sample_image,
                                     more_questions=more) | {"merged": merged_id}
    ctx.record(merged_smoke=merged_smoke)
    # nothing trained (the quantize task): the downloaded model is what runs on; "train longer" would not apply
    ctx.info(msg(("export.merged_stops" if adapter else "export.downloaded_stops") if merged_smoke["stopped"] else
                 "export.merged_runs_on" if adapter else "export.downloaded_runs_on", tokens=merged_smoke["tokens"], limit=SMOKE_TOKENS,
                 reply=merged_smoke["reply"][:120]))

    todo = [f for f in formats if f not in done]
    env = previous.quantizer_env
    if any(quantize.FORMATS[f].tool == "llmc" for f in todo):
        ctx.info(msg("export.env", name=quantize.LLMC_ENV))
        env = quantize.ensure_env(ctx.home, lambda text: ctx.info(msg("export.env_building", path=text)),
                                  lambda seconds: ctx.info(msg("quantization.env_still", seconds=seconds)))
        ctx.record(quantizer_env=env)
    calib, held, held_source = _texts(ctx, str(merged), answers.get("calibration_samples", 0)
                                      if any(quantize.FORMATS[f].calibrated for f in todo) else 0,
                                      answers.get("quality_samples", 0), code) if todo else ([], [], "")
    # too few to measure with (the evaluate step's bar, Evaluation.FEW_HELDOUT): said, not left to a count
    if todo and held and len(held) < min(answers.get("quality_samples", 0), Evaluation.FEW_HELDOUT):
        ctx.warn(msg("export.few_quality_samples", n=len(held)))
    for f in todo:
        fmt, out, t0 = quantize.FORMATS[f], edir / f, time.time()
        ctx.info(msg("export.quantizing", format=f, path=str(out)))
        with _atomic_dir(out) as tmp:
            if fmt.tool == "bnb":
                quantize.quantize_bnb(merged, tmp, fmt.bits, code)
                tool = "bitsandbytes " + _version("bitsandbytes")
            elif fmt.tool == "gguf":
                converter = quantize.ensure_converter(ctx.home)
                quantize.convert_gguf(converter, merged, tmp, f, edir / f".work-{f}")
                tool = f"llama.cpp's convert_hf_to_gguf.py ({quantize.LLAMA_CPP_SDIST}), gguf {_version('gguf')}"
            else:
                spec = {"format": f, "merged_dir": str(merged), "out_dir": str(tmp), "scheme": fmt.scheme,
                        "modifier": fmt.modifier, "calibration": calib if fmt.calibrated else [],
                        "max_seq_length": answers.get("calibration_seq_len", 512), "trust_remote_code": code}
                assert env is not None  # ensured above for every llm-compressor format
                quantize.run_llmc(env, spec, edir / f".work-{f}",
                                  lambda seconds, f=f: ctx.info(msg("export.quantizing_still", format=f,
                                                                    seconds=seconds)))
                tool = "llm-compressor " + env["packages"]["llmcompressor"]
            seconds = round(time.time() - t0, 2)
            if fmt.tool != "gguf":  # one end-of-turn for every copy: the merged model's (GGUF carries its own)
                for name_ in ("generation_config.json", "chat_template.jinja"):
                    if (merged / name_).exists():
                        shutil.copy(merged / name_, tmp / name_)
            ctx.info(msg("export.checking" if adapter else "export.checking_downloaded", format=f, n=len(held)))
            with ctx.progress(msg("export.checking_progress", format=f)):  # 5-12 s with nothing shown (trial 46-E)
                figures = _quality(merged, tmp, held, question, code)
            if merged_smoke["stopped"] and figures.get("smoke") and not figures["smoke"]["stopped"]:
                key_, params = stop_cause(merged, tmp, question, figures, code)
                raise StepError("export.never_stops", format=f, tokens=SMOKE_TOKENS, why=msg(key_, **params),
                                formats=",".join(x for x in formats if x != f))
            art = {"dir": str(out), "format": f, "tool": tool, "seconds": seconds, "quality": figures,
                   "held_out": ctx.t(msg(held_source)),
                   "calibration_samples": len(calib) if fmt.calibrated else 0,
                   "calibration_seq_len": answers.get("calibration_seq_len") if fmt.calibrated else None}
            (tmp / "README.md").write_text(card(ctx, f, art, check))
        art["bytes"] = _size(out)
        shutil.rmtree(edir / f".work-{f}", ignore_errors=True)  # the quantizer's spec and log: kept on failure only
        done[f] = art
        ctx.record(artifacts=done)
    out = ExportResult(key=key, merged_dir=str(merged), merged_bytes=_size(merged), merge_check=check, artifacts=done,
                       merged_smoke=merged_smoke, formats=["merged"] + formats, serve_with=answers["serve_with"],
                       quantizer_env=env)
    ctx.table(*out.table())
    return out


def _source_id(adapter: Path) -> str:
    """Identity of the trained result: its files' names, sizes and modification times."""
    import hashlib

    parts = sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in adapter.iterdir() if p.is_file())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _quality(reference: Path, artifact: Path, held: list[str], question: str | None, code: bool) -> dict:
    try:
        return quality.compare(reference, artifact, held, question=question, trust_remote_code=code,
                               max_new_tokens=SMOKE_TOKENS)
    except ValueError:
        raise StepError("export.no_held_out") from None


def stop_cause(merged: Path, copy: Path, question: str, figures: dict, code: bool) -> tuple[str, dict]:
    """Why a copy runs past the end of turn where the merged model stops: an EOS id of the merged model's
    generation config missing from the copy's, a chat template that renders the question differently, else the
    quantization itself (catalogue key, params)."""
    import json

    def eos(d: Path) -> set:
        try:
            e = json.loads((d / "generation_config.json").read_text()).get("eos_token_id")
        except (OSError, ValueError):
            return set()
        return set(e if isinstance(e, list) else [e] if e is not None else [])

    missing = eos(merged) - eos(copy)
    if missing:
        return "export.stop_cause.eos", {"ids": sorted(missing)}
    from transformers import AutoTokenizer

    turn = [{"role": "user", "content": question}]
    rendered = [AutoTokenizer.from_pretrained(d, trust_remote_code=code).apply_chat_template(
        turn, tokenize=False, add_generation_prompt=True) for d in (merged, copy)]
    if rendered[0] != rendered[1]:
        return "export.stop_cause.template", {}
    return "export.stop_cause.quantization", {"kl": f"{figures['kl_mean']:.4f}"}


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def card(ctx: Ctx, fmt: str, art: dict, check: dict | None) -> str:
    """The model card (README.md) of one artifact: what it is, how it was made, what the quality check measured."""
    from recipes import __version__

    sel, dl = ctx.result(ModelChoice), ctx.result(Download)
    cs, tr = ctx.result(StrategyChoice), ctx.result(TrainingResult)
    st = cs.spec()
    base = sel.repo_id or dl.model_dir
    method = tr.method or "none"  # none: nothing trained (the quantize task)
    adapter = f" r{st.lora_rank} α{st.lora_alpha} dropout {st.lora_dropout}, targets " \
              f"{st.lora_targets}" if method not in FULL_WEIGHTS else ""
    if method == "none":  # exported as downloaded (the quantize task)
        tags = ["yichui"] + ([fmt] if fmt != "merged" else [])
        lines = ["---", f"base_model: {base}", "library_name: transformers", "tags:", *[f"- {t}" for t in tags], "---",
                 "", f"# {Path(str(base)).name} — {fmt}", "",
                 f"Made by yichui {__version__} (session `{ctx.session_id}`) from the downloaded model as it is.", "",
                 "## How it was made", "", "| | |", "|---|---|", f"| model | {base} @ {dl.commit or 'local'} |"]
        return _card_tail(lines, fmt, art)
    tags = ["yichui", method] + ([fmt] if fmt != "merged" else [])
    lines = ["---", f"base_model: {base}", "library_name: transformers", "tags:", *[f"- {t}" for t in tags], "---", "",
             f"# {Path(str(base)).name} fine-tuned with {method} — {fmt}", "",
             f"Made by yichui {__version__} (session `{ctx.session_id}`), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
             "", "## How it was made", "", "| | |", "|---|---|",
             f"| base model | {base} @ {dl.commit or 'local'} |",
             f"| method | {method}{adapter} |",
             f"| data | {cs.data.path} ({cs.data.format}, {cs.data.n_train} training / "
             f"{cs.data.n_validation} validation records) |",
             f"| training | {tr.steps} optimizer steps, effective batch {cs.effective_batch}, learning "
             f"rate {st.learning_rate}, {st.seq_len} tokens; training loss: mean "
             f"{tr.train_loss}, last 5 steps {tr.last5_mean} |"]
    if check:
        lines.append(f"| merge check | largest logit difference to the unmerged adapter model "
                     f"{check['max_abs_logit_diff']:.2e} ({check['dtype']}) |")
    return _card_tail(lines, fmt, art)


def _card_tail(lines: list[str], fmt: str, art: dict) -> str:
    """How the quantized copy was made and what its quality check measured, and the template note."""
    if fmt != "merged":
        calib = (f"{art['calibration_samples']} training samples × ≤ {art['calibration_seq_len']} tokens"
                 if art.get("calibration_samples") else "none")
        lines += [f"| export | {fmt} with {art['tool']}, calibration {calib}, {art['seconds']} s |", "",
                  "## Quality against the merged model", "",
                  f"On {art['quality']['samples']} held-out conversations ({art['quality']['tokens']} tokens; "
                  f"{art.get('held_out', 'held out')}):", "",
                  "| mean KL of next-token distributions (nats) | perplexity | merged model's perplexity | ratio |",
                  "|---:|---:|---:|---:|",
                  f"| {art['quality']['kl_mean']:.5f} | {art['quality']['ppl']} | {art['quality']['ppl_reference']} "
                  f"| {art['quality']['ppl_ratio']} |"]
        sm = art["quality"].get("smoke")
        if sm:
            lines += ["", f"Smoke test: *{sm['question']}* → “{sm['reply']}” ({sm['tokens']} tokens, "
                      f"{'ended with an EOS token' if sm['stopped'] else 'did NOT stop: check the EOS tokens'})."]
    lines += ["", "The chat template used in training is `chat_template.jinja`; `generation_config.json` lists the EOS "
              "tokens that end a turn.", ""]
    return "\n".join(lines)


def is_done(ctx: Ctx, record: Record) -> bool:
    out = record.outputs
    return bool(out.get("merged_dir")) and (Path(out["merged_dir"]) / "config.json").exists() and all(
        Path(a["dir"]).is_dir() for a in out.get("artifacts", {}).values()) and "formats" in out
