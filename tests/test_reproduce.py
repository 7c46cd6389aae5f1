"""``dpref reproduce``: the CSV files, the exact expected-|error| curves, the crossover, the
argument checks, determinism, and the committed figures and numbers (docs/reproductions.md)."""

from __future__ import annotations

import csv
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

from dpref import Binary, SimpleI, SimpleII, TwoLevel
from dpref.reproduce import EXPERIMENTS
from dpref.reproduce.cli import main
from dpref.reproduce.counting import crossover
from dpref.reproduce.exact import (
    expected_abs_error,
    iid_laplace_abs_factor,
    iid_laplace_abs_mean,
    laplace_sum_abs_mean,
    row_scales,
)

ROOT = Path(__file__).resolve().parents[1]

FALSE_FAILURE_RATE = 1e-4
"""Chance that the Monte Carlo check of the exact curves fails although they are right
(two-sided, Bonferroni over every checked (mechanism, t) point; the sample means of |error|
are normal to within the CLT's error at N = 20,000 draws — the test is deterministic, seeded)."""
MC_DRAWS = 20_000
MC_T = 64


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return next(csv.reader(fh))


@pytest.fixture(scope="module")
def quick_all(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reproduce")
    assert main(["all", "--out", str(out), "--quick", "--seed", "3"]) == 0
    return out


# ------------------------------------------------------------------ the exact curves
def test_iid_closed_form_matches_exact_fractions_and_known_values() -> None:
    assert iid_laplace_abs_mean(1, Fraction(1)) == 1  # E|Lap(1)| = 1
    assert iid_laplace_abs_mean(2, Fraction(1)) == Fraction(3, 2)  # density (1+|x|)e^{-|x|}/4
    assert iid_laplace_abs_mean(0, Fraction(5)) == 0
    n = np.arange(0, 400)
    exact = np.array([float(iid_laplace_abs_mean(int(k), Fraction(1))) for k in n])
    assert np.allclose(iid_laplace_abs_factor(n), exact, rtol=1e-11, atol=0)


def test_characteristic_function_integral_matches_closed_forms() -> None:
    # Lap(a) + Lap(b): E|X| = (a² + ab + b²)/(a + b)
    assert laplace_sum_abs_mean({Fraction(1): 1, Fraction(2): 1}) == pytest.approx(7 / 3, 1e-12)
    # nearly equal scales tend to the i.i.d. closed form
    near = laplace_sum_abs_mean({Fraction(1): 2, Fraction(10**9 + 1, 10**9): 3})
    assert near == pytest.approx(float(iid_laplace_abs_mean(5, Fraction(1))), rel=1e-8)


@pytest.mark.parametrize(
    "m",
    [
        SimpleI(epsilon=1, horizon=MC_T),
        SimpleII(epsilon=1, horizon=MC_T),
        TwoLevel(epsilon=1, horizon=MC_T, block_size=10),
        Binary(epsilon=1, horizon=MC_T),
        Binary(epsilon=1, horizon=MC_T, budget="mean"),
    ],
    ids=repr,
)
def test_row_scales_from_the_symbolic_rows_equal_the_plans(m: Any) -> None:
    symbolic = row_scales(m, MC_T)

    class PlanOnly:  # the same mechanism seen without row_terms: read from its plan
        rho, noise = m.rho, m.noise

        def plan(self, T: int) -> Any:
            return m.plan(T)

    assert row_scales(PlanOnly(), MC_T) == symbolic
    # and the scales give the exact variance: Var = Σ 2b²·count
    var = [sum(2 * b * b * c for b, c in row.items()) for row in symbolic]
    assert var == m.variance_exact(MC_T)


def _mc_points() -> list[tuple[Any, list[int]]]:
    return [
        (SimpleI(epsilon=1, horizon=MC_T), [1, 64]),
        (SimpleII(epsilon=1, horizon=MC_T), [1, 2, 3, 17, 64]),
        (TwoLevel(epsilon=1, horizon=MC_T, block_size=10), [1, 9, 10, 19, 64]),
        (Binary(epsilon=1, horizon=MC_T), [1, 3, 7, 63, 64]),
        (Binary(epsilon=1, horizon=16, budget="mean"), [3, 7, 15]),  # unequal scales
    ]


def _z_scores(formula: str) -> list[float]:
    """(sample mean |error| − predicted)/standard error, with the exact second moment;
    ``formula`` is ``"exact"`` or ``"gaussian"`` (the wrong shortcut)."""
    zs = []
    for i, (m, ts) in enumerate(_mc_points()):
        T = m.horizon
        err = np.abs(m.release_many(np.zeros(T), MC_DRAWS, np.random.default_rng([11, i])))
        var = np.array([float(v) for v in m.variance_exact(T)])
        exact = expected_abs_error(m, T)
        predicted = exact if formula == "exact" else np.sqrt(var * 2 / np.pi)
        sd = np.sqrt(var - exact**2)  # exact sd of |error_t|
        for t in ts:
            mu = predicted[t - 1]
            se = sd[t - 1] / np.sqrt(MC_DRAWS)
            zs.append(float((err[:, t - 1].mean() - mu) / se))
    return zs


def test_exact_curves_agree_with_monte_carlo_and_a_wrong_formula_is_caught() -> None:
    k = sum(len(ts) for _, ts in _mc_points())
    threshold = norm.isf(FALSE_FAILURE_RATE / (2 * k))
    zs = _z_scores("exact")
    assert max(abs(z) for z in zs) < threshold, zs
    # power: the Gaussian shortcut sqrt(Var)·sqrt(2/π) is wrong for few Laplace terms
    wrong = _z_scores("gaussian")
    assert max(abs(z) for z in wrong) > threshold, wrong


# ------------------------------------------------------------------ the command's files
def test_list_names_every_experiment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(EXPERIMENTS)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["nosuch", "--out", "{tmp}"], "name='nosuch': unknown; choose from counting"),
        (["counting", "--out", "{file}"], "exists and is not a directory"),
        (["counting", "--out", "{tmp}", "--seed", "-3"], "seed='-3'"),
        (["counting", "--out", "{tmp}", "--seed", "1.5"], "seed='1.5'"),
        (["counting"], "out=None"),
        ([], "name=None"),
        (["counting", "--out", "{tmp}", "--frobnicate"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    args = [a.format(tmp=tmp_path / "out", file=file) for a in argv]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and needle in captured.err, captured.err
    assert not (tmp_path / "out").exists()


def test_counting_csv_columns_rows_and_crossover(quick_all: Path) -> None:
    d = quick_all / "counting"
    assert _header(d / "errors.csv") == ["experiment", "mechanism", "T", "t", "mean_abs_error"]
    rows = _read(d / "errors.csv")
    # T = 100 and 1000: four mechanisms each; Two-Level with four B at T = 1000
    assert len(rows) == 4 * 100 + 4 * 1000 + 4 * 1000
    summary = json.loads((d / "summary.json").read_text())
    assert summary["seed"] == 3 and summary["quick"] is True
    assert {"counting-T100.png", "counting-T1000.png", "counting-two-level-B.png"} <= set(
        summary["files"]
    )
    for source, key, column in (
        ("errors.csv", "empirical", "mean_abs_error"),
        ("exact.csv", "exact", "expected_abs_error"),
    ):
        data = [r for r in _read(d / source) if r["experiment"] == "T1000"]
        curve = {
            label: np.array([float(r[column]) for r in data if r["mechanism"] == label])
            for label in ("binary", "two-level[block_size=10]")
        }
        expect = crossover(curve["binary"], curve["two-level[block_size=10]"])
        assert summary["headline"][f"binary_below_two_level_B10_from_t_{key}"] == expect


def test_crossover_definition() -> None:
    assert crossover(np.array([3.0, 1, 2, 1, 1]), np.array([2.0, 2, 1, 2, 2])) == 4
    assert crossover(np.array([1.0, 1]), np.array([2.0, 2])) == 1
    assert crossover(np.array([1.0, 3]), np.array([2.0, 2])) is None


def test_other_experiments_write_their_files(quick_all: Path) -> None:
    fr = quick_all / "frontier"
    assert _header(fr / "frontier.csv") == [
        "privacy", "T", "mechanism", "label", "mean_variance", "max_variance", "upper_bound",
        "skipped",
    ]  # fmt: skip
    rows = _read(fr / "frontier.csv")
    assert {r["privacy"] for r in rows} == {"pure", "zcdp"}
    assert {int(r["T"]) for r in rows if r["privacy"] == "pure"} == {16, 32, 64}
    per_t = _read(fr / "per_t.csv")
    labels = {(r["privacy"], r["label"]) for r in per_t}
    assert len(per_t) == 32 * len(labels)
    dec = _read(quick_all / "decayed" / "decayed.csv")
    assert {r["decay"] for r in dec} == {"window", "exponential", "polynomial"}
    # window: 5 W × (2 trees + 2 naive + bound); exponential 4 α × 4; polynomial 2 c × 4
    assert len(dec) == 5 * 5 + 4 * 4 + 2 * 4
    q = _read(quick_all / "quantiles" / "quantiles.csv")
    assert len(q) == 5 * 5  # 5 blocks × 5 quantiles
    for name in EXPERIMENTS:
        s = json.loads((quick_all / name / "summary.json").read_text())
        assert set(s) >= {"seed", "versions", "parameters", "wall_time_s", "headline"}
        for f in s["files"]:
            assert (quick_all / name / f).is_file()


def test_seeded_runs_are_deterministic(quick_all: Path, tmp_path: Path) -> None:
    assert main(["counting", "--out", str(tmp_path / "a"), "--quick", "--seed", "3"]) == 0
    assert main(["counting", "--out", str(tmp_path / "b"), "--quick", "--seed", "4"]) == 0
    same = (quick_all / "counting" / "errors.csv").read_bytes()
    assert (tmp_path / "a" / "counting" / "errors.csv").read_bytes() == same
    assert (tmp_path / "b" / "counting" / "errors.csv").read_bytes() != same
    # the exact curves do not depend on the seed
    exact = (quick_all / "counting" / "exact.csv").read_bytes()
    assert (tmp_path / "b" / "counting" / "exact.csv").read_bytes() == exact


def test_without_matplotlib_the_csvs_are_written_and_one_line_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dpref.reproduce.common as common

    monkeypatch.setattr(common, "pyplot", lambda: None)
    assert main(["decayed", "--out", str(tmp_path), "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("pip install 'dpref[plot]'") == 1
    assert (tmp_path / "decayed" / "decayed.csv").is_file()
    assert not list((tmp_path / "decayed").glob("*.png"))


def test_without_datasketches_quantiles_is_skipped_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "datasketches", None)
    assert main(["quantiles", "--out", str(tmp_path), "--quick"]) == 0
    out = capsys.readouterr().out
    assert "pip install 'dpref[quantiles]'" in out
    summary = json.loads((tmp_path / "quantiles" / "summary.json").read_text())
    assert summary["skipped"] is not None


# ------------------------------------------------------------------ what the docs show
FIGURES = [
    "counting-T1000.png",
    "counting-T10000.png",
    "counting-two-level-B.png",
    "frontier-pure.png",
    "frontier-zcdp.png",
    "decayed-window.png",
    "decayed-exponential.png",
    "decayed-polynomial.png",
    "quantiles-over-time.png",
]


def test_committed_figures_exist_are_small_and_embedded() -> None:
    page = (ROOT / "docs" / "reproductions.md").read_text(encoding="utf-8")
    for name in FIGURES:
        path = ROOT / "docs" / "figures" / name
        assert path.is_file(), name
        assert path.stat().st_size < 200_000, name
        assert f"(figures/{name})" in page, name


def test_full_counting_run_matches_the_numbers_in_the_docs(tmp_path: Path) -> None:
    assert main(["counting", "--out", str(tmp_path)]) == 0
    h = json.loads((tmp_path / "counting" / "summary.json").read_text())["headline"]
    page = (ROOT / "docs" / "reproductions.md").read_text(encoding="utf-8")
    emp = h["binary_below_two_level_B10_from_t_empirical"]
    exact = h["binary_below_two_level_B10_from_t_exact"]
    line = f"from t = {emp} on (empirical, 25 trials), from t = {exact} on (exact)"
    assert line in page


@pytest.mark.slow
def test_exact_curves_agree_with_monte_carlo_at_the_papers_horizon() -> None:
    """At T = 1,000 (the experiment's own horizon), 50 steps per mechanism, 10,000 draws."""
    T, draws = 1000, 10_000
    ts = np.linspace(1, T, 50).astype(int)
    mechs = [
        SimpleI(epsilon=1, horizon=T),
        SimpleII(epsilon=1, horizon=T),
        TwoLevel(epsilon=1, horizon=T, block_size=10),
        Binary(epsilon=1, horizon=T),
    ]
    threshold = norm.isf(FALSE_FAILURE_RATE / (2 * len(ts) * len(mechs)))
    worst = 0.0
    for i, m in enumerate(mechs):
        exact = expected_abs_error(m, T)
        sd = np.sqrt(np.array([float(v) for v in m.variance_exact(T)]) - exact**2)
        err = np.abs(m.release_many(np.zeros(T), draws, np.random.default_rng([12, i])))
        z = (err[:, ts - 1].mean(axis=0) - exact[ts - 1]) / (sd[ts - 1] / np.sqrt(draws))
        worst = max(worst, float(np.max(np.abs(z))))
    assert worst < threshold, worst


def test_the_dpref_command_runs_it_as_a_plugin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Through ``dpref.cli.main`` with the plugin registered (as the entry point does once
    dpref is reinstalled): bad input under ``--json`` is one error object naming ``name``."""
    import dpref.cli as cli
    import dpref.reproduce.cli as plugin

    registered = [p for p in cli.load(cli.COMMANDS) if p is not plugin]
    monkeypatch.setattr(cli, "load", lambda group: [*registered, plugin])
    assert cli.main(["reproduce", "nosuch", "--out", str(tmp_path), "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["error"]["parameter"] == "name"
    assert captured.err.count("\n") == 1
    assert cli.main(["reproduce", "--list"]) == 0
    assert capsys.readouterr().out.startswith("counting ")
