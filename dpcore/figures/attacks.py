"""Attack figures: trade-off curves with the f-DP bounds, score histograms, the most exposed records.

Numbers come from `dpcore.evaluate.attacks` (and `dpcore.evaluate.bounds`); only the pictures are built here. Every label that can
come from data (run names, column names) is HTML-escaped before it goes into Plotly.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

NOT_COVERED = "not covered by ε — data owner only"


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
LOW_FPR = 1e-3  # left end of the log-scaled false-positive axis
LEGEND_CHARS = 40  # a compact legend entry: "non-private · monte-carlo · AUC 0.51"


class RunCurves(NamedTuple):
    """One run on the attack plot: its short legend label, its attack results, its own bound curves
    ((label, α, β) from `bound_curves`, empty for ε = ∞) and the full run id for the hover text."""

    label: str
    results: Sequence
    bounds: Sequence = ()
    hover: str = ""


def _shade(color: str, j: int) -> str:
    """The run's colour, mixed with white for its j-th attack (same family, still distinguishable)."""
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    t = min(0.6, 0.3 * j)
    return "#" + "".join(f"{round(c + (255 - c) * t):02x}" for c in (r, g, b))


def _views(fig, go, name, a, b, *, color, dash, width, group, hover, showlegend=True, shape="linear", log_fpr=False):
    """The same curve in both panels: ROC (FPR, TPR = 1 − β) left, trade-off (α, β) right."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = a >= LOW_FPR / 2 if log_fpr else np.ones_like(a, dtype=bool)
    line = dict(color=color, dash=dash, width=width, shape=shape)
    tip = f"{hover}<br>" if hover else ""
    fig.add_trace(go.Scatter(x=a[keep], y=1 - b[keep], mode="lines", name=name, legendgroup=group, line=line,
                             showlegend=showlegend,
                             hovertemplate=f"{tip}{name}<br>FPR %{{x:.4f}}, TPR %{{y:.3f}}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Scatter(x=a, y=b, mode="lines", name=name, legendgroup=group, line=line, showlegend=False,
                             hovertemplate=f"{tip}{name}<br>α %{{x:.4f}}, β %{{y:.3f}}<extra></extra>"),
                  row=1, col=2)


def short_bound(label: str) -> str:
    """A bound curve's legend name in a few words (its full label stays in the hover text)."""
    from dpcore.evaluate.bounds import APPROXIMATION

    text = str(label)
    if APPROXIMATION in text:
        return "GDP approx. (not a bound)"
    if text.startswith("(ε="):
        return "(ε, δ)-DP bound"
    return text if len(text) <= 20 else text[:19] + "…"


def legend_name(side: str, attack: str, auc: float) -> str:
    """"side · attack · AUC 0.51", at most LEGEND_CHARS characters (the side is cut first)."""
    tail = f" · {attack} · AUC {auc:.2f}"
    room = max(4, LEGEND_CHARS - len(tail))
    side = side if len(side) <= room else side[:room - 1] + "…"
    return html.escape(side + tail)


def attack_curves_figure(runs: Sequence, bounds=(), *, log_fpr: bool = False, compact: bool = False):
    """Two square panels in [0, 1]: the ROC view (true vs false positive rate; `log_fpr` zooms into
    the low-FPR region 1e-3…1 where a real attacker operates) and the trade-off view (type-II vs
    type-I error). runs: `RunCurves` (or (label, [AttackResult, …]) pairs); each run has one colour,
    its attacks in shades of it, its own bound curves dashed and the GDP approximation dotted in the
    same colour. `bounds`: extra (label, α, β) curves drawn grey (no run of their own). `compact`:
    legend entries "side · attack · AUC" and short bound names, each under LEGEND_CHARS characters
    (run labels are then short side names; the full names stay in the hover text)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from dpcore.evaluate.bounds import APPROXIMATION

    runs = [r if isinstance(r, RunCurves) else RunCurves(*r) for r in runs]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("ROC: true vs false positive rate" + (" (log FPR)" if log_fpr else ""),
                                        "Trade-off: type-II vs type-I error"))
    grid = np.linspace(LOW_FPR if log_fpr else 0.0, 1.0, 101)
    _views(fig, go, "random guess", grid, 1 - grid, color="lightgrey", dash="dot", width=1.5, group="guess",
           hover="", log_fpr=log_fpr)
    extra = [(None, "#555555", lbl, a, b) for lbl, a, b in bounds]
    for i, run in enumerate(runs):
        color = PALETTE[i % len(PALETTE)]
        extra += [(i, color, lbl, a, b) for lbl, a, b in run.bounds]
        for j, r in enumerate(run.results):
            if compact:
                name = legend_name(str(run.label), r.name, r.auc)
            elif len(runs) > 1:
                name = f"{html.escape(str(run.label))}: {html.escape(r.name)} (AUC {r.auc:.3f})"
            else:
                name = f"{html.escape(r.name)} (AUC {r.auc:.3f})"
            _views(fig, go, name, r.alpha, r.beta, color=_shade(color, j), dash="solid", width=2.5,
                   group=f"run{i}", hover=html.escape(str(run.hover or run.label)), shape="hv", log_fpr=log_fpr)
    for i, color, lbl, a, b in extra:
        approx = APPROXIMATION in str(lbl)
        if compact:
            name = html.escape(("" if i is None else f"{runs[i].label} · ") + short_bound(lbl))
            hover = html.escape(f"{runs[i].hover or runs[i].label}: {lbl}" if i is not None else str(lbl))
        else:
            who = "" if i is None or len(runs) < 2 else f"{html.escape(str(runs[i].label))}: "
            name = who + html.escape(str(lbl))
            hover = "" if i is None else html.escape(str(runs[i].hover or runs[i].label))
        _views(fig, go, name, a, b, color=color, dash="dot" if approx else "dash",
               width=1.5 if approx else 2, group="bounds" if i is None else f"run{i}", hover=hover, log_fpr=log_fpr)
    _square_axes(fig, log_fpr)
    fig.update_layout(title=f"Membership inference attacks ({NOT_COVERED})", height=520,
                      margin=dict(l=60, r=20, t=80, b=60),
                      legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, font=dict(size=11)))  # below the x titles
    return fig


SIDE_COLORS = {"private": "#1f5fbf", "nonprivate": "#e4572e"}  # blue vs orange-red: apart in colour-blind views too
SIDE_WORDS = {"private": "with privacy", "nonprivate": "without privacy"}


def lesson_figure(curves: Sequence[dict], names: dict | None = None):
    """The Story's one chart: one ROC curve per side (the canary audit's, else the best attack's),
    the private side's (ε, δ) bound dashed in its colour and guessing dotted; a legend in words
    ("without privacy (PGM, ε = ∞): canaries AUC 0.79"). curves: `dpcore.ui.story.lesson_curves`;
    names: {role: "PGM, ε = ∞"}."""
    import plotly.graph_objects as go

    names = names or {}
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="guessing (AUC 0.5)",
                             line=dict(color="#9e9e9e", dash="dot", width=1.5), hoverinfo="skip"))
    for c in curves:
        role = c["role"]
        who = SIDE_WORDS.get(role, role) + (f" ({html.escape(str(names[role]))})" if role in names else "")
        what = "canaries" if c["evidence"] == "canaries" else f"{html.escape(str(c['evidence']))} attack"
        color = SIDE_COLORS.get(role, "#555555")
        fig.add_trace(go.Scatter(x=c["fpr"], y=c["tpr"], mode="lines", name=f"{who}: {what} AUC {c['auc']:.2f}",
                                 line=dict(color=color, width=3.5, shape="hv"),
                                 hovertemplate="FPR %{x:.3f}, TPR %{y:.3f}<extra>" + who + "</extra>"))
        if "bound_fpr" in c:
            fig.add_trace(go.Scatter(x=c["bound_fpr"], y=c["bound_tpr"], mode="lines",
                                     name=f"the most any attack can do at ε = {c['bound_epsilon']:.3g}",
                                     line=dict(color=color, dash="dash", width=1.5), hoverinfo="skip"))
    rows = "canaries" if all(c["evidence"] == "canaries" for c in curves) else "rows"
    fig.update_xaxes(range=[0, 1], constrain="domain", title=f"{rows} NOT trained on, named anyway (FPR)")
    fig.update_yaxes(range=[0, 1], scaleanchor="x", constrain="domain", title=f"{rows} trained on, named (TPR)")
    fig.update_layout(title=f"Which {rows} was the model trained on? ({NOT_COVERED})", height=460,
                      margin=dict(l=60, r=20, t=60, b=40),
                      legend=dict(yanchor="bottom", y=0.02, xanchor="right", x=0.99, bgcolor="rgba(255,255,255,0.85)",
                                  font=dict(size=13)))
    return fig


def _square_axes(fig, log_fpr: bool) -> None:
    """Both panels square and clipped to [0, 1] (constrain="domain" shrinks the plot instead of
    widening an axis); a log FPR axis spans 3 decades, so its y unit is 3 x units (scaleratio)."""
    if log_fpr:
        fig.update_xaxes(type="log", range=[np.log10(LOW_FPR), 0], constrain="domain", row=1, col=1,
                         title="false positive rate (log scale)")
        fig.update_yaxes(range=[0, 1], scaleanchor="x", scaleratio=-np.log10(LOW_FPR), constrain="domain",
                         row=1, col=1, title="true positive rate")
    else:
        fig.update_xaxes(range=[0, 1], constrain="domain", row=1, col=1, title="false positive rate")
        fig.update_yaxes(range=[0, 1], scaleanchor="x", constrain="domain", row=1, col=1, title="true positive rate")
    fig.update_xaxes(range=[0, 1], constrain="domain", row=1, col=2, title="type-I error α (= FPR)")
    fig.update_yaxes(range=[0, 1], scaleanchor="x2", constrain="domain", row=1, col=2,
                     title="type-II error β (= 1 − TPR)")
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)


def exposed_records_figure(targets: np.ndarray, nearest: np.ndarray, image_shape, captions: Sequence[str]):
    """Row 1: the targets the best attack is surest about; row 2: each one's nearest synthetic row."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

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

    results: (label, AttackResult) pairs; bounds: (label, α, β) triples (e.g. from `bound_curves`).
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
