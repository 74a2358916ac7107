"""The privacy ledger: every mechanism applied to private data, as records the accountant reads.

Why records and not an ε: ε is a property of the whole composition, so models only say *what* they
did (mechanism, noise multiplier σ/Δ, sampling rate, steps) and `dpcore.privacy.accountant` turns
the list into (ε, δ). Nothing else computes ε.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from dpcore.errors import InvalidParameter
from dpcore.privacy.randomness import NOISE_KINDS, SEEDED

Mechanism = Literal["gaussian", "subsampled_gaussian", "exponential"]
MECHANISMS: tuple[str, ...] = ("gaussian", "subsampled_gaussian", "exponential")
# Which rows of the file a record read (parallel composition, dpcore.privacy.accountants.rdp.sides):
# None = the training rows (every model's mechanisms), "all" = every row of the file (preprocessing
# before the split: DP bounds, the file's row count), "heldout" = the held-out rows only (a score
# released on a keyed split, where each row's side is a function of the row and a secret key).
PARTITIONS: tuple[str | None, ...] = (None, "all", "heldout")


@dataclass(frozen=True)
class MechanismRecord:
    """One (possibly repeated) Gaussian mechanism on private data.

    noise_multiplier: σ / Δ (noise standard deviation over L2 sensitivity).
    sampling_rate: Poisson sampling rate q (1.0 for "gaussian").
    steps: how many times the mechanism was applied (self-composition).
    sensitivity: the L2 sensitivity Δ the noise was scaled to (informational; ε depends on σ/Δ only).
    noise: "secret" (drawn from OS entropy, dpcore.privacy.randomness) or "seeded" (reproducible
        from a public seed: the accountant's ε is then NOT a guarantee, see `reproducible_noise`).
    partition: which rows the mechanism read (PARTITIONS): None the training rows, "all" every row
        of the file, "heldout" the held-out rows only (parallel composition with the training side).
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
    partition: str | None = None

    def __post_init__(self) -> None:
        if self.partition not in PARTITIONS:
            raise InvalidParameter(f"partition must be one of {PARTITIONS}, got {self.partition!r}")
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
        if d["partition"] is None:
            del d["partition"]  # training-side records keep their old form
        return d

    @classmethod
    def from_dict(cls, d: dict) -> MechanismRecord:
        """A record back from `to_dict`; one saved before the `noise` field existed is "seeded"
        (those runs really drew their noise from the public seed)."""
        keys = {"name", "mechanism", "noise_multiplier", "sampling_rate", "steps", "sensitivity", "noise",
                "epsilon0", "partition"}
        return cls(**{"noise": SEEDED, **{k: v for k, v in d.items() if k in keys}})

    def same_mechanism(self, other: MechanismRecord) -> bool:
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
    algorithm Q (one random grid point, trained) by the pointwise maximum of the ledger's own RDP
    curve and `base_rdp` (Q's RDP bound at `orders`, rounded up), then applies the theorem of
    `distribution` (dpcore.privacy.accountants.selection).

    Only what the selected run may publish is here: the rule (distribution, its parameters and
    `mean_trials` = E[K]), the `candidates` (the grid's settings, public) and Q's bound. Never K and
    never another trial's ledger, count or score: the theorem needs K secret, and every other
    trial's ledger reveals its own noisy row count through q = B/ñ.
    """

    distribution: str
    eta: float | None = None
    gamma: float | None = None
    mu: float | None = None
    candidates: tuple = ()
    base_rdp: tuple = ()
    orders: tuple = ()
    name: str = "private selection"

    def __post_init__(self) -> None:
        from dpcore.privacy.accountants.selection import check_parameters

        check_parameters(self.distribution, self.eta, self.gamma, self.mu)
        if not all(isinstance(c, dict) for c in self.candidates):
            raise InvalidParameter("selection candidates are the grid's settings (one object per point)")
        cands = tuple(dict(c) for c in self.candidates)
        base = tuple(float(v) for v in self.base_rdp)
        orders = tuple(float(a) for a in self.orders)
        if len(base) != len(orders) or any(not (a > 1) for a in orders) or list(orders) != sorted(orders) \
                or any(not (v >= 0) or math.isnan(v) for v in base):
            raise InvalidParameter("a selection record's base_rdp needs one value >= 0 per RDP order > 1 "
                                   "(orders increasing)")
        object.__setattr__(self, "candidates", cands)
        object.__setattr__(self, "base_rdp", base)
        object.__setattr__(self, "orders", orders)

    def __hash__(self) -> int:
        return hash((self.distribution, self.eta, self.gamma, self.mu, self.base_rdp, self.orders, self.name))

    @property
    def mean_trials(self) -> float:
        """E[K] of the rule (public; K itself is secret)."""
        from dpcore.privacy.accountants.selection import expected_trials

        return expected_trials(self.distribution, self.eta, self.gamma, self.mu)

    def base_curve(self, orders):
        """Q's RDP bound at `orders`: at each order the stored value of the smallest stored order at
        or above it (Rényi divergence never decreases with the order); ∞ above the stored range."""
        import numpy as np

        a = np.asarray(orders, float)
        if not self.orders:
            return np.zeros_like(a)
        stored, vals = np.asarray(self.orders), np.append(np.asarray(self.base_rdp), np.inf)
        return vals[np.searchsorted(stored, a - 1e-12 * np.abs(a), side="left")]

    def to_dict(self) -> dict:
        return {"name": self.name, "mechanism": "private_selection", "distribution": self.distribution,
                "eta": self.eta, "gamma": self.gamma, "mu": self.mu, "mean_trials": self.mean_trials,
                "candidates": [dict(c) for c in self.candidates],
                "base_rdp": list(self.base_rdp), "orders": list(self.orders)}

    @classmethod
    def from_dict(cls, d: dict) -> SelectionRecord:
        """A record back from `to_dict`. The old form (candidate ledgers, K; saved before base_rdp
        existed) needs the accountant to bound Q, so it is read by
        `dpcore.privacy.accountant.selection_from_dict`, which the ledger must not import."""
        if not isinstance(d, dict) or not isinstance(d.get("candidates", []), list):
            raise InvalidParameter("a selection record must be an object with a list of candidates")
        cands, base, orders = d.get("candidates", []), d.get("base_rdp", []), d.get("orders", [])
        if not isinstance(base, list) or not isinstance(orders, list):
            raise InvalidParameter("a selection record's base_rdp and orders must be lists of numbers")
        return cls(distribution=d.get("distribution") or "", eta=d.get("eta"), gamma=d.get("gamma"),
                   mu=d.get("mu"), name=d.get("name", "private selection"), candidates=tuple(cands),
                   base_rdp=tuple(base), orders=tuple(orders))


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
        return any(r.noise == SEEDED for r in self.records)

    def __len__(self) -> int:
        return len(self.records)

    def with_selection(self, selection: SelectionRecord) -> PrivacyLedger:
        """A copy of this ledger closed by `selection` (the released best run's ledger)."""
        return PrivacyLedger(list(self.records), selection)

    def to_list(self) -> list[dict]:
        return [r.to_dict() for r in self.records]

    @classmethod
    def from_list(cls, items: Iterable[dict | MechanismRecord]) -> PrivacyLedger:
        led = cls()
        for it in items:
            led.records.append(it if isinstance(it, MechanismRecord) else MechanismRecord.from_dict(it))
        return led
