"""The networks every neural synthesizer builds: seeded MLPs, the Gaussian encoder, the device,
and the reconstruction likelihoods.

Why seeded by hand: the user's `seed` must fix the initialisation without touching torch's global
RNG, and DP-SGD's per-example book-keeping needs each nn.Linear to run once per forward.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from dpcore.errors import InvalidParameter


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidParameter("device 'cuda' requested but CUDA is not available")
    return torch.device(name)

def seeded_mlp(sizes: list[int], generator: torch.Generator) -> nn.Sequential:
    """Linear → ReLU → … → Linear, initialised from `generator` (PyTorch's default uniform law).

    Only nn.Linear holds parameters and each Linear runs once per forward, which is what the
    DP-SGD engine's per-example book-keeping needs.
    """
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b)
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            lin.weight.copy_(torch.rand(b, a, generator=generator) * 2 * bound - bound)
            lin.bias.copy_(torch.rand(b, generator=generator) * 2 * bound - bound)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GaussianEncoder(nn.Module):
    """x → (mean, log-variance) of q(z|x) from one MLP whose last Linear emits both halves (one call
    per forward, as DP-SGD's book-keeping needs); the log-variance is clamped to [−12, 6]."""

    def __init__(self, mlp: nn.Sequential, latent_dim: int):
        super().__init__()
        self.mlp, self.latent_dim = mlp, latent_dim

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.mlp(x)
        return h[:, :self.latent_dim], h[:, self.latent_dim:].clamp(-12.0, 6.0)


def torch_generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g

def recon_per_example(logits: torch.Tensor, x: torch.Tensor, likelihood: str, scale: float,
                      n_features: int | None = None, label_weight: float = 1.0) -> torch.Tensor:
    """−log p(x | z) up to a constant, summed over columns: Bernoulli (decoder outputs logits) or
    Gaussian with fixed standard deviation `scale` (squared error / 2σ²; σ² = 0.5 is the official
    code's plain squared error). Columns from `n_features` on (the label block) weigh `label_weight`."""
    if likelihood == "bernoulli":
        per_col = nn.functional.binary_cross_entropy_with_logits(logits, x, reduction="none")
    else:
        per_col = (logits - x) ** 2 / (2.0 * scale * scale)
    if n_features is not None and label_weight != 1.0 and per_col.shape[1] > n_features:
        return per_col[:, :n_features].sum(1) + label_weight * per_col[:, n_features:].sum(1)
    return per_col.sum(1)


def decode_mean(logits: torch.Tensor, likelihood: str) -> torch.Tensor:
    return torch.sigmoid(logits) if likelihood == "bernoulli" else logits
