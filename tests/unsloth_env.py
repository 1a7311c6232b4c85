"""unsloth's own environment for the CPU tests (issue 21): ``<envs>/unsloth-<version>``, built once from
tests/data/unsloth-cpu.txt and kept while that file does not change (a clean clone builds it once, ~30 s).

    python tests/unsloth_env.py ENVS      build it under ENVS (what the tests' fixture does)

A venv that sees yichui's environment after its own packages (torch comes from there), as yichui's quantizer
environment does; unsloth's pins installed without dependencies, so pip never brings a second torch.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "data" / "unsloth-cpu.txt"


def build(envs: Path) -> Path:
    """The environment's folder under ``envs`` (built when absent or built from another requirements file)."""
    sys.path.insert(0, str(HERE.parent))
    from recipes.training import backends

    import fcntl

    env = envs / f"unsloth-{backends.UNSLOTH_VERSION}"
    key = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    record = env / "yichui-test-env.json"
    envs.mkdir(parents=True, exist_ok=True)
    with open(envs / f"{env.name}.lock", "w") as lock:  # two test workers: one builds, the other waits for it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists() and json.loads(record.read_text()).get("key") == key:
            return env
        return _build(env, record, key)


def _build(env: Path, record: Path, key: str) -> Path:
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, env=clean)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=clean).stdout.strip()
    main_site = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    Path(purelib, "yichui-main-site.pth").write_text("\n".join(main_site) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--disable-pip-version-check", "-r", str(REQUIREMENTS)], check=True, env=clean)
    record.write_text(json.dumps({"key": key}))
    return env


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
