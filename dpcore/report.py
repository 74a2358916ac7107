"""A fitted run's evaluation and its one-file HTML report (no Streamlit here).

Why: the Compare, Privacy and Runs pages, notebooks and the CLI all want the same synthetic sample,
the same scores and the same figures for a run; this module loads a run once (`RunBundle`), scores
it through `dpcore.evaluate.scoring` and draws with `dpcore.figures`, keeps the numbers in the run's
`evaluation.json` (so the runs table shows utility and the best attack without re-evaluating),
and builds the run's two HTML exports through `dpcore.release` (shareable and private).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpcore.runs.evaluation import (  # noqa: F401 - the run's saved scores, re-exported for pages and notebooks
    EVAL_FILE,
    MAX_SYNTHETIC,
    RunBundle,
    attack_run,
    attacks,
    headline,
    load_bundle,
    load_evaluation,
    save_evaluation,
    score,
)

NO_TEST = ("none: the model was fitted on every row (test_size 0), so utility (train on synthetic, test "
           "on real) and membership attacks have no held-out rows")


def weak_run_advice(bundle: RunBundle) -> str:
    """What to try when the run's synthetic rows do not predict the target: the recommended model,
    ε, epochs or the schema, each only when it is not already at its limit
    (dpcore.models.recommend.weak_run_advice), read from the run's resolved settings."""
    from dpcore.models.params import config_to_dict
    from dpcore.models.recommend import weak_run_advice as advice

    config = getattr(bundle.model, "config", None)
    params = {**bundle.run.config.params, **(config_to_dict(config) if config is not None else {})}
    return advice(bundle.run.config.model, params, bundle.train)


# ----------------------------------------------------------------------------- pieces
# Each piece scores through `dpcore.evaluate.scoring` (the path `evaluate_all` takes) and keeps the
# full result (curves, matrices) that the figures need.
def utility(bundle: RunBundle, seed: int = 0):
    """(UtilityResult, table figure), or (None, None) when the data has no labels."""
    from dpcore.evaluate.scoring import score_utility
    from dpcore.figures import utility_table_figure

    res = score_utility(bundle.synthetic, bundle.train, bundle.test, seed=seed)
    return (None, None) if res is None else (res, utility_table_figure(res))


def marginals(bundle: RunBundle, max_columns: int = 20) -> dict:
    """1-way TVD per column, 2-way TVD matrix + heatmap (train vs synthetic), the quality summary
    built on them, and the stored numbers."""
    from dpcore.evaluate.quality import quality_summary
    from dpcore.evaluate.scoring import marginal_numbers, score_marginals
    from dpcore.figures import two_way_heatmap

    m = score_marginals(bundle.synthetic, bundle.train, max_columns=max_columns)
    return {"one_way": m["one_way"], "tvd_1way": m["tvd_1way"], "tvd_2way": float(m["tvd_2way"]),
            "heatmap": two_way_heatmap(m["matrix"]), "quality": quality_summary(m["one_way"], m["matrix"]),
            "numbers": marginal_numbers(m, per_column=not bundle.train.is_image)}


def audit_run(bundle: RunBundle, canaries: int, confidence: float = 0.95, callback=None) -> dict:
    """The canary audit of the run's training algorithm (its model and settings, its training rows)."""
    from dpcore.evaluate.attacks.canary import canary_audit

    res = canary_audit(bundle.run.config.model, dict(bundle.run.config.params), bundle.train, canaries,
                       confidence=confidence, callback=callback)
    return res.to_dict()


def attack_figure(runs: Sequence, *, log_fpr: bool = False, compact: bool = False):
    """Attack curves of `RunCurves` (see `run_curves`), each run with its own bounds (`compact`:
    legend entries "side · attack · AUC" under 40 characters)."""
    from dpcore.figures import attack_curves_figure

    return attack_curves_figure(list(runs), log_fpr=log_fpr, compact=compact)


def run_bounds(ledger, delta: float) -> list:
    """The bound curves (label, α, β) a private run's ledger implies ([] for an empty ledger)."""
    from dpcore.evaluate import bound_curves

    return bound_curves(ledger, delta) if ledger is not None and len(list(ledger)) else []


def run_labels(bundles) -> list[str]:
    """Short legend names of runs (model, ε, the settings that differ between them)."""
    from dpcore.figures import short_labels

    return short_labels([{"model": b.run.config.model, "epsilon": b.run.epsilon if b.private else math.inf,
                          "params": dict(b.run.config.params)} for b in bundles])


def _label(bundle) -> str:
    return run_labels([bundle])[0]


def run_curves(bundle: RunBundle, results, label: str | None = None) -> Any:
    """One run on the attack plot: its results and, for a private run, its own (ε, δ) bounds."""
    from dpcore.figures import RunCurves

    ledger = bundle.run.ledger()
    bounds = run_bounds(ledger, bundle.delta) if bundle.private and not bundle.seeded_noise else []
    return RunCurves(label or bundle.run.name, results, bounds, bundle.run.name)


LATENT_ROWS, LATENT_SYNTHETIC = 3000, 1000  # real and synthetic rows the latent view encodes (at most)


def latent(bundle: RunBundle, method: str = "pca", max_rows: int = LATENT_ROWS, seed: int = 0):
    """Latent codes of real training rows with the model's prior (None if the model has no encoder)."""
    from dpcore.figures import latent_figure

    model = bundle.model
    if not hasattr(model, "encode"):
        return None
    train = bundle.train
    idx = np.sort(np.random.default_rng(seed).choice(train.n, min(train.n, max_rows), replace=False))
    part = train.subset(idx)
    codes = model.encode(part)
    prior = model.latent_prior() if hasattr(model, "latent_prior") else None
    syn = bundle.synthetic
    syn_codes = model.encode(syn.subset(np.arange(min(syn.n, LATENT_SYNTHETIC)))) if syn.n else None
    return latent_figure(codes, part.labels, prior=prior, synthetic_codes=syn_codes, method=method,
                         label_names=train.label_names, seed=seed)


def samples_figures(bundle: RunBundle, n: int = 64) -> dict:
    """Image grids of synthetic and real training rows and the synthetic class means ({} for tables)."""
    from dpcore.figures import class_mean_images_figure, image_grid_figure

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


def evaluate_run(bundle: RunBundle, *, attack_names=None, n_targets: int = 1000, seed: int = 0) -> dict:
    """Utility, marginals and the attack ladder for a run; saves the numbers (the same keys
    `dpcore.evaluate.evaluate_all` returns) and returns them with the figures and the attack results."""
    util, util_fig = utility(bundle, seed=seed)
    marg = marginals(bundle)
    if bundle.test is None:  # fitted on every row: no non-members to attack, no hold-out to test on
        ladder = None
        summary = {"marginals": marg["numbers"], "test": NO_TEST,
                   "attacks": {"best": None, "skipped": {"all": NO_TEST}, "attacks": []}}
    else:
        ladder = attacks(bundle, attack_names, n_targets=n_targets, seed=seed)
        summary = {"marginals": marg["numbers"], "attacks": ladder.summary()}
    if util is not None:
        summary["utility"] = util.to_dict()
    from dpcore.evaluate.checks import synthetic_warnings

    summary["warnings"] = synthetic_warnings(bundle.synthetic, bundle.train, bundle.test, util,
                                             advice=weak_run_advice(bundle))
    save_evaluation(bundle.run.path, **summary)
    return {"summary": summary, "utility": util, "utility_figure": util_fig, "heatmap": marg["heatmap"],
            "attacks": ladder}


# ----------------------------------------------------------------------------- the HTML reports
def run_numbers(bundle: RunBundle, evaluation: dict | None = None) -> dict[str, Any]:
    """The report's table: what was trained, on what, with which ε, and the scores."""
    run = bundle.run
    s = run.summary()
    ev = evaluation if evaluation is not None else load_evaluation(run.path)
    h = headline(ev)
    nums: dict[str, Any] = {"run": s.name, "model": s.model, "dataset": s.dataset, "status": s.status,
                            "ε (accountant)": s.epsilon, "δ": s.delta if bundle.private else "—",
                            "training rows": bundle.train.n, "test rows": 0 if bundle.test is None else bundle.test.n,
                            "synthetic rows": bundle.synthetic.n}
    if h["utility"] is not None:
        nums[f"usefulness: {h['utility_metric']} (synthetic → real)"] = float(h["utility"])
        if h["reference"] is not None:
            nums[f"reference: {h['utility_metric']} (real → real)"] = float(h["reference"])
        if h["chance"] is not None:
            nums[f"{h['utility_metric']} of guessing"] = float(h["chance"])
        from dpcore.release_words import shared_score

        found = shared_score(bundle)
        if found is not None and found[0].balanced_accuracy is not None:
            from dpcore.evaluate.usefulness import noisy_text

            nums["usefulness shared in the release (the same number, with noise)"] = noisy_text(
                found[0].balanced_accuracy, found[0].balanced_plus_minus)
    if h["tvd_2way"] is not None:
        nums["2-way marginal TVD (mean)"] = float(h["tvd_2way"])
    if h["attack"] is not None:
        nums["best membership attack"] = h["attack"]
        nums["membership attack AUC"] = float(h["attack_auc"])
        nums["empirical ε lower bound"] = float(h["attack_eps_lower_bound"])
        if h["attack_consistent"] is not None:
            nums["consistent with the accountant's ε"] = "yes" if h["attack_consistent"] else \
                "NO: the attack proves more than the accountant allows (a bug)"
    return nums


def result_summary(bundle: RunBundle, evaluation: dict) -> list[tuple[str, str]]:
    """The private report's summary lines after model, data and ε: utility against the real data
    and the strongest attack's AUC, in plain words."""
    from dpcore.evaluate.usefulness import from_saved, sentence

    h = headline(evaluation)
    out = []
    use = from_saved(evaluation.get("utility"))
    if use is not None:
        out.append(("Utility", f"{sentence(use)} A {use.classifier.replace('_', ' ')} trained on synthetic "
                               "rows and tested on real held-out rows, beside the same one trained on the real "
                               "rows; AUROC and the other classifiers are in the utility table."))
    if h["attack_auc"] is not None:
        auc = h["attack_auc"]
        words = ("the attacker learns nothing measurable (an AUC a little below 0.5 is sampling noise "
                 "around 0.5, not extra protection)" if auc < 0.5 else
                 "close to guessing (0.5)" if auc < 0.6 else "the attacker tells members apart")
        out.append(("Strongest membership attack", f"{h['attack']}: AUC {auc:.3f} — {words}. Not covered by ε."))
    return out


def run_report(run_dir, *, kind: str = "shareable", n_targets: int = 1000, seed: int = 0,
               bundle: RunBundle | None = None, rows: int | None = None) -> str:
    """A run's HTML export (`dpcore.release`): "shareable" holds only what ε covers and evaluates
    nothing; "private" evaluates the run (utility, marginals, attack) and holds everything. `rows`:
    synthetic rows in the file's download (default `release.REPORT_ROWS`)."""
    from dpcore import figures, release
    from dpcore.errors import InvalidParameter, check_int

    if kind not in release.KINDS:
        raise InvalidParameter(f"report kind must be one of {', '.join(release.KINDS)}, got {kind!r}")
    rows = release.REPORT_ROWS if rows is None else check_int("rows", rows, minimum=1)
    b = bundle or load_bundle(run_dir)
    if kind == "shareable":
        return release.shareable_report(b, seed=seed, rows=rows)
    ev = evaluate_run(b, n_targets=n_targets, seed=seed)
    ledger = b.run.ledger()
    util = ev["utility"]
    syn = b.synthetic.subset(np.arange(min(rows, b.synthetic.n)))
    events = b.run.metrics()
    figs: list[tuple[str, Any]] = [("Measurements (σ and ε, as in the ledger)" if figures.measures_marginals(events)
                                    else "Training losses (raw, not covered by ε)", figures.progress_figure(events))]
    figs += [(f.layout.title.text, f) for f in samples_figures(b).values()]
    if not syn.is_image:
        figs.append(("Synthetic rows", release.synthetic_rows_section(syn, b.run.name)))
    figs += [("Utility: train on synthetic, test on real", None if util is None else release.utility_table(util)),
             ("2-way marginals", ev["heatmap"])]
    if b.private and len(ledger):
        figs += [("Privacy budget by mechanism", figures.budget_share_figure(ledger, b.delta)),
                 ("Accounting comparison", figures.composition_figure(ledger, b.delta))]
    if ev["attacks"] is not None:
        figs.append(("Membership inference", attack_figure([run_curves(b, ev["attacks"].results, _label(b))])))
    notes = [] if b.train.preprocessing_private else [
        "Preprocessing not covered by ε: some bounds/categories were read from the private data."]
    if not b.private:
        notes.append("This model is not differentially private (ε = ∞).")
        claim = b.model.privacy_claim()  # a model's own claim beside ε = ∞ (L-VAE's scoped certificate)
        if claim is not None:
            notes.append(claim["summary"])
    notes += [f"Warning: {w}" for w in ev["summary"].get("warnings", [])]  # escaped by the page
    summary = release.summary_items(b, n_synthetic=syn.n) + result_summary(b, ev["summary"])
    from dpcore.release_words import private_lead

    return release.private_report(b, run_numbers(b, ev["summary"]), figs, notes, summary,
                                  lead=private_lead(b, syn, ev["summary"]))


def story_report(private_dir, leaky_dir, verdict: str, *, n_targets: int = 1000, seed: int = 0,
                 bundles: tuple[RunBundle, RunBundle] | None = None) -> str:
    """The Story page's two-run export: a private and a non-private run side by side (samples,
    utility, the attack curves under the private run's bounds) and the sentence that sums them up.
    A private report (it holds attack statistics and scores against real data)."""
    import html as _html

    from dpcore import release

    pb, lb = bundles or (load_bundle(private_dir), load_bundle(leaky_dir))
    evs = [evaluate_run(b, n_targets=n_targets, seed=seed) for b in (pb, lb)]
    nums = [run_numbers(b, ev["summary"]) for b, ev in zip((pb, lb), evs)]
    keys = [k for k in nums[0] if not k.startswith("param:")]
    keys += [k for k in nums[1] if k not in keys and not k.startswith("param:")]
    head = "<tr><th></th><th>private</th><th>not private</th></tr>"
    body = "".join(f"<tr><th>{_html.escape(k)}</th><td>{release.fmt(nums[0].get(k, '—'))}</td>"
                   f"<td>{release.fmt(nums[1].get(k, '—'))}</td></tr>" for k in keys)
    sections: list[tuple[str, Any]] = [("Side by side", f"<table>{head}{body}</table>")]
    for label, b in (("private", pb), ("not private", lb)):
        figs = samples_figures(b)
        if "synthetic" in figs:
            sections.append((f"Synthetic samples ({label}: {b.run.name})", figs["synthetic"]))
    for label, ev in (("private", evs[0]), ("not private", evs[1])):
        if ev["utility"] is not None:
            sections.append((f"Utility ({label})", release.utility_table(ev["utility"])))
    sections.append(("Membership inference: both runs under the private run's bounds",
                     attack_figure([run_curves(b, ev["attacks"].results, f"{side}: {lab}") for b, ev, side, lab
                                    in zip((pb, lb), evs, ("private", "not private"), run_labels((pb, lb)))])))
    sections.append(("What ε covers", release.coverage_table(pb.private and not pb.seeded_noise)))
    intro = ("Private report: it contains evaluation against real data and attack statistics, which ε does "
             "not cover. " + verdict)
    return release.page(f"Story: {pb.run.name} vs {lb.run.name}", intro,
                        {"verdict": verdict, "private run": pb.run.name, "non-private run": lb.run.name},
                        sections, private=True)
