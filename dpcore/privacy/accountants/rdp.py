"""Rényi-DP of a ledger and its conversion to (ε, δ): the workbench's reference accountant.

Why our own vectorised code instead of calling Opacus per record: calibration evaluates the
subsampled-Gaussian RDP for hundreds of (σ, α) pairs, and Opacus loops in Python (10–40 ms per
curve). The maths is the same and `tests/privacy/test_accountant.py` checks parity with Opacus's
`compute_rdp` and dp-accounting's `RdpAccountant`.

Mechanisms (add/remove adjacency, noise multiplier σ = noise std / L2 sensitivity):
- Gaussian: R(α) = α / (2σ²) per step (Mironov 2017, Prop. 7).
- Poisson-subsampled Gaussian, rate q: R(α) = log A_α / (α − 1) per step with
  A_α = E_{z~N(0,σ²)} [(1 − q + q·exp((2z − 1)/(2σ²)))^α] (Mironov, Talwar & Zhang 2019, §3.3).
  Integer α: the exact binomial expansion Σ_k C(α,k)(1−q)^{α−k} q^k exp((k²−k)/(2σ²)).
  Fractional α: the same expectation by the trapezoid rule on a uniform grid. The integrand is
  analytic in the strip |Im z| < πσ² and Gaussian-like with width σ, so with spacing
  h = min(σ/8, σ²/4) the quadrature error is below e^−60 relative (exponential convergence).
- Exponential mechanism at ε₀ ("exponential" records): ε₀-bounded range, hence ε₀²/8-zCDP
  (Cesar & Rogers 2021, Lemma 3.2): R(α) = α·ε₀²/8 per step.
Conversion: ε = min_α [R(α) + log(1 − 1/α) − (log δ + log α)/(α − 1)] (Balle et al. 2020,
Thm. 21; docs/references.md#tight-conversion), versus the classic R(α) + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln

from dpcore.errors import InvalidParameter, check_probability
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger, SelectionRecord

# Fine steps where the optimum sits for large ε (α near 1–8), integers up to 64 (ε ≈ 0.3–3 at
# δ = 1e-5), then a coarse tail for very small ε. 1.05 is the smallest order, 256 the largest.
DEFAULT_ORDERS: np.ndarray = np.unique(np.concatenate([
    np.arange(1.05, 2.0, 0.05), np.arange(2.0, 8.0, 0.25), np.arange(8.0, 16.0, 0.5),
    np.arange(16, 65, 1.0), np.arange(68, 129, 4.0), np.arange(144, 257, 16.0),
]).round(6))

_MAX_QUAD_POINTS = 40_000


def _lse(t: np.ndarray) -> np.ndarray:
    """log Σ exp along the last axis (rows may contain -inf; no row is all -inf here)."""
    m = np.max(t, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(t - m), axis=-1)) + m[..., 0]


@lru_cache(maxsize=1)
def _log_binom_table(max_order: int) -> np.ndarray:
    """log C(a, k) for 0 ≤ k ≤ a ≤ max_order; -inf above the diagonal."""
    a = np.arange(max_order + 1, dtype=float)[:, None]
    k = np.arange(max_order + 1, dtype=float)[None, :]
    with np.errstate(invalid="ignore"):
        t = gammaln(a + 1) - gammaln(k + 1) - gammaln(np.maximum(a - k, 0) + 1)
    t = np.where(k <= a, t, -np.inf)
    t.setflags(write=False)
    return t


def _log_a_int(q: float, sigma: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """log A_α for integer α ≥ 2 (exact binomial sum), elementwise over (σ, α)."""
    a = np.round(alpha).astype(np.int64)
    top = int(a.max())
    table = _log_binom_table(max(256, top))
    if sigma.size * (top + 1) > 2_000_000:  # bound the temporaries
        step = max(1, 2_000_000 // (top + 1))
        return np.concatenate([_log_a_int(q, sigma[i:i + step], alpha[i:i + step])
                               for i in range(0, sigma.size, step)])
    k = np.arange(top + 1, dtype=float)
    base = k * (np.log(q) - np.log1p(-q))  # k log q + (a − k) log(1 − q) − a log(1 − q)
    quad = (k * k - k)[None, :] / (2.0 * sigma[:, None] ** 2)
    terms = table[a, :top + 1] + base[None, :] + quad
    return _lse(terms) + a * np.log1p(-q)


def _log_a_frac(q: float, sigma: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """log A_α for any α > 1 by trapezoid quadrature of the moment integral, elementwise."""
    if sigma.size > 256:  # bound the (elements × grid points) temporaries
        return np.concatenate([_log_a_frac(q, sigma[i:i + 256], alpha[i:i + 256])
                               for i in range(0, sigma.size, 256)])
    lo = -(12.0 * sigma + 1.0)
    hi = alpha + 12.0 * sigma + 1.0
    h_req = np.minimum(sigma / 8.0, sigma ** 2 / 4.0)
    m = int(min(_MAX_QUAD_POINTS, max(64, np.ceil(((hi - lo) / h_req).max()) + 1)))
    t = np.linspace(0.0, 1.0, m)
    z = lo[:, None] + (hi - lo)[:, None] * t[None, :]
    s2 = (sigma ** 2)[:, None]
    log_phi = -z * z / (2 * s2) - 0.5 * np.log(2 * np.pi * s2)
    log_mix = np.logaddexp(np.log1p(-q), np.log(q) + (2 * z - 1) / (2 * s2))
    g = log_phi + alpha[:, None] * log_mix
    g[:, 0] -= np.log(2.0)  # trapezoid end weights 1/2
    g[:, -1] -= np.log(2.0)
    return _lse(g) + np.log((hi - lo) / (m - 1))


def subsampled_gaussian_rdp(q: float, sigma, orders) -> np.ndarray:
    """Per-step RDP of the Poisson-subsampled Gaussian, elementwise over broadcast (σ, α).

    q = 1 reduces to the plain Gaussian α/(2σ²). Returns an array of the broadcast shape.
    """
    sigma, orders = np.broadcast_arrays(np.asarray(sigma, float), np.asarray(orders, float))
    shape = sigma.shape
    sigma, orders = sigma.ravel(), orders.ravel()
    if np.any(orders <= 1):
        raise InvalidParameter("RDP orders must be > 1")
    if q >= 1.0:
        return (orders / (2 * sigma ** 2)).reshape(shape)
    out = np.empty_like(orders)
    is_int = np.isclose(orders, np.round(orders)) & (orders >= 2)
    if is_int.any():
        out[is_int] = _log_a_int(q, sigma[is_int], np.round(orders[is_int]))
    if (~is_int).any():
        out[~is_int] = _log_a_frac(q, sigma[~is_int], orders[~is_int])
    out = out / (orders - 1)
    return np.maximum(out, 0.0).reshape(shape)


@lru_cache(maxsize=512)
def _cached_step_rdp(q: float, sigma: float, orders: tuple) -> np.ndarray:
    r = subsampled_gaussian_rdp(q, sigma, np.asarray(orders))
    r.setflags(write=False)
    return r


def record_rdp(record: MechanismRecord, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP curve of one ledger record (all its steps) at `orders`."""
    orders = np.asarray(orders, float)
    if record.steps == 0:
        return np.zeros_like(orders)
    if record.mechanism == "exponential":
        assert record.epsilon0 is not None  # for the type checker: MechanismRecord requires it here
        return record.steps * orders * record.epsilon0 ** 2 / 8.0
    if record.mechanism == "gaussian" or record.sampling_rate >= 1.0:
        return record.steps * orders / (2.0 * record.noise_multiplier ** 2)
    per_step = _cached_step_rdp(float(record.sampling_rate), float(record.noise_multiplier),
                                tuple(orders.tolist()))
    return record.steps * per_step


def _as_ledger(ledger) -> PrivacyLedger:
    if isinstance(ledger, PrivacyLedger):
        return ledger
    return PrivacyLedger.from_list(list(ledger))


def sides(ledger) -> list[list[MechanismRecord]]:
    """The records each side of the file's split answers for (parallel composition).

    Under add/remove of one row, the row is a training row or a held-out row, never both, when the
    split decides each row on its own (a keyed split, dpcore.data.split). Records that read every
    row ("all") count on both sides; training records (partition None) and held-out records
    ("heldout") on their own side only. A ledger without held-out records has one side: every
    record (plain sequential composition). A held-out score on a split that does not keep rows
    apart (a built-in's seeded split) is recorded with partition None and so composes sequentially.
    """
    led = list(_as_ledger(ledger))
    if not any(r.partition == "heldout" for r in led):
        return [led]
    return [[r for r in led if r.partition != "heldout"], [r for r in led if r.partition is not None]]


def _records_rdp(records, orders: np.ndarray) -> np.ndarray:
    total = np.zeros_like(orders)
    for rec in records:
        total = total + record_rdp(rec, orders)
    return total


def rdp(ledger, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP of the whole ledger at `orders`: the sum of the records' curves (RDP composition), or
    with held-out records the pointwise maximum over the split's two `sides` (parallel composition:
    a neighbouring pair differs on one side only, so its Rényi divergence is that side's).

    A ledger closed by private selection (`ledger.selection`): the base algorithm's curve is the
    pointwise maximum of its own records' curve and the record's bound on the other grid points
    (`SelectionRecord.base_curve`: a random grid point is a mixture, and Rényi divergence is jointly
    quasi-convex), then the selection theorem applies (dpcore.privacy.accountants.selection)."""
    orders = np.asarray(orders, float)
    led = _as_ledger(ledger)
    total = np.max([_records_rdp(side, orders) for side in sides(led)], axis=0)
    sel = getattr(led, "selection", None)
    if sel is not None:
        from dpcore.privacy.accountants.selection import selection_rdp

        total = np.maximum(total, sel.base_curve(orders))
        total = selection_rdp(total, orders, sel.distribution, sel.eta, sel.gamma, sel.mu)
    return total


def _check_delta(delta: float) -> float:
    return check_probability("delta", delta)


def conversion_offset(orders, delta: float, *, tight: bool = True) -> np.ndarray:
    """ε(α) − R(α): what the RDP→DP conversion adds at each order (see module docstring)."""
    a = np.asarray(orders, float)
    if tight:
        return np.log1p(-1.0 / a) - (np.log(delta) + np.log(a)) / (a - 1.0)
    return -np.log(delta) / (a - 1.0)


def epsilon_from_rdp(rdp_curve, orders, delta: float, *, tight: bool = True) -> tuple[float, float]:
    """(ε, optimal α) from an RDP curve; ε is clipped at 0 (RDP 0 means no privacy loss)."""
    delta = _check_delta(delta)
    eps = np.asarray(rdp_curve, float) + conversion_offset(orders, delta, tight=tight)
    if np.all(np.isnan(eps)):
        return float("inf"), float("nan")
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(np.asarray(orders)[i])


def epsilon_and_order(ledger, delta: float, orders=DEFAULT_ORDERS) -> tuple[float, float]:
    """Tight RDP ε of a ledger and the order α that attains it; (0, nan) for an empty ledger."""
    led = _as_ledger(ledger)
    _check_delta(delta)
    if not any(r.steps for r in led) and getattr(led, "selection", None) is None:
        return 0.0, float("nan")
    return epsilon_from_rdp(rdp(led, orders), orders, delta, tight=True)


def epsilon(ledger, delta: float, orders=DEFAULT_ORDERS) -> float:
    """Tight RDP→(ε, δ) conversion of the ledger's composed RDP (the number shown to users)."""
    return epsilon_and_order(ledger, delta, orders)[0]


def classic_epsilon(ledger, delta: float, orders=DEFAULT_ORDERS) -> float:
    """ε by the classic conversion R(α) + log(1/δ)/(α − 1) (looser; for comparison only)."""
    led = _as_ledger(ledger)
    _check_delta(delta)
    if not any(r.steps for r in led) and getattr(led, "selection", None) is None:
        return 0.0
    return epsilon_from_rdp(rdp(led, orders), orders, delta, tight=False)[0]


def selection_from_dict(d: dict) -> SelectionRecord:
    """A SelectionRecord from JSON, either form. The old one (saved before base_rdp existed: the
    candidates were whole ledgers and it held K) gets Q's bound as the pointwise maximum of those
    ledgers' RDP curves, which is accountant work, so it is read here and not in the ledger."""
    cands = d.get("candidates", []) if isinstance(d, dict) else None
    if isinstance(cands, list) and cands and all(isinstance(c, list) for c in cands):
        curve = np.zeros(len(DEFAULT_ORDERS))
        for c in cands:
            curve = np.maximum(curve, rdp(PrivacyLedger.from_list(c), DEFAULT_ORDERS))
        d = {**d, "candidates": [], "base_rdp": curve.tolist(), "orders": list(DEFAULT_ORDERS)}
    return SelectionRecord.from_dict(d)
