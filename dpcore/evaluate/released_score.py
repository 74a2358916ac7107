"""A usefulness score released under DP: balanced accuracy on the held-out rows, with its own
Gaussian noise.

Why: a scored release against real rows is evidence a reader can use, but every other score in
dpcore.evaluate reads real rows and is "not covered". This one is a mechanism like any other: a
classifier trained on the synthetic rows only (post-processing of the DP model) predicts the
held-out rows; for each class k of the target (its declared levels, a public list) the counts
C_k = right and W_k = wrong are released as C_k + N(0, σ²) and W_k + N(0, σ²) from a secret noise
stream, and recorded in the ledger.

Why per class: plain accuracy counts every held-out person the same, so where one class is rare,
always guessing the common class scores high (0.76 on a table with 24 % positives) and a release
reading "accuracy 0.70" says the opposite of the truth. Balanced accuracy — the mean over classes
of C̃_k / (C̃_k + W̃_k) — is 1/K for any guess that ignores the row, whatever the class balance.

Sensitivity: adding or removing one held-out row changes exactly one of the 2K counts by 1 and
leaves the classifier unchanged (it never saw a real row), so the L2 sensitivity of the count
vector is 1: the same σ, and the same ε, as releasing only (C, W). Plain accuracy is derived from
the sums (post-processing), with K noise terms in each.

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
RELEASED_KEY = "released_score"  # where a run's evaluation.json keeps it (dpcore.runs.run_score)
SCORE_CLASSIFIER = "logistic_regression"


@dataclass(frozen=True)
class ReleasedScore:
    """The released noisy counts and what is derived from them alone (post-processing).

    accuracy: C̃ / (C̃ + W̃) clipped to [0, 1] (None when the noisy total is too small to read:
        `readable_total`).
    noise_sd: the standard deviation the Gaussian noise gives the accuracy (delta method at the
        released values), sampling_sd: a binomial test-sample term √(a(1 − a)/m̃); `plus_minus`
        combines both. None when accuracy is None.
    per_class: the released (C̃_k, W̃_k) of each class (None for a score released before them, which
        released (C̃, W̃) only); balanced_accuracy: the mean of the classes' clipped C̃_k / m̃_k, None
        when a class's noisy count is too small to read (`readable_total`); balanced_noise_sd,
        balanced_sampling_sd: as above, summed over the classes (`balanced_plus_minus` combines both).
    """

    correct: float
    wrong: float
    noise_multiplier: float
    classifier: str
    partition: str | None
    accuracy: float | None
    noise_sd: float | None
    sampling_sd: float | None
    per_class: tuple[tuple[float, float], ...] | None = None
    balanced_accuracy: float | None = None
    balanced_noise_sd: float | None = None
    balanced_sampling_sd: float | None = None

    @property
    def plus_minus(self) -> float | None:
        if self.noise_sd is None:
            return None
        return math.hypot(self.noise_sd, self.sampling_sd or 0.0)

    @property
    def balanced_plus_minus(self) -> float | None:
        if self.balanced_noise_sd is None:
            return None
        return math.hypot(self.balanced_noise_sd, self.balanced_sampling_sd or 0.0)

    @property
    def chance(self) -> float | None:
        """Balanced accuracy of any guess that ignores the row: 1/K."""
        return 1.0 / len(self.per_class) if self.per_class else None

    def to_dict(self) -> dict:
        return {**asdict(self), "record": SCORE_RECORD}


MIN_CLASS_ROWS = 5.0  # a noisy held-out count below this gives no share, however small the noise


def readable_total(sigma: float, terms: int = 1) -> float:
    """The smallest noisy total m̃ = right + wrong whose share is shown, each of right and wrong the
    sum of `terms` counts with noise N(0, σ²).

    Why: the share's noise sd is σ√terms·√((1 − a)² + a²)/m̃ ≤ σ√terms/m̃, so from m̃ ≥ 2σ√terms it is
    at most 0.5; below it a share of [0, 1] is mostly noise and once read "accuracy 1.00 ± 2.14"
    (ε = 0.1, 120 held-out rows). Decided on the noisy total alone: post-processing."""
    return max(MIN_CLASS_ROWS, 2.0 * float(sigma) * math.sqrt(terms))


def _share(right: float, wrong: float, sigma: float, terms: int = 1) -> tuple[float, float, float] | None:
    """(a, noise sd, sampling sd) of a = right / (right + wrong) from noisy counts, each the sum of
    `terms` released counts with noise N(0, σ²) (delta method at the released values); None when
    the noisy total is below `readable_total`."""
    total = float(right) + float(wrong)
    if not (total >= readable_total(sigma, terms)):
        return None
    a = min(max(float(right) / total, 0.0), 1.0)
    return a, sigma * math.sqrt(terms) * math.sqrt((1.0 - a) ** 2 + a ** 2) / total, math.sqrt(a * (1.0 - a) / total)


def from_noisy_counts(correct: float, wrong: float, noise_multiplier: float, classifier: str,
                      partition: str | None) -> ReleasedScore:
    """The accuracy and its uncertainty from the noisy counts (C̃, W̃) alone (no real row is read):
    a score released before per-class counts."""
    sigma = float(noise_multiplier)  # sensitivity 1
    got = _share(correct, wrong, sigma)
    return ReleasedScore(float(correct), float(wrong), sigma, classifier, partition, *(got or (None, None, None)))


def from_noisy_class_counts(counts, noise_multiplier: float, classifier: str, partition: str | None) -> ReleasedScore:
    """Balanced accuracy, accuracy and their uncertainties from the released (C̃_k, W̃_k) alone."""
    c = np.asarray(counts, dtype=float).reshape(-1, 2)
    sigma, k = float(noise_multiplier), len(c)
    right, wrong = float(c[:, 0].sum()), float(c[:, 1].sum())
    acc = _share(right, wrong, sigma, terms=k) or (None, None, None)
    per_class = tuple((float(a), float(b)) for a, b in c)
    # a class whose noisy count is below 2σ is mostly noise: its share once read 0.08 ± 1.09
    shares = [_share(a, b, sigma) for a, b in per_class]
    if k < 2 or any(x is None for x in shares):
        return ReleasedScore(right, wrong, sigma, classifier, partition, *acc, per_class=per_class)
    got = [x for x in shares if x is not None]
    balanced = sum(x[0] for x in got) / k
    noise_sd = math.sqrt(sum(x[1] ** 2 for x in got)) / k
    sampling_sd = math.sqrt(sum(x[2] ** 2 for x in got)) / k
    return ReleasedScore(right, wrong, sigma, classifier, partition, *acc, per_class=per_class,
                         balanced_accuracy=balanced, balanced_noise_sd=noise_sd, balanced_sampling_sd=sampling_sd)


def held_out_counts(synthetic, test, classifier: str = SCORE_CLASSIFIER, seed: int = 0) -> tuple[int, int]:
    """(correct, wrong) of a classifier fitted on the synthetic rows only, on the held-out rows."""
    right, wrong = held_out_class_counts(synthetic, test, classifier, seed).sum(axis=0)
    return int(right), int(wrong)


def held_out_class_counts(synthetic, test, classifier: str = SCORE_CLASSIFIER, seed: int = 0) -> np.ndarray:
    """(K, 2): for each class of the target (its declared levels), the held-out rows a classifier
    fitted on the synthetic rows only predicts right and wrong."""
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
    truth = np.asarray(test.labels, dtype=np.int64)
    k = int(test.n_classes)  # the target's declared levels: the table's shape says nothing of the rows
    if truth.size and not 0 <= truth.min() <= truth.max() < k:
        raise InvalidParameter("the held-out rows hold a class outside the target's levels")
    right = np.bincount(truth[np.asarray(pred) == truth], minlength=k)
    return np.stack([right, np.bincount(truth, minlength=k) - right], axis=1).astype(np.int64)


def score_record(noise_multiplier: float, partition: str | None, noise: str = "secret") -> MechanismRecord:
    """The ledger record of a released score: one Gaussian mechanism on counts of L2 sensitivity 1."""
    return MechanismRecord(SCORE_RECORD, "gaussian", noise_multiplier, sensitivity=1.0, noise=noise,
                           partition=partition)


def release_counts(correct: int, wrong: int, noise_multiplier: float, rng, *, partition: str | None,
                   ledger: PrivacyLedger) -> tuple[float, float]:
    """(C + N(0, σ²), W + N(0, σ²)) with σ = noise_multiplier (L2 sensitivity 1), recorded in
    `ledger` as one Gaussian mechanism. `rng`: a secret NoiseSource stream."""
    right, wrong_ = release_class_counts(np.array([[correct, wrong]]), noise_multiplier, rng, partition=partition,
                                         ledger=ledger)[0]
    return float(right), float(wrong_)


def release_class_counts(counts, noise_multiplier: float, rng, *, partition: str | None,
                         ledger: PrivacyLedger) -> np.ndarray:
    """Every count of the (K, 2) table plus N(0, σ²), σ = noise_multiplier (one held-out row moves
    one count by 1: L2 sensitivity 1), recorded in `ledger` as one Gaussian mechanism. `rng`: a
    secret NoiseSource stream."""
    from dpcore.privacy.randomness import noise_kind

    z = float(noise_multiplier)
    if not (z > 0 and math.isfinite(z)):
        raise InvalidParameter(f"noise_multiplier must be finite and > 0, got {noise_multiplier!r}")
    c = np.asarray(counts, dtype=float).reshape(-1, 2)
    noisy = c + rng.normal(0.0, z, size=c.shape)
    ledger.add(score_record(z, partition, noise_kind(rng)))
    return noisy
