"""Lipschitz-constrained decoders and the pure maths of the L-VAE certificate (docs/references.md#l-vae).

Why here and not in lvae.py: the certificate has three ingredients that must each be testable on
its own: (1) a decoder whose Lipschitz constant is *provably* ≤ L (spectral normalisation of every
dense layer, each scaled by L^(1/n), certified with the exact spectral norm at the end), (2) the
latent radius R_z(δ) that holds 1 − δ of the N(0, I) prior, and (3) the bound on how much the
log-likelihood of one latent code can move when a record is replaced. The derivation that ties
them together is in `dpcore.models.lvae`'s docstring.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from dpcore.errors import InvalidParameter, check_int, check_positive, check_probability


# ----------------------------------------------------------------------------- the certificate maths
def latent_radius(dim: int, delta: float) -> float:
    """R_z(δ) = sqrt of the χ²_d quantile at 1 − δ: P(‖z‖ > R_z) = δ for z ~ N(0, I_d).

    (d = 8, δ = 1e-5: 6.11; d = 32: 8.84; docs/references.md#l-vae.) Uses the survival function for accuracy
    at tiny δ.
    """
    from scipy.stats import chi2

    dim = check_int("latent_dim", dim)
    delta = check_probability("delta", delta)
    return float(math.sqrt(chi2.isf(delta, dim)))


def data_diameter(n_features: int, n_classes: int = 0, label_weight: float = 1.0) -> float:
    """sup ‖w ⊙ (x − x')‖ over two rows of the model matrix: features in [0, 1]^D (the Dataset
    contract, a public bound) plus a one-hot label block weighted by `label_weight` (two one-hot
    vectors differ by at most √2)."""
    n_features = check_int("n_features", n_features, minimum=0)
    label = 2.0 * label_weight ** 2 if n_classes >= 2 else 0.0
    return math.sqrt(n_features + label)


def posterior_sampling_epsilon(lipschitz: float, radius: float, diameter: float,
                               scale: float = 1.0) -> float:
    """ε = 2·L·R_z·D_x / s² of exact posterior sampling (derivation: lvae.py, step 3).

    lipschitz: L of the decoder mean (or logits); radius: R_z; diameter: D_x = sup ‖x − x'‖;
    scale: s of the Gaussian likelihood N(μ(z), s²I) (1 for the Bernoulli/logit likelihood).
    """
    for name, v in (("lipschitz", lipschitz), ("radius", radius), ("diameter", diameter),
                    ("scale", scale)):
        check_positive(name, v)
    return 2.0 * lipschitz * radius * diameter / scale ** 2


def lipschitz_for_epsilon(epsilon: float, radius: float, diameter: float, scale: float = 1.0) -> float:
    """The L whose certificate is exactly ε (inverse of `posterior_sampling_epsilon`)."""
    check_positive("epsilon", epsilon)
    return epsilon * scale ** 2 / (2.0 * radius * diameter)


def log_likelihood(x: torch.Tensor, out: torch.Tensor, likelihood: str, scale: float = 1.0,
                   weights: torch.Tensor | None = None) -> torch.Tensor:
    """log p(x | z) per row (all constants kept): Gaussian N(out, s²I) or Bernoulli with logits
    `out`; `weights` scales each column's term (the label block's weight)."""
    if likelihood == "gaussian":
        per = -(x - out) ** 2 / (2.0 * scale ** 2) - 0.5 * math.log(2 * math.pi * scale ** 2)
    elif likelihood == "bernoulli":
        per = x * out - nn.functional.softplus(out)
    else:
        raise InvalidParameter(f"likelihood must be 'gaussian' or 'bernoulli', got {likelihood!r}")
    if weights is not None:
        per = per * weights
    return per.sum(-1)


def project_to_ball(z: torch.Tensor, radius: float) -> torch.Tensor:
    """z ↦ z·min(1, R/‖z‖): 1-Lipschitz, identity inside the ball (the certified decoder is
    μ∘project, bounded everywhere, so no latent tail escapes the bound)."""
    norm = z.norm(dim=-1, keepdim=True)
    return z * torch.clamp(radius / norm.clamp_min(1e-12), max=1.0)


# ----------------------------------------------------------------------------- spectral normalisation
class SpectralLinear(nn.Module):
    """y = (scale/σ(W))·W x + b, σ(W) the largest singular value (Miyato et al. 2018).

    Training: one power-iteration step per forward refreshes the estimate σ̂ ≤ σ(W) and the
    gradient flows through σ̂ = uᵀWv. Eval: the stored σ is used. `finalize()` stores the EXACT
    σ(W) (torch.linalg.matrix_norm(ord=2) in float64, times 1 + 1e-6 for float32 rounding), so the
    deployed layer's operator norm is ≤ scale, which is what the certificate needs (power
    iteration alone underestimates σ and would overstate nothing but prove nothing either).
    """

    def __init__(self, in_features: int, out_features: int, scale: float, generator: torch.Generator,
                 power_iterations: int = 1):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        w = torch.rand(out_features, in_features, generator=generator) * 2 * bound - bound
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(torch.rand(out_features, generator=generator) * 2 * bound - bound)
        u = torch.randn(out_features, generator=generator)
        self.register_buffer("u", u / u.norm())
        self.register_buffer("sigma", torch.linalg.matrix_norm(self.weight.detach().double(), ord=2).float())
        self.scale = float(scale)
        self.power_iterations = int(power_iterations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():
                u = self.u
                for _ in range(self.power_iterations):
                    v = nn.functional.normalize(self.weight.t() @ u, dim=0)
                    u = nn.functional.normalize(self.weight @ v, dim=0)
                self.u.copy_(u)
            sigma = torch.dot(u, self.weight @ v)
            self.sigma.copy_(sigma.detach())
        else:
            sigma = self.sigma
        return nn.functional.linear(x, self.weight * (self.scale / sigma), self.bias)

    def effective_weight(self) -> torch.Tensor:
        return self.weight.detach() * (self.scale / self.sigma)

    @torch.no_grad()
    def finalize(self) -> None:
        exact = torch.linalg.matrix_norm(self.weight.detach().double(), ord=2)
        self.sigma.copy_((exact * (1.0 + 1e-6)).to(self.sigma.dtype))


class LipschitzMLP(nn.Module):
    """Dense layers with ReLU between them, every layer spectrally normalised to L^(1/n), so
    Lip(f) ≤ Π‖W_i‖₂ · Π Lip(ReLU) ≤ (L^(1/n))^n = L."""

    def __init__(self, sizes: list[int], lipschitz: float, generator: torch.Generator,
                 power_iterations: int = 1):
        super().__init__()
        check_positive("lipschitz", lipschitz)
        n = len(sizes) - 1
        per_layer = lipschitz ** (1.0 / n)
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(SpectralLinear(a, b, per_layer, generator, power_iterations))
            if i < n - 1:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)
        self.lipschitz = float(lipschitz)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)

    def finalize(self) -> None:
        for m in self.net:
            if isinstance(m, SpectralLinear):
                m.finalize()


def layer_product_bound(module: nn.Module) -> float:
    """Π_i ‖W_i‖₂ over the dense layers of a Linear/ReLU stack, exact spectral norms in float64.

    A valid upper bound on the Lipschitz constant of any such stack (ReLU is 1-Lipschitz); for a
    finalized LipschitzMLP it equals L up to rounding, for an unconstrained MLP it is usually loose.
    """
    bound = 1.0
    for m in module.modules():
        if isinstance(m, SpectralLinear):
            w = m.effective_weight()
        elif isinstance(m, nn.Linear):
            w = m.weight.detach()
        else:
            if isinstance(m, (nn.Sequential, LipschitzMLP, nn.ReLU, nn.LeakyReLU)) or m is module:
                continue
            if any(True for _ in m.children()):
                continue
            raise InvalidParameter(f"layer_product_bound cannot bound a {type(m).__name__} layer")
        bound *= float(torch.linalg.matrix_norm(w.double(), ord=2))
    return bound


# ----------------------------------------------------------------------------- empirical estimates
def jacobian_spectral_norms(f, z: torch.Tensor) -> torch.Tensor:
    """‖∂f/∂z(z_b)‖₂ for each row of z (differentiable: the gradient-penalty variant trains on it).

    Forward mode, one JVP per latent dimension (d is small), then the largest eigenvalue of JᵀJ.
    """
    d = z.shape[1]
    eye = torch.eye(d, dtype=z.dtype, device=z.device)
    jac = torch.func.vmap(lambda v: torch.func.jvp(f, (z,), (v.expand_as(z),))[1])(eye)  # (d, B, D)
    jac = jac.permute(1, 2, 0)
    gram = jac.transpose(1, 2) @ jac
    return torch.linalg.eigvalsh(gram)[:, -1].clamp_min(0).sqrt()


@torch.no_grad()
def pair_ratios(f, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
    """‖f(z1) − f(z2)‖ / ‖z1 − z2‖ row by row (a lower bound on Lip(f) for every pair)."""
    return (f(z1) - f(z2)).norm(dim=1) / (z1 - z2).norm(dim=1).clamp_min(1e-12)


def empirical_lipschitz(f, dim: int, radius: float, n: int = 1024, seed: int = 0,
                        device: torch.device | str = "cpu") -> dict[str, float]:
    """Lower estimates of Lip(f) on the latent ball: the largest pair ratio over random pairs
    (half of them close together, where ReLU nets attain their local slope) and the largest
    Jacobian spectral norm at random points. Shown where no bound is certified."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, dim, generator=g)
    z = project_to_ball(z * (radius / math.sqrt(dim)), radius).to(device)
    far = project_to_ball(torch.randn(n, dim, generator=g) * (radius / math.sqrt(dim)), radius).to(device)
    near = z + 1e-2 * torch.randn(n, dim, generator=g).to(device)
    ratios = torch.cat([pair_ratios(f, z, far), pair_ratios(f, z, near)])
    with torch.enable_grad():
        jac = jacobian_spectral_norms(f, z[:256]).detach()
    return {"pairs": float(ratios.max()), "jacobian": float(jac.max()),
            "estimate": float(max(ratios.max(), jac.max()))}
