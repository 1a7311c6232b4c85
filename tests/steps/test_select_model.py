"""select_model on the local hub: the config, and the model id / endpoint / path checks.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations

import json

from recipes.demo.tiny_model import REPO_ID
from wizard.engine import check


def test_select_model(chain):
    chain.upto("select_model")
    out = chain.step("select_model")
    assert out["architecture"] == "Qwen2ForCausalLM" and out["repo_id"] == REPO_ID
    assert out["config"] == json.loads((chain.tiny / "config.json").read_text())
    q = chain.questions("select_model")
    answers = {"source": "hf", "endpoint": chain.hub.url, "model": "other"}
    assert check(q["model_id"], "nobody/nothing", answers)[1].key == "hub.no_such_model"
    assert check(q["model_id"], "not an id", answers)[1].key == "select_model.bad_id"
    assert check(q["model_id"], REPO_ID, answers)[1] is None
    # a hub id where a catalogue name goes is told how to give it (46 trial L, M1: "is not published on hf")
    err = check(q["model"], REPO_ID, answers | {"model": None})[1]
    assert err.key == "select_model.id_as_model" and err.alone and err.args["model"] == REPO_ID
    assert check(q["endpoint"], "ftp://x", answers)[1].key == "select_model.bad_endpoint"
    assert check(q["path"], str(chain.tiny), {"source": "local"})[1] is None
    assert check(q["path"], str(chain.home), {"source": "local"})[1].key == "hub.no_local_model"


def test_a_local_folder_must_be_a_whole_model(chain, tmp_path):
    """Issue 20, item 2: a folder with config.json alone is refused at select_model, naming what it lacks."""
    import shutil

    q = chain.questions("select_model")
    part = tmp_path / "config-only"
    part.mkdir()
    shutil.copy(chain.tiny / "config.json", part / "config.json")
    err = check(q["path"], str(part), {"source": "local"})[1]
    assert err.key == "select_model.local_incomplete" and err.args["missing"] == ["tokenizer", "chat template", "weights"]
    assert check(q["path"], str(chain.tiny), {"source": "local"})[1] is None
