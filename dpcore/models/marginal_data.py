"""Discretisation for the marginal-based models (AIM, MST): encoded rows ↔ small integer domains.

Why from the encoder and not from the rows: every constant here comes from the public schema the
Dataset was encoded with (declared or DP bounds, declared category lists), so the discrete domain
leaks nothing; a schema read off the rows already marks the Dataset "preprocessing not covered by
ε" and the template carries that mark to every synthetic row.

One attribute per encoder block, plus the target:
- numeric value → `bins` equal-width bins over the declared [lower, upper] (the encoded [0, 1]);
  after the 1-way measurement, levels the noisy counts cannot tell from noise are merged
  (MarginalSynthesizer's `compress`), so the fit adapts the grid to n and the budget;
- integer value with integer bounds and at most `bins` values → one level per integer (binning them
  and decoding uniformly within a bin blurs them: cps1988's experience, −6…64, in 32 bins had
  0.057 1-way TVD, one level per year 0.012);
- boolean value, missing indicator → 2 levels; one-hot block → one level per category;
- target → one level per class.
Numeric bins also get one level per atom (`atoms_of`: the bounds, and zero inside them), so point
masses — 25 % of incomes exactly 0, amounts at a cap — are measured and generated exactly.
Decoding: numeric bins give a value uniform within the bin (or its midpoint), atoms their exact
value; integers and the declared precision are restored by the TabularEncoder (rounding, clipping
to the bounds).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.data.encoder import ATOM_TOLERANCE, atoms_of
from dpcore.errors import InvalidParameter, RunError

DECODE_MODES = ("uniform", "midpoint")
LABEL = "__target"


@dataclass(frozen=True)
class Attr:
    """One discrete attribute: `kind` in bins/int/bool/onehot/label, columns [start, stop).

    atoms (bins only): encoded positions in [0, 1] that get a level of their own — the column's
    bounds and, inside them, zero — so a value written exactly there (an income of 0, a capped
    amount) is measured and generated exactly, not smeared over its bin. They are functions of the
    public bounds alone; each atom's share is measured under the model's budget like any level.
    """

    name: str
    kind: str
    size: int
    start: int = 0
    stop: int = 0
    atoms: tuple = ()

    @property
    def bins(self) -> int:
        return self.size - len(self.atoms)

    def levels(self) -> tuple[np.ndarray, np.ndarray]:
        """(level of each bin, level of each atom): bins and atoms in the order of their positions
        (an atom before the bin it sits in), so ordered merging keeps neighbours together."""
        keys = [((b + 0.5) / self.bins, 1, b) for b in range(self.bins)] + \
               [(a, 0, self.bins + j) for j, a in enumerate(self.atoms)]
        rank = np.empty(self.size, np.int64)
        rank[[k[2] for k in sorted(keys)]] = np.arange(self.size)
        return rank[:self.bins], rank[self.bins:]

    def atom_levels(self) -> np.ndarray:
        """A mask over the levels: True where the level is an atom."""
        mask = np.zeros(self.size, bool)
        if self.atoms:
            mask[self.levels()[1]] = True
        return mask


class Discretizer:
    def __init__(self, attrs: list[Attr], width: int):
        self.attrs, self.width = list(attrs), int(width)

    @classmethod
    def for_dataset(cls, data: Dataset, bins: int, model: str) -> Discretizer:
        enc = data.encoder
        if enc is None or not hasattr(enc, "blocks") or data.is_image:
            raise InvalidParameter(f"{model} works on tables (a CSV or a tabular built-in), "
                                   f"not on {data.name!r}")
        specs = {c.name: c for c in enc.schema.columns}
        attrs: list[Attr] = []
        for i, b in enumerate(enc.blocks):
            name = f"{i}:{b.column}:{b.role}"
            spec = specs[b.column]
            if (b.role not in ("onehot", "missing") and spec.kind in ("numeric", "integer")
                    and (spec.lower is None or spec.upper is None)):
                raise InvalidParameter(f"{model} needs bounds for column {b.column!r} (declare them, or "
                                       "estimate them with DP)")
            if b.role == "onehot":
                attrs.append(Attr(name, "onehot", b.stop - b.start, b.start, b.stop))
            elif b.role == "missing" or spec.kind == "boolean":
                attrs.append(Attr(name, "bool", 2, b.start, b.stop))
            elif (spec.kind == "integer" and float(spec.lower).is_integer() and float(spec.upper).is_integer()
                  and spec.upper - spec.lower + 1 <= bins):
                attrs.append(Attr(name, "int", int(spec.upper - spec.lower) + 1, b.start, b.stop))
            else:
                atoms = atoms_of(spec)
                attrs.append(Attr(name, "bins", int(bins) + len(atoms), b.start, b.stop, atoms))
        if data.labels is not None:
            attrs.append(Attr(LABEL, "label", int(data.n_classes)))
        if data.n_features != enc.n_features:
            raise InvalidParameter(f"{model}: the encoded width {data.n_features} does not match the schema")
        return cls(attrs, data.n_features)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attrs]

    @property
    def shape(self) -> list[int]:
        return [a.size for a in self.attrs]

    def encode(self, data: Dataset) -> dict[str, np.ndarray]:
        """Encoded features (and labels) → one int array per attribute."""
        X = np.asarray(data.features, np.float64)
        out = {}
        for a in self.attrs:
            if a.kind == "label":
                out[a.name] = np.asarray(data.labels, np.int64)
                continue
            v = X[:, a.start]
            if a.kind == "onehot":
                out[a.name] = np.argmax(X[:, a.start:a.stop], axis=1)
            elif a.kind == "bool":
                out[a.name] = (v > 0.5).astype(np.int64)
            elif a.kind == "int":
                out[a.name] = np.clip(np.round(v * (a.size - 1)), 0, a.size - 1).astype(np.int64)
            else:
                code = np.clip(np.floor(v * a.bins), 0, a.bins - 1).astype(np.int64)
                if a.atoms:
                    bin_level, atom_level = a.levels()
                    code = bin_level[code]
                    for j, atom in enumerate(a.atoms):
                        code[np.abs(v - atom) <= ATOM_TOLERANCE] = atom_level[j]
                out[a.name] = code
        return out

    def decode(self, codes: dict[str, np.ndarray], n: int, rng: np.random.Generator,
               mode: str = "uniform") -> tuple[np.ndarray, np.ndarray | None]:
        """Int arrays → (features float32 (n, width), labels or None) for `template.with_features`."""
        X = np.zeros((n, self.width), np.float32)
        labels = None
        for a in self.attrs:
            c = np.asarray(codes[a.name], np.int64)
            if a.kind == "label":
                labels = c
            elif a.kind == "onehot":
                X[np.arange(n), a.start + c] = 1.0
            elif a.kind == "bool":
                X[:, a.start] = c
            elif a.kind == "int":
                X[:, a.start] = c / max(a.size - 1, 1)
            else:
                u = rng.random(n) if mode == "uniform" else 0.5
                if not a.atoms:
                    X[:, a.start] = (c + u) / a.size
                    continue
                bin_level, atom_level = a.levels()
                value = np.empty(a.size)
                value[bin_level] = np.arange(a.bins)
                value[atom_level] = -1  # marks the atoms
                b = value[c]
                X[:, a.start] = (b + u) / a.bins
                for j, atom in enumerate(a.atoms):
                    X[c == atom_level[j], a.start] = atom
        return X, labels

    def atom_mask(self, name: str) -> np.ndarray:
        """Which levels of attribute `name` are atoms (all False for attributes without any)."""
        return next(a for a in self.attrs if a.name == name).atom_levels()

    def to_list(self) -> list[dict]:
        return [{**asdict(a), "atoms": list(a.atoms)} for a in self.attrs]

    @classmethod
    def from_list(cls, items, width: int, where: str) -> Discretizer:
        try:
            attrs = [Attr(str(d["name"]), str(d["kind"]), int(d["size"]), int(d["start"]), int(d["stop"]),
                          tuple(float(x) for x in d.get("atoms") or ()))
                     for d in items]
        except (TypeError, KeyError, ValueError, AttributeError):
            raise RunError(f"{where}: 'attributes' must be a list of attribute objects") from None
        for a in attrs:
            if a.kind not in ("bins", "int", "bool", "onehot", "label") or not 1 <= a.size <= 100_000 \
                    or not 0 <= a.start <= a.stop <= width or len(a.atoms) > 3 \
                    or (a.atoms and (a.kind != "bins" or a.bins < 1
                                     or not all(0.0 <= x <= 1.0 for x in a.atoms))):
                raise RunError(f"{where}: bad attribute {a.name[:40]!r}")
        return cls(attrs, width)


def bins_field():
    """`bins` of AIM's and MST's configs."""
    from dpcore.models.params import count

    # 100: 1% of the declared range, fine enough that decoding uniformly within a bin does not blur
    # the column (32 bins of a wide range did: cps1988 wage 0.07 1-way TVD); the cells the rows
    # hardly use are merged after the 1-way measurement (`compress`), so fineness costs little noise
    return count(100, "equal-width bins per numeric column over its declared bounds (merged where the "
                      "noisy 1-way counts are thin, see compress)", low=2, high=1024, typical=(2, 200))


def decode_field():
    """`numeric_decode` of AIM's and MST's configs."""
    from dpcore.models.params import hparam

    return hparam("uniform", "numeric value of a bin: 'uniform' within it or its 'midpoint'",
                  choices=DECODE_MODES)


def compress_field():
    """`compress` of AIM's and MST's configs."""
    from dpcore.models.params import hparam

    return hparam(True, "merge the levels whose noisy 1-way count is under 3σ into one before any "
                        "larger marginal (the MST paper's domain compression; free post-processing)")


def level_floor_field():
    """`level_floor` of AIM's and MST's configs (see dpcore/models/level_floor.py)."""
    from dpcore.models.params import hparam

    return hparam(True, "generate every level of a category, a boolean column and the target at least at its 1-way "
                        "noise's share (σ/ñ, at most 1/levels): a level the noise cannot tell from zero is "
                        "not known to be absent (post-processing, no privacy cost)")


def missing_sigmas_field():
    """`missing_sigmas` of AIM's and MST's configs (see level_floor.drop_unseen_missing)."""
    from dpcore.models.params import hparam

    return hparam(1.0, "a nullable column whose noisy count of missing rows is under this many noise stds is "
                       "generated complete (0: as the model draws it; a declared schema makes every column "
                       "nullable, and noise alone gave complete columns up to ~5 % missing values)", low=0.0, high=10.0)


def target_weight_field(default: float, model: str):
    """`target_weight` of AIM's and MST's configs (see `workload_weight`)."""
    from dpcore.models.params import hparam

    what = ("the workload's marginals that contain it (the AIM paper's weighted workload)" if model == "aim"
            else "its candidate edges in the spanning tree's selection score")
    return hparam(default, f"weight, when a target is declared, of {what}; 1 = every marginal alike. The "
                           "selection's sensitivity is the largest weight, so the other pairs' scores count "
                           "relatively less", low=1.0, high=100.0, typical=(1, 16))


def workload_weight(clique, weight: float) -> float:
    """`weight` for a marginal that contains the target, 1 otherwise.

    Why: on a small wide table every pair of columns competes for a few selections, and the pairs of
    many-level columns have the largest errors, so neither AIM's quality score nor MST's tree picks
    the target's pairs (issue 29: 11 pairs, none with the target; synthetic rows that do not predict
    it). Weighting the target's marginals is the AIM paper's weighted workload (its `W` with weights)."""
    return float(weight) if LABEL in clique else 1.0
