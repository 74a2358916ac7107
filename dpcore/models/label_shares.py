"""Sampling with label quotas: generated rows kept so the label shares match a released estimate;
and the same estimate for every categorical column (`level_shares`).

Why: a model that generates the label with the row (P3GM's one-hot block) can over- or
under-produce a class (before pooled DP-PCA, Fashion-MNIST shirts were 3.7 % of P3GM's samples
against 10 % of the data), and a classifier trained on the samples inherits the skew. When the
label shares are already known privately — P3GM's noisy DP-PCA mean holds the mean of the one-hot
block, i.e. the class frequencies plus noise — keeping generated rows per class up to those
shares is post-processing of DP outputs: it costs no privacy.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpcore.data.decode_shares import quota_counts

CALIBRATION_DRAWS = 4096  # z draws a decoder's marginals are estimated on (level_shares' offsets)
Draw = Callable[[int], tuple[np.ndarray, np.ndarray]]  # m → (features (m, d), labels (m,))


def shares_from_mean(mean_block: np.ndarray) -> np.ndarray | None:
    """Class shares from a (noisy) mean of one-hot labels: negatives cut to 0, renormalised;
    None when nothing positive is left (no usable estimate)."""
    s = np.clip(np.asarray(mean_block, np.float64), 0.0, None)
    return None if not np.isfinite(s).all() or s.sum() <= 0 else s / s.sum()


def most_confident(out: np.ndarray, n_features: int, n: int) -> np.ndarray:
    """Indices of the n decoded rows whose label block (the columns after `n_features`) has the
    largest margin between its top two classes, the most confident first (a class drawn more
    often than its quota keeps its surest rows). Why: a decoded image whose
    label block hesitates between two classes is the row most likely labelled against its look."""
    block = np.sort(np.asarray(out)[:, n_features:], axis=1)
    margin = block[:, -1] - block[:, -2]
    return np.argsort(-margin, kind="stable")[:n]


def sample_with_quotas(draw: Draw, n: int, shares: np.ndarray, *, max_factor: int = 20,
                       chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """n rows whose label counts follow `shares`, drawn in chunks from `draw`.

    Rows are kept in the order drawn until each class has its quota. After the first chunk, each
    chunk is sized to what the classes still short need at the rates the model produced them so far
    (with a margin), not a whole `chunk` again: P3GM on Fashion-MNIST drew a second 60 000-row
    chunk (120 000 decodes at `label_margin_keep` 0.5) to fill the last few hundred places of its
    rarest class; now it asks for ~25 000. Should the model hardly ever produce a class, drawing
    stops after `max_factor`·n rows and the missing places are filled with the earliest surplus rows
    of other classes, so exactly n rows come back.
    """
    want = quota_counts(shares, n)
    k = len(want)
    chunk = chunk or max(n, 1024)
    kept: list[np.ndarray] = [[] for _ in range(k)]  # per class, its rows in the order drawn
    have = np.zeros(k, np.int64)
    seen = np.zeros(k, np.int64)  # rows of each class drawn so far, kept or not
    spare_x, spare_y, n_spare = [], [], 0  # the earliest surplus rows, at most n of them
    drawn = 0
    while np.any(have < want) and drawn < max_factor * max(n, 1):
        x, y = draw(_next_chunk(chunk, want - have, seen, drawn))
        drawn += len(y)
        for c in range(k):
            idx = np.flatnonzero(y == c)
            seen[c] += len(idx)
            take = idx[: max(0, want[c] - have[c])]
            kept[c].append(x[take])
            have[c] += len(take)
            extra = idx[len(take):][: n - n_spare]
            if len(extra):
                spare_x.append(x[extra])
                spare_y.append(y[extra])
                n_spare += len(extra)
    rows = [part for parts in kept for part in parts]
    X = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
    Y = np.repeat(np.arange(k, dtype=np.int64), have)
    short = n - len(Y)
    if short > 0:  # a class the model (almost) never produces: fill with other classes' rows
        X = np.concatenate([X, np.concatenate(spare_x)[:short]])
        Y = np.concatenate([Y, np.concatenate(spare_y)[:short]])
    return X, Y


MIN_CHUNK = 1024  # the smallest follow-up draw (a decoder call on fewer rows costs about the same)


def _next_chunk(chunk: int, missing: np.ndarray, seen: np.ndarray, drawn: int) -> int:
    """The first draw is `chunk`; then the rows the short classes need at their rates so far, ×1.25."""
    short = missing > 0
    if drawn == 0 or np.any(seen[short] == 0):
        return chunk
    need = float(np.max(missing[short] / (seen[short] / drawn)))
    return int(min(chunk, max(MIN_CHUNK, np.ceil(1.25 * need))))


LEVEL_FLOOR = 0.01  # the least share a declared level is generated at (at most 1/(2k))
SHARE_SIGMAS = 2.0  # a level's (a flag's) generated share is kept within this many noise stds of its noisy share
MISSING_SIGMAS = 3.0  # a missing-value flag whose noisy share is under this many noise stds: column complete


def level_shares(heads, mean: np.ndarray, noise: float, skip_label: bool = True) -> dict[int, np.ndarray]:
    """{head index: (lower, upper) share bounds} of each categorical (softmax) head and each
    missing-value flag, from a released mean of the model matrix (P3GM's DP-PCA noisy mean holds
    each one-hot block's level frequencies and each flag's missing share, plus noise of std
    `noise`): noisy share ± 2·noise, a level's lower bound at least min(LEVEL_FLOOR, 1/(2k)) so
    every declared level is generated; a flag whose noisy share is at most MISSING_SIGMAS·noise
    gets (0, 0): its column is generated complete.

    Why bounds and not the shares: on ~1 000 rows the shares' noise is ~0.1 (ε = 1), so moving
    every level onto its noisy share would add that noise; the decoder's own share is kept unless
    the release says it is off by more than the noise. Why a threshold for the flags: a declared
    schema makes every column nullable, and the decoder learns each flag's share from the noisy
    mean it warms up on, so a complete column came back with 1–19 % blanks; a share the noise
    cannot tell from zero is not known to be there (3 stds: about one complete column in 700
    passes). The label head (the last, when `skip_label`) is left to the label quotas.
    Post-processing of a released value."""
    from dpcore.models.heads import BINARY, SOFTMAX

    mean = np.asarray(mean, np.float64)
    last = len(heads.heads) - 1 if skip_label else None
    out = {}
    for i, h in enumerate(heads.heads):
        if i == last or not (h.kind == SOFTMAX or (h.kind == BINARY and h.flag)):
            continue
        y = mean[h.start:h.stop]
        if not np.isfinite(y).all():
            continue
        if h.kind == BINARY:
            seen = float(y[0]) > MISSING_SIGMAS * noise
            out[i] = ((np.maximum(y - SHARE_SIGMAS * noise, 0.0), np.minimum(y + SHARE_SIGMAS * noise, 1.0)) if seen
                      else (np.zeros(1), np.zeros(1)))
            continue
        k = h.stop - h.start
        lo = np.maximum(y - SHARE_SIGMAS * noise, min(LEVEL_FLOOR, 0.5 / k))
        out[i] = (lo, np.maximum(y + SHARE_SIGMAS * noise, lo))
    return out
