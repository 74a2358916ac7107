"""The privacy ledger: every mechanism applied to private data, as records the accountant reads.

Why records and not an ε: ε is a property of the whole composition, so models only say *what* they
did (mechanism, noise multiplier σ/Δ, sampling rate, steps) and `dpcore.privacy.accountant` turns
the list into (ε, δ). Nothing else computes ε.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Literal

from dpcore.errors import InvalidParameter
from dpcore.privacy.randomness import NOISE_KINDS, SEEDED

Mechanism = Literal["gaussian", "subsampled_gaussian", "exponential"]
MECHANISMS: tuple[str, ...] = ("gaussian", "subsampled_gaussian", "exponential")


@dataclass(frozen=True)
class MechanismRecord:
    """One (possibly repeated) Gaussian mechanism on private data.

    noise_multiplier: σ / Δ (noise standard deviation over L2 sensitivity).
    sampling_rate: Poisson sampling rate q (1.0 for "gaussian").
    steps: how many times the mechanism was applied (self-composition).
    sensitivity: the L2 sensitivity Δ the noise was scaled to (informational; ε depends on σ/Δ only).
    noise: "secret" (drawn from OS entropy, dpcore.privacy.randomness) or "seeded" (reproducible
        from a public seed: the accountant's ε is then NOT a guarantee, see `reproducible_noise`).
    epsilon0: "exponential" records only: the ε₀ of an exponential-mechanism selection (score
        sensitivity Δ, probabilities ∝ exp(ε₀·score/(2Δ))); ε₀-DP and ε₀-bounded-range, hence
        ε₀²/8-zCDP. Its noise_multiplier is the zCDP-equivalent Gaussian's 2/ε₀ (use
        `exponential_record`), shown where tables list σ/Δ.
    """

    name: str
    mechanism: Mechanism
    noise_multiplier: float
    sampling_rate: float = 1.0
    steps: int = 1
    sensitivity: float = 1.0
    noise: str = "secret"
    epsilon0: float | None = None

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise InvalidParameter(f"mechanism must be one of {MECHANISMS}, got {self.mechanism!r}")
        if not (self.noise_multiplier > 0) or math.isnan(self.noise_multiplier):
            raise InvalidParameter(f"noise_multiplier must be > 0, got {self.noise_multiplier!r}")
        if not (0 < self.sampling_rate <= 1):
            raise InvalidParameter(f"sampling_rate must lie in (0, 1], got {self.sampling_rate!r}")
        if self.mechanism == "gaussian" and self.sampling_rate != 1.0:
            raise InvalidParameter("a 'gaussian' record has sampling_rate 1; use 'subsampled_gaussian'")
        if int(self.steps) != self.steps or self.steps < 0:
            raise InvalidParameter(f"steps must be a non-negative integer, got {self.steps!r}")
        if self.noise not in NOISE_KINDS:
            raise InvalidParameter(f"noise must be one of {NOISE_KINDS}, got {self.noise!r}")
        if (self.mechanism == "exponential") != (self.epsilon0 is not None):
            raise InvalidParameter("epsilon0 is given for (and only for) an 'exponential' record")
        if self.epsilon0 is not None and (not (0 < self.epsilon0 < math.inf) or self.sampling_rate != 1.0
                                          or not math.isclose(self.noise_multiplier, 2.0 / self.epsilon0)):
            raise InvalidParameter("an 'exponential' record needs a finite epsilon0 > 0, sampling_rate 1 "
                                   "and noise_multiplier 2/epsilon0")

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["epsilon0"] is None:
            del d["epsilon0"]  # Gaussian records keep their old form
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "MechanismRecord":
        """A record back from `to_dict`; one saved before the `noise` field existed is "seeded"
        (those runs really drew their noise from the public seed)."""
        keys = {"name", "mechanism", "noise_multiplier", "sampling_rate", "steps", "sensitivity", "noise",
                "epsilon0"}
        return cls(**{"noise": SEEDED, **{k: v for k, v in d.items() if k in keys}})

    def same_mechanism(self, other: "MechanismRecord") -> bool:
        """True when `other` differs from self only in its step count (so they can be merged)."""
        return replace(other, steps=self.steps) == self


def exponential_record(name: str, epsilon0: float, steps: int = 1, noise: str = "secret") -> MechanismRecord:
    """`steps` exponential-mechanism selections at ε₀ each (score sensitivity folded into ε₀)."""
    e = float(epsilon0)
    if not (0 < e < math.inf):
        raise InvalidParameter(f"epsilon0 must be finite and > 0, got {epsilon0!r}")
    return MechanismRecord(name, "exponential", 2.0 / e, steps=steps, noise=noise, epsilon0=e)


@dataclass(frozen=True)
class SelectionRecord:
    """Private selection of the best of K runs (Papernot & Steinke 2022, Theorems 2 and 6).

    Not a mechanism but a transformation of everything before it: the accountant bounds the base
    algorithm Q (one random grid point, trained) by the pointwise maximum of the RDP curves of the
    ledger's own records and of each of `candidates` (the other grid points' and trials' ledgers),
    then applies the theorem of `distribution` (dpcore.privacy.accountants.selection).
    trials: how many runs were trained (K, secret: informational, ε does not depend on it).
    """

    distribution: str
    eta: float | None = None
    gamma: float | None = None
    mu: float | None = None
    candidates: tuple = ()
    trials: int | None = None
    name: str = "private selection"

    def __post_init__(self) -> None:
        from dpcore.privacy.accountants.selection import check_parameters

        check_parameters(self.distribution, self.eta, self.gamma, self.mu)
        cands = tuple(tuple(r if isinstance(r, MechanismRecord) else MechanismRecord.from_dict(r)
                            for r in c) for c in self.candidates)
        object.__setattr__(self, "candidates", cands)

    def to_dict(self) -> dict:
        return {"name": self.name, "mechanism": "private_selection", "distribution": self.distribution,
                "eta": self.eta, "gamma": self.gamma, "mu": self.mu, "trials": self.trials,
                "candidates": [[r.to_dict() for r in c] for c in self.candidates]}

    @classmethod
    def from_dict(cls, d: dict) -> "SelectionRecord":
        if not isinstance(d, dict) or not isinstance(d.get("candidates", []), list):
            raise InvalidParameter("a selection record must be an object with a list of candidates")
        return cls(distribution=d.get("distribution"), eta=d.get("eta"), gamma=d.get("gamma"),
                   mu=d.get("mu"), trials=d.get("trials"), name=d.get("name", "private selection"),
                   candidates=tuple(tuple(c) for c in d.get("candidates", [])))


@dataclass
class PrivacyLedger:
    """An append-only list of MechanismRecords; consecutive identical mechanisms merge their steps.

    Merging keeps the ledger short for DP-SGD (one record per phase, not one per step) and makes
    "ε spent so far" a cheap accountant call at any moment of training.
    """

    records: list[MechanismRecord] = field(default_factory=list)
    selection: SelectionRecord | None = None  # set on a run released by private selection

    def add(self, record: MechanismRecord) -> MechanismRecord:
        if self.selection is not None:
            raise InvalidParameter("a ledger closed by private selection takes no more records")
        if self.records and self.records[-1].same_mechanism(record):
            merged = replace(record, steps=self.records[-1].steps + record.steps)
            self.records[-1] = merged
            return merged
        self.records.append(record)
        return record

    def extend(self, records: Iterable[MechanismRecord]) -> None:
        for r in records:
            self.add(r)

    def __iter__(self):
        return iter(self.records)

    @property
    def reproducible_noise(self) -> bool:
        """True when some mechanism drew its noise from a public seed: the run is not private,
        whatever ε the accountant computes from the records."""
        cands = self.selection.candidates if self.selection is not None else ()
        return any(r.noise == SEEDED for r in self.records) or any(
            r.noise == SEEDED for c in cands for r in c)

    def __len__(self) -> int:
        return len(self.records)

    def with_selection(self, selection: SelectionRecord) -> "PrivacyLedger":
        """A copy of this ledger closed by `selection` (the released best run's ledger)."""
        return PrivacyLedger(list(self.records), selection)

    def to_list(self) -> list[dict]:
        return [r.to_dict() for r in self.records]

    @classmethod
    def from_list(cls, items: Iterable[dict | MechanismRecord]) -> "PrivacyLedger":
        led = cls()
        for it in items:
            led.records.append(it if isinstance(it, MechanismRecord) else MechanismRecord.from_dict(it))
        return led
