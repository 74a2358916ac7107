"""VAE (non-private, ε = ∞) and DP-VAE (DP-SGD on the whole VAE), the P3GM paper's baselines.

MLP 794 → h → (z mean, z log-variance) → h → 794 with a standard-normal prior (docs/references.md#dp-sgd):
ELBO = E_q[log p(x|z)] − KL(N(μ, σ²) ‖ N(0, I)), the KL in closed form. DP-VAE's noise multiplier
is calibrated from the requested ε (Poisson rate B/ñ, ⌈E·ñ/B⌉ steps, ñ the run's ledgered noisy row
count: dpcore.privacy.dataset_size) and the accountant's ε of the resulting ledger is what the run
reports.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dpcore.models import networks
from dpcore.models.neural import NUMERIC_ATOMS_HELP, NUMERIC_BINS_HELP, TABULAR_HEADS_HELP, NeuralSynthesizer
from dpcore.models.params import (
    EPSILON_BY_SIZE,
    REPRODUCIBLE_NOISE_HELP,
    ModelConfig,
    count,
    delta_field,
    device_field,
    epsilon_field,
    hparam,
    positive,
    seed_field,
)
from dpcore.models.synthesizer import FitRun
from dpcore.models.training import train_sgd


@dataclass(frozen=True)
class VAEConfig(ModelConfig):
    """Hyperparameters of the non-private VAE (ε = ∞)."""

    latent_dim: int = count(30, "latent dimension", group="main", typical=(1, 100))
    hidden: int = count(1000, "hidden units of the encoder and decoder MLPs")
    epochs: int | None = count(None, "passes over the training rows; None = 10 for images, and for tables as "
                                     "many as give about 1000 steps (at least 10)",
                               group="main", typical=(1, 50), auto=10)
    batch_size: int | None = count(None, "(expected) batch size; None = 300, or a quarter of the rows "
                                         "when 300 is not below them", auto=300)
    lr: float = positive(1e-3, "Adam learning rate")
    tabular_heads: str = hparam("per-column", TABULAR_HEADS_HELP, choices=("per-column", "flat"))
    numeric_bins: int = count(50, NUMERIC_BINS_HELP, low=0)
    numeric_atoms: bool = hparam(True, NUMERIC_ATOMS_HELP)
    likelihood: str = hparam("bernoulli", "decoder likelihood: 'bernoulli' (cross-entropy) or 'gaussian' "
                                          "(squared error)", choices=("bernoulli", "gaussian"))
    recon_scale: float = positive(0.7071, "standard deviation of the Gaussian likelihood (0.707: plain squared error)")
    label_weight: float = positive(1.0, "weight of the one-hot label block in the reconstruction loss")
    seed: int = seed_field()
    device: str = device_field()


# DP-VAE on a small public image set: at 10 epochs (~50 DP-SGD steps on digits' 1 438 rows) it
# generated the mean image for every label (accuracy 0.06–0.16 at ε = 1 or 10); at ε = 10 more steps
# under more noise learn the classes (100 epochs: 0.57–0.64 in three runs; 60: 0.36–0.50; at ε = 1
# or 3 it stays at chance whatever the epochs). A table's epochs stay auto (~1000 steps).
DP_VAE_EPOCHS_BY_SIZE = ((10_000, None), (0, 100))


@dataclass(frozen=True)
class DPVAEConfig(VAEConfig):
    """DP-VAE: the VAE trained with DP-SGD; σ is calibrated to the total ε, never typed in."""

    epochs: int | None = count(None, "passes over the training rows; None = 10 for images, and for tables as "
                                     "many as give about 1000 steps (at least 10); default 100 on a public "
                                     "dataset under 10 000 training rows", group="main", typical=(1, 50),
                               auto=10, by_size=DP_VAE_EPOCHS_BY_SIZE)
    epsilon: float = epsilon_field(1.0, "total privacy budget ε (DP-SGD, RDP accountant); finite "
                                        "(use vae for ε = ∞); default 1, and on a public dataset 3 under "
                                        "10 000 training rows, 10 under 3 000 (as P3GM's)",
                                   by_size=EPSILON_BY_SIZE)
    delta: float = delta_field()
    max_grad_norm: float = positive(1.0, "per-example gradient clipping norm C")
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)


class VAE(NeuralSynthesizer):
    """Non-private VAE with a standard-normal prior (ε = ∞)."""

    name = "vae"
    label = "VAE (ε = ∞)"
    description = "VAE: a plain variational autoencoder, no privacy (ε = ∞)."
    config_class = VAEConfig
    private = False
    role = "ceiling"
    ceiling_of = "dp-vae"
    legacy_defaults = {"tabular_heads": "flat", "numeric_atoms": False}

    def _fit(self, run: FitRun) -> None:
        cfg, train = self.config, run.train
        X = self._matrix(train)
        n, D = X.shape
        d = cfg.latent_dim
        self.mog = {"weights": np.ones(1, np.float32), "means": np.zeros((1, d), np.float32),
                    "variances": np.ones((1, d), np.float32)}
        gen = networks.torch_generator(cfg.seed)
        n_pub = run.released_n  # ñ (ledgered) for DP-VAE, n for the VAE
        from dpcore.privacy.accountant import sgd_schedule

        steps = sgd_schedule(n_pub, cfg.batch_size, cfg.epochs)[1]
        sigma = 0.0
        if self.private:
            from dpcore.privacy.accountant import calibrate_sgd
            from dpcore.privacy.dataset_size import sampling_rate

            sigma = float(calibrate_sgd(run.epsilon, run.delta, sampling_rate(cfg.batch_size, n_pub), steps,
                                        spent=self.ledger))  # the ledger holds the count already
        self.calibration = {"sgd_sigma": sigma, "sgd_steps": steps} if self.private else {"sgd_steps": steps}
        prog = run.start(steps)
        self._build_nets(D, gen)
        Xt = torch.as_tensor(X, device=self.device)
        noise_gen = gen if self.device.type == "cpu" else torch.Generator(self.device).manual_seed(cfg.seed)

        def loss_fn(idx: torch.Tensor) -> dict[str, torch.Tensor]:
            x = Xt[idx]
            mu, logvar = self.encoder(x)
            z = mu + torch.exp(0.5 * logvar) * torch.randn(mu.shape, generator=noise_gen, device=self.device)
            kl = 0.5 * (torch.exp(logvar) + mu ** 2 - 1.0 - logvar).sum(1)
            return {"recon": self._recon(self.decoder(z), x), "kl": kl}

        module = nn.ModuleDict({"encoder": self.encoder, "decoder": self.decoder})
        done = train_sgd(module, loss_fn, n=n, batch_size=cfg.batch_size, steps=steps, lr=cfg.lr,
                         private=self.private, ledger=self.ledger, noise_multiplier=sigma,
                         max_grad_norm=getattr(cfg, "max_grad_norm", 1.0), generator=noise_gen,
                         device=self.device, progress=prog, name="dp-sgd (vae)",
                         released_n=self.released_rows, noise=run.noise)
        self.calibration["sgd_steps_done"] = done

    def encode(self, x) -> np.ndarray:
        """Encoder means μ(x)."""
        self._check_fitted()
        with torch.no_grad():
            return self.encoder(torch.as_tensor(self._rows(x), device=self.device))[0].cpu().numpy()

    def encode_logvar(self, x) -> np.ndarray:
        self._check_fitted()
        with torch.no_grad():
            return self.encoder(torch.as_tensor(self._rows(x), device=self.device))[1].cpu().numpy()

    def latent_decoder(self) -> nn.Module:
        """z → decoder output (logits or means): what posterior re-sampling decodes through."""
        return self.decoder

    def _build_nets(self, width: int, gen: torch.Generator) -> None:
        cfg = self.config
        d = cfg.latent_dim
        self.encoder = networks.GaussianEncoder(networks.seeded_mlp([width, cfg.hidden, 2 * d], gen), d).to(self.device)
        self.decoder = networks.seeded_mlp([d, cfg.hidden, self.output_width()], gen).to(self.device)


class DPVAE(VAE):
    """DP-VAE: every weight of the VAE trained with DP-SGD (Poisson sampling, clip, Gaussian noise)."""

    name = "dp-vae"
    label = "DP-VAE"
    description = "DP-VAE: the whole VAE trained with DP-SGD — the usual baseline P3GM improves on."
    config_class = DPVAEConfig
    private = True
    role = "private"
    ceiling_of = None
