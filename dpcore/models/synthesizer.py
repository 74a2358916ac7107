"""The base class every model derives from: what a model declares, `plan`, and the `fit`,
`save` and `load` templates.

Why a template: every model must start its ledger with the dataset's own DP preprocessing, draw
its noise from secret streams, release the noisy row count ñ before it calibrates, stream one event
per step and report the accountant's ε. Written once here, a model cannot forget one of them; it
implements only `_fit` (its training), and optionally `_resolve` (rules its config has against the
data), `_preview` (the noise a run will use) and the hooks of save/load.

A model class declares: `name`, `label`, `description` (the Train page's blurb), `private`,
`config_class` (a frozen `ModelConfig` dataclass whose fields carry their constraints and group),
`counts_rows` (whether its releases need the noisy row count ñ), `takes_images` (False for
models of tables only: their `plan` refuses images) and `sweep_axes` (what a sweep varies).

What is particular to a model is declared here too, so the CLI, the pages and the reports read it
without asking for a model by name: `role` (ROLES: "private", the "ceiling" a private model of the
same family is compared with, or a non-private "baseline"), `notes` (sentences said wherever the
model is offered) and `privacy_claim()` (a guarantee stated beside the accountant's ε, L-VAE's
certificate; None for the others), with `saved_claim` reading the same from a saved model.json.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, RunError
from dpcore.io import as_float, atomic_write_json
from dpcore.models.params import ModelConfig, config_fields, config_from_dict, config_to_dict
from dpcore.models.protocol import Callback, FitResult, PrivacyBudget
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


@dataclass(frozen=True)
class DataFacts:
    """What `plan` needs to know about the training rows (no rows): their count and shape and the
    ledger records of their DP preprocessing."""

    n: int
    n_features: int
    n_classes: int = 0
    image_shape: tuple | None = None
    spent: tuple = ()  # MechanismRecord dicts of the dataset's own DP preprocessing
    # True inside a private run: `n` is then the released noisy count ñ, and a rule that checks an
    # explicit setting against the rows (batch < n) was already checked by `plan` on the exact n
    released: bool = False
    # A table's discrete attributes (one per encoder block, plus the label): what the marginal
    # models' step count depends on, a function of the public schema; None for images or unknown
    attributes: int | None = None

    @classmethod
    def of(cls, data: Dataset | DataFacts) -> DataFacts:
        if isinstance(data, DataFacts):
            return data
        blocks = getattr(data.encoder, "blocks", None) if data.image_shape is None else None
        return cls(n=data.n, n_features=data.n_features,
                   n_classes=0 if data.labels is None else data.n_classes,
                   image_shape=None if data.image_shape is None else tuple(data.image_shape),
                   spent=tuple(data.meta.get("privacy_records") or ()),
                   attributes=None if blocks is None else len(blocks) + (data.labels is not None))

    @property
    def width(self) -> int:
        """Model columns: features + the one-hot label block."""
        return self.n_features + self.n_classes

    def spent_ledger(self) -> PrivacyLedger:
        return PrivacyLedger.from_list(list(self.spent))


@dataclass
class Plan:
    """What a run with this config on this data will do, known before any work starts.

    config: the config with every `auto` field resolved; adapted: field → why it was adapted;
    steps: training events; noise: label → noise multiplier; epsilon: the accountant's ε of the
    planned ledger (inf for non-private models); limits: the largest value a field may take here.
    The preview uses the exact row count; a run uses the noisy count ñ, so its σ's differ by a few
    per cent while its ε is the same.
    """

    model: str
    config: Any
    steps: int
    adapted: dict[str, str] = field(default_factory=dict)
    noise: dict[str, float | None] = field(default_factory=dict)
    epsilon: float = math.inf
    delta: float = 0.0
    ledger: list = field(default_factory=list)
    limits: dict[str, int] = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the preview means, in words (the Train page)

    @property
    def params(self) -> dict:
        return config_to_dict(self.config)


class FitRun:
    """What `fit`'s prologue hands to a model's `_fit`: the data, the budget, the secret noise
    streams, the row count to publish (ñ), and `start(total_steps)` for the progress stream."""

    def __init__(self, train: Dataset, epsilon: float, delta: float, private: bool, noise,
                 released_n: int, meter, callback: Callback | None):
        self.train, self.epsilon, self.delta, self.private = train, epsilon, delta, private
        self.noise, self.released_n, self.meter, self.callback = noise, released_n, meter, callback
        self.progress = None

    def start(self, total_steps: int):
        from dpcore.models.training import FitProgress

        self.progress = FitProgress(total_steps, self.callback, self.meter)
        return self.progress


def data_ledger(train: Dataset) -> PrivacyLedger:
    """A fresh ledger that starts with the dataset's own preprocessing mechanisms.

    Why: bounds estimated with DP (`read_csv(..., undeclared="dp")`) spend budget on the same rows
    before the model sees them; the data layer cannot import dpcore.privacy, so it leaves those
    records in `meta["privacy_records"]` and every model's ledger must start with them.
    """
    ledger = PrivacyLedger()
    ledger.extend(MechanismRecord.from_dict(d) for d in train.meta.get("privacy_records") or [])
    return ledger


# A model's role: "private" (ε from its ledger); "ceiling": trained without DP, the noise-free twin
# a private model of its family is compared with (PGM for P3GM, VAE for DP-VAE); "baseline":
# trained without DP and the ceiling of no private model here (L-VAE).
ROLES = ("private", "ceiling", "baseline")


class BaseSynthesizer:
    """Base of every model (see the module docstring)."""

    name = "base"
    label = "base"
    description = ""
    private = True
    role = "private"  # one of ROLES; "private" exactly when `private`
    ceiling_of: str | None = None  # role "ceiling": the registered private model it is the twin of
    notes: tuple[str, ...] = ()  # sentences said wherever the model is offered (the Train page)
    counts_rows = True
    takes_images = True  # False: tables only (AIM, MST)
    # `auto` fields (None) whose value depends on the row count: a run resolves them from the
    # released noisy count ñ after ñ is released; config.json keeps them None ("auto"), model.json
    # the value the run resolved from ñ. `plan` resolves them from the exact n for the preview.
    size_auto_fields: tuple[str, ...] = ()
    config_class: type = ModelConfig
    legacy_defaults: dict = {}  # fields added later → the value models saved before them used
    # what a sweep varies by default (field → values, in order); the Runs page's ε sweep and grid
    # sweep offer a model whose config has these fields, and never an ε = ∞ one (dpcore.jobs.sweep)
    sweep_axes: dict = {"epsilon": (0.5, 1.0, 2.0, 4.0)}

    def __init__(self, config=None, **overrides):
        cfg = config if config is not None else self.config_class()
        if not isinstance(cfg, self.config_class):
            raise InvalidParameter(f"{self.name} needs a {self.config_class.__name__}, "
                                   f"got {type(cfg).__name__}")
        self.config = dataclasses.replace(cfg, **overrides) if overrides else cfg
        from dpcore.models.networks import resolve_device

        self.device = resolve_device(getattr(self.config, "device", "cpu"))  # none: a CPU model
        self.ledger = PrivacyLedger()
        self.template: Dataset | None = None
        self.fit_result: FitResult | None = None
        self.calibration: dict = {}
        self.n_features = self.n_classes = 0
        self.released_rows: int | None = None  # ñ, the public noisy row count (private models)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    @classmethod
    def parameters(cls):
        """The config's fields with their constraints and groups (params.Param)."""
        return config_fields(cls.config_class)

    # ------------------------------------------------------------------ plan
    @classmethod
    def plan(cls, config, data: Dataset | DataFacts) -> Plan:
        """Check `config` against the data (every rule, before any work), resolve its `auto`
        fields and preview the run: steps, calibrated noise and the accountant's planned ε."""
        facts = DataFacts.of(data)
        cfg = config if config is not None else cls.config_class()
        if facts.n < 2:
            raise InvalidParameter(f"{cls.name} needs at least 2 training rows, got {facts.n}")
        resolved, adapted, limits = cls._resolve(cfg, facts)
        plan = cls._preview(resolved, facts)
        plan.adapted, plan.limits = adapted, limits
        return plan

    @classmethod
    def _resolve(cls, config, facts: DataFacts) -> tuple[Any, dict[str, str], dict[str, int]]:
        """(config with `auto` fields filled in, field → why adapted, field → largest allowed);
        raise InvalidParameter for a value the data cannot take (step caps included: `_preview`
        may calibrate, which must not start on a schedule over DPCORE_MAX_STEPS)."""
        return config, {}, {}

    @classmethod
    def _preview(cls, config, facts: DataFacts) -> Plan:
        raise NotImplementedError

    # ------------------------------------------------------------------ fit
    def _budget(self, budget: PrivacyBudget | None) -> tuple[float, float]:
        """(ε, δ) of this fit: the budget's, else the config's; ε = ∞ for non-private models."""
        if not self.private:
            return math.inf, 0.0
        b = budget or PrivacyBudget(self.config.epsilon, self.config.delta)
        if not b.is_private:
            raise InvalidParameter(f"{self.name} is private: epsilon must be finite "
                                   "(use its non-private twin for ε = ∞)")
        return b.epsilon, b.delta

    def fit(self, train: Dataset, budget: PrivacyBudget | None = None,
            callback: Callback | None = None) -> FitResult:
        """Train on `train`; `callback(event)` returning False stops cleanly (model usable)."""
        from dpcore.models.saved import empty_template
        from dpcore.models.training import EpsilonMeter
        from dpcore.privacy.randomness import NoiseSource

        t0 = time.perf_counter()
        eps, delta = self._budget(budget)
        private = self.private and math.isfinite(eps)
        self.template = empty_template(train)
        self.n_features = train.n_features
        self.n_classes = 0 if train.labels is None else train.n_classes
        self.ledger = data_ledger(train)
        noise = NoiseSource.for_config(self.config, private)  # secret unless reproducible_noise
        n_pub = (self._release_count(train.n, noise.numpy("dataset-size"), private)
                 if self.counts_rows else train.n)
        # every `auto` setting is resolved only now, from what the run may publish: ñ, not n
        facts = DataFacts.of(train)
        if self.released_rows is not None:
            facts = dataclasses.replace(facts, n=n_pub, released=True)
        self.config, _, _ = type(self)._resolve(self.config, facts)
        meter = EpsilonMeter(self.ledger, delta, private)
        run = FitRun(train, eps, delta, private, noise, n_pub, meter, callback)
        self._fit(run)
        prog = run.progress
        self.fit_result = FitResult(epsilon=meter(), delta=delta, steps=prog.step,
                                    stopped=prog.stopped, seconds=time.perf_counter() - t0)
        return self.fit_result

    def _fit(self, run: FitRun) -> None:
        """The model's own training; must call `run.start(total_steps)` first."""
        raise NotImplementedError

    def _release_count(self, n: int, rng, private: bool = True) -> int:
        """The row count the run may use in anything it publishes: for a private model the noisy
        count ñ (dataset_size.noisy_count, recorded in self.ledger, so it comes before the
        calibration: the model's mechanisms get only the budget it leaves); n otherwise.

        rng: the count's own numpy stream (`NoiseSource.numpy("dataset-size")`: secret unless the
        run asked for reproducible noise).
        """
        if not (self.private and private):
            self.released_rows = None
            return n
        from dpcore.privacy.dataset_size import noisy_count

        self.released_rows = noisy_count(n, rng, ledger=self.ledger)
        return self.released_rows

    # ------------------------------------------------------------------ protocol
    def privacy_ledger(self) -> PrivacyLedger:
        return self.ledger

    @property
    def epsilon(self) -> float:
        """The accountant's ε of this model's ledger at the δ it was fitted for (∞ for a
        non-private model), computed from the ledger each time, never stored."""
        self._check_fitted()
        if not self.private:
            return math.inf
        from dpcore.privacy.accountant import epsilon

        return float(epsilon(self.ledger, self.delta))

    @property
    def delta(self) -> float:
        """The δ of the fit's budget (0 for a non-private model)."""
        self._check_fitted()
        if not self.private or self.fit_result is None:
            return 0.0
        return float(self.fit_result.delta)

    def privacy_claim(self) -> dict | None:
        """A guarantee the model states beside the accountant's ε, or None (the accountant's ε of
        the ledger is all there is). A claim is a dict with at least "summary" (what it covers and
        what it does not, in words) and "label" (a short title); the Privacy page shows it, the CLI
        and the reports print it."""
        return None

    @classmethod
    def saved_claim(cls, meta: dict) -> dict | None:
        """The claim a saved model.json holds, as the CLI's report gives it (no weights loaded)."""
        return None

    def _check_fitted(self) -> None:
        if not self._is_fitted():
            raise RunError(f"{self.name} is not fitted yet: call fit() first")

    def _is_fitted(self) -> bool:
        raise NotImplementedError

    # ------------------------------------------------------------------ persistence
    def _state_tensors(self) -> dict[str, np.ndarray]:
        """Every tensor `load` needs (weights, prior, projections), by name."""
        return {}

    def _state_json(self) -> dict:
        """model.json entries beyond the common ones."""
        return {}

    def _restore(self, tensors: dict, meta: dict) -> None:
        """Rebuild the fitted state from `_state_tensors` and `_state_json` (template is set)."""

    @classmethod
    def _saved_config(cls, values: dict) -> dict:
        """A saved config as this version reads it: fields added later get the value that
        reproduces the saved model (not the new default), so old runs load and sample as before."""
        fields = {f.name for f in dataclasses.fields(cls.config_class)}
        return {**{k: v for k, v in cls.legacy_defaults.items() if k in fields}, **values}

    def save(self, directory) -> None:
        """weights.safetensors (tensors only, no pickle) + model.json (config, schema, ledger,
        calibration and `released_rows` = ñ: the only row count a private model publishes)."""
        import torch

        from dpcore.models.saved import save_tensors, template_to_json

        self._check_fitted()
        d = Path(directory)
        save_tensors(d / "weights.safetensors",
                     {k: torch.as_tensor(v) for k, v in self._state_tensors().items()})
        atomic_write_json(d / "model.json", {
            "model": self.name, "config": config_to_dict(self.config),
            "n_features": self.n_features, "n_classes": self.n_classes,
            "template": template_to_json(self.template), "ledger": self.ledger.to_list(),
            "calibration": self.calibration, "released_rows": self.released_rows,
            "fit_result": None if self.fit_result is None else dataclasses.asdict(self.fit_result),
            **self._state_json(),
        })

    @classmethod
    def load(cls, directory, template: Dataset | None = None):
        """A fitted model back from `save` (weights read as plain tensors, no pickle)."""
        from dpcore.models.saved import check_tensor_set, load_tensors, read_model_meta, template_from_json

        d = Path(directory)
        meta = read_model_meta(d, cls.name)
        self = cls(config_from_dict(cls.config_class, cls._saved_config(meta["config"])))
        tensors = load_tensors(d / "weights.safetensors")
        self.n_features, self.n_classes = meta["n_features"], meta["n_classes"]
        self.ledger = PrivacyLedger.from_list(meta["ledger"])
        self.calibration = meta.get("calibration", {})
        self.released_rows = meta.get("released_rows")  # absent in models saved before ñ
        if meta.get("fit_result"):
            self.fit_result = FitResult(**{k: as_float(v) if k in ("epsilon", "delta") else v
                                           for k, v in meta["fit_result"].items()})
        self.template = template if template is not None else template_from_json(meta["template"])
        self._restore(tensors, meta)
        check_tensor_set(tensors, self._state_tensors(), d / "weights.safetensors")
        return self
