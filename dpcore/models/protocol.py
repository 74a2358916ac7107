"""The Synthesizer protocol (docs/architecture.md) and what `fit` exchanges with its caller.

Every model: `fit(train, budget, callback) -> FitResult`, `sample(n, seed) -> Dataset`,
`privacy_ledger() -> PrivacyLedger`; optionally `encode(x)` and `latent_prior()` for latent plots.
`callback(event)` gets one TrainingEvent per step; returning False stops training cleanly and the
model stays usable (FitResult.stopped is then True).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter
from dpcore.privacy.ledger import PrivacyLedger


@dataclass(frozen=True)
class PrivacyBudget:
    """Total (ε, δ) for one training run. ε = inf means non-private (labelled "ε = ∞")."""

    epsilon: float
    delta: float = 1e-5

    def __post_init__(self) -> None:
        if math.isnan(self.epsilon) or self.epsilon <= 0:
            raise InvalidParameter(f"epsilon must be > 0, got {self.epsilon!r}")
        if not (0 < self.delta < 1):
            raise InvalidParameter(f"delta must lie in (0, 1), got {self.delta!r}")

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)


@dataclass
class TrainingEvent:
    """One step (or phase boundary) of training, streamed to the callback.

    phase: e.g. "pca", "em", "warmup", "sgd". losses: each loss term by name (e.g. "recon", "kl",
    "loss"). epsilon: ε spent so far according to the accountant (inf for non-private models).
    """

    phase: str
    step: int
    total_steps: int
    epoch: float = 0.0
    losses: dict[str, float] = field(default_factory=dict)
    epsilon: float = 0.0

    def to_dict(self) -> dict:
        return {
            "phase": self.phase, "step": self.step, "total_steps": self.total_steps,
            "epoch": self.epoch, "losses": dict(self.losses), "epsilon": self.epsilon,
        }


Callback = Callable[[TrainingEvent], "bool | None"]


@dataclass
class FitResult:
    """What `fit` returns: the accountant's ε for the ledger, whether it was stopped, timing."""

    epsilon: float
    delta: float
    steps: int
    stopped: bool = False
    seconds: float = 0.0


@runtime_checkable
class Synthesizer(Protocol):
    def fit(self, train: Dataset, budget: PrivacyBudget | None = None,
            callback: Callback | None = None) -> FitResult: ...

    def sample(self, n: int, seed: int | None = None) -> Dataset: ...

    def privacy_ledger(self) -> PrivacyLedger: ...


def emit(callback: Callback | None, event: TrainingEvent) -> bool:
    """Send `event`; return False when the caller asked to stop."""
    if callback is None:
        return True
    return callback(event) is not False

