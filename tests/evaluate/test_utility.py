import math

import numpy as np
import pytest

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter
from dpcore.evaluate.utility import classification_scores, utility_scores
from dpcore.figures.utility import utility_table_figure

CHEAP = ["logistic_regression", "random_forest"]


def _shuffled(ds: Dataset, seed=0) -> Dataset:
    return Dataset(ds.name, ds.features, np.random.default_rng(seed).permutation(ds.labels),
                   label_names=ds.label_names, image_shape=ds.image_shape)


def test_reference_is_good_on_digits_with_all_four_classifiers(digits):
    res = utility_scores(digits["train"], digits["test"], real_train=digits["train"])
    assert list(res.rows) == ["logistic_regression", "gradient_boosting", "adaboost", "random_forest"]
    ref = res.reference["mean"]
    assert ref["auroc"] > 0.95 and ref["accuracy"] > 0.8
    assert res.reference["classifiers"]["logistic_regression"]["accuracy"] > 0.93
    d = res.to_dict()
    assert set(d["mean"]) == {"auroc", "auprc", "accuracy"}
    assert d["mean"]["accuracy"] == pytest.approx(np.mean([r["accuracy"] for r in d["classifiers"].values()]))
    assert len(utility_table_figure(res).data) == 1


def test_shuffled_labels_give_chance(digits):
    # Digits cluster by class, so one permutation of 1 200 labels leaves class-level imbalances of
    # a few percent that the classifiers do learn: macro AUROC varies by ±0.05 across permutations.
    res = utility_scores(_shuffled(digits["train"]), digits["test"], classifiers=CHEAP)
    # (A classifier fit to noise still points in *some* direction, and AUROC only ranks, so a
    # low-dimensional binary task can show 0.3–0.7 by chance; ten classes average that out.)
    assert abs(res.mean["auroc"] - 0.5) < 0.1
    assert res.mean["accuracy"] < 0.2 and res.mean["auprc"] < 0.2  # chance: 0.1 and ~0.1
    assert res.reference is None


def test_one_class_synthetic_is_nan_with_note(digits):
    tr = digits["train"]
    one = Dataset("one", tr.features, np.zeros(tr.n, dtype=np.int64), label_names=tr.label_names)
    res = utility_scores(one, digits["test"], classifiers=CHEAP)
    assert all(math.isnan(v) for r in res.rows.values() for v in r.values())
    assert "one class" in res.notes[0]
    assert len(utility_table_figure(res).data) == 1


def test_images_mlp_reference_and_chance(digits):
    res = utility_scores(digits["train_img"], digits["test_img"], real_train=digits["train_img"])
    assert res.kind == "image" and res.metrics == ("accuracy",)
    assert res.reference["mean"]["accuracy"] > 0.85
    bad = utility_scores(_shuffled(digits["train_img"]), digits["test_img"])
    assert bad.mean["accuracy"] < 0.25
    with pytest.raises(InvalidParameter):
        utility_scores(digits["train_img"], digits["test_img"], classifiers=["adaboost"])


def test_binary_scores_use_positive_class_and_missing_classes():
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p1 = np.clip(0.3 * y + rng.random(200) * 0.7, 0, 1)
    s = classification_scores(y, np.c_[1 - p1, p1])
    assert s["auroc"] == pytest.approx(roc_auc_score(y, p1))
    assert s["auprc"] == pytest.approx(average_precision_score(y, p1))
    # a synthetic set missing class 2 still yields scores over the test set's classes
    x = rng.random((300, 4)).astype(np.float32)
    yt = rng.integers(0, 3, 300)
    syn = Dataset("s", x, np.where(yt == 2, 0, yt), label_names=[0, 1, 2])
    res = utility_scores(syn, Dataset("t", x, yt, label_names=[0, 1, 2]), classifiers=["logistic_regression"])
    assert not math.isnan(res.mean["auroc"])
    with pytest.raises(DataError):
        utility_scores(Dataset("u", x), Dataset("t", x, yt))
