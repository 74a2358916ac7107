"""The shared (DP-)SGD loop: the moving average of the iterates is post-processing, computed right."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from dpcore.models.training import EpsilonMeter, FitProgress, WeightAverage, train_sgd
from dpcore.privacy.ledger import PrivacyLedger
from dpcore.privacy.randomness import NoiseSource

X = torch.linspace(-1, 1, 120).reshape(40, 3)
Y = X.sum(1, keepdim=True)


def _run(ema_decay: float, steps: int = 12, stop_at: int | None = None):
    """A tiny linear regression under DP-SGD with seeded (debug) noise; returns the module, the
    raw iterate after every step (seen by the callback), the ledger and the steps done."""
    torch.manual_seed(0)
    module = nn.Linear(3, 1)
    ledger, iterates = PrivacyLedger(), []

    def callback(event):
        iterates.append(torch.cat([p.detach().clone().reshape(-1) for p in module.parameters()]))
        return stop_at is None or event.step < stop_at

    prog = FitProgress(steps, callback, EpsilonMeter(ledger, 1e-5, True))
    done = train_sgd(module, lambda idx: {"mse": ((module(X[idx]) - Y[idx]) ** 2).sum(1)}, n=40,
                     batch_size=10, steps=steps, lr=0.05, private=True, ledger=ledger,
                     noise_multiplier=1.0, max_grad_norm=1.0, generator=torch.Generator().manual_seed(0),
                     device=torch.device("cpu"), progress=prog, noise=NoiseSource.seeded(3),
                     released_n=40, ema_decay=ema_decay)
    final = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    return final, iterates, ledger, done


def _bias_corrected_ema(iterates, d):
    t = len(iterates)
    w = np.array([(1 - d) * d ** (t - 1 - s) for s in range(t)])
    return (w[:, None] * torch.stack(iterates).numpy()).sum(0) / (1 - d ** t)


@pytest.mark.parametrize("stop_at", [None, 5])
def test_the_module_ends_on_the_bias_corrected_average_of_its_iterates(stop_at):
    final, iterates, _, done = _run(0.9, stop_at=stop_at)
    assert done == len(iterates) == (12 if stop_at is None else 5)
    np.testing.assert_allclose(final.numpy(), _bias_corrected_ema(iterates, 0.9), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(final, iterates[-1])  # the average, not the last iterate


def test_the_average_costs_no_privacy_and_leaves_the_iterates_alone():
    raw_final, raw_iterates, raw_ledger, _ = _run(0.0)
    _, ema_iterates, ema_ledger, _ = _run(0.9)
    # same seeded noise and coins: the same trajectory, and the same ledger (nothing recorded)
    assert all(torch.equal(a, b) for a, b in zip(raw_iterates, ema_iterates))
    assert torch.equal(raw_final, raw_iterates[-1])
    assert ema_ledger.to_list() == raw_ledger.to_list() and len(ema_ledger) == 1
    meter = EpsilonMeter(ema_ledger, 1e-5, True)
    assert math.isfinite(meter()) and meter() == EpsilonMeter(raw_ledger, 1e-5, True)()


def test_decay_outside_the_open_unit_interval_is_refused():
    for d in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            WeightAverage(nn.Linear(2, 1), d)
