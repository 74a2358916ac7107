"""A usefulness score released under DP: accuracy on the held-out rows with its own Gaussian noise.

Why: a scored release against real rows is evidence a reader can use, but every other score in
dpcore.evaluate reads real rows and is "not covered". This one is a mechanism like any other: a
classifier trained on the synthetic rows only (post-processing of the DP model) predicts the
held-out rows; the counts C = correct and W = wrong are released as C + N(0, σ²) and
W + N(0, σ²) from a secret noise stream, and recorded in the ledger.

Sensitivity: adding or removing one held-out row changes exactly one of (C, W) by 1 and leaves the
classifier unchanged (it never saw a real row), so the L2 sensitivity of (C, W) is 1. Releasing
(C, W) rather than (C, m) halves the variance of the accuracy C̃/(C̃ + W̃) at a given ε
(sensitivity 1 instead of √2 and a smaller delta-method factor).

Composition: on a keyed split (dpcore.data.split) each row is on one side only, so the record is
marked partition "heldout" and the accountant composes it in parallel with the training side
(dpcore.privacy.accountants.rdp.sides). Elsewhere (a built-in's seeded split, a separate test
file) the caller records it with partition None: plain sequential composition.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from dpcore.errors import InvalidParameter
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

SCORE_RECORD = "usefulness score (held-out rows)"
SCORE_CLASSIFIER = "logistic_regression"


@dataclass(frozen=True)
class ReleasedScore:
    """The released noisy counts and what is derived from them alone (post-processing).

    accuracy: C̃ / (C̃ + W̃) clipped to [0, 1] (None when the noisy total is below 1).
    noise_sd: the standard deviation the Gaussian noise gives the accuracy (delta method at the
        released values), sampling_sd: a binomial test-sample term √(a(1 − a)/m̃); `plus_minus`
        combines both. None when accuracy is None.
    """

    correct: float
    wrong: float
    noise_multiplier: float
    classifier: str
    partition: str | None
    accuracy: float | None
    noise_sd: float | None
    sampling_sd: float | None

    @property
    def plus_minus(self) -> float | None:
        if self.noise_sd is None:
            return None
        return math.hypot(self.noise_sd, self.sampling_sd or 0.0)

    def to_dict(self) -> dict:
        return {**asdict(self), "record": SCORE_RECORD}


def from_noisy_counts(correct: float, wrong: float, noise_multiplier: float, classifier: str,
                      partition: str | None) -> ReleasedScore:
    """The accuracy and its uncertainty from the noisy counts alone (no real row is read)."""
    sigma = float(noise_multiplier)  # sensitivity 1
    total = float(correct) + float(wrong)
    if not (total >= 1.0):
        return ReleasedScore(float(correct), float(wrong), sigma, classifier, partition, None, None, None)
    a = min(max(float(correct) / total, 0.0), 1.0)
    noise_sd = sigma * math.sqrt((1.0 - a) ** 2 + a ** 2) / total
    sampling_sd = math.sqrt(a * (1.0 - a) / total)
    return ReleasedScore(float(correct), float(wrong), sigma, classifier, partition, a, noise_sd, sampling_sd)


def held_out_counts(synthetic, test, classifier: str = SCORE_CLASSIFIER, seed: int = 0) -> tuple[int, int]:
    """(correct, wrong) of a classifier fitted on the synthetic rows only, on the held-out rows."""
    from dpcore.evaluate.utility import _single_openmp_thread, make_classifier

    if synthetic.labels is None or test.labels is None:
        raise InvalidParameter("a usefulness score needs a target column")
    y = np.asarray(synthetic.labels)
    if np.unique(y).size < 2:
        pred = np.full(test.n, y[0] if y.size else -1)  # a constant guess, still a function of the synthetic rows
    else:
        clf = make_classifier(classifier, seed)
        with _single_openmp_thread():
            clf.fit(synthetic.features, y)
            pred = clf.predict(test.features)
    correct = int(np.sum(np.asarray(pred) == np.asarray(test.labels)))
    return correct, int(test.n) - correct


def release_counts(correct: int, wrong: int, noise_multiplier: float, rng, *, partition: str | None,
                   ledger: PrivacyLedger) -> tuple[float, float]:
    """(C + N(0, σ²), W + N(0, σ²)) with σ = noise_multiplier (L2 sensitivity 1), recorded in
    `ledger` as one Gaussian mechanism. `rng`: a secret NoiseSource stream."""
    from dpcore.privacy.randomness import noise_kind

    z = float(noise_multiplier)
    if not (z > 0 and math.isfinite(z)):
        raise InvalidParameter(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    noise = rng.normal(0.0, z, size=2)
    ledger.add(MechanismRecord(SCORE_RECORD, "gaussian", z, sensitivity=1.0, noise=noise_kind(rng),
                               partition=partition))
    return float(correct + noise[0]), float(wrong + noise[1])
