"""The latent figure: real codes in 2-D coloured by label, the prior's components, synthetic codes.

The projection and the components' ellipses are computed in `dpcore.evaluate.latent`; this module
only arranges them. UMAP is imported lazily (a cold import takes ~36 s).
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import InvalidParameter
from dpcore.evaluate.latent import ellipse_points, pca_projection, prior_covariances, subsample_index


def latent_figure(codes: np.ndarray, labels: np.ndarray | None = None, prior: dict | None = None,
                  synthetic_codes: np.ndarray | None = None, method: str = "pca", label_names=None,
                  seed: int = 0):
    """Real latent codes projected to 2-D (coloured by label), the prior's components, synthetic codes.

    prior: {"weights": (K,), "means": (K, d), "variances": (K, d) diagonal} (or "covariances":
    (K, d, d)); components are drawn as 2-sigma ellipses (PCA) or mean markers (UMAP), marker size
    by weight. At most 5 000 points per set are drawn (seeded subsample).
    """
    import plotly.graph_objects as go

    if method not in ("pca", "umap"):
        raise InvalidParameter(f"method must be 'pca' or 'umap', got {method!r}")
    codes = np.asarray(codes, dtype=np.float64)
    if codes.ndim != 2 or codes.shape[0] < 2:
        raise InvalidParameter("codes must be a 2-D array with at least two rows")
    rng = np.random.default_rng(seed)
    keep = subsample_index(codes.shape[0], rng)
    x = codes[keep]
    lab = None if labels is None else np.asarray(labels)[keep]
    syn = None
    if synthetic_codes is not None:
        s = np.asarray(synthetic_codes, dtype=np.float64)
        syn = s[subsample_index(s.shape[0], rng)]
    means = None if prior is None else np.asarray(prior["means"], dtype=np.float64)

    if method == "pca":
        m, w = pca_projection(codes)
        proj = lambda a: (a - m) @ w  # noqa: E731
        axes = ("PC 1", "PC 2")
    else:
        import umap  # noqa: PLC0415 (lazy: slow cold import)

        reducer = umap.UMAP(n_components=2, random_state=seed).fit(x)
        proj = reducer.transform
        axes = ("UMAP 1", "UMAP 2")
    xy = reducer.embedding_ if method == "umap" else proj(x)

    fig = go.Figure()
    if syn is not None:  # first, so it is drawn *under* the real points: × markers never hide them
        sxy = proj(syn)
        fig.add_trace(go.Scattergl(x=sxy[:, 0], y=sxy[:, 1], mode="markers", name="synthetic",
                                   marker=dict(size=5, symbol="x", color="#555555", opacity=0.35)))
    if lab is None:
        fig.add_trace(go.Scattergl(x=xy[:, 0], y=xy[:, 1], mode="markers", name="real",
                                   marker=dict(size=4, opacity=0.6)))
    else:
        from dpcore.text import html_text

        for c in np.unique(lab):
            sel = lab == c
            name = html_text(label_names[c] if label_names is not None else c)
            fig.add_trace(go.Scattergl(x=xy[sel, 0], y=xy[sel, 1], mode="markers", name=f"real {name}",
                                       marker=dict(size=4, opacity=0.6)))
    if means is not None:
        weights = np.asarray(prior.get("weights", np.full(len(means), 1 / len(means))), dtype=np.float64)
        mxy = proj(means)
        if method == "pca":
            covs = prior_covariances(prior, codes.shape[1])
            for k in range(len(means)):
                pts = ellipse_points(mxy[k], w.T @ covs[k] @ w)
                fig.add_trace(go.Scatter(x=pts[:, 0], y=pts[:, 1], mode="lines", showlegend=k == 0,
                                         legendgroup="prior", name="prior components (2σ)",
                                         line=dict(color="crimson", width=1 + 4 * weights[k])))
        fig.add_trace(go.Scatter(x=mxy[:, 0], y=mxy[:, 1], mode="markers", name="component means",
                                 text=[f"weight {v:.3f}" for v in weights],
                                 marker=dict(symbol="diamond", color="crimson",
                                             size=8 + 20 * weights / max(weights.max(), 1e-12),
                                             line=dict(color="white", width=1))))
    k = None if means is None else len(means)
    fig.update_layout(title=f"Latent space ({method.upper()})" + ("" if k is None else f", K = {k} prior components"),
                      xaxis_title=axes[0], yaxis_title=axes[1], meta={"components": k},
                      # outside the plot area, below it, wrapping: "real", "synthetic", "prior" never cut off
                      legend=dict(orientation="h", yanchor="top", y=-0.15, x=0, font=dict(size=11)),
                      margin=dict(l=50, r=10, t=50, b=10))
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True)
    return fig


def components_note(k: int | None) -> str:
    """The caption line on the prior's number of mixture components K (and what K = 1 means)."""
    if not k:
        return "The model has no mixture prior to draw."
    if k == 1:
        return ("K = 1: the prior is a single Gaussian, so it cannot follow separate clusters of the data. "
                "Try K > 1 (the `components` setting) to let the prior place one component per cluster.")
    return f"K = {k} mixture components; each red ellipse is one of them, thicker where its weight is larger."


UMAP_SECONDS_PER_10K = 65.0  # measured: UMAP on 10 000 latent codes (2 CPU cores), cold import included


def umap_seconds(n: int) -> float:
    """A rough time for a UMAP projection of n points, to warn before it starts."""
    return max(5.0, UMAP_SECONDS_PER_10K * n / 10_000)
