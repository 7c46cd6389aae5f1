"""The layout holds: every registered mechanism is complete, imports go down the layers
without cycles, ``import dpref`` stays light, and the plugin entry points are installed.

These tests are what makes "one mechanism, one place" true: a new mechanism that
forgets its examples, proof, docs page, golden vector or parameter docs fails here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from dpref import MECHANISMS, Mechanism, lower_bound
from dpref.golden import FORMAT, golden_cases, load_shipped
from dpref.plugins import GROUPS, load
from proofs.registry import proof_for

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dpref", "proofs")

HEAVY = (
    "sympy",
    "matplotlib",
    "tqdm",
    "scipy.signal",
    "scipy.stats",
    "scipy.sparse",
    "dask",
    "pandas",
)
"""Modules ``import dpref`` must not load (each costs 0.2–1.7 s or is an optional extra)."""


# ------------------------------------------------------------- completeness
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_registered_mechanism_is_complete(name: str) -> None:
    cls = MECHANISMS[name]
    assert cls.examples, f"{name}: declares no examples"
    for example in cls.examples:
        for horizon in example.horizons or (8,):
            m = example.build(cls, 1, horizon)
            assert isinstance(m, Mechanism) and m.plan(horizon).check().passed
    held_to, _ = proof_for(cls)
    assert held_to is cls, f"{name}: its proof module has no entry for {cls.__qualname__}"
    assert cls.docs is not None and (ROOT / cls.docs).is_file(), f"{name}: no docs page"
    assert cls.__name__ in (ROOT / cls.docs).read_text(), f"{cls.docs} never names {cls.__name__}"
    assert cls.proof is not None and (ROOT / cls.proof).is_file()


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_parameter_is_documented(name: str) -> None:
    """Each constructor keyword has a numpydoc entry: it is the CLI flag's help text."""
    cls = MECHANISMS[name]
    own = [p for p in cls.parameters() if p != "horizon"]
    described = cls.parameter_help()
    assert [p for p in own if not described.get(p)] == []


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_declared_decay_gives_a_lower_bound(name: str) -> None:
    cls = MECHANISMS[name]
    m = cls.examples[0].build(cls, 1, 16)
    decay = m.decay()
    if decay is None:
        return
    bound = lower_bound(m, epsilon=1, q=100)
    assert bound.decay == decay and bound.value > 0


def test_every_mechanism_has_golden_vectors_and_the_file_is_current() -> None:
    doc = load_shipped()
    assert doc["format"] == FORMAT
    shipped = {v["case"] for v in doc["vectors"]}
    assert {v["mechanism"] for v in doc["vectors"]} >= set(MECHANISMS)
    assert shipped == {c.name for c in golden_cases()}, (
        "dpref/data/golden.json.gz is stale: regenerate it with "
        "`dpref golden export dpref/data/golden.json.gz`"
    )


def test_a_mechanism_module_outside_dpref_does_not_register_itself() -> None:
    from dpref.mechanisms import Binary

    class Local(Binary):
        name = "local-test-only"

    assert "local-test-only" not in MECHANISMS


# ------------------------------------------------------------------ imports
def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            mods[name] = path
    return mods


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Every dpref/proofs module ``module`` imports (anywhere in the file, also lazily
    inside functions), plus ``"module:function"`` strings it names."""
    out: set[str] = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_pkg else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if ":" in text and text.split(":")[0] in mods and text.split(":")[1].isidentifier():
                targets = [text.split(":")[0]]
        for target in targets:
            found = _resolve(target, mods)
            if found and found != module and not module.startswith(found + "."):
                out.add(found)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(m, p, mods) for m, p in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
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
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


LAYERS: list[tuple[str, ...]] = [
    ("dpref.errors", "dpref.types"),
    ("dpref.validation", "dpref.plugins", "dpref.caching", "dpref.lazy", "dpref.report_html"),
    ("dpref.rigorous", "dpref.noise", "dpref.dyadic", "dpref.accounting"),
    (
        "dpref.domains",
        "dpref.plan",
        "dpref.strategy",
        "dpref.planfile",
        "dpref.lower_bounds",
        "dpref.sensitivity",
    ),
    ("dpref.mechanisms",),
    ("dpref.registry", "dpref.golden", "dpref.frontier", "dpref.frontier_rows"),
    (
        "dpref.audit",
        "dpref.sanitize",
        "proofs.core",
        "proofs.smt",
        "proofs.decayed_code",
        "proofs.blue",
        "proofs.blue_gls",
        "proofs.counting",
        "proofs.decayed",
        "proofs.elders",
        "proofs.gaussian",
        "proofs.smooth",
        "proofs.factorization",
        "proofs.participation",
        "proofs.trees",
        "proofs.tree_smt",
        "proofs.zcdp",
        "proofs.registry",
        "proofs.sanitize",
    ),
    ("dpref.verify", "dpref.bench", "dpref.cli.common"),
    (
        "dpref.verify.",
        "dpref.bench.",
        "dpref.cli.",
        "dpref.audit.cli",
        "dpref.audit.sweep_cli",
        "dpref.audit.suite",
        "dpref.audit.bench",
        "dpref.sensitivity.cli",
        "dpref.sensitivity.bench",
        "dpref.sanitize.cli",
        "dpref.sanitize.bench",
        "dpref.sanitize.suite",
        "dpref.reproduce",
        "proofs.cli",
        "proofs.__main__",
    ),
    ("dpref.cli", "dpref.__main__"),
]
"""Lowest first.  A module belongs to the layer of its longest matching prefix (a
prefix ending in ``.`` matches submodules only); it may import its own layer or
lower ones — never up.  The top-level ``dpref`` and ``proofs`` packages re-export and
are left out."""


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            exact = not prefix.endswith(".")
            hit = (
                (module == prefix or module.startswith(prefix + "."))
                if exact
                else (module.startswith(prefix))
            )
            if hit and (best is None or len(prefix) > best[1]):
                best = (level, len(prefix))
    return None if best is None else best[0]


def test_imports_only_go_down_the_layers() -> None:
    wrong = []
    unplaced = []
    for module, targets in _graph().items():
        if module in PACKAGES:
            continue
        here = _layer(module)
        if here is None:
            unplaced.append(module)
            continue
        for target in targets:
            there = _layer(target)
            if target not in PACKAGES and there is not None and there > here:
                wrong.append(f"{module} (layer {here}) imports {target} (layer {there})")
    assert unplaced == [], "modules in no layer: add them to LAYERS"
    assert wrong == []


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout


_LOADED = "import sys; print(sorted(m for m in {heavy!r} if m in sys.modules))"


def test_import_dpref_is_light() -> None:
    out = _fresh("import dpref; " + _LOADED.format(heavy=HEAVY))
    assert out.strip() == "[]", f"import dpref loads {out.strip()}"


def test_building_the_cli_parser_is_light() -> None:
    """``dpref --help`` builds every subcommand's parser: none may import heavy modules."""
    out = _fresh(
        "from dpref.cli import build_parser; build_parser(); " + _LOADED.format(heavy=HEAVY)
    )
    assert out.strip() == "[]", f"dpref --help loads {out.strip()}"


# ------------------------------------------------------------- entry points
def test_installed_entry_points_match_pyproject() -> None:
    """A stale install (pyproject edited, not reinstalled) would silently drop a command,
    a verify suite or a benchmark."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for group in GROUPS:
        installed = {ep.name: ep.value for ep in entry_points(group=group)}
        assert installed == declared[group], f"{group}: reinstall dpref (pip install -e .)"


@pytest.mark.parametrize("group", GROUPS)
def test_every_entry_point_loads(group: str) -> None:
    assert all(callable(obj) or hasattr(obj, "add_parser") for obj in load(group))


def test_verify_runs_every_registered_suite() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpref",
            "verify",
            "--max-horizon",
            "2",
            "--random-horizons",
            "0",
            "--json",
            "--mechanism",
            "binary",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert {r["suite"] for r in rows} == {
        "proofs",
        "plans",
        "agreement",
        "golden",
        "coverage",
        "audit",
        "audit-gaussian",
        "samplers",
        "floats",
    }


# -------------------------------------------------------------------- bench
def test_bench_exit_code_follows_the_target_rows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dpref.bench.cli as bench_cli
    from dpref.bench import failed_targets
    from dpref.cli import main

    met = {"name": "a", "value": 1.0, "baseline": 1.0, "ratio": 1.0, "target": "<= 2x", "ok": True}
    info = {**met, "name": "naive wins here", "ok": False, "info": True}
    missed = {**met, "name": "b", "ok": False}
    assert failed_targets([met, info]) == [] and failed_targets([met, missed]) == [missed]
    monkeypatch.setattr(bench_cli, "run_bench", lambda **kw: [met, info])
    assert main(["bench"]) == 0
    assert "info" in capsys.readouterr().out
    monkeypatch.setattr(bench_cli, "run_bench", lambda **kw: [met, info, missed])
    assert main(["bench", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
