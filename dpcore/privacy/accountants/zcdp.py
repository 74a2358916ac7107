"""From a total budget (ε, δ) to a zCDP budget ρ for marginal-based models (AIM, MST).

Why: AIM and MST spend their budget as ρ-zCDP (Gaussian measurements cost 1/(2σ²) each, an
exponential-mechanism selection at ε₀ costs ε₀²/8), i.e. an RDP curve R(α) = α·ρ. The run's ε is
the accountant's tight conversion of `spent` (noisy row count, DP bounds) plus the model's records,
so ρ is the largest value with min_α [R_spent(α) + α·ρ + offset(α)] ≤ ε. That is a closed form on
the accountant's order grid: ρ = max_α (ε − offset(α) − R_spent(α)) / α. A relative margin of 1e-9
keeps float round-off in the models' running sums from crossing the target.
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.errors import InvalidParameter, check_probability
from dpcore.privacy.accountants.rdp import DEFAULT_ORDERS, conversion_offset, rdp
from dpcore.privacy.ledger import PrivacyLedger

MARGIN = 1e-9


def calibrate_rho(epsilon: float, delta: float, spent: PrivacyLedger | None = None) -> float:
    """The largest ρ whose ρ-zCDP, composed with `spent`, has the accountant's ε ≤ `epsilon`."""
    epsilon = float(epsilon)
    if not (0 < epsilon < math.inf):
        raise InvalidParameter(f"epsilon must be finite and > 0 for a zCDP budget, got {epsilon!r}")
    delta = check_probability("delta", delta)
    orders = np.asarray(DEFAULT_ORDERS, float)
    r_spent = rdp(spent, orders) if spent is not None and len(spent) else np.zeros_like(orders)
    rho = float(np.max((epsilon - conversion_offset(orders, delta) - r_spent) / orders))
    if not rho > 0:
        raise InvalidParameter(f"epsilon {epsilon:g} is already spent by the preprocessing and the noisy "
                               "row count; raise epsilon or spend less on the bounds")
    return rho * (1.0 - MARGIN)
