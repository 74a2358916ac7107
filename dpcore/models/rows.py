"""Rows in and out of a network: features + the one-hot label block (as in the P3GM paper:
D = 784 + 10 for images), decoded rows back to features in [0, 1] and labels, and image pooling.
"""
from __future__ import annotations

import math

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError


def model_matrix(data: Dataset) -> tuple[np.ndarray, int]:
    """Features plus the one-hot label block (paper: D = 784 + 10); returns (X, n_classes)."""
    X = np.asarray(data.features, dtype=np.float32)
    if X.size and (not np.isfinite(X).all()):
        raise DataError(f"dataset {data.name!r} has non-finite feature values")
    if data.labels is None:
        return X, 0
    k = data.n_classes
    onehot = np.zeros((data.n, k), dtype=np.float32)
    onehot[np.arange(data.n), data.labels] = 1.0
    return np.concatenate([X, onehot], axis=1), k


def split_output(out: np.ndarray, n_features: int, n_classes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Decoded rows → (features clipped to [0, 1], labels = argmax of the label block)."""
    feats = np.clip(out[:, :n_features], 0.0, 1.0).astype(np.float32, copy=False)  # one array, not two
    if n_classes == 0:
        return feats, None
    return feats, np.argmax(out[:, n_features:n_features + n_classes], axis=1).astype(np.int64)

def image_pool_matrix(data: Dataset, pool: int | None, label_columns: int = 0) -> np.ndarray | None:
    """(D, D') matrix averaging k×k pixel blocks of an image set (label columns kept), or None.

    `pool` None = 2 for images of side ≥ 16, else 1 (→ None). Data-independent: no privacy cost.
    Why: Gaussian noise on a D-dimensional release (DP-PCA's covariance, GS-WGAN's per-row
    gradient) has a norm growing with √D while the signal does not; images are smooth, so their
    main structure survives k×k averaging. Edge blocks of sides not divisible by k average the
    pixels they have. `(P > 0).T` copies a pooled pixel back to its block (the upsampling).
    """
    if not data.is_image:
        return None
    shape = tuple(data.image_shape)
    H, W = shape[-2:]
    k = pool_factor(shape, pool)
    if k <= 1:
        return None
    C_ = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    h, w = -(-H // k), -(-W // k)
    c, i, j = np.meshgrid(np.arange(C_), np.arange(H), np.arange(W), indexing="ij")
    src = (c * H * W + i * W + j).ravel()
    dst = (c * h * w + (i // k) * w + (j // k)).ravel()
    P = np.zeros((C_ * H * W + label_columns, C_ * h * w + label_columns), np.float32)
    P[src, dst] = 1.0
    P /= np.maximum(P.sum(0, keepdims=True), 1.0)  # average (edge blocks: fewer pixels)
    lab = np.arange(label_columns)
    P[C_ * H * W + lab, C_ * h * w + lab] = 1.0
    return P


def pool_factor(image_shape, pool: int | None) -> int:
    """k of k×k pooling: `pool`, or (None) 2 for images of side ≥ 16 and 1 otherwise."""
    if image_shape is None:
        return 1
    H, W = tuple(image_shape)[-2:]
    return (2 if min(H, W) >= 16 else 1) if pool is None else int(pool)


def pooled_width(n_features: int, image_shape, pool: int | None, label_columns: int = 0) -> int:
    """Columns left after `image_pool_matrix` (features + label block), without building it."""
    k = pool_factor(image_shape, pool)
    if image_shape is None or k <= 1:
        return n_features + label_columns
    shape = tuple(image_shape)
    H, W = shape[-2:]
    C_ = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return C_ * (-(-H // k)) * (-(-W // k)) + label_columns
