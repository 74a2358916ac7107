"""Small real data for the evaluation tests: scikit-learn's digits (8×8, pixels /16 into [0, 1])."""
import numpy as np
import pytest

from dpcore.data.dataset import Dataset


@pytest.fixture(scope="session")
def digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x / 16).astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(x))
    tr, te = perm[:1200], perm[1200:]

    def make(idx, image=False):
        return Dataset("digits", x[idx], y[idx], label_names=list(range(10)),
                       image_shape=(8, 8) if image else None)

    return {"train": make(tr), "test": make(te), "train_img": make(tr, True), "test_img": make(te, True)}
