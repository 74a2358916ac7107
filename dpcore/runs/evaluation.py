"""A run's saved scores (evaluation.json) and the loaded run they are computed on.

Why in the run store: evaluation.json is one of a run's files, read by the runs table, the sweeps,
the Story and the reports alike; scoring a run (a sweep's points, the Story's sides) needs only
these, so `dpcore.runs` never reaches up into `dpcore.report` (which re-exports them and adds the
figures and the HTML exports).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from dpcore.io import finite

EVAL_FILE = "evaluation.json"
MAX_SYNTHETIC = 20_000  # synthetic rows drawn for scoring (as many as training rows, capped)


@dataclass
class RunBundle:
    """A run with its fitted model, its real splits and a seeded synthetic sample."""

    run: Any
    model: Any
    train: Any
    test: Any
    synthetic: Any

    @property
    def private(self) -> bool:
        return bool(getattr(self.model, "private", True))

    @property
    def seeded_noise(self) -> bool:
        """True for a debugging run whose noise is reproducible from its seed (its ε is no guarantee)."""
        return self.run.ledger().reproducible_noise

    @property
    def delta(self) -> float:
        d = self.run.delta
        return d if math.isfinite(d) and d > 0 else float(self.run.config.params.get("delta", 1e-5))


def load_bundle(run_dir, n_samples: int | None = None, seed: int = 0) -> RunBundle:
    """Open a run, load its model and data, draw `n_samples` (default: as many as the model's
    released row count ñ; the training rows for a run without DP (ε = ∞); MAX_SYNTHETIC for a
    private model that releases no ñ (GS-WGAN): the drawn rows are downloadable, covered by ε, and
    their count must not be the private n)."""
    from dpcore.runs.store import Run

    run = Run.load(run_dir)
    model = run.load_model()
    train, test = run.load_data()
    rows = getattr(model, "released_rows", None)
    if rows is None:
        rows = MAX_SYNTHETIC if math.isfinite(run.epsilon) else train.n
    n = min(rows, MAX_SYNTHETIC) if n_samples is None else int(n_samples)
    return RunBundle(run, model, train, test, model.sample(n, seed=seed))


# ----------------------------------------------------------------------------- saved scores
def load_evaluation(run_dir, strict: bool = False) -> dict:
    """The run's saved scores through the checked run-file reader ({} when none). A bad file (a list,
    50 000 nested brackets, a symlink) gives {} — the run listing marks that run unreadable — or,
    with `strict`, the one-line RunError."""
    from dpcore.errors import DPCoreError
    from dpcore.files import read_json
    from dpcore.runs.safety import check_evaluation

    try:
        return check_evaluation(read_json(Path(run_dir) / EVAL_FILE, default={}, base=Path(run_dir)))
    except DPCoreError:
        if strict:
            raise
        return {}


def _nulls(v):
    """NaN scores (and the "nan" strings older files hold) → None, so a missing score is JSON null."""
    if isinstance(v, dict):
        return {k: _nulls(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_nulls(x) for x in v]
    if isinstance(v, np.generic):
        v = v.item()
    if (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and v.lower() in ("nan", "-nan")):
        return None
    return v


score = finite  # a stored score as a finite float, or None (dpcore.io.finite)


def save_evaluation(run_dir, **parts) -> dict:
    """Merge `parts` (e.g. utility=..., mia=...) into the run's evaluation.json (atomic write)."""
    from dpcore.io import atomic_write_json

    d = load_evaluation(run_dir)
    d.update(_nulls(parts))
    d["updated"] = datetime.now().isoformat(timespec="seconds")
    atomic_write_json(Path(run_dir) / EVAL_FILE, d)
    return d


def headline(evaluation: dict) -> dict:
    """The runs table's numbers from a saved evaluation: utility (the one usefulness measure,
    `dpcore.evaluate.usefulness`: its value, metric name, "train on real" reference and chance
    level; None for a score saved before it, so the run is offered for re-scoring), 2-way TVD and
    the best attack of the ladder (name, AUC, ε lower bound, whether that bound is consistent with
    the accountant's ε)."""
    out: dict[str, float | str | bool | None] = {
        "utility": None, "utility_metric": None, "reference": None, "chance": None, "tvd_2way": None,
        "attack": None, "attack_auc": None, "attack_eps_lower_bound": None, "attack_consistent": None}
    u = evaluation.get("utility")
    if u:
        from dpcore.evaluate.usefulness import NAME, from_saved

        use = from_saved(u)
        if use is not None:
            out.update(utility=use.value, utility_metric=NAME, reference=use.reference, chance=use.chance)
    if evaluation.get("marginals"):
        out["tvd_2way"] = score(evaluation["marginals"].get("tvd_2way"))
    best = (evaluation.get("attacks") or {}).get("best")
    if best:
        ok = best.get("consistent_with_epsilon")
        out.update(attack=best.get("name") if isinstance(best.get("name"), str) else None,
                   attack_auc=score(best.get("auc")), attack_eps_lower_bound=score(best.get("epsilon_lower_bound")),
                   attack_consistent=ok if isinstance(ok, bool) else None)
    return out



# ----------------------------------------------------------------------------- scoring a run
def score_numbers(bundle: RunBundle, scores=("utility", "marginals")) -> dict:
    """The numbers of `scores` ("utility", "marginals", "mia": the ladder's black-box rungs) for a
    run, computed through `dpcore.evaluate.scoring` as for a single run and saved with it."""
    from dpcore.evaluate.scoring import score_marginals, score_utility

    path = bundle.run.path
    if "utility" in scores:
        res = score_utility(bundle.synthetic, bundle.train, bundle.test, seed=0)
        if res is None:
            save_evaluation(path, labels=False)
        else:
            save_evaluation(path, utility=res.to_dict())
    if "marginals" in scores:
        m = score_marginals(bundle.synthetic, bundle.train, max_columns=20)
        save_evaluation(path, marginals={"tvd_1way": m["tvd_1way"], "tvd_2way": float(m["tvd_2way"])})
    if "mia" in scores:
        attack_run(bundle, "black-box")
    return load_evaluation(path)


def attacks(bundle: RunBundle, names=None, *, n_targets: int = 1000, seed: int = 0, confidence: float = 0.95,
            progress=None):
    """The attack ladder on the run's synthetic sample (members = its training rows) as AttackScores,
    checked against the accountant's ε (∞ and δ = 0 for a non-private run)."""
    from dpcore.evaluate.scoring import score_attacks

    private = bundle.private
    eps = float(bundle.run.epsilon) if private else math.inf
    return score_attacks(bundle.synthetic, bundle.train, bundle.test, bundle.model, names, n_targets=n_targets,
                         seed=seed, epsilon=eps, delta=bundle.delta if private else 0.0, confidence=confidence,
                         progress=progress)


def attack_run(bundle: RunBundle, names=None, *, n_targets: int = 1000, seed: int = 0, confidence: float = 0.95,
               progress=None) -> dict:
    """The attacks' numbers for a run (the CLI's `attack` output), also saved to its evaluation.json."""
    summary = attacks(bundle, names, n_targets=n_targets, seed=seed, confidence=confidence,
                      progress=progress).summary()
    save_evaluation(bundle.run.path, attacks=summary)
    return summary
