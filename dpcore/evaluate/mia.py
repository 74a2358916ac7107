"""Monte Carlo membership inference against a generator's samples (Hilprecht et al. 2019; docs/references.md#monte-carlo-mia).

Why this attack: it needs only released samples, which is exactly what a DP generative model
publishes. A target whose neighbourhood holds many synthetic samples was probably trained on.
Score = fraction of synthetic samples within radius r of the target; ties (frequent at small r)
are broken by the distance to the nearest sample. Members come from the training split, non-members
from the test split, in equal numbers, so AUC 0.5 means the samples reveal nothing about membership.

Distances are streamed over chunks of synthetic samples (float32 matrix products), so 60k samples ×
2k targets never materialise a 120M-entry matrix.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter
from dpcore.evaluate.bounds import eps_from_errors

PCA_COMPONENTS = 40
# Non-member rows not used as targets must number at least this many to fit PCA on them.
_MIN_PCA_ROWS = 2 * PCA_COMPONENTS


def clopper_pearson(k, n, confidence: float = 0.95):
    """Exact (Clopper–Pearson) two-sided interval for a binomial proportion k/n, vectorised.

    lower = Beta(γ/2; k, n − k + 1), upper = Beta(1 − γ/2; k + 1, n − k), γ = 1 − confidence.
    """
    from scipy.stats import beta

    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    g = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(g / 2, np.maximum(k, 1e-300), n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - g / 2, k + 1, np.maximum(n - k, 1e-300)), 1.0)
    return (lo, hi) if lo.ndim else (float(lo), float(hi))


@dataclass
class MIAResult:
    """One attack's outcome. alpha/beta: the trade-off curve (type-I, type-II error), thresholds
    descending. eps_lower_bound: conservative (Clopper–Pearson ends, Bonferroni over thresholds)
    ε a DP guarantee must exceed to be consistent with this attack; eps_point_estimate uses the
    raw error rates (optimistic). outlier_*: the injected outlier's score and rank (1 = the
    target the attacker is most confident is a member) among all 2·n_targets targets."""

    auc: float
    alpha: np.ndarray
    beta: np.ndarray
    thresholds: np.ndarray
    eps_lower_bound: float
    eps_point_estimate: float
    eps_points: list[dict]
    member_scores: np.ndarray
    non_member_scores: np.ndarray
    radius: float
    features: str
    n_targets: int
    n_synthetic: int
    delta: float = 0.0
    confidence: float = 0.95
    outlier_score: float | None = None
    outlier_rank: int | None = None
    outlier_nearest: float | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self, curve_points: int = 101) -> dict:
        """JSON-able summary; the curve is resampled to `curve_points` α values (β = its min there)."""
        grid = np.linspace(0, 1, curve_points)
        # β as a step function of α: the best β reachable at type-I error ≤ α.
        idx = np.searchsorted(self.alpha, grid, side="right") - 1
        beta_grid = self.beta[np.clip(idx, 0, len(self.beta) - 1)]
        return {
            "auc": self.auc, "eps_lower_bound": self.eps_lower_bound,
            "eps_point_estimate": self.eps_point_estimate, "delta": self.delta,
            "confidence": self.confidence, "radius": self.radius, "features": self.features,
            "n_targets": self.n_targets, "n_synthetic": self.n_synthetic,
            "outlier_score": self.outlier_score, "outlier_rank": self.outlier_rank,
            "outlier_nearest": self.outlier_nearest, "eps_points": self.eps_points,
            "curve": {"alpha": grid.tolist(), "beta": beta_grid.tolist()},
            "notes": list(self.notes), "seconds": self.seconds,
        }


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


def _pca_fit(x: np.ndarray, k: int):
    """Top-k principal axes from the d × d covariance (eigh): far cheaper than an SVD of the rows."""
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(0)
    xc = x - mean
    vals, vecs = np.linalg.eigh(xc.T @ xc)
    return mean, vecs[:, ::-1][:, :k].astype(np.float32)


def _choose_radius(radius, t_feat, s_feat, nearest, rng) -> float:
    if isinstance(radius, str):
        if radius != "median":
            raise InvalidParameter(f"radius must be 'median', a positive number or ('percentile', p); got {radius!r}")
        return float(np.median(nearest))
    if isinstance(radius, tuple):
        if len(radius) != 2 or radius[0] != "percentile" or not (0 < float(radius[1]) < 100):
            raise InvalidParameter(f"radius must be ('percentile', p) with 0 < p < 100, got {radius!r}")
        # Percentile of all target-to-sample distances, estimated from a fixed random subset of
        # samples (≤ 4M distances) so it does not depend on the chunk size.
        m = min(s_feat.shape[0], max(1, 4_000_000 // max(1, t_feat.shape[0])))
        sub = s_feat[np.sort(rng.choice(s_feat.shape[0], m, replace=False))]
        d = torch.cdist(torch.as_tensor(t_feat, dtype=torch.float32),
                        torch.as_tensor(sub, dtype=torch.float32)).numpy()
        return float(np.percentile(d, float(radius[1])))
    r = float(radius)
    if not (r > 0) or math.isinf(r):
        raise InvalidParameter(f"radius must be a positive finite number, got {radius!r}")
    return r


def empirical_eps(mem: np.ndarray, non: np.ndarray, delta: float = 0.0, confidence: float = 0.95):
    """ε lower bounds of the test "member when score ≥ t" at a few thresholds t: high non-member
    quantiles (small α) and low member quantiles (small β). Returns (points, conservative bound,
    point estimate). The conservative bound uses the Clopper–Pearson upper ends of α and β,
    Bonferroni-corrected over the 2·(number of thresholds) intervals, so with probability ≥
    `confidence` it does not exceed the true ε of a mechanism the attack ran against.
    Thresholds come from the same scores (a mild optimism the Bonferroni margin absorbs in practice)."""
    mem = np.asarray(mem, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    qs = np.array([0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
    thr = np.unique(np.concatenate([np.quantile(non, qs), np.quantile(mem, 1 - qs)]))
    n0, n1 = len(non), len(mem)
    fp = (non[None, :] >= thr[:, None]).sum(1)
    fn = (mem[None, :] < thr[:, None]).sum(1)
    level = 1 - (1 - confidence) / (2 * len(thr))
    _, a_hi = clopper_pearson(fp, n0, 2 * level - 1)   # one-sided upper bound at `level`
    _, b_hi = clopper_pearson(fn, n1, 2 * level - 1)
    a_hi, b_hi = np.atleast_1d(a_hi), np.atleast_1d(b_hi)
    lb = np.atleast_1d(eps_from_errors(a_hi, b_hi, delta))
    pe = np.atleast_1d(eps_from_errors(fp / n0, fn / n1, delta))
    pts = [{"threshold": float(t), "alpha": float(f / n0), "beta": float(m / n1),
            "alpha_upper": float(ah), "beta_upper": float(bh), "eps_lower": float(lo), "eps_point": float(p)}
           for t, f, m, ah, bh, lo, p in zip(thr, fp, fn, a_hi, b_hi, lb, pe)]
    return pts, float(lb.max()), float(pe.max())


def monte_carlo_mia(synthetic: Dataset, members: Dataset, non_members: Dataset, n_targets: int = 1000,
                    radius="median", features: str = "raw", seed: int = 0, outlier_index: int | None = None,
                    *, delta: float = 0.0, confidence: float = 0.95, chunk_size: int = 8192,
                    device: str = "auto") -> MIAResult:
    """Run the Monte Carlo attack and return its trade-off curve, AUC and empirical ε lower bound.

    members: the training split (targets drawn from it, the outlier always included);
    non_members: the test split; min(n_targets, len) targets each, equal numbers.
    radius: "median" (median over targets of the nearest-sample distance), a number, or
        ("percentile", p) of target-to-sample distances.
    features: "raw" (Euclidean on features) or "pca40" (PCA fitted on non-member rows not used as
        targets; when fewer than 80 remain it is fitted on the synthetic samples, which are public).
    outlier_index: row of `members` holding an injected outlier (defaults to members.outlier_index).
    """
    t0 = time.perf_counter()
    if features not in ("raw", "pca40"):
        raise InvalidParameter(f"features must be 'raw' or 'pca40', got {features!r}")
    d = members.n_features
    if synthetic.n_features != d or non_members.n_features != d:
        raise DataError("synthetic, members and non_members must have the same number of features")
    if synthetic.n == 0:
        raise DataError("the synthetic set is empty")
    n = min(int(n_targets), members.n, non_members.n)
    if n < 2:
        raise DataError("need at least 2 members and 2 non-members for a membership attack")
    rng = np.random.default_rng(seed)
    notes: list[str] = []
    if n < n_targets:
        notes.append(f"only {n} targets per side available (asked {n_targets})")

    if outlier_index is None:
        outlier_index = members.outlier_index
    mem_idx = rng.choice(members.n, n, replace=False)
    if outlier_index is not None:
        if not (0 <= outlier_index < members.n):
            raise InvalidParameter(f"outlier_index must index members, got {outlier_index!r}")
        if outlier_index not in mem_idx:
            mem_idx[0] = outlier_index
    perm = rng.permutation(non_members.n)
    non_idx, held_out = perm[:n], perm[n:]

    targets = np.concatenate([members.features[mem_idx], non_members.features[non_idx]])
    samples = synthetic.features
    if features == "pca40":
        k = min(PCA_COMPONENTS, d)
        if len(held_out) >= _MIN_PCA_ROWS:
            fit_rows = non_members.features[held_out[:20_000]]
        else:
            sub = rng.choice(synthetic.n, min(synthetic.n, 20_000), replace=False)
            fit_rows = synthetic.features[np.sort(sub)]
            notes.append("PCA fitted on synthetic samples (too few held-out non-members)")
        mean, comp = _pca_fit(fit_rows.astype(np.float64), k)
        mean = mean.astype(np.float32)
        targets = (targets - mean) @ comp
        samples = np.concatenate([(samples[i:i + 16384] - mean) @ comp
                                  for i in range(0, synthetic.n, 16384)])

    nearest, _ = nearest_and_counts(targets, samples, None, chunk_size, device)
    r = _choose_radius(radius, targets, samples, nearest, rng)
    _, counts = nearest_and_counts(targets, samples, r, chunk_size, device)
    # Count score with the nearest distance as tie-break: 0.5/(1 + d) lies in (0, 0.5], so the
    # order is lexicographic (count first, then closeness).
    scores = counts / synthetic.n + 0.5 / (1.0 + nearest) / synthetic.n
    mem_s, non_s = scores[:n], scores[n:]

    from sklearn.metrics import roc_auc_score, roc_curve

    y = np.r_[np.ones(n), np.zeros(n)]
    fpr, tpr, thr = roc_curve(y, scores, drop_intermediate=False)
    auc = float(roc_auc_score(y, scores))
    pts, eps_lb, eps_pe = empirical_eps(mem_s, non_s, delta, confidence)

    out_score = out_rank = out_near = None
    if outlier_index is not None:
        j = int(np.flatnonzero(mem_idx == outlier_index)[0])
        out_score = float(scores[j])
        out_rank = int(1 + (scores > scores[j]).sum())
        out_near = float(nearest[j])
    return MIAResult(auc=auc, alpha=fpr, beta=1 - tpr, thresholds=thr, eps_lower_bound=eps_lb,
                     eps_point_estimate=eps_pe, eps_points=pts, member_scores=mem_s,
                     non_member_scores=non_s, radius=r, features=features, n_targets=n,
                     n_synthetic=synthetic.n, delta=float(delta), confidence=confidence,
                     outlier_score=out_score, outlier_rank=out_rank, outlier_nearest=out_near,
                     notes=notes, seconds=time.perf_counter() - t0)
