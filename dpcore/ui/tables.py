"""The Runs table and the short settings label of a run (what differs from its model's defaults).

Why here and not on the page: the table must never show "None", "nan" or "Infinity" (a missing
score is "—", ε = ∞ is "∞"), and the same settings label names runs, heads the Compare columns and
labels the privacy–utility curve's lines, so the three agree. No Streamlit in this module.
"""
from __future__ import annotations

import math

import pandas as pd

from dpcore.runs.naming import SETTINGS, settings_label  # noqa: F401 (one label for names, columns, curves)

MISSING = "—"


def settings(model: str, params: dict, data: dict | None = None) -> dict:
    """{short name: value} of the compared settings the run has (encoder share, PCA dim, K, epochs,
    the outlier variant), all of them, default or not."""
    out = {short: params[name] for name, short in SETTINGS if name in params}
    if (data or {}).get("outlier"):
        out["variant"] = "outlier"
    return out


def _num(v, digits: int = 3) -> str:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return MISSING
    f = float(v)
    if math.isnan(f):
        return MISSING
    if math.isinf(f):
        return "∞" if f > 0 else "-∞"
    return f"{f:.{digits}f}"


def run_data(path) -> dict:
    """The data options of a run's config.json ({} when unreadable)."""
    try:
        from dpcore.runs import Run

        return dict(Run.load(path).config.data)
    except Exception:  # noqa: BLE001 - the table skips what it cannot read
        return {}


def shared_score(path, evaluation: dict) -> str:
    """The run's released usefulness score, "0.74 ± 0.03": the "utility" column's number with the
    noise it was shared with (dpcore.evaluate.usefulness); "—" when none was released."""
    if not evaluation.get("released_score"):
        return MISSING
    from dpcore.errors import DPCoreError
    from dpcore.evaluate.usefulness import noisy_text
    from dpcore.runs import Run
    from dpcore.runs.run_score import stored_score

    try:
        found = stored_score(Run(path), evaluation)
    except DPCoreError:
        return MISSING
    score = None if found is None else found[0]
    if score is None or score.balanced_accuracy is None:
        return MISSING
    return noisy_text(score.balanced_accuracy, score.balanced_plus_minus)


def canary_bound(path) -> str:
    """The ε lower bound the Story's canary audit proved for the run ("—" when none was saved): the
    Story's headline figure, beside the best attack's. Why both: the attacks on synthetic rows prove
    about nothing on either side of the Story, the audit is what shows the non-private run's leak."""
    from dpcore.report import load_evaluation
    from dpcore.ui.story import saved_audit

    au = saved_audit(load_evaluation(path))
    return MISSING if au is None else _num(au["epsilon_lower_bound"], 2)


def runs_table(summaries, *, seconds_fmt=None) -> pd.DataFrame:
    """One row per run, every cell text: "—" for a missing score, "∞" for ε = ∞."""
    from dpcore.privacy.coverage import NOT_PRIVATE
    from dpcore.report import headline, load_evaluation

    def guarantee(s) -> str:
        if s.status == "inconsistent":
            from dpcore.runs.verify import INCONSISTENT

            return INCONSISTENT
        if s.seeded_noise:
            return NOT_PRIVATE
        if s.epsilon is None or math.isnan(s.epsilon):
            return MISSING
        return "none (ε = ∞)" if math.isinf(s.epsilon) else "(ε, δ)-DP"

    rows = []
    for s in summaries:
        ev = load_evaluation(s.path)
        h = headline(ev)
        data = run_data(s.path)
        st_ = settings(s.model, s.params or {}, data)
        ok = h["attack_consistent"]
        rows.append({  # what a person compares first (ε, utility, the best attack) right after the name
            "run": s.name, "ε": _num(s.epsilon, 2), "utility": _num(h["utility"], 2),
            "shared (with noise)": shared_score(s.path, ev),
            "best attack": h["attack"] or MISSING, "attack AUC": _num(h["attack_auc"]),
            "ε ≥ (attack)": _num(h["attack_eps_lower_bound"], 2), "ε ≥ (canary audit)": canary_bound(s.path),
            "status": s.status,
            "model": s.model, "dataset": s.dataset, "guarantee": guarantee(s), "variant": st_.get("variant", "—"),
            "share": _num(st_.get("share"), 2), "pca": _num(st_.get("pca"), 0), "K": _num(st_.get("K"), 0),
            "epochs": _num(st_.get("epochs"), 0), "metric": h["utility_metric"] or MISSING,
            "real → real": _num(h["reference"], 2),
            "consistent": MISSING if ok is None else ("yes" if ok else "NO"),
            "created": (s.created or "")[:19].replace("T", " ") or MISSING,
            "time": seconds_fmt(s.seconds) if (seconds_fmt and s.seconds) else MISSING,
            "message": s.message or "",
        })
    return pd.DataFrame(rows)
