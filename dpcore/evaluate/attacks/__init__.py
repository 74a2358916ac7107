"""A ladder of membership-inference attacks, each named by what it sees; one output type for all.

Black box (synthetic rows only, or with reference real rows): `dcr`, `gan-leaks`, `domias`,
`monte-carlo`. The model in hand (the data owner auditing their own model): `loss`, and
`loss-reference` (trains one reference model: costly, opt-in). `critic` (GS-WGAN) is listed but not
available: the critics are not saved with a run. `canary` holds the one-run audit of the training
algorithm (Steinke, Nasr & Jagielski 2023).

Every number here is measured against real data: not covered by ε — data owner only.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from dpcore.errors import InvalidParameter
from dpcore.evaluate.attacks.result import LOW_FPRS, NOT_COVERED, AttackResult, attack_result
from dpcore.evaluate.attacks.targets import Targets, choose_targets


@dataclass(frozen=True)
class AttackInfo:
    name: str
    sees: str
    needs_model: bool = False
    costly: bool = False
    unavailable: str | None = None  # why it cannot run on a saved run (None: it can)


ATTACKS: dict[str, AttackInfo] = {a.name: a for a in (
    AttackInfo("dcr", "synthetic rows"),
    AttackInfo("monte-carlo", "synthetic rows"),
    AttackInfo("gan-leaks", "synthetic rows + reference real rows"),
    AttackInfo("domias", "synthetic rows + reference real rows"),
    AttackInfo("loss", "the model (encoder + decoder)", needs_model=True),
    AttackInfo("loss-reference", "the model + a reference model trained on reference rows",
               needs_model=True, costly=True),
    AttackInfo("critic", "GS-WGAN's critics", needs_model=True,
               unavailable="GS-WGAN's critics are not saved with a run"),
)}
BLACK_BOX = ("dcr", "monte-carlo", "gan-leaks", "domias")
DEFAULT = BLACK_BOX + ("loss",)


def parse_attacks(spec) -> list[str]:
    """'all', 'black-box', 'default' or a comma-separated list of names → names (validated)."""
    if spec is None or spec == "default":
        return list(DEFAULT)
    if isinstance(spec, str):
        if spec == "all":
            return [n for n, a in ATTACKS.items() if a.unavailable is None]
        if spec == "black-box":
            return list(BLACK_BOX)
        spec = [s.strip() for s in spec.split(",") if s.strip()]
    names = list(dict.fromkeys(spec))
    bad = [n for n in names if n not in ATTACKS]
    if bad or not names:
        raise InvalidParameter(f"unknown attack {bad[0] if bad else '(none)'!r}; choose from: "
                               + ", ".join(ATTACKS) + " (or all, black-box, default)")
    return names


def available(name: str, model) -> str | None:
    """None if attack `name` can run against `model`, else why not (one line)."""
    from dpcore.evaluate.attacks.loss import has_loss

    info = ATTACKS[name]
    if info.unavailable:
        return info.unavailable
    if info.needs_model and (model is None or not has_loss(model)):
        return f"{getattr(model, 'name', 'this model')} has no encoder, so no per-record loss"
    return None


def run_attacks(synthetic, train, held_out, model=None, attacks=None, *, n_targets: int = 1000,
                seed: int = 0, delta: float = 0.0, confidence: float = 0.95,
                progress: Callable[[str, int, int], None] | None = None, device: str = "auto"):
    """Run the chosen attacks on one shared set of targets.

    Returns (results: list[AttackResult], skipped: {name: reason}, targets, view). `progress(name,
    i, total)` is called before each attack. `delta` is the run's δ for a private run, 0 otherwise.
    """
    from dpcore.evaluate.attacks import distance, domias, loss

    names = parse_attacks(attacks)
    targets = choose_targets(train, held_out, n_targets, seed)
    view = distance.SyntheticView(targets, synthetic, device=device)
    kw = dict(delta=delta, confidence=confidence)
    runners = {
        "dcr": lambda: distance.dcr(view, **kw),
        "monte-carlo": lambda: distance.monte_carlo(view, **kw),
        "gan-leaks": lambda: distance.gan_leaks(view, **kw),
        "domias": lambda: domias.domias(targets, synthetic, seed=seed, **kw),
        "loss": lambda: loss.loss_attack(model, targets, seed=seed, **kw),
        "loss-reference": lambda: loss.loss_reference_attack(model, targets, seed=seed, **kw),
    }
    results, skipped = [], {}
    for i, name in enumerate(names):
        why = available(name, model)
        if why:
            skipped[name] = why
            continue
        if progress is not None:
            progress(name, i, len(names))
        t0 = time.perf_counter()
        res = runners[name]()
        res.seconds = time.perf_counter() - t0
        res.notes = targets.notes + res.notes
        res.outlier_position = targets.outlier_position
        results.append(res)
    return results, skipped, targets, view


def best(results) -> AttackResult | None:
    """The attack with the largest empirical ε lower bound (AUC breaks ties)."""
    return max(results, key=lambda r: (r.eps_lower_bound, r.auc), default=None)


__all__ = ["ATTACKS", "AttackInfo", "AttackResult", "BLACK_BOX", "DEFAULT", "LOW_FPRS", "NOT_COVERED",
           "Targets", "attack_result", "available", "best", "choose_targets", "parse_attacks", "run_attacks"]
