"""The Train page's noise preview is the model's own plan, preprocessing records included."""
import dataclasses
import json

import pytest

from dpcore.models import get_model
from dpcore.models.synthesizer import DataFacts
from dpcore.privacy.accountant import epsilon
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.ui.forms import plan_preview

P3GM = {"epsilon": 1.0, "delta": 1e-5, "encoder_share": 0.3, "pca_dim": 10, "batch_size": 100,
        "epochs": 2, "components": 1, "em_iters": 10, "pca_center": "noisy"}
DPVAE = {"epsilon": 1.0, "delta": 1e-5, "batch_size": 100, "epochs": 2}
BOUNDS = [MechanismRecord("dp-bounds", "gaussian", 20.0, steps=4).to_dict()]


def preview(model, params, spent=()):
    facts = DataFacts(n=5000, n_features=64, spent=tuple(spent))
    return plan_preview(model, json.dumps(params), json.dumps(dataclasses.asdict(facts)))


@pytest.mark.parametrize("model, params", [("p3gm", P3GM), ("dp-vae", DPVAE)])
def test_preview_spends_what_is_left_after_preprocessing(model, params):
    plain = preview(model, params)
    spent = preview(model, params, BOUNDS)
    ledger = PrivacyLedger.from_list(spent["ledger"])
    assert ledger.records[0].name == "dp-bounds"
    assert epsilon(ledger, 1e-5) == pytest.approx(1.0, abs=1e-6)
    # the model's own part must get more noise than without the preprocessing records
    assert spent["noise"]["σ_s  (DP-SGD)"] > plain["noise"]["σ_s  (DP-SGD)"]


def test_preview_has_no_noise_for_non_private_models():
    plan = preview("vae", {"epochs": 1})
    assert plan["noise"] == {} and plan["epsilon"] == float("inf")


def test_lvae_blurb_does_not_claim_a_certified_privacy():
    """Every release of an L-VAE comes from a decoder trained without DP: the picker must say ε = ∞."""
    text = get_model("lvae").description
    assert "privacy is certified" not in text and "ε = ∞" in text and "not offered" in text
