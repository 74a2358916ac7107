"""The model registry and config dataclasses (the CLI's and pages' source of widgets)."""
import dataclasses

import pytest

from dpcore.errors import InvalidParameter
from dpcore.models import MODELS, config_class, get_model, make_model, register_model


def test_builtin_models_and_configs():
    assert {"p3gm", "pgm", "p3gm-ae", "vae", "dp-vae"} <= set(MODELS)
    for name in ("p3gm", "pgm", "p3gm-ae", "vae", "dp-vae"):
        cls = get_model(name)
        cfg = config_class(name)
        assert cls.name == name and cls.config_class is cfg
        assert dataclasses.is_dataclass(cfg) and cfg.__dataclass_params__.frozen
        for f in dataclasses.fields(cfg):
            assert f.metadata.get("help"), f"{name}.{f.name} has no help text"
            assert f.default is not dataclasses.MISSING
        assert ("epsilon" in {f.name for f in dataclasses.fields(cfg)}) == cls.private


def test_unknown_model_and_parameter():
    with pytest.raises(InvalidParameter, match="unknown model"):
        get_model("nope")
    with pytest.raises(InvalidParameter, match="epsilon"):
        make_model("vae", epsilon=1.0)


def test_register_a_new_model_lazily():
    register_model("test-alias", "dpcore.models.vae:VAE")
    try:
        assert get_model("test-alias").name == "vae"
    finally:
        MODELS._specs.pop("test-alias")
        MODELS._loaded.pop("test-alias", None)
