"""The model registry: name → Synthesizer class (a `BaseSynthesizer` subclass).

Models are imported lazily, so `import dpcore.models` stays cheap (no torch) for the CLI and the
pages. One way in, for the built-ins below and for a model of your own alike:
`register_model("lvae", "dpcore.models.lvae:LVAE")` (or the class itself). The class derives from
`dpcore.models.synthesizer.BaseSynthesizer` and declares `name`, `label`, `description`, `private`,
`role` and `config_class` (a frozen `params.ModelConfig` dataclass whose fields declare help,
constraints and group); docs/CONTRIBUTING.md walks through one.
"""
from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from dpcore.errors import InvalidParameter, RunError

if TYPE_CHECKING:  # for the annotations only: importing it here would load the models' code
    from dpcore.models.synthesizer import BaseSynthesizer


class _Registry(Mapping):
    """A read-only mapping name → class that imports each model's module on first use."""

    def __init__(self) -> None:
        self._specs: dict[str, str] = {}
        self._loaded: dict[str, type[BaseSynthesizer]] = {}

    def register(self, name: str, target: str | type[BaseSynthesizer]) -> None:
        if isinstance(target, str):
            self._specs[name] = target
            self._loaded.pop(name, None)
        else:
            self._specs[name] = f"{target.__module__}:{target.__qualname__}"
            self._loaded[name] = target

    def __getitem__(self, name: str) -> type[BaseSynthesizer]:
        if name not in self._specs:
            raise KeyError(name)
        if name not in self._loaded:
            mod, _, qual = self._specs[name].partition(":")
            self._loaded[name] = getattr(importlib.import_module(mod), qual)
        return self._loaded[name]

    def __iter__(self):
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


MODELS = _Registry()


def register_model(name: str, target: str | type[BaseSynthesizer]) -> None:
    """Add a model: `target` is a class or "module:Class" (imported on first use)."""
    MODELS.register(name, target)


def model_names() -> list[str]:
    return list(MODELS)


def get_model(name: str) -> type[BaseSynthesizer]:
    """The Synthesizer class registered as `name` (InvalidParameter if unknown)."""
    if name not in MODELS:
        raise InvalidParameter(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    return MODELS[name]


def family(name: str) -> str:
    """The privacy–utility curve a model's runs belong to: the private model a "ceiling" model is
    the noise-free twin of (its declared `ceiling_of`: PGM → P3GM), else the model itself (also for
    a name no longer registered or whose module cannot be imported here)."""
    try:
        cls = MODELS[name]
    except (KeyError, ImportError):
        return name
    return getattr(cls, "ceiling_of", None) or name


def config_class(name: str) -> type:
    """The frozen config dataclass of model `name` (its fields are the model's hyperparameters)."""
    return get_model(name).config_class


def make_model(name: str, config=None, **params):
    """An unfitted model: `make_model("p3gm", epsilon=1.0, pca_dim=30)`."""
    cls = get_model(name)
    if config is None:
        from dpcore.models.params import config_from_dict

        config = config_from_dict(cls.config_class, params)
        params = {}
    return cls(config, **params)


def load_model(directory, template=None):
    """A fitted model saved with `model.save(directory)`; the class is read from model.json."""
    path = Path(directory) / "model.json"
    try:
        name = json.loads(path.read_text())["model"]
    except (OSError, ValueError, KeyError) as exc:
        raise RunError(f"no saved model in {directory}: {exc}") from None
    return get_model(name).load(directory, template=template)


# The built-in models, in the order the pages list them. P3GM and its noise-free twin PGM, P3GM-AE.
register_model("p3gm", "dpcore.models.p3gm:P3GM")
register_model("pgm", "dpcore.models.p3gm_variants:PGM")
register_model("p3gm-ae", "dpcore.models.p3gm_variants:P3GMAE")
# The VAE and its DP-SGD version.
register_model("vae", "dpcore.models.vae:VAE")
register_model("dp-vae", "dpcore.models.vae:DPVAE")
# Baselines without DP-SGD on the whole model (L-VAE: certificate via privacy_claim(); GS-WGAN:
# sanitised generator gradients, ledger record "gs-wgan-generator-grad").
register_model("lvae", "dpcore.models.lvae:LVAE")
register_model("gs-wgan", "dpcore.models.gswgan:GSWGAN")
# Marginal-based models on mbi (tables only; zCDP calibrated to the run's (ε, δ)).
register_model("aim", "dpcore.models.aim:AIM")
register_model("mst", "dpcore.models.mst:MST")
