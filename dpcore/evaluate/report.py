"""One call that scores a synthetic set the way the Compare and Privacy pages show it.

Why one entry point: the CLI, the Runs page ("export a report") and sweeps all want the same
numbers, in a JSON-able dict, with the time each part took. The parts (`score_utility`,
`score_marginals`, `score_mia`) return the full results; `dpcore.report` draws its figures from
the same calls, so each score is defined once.
"""
from __future__ import annotations

import time

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter

PARTS = ("utility", "marginals", "mia")


def score_utility(synthetic: Dataset, train: Dataset, test: Dataset, *, seed: int = 0):
    """Train on synthetic, test on real (with the train-on-real reference): a UtilityResult, or
    None when the synthetic or test set has no labels."""
    if synthetic.labels is None or test.labels is None:
        return None
    from dpcore.evaluate.utility import utility_scores

    return utility_scores(synthetic, test, real_train=train, seed=seed)


def score_marginals(synthetic: Dataset, train: Dataset, *, max_columns: int = 20) -> dict:
    """1-way TVD per column ("one_way") and its mean ("tvd_1way"), the mean 2-way TVD ("tvd_2way")
    and its column-pair matrix ("matrix", a DataFrame), real `train` vs `synthetic`."""
    from dpcore.evaluate.marginals import one_way_tvd, two_way_tvd

    one = one_way_tvd(train, synthetic)
    mean2, matrix = two_way_tvd(train, synthetic, max_columns=max_columns)
    vals = np.fromiter(one.values(), dtype=np.float64)
    return {"one_way": one, "tvd_1way": float(vals.mean()) if vals.size else float("nan"),
            "tvd_2way": mean2, "matrix": matrix}


def score_mia(synthetic: Dataset, train: Dataset, test: Dataset, *, n_targets: int = 1000, seed: int = 0,
              delta: float | None = None):
    """The Monte Carlo membership attack (members = `train`) as an MIAResult: PCA-40 features on
    images, raw features otherwise; `delta` (0 for non-private models) sets its ε lower bound."""
    from dpcore.evaluate.mia import monte_carlo_mia

    return monte_carlo_mia(synthetic, train, test, n_targets=n_targets,
                           features="pca40" if train.is_image else "raw", seed=seed, delta=delta or 0.0)


def evaluate_all(synthetic: Dataset, train: Dataset, test: Dataset, *, ledger=None, delta: float | None = None,
                 n_targets: int = 1000, seed: int = 0, include=PARTS, max_columns: int = 20) -> dict:
    """Utility, marginals and MIA of `synthetic` against the real `train`/`test` splits.

    Returns {"utility": {"classifiers", "mean", "reference", ...}, "marginals": {"tvd_1way" (mean
    over columns), "tvd_1way_max", "tvd_2way" (mean over pairs), ...}, "mia": {"auc",
    "eps_lower_bound", "outlier_score", ...}, "privacy": {"epsilon", "delta", "best_advantage"}
    "mia_consistent"} (only with a ledger and a delta; ε needs an importable accountant),
    "seconds" (total), "timings" (per part), "notes" (when a part was skipped)}. MIA uses PCA-40 features on images, raw features otherwise.
    """
    unknown = set(include) - set(PARTS)
    if unknown:
        raise InvalidParameter(f"include must name parts from {PARTS}, got {sorted(unknown)}")
    t0 = time.perf_counter()
    out: dict = {}
    timings: dict[str, float] = {}

    notes: list[str] = []
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
        vals = np.fromiter(m["one_way"].values(), dtype=np.float64)
        out["marginals"] = {"tvd_1way": m["tvd_1way"], "tvd_1way_max": float(vals.max()),
                            "tvd_2way": m["tvd_2way"], "columns_2way": list(m["matrix"].columns)}
        if not train.is_image:
            out["marginals"]["tvd_1way_columns"] = m["one_way"]
        timings["marginals"] = time.perf_counter() - t

    if "mia" in include:
        t = time.perf_counter()
        res = score_mia(synthetic, train, test, n_targets=n_targets, seed=seed, delta=delta)
        d = res.to_dict()
        d.pop("curve")
        out["mia"] = d
        timings["mia"] = time.perf_counter() - t

    if ledger is not None and delta is not None and len(list(ledger)):
        out["privacy"] = _privacy(ledger, delta)
        eps = out["privacy"].get("epsilon")
        if eps is not None and "mia" in out:
            # An attack's conservative lower bound above the accountant's ε means a bug somewhere
            # (in the model's ledger, the accountant, or the evaluation split).
            out["privacy"]["mia_consistent"] = bool(out["mia"]["eps_lower_bound"] <= eps + 1e-9)
    if notes:
        out["notes"] = notes

    out["timings"] = timings
    out["seconds"] = time.perf_counter() - t0
    return out


def _privacy(ledger, delta: float) -> dict:
    """ε from the accountant (lazy import: the accountant may not be installed yet)."""
    try:
        from dpcore.privacy import accountant  # noqa: PLC0415
    except ImportError:
        return {"delta": delta, "epsilon": None, "note": "accountant not available"}
    from dpcore.evaluate.bounds import best_advantage

    eps = float(accountant.epsilon(ledger, delta))
    return {"epsilon": eps, "delta": delta, "best_advantage": best_advantage(eps, delta)}
