"""Commands that need no session: doctor, estimate, download."""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from wizard import i18n
from wizard.cli.common import T, SessionArg, app, fail, new_ui, read_session, refused


def _estimate_config(model: str, source: str | None, endpoint: str | None, revision: str) -> dict:
    """config.json of a local folder or a hub repository (one line and the exit status of wizard/README.md's rule:
    2 for the user's input, 1 for the world)."""
    from recipes.base import Refusal
    from recipes.hub import client as hub
    from recipes.hub import snapshot

    local = Path(model).expanduser()
    if local.name == "config.json" and local.is_file():  # the file itself given: its folder is the model
        local, model = local.parent, str(local.parent)
    elif local.suffix == ".json" and local.is_file() and source in (None, "local"):
        # a config saved under another name (cfgs/qwen-7b.json): read as it is, as estimate needs nothing else
        import json

        try:
            config = json.loads(local.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
            raise fail("hub.bad_config", repo=str(local), error=str(e).splitlines()[0][:120] if str(e) else "?")
        if not isinstance(config, dict):
            raise fail("hub.bad_config", repo=str(local), error="not a JSON object")
        return config
    if source not in (None, "hf", "modelscope", "local"):
        raise fail("hub.unknown_source", source=source, sources="hf, modelscope, local")
    looks_local = model.startswith((".", "/", "~")) or model.count("/") != 1  # a hub id is org/name
    src = source or ("local" if local.exists() or looks_local else "hf")
    try:
        return hub.fetch_config(src, str(local) if src == "local" else model,
                                endpoint or hub.default_endpoint(src), revision)
    except Refusal as e:
        # offline, estimate's own way on: the model's config.json on disk (issue 46 item 14)
        key = "cli.estimate.unreachable" if e.key == "hub.unreachable" else CLI_WORDING.get(e.key, e.key)
        from recipes.training.runner import REPO

        more = {"configs": str(REPO / "bench" / "configs")} \
            if key == "cli.estimate.unreachable" else {}  # the shapes the repository carries (README: estimate)
        raise fail(key, 2 if e.key in snapshot.BAD_INPUT or src == "local" else 1, **e.params, **more)


def doctor(session: Optional[str] = SessionArg):
    """GPU, driver and CUDA against torch, bf16, disk, RAM, optional engines with their install commands, hubs.
    Exit 1 when something this machine (or SESSION) needs is missing."""
    from recipes import doctor as doc
    from recipes.hub import client as hub
    from wizard.i18n import render
    from wizard.session import home

    needs: tuple = ()
    endpoints = {"hf": os.environ.get("HF_ENDPOINT") or str(hub.default_endpoint("hf")),
                 "modelscope": os.environ.get("MODELSCOPE_ENDPOINT") or str(hub.default_endpoint("modelscope"))}
    if session is not None:
        s = read_session(session)
        needs = doc.needs_of(s.data)
        sel = s.record("select_model").answers
        if sel.get("source") in endpoints and sel.get("endpoint"):
            endpoints = {sel["source"]: sel["endpoint"]}  # the hub this session downloads from
    checks = doc.run_all(home(), endpoints, needs)
    # a check's name in the user's language where it is a word, not a package's name (the zh UI said disk, host RAM)
    named = lambda c: i18n.named(f"cli.doctor.name.{c.name}", c.name)  # noqa: E731
    ui = new_ui()
    fixes = [c for c in checks if c.fix]
    ui.table(T("cli.doctor.title"), [T("cli.doctor.col.check"), T("cli.doctor.col.verdict"), T("cli.doctor.col.found"),
                                     T("cli.doctor.col.fix")],
             [(named(c) + (" *" if c.needed else ""), T(f"cli.doctor.{c.verdict}"), render(c.found),
               f"[{fixes.index(c) + 1}]" if c in fixes else "") for c in checks])
    if fixes:  # below the table, one line each: a command folded inside a cell cannot be copied (issue 20, item 13)
        ui.say(T("cli.doctor.fixes"))
        for i, c in enumerate(fixes, 1):
            ui.say(f"  [{i}] {named(c)}: {render(c.fix)}")
    blocking = [named(c) for c in checks if c.blocking]
    if blocking:
        ui.error(T("cli.doctor.blocked", what=list(blocking)))
        raise typer.Exit(1)
    ui.success(T("cli.doctor.ready"))


OLD = "_old"  # the suffix of the hidden parameter that takes a field's older spellings
FLIP, SAME = "_flip", "_same"  # a switch's shown flag (the non-default value) and its default's hidden spelling


def _with_spec_options(fn):
    """Give ``fn`` (which takes ``**spec``) one option per flagged field of TrainingSpec (recipes/training/spec.py):
    the field's name as the flag, its default from the spec, and a hidden option for its older spellings
    (``<field>_old``, None unless given). The sequence length defaults to None here: the model's context decides it
    (spec.default_seq_len)."""
    import inspect
    import typing

    from recipes.training import spec as ts

    hints = typing.get_type_hints(ts.TrainingSpec)
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD]
    for f in ts.cli_fields():
        text = f.metadata["help"]
        help_ = T(text) if text in i18n.CATALOG else text  # a catalogue key (training.opt.*), or literal text
        if f.name == "seq_len":
            opt, kind = typer.Option(None, f.metadata["flag"], help=help_, show_default=False), Optional[int]
        elif "/" in f.metadata["flag"]:  # a switch: shown as the flag that changes it ("--liger",
            # "--no-activation-checkpointing"); the default's own spelling is still taken, hidden — a --x/--no-x pair
            # in rich's options table cut the option names at 80 columns
            on, off = f.metadata["flag"].split("/")
            shown, same = (off, on) if f.default else (on, off)
            for suffix, flag, shown_here in ((SAME, same, False), (FLIP, shown, True)):
                params.append(inspect.Parameter(f.name + suffix, inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                                default=typer.Option(False, flag, help=help_ if shown_here else "",
                                                                     hidden=not shown_here)))
            opt = None
        else:
            opt, kind = typer.Option(f.default, f.metadata["flag"], help=help_), hints[f.name]
        if opt is not None:
            params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=kind))
        if f.metadata["old"]:
            params.append(inspect.Parameter(f.name + OLD, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[hints[f.name]],
                                            default=typer.Option(None, *f.metadata["old"], hidden=True)))
    fn.__signature__ = inspect.signature(fn).replace(parameters=params)
    return fn


@_with_spec_options
def estimate(ctx: typer.Context, model: str = typer.Argument(..., help=T("cli.arg.model")),
             gpu_memory: Optional[float] = typer.Option(None, "--gpu-memory", help=T("cli.opt.gpu_memory")),
             gpu: Optional[str] = typer.Option(None, "--gpu", help=T("cli.opt.gpu")),
             zero: int = typer.Option(0, "--zero", help=T("cli.opt.zero")),
             offload: bool = typer.Option(False, "--offload", help=T("cli.opt.offload")),
             offload_device: str = typer.Option("cpu", "--offload-device", help=T("cli.opt.offload_device")),
             fsdp: bool = typer.Option(False, "--fsdp", help=T("cli.opt.fsdp")),
             serve: Optional[str] = typer.Option(None, "--serve-format", help=T("cli.opt.serve_format")),
             utilization: float = typer.Option(0.9, "--gpu-memory-utilization", help=T("cli.opt.utilization")),
             source: Optional[str] = typer.Option(None, "--source", help="hf | modelscope | local"),
             endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint")),
             revision: str = typer.Option("main", "--revision", help=T("cli.opt.revision")),
             as_json: bool = typer.Option(False, "--json", help=T("cli.opt.json")), **spec):
    """Training options come from TrainingSpec (the wizard's choose_strategy answers, by the same names); the older
    spellings (--rank, --seq, --batch, --ckpt, --gpus, …) still work, hidden; --zero N and --fsdp say
    --distribution zeroN / fsdp2, --offload an offload of the optimizer states (ZeRO-3, FSDP: the weights too)."""
    import dataclasses
    import json as _json
    import math

    from recipes.memory import model as memory
    from recipes.base import Refusal
    from recipes.training.spec import (DEFAULTS, DISTRIBUTION_LABEL, FULL_WEIGHTS, TrainingSpec, default_seq_len,
                                       least_micro_batch)

    if gpu is not None and gpu not in memory.GPUS:  # a driver's name ("NVIDIA H100 80GB HBM3", as the output shows
        from recipes.memory import planner          # GPUs) by its model, as the planner prices it (trial W)

        named = planner.gpu_key(gpu)
        key = next((k for k, (name, _) in memory.GPUS.items() if named and name == named), None)
        if key is None:
            raise fail("cli.unknown_gpu", gpu=gpu, gpus=list(memory.GPUS))
        gpu = key
    flags = {f.name: f.metadata for f in dataclasses.fields(TrainingSpec)}
    for name in [n for n in spec if n.endswith(FLIP)]:  # a switch: its default unless a spelling of it is given
        field = name[:-len(FLIP)]
        default = getattr(DEFAULTS, field)
        on, off = flags[field]["flag"].split("/")
        seen = {(off if default else on): not default} if spec.pop(name) else {}
        if spec.pop(field + SAME):
            seen[on if default else off] = default
        old = spec.pop(field + OLD, None)
        if old is not None:
            seen[flags[field]["old"][0].split("/")[0 if old else 1]] = old
        if len(set(seen.values())) > 1:  # both directions seen for: say so rather than pick one
            one, other = sorted(seen, key=lambda k: seen[k])
            raise fail("cli.options_disagree", one=one, other=other)
        spec[field] = next(iter(seen.values()), default)
    for name in list(spec):
        if name.endswith(OLD):  # an older spelling, when given, is the value — unless the new one says otherwise
            old, field = spec.pop(name), name[:-len(OLD)]
            if old is None:
                continue
            if spec[field] not in (old, None, getattr(DEFAULTS, field)):
                raise fail("cli.options_disagree", one=flags[field]["old"][0], other=flags[field]["flag"])
            spec[field] = old
    seq = spec.pop("seq_len")
    for name, value, lo in (("--gpu-memory", gpu_memory, 1e-9), ("--seq-len", seq, 1),
                            ("--micro-batch", spec["micro_batch"], 1), ("--processes", spec["processes"], 1),
                            ("--lora-rank", spec["lora_rank"], 1)):
        if value is not None and (not math.isfinite(value) or value < lo):
            raise fail("cli.option_positive", option=name, value=value)  # before any hub is asked; nan, inf too
    if zero not in (0, 1, 2, 3):
        raise fail("training.bad_number", name="--zero", value=zero, lo=0, hi=3)
    if gpu is not None and gpu_memory is not None and abs(gpu_memory / memory.GPUS[gpu][1] - 1) > 0.05:
        raise fail("cli.options_disagree", one=f"--gpu {gpu} ({memory.GPUS[gpu][1]} GiB)",
                   other=f"--gpu-memory {gpu_memory:g}")  # the same GPU (80 for the table's 79.2 GiB) is no conflict
    if spec["master_weights"] != DEFAULTS.master_weights and spec["method"] not in FULL_WEIGHTS:
        raise fail("cli.master_weights_full_only", method=spec["method"])
    for given, asked in (("--zero", f"zero{zero}" if zero else None), ("--fsdp", "fsdp2" if fsdp else None)):
        if asked and spec["distribution"] not in ("ddp", asked):
            raise fail("cli.options_disagree", one=given, other=f"--distribution {spec['distribution']}")
        if asked:
            spec["distribution"] = asked
    offload = offload or offload_device == "nvme"  # where to offload says to offload
    # --offload: what the distribution can move — the optimizer states (ZeRO-1/2), the weights too (ZeRO-3, FSDP2);
    # the rules themselves are TrainingSpec's, as the wizard's (DDP moves nothing; NVMe needs ZeRO-3)
    moved = "none" if not offload else "all" if spec["distribution"] in ("zero3", "fsdp2") else "optimizer"
    # typer's click records where each value came from: neither spelling given means the spec's default
    flag_given = lambda name: any(g is not None and g.name != "DEFAULT"  # noqa: E731
                                  for g in (ctx.get_parameter_source(n) for n in (name, name + OLD)))
    if spec["objective"] == "grpo" and not flag_given("micro_batch") and not flag_given("grad_accum") \
            and isinstance(spec["num_generations"], int) and spec["num_generations"] >= 1:
        spec["micro_batch"] = spec["num_generations"]  # one prompt's replies per micro-batch (trl's default 8 and 8)
        if not as_json:
            new_ui().say(T("cli.estimate.grpo_micro_batch", mb=spec["micro_batch"]))
    if spec["objective"] == "kto" and not flag_given("micro_batch") \
            and spec["micro_batch"] < least_micro_batch(spec["objective"]):
        spec["micro_batch"] = least_micro_batch(spec["objective"])  # KTO's plans start at 2, as the wizard's do
        if not as_json:
            new_ui().say(T("cli.estimate.kto_micro_batch", mb=spec["micro_batch"]))
    # the options are checked before any hub is asked, by the spec's rules (the wizard's too)
    t = TrainingSpec(**spec, offload=moved, offload_device=offload_device, seq_len=seq or DEFAULTS.seq_len)
    if found := t.problems():
        err = found[0].refusal
        if err.key == "training.offload_needs_sharding":
            raise fail("cli.offload_needs_sharding")
        if "name" in err.params:  # one value: named as this command's option, not as the field
            field_ = str(err.params.get("name"))
            raise fail(err.key, **err.params | ({"name": "--" + field_.replace("_", "-")}
                                                if field_ in spec or field_ == "offload_device" else {}))
        # a rule across options: the options that set it, so that the user sees which to change
        flag_of = {f.name: str(f.metadata.get("flag") or "") for f in dataclasses.fields(TrainingSpec)}
        options = [flag_of[f] for f in found[0].fields if flag_of.get(f)]
        raise fail("cli.estimate.rule_options", message=T(err.key, **err.params), options=list(options)) \
            if options else fail(err.key, **err.params)
    config = _estimate_config(model, source, endpoint, revision)
    from recipes.model import prequantized

    if missing := memory.missing_fields(config):  # as select_model says it (transformers would fill in defaults)
        raise fail("select_model.missing_fields", model=model, fields=list(missing))
    detected = memory.detect_gpus()
    gpu_name, gib = ((memory.GPUS[gpu][0], gpu_memory or memory.GPUS[gpu][1]) if gpu
                     else (T("cli.estimate.target_gpu"), gpu_memory) if gpu_memory
                     else (detected[0]["name"], detected[0]["memory_gib"]) if detected else (None, None))
    try:
        shape = memory.shape_from_config(config)
        if seq is None:  # the default: 2048 tokens, or the model's whole context when shorter
            seq = default_seq_len(shape.max_position)
            t = dataclasses.replace(t, seq_len=seq)
        elif shape.max_position and seq > shape.max_position:
            raise fail("cli.seq_over_max", seq=seq, max=shape.max_position)
        dropout_given = flag_given("lora_dropout")
        if t.objective != "sft" and t.lora_dropout > 0:  # trained without dropout: priced, and reported, at 0
            if dropout_given and not as_json:
                new_ui().say(T("cli.estimate.dpo_dropout", objective=t.objective.upper(), value=f"{t.lora_dropout:g}"))
            t = dataclasses.replace(t, lora_dropout=0.0)
        if shape.param_lora_io and t.lora_dropout > 0 and not dropout_given:
            # a MoE whose experts LoRA reaches: the default dropout is 0 there, as the wizard's (peft runs no other)
            t = dataclasses.replace(t, lora_dropout=0.0)
            if not as_json:
                new_ui().say(T("cli.estimate.moe_dropout_default"))
        e = memory.estimate(shape, t, gib)
        inst = memory.smallest_instance(shape, t)
        serve = serve or ("prequantized" if shape.prequantized_bytes else "bf16")  # a checkpoint is served as stored
        if serve == "prequantized" and not shape.prequantized_bytes:  # nothing stored packed: it would be bf16
            raise fail("training.bad_choice", name="--serve-format", value=serve,
                       choices=[f for f in memory.WEIGHT_FORMATS if f != "prequantized"])
        pq = prequantized.read(config)
        if pq is not None and (not pq.trainable or t.method != "lora"):  # as choose_strategy refuses it
            raise fail("choose_strategy.prequantized_unsupported", model=model, what=pq.reason) if not pq.trainable \
                else fail("choose_strategy.prequantized_lora_only", model=model, label=pq.label, method=t.method)
        tp = memory.tensor_parallel(shape, t.gpus)  # the training's GPUs, as many as divide the heads
        srv = memory.serving(shape, serve, gib or 80.0, utilization, tp, gpu_name=gpu_name or "")
    except Refusal as err:  # named as this command's option
        flag = {"utilization": "--gpu-memory-utilization", "format": "--serve-format"}.get(str(err.params.get("name")))
        key = {"memory.moe_dropout": "cli.estimate.moe_dropout",  # this command's options, not the answers
               "memory.moe_dora": "cli.estimate.moe_dora"}.get(err.key, err.key)
        raise fail(key, **err.params | ({"name": flag} if flag else {}))
    from recipes.memory import planner

    # the speed model's tokens/s per GPU for this plan, on a GPU it knows the peak of (none for a bare --gpu-memory)
    # and for a plan it models (planner.speed_modelled: a measured dense family; no ZeRO/FSDP, offload or sequence split)
    tps = round(planner.predicted(shape, t, gpu_name), 1) \
        if gpu_name and planner.gpu_key(gpu_name) and planner.speed_modelled(t, shape) else None
    result = {"model": model, "peak_gib": e["peak_gib"], "phase": e["phase"], "components": e["components"],
              "tokens_per_s": tps, "speed_gpu": gpu_name if tps else None,
              # the text's pairs/s (DPO), replies/s (KTO): records of seq_len tokens a second per GPU
              "records_per_s": round(tps / (planner.sequences_per_record(t) * t.seq_len), 3) if tps else None,
              "phases": e["phases"], "fits": e.get("fits"), "needed_margin": e.get("needed_margin"),
              "margin_gib": e.get("margin_gib"), "gpu": gpu_name, "gpu_memory_gib": gib, "trainable": e["trainable"],
              "n_params": shape.n_params, "approximate": e["approximate"], "smallest_instance": inst,
              "serving": srv | {"format": serve, "utilization": utilization, "gpu_memory_gib": gib or 80.0,
                                "tensor_parallel": tp},
              "config": t.to_dict(), "host_ram_gib": round(memory.host_bytes(shape, t)["total"] / memory.GIB, 3),
              "vllm": e.get("vllm")}  # GRPO's replies by vLLM: its share of the GPU and what it holds
    if as_json:
        print(_json.dumps(result))
        return
    ui = new_ui()
    image_tokens = t.images_per_sample * shape.image_tokens(t.image_size)  # image records add theirs (never cut)
    plan = ([T("cli.estimate.sharded" if t.gpus > 1 else "cli.estimate.sharded_one", dist=DISTRIBUTION_LABEL[t.distribution],
               n=t.gpus)]
            if t.gpus > 1 or t.distribution != "ddp" else []) \
        + ([T(f"cli.estimate.offload_{t.offload_device}")] if t.offloaded else []) \
        + ([T("cli.estimate.sequence_parallel", sp=t.sequence_parallel)] if t.sequence_parallel > 1 else [])
    ui.table(T("cli.estimate.title", model=model, n=f"{shape.n_params:,}", method=t.method,
               seq=T("cli.estimate.with_images", seq=seq, n=f"{image_tokens:,}") if image_tokens else seq,
               batch=t.micro_batch, ckpt=T("ui.on" if t.activation_checkpointing else "ui.off"))
             + (T(f"cli.estimate.{t.objective}") if t.objective != "sft" else "")
             + "".join(plan),
             *_breakdown(memory.breakdown(e)))
    if gib:
        need = e["needed_margin"]
        wider = [a for a in e["approximate"] if memory.extra_margin(a)]
        # an approximate estimate is priced with a larger margin: the fit line says which (trial U)
        ui.say(T("cli.estimate.fit_margin" if e["fits"] and wider else "cli.estimate.fit" if e["fits"] else
                 "cli.estimate.nofit", gpu=gpu_name, gib=gib,
                 margin=f"{e['margin_gib']:+.2f}", peak=f"{e['peak_gib']:.2f}", need=f"{e['peak_gib'] / (1 - need):.2f}",
                 pct=f"{need * 100:.0f}", why=T("cli.estimate.margin_why", what=[memory.approximate_words(n) for n in wider])
                 if wider else ""))
    if tps and gib and not e["fits"]:  # a plan that cannot run has no speed to show (trial W)
        ui.say(T("cli.estimate.no_speed_nofit"))
    elif tps:
        ui.say(T(f"cli.estimate.speed_{t.objective}" if t.objective in ("dpo", "kto") else "cli.estimate.speed",
                 gpu=gpu_name, tps=f"{tps:,.0f}", records=f"{result['records_per_s']:,.2f}",
                 scaled="" if gpu_name == planner.FIT_GPU else T("cli.estimate.speed_scaled")))
    elif not planner.speed_modelled(t, shape):
        ui.say(T("cli.estimate.no_speed"))
    if inst:  # priced on its own count: this plan on one GPU, or sharded (ZeRO-3 unless the plan shards) over several
        dist = t.distribution if t.zero or t.fsdp else memory.sharded_distribution(t.method)
        how = T("cli.estimate.instance_same") if inst["count"] == 1 else \
            T("cli.estimate.instance_sharded", dist=DISTRIBUTION_LABEL[dist], n=inst["count"])
        ui.say(T("cli.estimate.instance_plan", instance=f"{inst['count']}× {inst['name']}", how=how,
                 peak=f"{inst['peak_gib']:.2f}"))
    else:
        ui.say(T("cli.estimate.no_instance"))
    if t.nvme_offloaded:
        ui.say(T("cli.estimate.nvme", gib=f"{memory.nvme_bytes(shape, t) / memory.GIB:.1f}"))
    if t.offloaded:
        ui.say(T("cli.estimate.host_ram", gib=f"{result['host_ram_gib']:.1f}", what=T(memory.host_ram_what(t))))
    if not srv["fits"]:  # the weights and the engine's own memory leave nothing for the KV cache (trial W)
        ui.say(T("cli.estimate.serving_nofit", fmt=serve, weights=srv["weights_gib"], util=utilization,
                 gib=gib or 80.0, over=srv["overhead_gib"], tp=tp))
    else:
        ui.say(T("cli.estimate.serving_tp" if tp > 1 else "cli.estimate.serving", fmt=serve, weights=srv["weights_gib"],
                 tokens=f"{srv['max_tokens']:,}", context=f"{srv['longest_context']:,}", util=utilization,
                 gib=gib or 80.0, tp=tp) + (T("cli.estimate.tp_divides", tp=tp, gpus=t.gpus, heads=shape.heads,
                                              kv=shape.kv_heads) if tp < t.gpus else ""))
    if not gib:  # no GPU here and none given: say what the serving line assumed (issue 20, item 7)
        ui.say(T("cli.estimate.gpu_assumed", gib=80.0))
    if e.get("vllm"):  # GRPO's replies by vLLM: the share the plan gives it (the trainer's vllm_gpu_memory_utilization)
        v = e["vllm"]
        ui.say(T("choose_strategy.vllm_share", util=v["utilization"], gib=f"{v['pool_gib']:.1f}",
                 gpu=gpu_name or f"{gib} GiB", weights=f"{v['weights_gib']:.1f}", kv=f"{v['kv_gib']:.1f}",
                 replies=t.micro_batch * t.grad_accum, seq=t.seq_len))
    if e["approximate"]:  # part of the estimate, on stdout with it (`> file` kept only the figures: trial U)
        ui.say(T("evaluate_memory.approximate", what=[memory.approximate_words(n) for n in e["approximate"]]))


def _breakdown(table: tuple) -> tuple[list[str], list[tuple]]:
    """recipes.memory.model.breakdown's keys in this language."""
    cols, rows = table
    return [T(c) for c in cols], [(T(k), *v) for k, *v in rows]




def download(repo_id: str = typer.Argument(..., help=T("cli.arg.repo")),
             source: str = typer.Option("hf", "--source", help="hf | modelscope"),
             endpoint: Optional[str] = typer.Option(None, "--endpoint", help=T("cli.opt.endpoint")),
             revision: str = typer.Option("main", "--revision", help=T("cli.opt.revision")),
             local_dir: Optional[Path] = typer.Option(None, "--local-dir", help=T("cli.opt.local_dir")),
             include: Optional[List[str]] = typer.Option(None, "--include", help=T("cli.opt.include")),
             exclude: Optional[List[str]] = typer.Option(None, "--exclude", help=T("cli.opt.exclude")),
             repo_type: str = typer.Option("model", "--repo-type", help="model | dataset")):
    """What `hf download` is to the hub, resumable and verified: the download step's code without a session."""
    import re

    from recipes.hub import snapshot as dl
    from recipes.hub import client as hub
    from recipes.base import StepError
    from wizard.session import home

    if source not in ("hf", "modelscope"):
        raise fail("hub.unknown_source", source=source, sources="hf, modelscope")
    if repo_type not in ("model", "dataset"):
        raise fail("cli.bad_repo_type", value=repo_type)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id) or any(x in (".", "..") for x in repo_id.split("/")):
        raise fail("select_model.bad_id", value=repo_id)
    if endpoint and not hub.is_url(endpoint):
        raise fail("select_model.bad_endpoint", value=endpoint)
    ui = new_ui()
    target = local_dir or home() / ("datasets" if repo_type == "dataset" else "models") / source / repo_id
    try:
        out = dl.fetch(source, repo_id, endpoint or str(hub.default_endpoint(source)), revision, target,
                       lambda d, total, unit: ui.progress(i18n.render(d), total, unit),
                       lambda m: ui.say(i18n.render(m)), repo_type, include, exclude)
    except StepError as e:  # the exit status rule of wizard/README.md: 2 for the user's input, 1 for the world
        key = CLI_WORDING.get(e.msg.key, e.msg.key)  # this command's options, not the wizard's settings
        raise fail(key, 2 if e.msg.key in dl.BAD_INPUT else 1, **e.msg.args)
    except KeyboardInterrupt:
        ui.warn(T("cli.download.interrupted", repo=repo_id))
        raise typer.Exit(130)
    ui.success(T("cli.download.done", path=out["model_dir"], commit=out["commit"] or revision,
                 size=dl.size_text(out["fetched_bytes"])))


# faults whose advice names a session's settings, in `yichui download`'s own words
CLI_WORDING = {"hub.no_space": "cli.download.no_space", "hub.unreachable": "cli.download.unreachable",
               "hub.size_unknown": "cli.download.size_unknown", "hub.disk_full": "cli.download.disk_full",
               "hub.rate_limited": "cli.download.rate_limited"}
