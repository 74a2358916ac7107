"""Per-run results, cached: the loaded run (bundle) and each evaluation the pages draw.

Keyed by the run's folder (`key`) + `run_mtime`: re-opening a page never re-evaluates; retraining or
renaming does, and two workspaces' runs of one name never share an entry (class mode).
Every number and figure comes from `dpcore.report` (looked up at call time, so it can be patched);
scores a page computes are also saved to the run's evaluation.json for the runs table.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import streamlit as st

from dpcore.ui.workspace import is_published, run_path


def run_mtime(path) -> float:
    """Latest change of a run's own files (not evaluation.json): the key that invalidates caches."""
    p = Path(path)
    times = [0.0]
    for name in ("config.json", "status.json", "ledger.json", "metrics.jsonl", "model/model.json",
                 "model/weights.safetensors"):
        with contextlib.suppress(OSError):
            times.append((p / name).stat().st_mtime)
    return max(times)


def key(name: str, root: Path | None = None) -> tuple[str, float]:
    """(folder, mtime): the arguments of the cached helpers below for run `name` in `root` (default:
    the folder the session looks at). The folder, not the name, keys the caches: they are shared by
    every session, and two workspaces may hold runs of the same name."""
    folder = run_path(name, root).resolve()
    return str(folder), run_mtime(folder)


@st.cache_resource(max_entries=6, show_spinner="Loading the run and drawing synthetic rows…")
def _bundle(folder: str, mtime: float):
    from dpcore.report import load_bundle

    return load_bundle(Path(folder))


def bundle(name: str):
    """The run's model, real splits and synthetic sample (shared read-only; never mutate)."""
    return _bundle(*key(name))


def _save(b, **scores) -> None:
    """Keep a page's scores with the run (never inside a published run: students only read those)."""
    from dpcore import report

    if not is_published(b.run.path):
        report.save_evaluation(b.run.path, **scores)


@st.cache_data(max_entries=32, show_spinner="Training classifiers on synthetic data, testing on real…")
def cached_utility(name: str, mtime: float):
    """(UtilityResult, figure) — also saved to the run's evaluation.json."""
    from dpcore import report

    b = _bundle(name, mtime)
    res, fig = report.utility(b)
    if res is not None:
        _save(b, utility=res.to_dict())
    return res, fig


@st.cache_data(max_entries=32, show_spinner=False)
def synthetic_warnings(name: str, mtime: float) -> list[str]:
    """Plain-words warnings (a class never generated, a collapsed column, utility at chance)."""
    from dpcore.evaluate.checks import synthetic_warnings as check
    from dpcore.report import weak_run_advice

    b = _bundle(name, mtime)
    res = cached_utility(name, mtime)[0] if b.synthetic.labels is not None and b.test.labels is not None else None
    return check(b.synthetic, b.train, b.test, res, advice=weak_run_advice(b))


@st.cache_data(max_entries=32, show_spinner="Checking the synthetic rows…")
def fit_warnings(name: str, mtime: float) -> tuple[list[str], dict | None]:
    """The Train page's after-run checks (what `train` prints): (warnings, target check)."""
    from dpcore.evaluate.checks import fit_warnings as check
    from dpcore.report import weak_run_advice

    b = _bundle(name, mtime)
    return check(b.synthetic, b.train, b.test, advice=weak_run_advice(b))


@st.cache_data(max_entries=32, show_spinner="Comparing marginals…")
def cached_marginals(name: str, mtime: float) -> dict:
    from dpcore import report

    b = _bundle(name, mtime)
    out = report.marginals(b)
    _save(b, marginals=out["numbers"])
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def one_way(name: str, mtime: float, column: str):
    from dpcore.figures import one_way_figure

    b = _bundle(name, mtime)
    return one_way_figure(b.train, b.synthetic, column)


@st.cache_data(max_entries=32, show_spinner="Drawing samples…")
def samples(name: str, mtime: float) -> list:
    from dpcore import report

    return report.samples_figures(_bundle(name, mtime))


@st.cache_data(max_entries=32, show_spinner="Projecting latent codes…")
def latent(name: str, mtime: float, method: str):
    from dpcore import report

    return report.latent(_bundle(name, mtime), method=method)


@st.cache_data(max_entries=16, show_spinner="Building the report…")
def report_html(name: str, mtime: float, kind: str = "shareable", rows: int | None = None) -> str:
    """The run's HTML export: "shareable" (only what ε covers) or "private" (data owner only), with
    `rows` synthetic rows in its CSV download (default `dpcore.release.REPORT_ROWS`)."""
    from dpcore import report

    return report.run_report(Path(name), kind=kind, bundle=_bundle(name, mtime), rows=rows)


@st.cache_data(max_entries=8, show_spinner=False)
def synthetic_csv(name: str, mtime: float) -> bytes:
    """The run's synthetic sample in the original columns, as CSV bytes (formula cells neutralised)."""
    from dpcore.runs.export import csv_bytes

    return csv_bytes(_bundle(name, mtime).synthetic)


def attack_estimate_seconds(name: str, attacks: tuple[str, ...]) -> float:
    """A rough time for the attacks before running them: distances scale with synthetic rows ×
    targets × features; the reference model with the run's own training time × reference/training rows."""
    b = bundle(name)
    n_t = min(1000, b.train.n, b.test.n // 2)
    d = min(b.train.n_features, 40 if b.train.n_features > 100 else b.train.n_features)
    secs = 1.0 + b.synthetic.n * 2 * n_t * max(d, 10) / 2e8
    if "loss-reference" in attacks:
        from dpcore.evaluate.attacks.loss import reference_cost_seconds

        trained = b.run.status().get("seconds")
        secs += reference_cost_seconds(trained, b.train.n, max(0, b.test.n - n_t)) or 60.0
    return secs


@st.cache_data(max_entries=16, show_spinner=False)
def attacks(name: str, mtime: float, names: tuple[str, ...]):
    """(results, skipped, exposed) of the attack ladder on run `name` — cached per run and attacks; the
    numbers (with the best attack) are saved to the run's evaluation.json for the runs table.

    exposed: the 8 targets the best attack is surest about, with their nearest synthetic rows."""
    import numpy as np

    from dpcore import report

    b = _bundle(name, mtime)
    bar = st.progress(0.0, text="Starting the attacks…")

    def progress(attack, i, total):
        bar.progress(i / max(1, total), text=f"Attack {i + 1} of {total}: {attack}…")

    scores = report.attacks(b, list(names), progress=progress)
    bar.empty()
    _save(b, attacks=scores.summary())
    results, skipped, targets, view = scores.results, scores.skipped, scores.targets, scores.view
    top = scores.best
    exposed = None
    if top is not None:
        scores = np.concatenate([top.member_scores, top.non_member_scores])
        pos = np.argsort(-scores, kind="stable")[:8]
        near = view.nearest_synthetic_rows(pos)[:, 0]
        feats = targets.features()
        exposed = {"attack": top.name, "targets": feats[pos], "nearest": b.synthetic.features[near],
                   "member": (pos < targets.n).tolist(), "image_shape": b.train.image_shape,
                   "outlier_rank": None, "n_scored": len(scores)}
        if targets.outlier_position is not None:  # 1 = the target the attacker is surest about
            exposed["outlier_rank"] = int(1 + (scores > scores[targets.outlier_position]).sum())
    return results, skipped, exposed


@st.cache_data(max_entries=8, show_spinner=False)
def canary_audit(name: str, mtime: float, canaries: int) -> dict:
    from dpcore.report import audit_run

    return audit_run(_bundle(name, mtime), canaries)
