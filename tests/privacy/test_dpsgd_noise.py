"""The DP-SGD engine's noise, drawn in cache-sized chunks into one reused buffer, is still fresh
N(0, σ²C²/B²) in every coordinate at every step: mean, variance and a KS test over many draws,
the tail coordinates after the last chunk boundary included, and no value ever repeats between
steps or between two engines (a coordinate the chunks missed would keep last step's value)."""
import math

import pytest
import torch
from scipy import stats
from torch import nn

from dpcore.privacy import dpsgd as engine_module
from dpcore.privacy.dpsgd import DPSGD
from dpcore.privacy.ledger import PrivacyLedger

CHUNK = engine_module._NOISE_CHUNK


class Grads(torch.optim.SGD):
    """Keeps a copy of the gradient it was handed (lr 0: the weights never move)."""

    def step(self, closure=None):
        self.seen = torch.cat([p.grad.detach().flatten().clone()
                               for g in self.param_groups for p in g["params"]])
        return super().step(closure)


def engine(numel: int, sigma=1.3, C=0.7, B=50):
    """A bias-only 'network' with `numel` parameters: noise-only steps give the noise itself."""
    torch.manual_seed(0)
    model = nn.Linear(1, numel)
    model.weight.requires_grad_(False)
    opt = Grads([model.bias], lr=0.0)
    dp = DPSGD(model, opt, noise_multiplier=sigma, max_grad_norm=C, n=1000,
               expected_batch_size=B, ledger=PrivacyLedger())
    return dp, opt, sigma * C / B


def normal_ok(z: torch.Tensor) -> None:
    n = z.numel()
    assert abs(float(z.mean())) < 5 / math.sqrt(n)
    assert abs(float(z.var()) - 1) < 5 * math.sqrt(2 / n)
    assert stats.kstest(z.double().numpy(), "norm").pvalue > 1e-4


@pytest.mark.parametrize("tail", [37, CHUNK // 2 + 3])   # a tail folded into the last chunk, or its own
def test_every_coordinate_is_fresh_gaussian_every_step(tail):
    numel = 2 * CHUNK + tail
    dp, opt, std = engine(numel)
    draws = []
    for _ in range(3):
        info = dp.step(None)
        assert info["noise_std"] == pytest.approx(std)
        draws.append(opt.seen / std)
    for z in draws:
        assert z.numel() == numel and torch.isfinite(z).all()
        normal_ok(z)
    z = torch.stack(draws)
    # a coordinate the chunks missed would keep last step's value; two fresh float32 Gaussians
    # are equal with probability ~1e-8, so a few equal coordinates among 10⁵ are chance
    assert int((z[0] == z[1]).sum()) <= 3 and int((z[1] == z[2]).sum()) <= 3
    normal_ok(z[:, -(tail + 100):].flatten())                  # across the last chunk boundary
    # neighbouring coordinates and consecutive steps are uncorrelated
    assert abs(float(torch.corrcoef(torch.stack([z[0, :-1], z[0, 1:]]))[0, 1])) < 5 / math.sqrt(numel)
    assert abs(float(torch.corrcoef(z[:2])[0, 1])) < 5 / math.sqrt(numel)


def test_two_engines_never_share_noise():
    a, oa, std = engine(CHUNK + 5)
    b, ob, _ = engine(CHUNK + 5)
    a.step(None)
    b.step(None)
    assert int((oa.seen == ob.seen).sum()) <= 3
    assert abs(float(torch.corrcoef(torch.stack([oa.seen, ob.seen]))[0, 1])) < 5 / math.sqrt(CHUNK)
    assert a.ledger.records[0].noise == "secret"
