"""Data figures: real vs synthetic marginals (1-way bars, the 2-way TVD heatmap) and image grids.

Numbers come from `dpcore.evaluate.marginals`; this module only arranges them. Every label that can
come from data (column names, category values, dataset and class names) is HTML-escaped.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError
from dpcore.text import html_text


def one_way_figure(real: Dataset, synth: Dataset, column: str, bins: int = 20):
    """Real vs synthetic histogram of one decoded column (categoricals as grouped bars), TVD in the
    title; a numeric column's atoms (rows exactly at a bound or at 0) are bars of their own, "= 0",
    hatched, beside the bins."""
    import plotly.graph_objects as go

    from dpcore.evaluate.marginals import one_way_histogram

    h = one_way_histogram(real, synth, column, bins=bins)
    x = [html_text(v) for v in h["bins"]]  # category values come from the data: never markup
    hatch = ["/" if a else "" for a in h["atom"]]
    pattern = dict(shape=hatch, fillmode="overlay", fgcolor="white", solidity=0.3)  # solid bars, white hatch
    fig = go.Figure([go.Bar(x=x, y=h["real"], name="real", marker_pattern=pattern),
                     go.Bar(x=x, y=h["synthetic"], name="synthetic", marker_pattern=pattern)])
    title = f"{html_text(column)}: TVD {h['tvd']:.3f}"
    if any(h["atom"]):
        title += "<br><sup>hatched: rows exactly at that value (a point mass), apart from the bins</sup>"
    top = max(float(np.max(h["real"], initial=0)), float(np.max(h["synthetic"], initial=0)))
    # explicit ranges: the browser's autorange left the hatched bars at both ends half outside
    fig.update_layout(barmode="group", title=title, yaxis_title="share of rows", yaxis_range=[0, 1.08 * top or 1],
                      xaxis_title=html_text(column), xaxis_type="category", xaxis_range=[-0.6, len(x) - 0.4])
    return fig



def two_way_heatmap(matrix: pd.DataFrame):
    """Heatmap of 2-way marginal TVD over column pairs (the matrix from `two_way_tvd`)."""
    import plotly.graph_objects as go

    from dpcore.text import html_list

    fig = go.Figure(go.Heatmap(z=matrix.to_numpy(), x=html_list(matrix.columns), y=html_list(matrix.index),
                               colorscale="Reds", zmin=0, zmax=_top(matrix.to_numpy()), colorbar=dict(title="TVD")))
    mean = float(np.nanmean(matrix.to_numpy())) if matrix.size > 1 else float("nan")
    fig.update_layout(title=f"2-way marginal TVD (mean {mean:.3f})", yaxis=dict(autorange="reversed"))
    return fig



def _top(z) -> float:
    """The largest finite value of a heatmap (its zmax; 1 when there is none)."""
    z = np.asarray(z, dtype=float)
    return float(np.nanmax(z)) if np.isfinite(z).any() and np.nanmax(z) > 0 else 1.0


def shared_color_scale(figs: list) -> list:
    """Copies of side-by-side heatmaps on one colour scale: the same zmin/zmax (the range over all of
    them), so equal colours mean equal values across panels; each keeps its colour bar (the same
    bar on every panel: each reads alone, and the panels keep one width)."""
    import plotly.graph_objects as go

    out = [go.Figure(f) for f in figs]
    traces = [t for f in out for t in f.data if t.type == "heatmap"]
    # the builders set zmin/zmax (z itself may come back base64-encoded from Streamlit's cache)
    los = [float(t.zmin) for t in traces if t.zmin is not None]
    his = [float(t.zmax) for t in traces if t.zmax is not None]
    if not his:
        return out
    lo, hi = (min(los) if los else 0.0), max(his)
    for t in traces:
        t.update(zmin=lo, zmax=hi if hi > lo else lo + 1e-9, showscale=True)
        t.colorbar.update(title="TVD (shared scale)")
    return out


def _images(ds: Dataset) -> np.ndarray:
    if not ds.image_shape:
        raise DataError(f"{ds.name} is not an image dataset")
    shape = tuple(ds.image_shape)
    x = ds.features[:, : math.prod(shape)].reshape(-1, *shape)
    return np.moveaxis(x, 1, -1) if len(shape) == 3 else x  # (n, H, W) or (n, H, W, C)



def _mosaic(imgs: np.ndarray, ncols: int, pad: int = 1) -> np.ndarray:
    n, h, w = imgs.shape[:3]
    nrows = -(-n // ncols)
    out = np.ones((nrows * (h + pad) - pad, ncols * (w + pad) - pad, *imgs.shape[3:]), dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, ncols)
        out[r * (h + pad): r * (h + pad) + h, c * (w + pad): c * (w + pad) + w] = imgs[i]
    return out



def image_grid_figure(dataset: Dataset, n: int = 64, seed: int = 0, ncols: int | None = None):
    """A grid of `n` random images (white lines between them), as one plotly image."""
    import plotly.express as px

    imgs = _images(dataset)
    idx = np.sort(np.random.default_rng(seed).choice(len(imgs), min(n, len(imgs)), replace=False))
    ncols = ncols or max(1, int(math.ceil(math.sqrt(len(idx)))))
    mosaic = _mosaic(imgs[idx], ncols)
    kw = {"color_continuous_scale": "gray_r"} if mosaic.ndim == 2 else {}
    fig = px.imshow(mosaic if mosaic.ndim == 2 else (mosaic * 255).astype(np.uint8), zmin=0,
                    zmax=1 if mosaic.ndim == 2 else 255, **kw)
    fig.update_layout(title=f"{html_text(dataset.name)}: {len(idx)} samples", coloraxis_showscale=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig



def class_mean_images_figure(dataset: Dataset, ncols: int = 5):
    """The mean image of each class (what a class-conditional generator should get right first).

    Every class the dataset declares gets a panel: a class a generator never produced is a blank
    panel titled "… (none generated)" rather than silently missing from the grid."""
    import plotly.express as px

    if dataset.labels is None:
        raise DataError(f"{dataset.name} has no labels")
    imgs = _images(dataset)
    classes = np.arange(max(dataset.n_classes, int(dataset.labels.max()) + 1 if dataset.n else 0))
    present = np.isin(classes, dataset.labels)
    means = np.stack([imgs[dataset.labels == c].mean(0) if ok else np.zeros(imgs.shape[1:])
                      for c, ok in zip(classes, present)])
    names = [html_text(dataset.label_names[c] if dataset.label_names is not None else c)
             + ("" if ok else " (none generated)") for c, ok in zip(classes, present)]
    if means.ndim == 3:
        fig = px.imshow(means, facet_col=0, facet_col_wrap=min(ncols, len(classes)), zmin=0, zmax=1,
                        color_continuous_scale="gray_r")
    else:
        fig = px.imshow((means * 255).astype(np.uint8), facet_col=0, facet_col_wrap=min(ncols, len(classes)))
    for ann in fig.layout.annotations:
        ann.text = names[int(ann.text.split("=")[-1])]
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=f"{html_text(dataset.name)}: mean image per class", coloraxis_showscale=False)
    return fig
