"""The terminal layer without a terminal (a pipe or a log): progress is said in plain lines, not minutes of silence."""
from __future__ import annotations

import time

from wizard import console
from wizard.console import UI


def test_progress_without_a_terminal_says_how_far_it_is(capsys, monkeypatch):
    """Issue 46 (tryout): a first demo piped to a file was silent for minutes while it built the tiny model (a rich
    bar draws nothing without a terminal). Now a line every EVERY seconds, none while nothing moved, and the end."""
    monkeypatch.setattr(console._Lines, "EVERY", 0.05)
    ui = UI()
    assert not ui.is_terminal  # pytest captures stdout: a pipe, as for `yichui demo | tee log`
    with ui.progress("Pre-training", total=150, unit="steps") as bar:
        for step in (10, 10, 80, 150):
            time.sleep(0.06)
            bar.update(completed=step)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Pre-training"
    assert "  Pre-training: 10/150 (7 %)" in out and "  Pre-training: 80/150 (53 %)" in out
    assert out.count("  Pre-training: 10/150 (7 %)") == 1  # not repeated while it stands still
    assert out[-1] == "  Pre-training: 150/150 (100 %)"
    with ui.progress("Downloading", total=3 * 2**20, unit="B") as bar:
        time.sleep(0.06)
        bar.update(advance=2**20)
    assert "  Downloading: 1/3 MiB (33 %)" in capsys.readouterr().out
    with ui.progress("Quick", total=2) as bar:  # done before the first interval: only its title, as before
        bar.update(completed=2)
    assert capsys.readouterr().out.splitlines() == ["Quick"]
