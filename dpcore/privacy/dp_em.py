"""DP-EM (P3GM step 2): a diagonal mixture of Gaussians fitted privately to the PCA codes.

Codes are clipped to the ball of radius r (`code_radius`, default 1: DPPCA codes have norm ≤ its
clip_norm, 1 by default, because DPPCA clips the centred rows before projecting onto orthonormal
components). The encoder MUST emit codes clipped the same way — with DPPCA.transform and
code_radius = DPPCA.clip_norm this holds automatically, else use `DPEM.clip` — otherwise the MoG
prior is fitted on other data than the codes the VAE sees (defect 5, docs/references.md#p3gm-code-defects).

Each iteration: an E-step on public parameters (no privacy cost: responsibilities of row i depend
only on row i and released parameters), then 2K+1 Gaussian mechanisms, all with noise multiplier σ_e
and add/remove-one sensitivities derived for ‖z_i‖ ≤ r and responsibilities r_i in the simplex:
- counts n_k = Σ_i r_ik, one release of the K-vector: Δ₂ = ‖r_i‖₂ ≤ 1 ("dp-em-weights").
  (The paper's "2/N" is the L1 sensitivity of π = n/N under replace-one.)
- sums s_k = Σ_i r_ik z_i, one release per k: Δ₂ = r_ik‖z_i‖ ≤ r ("dp-em-means").
- second moments m_k = Σ_i r_ik z_i², one release per k: Δ₂ = ‖z_i²‖₂ ≤ ‖z_i‖² ≤ r²
  ("dp-em-variances").
Then π ∝ ñ, μ_k = s̃_k/ñ_k, σ²_k = m̃_k/ñ_k − μ_k², dividing by the *released* ñ_k: post-processing.
The paper's "2√d_p/ñ_k" is the same analysis for codes in the cube [−1, 1]^d_p (‖z‖ ≤ √d_p) under
replace-one (factor 2), for the mean given the public noisy count; with the true count in the
denominator the sensitivity would be unbounded for small components. (A joint analysis could
release all K sums as one mechanism of Δ₂ = r, since ‖(r_ik z_i)_k‖ ≤ r; we keep the paper's
conservative 2K+1 count, so the ledger is exactly T·(2K+1) mechanisms.)

Initialisation (defect 3) is data-independent, so it needs no ledger entry: "split" (default)
starts with ONE active component (its parameters do not matter: every responsibility is 1), so the
first iteration releases the global moments; after each iteration the widest active component
(largest weight × total variance) is split along its largest-variance axis into μ ± 1 std, until K
are active (binary splitting, as in LBG vector quantisation). Inactive components take no
responsibility but their 2 releases per iteration still happen and are accounted. "random": all K
start active with means drawn from N(0, r²/(4d)·I).
Robustness (all post-processing): weights floored at `min_weight`; means projected onto the ball of
radius r (means of points in the ball lie in it); variances clipped to [max(min_variance,
σ_e·r²/ñ_k), r²] (below the noise std of its estimate a variance is noise, and a collapsed variance
would capture the responsibilities); a component whose noisy count is below max(1, 3σ_e)
(indistinguishable from empty) or that duplicates a heavier one (Bhattacharyya coefficient > 0.9)
keeps its parameters and is re-seeded by a split, except in the last quarter of the iterations.

Records are tallied per mechanism as they run and written to the ledger when fit ends (also on an
error): one record per kind with steps T, T·K, T·K, exactly what accountant.p3gm_ledger predicts.
"""
from __future__ import annotations

import numpy as np

from dpcore.errors import InvalidParameter, check_int, check_positive
from dpcore.privacy.dp_pca import _check_matrix
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.mechanisms import as_rng, clip_rows, gaussian_mechanism
from dpcore.privacy.randomness import noise_kind

WEIGHTS_RECORD, MEANS_RECORD, VARIANCES_RECORD = "dp-em-weights", "dp-em-means", "dp-em-variances"
INITS = ("split", "random")


def diag_gaussian_log_prob(Z: np.ndarray, weights, means, variances) -> np.ndarray:
    """(n, K) matrix log π_k + log N(z_i; μ_k, diag σ²_k) (−inf for zero weights)."""
    var = np.asarray(variances)[None, :, :]
    diff = Z[:, None, :] - np.asarray(means)[None, :, :]
    ll = -0.5 * (np.sum(diff * diff / var, axis=2) + np.sum(np.log(2 * np.pi * var), axis=2))
    with np.errstate(divide="ignore"):
        return ll + np.log(np.asarray(weights))[None, :]


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    m = a.max(axis=1, keepdims=True)
    return np.log(np.exp(a - m).sum(axis=1)) + m[:, 0]


def em_statistics(Z: np.ndarray, weights, means, variances):
    """E-step + sufficient statistics: counts (K,), Σ r_ik z_i (K, d), Σ r_ik z_i² (K, d).

    Row i contributes (r_i, r_ik z_i, r_ik z_i²) with r_i computed from row i and the (released)
    parameters only, which is what makes the add/remove sensitivities 1, r and r².
    """
    logp = diag_gaussian_log_prob(Z, weights, means, variances)
    resp = np.exp(logp - _logsumexp_rows(logp)[:, None])
    return resp.sum(0), resp.T @ Z, resp.T @ (Z * Z)


class DPEM:
    """Private EM for a diagonal-covariance MoG on codes of norm ≤ code_radius (module docstring).

    noise_multiplier: σ_e for all 2K+1 mechanisms per iteration; None = non-private EM (no noise,
        nothing recorded: the caller must label the model ε = ∞).
    code_radius: r, the L2 clip of the codes (None → 1, the bound of DPPCA's default codes).
    """

    def __init__(self, n_components: int = 1, n_iter: int = 20,
                 noise_multiplier: float | None = 100.0, code_radius: float | None = None,
                 init: str = "split", min_weight: float = 1e-3, min_variance: float = 1e-6):
        self.n_components = check_int("n_components", n_components)
        self.n_iter = check_int("n_iter", n_iter)
        self.noise_multiplier = (None if noise_multiplier is None
                                 else check_positive("noise_multiplier", noise_multiplier))
        self.code_radius = (1.0 if code_radius is None
                            else check_positive("code_radius", code_radius))
        if init not in INITS:
            raise InvalidParameter(f"init must be one of {INITS}, got {init!r}")
        self.init = init
        self.min_weight = check_positive("min_weight", min_weight)
        if self.min_weight * self.n_components >= 1:
            raise InvalidParameter("min_weight must be < 1/n_components")
        self.min_variance = check_positive("min_variance", min_variance)

    # -- the noisy releases ------------------------------------------------------------------
    def _release(self, value, sensitivity, kind, rng):
        self._tally[kind] = self._tally.get(kind, 0) + 1
        if self.noise_multiplier is None:
            return np.asarray(value, dtype=np.float64)
        return gaussian_mechanism(value, sensitivity, self.noise_multiplier, rng)

    def _write_ledger(self, ledger: PrivacyLedger | None) -> None:
        if self.noise_multiplier is None or ledger is None:
            return
        r = self.code_radius
        for kind, sens in ((WEIGHTS_RECORD, 1.0), (MEANS_RECORD, r), (VARIANCES_RECORD, r * r)):
            if self._tally.get(kind):
                ledger.add(MechanismRecord(kind, "gaussian", self.noise_multiplier,
                                           steps=self._tally[kind], sensitivity=sens,
                                           noise=self._noise_kind))

    def fit(self, Z, ledger: PrivacyLedger | None, rng) -> DPEM:
        """Clip codes to the radius, then n_iter noisy EM iterations (module docstring)."""
        Z = clip_rows(_check_matrix(Z, "Z"), self.code_radius)
        if self.noise_multiplier is not None and ledger is None:
            raise InvalidParameter("ledger is required for a private fit")
        rng = as_rng(rng)
        self._noise_kind = noise_kind(rng)  # pass a secret stream (dpcore.privacy.randomness)
        n, d = Z.shape
        k, r = self.n_components, self.code_radius
        self.n_features_in_ = d
        self._tally: dict[str, int] = {}
        self.means_ = clip_rows(rng.normal(0.0, r / (2 * np.sqrt(d)), (k, d)), r)
        self.variances_ = np.full((k, d), r * r / d)
        active = np.ones(k, bool) if self.init == "random" else np.arange(k) == 0
        self.weights_ = active / active.sum()
        grow_until = max(1, self.n_iter - max(2, self.n_iter // 4))  # time to converge
        try:
            for it in range(self.n_iter):
                counts, sums, sq = em_statistics(Z, self.weights_, self.means_, self.variances_)
                counts = self._release(counts, 1.0, WEIGHTS_RECORD, rng)
                sums = np.stack([self._release(sums[j], r, MEANS_RECORD, rng) for j in range(k)])
                sq = np.stack([self._release(sq[j], r * r, VARIANCES_RECORD, rng)
                               for j in range(k)])
                alive = self._m_step(counts, sums, sq, active)
                if it < grow_until and alive.any():
                    dup = self._duplicates(alive)
                    inactive = np.flatnonzero(~active)
                    grow = inactive[:-(-inactive.size // (grow_until - it))]
                    seeds = np.concatenate([np.flatnonzero(active & (~alive | dup)), grow])
                    active = self._split(alive & ~dup, seeds.astype(int))
        finally:
            self._write_ledger(ledger)
        w = np.maximum(self.weights_, self.min_weight)  # floors: every component can be sampled
        self.weights_ = w / w.sum()
        self.is_private_ = self.noise_multiplier is not None
        return self

    def _m_step(self, counts, sums, sq, active) -> np.ndarray:
        """Parameters from the released statistics (post-processing with floors); returns the
        components that are alive (active with a count above the noise)."""
        r = self.code_radius
        floor = max(1.0, 3.0 * (self.noise_multiplier or 0.0))
        alive = active & (counts >= floor)
        if not alive.any():  # everything drowned in noise: keep the previous parameters
            return alive
        w = np.where(alive, np.maximum(counts, 0.0), 0.0)
        w = np.where(alive, np.maximum(w / w.sum(), self.min_weight), 0.0)
        self.weights_ = w / w.sum()
        denom = np.maximum(counts, 1.0)[:, None]
        means = clip_rows(sums / denom, r)
        var_floor = np.maximum(self.min_variance, (self.noise_multiplier or 0.0) * r * r / denom)
        var = np.clip(sq / denom - means ** 2, np.minimum(var_floor, r * r), r * r)
        self.means_ = np.where(alive[:, None], means, self.means_)
        self.variances_ = np.where(alive[:, None], var, self.variances_)
        return alive

    def _duplicates(self, alive: np.ndarray) -> np.ndarray:
        """Alive components overlapping a heavier alive one almost completely (Bhattacharyya
        coefficient > 0.9): two components on one cluster is the usual EM local optimum."""
        dup = np.zeros_like(alive)
        idx = np.flatnonzero(alive)
        for a in idx:
            for b in idx:
                if a == b or dup[b] or (self.weights_[a], -a) > (self.weights_[b], -b):
                    continue
                va, vb = self.variances_[a], self.variances_[b]
                vm = 0.5 * (va + vb)
                dist = (0.125 * np.sum((self.means_[a] - self.means_[b]) ** 2 / vm)
                        + 0.5 * np.sum(np.log(vm) - 0.5 * np.log(va) - 0.5 * np.log(vb)))
                if dist < -np.log(0.9):
                    dup[a] = True
                    break
        return dup

    def _split(self, keep: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        """Re-seed each component in `seeds` by splitting the widest kept one along its
        largest-variance axis; returns the new active set (kept + seeded)."""
        keep = keep.copy()
        for dead in seeds:
            live = np.flatnonzero(keep)
            if live.size == 0:
                break
            j = live[np.argmax(self.weights_[live] * self.variances_[live].sum(1))]
            axis = int(np.argmax(self.variances_[j]))
            step = np.zeros(self.means_.shape[1])
            step[axis] = np.sqrt(self.variances_[j, axis])
            r = self.code_radius
            self.means_[dead] = clip_rows(self.means_[j] + step, r)
            self.means_[j] = clip_rows(self.means_[j] - step, r)
            self.variances_[dead] = self.variances_[j]
            self.weights_[dead] = self.weights_[j] = 0.5 * self.weights_[j]
            keep[dead] = True
        self.weights_ = np.where(keep, self.weights_, 0.0)
        self.weights_ = self.weights_ / self.weights_.sum()
        return keep

    # -- using the fitted mixture (post-processing) --------------------------------------------
    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise InvalidParameter("DPEM is not fitted yet: call fit first")

    def clip(self, Z) -> np.ndarray:
        """Clip codes exactly as fit did (use this in any encoder that feeds the MoG prior)."""
        return clip_rows(Z, self.code_radius)

    def log_prob(self, Z) -> np.ndarray:
        """(n,) log density of the fitted mixture at Z (no clipping)."""
        self._check_fitted()
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.n_features_in_:
            raise InvalidParameter(f"Z must have shape (n, {self.n_features_in_}), got {Z.shape}")
        return _logsumexp_rows(diag_gaussian_log_prob(Z, self.weights_, self.means_,
                                                      self.variances_))

    def sample(self, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
        """n draws z ~ MoG and the component index of each."""
        self._check_fitted()
        n = check_int("n", n, minimum=0)
        rng = as_rng(rng)
        idx = rng.choice(self.n_components, size=n, p=self.weights_)
        eps = rng.normal(size=(n, self.n_features_in_))
        return self.means_[idx] + np.sqrt(self.variances_[idx]) * eps, idx
