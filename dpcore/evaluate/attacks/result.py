"""One output for every attack: per-target scores → ROC, AUC, TPR at low FPR, empirical ε with CI.

Why one type: the ladder's attacks see different things (synthetic rows, a reference set, the model
itself), but a reader compares them on one plot and one table, and the empirical ε lower bound must
be computed the same conservative way for all of them. Attack statistics are measured against real
data: they are not covered by ε and are for the data owner only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpcore.evaluate.bounds import eps_from_errors, tradeoff_eps_delta

LOW_FPRS = (0.001, 0.01, 0.1)
NOT_COVERED = "not covered by ε — data owner only"


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


def roc(member_scores, non_member_scores):
    """(fpr, tpr, auc) of the test "member when score ≥ t" over every threshold (ties averaged)."""
    from sklearn.metrics import roc_auc_score, roc_curve

    mem = np.asarray(member_scores, np.float64)
    non = np.asarray(non_member_scores, np.float64)
    y = np.r_[np.ones(len(mem)), np.zeros(len(non))]
    s = np.r_[mem, non]
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    return fpr, tpr, float(roc_auc_score(y, s))


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, targets=LOW_FPRS) -> dict[str, float]:
    """Best TPR among thresholds whose FPR ≤ each target (Carlini et al.'s low-FPR view of an attack)."""
    out = {}
    for t in targets:
        ok = fpr <= t + 1e-12
        out[f"{t:g}"] = float(tpr[ok].max()) if ok.any() else 0.0
    return out


def eps_interval(member_scores, non_member_scores, delta: float = 0.0, confidence: float = 0.95):
    """Empirical ε of the best threshold, with a Clopper–Pearson interval.

    ε ≥ max{log((1−δ−β)/α), log((1−δ−α)/β)} (Kairouz et al. 2015, Thm. 2.1; Dong et al. Eq. 5
    inverted). `lower` plugs in the CP *upper* ends of α and β (Bonferroni over the thresholds tried),
    so with probability ≥ `confidence` it does not exceed the true ε; `upper` plugs in the CP lower
    ends (how much the same data could at most prove); `point` the raw rates.
    Returns (lower, point, upper, points) — points: per-threshold α, β and their CP ends.
    """
    pts, lower, point = empirical_eps(member_scores, non_member_scores, delta, confidence)
    n_thr = max(1, len(pts))
    level = 1 - (1 - confidence) / (2 * n_thr)
    fp = np.array([p["alpha"] for p in pts]) * len(non_member_scores)
    fn = np.array([p["beta"] for p in pts]) * len(member_scores)
    a_lo, _ = clopper_pearson(np.rint(fp), len(non_member_scores), 2 * level - 1)
    b_lo, _ = clopper_pearson(np.rint(fn), len(member_scores), 2 * level - 1)
    upper = np.atleast_1d(eps_from_errors(np.atleast_1d(a_lo), np.atleast_1d(b_lo), delta))
    return lower, point, float(upper.max()) if len(upper) else 0.0, pts


@dataclass
class AttackResult:
    """Scores and summary of one attack. Higher score = "more likely a member"."""

    name: str
    sees: str
    member_scores: np.ndarray
    non_member_scores: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray
    auc: float
    tpr_at_fpr: dict[str, float]
    eps_lower_bound: float
    eps_point_estimate: float
    eps_upper: float
    eps_points: list[dict]
    delta: float = 0.0
    confidence: float = 0.95
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    member_index: np.ndarray | None = None      # rows of the training split used as member targets
    non_member_index: np.ndarray | None = None  # rows of the held-out split used as non-member targets
    label: str = NOT_COVERED
    outlier_position: int | None = None  # the injected outlier's position among the member targets

    @property
    def outlier_score(self) -> float | None:
        """The injected outlier's score (None when the training rows hold none)."""
        return None if self.outlier_position is None else float(self.member_scores[self.outlier_position])

    @property
    def outlier_rank(self) -> int | None:
        """The outlier's rank among all 2·n targets, 1 = the one the attacker is surest is a member."""
        score = self.outlier_score
        if score is None:
            return None
        return int(1 + (self.member_scores > score).sum() + (self.non_member_scores > score).sum())

    @property
    def alpha(self) -> np.ndarray:
        return self.fpr

    @property
    def beta(self) -> np.ndarray:
        return 1.0 - self.tpr

    @property
    def n_targets(self) -> int:
        return len(self.member_scores)

    def consistent_with(self, epsilon: float, delta: float) -> bool:
        """True when every tried threshold's conservative corner (α_hi, β_hi) lies on or above the
        (ε, δ) trade-off curve: the curve is above the bound within its confidence band."""
        for p in self.eps_points:
            f = float(tradeoff_eps_delta(np.array([min(1.0, p["alpha_upper"])]), epsilon, delta)[0])
            if p["beta_upper"] < f - 1e-12:
                return False
        return True

    def to_dict(self, curve_points: int = 101) -> dict:
        grid = np.linspace(0, 1, curve_points)
        idx = np.searchsorted(self.fpr, grid, side="right") - 1
        tpr_grid = self.tpr[np.clip(idx, 0, len(self.tpr) - 1)]
        return {"name": self.name, "sees": self.sees, "auc": self.auc, "tpr_at_fpr": dict(self.tpr_at_fpr),
                "epsilon_lower_bound": self.eps_lower_bound, "epsilon_point_estimate": self.eps_point_estimate,
                "epsilon_ci": [self.eps_lower_bound, self.eps_upper], "confidence": self.confidence,
                "delta": self.delta, "n_targets": self.n_targets, "seconds": round(self.seconds, 3),
                "notes": list(self.notes), "label": self.label,
                "curve": {"alpha": grid.tolist(), "beta": (1 - tpr_grid).tolist()}}


def attack_result(name: str, sees: str, member_scores, non_member_scores, *, delta: float = 0.0,
                  confidence: float = 0.95, seconds: float = 0.0, notes=(), member_index=None,
                  non_member_index=None) -> AttackResult:
    """Turn per-target scores into an AttackResult (the one place every attack's numbers come from)."""
    mem = np.asarray(member_scores, np.float64)
    non = np.asarray(non_member_scores, np.float64)
    # A score that is nan (e.g. an empty neighbourhood's log-density) ranks last, never first.
    finite = np.r_[mem, non][np.isfinite(np.r_[mem, non])]
    low = (finite.min() if finite.size else 0.0) - 1.0
    high = (finite.max() if finite.size else 0.0) + 1.0
    mem = np.nan_to_num(mem, nan=low, neginf=low, posinf=high)
    non = np.nan_to_num(non, nan=low, neginf=low, posinf=high)
    fpr, tpr, auc = roc(mem, non)
    lo, pt, hi, pts = eps_interval(mem, non, delta, confidence)
    return AttackResult(name=name, sees=sees, member_scores=mem, non_member_scores=non, fpr=fpr, tpr=tpr,
                        auc=auc, tpr_at_fpr=tpr_at_fpr(fpr, tpr), eps_lower_bound=lo, eps_point_estimate=pt,
                        eps_upper=hi, eps_points=pts, delta=float(delta), confidence=confidence,
                        seconds=seconds, notes=list(notes), member_index=member_index,
                        non_member_index=non_member_index)
