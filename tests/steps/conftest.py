"""The session the steps' tests share: the tiny model on a real local hub, the real engine resolving the demo's answers.

``chain.upto(step)`` runs, in order, the steps before ``step`` that have not run yet (no assertions: each step's own
file checks it), so any file here runs alone and in any order. A test that trains or exports a variant asks for
``variant``: the session's records and its train/ and export/ folders are put back as they were after it.
"""
from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

import recipes
from recipes import jobs
from recipes.demo.tiny_model import REPO_ID
from recipes.hub.server import HubServer
from wizard import demo
from wizard.console import UI
from wizard.engine import Engine, StepContext
from wizard.session import Session


class Chain:
    def __init__(self, home: Path, answers: dict):
        self.session = Session.new("finetune", h=home)
        self.session.save()
        self.engine = Engine(self.session, UI(), None, replay=answers)

    def ctx(self, name):
        return StepContext(self.engine, name)

    def questions(self, name):
        return {q.key: q for q in recipes.load(name).questions(self.ctx(name))}

    def step(self, name, **overrides):
        """Run step ``name`` (again, if it ran) with ``--set``-like overrides; returns its outputs as stored."""
        self.engine.overrides = {name: overrides}
        mod = recipes.load(name)
        ctx = self.ctx(name)
        answers = self.engine.resolve(mod, ctx)
        out = mod.run(ctx, answers)
        out = out.to_dict() if hasattr(out, "to_dict") else out  # as the engine stores a typed record
        rec = self.session.record(name)
        rec.outputs.update(out)
        rec.status = "done"
        self.session.save()
        assert mod.is_done(ctx, rec)
        return out

    def upto(self, name: str) -> None:
        """Run the fine-tune's steps before ``name`` that are not done."""
        for n in recipes.TASKS["finetune"]:
            if n == name:
                return
            if self.session.steps[n]["status"] != "done":
                self.step(n)


@pytest.fixture(scope="session")
def chain(tmp_path_factory, tiny_model):
    home = tmp_path_factory.mktemp("steps-home")
    shutil.copytree(tiny_model, demo.hub_root(home) / REPO_ID)
    with HubServer(demo.hub_root(home)) as hub:
        answers = demo.answers(hub.url)
        answers["choose_strategy"] |= {"max_steps": 12, "save_steps": 5, "micro_batch": 4}
        answers["export"] |= {"formats": ["bnb-4bit"]}  # the demo's is 8-bit; the steps here check NF4
        c = Chain(home, answers)
        c.hub, c.home, c.tiny = hub, home, tiny_model
        yield c
        for job in jobs.find(c.session.run_dir):
            job.stop(timeout=10)


@pytest.fixture
def variant(chain, tmp_path):
    """Keep the session as it is (records, train/, export/) and put it back after the test."""
    chain.upto("train")
    records = copy.deepcopy(chain.session.steps)
    run_dir, kept = chain.session.run_dir, tmp_path / "kept"
    for name in ("train", "export"):
        if (run_dir / name).exists():
            shutil.copytree(run_dir / name, kept / name, symlinks=True)
    yield chain
    for job in jobs.find(run_dir):
        job.stop(timeout=10)
    for name in ("train", "export"):
        shutil.rmtree(run_dir / name, ignore_errors=True)
        if (kept / name).exists():
            shutil.move(str(kept / name), str(run_dir / name))
    chain.session.steps.clear()
    chain.session.steps.update(records)
    chain.session.save()
