"""A fitted run's evaluation and its one-file HTML report (no Streamlit here).

Why: the Compare, Privacy and Runs pages, notebooks and the CLI all want the same synthetic sample,
the same scores and the same figures for a run; this module loads a run once (`RunBundle`), calls
`dpcore.evaluate` / `dpcore.plots` for every number and figure, keeps a small `evaluation.json`
summary in the run folder (so the runs table shows utility and attack AUC without re-evaluating),
and builds the run's two HTML exports through `dpcore.release` (shareable and private).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

import numpy as np

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
    def delta(self) -> float:
        d = self.run.delta
        return d if math.isfinite(d) and d > 0 else float(self.run.config.params.get("delta", 1e-5))


def load_bundle(run_dir, n_samples: int | None = None, seed: int = 0) -> RunBundle:
    """Open a run, load its model and data, draw `n_samples` (default: as many as the model's
    released row count ñ, or the training rows for models that publish none, e.g. ε = ∞)."""
    from dpcore.runs import Run

    run = Run.load(run_dir)
    model = run.load_model()
    train, test = run.load_data()
    rows = getattr(model, "released_rows", None) or train.n  # never the private n when ñ exists
    n = min(rows, MAX_SYNTHETIC) if n_samples is None else int(n_samples)
    return RunBundle(run, model, train, test, model.sample(n, seed=seed))


# ----------------------------------------------------------------------------- saved scores
def load_evaluation(run_dir) -> dict:
    try:
        return json.loads((Path(run_dir) / EVAL_FILE).read_text())
    except (OSError, ValueError):
        return {}


def save_evaluation(run_dir, **parts) -> dict:
    """Merge `parts` (e.g. utility=..., mia=...) into the run's evaluation.json (atomic write)."""
    from dpcore.io import atomic_write_json

    d = load_evaluation(run_dir)
    d.update(parts)
    d["updated"] = datetime.now().isoformat(timespec="seconds")
    atomic_write_json(Path(run_dir) / EVAL_FILE, d)
    return d


def headline(evaluation: dict) -> dict:
    """The runs table's numbers from a saved evaluation: utility (mean accuracy for images, mean
    AUROC for tables), its "train on real" reference, 2-way TVD and the attack's AUC."""
    out = {"utility": None, "utility_metric": None, "reference": None, "tvd_2way": None, "mia_auc": None}
    u = evaluation.get("utility")
    if u:
        metric = "accuracy" if u.get("kind") == "image" else "auroc"
        out.update(utility=u.get("mean", {}).get(metric), utility_metric=metric,
                   reference=(u.get("reference") or {}).get("mean", {}).get(metric))
    if evaluation.get("marginals"):
        out["tvd_2way"] = evaluation["marginals"].get("tvd_2way")
    if evaluation.get("mia"):
        out["mia_auc"] = evaluation["mia"].get("auc")
    return out


# ----------------------------------------------------------------------------- pieces
# Each piece scores with the same call `dpcore.evaluate.evaluate_all` makes, and keeps the full
# result (curves, matrices) that the figures need.
def utility(bundle: RunBundle, seed: int = 0):
    """(UtilityResult, table figure), or (None, None) when the data has no labels."""
    from dpcore.evaluate import utility_table_figure
    from dpcore.evaluate.report import score_utility

    res = score_utility(bundle.synthetic, bundle.train, bundle.test, seed=seed)
    return (None, None) if res is None else (res, utility_table_figure(res))


def marginals(bundle: RunBundle, max_columns: int = 20) -> dict:
    """1-way TVD per column, 2-way TVD matrix + heatmap (train vs synthetic)."""
    from dpcore.evaluate import two_way_heatmap
    from dpcore.evaluate.report import score_marginals

    m = score_marginals(bundle.synthetic, bundle.train, max_columns=max_columns)
    return {"one_way": m["one_way"], "tvd_1way": m["tvd_1way"], "tvd_2way": float(m["tvd_2way"]),
            "heatmap": two_way_heatmap(m["matrix"])}


def mia(bundle: RunBundle, n_targets: int = 1000, seed: int = 0):
    """The Monte Carlo membership attack on the run's synthetic sample (train = members)."""
    from dpcore.evaluate.report import score_mia

    return score_mia(bundle.synthetic, bundle.train, bundle.test, n_targets=n_targets, seed=seed,
                     delta=bundle.delta if bundle.private else 0.0)


def mia_figure(results: Sequence[tuple[str, Any, Any]], delta: float | None = None):
    """Attack curves of (label, MIAResult, ledger-or-None) with the bounds of the first private run."""
    from dpcore.evaluate import bound_curves, mia_tradeoff_figure

    bounds = []
    for label, _, ledger in results:
        if ledger is not None and len(list(ledger)):
            bounds = [(f"{lab} — {label}" if len(results) > 1 else lab, a, b)
                      for lab, a, b in bound_curves(ledger, delta or 1e-5)]
            break
    return mia_tradeoff_figure([(label, res) for label, res, _ in results], bounds)


def latent(bundle: RunBundle, method: str = "pca", max_rows: int = 3000, seed: int = 0):
    """Latent codes of real training rows with the model's prior (None if the model has no encoder)."""
    from dpcore.evaluate import latent_figure

    model = bundle.model
    if not hasattr(model, "encode"):
        return None
    train = bundle.train
    idx = np.sort(np.random.default_rng(seed).choice(train.n, min(train.n, max_rows), replace=False))
    part = train.subset(idx)
    codes = model.encode(part)
    prior = model.latent_prior() if hasattr(model, "latent_prior") else None
    syn = bundle.synthetic
    syn_codes = model.encode(syn.subset(np.arange(min(syn.n, 1000)))) if syn.n else None
    return latent_figure(codes, part.labels, prior=prior, synthetic_codes=syn_codes, method=method,
                         label_names=train.label_names, seed=seed)


def samples_figures(bundle: RunBundle, n: int = 64) -> dict:
    """Image grids of synthetic and real training rows and the synthetic class means ({} for tables)."""
    from dpcore.evaluate import class_mean_images_figure, image_grid_figure

    syn = bundle.synthetic
    if not syn.is_image:
        return {}
    out = {"synthetic": image_grid_figure(syn, n=n, seed=0), "real": image_grid_figure(bundle.train, n=n, seed=0)}
    out["synthetic"].update_layout(title="Synthetic samples")
    out["real"].update_layout(title="Real training rows")
    if syn.labels is not None and syn.n:
        out["class_means"] = class_mean_images_figure(syn)
        out["class_means"].update_layout(title="Synthetic: mean image per generated class")
    return out


def evaluate_run(bundle: RunBundle, *, n_targets: int = 1000, seed: int = 0) -> dict:
    """Utility, marginals and the attack for a run; saves the summary and returns it with figures."""
    util, util_fig = utility(bundle, seed=seed)
    marg = marginals(bundle)
    attack = mia(bundle, n_targets=n_targets, seed=seed)
    summary = {"marginals": {"tvd_1way": marg["tvd_1way"], "tvd_2way": marg["tvd_2way"]},
               "mia": {k: v for k, v in attack.to_dict().items() if k != "curve"}}
    if util is not None:
        summary["utility"] = util.to_dict()
    save_evaluation(bundle.run.path, **summary)
    return {"summary": summary, "utility_figure": util_fig, "heatmap": marg["heatmap"], "mia": attack}


# ----------------------------------------------------------------------------- the HTML reports
def run_numbers(bundle: RunBundle, evaluation: dict | None = None) -> dict[str, Any]:
    """The report's table: what was trained, on what, with which ε, and the scores."""
    run = bundle.run
    s = run.summary()
    ev = evaluation if evaluation is not None else load_evaluation(run.path)
    h = headline(ev)
    nums: dict[str, Any] = {"run": s.name, "model": s.model, "dataset": s.dataset, "status": s.status,
                            "ε (accountant)": s.epsilon, "δ": s.delta if bundle.private else "—",
                            "training rows": bundle.train.n, "test rows": bundle.test.n,
                            "synthetic rows": bundle.synthetic.n}
    if h["utility"] is not None:
        nums[f"utility: mean {h['utility_metric']} (synthetic → real)"] = float(h["utility"])
        if h["reference"] is not None:
            nums[f"reference: mean {h['utility_metric']} (real → real)"] = float(h["reference"])
    if h["tvd_2way"] is not None:
        nums["2-way marginal TVD (mean)"] = float(h["tvd_2way"])
    if h["mia_auc"] is not None:
        nums["membership attack AUC"] = float(h["mia_auc"])
        nums["empirical ε lower bound"] = float(ev["mia"].get("eps_lower_bound", float("nan")))
    for k, v in sorted(run.config.params.items()):
        nums[f"param: {k}"] = v
    return nums


def run_report(run_dir, *, kind: str = "shareable", n_targets: int = 1000, seed: int = 0,
               bundle: RunBundle | None = None) -> str:
    """A run's HTML export (`dpcore.release`): "shareable" holds only what ε covers and evaluates
    nothing; "private" evaluates the run (utility, marginals, attack) and holds everything."""
    from dpcore import plots, release
    from dpcore.errors import InvalidParameter

    if kind not in release.KINDS:
        raise InvalidParameter(f"report kind must be one of {', '.join(release.KINDS)}, got {kind!r}")
    b = bundle or load_bundle(run_dir)
    if kind == "shareable":
        return release.shareable_report(b, seed=seed)
    ev = evaluate_run(b, n_targets=n_targets, seed=seed)
    ledger = b.run.ledger()
    figs: list[tuple[str, Any]] = [("Training losses (raw, not covered by ε)",
                                    plots.loss_curves_figure(b.run.metrics()))]
    figs += [(f.layout.title.text, f) for f in samples_figures(b).values()]
    figs += [("Utility: train on synthetic, test on real", ev["utility_figure"]),
             ("2-way marginals", ev["heatmap"])]
    if b.private and len(ledger):
        figs += [("Privacy budget by mechanism", plots.budget_share_figure(ledger, b.delta)),
                 ("Accounting comparison", plots.composition_figure(ledger, b.delta))]
    figs.append(("Membership inference", mia_figure([(b.run.name, ev["mia"], ledger if b.private else None)],
                                                    b.delta)))
    notes = [] if b.train.preprocessing_private else [
        "Preprocessing not covered by ε: some bounds/categories were read from the private data."]
    if not b.private:
        notes.append("This model is not differentially private (ε = ∞).")
    return release.private_report(b, run_numbers(b, ev["summary"]), figs, notes)
