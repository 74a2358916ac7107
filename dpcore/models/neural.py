"""NeuralSynthesizer, the base of the models that draw z from a latent prior and decode it: P3GM, PGM,
P3GM-AE, VAE, DP-VAE, L-VAE.

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
from dpcore.models.heads import TabularHeads
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
            adapted["batch_size"] = f"{auto} → {batch}: a quarter of the {_rows(facts)}"
    elif batch >= n and not facts.released:  # a run's ñ may fall below it: q = min(1, B/ñ)
        raise InvalidParameter(f"batch_size ({batch}) must be smaller than the training rows ({n})")
    return batch


TABULAR_HEADS_HELP = ("tables: 'per-column' splits the decoder output by the encoder's blocks (a softmax per "
                      "categorical and the label, a sigmoid per boolean or missing flag, a Gaussian with a "
                      "learned σ per numeric) and samples each column from its own law; 'flat' = one "
                      "`likelihood` over all columns, decoded by argmax (runs saved before heads); images "
                      "always use `likelihood`")
NUMERIC_BINS_HELP = ("per-column heads: a numeric column is a softmax over this many equal-width bins of its "
                     "declared range (an integer column with at most this many values: one bin per value), "
                     "sampled as a bin and a point in it; 0 = a Gaussian with a learned σ")
NUMERIC_ATOMS_HELP = ("per-column heads with bins: each numeric column's bounds, and zero inside them, get a "
                      "level of their own, learned as a share and drawn as the exact value (an income of exactly "
                      "0, an amount at its cap); off = those values fall inside the first or last bin")
TABLE_STEPS = 1000  # DP-SGD steps a table's auto epochs aim for (4 epochs of 4 000 rows: 54)
MAX_AUTO_EPOCHS = 200


def auto_epochs(config, facts: DataFacts, batch: int, adapted: dict) -> int:
    """epochs, or (None) its declared default for images, and for tables as many passes as give
    about TABLE_STEPS steps at this batch (at least the default, at most MAX_AUTO_EPOCHS).

    Why: a fixed number of passes gives a 4 000-row table a few dozen DP-SGD steps, too few for
    the decoder to learn its columns; the accountant calibrates σ for the steps actually planned,
    so more steps cost no ε, only more noise per step.
    """
    from dpcore.models.params import config_fields

    if config.epochs is not None:
        return config.epochs
    auto = next(p.auto for p in config_fields(type(config)) if p.name == "epochs")
    if facts.image_shape is not None:
        return auto
    epochs = min(MAX_AUTO_EPOCHS, max(auto, -(-TABLE_STEPS * batch // facts.n)))
    if epochs != auto:
        adapted["epochs"] = (f"{auto} → {epochs}: about {TABLE_STEPS} (DP-)SGD steps on "
                             f"{_rows(facts)} at batch {batch}")
    return epochs


def _rows(facts: DataFacts) -> str:
    return f"ñ = {facts.n} released rows" if facts.released else f"{facts.n} training rows"


class NeuralSynthesizer(BaseSynthesizer):
    """Base: subclasses set name/label/config_class/private and implement `_fit` and `_build_nets`."""

    size_auto_fields = ("batch_size", "epochs")  # auto_batch and auto_epochs read the row count

    def __init__(self, config=None, **overrides):
        super().__init__(config, **overrides)
        self.width = 0
        self.encoder: nn.Module | None = None
        self.decoder: nn.Module | None = None
        self.mog: dict[str, np.ndarray] = {}
        self.heads: TabularHeads | None = None  # per-column output heads (tables), None = flat

    # ------------------------------------------------------------------ plan
    @classmethod
    def _resolve(cls, config, facts: DataFacts):
        from dpcore.limits import check_steps

        adapted: dict[str, str] = {}
        limits: dict[str, int] = {}
        batch = auto_batch(config, facts, adapted, limits)
        epochs = auto_epochs(config, facts, batch, adapted)
        check_steps(epochs, facts.n, batch)
        return _replace(config, batch_size=batch, epochs=epochs), adapted, limits

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
        """n draws z ~ the latent prior, decoded and split into (features, labels); with per-column
        heads each column is drawn from its own law (a category per softmax, not the argmax)."""
        z, _ = mog_sample(n, self.mog["weights"], self.mog["means"], self.mog["variances"], rng)
        if self.heads is None:
            return split_output(self.decode(z), self.n_features, self.n_classes)
        return split_output(self.heads.sample(self._outputs(z, raw=True), rng), self.n_features, self.n_classes)

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Decoder means for latent codes z (n, d): probabilities (Bernoulli) or values (Gaussian);
        with per-column heads, class and flag probabilities and numeric means."""
        self._check_fitted()
        return self._outputs(z, raw=False)

    def _outputs(self, z: np.ndarray, raw: bool) -> np.ndarray:
        """Decoder outputs for z in chunks: raw (what the heads sample from) or their means."""
        outs = []
        with torch.no_grad():
            for i in range(0, len(z), 4096):
                out = self.decoder(torch.as_tensor(np.asarray(z[i:i + 4096], np.float32), device=self.device))
                outs.append((out if raw else self.output_mean(out)).cpu().numpy())
        width = self.output_width() if raw else self.width
        return np.concatenate(outs) if outs else np.zeros((0, width), np.float32)

    def output_mean(self, out: torch.Tensor) -> torch.Tensor:
        """Decoder output → the expected model-matrix row (what `decode` returns)."""
        if self.heads is not None:
            return self.heads.mean(out)
        return networks.decode_mean(out, self.config.likelihood)

    def output_width(self) -> int:
        """Decoder outputs: the model width, or the heads' (a numeric column has mean and log σ)."""
        return self.width if self.heads is None else self.heads.out_width

    def latent_prior(self) -> dict[str, np.ndarray]:
        """{"weights" (K,), "means" (K, d), "variances" (K, d) diagonal} of the latent prior."""
        self._check_fitted()
        return {k: v.copy() for k, v in self.mog.items()}

    # ------------------------------------------------------------------ helpers
    def _matrix(self, train: Dataset) -> np.ndarray:
        """The model matrix of `train` (features + one-hot labels); sets the width."""
        X, _ = model_matrix(train)
        self.width = X.shape[1]
        self._set_heads(train)
        return X

    def _set_heads(self, data: Dataset) -> None:
        """Per-column heads for a table when the config asks for them (images: never)."""
        self.heads = None
        if getattr(self.config, "tabular_heads", "flat") == "per-column" and not data.is_image:
            self.heads = TabularHeads.for_data(data.encoder, self.n_features, self.n_classes,
                                               getattr(self.config, "label_weight", 1.0),
                                               getattr(self.config, "numeric_bins", 0),
                                               getattr(self.config, "numeric_atoms", False))

    def _rows(self, x) -> np.ndarray:
        X = model_matrix(x)[0] if isinstance(x, Dataset) else np.asarray(x, np.float32)
        if X.ndim != 2 or X.shape[1] != self.width:
            raise InvalidParameter(f"{self.name} needs rows of width {self.width} "
                                   "(features + one-hot label) or a Dataset")
        return X

    def _recon(self, out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        if self.heads is not None:
            return self.heads.nll(out, x)
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
        self._set_heads(self.template)
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
