"""DP-EM: recovery of separated clusters, ledger records, sensitivities, the noise really added."""
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.stats import chi2, multivariate_normal

import dpcore.privacy.dp_em as dp_em
from dpcore.errors import InvalidParameter
from dpcore.privacy.accountant import encoder_records
from dpcore.privacy.dp_em import DPEM, em_statistics
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def clusters(k, seed, n=3000, d=4, std=0.05, radius=0.5):
    """k well-separated clusters on a circle of `radius` in the first two of d dimensions."""
    rng = np.random.default_rng(seed)
    ang = np.arange(k) * 2 * np.pi / k + rng.uniform(0, 2 * np.pi)
    mu = np.zeros((k, d))
    mu[:, 0], mu[:, 1] = radius * np.cos(ang), radius * np.sin(ang)
    idx = rng.integers(k, size=n)
    return mu[idx] + rng.normal(0, std, (n, d)), mu, np.bincount(idx, minlength=k) / n


def match_error(est, true):
    cost = np.linalg.norm(est[:, None] - true[None], axis=2)
    r, c = linear_sum_assignment(cost)
    return cost[r, c].max(), c


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_separated_means_at_low_noise(k, seed):
    Z, mu, freq = clusters(k, seed)
    em = DPEM(k, n_iter=20, noise_multiplier=1.0).fit(Z, PrivacyLedger(), seed)
    err, perm = match_error(em.means_, mu)
    assert err < 0.03
    np.testing.assert_allclose(em.weights_[np.argsort(perm)], freq, atol=0.02)
    # variance estimates carry noise of std σ_e·r²/n_k on top of sampling error
    np.testing.assert_allclose(em.variances_, 0.05 ** 2, atol=5 * 1.0 / (freq.min() * len(Z)))


def test_single_component_without_noise_is_the_sample_moments():
    rng = np.random.default_rng(0)
    Z = rng.normal(0.1, 0.2, size=(2000, 3))
    Z = Z / np.maximum(1, np.linalg.norm(Z, axis=1, keepdims=True))
    em = DPEM(1, n_iter=2, noise_multiplier=None).fit(Z, None, 0)
    np.testing.assert_allclose(em.means_[0], Z.mean(0))
    np.testing.assert_allclose(em.variances_[0], Z.var(0))
    np.testing.assert_allclose(em.weights_, [1.0])


@pytest.mark.parametrize("k", [1, 3])
def test_ledger_has_2k_plus_1_mechanisms_per_iteration(k):
    led = PrivacyLedger()
    DPEM(k, n_iter=7, noise_multiplier=50.0, code_radius=2.0).fit(
        clusters(3, 0)[0], led, None)
    assert led.records == [
        MechanismRecord("dp-em-weights", "gaussian", 50.0, steps=7, sensitivity=1.0),
        MechanismRecord("dp-em-means", "gaussian", 50.0, steps=7 * k, sensitivity=2.0),
        MechanismRecord("dp-em-variances", "gaussian", 50.0, steps=7 * k, sensitivity=4.0)]
    assert led.records == encoder_records(1.0, 50.0, 7, k, center="none", clip_norm=2.0)[1:]


def test_noise_actually_added_matches_the_ledger(monkeypatch):
    """Spy on every Gaussian release: (output − input)/(σ·Δ) must be N(0, 1), and the number
    of releases and their sensitivities must be exactly what the ledger records."""
    calls = []
    real = dp_em.gaussian_mechanism

    def spy(value, sensitivity, noise_multiplier, rng, **kw):
        out = real(value, sensitivity, noise_multiplier, rng, **kw)
        calls.append((np.asarray(value, float), out, sensitivity, noise_multiplier))
        return out

    monkeypatch.setattr(dp_em, "gaussian_mechanism", spy)
    led = PrivacyLedger()
    DPEM(2, n_iter=60, noise_multiplier=4.0, code_radius=0.7).fit(clusters(2, 5, d=6)[0], led, 3)
    assert len(calls) == sum(r.steps for r in led)
    claimed = sorted(r.sensitivity for r in led for _ in range(r.steps))
    assert sorted(c[2] for c in calls) == pytest.approx(claimed)
    (sigma,) = {r.noise_multiplier for r in led}  # what the accountant will be told
    z = np.concatenate([(out - val).ravel() / (sens * sigma) for val, out, sens, _ in calls])
    assert chi2.ppf(1e-4, z.size) < np.sum(z ** 2) < chi2.ppf(1 - 1e-4, z.size)


def test_statistics_sensitivity_under_add_remove():
    """Adding one row of norm ≤ r changes counts by ≤ 1, sums by ≤ r, second moments by ≤ r²."""
    rng = np.random.default_rng(4)
    r, d, k = 0.8, 5, 3
    Z = dp_em.clip_rows(rng.normal(0, 0.5, (300, d)), r)
    params = (np.array([0.2, 0.3, 0.5]), rng.normal(0, 0.3, (k, d)), rng.uniform(0.01, 0.2, (k, d)))
    base = em_statistics(Z, *params)
    extra = dp_em.clip_rows(rng.normal(0, 3, (200, d)), r)  # mostly on the sphere: worst case
    worst = np.zeros(3)
    for z in extra:
        new = em_statistics(np.vstack([Z, z]), *params)
        worst = np.maximum(worst, [np.linalg.norm(new[0] - base[0])]
                           + [np.linalg.norm(new[i] - base[i], axis=1).max() for i in (1, 2)])
    assert np.all(worst <= np.array([1.0, r, r * r]) + 1e-12)
    assert worst[1] > 0.5 * r  # the bound is not vacuous


def test_robust_to_empty_components_and_heavy_noise():
    Z = clusters(1, 0, n=400)[0]
    em = DPEM(5, n_iter=10, noise_multiplier=200.0).fit(Z, PrivacyLedger(), 1)
    assert np.isfinite(em.means_).all() and np.isfinite(em.variances_).all()
    assert em.weights_.min() >= 1e-3 * 0.99 and em.weights_.sum() == pytest.approx(1.0)
    assert np.linalg.norm(em.means_, axis=1).max() <= 1.0 + 1e-12
    assert em.variances_.min() > 0 and em.variances_.max() <= 1.0
    assert np.isfinite(em.log_prob(Z)).all()


def test_codes_are_clipped_to_the_radius():
    Z = clusters(2, 0)[0] * 10  # norms around 5
    em = DPEM(2, n_iter=5, noise_multiplier=1.0, code_radius=1.0).fit(Z, PrivacyLedger(), 0)
    assert np.linalg.norm(em.means_, axis=1).max() <= 1.0 + 1e-12
    assert np.linalg.norm(em.clip(Z), axis=1).max() <= 1.0 + 1e-12


def test_sample_and_log_prob_agree_with_the_mixture():
    Z, _, _ = clusters(3, 1)
    em = DPEM(3, n_iter=15, noise_multiplier=1.0).fit(Z, PrivacyLedger(), 0)
    S, idx = em.sample(30_000, np.random.default_rng(9))
    assert S.shape == (30_000, 4) and idx.shape == (30_000,)
    np.testing.assert_allclose(np.bincount(idx, minlength=3) / 30_000, em.weights_, atol=0.015)
    for j in range(3):
        np.testing.assert_allclose(S[idx == j].mean(0), em.means_[j], atol=0.01)
    pts = Z[:50]
    dens = sum(w * multivariate_normal(m, np.diag(v)).pdf(pts)
               for w, m, v in zip(em.weights_, em.means_, em.variances_))
    np.testing.assert_allclose(em.log_prob(pts), np.log(dens), rtol=1e-9)


def test_bad_arguments():
    with pytest.raises(InvalidParameter, match="n_components"):
        DPEM(0)
    with pytest.raises(InvalidParameter, match="noise_multiplier"):
        DPEM(2, noise_multiplier=0)
    with pytest.raises(InvalidParameter, match="code_radius"):
        DPEM(2, code_radius=-1)
    with pytest.raises(InvalidParameter, match="init"):
        DPEM(2, init="kmeans")
    with pytest.raises(InvalidParameter, match="ledger"):
        DPEM(2).fit(np.zeros((5, 2)), None, 0)
    with pytest.raises(InvalidParameter, match="fit"):
        DPEM(2).sample(3, 0)
