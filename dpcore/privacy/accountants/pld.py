"""Privacy-loss-distribution (PLD) accounting via dp-accounting: the tightest numbers we show.

Why both PLD and RDP: RDP is the reference (fast, analytic, used for calibration); the PLD gives a
near-exact δ(ε) curve, which the Privacy page needs for the f-DP envelope on the MIA plot
(docs/references.md#f-dp-and-gdp). dp-accounting's PLD is pessimistic: the privacy-loss values are rounded up to a
grid of spacing `value_discretization_interval`, so ε can only be over-estimated (by about the
interval per composition level, in practice < 0.5 % at 1e-3 on the MNIST config). 1e-3 keeps one
accountant below ~0.1 s; accountants are cached per ledger so a δ(ε) curve costs microseconds per
point after the first call.

All plain Gaussian records are merged into one Gaussian with σ = (Σ steps/σ_i²)^(−1/2): Gaussian
mechanisms compose exactly into a Gaussian (μ-GDP with μ² = Σ μ_i²), so this loses nothing.
Exponential-mechanism records (ε₀-DP) enter as the worst-case PLD of a pure ε₀-DP mechanism
(`from_privacy_parameters`), a valid but looser bound than the RDP accountant's ε₀²/8 zCDP.
A ledger with held-out records (parallel composition, `rdp.sides`) gets the larger δ(ε) of its
two sides at every ε: a neighbouring pair differs on one side only.
"""
from __future__ import annotations

import math
from functools import lru_cache

from dpcore.errors import InvalidParameter, check_positive, check_probability
from dpcore.privacy.accountants.rdp import _as_ledger, sides

VALUE_DISCRETIZATION = 1e-3
_EMPTY = (0.0, (), ())


def _side_keys(ledger) -> list[tuple]:
    """One accountant key per side of the split (one side without held-out records)."""
    led = _as_ledger(ledger)
    if getattr(led, "selection", None) is not None:
        from dpcore.errors import InvalidParameter

        raise InvalidParameter("the PLD accountant does not cover private selection; "
                               "the run's ε is the RDP accountant's")
    return [_ledger_key(side) for side in sides(led)]


def _ledger_key(led) -> tuple:
    inv_var = 0.0
    sub: dict[tuple[float, float], int] = {}
    expo: dict[float, int] = {}
    for r in led:
        if not r.steps:
            continue
        if r.mechanism == "exponential":
            expo[float(r.epsilon0)] = expo.get(float(r.epsilon0), 0) + int(r.steps)
        elif r.mechanism == "gaussian" or r.sampling_rate >= 1.0:
            inv_var += r.steps / r.noise_multiplier ** 2
        else:
            key = (float(r.sampling_rate), float(r.noise_multiplier))
            sub[key] = sub.get(key, 0) + int(r.steps)
    return (inv_var, tuple(sorted(sub.items())), tuple(sorted(expo.items())))


@lru_cache(maxsize=64)
def _accountant(key: tuple, interval: float):
    import dp_accounting
    from dp_accounting import dp_event
    from dp_accounting.pld import PLDAccountant

    inv_var, subs, expo = key
    events = []
    if inv_var > 0:
        events.append(dp_event.GaussianDpEvent(1.0 / math.sqrt(inv_var)))
    for (q, sigma), steps in subs:
        ev = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))
        events.append(dp_event.SelfComposedDpEvent(ev, steps))
    acc = PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                        value_discretization_interval=interval)
    if events:
        acc.compose(dp_event.ComposedDpEvent(events))
    if expo:
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pldlib

        for eps0, steps in expo:
            pure = pldlib.from_privacy_parameters(common.DifferentialPrivacyParameters(eps0, 0.0),
                                                  value_discretization_interval=interval)
            acc._pld = acc._pld.compose(pure.self_compose(steps))  # no DpEvent for pure ε-DP under add/remove
    return acc


def pld_epsilon(ledger, delta: float, *, interval: float = VALUE_DISCRETIZATION) -> float:
    """ε(δ) of the ledger from dp-accounting's PLD accountant (add/remove adjacency)."""
    delta = check_probability("delta", delta)
    return max(float(max(_accountant(key, interval).get_epsilon(delta), 0.0)) if key != _EMPTY else 0.0
               for key in _side_keys(ledger))


def pld_delta(ledger, epsilon: float, *, interval: float = VALUE_DISCRETIZATION) -> float:
    """δ(ε) of the ledger from the PLD accountant (the curve behind the f-DP envelope)."""
    epsilon = float(epsilon)
    if not epsilon >= 0:
        check_positive("epsilon", epsilon)
    return max(float(min(max(_accountant(key, interval).get_delta(epsilon), 0.0), 1.0)) if key != _EMPTY else 0.0
               for key in _side_keys(ledger))


def pld_delta_curve(ledger, epsilons, *, interval: float = VALUE_DISCRETIZATION):
    """δ(ε) at many ε in one vectorised call (the f-DP envelope needs thousands of points).

    Uses the accountant's composed PLD directly; falls back to one `pld_delta` per ε if
    dp-accounting ever stops exposing it.
    """
    import numpy as np

    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    if np.any(~(eps >= 0)):
        raise InvalidParameter("epsilons must be >= 0")
    out = np.zeros_like(eps)
    for key in _side_keys(ledger):
        if key == _EMPTY:
            continue
        pld = getattr(_accountant(key, interval), "_pld", None)
        if pld is None:
            return np.array([pld_delta(ledger, float(e), interval=interval) for e in eps])
        out = np.maximum(out, np.asarray(pld.get_delta_for_epsilon(eps), dtype=np.float64).reshape(eps.shape))
    return np.clip(out, 0.0, 1.0)
