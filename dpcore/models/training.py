"""The (DP-)SGD loop every neural synthesizer runs, and the live "ε spent so far" meter.

Why one loop: private and non-private variants of a model must differ only in how a batch is drawn
and how a gradient is made private (Poisson sampling + clip + noise via `DPSGD`), never in the
loss, the events they stream, or how a stop request or a NaN is handled.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from dpcore.errors import RunError
from dpcore.models.protocol import Callback, TrainingEvent, emit
from dpcore.privacy.ledger import PrivacyLedger
from dpcore.privacy.randomness import NoiseSource

LossFn = Callable[[torch.Tensor], dict[str, torch.Tensor]]


class EpsilonMeter:
    """ε of the ledger so far, from the accountant (inf for non-private models).

    Cached by ledger content, so asking twice between two mechanisms costs nothing.
    """

    def __init__(self, ledger: PrivacyLedger, delta: float, private: bool):
        self.ledger, self.delta, self.private = ledger, delta, private
        self._key = None
        self._value = 0.0

    def __call__(self) -> float:
        if not self.private:
            return math.inf
        if not len(self.ledger):
            return 0.0
        key = tuple(self.ledger.records)
        if key != self._key:
            from dpcore.privacy.accountant import epsilon

            self._value = float(epsilon(self.ledger, self.delta))
            self._key = key
        return self._value


class FitProgress:
    """Step counter shared by the phases of one fit (events carry the global step)."""

    def __init__(self, total_steps: int, callback: Callback | None, meter: EpsilonMeter):
        self.total, self.callback, self.meter = total_steps, callback, meter
        self.step = 0
        self.stopped = False

    def event(self, phase: str, losses: dict[str, float] | None = None, epoch: float = 0.0) -> bool:
        """Emit one event; return False (and remember it) when the caller asked to stop."""
        self.step += 1
        ev = TrainingEvent(phase=phase, step=self.step, total_steps=self.total, epoch=epoch,
                           losses=dict(losses or {}), epsilon=self.meter())
        if not emit(self.callback, ev):
            self.stopped = True
        return not self.stopped


def check_finite(value: float, phase: str, step: int) -> None:
    """A NaN or infinite loss ends the run with one line saying where."""
    if not math.isfinite(value):
        raise RunError(f"training diverged: loss is {value} in phase {phase!r} at step {step}")


class WeightAverage:
    """Bias-corrected exponential moving average of a module's trainable parameters.

    Why: the last DP-SGD iterate carries the last steps' noise; an average of the iterates keeps
    the signal and averages the noise out (Polyak averaging). It is computed from the released
    updates only, so it is post-processing: no privacy cost, no ledger record. After t updates
    the average is Σ_s d^(t−s)(1−d) w_s / (1 − d^t), so early iterates do not pull it to zero.
    """

    def __init__(self, module: nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must lie in (0, 1), got {decay!r}")
        self.decay = float(decay)
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.sums = [torch.zeros_like(p) for p in self.params]
        self.mass = 0.0  # 1 − d^t: the weight the sums carry

    @torch.no_grad()
    def update(self) -> None:
        d = self.decay
        torch._foreach_mul_(self.sums, d)
        torch._foreach_add_(self.sums, self.params, alpha=1.0 - d)
        self.mass = self.mass * d + (1.0 - d)

    @torch.no_grad()
    def copy_to_module(self) -> None:
        """Replace the parameters by their average (nothing to do before the first update)."""
        if self.mass > 0:
            for p, s in zip(self.params, self.sums):
                p.copy_(s / self.mass)


def train_sgd(module: nn.Module, loss_fn: LossFn, *, n: int, batch_size: int, steps: int, lr: float,
              private: bool, ledger: PrivacyLedger, noise_multiplier: float, max_grad_norm: float,
              generator: torch.Generator, device: torch.device, progress: FitProgress,
              phase: str = "sgd", name: str = "dp-sgd", released_n: int | None = None,
              noise: NoiseSource | None = None, ema_decay: float = 0.0) -> int:
    """Run `steps` optimiser steps of Adam on Σ losses; returns the number of steps done.

    Private: `DPSGD` draws Poisson batches over the n rows at rate q = min(1, B/ñ) (ñ =
    `released_n`, the run's noisy count; None = n, only for non-private runs), clips per-example
    gradients to `max_grad_norm`, adds N(0, σ²C²) and records every step in `ledger`; the coins
    and the noise come from `noise` (None: secret streams), never from the public `generator`.
    Non-private: mini-batches shuffled by `generator` and the plain mean gradient (ε = ∞, nothing
    recorded). The events' epoch is (t+1)·B/ñ, so even the progress stream carries no exact n.
    ema_decay > 0: the module ends on the `WeightAverage` of its iterates (also when stopped early);
    the events are streamed while it still holds the raw iterate.
    """
    shown_n = n if released_n is None else released_n
    opt = torch.optim.Adam(module.parameters(), lr=lr)
    average = WeightAverage(module, ema_decay) if ema_decay > 0 else None
    if private:
        from dpcore.privacy.dpsgd import DPSGD

        src = noise if noise is not None else NoiseSource.secret()
        engine = DPSGD(module, opt, noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                       n=n, expected_batch_size=batch_size, ledger=ledger, name=name,
                       generator=src.torch(f"{name} noise", device), private=True, released_n=released_n,
                       sampling_generator=src.torch(f"{name} sampling", device))
    perm, pos = None, n
    for t in range(steps):
        if private:
            idx = engine.poisson_batch().to(device)
        else:
            if pos >= n:
                perm = torch.randperm(n, generator=generator, device=generator.device).to(device)
                pos = 0
            idx = perm[pos:pos + batch_size]
            pos += batch_size
        losses: dict[str, float] = {}
        if idx.numel():
            terms = loss_fn(idx)
            per_example = sum(terms.values())
            losses = {k: float(v.detach().mean()) for k, v in terms.items()}
            losses["loss"] = float(per_example.detach().mean())
            check_finite(losses["loss"], phase, progress.step + 1)
            if private:
                engine.step(per_example)
            else:
                opt.zero_grad(set_to_none=True)
                per_example.mean().backward()
                opt.step()
        else:  # an empty Poisson batch still costs a step: noise only
            engine.step(None)
        if average is not None:
            average.update()
        if not progress.event(phase, losses, epoch=(t + 1) * batch_size / shown_n):
            steps = t + 1
            break
    if average is not None:
        average.copy_to_module()
    return steps
