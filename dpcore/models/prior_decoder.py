"""Models that draw z from a latent prior and decode it: P3GM, PGM, P3GM-AE, VAE, DP-VAE, L-VAE.

Why one base: they differ in how they fit the prior and which networks (DP-)SGD trains; how a
fitted model turns z into rows of the original schema, which (DP-)SGD schedule it plans, the batch
that fits the data and how it goes to and comes back from disk must be identical, so runs and pages
treat them alike.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int
from dpcore.models import networks
from dpcore.models.mixture import mog_sample
from dpcore.models.rows import model_matrix, split_output
from dpcore.models.synthesizer import BaseSynthesizer, DataFacts, Plan


def auto_batch(config, facts: DataFacts, adapted: dict, limits: dict) -> int:
    """batch_size, or (None) its declared default when that is below the rows, else a quarter of
    them; an explicit batch must be below the rows (Poisson sampling at rate B/n < 1)."""
    from dpcore.models.params import config_fields

    batch, n = config.batch_size, facts.n
    limits["batch_size"] = n - 1
    if batch is None:
        auto = next(p.auto for p in config_fields(type(config)) if p.name == "batch_size")
        batch = auto if auto < n else max(1, n // 4)
        if batch != auto:
            adapted["batch_size"] = f"{auto} → {batch}: a quarter of the {n} training rows"
    elif batch >= n:
        raise InvalidParameter(f"batch_size ({batch}) must be smaller than the training rows ({n})")
    return batch


class NeuralSynthesizer(BaseSynthesizer):
    """Base: subclasses set name/label/config_class/private and implement `_fit` and `_build_nets`."""

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.width = 0
        self.encoder: nn.Module | None = None
        self.decoder: nn.Module | None = None
        self.mog: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ plan
    @classmethod
    def _resolve(cls, config, facts: DataFacts):
        from dpcore.limits import check_steps

        adapted: dict[str, str] = {}
        limits: dict[str, int] = {}
        batch = auto_batch(config, facts, adapted, limits)
        check_steps(config.epochs, facts.n, batch)
        return _replace(config, batch_size=batch), adapted, limits

    @classmethod
    def _sgd_plan(cls, config, facts: DataFacts) -> tuple[int, dict]:
        """(DP-)SGD steps ⌈E·N/B⌉ and, for a private model, DP-SGD's calibrated σ (the run calibrates
        the same way with its noisy count ñ, after the count's own ledger record)."""
        from dpcore.privacy.accountant import calibrate_dp_vae, sgd_schedule

        steps = sgd_schedule(facts.n, config.batch_size, config.epochs)[1]
        if not cls.private:
            return steps, {}
        from dpcore.privacy.dataset_size import with_count

        cal = calibrate_dp_vae(config.epsilon, config.delta, facts.n, config.batch_size, config.epochs,
                               spent=with_count(facts.spent_ledger()))
        return steps, cal.to_dict()

    @classmethod
    def _preview(cls, config, facts: DataFacts) -> Plan:
        steps, cal = cls._sgd_plan(config, facts)
        if not cal:
            return Plan(cls.name, config, steps)
        return Plan(cls.name, config, steps, noise={"σ_s  (DP-SGD)": cal["sgd_sigma"]},
                    epsilon=cal["epsilon"], delta=cal["delta"], ledger=cal["ledger"], details=cal)

    # ------------------------------------------------------------------ protocol
    def sample(self, n: int, seed: int | None = None) -> Dataset:
        """z ~ the latent prior (MoG), rows = decoder(z) in the original schema."""
        self._check_fitted()
        n = check_int("n", n, minimum=0)
        feats, labels = self._draw_rows(n, np.random.default_rng(seed))
        return self.template.with_features(feats, labels)

    def _draw_rows(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """n draws z ~ the latent prior, decoded and split into (features, labels)."""
        z, _ = mog_sample(n, self.mog["weights"], self.mog["means"], self.mog["variances"], rng)
        return split_output(self.decode(z), self.n_features, self.n_classes)

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Decoder means for latent codes z (n, d): probabilities (Bernoulli) or values (Gaussian)."""
        self._check_fitted()
        outs = []
        with torch.no_grad():
            for i in range(0, len(z), 4096):
                zt = torch.as_tensor(np.asarray(z[i:i + 4096], np.float32), device=self.device)
                outs.append(networks.decode_mean(self.decoder(zt), self.config.likelihood).cpu().numpy())
        return np.concatenate(outs) if outs else np.zeros((0, self.width), np.float32)

    def latent_prior(self) -> dict[str, np.ndarray]:
        """{"weights" (K,), "means" (K, d), "variances" (K, d) diagonal} of the latent prior."""
        self._check_fitted()
        return {k: v.copy() for k, v in self.mog.items()}

    # ------------------------------------------------------------------ helpers
    def _matrix(self, train: Dataset) -> np.ndarray:
        """The model matrix of `train` (features + one-hot labels); sets the width."""
        X, _ = model_matrix(train)
        self.width = X.shape[1]
        return X

    def _rows(self, x) -> np.ndarray:
        X = model_matrix(x)[0] if isinstance(x, Dataset) else np.asarray(x, np.float32)
        if X.ndim != 2 or X.shape[1] != self.width:
            raise InvalidParameter(f"{self.name} needs rows of width {self.width} "
                                   "(features + one-hot label) or a Dataset")
        return X

    def _recon(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        return networks.recon_per_example(out, x, cfg.likelihood, cfg.recon_scale,
                                          n_features=self.n_features, label_weight=cfg.label_weight)

    def _is_fitted(self) -> bool:
        return self.decoder is not None

    def _build_nets(self, width: int, gen: torch.Generator) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ persistence
    def _extra_tensors(self) -> dict[str, np.ndarray]:
        return {}

    def _extra_json(self) -> dict:
        return {}

    def _restore_extra(self, tensors: dict[str, torch.Tensor], meta: dict) -> None:
        pass

    def _state_tensors(self) -> dict:
        tensors: dict = {}
        for part in ("encoder", "decoder"):
            net = getattr(self, part)
            if net is not None:
                tensors.update({f"{part}.{k}": v for k, v in net.state_dict().items()})
        tensors.update({f"mog.{k}": v for k, v in self.mog.items()})
        tensors.update(self._extra_tensors())
        return tensors

    def _state_json(self) -> dict:
        return {"width": self.width, **self._extra_json()}

    def _restore(self, tensors, meta) -> None:
        self.width = meta["width"]
        self.mog = {k: tensors[f"mog.{k}"].numpy() for k in ("weights", "means", "variances")}
        self._restore_extra(tensors, meta)
        self._build_nets(self.width, networks.torch_generator(0))
        for part in ("encoder", "decoder"):
            net = getattr(self, part)
            if net is not None:
                pre = f"{part}."
                net.load_state_dict({k[len(pre):]: v for k, v in tensors.items() if k.startswith(pre)})


def _replace(config, **changes):
    """`config` with `changes` (unchanged object when nothing differs)."""
    import dataclasses

    if all(getattr(config, k) == v for k, v in changes.items()):
        return config
    return dataclasses.replace(config, **changes)
