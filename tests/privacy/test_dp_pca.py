"""DP-PCA: subspace recovery, eigen order, ledger records and the noise a release really carries."""
import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.stats import chi2

from dpcore.errors import DataError, InvalidParameter
from dpcore.privacy.accountant import encoder_records
from dpcore.privacy.dp_pca import DPPCA, MEAN_NOISE_RATIO
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def planted(n=4000, d=20, k=3, seed=0, offset=0.3):
    """Rows = offset + strong signal in a random k-dim subspace + weak isotropic noise."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, k)))[0]
    scales = np.array([3.0, 2.0, 1.5])[:k]
    X = offset + (rng.normal(size=(n, k)) * scales) @ basis.T + 0.1 * rng.normal(size=(n, d))
    return X, basis


@pytest.mark.parametrize("center", ["noisy", "public", "none"])
def test_recovers_planted_subspace_at_low_noise(center):
    # "none" is an uncentred second moment: it finds the planted subspace only for centred data
    X, basis = planted(offset=0.0 if center == "none" else 0.3)
    led = PrivacyLedger()
    # clip_norm large enough that clipping never bites: the subspace is the planted one
    # (noise std on S is σ·c² = 40 against eigenvalues N·s² ≥ 9000)
    pca = DPPCA(3, noise_multiplier=0.1, center=center, public_center=0.3,
                clip_norm=20.0).fit(X, led, np.random.default_rng(1))
    angles = subspace_angles(pca.components_, basis)
    assert angles.max() < 0.05
    np.testing.assert_allclose(pca.components_.T @ pca.components_, np.eye(3), atol=1e-10)


def test_unit_clipping_still_finds_subspace():
    X, basis = planted(d=30)
    pca = DPPCA(3, noise_multiplier=2.0, center="noisy").fit(X, PrivacyLedger(), 2)
    assert subspace_angles(pca.components_, basis).max() < 0.15


def test_high_noise_fails_gracefully():
    X, basis = planted(n=200)
    pca = DPPCA(3, noise_multiplier=1e4).fit(X, PrivacyLedger(), 3)
    assert np.isfinite(pca.components_).all() and np.isfinite(pca.mean_).all()
    np.testing.assert_allclose(pca.components_.T @ pca.components_, np.eye(3), atol=1e-10)
    assert np.all(pca.explained_variance_ >= 0)
    assert subspace_angles(pca.components_, basis).max() > 0.5  # noise wins, as it should
    Z = pca.transform(X)
    assert np.isfinite(Z).all() and np.linalg.norm(Z, axis=1).max() <= 1 + 1e-9


def test_eigenvalues_sorted_descending_and_match_exact_pca_without_noise():
    X, _ = planted(d=12)
    pca = DPPCA(12, noise_multiplier=None, center="none", clip_norm=1e6).fit(X, None, 0)
    assert np.all(np.diff(pca.explained_variance_) <= 0)
    exact = np.sort(np.linalg.eigvalsh(X.T @ X))[::-1] / len(X)
    np.testing.assert_allclose(pca.explained_variance_, exact, rtol=1e-10)
    # roundtrip through all components is the identity when nothing is clipped
    np.testing.assert_allclose(pca.inverse_transform(pca.transform(X)), X, atol=1e-9)


def test_covariance_noise_has_the_std_the_ledger_claims():
    """Zero data, no centring: S̃ = E, so Σ λ² = ‖E‖_F², with E[‖E‖_F²] = s²·D² (s = σ·c²)."""
    d, sigma, c, reps = 40, 3.0, 2.0, 30
    led = PrivacyLedger()
    stats = []
    for i in range(reps):
        pca = DPPCA(d, noise_multiplier=sigma, center="none", clip_norm=c).fit(
            np.zeros((5, d)), led, np.random.default_rng(100 + i))
        stats.append(np.sum(pca.noisy_eigenvalues_ ** 2))
    rec = led.records[0]
    s = rec.noise_multiplier * rec.sensitivity
    assert rec.sensitivity == c * c and led.records[0].steps == reps
    # ‖E‖_F²/s² = Σ_diag χ²₁ + 2 Σ_off χ²₁: mean D², variance 2D + 4·D(D−1)
    mean, var = d * d, reps * (2 * d + 4 * d * (d - 1))
    z = (np.sum(stats) / s ** 2 - reps * mean) / np.sqrt(var)
    assert abs(z) < 4.5, z


@pytest.mark.parametrize("mean_clip", [None, 7.0])
def test_mean_noise_has_the_std_the_ledger_claims(mean_clip):
    n, d, c, sigma_m = 50, 300, 2.0, 3.0
    led = PrivacyLedger()
    pca = DPPCA(2, noise_multiplier=5.0, center="noisy", mean_noise_multiplier=sigma_m,
                clip_norm=c, mean_clip_norm=mean_clip).fit(np.zeros((n, d)), led,
                                                          np.random.default_rng(7))
    rec = led.records[0]
    assert rec.name == "dp-pca-mean" and rec.sensitivity == (mean_clip or c)
    x = pca.mean_ * n / (rec.noise_multiplier * rec.sensitivity)
    stat = np.sum(x ** 2)
    assert chi2.ppf(1e-4, d) < stat < chi2.ppf(1 - 1e-4, d)


@pytest.mark.parametrize("center, expected", [
    ("noisy", [MechanismRecord("dp-pca-mean", "gaussian", 5.0 * MEAN_NOISE_RATIO),
               MechanismRecord("dp-pca", "gaussian", 5.0)]),
    ("public", [MechanismRecord("dp-pca", "gaussian", 5.0)]),
    ("none", [MechanismRecord("dp-pca", "gaussian", 5.0)]),
])
def test_ledger_records_per_centre(center, expected):
    led = PrivacyLedger()
    DPPCA(2, 5.0, center=center, public_center=0.5).fit(np.random.rand(30, 6), led, None)
    assert led.records == expected
    # and it is what the accountant predicts for a P3GM run
    assert led.records == encoder_records(5.0, 100.0, 1, 1, center=center)[:len(expected)]


def test_explicit_mean_multiplier_and_clip_norm_in_records():
    led = PrivacyLedger()
    DPPCA(2, 4.0, mean_noise_multiplier=9.0, clip_norm=3.0).fit(np.random.rand(30, 6), led, None)
    assert led.records == [MechanismRecord("dp-pca-mean", "gaussian", 9.0, sensitivity=3.0),
                           MechanismRecord("dp-pca", "gaussian", 4.0, sensitivity=9.0)]


def test_codes_are_inside_the_clip_ball_and_seeded_fit_is_deterministic():
    X, _ = planted(d=15)
    a = DPPCA(4, 5.0, clip_norm=1.5).fit(X, PrivacyLedger(), 11)
    b = DPPCA(4, 5.0, clip_norm=1.5).fit(X, PrivacyLedger(), 11)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert np.linalg.norm(a.transform(X * 100), axis=1).max() <= 1.5 + 1e-9


def test_bad_arguments():
    X = np.random.rand(10, 5)
    with pytest.raises(InvalidParameter, match="pca_dim"):
        DPPCA(6).fit(X, PrivacyLedger(), 0)
    with pytest.raises(InvalidParameter, match="pca_dim"):
        DPPCA(0)
    with pytest.raises(InvalidParameter, match="public_center"):
        DPPCA(2, center="public")
    with pytest.raises(InvalidParameter, match="public_center"):
        DPPCA(2, center="public", public_center=np.ones(3)).fit(X, PrivacyLedger(), 0)
    with pytest.raises(InvalidParameter, match="center"):
        DPPCA(2, center="median")
    with pytest.raises(InvalidParameter, match="ledger"):
        DPPCA(2).fit(X, None, 0)
    with pytest.raises(DataError):
        DPPCA(2).fit(np.array([[1.0, np.nan, 0, 0, 0]]), PrivacyLedger(), 0)
    with pytest.raises(InvalidParameter, match="fit"):
        DPPCA(2).transform(X)


def test_raw_centring_keeps_rows_at_the_covariance_clip():
    """mean_clip_norm ≥ the row norms: rows are centred first, then clipped to c, so each centred
    row has norm c (full signal for the sensitivity c²); the mean is the plain mean."""
    rng = np.random.default_rng(3)
    X = 0.5 + 0.3 * rng.standard_normal((400, 20))
    R = float(np.linalg.norm(X, axis=1).max()) + 1.0
    pca = DPPCA(3, noise_multiplier=None, center="noisy", mean_clip_norm=R).fit(X, None, 0)
    np.testing.assert_allclose(pca.mean_, X.mean(0), atol=1e-12)
    norms = np.linalg.norm(pca._rows(X), axis=1)
    np.testing.assert_allclose(norms, np.minimum(1.0, np.linalg.norm(X - X.mean(0), axis=1)), atol=1e-9)
    old = DPPCA(3, noise_multiplier=None, center="noisy").fit(X, None, 0)  # normalise, then centre
    assert np.linalg.norm(old._rows(X), axis=1).mean() < 0.6 * norms.mean()
