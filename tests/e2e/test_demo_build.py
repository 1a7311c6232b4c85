"""Issue 20, item 5: the first `yichui demo` builds the tiny model (~30 s on 2 idle cores, many minutes on a busy
box): a progress bar with the step count and an ETA, in a real pseudo-terminal at 80 columns, not one static line.
Ctrl-C during the build is one line, exit 130, and leaves nothing half-built for the next run to trip on."""
from __future__ import annotations

import re
import signal

import pexpect
from conftest import YICHUI, env_for, stop_all, yichui


def test_first_demo_shows_the_tiny_model_build_progress_and_ctrl_c_leaves_nothing(tmp_path):
    home = tmp_path / "fresh-home"  # no tiny model yet: the demo builds it
    env = env_for(home, TERM="xterm-256color", COLUMNS="80", LANG="C.UTF-8")
    # started with SIGINT ignored, as by a script's `cmd &` (and CI runs launched so): Ctrl-C must still stop it
    p = pexpect.spawn(YICHUI, ["demo"], env=env, encoding="utf-8", dimensions=(30, 80), timeout=300,
                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    log: list[str] = []
    p.logfile_read = type("L", (), {"write": lambda self, s: log.append(s), "flush": lambda self: None})()
    try:
        p.expect(re.escape("Building the tiny demo model"))
        p.expect(re.escape("Pre-training"))
        p.expect(r"\b[1-9]\d*/300\b")                         # the step count moves …
        # the session is made after the build: `yichui status` said "No sessions yet" through it (trial T)
        st = yichui(home, "status")
        assert st.returncode == 0 and f"A demo is building its tiny model (pid {p.pid}," in st.stdout, st.stdout
        assert "No sessions" not in st.stdout, st.stdout
        p.expect(r"\b([2-9]|\d\d+)/300\b")
        p.sendintr()                                          # at once: the build must not finish first
        p.expect(pexpect.EOF, timeout=60)
        p.close()
        screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(log))
        assert p.exitstatus == 130, screen[-2000:]
        assert len(set(re.findall(r"\b(\d+)/300\b", screen))) >= 3, screen[-1500:]  # 0, 1, 2 … shown as they came
        assert re.search(r"\d+/300\s+(\d:\d\d:\d\d|-:--:--)", screen), screen[-1500:]  # … and an ETA column
        assert "Stopped before the tiny model was built" in screen and "Traceback" not in screen
        hub = home / "cache" / "hub" / "yichui"
        assert not hub.exists() or not any(hub.iterdir())       # no half-built model, no temp folder left
        assert not (home / "sessions").exists() or not list((home / "sessions").glob("*.json"))
        assert not list((home / "cache" / "demo").glob("*.pid.json"))  # the build's marker went with it
        assert "No sessions" in yichui(home, "status").stdout
    finally:
        p.terminate(force=True)
        stop_all(home)  # had the build won the race, the demo would have gone on to start a server
