"""Utility figures: the train-on-synthetic/test-on-real table and the privacy–utility curve.

Numbers come from `dpcore.evaluate.utility` and the runs' saved evaluations; this module only
arranges them. Plotly is imported inside each builder.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from dpcore.io import finite

if TYPE_CHECKING:  # the utility module imports torch; the figure does not need it
    from dpcore.evaluate.utility import UtilityResult


def utility_table_figure(result: UtilityResult):
    """A table: one row per classifier plus the mean; per metric, trained on synthetic vs on real."""
    import plotly.graph_objects as go

    names = list(result.rows) + ["mean"]
    header = ["classifier"]
    cols: list[list] = [names]
    for m in result.metrics:
        header.append(f"{m} (synthetic → real)")
        cols.append([_fmt(result.rows[n][m]) for n in result.rows] + [_fmt(result.mean[m])])
        if result.reference is not None:
            ref = result.reference
            header.append(f"{m} (real → real)")
            cols.append([_fmt(ref["classifiers"].get(n, {}).get(m, float("nan"))) for n in result.rows]
                        + [_fmt(ref["mean"][m])])
    # explicit light fills and dark text: with a theme's defaults the table could render as one dark block
    n = len(names)
    fills = [["#ffffff" if i % 2 == 0 else "#f5f7fa" for i in range(n - 1)] + ["#e8edf5"]] * len(cols)
    fig = go.Figure(go.Table(header=dict(values=header, align="left", fill_color="#dde3ec",
                                         font=dict(color="#111111", size=13), line_color="#c5ccd8"),
                             cells=dict(values=cols, align="left", fill_color=fills,
                                        font=dict(color="#111111", size=13), line_color="#e1e5ec", height=26)))
    title = "Utility: train on synthetic, test on real"
    if result.notes:
        from dpcore.text import html_text

        title += "<br><sub>" + html_text("; ".join(result.notes)) + "</sub>"
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10), height=140 + 28 * n)
    return fig



def _fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def _series_points(rows: Iterable[dict], metric: str) -> dict[str, dict[float, list[float]]]:
    """{series: {ε: [scores]}} of the plottable rows (a score and a numeric ε, ∞ included)."""
    out: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        y, eps = finite(r.get(metric)), r.get("epsilon")
        if y is None or not isinstance(eps, (int, float)) or math.isnan(eps):
            continue
        out.setdefault(str(r.get("series") or r.get("model")), {}).setdefault(float(eps), []).append(y)
    return out


def curve_checks(rows: Iterable[dict], metric: str = "utility") -> list[str]:
    """Each curve whose ε = ∞ point is not its top, in words ([] when every ∞ point is): the
    noiseless model should be the best of its family; when it is not, the curve says something
    else (too few epochs without noise, a lucky seed) and the page says so instead of the lesson."""
    out = []
    for series, by_eps in sorted(_series_points(rows, metric).items()):
        private = {e: float(np.mean(v)) for e, v in by_eps.items() if math.isfinite(e)}
        if math.inf not in by_eps or not private:
            continue
        top = float(np.mean(by_eps[math.inf]))
        e_best = max(private, key=private.get)
        if top < private[e_best]:
            out.append(f"{series}: ε = ∞ scores {top:.2f}, below ε = {e_best:g} ({private[e_best]:.2f})")
    return out


LOG_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Round ε values to label a log axis from `lo` to `hi` (every value written out: 0.3, not "3")."""
    ticks = [t for t in LOG_TICKS if lo / 1.01 <= t <= hi * 1.01]
    return ticks or [lo, hi]


def privacy_utility_figure(rows: Iterable[dict], metric: str = "utility"):
    """ε (log axis) against a utility score: one line per (model, settings, dataset variant) (rows'
    "series", else the model), the mean over seeds with their min–max as a band; ε = ∞ runs as
    points at the right edge (tick "∞"); the classifiers trained on the real rows as a dotted ceiling."""
    import plotly.graph_objects as go

    from dpcore.text import html_text

    pts = []
    for r in rows:
        y, eps = finite(r.get(metric)), r.get("epsilon")
        if y is None or not isinstance(eps, (int, float)) or math.isnan(eps):
            continue
        pts.append({"series": str(r.get("series") or r.get("model")), "epsilon": float(eps), "y": y,
                    "reference": finite(r.get("reference"))})
    fig = go.Figure()
    refs = [p["reference"] for p in pts if p["reference"] is not None]
    if refs:
        fig.add_hline(y=float(np.mean(refs)), line_dash="dot", line_color="grey",
                      annotation_text="trained on real data", annotation_position="bottom right")
    finite_eps = [p["epsilon"] for p in pts if math.isfinite(p["epsilon"])]
    lo, hi = (min(finite_eps), max(finite_eps)) if finite_eps else (1.0, 1.0)
    inf_x = hi * 3.0
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for i, series in enumerate(sorted({p["series"] for p in pts})):
        color, name = palette[i % len(palette)], html_text(series)
        by_eps: dict[float, list[float]] = {}
        for p in pts:
            if p["series"] == series:
                by_eps.setdefault(p["epsilon"], []).append(p["y"])
        xs = sorted(e for e in by_eps if math.isfinite(e))
        if xs:
            mean = [float(np.mean(by_eps[e])) for e in xs]
            if any(len(by_eps[e]) > 1 for e in xs):
                fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[max(by_eps[e]) for e in xs] + [min(by_eps[e]) for e in xs][::-1],
                                         fill="toself", fillcolor=color, opacity=0.15, line={"width": 0},
                                         hoverinfo="skip", showlegend=False, legendgroup=name))
            fig.add_trace(go.Scatter(x=xs, y=mean, mode="lines+markers", name=name, line={"color": color},
                                     legendgroup=name))
        if math.inf in by_eps:
            ys = by_eps[math.inf]
            if xs:  # the ∞ point ends the family's curve: a dashed step from its largest finite ε
                fig.add_trace(go.Scatter(x=[xs[-1], inf_x], y=[mean[-1], float(np.mean(ys))], mode="lines",
                                         line={"color": color, "dash": "dash"}, hoverinfo="skip",
                                         showlegend=False, legendgroup=name))
            fig.add_trace(go.Scatter(x=[inf_x] * len(ys), y=ys, mode="markers", name=f"{name} (ε = ∞)",
                                     marker={"color": color, "symbol": "diamond", "size": 10}, legendgroup=name,
                                     hovertemplate="ε = ∞<br>%{y:.3f}<extra></extra>"))
    ticks = log_ticks(lo, hi)
    has_inf = any(math.isinf(p["epsilon"]) for p in pts)
    tickvals = ticks + ([inf_x] if has_inf else [])
    ticktext = [f"{t:g}" for t in ticks] + (["∞"] if has_inf else [])
    vals = [p["y"] for p in pts] + refs
    yaxis = dict(title=metric)
    if vals and 0 <= min(vals) and max(vals) <= 1:
        yaxis["range"] = [0, 1.02]
    # a log axis spans ×2 beyond the points each side: runs at ε = 1 and ε = 0.9999999994 (an
    # accountant's ε) are one point, not the two ends of an axis plotly autoscales to 1e-9 wide
    right = inf_x if has_inf else hi
    xrange = [math.log10(lo / 2), math.log10(right * 2)] if finite_eps else None
    fig.update_layout(title="Privacy–utility trade-off",
                      xaxis=dict(title="ε (log scale; ∞ = not private)", type="log", tickvals=tickvals,
                                 ticktext=ticktext, range=xrange),
                      yaxis=yaxis, height=400, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.2))
    return fig
