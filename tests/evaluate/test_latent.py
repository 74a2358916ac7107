import numpy as np
import pytest

from dpcore.errors import InvalidParameter
from dpcore.evaluate.latent import ellipse_points, pca_projection
from dpcore.figures.latent import latent_figure


def test_latent_figure_pca_with_prior_and_synthetic():
    rng = np.random.default_rng(0)
    means = np.array([[0.0, 0, 0, 0], [4.0, 4, 0, 0]])
    codes = np.concatenate([rng.normal(m, 0.5, (300, 4)) for m in means])
    labels = np.r_[np.zeros(300, int), np.ones(300, int)]
    prior = {"weights": [0.5, 0.5], "means": means, "variances": np.full((2, 4), 0.25)}
    fig = latent_figure(codes, labels, prior, synthetic_codes=codes[:50])
    names = [t.name for t in fig.data]
    assert names.count("prior components (2σ)") == 2 and "synthetic" in names and "real 0" in names
    # the ellipse of an isotropic component projects to a circle of radius 2σ around its mean
    m, w = pca_projection(codes)
    ring = np.c_[fig.data[3].x, fig.data[3].y]
    centre = (means[0] - m) @ w
    np.testing.assert_allclose(np.linalg.norm(ring - centre, axis=1), 2 * 0.5, rtol=1e-6)
    with pytest.raises(InvalidParameter):
        latent_figure(codes, method="tsne")


def test_ellipse_axes():
    pts = ellipse_points(np.zeros(2), np.diag([4.0, 1.0]), n_std=1.0, n=400)
    assert np.abs(pts[:, 0]).max() == pytest.approx(2.0, rel=1e-3)
    assert np.abs(pts[:, 1]).max() == pytest.approx(1.0, rel=1e-3)
