"""Private selection of the best of K runs: the randomised number of trials of Papernot & Steinke
(ICLR 2022, "Hyperparameter tuning with Rényi differential privacy").

Why: picking the best configuration by its score on private data is itself a release. Running
the base algorithm Q (one random grid point, trained and scored) K times, with K random and
secret, and releasing only the best run costs little more than one run, in RDP:

- Theorem 2 (truncated negative binomial K ~ D_{η,γ}, η > −1, γ ∈ (0, 1)): if Q is (λ, ε)-RDP
  and (λ̂, ε̂)-RDP, the selection is (λ, ε')-RDP with
      ε' = ε + (1 + η)(1 − 1/λ̂) ε̂ + (1 + η) log(1/γ) / λ̂ + log E[K] / (λ − 1),
  for every λ̂ ≥ 1 (we take the smallest over the order grid and λ̂ = 1). Its pmf for k ≥ 1 is
  P[K = k] = (1 − γ)^k / (γ^(−η) − 1) · Π_{l<k} (l + η)/(l + 1) (η ≠ 0) and the logarithmic
  (1 − γ)^k / (k log(1/γ)) for η = 0; E[K] = η(1 − γ) / (γ(1 − γ^η)), resp. (1/γ − 1)/log(1/γ).
  η = 1 is the geometric distribution (Liu & Talwar's).
- Theorem 6 (Poisson K ~ Poisson(μ), K = 0 releases nothing): if Q is (λ, ε)-RDP and
  (ε̂, δ̂)-DP with e^ε̂ ≤ 1 + 1/(λ − 1), the selection is (λ, ε')-RDP with
      ε' = ε + μ δ̂ + log μ / (λ − 1).
  Here ε̂ = log(1 + 1/(λ − 1)) and δ̂ is Q's δ at ε̂ from its RDP curve (`delta_from_rdp`).

Everything here is a pure function of Q's RDP curve (`base_rdp` over `orders`); the ledger's
selection record (dpcore.privacy.ledger.SelectionRecord) says which theorem and parameters apply,
and `dpcore.privacy.accountants.rdp.rdp` calls `selection_rdp` on the base curve.
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.errors import InvalidParameter

NEGATIVE_BINOMIAL, POISSON = "negative_binomial", "poisson"
DISTRIBUTIONS = (NEGATIVE_BINOMIAL, POISSON)
MAX_TRIALS = 100_000  # a draw beyond this is refused (it would be a mistake in the parameters)


def check_parameters(distribution: str, eta: float | None = None, gamma: float | None = None,
                     mu: float | None = None) -> None:
    """One-line InvalidParameter for a bad distribution or parameter (checked before any work)."""
    if distribution == NEGATIVE_BINOMIAL:
        if eta is None or gamma is None or not (eta > -1) or not math.isfinite(eta):
            raise InvalidParameter(f"eta must be a finite number > -1, got {eta!r}")
        if not (0 < gamma < 1):
            raise InvalidParameter(f"gamma must lie in (0, 1), got {gamma!r}")
    elif distribution == POISSON:
        if mu is None or not (mu > 0) or not math.isfinite(mu):
            raise InvalidParameter(f"mu must be a positive finite number, got {mu!r}")
    else:
        raise InvalidParameter(f"distribution must be one of {DISTRIBUTIONS}, got {distribution!r}")


def expected_trials(distribution: str, eta: float | None = None, gamma: float | None = None,
                    mu: float | None = None) -> float:
    """E[K]: Papernot & Steinke §3 (truncated negative binomial, logarithmic at η = 0) or μ."""
    check_parameters(distribution, eta, gamma, mu)
    if distribution == POISSON:
        assert mu is not None  # for the type checker: check_parameters refused None
        return float(mu)
    assert eta is not None and gamma is not None
    if eta == 0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return eta * (1.0 - gamma) / (gamma * (1.0 - gamma ** eta))


def gamma_for_mean(eta: float, mean: float) -> float:
    """The γ that gives the truncated negative binomial D_{η,γ} mean E[K] = `mean` (> 1), by
    bisection (E[K] decreases in γ)."""
    if not (mean > 1):
        raise InvalidParameter(f"the expected number of trials must be > 1, got {mean!r}")
    lo, hi = 1e-12, 1.0 - 1e-12
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if expected_trials(NEGATIVE_BINOMIAL, eta, mid) > mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def tnb_pmf(k, eta: float, gamma: float) -> np.ndarray:
    """P[K = k] of the truncated negative binomial D_{η,γ} (Papernot & Steinke, Definition 1)."""
    check_parameters(NEGATIVE_BINOMIAL, eta, gamma)
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    top = int(k.max()) if k.size else 0
    p = np.zeros(max(top, 1) + 1)
    p[1] = (1 - gamma) / math.log(1 / gamma) if eta == 0 else (1 - gamma) * eta / (gamma ** -eta - 1)
    for j in range(1, top):  # P[K = j + 1] = P[K = j] (1 − γ)(j + η)/(j + 1)
        p[j + 1] = p[j] * (1 - gamma) * (j + eta) / (j + 1)
    return np.where(k >= 1, p[np.clip(k, 0, None)], 0.0)


def draw_trials(rng: np.random.Generator, distribution: str, eta: float | None = None,
                gamma: float | None = None, mu: float | None = None) -> int:
    """K from the distribution with `rng` (a secret stream: K must stay hidden), by inversion."""
    check_parameters(distribution, eta, gamma, mu)
    if distribution == POISSON:
        assert mu is not None  # for the type checker: check_parameters refused None
        return int(rng.poisson(mu))
    assert eta is not None and gamma is not None
    u, k = rng.random(), 1
    p = float(tnb_pmf(1, eta, gamma)[0])
    cum = p
    while cum < u and k < MAX_TRIALS:
        p *= (1 - gamma) * (k + eta) / (k + 1)
        k += 1
        cum += p
    return k


def _orders(orders) -> np.ndarray:
    a = np.asarray(orders, float)
    if np.any(a <= 1):
        raise InvalidParameter("RDP orders must be > 1")
    return a


def tnb_selection_rdp(base_rdp, orders, eta: float, gamma: float) -> np.ndarray:
    """ε'(λ) of Theorem 2 at each order λ of `orders`, from Q's RDP curve `base_rdp` there.

    λ̂ ranges over λ̂ = 1 (where the ε̂ term vanishes) and every order of the grid."""
    a, r = _orders(orders), np.asarray(base_rdp, float)
    scale = 1.0 + eta
    hat = scale * (1.0 - 1.0 / a) * r + scale * math.log(1.0 / gamma) / a
    best_hat = min(float(np.min(hat)), scale * math.log(1.0 / gamma))
    log_mean = math.log(expected_trials(NEGATIVE_BINOMIAL, eta, gamma))
    return r + best_hat + log_mean / (a - 1.0)


def delta_from_rdp(base_rdp, orders, eps) -> np.ndarray:
    """δ(ε) of an RDP curve by the tight conversion (Balle et al. 2020, Thm. 21) solved for δ:
    log δ = (α − 1)(R(α) − ε + log(1 − 1/α)) − log α, minimised over α; one δ per ε."""
    a, r = _orders(orders), np.asarray(base_rdp, float)
    eps = np.atleast_1d(np.asarray(eps, float))
    log_d = (a[None, :] - 1) * (r[None, :] - eps[:, None] + np.log1p(-1 / a[None, :])) - np.log(a[None, :])
    return np.minimum(np.exp(np.min(log_d, axis=1)), 1.0)


def poisson_selection_rdp(base_rdp, orders, mu: float) -> np.ndarray:
    """ε'(λ) of Theorem 6 at each order λ: R(λ) + μ δ̂(λ) + log μ / (λ − 1), with
    ε̂ = log(1 + 1/(λ − 1)) (the largest the theorem allows) and δ̂ = `delta_from_rdp` there."""
    a, r = _orders(orders), np.asarray(base_rdp, float)
    check_parameters(POISSON, mu=mu)
    eps_hat = np.log1p(1.0 / (a - 1.0))
    d_hat = delta_from_rdp(r, a, eps_hat)
    return r + mu * d_hat + math.log(mu) / (a - 1.0)


def selection_rdp(base_rdp, orders, distribution: str, eta: float | None = None,
                  gamma: float | None = None, mu: float | None = None) -> np.ndarray:
    """The selection's RDP curve from Q's: Theorem 2 or Theorem 6 by `distribution`."""
    check_parameters(distribution, eta, gamma, mu)
    if distribution == POISSON:
        assert mu is not None  # for the type checker: check_parameters refused None
        return poisson_selection_rdp(base_rdp, orders, mu)
    assert eta is not None and gamma is not None
    return tnb_selection_rdp(base_rdp, orders, eta, gamma)
