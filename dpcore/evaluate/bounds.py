"""f-DP trade-off bounds to draw next to membership-inference curves (docs/references.md#f-dp-and-gdp).

Why trade-off curves: an (ε, δ) pair is one line on the type-I/type-II plane, but a mechanism's
guarantee is a whole curve. A user should see the attack's empirical curve lying *above* the bound;
the tightest bound an accountant can give is the envelope over ε of the (ε, δ(ε)) lines.
All functions are vectorised over `alpha` (type-I error, the attacker's false-positive rate).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
from scipy.stats import norm

from dpcore.errors import InvalidParameter

APPROXIMATION = "approximation, not a bound"  # in the label of every curve that is not a guarantee
PLD_GRID = 1000  # ε points of the PLD envelope: within 1e-3 of a 20 000-point envelope (tests)


def _alpha(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if np.any((a < 0) | (a > 1)) or np.any(np.isnan(a)):
        raise InvalidParameter("alpha must lie in [0, 1]")
    return a


def tradeoff_eps_delta(alpha, eps: float, delta: float = 0.0) -> np.ndarray:
    """(ε, δ)-DP trade-off f(α) = max{0, 1 − δ − e^ε α, e^(−ε)(1 − δ − α)} (Dong, Roth & Su, Eq. 5).

    The smallest type-II error any test can reach at type-I error α against an (ε, δ)-DP mechanism.
    """
    a = _alpha(alpha)
    if eps < 0 or not (0 <= delta <= 1):
        raise InvalidParameter(f"need eps >= 0 and delta in [0, 1], got eps={eps!r}, delta={delta!r}")
    if np.isinf(eps):
        return np.zeros_like(a)
    return np.maximum.reduce([np.zeros_like(a), 1 - delta - np.exp(eps) * a,
                              np.exp(-eps) * (1 - delta - a)])


def tradeoff_gdp(alpha, mu: float) -> np.ndarray:
    """μ-GDP trade-off G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): testing N(0,1) against N(μ,1)."""
    a = _alpha(alpha)
    if mu < 0:
        raise InvalidParameter(f"mu must be >= 0, got {mu!r}")
    return norm.cdf(norm.ppf(1 - a) - mu)


def dpsgd_gdp_mu(p: float, T: int, sigma: float) -> float:
    """CLT approximation of DP-SGD as μ-GDP: μ = p·sqrt(T(e^(1/σ²) − 1)) (Bu et al., Thm. 5).

    An approximation for small p and large T, not a bound: label it so wherever it is drawn.
    """
    if not (0 < p <= 1) or T < 0 or sigma <= 0:
        raise InvalidParameter(f"need 0 < p <= 1, T >= 0, sigma > 0; got p={p!r}, T={T!r}, sigma={sigma!r}")
    return float(p * np.sqrt(T * np.expm1(1.0 / sigma**2)))


def gdp_delta(eps, mu: float):
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su, Cor. 2.13).

    The second term is evaluated in log space so that large ε does not overflow e^ε.
    """
    e = np.asarray(eps, dtype=np.float64)
    if mu <= 0:
        return np.zeros_like(e) if e.ndim else 0.0
    d = norm.cdf(-e / mu + mu / 2) - np.exp(e + norm.logcdf(-e / mu - mu / 2))
    d = np.clip(d, 0.0, 1.0)
    return d if d.ndim else float(d)


def envelope_tradeoff(alpha, delta_of_eps: Callable[[float], float] | None, eps_grid: Iterable[float],
                       deltas: Sequence[float] | None = None) -> np.ndarray:
    """Pointwise max over ε of f_{ε, δ(ε)}(α): the tightest curve an (ε, δ(ε)) profile implies.

    `delta_of_eps` is e.g. `lambda e: gdp_delta(e, mu)`; or pass `deltas` already computed for
    `eps_grid` (e.g. `accountant.pld_delta_curve(ledger, grid)`: one vectorised call).
    """
    a = _alpha(alpha)
    eps = np.asarray(list(eps_grid), dtype=np.float64)
    d = (np.asarray(deltas, dtype=np.float64) if deltas is not None
         else np.array([float(delta_of_eps(float(e))) for e in eps]))
    keep = np.isfinite(d) & (d < 1) & np.isfinite(eps)
    eps, d = eps[keep], np.maximum(d[keep], 0.0)
    out = np.zeros_like(a)
    for i in range(0, len(eps), 256):  # (ε chunk × α) at a time keeps memory small
        e, dd = eps[i:i + 256, None], d[i:i + 256, None]
        f = np.maximum(1 - dd - np.exp(e) * a[None], np.exp(-e) * (1 - dd - a[None]))
        out = np.maximum(out, f.max(axis=0))
    return out


def best_advantage(eps: float, delta: float = 0.0) -> float:
    """Largest TPR − FPR an attacker can reach against (ε, δ)-DP: (e^ε − 1 + 2δ)/(e^ε + 1)."""
    if np.isinf(eps):
        return 1.0
    return float(min(1.0, (np.expm1(eps) + 2 * delta) / (np.exp(eps) + 1)))


def eps_from_errors(alpha, beta, delta: float = 0.0):
    """Empirical ε lower bound from one test: max{log((1 − δ − β)/α), log((1 − δ − α)/β)}, ≥ 0.

    Inverts f_{ε,δ}: any (α, β) an attack reaches must lie on or above the curve (docs/references.md#monte-carlo-mia).
    """
    a = np.asarray(alpha, dtype=np.float64)
    b = np.asarray(beta, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.where((a > 0) & (1 - delta - b > 0), np.log(np.maximum(1 - delta - b, 1e-300) / a), -np.inf)
        e2 = np.where((b > 0) & (1 - delta - a > 0), np.log(np.maximum(1 - delta - a, 1e-300) / b), -np.inf)
        # α = 0 with β < 1 − δ (or vice versa) is only possible for ε = ∞.
        inf1 = (a == 0) & (1 - delta - b > 0)
        inf2 = (b == 0) & (1 - delta - a > 0)
    e = np.maximum(np.maximum(e1, e2), 0.0)
    e = np.where(inf1 | inf2, np.inf, e)
    return e if e.ndim else float(e)


def ledger_gdp_mu(ledger) -> float:
    """μ of a ledger under the GDP CLT (composition: μ² adds up). An approximation, not a bound.

    A full-batch Gaussian with noise multiplier σ, applied T times, is exactly (sqrt(T)/σ)-GDP;
    a Poisson-subsampled one uses `dpsgd_gdp_mu`.
    """
    total = 0.0
    for r in ledger:
        if r.steps == 0:
            continue
        if r.mechanism == "gaussian" or r.sampling_rate >= 1:
            mu = np.sqrt(r.steps) / r.noise_multiplier
        else:
            mu = dpsgd_gdp_mu(r.sampling_rate, r.steps, r.noise_multiplier)
        total += mu**2
    return float(np.sqrt(total))


def bound_curves(ledger, delta: float, alpha: Sequence[float] | None = None,
                 eps_grid: Sequence[float] | None = None) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Curves (label, α, β) for a ledger: the (ε, δ) line and the PLD envelope (bounds), and the GDP
    CLT curve, an approximation whose label says so (it can sit above the PLD envelope).

    The PLD envelope takes `PLD_GRID` ε points on [0, 4ε] from one vectorised δ(ε) call.
    Uses `dpcore.privacy.accountant` when it is importable (imported lazily so this module works
    without it); the GDP curve needs only the ledger. Curves a missing accountant cannot give are
    left out rather than guessed.
    """
    a = np.linspace(0, 1, 201) if alpha is None else _alpha(alpha)
    curves: list[tuple[str, np.ndarray, np.ndarray]] = []
    records = list(ledger)
    if not records:
        return curves
    try:
        from dpcore.privacy import accountant  # noqa: PLC0415 (lazy: may not exist yet)
    except ImportError:
        accountant = None
    eps = None
    if accountant is not None and hasattr(accountant, "epsilon"):
        eps = float(accountant.epsilon(ledger, delta))
        curves.append((f"(ε={eps:.2f}, δ={delta:g})-DP", a, tradeoff_eps_delta(a, eps, delta)))
    if getattr(ledger, "selection", None) is not None:  # PLD and GDP know no private selection
        return curves
    if accountant is not None and hasattr(accountant, "pld_delta"):
        hi = max(4 * (eps if eps and np.isfinite(eps) else 5.0), 1.0)
        grid = np.linspace(0.0, hi, PLD_GRID) if eps_grid is None else np.asarray(eps_grid, dtype=float)
        curves.append(("PLD envelope", a, envelope_tradeoff(
            a, None, grid, deltas=accountant.pld_delta_curve(ledger, grid))))
    mu = ledger_gdp_mu(records)
    curves.append((f"GDP curve, μ = {mu:.2f} (central-limit {APPROXIMATION})", a, tradeoff_gdp(a, mu)))
    return curves


