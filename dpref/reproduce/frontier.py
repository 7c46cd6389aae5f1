"""``frontier``: every counter's exact variance against T and against t, ε-DP and ρ-zCDP.

For each T of a grid, :func:`dpref.frontier.frontier` gives every registered counting
mechanism but the BLUE tree (:func:`published`) in every parameterisation with its exact
mean and maximum ``Var(out_t)`` over t ≤ T (rigorous upper bounds where marked); the
figures draw, per mechanism, its best parameterisation at each T (by the maximum), the
lower bound, and the per-step variance ``Var(out_t)`` of each mechanism's best
parameterisation at one T (:func:`dpref.frontier.variance_curve`).  ε = 1 (Laplace noise)
and ρ = 1/2 (Gaussian).  The BLUE sweep (:func:`blue_table`, ``blue.csv`` and ``blue.md``,
the table of docs/frontier.md) puts the best BLUE design beside the published counters and
the lower bound at T = 2⁴, 2⁶, …, 2²⁰.

T runs over the even powers of two from 2⁴ to 2¹⁶, but the zCDP grid leaves out 2¹⁰ and
2¹²: there BLT's exact variances (Fractions whose size grows with T, used up to its
exact-bits limit) take about a minute each; at 2⁸ they take a second and from 2¹⁴ on its
rigorous float upper bounds are used.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpref.reproduce.common import Context, Outcome, save_figure, write_csv

__all__ = ["BLUE_HEADER", "blue_table", "blue_table_markdown", "run"]

EPSILON = Fraction(1)
RHO = Fraction(1, 2)
FULL = {
    "pure": [2**k for k in range(4, 17, 2)],
    "zcdp": [2**k for k in (4, 6, 8, 14, 16)],
    "curve_T": {"pure": 2**10, "zcdp": 2**8},
    "blue": [2**k for k in range(4, 21, 2)],
}
QUICK = {
    "pure": [2**k for k in range(4, 7)],
    "zcdp": [2**k for k in range(4, 6)],
    "curve_T": {"pure": 2**5, "zcdp": 2**5},
    "blue": [2**4],
}


PUBLISHED = {
    "Honaker": "honaker[budget=uniform]",
    "Binary": "binary[budget=uniform]",
}
"""Published decoders by their row label (Dwork et al. 2010 / Chan et al. 2011; Honaker
2015); Elders (Andersson et al. 2025) is its best k."""
BLUE_HEADER = (
    "T",
    "best BLUE design",
    "mean",
    "max",
    "best published",
    "mean",
    "max",
    "Elders (best k)",
    "Honaker",
    "Binary",
    "lower bound",
)
"""Columns of :func:`blue_table_markdown`; the four last are max Var."""


def published(privacy: str) -> list[str]:
    """Every counting mechanism of the ``pure`` or ``zcdp`` table but the BLUE tree."""
    from dpref.frontier import counting_mechanisms

    return [
        c.name for c in counting_mechanisms() if privacy in c.frontier_privacy and c.name != "blue"
    ]


def blue_table(
    horizons: list[int], epsilon: Fraction = EPSILON, reuse: dict[int, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Per T: the best BLUE design by the maximum (label, exact mean and max), the best
    non-BLUE row, Elders' best k, Honaker's and Binary's maximum, and the variance lower
    bound of every linear Laplace counter — each from :func:`dpref.frontier.frontier`
    (``reuse``: the non-BLUE reports at ε already drawn, by T)."""
    from dpref.frontier import frontier

    out: list[tuple[Any, ...]] = []
    for T in horizons:
        blue = frontier(T, epsilon, mechanisms=["blue"], top=1).best
        rest = (reuse or {}).get(T) or frontier(T, epsilon, mechanisms=published("pure"))
        best = rest.best
        assert blue is not None and best is not None
        by_label = {r.label: r for r in rest.rows if r.skipped is None}
        elders = next(r for r in rest.rows if r.mechanism == "elders" and r.skipped is None)
        cells = {name: by_label[label] for name, label in PUBLISHED.items()}
        out.append(
            (
                T,
                blue.label,
                blue.mean,
                blue.max,
                best.label,
                best.mean,
                best.max,
                (elders.label, elders.max),
                cells["Honaker"].max,
                cells["Binary"].max,
                rest.bound.value,
            )
        )
    return out


def blue_table_markdown(rows: list[tuple[Any, ...]]) -> str:
    """:func:`blue_table` as a Markdown table (variances to one decimal; T as 2^p)."""

    def f(v: Any) -> str:
        return f"{float(v):.1f}"

    lines = [
        "| " + " | ".join(BLUE_HEADER) + " |",
        "|" + "---|" * len(BLUE_HEADER),
    ]
    for T, bl, bmean, bmax, pl, pmean, pmax, (el, emax), hon, binary, bound in rows:
        cells = [
            f"2^{_exp(T)}",
            f"`{bl}`",
            f(bmean),
            f"**{f(bmax)}**",
            f"`{pl}`",
            f(pmean),
            f(pmax),
            f"{f(emax)} (k = {el.split('k=')[1].rstrip(']')})",
            f(hon),
            f(binary),
            f"{float(bound):.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _budget(privacy: str) -> dict[str, Fraction]:
    return {"epsilon": EPSILON} if privacy == "pure" else {"rho": RHO}


def run(ctx: Context) -> Outcome:
    """Evaluate the frontier over the grid; write ``frontier.csv``, ``per_t.csv``, figures."""
    from dpref.frontier import frontier, variance_curve

    p: dict[str, Any] = QUICK if ctx.quick else FULL
    out = Outcome(
        parameters={
            "epsilon": str(EPSILON),
            "rho": str(RHO),
            "horizons": {"pure": p["pure"], "zcdp": p["zcdp"]},
            "per_t_horizon": p["curve_T"],
            "blue_table_horizons": p["blue"],
            "objective": "max",
        }
    )
    rows: list[tuple[Any, ...]] = []
    bounds: list[tuple[Any, ...]] = []
    curves: list[tuple[Any, ...]] = []
    best_by_T: dict[str, dict[int, dict[str, float]]] = {"pure": {}, "zcdp": {}}
    curve_data: dict[str, dict[str, Any]] = {"pure": {}, "zcdp": {}}
    headline: dict[str, Any] = {}
    drawn: dict[int, Any] = {}  # the ε reports, reused by the BLUE sweep
    for privacy in ("pure", "zcdp"):
        budget: dict[str, Any] = dict(_budget(privacy))
        for T in p[privacy]:
            report = frontier(T, objective="max", mechanisms=published(privacy), **budget)
            if privacy == "pure":
                drawn[T] = report
            per_mech: dict[str, float] = {}
            for r in report.rows:
                if r.skipped is not None:
                    rows.append((privacy, T, r.mechanism, r.label, "", "", "", r.skipped))
                    continue
                assert r.mean is not None and r.max is not None
                rows.append(
                    (privacy, T, r.mechanism, r.label, float(r.mean), float(r.max), r.upper, "")
                )
                per_mech.setdefault(r.mechanism, float(r.max))  # rows are sorted: first is best
            best_by_T[privacy][T] = per_mech
            b = report.bound
            bound_var = float(b.value)  # a variance for both tables (docs/frontier.md)
            bounds.append((privacy, T, bound_var))
            if T == p["curve_T"][privacy]:
                seen: set[str] = set()
                for r in report.rows:
                    if r.skipped is not None or r.mechanism in seen:
                        continue
                    seen.add(r.mechanism)
                    curve = variance_curve(r, T, budget)
                    curve_data[privacy][r.label] = curve
                    curves.extend(
                        (privacy, T, r.label, t, float(v))
                        for t, v in enumerate(curve.tolist(), start=1)
                    )
            if T == p[privacy][-1]:
                best = report.best
                assert best is not None and best.max is not None
                headline[privacy] = {
                    "T": T,
                    "best": best.label,
                    "best_max_variance": round(float(best.max), 2),
                    "lower_bound_variance": round(bound_var, 2),
                    "best_per_mechanism": {k: round(v, 2) for k, v in sorted(per_mech.items())},
                }
    write_csv(
        ctx,
        "frontier.csv",
        (
            "privacy",
            "T",
            "mechanism",
            "label",
            "mean_variance",
            "max_variance",
            "upper_bound",
            "skipped",
        ),
        rows,
        out,
    )
    write_csv(ctx, "lower_bounds.csv", ("privacy", "T", "variance_lower_bound"), bounds, out)
    table = blue_table(p["blue"], reuse=drawn)
    write_csv(
        ctx,
        "blue.csv",
        ("T", "blue", "blue_mean", "blue_max", "published", "published_mean",
         "published_max", "elders", "elders_max", "honaker_max", "binary_max",
         "variance_lower_bound"),
        [(T, b, bm, bx, pl, pm, px, el, ex, h, bi, lb)
         for T, b, bm, bx, pl, pm, px, (el, ex), h, bi, lb in table],
        out,
    )  # fmt: skip
    (ctx.out / "blue.md").write_text(blue_table_markdown(table) + "\n", encoding="utf-8")
    out.files.append("blue.md")
    last = table[-1]
    headline["blue"] = {
        "T": last[0],
        "best": last[1],
        "mean_variance": round(float(last[2]), 2),
        "max_variance": round(float(last[3]), 2),
        "best_published": last[4],
        "published_max_variance": round(float(last[6]), 2),
    }
    write_csv(ctx, "per_t.csv", ("privacy", "T", "label", "t", "variance"), curves, out)
    out.headline = headline
    out.lines.append(
        f"frontier: ε = {EPSILON} (Laplace) at T = "
        + ", ".join(f"2^{_exp(T)}" for T in p["pure"])
        + f"; ρ = {RHO} (Gaussian) at "
        + ", ".join(f"2^{_exp(T)}" for T in p["zcdp"])
        + f"; {len(rows)} rows"
    )
    for privacy in ("pure", "zcdp"):
        h = headline[privacy]
        kind = "max Var lower bound"
        out.lines.append(
            f"  {privacy} at T = {h['T']}: best {h['best']} max Var {h['best_max_variance']:.2f}; "
            f"{kind} {h['lower_bound_variance']:.2f}"
        )
    b = headline["blue"]
    out.lines.append(
        f"  BLUE at T = {b['T']}: {b['best']} mean Var {b['mean_variance']:.2f}, max Var "
        f"{b['max_variance']:.2f}; best published {b['best_published']} max Var "
        f"{b['published_max_variance']:.2f}"
    )
    if ctx.plots:
        for privacy in ("pure", "zcdp"):
            _figure(ctx, privacy, best_by_T[privacy], bounds, curve_data[privacy], p, out)
    return out


def _exp(T: int) -> int:
    return T.bit_length() - 1


def _figure(
    ctx: Context,
    privacy: str,
    best: dict[int, dict[str, float]],
    bounds: list[tuple[Any, ...]],
    curves: dict[str, Any],
    p: dict[str, Any],
    out: Outcome,
) -> None:
    from dpref.reproduce.common import pyplot

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    mechanisms = sorted({m for per in best.values() for m in per})
    cmap = plt.get_cmap("tab20")
    colors = {m: cmap(i % 20) for i, m in enumerate(mechanisms)}
    for m in mechanisms:
        xs = [T for T in sorted(best) if m in best[T]]
        ax1.plot(xs, [best[T][m] for T in xs], marker=".", lw=1, color=colors[m], label=m)
    bx = [b[1] for b in bounds if b[0] == privacy]
    by = [b[2] for b in bounds if b[0] == privacy]
    ax1.plot(bx, by, color="black", ls=":", lw=1.5, label="lower bound")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("T")
    ax1.set_ylabel("max over t ≤ T of Var(out_t)")
    what = f"ε = {EPSILON}, Laplace" if privacy == "pure" else f"ρ = {RHO}, Gaussian"
    ax1.set_title(f"best parameterisation per mechanism ({what})", fontsize=10)
    ax1.legend(fontsize=7, ncol=2)
    T = p["curve_T"][privacy]
    t = np.arange(1, T + 1)
    for label, curve in curves.items():
        ax2.plot(t, curve, lw=0.8, color=colors[label.split("[")[0]], label=label)
    ax2.set_yscale("log")
    ax2.set_xlabel("t")
    ax2.set_ylabel("Var(out_t)")
    ax2.set_title(f"per step at T = {T}", fontsize=10)
    ax2.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    save_figure(ctx, fig, f"frontier-{privacy}.png", out)
