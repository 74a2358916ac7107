"""Privacy figures: the budget's share per mechanism, ε under each accounting, the PLD profile.

Numbers come from `dpcore.privacy` (the accountant and `dpcore.privacy.budget`); this module only
arranges them. Plotly is imported inside each builder.
"""
from __future__ import annotations

import html

import numpy as np


def _wrap(label: str) -> str:
    """A plain-text label on two lines of a bar's axis: escaped, then broken at its first space."""
    text = html.escape(label)
    cut = text.find(" (") if " (" in text else text.find(" ")
    return text if cut < 0 else text[:cut] + "<br>" + text[cut + 1:]


def budget_share_figure(ledger, delta: float):
    """Horizontal bars: which mechanism spent how much of the privacy budget (RDP at α*).

    Orange: full-batch Gaussian releases (DP-PCA, DP-EM: the encoder); blue: subsampled (DP-SGD)."""
    import plotly.graph_objects as go

    from dpcore.privacy.budget import budget_share

    rows, eps, order = budget_share(ledger, delta)
    rows = _grouped(rows)
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



def _grouped(rows: list[dict]) -> list[dict]:
    """One bar per mechanism name: AIM's 19 measurements share a name, and bars on one category
    drew on top of each other with their labels ("6 % 6 % 6 % …") overlapping."""
    out: dict[str, dict] = {}
    for r in rows:
        g = out.setdefault(r["name"], {**r, "share": 0.0, "steps": 0, "count": 0})
        g["share"] += r["share"]
        g["steps"] += int(r.get("steps") or 0)
        g["count"] += 1
    for g in out.values():
        if g["count"] > 1:
            g["name"] = f"{g['name']} (×{g['count']})"
    return list(out.values())


def composition_figure(ledger, delta: float, rows: list[dict] | None = None):
    """Bars: ε from RDP composition vs the sequential baseline (and PLD), same ledger and δ."""
    import plotly.graph_objects as go

    from dpcore.privacy.budget import composition_table

    rows = composition_table(ledger, delta) if rows is None else rows
    colors = ["#3b6fb6", "#8fb0de", "#3a9d5d", "#c23b50"]
    fig = go.Figure(go.Bar(x=[_wrap(r["analysis"]) for r in rows], y=[r["epsilon"] for r in rows],
                           text=[f"{r['epsilon']:.2f}" if np.isfinite(r["epsilon"]) else
                                 ("does not apply" if "does not apply" in r.get("note", "") else "—")
                                 for r in rows], textposition="outside",
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
    fig = go.Figure()
    if getattr(ledger, "selection", None) is None:
        deltas = np.array([pld_delta(ledger, float(e)) for e in grid])
        fig.add_trace(go.Scatter(x=grid, y=np.maximum(deltas, 1e-300), mode="lines", name="PLD δ(ε)"))
    else:  # a run released by private selection: only the RDP accountant bounds it
        fig.add_annotation(text="The PLD accountant does not apply to private selection", showarrow=False,
                           xref="paper", yref="paper", x=0.5, y=0.9)
    fig.add_trace(go.Scatter(x=[eps_rdp], y=[delta], mode="markers", name=f"reported (ε={eps_rdp:.2f}, δ={delta:g})",
                             marker=dict(size=11, symbol="star", color="crimson")))
    fig.update_layout(title="Privacy profile: every (ε, δ) pair the run satisfies", xaxis_title="ε",
                      yaxis=dict(title="δ", type="log", exponentformat="power"), height=360,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig
