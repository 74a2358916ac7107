import importlib.util
import json

import numpy as np

from dpcore.evaluate.report import evaluate_all
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def test_evaluate_all_keys_and_values(digits):
    led = PrivacyLedger()
    led.add(MechanismRecord("sgd", "subsampled_gaussian", noise_multiplier=1.1, sampling_rate=0.01, steps=100))
    out = evaluate_all(digits["train_img"], digits["train_img"], digits["test_img"], ledger=led, delta=1e-5,
                       n_targets=200)
    assert set(out) >= {"utility", "marginals", "mia", "seconds", "timings"}
    assert out["utility"]["mean"]["accuracy"] > 0.85
    assert out["marginals"]["tvd_1way"] == 0.0 and out["marginals"]["tvd_2way"] == 0.0
    assert out["mia"]["auc"] > 0.95 and out["mia"]["features"] == "pca40"
    if importlib.util.find_spec("dpcore.privacy.accountant") is not None:
        assert out["privacy"]["epsilon"] > 0
    json.dumps(out, default=float)


def test_evaluate_all_include_subset(digits):
    syn = digits["test"]
    out = evaluate_all(syn, digits["train"], digits["test"], include=("marginals",))
    assert set(out) == {"marginals", "seconds", "timings"}
    assert "tvd_1way_columns" in out["marginals"] and out["marginals"]["tvd_1way"] > 0
    assert np.isfinite(out["marginals"]["tvd_2way"])
