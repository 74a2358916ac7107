"""The targets P3GM's decoder warms up on, for tables: the DP-PCA reconstruction spread back to
the data's width (issue 29).

Why: DP-PCA sees each row centred on the noisy mean m and scaled to unit norm, u = (x − m)/‖x − m‖,
so the reconstruction z·Vᵀ of a prior draw is about 1/‖x − m‖ as wide as the data (2.4 on the
small wide table): every generated numeric column came out 0.4–0.9× as wide as the real one and
its tails were cut. Three corrections, each a function of released values only (DP-PCA's noisy
mean and covariance, the DP-EM prior) and of the public seed, so post-processing, no privacy cost:
- `spread`: the deviations times the typical ‖x − m‖ (`released_row_norm`);
- `residual` (numeric columns): independent noise with the variance the released covariance's
  diagonal gives a column beyond what the prior holds along the components (probabilistic PCA's
  x = Wz + μ + ε), so a column the top components miss is not generated at its mean;
- `factor` (numeric columns): the per-column scale, within COLUMN_FACTOR, that gives the targets
  the variance spread²·C_jj the diagonal says the column has. At a thousand rows and ε = 1 the
  prior's variances sit at DP-EM's noise floor and the components are mostly noise, so the
  reconstruction's variance is spread evenly over the columns: long-tailed columns came out ~2×
  too wide, uniform ones too narrow.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from dpcore.models.heads import BINARY, BINS, GAUSSIAN, SOFTMAX
from dpcore.models.label_shares import CALIBRATION_DRAWS
from dpcore.models.mixture import clip_codes, mog_sample

COLUMN_FACTOR = (0.5, 2.0)  # bounds of the per-column correction (the covariance diagonal is noisy)


def released_row_norm(heads, mean: np.ndarray, column_variance: np.ndarray | None) -> float:
    """The typical norm of a centred row ‖x − m‖ (≥ 1), from DP-PCA's released mean m and the
    released covariance diagonal C of the normalised rows.

    A one-hot or 0/1 column's variance is m_j(1 − m_j) exactly, and C_jj ≈ var_j/‖x − m‖², so over
    those columns ‖x − m‖² ≈ Σ m_j(1 − m_j) / Σ C_jj. Without such columns (or when the noisy sum is
    not positive): the upper bound √Σ m_j(1 − m_j) over every column (var ≤ m(1 − m) in [0, 1]),
    which also caps the estimate."""
    m = np.clip(np.asarray(mean, np.float64), 0.0, 1.0)
    bound = max(1.0, math.sqrt(float(np.sum(m * (1.0 - m)))))
    binary = _columns(heads, m.shape[0], (SOFTMAX, BINARY))
    if column_variance is not None and binary.any():
        c = float(np.sum(np.asarray(column_variance, np.float64)[binary]))
        v = float(np.sum((m * (1.0 - m))[binary]))
        if c > 0 and v > 0:
            return float(min(max(1.0, math.sqrt(v / c)), bound))
    return bound


@dataclass
class WarmupTargets:
    """spread (a scalar), residual and factor (per model column, None when off)."""

    spread: float
    residual: np.ndarray | None = None
    factor: np.ndarray | None = None

    def deviations(self, recon: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        """The reconstructed deviations z·Vᵀ of a batch as the warm-up's target deviations."""
        out = self.spread * recon
        if self.residual is not None:
            noise = rng.standard_normal(tuple(out.shape)) * self.residual
            out = out + torch.as_tensor(noise, dtype=out.dtype, device=out.device)
        if self.factor is not None:
            out = out * torch.as_tensor(self.factor, dtype=out.dtype, device=out.device)
        return out

    def summary(self) -> dict:
        out = {"warmup_spread": self.spread}
        if self.factor is not None:
            out["warmup_column_factors"] = [round(float(f), 4) for f in self.factor]
        return out


def warmup_targets(heads, pca: dict, mog: dict, column_variance: np.ndarray | None, code_radius: float,
                   config, seed: int) -> WarmupTargets:
    """The corrections `config` asks for (warmup_scale, warmup_residual, warmup_columns)."""
    spread = (float(config.warmup_scale) if config.warmup_scale is not None
              else released_row_norm(heads, pca["mean"], column_variance))
    targets = WarmupTargets(spread)
    if column_variance is None:
        return targets
    V = np.asarray(pca["components"], np.float64)
    numeric = _columns(heads, V.shape[0], (BINS, GAUSSIAN))
    variance = np.maximum(np.asarray(column_variance, np.float64), 0.0)
    if config.warmup_residual:  # C_jj beyond the prior's W Λ Wᵀ (Λ: the mixture's variance per code dimension)
        w, mu, v = (np.asarray(mog[k], np.float64) for k in ("weights", "means", "variances"))
        w = w / w.sum()
        code_var = w @ (v + mu ** 2) - (w @ mu) ** 2
        left = np.maximum(variance - (V ** 2) @ code_var, 0.0)
        targets.residual = np.where(numeric, spread * np.sqrt(left), 0.0)
    if config.warmup_columns:  # the variance the warm-up's clipped draws actually give each column
        z, _ = mog_sample(CALIBRATION_DRAWS, mog["weights"], mog["means"], mog["variances"],
                          np.random.default_rng([seed, 3]))
        have = (spread * (clip_codes(z, code_radius).astype(np.float64) @ V.T)).var(0)
        if targets.residual is not None:
            have = have + targets.residual ** 2
        ratio = np.sqrt(spread ** 2 * variance / np.maximum(have, 1e-12))
        targets.factor = np.where(numeric, np.clip(ratio, *COLUMN_FACTOR), 1.0)
    return targets


def _columns(heads, width: int, kinds: tuple) -> np.ndarray:
    """Model columns covered by heads of these kinds."""
    mask = np.zeros(width, bool)
    for h in heads.heads:
        if h.kind in kinds:
            mask[h.start:h.stop] = True
    return mask
