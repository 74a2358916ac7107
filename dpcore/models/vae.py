"""VAE (non-private, ε = ∞) and DP-VAE (DP-SGD on the whole VAE), the P3GM paper's baselines.

MLP 794 → h → (z mean, z log-variance) → h → 794 with a standard-normal prior (papers.md §2):
ELBO = E_q[log p(x|z)] − KL(N(μ, σ²) ‖ N(0, I)), the KL in closed form. DP-VAE's noise multiplier
is calibrated from the requested ε (Poisson rate B/ñ, ⌈E·ñ/B⌉ steps, ñ the run's ledgered noisy row
count: dpcore.privacy.dataset_size) and the accountant's ε of the resulting ledger is what the run
reports.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter, check_int, check_positive
from dpcore.models import _common as C
from dpcore.models._neural import NeuralSynthesizer
from dpcore.models._training import EpsilonMeter, Progress, sgd_steps, train_sgd
from dpcore.models.base import Callback, FitResult, PrivacyBudget
from dpcore.privacy.randomness import NoiseSource


_f = C.hparam


@dataclass(frozen=True)
class VAEConfig:
    """Hyperparameters of the non-private VAE (ε = ∞)."""

    latent_dim: int = _f(30, "latent dimension")
    hidden: int = _f(1000, "hidden units of the encoder and decoder MLPs")
    epochs: int = _f(10, "passes over the training rows")
    batch_size: int = _f(300, "(expected) batch size")
    lr: float = _f(1e-3, "Adam learning rate")
    likelihood: str = _f("bernoulli", "decoder likelihood: 'bernoulli' (cross-entropy) or 'gaussian' (squared error)")
    recon_scale: float = _f(0.7071, "standard deviation of the Gaussian likelihood (0.707: plain squared error)")
    label_weight: float = _f(1.0, "weight of the one-hot label block in the reconstruction loss")
    seed: int = _f(0, C.SEED_HELP)
    device: str = _f("cpu", "'cpu', 'cuda' or 'auto' (CUDA when available)")

    def __post_init__(self) -> None:
        C.check_common(self)
        check_int("latent_dim", self.latent_dim)
        check_positive("label_weight", self.label_weight)


@dataclass(frozen=True)
class DPVAEConfig(VAEConfig):
    """DP-VAE: the VAE trained with DP-SGD; σ is calibrated to the total ε, never typed in."""

    epsilon: float = _f(1.0, "total privacy budget ε (DP-SGD, RDP accountant)")
    delta: float = _f(1e-5, "δ of the (ε, δ) guarantee")
    max_grad_norm: float = _f(1.0, "per-example gradient clipping norm C")
    reproducible_noise: bool = _f(False, C.REPRODUCIBLE_NOISE_HELP)

    def __post_init__(self) -> None:
        super().__post_init__()
        PrivacyBudget(self.epsilon, self.delta)
        if not math.isfinite(self.epsilon):
            raise InvalidParameter("epsilon must be finite for dp-vae (use vae for ε = ∞)")
        check_positive("max_grad_norm", self.max_grad_norm)


class VAE(NeuralSynthesizer):
    """Non-private VAE with a standard-normal prior (ε = ∞)."""

    name = "vae"
    label = "VAE (ε = ∞)"
    config_class = VAEConfig
    private = False

    def fit(self, train: Dataset, budget: PrivacyBudget | None = None,
            callback: Callback | None = None) -> FitResult:
        t0 = time.perf_counter()
        cfg = self.config
        X, k = C.model_matrix(train)
        n, D = X.shape
        if cfg.batch_size >= n:
            raise InvalidParameter(f"batch_size ({cfg.batch_size}) must be smaller than the rows ({n})")
        eps, delta = self._budget(budget)
        self.template, self.n_features, self.n_classes, self.width = C.empty_template(train), train.n_features, k, D
        self.ledger = C.data_ledger(train)
        d = cfg.latent_dim
        self.mog = {"weights": np.ones(1, np.float32), "means": np.zeros((1, d), np.float32),
                    "variances": np.ones((1, d), np.float32)}
        gen = C.torch_generator(cfg.seed)
        noise = NoiseSource.for_config(cfg, self.private)  # count, coins and DP-SGD noise
        n_pub = self._release_count(n, noise.numpy("dataset-size"))  # ñ (ledgered) for DP-VAE, n for the VAE
        steps = sgd_steps(n_pub, cfg.batch_size, cfg.epochs)
        sigma = 0.0
        if self.private:
            from dpcore.privacy.accountant import calibrate_sgd
            from dpcore.privacy.dataset_size import sampling_rate

            sigma = float(calibrate_sgd(eps, delta, sampling_rate(cfg.batch_size, n_pub), steps,
                                        spent=self.ledger))  # the ledger holds the count already
        self.calibration = {"sgd_sigma": sigma, "sgd_steps": steps} if self.private else {"sgd_steps": steps}
        meter = EpsilonMeter(self.ledger, delta, self.private)
        prog = Progress(steps, callback, meter)
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
                         released_n=self.released_rows, noise=noise)
        self.calibration["sgd_steps_done"] = done
        self.fit_result = FitResult(epsilon=meter(), delta=delta, steps=prog.step,
                                    stopped=prog.stopped, seconds=time.perf_counter() - t0)
        return self.fit_result

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
        self.encoder = C.GaussianEncoder(C.seeded_mlp([width, cfg.hidden, 2 * d], gen), d).to(self.device)
        self.decoder = C.seeded_mlp([d, cfg.hidden, width], gen).to(self.device)


class DPVAE(VAE):
    """DP-VAE: every weight of the VAE trained with DP-SGD (Poisson sampling, clip, Gaussian noise)."""

    name = "dp-vae"
    label = "DP-VAE"
    config_class = DPVAEConfig
    private = True
