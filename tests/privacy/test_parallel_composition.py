"""Parallel composition of held-out records with the training side (ledger partition)."""
import numpy as np
import pytest

from dpcore.errors import InvalidParameter
from dpcore.privacy import accountant as acc
from dpcore.privacy.accountants.rdp import sides
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

DELTA = 1e-5
ORDERS = acc.DEFAULT_ORDERS


def _g(name, z, partition=None, **kw):
    return MechanismRecord(name, "gaussian", z, partition=partition, **kw)


def _sgd():
    return MechanismRecord("dp-sgd", "subsampled_gaussian", 1.1, sampling_rate=0.02, steps=300)


def test_the_curve_is_the_larger_side_and_all_rows_records_count_on_both():
    bounds, train, score = _g("bounds", 10.0, "all"), _sgd(), _g("score", 3.0, "heldout")
    led = PrivacyLedger([bounds, train, score])
    r = {k: acc.record_rdp(v, ORDERS) for k, v in (("b", bounds), ("t", train), ("s", score))}
    np.testing.assert_allclose(acc.rdp(led, ORDERS), np.maximum(r["b"] + r["t"], r["b"] + r["s"]))
    assert [len(s) for s in sides(led)] == [2, 2]
    # the all-rows record counts: dropping it lowers ε
    assert acc.epsilon(led, DELTA) > acc.epsilon(PrivacyLedger([_sgd(), _g("score", 3.0, "heldout")]), DELTA)


def test_a_weaker_score_leaves_the_training_epsilon_and_a_stronger_one_sets_it():
    train = PrivacyLedger([_g("count", 50.0), _sgd()])
    eps_train = acc.epsilon(train, DELTA)
    weak = PrivacyLedger([*train, _g("score", acc.calibrate_gaussian(0.1, DELTA), "heldout")])
    assert acc.epsilon(weak, DELTA) == pytest.approx(eps_train, rel=1e-9)
    strong_z = acc.calibrate_gaussian(3 * eps_train, DELTA)
    strong = PrivacyLedger([*train, _g("score", strong_z, "heldout")])
    assert acc.epsilon(strong, DELTA) == pytest.approx(3 * eps_train, rel=1e-6)


def test_without_a_heldout_partition_a_score_composes_sequentially():
    train = PrivacyLedger([_sgd()])
    z = acc.calibrate_gaussian(0.5, DELTA)
    seq = PrivacyLedger([_sgd(), _g("score", z)])  # partition None: a built-in's seeded split
    par = PrivacyLedger([_sgd(), _g("score", z, "heldout")])
    np.testing.assert_allclose(acc.rdp(seq, ORDERS), acc.rdp(train, ORDERS) + ORDERS / (2 * z * z))
    assert acc.epsilon(seq, DELTA) > acc.epsilon(par, DELTA) + 0.05  # RDP adds sublinearly: 2.07 → 2.14
    assert acc.epsilon(par, DELTA) == pytest.approx(acc.epsilon(train, DELTA))


@pytest.mark.parametrize("fn", [acc.pld_epsilon, acc.baseline_epsilon])
def test_pld_and_the_sequential_baseline_take_the_larger_side(fn):
    bounds, train, score = _g("bounds", 20.0, "all"), _sgd(), _g("score", 0.8, "heldout")
    led = PrivacyLedger([bounds, train, score])
    expect = max(fn(PrivacyLedger([_g("bounds", 20.0), _sgd()]), DELTA),
                 fn(PrivacyLedger([_g("bounds", 20.0), _g("score", 0.8)]), DELTA))
    assert fn(led, DELTA) == pytest.approx(expect, rel=1e-9)
    assert fn(led, DELTA) < fn(PrivacyLedger([_g("bounds", 20.0), _sgd(), _g("score", 0.8)]), DELTA)


def test_pld_delta_curve_is_the_larger_side_pointwise():
    led = PrivacyLedger([_g("a", 4.0, "all"), _g("t", 2.0), _g("s", 1.5, "heldout")])
    eps = np.linspace(0, 3, 7)
    one = acc.pld_delta_curve(PrivacyLedger([_g("a", 4.0), _g("t", 2.0)]), eps)
    two = acc.pld_delta_curve(PrivacyLedger([_g("a", 4.0), _g("s", 1.5)]), eps)
    np.testing.assert_allclose(acc.pld_delta_curve(led, eps), np.maximum(one, two))
    assert acc.pld_delta(led, 1.0) == pytest.approx(max(acc.pld_delta(PrivacyLedger([_g("a", 4.0), _g("t", 2.0)]), 1.0),
                                                         acc.pld_delta(PrivacyLedger([_g("a", 4.0), _g("s", 1.5)]), 1.0)))


def test_partition_round_trips_and_is_allow_listed():
    r = _g("score", 2.0, "heldout")
    assert MechanismRecord.from_dict(r.to_dict()) == r
    assert "partition" not in _g("x", 2.0).to_dict()  # training records keep their old form
    for bad in ("everything", "", 1, ["heldout"]):
        with pytest.raises(InvalidParameter, match="partition"):
            MechanismRecord.from_dict({**r.to_dict(), "partition": bad})


@pytest.mark.parametrize("eps", [0.1, 0.7, 2.0])
def test_calibrate_gaussian_reaches_the_target_exactly(eps):
    z = acc.calibrate_gaussian(eps, DELTA)
    assert acc.epsilon([_g("s", z)], DELTA) == pytest.approx(eps, rel=1e-9)
    assert acc.epsilon([_g("s", z * 0.99)], DELTA) > eps


def test_budget_shares_are_of_the_side_that_sets_epsilon():
    from dpcore.privacy.budget import budget_share, composition_table

    led = PrivacyLedger([_g("bounds", 30.0, "all"), _sgd(), _g("score", acc.calibrate_gaussian(0.1, DELTA), "heldout")])
    rows, eps, _ = budget_share(led, DELTA)
    assert eps == pytest.approx(acc.epsilon(led, DELTA))
    assert rows[2]["share"] == 0.0 and sum(r["share"] for r in rows[:2]) == pytest.approx(1.0)
    strong = PrivacyLedger([_g("bounds", 30.0, "all"), _sgd(), _g("score", 0.5, "heldout")])
    rows, _, _ = budget_share(strong, DELTA)
    assert rows[1]["share"] == 0.0 and rows[2]["share"] > 0.9
    table = {r["analysis"]: r["epsilon"] for r in composition_table(led, DELTA)}
    assert table["RDP, tight (reported)"] == pytest.approx(acc.epsilon(PrivacyLedger(led.records[:2]), DELTA))
