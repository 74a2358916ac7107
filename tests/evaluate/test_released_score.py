"""The released usefulness score as an attacker sees it: neighbouring held-out sets, noisy counts."""
import math

import numpy as np
import pytest
from scipy.stats import beta

from dpcore.evaluate.released_score import (
    SCORE_RECORD,
    from_noisy_class_counts,
    from_noisy_counts,
    held_out_class_counts,
    held_out_counts,
    release_class_counts,
    release_counts,
)
from dpcore.privacy import accountant as acc
from dpcore.privacy.ledger import PrivacyLedger
from dpcore.privacy.randomness import NoiseSource

DELTA = 1e-5


def test_one_held_out_row_more_moves_exactly_one_count_by_one(digits):
    """The sensitivity the noise is scaled to, checked exactly: for every candidate extra row,
    (correct, wrong) of D ∪ {row} minus that of D is (1, 0) or (0, 1)."""
    syn, test = digits["train"], digits["test"]
    base = np.array(held_out_counts(syn, test.subset(np.arange(100))))
    for i in range(100, 140):
        nb = np.array(held_out_counts(syn, test.subset(np.r_[np.arange(100), i])))
        d = nb - base
        assert sorted(d.tolist()) == [0, 1], (i, d)
    assert base.sum() == 100


def test_one_held_out_row_more_moves_exactly_one_class_count_by_one(digits):
    """The per-class table's sensitivity, checked exactly: D ∪ {row} minus D is one 1 among the
    2K counts, in the row's class; the table's shape is the target's levels, not the rows'."""
    syn, test = digits["train"], digits["test"]
    base = held_out_class_counts(syn, test.subset(np.arange(100)))
    assert base.shape == (test.n_classes, 2) and base.sum() == 100
    assert (base.sum(axis=0) == held_out_counts(syn, test.subset(np.arange(100)))).all()
    for i in range(100, 140):
        d = held_out_class_counts(syn, test.subset(np.r_[np.arange(100), i])) - base
        assert np.abs(d).sum() == 1 and d.min() == 0, (i, d)
        assert d[test.labels[i]].sum() == 1  # the row's own class
    one_class = test.subset(np.flatnonzero(test.labels == 3)[:20])
    assert held_out_class_counts(syn, one_class).shape == (test.n_classes, 2)  # rows of one class: same shape


def test_balanced_accuracy_sees_through_a_guess_that_plain_accuracy_rewards():
    """24 % positives, a classifier that always says "no": accuracy 0.76, balanced accuracy 0.50
    (chance) — what the release must say; a classifier that is right on 70 % of each class: 0.70."""
    guess = from_noisy_class_counts([[456.0, 0.0], [0.0, 144.0]], 1e-9, "x", "heldout")
    assert guess.accuracy == pytest.approx(0.76) and guess.balanced_accuracy == pytest.approx(0.5)
    assert guess.chance == 0.5
    fair = from_noisy_class_counts([[319.2, 136.8], [100.8, 43.2]], 1e-9, "x", "heldout")
    assert fair.balanced_accuracy == pytest.approx(0.70) and fair.accuracy == pytest.approx(0.70)


def test_balanced_uncertainty_is_the_classes_delta_method_and_needs_every_class():
    s = from_noisy_class_counts([[70.0, 30.0], [20.0, 80.0]], 10.0, "x", "heldout")
    a = [0.7, 0.2]
    noise = [10 * np.sqrt((1 - x) ** 2 + x ** 2) / 100 for x in a]
    assert s.balanced_accuracy == pytest.approx(0.45)
    assert s.balanced_noise_sd == pytest.approx(np.hypot(*noise) / 2)
    assert s.balanced_sampling_sd == pytest.approx(np.hypot(*[np.sqrt(x * (1 - x) / 100) for x in a]) / 2)
    assert s.noise_sd == pytest.approx(10 * np.sqrt(2) * np.sqrt(0.55 ** 2 + 0.45 ** 2) / 200)  # 2 noisy terms a sum
    tiny = from_noisy_class_counts([[70.0, 30.0], [1.5, 1.0]], 10.0, "x", "heldout")  # a class below 5 noisy rows
    assert tiny.balanced_accuracy is None and tiny.accuracy is not None


def test_release_class_counts_noises_every_count_once_with_one_record():
    led = PrivacyLedger()
    counts = np.array([[40, 10], [5, 45], [30, 20]])
    noisy = np.array([release_class_counts(counts, 2.0, NoiseSource.secret().numpy("s"), partition="heldout",
                                           ledger=led) for _ in range(4000)])
    assert noisy.shape == (4000, 3, 2) and len(led) == 1 and led.records[0].steps == 4000
    assert np.allclose(noisy.mean(axis=0), counts, atol=6 * 2.0 / np.sqrt(4000))
    assert np.allclose(noisy.std(axis=0), 2.0, rtol=0.06)
    assert abs(np.corrcoef(noisy[:, 0, 0], noisy[:, 1, 1])[0, 1]) < 0.06  # independent draws


def _cp_lower(k, n, conf=0.95):
    return beta.ppf(1 - conf, k, n - k + 1) if k else 0.0


def _cp_upper(k, n, conf=0.95):
    return beta.ppf(conf, k + 1, n - k) if k < n else 1.0


def _empirical_epsilon(x0, x1, delta):
    """A lower bound on ε from threshold tests on the released correct count (Clopper-Pearson)."""
    best = 0.0
    for t in np.quantile(np.r_[x0, x1], np.linspace(0.5, 0.999, 40)):
        p1, p0 = _cp_lower(int(np.sum(x1 > t)), x1.size), _cp_upper(int(np.sum(x0 > t)), x0.size)
        if p1 - delta > 0 and p0 > 0:
            best = max(best, math.log((p1 - delta) / p0))
    return best


@pytest.mark.parametrize("eps", [2.0, 4.0])
def test_an_attacker_on_neighbouring_held_out_sets_stays_within_the_claimed_epsilon(eps):
    """D's counts (70, 30) versus D plus one correctly predicted row (71, 30), released 40 000 times
    each: the best threshold test's ε lower bound stays below the accountant's ε; with half the
    noise (sensitivity under-stated by 2×) the same test exceeds it — the test can fail."""
    z = acc.calibrate_gaussian(eps, DELTA)
    noise = NoiseSource.secret()

    def releases(c, w, mult, n=40_000):  # the released correct count, n independent releases
        rng, led = noise.numpy("attack"), PrivacyLedger()
        out = np.array([release_counts(c, w, mult, rng, partition="heldout", ledger=led)[0] for _ in range(n)])
        assert led.records[0].steps == n
        return out

    led = PrivacyLedger()
    c, w = release_counts(70, 30, z, noise.numpy("x"), partition="heldout", ledger=led)
    assert led.records[0].name == SCORE_RECORD and led.records[0].partition == "heldout"
    assert acc.epsilon(led, DELTA) == pytest.approx(eps, rel=1e-9)
    x0, x1 = releases(70, 30, z), releases(71, 30, z)
    assert abs(x1.mean() - x0.mean() - 1) < 6 * z * math.sqrt(2 / x0.size)
    assert x0.std() == pytest.approx(z, rel=0.03)
    assert _empirical_epsilon(x0, x1, DELTA) < eps
    assert _empirical_epsilon(releases(70, 30, z / 2), releases(71, 30, z / 2), DELTA) > eps


def test_release_counts_draws_from_its_stream_and_records_the_noise_kind():
    led = PrivacyLedger()
    a = release_counts(50, 50, 3.0, NoiseSource.secret().numpy("s"), partition=None, ledger=led)
    b = release_counts(50, 50, 3.0, NoiseSource.secret().numpy("s"), partition=None, ledger=PrivacyLedger())
    assert a != b and led.records[0].noise == "secret" and led.records[0].partition is None


def test_accuracy_and_uncertainty_come_from_the_noisy_counts_alone():
    s = from_noisy_counts(690.0, 310.0, 10.0, "logistic_regression", "heldout")
    assert s.accuracy == pytest.approx(0.69)
    assert s.noise_sd == pytest.approx(10 * math.sqrt(0.31 ** 2 + 0.69 ** 2) / 1000)
    assert s.sampling_sd == pytest.approx(math.sqrt(0.69 * 0.31 / 1000))
    assert s.plus_minus == pytest.approx(math.hypot(s.noise_sd, s.sampling_sd))
    assert from_noisy_counts(2.0, -3.0, 10.0, "x", None).accuracy is None
    assert from_noisy_counts(50.0, -1.0, 10.0, "x", None).accuracy == 1.0  # clipped
    assert from_noisy_counts(15.0, 4.0, 10.0, "x", None).accuracy is None  # 19 < 2σ: mostly noise


def test_a_class_counted_below_the_noise_gives_no_balanced_accuracy():
    """At ε = 0.1 (σ ≈ 48) a class of ~30 held-out rows is mostly noise: its share once read
    "balanced accuracy 0.08 ± 1.09". Below 2σ the release falls back to plain accuracy; from 2σ a
    two-class balanced accuracy's noise sd is at most 0.5/√2."""
    from dpcore.evaluate.released_score import from_noisy_class_counts

    for minority in (40.0, 60.0, 95.0):
        low = from_noisy_class_counts([[1.0, minority - 1.0], [170.0, 20.0]], 48.0, "lr", "heldout")
        assert low.balanced_accuracy is None and low.accuracy is not None
    for minority in (96.0, 100.0, 300.0):
        ok = from_noisy_class_counts([[1.0, minority - 1.0], [170.0, 20.0]], 48.0, "lr", "heldout")
        assert ok.balanced_accuracy is not None and ok.balanced_noise_sd <= 0.5 / math.sqrt(2)


def test_a_noisy_total_below_twice_its_noise_gives_no_accuracy():
    """The release that once read "accuracy 1.00 ± 2.14" (ε = 0.1, σ ≈ 34, 120 held-out rows whose
    noisy total came out ~20): no share is shown whose noise sd could exceed 0.5. Over many noisy
    releases of that table, every share shown has ± under 0.6 and the rest say they have none."""
    from dpcore.evaluate.released_score import from_noisy_class_counts, readable_total

    sigma = 34.0
    s = from_noisy_class_counts([[15.0, 0.0], [4.0, 1.0]], sigma, "lr", "heldout")
    assert s.accuracy is None and s.balanced_accuracy is None and s.plus_minus is None
    assert readable_total(sigma, 2) == pytest.approx(2 * sigma * math.sqrt(2))
    rng = np.random.default_rng(0)
    shown = 0
    for _ in range(5000):
        s = from_noisy_class_counts(np.array([[55.0, 10.0], [30.0, 25.0]]) + rng.normal(0, sigma, (2, 2)), sigma,
                                    "lr", "heldout")
        for pm in (s.plus_minus, s.balanced_plus_minus):
            assert pm is None or pm < 0.6
        shown += s.accuracy is not None
    assert 0.3 < shown / 5000 < 0.9  # ~120 held out at σ = 34: an accuracy about half the time
