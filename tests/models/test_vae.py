"""VAE and DP-VAE on digits."""
import math

import numpy as np
import pytest

from dpcore.models import load_model, make_model
from dpcore.privacy.accountant import epsilon as accountant_epsilon

TINY = dict(latent_dim=6, hidden=32, epochs=1, batch_size=100)


@pytest.mark.parametrize("name", ["vae", "dp-vae"])
def test_fit_sample_save_load(digits, name, tmp_path):
    train, test = digits
    events = []
    model = make_model(name, **TINY)
    res = model.fit(train, callback=events.append)
    s = model.sample(25, seed=2)
    assert s.features.shape == (25, train.n_features) and s.labels.shape == (25,)
    assert s.label_names == train.label_names and s.image_shape == train.image_shape
    assert {e.phase for e in events} == {"sgd"} and set(events[-1].losses) == {"recon", "kl", "loss"}
    if name == "vae":
        assert math.isinf(res.epsilon) and len(model.privacy_ledger()) == 0
    else:
        assert res.epsilon == accountant_epsilon(model.privacy_ledger(), res.delta)
        assert 0.9 < res.epsilon <= 1.0 + 1e-6
    assert model.encode(test).shape == (test.n, 6)
    prior = model.latent_prior()
    np.testing.assert_array_equal(prior["means"], np.zeros((1, 6)))
    model.save(tmp_path)
    again = load_model(tmp_path)
    np.testing.assert_array_equal(again.sample(25, seed=2).features, s.features)
    np.testing.assert_allclose(again.encode(test), model.encode(test))
