"""``dpref frontier`` (docs/frontier.md): exact numbers cross-checked against the plans,
the best row, variants picked up from the classes, skipped rows, the CLI contract."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpref.cli
from dpref import MECHANISMS, DprefError, TwoLevel
from dpref.cli import frontier as frontier_cli
from dpref.frontier import EXACT_LIST_LIMIT, counting_mechanisms, frontier, plot
from dpref.lower_bounds import FactorizationLowerBound, factorization_lower_bound

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("horizon", [1, 2, 7, 16, 45])
def test_rows_equal_the_plans_variance(horizon: int) -> None:
    """Every evaluated row's mean and max are those of the plan's exact 2Σr²b² (an
    independent path: the plan, not the closed form the frontier reads)."""
    eps = Fraction(3, 4)
    report = frontier(horizon, eps)
    assert report.rows
    for row in report.rows:
        if row.skipped is not None:
            continue
        m = MECHANISMS[row.mechanism](epsilon=eps, horizon=horizon, **row.params)
        var = m.plan(horizon).variance_exact()
        assert row.mean == sum(var, Fraction(0)) / horizon, row.label
        assert row.max == max(var), row.label


def test_every_counter_is_there_and_nothing_else() -> None:
    names = {c.name for c in counting_mechanisms()}
    assert {"simple1", "simple2", "two-level", "binary", "hybrid", "elders"} <= names
    assert not {"window", "exponential", "polynomial"} & names
    labels = [r.label for r in frontier(40, 1).rows]
    assert not any("window=" in label for label in labels)  # window sums are not counts


@pytest.mark.parametrize("objective", ["max", "mean"])
def test_the_best_row_minimises_the_objective(objective: str) -> None:
    report = frontier(300, 1, objective)
    done = [r for r in report.rows if r.skipped is None]
    best = [r for r in done if r.best]
    assert len(best) == 1 and report.best is best[0]

    def pick(r: Any) -> Fraction:
        return r.max if objective == "max" else r.mean

    assert pick(best[0]) == min(pick(r) for r in done)


def test_objectives_can_disagree() -> None:
    """The order of the rows depends on the objective (at T = 1000, ε = 1)."""
    mx = [r.label for r in frontier(1000, 1, "max").rows]
    mean = [r.label for r in frontier(1000, 1, "mean").rows]
    assert mx != mean


def test_variants_come_from_the_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    def variants(cls: type, horizon: int) -> list[dict[str, Any]]:
        return [{"block_size": 3}, {"block_size": horizon + 1}]

    monkeypatch.setattr(TwoLevel, "frontier_variants", classmethod(variants))
    rows = [r for r in frontier(20, 1).rows if r.mechanism == "two-level"]
    assert [r.label for r in rows if r.skipped is None] == ["two-level[block_size=3]"]
    skipped = [r for r in rows if r.skipped is not None]
    assert len(skipped) == 1 and skipped[0].skipped.startswith("block_size=21")


def test_no_vectorised_form_is_skipped_with_the_reason() -> None:
    report = frontier(EXACT_LIST_LIMIT + 1, 1, mechanisms=["allwindow", "binary"])
    skipped = [r for r in report.rows if r.skipped is not None]
    assert skipped and all(r.mechanism == "allwindow" for r in skipped)
    assert all("variance_counts" in r.skipped for r in skipped)
    assert report.best is not None and report.best.mechanism == "binary"


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"horizon": 0, "epsilon": 1}, "horizon"),
        ({"horizon": 2**24 + 1, "epsilon": 1}, "horizon"),
        ({"horizon": True, "epsilon": 1}, "horizon"),
        ({"horizon": 8.0, "epsilon": 1}, "horizon"),
        ({"horizon": 8, "epsilon": 0}, "epsilon"),
        ({"horizon": 8, "epsilon": "x"}, "epsilon"),
        ({"horizon": 8, "epsilon": 1, "objective": "median"}, "objective"),
        ({"horizon": 8, "epsilon": 1, "mechanisms": ["window"]}, "mechanisms"),
        ({"horizon": 8, "epsilon": 1, "mechanisms": "binary"}, "mechanisms"),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(DprefError, match=rf"^{parameter}="):
        frontier(**kwargs)


def _main(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> int:
    """``dpref.cli.main`` with the frontier plugin added (its entry point is in
    pyproject.toml; the shared venv's install may predate it)."""
    real = dpref.cli.load

    def load(group: str) -> list[Any]:
        found = real(group)
        return found if frontier_cli in found else [*found, frontier_cli]

    monkeypatch.setattr(dpref.cli, "load", load)
    return dpref.cli.main(argv)


def test_cli_json_is_one_object(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code = _main(monkeypatch, ["frontier", "--horizon", "64", "--epsilon", "1/2", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)
    assert doc["horizon"] == 64 and doc["epsilon"] == "1/2" and doc["best"]
    assert doc["lower_bound"]["lower_bound"] > 0
    assert sum(r["best"] for r in doc["rows"]) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--horizon", "0", "--epsilon", "1"],
        ["--horizon", "1e3", "--epsilon", "1"],
        ["--horizon", "64", "--epsilon", "-1"],
        ["--horizon", "64", "--epsilon", "1e999999999"],
        ["--horizon", "64", "--epsilon", "1", "--objective", "median"],
    ],
)
def test_cli_bad_input_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, argv: list[str]
) -> None:
    code = _main(monkeypatch, ["frontier", *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1
    code = _main(monkeypatch, ["frontier", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 2 and "error" in json.loads(captured.out)


def test_plot_writes_a_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "frontier.png"
    drawn = plot(frontier(64, 1), str(path), leading=2, max_exponent=8)
    assert len(drawn) == 2 and path.stat().st_size > 1000
    with pytest.raises(DprefError, match=r"^plot="):
        plot(frontier(8, 1), str(tmp_path / "missing" / "x.png"), leading=1, max_exponent=5)


def test_documented_tables_rebuild_cheaply() -> None:
    """Default-run companion of the two slow tests below: each documented table at T = 2^20
    has the command's first line and a ``build:`` expression per row naming the row's class
    with the row's parameters (parsed, not run: some designs optimise their budget)."""
    import ast

    import dpref

    text = (ROOT / "docs" / "frontier.md").read_text()
    heads = [
        "dpref frontier: T = 1048576, ε = 1, objective = max",
        "dpref frontier: T = 1048576, ρ = 1/2 (zCDP, Gaussian noise), objective = max",
    ]
    for i, head in enumerate(heads):  # fmt: skip
        block = text.split("```text\n", i + 1)[i + 1].split("```", 1)[0].splitlines()
        assert block[0] == head
        rows = [line for line in block[2:] if line[:2] in ("* ", "  ") and line[2] not in " …"]
        labels = [line[2:].split()[0] for line in rows]
        builds = [line.split("build: ", 1)[1].split(";")[0] for line in block if "build: " in line]
        assert len(builds) == len(labels) >= 3
        for label, expr in zip(labels, builds, strict=True):
            call = ast.parse(expr, mode="eval").body
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            cls = getattr(dpref, call.func.id)
            params = {
                kw.arg: ast.literal_eval(kw.value)
                for kw in call.keywords
                if kw.arg not in ("epsilon", "rho", "horizon")
            }
            own = ",".join(f"{k}={v}" for k, v in params.items())
            assert label == cls.name or label.startswith(f"{cls.name}[{own}")


@pytest.mark.slow
def test_documented_table_is_what_the_command_prints() -> None:
    """docs/frontier.md's table at T = 2^20, ε = 1 is the command's output today (a minute
    or two: the exact maxima of the BLUE rows it shows)."""
    text = (ROOT / "docs" / "frontier.md").read_text()
    block = text.split("```text\n", 1)[1].split("```", 1)[0]
    assert block.rstrip("\n") == frontier(2**20, 1, top=5).table()


@pytest.mark.slow
def test_documented_gaussian_table_is_what_the_command_prints() -> None:
    """docs/frontier.md's zCDP table at T = 2^20, ρ = 1/2 is the command's output today,
    and the numbers quoted under it are its rows."""
    text = (ROOT / "docs" / "frontier.md").read_text()
    block = text.split("```text\n", 2)[2].split("```", 1)[0]
    report = frontier(2**20, rho=Fraction(1, 2))
    assert block.rstrip("\n") == frontier(2**20, rho=Fraction(1, 2), top=3).table()
    rows = {r.label: r for r in report.rows if r.skipped is None}
    assert report.best is not None and report.best.label == "sqrt"
    table = report.table().splitlines()
    assert any(line.startswith("* sqrt ") and "≤30.02" in line for line in table)
    assert any(line.startswith("  blt[preset=2^20] ") and "≤30.28" in line for line in table)
    assert 30.01 < float(rows["sqrt"].max) <= 30.02 < float(rows["blt[preset=2^20]"].max)
    assert rows["smooth"].max == 144 and rows["binary[budget=uniform]"].max == 420
    assert f"{report.bound.value:.2f}" == "26.16"


# ----------------------------------------------------------------- zCDP (Gaussian noise)
@pytest.mark.parametrize("horizon", [1, 5, 16, 33])
def test_gaussian_rows_equal_the_plans_variance(horizon: int) -> None:
    """With ``rho=`` every exact row is the Gaussian plan's exact Σr²σ² (independent path)."""
    rho = Fraction(1, 2)
    report = frontier(horizon, rho=rho)
    assert report.rho == rho and report.epsilon is None
    done = [r for r in report.rows if r.skipped is None]
    assert done
    for row in done:
        m = MECHANISMS[row.mechanism](rho=rho, horizon=horizon, **row.params)
        plan = m.plan(horizon)
        assert plan.noise_family == "gaussian"
        var = plan.variance_exact()
        if row.upper:
            assert row.mean >= sum(var, Fraction(0)) / horizon, row.label
            assert row.max >= max(var), row.label
        else:
            assert row.mean == sum(var, Fraction(0)) / horizon, row.label
            assert row.max == max(var), row.label


def test_gaussian_binary_is_the_spec_number() -> None:
    """SPEC §6: uniform Gaussian Binary at T = 2^20, ρ = 1/2 has max Var 420 = 21·20."""
    report = frontier(2**20, rho=Fraction(1, 2), mechanisms=["binary"])
    row = next(r for r in report.rows if r.label == "binary[budget=uniform]")
    assert row.max == 420 and not row.upper


@pytest.mark.parametrize(
    "horizon", [3, 200, pytest.param(1000, marks=[pytest.mark.slow, pytest.mark.ci])]
)
def test_gaussian_rows_respect_the_factorization_bound(horizon: int) -> None:
    """No linear Gaussian counter beats γ₂(M_T)²/(2ρ) (every row's max is above it); T = 1000
    (18 s: sqrt's and BLT's exact rows) runs with CI's slow set."""
    if True:
        report = frontier(horizon, rho=1)
        bound = report.bound
        assert isinstance(bound, FactorizationLowerBound)
        done = [r for r in report.rows if r.skipped is None]
        assert done and all(float(r.max) >= bound.value for r in done)


@pytest.mark.parametrize("horizon", [1, 2, 7, 40])
def test_factorization_bound_is_the_trace_norm(horizon: int) -> None:
    """The closed-form singular values are those of the prefix matrix, and the bound scales
    as Δ²/ρ."""
    import numpy as np

    m = np.tril(np.ones((horizon, horizon)))
    nuclear = float(np.linalg.svd(m, compute_uv=False).sum())
    b = factorization_lower_bound(Fraction(1, 2), horizon)
    assert b.gamma2 <= nuclear / horizon <= b.gamma2 * (1 + 1e-9)
    assert b.value <= (nuclear / horizon) ** 2 <= b.value * (1 + 1e-9)
    b2 = factorization_lower_bound(Fraction(1, 8), horizon, sensitivity=2)
    assert b2.value == pytest.approx(16 * b.value, rel=1e-9)
    if horizon == 1:
        assert b.value <= 1  # T = 1: one Gaussian of variance Δ²/(2ρ) = 1 is optimal


def test_factorization_bound_at_2_20() -> None:
    b = factorization_lower_bound(Fraction(1, 2), 2**20)
    assert 26.15 < b.value < 26.17


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"horizon": 8}, "epsilon"),
        ({"horizon": 8, "epsilon": 1, "rho": 1}, "epsilon"),
        ({"horizon": 8, "rho": 0}, "rho"),
        ({"horizon": 8, "rho": "nan"}, "rho"),
    ],
)
def test_gaussian_bad_input_names_the_parameter(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(DprefError, match=rf"^{parameter}="):
        frontier(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"rho": 0, "horizon": 4}, "rho"),
        ({"rho": 1, "horizon": 0}, "horizon"),
        ({"rho": 1, "horizon": 2**24 + 1}, "horizon"),
        ({"rho": 1, "horizon": 4, "sensitivity": 0}, "sensitivity"),
    ],
)
def test_factorization_bound_bad_input(kwargs: dict[str, Any], parameter: str) -> None:
    with pytest.raises(DprefError, match=rf"^{parameter}="):
        factorization_lower_bound(**kwargs)


def test_cli_rho_json(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code = _main(monkeypatch, ["frontier", "--horizon", "64", "--rho", "1/2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["privacy"] == "zcdp" and doc["rho"] == "1/2"
    assert doc["epsilon"] is None and doc["lower_bound"]["gamma2_lower_bound"] > 1
    code = _main(monkeypatch, ["frontier", "--horizon", "64", "--rho", "1/2", "--epsilon", "1"])
    captured = capsys.readouterr()
    assert code == 2 and len(captured.err.strip().splitlines()) == 1
