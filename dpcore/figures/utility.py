"""Utility figures: the train-on-synthetic/test-on-real table and the privacy–utility curve.

Numbers come from `dpcore.evaluate.utility` and the runs' saved evaluations; this module only
arranges them. Plotly is imported inside each builder.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable

import numpy as np

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
    fig = go.Figure(go.Table(header=dict(values=header, align="left"),
                             cells=dict(values=cols, align="left")))
    title = "Utility: train on synthetic, test on real"
    if result.notes:
        from dpcore.text import html_text

        title += "<br><sub>" + html_text("; ".join(result.notes)) + "</sub>"
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=60, b=10))
    return fig



def _fmt(v: float) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def privacy_utility_figure(rows: Iterable[dict], metric: str = "utility"):
    """ε (log axis) against a utility score, one line per model; ∞ runs drawn as a dashed reference,
    the classifiers trained on the real rows (rows' "reference") as a dotted ceiling."""
    import plotly.graph_objects as go

    rows = [r for r in rows if r.get(metric) is not None and not
            (isinstance(r.get(metric), float) and math.isnan(r[metric]))]
    fig = go.Figure()
    refs = [r["reference"] for r in rows if r.get("reference") is not None]
    if refs:
        fig.add_hline(y=float(np.mean(refs)), line_dash="dot", line_color="grey",
                      annotation_text="trained on real data", annotation_position="bottom right")
    for model in sorted({r["model"] for r in rows}):
        pts = sorted((r["epsilon"], r[metric]) for r in rows if r["model"] == model and math.isfinite(r["epsilon"]))
        if pts:
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], mode="lines+markers",
                                     name=model))
        for r in rows:
            if r["model"] == model and math.isinf(r["epsilon"]):
                fig.add_hline(y=r[metric], line_dash="dash", annotation_text=f"{model} (ε = ∞)")
    vals = [r[metric] for r in rows] + refs
    yaxis = dict(title=metric)
    if vals and 0 <= min(vals) and max(vals) <= 1:
        yaxis["range"] = [0, 1.02]
    fig.update_layout(title="Privacy–utility trade-off", xaxis=dict(title="ε (log scale)", type="log"),
                      yaxis=yaxis, height=380, margin=dict(l=10, r=10, t=50, b=10))
    return fig
