"""Utility: train on synthetic, test on real (the P3GM paper's protocol), with "train on real" as the
reference row.

Why this protocol: a synthetic set is useful when models fitted to it work on real data. Tabular
data: logistic regression, gradient boosting (HistGradientBoosting for speed), AdaBoost and a random
forest; AUROC, AUPRC and accuracy per classifier and their mean (multi-class: macro one-vs-rest).
Images: a small torch MLP (or CNN) early-stopped on a held-out part of the *synthetic* set (the
official P3GM code early-stopped on the test set, docs/references.md#p3gm-code-defects, 6), scored by accuracy.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter

TABULAR_CLASSIFIERS = ("logistic_regression", "gradient_boosting", "adaboost", "random_forest")
IMAGE_CLASSIFIERS = ("mlp", "cnn")
# Tabular training sets larger than this are subsampled (seeded): keeps a Credit-sized synthetic
# set (~250k rows) to seconds per classifier without changing the scores much.
MAX_TABULAR_TRAIN = 50_000


@dataclass
class UtilityResult:
    """Per-classifier scores of models trained on synthetic data and tested on real test data.

    rows: {classifier: {metric: value}}; mean: the mean over classifiers (NaNs ignored);
    reference: the same for models trained on the real training split ({"classifiers", "mean"}),
    or None. Scores are NaN, with a note, when a training set has a single class.
    """

    kind: str
    metrics: tuple[str, ...]
    rows: dict[str, dict[str, float]]
    mean: dict[str, float]
    reference: dict | None = None
    notes: list[str] = field(default_factory=list)
    n_train: int = 0
    n_test: int = 0
    seconds: float = 0.0
    usefulness: dict | None = None  # the one usefulness measure (dpcore.evaluate.usefulness)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "metrics": list(self.metrics), "classifiers": self.rows,
                "mean": self.mean, "reference": self.reference, "notes": list(self.notes),
                "n_train": self.n_train, "n_test": self.n_test, "seconds": self.seconds,
                "usefulness": self.usefulness}


def _n_classes(*sets: Dataset) -> int:
    n = 0
    for s in sets:
        if s is not None and s.labels is not None:
            n = max(n, s.n_classes, int(s.labels.max()) + 1 if s.n else 0)
    return n


def classification_scores(y_true: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """AUROC, AUPRC (average precision) and accuracy from class probabilities (n, C).

    Binary: class 1 is the positive class. Multi-class: macro average of one-vs-rest scores over
    the classes present in y_true (a class absent from the test set has no defined AUROC).
    """
    from sklearn.metrics import average_precision_score, roc_auc_score

    acc = float(np.mean(proba.argmax(1) == y_true))
    classes = [1] if proba.shape[1] == 2 else list(range(proba.shape[1]))
    aurocs, auprcs = [], []
    for c in classes:
        pos = y_true == c
        if pos.all() or not pos.any():
            continue
        aurocs.append(roc_auc_score(pos, proba[:, c]))
        auprcs.append(average_precision_score(pos, proba[:, c]))
    nan = float("nan")
    return {"auroc": float(np.mean(aurocs)) if aurocs else nan,
            "auprc": float(np.mean(auprcs)) if auprcs else nan, "accuracy": acc}


def make_classifier(name: str, seed: int = 0):
    """A fresh scikit-learn classifier by name (defaults sized for seconds on two cores)."""
    from sklearn.ensemble import AdaBoostClassifier, HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    if name == "logistic_regression":
        return LogisticRegression(max_iter=1000)
    if name == "gradient_boosting":
        # early stopping on a held-out 10% of the (synthetic) training set, never the test set
        return HistGradientBoostingClassifier(early_stopping=True, random_state=seed)
    if name == "adaboost":
        return AdaBoostClassifier(n_estimators=50, random_state=seed)
    if name == "random_forest":
        # bootstrap halves and leaves of ≥ 5 rows: 2× cheaper than the default at 50k rows (measured)
        return RandomForestClassifier(n_estimators=100, min_samples_leaf=5, max_samples=0.5, n_jobs=2,
                                      random_state=seed)
    raise InvalidParameter(f"unknown classifier {name!r}; choose from {TABULAR_CLASSIFIERS + IMAGE_CLASSIFIERS}")


def _single_openmp_thread():
    """One OpenMP/BLAS thread for the scikit-learn fits. HistGradientBoosting's OpenMP threads
    spin-wait at ~1000 barriers per fit and BLAS threads do the same on small matrices; when the
    cores are shared (a training run in the background, busy CI neighbours) that turned a 2 s fit
    into minutes (measured). One thread is at most 2× slower on an idle 2-core machine (logistic
    regression on digits got 8× faster) and never stalls. The random forest still uses 2 joblib
    threads."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _full_proba(clf, x: np.ndarray, n_classes: int) -> np.ndarray:
    p = clf.predict_proba(x)
    out = np.zeros((x.shape[0], n_classes))
    out[:, np.asarray(clf.classes_, dtype=np.int64)] = p
    return out


# ---------------------------------------------------------------------------------------------
# images: a small torch classifier, early-stopped on a synthetic validation split
# ---------------------------------------------------------------------------------------------

def _image_net(kind: str, d: int, shape: tuple[int, ...], n_classes: int) -> torch.nn.Module:
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, n_classes))
    chw = shape if len(shape) == 3 else (1, *shape)
    h, w = -(-chw[1] // 4), -(-chw[2] // 4)
    return nn.Sequential(nn.Unflatten(1, chw), nn.Conv2d(chw[0], 16, 3, 2, 1), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(), nn.Flatten(), nn.Linear(32 * h * w, n_classes))


MIN_ROUND_STEPS = 100  # Adam steps between two checks of the validation accuracy (at least)


def train_image_classifier(x: np.ndarray, y: np.ndarray, n_classes: int, *, kind: str = "mlp",
                           image_shape: tuple[int, ...] | None = None, seed: int = 0, max_epochs: int = 10,
                           patience: int = 2, batch_size: int = 256, lr: float = 1e-3,
                           val_fraction: float = 0.1, device: str = "auto") -> torch.nn.Module:
    """Adam on cross-entropy; keeps the weights with the best accuracy on a held-out part of the
    *training* (synthetic) data and stops after `patience` rounds without improvement.

    A round is one pass, or as many passes as make `MIN_ROUND_STEPS` steps: on a small set (digits:
    6 batches a pass) one-pass rounds stopped after ~20 Adam steps, before the net left chance on
    noisier synthetic rows (accuracy 0.10 where a logistic regression got 0.54). Sets of 25 600 rows
    or more keep one pass a round."""
    dev = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                       ("cpu" if device == "auto" else device))
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    n = x.shape[0]
    perm = torch.randperm(n, generator=g)
    n_val = max(1, int(round(val_fraction * n))) if n >= 10 else 0
    X = torch.as_tensor(x, dtype=torch.float32).to(dev)
    Y = torch.as_tensor(y, dtype=torch.int64).to(dev)
    val, tr = perm[:n_val].to(dev), perm[n_val:].to(dev)
    net = _image_net(kind, x.shape[1], image_shape or (), n_classes).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    best, best_state, bad = -1.0, None, 0
    passes = max(1, -(-MIN_ROUND_STEPS // max(1, -(-len(tr) // batch_size))))
    for _ in range(max_epochs):
        net.train()
        for _ in range(passes):
            order = tr[torch.randperm(len(tr), generator=g).to(dev)]
            for i in range(0, len(order), batch_size):
                idx = order[i:i + batch_size]
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.cross_entropy(net(X[idx]), Y[idx]).backward()
                opt.step()
        if n_val == 0:
            continue
        acc = float((_predict(net, X[val]).argmax(1) == Y[val].cpu().numpy()).mean())
        if acc > best:
            best, best_state, bad = acc, {k: v.clone() for k, v in net.state_dict().items()}, 0
        else:
            bad += 1
            if bad >= patience:
                break
    if best_state is not None:
        net.load_state_dict(best_state)
    return net.eval()


@torch.no_grad()
def _predict(net: torch.nn.Module, X: torch.Tensor, batch: int = 8192) -> np.ndarray:
    net.eval()
    dev = next(net.parameters()).device
    out = [torch.softmax(net(X[i:i + batch].to(dev)), 1).cpu() for i in range(0, X.shape[0], batch)]
    return torch.cat(out).numpy().astype(np.float64)


def _image_x(ds: Dataset, shape: tuple[int, ...]) -> np.ndarray:
    # Pixels only: extra columns (e.g. a one-hot label appended for P3GM) would leak the label.
    return ds.features[:, : math.prod(shape)]


# ---------------------------------------------------------------------------------------------

def _fit_score(train: Dataset, test: Dataset, names, n_classes: int, seed: int, image_shape, balanced=None):
    """(rows, notes); `balanced` (a dict) receives each image classifier's balanced accuracy."""
    rows: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    metrics = ("accuracy",) if image_shape else ("auroc", "auprc", "accuracy")
    present = np.unique(train.labels)
    if present.size < 2:
        notes.append(f"training set has one class only (class {int(present[0]) if present.size else '-'}); "
                     "classifiers cannot be trained, scores are NaN")
        for name in names:
            rows[str(name) if isinstance(name, str) else type(name).__name__] = {m: float("nan") for m in metrics}
        return rows, notes
    x, y = train.features, train.labels
    if image_shape:
        x_test = torch.as_tensor(_image_x(test, image_shape))
        for name in names:
            net = train_image_classifier(_image_x(train, image_shape), y, n_classes, kind=name,
                                         image_shape=image_shape, seed=seed)
            pred = _predict(net, x_test).argmax(1)
            rows[name] = {"accuracy": float(np.mean(pred == test.labels))}
            if balanced is not None:
                from dpcore.evaluate.usefulness import from_predictions

                balanced[name] = from_predictions(test.labels, pred, n_classes)
        return rows, notes
    if train.n > MAX_TABULAR_TRAIN:
        keep = np.random.default_rng(seed).choice(train.n, MAX_TABULAR_TRAIN, replace=False)
        x, y = x[keep], y[keep]
        notes.append(f"trained on a random {MAX_TABULAR_TRAIN} of {train.n} rows")
    from sklearn.base import clone

    for name in names:
        clf = make_classifier(name, seed) if isinstance(name, str) else clone(name)
        key = name if isinstance(name, str) else type(name).__name__
        with _single_openmp_thread():
            clf.fit(x, y)
            rows[key] = classification_scores(test.labels, _full_proba(clf, test.features, n_classes))
    return rows, notes


def _mean(rows: dict[str, dict[str, float]], metrics) -> dict[str, float]:
    out = {}
    for m in metrics:
        vals = [r[m] for r in rows.values() if not math.isnan(r[m])]
        out[m] = float(np.mean(vals)) if vals else float("nan")
    return out


def utility_scores(synthetic: Dataset, test: Dataset, real_train: Dataset | None = None,
                   classifiers=None, seed: int = 0) -> UtilityResult:
    """Train each classifier on `synthetic` (and on `real_train` for the reference row), test on `test`.

    classifiers: None (tabular: the four of the paper's protocol; images: ("mlp",)), or a list of
    names from TABULAR_CLASSIFIERS / IMAGE_CLASSIFIERS, or unfitted scikit-learn estimators.
    Images are detected from `test.image_shape`.
    """
    t0 = time.perf_counter()
    for nm, ds in (("synthetic", synthetic), ("test", test), ("real_train", real_train)):
        if ds is not None and ds.labels is None:
            raise DataError(f"{nm} has no labels; utility needs a target column")
        if ds is not None and ds.n_features != test.n_features:
            raise DataError(f"{nm} has {ds.n_features} features, the test set {test.n_features}")
    if synthetic.n == 0:
        raise DataError("the synthetic set is empty")
    image_shape = tuple(test.image_shape) if test.image_shape else None
    names = list(classifiers) if classifiers is not None else (["mlp"] if image_shape else list(TABULAR_CLASSIFIERS))
    for nm in names:
        if isinstance(nm, str) and nm not in (IMAGE_CLASSIFIERS if image_shape else TABULAR_CLASSIFIERS):
            raise InvalidParameter(f"classifier {nm!r} does not apply to "
                                   f"{'images' if image_shape else 'tabular data'}")
    n_classes = _n_classes(synthetic, test, real_train)
    metrics = ("accuracy",) if image_shape else ("auroc", "auprc", "accuracy")
    syn_ba: dict = {}
    ref_ba: dict = {}
    rows, notes = _fit_score(synthetic, test, names, n_classes, seed, image_shape, syn_ba)
    reference = None
    if real_train is not None:
        ref_rows, ref_notes = _fit_score(real_train, test, names, n_classes, seed, image_shape, ref_ba)
        reference = {"classifiers": ref_rows, "mean": _mean(ref_rows, metrics)}
        notes += [f"reference: {n}" for n in ref_notes]
    measured = None
    if image_shape:  # tables: scoring.score_utility, from the released score's counts
        from dpcore.evaluate.usefulness import of_values

        image = str(names[0])  # the first (default: the only) image classifier
        measured = of_values(syn_ba.get(image), ref_ba.get(image), int(test.n_classes), image).to_dict()
    return UtilityResult(kind="image" if image_shape else "tabular", metrics=metrics, rows=rows,
                         mean=_mean(rows, metrics), reference=reference, notes=notes,
                         n_train=synthetic.n, n_test=test.n, seconds=time.perf_counter() - t0,
                         usefulness=measured)


