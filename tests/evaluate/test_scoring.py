"""dpcore.evaluate.scoring: the one evaluation path, numbers only, with the attack ladder's best attack
checked against the accountant's ε."""
import json

import numpy as np

from dpcore.evaluate.scoring import evaluate_all
from dpcore.privacy.accountant import epsilon
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def _ledger():
    led = PrivacyLedger()
    led.add(MechanismRecord("sgd", "subsampled_gaussian", noise_multiplier=1.1, sampling_rate=0.01, steps=100))
    return led


def test_evaluate_all_keys_and_values(digits):
    led = _ledger()
    out = evaluate_all(digits["train_img"], digits["train_img"], digits["test_img"], ledger=led, delta=1e-5,
                       n_targets=200)
    assert set(out) >= {"utility", "marginals", "attacks", "privacy", "seconds", "timings"}
    assert out["utility"]["mean"]["accuracy"] > 0.85
    assert out["marginals"]["tvd_1way"] == 0.0 and out["marginals"]["tvd_2way"] == 0.0
    assert out["privacy"]["epsilon"] == epsilon(led, 1e-5)
    ladder = out["attacks"]
    assert {a["name"] for a in ladder["attacks"]} == {"dcr", "monte-carlo", "gan-leaks", "domias"}
    assert "loss" in ladder["skipped"]  # no model given: no per-record loss
    best = ladder["best"]
    assert best["name"] in {"dcr", "monte-carlo", "gan-leaks"} and best["auc"] > 0.95
    assert best["epsilon_lower_bound"] == max(a["epsilon_lower_bound"] for a in ladder["attacks"])
    # The "synthetic" set is the training set: the attack proves more than this ledger allows, and the
    # stored evaluation says so.
    assert best["epsilon_lower_bound"] > out["privacy"]["epsilon"]
    assert best["consistent_with_epsilon"] is False
    assert all("curve" not in a for a in ladder["attacks"])
    json.dumps(out, allow_nan=True)  # numbers only


def test_held_out_rows_as_synthetic_are_consistent_with_the_accountant(digits):
    """Synthetic rows that never saw a member: no attack beats the (loose) bound of this ledger."""
    led = _ledger()
    out = evaluate_all(digits["test_img"], digits["train_img"], digits["test_img"], ledger=led, delta=1e-5,
                       n_targets=200, include=("attacks",))
    best = out["attacks"]["best"]
    assert best["auc"] < 0.65 and best["consistent_with_epsilon"] is True


def test_without_a_ledger_the_model_is_not_private(digits):
    out = evaluate_all(digits["test_img"], digits["train_img"], digits["test_img"], n_targets=100,
                       include=("attacks",))
    assert out["attacks"]["epsilon"] == "inf" and out["attacks"]["best"]["consistent_with_epsilon"] is None
    assert "privacy" not in out


def test_evaluate_all_include_subset(digits):
    syn = digits["test"]
    out = evaluate_all(syn, digits["train"], digits["test"], include=("marginals",))
    assert set(out) == {"marginals", "seconds", "timings"}
    assert "tvd_1way_columns" in out["marginals"] and out["marginals"]["tvd_1way"] > 0
    assert np.isfinite(out["marginals"]["tvd_2way"])
