"""Per-column output heads for tables: the decoder's output split by the encoder's blocks.

Why: one likelihood over the whole model matrix (squared error, or independent Bernoullis) treats
a one-hot block as k unrelated numbers; sampling then decodes the mean and takes an argmax, so
every row gets the most likely category (a 10 % class almost never appears), booleans get their
majority value and numerics get the conditional mean (too narrow). Each column has its own law:
- a categorical one-hot block and the label block: a softmax (cross-entropy), sampled as a category;
- a boolean or a missing-value indicator: a Bernoulli (sigmoid, binary cross-entropy), sampled;
- a numeric or integer value in [0, 1]: by default a softmax over `bins` equal-width bins of its
  declared range (an integer column with at most `bins` values: one bin per value), sampled as a
  bin and a uniform point inside it (integers: the value itself). Why bins: real columns are skewed
  and spiky (loan terms at 12, 24, 36 … months, wages with a long tail); one Gaussian per row puts
  mass between the spikes and cannot follow a long tail, a histogram over public bounds can, and
  its edges come from the schema, not from the rows. `bins = 0`: a Gaussian with a learned σ (two
  outputs: mean, log σ), sampled as mean + σ·ε. The encoder clips to the bounds and rounds
  integers on decode.
  Atoms (`atoms=True`, the default of the models' `numeric_atoms`): a binned numeric column's
  softmax gets one more level per atom (`dpcore.data.encoder.atoms_of`: its bounds, and zero
  inside them), so a point mass — 25 % of incomes exactly 0, amounts at a cap — is learned as its
  own share and drawn as the exact value; a bin alone smears it over the bin, and a sigmoid or a
  clip lands exactly on it almost never. The atoms are functions of the public bounds; integer
  columns with one bin per value already hold every value exactly and get none.
Images never get heads (pixels keep the model's `likelihood`). Sampling draws from the decoder's
outputs with the caller's public seed: post-processing of the model, no privacy cost.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dpcore.data.encoder import ATOM_TOLERANCE, atoms_of

SOFTMAX, BINARY, GAUSSIAN, BINS = "softmax", "binary", "gaussian", "bins"
LOG_SIGMA = (-4.0, 0.0)  # σ of a numeric column in [0.018, 1] of its [0, 1] range: bounded gradients


@dataclass(frozen=True)
class Head:
    """Model-matrix columns [start, stop) and the decoder outputs [out, out_stop) that model them."""

    kind: str
    start: int
    stop: int
    out: int
    weight: float = 1.0
    bins: int = 0  # BINS: bins of the [0, 1] value
    first: float = -1.0  # BINS of an integer column: the encoded value of its first integer (else −1)
    step: float = 0.0  # BINS: bin width in [0, 1] (integers: the encoded distance of one unit)
    atoms: tuple = ()  # BINS: encoded positions with a level of their own, after the bins' levels
    flag: bool = False  # BINARY: a column's missing-value indicator (not a boolean column)

    @property
    def out_stop(self) -> int:
        if self.kind == GAUSSIAN:
            return self.out + 2
        return self.out + (self.bins + len(self.atoms) if self.kind == BINS else self.stop - self.start)

    def bin_of(self, x: torch.Tensor) -> torch.Tensor:
        """BINS: the level of encoded values x in [0, 1] (a bin, or the atom x lies on)."""
        k = torch.round((x - self.first) / self.step) if self.first >= 0 else torch.floor(x / self.step)
        k = k.clamp(0, self.bins - 1).long()
        for j, atom in enumerate(self.atoms):
            k = torch.where((x - atom).abs() <= ATOM_TOLERANCE, self.bins + j, k)
        return k

    def bin_value(self, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """BINS: an encoded value at level k (integers: the value; an atom: the atom; else uniform
        in the bin)."""
        if self.first >= 0:
            return self.first + k * self.step
        value = (np.minimum(k, self.bins - 1) + rng.random(len(k))) * self.step
        for j, atom in enumerate(self.atoms):
            value[k == self.bins + j] = atom
        return value


def _bins_head(spec, start: int, out: int, bins: int, atoms: bool = False) -> Head:
    """A BINS head over the declared range of `spec` (one bin per value for a short integer range;
    otherwise with `atoms`, one more level per atom of the column)."""
    import math

    lo, hi = float(spec.lower), float(spec.upper)
    if spec.kind == "integer":
        values = math.floor(hi) - math.ceil(lo) + 1
        if values <= bins:
            return Head(BINS, start, start + 1, out, bins=values, first=(math.ceil(lo) - lo) / (hi - lo),
                        step=1.0 / (hi - lo))
    return Head(BINS, start, start + 1, out, bins=bins, step=1.0 / bins, atoms=atoms_of(spec) if atoms else ())


class TabularHeads:
    """The heads of one table (features, then the label block); see the module docstring."""

    def __init__(self, heads: list[Head]):
        self.heads = list(heads)
        self.width = self.heads[-1].stop if self.heads else 0
        self.out_width = self.heads[-1].out_stop if self.heads else 0

    @classmethod
    def for_data(cls, encoder, n_features: int, n_classes: int, label_weight: float = 1.0,
                 bins: int = 0, atoms: bool = False) -> TabularHeads | None:
        """Heads from a TabularEncoder's blocks (None for images or an encoder that does not lay
        the features out block after block); numerics get `bins` bins (and with `atoms` a level
        per atom), or a Gaussian when 0."""
        blocks = getattr(encoder, "blocks", None)
        if blocks is None or getattr(encoder, "n_features", None) != n_features:
            return None
        specs = {c.name: c for c in encoder.schema.feature_columns}
        heads, pos, out = [], 0, 0
        for b in blocks:
            if b.start != pos:
                return None
            if b.role == "onehot":
                kind = SOFTMAX
            elif b.role == "missing" or specs[b.column].kind == "boolean":
                kind = BINARY
            else:
                kind = BINS if bins else GAUSSIAN
            head = (_bins_head(specs[b.column], b.start, out, bins, atoms) if kind == BINS
                    else Head(kind, b.start, b.stop, out, flag=b.role == "missing"))
            heads.append(head)
            pos, out = b.stop, head.out_stop
        if n_classes:
            heads.append(Head(SOFTMAX, pos, pos + n_classes, out, float(label_weight)))
        return cls(heads)

    # ---------------------------------------------------------------- training
    def nll(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """−log p(x | decoder output) per row, summed over the heads (label block weighted)."""
        total = torch.zeros(out.shape[0], dtype=out.dtype, device=out.device)
        for h in self.heads:
            o, t = out[:, h.out:h.out_stop], x[:, h.start:h.stop]
            if h.kind == SOFTMAX:
                loss = -(t * torch.log_softmax(o, dim=1)).sum(1)
            elif h.kind == BINARY:
                loss = nn.functional.binary_cross_entropy_with_logits(o[:, 0], t[:, 0], reduction="none")
            elif h.kind == BINS:
                loss = nn.functional.cross_entropy(o, h.bin_of(t[:, 0]), reduction="none")
            else:
                log_s = o[:, 1].clamp(*LOG_SIGMA)
                loss = 0.5 * ((t[:, 0] - o[:, 0]) * torch.exp(-log_s)) ** 2 + log_s
            total = total + (loss if h.weight == 1.0 else h.weight * loss)
        return total

    def soft_targets(self, x: torch.Tensor) -> torch.Tensor:
        """Rows in [0, 1] that are not one-hot (the DP-PCA reconstruction the decoder warms up on)
        as targets `nll` accepts: each softmax block renormalised to sum to one."""
        x = x.clone()
        for h in self.heads:
            if h.kind == SOFTMAX:
                block = x[:, h.start:h.stop].clamp_min(1e-6)
                x[:, h.start:h.stop] = block / block.sum(1, keepdim=True)
        return x

    # ---------------------------------------------------------------- decoding
    def mean(self, out: torch.Tensor) -> torch.Tensor:
        """Expected model-matrix row: class probabilities, flag probabilities, numeric means."""
        cols = []
        for h in self.heads:
            o = out[:, h.out:h.out_stop]
            if h.kind == SOFTMAX:
                cols.append(torch.softmax(o, dim=1))
            elif h.kind == BINARY:
                cols.append(torch.sigmoid(o))
            elif h.kind == BINS:
                centres = _centres(h).to(o.device, o.dtype)
                cols.append(torch.softmax(o, dim=1) @ centres[:, None])
            else:
                cols.append(o[:, :1])
        return torch.cat(cols, dim=1) if cols else out[:, :0]

    def sample(self, out: np.ndarray, rng: np.random.Generator, offsets: dict | None = None) -> np.ndarray:
        """One model-matrix row per output row: a category drawn from each softmax (one-hot), a
        0/1 flag from each sigmoid, mean + σ·ε for each numeric (clipped later by the encoder).
        offsets: {head index: logits added to that softmax head} (`marginal_offsets`)."""
        out = np.asarray(out, np.float64)
        n = out.shape[0]
        rows = np.zeros((n, self.width), np.float32)
        for i, h in enumerate(self.heads):
            o = out[:, h.out:h.out_stop]
            if offsets and i in offsets:
                o = o + offsets[i]
            if h.kind in (SOFTMAX, BINS):
                k = _draw(o, rng)
                if h.kind == BINS:
                    rows[:, h.start] = h.bin_value(k, rng)
                else:
                    rows[np.arange(n), h.start + k] = 1.0
            elif h.kind == BINARY:
                rows[:, h.start] = rng.random(n) < 1.0 / (1.0 + np.exp(-o[:, 0]))
            else:
                sigma = np.exp(np.clip(o[:, 1], *LOG_SIGMA))
                rows[:, h.start] = o[:, 0] + sigma * rng.standard_normal(n)
        return rows


    def marginal_offsets(self, out: np.ndarray, bounds: dict[int, tuple], iters: int = 30
                         ) -> dict[int, np.ndarray]:
        """{head index: logit offsets b} so that the decoder's marginal over `out`'s rows,
        mean_rows softmax(o + b), lies within `bounds[i]` = (lower, upper) shares per level for each
        listed SOFTMAX head (a level inside its bounds keeps the decoder's share; the others go to
        the nearest bound, the rest rescaled); for a listed BINARY head, (lower, upper) bound the
        share of ones, and an upper bound of 0 gives an offset no row's logit overcomes (the flag
        is never drawn: a nullable column generated complete).

        Why: a decoder trained with DP-SGD on a few hundred rows puts a rare level's probability
        near zero for every z, so the level is never generated although it is declared and its
        noisy share says it exists. Iterative proportional fitting of one offset per level
        (b += log(target / current)) moves the marginal and keeps each row's preference among the
        levels. Post-processing of the decoder and of released values: no privacy cost."""
        out = np.asarray(out, np.float64)
        result = {}
        for i, (lo, hi) in bounds.items():
            h = self.heads[i]
            if h.kind == BINARY:
                result[i] = np.array([_binary_offset(out[:, h.out], float(np.max(lo)), float(np.max(hi)))])
                continue
            if h.kind != SOFTMAX:
                raise ValueError(f"head {i} is neither a softmax nor a binary head")
            o = out[:, h.out:h.out_stop]
            current = _softmax(o).mean(0)
            target = _within(current, np.asarray(lo, np.float64), np.asarray(hi, np.float64))
            b = np.zeros(o.shape[1])
            for _ in range(iters):
                b = b + np.log(target / np.clip(_softmax(o + b).mean(0), 1e-12, None))
            result[i] = b - b.max()
        return result


NEVER = -60.0  # a logit offset that makes a flag's probability < 1e-26 for any logit a decoder outputs


def _binary_offset(logits: np.ndarray, lo: float, hi: float, iters: int = 60) -> float:
    """The offset b (by bisection: the mean sigmoid is monotone in b) that moves mean sigmoid(logits
    + b) to the nearest of [lo, hi]; 0 when it already lies inside; NEVER when hi ≤ 0."""
    if hi <= 0.0:
        return NEVER
    share = float(np.mean(_sigmoid(logits))) if len(logits) else 0.0
    if lo <= share <= hi:
        return 0.0
    target = min(max(share, lo), hi)
    a, b = -40.0, 40.0
    for _ in range(iters):
        mid = 0.5 * (a + b)
        a, b = (mid, b) if np.mean(_sigmoid(logits + mid)) < target else (a, mid)
    return 0.5 * (a + b)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow for large |x|


def _softmax(o: np.ndarray) -> np.ndarray:
    p = np.exp(o - o.max(1, keepdims=True))
    return p / p.sum(1, keepdims=True)


def _within(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, rounds: int = 20) -> np.ndarray:
    """Shares closest to p (scaled) that sum to 1 with lo ≤ share ≤ hi where the bounds allow:
    levels out of bounds are pinned to the bound, the free ones rescaled to the rest."""
    lo, hi = np.minimum(lo, 1.0), np.clip(hi, lo, 1.0)
    t = np.clip(p, lo, hi)
    for _ in range(rounds):
        pinned = (t <= lo) | (t >= hi)
        free = ~pinned
        rest = 1.0 - t[pinned].sum()
        if not free.any() or p[free].sum() <= 0:
            break
        t = np.where(free, np.clip(p * rest / p[free].sum(), lo, hi), t)
    return np.clip(t, 1e-9, None) / np.clip(t, 1e-9, None).sum()


def _draw(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row from softmax(logits) (inverse CDF on one uniform per row)."""
    p = np.exp(logits - logits.max(1, keepdims=True))
    cum = np.cumsum(p, axis=1)
    u = rng.random(len(logits))[:, None] * cum[:, -1:]
    return np.minimum((cum < u).sum(1), logits.shape[1] - 1)


def _centres(h: Head) -> torch.Tensor:
    """BINS: the encoded value at the middle of each bin (integers: the values)."""
    k = torch.arange(h.bins, dtype=torch.float64)
    centres = (h.first + k * h.step) if h.first >= 0 else (k + 0.5) * h.step
    return torch.cat([centres, torch.tensor(h.atoms, dtype=torch.float64)]) if h.atoms else centres
