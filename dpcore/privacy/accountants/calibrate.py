"""From a total budget (ε, δ) to noise multipliers, and the ledger a P3GM run will produce.

Why calibrate here: the rule "ε is computed, never typed in" (docs/architecture.md): a user picks (ε, δ) and the
encoder share, this module picks σ_p, σ_m, σ_e, σ_s, and the ε we report is the accountant's ε of
the resulting ledger (never the target).

Encoder share (docs/references.md#p3gm: "the encoder (PCA+EM) share of the RDP budget"), precisely: let α* be
the order at which the tight conversion attains the run's ε. Then the encoder's RDP (DP-PCA, its
noisy mean and DP-EM; all plain Gaussian, R_enc(α) = α·ρ_enc) is `encoder_share` of the total RDP
at α*: R_enc(α*) = s·R(α*), and DP-SGD gets the rest. Inside the encoder, DP-EM (its T(2K+1)
mechanisms; its initialisation is data-independent) gets `em_fraction` of ρ_enc (default 0.13,
the ratio in the official configuration σ_p = 5, σ_e = 100, T = 20, K = 1) and DP-PCA the rest; with
a noisy centre the mean is released at σ_m = MEAN_NOISE_RATIO·σ_p (dp_pca's default).

Solver: for every grid order α_j the two conditions "ε = target at α_j" and "share s at α_j" fix
ρ_enc and σ_s in closed form / by a vectorised bisection; the candidate whose ledger has the largest
ε (≤ target) is the self-consistent one up to the grid. σ_s is then re-solved exactly for that
encoder: ε(σ) ≤ target ⇔ σ ≥ min_i σ_i, where σ_i makes the bound at α_i equal to the target, so
the minimum hits the target exactly (up to 1e-6 relative). Both calibrations take milliseconds.

Budget already spent (`spent`): mechanisms applied to the same rows before the model (e.g. DP
bounds from `read_csv(..., undeclared="dp")`) compose with the model's, so per order the model
gets R_avail(α) = ε − offset(α) − R_spent(α) and the returned ledger is spent + model, whose ε is
the run's total (= the target). For P3GM, `encoder_share` is then the share of the REMAINING RDP
at α*: R_enc(α*) = s·(R(α*) − R_spent(α*)) (`achieved_share` is measured the same way).
A workbench run always has spent something: its noisy row count ñ (dataset_size.noisy_count, the
"dataset-size" record), drawn before the calibration; `n` here is then ñ, so the schedule and
every σ are functions of released values only (docs/neighbouring-relation.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpcore.errors import InvalidParameter, check_int, check_positive, check_probability
from dpcore.privacy.accountants.rdp import (
    DEFAULT_ORDERS,
    conversion_offset,
    epsilon_and_order,
    rdp,
    subsampled_gaussian_rdp,
)
from dpcore.privacy.dp_em import MEANS_RECORD, VARIANCES_RECORD, WEIGHTS_RECORD
from dpcore.privacy.dp_pca import CENTERS, MEAN_NOISE_RATIO, MEAN_RECORD, PCA_RECORD
from dpcore.privacy.ledger import Mechanism, MechanismRecord, PrivacyLedger

EM_FRACTION = 0.13  # DP-EM's share of the encoder RDP in the official configuration
_SIGMA_LO, _SIGMA_HI = 0.1, 1e5


@dataclass
class Calibration:
    """Calibrated noise multipliers, the ledger they produce and the accountant's ε of it."""

    pca_sigma: float | None
    em_sigma: float | None
    sgd_sigma: float
    mean_sigma: float | None
    ledger: PrivacyLedger = field(repr=False)
    epsilon: float
    delta: float
    encoder_share: float | None = None  # requested share
    achieved_share: float | None = None  # R_enc(α*)/R(α*) of the result
    order: float = float("nan")  # α* where the tight conversion attains ε

    def to_dict(self) -> dict:
        return {"pca_sigma": self.pca_sigma, "em_sigma": self.em_sigma, "sgd_sigma": self.sgd_sigma,
                "mean_sigma": self.mean_sigma, "epsilon": self.epsilon, "delta": self.delta,
                "encoder_share": self.encoder_share, "achieved_share": self.achieved_share,
                "order": self.order, "ledger": self.ledger.to_list()}


def sgd_schedule(n: int, batch: int, epochs: float) -> tuple[float, int]:
    """(q, steps) of Poisson-sampled DP-SGD: q = min(1, B/N), steps = ⌈E·N/B⌉ (docs/references.md#dp-sgd).

    The one place this schedule is computed (the models' `plan` and `fit` call it). In a run N is the released noisy count ñ (dpcore.privacy.dataset_size), never the
    true row count, so q and the steps are public; ñ may fall below B, hence the clamp q ≤ 1.
    """
    n = check_int("n", n)
    batch = check_int("batch", batch)
    epochs = check_positive("epochs", epochs)
    return min(1.0, batch / n), int(math.ceil(epochs * n / batch - 1e-9))


def em_mechanism_count(em_iters: int, components: int) -> int:
    """Gaussian mechanisms DP-EM runs: T(2K+1) (its initialisation is data-independent)."""
    return em_iters * (2 * components + 1)


def _check_center(center: str) -> str:
    if center not in CENTERS:
        raise InvalidParameter(f"center must be one of {CENTERS}, got {center!r}")
    return center


def encoder_records(pca_sigma: float, em_sigma: float, em_iters: int, components: int, *,
                    mean_sigma: float | None = None, center: str = "noisy",
                    clip_norm: float = 1.0) -> list[MechanismRecord]:
    """The records DPPCA.fit and DPEM.fit add (same names, order, sensitivities)."""
    pca_sigma = check_positive("pca_sigma", pca_sigma)
    em_sigma = check_positive("em_sigma", em_sigma)
    em_iters = check_int("em_iters", em_iters)
    components = check_int("components", components)
    c = check_positive("clip_norm", clip_norm)
    recs = []
    if _check_center(center) == "noisy":
        m = MEAN_NOISE_RATIO * pca_sigma if mean_sigma is None else check_positive(
            "mean_sigma", mean_sigma)
        recs.append(MechanismRecord(MEAN_RECORD, "gaussian", m, sensitivity=c))
    recs.append(MechanismRecord(PCA_RECORD, "gaussian", pca_sigma, sensitivity=c * c))
    t, k = em_iters, components
    recs.append(MechanismRecord(WEIGHTS_RECORD, "gaussian", em_sigma, steps=t, sensitivity=1.0))
    recs.append(MechanismRecord(MEANS_RECORD, "gaussian", em_sigma, steps=t * k, sensitivity=c))
    recs.append(MechanismRecord(VARIANCES_RECORD, "gaussian", em_sigma, steps=t * k,
                                sensitivity=c * c))
    return recs


def p3gm_ledger(n: int, batch: int, epochs: float, pca_sigma: float, em_sigma: float,
                em_iters: int, components: int, sgd_sigma: float, mean_sigma: float | None = None,
                *, center: str = "noisy", clip_norm: float = 1.0,
                sgd_clip: float = 1.0) -> PrivacyLedger:
    """The ledger a P3GM run with these settings produces: DP-PCA (+ noisy mean), DP-EM, DP-SGD.

    mean_sigma=None means dp_pca's default MEAN_NOISE_RATIO·pca_sigma; center "public"/"none"
    releases no mean. DP-SGD: "dp-sgd", Poisson rate q = batch/n, steps = ⌈epochs·n/batch⌉.
    n is the row count the run publishes: in a workbench run the noisy count ñ, whose own record
    (dataset_size.count_record) the caller puts in front (e.g. calibrate_p3gm(spent=...)).
    """
    q, steps = sgd_schedule(n, batch, epochs)
    sgd_sigma = check_positive("sgd_sigma", sgd_sigma)
    led = PrivacyLedger()
    led.extend(encoder_records(pca_sigma, em_sigma, em_iters, components, mean_sigma=mean_sigma,
                               center=center, clip_norm=clip_norm))
    if q >= 1.0:
        led.add(MechanismRecord("dp-sgd", "gaussian", sgd_sigma, steps=steps, sensitivity=sgd_clip))
    else:
        led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", sgd_sigma, sampling_rate=q,
                                steps=steps, sensitivity=sgd_clip))
    return led


def dp_vae_ledger(n: int, batch: int, epochs: float, sgd_sigma: float) -> PrivacyLedger:
    """The ledger of a pure DP-SGD model (DP-VAE): one Poisson-subsampled Gaussian record."""
    q, steps = sgd_schedule(n, batch, epochs)
    mech: Mechanism = "gaussian" if q >= 1.0 else "subsampled_gaussian"
    led = PrivacyLedger()
    led.add(MechanismRecord("dp-sgd", mech, check_positive("sgd_sigma", sgd_sigma),
                            sampling_rate=min(q, 1.0), steps=steps))
    return led


def _check_budget(epsilon: float, delta: float) -> tuple[float, float]:
    return check_positive("epsilon", epsilon), check_probability("delta", delta)


def _spent_ledger(spent) -> PrivacyLedger:
    """A copy of the already-spent records (None → empty); the caller's ledger is never touched."""
    return PrivacyLedger() if spent is None else PrivacyLedger.from_list(list(spent))


def _available(epsilon: float, delta: float, orders: np.ndarray,
               spent: PrivacyLedger) -> np.ndarray:
    """Per order, the RDP left to the model: ε − offset(α) − R_spent(α); raises if none is left."""
    budget = epsilon - conversion_offset(orders, delta)
    if not np.any(budget > 0):
        raise InvalidParameter(f"epsilon={epsilon} is too small to reach at delta={delta}")
    if any(r.steps for r in spent):
        budget = budget - rdp(spent, orders)
        if not np.any(budget > 0):
            used, _ = epsilon_and_order(spent, delta, orders)
            raise InvalidParameter(f"the dataset's DP preprocessing already spends ε={used:.4g} of "
                                   f"epsilon={epsilon}; raise epsilon or declare the bounds")
    return budget


def _after_spent(spent: PrivacyLedger, delta: float, orders: np.ndarray) -> str:
    """Suffix for infeasibility messages when part of the budget was already spent."""
    if not any(r.steps for r in spent):
        return ""
    used, _ = epsilon_and_order(spent, delta, orders)
    return f" (the dataset's DP preprocessing already spends ε={used:.4g})"


def _solve_sigma(q: float, steps: int, orders: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Per order α_i, the σ with steps·R_q,σ(α_i) = budget_i, vectorised.

    Illinois (regula falsi) on x = log σ, f = log(steps·R) − log(budget), which is smooth, strictly
    decreasing and nearly linear in x, so ~10 iterations reach 1e-12; the bracket keeps it safe.
    Returns the upper end of the bracket (RDP ≤ budget, so ε never overshoots); +inf where the
    budget is ≤ 0 or even σ = _SIGMA_HI is not enough, _SIGMA_LO where that already suffices.
    """
    out = np.full(orders.shape, np.inf)
    ok = budget > 0
    o, lb = orders[ok], np.log(budget[ok])

    def f(x, idx):
        r = steps * subsampled_gaussian_rdp(q, np.exp(x), o[idx])
        return np.log(np.maximum(r, 1e-300)) - lb[idx]

    every = np.arange(o.size)
    lo = np.full(o.size, math.log(_SIGMA_LO))
    hi = np.full(o.size, math.log(_SIGMA_HI))
    f_lo, f_hi = f(lo, every), f(hi, every)
    res = np.where(f_lo <= 0, lo, np.where(f_hi > 0, np.inf, np.nan))
    act = np.flatnonzero(np.isnan(res))
    side = np.zeros(o.size, dtype=int)
    for it in range(100):
        if act.size == 0:
            break
        fl, fh = f_lo[act], f_hi[act]
        x = (lo[act] * fh - hi[act] * fl) / (fh - fl)
        if it % 8 == 7:  # a plain bisection now and then guarantees progress
            x = 0.5 * (lo[act] + hi[act])
        fx = f(x, act)
        up = fx > 0  # σ too small: move the lower end
        lo[act] = np.where(up, x, lo[act])
        hi[act] = np.where(up, hi[act], x)
        f_lo[act] = np.where(up, fx, np.where(side[act] == -1, 0.5 * fl, fl))
        f_hi[act] = np.where(up, np.where(side[act] == 1, 0.5 * fh, fh), fx)
        side[act] = np.where(up, 1, -1)
        done = (hi[act] - lo[act] < 1e-11) | (np.abs(fx) < 1e-13)
        res[act[done]] = hi[act[done]]
        act = act[~done]
    res[act] = hi[act]
    out[ok] = np.exp(res)
    return out


def calibrate_sgd(epsilon: float, delta: float, sample_rate: float, steps: int,
                  orders=DEFAULT_ORDERS, *, spent: PrivacyLedger | None = None) -> float:
    """σ for pure DP-SGD (Poisson rate q, `steps` steps) whose tight RDP ε equals `epsilon`.

    spent: mechanisms already applied to the same rows; σ is then the one whose ledger spent +
    DP-SGD has ε = `epsilon` in total.
    """
    epsilon, delta = _check_budget(epsilon, delta)
    q = float(sample_rate)
    if not 0 < q <= 1:
        raise InvalidParameter(f"sample_rate must lie in (0, 1], got {sample_rate!r}")
    steps = check_int("steps", steps)
    orders = np.asarray(orders, float)
    spent = _spent_ledger(spent)
    budget = _available(epsilon, delta, orders, spent)
    sigma = float(np.min(_solve_sigma(q, steps, orders, budget)))
    if sigma >= _SIGMA_HI * 0.999:
        raise InvalidParameter(f"epsilon={epsilon} is too small to reach with {steps} steps"
                               + _after_spent(spent, delta, orders))
    if sigma <= _SIGMA_LO * 1.001:
        raise InvalidParameter(f"epsilon={epsilon} is too large: the noise multiplier would be "
                               f"below {_SIGMA_LO}")
    return _not_above(epsilon, delta, sigma, q, steps, orders, spent)


def _not_above(epsilon: float, delta: float, sigma: float, q: float, steps: int, orders: np.ndarray,
               spent: PrivacyLedger) -> float:
    """σ, nudged up until the accountant's ε of spent + these steps is ≤ `epsilon`.

    Why: the solver keeps RDP ≤ budget order by order, yet the accountant's conversion of the same
    ledger can land a hair above the target by round-off (ε = 10.000000000033 for q = 0.01 and
    128 000 steps, GS-WGAN's Fashion-MNIST setting). A published ε above the one asked for is
    wrong however small the excess; a relative 1e-12 more noise removes it."""
    for k in range(40):
        trial = PrivacyLedger()
        trial.extend(spent)
        trial.add(MechanismRecord("calibration check", "subsampled_gaussian", sigma,
                                  sampling_rate=q, steps=steps))
        if epsilon_and_order(trial, delta, orders)[0] <= epsilon:
            return sigma
        sigma *= 1.0 + 1e-12 * 2.0 ** k
    raise RuntimeError(f"calibration: no σ near {sigma} keeps the accountant's ε within {epsilon}")


def _encoder_sigmas(rho_enc: float, em_iters: int, components: int, center: str,
                    em_fraction: float, mean_ratio: float = MEAN_NOISE_RATIO) -> tuple[float, float, float | None]:
    rho_em = em_fraction * rho_enc
    rho_pca_total = rho_enc - rho_em
    mean_factor = 1.0 / mean_ratio ** 2 if center == "noisy" else 0.0
    rho_pca = rho_pca_total / (1.0 + mean_factor)
    pca_sigma = 1.0 / math.sqrt(2.0 * rho_pca)
    em_sigma = math.sqrt(em_mechanism_count(em_iters, components) / (2.0 * rho_em))
    mean_sigma = mean_ratio * pca_sigma if center == "noisy" else None
    return pca_sigma, em_sigma, mean_sigma


def calibrate_p3gm(epsilon: float, delta: float, encoder_share: float, n: int, batch: int,
                   epochs: float, components: int = 1, em_iters: int = 20, *,
                   em_fraction: float = EM_FRACTION, center: str = "noisy",
                   mean_ratio: float = MEAN_NOISE_RATIO, clip_norm: float = 1.0, orders=DEFAULT_ORDERS,
                   spent: PrivacyLedger | None = None) -> Calibration:
    """Noise multipliers for a P3GM run with total (ε, δ) and the encoder's share of the RDP budget.

    em_fraction: DP-EM's part of the encoder's RDP; mean_ratio: σ_m/σ_p of the noisy centre (the
    mean's RDP is 1/ratio² of the covariance's).
    spent: mechanisms already applied to the same rows (first in the returned ledger; the share is
    of the RDP left after them). Raises InvalidParameter for ε ≤ 0, δ ∉ (0,1), share ∉ (0,1),
    batch > n, or an infeasible target (including a budget the spent records already use up).
    """
    epsilon, delta = _check_budget(epsilon, delta)
    share = check_probability("encoder_share", encoder_share)
    em_fraction = check_probability("em_fraction", em_fraction)
    mean_ratio = check_positive("mean_ratio", mean_ratio)
    components = check_int("components", components)
    em_iters = check_int("em_iters", em_iters)
    _check_center(center)
    q, steps = sgd_schedule(n, batch, epochs)
    orders = np.asarray(orders, float)
    spent = _spent_ledger(spent)
    budget = _available(epsilon, delta, orders, spent)  # RDP left to the model, per order
    # Candidates: ε = target and share s, both at α_j.
    rho_c = np.where(budget > 0, share * budget / orders, 0.0)
    sig_c = _solve_sigma(q, steps, orders, (1.0 - share) * budget)
    valid = np.isfinite(sig_c) & (sig_c < _SIGMA_HI * 0.999) & (rho_c > 0)
    if not valid.any():
        raise InvalidParameter(f"epsilon={epsilon} cannot be reached with encoder_share={share}"
                               + _after_spent(spent, delta, orders))
    if np.all(sig_c[valid] <= _SIGMA_LO * 1.001):
        raise InvalidParameter(f"epsilon={epsilon} is too large: the DP-SGD noise multiplier would "
                               f"be below {_SIGMA_LO}")
    offset = conversion_offset(orders, delta)
    if any(r.steps for r in spent):
        offset = offset + rdp(spent, orders)  # the spent RDP is a fixed part of every candidate

    def eps_of(idx: np.ndarray) -> np.ndarray:  # the tight ε of each candidate's ledger
        curves = (rho_c[idx][:, None] * orders[None, :]
                  + steps * subsampled_gaussian_rdp(q, sig_c[idx][:, None], orders[None, :]))
        return np.min(curves + offset[None, :], axis=1)

    # ε of the candidates is smooth and single-peaked along the grid: coarse pass, then refine.
    idx = np.flatnonzero(valid)
    coarse = idx[::6]
    best = int(np.argmax(eps_of(coarse))) * 6
    near = idx[max(0, best - 6): best + 7]
    rho_enc = float(rho_c[near[int(np.argmax(eps_of(near)))]])
    # Exact σ_s for this encoder: the smallest σ whose bound meets the target at some order.
    sgd_sigma = float(np.min(_solve_sigma(q, steps, orders, budget - rho_enc * orders)))
    if sgd_sigma <= _SIGMA_LO * 1.001:
        raise InvalidParameter(f"epsilon={epsilon} is too large: the DP-SGD noise multiplier would "
                               f"be below {_SIGMA_LO}")
    pca_sigma, em_sigma, mean_sigma = _encoder_sigmas(rho_enc, em_iters, components, center,
                                                      em_fraction, mean_ratio)
    own = p3gm_ledger(n, batch, epochs, pca_sigma, em_sigma, em_iters, components, sgd_sigma,
                      mean_sigma, center=center, clip_norm=clip_norm)
    led = spent  # a copy: spent records first, then the model's; its ε is the run's total
    led.extend(own)
    eps, order = epsilon_and_order(led, delta, orders)
    total = rdp(own, orders)[orders == order]  # the model's RDP: the share is of the remainder
    achieved = float(rho_enc * order / total[0]) if total.size and total[0] > 0 else None
    return Calibration(pca_sigma, em_sigma, sgd_sigma, mean_sigma, led, eps, delta, share,
                       achieved, order)


def calibrate_dp_vae(epsilon: float, delta: float, n: int, batch: int, epochs: float,
                     orders=DEFAULT_ORDERS, *, spent: PrivacyLedger | None = None) -> Calibration:
    """σ_s for a pure DP-SGD model trained `epochs` epochs with Poisson batches of size `batch`
    (after the `spent` mechanisms, which come first in the returned ledger)."""
    epsilon, delta = _check_budget(epsilon, delta)
    q, steps = sgd_schedule(n, batch, epochs)
    sigma = calibrate_sgd(epsilon, delta, q, steps, orders, spent=spent)
    led = _spent_ledger(spent)
    led.extend(dp_vae_ledger(n, batch, epochs, sigma))
    eps, order = epsilon_and_order(led, delta, orders)
    return Calibration(None, None, sigma, None, led, eps, delta, None, None, order)


def calibrate_gaussian(epsilon: float, delta: float, orders=DEFAULT_ORDERS) -> float:
    """The smallest noise multiplier σ/Δ of one Gaussian release whose tight RDP ε at `delta` is at
    most `epsilon`: σ² = min over α of α / (2·(ε − offset(α))) (RDP α/(2σ²), see rdp.py)."""
    epsilon, delta = _check_budget(epsilon, delta)
    orders = np.asarray(orders, float)
    budget = _available(epsilon, delta, orders, PrivacyLedger())
    ok = budget > 0
    return float(np.sqrt(np.min(orders[ok] / (2.0 * budget[ok]))))
