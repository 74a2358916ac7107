"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): adaptive, workload-aware selection of marginals,
estimated with mbi's graphical model.

Workload: every marginal of `degree` attributes (all pairs by default), weight 1. Candidates: the
workload's downward closure, each with weight w_r = Σ_{s in workload} |r ∩ s|. Budget ρ (zCDP,
calibrated from the run's (ε, δ) in marginal_base): all 1-way marginals first at σ₀ = √(T/(2·0.9·ρ)),
then rounds of (a) the exponential mechanism at ε₀ = √(8·0.1·ρ/T) over candidates whose junction
tree stays under `max_model_size`·(ρ used / ρ) MB, quality w_r·(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)·σ·n_r)
with sensitivity max w_r, (b) a Gaussian measurement of the chosen marginal at σ, (c) a warm-started
re-estimate. When a measurement barely moved the model (‖ΔM_r‖₁ ≤ √(2/π)·σ·n_r) σ halves and ε₀
doubles. The last round — when what is left would not pay for two more — spends exactly the rest;
after `max_time` seconds the rest is spent instead on re-measuring the 1-way marginals and every
selected one (no selection). Either way the accountant's ε of the ledger is the target.
The model's marginals for the quality scores come from rows drawn from it (marginal_base).
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from dpcore.errors import InvalidParameter, check_int, check_positive
from dpcore.models import _common as C
from dpcore.models.base import PrivacyBudget
from dpcore.models.marginal_base import MarginalSynthesizer
from dpcore.models.marginal_data import check_bins, check_decode

_f = C.hparam
ALPHA = 0.9  # share of each round's ρ spent on the measurement (the paper's)


@dataclass(frozen=True)
class AIMConfig:
    """AIM: adaptive selection of marginals; ρ calibrated to (ε, δ), stops by budget or max_time."""

    epsilon: float = _f(1.0, "total privacy budget ε (zCDP calibrated, RDP accountant)")
    delta: float = _f(1e-5, "δ of the (ε, δ) guarantee")
    degree: int = _f(2, "size of the workload's marginals (2: all pairs of columns)")
    bins: int = _f(32, "equal-width bins per numeric column over its declared bounds")
    max_model_size: float = _f(20.0, "largest graphical model (MB of junction-tree tables)")
    max_time: float = _f(300.0, "seconds of selection rounds; the round after spends the rest of ρ")
    rounds: int = _f(0, "planned rounds T (0: 16 × number of attributes, the paper's)")
    round_iters: int = _f(100, "mirror-descent iterations of each round's warm-started estimate")
    iters: int = _f(1000, "mirror-descent iterations of the final estimate")
    numeric_decode: str = _f("uniform", "numeric value of a bin: 'uniform' within it or its 'midpoint'")
    seed: int = _f(0, "seed of the public randomness (drawing rows from the fitted model)")
    reproducible_noise: bool = _f(False, C.REPRODUCIBLE_NOISE_HELP)

    def __post_init__(self) -> None:
        PrivacyBudget(self.epsilon, self.delta)
        if not math.isfinite(self.epsilon):
            raise InvalidParameter("epsilon must be finite for aim")
        check_int("degree", self.degree)
        check_bins(self.bins)
        check_positive("max_model_size", self.max_model_size)
        check_positive("max_time", self.max_time)
        check_int("rounds", self.rounds, minimum=0)
        check_int("round_iters", self.round_iters)
        check_int("iters", self.iters)
        check_int("seed", self.seed, minimum=0)
        check_decode(self.numeric_decode)


def candidates(attrs: list[str], degree: int) -> dict[tuple, float]:
    """Downward closure of the workload (all `degree`-subsets) with AIM's weights."""
    work = list(itertools.combinations(attrs, min(degree, len(attrs))))
    out: dict[tuple, float] = {}
    for s in work:
        for k in range(1, len(s) + 1):
            for r in itertools.combinations(s, k):
                out[r] = out.get(r, 0.0) + len(set(r) & set(s))
    return out


class AIM(MarginalSynthesizer):
    name = "aim"
    label = "AIM (marginals)"
    config_class = AIMConfig
    private = True

    def _select_and_measure(self, ctx) -> None:
        from mbi.junction_tree import hypothetical_model_size

        cfg = self.config
        attrs = list(ctx.domain.attributes)
        T = cfg.rounds or 16 * len(attrs)
        ctx.total_steps = T + 1
        sigma = math.sqrt(T / (2.0 * ALPHA * ctx.rho))
        eps0 = math.sqrt(8.0 * (1.0 - ALPHA) * ctx.rho / T)
        ctx.measure([(a,) for a in attrs], sigma, "aim: 1-way marginals")
        ctx.model = ctx.estimate(cfg.round_iters)
        cands = candidates(attrs, cfg.degree)
        cands = {r: w for r, w in cands.items() if len(r) > 1} or cands
        rows = max(int(ctx.total), 10_000)
        deadline = ctx.t0 + cfg.max_time
        final = False
        while not final:
            left = ctx.rho - ctx.rho_used
            if left <= 0:
                break
            cost = 1.0 / (2.0 * sigma ** 2) + eps0 ** 2 / 8.0
            if time.perf_counter() > deadline:  # out of time: re-measure the model's cliques with the rest
                again = [(a,) for a in attrs] + list(dict.fromkeys(ctx.selected))
                ctx.measure(again, math.sqrt(len(again) / (2.0 * left)), "aim: final marginals")
                break
            if left < 2.0 * cost:
                sigma = math.sqrt(1.0 / (2.0 * ALPHA * left))
                eps0 = math.sqrt(8.0 * (1.0 - ALPHA) * left)
                final = True
            used_after = ctx.rho_used + 1.0 / (2.0 * sigma ** 2) + eps0 ** 2 / 8.0
            limit = cfg.max_model_size * used_after / ctx.rho
            have = list(ctx.model.cliques)
            small = [r for r in cands if hypothetical_model_size(ctx.domain, have + [r]) <= limit]
            if not small:
                small = [min(cands, key=lambda r: ctx.domain.size(r))]
            est = ctx.model_marginals(ctx.model, small, rows)
            bias = math.sqrt(2.0 / math.pi) * sigma
            q = np.array([cands[r] * (np.abs(ctx.true_marginal(r) - est[r]).sum() - bias * ctx.domain.size(r))
                          for r in small])
            r = small[ctx.select(q, eps0, max(cands[s] for s in small), "aim: selection")]
            ctx.selected.append(r)
            before = est[r]
            ctx.measure([r], sigma, "aim: marginals")
            ctx.model = ctx.estimate(cfg.round_iters, warm=ctx.model)
            after = ctx.model_marginals(ctx.model, [r], rows)[r]
            if not final and np.abs(after - before).sum() <= bias * ctx.domain.size(r):
                sigma, eps0 = sigma / 2.0, eps0 * 2.0
