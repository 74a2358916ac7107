"""The dataset size n, released once per run as a noisy count ñ (add/remove-one adjacency).

Why: the accountant's adjacency is add/remove-one (DP-SGD's Poisson analysis, DP-PCA's and
DP-EM's sensitivities), and under it the number of rows n is itself private: a neighbour D′ = D
plus one row has n + 1 rows. Every statistic a run publishes that needs n (DP-SGD's sampling rate
q = B/n and step count ⌈E·n/B⌉, DP-PCA's mean = noisy sum / n and explained variance =
eigenvalue / n, P3GM's MoG variance floor σ_e·r²/(w·n), the row count saved in model.json)
therefore uses ñ instead, and ñ is a ledgered Gaussian mechanism (docs/neighbouring-relation.md):

    ñ = max(MIN_COUNT, round(n + N(0, σ_n²)))        sensitivity Δ = 1 (one row changes n by 1)

Rounding and the floor are post-processing (free). The RDP of the release is α/(2σ_n²) (the
Gaussian mechanism with noise multiplier σ_n and Δ = 1: Mironov 2017, Prop. 7).

Choice of σ_n = COUNT_SIGMA = 50 (a constant, not calibrated: the count must be drawn before the
calibration so that the calibration gives the model's mechanisms only what the count leaves):
- cost: α/(2σ_n²) = α/5000. At a total ε = 1, δ = 1e-5 the tight conversion attains ε at α* ≈ 12
  (P3GM, n = 60 000) to 17 (P3GM, digits n = 1 437), where the count is 0.9 % resp. 0.7 % of the
  run's RDP (σ_n = 20 would be 5.6 %, σ_n = 100 0.2 %);
- error: the relative standard error is σ_n/n = 5 % at n = 1 000, 3.5 % at n = 1 437 and 0.08 % at
  n = 60 000. A few per cent in ñ only rescales the expected batch (q·n = B·n/ñ), the epochs, the
  mean and the explained variance by n/ñ, which the models tolerate; for n ≪ 1 000 the count is
  rough and runs that small are rarely useful at ε ≈ 1 anyway.
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.errors import InvalidParameter, check_int, check_positive
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.mechanisms import gaussian_mechanism

COUNT_RECORD = "dataset-size"
COUNT_SIGMA = 50.0  # σ_n: see the module docstring for the cost/error trade-off
COUNT_SENSITIVITY = 1.0  # add/remove-one changes the row count by exactly 1
MIN_COUNT = 1  # floor of the post-processed count (it divides and sets q = B/ñ ≤ 1)


def count_record(noise_multiplier: float = COUNT_SIGMA) -> MechanismRecord:
    """The ledger record of one noisy-count release (Gaussian, Δ = 1, noise multiplier σ_n)."""
    return MechanismRecord(COUNT_RECORD, "gaussian", check_positive("noise_multiplier",
                                                                     noise_multiplier),
                           sensitivity=COUNT_SENSITIVITY)


def post_process_count(value) -> int:
    """ñ = max(MIN_COUNT, round(value)): an integer row count ≥ 1 (post-processing, free)."""
    value = float(value)
    if not math.isfinite(value):
        raise InvalidParameter(f"a released count must be finite, got {value!r}")
    return max(MIN_COUNT, int(round(value)))


def noisy_count(n: int, rng, *, ledger: PrivacyLedger | None,
                noise_multiplier: float = COUNT_SIGMA) -> int:
    """ñ = post_process_count(n + N(0, σ_n²)), recorded in `ledger` as COUNT_RECORD.

    rng: a numpy Generator (or seed) like every other mechanism's; ledger None only in tests.
    """
    n = check_int("n", n, minimum=0)
    noisy = gaussian_mechanism(np.float64(n), COUNT_SENSITIVITY, noise_multiplier, rng,
                               ledger=ledger, name=COUNT_RECORD if ledger is not None else None)
    return post_process_count(noisy)


def with_count(spent=None, noise_multiplier: float = COUNT_SIGMA) -> PrivacyLedger:
    """A copy of `spent` (None → empty) followed by the count record: the ledger a private run
    has spent when its model calibration starts (used by previews and `dpcore calibrate`)."""
    led = PrivacyLedger() if spent is None else PrivacyLedger.from_list(list(spent))
    led.add(count_record(noise_multiplier))
    return led


def sampling_rate(batch: float, released_n: int) -> float:
    """Poisson rate q = min(1, B/ñ) computed from the released count (never the true n)."""
    batch = check_positive("batch", batch)
    return min(1.0, batch / check_int("released_n", released_n))
