"""Black-box attacks that see only synthetic rows (and, when calibrated, reference real rows).

- `dcr`: distance to the closest synthetic record; closer = member (the uncalibrated GAN-Leaks).
- `gan_leaks`: GAN-Leaks' calibrated score (Chen et al., CCS 2020, Eq. 7: L_cal(x) = L(x, G_target) −
  L(x, G_ref)) with the reference generator's samples replaced by held-out real rows: a target
  that is close to the synthetic data *only because it lies in a dense region* is also close to the
  reference rows, and the calibration cancels that.
- `monte_carlo`: Hilprecht et al. (2019, Eq. 2): the share of synthetic rows within radius r of the
  target (r = the median nearest distance), ties broken by closeness.

Distances are Euclidean on the features, or on a PCA-40 projection fitted on the reference rows
when there are more than 100 features (Fashion-scale evaluation stays within the time budget);
they are streamed over chunks of synthetic rows (one fused matrix product each), so 60k synthetic
rows × 2k targets never materialise a 120M-entry matrix.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from dpcore.evaluate.attacks.result import attack_result
from dpcore.evaluate.attacks.targets import Targets, pca_basis, project

PCA_ABOVE = 100
PCA_DIM = 40


def _device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def nearest_and_counts(targets: np.ndarray, samples: np.ndarray, radius: float | None,
                       chunk_size: int = 8192, device: str = "auto"):
    """Per target: distance to the nearest sample, and (when radius is given) the number of samples
    within `radius`. Streams over sample chunks: memory is O(len(targets) · chunk_size)."""
    dev = _device(device)
    t = torch.as_tensor(targets, dtype=torch.float32, device=dev)
    t_sq = (t * t).sum(1)
    best = torch.full((t.shape[0],), float("inf"), dtype=torch.float32, device=dev)
    counts = torch.zeros(t.shape[0], dtype=torch.int64, device=dev)
    # ‖t − s‖² ≤ r²  ⇔  ‖s‖² − 2 t·s ≤ r² − ‖t‖²: one fused GEMM (addmm) per chunk, t's norm added once.
    bound = None if radius is None else (float(radius) ** 2 - t_sq)[:, None]
    for start in range(0, samples.shape[0], chunk_size):
        s = torch.as_tensor(samples[start:start + chunk_size], dtype=torch.float32, device=dev)
        part = torch.addmm((s * s).sum(1)[None, :], t, s.T, alpha=-2.0)
        best = torch.minimum(best, part.amin(1))
        if bound is not None:
            counts += torch.count_nonzero(part <= bound, dim=1)
    nearest = (best + t_sq).clamp_min(0.0).sqrt()
    return nearest.cpu().numpy().astype(np.float64), counts.cpu().numpy()


class SyntheticView:
    """Targets, synthetic and reference rows in one feature space, with the nearest distances cached."""

    def __init__(self, targets: Targets, synthetic, device: str = "auto"):
        t, s, r = targets.features(), synthetic.features, targets.reference.features
        if t.shape[1] > PCA_ABOVE:
            mean, comp = pca_basis(r, PCA_DIM)
            t, s, r = project(t, mean, comp), project(s, mean, comp), project(r, mean, comp)
            self.space = f"PCA-{comp.shape[1]} (fitted on reference rows)"
        else:
            self.space = "raw features"
        self.targets, self.t, self.s, self.r, self.device = targets, t, s, r, device
        self.n_synthetic = len(s)
        self._near: dict[str, np.ndarray] = {}

    def nearest(self, which: str = "synthetic") -> np.ndarray:
        """Per target: distance to the nearest synthetic (or reference) row."""
        if which not in self._near:
            rows = self.s if which == "synthetic" else self.r
            self._near[which] = nearest_and_counts(self.t, rows, None, device=self.device)[0]
        return self._near[which]

    def nearest_synthetic_rows(self, positions: np.ndarray, k: int = 1) -> np.ndarray:
        """Indices of the k nearest synthetic rows for the targets at `positions` (for display)."""
        d = torch.cdist(torch.as_tensor(self.t[positions], dtype=torch.float32),
                        torch.as_tensor(self.s, dtype=torch.float32))
        return torch.topk(d, min(k, d.shape[1]), largest=False).indices.numpy()


def _result(name, sees, view: SyntheticView, scores, t0, delta, confidence, notes=()):
    mem, non = view.targets.split(scores)
    return attack_result(name, sees, mem, non, delta=delta, confidence=confidence,
                         seconds=time.perf_counter() - t0, notes=[f"distances on {view.space}", *notes],
                         member_index=view.targets.member_index, non_member_index=view.targets.non_member_index)


def dcr(view: SyntheticView, *, delta=0.0, confidence=0.95):
    """Score = −(distance to the closest synthetic record)."""
    t0 = time.perf_counter()
    return _result("dcr", "synthetic rows", view, -view.nearest("synthetic"), t0, delta, confidence)


def gan_leaks(view: SyntheticView, *, delta=0.0, confidence=0.95):
    """Score = d_ref(x) − d_syn(x): GAN-Leaks' calibrated distance, reference = held-out real rows.

    The reference set is smaller than the synthetic one, so its nearest distances are larger on
    average; the calibration is per target, so a constant offset does not change the ranking."""
    t0 = time.perf_counter()
    score = view.nearest("reference") - view.nearest("synthetic")
    return _result("gan-leaks", "synthetic rows + reference real rows", view, score, t0, delta, confidence)


def monte_carlo(view: SyntheticView, *, delta=0.0, confidence=0.95):
    """Score = share of synthetic rows within the median nearest distance, tie-break by closeness."""
    t0 = time.perf_counter()
    near = view.nearest("synthetic")
    r = float(np.median(near))
    _, counts = nearest_and_counts(view.t, view.s, r, device=view.device)
    n = max(1, view.n_synthetic)
    score = counts / n + 0.5 / (1.0 + near) / n
    return _result("monte-carlo", "synthetic rows", view, score, t0, delta, confidence,
                   [f"radius {r:.3g} (median nearest distance)"])
