"""DP-SGD engine: clipped sums against Opacus and a brute-force per-example loop, noise scale
against the ledger's claim, Poisson sampling, optimisers, fallbacks, reproducibility."""
import copy
import math
import warnings

import pytest
import torch
from scipy import stats
from torch import nn

from dpcore.errors import InvalidParameter
from dpcore.privacy.dpsgd import DPSGD, clip_factors
from dpcore.privacy.ledger import PrivacyLedger


def recording(cls):
    """An optimiser class that keeps a copy of the gradients it was handed at each step."""

    class Recording(cls):
        def step(self, closure=None):
            self.seen = [p.grad.detach().clone() for g in self.param_groups for p in g["params"]]
            return super().step(closure)

    return Recording


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 50))


class TinyVAE(nn.Module):
    """VAE-ish net; the reparameterisation noise is an input so two forwards can share it."""

    def __init__(self, d=50, h=64, z=8):
        super().__init__()
        torch.manual_seed(1)
        self.enc = nn.Sequential(nn.Linear(d, h), nn.ReLU())
        self.mu, self.lv = nn.Linear(h, z), nn.Linear(h, z)
        self.dec = nn.Sequential(nn.Linear(z, h), nn.ReLU(), nn.Linear(h, d))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, lv = self.mu(h), self.lv(h)
        return self.dec(mu + eps * torch.exp(0.5 * lv)), mu, lv


def mlp_loss(m, x, y, eps=None):
    return (m(x) - y).pow(2).sum(1)


def vae_loss(m, x, y, eps):
    xh, mu, lv = m(x, eps)
    return (xh - y).pow(2).sum(1) - 0.5 * (1 + lv - mu.pow(2) - lv.exp()).sum(1)


def make_dp(model, opt_cls=torch.optim.SGD, *, C=1.0, B=40, n=1000, sigma=1.0, seed=None,
            ledger=None, noise=False, **opt_kw):
    opt = recording(opt_cls)(model.parameters(), **({"lr": 0.0} | opt_kw))
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    dp = DPSGD(model, opt, noise_multiplier=sigma, max_grad_norm=C, n=n, expected_batch_size=B,
               ledger=ledger, generator=gen)
    dp._noise_off = not noise
    return dp, opt


def brute_force(model, loss_fn, args, C, B):
    """Σ_i clip(∇loss_i) / B with one backward per example: slow, obviously right."""
    params = list(model.parameters())
    per = []
    for i in range(args[0].shape[0]):
        li = loss_fn(model, *[a[i:i + 1] if a is not None else None for a in args])[0]
        gs = torch.autograd.grad(li, params, allow_unused=True)
        per.append([torch.zeros_like(p) if g is None else g for g, p in zip(gs, params)])
    sq = torch.stack([sum(g.pow(2).sum() for g in pe) for pe in per])
    c = clip_factors(sq, C)
    return [sum(c[i] * per[i][k] for i in range(len(per))) / B for k in range(len(params))]


def close(got, want, tol=1e-5):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        assert torch.allclose(a, b, atol=tol, rtol=1e-4), (a - b).abs().max()


# (1) clipped sums equal Opacus's per-sample clipping ------------------------------------------
@pytest.mark.parametrize("kind", ["mlp", "vae"])
def test_clipped_sum_matches_opacus_hooks(kind):
    from opacus import GradSampleModule

    b, B = 24, 40
    g = torch.Generator().manual_seed(2)
    model, loss_fn = (mlp(), mlp_loss) if kind == "mlp" else (TinyVAE(), vae_loss)
    d_in = 30 if kind == "mlp" else 50
    x, y = torch.rand(b, d_in, generator=g), torch.rand(b, 50, generator=g)
    eps = torch.randn(b, 8, generator=g) if kind == "vae" else None

    ref = GradSampleModule(copy.deepcopy(model), batch_first=True, loss_reduction="sum")
    loss_fn(ref, x, y, eps).sum().backward()
    gs = [p.grad_sample.flatten(1) for p in ref.parameters()]
    norms = torch.cat(gs, 1).norm(dim=1)
    C = float(norms.median())                 # about half the examples are clipped
    c = (C / (norms + 1e-6)).clamp(max=1.0)
    assert (c < 1).any() and (c == 1).any()
    want = [(c[:, None] * gsi).sum(0).view_as(p) / B for gsi, p in zip(gs, ref.parameters())]

    dp, opt = make_dp(model, C=C, B=B)
    info = dp.step(loss_fn(model, x, y, eps))
    assert info["path"] == "fast" and info["batch_size"] == b
    assert 0 < info["fraction_clipped"] <= 1
    assert info["fraction_clipped"] == pytest.approx(float((c < 1).float().mean()))
    close(opt.seen, want)


def test_huge_clip_norm_gives_sum_over_expected_batch_size():
    model = mlp()
    x, y = torch.rand(17, 30), torch.rand(17, 50)
    plain = copy.deepcopy(model)
    mlp_loss(plain, x, y).sum().backward()
    dp, opt = make_dp(model, C=1e9, B=40)
    info = dp.step(mlp_loss(model, x, y))
    assert info["fraction_clipped"] == 0 and info["mean_clip_factor"] == 1
    close(opt.seen, [p.grad / 40 for p in plain.parameters()])


# (2) the noise has the scale the ledger claims ------------------------------------------------
def test_noise_std_is_what_the_ledger_claims():
    sigma, C, B, n, b = 1.3, 0.7, 50, 2000, 37        # b != B: dividing by b would show
    x, y = torch.rand(b, 30), torch.rand(b, 50)
    model = mlp()
    clean, c_opt = make_dp(copy.deepcopy(model), C=C, B=B, n=n, sigma=sigma)
    clean.step(mlp_loss(clean.module, x, y))
    ledger = PrivacyLedger()
    noisy, n_opt = make_dp(copy.deepcopy(model), C=C, B=B, n=n, sigma=sigma, seed=3,
                           ledger=ledger, noise=True)
    info = noisy.step(mlp_loss(noisy.module, x, y))
    rec = ledger.records[0]
    claimed = rec.noise_multiplier * rec.sensitivity / (rec.sampling_rate * n)
    assert info["noise_std"] == pytest.approx(claimed)
    z = torch.cat([(a - b_).flatten() for a, b_ in zip(n_opt.seen, c_opt.seen)]) / claimed
    N = z.numel()
    assert abs(float(z.mean())) < 5 / math.sqrt(N)
    assert abs(float(z.std()) - 1) < 5 * math.sqrt(1 / (2 * N))
    assert stats.kstest(z.double().numpy(), "norm").pvalue > 1e-3

    # a noise-only step (empty batch) adds the same noise
    empty, e_opt = make_dp(copy.deepcopy(model), C=C, B=B, n=n, sigma=sigma, seed=4, noise=True)
    empty.step(None)
    z0 = torch.cat([g.flatten() for g in e_opt.seen]) / claimed
    assert abs(float(z0.std()) - 1) < 5 * math.sqrt(1 / (2 * N))


# (3) Poisson sampling -------------------------------------------------------------------------
def test_poisson_batch_sizes_and_empty_batches():
    model = mlp()
    dp, _ = make_dp(model, B=100, n=10_000, seed=5)
    sizes = []
    for _ in range(300):
        idx = dp.poisson_batch()
        assert idx.dtype == torch.long and idx.dim() == 1
        assert len(torch.unique(idx)) == len(idx) and (idx >= 0).all() and (idx < 10_000).all()
        sizes.append(len(idx))
    q = dp.sample_rate
    assert q == 0.01
    sd = math.sqrt(10_000 * q * (1 - q) / 300)
    assert abs(sum(sizes) / 300 - 100) < 5 * sd
    assert len(set(sizes)) > 5                               # variable size

    ledger = PrivacyLedger()
    tiny, _ = make_dp(copy.deepcopy(model), B=1, n=100_000, seed=6, ledger=ledger, noise=True)
    x_all = torch.rand(100_000, 30)
    y_all = torch.rand(100_000, 50)
    empties = 0
    for _ in range(20):
        idx = tiny.poisson_batch()
        empties += len(idx) == 0
        info = tiny.step(mlp_loss(tiny.module, x_all[idx], y_all[idx]))
        assert info["batch_size"] == len(idx)
        if len(idx) == 0:
            assert info["path"] == "noise-only"
    tiny.step(None)
    assert empties >= 1                                       # P(empty) = e^-1 per step
    assert ledger.records[0].steps == 21 == tiny.steps_taken
    assert all(torch.isfinite(p).all() for p in tiny.module.parameters())


# (4) ledger -----------------------------------------------------------------------------------
def test_ledger_records_steps_rate_sigma():
    ledger = PrivacyLedger()
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dp = DPSGD(model, opt, noise_multiplier=1.1, max_grad_norm=0.5, n=500,
               expected_batch_size=25, ledger=ledger, name="decoder")
    for _ in range(4):
        idx = dp.poisson_batch()
        dp.step(mlp_loss(model, torch.rand(len(idx), 30), torch.rand(len(idx), 50)))
    assert len(ledger) == 1
    r = ledger.records[0]
    assert (r.name, r.mechanism, r.steps) == ("decoder", "subsampled_gaussian", 4)
    assert r.sampling_rate == pytest.approx(25 / 500) and r.noise_multiplier == 1.1
    assert r.sensitivity == 0.5 and dp.steps_taken == 4

    # non-private: plain mean-loss step, nothing recorded, no clipping
    led2 = PrivacyLedger()
    m2, m3 = mlp(), mlp()
    o2 = recording(torch.optim.SGD)(m2.parameters(), lr=0.1)
    plain = DPSGD(m2, o2, noise_multiplier=0, max_grad_norm=0, n=500, expected_batch_size=25,
                  ledger=led2, private=False)
    x, y = torch.rand(9, 30), torch.rand(9, 50)
    info = plain.step(mlp_loss(m2, x, y))
    mlp_loss(m3, x, y).mean().backward()
    close(o2.seen, [p.grad for p in m3.parameters()])
    assert len(led2) == 0 and info["private"] is False
    plain.step(None)
    assert plain.steps_taken == 2


# (5) any optimiser ----------------------------------------------------------------------------
@pytest.mark.parametrize("opt_cls,kw", [(torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                        (torch.optim.Adam, {"lr": 1e-2}),
                                        (torch.optim.RMSprop, {"lr": 1e-3})])
def test_any_optimizer_gets_the_clipped_gradient(opt_cls, kw):
    x, y = torch.rand(12, 30), torch.rand(12, 50)
    model = mlp()
    ref = copy.deepcopy(model)
    ref_opt = opt_cls(ref.parameters(), **kw)
    dp, opt = make_dp(model, opt_cls, C=0.3, B=10, **kw)
    for _ in range(2):
        want = brute_force(ref, mlp_loss, (x, y), 0.3, 10)
        for p, g in zip(ref.parameters(), want):
            p.grad = g
        ref_opt.step()
        ref_opt.zero_grad()
        dp.step(mlp_loss(model, x, y))
        close(opt.seen, want)
        assert all(p.grad is None for p in model.parameters())      # zero-grads after the step
    close(list(model.parameters()), list(ref.parameters()))


# (6) fallbacks and rejection ------------------------------------------------------------------
class Twice(nn.Module):                       # one Linear called twice per forward
    def __init__(self):
        super().__init__()
        self.l, self.o = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.o(torch.tanh(self.l(torch.tanh(self.l(x)))))


class Tied(nn.Module):                        # two Linears share one weight
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 6), nn.Linear(6, 6)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


class Seq3D(nn.Module):                       # Linear on a (b, T, in) input
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 4)

    def forward(self, x):
        return self.a(x[:, None, :] * torch.arange(1.0, 4.0)[None, :, None]).flatten(1)


class LogVar(nn.Module):                      # a bare learned log-variance parameter
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)
        self.log_var = nn.Parameter(torch.randn(3) * 0.3)

    def forward(self, x):
        return self.a(x) * torch.exp(0.5 * self.log_var)


class WeightUsedTwice(nn.Module):             # Linear weight also used outside the layer
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 3)

    def forward(self, x):
        return self.a(x) + x[:, :3] @ self.a.weight[:, :3].t()


class Summed(nn.Module):                      # two Linears' outputs added: both edges get one gradient
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 3), nn.Linear(6, 3)

    def forward(self, x):
        return self.a(x) + self.b(torch.tanh(x))


class Custom(nn.Linear):                      # subclass with its own forward: not hooked
    def forward(self, x):
        return super().forward(x) * 2 + self.weight.sum()


@pytest.mark.parametrize("make,path,fallback", [
    (lambda: nn.Sequential(nn.Linear(6, 8), nn.ReLU(inplace=True), nn.Linear(8, 3)), "fast", []),
    (Twice, "fast", []),
    (Summed, "fast", []),
    (Tied, "fast", []),
    (Seq3D, "fast", []),
    (LogVar, "mixed", ["log_var"]),
    (WeightUsedTwice, "mixed", ["a.weight"]),
    (lambda: nn.Sequential(Custom(6, 4), nn.Linear(4, 3)), "mixed", ["0.weight", "0.bias"]),
    (lambda: nn.Sequential(nn.Unflatten(1, (1, 6)), nn.Conv1d(1, 2, 3), nn.Flatten(),
                           nn.LayerNorm(8), nn.Linear(8, 3)),
     "mixed", ["1.weight", "1.bias", "3.weight", "3.bias"]),
])
def test_unsupported_uses_fall_back_correctly(make, path, fallback):
    torch.manual_seed(7)
    model = make()
    x = torch.randn(9, 6)
    loss_fn = lambda m, x: m(x).pow(2).sum(1)          # noqa: E731
    want = brute_force(model, loss_fn, (x,), 0.5, 20)
    dp, opt = make_dp(model, C=0.5, B=20)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        info = dp.step(loss_fn(model, x))
    assert info["path"] == path and dp.fallback_params == fallback
    assert any("slower" in str(x.message) for x in w) == bool(fallback)
    assert info["fraction_clipped"] > 0
    close(opt.seen, want)


def test_an_expanded_or_shared_output_gradient_is_never_scaled_in_place():
    """The clipped sum scales a Linear's output gradient in place only when the call owns a dense
    one: a loss that is the plain sum of the outputs hands the last layer a stride-0 gradient, and
    two summed outputs share one tensor; both stay exact."""
    torch.manual_seed(3)
    x = torch.randn(9, 6)
    for make, loss_fn in ((lambda: nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)),
                           lambda m, x: m(x).sum(1)),
                          (Summed, lambda m, x: m(x).sum(1))):
        model = make()
        want = brute_force(model, loss_fn, (x,), 0.3, 20)
        dp, opt = make_dp(model, C=0.3, B=20)
        info = dp.step(loss_fn(model, x))
        assert info["path"] == "fast" and info["fraction_clipped"] > 0
        close(opt.seen, want)


def test_batchnorm_and_bad_arguments_are_rejected():
    bn = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    with pytest.raises(InvalidParameter, match="BatchNorm1d"):
        DPSGD(bn, torch.optim.SGD(bn.parameters(), lr=0.1), noise_multiplier=1.0,
              max_grad_norm=1.0, n=10, expected_batch_size=2, ledger=None)
    m = mlp()
    kw = dict(noise_multiplier=1.0, max_grad_norm=1.0, n=10, expected_batch_size=2, ledger=None)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for bad in ({"noise_multiplier": 0.0}, {"max_grad_norm": -1.0}, {"expected_batch_size": 11},
                {"n": 0}):
        with pytest.raises(InvalidParameter):
            DPSGD(m, opt, **(kw | bad))
    dp = DPSGD(m, opt, **kw)
    with pytest.raises(InvalidParameter, match="per_example_loss"):
        dp.step(mlp_loss(m, torch.rand(3, 30), torch.rand(3, 50)).mean())


# (7) reproducibility --------------------------------------------------------------------------
def run(seed, steps=3):
    model = mlp()
    dp, _ = make_dp(model, torch.optim.Adam, B=20, n=200, seed=seed, noise=True, lr=1e-2)
    X, Y = torch.rand(200, 30, generator=torch.Generator().manual_seed(0)), torch.zeros(200, 50)
    batches = []
    for _ in range(steps):
        idx = dp.poisson_batch()
        batches.append(idx.tolist())
        dp.step(mlp_loss(model, X[idx], Y[idx]))
    return batches, [p.detach().clone() for p in model.parameters()]


def test_seeded_runs_repeat_exactly():
    b1, p1 = run(11)
    b2, p2 = run(11)
    b3, p3 = run(12)
    assert b1 == b2 and all(torch.equal(a, b) for a, b in zip(p1, p2))
    assert b1 != b3 and not all(torch.equal(a, b) for a, b in zip(p1, p3))
