"""Every script in bench/ keeps a CPU path, run here as a subprocess (issue 42, item 5: bench/distributed.py broke
when the runner took a TrainerJob instead of a dict, and nothing noticed). The CPU paths: a report on the committed
rows in bench/results/, ``--dry-run`` (everything built through the project's own functions up to where a GPU or an
engine is needed, then printed), or the script itself on the tiny model. bench/README.md lists them.

The scripts start two at a time as soon as this module starts (two cores; ``ahead``; not under xdist, whose workers
share the tests), each test waits for its own."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
RESULTS = BENCH / "results"
# test name → (script under bench/, args(tmp, fixture) → its arguments); filled by @script
SCRIPTS: dict = {}


def script(name: str, args=lambda tmp, fx: []):
    """The test's command: bench/``name`` with ``args(tmp, fixture)`` (``fixture(name)``: a fixture's value, e.g.
    the tiny model), started ahead of the test by ``ahead``."""
    def register(test):
        SCRIPTS[test.__name__] = (name, args)
        return pytest.mark.slow(test)  # a subprocess importing torch and transformers (4-35 s): not the inner loop
    return register


def _run(argv: list, tmp: Path) -> subprocess.CompletedProcess:
    # TMPDIR: the scripts' own temp folders land in tmp; port reservations stay in the test run's runtime folder
    # (tests/conftest.py), which TMPDIR would otherwise move
    env = dict(os.environ, TMPDIR=str(tmp), YICHUI_HOME=str(tmp / "home"),
               PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.run([sys.executable, str(BENCH / argv[0]), *map(str, argv[1:])], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def ahead(request, tmp_path_factory):
    """{test name: (tmp, future)}: the selected tests' scripts, started in file order two at a time. Under xdist
    nothing is started ahead (the workers share the tests, and one cannot tell which will be its own): each test then
    runs its script when it comes."""
    pool = ThreadPoolExecutor(2)
    started: dict = {}
    if os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") == "1":
        for item in request.session.items:
            name = getattr(item, "originalname", item.name)
            if item.module is request.module and name in SCRIPTS:
                started[name] = start(pool, name, tmp_path_factory, request.getfixturevalue)
    yield pool, started
    pool.shutdown(wait=True, cancel_futures=True)


def start(pool: ThreadPoolExecutor, name: str, tmp_path_factory, fixture) -> tuple:
    script_name, args = SCRIPTS[name]
    tmp = tmp_path_factory.mktemp(name[5:])
    return tmp, pool.submit(_run, [script_name, *args(tmp, fixture)], tmp)


@pytest.fixture
def ran(request, ahead, tmp_path_factory):
    """This test's script, finished with exit status 0: (its output, its tmp folder)."""
    pool, started = ahead
    name = request.node.originalname
    tmp, future = started.get(name) or start(pool, name, tmp_path_factory, request.getfixturevalue)
    r = future.result()
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout, tmp


def json_lines(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]


def jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def table_row(text: str, first: str, n: int = 0) -> list[str]:
    """The cells of the markdown row whose first cell is ``first`` (the first such row, or the first of ``n``
    cells)."""
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first and n in (0, len(cells)):
            return cells
    raise AssertionError(f"no row {first!r} in:\n{text[:3000]}")


def pct(cell: str) -> float:
    return float(cell.replace("%", "").replace("−", "-").strip()) / 100


# ---- the slow ones first: they overlap with the rest --------------------------------------------------------------

@pytest.mark.slow
@script("preflight_cost.py", lambda tmp, fx: ["--out", tmp / "rows.jsonl", "--work", tmp / "work",
                         "--config", fx("tiny_model") / "config.json", "--cases", "4"])
def test_preflight_cost_smoke_run_refuses_what_cannot_train(ran):
    out, tmp = ran
    (row,) = jsonl(tmp / "rows.jsonl")
    # the wizard's own part (the copy built, the spec written) is timed apart, within the whole
    assert 0 < row["copy_built_s"] < row["seconds"], row
    # case 4 (sequence length 16: no record fits) fails at the smoke run, as on the H200, through the bench's own Ctx
    assert row["case"] == 4 and row["seq_len"] == 16
    assert row["ok"] is False and row["error_key"] == "training.preflight_no_records_fit", row
    assert "Smoke test" in out


@pytest.mark.slow
@script("download.py", lambda tmp, fx: ["--total-mib", 8, "--kill-mib", 8, "--rounds", 1, "--kills", 1,
                         "--out", tmp / "download.json"])
def test_download_throughput_and_kills_on_loopback(ran):
    _, tmp = ran
    d = json.loads((tmp / "download.json").read_text())
    assert set(d["throughput"]["mib_per_s"]) == {"yichui-hf", "huggingface_hub", "yichui-modelscope", "modelscope"}
    assert d["throughput"]["ratio_yichui_over_peer"] > 0
    clients = d["kill"]["1"]["clients"]
    assert set(clients) == {"yichui-hf", "yichui-modelscope", "huggingface_hub", "modelscope"}
    assert all(c["sha256_ok"] for c in clients.values()), clients
    assert clients["yichui-hf"]["ratio_to_size"] >= 1.0


@pytest.mark.slow
@script("compile_numerics.py", lambda tmp, fx: ["--steps", 3, "--backend", "aot_eager"])
def test_compile_numerics_runs_the_three_variants(ran):
    out, _ = ran
    runs = {m.group(1).strip(): json.loads(m.group(2))
            for m in re.finditer(r"^(.+?)\s+drop \S+\s+(\[.*\])$", out, re.M)}
    assert set(runs) == {"fp32 eager", "bf16 autocast eager", "bf16 autocast compiled"}, out
    assert all(len(v) == 3 for v in runs.values())
    # aot_eager compiles nothing of its own: the compiled layers compute what the eager ones do
    assert runs["bf16 autocast compiled"] == runs["bf16 autocast eager"]
    assert runs["fp32 eager"][-1] < runs["fp32 eager"][0]


@pytest.mark.slow
@script("serve_load.py", lambda tmp, fx: ["--serve-transformers", fx("tiny_model"), "--requests", 2,
                         "--concurrency", "1,2", "--max-tokens", 4, "--out", tmp / "load.json"])
def test_serve_load_on_transformers_serve(ran):
    _, tmp = ran
    d = json.loads((tmp / "load.json").read_text())
    assert d["server"] == "transformers serve" and d["health_after_s"] is not None
    assert [r["concurrency"] for r in d["rows"]] == [1, 2]
    for r in d["rows"]:
        assert r["ok"] == r["requests"] == 2, r["errors"]
        assert r["completion_tokens"] and r["completion_tokens"] <= 2 * 4


@pytest.mark.slow
@script("unsloth_peer.py", lambda tmp, fx: ["--config", fx("tiny_model") / "config.json", "--method", "lora",
                         "--rank", 4, "--ckpt", "--batch", 1, "--seq", 32, "--steps", 3,
                         "--weights", fx("tiny_model"), "--tokenizer", fx("tiny_model"), "--backend", "plain"])
def test_unsloth_peer_plain_backend(ran):
    out, _ = ran
    (line,) = [x for x in out.splitlines() if x.startswith("RESULT ")]
    r = json.loads(line[7:])
    assert r["backend"] == "plain" and r["method"] == "lora" and len(r["losses"]) == 3
    assert 0 < r["n_trainable"] < r["n_params"] and r["tokens_per_s"] > 0


@pytest.mark.slow
@script("packed_lora.py", lambda tmp, fx: ["measure", "--dry-run", "--work", tmp / "work", "--dense", fx("tiny_model"),
                         "--device", "cpu", "--only", "qwen2.5-1.5b", "--steps", 2])
def test_packed_lora_dry_run_quantizes_the_base(ran):
    out, tmp = ran
    rows = {r["base"]: r for r in json_lines(out) if r.get("dry_run")}
    assert set(rows) == {"bf16", "w4a16"}
    packed = tmp / "work" / "qwen2.5-1.5b-w4a16"
    assert rows["w4a16"]["spec"]["model_dir"] == str(packed)
    assert json.loads((packed / "config.json").read_text())["quantization_config"]["format"] == "pack-quantized"
    from safetensors import safe_open

    with safe_open(str(packed / "model.safetensors"), "pt") as f:
        assert "model.layers.0.mlp.down_proj.weight_packed" in set(f.keys())
    for r in rows.values():  # the trainer's command as the train step builds it, on the spec it wrote
        assert r["argv"][1:3] == ["-m", "recipes.training.worker"]
        spec = json.loads(Path(r["argv"][3]).read_text())
        assert spec["method"] == "lora" and spec["device"] == "cpu" and spec["init"] == "pretrained"


# ---- reports on the committed rows ---------------------------------------------------------------------------------

@script("bench_fit.py")
def test_bench_fit_on_committed_rows(ran):
    out, _ = ran
    assert out.startswith("constants:")
    rows = [r for p in sorted(RESULTS.glob("2026-11-29-memory-h200-raw*.jsonl")) for r in jsonl(p)
            if "peak_allocated_gib" in r and r.get("optim", "adamw") != "paged"]
    held = re.search(r"^held out: (\d+) configurations: mean \|error\| ([\d.]+)%", out, re.M)
    assert held and int(held.group(1)) == len(rows) // 2, out[:500]
    assert float(held.group(2)) < 10  # the model fits what it was built for
    # a row of the second round, measured = peak reserved + what lies outside the allocator
    r = next(r for r in jsonl(RESULTS / "2026-11-29-memory-h200-raw-round2.jsonl") if "peak_allocated_gib" in r)
    line = re.search(rf"^  {re.escape(r['id'])}\s+measured\s+([\d.]+)\s+predicted\s+([\d.]+)\s+([+-][\d.]+)%",
                     out, re.M)
    assert line, out[:3000]
    measured, predicted = float(line.group(1)), float(line.group(2))
    assert measured == pytest.approx(r["peak_reserved_gib"] + r["outside_allocator_gib"], abs=0.006)
    assert float(line.group(3)) / 100 == pytest.approx((predicted - measured) / measured, abs=0.002)


@script("memory_accuracy.py", lambda tmp, fx: ["report", "--md", tmp / "report.md"])
def test_memory_accuracy_report_beside_the_peers(ran):
    out, tmp = ran
    assert (tmp / "report.md").read_text().startswith("| configuration |")
    assert (tmp / "report.md").read_text().strip() in out
    r = next(r for r in jsonl(RESULTS / "2026-11-29-memory-h200-raw-round2.jsonl") if "peak_allocated_gib" in r)
    cells = table_row(out, r["id"])
    measured, predicted, error = float(cells[1]), float(cells[2]), pct(cells[3])
    assert measured == pytest.approx(r["peak_reserved_gib"] + r["outside_allocator_gib"], abs=0.006)
    assert error == pytest.approx((predicted - measured) / measured, abs=0.002) and abs(error) < 0.25
    assert re.search(r"\d+\.\d \([+-]\d+%\)", cells[4])  # accelerate's figure beside it
    assert re.search(r"^- yichui: 51 configurations, mean \|error\|", out, re.M)


@script("memory_accuracy.py", lambda tmp, fx: ["measure", "--dry-run", "--grid", 6, "--steps", 1,
                         "--work", tmp / "work"])
def test_memory_accuracy_grid_6_builds_dpo_rows_on_preference_data(ran):
    """Issue 47: DPO in a fresh process per plan beside its SFT twin — the DPO rows' data are preference pairs."""
    out, tmp = ran
    rows = {r["id"]: r for r in json_lines(out) if r.get("dry_run")}
    assert len(rows) == 7 and any("qlora" in k for k in rows)
    dpo = "qwen2.5-0.5b-lora-ckpt-s8192-b1-alpha32-rank16-objectivedpo"
    assert json.loads(Path(rows[dpo]["argv"][-1]).read_text())["objective"] == "dpo"
    first = json.loads((tmp / "work" / "runs" / dpo / "data.jsonl").read_text().splitlines()[0])
    assert {"prompt", "chosen", "rejected"} <= set(first)
    twin = json.loads((tmp / "work" / "runs" / dpo.replace("objectivedpo", "objectivesft") / "data.jsonl")
                      .read_text().splitlines()[0])
    assert "messages" in twin


@script("memory_accuracy.py", lambda tmp, fx: ["measure", "--dry-run", "--grid", 2, "--steps", 1,
                         "--work", tmp / "work"])
def test_memory_accuracy_dry_run_builds_every_row(ran):
    out, tmp = ran
    rows = {r["id"]: r for r in json_lines(out) if r.get("dry_run")}
    assert len(rows) == 20
    r = rows["qwen2.5-7b-lora-nockpt-s1024-b2-targetsq_proj+v_proj"]
    spec = json.loads(Path(r["argv"][-1]).read_text())  # what the trainer would read: the whole TrainerJob
    assert r["argv"][1:3] == ["-m", "recipes.training.worker"]
    assert spec["lora_targets"] == "q_proj,v_proj" and spec["micro_batch"] == 2 and spec["seq_len"] == 1024
    assert spec["init"] == "random" and spec["device"] == "cuda" and spec["activation_checkpointing"] is False
    assert rows["qwen2.5-7b-full-ckpt-s1024-b1-optimpaged"]["spec"]["optim"] == "paged"
    assert not list((tmp / "work").rglob("*.safetensors"))  # no weights built
    assert len((tmp / "work" / "runs" / r["id"] / "data.jsonl").read_text().splitlines()) == 2


@script("plain_memory.py", lambda tmp, fx: ["report", "--md", tmp / "plain.md"])
def test_plain_memory_report(ran):
    out, _ = ran
    rows = jsonl(RESULTS / "2026-12-02-memory-plain-h200.jsonl")
    assert len([x for x in out.splitlines() if x.startswith("| qwen") or x.startswith("| llama")]) == len(rows)
    cells = table_row(out, "qwen2.5-7b full ckpt on mb 1 × 512")
    r = next(r for r in rows if (r["shape"], r["method"], r["batch"], r["seq"]) == ("qwen2.5-7b", "full", 1, 512))
    assert float(cells[1]) == pytest.approx(r["device_used_gib"], abs=0.006)
    assert pct(cells[3]) == pytest.approx((float(cells[2]) - float(cells[1])) / float(cells[1]), abs=0.002)
    assert cells[4] == "held out" and abs(pct(cells[3])) < 0.25
    assert re.search(r"^Held out: 5 runs, mean \|error\|", out, re.M)


@script("fit_speed.py", lambda tmp, fx: ["--md", tmp / "speed.md", "--print-constants"])
def test_fit_speed_on_committed_rows(ran):
    out, tmp = ran
    assert re.search(r"^SECONDS_PER = \{.*\"matmul_flop\": [0-9.e-]+", out, re.M)
    table = (tmp / "speed.md").read_text()
    # a held-out row: its runs, the median, the planner's prediction and the error as written
    row = next(x for x in table.splitlines() if x.startswith("| mistral-7b-lora-ckpt-s2048-b1 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "4,179, 4,589" and cells[2] == "4,384" and cells[5] == "held out"
    assert float(cells[4].rstrip("%")) / 100 == pytest.approx(float(cells[3].replace(",", "")) / 4384 - 1, abs=0.002)
    assert re.search(r"^- held out \(llama3.2-1b, phi3-mini, mistral-7b, qwen3-8b\): 36 rows: median", table, re.M)


@script("speed_grid.py", lambda tmp, fx: ["measure", "--dry-run", "--work", tmp / "work"])
def test_speed_grid_dry_run_plans_every_row(ran):
    out, tmp = ran
    sys.path.insert(0, str(BENCH))
    import speed_grid

    rows = {r["id"]: r for r in json_lines(out) if r.get("dry_run")}
    expected = {speed_grid.row_id(s, r) for c in speed_grid.CALLS.values() for s in c for r in speed_grid.rows_for(s)}
    assert set(rows) == expected and len(rows) == 91 + 18  # the grid, and the other families (call 4)
    r = rows["qwen3-8b-qlora-ckpt-s2048-b1"]["spec"]  # QLoRA loads written weights; the others build random ones
    assert r["init"] == "pretrained" and r["lora_rank"] == 16 and r["grad_accum"] == 1
    assert rows["phi3-mini-lora-nockpt-s2048-b2-dropout0.0"]["spec"]["lora_dropout"] == 0.0
    assert rows["qwen2.5-3b-full-nockpt-s2048-b4-compileTrue-masterbf16"]["spec"]["compile_layers"] is True
    assert set(speed_grid.HELD_OUT) < {s for c in speed_grid.CALLS.values() for s in c}
    moe = [r["spec"] for k, r in rows.items() if k.startswith("qwen3-30b-a3b-")]  # peft: no dropout on fused experts
    assert len(moe) == 6 and all(x["lora_dropout"] == 0.0 for x in moe)


@script("speed_grid.py", lambda tmp, fx: ["measure", "--set", "unsloth", "--dry-run", "--work", tmp / "work",
                                          "--only", "mistral-7b"])
def test_speed_grid_pairs_the_unsloth_backend_with_the_eager_trainer_process_by_process(ran):
    """Issue 44: unsloth in the grid — the same knobs on both backends, each in its own interpreter, alternated
    eager, unsloth, unsloth, eager (the GPU run needs unsloth's environment; the dry run plans it on CPU)."""
    out, tmp = ran
    sys.path.insert(0, str(BENCH))
    import speed_grid

    rows = [r for r in json_lines(out) if r.get("dry_run")]
    backends = [r["spec"]["training_backend"] for r in rows]
    assert backends == ["transformers"] * 2 + ["unsloth"] * 4 + ["transformers"] * 2, backends
    assert {r["id"] for r in rows} == {speed_grid.row_id("mistral-7b", x) for x in speed_grid.UNSLOTH_ROWS}
    assert all(r["spec"]["init"] == "pretrained" for r in rows if r["spec"]["training_backend"] == "unsloth")
    assert "mistral-7b-qlora-ckpt-s2048-b1-backendunsloth" in {r["id"] for r in rows}


@pytest.mark.slow
@script("speed_grid.py", lambda tmp, fx: [
    "measure", "--device", "cpu", "--config", fx("tiny_model") / "config.json", "--only", "qwen2.5-0.5b",
    "--rows", "qwen2.5-0.5b-lora-ckpt-s2048-b1,qwen2.5-0.5b-full-nockpt-s1024-b2", "--seq", 64, "--steps", 5,
    "--out", tmp / "rows.jsonl", "--work", tmp / "work"])
def test_speed_grid_runs_its_rows_in_one_process_on_the_tiny_model(ran):
    out, tmp = ran
    rows = {r["id"]: r for r in jsonl(tmp / "rows.jsonl")}
    assert set(rows) == {"qwen2.5-0.5b-lora-ckpt-s2048-b1", "qwen2.5-0.5b-full-nockpt-s1024-b2"}
    for r in rows.values():  # the second row ran after the first in the same process, and trained
        assert r["rc"] == 0 and len(r["losses"]) == 5 and r["tokens_per_s"] > 0, r.get("error")
    full = rows["qwen2.5-0.5b-full-nockpt-s1024-b2"]["losses"]
    assert full[-1] < full[0]


@script("speed_grid.py", lambda tmp, fx: [
    "measure", "--set", "profile", "--device", "cpu", "--config", fx("tiny_model") / "config.json", "--only",
    "gemma3-1b", "--rows", "gemma3-1b-lora-nockpt-s2048-b1", "--seq", 64, "--steps", 7, "--out", tmp / "rows.jsonl",
    "--work", tmp / "work"])
def test_speed_grid_profile_rows_carry_where_the_step_went(ran):
    """Issue 44's profile set: torch.profiler over optimizer steps 4–6 of the trainer, its totals in the row and its
    operator table beside the rows (on the GPU: the shapes the speed model does not cover, beside one it does)."""
    _, tmp = ran
    (r,) = jsonl(tmp / "rows.jsonl")
    assert r["rc"] == 0 and r["profile"]["steps"] == 3 and r["profile"]["wall_s"] > 0, r.get("error")
    table = (tmp / "gemma3-1b-lora-nockpt-s2048-b1.profile.txt").read_text()
    assert "Self CPU" in table and "aten::" in table


@script("layer_launches.py", lambda tmp, fx: ["--families", "llama,gemma3_text", "--out", tmp / "launches.json"])
def test_layer_launches_recounts_the_committed_table(ran):
    """Issue 44's launch counts (bench/results/2026-12-06-gemma-moe-profile-h100.md): recounted from the families'
    config.json, they equal the committed table — a transformers or peft upgrade that changes them shows here — and
    Gemma-3's layer launches about twice Llama's."""
    _, tmp = ran
    now = json.loads((tmp / "launches.json").read_text())
    committed = json.loads((BENCH / "results" / "2026-12-06-gemma-moe-profile-h100" / "layer_launches.json")
                           .read_text())
    assert now["adapter"] == committed["adapter"]
    for family in ("qwen2", "llama", "gemma3_text"):
        assert now["layer"][family] == committed["layer"][family], family
    assert now["layer"]["gemma3_text"][0] > 1.8 * now["layer"]["llama"][0]


@script("compile_shapes.py", lambda tmp, fx: [
    "run", "--device", "cpu", "--config", fx("tiny_model") / "config.json", "--variants", "eager", "--steps", 4,
    "--work", tmp / "work", "--out", tmp / "rows.jsonl"])
def test_compile_shapes_times_each_step_of_the_trainer_process(ran):
    """The CPU path of issue 44/48's compile run: the trainer's own process on the bundled (unpacked) data, each
    logged step's wall time and the stalls among them."""
    _, tmp = ran
    (r,) = jsonl(tmp / "rows.jsonl")
    assert r["rc"] == 0 and r["steps"] == 4 and len(r["step_seconds"]) == 3 and r["first_step_after_start_s"] > 0
    assert all(s > 1.0 for _, s in r["stalls"]) and r["losses"][0] is not None


@script("speed_grid.py", lambda tmp, fx: [
    "measure", "--set", "dpo", "--device", "cpu", "--config", fx("tiny_model") / "config.json", "--only",
    "qwen2.5-0.5b", "--rows", "qwen2.5-0.5b-lora-ckpt-s2048-b1-objectivedpo,"
    "qwen2.5-0.5b-full-ckpt-s2048-b2-masterbf16-objectivedpo", "--seq", 64, "--steps", 4, "--out", tmp / "rows.jsonl",
    "--work", tmp / "work"])
def test_speed_grid_dpo_rows_train_from_the_reference(ran):
    """Issue 47's rows: preference pairs, trl's DPOTrainer through yichui's trainer; a full fine-tune's reference is a
    copy of the same weights (the first loss is ln 2: policy = reference), its tokens counted over both answers."""
    out, tmp = ran
    rows = {r["id"]: r for r in jsonl(tmp / "rows.jsonl")}
    assert set(rows) == {"qwen2.5-0.5b-lora-ckpt-s2048-b1-objectivedpo",
                         "qwen2.5-0.5b-full-ckpt-s2048-b2-masterbf16-objectivedpo"}
    for r in rows.values():
        assert r["rc"] == 0 and len(r["losses"]) == 4 and r["tokens_per_s"] > 0, r.get("error")
        assert r["losses"][0] == pytest.approx(0.69315, abs=1e-4) and r["losses"][-1] < r["losses"][0]
    pairs = jsonl(tmp / "work" / "runs" / "qwen2.5-0.5b-lora-ckpt-s2048-b1-objectivedpo" / "data.jsonl")
    assert len(pairs) == 4 and all(p["chosen"] != p["rejected"] for p in pairs)


@script("dpo_peer.py", lambda tmp, fx: ["rounds", "--dry-run", "--work", tmp / "work", "--rounds", 2, "--steps", 5])
def test_dpo_peer_rounds_alternate_the_sides(ran):
    out, tmp = ran
    runs = json_lines(out)
    assert [(r["round"], r["side"]) for r in runs] == [(1, "trl"), (1, "eager"), (1, "compiled"),
                                                      (2, "compiled"), (2, "eager"), (2, "trl")]
    yichui = [r["argv"] for r in runs if r["side"] != "trl"]
    # yichui's side loads the peer's written weights and trains the same pairs
    assert all(a[a.index("--weights-from") + 1] == str(tmp / "work" / "qwen2.5-3b") for a in yichui)
    assert any(a[a.index("--rows") + 1].endswith("-compileTrue-objectivedpo") for a in yichui)


def _pairs(tmp: Path, model: Path) -> Path:
    """Preference pairs on the tiny tokenizer (the benchmark's own writer), for the peer's CPU run."""
    sys.path.insert(0, str(BENCH))
    from memory_accuracy import synthetic_preferences

    synthetic_preferences(tmp / "pairs.jsonl", model, 64, 5)
    return tmp / "pairs.jsonl"


@script("dpo_peer.py", lambda tmp, fx: [
    "peer", "--cpu", "--model", fx("tiny_model"), "--data", _pairs(tmp, fx("tiny_model")), "--seq", 64, "--mb", 1,
    "--steps", 5, "--out", tmp / "rows.jsonl", "--work", tmp, "--id", "tiny"])
def test_dpo_peer_runs_trls_own_script(ran):
    """The peer is TRL's trl/scripts/dpo.py (its main), clocked by a callback at every logged step."""
    out, tmp = ran
    (r,) = jsonl(tmp / "rows.jsonl")
    assert r["side"] == "trl" and r["rc"] == 0 and len(r["losses"]) == 5 and r["tokens_per_s"] > 0
    assert r["losses"][0] == pytest.approx(0.69315, abs=1e-4)
    assert (tmp / "peer-out" / "adapter_config.json").is_file()  # the script's own save


@script("vlm_memory.py", lambda tmp, fx: ["report"])
def test_vlm_memory_report(ran):
    out, _ = ran
    rows = [r for p in sorted(RESULTS.glob("2026-12-02-memory-vlm-h200-raw*.jsonl")) for r in jsonl(p)
            if r.get("device_peak_gib")]
    assert len([x for x in out.splitlines() if x.startswith("| qwen2.5-vl")]) == len(rows)
    assert re.search(r"^- round 4: \d+ rows: mean \|error\|", out, re.M)
    r = next(r for r in rows if r.get("tower") == "frozen-out")
    assert f"| {r['device_peak_gib']:.2f} |" in out


@script("vlm_memory.py", lambda tmp, fx: ["measure", "--dry-run", "--only", "qwen2.5-vl-3b-lora-ckpt-img224x1-b4",
                         "--steps", 1, "--work", tmp / "work"])
def test_vlm_memory_dry_run_renders_the_records(ran):
    out, tmp = ran
    (r,) = [r for r in json_lines(out) if r.get("dry_run")]
    assert r["id"] == "qwen2.5-vl-3b-lora-ckpt-img224x1-b4"
    assert r["image_tokens"] == (224 // 14) ** 2 // 4 and r["seq_tokens"] > r["image_tokens"] + 400
    assert r["spec"]["micro_batch"] == 4 and r["spec"]["lora_rank"] == 16
    records = jsonl(tmp / "work" / "runs" / r["id"] / "data.jsonl")
    assert len(records) == 4 and all((tmp / "work" / "runs" / r["id"] / x["images"][0]).is_file() for x in records)
    assert (tmp / "work" / "qwen2.5-vl-3b" / "processor_config.json").is_file()


@script("packed_lora.py", lambda tmp, fx: ["report", RESULTS / "2026-12-03-packed-lora-h200.jsonl"])
def test_packed_lora_report(ran):
    out, _ = ran
    assert table_row(out, "qwen2.5-7b-lora-ckpt-s2048-b1-initpretrained", n=3)[1:] == ["0.47", "0.48"]
    assert "| qwen2.5-7b-lora-ckpt-s2048-b1-initpretrained | w4a16 | 7.76 |" in out
    assert "196: 3.13 / 12.15 GiB" in out


@script("export_quality.py", lambda tmp, fx: ["report", RESULTS / "2026-11-30-export-h200.jsonl"])
def test_export_quality_report(ran):
    out, _ = ran
    assert [table_row(out, f)[4] for f in ("gptq-w4a16", "awq-w4a16", "fp8-dynamic", "bnb-4bit")] == \
        ["0.00403", "0.08231", "0.00862", "0.06851"]  # the later attempt at each format


@script("export_quality.py", lambda tmp, fx: ["measure", "--dry-run", "--work", tmp / "work"])
def test_export_quality_dry_run(ran):
    out, tmp = ran
    rows = {r["format"]: r for r in json_lines(out) if r.get("dry_run")}
    assert list(rows) == ["gptq-w4a16", "awq-w4a16", "fp8-dynamic", "bnb-4bit"]
    assert rows["gptq-w4a16"]["modifier"] == "GPTQModifier" and rows["gptq-w4a16"]["calibration"] == 128
    assert rows["fp8-dynamic"]["scheme"] == "FP8_DYNAMIC" and rows["fp8-dynamic"]["calibration"] == 0
    assert rows["bnb-4bit"]["tool"] == "bnb" and rows["bnb-4bit"]["bits"] == 4
    model = Path(rows["gptq-w4a16"]["merged_dir"])
    assert (model / "tokenizer.json").is_file() and not list(model.glob("*.safetensors"))


@script("train_throughput.py", lambda tmp, fx: ["report", RESULTS / "2026-11-29-train-h200-raw.jsonl"])
def test_train_throughput_report(ran):
    out, _ = ran
    cells = table_row(out, "yichui qwen2.5-7b lora r8 ckpt off mb 2")
    assert cells[1:4] == ["9813", "41.8", "2.19×"]


@script("train_throughput.py",
        lambda tmp, fx: ["jobs-report", RESULTS / "2026-12-02-train-jobs-h200" / "train-jobs.jsonl"])
def test_train_throughput_jobs_report(ran):
    out, _ = ran
    assert "### qwen2.5-1.5b full, 2048 tokens, micro-batch 4" in out and "### llama3.1-8b qlora, 4096 tokens" in out
    assert table_row(out, "1")[1:4] == ["28,763", "41,311", "27,431"]
    assert table_row(out, "50")[1:4] == ["1.089", "1.087", "1.09"]  # the 50-step losses side by side


@script("train_throughput.py", lambda tmp, fx: ["measure", "--dry-run", "--plan", "jobs,best,backend", "--gpus", 0,
                         "--peer", tmp / "plain_hf_train.py", "--out", tmp / "rows.jsonl", "--work", tmp / "work"])
def test_train_throughput_dry_run(ran):
    out, tmp = ran
    rows = [r for r in json_lines(out) if r.get("dry_run") or r.get("who", "").endswith("-best")]
    assert {r["who"] for r in rows} == {"plain", "unsloth", "yichui", "peer", "unsloth-best", "yichui-best"}
    assert not (tmp / "rows.jsonl").exists()
    peer = next(r for r in rows if r["who"] == "peer")
    assert peer["argv"][1] == str(tmp / "plain_hf_train.py") and "--ckpt" in peer["argv"]
    plain = next(r for r in rows if r["who"] == "plain")  # the 50-step loss rows: yichui's token rows, written
    data = json.loads(Path(plain["argv"][plain["argv"].index("--data") + 1]).read_text())
    assert len(data["input_ids"]) == 50 * 4 and len(data["input_ids"][0]) == 2048
    best = next(r for r in rows if r["who"] == "yichui-best" and r["method"] == "lora")
    assert best["plan"]["fits"] and best["predicted_peak_gib"] <= 24 and best["spec"]["micro_batch"] == \
        best["plan"]["micro_batch"]
    on_unsloth = next(r for r in rows if r["who"] == "yichui" and r["extra"].get("training_backend") == "unsloth")
    assert on_unsloth["spec"]["interpreter"] == on_unsloth["argv"][0]  # the backend's own interpreter runs it


@script("serve_chain.py", lambda tmp, fx: ["report", RESULTS / "2026-12-01-serve-h200"])
def test_serve_chain_report(ran):
    out, _ = ran
    assert table_row(out, "vllm gptq-w4a16 (eager)")[5:8] == ["401", "401", "200"]
    cells = table_row(out, "vllm merged (fit)")  # the KV cache the engine reported, the memory model now
    assert cells[5] == "5,976,320" and abs(pct(cells[9])) < 0.05
    assert "| 0.0 | 11.2 | 43.9 | 0.0 | 123.3 | 229.8 | 189.1 | 38.6 | 639.6 |" in out


@script("serve_chain.py", lambda tmp, fx: ["report", RESULTS / "2026-12-06-time-to-serve-h100"])
def test_serve_chain_reports_time_to_serve_again_and_the_memory_curves(ran):
    """Issue 48's rows (an H100): the first start and the warm ones with their phases and parity, the KV cache
    against the memory model on that GPU (its name and size read from the run), TensorBoard's memory scalars."""
    out, _ = ran
    first = table_row(out, "vllm first start (chain's deploy)")
    assert first[1] == "0" and first[3] == "152.8" and first[6:8] == ["same (ids)", "1/1 same"]
    again = table_row(out, "vllm again: merged")
    assert float(again[1]) > 30 and float(again[3]) < 60 and again[6] == "same (ids)"
    assert float(table_row(out, "vllm again: bnb-4bit")[3]) < 60
    kv = table_row(out, "vllm merged (fit)")
    assert abs(pct(kv[9])) < 1.0  # the H100's 79.6 GiB, not an H200's
    assert "| peak_reserved_gib | 2.982 | 3.275 | 3.777 | 3.801 | 3.801 | 3.801 |" in out  # the 200-step run
    assert "stalls before step 2: 19.4 s" in out


@script("serve_chain.py", lambda tmp, fx: ["report", RESULTS / "2026-12-06-time-to-serve-sglang-h100"])
def test_serve_chain_reports_sglang_first_start_and_again(ran):
    """Issue 48 on SGLang (an H100): the chain resumed by hand (its total is its steps'), the first start on an empty
    kernel cache, the warm ones under 60 s with the parity gate passed."""
    out, _ = ran
    first = table_row(out, "sglang first start (chain's deploy)")
    assert first[1] == "0" and first[3] == "83.1" and first[6:8] == ["same (ids)", "1/1 same"]
    for target in ("merged", "other-weights", "fp8-dynamic"):
        assert float(table_row(out, f"sglang again: {target}")[3]) < 60
    assert "| 0.0 | 0.0 | 35.3 | 0.0 | 44.1 | 48.8 | 86.1 | 31.0 | 245.3 |" in out


@script("serve_chain.py", lambda tmp, fx: ["report", RESULTS / "2026-12-06-time-to-serve-sglang-h100" / "key"])
def test_serve_chain_reads_the_gpu_of_later_rows_from_their_run(ran):
    """Rows of a later call on the same machine (a subfolder without its own env row) are priced on the run's GPU,
    the H100, not the H200 assumed for rows that never said: the adapter's KV cache within 1 %, not +80 %."""
    out, _ = ran
    assert abs(pct(table_row(out, "sglang adapter again (fit)")[9])) < 1.0
    assert table_row(out, "sglang again: adapter")[6:8] == ["same (ids)", "1/1 same"]


@script("fit_speed.py", lambda tmp, fx: ["--check", "--gpu", "NVIDIA H100 80GB",
                                        *sorted((RESULTS / "2026-12-06-qlora-speed-h100").glob("*.jsonl"))])
def test_fit_speed_checks_rows_of_another_gpu(ran):
    out, _ = ran
    cells = table_row(out, "mistral-7b-qlora-ckpt-s2048-b1")
    assert cells[1] == "3,209, 3,647" and cells[2] == "3,428" and cells[5] == "held out"
    assert re.search(r"^- held-out shapes: 6 rows: median \|error\| ", out, re.M)


# the values this CPU machine refuses (no GPU engine, no AWQ): everything else of each command must be valid here
GPU_ONLY = {"export.formats", "export.serve_with", "deploy.backend", "deploy.model", "deploy.gpu_memory_utilization",
            "deploy.cuda_graphs"}


@script("serve_chain.py", lambda tmp, fx: ["run", "--dry-run", "--work", tmp / "work", "--results", tmp / "results",
                         "--format-engines", "vllm,sglang", "--holdout-engines", "vllm,lmdeploy",
                         "--warm", "merged,other-weights,bnb-4bit", "--graphs"])
def test_serve_chain_dry_run(ran):
    _, tmp = ran
    rows = jsonl(tmp / "results" / "rows.jsonl")
    assert [r["phase"] for r in rows if not r.get("dry_run")] == ["env", "done"]
    chain = next(r for r in rows if r["phase"] == "chain")
    assert chain["argv"][1:5] == ["run", "--yes", "--task", "finetune"]
    assert "choose_strategy.lora_rank=64" in chain["argv"] and "deploy.host=0.0.0.0" in chain["argv"]
    assert set(chain["refused_here"]) <= GPU_ONLY, chain["refused_here"]
    formats = [r for r in rows if r["phase"] == "formats"]  # vllm: each export and the adapter; sglang: merged too
    assert len(formats) == 5 + 6 and all(r["argv"][5:7] == ["--from", "CHAIN-SESSION"] for r in formats)
    assert all(set(r["refused_here"]) <= GPU_ONLY for r in formats)
    holdout = [r for r in rows if r["phase"] == "holdout"]
    assert [x for r in holdout for x in r["argv"] if x.startswith("deploy.backend=")] == \
        ["deploy.backend=vllm", "deploy.backend=lmdeploy"]
    warm = [r for r in rows if r["phase"] == "warm"]  # issue 48: served again as the chain's server was
    assert [r["argv"][5:7] for r in warm] == [["--from", "CHAIN-SESSION"], ["--set", "select_model.source=local"],
                                              ["--from", "CHAIN-SESSION"]]
    assert all("deploy.cuda_graphs=yes" in r["argv"] and "deploy.host=0.0.0.0" in r["argv"] for r in warm)
    assert all(set(r["refused_here"]) <= GPU_ONLY for r in warm)
    assert not list((tmp / "work").glob("*/config.json"))  # no model built


@script("vlm_chain.py", lambda tmp, fx: ["report", RESULTS / "2026-12-02-vlm-chain-h200"])
def test_vlm_chain_report(ran):
    out, _ = ran
    assert "Base: qwen2.5-vl-3b (" in out
    assert re.search(r'^- image_request: .*"reference": "red", "reply": "red"', out, re.M)
    assert re.search(r"^- http_without_key: 401$", out, re.M)


@script("vlm_chain.py", lambda tmp, fx: ["run", "--dry-run", "--work", tmp / "work", "--results", tmp / "results",
                         "--train-images", 4, "--heldout-images", 2])
def test_vlm_chain_dry_run(ran):
    _, tmp = ran
    (chain,) = [r for r in jsonl(tmp / "results" / "rows.jsonl") if r["phase"] == "chain"]
    sets = dict(x.split("=", 1) for x in chain["argv"][chain["argv"].index("--set"):] if "=" in x)
    assert sets["choose_strategy.image_size"] == "448" and sets["choose_strategy.freeze_projector"] == "no"
    train = jsonl(Path(sets["choose_strategy.dataset_path"]))
    assert train and all((Path(sets["choose_strategy.dataset_path"]).parent / r["images"][0]).is_file() for r in train)
    assert Path(sets["evaluate.heldout_path"]).is_file()
    assert set(chain["refused_here"]) <= GPU_ONLY, chain["refused_here"]


@script("chaos_gpu.py", lambda tmp, fx: ["run", "--dry-run", "--work", tmp / "work", "--results", tmp / "results",
                         "--seed", 7])
def test_chaos_gpu_dry_run(ran):
    _, tmp = ran
    rows = {r["phase"]: r for r in jsonl(tmp / "results" / "rows.jsonl")}
    kills = rows["plan"]["kills"]
    assert len(kills) == 30 and sorted({s for s, _ in kills}) == [3, 4, 5, 6, 7, 8]
    for phase in ("oom", "chaos"):  # every answer valid here: the chaos run's own answers run on a CPU too
        assert rows[phase]["refused_here"] == {}, rows[phase]["refused_here"]
    assert "choose_strategy.micro_batch=64" in rows["oom"]["argv"]
    assert "export.formats=bnb-8bit" in rows["chaos"]["argv"]


@script("unsloth_backend_gpu.py", lambda tmp, fx: ["--dry-run", "--out", tmp / "out", "--work", tmp / "work",
                         "--envs", tmp / "envs", "--steps", 2, "--seq", 256])
def test_unsloth_backend_gpu_dry_run(ran):
    out, tmp = ran
    (r,) = json_lines(out)
    assert "choose_strategy.training_backend=unsloth" in r["argv"] and r["kill_after"] == "checkpoint-8"
    assert set(r["refused_here"]) <= {"choose_strategy.training_backend"}  # asked where unsloth is installed
    assert len((tmp / "work" / "data.jsonl").read_text().splitlines()) == 2 * 64


@script("oom_recovery.py", lambda tmp, fx: ["--dry-run", "--work", tmp / "work"])
def test_oom_recovery_dry_run_follows_the_rule(ran):
    out, _ = ran
    rows = [r["spec"] for r in json_lines(out) if r.get("dry_run")]
    # the train step's rule, launch after launch: half the micro-batch, twice the accumulation, checkpointing on
    assert [(s.get("micro_batch", 1), s.get("grad_accum", 1)) for s in rows] == \
        [(64 >> i, 1 << i) for i in range(7)]
    assert rows[0]["activation_checkpointing"] is False and all("activation_checkpointing" not in s for s in rows[1:])


@script("nvme_offload.py", lambda tmp, fx: ["--dry-run", "--work", tmp / "work", "--swap", tmp / "swap"])
def test_nvme_offload_dry_run(ran):
    out, tmp = ran
    rows = {r["variant"]: r for r in json_lines(out) if r.get("dry_run")}
    assert list(rows) == ["zero3", "zero3-nvme"]
    for r in rows.values():  # one process under the launcher, as the train step starts ZeRO-3
        assert r["argv"][1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"]
        assert r["spec"]["distribution"] == "zero3"
    assert rows["zero3-nvme"]["spec"]["offload_device"] == "nvme"
    assert rows["zero3-nvme"]["spec"]["nvme_path"] == str(tmp / "swap")


@script("distributed.py", lambda tmp, fx: ["measure", "--dry-run", "--grid", "one-gpu", "--out", tmp / "rows.jsonl",
                                          "--work", tmp / "work"])
def test_distributed_dry_run_plans_every_sharded_row(ran):
    out, tmp = ran
    sys.path.insert(0, str(BENCH))
    import distributed

    rows = {r["id"]: r for r in json_lines(out) if r.get("dry_run")}
    assert set(rows) == set(distributed.ONE_GPU)
    for name, r in rows.items():  # one process under the launcher, as the train step starts a sharded plan
        launched = r["argv"][1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"]
        assert launched == (distributed.RUNS[name]["distribution"] != "ddp"), name
        assert r["spec"].get("distribution", "ddp") == distributed.RUNS[name]["distribution"]
        # no memory history under ZeRO-3 (it broke DeepSpeed's ZeRO-3 linear on the H200)
        assert r["spec"].get("memory_snapshot", False) == (distributed.RUNS[name]["distribution"] != "zero3"), name
    assert rows["1.5b-full-zero2-dsdefault"]["spec"]["zero_sizes"] == "deepspeed"


@script("distributed.py", lambda tmp, fx: ["report", *distributed_results(), "--md", tmp / "report.md"])
def test_distributed_report_on_the_committed_rows(ran):
    out, tmp = ran
    table = (tmp / "report.md").read_text()
    # the memory model beside every measured sharded row, the moment of the peak named
    row = next(x for x in table.splitlines() if x.startswith("| zero2 | 2 | zero2 |"))
    measured, predicted, error = (c.strip() for c in row.split("|")[5:8])
    assert float(measured) == 23.52 and abs(float(predicted) / 23.52 - 1) < 0.03 and error.endswith("%")
    assert "| 7b-lora-fsdp2 | 1 | fsdp2 | none |" in table and "| load |" in table


def distributed_results() -> list:
    return [RESULTS / "2026-11-29-distributed-h200.jsonl", RESULTS / "2026-11-29-distributed-h200-round2.jsonl",
            RESULTS / "2026-12-04-sharded-one-gpu-h200" / "rows.jsonl"]


@pytest.mark.slow
@script("distributed.py", lambda tmp, fx: ["measure", "--grid", "one-gpu", "--only", "1.5b-full-zero3",
                                          "--device", "cpu", "--config", fx("tiny_model") / "config.json", "--seq", 64,
                                          "--steps", 2, "--out", tmp / "rows.jsonl", "--work", tmp / "work"])
def test_distributed_trains_a_zero3_row_on_the_tiny_model(ran):
    """The measure path end to end on one row (ZeRO-3: the launcher, DeepSpeed's config, the row written); ZeRO-2
    through the same launcher is trained in tests/steps/test_train.py (one DeepSpeed start is ~50 s here)."""
    out, tmp = ran
    (r,) = jsonl(tmp / "rows.jsonl")
    assert r["name"] == "1.5b-full-zero3" and r["rc"] == 0 and r["sharding"] == "deepspeed-zero3", r.get("error")
    assert len(r["losses"]) == 4 and r["losses"][-1] < r["losses"][0]  # the row's own 4 steps


def grade_school_math(tmp: Path, fx) -> list:
    """openai/grade-school-math's layout (train.jsonl, test.jsonl) made of the shipped GSM8K sample."""
    src = tmp / "grade_school_math" / "data"
    src.mkdir(parents=True)
    sample = (REPO / "tests" / "data" / "gsm8k_sample.jsonl").read_text()
    (src / "train.jsonl").write_text(sample)
    (src / "test.jsonl").write_text("".join(sample.splitlines(keepends=True)[:3]))
    return [src, tmp / "gsm8k"]


@script("gsm8k_parquet.py", grade_school_math)
def test_gsm8k_parquet(ran):
    out, tmp = ran
    import pyarrow.parquet as pq

    sample = jsonl(REPO / "tests" / "data" / "gsm8k_sample.jsonl")
    assert out.splitlines() == [f"train: {len(sample)} problems", "test: 3 problems"]
    t = pq.read_table(tmp / "gsm8k" / "main" / "test-00000-of-00001.parquet")
    assert t.column_names == ["question", "answer"] and t.num_rows == 3
    assert t.column("answer")[0].as_py() == sample[0]["answer"]


@pytest.mark.slow
@script("grpo_gpu.py", lambda tmp, fx: ["run", "--device", "cpu", "--only", "tiny-reward-digits", "--steps", "4",
                                        "--out", tmp / "rows.jsonl", "--work", tmp / "work",
                                        "--tiny", fx("tiny_model")])
def test_grpo_gpu_runs_the_tiny_reward_row_on_the_cpu(ran):
    out, tmp = ran
    (row,) = jsonl(tmp / "rows.jsonl")
    assert row["rc"] == 0 and row["kind"] == "reward" and len(row["rewards"]) == 4, row
    assert row["spec"]["objective"] == "grpo" and row["longest_prompt_tokens"] > 8
    assert all("reward_digits" in s for s in row["steps"])


@script("grpo_gpu.py", lambda tmp, fx: ["table", *sorted(RESULTS.glob("2026-12-05-grpo-gpu/call*-grpo.jsonl"))])
def test_grpo_gpu_table_on_the_committed_rows(ran):
    out, _ = ran
    for row in ("qwen2.5-7b-lora-ckpt-b8-c512", "qwen2.5-1.5b-full-ckpt-b8-c512"):
        assert abs(pct(table_row(out, row)[3])) <= 0.03, out


# ---- shell scripts and coverage ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(p.name for p in BENCH.glob("*.sh")))
def test_shell_script_parses(name):
    r = subprocess.run(["bash", "-n", str(BENCH / name)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_bench_script_has_a_cpu_path():
    """A new script in bench/ comes with its CPU path here."""
    covered = {name for name, _ in SCRIPTS.values()}
    assert {p.name for p in BENCH.glob("*.py")} <= covered
