"""MST (McKenna, Miklau & Sheldon 2021): all 1-way marginals, a maximum spanning tree of 2-way
marginals chosen with the exponential mechanism, then mbi's graphical model.

Budget ρ (zCDP, from the run's (ε, δ): marginal_base) in thirds: the d 1-way marginals (Gaussian,
σ₁ = √(3d/(2ρ))), d − 1 exponential-mechanism edge selections (ε₀ = √(8ρ/(3(d − 1))), score: the
L1 distance between the pair's true counts and the 1-way model's, sensitivity 1), and the d − 1
chosen 2-way marginals (σ₂ = √(3(d − 1)/(2ρ))). When a target is declared, the score of an edge
that contains it is multiplied by `target_weight` (sensitivity: the largest weight among the open
edges), so the tree links the target to the columns it depends on (marginal_data.workload_weight). Every step is a ledger record; the accountant's ε
of the ledger is the run's ε. As in the paper, levels the noisy 1-ways cannot tell from noise are
merged before the 2-ways (`compress`; ordered columns merge neighbouring levels: marginal_base).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dpcore.models.marginal_base import MarginalSynthesizer
from dpcore.models.marginal_data import (
    bins_field,
    compress_field,
    decode_field,
    level_floor_field,
    missing_sigmas_field,
    target_weight_field,
    workload_weight,
)
from dpcore.models.params import (
    REPRODUCIBLE_NOISE_HELP,
    ModelConfig,
    count,
    delta_field,
    epsilon_field,
    hparam,
    seed_field,
)

TARGET_WEIGHT = 4.0  # chosen on bench/wide_table.py's `wide-choose` table and credit (docs/tabular.md)


@dataclass(frozen=True)
class MSTConfig(ModelConfig):
    """MST: 1-way marginals + a spanning tree of 2-way marginals; ρ calibrated to (ε, δ)."""

    epsilon: float = epsilon_field(1.0, "total privacy budget ε (zCDP calibrated, RDP accountant)")
    delta: float = delta_field()
    bins: int = bins_field()
    compress: bool = compress_field()
    target_weight: float = target_weight_field(TARGET_WEIGHT, "mst")
    iters: int = count(1000, "mirror-descent iterations of the final graphical-model estimate")
    numeric_decode: str = decode_field()
    level_floor: bool = level_floor_field()
    missing_sigmas: float = missing_sigmas_field()
    seed: int = seed_field("seed of the public randomness (drawing rows from the fitted model); the "
                           "mechanism noise is secret, so the same seed trains another model")
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)


class MST(MarginalSynthesizer):
    name = "mst"
    label = "MST (marginals)"
    description = ("MST: noisy 1-way marginals and a privately chosen spanning tree of 2-way marginals, "
                   "then a graphical model (mbi); tables only.")
    config_class = MSTConfig
    private = True
    legacy_defaults = {"target_weight": 1.0, "level_floor": False, "missing_sigmas": 0.0}  # saved before issue 29's settings

    @classmethod
    def _planned_steps(cls, config, d: int) -> int:
        """1-way measurement, d − 1 edge selections, the 2-way measurement, the final estimate."""
        return d + 2 if d > 1 else 2

    def _select_and_measure(self, ctx) -> None:
        attrs = list(ctx.domain.attributes)
        d = len(attrs)
        share = ctx.rho / 3.0 if d > 1 else ctx.rho
        ctx.measure([(a,) for a in attrs], math.sqrt(d / (2.0 * share)), "mst: 1-way marginals")
        if d < 2:
            return
        if self.config.compress:
            ctx.compress()
        ctx.model = ctx.estimate(self.config.iters)
        pairs = list(itertools.combinations(attrs, 2))
        est = ctx.model_marginals(ctx.model, pairs, max(int(ctx.total), 10_000))
        weight = np.array([workload_weight(p, self.config.target_weight) for p in pairs])
        score = weight * np.array([np.abs(ctx.true_marginal(p) - est[p]).sum() for p in pairs])
        eps0 = math.sqrt(8.0 * share / (d - 1))
        comp = {a: a for a in attrs}

        def root(a):
            while comp[a] != a:
                a = comp[a]
            return a

        for _ in range(d - 1):  # Kruskal with a private choice among the edges joining two trees
            open_ = [i for i, (a, b) in enumerate(pairs) if root(a) != root(b)]
            i = open_[ctx.select(score[open_], eps0, float(weight[open_].max()), "mst: edge selection")]
            a, b = pairs[i]
            comp[root(a)] = root(b)
            ctx.selected.append(pairs[i])
            ctx.event("select", {"score": score[i]})
        ctx.measure(ctx.selected, math.sqrt((d - 1) / (2.0 * share)), "mst: 2-way marginals")
