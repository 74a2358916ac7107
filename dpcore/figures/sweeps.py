"""Figures of a finished sweep (plotly, no Streamlit): the privacy–utility Pareto front and a
heatmap of utility over two parameters at a fixed ε.

Both read the sweep summary's rows ({"params", "epsilon", "utility", "tvd_2way", "mia_auc"}).
Every point is a run chosen on nothing: the figures show all runs; a "best" read off them is a
choice on private data (not covered by ε; see dpcore.jobs.selection for a covered one).
"""
from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

METRICS = {"utility": "utility (synthetic → real)", "tvd_2way": "2-way marginal TVD",
           "mia_auc": "best-attack AUC"}


def _rows(summary: dict, metric: str) -> list[dict]:
    return [r for r in summary.get("runs", []) if r.get("status") == "done" and r.get(metric) is not None
            and math.isfinite(float(r[metric])) and math.isfinite(float(r.get("epsilon", math.nan)))]


def plotted_epsilon(value) -> float:
    """The accountant's ε to 4 significant digits: runs calibrated to one target differ from it in the
    12th digit, and must share one x position (and one seed band)."""
    return float(f"{float(value):.4g}")


def seed_bands(rows: list[dict], x_key: str, metric: str, group_keys: list[str]) -> dict:
    """{group: [(x, mean, min, max), …]} over seeds: one group per value of the other axes."""
    groups: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        p = r["params"]
        g = tuple((k, p.get(k)) for k in group_keys)
        x = plotted_epsilon(r["epsilon"]) if x_key == "epsilon" else p.get(x_key)
        groups[g][x].append(float(r[metric]))
    return {g: [(x, float(np.mean(v)), float(np.min(v)), float(np.max(v))) for x, v in sorted(pts.items())]
            for g, pts in sorted(groups.items(), key=lambda kv: str(kv[0]))}


def pareto_front(points: list[tuple[float, float]], higher_is_better: bool = True) -> list[tuple[float, float]]:
    """The (ε, score) points no other point beats with a smaller-or-equal ε, by increasing ε."""
    front, best = [], -math.inf
    for eps, score in sorted(points, key=lambda p: (p[0], -p[1] if higher_is_better else p[1])):
        s = score if higher_is_better else -score
        if s > best:
            front.append((eps, score))
            best = s
    return front


def pareto_figure(summary: dict, metric: str = "utility"):
    """ε (log) against `metric`: one line per value of the other grid axes (mean over seeds, the
    seeds' min–max as a band), and the Pareto front of all runs as a dashed line."""
    import plotly.graph_objects as go

    rows = _rows(summary, metric)
    grid = summary.get("sweep", {}).get("grid", {})
    others = [k for k in grid if k != "epsilon"]
    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for i, (g, pts) in enumerate(seed_bands(rows, "epsilon", metric, others).items()):
        color = palette[i % len(palette)]
        label = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in g) or "all runs"
        xs = [p[0] for p in pts]
        fig.add_trace(go.Scatter(x=xs + xs[::-1], y=[p[3] for p in pts] + [p[2] for p in pts][::-1],
                                 fill="toself", fillcolor=color, opacity=0.15, line={"width": 0},
                                 hoverinfo="skip", showlegend=False, legendgroup=label))
        fig.add_trace(go.Scatter(x=xs, y=[p[1] for p in pts], mode="lines+markers", name=label,
                                 line={"color": color}, legendgroup=label))
    front = pareto_front([(plotted_epsilon(r["epsilon"]), float(r[metric])) for r in rows], metric == "utility")
    if front:
        fig.add_trace(go.Scatter(x=[p[0] for p in front], y=[p[1] for p in front], mode="lines",
                                 name="Pareto front (runs)", line={"color": "black", "dash": "dash"}))
    fig.update_layout(title="Privacy–utility Pareto front", height=400, margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      xaxis={"title": "ε (accountant, log scale)", "type": "log"},
                      yaxis={"title": METRICS.get(metric, metric)})
    return fig


def heatmap_matrix(rows: list[dict], x_key: str, y_key: str, metric: str):
    """(x values, y values, matrix of the mean over seeds and other axes; nan where missing)."""
    cells: dict = defaultdict(list)
    for r in rows:
        cells[(r["params"].get(x_key), r["params"].get(y_key))].append(float(r[metric]))
    xs = sorted({k[0] for k in cells})
    ys = sorted({k[1] for k in cells})
    z = np.full((len(ys), len(xs)), np.nan)
    for (x, y), v in cells.items():
        z[ys.index(y), xs.index(x)] = float(np.mean(v))
    return xs, ys, z


def heatmap_figure(summary: dict, epsilon: float | None = None, x_key: str = "encoder_share",
                   y_key: str = "pca_dim", metric: str = "utility"):
    """`metric` over x_key × y_key at ε = `epsilon` (default: the largest of the grid), mean over
    seeds. Axes not in the grid collapse to one row/column."""
    import plotly.graph_objects as go

    rows = _rows(summary, metric)
    eps_grid = sorted({r["params"].get("epsilon") for r in rows if r["params"].get("epsilon") is not None})
    if epsilon is None and eps_grid:
        epsilon = eps_grid[-1]
    if epsilon is not None:
        rows = [r for r in rows if r["params"].get("epsilon") is None
                or math.isclose(float(r["params"]["epsilon"]), float(epsilon))]
    xs, ys, z = heatmap_matrix(rows, x_key, y_key, metric)
    fig = go.Figure(go.Heatmap(x=[str(x) for x in xs], y=[str(y) for y in ys], z=[[None if math.isnan(v) else float(v) for v in row] for row in z], colorscale="Viridis",
                               colorbar={"title": metric}, texttemplate="%{z:.3f}",
                               hovertemplate=f"{x_key}=%{{x}}<br>{y_key}=%{{y}}<br>{metric}=%{{z:.3f}}<extra></extra>"))
    eps_txt = "" if epsilon is None else f" at ε = {epsilon:g}"
    fig.update_layout(title=f"{METRICS.get(metric, metric)}{eps_txt}", height=380,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, xaxis={"title": x_key, "type": "category"},
                      yaxis={"title": y_key, "type": "category"})
    return fig
