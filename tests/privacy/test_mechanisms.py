"""Clipping and the Gaussian mechanism: norms, recorded claims, and the noise actually added."""
import numpy as np
import pytest
from scipy.stats import chi2

from dpcore.errors import InvalidParameter
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.mechanisms import clip_rows, gaussian_mechanism, gaussian_noise, symmetric_gaussian_noise


def assert_std(samples, std, p=1e-4):
    """Two-sided chi-square test that zero-mean samples have standard deviation `std`."""
    x = np.asarray(samples, float).ravel()
    stat = np.sum(x ** 2) / std ** 2
    lo, hi = chi2.ppf(p / 2, x.size), chi2.ppf(1 - p / 2, x.size)
    assert lo < stat < hi, f"empirical std {np.sqrt(np.mean(x ** 2)):.5g} vs claimed {std:.5g}"


def test_clip_rows_bounds_norms_and_keeps_small_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 7)) * rng.uniform(0.01, 5, size=(500, 1))
    C = clip_rows(X, 1.5)
    norms = np.linalg.norm(C, axis=1)
    assert norms.max() <= 1.5 + 1e-12
    small = np.linalg.norm(X, axis=1) <= 1.5
    np.testing.assert_allclose(C[small], X[small])
    # clipped rows keep their direction and sit on the sphere
    big = ~small
    np.testing.assert_allclose(norms[big], 1.5)
    cos = np.sum(C[big] * X[big], 1) / (norms[big] * np.linalg.norm(X[big], axis=1))
    np.testing.assert_allclose(cos, 1.0)


def test_clip_rows_zero_rows_and_vectors():
    assert np.all(clip_rows(np.zeros((3, 4))) == 0)
    np.testing.assert_allclose(np.linalg.norm(clip_rows(np.full(9, 3.0))), 1.0)
    with pytest.raises(InvalidParameter, match="max_norm"):
        clip_rows(np.ones((2, 2)), 0)


def test_gaussian_noise_has_claimed_std_and_is_seeded():
    z = gaussian_noise((200, 100), 2.5, np.random.default_rng(1))
    assert z.shape == (200, 100)
    assert_std(z, 2.5)
    np.testing.assert_array_equal(z, gaussian_noise((200, 100), 2.5, np.random.default_rng(1)))
    assert np.all(gaussian_noise((3,), 0.0, 0) == 0)


def test_gaussian_mechanism_noise_std_is_multiplier_times_sensitivity():
    value = np.linspace(-3, 3, 40_000)
    out = gaussian_mechanism(value, sensitivity=0.5, noise_multiplier=3.0,
                             rng=np.random.default_rng(2))
    assert_std(out - value, 1.5)
    # a 10 % error in the std would be detected at this sample size
    x = out - value
    assert not chi2.ppf(1e-4, x.size) < np.sum(x ** 2) / 1.65 ** 2 < chi2.ppf(1 - 1e-4, x.size)


def test_gaussian_mechanism_records_into_ledger():
    led = PrivacyLedger()
    for _ in range(3):
        gaussian_mechanism(np.zeros(4), 2.0, 7.0, np.random.default_rng(0), ledger=led, name="q")
    assert led.records == [MechanismRecord("q", "gaussian", 7.0, steps=3, sensitivity=2.0, noise="seeded")]
    with pytest.raises(InvalidParameter, match="name"):
        gaussian_mechanism(np.zeros(2), 1.0, 1.0, 0, ledger=led)


@pytest.mark.parametrize("kw", [dict(sensitivity=0, noise_multiplier=1.0),
                                dict(sensitivity=1.0, noise_multiplier=-1),
                                dict(sensitivity=1.0, noise_multiplier=float("nan"))])
def test_gaussian_mechanism_rejects_bad_parameters(kw):
    with pytest.raises(InvalidParameter):
        gaussian_mechanism(np.zeros(2), rng=0, **kw)


def test_symmetric_noise_is_symmetric_with_claimed_std():
    E = symmetric_gaussian_noise(150, 0.7, np.random.default_rng(3))
    np.testing.assert_array_equal(E, E.T)
    iu = np.triu_indices(150)
    assert_std(E[iu], 0.7)  # diagonal and upper triangle: the released coordinates
