"""``counting``: Chan, Shi and Song's comparison of the counting mechanisms.

ε = 1; streams of T = 1,000 and T = 10,000 random bits; 25 trials; the absolute error at
every step of Simple I, Simple II, Two-Level (B = 10) and Binary, and of Two-Level with
B ∈ {10, 25, 50, 100} at T = 10,000 (T.-H. H. Chan, E. Shi, D. Song, *Private and
Continual Release of Statistics*, ICALP 2010 / ACM TISSEC 2011, experiments section).
The exact expected absolute error of every curve (:mod:`dpref.reproduce.exact`) is drawn
over the empirical means.

Binary is dpref's ``Binary`` with ``L = ⌊log₂T⌋ + 1`` levels and ``Lap(LΔ/ε)`` per node:
10 levels at T = 1,000 and 14 at T = 10,000, which equal the paper's ``⌈log₂T⌉`` at both
horizons (a real-valued ``log₂T`` would undercount the levels, docs/counting.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.reproduce.common import Context, Outcome, save_figure, write_csv

__all__ = ["DESCRIPTION", "NAME", "crossover", "figure", "run"]

NAME = "counting"
DESCRIPTION = (
    "Chan-Shi-Song: Simple I/II, Two-Level, Binary mean absolute error vs t (ε = 1, 25 trials)"
)
EPSILON = 1
FULL = {"horizons": (1000, 10000), "trials": 25, "block_sizes": (10, 25, 50, 100)}
QUICK = {"horizons": (100, 1000), "trials": 5, "block_sizes": (10, 25, 50, 100)}

FloatArray = npt.NDArray[np.float64]


def _mechanisms(T: int) -> list[tuple[str, Any]]:
    from dpref import Binary, SimpleI, SimpleII, TwoLevel

    return [
        ("simple1", SimpleI(epsilon=EPSILON, horizon=T)),
        ("simple2", SimpleII(epsilon=EPSILON, horizon=T)),
        ("two-level[block_size=10]", TwoLevel(epsilon=EPSILON, horizon=T, block_size=10)),
        ("binary", Binary(epsilon=EPSILON, horizon=T)),
    ]


def crossover(lower: FloatArray, upper: FloatArray) -> int | None:
    """The first step t (1-based) from which ``lower[t−1:] < upper[t−1:]`` everywhere, or
    None when ``lower`` is not below ``upper`` at the last step."""
    below = np.asarray(lower) < np.asarray(upper)
    if below.size == 0 or not below[-1]:
        return None
    not_below = np.flatnonzero(~below)
    return 1 if not_below.size == 0 else int(not_below[-1]) + 2


def _curves(
    experiment: str, T: int, mechs: list[tuple[str, Any]], trials: int, seed: int, index: int
) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
    """Empirical mean absolute error over ``trials`` and the exact expected one, per label."""
    from dpref.reproduce.exact import expected_abs_error

    stream = np.random.default_rng([seed, index, 0]).integers(0, 2, T)
    empirical: dict[str, FloatArray] = {}
    exact: dict[str, FloatArray] = {}
    for j, (label, m) in enumerate(mechs):
        rng = np.random.default_rng([seed, index, j + 1])
        out = m.release_many(stream, trials, rng)
        empirical[label] = np.mean(np.abs(out - m.target(stream)), axis=0)
        exact[label] = expected_abs_error(m, T)
    return empirical, exact


def run(ctx: Context) -> Outcome:
    """Run the comparison; write ``errors.csv``, ``exact.csv`` and the figures."""
    from dpref import TwoLevel

    p = QUICK if ctx.quick else FULL
    horizons: tuple[int, ...] = p["horizons"]  # type: ignore[assignment]
    trials: int = p["trials"]  # type: ignore[assignment]
    block_sizes: tuple[int, ...] = p["block_sizes"]  # type: ignore[assignment]
    out = Outcome(
        parameters={
            "epsilon": str(EPSILON),
            "horizons": list(horizons),
            "trials": trials,
            "block_sizes": list(block_sizes),
            "binary_levels": {str(T): T.bit_length() for T in horizons},
            "stream": "random bits, one stream per experiment (the error does not depend on it)",
        }
    )
    runs: list[tuple[str, int, dict[str, FloatArray], dict[str, FloatArray]]] = []
    for i, T in enumerate(horizons):
        emp, ex = _curves(f"T{T}", T, _mechanisms(T), trials, ctx.seed, i)
        runs.append((f"T{T}", T, emp, ex))
    T_big = horizons[-1]
    tl = [
        (f"two-level[block_size={B}]", TwoLevel(epsilon=EPSILON, horizon=T_big, block_size=B))
        for B in block_sizes
    ]
    emp, ex = _curves("two-level-B", T_big, tl, trials, ctx.seed, len(horizons))
    runs.append(("two-level-B", T_big, emp, ex))

    header = ("experiment", "mechanism", "T", "t", "mean_abs_error")
    write_csv(ctx, "errors.csv", header, _rows(runs, empirical=True), out)
    header_x = ("experiment", "mechanism", "T", "t", "expected_abs_error")
    write_csv(ctx, "exact.csv", header_x, _rows(runs, empirical=False), out)

    _, _, emp_big, ex_big = runs[len(horizons) - 1]
    tl10 = "two-level[block_size=10]"
    cross_emp = crossover(emp_big["binary"], emp_big[tl10])
    cross_exact = crossover(ex_big["binary"], ex_big[tl10])
    out.headline = {
        "crossover_T": T_big,
        "binary_below_two_level_B10_from_t_empirical": cross_emp,
        "binary_below_two_level_B10_from_t_exact": cross_exact,
        "mean_over_t": {
            name: {
                label: {
                    "empirical": round(float(np.mean(e[label])), 2),
                    "exact": round(float(np.mean(x[label])), 2),
                }
                for label in e
            }
            for name, _, e, x in runs
        },
        "max_relative_gap_empirical_vs_exact": round(
            max(float(np.max(np.abs(e[k] - x[k]) / x[k])) for _, _, e, x in runs for k in e),
            4,
        ),
    }
    out.lines.append(
        f"counting: ε = {EPSILON}, {trials} trials, T = "
        + " and ".join(str(T) for T in horizons)
        + f", Two-Level B ∈ {{{', '.join(str(B) for B in block_sizes)}}} at T = {T_big}"
    )
    for name, _, e, x in runs:
        out.lines.append(f"  {name}: mean over t of the mean |error| (exact in brackets)")
        for label in e:
            out.lines.append(
                f"    {label:<26}{float(np.mean(e[label])):>10.2f} ({float(np.mean(x[label])):.2f})"
            )
    out.lines.append(
        f"  Binary below Two-Level (B = 10) at T = {T_big}: {_step(cross_emp, T_big)} "
        f"(empirical, {trials} trials), {_step(cross_exact, T_big)} (exact)"
    )
    if ctx.plots:
        _figures(ctx, runs, trials, out)
    return out


def _step(t: int | None, horizon: int) -> str:
    return f"not at t = {horizon}" if t is None else f"from t = {t} on"


def _rows(
    runs: list[tuple[str, int, dict[str, FloatArray], dict[str, FloatArray]]], *, empirical: bool
) -> Any:
    for name, T, emp, ex in runs:
        curves = emp if empirical else ex
        for label, curve in curves.items():
            for t, v in enumerate(curve.tolist(), start=1):
                yield (name, label, T, t, round(v, 6))


def _figures(
    ctx: Context,
    runs: list[tuple[str, int, dict[str, FloatArray], dict[str, FloatArray]]],
    trials: int,
    out: Outcome,
) -> None:
    from dpref.reproduce.common import pyplot

    plt = pyplot()
    for name, T, emp, ex in runs:
        fig = figure(plt, name, T, emp, ex, trials)
        save_figure(ctx, fig, f"counting-{name}.png", out)


CLIPPED = "simple1"
"""The curve left off the comparison figures: Simple I's error (≈ T/ε) is about 100 times
the others', so on a shared axis the compared curves would be squeezed into its floor; the
figure states its exact level in a note instead."""
COMPARED = ("binary", "two-level[block_size=10]")
"""The pair whose crossover (:func:`crossover` of their exact curves) the figure marks."""


def figure(
    plt: Any,
    name: str,
    T: int,
    emp: dict[str, FloatArray],
    ex: dict[str, FloatArray],
    trials: int,
) -> Any:
    """One counting figure: the empirical (solid) and exact (dashed) mean absolute error per
    mechanism on a linear y-axis fitted to the drawn curves, Simple I replaced by a note
    with its exact mean level, and the step from which Binary's exact error stays below
    Two-Level's (B = 10) marked with a vertical line — computed here from the plotted
    exact curves."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    t = np.arange(1, T + 1)
    step = max(1, T // 2000)  # at most ~2000 points per curve keeps the PNG small
    drawn = [label for label in emp if label != CLIPPED]
    for i, label in enumerate(emp):
        if label == CLIPPED:
            continue
        color = f"C{i}"  # the colour a curve had when Simple I was drawn, in every figure
        ax.plot(t[::step], emp[label][::step], lw=0.5, alpha=0.4, color=color)
        ax.plot(t[::step], ex[label][::step], lw=1.3, ls="--", color=color, zorder=3, label=label)
    top = max(float(max(np.max(emp[label]), np.max(ex[label]))) for label in drawn)
    ax.set_ylim(0, 1.3 * top)  # headroom for the legend and the note
    ax.set_xlim(0, T)
    if CLIPPED in ex:
        ax.text(
            0.99,
            0.97,
            f"Simple I not drawn: its exact E|error| is\n{float(np.mean(ex[CLIPPED])):,.0f} "
            "at every t, off this scale",
            transform=ax.transAxes,
            fontsize=7,
            ha="right",
            va="top",
            gid="clipped-note",
        )
    if all(label in ex for label in COMPARED):
        at = crossover(ex[COMPARED[0]], ex[COMPARED[1]])
        if at is not None:
            ax.axvline(at, color="0.3", lw=0.8, ls=":", gid="crossover")
            left = at > T / 2
            ax.annotate(
                f"t = {at:,}: Binary's exact error below\nTwo-Level's (B = 10) from here on",
                xy=(at, 0.03 * top),
                xytext=(-4 if left else 4, 0),
                textcoords="offset points",
                ha="right" if left else "left",
                fontsize=7,
                gid="crossover-label",
            )
    ax.set_xlabel("t")
    ax.set_ylabel("mean |error|")
    what = "Two-Level, block size B" if name == "two-level-B" else "counting mechanisms"
    ax.set_title(
        f"{what}: ε = {EPSILON}, T = {T}\n(thin: mean of {trials} trials; dashed: exact E|error|)",
        fontsize=10,
    )
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    return fig
