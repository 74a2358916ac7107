"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): adaptive, workload-aware selection of marginals,
estimated with mbi's graphical model.

Workload: every marginal of `degree` attributes (all pairs by default), weight c_s = `target_weight`
for those that contain the declared target and 1 for the rest (the paper's weighted workload; see
marginal_data.workload_weight). Candidates: the workload's downward closure, each with weight
w_r = Σ_{s in workload, s ⊇ r} c_s·|r|. Budget ρ (zCDP,
calibrated from the run's (ε, δ) in marginal_base): all 1-way marginals first at σ₀ = √(T/(2·0.9·ρ))
(with a declared target and `target_pairs`, then each column's pair with the target on at most
`target_levels` groups of its levels at `target_budget` times a 1-way's ρ — target_pairs.py — or,
with `target_levels` 0, the pairs cell by cell instead of the 1-ways: not in the paper, see
first_measurements),
then rounds of (a) the exponential mechanism at ε₀ = √(8·0.1·ρ/T) over candidates whose junction
tree stays under `max_model_size`·(ρ used / ρ) MB, quality w_r·(‖M_r(D) − M_r(p̂)‖₁ − √(2/π)·σ·n_r)
with sensitivity max w_r over those offered (the target's pairs measured before the rounds are
not: round_candidates), (b) a Gaussian measurement of the chosen marginal at σ, (c) a warm-started
re-estimate. When a measurement barely moved the model (‖ΔM_r‖₁ ≤ √(2/π)·σ·n_r) σ halves and ε₀
doubles. The last round — when what is left would not pay for two more — spends exactly the rest;
after `max_time` seconds the rest is spent instead on re-measuring the 1-way marginals and every
selected one (no selection); `final_share` keeps that share of what the first phase left for such a
final re-measurement even when the rounds end in time (not in the paper). Either way the accountant's ε of the ledger is the target.
When max_time binds (T = 16·d planned rounds at 3–8 s each on a CPU would take minutes), σ and ε₀
are re-planned each round from the pace so far: what is left is split over the rounds that still
fit plus the final re-measurement, so ρ is spent on the rounds that happen (not in the paper).
The model's marginals for the quality scores come from rows drawn from it (marginal_base). After
the 1-ways, levels they cannot tell from noise are merged (`compress`, as MST does; not in the
paper), which shrinks every candidate's cells. Each round's estimate compiles a new mbi program
(3–8 s on a CPU, most of a round): repeated cliques are pooled so they do not (marginal_base).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from dpcore.models.marginal_base import MarginalSynthesizer
from dpcore.models.marginal_data import (
    LABEL,
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
    positive,
    seed_field,
)

ALPHA = 0.9  # share of each round's ρ spent on the measurement (the paper's)
TARGET_WEIGHT = 4.0  # chosen on bench/wide_table.py's `wide-choose` table and credit (docs/tabular.md)
TARGET_LEVELS = 4  # chosen on bench/wide_table.py's `wide-choose` table and credit (docs/tabular.md)
TARGET_BUDGET = 2.0  # chosen on bench/wide_table.py's `wide-choose` table and credit (docs/tabular.md)
TARGET_SHRINK = False  # measured on wide-choose and credit, not adopted (docs/tabular.md)
FINAL_SHARE = 0.5  # chosen on bench/wide_table.py's `wide-choose` table and credit (docs/tabular.md)


@dataclass(frozen=True)
class AIMConfig(ModelConfig):
    """AIM: adaptive selection of marginals; ρ calibrated to (ε, δ), stops by budget or max_time."""

    epsilon: float = epsilon_field(1.0, "total privacy budget ε (zCDP calibrated, RDP accountant)")
    delta: float = delta_field()
    degree: int = count(2, "size of the workload's marginals (2: all pairs of columns)", high=5,
                        group="main", typical=(1, 3))
    bins: int = bins_field()
    compress: bool = compress_field()
    target_weight: float = target_weight_field(TARGET_WEIGHT, "aim")
    target_pairs: bool = hparam(True, "when a target is declared, measure each column's pair with the target "
                                      "instead of the 1-way marginals before the rounds (as many measurements; "
                                      "each holds its column's 1-way marginal)")
    target_levels: int = count(TARGET_LEVELS, "with target_pairs: the 1-way marginals first, then each column's pair "
                                              "with the target on at most this many groups of its levels (one "
                                              "noisy count per group and class); 0: the pairs cell by cell, "
                                              "instead of the 1-way marginals", low=0, high=64, typical=(0, 16))
    target_budget: float = hparam(TARGET_BUDGET, "ρ of each grouped target pair, in units of a 1-way "
                                                 "marginal's (the target's links against each column's shape)",
                                  low=0.25, high=16.0, typical=(1, 4))
    target_shrink: bool = hparam(TARGET_SHRINK, "with grouped target pairs: pull each pair's noisy counts toward "
                                                "independence by how far its link stands above the noise "
                                                "(James–Stein; post-processing, no privacy cost)")
    final_share: float = hparam(FINAL_SHARE, "share of the ρ left after the first measurements kept for a final "
                                     "re-measurement of every measured marginal (0: only when max_time "
                                     "ends the rounds)", low=0.0, high=1.0)
    max_model_size: float = positive(20.0, "largest graphical model (MB of junction-tree tables)")
    max_time: float = positive(300.0, "seconds of selection rounds; the round after spends the rest of ρ",
                               group="main")
    rounds: int = count(0, "planned rounds T (0: 16 × number of attributes, the paper's, at most 64; at "
                                "least the number of attributes, which the 1-way measurement is paid from)",
                        low=0)
    round_iters: int = count(100, "mirror-descent iterations of each round's warm-started estimate")
    iters: int = count(1000, "mirror-descent iterations of the final estimate")
    numeric_decode: str = decode_field()
    level_floor: bool = level_floor_field()
    missing_sigmas: float = missing_sigmas_field()
    seed: int = seed_field("seed of the public randomness (drawing rows from the fitted model); the "
                           "mechanism noise is secret, so the same seed trains another model")
    reproducible_noise: bool = hparam(False, REPRODUCIBLE_NOISE_HELP)


def coarse_pairs(config) -> bool:
    """Whether the target's pairs are measured on grouped levels after the 1-ways (target_pairs.py)."""
    return bool(config.target_pairs) and config.target_levels > 0


def candidates(attrs: list[str], degree: int, target_weight: float = 1.0) -> dict[tuple, float]:
    """Downward closure of the workload (all `degree`-subsets, the target's weighted
    `target_weight`) with AIM's weights w_r = Σ_{s ⊇ r} c_s·|r|."""
    work = list(itertools.combinations(attrs, min(degree, len(attrs))))
    out: dict[tuple, float] = {}
    for s in work:
        c = workload_weight(s, target_weight)
        for k in range(1, len(s) + 1):
            for r in itertools.combinations(s, k):
                out[r] = out.get(r, 0.0) + c * len(set(r) & set(s))
    return out


def round_candidates(attrs: list[str], degree: int, target_weight: float, measured: list[tuple]) -> dict:
    """The rounds' candidates: the workload's closure (`candidates`) without the 1-ways and without
    the marginals the first phase measured (`measured`: the target's pairs), which the final
    re-measurement measures again anyway.

    Why: the exponential mechanism's sensitivity is the largest weight offered, and the target's
    pairs weigh target_weight·2 = 8 against 2 for the others: offered, they made every selection 4×
    noisier (issue 29: at ε₀ ≈ 0.016 the rounds picked pairs nearly at random). Which marginals
    are left out depends on the schema and the settings only, never on the rows."""
    cands = candidates(attrs, degree, target_weight)
    done = set(measured)
    left = {r: w for r, w in cands.items() if len(r) > 1 and r not in done}
    return left or {r: w for r, w in cands.items() if len(r) > 1} or cands


def first_measurements(attrs: list[str], target_pairs: bool) -> list[tuple]:
    """What AIM measures before its first round: every 1-way marginal (the paper), or, when a target
    is declared and `target_pairs` is on, every column's pair with the target — as many Gaussian
    measurements at the same σ (one fewer), each holding its column's 1-way marginal (its noise
    per cell √k_target times larger once summed) and the column's link to the target.

    Why: on a small wide table AIM's rounds are few (a round costs an mbi compile, 3–20 s on a
    CPU), and the target's pairs compete with hundreds of others; rows from a model that never
    measured them do not predict the target (issue 29). A star around the target is also a small
    junction tree, so the rounds' model-size limit keeps its room for the other pairs."""
    if target_pairs and LABEL in attrs and len(attrs) > 1:
        return [(a, LABEL) for a in attrs if a != LABEL]
    return [(a,) for a in attrs]


AUTO_ROUNDS_CAP = 64


def planned_rounds(config, d: int, target: bool = True) -> int:
    """T: `rounds`, or the paper's 16·d capped at 64; at least d, because the d 1-way measurements
    at σ₀ cost d·0.9·ρ/T and a smaller T would spend more than ρ before the first round (with the
    target's grouped pairs, d + target_budget·(d − 1): they cost target_budget 1-ways each; `target`:
    whether the table declares one — the progress bar's plan assumes it does).

    Why the cap: a round costs 3–8 s on a CPU (an mbi compile), so about 64 fit in the default
    max_time; T also sets σ₀ of the 1-ways, and credit's 16·20 = 320 made them so noisy that
    domain compression merged most levels (ε = 1, 30 s: 1-way TVD 0.06–0.07 at T = 320, 0.03 at 64;
    cps1988, 7 columns: the same at 64 and 112)."""
    first = math.ceil(d + config.target_budget * (d - 1)) if coarse_pairs(config) and target else d
    return max(config.rounds or min(16 * d, AUTO_ROUNDS_CAP), first)


def grouped_pairs(ctx, ones: dict, levels: int) -> dict:
    """{(column, target): its GroupedQuery}: each column's (compressed) levels in at most `levels`
    groups of about equal mass under its noisy 1-way counts `ones` (ctx.noisy_one_ways() before
    compressing; post-processing of released values). From the counts, not from an estimated
    model: an estimate compiles an mbi program (30+ s under load), which the rounds need more."""
    from dpcore.models.target_pairs import level_groups_by_mass, pair_query

    kinds = {a.name: a.kind for a in ctx.owner.disc.attrs}
    classes = ctx.domain[LABEL]
    out = {}
    for a in ctx.domain.attributes:
        if a == LABEL:
            continue
        est = np.asarray(ones[a][0], np.float64)
        if a in ctx.owner.merged:
            est = np.bincount(ctx.owner.merged[a], weights=est, minlength=ctx.domain[a])
        groups = level_groups_by_mass(est, kinds[a] in ("bins", "int"), levels)
        out[(a, LABEL)] = pair_query(groups, classes)
    return out


def shrink_last(ctx, k: int) -> list[float]:
    """The last `k` measurements (grouped target pairs) pulled toward independence
    (target_pairs.shrink_to_independence); their factors λ, rounded. Post-processing: no record."""
    from dpcore.models.target_pairs import shrink_to_independence

    classes, out = ctx.domain[LABEL], []
    for i in range(len(ctx.measurements) - k, len(ctx.measurements)):
        m = ctx.measurements[i]
        y, lam = shrink_to_independence(np.asarray(m.noisy_measurement), classes, float(m.stddev))
        ctx.measurements[i] = dataclasses.replace(m, noisy_measurement=y)
        out.append(round(lam, 3))
    return out


class AIM(MarginalSynthesizer):
    name = "aim"
    label = "AIM (marginals)"
    description = ("AIM: adaptive, workload-aware selection of noisy marginals and a graphical model "
                   "(mbi); tables only.")
    config_class = AIMConfig
    private = True
    # saved before issue 29's settings: no weights, the 1-ways first, no grouped pairs
    legacy_defaults = {"target_weight": 1.0, "target_pairs": False, "target_levels": 0, "target_shrink": False,
                       "final_share": 0.0, "level_floor": False,
                       "missing_sigmas": 0.0}

    @classmethod
    def _planned_steps(cls, config, d: int) -> int:
        """1-way measurement + T rounds + the final estimate (AIM may stop earlier or run longer)."""
        return planned_rounds(config, d) + 2

    def _select_and_measure(self, ctx) -> None:
        from mbi.junction_tree import hypothetical_model_size

        cfg = self.config
        attrs = list(ctx.domain.attributes)
        T = planned_rounds(cfg, len(attrs), LABEL in attrs)
        self.calibration["rounds"] = T
        sigma = math.sqrt(T / (2.0 * ALPHA * ctx.rho))
        eps0 = math.sqrt(8.0 * (1.0 - ALPHA) * ctx.rho / T)
        first = first_measurements(attrs, cfg.target_pairs and not coarse_pairs(cfg))
        ctx.measure(first, sigma, "aim: 1-way marginals" if len(first[0]) == 1 else "aim: target pairs")
        ones = ctx.noisy_one_ways()
        if cfg.compress:
            ctx.compress()
        grouped = {}  # the target's pairs on grouped levels, cut from the noisy 1-ways (released)
        if coarse_pairs(cfg) and LABEL in attrs:
            grouped = grouped_pairs(ctx, ones, cfg.target_levels)
            ctx.measure(list(grouped), sigma / math.sqrt(cfg.target_budget), "aim: target pairs (grouped)",
                        grouped)
            if cfg.target_shrink:
                self.calibration["target_shrink"] = shrink_last(ctx, len(grouped))
        ctx.model = ctx.estimate(cfg.round_iters)
        cands = round_candidates(attrs, cfg.degree, cfg.target_weight, first + list(grouped))
        rows = max(int(ctx.total), 10_000)
        deadline = ctx.t0 + cfg.max_time
        reserve = cfg.final_share * (ctx.rho - ctx.rho_used)  # kept for the final re-measurement
        final, done, t_rounds = False, 0, time.perf_counter()
        while not final:
            left = ctx.rho - ctx.rho_used - reserve
            if left <= 0:
                break
            cost = 1.0 / (2.0 * sigma ** 2) + eps0 ** 2 / 8.0
            now = time.perf_counter()
            if done and now < deadline:  # spend ρ on the rounds that fit before max_time, at the pace so far
                fit = int((deadline - now) * done / (now - t_rounds)) + 1  # + the final re-measurement
                if left > (fit + 1) * cost:
                    sigma = math.sqrt((fit + 1) / (2.0 * ALPHA * left))
                    eps0 = math.sqrt(8.0 * (1.0 - ALPHA) * left / (fit + 1))
                    cost = left / (fit + 1)
            if now > deadline:  # out of time: re-measure the model's cliques with the rest (reserve included)
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
            done += 1
        left = ctx.rho - ctx.rho_used
        if left > 1e-12 * ctx.rho:  # out of time, or the reserve: every measured marginal again
            again = first + list(dict.fromkeys(ctx.selected))
            last = math.sqrt((len(again) + len(grouped)) / (2.0 * left))
            ctx.measure(again, last, "aim: final marginals")
            if grouped:
                ctx.measure(list(grouped), last, "aim: final target pairs (grouped)", grouped)
                if cfg.target_shrink:
                    shrink_last(ctx, len(grouped))
