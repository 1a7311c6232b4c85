"""The house rules, read from every import of the code (those inside functions too): a step never imports another
step, the domain code under recipes/ never imports the wizard, and no modules import each other in a circle."""
from __future__ import annotations

import ast
from pathlib import Path

import recipes

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


MODULES = {module_name(p): p for d in ("recipes", "wizard") for p in sorted((ROOT / d).rglob("*.py"))}


def imports(name: str) -> set[str]:
    """The project's modules that ``name`` imports, anywhere in it (``from recipes import x`` is recipes.x when x is
    a module, else recipes)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:  # a name inside a module: the module
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {m: imports(m) for m in MODULES}
STEPS = {f"recipes.{s}" for s in recipes.STEPS}


def test_the_reader_finds_imports_inside_functions():
    # select_model imports the serving client only inside functions; the check must see such imports
    assert "recipes.serving.client" in GRAPH["recipes.select_model"]


def test_no_step_imports_another_step():
    found = {s: sorted(GRAPH[s] & STEPS) for s in sorted(STEPS) if GRAPH[s] & STEPS}
    assert not found, f"steps importing steps (move the shared code to the domain: recipes.handoff, hub, …): {found}"


def test_no_domain_module_imports_the_wizard():
    found = {m: sorted(t for t in deps if t == "wizard" or t.startswith("wizard."))
             for m, deps in GRAPH.items() if m.startswith("recipes")}
    found = {m: v for m, v in found.items() if v}
    assert not found, f"recipes/ importing wizard/: {found}"


def test_no_import_circle():
    """Tarjan's strongly connected components over the import graph: every component is a single module."""
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not circles, f"modules importing each other in a circle: {circles}"


def test_recipes_holds_the_steps_and_domain_packages_only():
    """One hop to a step: recipes/<step>.py; everything else lives in a package named by its domain, besides the
    step protocol (base), the hand-offs between steps (handoff), the background jobs (jobs, doctor) and where the
    engines' own environments live (envs)."""
    top = {p.stem for p in (ROOT / "recipes").glob("*.py")} - {"__init__"}
    assert top - set(recipes.STEPS) == {"base", "handoff", "jobs", "doctor", "envs", "rundir"}
    packages = {p.parent.name for p in (ROOT / "recipes").glob("*/__init__.py")}
    assert packages == {"data", "demo", "evaluation", "hub", "memory", "model", "quantization", "serving", "training"}


def test_every_subprocess_entry_point_says_so():
    """A module run as its own process (a ``__main__`` block) says so at the top of its docstring, with its command."""
    unmarked = []
    for name, path in MODULES.items():
        text = path.read_text()
        if 'if __name__ == "__main__"' in text:
            head = (ast.get_docstring(ast.parse(text)) or "").split("\n\n")[0]
            if "Entry point" not in head:
                unmarked.append(name)
    assert not unmarked, f"entry points whose docstring does not open by saying so: {unmarked}"


def test_the_steps_hand_each_other_typed_records():
    """Each step's outputs have a record type in recipes/handoff.py, and no step digs another's outputs by key."""
    from recipes import handoff

    assert set(handoff.HANDOFFS) == set(recipes.STEPS)
    for step in recipes.STEPS:
        text = (ROOT / "recipes" / f"{step}.py").read_text()
        others = [s for s in recipes.STEPS if s != step and f'ctx.outputs("{s}")' in text]
        assert not others, f"{step} reads {others} by key: use ctx.result(<record>)"


def test_the_domain_packages_stand_below_the_steps():
    """recipes/<package>/ never imports a step or the hand-offs between steps: the steps stand on the domain."""
    found = {m: sorted(t for t in deps if t in STEPS or t == "recipes.handoff")
             for m, deps in GRAPH.items() if m.count(".") >= 2 and m.startswith("recipes.")}
    found = {m: v for m, v in found.items() if v}
    assert not found, f"domain modules importing steps or recipes.handoff: {found}"


def test_choose_strategy_asks_the_training_spec_by_its_own_names():
    """choose_strategy's answers become the TrainingSpec by key: every question is a spec field or one of the few
    that choose the data, the plan or the run (a renamed question would silently fall back to the default)."""
    import dataclasses

    from recipes.training.spec import TrainerJob, TrainingSpec

    spec = {f.name for f in dataclasses.fields(TrainingSpec)}
    run = {f.name for f in dataclasses.fields(TrainerJob)} - spec
    text = (ROOT / "recipes" / "choose_strategy.py").read_text()
    keys = set(__import__("re").findall(r'Question\("(\w+)"', text))
    others = keys - spec - run
    # the backup's three become StrategyChoice.backup (StrategyChoice.backup_of), typed, by these names
    assert others == {"dataset", "dataset_repo", "dataset_file", "bad_records", "batch_size", "plan", "preflight",
                      "backup", "backup_repo", "backup_every"}, others
    assert {"lora_rank", "lora_alpha", "seq_len", "micro_batch", "grad_accum", "distribution"} <= keys & spec


def package_of(module: str) -> str | None:
    """The domain package under recipes/ a module belongs to (recipes.memory.model → memory); None for a step or
    another module at recipes/'s top (recipes.jobs, recipes.envs)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "recipes" and len(parts) > 2 else None


# the domain packages bottom-up: each imports only packages before it (issue 45: memory ↔ quantization ↔ serving and
# training ↔ quantization made loops that no module circle showed)
LAYERS = ["model", "data", "hub", "training", "memory", "serving", "quantization", "evaluation", "demo"]


def test_domain_packages_import_downwards_only():
    packages = {package_of(m) for m in MODULES} - {None}
    assert packages == set(LAYERS), f"place every domain package in LAYERS: {sorted(packages ^ set(LAYERS))}"
    upward = sorted({(m, t) for m in MODULES for t in GRAPH[m]
                     if package_of(m) and package_of(t) and package_of(m) != package_of(t)
                     and LAYERS.index(package_of(t)) > LAYERS.index(package_of(m))})
    assert not upward, f"imports up the layers ({' < '.join(LAYERS)}): {upward}"


def test_the_wizard_reads_sessions_through_their_accessors():
    """Issue 45: the session document is indexed in wizard/session.py only (Session.record/records/task/…; a step's
    StepRecord); anywhere else a key spelled as a string is a second home for the schema."""
    import re

    raw = re.compile(r"""\.data\[|\.data\.get\(|\.steps\[|\.steps\.get\(|\.steps\.items\(|\[["'](answers|outputs|status|task|lang|demo)["']\]""")
    found = []
    for path in sorted((ROOT / "wizard").rglob("*.py")):
        if path.name == "session.py" or "catalogue" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if raw.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_run_directory_layout_is_named_in_one_place():
    """Issue 45: the run folder's file names (wizard/README.md section 2) are spelled in recipes/rundir.py only
    (``"server.pid.json"`` was in 4 files, ``"events.jsonl"`` in 5); elsewhere a path comes from RunDir / TrainDir /
    ServeDir / EvaluateDir, a job's name from its constant."""
    import re

    names = re.compile(r"""["'](?:[\w.-]+/)*(server\.pid\.json|events\.jsonl|result\.json|result\.stale\.json|spec\.json|"""
                       r"""trainer\.pid\.json|samples\.json|backup\.jsonl?|backup\.pid\.json|hostfile|loss\.png|"""
                       r"""wizard\.log|report\.(?:md|png)|base-server)["']|/ ["'](?:train|serve|preflight|export|"""
                       r"""evaluate|logs|checkpoints|adapter|launch|tensorboard)["']|spawn\(["']|start\(["']""")
    found = []
    for path in sorted([*(ROOT / "recipes").rglob("*.py"), *(ROOT / "wizard").rglob("*.py")]):
        if path.name == "rundir.py" or "catalogue" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if names.search(line.split("#")[0]):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_domain_package_speaks_in_its_own_namespace():
    """Issue 45: the catalogue keys a domain package says (raises, renders, names as an option's help) are its own
    (``serving.*`` from recipes/serving/, not ``deploy.*``; a module may have its own: training/rewards.py
    ``rewards.*``), so a message's key says where it comes from, whichever step shows it. Literal keys and key
    prefixes ("training.conflict." + what) are both read."""
    import re

    from wizard.catalogue import load

    keys = load()
    own = {"training": {"training", "rewards"}}
    literal = re.compile(r"""["']([a-z_]+)\.([\w.]*)""")
    found = []
    for path in sorted((ROOT / "recipes").rglob("*.py")):
        rel = path.relative_to(ROOT / "recipes")
        if len(rel.parts) < 2:
            continue  # a step or a top-level module: any namespace
        package = rel.parts[0]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in literal.finditer(line):
                text = f"{m.group(1)}.{m.group(2)}"
                is_key = text in keys or (text.endswith(".") and any(k.startswith(text) for k in keys))
                if is_key and m.group(1) not in own.get(package, {package}):
                    found.append(f"recipes/{rel}:{n}: {text}")
    assert not found, "\n".join(found)
