"""Who is attacked: member and non-member targets, the reference rows, and a shared reduced space.

Why one split for the whole ladder: attacks are compared on the same targets, so their curves differ
only in what the attacker sees. Non-members are split in two: targets, and *reference* rows the
calibrated attacks may use (GAN-Leaks' calibration, DOMIAS' reference density, the reference model);
a reference row is never a target. Members are drawn from the training split (an injected outlier is
always a target), non-members from the held-out split, in equal numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError

MIN_REFERENCE = 10


@dataclass
class Targets:
    members: Dataset
    non_members: Dataset
    reference: Dataset
    member_index: np.ndarray
    non_member_index: np.ndarray
    reference_index: np.ndarray
    outlier_position: int | None = None  # position of the injected outlier among member targets
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.members.n

    def features(self) -> np.ndarray:
        """All targets' features: members first, then non-members."""
        return np.concatenate([self.members.features, self.non_members.features])

    def split(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return scores[:self.n], scores[self.n:]


def choose_targets(train: Dataset, held_out: Dataset, n_targets: int = 1000, seed: int = 0) -> Targets:
    """n = min(n_targets, |train|, |held_out| / 2) targets per side; the other held-out rows
    (at most 20 000) are the reference set."""
    if train.n_features != held_out.n_features:
        raise DataError("training and held-out rows must have the same features")
    n = min(int(n_targets), train.n, held_out.n // 2)
    if n < 2 or held_out.n - n < MIN_REFERENCE:
        raise DataError(f"need at least {2 + MIN_REFERENCE} held-out rows and 2 training rows for the "
                        f"attacks (have {held_out.n} held-out, {train.n} training)")
    rng = np.random.default_rng(seed)
    notes = [] if n == n_targets else [f"{n} targets per side (asked {n_targets}; half the held-out "
                                       "rows are kept as the reference set)"]
    mem_idx = np.sort(rng.choice(train.n, n, replace=False))
    out_pos = None
    if train.outlier_index is not None and 0 <= train.outlier_index < train.n:
        if train.outlier_index not in mem_idx:
            mem_idx[0] = train.outlier_index
            mem_idx = np.sort(mem_idx)
        out_pos = int(np.flatnonzero(mem_idx == train.outlier_index)[0])
    perm = rng.permutation(held_out.n)
    non_idx, ref_idx = np.sort(perm[:n]), np.sort(perm[n:n + 20_000])
    return Targets(train.subset(mem_idx), held_out.subset(non_idx), held_out.subset(ref_idx),
                   mem_idx, non_idx, ref_idx, out_pos, notes)


def pca_basis(rows: np.ndarray, k: int, whiten: bool = False):
    """(mean, components d×k) of `rows` from the d×d covariance (eigh); `whiten` divides each axis by
    its standard deviation (so an isotropic kernel suits the reduced space)."""
    x = np.asarray(rows, np.float64)
    mean = x.mean(0)
    xc = x - mean
    vals, vecs = np.linalg.eigh(xc.T @ xc / max(1, len(x) - 1))
    k = min(k, x.shape[1])
    vals, vecs = vals[::-1][:k], vecs[:, ::-1][:, :k]
    if whiten:
        vecs = vecs / np.sqrt(np.maximum(vals, 1e-8))[None, :]
    return mean.astype(np.float32), vecs.astype(np.float32)


def project(rows: np.ndarray, mean: np.ndarray, comp: np.ndarray, chunk: int = 16384) -> np.ndarray:
    return np.concatenate([(rows[i:i + chunk] - mean) @ comp for i in range(0, len(rows), chunk)]) \
        if len(rows) else np.zeros((0, comp.shape[1]), np.float32)
