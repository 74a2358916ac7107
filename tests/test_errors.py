import pytest

from dpcore.errors import DPCoreError, InvalidParameter, check_int, check_positive, check_probability


def test_messages_are_one_line():
    assert "\n" not in str(DPCoreError("a\nb   c"))


@pytest.mark.parametrize("value", [0, -1, float("nan"), "abc", float("inf")])
def test_check_positive_names_argument(value):
    with pytest.raises(InvalidParameter, match="epsilon"):
        check_positive("epsilon", value)


def test_check_positive_allows_inf_when_asked():
    assert check_positive("epsilon", float("inf"), allow_inf=True) == float("inf")


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1])
def test_check_probability(value):
    with pytest.raises(InvalidParameter, match="delta"):
        check_probability("delta", value)


def test_check_int():
    assert check_int("epochs", 3) == 3
    with pytest.raises(InvalidParameter, match="epochs"):
        check_int("epochs", 0)
    with pytest.raises(InvalidParameter, match="epochs"):
        check_int("epochs", 2.5)
