"""The P3GM paper's comparison accountant: sequential composition of three separately analysed
parts.

Why keep a looser accountant: the Privacy page shows how much the RDP composition saves over the
analysis the paper compares against (docs/references.md#sequential-baseline: about 2.2 versus 1.0 on the MNIST config).

Groups (each analysed with the tool the paper uses for it, then ε's and δ's add up):
1. Gaussian records not named "dp-em…" (DP-PCA and its noisy mean): together one Gaussian
   mechanism (releases with noise multipliers σ_i are one Gaussian release of the stacked, rescaled
   statistics with σ = (Σ steps_i/σ_i²)^(−1/2); for the paper's ledger this is just σ_p), with
   ε = max(√(2 ln(1.25/δ_g))/σ, analytic ε) (Dwork & Roth Thm. A.1; the classic bound is only
   proven for ε ≤ 1, so where the exact analytic-Gaussian ε (Balle & Wang 2018) is larger we report
   that one instead — always a valid bound).
2. Gaussian records named "dp-em…": zCDP, ρ = Σ steps/(2σ²) (= T(2K+1)/(2σ_e²) for DP-EM),
   ε = ρ + 2√(ρ ln(1/δ_g)) (Bun & Steinke 2016, Prop. 1.3).
3. Subsampled-Gaussian records (DP-SGD): the moments accountant, i.e. RDP at integer orders
   2..256 with the classic conversion R(α) + ln(1/δ_g)/(α − 1) (Abadi et al. 2016).
δ split: δ/G to each of the G non-empty groups.
A ledger with held-out records (parallel composition, `rdp.sides`): the larger of its two sides.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from dpcore.errors import check_probability
from dpcore.privacy.accountants.rdp import _as_ledger, record_rdp, sides

_MA_ORDERS = np.arange(2.0, 257.0)


def analytic_gaussian_epsilon(sigma: float, delta: float) -> float:
    """Exact ε of one Gaussian mechanism, noise multiplier σ, at δ (Balle & Wang 2018, Thm. 8)."""
    def excess(e: float) -> float:
        return (norm.cdf(0.5 / sigma - e * sigma)
                - math.exp(e) * norm.cdf(-0.5 / sigma - e * sigma) - delta)
    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    return float(brentq(excess, 0.0, hi, xtol=1e-12))


def gaussian_mechanism_epsilon(sigma: float, delta: float) -> float:
    """The paper's per-release bound: classic √(2 ln(1.25/δ))/σ, never below the exact ε."""
    return max(math.sqrt(2.0 * math.log(1.25 / delta)) / sigma,
               analytic_gaussian_epsilon(sigma, delta))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ρ-zCDP → (ε, δ)-DP: ε = ρ + 2√(ρ ln(1/δ))."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def baseline_epsilon(ledger, delta: float) -> float:
    """ε of the ledger under the paper's sequential composition (see module docstring)."""
    delta = check_probability("delta", delta)
    return max(_sequential(side, delta) for side in sides(_as_ledger(ledger)))


def _sequential(led, delta: float) -> float:
    single = [r for r in led if r.mechanism == "gaussian" and not r.name.startswith("dp-em")
              and r.steps]
    em = [r for r in led if r.mechanism == "gaussian" and r.name.startswith("dp-em") and r.steps]
    sgd = [r for r in led if r.mechanism == "subsampled_gaussian" and r.steps]
    expo = [r for r in led if r.mechanism == "exponential" and r.steps]  # pure ε₀-DP, no δ
    groups = sum(bool(g) for g in (single, em, sgd))
    eps = float(sum(r.steps * r.epsilon0 for r in expo))
    if groups == 0:
        return eps
    d_group = delta / groups
    if single:
        sigma = sum(r.steps / r.noise_multiplier ** 2 for r in single) ** -0.5
        eps += gaussian_mechanism_epsilon(sigma, d_group)
    if em:
        eps += zcdp_epsilon(sum(r.steps / (2.0 * r.noise_multiplier ** 2) for r in em), d_group)
    if sgd:
        curve = sum(record_rdp(r, _MA_ORDERS) for r in sgd)
        eps += float(np.min(curve + math.log(1.0 / d_group) / (_MA_ORDERS - 1.0)))
    return float(eps)
