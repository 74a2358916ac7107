"""The one evaluation path: utility, marginals and the attack ladder of a synthetic set, as numbers.

Why one path: the CLI (`evaluate`, `attack`), the app (Compare, Privacy, Runs), the reports and the
benchmarks all score through these functions, so a number means the same thing everywhere.
`score_*` return the full results (curves, matrices, per-target scores) that figures need;
`evaluate_all` returns only JSON-able numbers, which is what a run's evaluation.json stores.

The stored attack is the ladder's best (largest empirical ε lower bound), with whether that bound is
consistent with the accountant's ε: an attack proving more than the accountant allows means a bug
(in a ledger, the accountant or the evaluation split), and a user must see it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter

PARTS = ("utility", "marginals", "attacks")
LABEL = "not covered by ε — data owner only"


def score_utility(synthetic: Dataset, train: Dataset, test: Dataset, *, seed: int = 0):
    """Train on synthetic, test on real (with the train-on-real reference): a UtilityResult with the
    one usefulness measure (`dpcore.evaluate.usefulness`) in `.usefulness`, or None when there is
    no test set (fitted on every row) or the synthetic or test set has no labels."""
    if test is None or synthetic.labels is None or test.labels is None:
        return None
    from dpcore.evaluate.utility import utility_scores

    res = utility_scores(synthetic, test, real_train=train, seed=seed)
    if res.usefulness is None:  # a table: the one usefulness measure, from the released score's counts
        from dpcore.evaluate.released_score import SCORE_CLASSIFIER, held_out_class_counts
        from dpcore.evaluate.usefulness import of_counts

        ref = None if train is None or train.labels is None else held_out_class_counts(train, test, SCORE_CLASSIFIER,
                                                                                        seed)
        target = getattr(getattr(test, "schema", None), "target", None)
        res.usefulness = of_counts(held_out_class_counts(synthetic, test, SCORE_CLASSIFIER, seed), ref,
                                   int(test.n_classes), SCORE_CLASSIFIER,
                                   None if target is None else str(target)).to_dict()
    return res


def score_marginals(synthetic: Dataset, train: Dataset, *, max_columns: int = 20) -> dict:
    """1-way TVD per column ("one_way") and its mean ("tvd_1way"), the mean 2-way TVD ("tvd_2way")
    and its column-pair matrix ("matrix", a DataFrame), real `train` vs `synthetic`."""
    from dpcore.evaluate.marginals import one_way_tvd, two_way_tvd

    one = one_way_tvd(train, synthetic)
    mean2, matrix = two_way_tvd(train, synthetic, max_columns=max_columns)
    vals = np.fromiter(one.values(), dtype=np.float64)
    return {"one_way": one, "tvd_1way": float(vals.mean()) if vals.size else float("nan"),
            "tvd_2way": mean2, "matrix": matrix}


@dataclass
class AttackScores:
    """The attack ladder's results on one shared set of targets (see `dpcore.evaluate.attacks`)."""

    results: list
    skipped: dict[str, str]
    targets: object
    view: object
    epsilon: float | None = None  # the accountant's ε (∞ for a non-private model, None: unknown)
    delta: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def best(self):
        from dpcore.evaluate.attacks import best

        return best(self.results)

    def consistent(self, result) -> bool | None:
        """Whether `result`'s ε lower bound fits under the accountant's (ε, δ) (None: nothing to check)."""
        if self.epsilon is None or not math.isfinite(self.epsilon):
            return None
        return bool(result.consistent_with(self.epsilon, self.delta))

    def summary(self) -> dict:
        """JSON-able: every attack's numbers (no curves), what was skipped, and the best attack."""
        attacks = []
        for r in self.results:
            d = r.to_dict()
            d.pop("curve")
            if (ok := self.consistent(r)) is not None:
                d["consistent_with_epsilon"] = ok
            attacks.append(d)
        top = self.best
        best = None if top is None else {
            "name": top.name, "auc": float(top.auc), "epsilon_lower_bound": float(top.eps_lower_bound),
            "consistent_with_epsilon": self.consistent(top)}
        eps = self.epsilon
        return {"epsilon": "inf" if eps is not None and math.isinf(eps) else eps, "delta": self.delta,
                "label": LABEL, "best": best, "attacks": attacks, "skipped": dict(self.skipped),
                "n_targets": self.targets.n, "reference_rows": self.targets.reference.n}


def score_attacks(synthetic: Dataset, train: Dataset, test: Dataset, model=None, attacks=None, *,
                  epsilon: float | None = None, delta: float = 0.0, n_targets: int = 1000, seed: int = 0,
                  confidence: float = 0.95, progress=None) -> AttackScores:
    """Run the attack ladder (members = `train`, non-members and reference rows = `test`).

    `attacks`: names or a spec (`dpcore.evaluate.attacks.parse_attacks`; default: black box + loss,
    which needs `model`). `epsilon`/`delta`: the accountant's ε and the run's δ for a private model;
    ε = ∞ and δ = 0 for a non-private one (no consistency to check).
    """
    from dpcore.evaluate.attacks import run_attacks

    results, skipped, targets, view = run_attacks(synthetic, train, test, model, attacks, n_targets=n_targets,
                                                  seed=seed, delta=delta, confidence=confidence,
                                                  progress=progress)
    return AttackScores(results, skipped, targets, view, epsilon=epsilon, delta=delta)


def accountant_epsilon(ledger, delta: float | None) -> float | None:
    """The accountant's ε of a non-empty ledger at δ (None without a ledger or δ)."""
    if ledger is None or delta is None or not len(list(ledger)):
        return None
    from dpcore.privacy import accountant

    return float(accountant.epsilon(ledger, delta))


def marginal_numbers(m: dict, *, per_column: bool) -> dict:
    """The stored part of `score_marginals`: means, the worst column, the pair columns."""
    vals = np.fromiter(m["one_way"].values(), dtype=np.float64)
    out = {"tvd_1way": m["tvd_1way"], "tvd_1way_max": float(vals.max()) if vals.size else float("nan"),
           "tvd_2way": float(m["tvd_2way"]), "columns_2way": [str(c) for c in m["matrix"].columns]}
    if per_column:
        out["tvd_1way_columns"] = m["one_way"]
    return out


def evaluate_all(synthetic: Dataset, train: Dataset, test: Dataset, *, model=None, ledger=None,
                 delta: float | None = None, attacks=None, n_targets: int = 1000, seed: int = 0,
                 include=PARTS, max_columns: int = 20) -> dict:
    """Utility, marginals and the attack ladder of `synthetic` against the real `train`/`test` splits.

    Returns {"utility": {"classifiers", "mean", "reference", ...}, "marginals": {"tvd_1way" (mean over
    columns), "tvd_1way_max", "tvd_2way" (mean over pairs), ...}, "attacks": {"best": {"name", "auc",
    "epsilon_lower_bound", "consistent_with_epsilon"}, "attacks": [...], ...}, "privacy": {"epsilon",
    "delta", "best_advantage"} (with a ledger and a δ), "seconds", "timings" (per part), "notes"
    (when a part was skipped)}. Without a ledger the model counts as non-private (ε = ∞).
    """
    unknown = set(include) - set(PARTS)
    if unknown:
        raise InvalidParameter(f"include must name parts from {PARTS}, got {sorted(unknown)}")
    t0 = time.perf_counter()
    out: dict = {}
    timings: dict[str, float] = {}
    notes: list[str] = []
    eps = accountant_epsilon(ledger, delta)
    if eps is not None:
        from dpcore.evaluate.bounds import best_advantage

        out["privacy"] = {"epsilon": eps, "delta": delta, "best_advantage": best_advantage(eps, delta)}

    if "utility" in include:
        t = time.perf_counter()
        util = score_utility(synthetic, train, test, seed=seed)
        if util is None:
            notes.append("utility skipped: synthetic or test set has no labels")
        else:
            out["utility"] = util.to_dict()
            timings["utility"] = time.perf_counter() - t

    if "marginals" in include:
        t = time.perf_counter()
        m = score_marginals(synthetic, train, max_columns=max_columns)
        out["marginals"] = marginal_numbers(m, per_column=not train.is_image)
        timings["marginals"] = time.perf_counter() - t

    if "attacks" in include:
        t = time.perf_counter()
        private = eps is not None
        res = score_attacks(synthetic, train, test, model, attacks, n_targets=n_targets, seed=seed,
                            epsilon=eps if private else math.inf, delta=delta if private else 0.0)
        out["attacks"] = res.summary()
        timings["attacks"] = time.perf_counter() - t

    if notes:
        out["notes"] = notes
    out["timings"] = timings
    out["seconds"] = time.perf_counter() - t0
    return out
