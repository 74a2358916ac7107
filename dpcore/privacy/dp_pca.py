"""Gaussian DP-PCA (P3GM step 1): the top principal subspace of clipped rows, privately.

Pipeline (docs/references.md#p3gm, with defects 1 and 2 of the official code fixed):
1. Centre. "noisy": rows are clipped to L2 norm R (`mean_clip_norm`, default c), their sum released
   with the Gaussian mechanism and divided by ñ → `mean_` (record "dp-pca-mean"); "public": a user-declared
   centre (e.g. 0.5 for pixels), no privacy cost; "none": no centring (uncentred second moment).
2. Rows u_i = clip(x_i − centre, c) ("noisy" centres the already clipped rows: clip(clip(x_i, R) −
   mean_, c)). The second clip keeps the sensitivity at c² whatever the centre is.
   Why R can exceed c: with R = c the rows are normalised BEFORE centring, and the centred unit
   rows of images keep only ‖u‖² ≈ 0.3–0.4 of the sensitivity-1 budget (their common direction is
   subtracted), so the covariance noise competes with a third of the signal. Centring the raw rows
   (R ≥ every row norm, e.g. √D for features in [0, 1]) and then clipping to c makes every u_i
   (nearly) unit-norm: about 3× the signal for the same σ_p. The mean pays for it with a
   sensitivity of R instead of c (per-coordinate noise σ_m·R/N: 0.01 for Fashion-MNIST at σ_m = 21).
3. Release S̃ = Σ_i u_i u_iᵀ + E, E symmetric with i.i.d. N(0, (σ_p·c²)²) on and above the diagonal
   (record "dp-pca"), then `np.linalg.eigh`, eigenvalues sorted descending, top `pca_dim`.

Sensitivity (add/remove-one adjacency, the one the whole accountant uses):
- Covariance: adding/removing row i changes S by u_i u_iᵀ. The release is the upper triangle
  (the lower one is a mirror, i.e. post-processing) and Σ_{j≤l} (u_j u_l)² ≤ ‖u_i u_iᵀ‖_F² = ‖u_i‖⁴,
  so Δ₂ ≤ c² (= 1 for unit-norm rows, the paper's "sensitivity 1"). Under replace-one adjacency
  it would be ‖uuᵀ − vvᵀ‖_F ≤ √2·c² instead.
- Mean: the sum of rows clipped to R has Δ₂ = R; released sum / ñ.
- The released S̃ is the unnormalised sum: eigenvectors do not depend on N. N itself is private
  under add/remove-one adjacency (a neighbour has N ± 1 rows), so the two statistics that need it,
  `mean_` = noisy sum / ñ and `explained_variance_` = eigenvalue / ñ, divide by the run's released
  noisy count ñ (`fit(..., count=ñ)`, dpcore.privacy.dataset_size; its own ledger record) and are
  post-processing of released values. count=None divides by the true N: only for a non-private fit
  or a caller that has decided N is public (docs/neighbouring-relation.md).
- Centring with the released `mean_` is adaptive composition: given the released mean, step 2 still
  has Δ₂ = c², so the two records simply add up in RDP.
Default split: mean_noise_multiplier = MEAN_NOISE_RATIO·σ_p (= 2σ_p), i.e. the mean costs 1/4 of the
covariance's RDP. The mean needs little budget: its per-coordinate noise is 2σ_p·c/N (MNIST,
σ_p = 5: 1.6e-4 against entries of ~1e-2), while the covariance noise competes with N·λ_k.

Consequence for encoders: `transform` applies the same clip → centre → clip, so every code has
norm ≤ c and DPEM(code_radius=c) fits the MoG on exactly the codes the encoder emits (defect 5).
"""
from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dsyrk

from dpcore.errors import DataError, InvalidParameter, check_int, check_positive
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger
from dpcore.privacy.mechanisms import as_rng, clip_rows, gaussian_mechanism, symmetric_gaussian_noise
from dpcore.privacy.randomness import noise_kind

MEAN_NOISE_RATIO = 2.0
PCA_RECORD = "dp-pca"
MEAN_RECORD = "dp-pca-mean"
CENTERS = ("noisy", "public", "none")
_CHUNK = 4096  # rows per block: bounds the float64 temporaries for MNIST-sized inputs


def _blocks(X: np.ndarray):
    for i in range(0, X.shape[0], _CHUNK):
        yield np.asarray(X[i:i + _CHUNK], dtype=np.float64)


def _check_matrix(X, name: str = "X") -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise DataError(f"{name} must be a non-empty 2-D array, got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or not np.isfinite(X).all():
        raise DataError(f"{name} must contain finite numbers only")
    return X


class DPPCA:
    """Differentially private PCA with Gaussian noise on the covariance (see module docstring).

    noise_multiplier: σ_p (noise std / Δ) of the covariance release; None = non-private (no noise,
        nothing recorded: the caller must label the model ε = ∞).
    center: "noisy" (private mean, its own ledger record), "public" (`public_center`, scalar or
        (D,)), or "none".
    mean_noise_multiplier: σ_m of the mean release; None → MEAN_NOISE_RATIO·noise_multiplier.
    clip_norm: c, the L2 bound of each centred row (covariance sensitivity c²).
    mean_clip_norm: R, the L2 bound of each row in the mean release (sensitivity R); None → c.
    """

    def __init__(self, pca_dim: int = 30, noise_multiplier: float | None = 5.0,
                 center: str = "noisy", public_center=None,
                 mean_noise_multiplier: float | None = None, clip_norm: float = 1.0,
                 mean_clip_norm: float | None = None):
        self.pca_dim = check_int("pca_dim", pca_dim)
        self.noise_multiplier = (None if noise_multiplier is None
                                 else check_positive("noise_multiplier", noise_multiplier))
        if center not in CENTERS:
            raise InvalidParameter(f"center must be one of {CENTERS}, got {center!r}")
        if center == "public" and public_center is None:
            raise InvalidParameter("public_center is required when center='public'")
        self.center = center
        self.public_center = public_center
        self.mean_noise_multiplier = mean_noise_multiplier
        if mean_noise_multiplier is not None:
            self.mean_noise_multiplier = check_positive("mean_noise_multiplier",
                                                        mean_noise_multiplier)
        self.clip_norm = check_positive("clip_norm", clip_norm)
        self.mean_clip_norm = (self.clip_norm if mean_clip_norm is None
                               else check_positive("mean_clip_norm", mean_clip_norm))

    @property
    def mean_sigma(self) -> float | None:
        """The noise multiplier the mean release uses (None when no mean is released)."""
        if self.center != "noisy" or self.noise_multiplier is None:
            return None
        if self.mean_noise_multiplier is not None:
            return self.mean_noise_multiplier
        return MEAN_NOISE_RATIO * self.noise_multiplier

    def fit(self, X, ledger: PrivacyLedger | None, rng, *, count: int | None = None,
            mean_rng=None) -> DPPCA:
        """Fit on the rows X. count: the released row count ñ that `mean_` and
        `explained_variance_` divide by (None: the true N, which is then treated as public).
        rng: the covariance noise's generator; mean_rng: the mean's (None: rng). Pass secret
        streams (dpcore.privacy.randomness); an int seed makes the records "seeded"."""
        X = _check_matrix(X)
        n, d = X.shape
        if self.pca_dim > d:
            raise InvalidParameter(f"pca_dim={self.pca_dim} exceeds the number of features ({d})")
        private = self.noise_multiplier is not None
        if private and ledger is None:
            raise InvalidParameter("ledger is required for a private fit")
        rng = as_rng(rng)
        mean_rng = rng if mean_rng is None else as_rng(mean_rng)
        c = self.clip_norm
        self.n_features_in_ = d
        denom = n if count is None else check_int("count", count)
        self.n_samples_ = denom  # the count the statistics were divided by (ñ in a private run)
        if self.center == "noisy":
            R = self.mean_clip_norm
            total = np.zeros(d)
            for B in _blocks(X):
                total += clip_rows(B, R).sum(axis=0)
            if private:
                assert self.mean_sigma is not None  # for the type checker: set when private
                total = gaussian_mechanism(total, R, self.mean_sigma, mean_rng, ledger=ledger,
                                           name=MEAN_RECORD)
            self.mean_ = total / denom
        elif self.center == "public":
            pc = np.asarray(self.public_center, dtype=np.float64)
            if pc.ndim > 1 or (pc.ndim == 1 and pc.shape[0] != d) or not np.isfinite(pc).all():
                raise InvalidParameter(f"public_center must be a finite scalar or have {d} entries")
            self.mean_ = np.broadcast_to(pc, (d,)).copy()
        else:
            self.mean_ = np.zeros(d)
        S = np.zeros((d, d), order="F")
        for B in _blocks(X):  # upper triangle of Σ u uᵀ by rank-k updates (half a GEMM's flops)
            S = dsyrk(1.0, self._rows(B), beta=1.0, c=S, trans=1, lower=0, overwrite_c=1)
        S = np.triu(S) + np.triu(S, 1).T
        if private:
            assert self.noise_multiplier is not None and ledger is not None  # checked above
            S += symmetric_gaussian_noise(d, self.noise_multiplier * c * c, rng)
            ledger.add(MechanismRecord(PCA_RECORD, "gaussian", self.noise_multiplier,
                                       sensitivity=c * c, noise=noise_kind(rng)))
        # the released covariance's diagonal (post-processing, free): each column's share of the
        # centred, normalised rows' variance, which the top components leave partly unexplained
        self.noisy_variance_ = np.diag(S).copy() / denom
        vals, vecs = np.linalg.eigh(S)
        order = np.argsort(vals)[::-1][: self.pca_dim]
        vecs = vecs[:, order]
        # Deterministic sign: the largest-magnitude entry of each component is positive.
        signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(vecs.shape[1])])
        self.components_ = vecs * np.where(signs == 0, 1.0, signs)
        self.noisy_eigenvalues_ = vals[order]
        self.explained_variance_ = np.maximum(vals[order], 0.0) / denom
        self.is_private_ = private
        return self

    def _rows(self, B: np.ndarray) -> np.ndarray:
        """clip(row − centre, c) (rows clipped first when the centre is the noisy mean)."""
        if self.center == "noisy":
            B = clip_rows(B, self.mean_clip_norm)
        return clip_rows(B - self.mean_, self.clip_norm)

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise InvalidParameter("DPPCA is not fitted yet: call fit first")

    def transform(self, X) -> np.ndarray:
        """PCA codes of X (norm ≤ clip_norm): clip → centre → clip → project."""
        self._check_fitted()
        X = _check_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise DataError(f"X has {X.shape[1]} features, DPPCA was fitted on "
                            f"{self.n_features_in_}")
        return np.concatenate([self._rows(B) @ self.components_ for B in _blocks(X)])

    def inverse_transform(self, Z) -> np.ndarray:
        """Back to feature space: Z·Vᵀ + mean_ (in the clipped row space; the per-row clip
        scale is not invertible, so this is exact only for rows that were not clipped)."""
        self._check_fitted()
        Z = np.asarray(Z, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != self.components_.shape[1]:
            raise DataError(f"Z must have shape (n, {self.components_.shape[1]}), got {Z.shape}")
        return Z @ self.components_.T + self.mean_
