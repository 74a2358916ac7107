"""Posterior re-sampling: one row per record, in schema; MH targets the exact posterior."""
import numpy as np
import pytest
import torch

from dpcore.errors import InvalidParameter
from dpcore.models import make_model
from dpcore.models.posterior import posterior_resample


@pytest.fixture(scope="module")
def vae(digits):
    train, _ = digits
    model = make_model("vae", latent_dim=2, hidden=32, epochs=3, batch_size=64)
    model.fit(train)
    return model


def test_resample_one_row_per_record_in_schema(vae, digits):
    train, _ = digits
    rows, info = posterior_resample(vae, train, mcmc_steps=3, seed=0)
    assert rows.n == train.n and rows.features.shape == train.features.shape
    assert rows.labels is not None and rows.labels.max() < train.n_classes
    assert 0.0 < info["acceptance"] <= 1.0
    again, _ = posterior_resample(vae, train, mcmc_steps=3, seed=0)
    np.testing.assert_array_equal(rows.features, again.features)


def test_mh_moves_encoder_draws_towards_the_posterior(vae, digits):
    """With a 2-d latent the exact posterior mean is computable on a grid; MH draws must be closer
    to it than plain encoder draws are on average (the encoder is only an approximation)."""
    train, _ = digits
    x = train.subset(np.arange(40))
    X = torch.as_tensor(vae._rows(x))
    g = torch.linspace(-4, 4, 161)
    grid = torch.cartesian_prod(g, g)
    with torch.no_grad():
        logp = (-0.5 * (grid ** 2).sum(1))[None] - torch.stack(
            [vae._recon(vae.decoder(grid), row.expand(len(grid), -1)) for row in X])
        w = torch.softmax(logp, dim=1)
        exact = (w @ grid).numpy()
    decoded_exact = vae.decode(exact)[:, :train.n_features]

    def err(steps):
        reps = [posterior_resample(vae, x, mcmc_steps=steps, seed=s)[0].features for s in range(30)]
        return float(np.abs(np.mean(reps, 0) - decoded_exact).mean())

    assert err(30) < err(0)


def test_models_without_a_variational_encoder_are_refused(digits):
    train, _ = digits
    model = make_model("p3gm-ae", epsilon=5.0, pca_dim=4, epochs=1, batch_size=200, hidden=16,
                       warmup_steps=0)
    model.fit(train)
    with pytest.raises(InvalidParameter, match="posterior"):
        posterior_resample(model, train)


def test_private_models_are_refused_with_one_line(digits):
    """Re-sampling reads every raw record through the encoder outside the ledger: a DP model's
    output would look covered by ε while it is not."""
    train, _ = digits
    model = make_model("dp-vae", epsilon=5.0, latent_dim=2, hidden=16, epochs=1, batch_size=200)
    model.fit(train)
    with pytest.raises(InvalidParameter) as exc:
        posterior_resample(model, train)
    assert "not covered by ε" in str(exc.value) and "\n" not in str(exc.value)


def test_resamples_are_marked_not_covered(vae, digits):
    train, _ = digits
    rows, _ = posterior_resample(vae, train.subset(np.arange(20)), seed=0)
    assert rows.meta["covered_by_epsilon"] is False and rows.meta["release"] == "posterior_resamples"
    assert "not covered by ε" in rows.name
