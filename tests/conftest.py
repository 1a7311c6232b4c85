"""Shared fixtures: the tiny model (built once per test run), an isolated YICHUI_HOME with the demo hub's files, a
real hub server on 127.0.0.1, and a runner for the installed `yichui` command."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import tempfile

import pytest
from _pytest.nodeid import coerce_node_id

# one compute thread per process: two xdist workers on a 2-core machine each run a wizard, a trainer and a server,
# and torch's default (a thread per core, spinning while it waits) oversubscribes the cores — two demos at once
# trained 3.0x slower and took 2.3x longer end to end with the default (measured 2026-12-04, same losses both ways)
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

from recipes.jobs import kill_tree  # noqa: F401,E402 - the tests' name for it

# huggingface_hub reads HF_HOME when first imported: isolate the in-process caches for the whole run, before that
_CACHES = Path(tempfile.mkdtemp(prefix="yichui-test-caches-"))
os.environ["HF_HOME"] = str(_CACHES / "hf")
os.environ["MODELSCOPE_CACHE"] = str(_CACHES / "modelscope")
os.environ.pop("HF_ENDPOINT", None)
os.environ.pop("MODELSCOPE_ENDPOINT", None)
# port reservations (recipes/serving/server.py) in a folder of this test run's own, shared by its xdist workers (they
# inherit the controller's environment): a fixed or chosen port in a test can no longer meet a reservation of another
# yichui on the host (reserve_port still checks that the port can be bound)
_OWN_RUNTIME = "YICHUI_RUNTIME_DIR" not in os.environ
if _OWN_RUNTIME:
    os.environ["YICHUI_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="yichui-test-runtime-")
# a step reading a step its `requires` does not name fails (wizard/engine.py StepContext), here and in every
# yichui process a test starts
os.environ["YICHUI_STRICT_REQUIRES"] = "1"

from recipes.demo import tiny_model as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# the quantizer's environment (llm-compressor, ~1 min to build) is shared by every test and kept between local runs;
# a clean clone (CI) builds it once
os.environ.setdefault("YICHUI_ENVS", str(REPO / ".cache" / "envs"))
YICHUI = str(Path(sys.executable).parent / "yichui")


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_CACHES, ignore_errors=True)
    if _OWN_RUNTIME:  # the controller's (or a run without workers); the workers found it set
        shutil.rmtree(os.environ["YICHUI_RUNTIME_DIR"], ignore_errors=True)


def tiny_cache_key() -> str:
    """What the tiny model's build depends on, hashed: its recipe, the bundled data its tokenizer learns from, the
    Python version (its generic corpus is CPython's pydoc topics) and the libraries that build it."""
    import hashlib
    import platform
    from importlib.metadata import version

    from recipes.data.datasets import bundled_dataset_path

    h = hashlib.sha256(Path(tiny.__file__).read_bytes() + Path(bundled_dataset_path()).read_bytes())
    h.update(" ".join([platform.python_version(), str(tiny.BUILD_VERSION),
                       *(version(d) for d in ("torch", "transformers", "tokenizers", "safetensors"))]).encode())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _building(cached: Path):
    """An exclusive lock beside a cached build (flock(2)): under pytest-xdist the second worker waits for the
    first one's build instead of doing the same work beside it."""
    import fcntl

    cached.parent.mkdir(parents=True, exist_ok=True)
    with open(cached.parent / f"{cached.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """The embedded tiny model: built once per change of what builds it and kept in .cache/tiny/<key> (a clean clone
    builds it once; a second run takes it from there), copied for this run so no test can touch the cached one."""
    cached = REPO / ".cache" / "tiny" / tiny_cache_key()
    with _building(cached):  # two test workers: one builds, the other waits for it
        if not (cached / "yichui_build.json").is_file():
            tiny.build(cached)
    dest = tmp_path_factory.mktemp("tiny") / "tiny-qwen2-chat"
    shutil.copytree(cached, dest)
    return dest


def tiny_vlm_cache_key() -> str:
    """What the demo's tiny VLM build depends on (its recipe, the shapes it pre-trains on, the tokenizer's corpus and
    the libraries), hashed."""
    import hashlib
    import platform
    from importlib.metadata import version

    from recipes.data import shapes
    from recipes.demo import tiny_vlm

    h = hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (tiny_vlm, shapes, tiny)))
    h.update(" ".join([platform.python_version(), str(tiny_vlm.BUILD_VERSION),
                       *(version(d) for d in ("torch", "transformers", "tokenizers", "safetensors"))]).encode())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def tiny_vlm_model(tmp_path_factory) -> Path:
    """The demo's tiny vision-language model (caption pre-trained, ~30 s): built once per change and kept in
    .cache/tiny-vlm/<key>, copied for this run."""
    from recipes.demo import tiny_vlm

    cached = REPO / ".cache" / "tiny-vlm" / tiny_vlm_cache_key()
    with _building(cached):
        if not (cached / "yichui_build.json").is_file():
            tiny_vlm.build(cached)
    dest = tmp_path_factory.mktemp("tiny-vlm") / "tiny-llava-shapes"
    shutil.copytree(cached, dest)
    return dest


@pytest.fixture(scope="session")
def unsloth_envs() -> Path:
    """A YICHUI_ENVS folder holding unsloth's own environment (tests/unsloth_env.py: built once, kept in
    .cache/envs-unsloth). Apart from the shared one: where unsloth is installed the wizard asks one more question."""
    from unsloth_env import build

    envs = REPO / ".cache" / "envs-unsloth"
    build(envs)
    return envs


@pytest.fixture(scope="session")
def libaio() -> dict:
    """The environment that points DeepSpeed's async_io op (NVMe offload) at libaio: Debian's libaio-dev and libaio1
    packages fetched with apt-get download and unpacked into .cache/libaio (nothing installed system-wide; kept
    between runs). Skips where apt cannot fetch them."""
    import tempfile

    root = REPO / ".cache" / "libaio"
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    if not (root / "usr" / "include" / "libaio.h").is_file():
        work = Path(tempfile.mkdtemp(prefix="libaio-"))
        got = subprocess.run(["apt-get", "download", "libaio-dev", "libaio1"], cwd=work, capture_output=True, text=True)
        debs = sorted(work.glob("*.deb"))
        if got.returncode or len(debs) < 2:
            pytest.skip(f"apt-get download libaio-dev libaio1 failed: {got.stderr.strip()[-200:]}")
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(work / "root")], check=True)
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            (work / "root").rename(root)
        except OSError:  # another worker put it there first
            pass
    return {"CFLAGS": f"-I{root}/usr/include", "LDFLAGS": f"-L{lib}", "CPATH": f"{root}/usr/include",
            "LIBRARY_PATH": str(lib), "LD_LIBRARY_PATH": str(lib)}


# modules without module-scoped fixtures whose many tests spread over both workers (the bad-input catalogue's ~100
# runs on one worker were its last ten minutes)
SPREAD = {"test_bad_inputs.py"}
# seconds each group took (summed over its tests) in a two-worker run on the 2-core box, 2026-12-07: the groups are
# handed out longest first. xdist's own order (--loadscope-reorder, off in addopts) counts tests per group, which put
# the one-test chaos module (~400 s) among the last and left one worker alone for minutes at the end.
GROUP_SECONDS = {"steps-chain": 730, "test_bench_scripts.py": 452, "test_chaos.py": 394, "test_dpo_demo.py": 314,
                 "test_interrupt.py": 213, "test_demo.py": 187, "test_training_levers.py": 185,
                 "test_wizard_pty.py": 137, "test_memory.py": 137, "test_cli.py": 107, "test_preference.py": 97,
                 "test_hubserver.py": 85, "test_tasks.py": 84, "test_custom_code.py": 82, "test_vlm_demo.py": 80,
                 "test_grpo_demo.py": 77, "test_vlm.py": 71, "test_grpo.py": 71, "test_downloader.py": 67,
                 "test_bench_peers.py": 44, "test_serve_chat.py": 29, "test_engines.py": 28, "test_offline.py": 22,
                 "test_trackers.py": 19, "test_session.py": 12, "test_console.py": 12, "test_demo_build.py": 8}
UNLISTED_SECONDS = 1  # a group not listed above, per test (the rest took < 2 s each); a SPREAD test is its own group


def _group(item) -> str | None:
    parts = Path(str(item.fspath)).parts
    name = parts[-1]
    return None if name in SPREAD else "steps-chain" if "steps" in parts else name


def pytest_collection_modifyitems(config, items):
    """The end-to-end tests (tests/e2e/) are `slow`: `pytest -m "not slow"` is the inner loop, the default run
    still runs them. Under pytest-xdist (addopts: two workers, --dist loadgroup) a module's tests run on one worker
    (its module fixtures are made once), and every test under tests/steps/ on one worker: they share one session
    (tests/steps/conftest.py ``chain``)."""
    groups = [_group(item) for item in items]
    size = {g: groups.count(g) for g in set(groups)}
    weight = {g: GROUP_SECONDS.get(g, UNLISTED_SECONDS * size[g]) if g else 10 for g in size}  # bad inputs: ~10 s
    items.sort(key=lambda item: -weight[_group(item)])  # stable: a group's tests keep their order
    for item in items:
        if "e2e" in Path(str(item.fspath)).parts:
            item.add_marker(pytest.mark.slow)
        group = _group(item)
        if group is None:
            continue
        item.add_marker(pytest.mark.xdist_group(group))
        if os.environ.get("PYTEST_XDIST_WORKER") and config.getvalue("loadgroup") and "@" not in item.nodeid:
            # what xdist's own loadgroup hook means to do: the group as the node id's suffix, which its scheduler
            # keeps on one worker. xdist 3.8 sets ``item._nodeid``, which pytest 9.2 no longer reads (its nodeid is
            # ``_id``): without this both workers ran every group's tests (seen in a two-worker run of 6 tests)
            item._id = coerce_node_id(f"{item.nodeid}@{group}")


@pytest.fixture
def home(tmp_path, tiny_model, monkeypatch) -> Path:
    """A fresh YICHUI_HOME whose demo hub already holds the tiny model (subprocesses also get fresh hub caches)."""
    h = tmp_path / "yichui-home"
    shutil.copytree(tiny_model, h / "cache" / "hub" / tiny.REPO_ID)
    monkeypatch.setenv("YICHUI_HOME", str(h))
    for var in ("HF_ENDPOINT", "MODELSCOPE_ENDPOINT", "HF_TOKEN", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    return h


@pytest.fixture
def hub(home):
    """A real hub server (HF + ModelScope APIs) on 127.0.0.1 serving the tiny model as yichui/tiny-qwen2-chat."""
    from recipes.hub.server import HubServer

    with HubServer(home / "cache" / "hub") as server:
        yield server


def env_for(home: Path, **extra) -> dict:
    env = dict(os.environ)
    env.update({"YICHUI_HOME": str(home), "HF_HOME": str(home / "hf"), "MODELSCOPE_CACHE": str(home / "modelscope"),
                "PYTHONUNBUFFERED": "1", "COLUMNS": "120",
                # yichui on PATH, as after install.sh's link: its hints say `yichui …` (without it they name the
                # path it was started by: tests/test_cli.py)
                "PATH": str(Path(YICHUI).parent) + os.pathsep + os.environ.get("PATH", "")})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def yichui(home: Path, *args: str, timeout: float = 600, **env) -> subprocess.CompletedProcess:
    """Run the installed `yichui` command with stdin from /dev/null (no TTY)."""
    return subprocess.run([YICHUI, *args], env=env_for(home, **env), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def sessions(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / "sessions").glob("*.json"))]


def demo_killed_after_first_checkpoint(home: Path, task: str, *args: str) -> dict:
    """`yichui demo --task TASK [ARGS]` under ``home``, killed with SIGKILL (it and its trainer) once the training's
    first checkpoint is written: the session it leaves. The demo end-to-end tests then resume it."""
    p = subprocess.Popen([YICHUI, "demo", "--task", task, *args], env=env_for(home), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        end = time.monotonic() + 600
        while time.monotonic() < end and p.poll() is None:
            if list((home / "runs").glob("*/train/checkpoints/checkpoint-*/trainer_state.json")):
                break
            time.sleep(0.2)
        assert p.poll() is None, p.stdout.read()[-3000:]
        (s,) = sessions(home)
        kill_tree(p, home / "runs" / s["id"])
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return s


def stop_all(home: Path) -> None:
    """Stop every job (trainer, server) any session under ``home`` started: tests leave nothing running."""
    from recipes import jobs

    for run_dir in (home / "runs").glob("*"):
        for job in jobs.find(run_dir):
            job.stop(timeout=10)


@pytest.fixture
def cleanup_jobs(home):
    yield
    stop_all(home)


def wait_for(pred, timeout: float, interval: float = 0.2, what: str = "condition"):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def kill9(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def tmpfs(tmp_path):
    """A real small filesystem (tmpfs of the given size, e.g. "1m"): a full disk for real, not a mocked one."""
    mounted = []

    def make(size: str, ro: bool = False) -> Path:
        mnt = tmp_path / f"tmpfs-{len(mounted)}"
        mnt.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}" + (",ro" if ro else ""), "tmpfs", str(mnt)],
                          capture_output=True).returncode:
            pytest.skip("cannot mount a small tmpfs here")
        mounted.append(mnt)
        return mnt

    yield make
    for mnt in mounted:
        subprocess.run(["umount", str(mnt)])


def benchmark_repos(root: Path) -> None:
    """Lay out the benchmark samples shipped with the tests (tests/data) as the hub dataset repositories the
    evaluate step fetches: openai/gsm8k (main/{train,test}) and cais/mmlu (<subject>/{test,dev}), in parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = Path(__file__).parent / "data"

    def write(rows, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), path)

    gsm = [json.loads(x) for x in (data / "gsm8k_sample.jsonl").read_text().splitlines()]
    for split in ("train", "test"):
        write(gsm, root / "datasets/openai/gsm8k/main" / f"{split}-00000-of-00001.parquet")
    mmlu = [json.loads(x) for x in (data / "mmlu_sample.jsonl").read_text().splitlines()]
    sub = mmlu[0]["subject"]
    write(mmlu, root / f"datasets/cais/mmlu/{sub}/test-00000-of-00001.parquet")
    write(mmlu[:5], root / f"datasets/cais/mmlu/{sub}/dev-00000-of-00001.parquet")


CUSTOM_REPO = "yichui/tiny-custom-code"


def custom_code_repo(root: Path, tiny_dir: Path) -> Path:
    """A copy of the tiny model that ships its own code (auto_map → configuration_yichui.py, modeling_yichui.py,
    thin subclasses of Qwen2): importing the modeling file appends the process id to $YICHUI_TEST_CODE_MARKER, so a
    test sees whether, and in which processes, the repository's code ran."""
    d = root / CUSTOM_REPO
    shutil.copytree(tiny_dir, d)
    config = json.loads((d / "config.json").read_text())
    config.update(model_type="yichui_custom", architectures=["YichuiForCausalLM"],
                  auto_map={"AutoConfig": "configuration_yichui.YichuiConfig",
                            "AutoModelForCausalLM": "modeling_yichui.YichuiForCausalLM"})
    (d / "config.json").write_text(json.dumps(config, indent=2))
    (d / "configuration_yichui.py").write_text(
        "from transformers import Qwen2Config\n\n\nclass YichuiConfig(Qwen2Config):\n    model_type = 'yichui_custom'\n")
    (d / "modeling_yichui.py").write_text(
        "import os\n\nfrom transformers import Qwen2ForCausalLM\n\nfrom .configuration_yichui import YichuiConfig\n\n"
        "if os.environ.get('YICHUI_TEST_CODE_MARKER'):\n"
        "    with open(os.environ['YICHUI_TEST_CODE_MARKER'], 'a') as f:\n        f.write(f'{os.getpid()}\\n')\n\n\n"
        "class YichuiForCausalLM(Qwen2ForCausalLM):\n    config_class = YichuiConfig\n")
    return d
