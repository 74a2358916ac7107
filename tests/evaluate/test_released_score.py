"""The released usefulness score as an attacker sees it: neighbouring held-out sets, noisy counts."""
import math

import numpy as np
import pytest
from scipy.stats import beta

from dpcore.evaluate.released_score import SCORE_RECORD, from_noisy_counts, held_out_counts, release_counts
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
    assert from_noisy_counts(5.0, -1.0, 10.0, "x", None).accuracy == 1.0  # clipped
