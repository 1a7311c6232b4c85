"""download: verified against the hub, the small files reused, complete files not fetched again.

The session is shared with the other files under tests/steps/ (conftest.py): ``chain.upto(step)`` runs what
is missing before the step, so this file runs alone and in any order."""
from __future__ import annotations

import hashlib
from pathlib import Path

from recipes.demo.tiny_model import REPO_ID


def test_download_verifies_and_records_the_commit(chain):
    chain.upto("download")
    fresh = str(chain.home / "models-download-test")  # a folder of its own: what is fetched, what is copied
    out = chain.step("download", local_dir=fresh)
    d = Path(out["model_dir"])
    for f in chain.tiny.iterdir():
        assert hashlib.sha256((d / f.name).read_bytes()).hexdigest() == hashlib.sha256(f.read_bytes()).hexdigest()
    repo = chain.hub.hub.repo(REPO_ID)
    assert out["commit"] == repo.commit and out["bytes"] == sum(f["size"] for f in repo.files.values())
    # the small files select_model fetched are copied, not fetched a second time
    assert out["copied_bytes"] > 0 and out["fetched_bytes"] == out["bytes"] - out["copied_bytes"]
    assert sum(1 for m, p, _ in chain.hub.hub.requests if m == "GET" and p.endswith("/tokenizer.json")) == 1
    gets = lambda: sum(1 for m, p, _ in chain.hub.hub.requests if m == "GET" and p.endswith("model.safetensors"))  # noqa
    before = gets()
    chain.step("download", local_dir=fresh)  # complete files are not fetched again
    assert gets() == before


def test_a_refusal_another_model_answer_fixes_leads_back_to_select_model(chain):
    """Issue 46 item 4: a model step 1 accepted and the hub then refused at download ended the wizard; such a
    refusal now names select_model as its cause, so the wizard offers to go back there (tests/test_engine.py) and a
    resume asks it again."""
    import pytest

    from recipes.base import StepError

    chain.upto("download")
    rec = chain.session.record("select_model")
    kept = dict(rec.outputs)
    rec.outputs["revision"] = "no-such-branch"  # the hub answers 404 for it, as for a revision deleted since step 1
    try:
        with pytest.raises(StepError) as e:
            chain.step("download", local_dir=str(chain.home / "models-refused"))
        assert e.value.key == "hub.no_such_revision" and e.value.reask == "select_model", (e.value.key, e.value.reask)
    finally:
        rec.outputs.clear()
        rec.outputs.update(kept)
        chain.session.save()
    # the weights themselves refused (403) or gone (404) after the listing named them: the tryout's wizard ended
    # there; another model, revision or endpoint fixes it, so it too leads back to select_model
    import json
    import urllib.request

    def faults(method: str, rules=None) -> None:
        req = urllib.request.Request(f"{chain.hub.url}/_yichui/faults", method=method,
                                     data=json.dumps(rules).encode() if rules is not None else None,
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req).close()

    for status, key in ((404, "hub.not_found"), (403, "hub.download_denied")):
        faults("POST", [{"path": "model.safetensors", "status": status}])
        try:
            with pytest.raises(StepError) as e:
                chain.step("download", local_dir=str(chain.home / f"models-refused-{status}"))
            assert e.value.key == key and e.value.reask == "select_model", (status, e.value.key, e.value.reask)
        finally:
            faults("DELETE")
