"""The Train page's noise preview is the run's own calibration, preprocessing records included."""
import json

import pytest

from dpcore.privacy.accountant import epsilon
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.ui.forms import calibration_preview

P3GM = {"epsilon": 1.0, "delta": 1e-5, "encoder_share": 0.3, "pca_dim": 10, "batch_size": 100,
        "epochs": 2, "components": 1, "em_iters": 10, "pca_center": "noisy"}
DPVAE = {"epsilon": 1.0, "delta": 1e-5, "batch_size": 100, "epochs": 2}
BOUNDS = [MechanismRecord("dp-bounds", "gaussian", 20.0, steps=4).to_dict()]


@pytest.mark.parametrize("model, params", [("p3gm", P3GM), ("dp-vae", DPVAE)])
def test_preview_spends_what_is_left_after_preprocessing(model, params):
    plain = calibration_preview(model, json.dumps(params), 5000)
    spent = calibration_preview(model, json.dumps(params), 5000, json.dumps(BOUNDS))
    ledger = PrivacyLedger.from_list(spent["ledger"])
    assert ledger.records[0].name == "dp-bounds"
    assert epsilon(ledger, 1e-5) == pytest.approx(1.0, abs=1e-6)
    # the model's own part must get more noise than without the preprocessing records
    assert spent["sgd_sigma"] > plain["sgd_sigma"]


def test_preview_none_for_non_private_models():
    assert calibration_preview("vae", json.dumps({"epochs": 1}), 100) is None


def test_lvae_blurb_does_not_claim_a_certified_privacy():
    """Every release of an L-VAE comes from a decoder trained without DP: the picker must say ε = ∞."""
    from dpcore.ui.forms import MODEL_BLURBS

    text = MODEL_BLURBS["lvae"]
    assert "privacy is certified" not in text and "ε = ∞" in text and "not offered" in text
