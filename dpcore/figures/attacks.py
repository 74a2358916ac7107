"""Attack figures: trade-off curves with the f-DP bounds, score histograms, the most exposed records.

Numbers come from `dpcore.evaluate.attacks` (and `dpcore.evaluate.bounds`); only the pictures are built here. Every label that can
come from data (run names, column names) is HTML-escaped before it goes into Plotly.
"""
from __future__ import annotations

import html
from typing import Sequence

import numpy as np

NOT_COVERED = "not covered by ε — data owner only"


def attack_curves_figure(runs: Sequence[tuple[str, Sequence]], bounds=()):
    """Type-II vs type-I error for each (run label, [AttackResult, …]), dashed bound curves and dotted
    approximations (a curve whose label says it is no bound, e.g. the GDP CLT curve)."""
    import plotly.graph_objects as go

    from dpcore.evaluate.bounds import APPROXIMATION

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[1, 0], mode="lines", name="random guess",
                             line=dict(color="lightgrey", dash="dot")))
    for label, a, b in bounds:
        fig.add_trace(go.Scatter(x=np.asarray(a), y=np.asarray(b), mode="lines", name=html.escape(str(label)),
                                 line=dict(dash="dot" if APPROXIMATION in str(label) else "dash", width=2)))
    dashes = ("solid", "dashdot", "longdash")
    for i, (run, results) in enumerate(runs):
        for r in results:
            name = f"{html.escape(str(run))}: {html.escape(r.name)} (AUC {r.auc:.3f})" if len(runs) > 1 \
                else f"{html.escape(r.name)} (AUC {r.auc:.3f})"
            fig.add_trace(go.Scatter(x=np.asarray(r.alpha), y=np.asarray(r.beta), mode="lines", name=name,
                                     line=dict(shape="hv", dash=dashes[i % len(dashes)])))
    fig.update_layout(xaxis_title="type-I error α (false positive rate)",
                      yaxis_title="type-II error β (1 − true positive rate)",
                      xaxis=dict(range=[0, 1], constrain="domain"), yaxis=dict(range=[0, 1], scaleanchor="x", constrain="domain"),
                      title=f"Membership inference attacks ({NOT_COVERED})", legend=dict(x=1.02, y=1))
    return fig


def exposed_records_figure(targets: np.ndarray, nearest: np.ndarray, image_shape, captions: Sequence[str]):
    """Row 1: the targets the best attack is surest about; row 2: each one's nearest synthetic row."""
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    k = len(targets)
    h, w = image_shape[-2], image_shape[-1]
    fig = make_subplots(rows=2, cols=k, horizontal_spacing=0.01, vertical_spacing=0.08,
                        subplot_titles=[html.escape(c) for c in captions] + ["nearest synthetic"] * k)
    for j in range(k):
        for row, img in ((1, targets[j]), (2, nearest[j])):
            fig.add_trace(go.Heatmap(z=np.asarray(img).reshape(h, w)[::-1], colorscale="gray_r", zmin=0, zmax=1,
                                     showscale=False, hoverinfo="skip"), row=row, col=j + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(height=260, margin=dict(l=5, r=5, t=40, b=5),
                      title=f"Most exposed records ({NOT_COVERED})")
    fig.update_annotations(font_size=10)
    return fig


def mia_scores_figure(result, title: str = "Attack scores: members vs non-members"):
    """Histograms of the attack's score for members and non-members; the injected outlier marked."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(go.Histogram(x=np.asarray(result.non_member_scores), name="non-members (test rows)",
                               opacity=0.6, histnorm="probability", marker_color="#8fb0de"))
    fig.add_trace(go.Histogram(x=np.asarray(result.member_scores), name="members (training rows)",
                               opacity=0.6, histnorm="probability", marker_color="#c23b50"))
    if getattr(result, "outlier_score", None) is not None:
        rank = getattr(result, "outlier_rank", None)
        fig.add_vline(x=result.outlier_score, line_dash="dash", line_color="black",
                      annotation_text="outlier" + (f" (rank {rank})" if rank else ""))
    fig.update_layout(barmode="overlay", title=title, xaxis_title="attack score (higher = 'member')",
                      yaxis_title="share of targets", height=340, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def mia_tradeoff_figure(results: Sequence[tuple[str, object]],
                        bounds: Sequence[tuple[str, np.ndarray, np.ndarray]] = ()):
    """Type-II vs type-I error: attack curves (solid), bound curves (dashed), approximations (dotted,
    labelled `APPROXIMATION`), random guessing.

    results: (label, MIAResult) pairs; bounds: (label, α, β) triples (e.g. from `bound_curves`).
    Points *below* a dashed bound would contradict the guarantee (up to sampling error); the
    dotted approximation is no such guarantee.
    """
    import plotly.graph_objects as go

    from dpcore.evaluate.bounds import APPROXIMATION

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[1, 0], mode="lines", name="random guess",
                             line=dict(color="lightgrey", dash="dot")))
    for label, a, b in bounds:
        fig.add_trace(go.Scatter(x=np.asarray(a), y=np.asarray(b), mode="lines", name=label,
                                 line=dict(dash="dot" if APPROXIMATION in label else "dash")))
    for label, res in results:
        fig.add_trace(go.Scatter(x=np.asarray(res.alpha), y=np.asarray(res.beta), mode="lines",
                                 name=f"{label} (AUC {res.auc:.3f})", line=dict(shape="hv")))
    fig.update_layout(xaxis_title="type-I error α (false positive rate)",
                      yaxis_title="type-II error β (1 − true positive rate)",
                      xaxis=dict(range=[0, 1], constrain="domain"), yaxis=dict(range=[0, 1], scaleanchor="x", constrain="domain"),
                      title="Membership inference trade-off", legend=dict(x=1.02, y=1))
    return fig
