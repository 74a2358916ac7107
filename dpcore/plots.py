"""Plot builders the evaluation package does not have: live training curves and the privacy budget.

Why here and not in a page: notebooks and the workbench draw the same pictures (DESIGN.md). Every
number comes from the run's events or from the accountant (`dpcore.privacy.accountant`); these
functions only arrange them. Plotly is imported inside each builder.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

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
    fig.update_yaxes(title_text="loss (per example)", row=1, col=1)
    fig.update_layout(title=title or "Training losses", height=340, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def budget_share(ledger, delta: float) -> tuple[list[dict], float, float]:
    """Each record's share of the total RDP at the order α* where the run's ε is attained.

    Returns (rows, ε, α*): rows have name, mechanism, noise_multiplier, sampling_rate, steps,
    rdp (at α*) and share. The RDP values come from the accountant.
    """
    from dpcore.privacy.accountant import epsilon_and_order, record_rdp

    records = list(ledger)
    if not records:
        return [], 0.0, float("nan")
    eps, order = epsilon_and_order(ledger, delta)
    if not math.isfinite(order):
        return [], eps, order
    vals = [float(record_rdp(r, [order])[0]) for r in records]
    total = sum(vals) or 1.0
    rows = [{**r.to_dict(), "rdp": v, "share": v / total} for r, v in zip(records, vals)]
    return rows, eps, order


def budget_share_figure(ledger, delta: float):
    """Horizontal bars: which mechanism spent how much of the privacy budget (RDP at α*).

    Orange: full-batch Gaussian releases (DP-PCA, DP-EM: the encoder); blue: subsampled (DP-SGD)."""
    import plotly.graph_objects as go

    rows, eps, order = budget_share(ledger, delta)
    fig = go.Figure(go.Bar(
        x=[r["share"] for r in rows], y=[r["name"] for r in rows], orientation="h",
        text=[f"{r['share']:.0%}" for r in rows], textposition="auto",
        hovertext=[f"σ/Δ = {r['noise_multiplier']:.3g}, q = {r['sampling_rate']:.3g}, "
                   f"{r['steps']} step(s)" for r in rows],
        marker_color=["#3b6fb6" if r["mechanism"] == "subsampled_gaussian" else "#e07b39" for r in rows]))
    fig.update_layout(title=f"Budget share by mechanism (RDP at α = {order:g})",
                      xaxis=dict(title="share of total RDP", tickformat=".0%", range=[0, 1]),
                      yaxis=dict(autorange="reversed"), height=120 + 40 * max(1, len(rows)),
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def composition_table(ledger, delta: float) -> list[dict]:
    """ε of the same ledger under each analysis the accountant offers (all at the same δ)."""
    from dpcore.privacy import accountant as acc

    rows = [("RDP, tight<br>(reported)", acc.epsilon),
            ("RDP, classic<br>conversion", acc.classic_epsilon),
            ("PLD<br>(dp-accounting)", acc.pld_epsilon),
            ("Sequential<br>(paper's baseline)", acc.baseline_epsilon)]
    out = []
    for label, fn in rows:
        try:
            out.append({"analysis": label, "epsilon": float(fn(ledger, delta))})
        except Exception as exc:  # noqa: BLE001 - one analysis failing must not hide the others
            out.append({"analysis": label, "epsilon": float("nan"), "note": str(exc)})
    return out


def composition_figure(ledger, delta: float, rows: list[dict] | None = None):
    """Bars: ε from RDP composition vs the sequential baseline (and PLD), same ledger and δ."""
    import plotly.graph_objects as go

    rows = composition_table(ledger, delta) if rows is None else rows
    colors = ["#3b6fb6", "#8fb0de", "#3a9d5d", "#c23b50"]
    fig = go.Figure(go.Bar(x=[r["analysis"] for r in rows], y=[r["epsilon"] for r in rows],
                           text=[f"{r['epsilon']:.2f}" for r in rows], textposition="outside",
                           marker_color=colors[: len(rows)]))
    fig.update_layout(title=f"Same mechanisms, different accounting (δ = {delta:g})",
                      yaxis_title="ε", xaxis_tickangle=0, height=360, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def pld_figure(ledger, delta: float, eps_max: float | None = None, n: int = 40):
    """δ(ε) from the PLD accountant with the reported (ε, δ) point: the whole privacy profile."""
    import plotly.graph_objects as go
    from dpcore.privacy.accountant import epsilon, pld_delta

    eps_rdp = float(epsilon(ledger, delta))
    hi = eps_max or max(2.0 * eps_rdp, 1.0)
    grid = np.linspace(0.0, hi, n)
    deltas = np.array([pld_delta(ledger, float(e)) for e in grid])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=grid, y=np.maximum(deltas, 1e-300), mode="lines", name="PLD δ(ε)"))
    fig.add_trace(go.Scatter(x=[eps_rdp], y=[delta], mode="markers", name=f"reported (ε={eps_rdp:.2f}, δ={delta:g})",
                             marker=dict(size=11, symbol="star", color="crimson")))
    fig.update_layout(title="Privacy profile: every (ε, δ) pair the run satisfies", xaxis_title="ε",
                      yaxis=dict(title="δ", type="log", exponentformat="power"), height=360,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


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
