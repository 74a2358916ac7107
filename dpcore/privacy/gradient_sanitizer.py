"""The GS-WGAN gradient sanitiser: clip each generated sample's gradient, add Gaussian noise, and
only then let it into the generator (Chen et al. 2020; docs/references.md#gs-wgan).

Why a module of its own: it is the ONLY place where private data (through the discriminators)
reaches the released generator, so it is the mechanism the ledger describes and the thing the
tests pin down: every row clipped to C, noise N(0, σ²C²) per coordinate, and the generator's
gradient is exactly the sanitised tensor back-propagated through G (nothing bypasses it).

Accounting (what `ledger_record` writes; the accountant turns it into ε)
-----------------------------------------------------------------------
Query i of a step: generated row x_i (a function of the generator and public noise only) is sent
to ONE discriminator j_i drawn uniformly and independently from ndis; the discriminators are
trained without noise, each on its own disjoint shard (every record draws its shard independently
and uniformly). Discriminator j must be a function of shard j, its own random stream and the
generator's past states only: every discriminator is updated at every step whatever the routes
(a public schedule), and each draws its row picks, fakes and gradient-penalty mix from its own
stream. (Updating only the routed ones, from one shared stream, made discriminator j depend on
earlier routing coins, which the per-query argument below does not allow.) The shards, routes and
noise come from secret streams (dpcore.privacy.randomness): the argument needs the routes and the
shard of each record to be unknown to the attacker. The query releases
g̃_i = clip_C(∂ℓ/∂x_i) + N(0, σ²C²I). Neighbouring data sets differ in one record (added, removed
or replaced), hence in one shard k: only discriminator k changes, and its clipped gradient moves
by at most 2C (both lie in the C-ball). With A the mixture over j ≠ k, the two output laws are
P = (1−q)A + q·N(a, s²I) and Q = (1−q)A + q·N(b, s²I), q = 1/ndis, s = σC, and every mean (a, b
and those in A) lies in the C-ball, diameter Δ = 2C.
- Hockey-stick (proof): by the advanced joint convexity of Balle, Barthe & Gaboardi (2018, Thm 2),
  H_{1+q(γ−1)}(P‖Q) = q·H_γ(N_a ‖ (1−β)A + βN_b) ≤ q·max_{u,v∈ball} H_γ(N_u‖N_v) (joint convexity),
  which is exactly the value for the Poisson-subsampled Gaussian pair ((1−q)N_0 + qN_Δ, N_0); the
  same holds for H(Q‖P). So each query is (ε, δ(ε))-DP with the Poisson-subsampled Gaussian's
  profile at noise multiplier s/Δ = σ/2, for every ε ≥ 0.
- RDP (what the accountant composes): exp((α−1)D_α) is jointly convex, so the mixture A reduces
  to one mean c; for c ∈ {a, b} the pair IS the Poisson pair (Mironov et al.'s A_α, B_α ≤ A_α);
  for other c, tests/models/test_gswgan.py checks numerically that D_α stays below the record's
  RDP (the worst case is c = b). This last step is checked, not proved.
So one query = one "subsampled_gaussian" record step with noise_multiplier σ/2, sampling_rate
1/ndis, sensitivity 2C; a step of batch B adds B steps (T·B in total), composed by RDP. Routing
each row independently (instead of one discriminator per step, as the official code does while
accounting per row) is what makes this per-query amplification valid (docs/references.md#gs-wgan, the caveat).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from dpcore.errors import check_positive
from dpcore.privacy.ledger import MechanismRecord
from dpcore.privacy.randomness import NoiseSource

RECORD_NAME = "gs-wgan-generator-grad"


def clip_rows(grad: torch.Tensor, clip: float) -> torch.Tensor:
    """Each row scaled to L2 norm ≤ clip (rows already inside the ball are unchanged)."""
    flat = grad.reshape(grad.shape[0], -1)
    norms = flat.norm(dim=1, keepdim=True)
    factor = torch.clamp(clip / norms.clamp_min(1e-12), max=1.0)
    return (flat * factor).reshape(grad.shape)


class GradientSanitizer:
    """clip_C + N(0, σ²C²) per row; `noise_multiplier` = σ (the noise std is σ·C).

    generator: the torch.Generator the noise is drawn from; None = a secret stream
        (dpcore.privacy.randomness). A seeded one makes the noise reproducible (not private).
    """

    def __init__(self, clip: float = 1.0, noise_multiplier: float = 1.0,
                 generator: torch.Generator | None = None):
        self.clip = check_positive("clip", clip)
        self.noise_multiplier = float(noise_multiplier)
        if self.noise_multiplier < 0:
            raise ValueError("noise_multiplier must be >= 0")
        self.generator = generator if generator is not None else NoiseSource.secret().torch("gswgan-sanitizer")

    @property
    def noise_std(self) -> float:
        return self.noise_multiplier * self.clip

    def __call__(self, grad: torch.Tensor) -> torch.Tensor:
        clipped = clip_rows(grad.detach(), self.clip)
        if self.noise_multiplier == 0:
            return clipped
        noise = torch.randn(clipped.shape, generator=self.generator, device=clipped.device,
                            dtype=clipped.dtype)
        return clipped + self.noise_std * noise

    def backward(self, fake: torch.Tensor, loss_fn: Callable[[torch.Tensor], torch.Tensor],
                 scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        """The GS-WGAN generator step: x = fake.detach(); g = ∂ loss_fn(x).sum() / ∂x (row i's
        loss must depend on row i only); fake.backward(scale · sanitise(g)).

        Returns (per-row losses, the sanitised gradient that was back-propagated).
        The discriminators never see `fake`'s graph, so no other path reaches the generator.
        """
        x = fake.detach().requires_grad_(True)
        losses = loss_fn(x)
        (g,) = torch.autograd.grad(losses.sum(), x)
        sanitised = self(g)
        fake.backward(sanitised * scale)
        return losses.detach(), sanitised


def ledger_record(noise_multiplier: float, n_discriminators: int, queries: int,
                  clip: float = 1.0, *, noise: str = "secret") -> MechanismRecord:
    """`queries` per-row queries, each a 1-of-ndis subsampled Gaussian with sensitivity 2C and
    noise std σC (noise multiplier σ/2); see the module docstring for why this is valid.
    noise: "seeded" when the shards, routes or noise were drawn from the public seed."""
    return MechanismRecord(name=RECORD_NAME, mechanism="subsampled_gaussian",
                           noise_multiplier=noise_multiplier / 2.0,
                           sampling_rate=1.0 / n_discriminators, steps=int(queries),
                           sensitivity=2.0 * clip, noise=noise)


def noise_for_epsilon(epsilon: float, delta: float, n_discriminators: int, queries: int, *,
                      spent=None) -> float:
    """σ (noise std / C) whose ledger reaches exactly ε at δ (the accountant's calibration).

    spent: a PrivacyLedger of mechanisms already applied to the same rows (the dataset's DP
    preprocessing); ε is then the total of spent + the sanitised queries.
    """
    from dpcore.privacy.accountant import calibrate_sgd

    return 2.0 * float(calibrate_sgd(epsilon, delta, 1.0 / n_discriminators, queries, spent=spent))
