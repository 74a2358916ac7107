"""What P3GM, PGM, P3GM-AE, VAE and DP-VAE share as objects: config handling, sampling from a
latent prior through the decoder, and saving/loading (tensors in safetensors, the rest in JSON).

Why a base class: the five models differ in how they fit the prior and which networks DP-SGD
trains; the way a fitted model turns z into rows of the original schema, and how it goes to and
comes back from disk, must be identical so runs and pages treat them alike.
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, RunError, check_int
from dpcore.models import _common as C
from dpcore.models.base import FitResult, PrivacyBudget
from dpcore.privacy.ledger import PrivacyLedger


class NeuralSynthesizer:
    """Base: subclasses set name/label/config_class/private and implement `fit` and `_build_nets`."""

    name = "neural"
    label = "neural"
    config_class: type = object
    private = True

    def __init__(self, config=None, **overrides):
        cfg = config if config is not None else self.config_class()
        if not isinstance(cfg, self.config_class):
            raise InvalidParameter(f"{self.name} needs a {self.config_class.__name__}, "
                                   f"got {type(cfg).__name__}")
        self.config = dataclasses.replace(cfg, **overrides) if overrides else cfg
        self.device = C.resolve_device(self.config.device)
        self.ledger = PrivacyLedger()
        self.template: Dataset | None = None
        self.fit_result: FitResult | None = None
        self.calibration: dict = {}
        self.n_features = self.n_classes = 0
        self.width = 0
        self.encoder: nn.Module | None = None
        self.decoder: nn.Module | None = None
        self.mog: dict[str, np.ndarray] = {}
        self.released_rows: int | None = None  # ñ, the public noisy row count (private models)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    # ------------------------------------------------------------------ protocol
    def sample(self, n: int, seed: int | None = None) -> Dataset:
        """z ~ the latent prior (MoG), rows = decoder(z) in the original schema."""
        self._check_fitted()
        n = check_int("n", n, minimum=0)
        feats, labels = self._draw_rows(n, np.random.default_rng(seed))
        return self.template.with_features(feats, labels)

    def _draw_rows(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """n draws z ~ the latent prior, decoded and split into (features, labels)."""
        z, _ = C.mog_sample(n, self.mog["weights"], self.mog["means"], self.mog["variances"], rng)
        return C.split_output(self.decode(z), self.n_features, self.n_classes)

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Decoder means for latent codes z (n, d): probabilities (Bernoulli) or values (Gaussian)."""
        self._check_fitted()
        outs = []
        with torch.no_grad():
            for i in range(0, len(z), 4096):
                zt = torch.as_tensor(np.asarray(z[i:i + 4096], np.float32), device=self.device)
                outs.append(C.decode_mean(self.decoder(zt), self.config.likelihood).cpu().numpy())
        return np.concatenate(outs) if outs else np.zeros((0, self.width), np.float32)

    def privacy_ledger(self) -> PrivacyLedger:
        return self.ledger

    def latent_prior(self) -> dict[str, np.ndarray]:
        """{"weights" (K,), "means" (K, d), "variances" (K, d) diagonal} of the latent prior."""
        self._check_fitted()
        return {k: v.copy() for k, v in self.mog.items()}

    # ------------------------------------------------------------------ helpers
    def _budget(self, budget: PrivacyBudget | None) -> tuple[float, float]:
        if not self.private:
            return math.inf, 0.0
        b = budget or PrivacyBudget(self.config.epsilon, self.config.delta)
        if not b.is_private:
            raise InvalidParameter(f"{self.name} is private: epsilon must be finite "
                                   "(use its non-private twin for ε = ∞)")
        return b.epsilon, b.delta

    def _release_count(self, n: int, rng) -> int:
        """The row count the run may use in anything it publishes: for a private model the noisy
        count ñ (dataset_size.noisy_count, recorded in self.ledger, so call it before the
        calibration: the model's mechanisms get only the budget it leaves); n otherwise.

        rng: the count's own numpy stream (`NoiseSource.numpy("dataset-size")`: secret unless the
        run asked for reproducible noise).
        """
        if not self.private:
            self.released_rows = None
            return n
        from dpcore.privacy.dataset_size import noisy_count

        self.released_rows = noisy_count(n, rng, ledger=self.ledger)
        return self.released_rows

    def _rows(self, x) -> np.ndarray:
        X = C.model_matrix(x)[0] if isinstance(x, Dataset) else np.asarray(x, np.float32)
        if X.ndim != 2 or X.shape[1] != self.width:
            raise InvalidParameter(f"{self.name} needs rows of width {self.width} "
                                   "(features + one-hot label) or a Dataset")
        return X

    def _recon(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        return C.recon_per_example(out, x, cfg.likelihood, cfg.recon_scale,
                                   n_features=self.n_features, label_weight=cfg.label_weight)

    def _check_fitted(self) -> None:
        if self.decoder is None:
            raise RunError(f"{self.name} is not fitted yet: call fit() first")

    def _build_nets(self, width: int, gen: torch.Generator) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ persistence
    def _extra_tensors(self) -> dict[str, np.ndarray]:
        return {}

    def _extra_json(self) -> dict:
        return {}

    def _restore(self, tensors: dict[str, torch.Tensor], meta: dict) -> None:
        pass

    @staticmethod
    def _saved_config(values: dict) -> dict:
        """A saved config as this version reads it: fields added later get the value that
        reproduces the saved model (not the new default), so old runs load and sample as before."""
        return values

    def save(self, directory) -> None:
        """weights.safetensors (networks, prior, projections) + model.json (config, schema, ledger,
        and `released_rows` = ñ: the only row count a private model publishes, never the true n)."""
        self._check_fitted()
        d = Path(directory)
        tensors: dict[str, torch.Tensor] = {}
        for part in ("encoder", "decoder"):
            net = getattr(self, part)
            if net is not None:
                tensors.update({f"{part}.{k}": v for k, v in net.state_dict().items()})
        tensors.update({f"mog.{k}": torch.as_tensor(v) for k, v in self.mog.items()})
        tensors.update({k: torch.as_tensor(v) for k, v in self._extra_tensors().items()})
        C.save_tensors(d / "weights.safetensors", tensors)
        C.atomic_write_json(d / "model.json", {
            "model": self.name, "config": C.config_to_dict(self.config),
            "n_features": self.n_features, "n_classes": self.n_classes, "width": self.width,
            "template": C.template_to_json(self.template), "ledger": self.ledger.to_list(),
            "calibration": self.calibration, "released_rows": self.released_rows,
            "fit_result": None if self.fit_result is None else dataclasses.asdict(self.fit_result),
            **self._extra_json(),
        })

    @classmethod
    def load(cls, directory, template: Dataset | None = None):
        """A fitted model back from `save` (weights loaded as plain tensors, no pickle)."""
        d = Path(directory)
        meta = C.read_model_meta(d, cls.name)
        self = cls(C.config_from_dict(cls.config_class, cls._saved_config(meta["config"])))
        t = C.load_tensors(d / "weights.safetensors")
        self.n_features, self.n_classes, self.width = meta["n_features"], meta["n_classes"], meta["width"]
        self.mog = {k: t[f"mog.{k}"].numpy() for k in ("weights", "means", "variances")}
        self._restore(t, meta)
        self._build_nets(self.width, C.torch_generator(0))
        for part in ("encoder", "decoder"):
            net = getattr(self, part)
            if net is not None:
                pre = f"{part}."
                net.load_state_dict({k[len(pre):]: v for k, v in t.items() if k.startswith(pre)})
        self.ledger = PrivacyLedger.from_list(meta["ledger"])
        self.calibration = meta.get("calibration", {})
        self.released_rows = meta.get("released_rows")  # absent in models saved before ñ
        if meta.get("fit_result"):
            self.fit_result = FitResult(**{k: C.as_float(v) if k in ("epsilon", "delta") else v
                                           for k, v in meta["fit_result"].items()})
        self.template = template if template is not None else C.template_from_json(meta["template"])
        return self
