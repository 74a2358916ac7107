"""GS-WGAN: the sanitiser (clipping, noise of the ledgered scale, nothing bypasses it), the
accounting argument, and the Synthesizer protocol on digits."""
import math

import numpy as np
import pytest
import torch

from dpcore.models.gswgan import GSWGAN, CriticEnsemble, GSWGANConfig, _Generator, generator_backward
from dpcore.models.protocol import PrivacyBudget
from dpcore.models.saved import load_tensors
from dpcore.privacy.gradient_sanitizer import RECORD_NAME, GradientSanitizer, clip_rows, ledger_record

TINY = dict(steps=3, batch_size=8, n_discriminators=10, critic_steps=1, critic_batch=8,
            warmup_steps=1, latent_dim=8, gen_hidden=32, critic_hidden=16)


def test_clip_rows_bounds_every_row():
    g = torch.Generator().manual_seed(0)
    grad = torch.randn(500, 64, generator=g) * torch.logspace(-3, 2, 500)[:, None]
    out = clip_rows(grad, 0.7)
    assert float(out.norm(dim=1).max()) <= 0.7 * (1 + 1e-6)
    small = grad.norm(dim=1) <= 0.7
    torch.testing.assert_close(out[small], grad[small])
    big = ~small
    torch.testing.assert_close(out[big].norm(dim=1), torch.full((int(big.sum()),), 0.7))


def test_noise_has_the_ledgered_scale():
    """(sanitised − clipped) ~ N(0, σ²C²): its std divided by the record's sensitivity is the
    record's noise multiplier (statistical test on 400k coordinates)."""
    sigma, clip = 1.7, 0.5
    g = torch.Generator().manual_seed(1)
    san = GradientSanitizer(clip, sigma, torch.Generator().manual_seed(2))
    grad = torch.randn(2000, 200, generator=g) * 3
    noise = san(grad) - clip_rows(grad, clip)
    std = float(noise.std())
    assert abs(float(noise.mean())) < 5 * sigma * clip / math.sqrt(noise.numel())
    assert std == pytest.approx(sigma * clip, rel=0.01)  # sd of the estimate ≈ 0.11 %
    rec = ledger_record(sigma, n_discriminators=50, queries=2000, clip=clip)
    assert rec.name == RECORD_NAME and rec.sampling_rate == pytest.approx(1 / 50)
    assert std / rec.sensitivity == pytest.approx(rec.noise_multiplier, rel=0.01)


def test_generator_gradient_is_exactly_the_sanitised_tensor_backpropagated():
    g = torch.Generator().manual_seed(0)
    gen = _Generator(6, 3, 16, 10, g)
    critics = CriticEnsemble(5, 13, 8, g, torch.device("cpu"), 1e-3, (0.5, 0.9))
    before = {k: v.clone() for k, v in critics.p.items()}
    z = torch.randn(12, 6, generator=g)
    y = torch.randint(3, (12,), generator=g)
    route = torch.randint(5, (12,), generator=g)
    san = GradientSanitizer(1.0, 0.8, torch.Generator().manual_seed(5))
    gen.zero_grad()
    _, sanitised = generator_backward(gen, critics, route, z, y, san)
    params = list(gen.parameters())
    by_hand = torch.autograd.grad(gen(z, y), params, grad_outputs=sanitised / len(z))
    for p, h in zip(params, by_hand):
        torch.testing.assert_close(p.grad, h, rtol=1e-5, atol=1e-7)
    assert float(clip_rows(sanitised, 1e9).norm(dim=1).max()) > 1.0  # noise really was added
    for k, v in critics.p.items():  # the critics are untouched by the generator step
        torch.testing.assert_close(v, before[k])


def test_row_gradient_depends_only_on_its_routed_critic():
    g = torch.Generator().manual_seed(3)
    gen = _Generator(4, 0, 8, 6, g)
    critics = CriticEnsemble(4, 6, 8, g, torch.device("cpu"), 1e-3, (0.5, 0.9))
    z = torch.randn(6, 4, generator=g)
    route = torch.tensor([0, 1, 2, 3, 0, 1])
    san = GradientSanitizer(1e6, 0.0)  # no clipping, no noise: the raw per-row gradients
    _, g1 = generator_backward(gen, critics, route, z, None, san)
    with torch.no_grad():
        critics.p["w1"][3].mul_(-2.0)  # change critic 3 only (as a changed shard would)
    _, g2 = generator_backward(gen, critics, route, z, None, san)
    changed = (g1 - g2).norm(dim=1) > 1e-7
    assert changed.tolist() == [False, False, False, True, False, False]


def _renyi_moment(q, s, a, b, c, alpha, n=801):
    """log ∫ P^α Q^(1−α), P = (1−q)N_c + qN_a, Q = (1−q)N_c + qN_b in 2-D (the plane of a, b, c)."""
    lim = 10 * s + 2 + alpha
    xs = np.linspace(-lim, lim, n)
    X, Y = np.meshgrid(xs, xs)

    def logn(m):
        return -((X - m[0]) ** 2 + (Y - m[1]) ** 2) / (2 * s * s) - np.log(2 * np.pi * s * s)

    lp = np.logaddexp(np.log1p(-q) + logn(c), np.log(q) + logn(a))
    lq = np.logaddexp(np.log1p(-q) + logn(c), np.log(q) + logn(b))
    t = alpha * lp + (1 - alpha) * lq
    m = t.max()
    return m + np.log(np.exp(t - m).sum() * (xs[1] - xs[0]) ** 2)


@pytest.mark.parametrize("sigma,ndis", [(1.0, 4), (2.2, 10)])
def test_routed_query_within_the_ledgered_rdp(sigma, ndis):
    """Rényi divergence of one routed query (means a, b and the other critics' c in the C-ball)
    stays below the accountant's RDP for the ledger record of that query."""
    from dpcore.privacy.accountant import rdp

    clip, orders = 1.0, np.array([2.0, 4.0, 8.0])
    rec = ledger_record(sigma, ndis, queries=1, clip=clip)
    bound = rdp([rec], orders)
    q, s = 1 / ndis, sigma * clip
    a, b = np.array([clip, 0.0]), np.array([-clip, 0.0])
    for c in ([-1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [-0.6, 0.8], [0.3, -0.5]):
        for alpha, ub in zip(orders, bound):
            d = _renyi_moment(q, s, a, b, np.array(c), alpha) / (alpha - 1)
            assert d <= ub + 1e-6, (c, alpha, d, ub)


def test_fit_ledger_sample_save_load(digits, tmp_path):
    from dpcore.privacy.accountant import epsilon

    train, _ = digits
    model = GSWGAN(GSWGANConfig(**TINY))
    events = []
    res = model.fit(train, PrivacyBudget(5.0, 1e-5), callback=events.append)
    led = model.privacy_ledger()
    assert [r.name for r in led] == [RECORD_NAME]
    rec = led.records[0]
    assert rec.steps == 3 * 8 and rec.sampling_rate == pytest.approx(0.1)
    assert rec.noise_multiplier == pytest.approx(model.calibration["noise_multiplier"] / 2)
    assert res.epsilon == pytest.approx(epsilon(led, 1e-5)) and res.epsilon == pytest.approx(5.0, rel=1e-4)
    assert events[-1].phase == "gan" and events[-1].epsilon == pytest.approx(res.epsilon)
    assert {"wasserstein", "gp", "generator"} <= set(events[-1].losses)
    s = model.sample(30, seed=4)
    assert s.features.shape == (30, 64) and s.labels.shape == (30,)
    assert s.features.min() >= 0 and s.features.max() <= 1 and 0 <= s.labels.min() and s.labels.max() < 10
    model.save(tmp_path / "g")
    back = GSWGAN.load(tmp_path / "g")
    np.testing.assert_array_equal(back.sample(30, seed=4).features, s.features)
    np.testing.assert_array_equal(back.sample(30, seed=4).labels, s.labels)
    assert back.privacy_ledger().records == led.records
    assert not any("critic" in k for k in load_tensors(tmp_path / "g" / "weights.safetensors"))


def test_stop_and_paper_preset(digits):
    train, _ = digits
    model = GSWGAN(GSWGANConfig(**{**TINY, "steps": 50}))
    seen = []
    res = model.fit(train, callback=lambda e: seen.append(e) or len(seen) < 3)
    assert res.stopped and len(seen) == 3
    assert model.privacy_ledger().records[0].steps == 2 * 8  # only the queries made are ledgered
    assert model.sample(3, seed=0).n == 3
    paper = GSWGANConfig.paper()
    assert (paper.n_discriminators, paper.steps, paper.batch_size, paper.device) == (1000, 20_000, 32, "auto")


def test_pooled_generator_releases_full_size_block_images(digits, tmp_path):
    """pool=2 on 8×8 digits: the generator and critics work on 4×4 block means (the sanitised
    gradient has 16 entries per row); released rows are 8×8, constant on each 2×2 block."""
    train, _ = digits
    model = GSWGAN(GSWGANConfig(pool=2, epsilon=math.inf, **TINY))
    model.fit(train)
    assert model.generator.mlp[-1].out_features == 16
    rows = model.sample(12, seed=4)
    assert rows.features.shape == (12, 64)
    img = rows.features.reshape(12, 4, 2, 4, 2)
    np.testing.assert_allclose(img, np.broadcast_to(img[:, :, :1, :, :1], img.shape), atol=1e-6)
    model.save(tmp_path)
    back = GSWGAN.load(tmp_path)
    np.testing.assert_array_equal(back.sample(12, seed=4).features, rows.features)


def test_runs_saved_before_pool_existed_load_at_full_resolution(digits, tmp_path):
    import json

    train, _ = digits
    model = GSWGAN(GSWGANConfig(pool=1, epsilon=math.inf, **TINY))
    model.fit(train)
    model.save(tmp_path)
    meta = json.loads((tmp_path / "model.json").read_text())
    del meta["config"]["pool"]
    (tmp_path / "model.json").write_text(json.dumps(meta))
    back = GSWGAN.load(tmp_path)
    assert back.config.pool == 1
    np.testing.assert_array_equal(back.sample(8, seed=1).features, model.sample(8, seed=1).features)


class _Stop(Exception):
    pass


def _critic_updates(train, route_seed, **cfg):
    """(ids, grads) of every critic update before the first generator step, with the routing
    coins replaced by a generator seeded with `route_seed` (the rest: the debug-mode streams)."""
    from dpcore.privacy.randomness import NoiseSource

    calls, real_step, real_torch = [], CriticEnsemble.adam_step, NoiseSource.torch

    def spy(self, ids, grads):
        calls.append((ids.tolist(), {k: g.clone() for k, g in grads.items()}))
        real_step(self, ids, grads)

    def stop(self, *args, **kwargs):
        raise _Stop

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(NoiseSource, "torch", lambda self, name, device="cpu": (
            torch.Generator().manual_seed(route_seed) if name == "gswgan-routes"
            else real_torch(self, name, device)))
        mp.setattr(CriticEnsemble, "adam_step", spy)
        mp.setattr(torch.optim.Adam, "step", stop)
        model = GSWGAN(GSWGANConfig(**{**TINY, **cfg, "reproducible_noise": True}))
        with pytest.raises(_Stop):  # stop at the first generator step
            model.fit(train, PrivacyBudget(5.0, 1e-5))
    return calls


def test_critics_do_not_depend_on_the_routing_coins(digits):
    """Finding 6: critic j must be a function of shard j, its own stream and the generator. The
    critic updates before the first generator step must not change when only the routes do."""
    a = _critic_updates(digits[0], 1, critic_steps=2)
    b = _critic_updates(digits[0], 2, critic_steps=2)
    assert [ids for ids, _ in a] == [ids for ids, _ in b] == [list(range(10))] * 3  # warm-up + 2: all
    for (_, ga), (_, gb) in zip(a, b):
        assert all(torch.equal(ga[k], gb[k]) for k in ga)


def test_same_seed_secret_runs_differ_and_debug_runs_repeat(digits):
    train = digits[0]
    fit = [GSWGAN(GSWGANConfig(**TINY, reproducible_noise=r)) for r in (False, False, True, True)]
    for m in fit:
        m.fit(train, PrivacyBudget(5.0, 1e-5))
    rows = [m.sample(20, seed=0).features for m in fit]
    assert not np.array_equal(rows[0], rows[1])
    np.testing.assert_array_equal(rows[2], rows[3])
    assert [m.privacy_ledger().reproducible_noise for m in fit] == [False, False, True, True]


def test_the_training_log_does_not_depend_on_the_row_count(digits):
    """Issue 41: the log said epoch step·B/n (32/365 vs 32/363), the exact n of a model that releases
    no noisy count. Neighbouring sizes now log the same events, raw critic losses aside."""
    train, _ = digits
    logs, calibrations = [], []
    for n in (363, 364):
        model = GSWGAN(GSWGANConfig(**TINY))
        events = []
        model.fit(train.subset(np.arange(n)), PrivacyBudget(5.0, 1e-5), callback=events.append)
        logs.append([{k: v for k, v in e.to_dict().items() if k != "losses"} for e in events])
        calibrations.append(model.calibration)
    assert logs[0] == logs[1] and len(logs[0]) == TINY["warmup_steps"] + TINY["steps"]
    assert calibrations[0] == calibrations[1]


def test_a_runs_drawn_sample_does_not_count_its_rows(tmp_path):
    """GS-WGAN releases no ñ, so the rows a run draws for scoring and download (covered by ε) were
    its exact training n; now a constant for neighbouring sizes."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig
    from dpcore.runs.evaluation import MAX_SYNTHETIC, load_bundle

    drawn = []
    for n in (363, 364):
        cfg = RunConfig("gs-wgan", {**TINY, "epsilon": 5.0}, {"dataset": "digits", "n": n, "test_size": 0.0})
        b = load_bundle(train_run(cfg, tmp_path / "runs", name=f"g{n}").path)
        drawn.append((b.train.n, b.synthetic.n))
    assert drawn == [(363, MAX_SYNTHETIC), (364, MAX_SYNTHETIC)]
