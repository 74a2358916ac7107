"""Training figures: the live loss curves per phase, or a marginal model's measurements (what the
Train page and the reports draw).

Numbers come from a run's events; this module only arranges them. Plotly is imported inside each
builder.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

PHASE_LABELS = {"pca": "DP-PCA", "em": "DP-EM", "warmup": "decoder warm-up", "sgd": "(DP-)SGD"}



MAX_POINTS = 600  # per curve; longer runs are averaged into this many bins



def phase_label(phase: str) -> str:
    return PHASE_LABELS.get(phase, phase)



def _binned(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Average consecutive points into at most `max_points` bins (keeps a live plot light)."""
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    xs = np.array([x[a:b].mean() for a, b in zip(edges[:-1], edges[1:]) if b > a])
    ys = np.array([y[a:b].mean() for a, b in zip(edges[:-1], edges[1:]) if b > a])
    return xs, ys



def loss_curves_figure(events: Sequence[dict], *, max_points: int = MAX_POINTS, title: str | None = None):
    """Every loss term of every phase against the global step; one panel per phase with losses.

    events: TrainingEvent dicts (phase, step, total_steps, losses, epsilon). Phases without losses
    (DP-PCA, DP-EM are single releases) appear as shaded markers in the title instead.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    phases: list[str] = []
    for e in events:
        if e.get("losses") and e["phase"] not in phases:
            phases.append(e["phase"])
    if not phases:
        fig = go.Figure()
        fig.update_layout(title=title or "Loss curves (waiting for the first step…)", height=320,
                          xaxis_title="step", yaxis_title="loss")
        return fig
    fig = make_subplots(rows=1, cols=len(phases), subplot_titles=[phase_label(p) for p in phases],
                        horizontal_spacing=0.08)
    palette = ["#3b6fb6", "#e07b39", "#3a9d5d", "#c23b50", "#8a5cc2", "#6b6b6b"]
    colors: dict[str, str] = {}
    for col, phase in enumerate(phases, start=1):
        rows = [e for e in events if e["phase"] == phase and e.get("losses")]
        terms: list[str] = []
        for e in rows:
            terms.extend(t for t in e["losses"] if t not in terms)
        for term in terms:
            pts = [(e["step"], e["losses"][term]) for e in rows if term in e["losses"]
                   and e["losses"][term] is not None and math.isfinite(e["losses"][term])]
            if not pts:
                continue
            x, y = (np.asarray(v, dtype=float) for v in zip(*pts))
            x, y = _binned(x, y, max_points)
            color = colors.setdefault(term, palette[len(colors) % len(palette)])
            fig.add_trace(go.Scatter(x=x.tolist(), y=y.tolist(), mode="lines", name=term, legendgroup=term,
                                     showlegend=term not in {t.name for t in fig.data},
                                     line=dict(color=color, width=2 if term == "loss" else 1.3)),
                          row=1, col=col)
        fig.update_xaxes(title_text="step", row=1, col=col)
        fig.update_yaxes(title_text=_axis_title(terms), row=1, col=col)
    losses = any(_axis_title([t]) == LOSS_AXIS for e in events for t in (e.get("losses") or {}))
    fig.update_layout(title=title or ("Training losses" if losses else "Training progress"), height=340,
                      margin=dict(l=10, r=10, t=60, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


LOSS_AXIS = "loss (per example)"
# What the marginal models report per step is not a loss: a rising count of measured marginals read
# on a "loss" axis looked like divergence.
PROGRESS_TERMS = {"marginals": "marginals measured so far", "score": "selection score"}


def _axis_title(terms) -> str:
    named = {PROGRESS_TERMS.get(t) for t in terms}
    return named.pop() if len(named) == 1 and None not in named else LOSS_AXIS


def measures_marginals(events: Sequence[dict]) -> bool:
    """A marginal model's run (AIM, MST): its events carry each measurement's σ, not a loss."""
    return any("sigma" in (e.get("losses") or {}) for e in events)


def measurements_figure(events: Sequence[dict], *, title: str | None = None):
    """A marginal model's progress in its own terms: the noise σ of each round's measurements
    (markers, left axis: the std of the Gaussian added to each count; one person moves a count by 1)
    and the ε the accountant has counted so far (line, right axis), against the measurement round.
    Why: these models have no loss; a rising "marginals" count on a loss axis read as divergence."""
    import plotly.graph_objects as go

    rows = [e for e in events if "sigma" in (e.get("losses") or {})]
    fig = go.Figure()
    steps = [e["step"] for e in rows]
    fig.add_trace(go.Scatter(x=steps, y=[e["losses"]["sigma"] for e in rows], mode="markers+lines",
                             name="σ of the counts measured", line=dict(color="#3b6fb6", width=1),
                             customdata=[e["losses"].get("marginals") for e in rows],
                             hovertemplate="round %{x}: σ = %{y:.1f}<br>%{customdata:.0f} marginals measured"
                                           "<extra></extra>"))
    eps = [(e["step"], e["epsilon"]) for e in rows if isinstance(e.get("epsilon"), (int, float))
           and math.isfinite(e["epsilon"])]
    if eps:
        fig.add_trace(go.Scatter(x=[s for s, _ in eps], y=[v for _, v in eps], mode="lines", name="ε spent",
                                 line=dict(color="#e07b39", width=2), yaxis="y2",
                                 hovertemplate="round %{x}: ε = %{y:.2f}<extra></extra>"))
    n = int(rows[-1]["losses"].get("marginals") or 0) if rows else 0
    fig.update_layout(title=title or (f"Measurements: {n} marginals so far" if rows else "Measurements (waiting…)"),
                      height=340, margin=dict(l=10, r=10, t=60, b=10), legend=dict(orientation="h", y=-0.25),
                      xaxis=dict(title="measurement round", dtick=1 if len(steps) <= 20 else None),  # whole rounds
                      yaxis=dict(title="σ (noise std per count)", rangemode="tozero"),
                      yaxis2=dict(title="ε spent", overlaying="y", side="right", rangemode="tozero",
                                  showgrid=False, tickformat=".2~f"))
    return fig


def progress_figure(events: Sequence[dict], *, title: str | None = None):
    """The live view a run's model calls for: measurements for marginal models, loss curves otherwise."""
    if measures_marginals(events):
        return measurements_figure(events, title=title)
    return loss_curves_figure(events, title=title)
