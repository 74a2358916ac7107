"""The Gaussian mechanism and L2 row clipping: the two primitives every private release uses.

Why here and nowhere else: a release is private only if the noise really has the standard deviation
the ledger claims (σ_noise = noise_multiplier × sensitivity); keeping the one place that draws the
noise next to the one place that records it makes that checkable (tests/privacy/test_mechanisms.py
measures the empirical std against the claim).
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import InvalidParameter, check_positive
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.randomness import NoiseSource, noise_kind


def as_rng(rng) -> np.random.Generator:
    """A numpy Generator from a Generator, an int seed (recorded as "seeded" noise) or None (a
    secret stream from OS entropy, dpcore.privacy.randomness)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return NoiseSource.secret().numpy("unnamed")
    if isinstance(rng, (int, np.integer)):
        return np.random.default_rng(rng)
    raise InvalidParameter(f"rng must be a numpy Generator, an int seed or None, got {rng!r}")


def clip_rows(X, max_norm: float = 1.0) -> np.ndarray:
    """Scale every row of X down to L2 norm ≤ max_norm (rows already inside are unchanged).

    After clipping, adding or removing one row changes a sum of rows by at most max_norm in L2,
    which is the sensitivity every release downstream is calibrated to.
    """
    max_norm = check_positive("max_norm", max_norm)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        return clip_rows(X[None, :], max_norm)[0]
    if X.ndim != 2:
        raise InvalidParameter(f"X must be a 1-D or 2-D array, got shape {X.shape}")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scale = np.minimum(1.0, max_norm / np.maximum(norms, 1e-300))
    return X * scale


def gaussian_noise(shape, std: float, rng) -> np.ndarray:
    """i.i.d. N(0, std²) noise of the given shape (float64)."""
    std = float(std)
    if not std >= 0:
        raise InvalidParameter(f"std must be >= 0, got {std!r}")
    return as_rng(rng).normal(0.0, std, size=shape) if std > 0 else np.zeros(shape)


def gaussian_mechanism(value, sensitivity: float, noise_multiplier: float, rng, *,
                       ledger: PrivacyLedger | None = None, name: str | None = None) -> np.ndarray:
    """value + N(0, (noise_multiplier·sensitivity)²) per coordinate.

    `sensitivity` is the L2 sensitivity of `value` under add/remove-one adjacency (the caller's
    derivation); the release then satisfies RDP α/(2·noise_multiplier²). With `ledger` and `name`
    the release is recorded as MechanismRecord(name, "gaussian", noise_multiplier, sensitivity,
    noise = whether `rng` is secret or seeded).
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    noise_multiplier = check_positive("noise_multiplier", noise_multiplier)
    if ledger is not None and not name:
        raise InvalidParameter("name is required when recording into a ledger")
    value = np.asarray(value, dtype=np.float64)
    rng = as_rng(rng)
    noisy = value + gaussian_noise(value.shape, noise_multiplier * sensitivity, rng)
    if ledger is not None:
        assert name  # for the type checker: refused above
        ledger.add(MechanismRecord(name=name, mechanism="gaussian", noise_multiplier=noise_multiplier,
                                   sensitivity=sensitivity, noise=noise_kind(rng)))
    return noisy


def symmetric_gaussian_noise(dim: int, std: float, rng) -> np.ndarray:
    """A symmetric (dim, dim) matrix: i.i.d. N(0, std²) on and above the diagonal, mirrored below.

    Releasing S + E with this E is the Gaussian mechanism on the upper triangle of S (the lower
    triangle is a copy, i.e. post-processing), so the sensitivity is that of the upper triangle.
    """
    upper = np.triu(gaussian_noise((dim, dim), std, rng))
    return upper + np.triu(upper, 1).T
