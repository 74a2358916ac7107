"""L-VAE: the certificate's ingredients (Lipschitz bound, latent radius, likelihood-difference
bound, the exponential mechanism itself) and the Synthesizer protocol on digits."""
import math

import numpy as np
import pytest
import torch

from dpcore.errors import InvalidParameter
from dpcore.models import lipschitz as lip
from dpcore.models.lvae import LVAE, LVAEConfig
from dpcore.models.protocol import PrivacyBudget


def _trained_sn(sizes, L, seed=0, steps=20):
    """A LipschitzMLP whose weights moved away from init (so power iteration had work to do)."""
    g = torch.Generator().manual_seed(seed)
    net = lip.LipschitzMLP(sizes, L, g)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(steps):
        z = torch.randn(32, sizes[0], generator=g)
        loss = -(net(z) * torch.randn(32, sizes[-1], generator=g)).sum()  # push the norms up
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    net.finalize()
    return net


def test_latent_radius_matches_chi2_and_monte_carlo():
    assert lip.latent_radius(8, 1e-5) == pytest.approx(6.11, abs=0.005)
    assert lip.latent_radius(32, 1e-5) == pytest.approx(8.84, abs=0.005)
    for d in (2, 8, 32):
        r = lip.latent_radius(d, 0.05)
        z = np.random.default_rng(d).standard_normal((200_000, d))
        outside = float((np.linalg.norm(z, axis=1) > r).mean())
        assert abs(outside - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 200_000)
    with pytest.raises(InvalidParameter):
        lip.latent_radius(8, 0.0)


def test_spectral_decoder_is_L_lipschitz():
    L = 2.5
    net = _trained_sn([4, 64, 64, 30], L)
    assert lip.layer_product_bound(net) <= L * (1 + 1e-5)
    g = torch.Generator().manual_seed(1)
    z1 = torch.randn(4000, 4, generator=g) * 3
    z2 = torch.cat([z1[:2000] + 1e-3 * torch.randn(2000, 4, generator=g),
                    torch.randn(2000, 4, generator=g) * 3])
    assert float(lip.pair_ratios(net, z1, z2).max()) <= L + 1e-5
    assert float(lip.jacobian_spectral_norms(net, z1[:500]).detach().max()) <= L * (1 + 1e-5)
    # an unconstrained MLP of the same shape is not bounded by L: the test can fail
    plain = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 30))
    with torch.no_grad():
        plain[2].weight.mul_(50.0)
    assert float(lip.pair_ratios(plain, z1, z2).max()) > L


def test_power_iteration_estimate_never_exceeds_exact_norm():
    g = torch.Generator().manual_seed(0)
    layer = lip.SpectralLinear(20, 30, 1.0, g)
    layer.train()
    for _ in range(3):
        layer(torch.randn(4, 20, generator=g))
    exact = float(torch.linalg.matrix_norm(layer.weight.detach().double(), ord=2))
    assert float(layer.sigma) <= exact * (1 + 1e-6)
    layer.finalize()
    assert float(torch.linalg.matrix_norm(layer.effective_weight().double(), ord=2)) <= 1.0


@pytest.mark.parametrize("likelihood,scale", [("gaussian", 0.5), ("bernoulli", 1.0)])
def test_likelihood_difference_range_is_bounded(likelihood, scale):
    """range over z of log p(x|z) − log p(x'|z) ≤ ε for random rows of the domain, z anywhere."""
    d, D, k = 3, 12, 4
    net = _trained_sn([d, 32, 32, D + k], 1.7, seed=2)
    radius = lip.latent_radius(d, 1e-3)
    diam = lip.data_diameter(D, k)
    eps = lip.posterior_sampling_epsilon(lip.layer_product_bound(net), radius, diam, scale)
    rng = np.random.default_rng(0)
    z = torch.as_tensor(rng.standard_normal((20_000, d)) * 3, dtype=torch.float32)
    with torch.no_grad():
        out = net(lip.project_to_ball(z, radius))
    worst = 0.0
    for i in range(60):
        rows = []
        for _ in range(2):
            feat = rng.random(D) if i % 3 else rng.integers(0, 2, D).astype(float)
            rows.append(np.r_[feat, np.eye(k)[rng.integers(k)]])
        x, x2 = (torch.as_tensor(r, dtype=torch.float32) for r in rows)
        diff = (lip.log_likelihood(x, out, likelihood, scale)
                - lip.log_likelihood(x2, out, likelihood, scale))
        worst = max(worst, float(diff.max() - diff.min()))
    assert worst <= eps
    assert worst > 0.05 * eps  # the bound is of the right order, not vacuous


def test_posterior_sampling_is_epsilon_dp_on_a_grid():
    """The mechanism itself: exact posteriors on a fine 1-D latent grid, all pairs of extreme rows."""
    D = 6
    net = _trained_sn([1, 16, 16, D], 1.3, seed=3)
    radius = lip.latent_radius(1, 0.01)
    eps = lip.posterior_sampling_epsilon(lip.layer_product_bound(net), radius, math.sqrt(D), 0.7)
    z = torch.linspace(-9, 9, 20_001)[:, None]
    with torch.no_grad():
        out = net(lip.project_to_ball(z, radius))
    prior = -0.5 * z[:, 0] ** 2
    rng = np.random.default_rng(1)
    xs = [np.zeros(D), np.ones(D)] + [rng.integers(0, 2, D).astype(float) for _ in range(10)]
    logpost = []
    for x in xs:
        t = prior + lip.log_likelihood(torch.as_tensor(x, dtype=torch.float32), out, "gaussian", 0.7)
        logpost.append(t - torch.logsumexp(t, 0))
    worst = max(float((a - b).abs().max()) for a in logpost for b in logpost)
    assert worst <= eps


def test_fit_sample_save_load(digits, tmp_path):
    train, test = digits
    cfg = LVAEConfig(epochs=1, hidden=32, batch_size=128, lipschitz=1.5)
    model = LVAE(cfg)
    events = []
    res = model.fit(train, callback=events.append)
    assert events and {"recon", "kl", "loss"} <= set(events[-1].losses)
    assert math.isinf(res.epsilon) and len(model.privacy_ledger()) == 0
    s = model.sample(40, seed=7)
    assert s.features.shape == (40, train.n_features) and s.labels.shape == (40,)
    assert s.features.min() >= 0 and s.features.max() <= 1 and s.labels.max() < 10
    claim = model.privacy_claim()
    assert claim["certified"] and claim["delta"] == 0.0
    assert claim["lipschitz_bound"] <= 1.5 * (1 + 1e-5)
    assert claim["empirical_lipschitz"] <= claim["lipschitz_bound"] * (1 + 1e-5)
    expected = lip.posterior_sampling_epsilon(claim["lipschitz_bound"], lip.latent_radius(8, 1e-5),
                                              math.sqrt(train.n_features + 2), cfg.recon_scale)
    assert claim["epsilon"] == pytest.approx(expected)
    model.save(tmp_path / "m")
    back = LVAE.load(tmp_path / "m")
    np.testing.assert_array_equal(back.sample(40, seed=7).features, s.features)
    np.testing.assert_array_equal(back.sample(40, seed=7).labels, s.labels)
    assert back.privacy_claim()["epsilon"] == pytest.approx(claim["epsilon"])


def test_budget_sets_L_and_penalty_variant_is_not_certified(digits):
    train, _ = digits
    small = dict(epochs=1, hidden=16, batch_size=256)
    model = LVAE(LVAEConfig(**small))
    model.fit(train, PrivacyBudget(80.0, 1e-5))
    claim = model.privacy_claim()
    assert claim["epsilon"] <= 80.0 and claim["epsilon"] == pytest.approx(80.0, rel=1e-4)
    pen = LVAE(LVAEConfig(variant="penalty", **small))
    with pytest.raises(InvalidParameter):
        pen.fit(train, PrivacyBudget(80.0, 1e-5))
    stops = []
    res = pen.fit(train, callback=lambda e: stops.append(e) or len(stops) < 2)
    assert res.stopped and len(stops) == 2
    claim = pen.privacy_claim()
    assert claim["certified"] is False and claim["epsilon"] is None
    assert claim["empirical_lipschitz"] > 0 and "penalty" in claim["variant"]
    assert pen.sample(5, seed=0).n == 5


def test_epsilon_field_sets_L_without_a_budget(digits):
    """The runner passes no budget to non-accounted models: the config's epsilon must suffice."""
    train, _ = digits
    model = LVAE(LVAEConfig(epsilon=80.0, epochs=1, hidden=16, batch_size=256))
    model.fit(train)
    assert model.privacy_claim()["epsilon"] == pytest.approx(80.0, rel=1e-4)
    with pytest.raises(InvalidParameter, match="penalty"):
        LVAEConfig(variant="penalty", epsilon=10.0)
    with pytest.raises(InvalidParameter, match="epsilon"):
        LVAEConfig(epsilon=0.0)
