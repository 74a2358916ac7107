"""Fixtures shared by the model tests."""
import pytest

from dpcore.data import load_split


@pytest.fixture(scope="module")
def digits():
    """(train, test) of the built-in 8×8 digits, the fixed seed-0 split."""
    return load_split("digits", seed=0)
