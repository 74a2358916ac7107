"""The Story page's logic: one model family trained with and without privacy on the same rows, what
each gives away, and the sentence that says what the pair shows (or what it shows instead).

Why this pair: a comparison that teaches DP holds everything fixed but the privacy. P3GM at the
size's default ε and PGM (P3GM's pipeline without noise: exact PCA, plain EM, plain SGD; ε = ∞) on
the same rows with the same settings. Without noise the model is the better generator, and it
memorises: planted canaries (the canary audit, Steinke et al. 2023) that it trained on are ranked
above those it did not, while the private model's ranking stays at chance and its audit's ε lower
bound within its ε. No Streamlit at import (the bench script and the tests import it).
"""
from __future__ import annotations

import hashlib
import json
import math

from dpcore.ui.defaults import budget_note, default_epsilon, public_size, size_defaults  # noqa: F401 (re-exported)

MISSING = "—"
PRIVATE_MODEL, NONPRIVATE_MODEL = "p3gm", "pgm"
ROLES = ("private", "nonprivate")
SIDE = {"private": "private", "nonprivate": "non-private"}  # what the page and the legend call a side
USEFUL_SHARE = 0.6  # the private run "is useful" at this share of the real reference
# The canary audit retrains each side's algorithm on AUDIT_ROWS training rows plus the canaries it
# includes, and the attacks score ATTACK_TARGETS members and as many non-members: sized so the whole
# Story job is ready within a minute on two cores with the lesson kept (docs/benchmarks.md: the
# non-private audit proves ε ≥ 0.7–0.85 on 1 000 or 2 000 rows, the private one 0; 2 000 rows cost
# more time for no clearer lesson). 512 canaries: with 256 the top-k the bound rests on is 13.
AUDIT_ROWS = 1_000
CANARIES = 512
ATTACK_TARGETS = 500
# The Story's schedule on a large public image set (where the size's default leaves epochs to P3GM's
# image schedule, 8 epochs and 300 warm-up steps): half the epochs, a third of the warm-up, for both
# sides (everything but the noise stays the same). Training CPU 25 s → 11 s a side for a utility a
# little lower (docs/benchmarks.md).
QUICK_SCHEDULE = {"epochs": 4, "warmup_steps": 100}


def _finite(v) -> float | None:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def utility_badge(res) -> dict:
    """What the utility metrics show: label/value, reference label/value and the delta text (None
    when either side is missing, so no "+nan" badge)."""
    metric = res.metrics[0]
    value = _finite(res.mean.get(metric))
    ref = _finite((res.reference or {}).get("mean", {}).get(metric)) if res.reference else None
    return {"label": f"mean {metric}, synthetic → real", "value": MISSING if value is None else f"{value:.3f}",
            "reference_label": f"mean {metric}, real → real",
            "reference": None if not res.reference else (MISSING if ref is None else f"{ref:.3f}"),
            "delta": None if value is None or ref is None else f"{value - ref:+.3f}"}


# ----------------------------------------------------------------------------- the pair
def story_configs(data: dict, n: int, seed: int = 0) -> list:
    """[private, nonprivate] on `data` (`n` training rows): P3GM at the size's default ε and epochs,
    and PGM with the same settings and seed (everything but the noise is the same)."""
    from dpcore.runs import RunConfig
    from dpcore.ui.forms import default_delta

    public = public_size(data, n)  # a file's size is private: constants then
    sized = size_defaults(public)
    shared = {"seed": seed} | ({"epochs": sized["epochs"]} if sized["epochs"] is not None else {})
    if public is not None and sized["epochs"] is None:
        shared |= QUICK_SCHEDULE
    private = RunConfig(model=PRIVATE_MODEL, data=dict(data),
                        params={**shared, "epsilon": sized["epsilon"], "delta": default_delta()})
    return [private, RunConfig(model=NONPRIVATE_MODEL, params=shared, data=dict(data))]


def story_key(configs) -> str:
    """A short digest of the pair's configs: runs saved with it are this pair (reused on a later start)."""
    text = json.dumps([{k: v for k, v in c.to_dict().items() if k != "name"} for c in configs], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_private(summary) -> bool:
    return math.isfinite(summary.epsilon) and not summary.seeded_noise


def saved_pair(summaries, key: str) -> tuple[str, str] | None:
    """The newest finished, scored (private, nonprivate) runs saved under `key` (None when missing)."""
    from dpcore.report import load_evaluation

    found: dict[str, str] = {}
    for s in summaries:  # newest first
        tag = (load_evaluation(s.path).get("story") or {})
        if s.status == "done" and tag.get("key") == key and tag.get("role") in ROLES:
            found.setdefault(tag["role"], s.name)
    return (found["private"], found["nonprivate"]) if len(found) == 2 else None


def story_names(summaries, trained: tuple | None = None) -> tuple[str | None, str | None]:
    """The pair the page opens on: the Story's pair, else the newest private and non-private runs."""
    names = {s.name for s in summaries}
    if trained and all(n in names for n in trained):
        return trained[0], trained[1]
    priv = next((s.name for s in summaries if is_private(s)), None)
    nonpriv = next((s.name for s in summaries if not is_private(s)), None)
    return priv, nonpriv


# ----------------------------------------------------------------------------- scoring one side
def audit(model: str, params: dict, train, seed: int = 0, rows: int | None = None, canaries: int | None = None,
          callback=None) -> dict:
    """The canary audit of a side's training algorithm (its model and settings) retrained on `rows`
    of its training rows plus `canaries` planted canaries, each included on a secret coin flip
    (None: AUDIT_ROWS and CANARIES, read at call time so a bench or a test can change them)."""
    import numpy as np

    from dpcore.evaluate.attacks.canary import canary_audit

    rows, canaries = rows or AUDIT_ROWS, canaries or CANARIES
    idx = np.sort(np.random.default_rng(seed).choice(train.n, min(rows, train.n), replace=False))
    res = canary_audit(model, dict(params), train.subset(idx), canaries, callback=callback)
    return {**res.to_dict(), "rows": int(len(idx))}


def curves(results) -> dict:
    """{attack: {"fpr", "tpr"}} rounded to 4 digits: what the page draws without re-running attacks."""
    import numpy as np

    return {r.name: {"fpr": np.round(r.fpr, 4).tolist(), "tpr": np.round(r.tpr, 4).tolist()} for r in results}


def score_side(run, role: str, key: str, progress=None) -> dict:
    """Utility, the attack ladder and the canary audit of one side, saved to its evaluation.json
    (with the Story's tag, so a later start reuses it). `progress(text)` hears each step."""
    from dpcore import report
    from dpcore.evaluate.attacks import DEFAULT

    say = progress or (lambda text: None)
    say("loading the model")
    b = report.load_bundle(run.path)
    say("utility: classifiers trained on synthetic rows, tested on real ones")
    res, _ = report.utility(b)
    scores = report.attacks(b, list(DEFAULT), n_targets=ATTACK_TARGETS,
                            progress=lambda name, i, n: say(f"attack {i + 1} of {n} on the training rows ({name})"))
    text = "canary audit (retrains on planted canaries)"
    say(text)
    half = []  # one more step halfway through the audit's training: the estimate keeps moving

    def tick(ev) -> None:
        if not half and ev.total_steps and 2 * ev.step >= ev.total_steps:
            half.append(say(text + ", halfway"))

    au = audit(b.run.config.model, b.run.config.params, b.train, seed=b.run.config.seed, callback=tick)
    tag = {"role": role, "key": key, "audit": au, "curves": curves(scores.results)}
    return report.save_evaluation(run.path, utility=None if res is None else res.to_dict(),
                                  attacks=scores.summary(), story=tag)


# ----------------------------------------------------------------------------- the numbers and the sentence
def side_numbers(evaluation: dict, epsilon: float) -> dict:
    """One side's story numbers from its saved evaluation: utility and reference, each attack (what
    it sees, AUC, ε lower bound), the best one, the canary audit (None when not run)."""
    from dpcore.report import headline

    h = headline(evaluation)
    attacks = [{"name": a.get("name"), "sees": a.get("sees"), "auc": _finite(a.get("auc")),
                "eps_lower_bound": _finite(a.get("epsilon_lower_bound")),
                "consistent": a.get("consistent_with_epsilon")}
               for a in (evaluation.get("attacks") or {}).get("attacks", []) if isinstance(a, dict)]
    return {"utility": h["utility"], "reference": h["reference"], "metric": h["utility_metric"],
            "epsilon": epsilon, "attacks": attacks, "best": h["attack"], "auc": h["attack_auc"],
            "audit": saved_audit(evaluation), "curves": (evaluation.get("story") or {}).get("curves") or {}}


def saved_audit(evaluation: dict) -> dict | None:
    """The canary audit the Story saved with a run (None when none was): the one source of the
    audit's figures on the Story, the Runs table and the Privacy page, so they agree."""
    au = (evaluation.get("story") or {}).get("audit") if isinstance(evaluation, dict) else None
    return au if isinstance(au, dict) and _finite(au.get("epsilon_lower_bound")) is not None else None


def tiles(side: dict, role: str) -> list[dict]:
    """A side's headline: the canary audit's ε lower bound, the canaries found, then utility.

    Why this order: on the defaults the attacks that see only synthetic rows sit at AUC ≈ 0.5 on
    both sides, so a headline of attack AUCs shows no difference; the audit is what separates them
    (the non-private side's proves a large ε, the private side's stays within its ε). Each tile:
    {"label", "value", "delta", "arrow", "help"}, every value text ("—" when missing)."""
    au, eps = side.get("audit"), side.get("epsilon")
    lb = _finite((au or {}).get("epsilon_lower_bound"))
    bound = _finite((au or {}).get("accountant_epsilon")) or _finite(eps)
    if lb is None:
        within = None
    elif role == "nonprivate" or bound is None:
        within = "ε = ∞: no ε promised"
    else:
        within = f"within its ε = {bound:.3g}" if lb <= bound else f"ABOVE its ε = {bound:.3g}: a bug"
    found = None if not au or au.get("top_in") is None else f"{au['top_in']} of {au['k']}"
    u, ref = side.get("utility"), side.get("reference")
    return [
        {"label": "canary audit proves", "value": MISSING if lb is None else f"ε ≥ {lb:.2f}", "delta": within,
         "arrow": "off",
         "help": (audit_text(side) + ". " if au else "Not run for this run (the Story job runs it). ")
         + "A lower bound on ε proven from planted canaries (95 % confidence): how much the training "
           "algorithm gives away, whatever it promised."},
        {"label": "canaries found", "value": MISSING if found is None else found,
         "delta": None if found is None else "chance: half", "arrow": "off",
         "help": "Of the canaries the audit's attack ranks surest, how many the model was really trained on."},
        {"label": "utility", "value": MISSING if u is None else f"{u:.2f}",
         "delta": None if u is None or ref is None else f"{u - ref:+.2f} vs real", "arrow": "auto",
         "help": f"{side.get('metric') or 'score'} of a classifier trained on synthetic rows, tested on real "
                 "ones; trained on the real rows: "
                 + (MISSING if ref is None else f"{ref:.2f}")},
    ]


def lesson_curves(sides: dict) -> list[dict]:
    """The two curves the Story's chart draws, one per side: the canary audit's ROC when it ran,
    else the best attack's. [{"role", "evidence", "auc", "fpr", "tpr"}]; the private side's also
    carries its (ε, δ) bound's ROC ("bound_fpr", "bound_tpr"): what no attack can beat."""
    import numpy as np

    from dpcore.evaluate.bounds import tradeoff_eps_delta

    out = []
    for role in ROLES:
        side = sides.get(role) or {}
        au, curve = side.get("audit") or {}, None
        if isinstance(au.get("roc"), dict) and _finite(au.get("auc")) is not None:
            curve = {"evidence": "canaries", "auc": float(au["auc"]), **au["roc"]}
        elif side.get("best") in (side.get("curves") or {}) and side.get("auc") is not None:
            curve = {"evidence": side["best"], "auc": side["auc"], **side["curves"][side["best"]]}
        if curve is None:
            continue
        curve["role"] = role
        eps = _finite(au.get("accountant_epsilon")) or _finite(side.get("epsilon"))
        if role == "private" and eps is not None:
            alpha = np.linspace(0, 1, 201)
            curve.update(bound_epsilon=eps, bound_fpr=alpha.tolist(),
                         bound_tpr=(1 - tradeoff_eps_delta(alpha, eps, float(au.get("delta") or 0.0))).tolist())
        out.append(curve)
    return out


def leak(side: dict) -> tuple[float | None, str]:
    """(the side's leak evidence, what it is): the canary audit's AUC when it ran, else the best
    attack's AUC on the training rows."""
    au = side.get("audit")
    if au and _finite(au.get("auc")) is not None:
        return float(au["auc"]), "canary AUC"
    return side.get("auc"), "best attack AUC"


def story_checks(private: dict, nonprivate: dict) -> list[str]:
    """What keeps this pair from telling the lesson, in words ([] when it tells it): the non-private
    side must be the better generator, leak more, and the private side stay within its ε."""
    pu, nu = private.get("utility"), nonprivate.get("utility")
    (pl, what), (nl, _) = leak(private), leak(nonprivate)
    if pu is None or nu is None or pl is None or nl is None:
        return ["not both runs are scored yet (utility and attacks)"]
    out = []
    if nu < pu:
        out.append(f"the non-private run scores lower ({nu:.2f}) than the private one ({pu:.2f})")
    if nl <= pl:
        out.append(f"the non-private run leaks no more than the private one ({what} {nl:.2f} vs {pl:.2f})")
    eps = private.get("epsilon")
    au = private.get("audit") or {}
    lb = _finite(au.get("epsilon_lower_bound"))
    bound = _finite(au.get("accountant_epsilon")) or eps
    if lb is not None and bound is not None and lb > bound:
        out.append(f"the private run's canary audit proves ε ≥ {lb:.2f}, above its ε = {bound:.3g} (a bug)")
    if any(a.get("consistent") is False for a in private.get("attacks", [])):
        out.append("an attack on the private run beats what its ε allows (a bug)")
    return out


def _pct(u, r) -> str:
    return f"{100 * u / r:.0f} %" if u is not None and r else "an unknown share"


def audit_text(side: dict, long: bool = True) -> str:
    """"49 of the 64 planted canaries the attack ranks first were trained on (half would be chance;
    the audit proves ε ≥ 0.71)" (`long`), or "33 of 64 (the audit proves ε ≥ 0.03)"; "" without one."""
    au = side.get("audit")
    if not au or au.get("top_in") is None:
        return ""
    lb = _finite(au.get("epsilon_lower_bound")) or 0.0
    if not long:
        return f"{au['top_in']} of {au['k']} (the audit proves ε ≥ {lb:.2f})"
    return (f"{au['top_in']} of the {au['k']} planted canaries the attack ranks first were trained on "
            f"(half would be chance; the audit proves ε ≥ {lb:.2f})")


def verdict(private: dict, nonprivate: dict) -> str:
    """One paragraph in plain words: what the pair shows, or what it shows instead of the lesson."""
    problems = story_checks(private, nonprivate)
    if problems == ["not both runs are scored yet (utility and attacks)"]:
        return "Score both runs (utility and the attacks) to read the story."
    eps = private["epsilon"]
    pu, nu, ref = private["utility"], nonprivate["utility"], private["reference"]
    (pl, what), (nl, _) = leak(private), leak(nonprivate)
    if problems:
        return ("This pair does not show the lesson: " + "; ".join(problems) + ". What it shows: utility "
                f"{pu:.2f} private (ε = {eps:.3g}) vs {nu:.2f} non-private; {what} {pl:.2f} vs {nl:.2f} "
                "(0.5 = chance). Try another ε, more rows or more epochs.")
    p_audit, n_audit = audit_text(private, long=False), audit_text(nonprivate)
    buys = (f"without privacy, {n_audit}; with privacy, {p_audit}, within its ε = {eps:.3g}."
            if p_audit and n_audit else
            f"The attacks tell the non-private run's training rows apart better ({what} {nl:.2f} vs {pl:.2f}).")
    return (f"Privacy costs some utility: the private model (ε = {eps:.3g}) keeps {_pct(pu, ref)} of the real "
            f"data's usefulness; the same model without noise (ε = ∞) keeps {_pct(nu, ref)}. It buys protection: {buys}")


# ----------------------------------------------------------------------------- the page's pieces
def attack_table(sides: dict):
    """One row per attack: what it sees and its AUC on each side (a DataFrame of text)."""
    import pandas as pd

    rows: dict[str, dict] = {}
    for role in ROLES:
        for a in sides.get(role, {}).get("attacks", []):
            row = rows.setdefault(a["name"], {"attack": a["name"], "sees": a["sees"] or MISSING})
            row[f"AUC {SIDE[role]}"] = MISSING if a["auc"] is None else f"{a['auc']:.2f}"
    for role in ROLES:
        au = sides.get(role, {}).get("audit")
        if au and _finite(au.get("auc")) is not None:
            row = rows.setdefault("canary audit", {"attack": "canary audit",
                                                   "sees": "the model, retrained with planted canaries"})
            row[f"AUC {SIDE[role]}"] = f"{au['auc']:.2f}"
    cols = ["attack", "sees"] + [f"AUC {SIDE[r]}" for r in ROLES]
    return pd.DataFrame(list(rows.values()), columns=cols).fillna(MISSING)


def saved_results(evaluation: dict) -> list:
    """The attacks saved with a side (name, AUC and ROC curve) as the attack figure draws them
    ([] when the curves were not saved: the page then runs the attacks)."""
    from types import SimpleNamespace

    import numpy as np

    saved = (evaluation.get("story") or {}).get("curves") or {}
    out = []
    for a in (evaluation.get("attacks") or {}).get("attacks", []):
        c = saved.get(a.get("name")) if isinstance(a, dict) else None
        if c and _finite(a.get("auc")) is not None:
            fpr, tpr = np.asarray(c["fpr"], float), np.asarray(c["tpr"], float)
            out.append(SimpleNamespace(name=str(a["name"]), auc=float(a["auc"]), alpha=fpr, beta=1 - tpr))
    au = (evaluation.get("story") or {}).get("audit") or {}
    if out and isinstance(au.get("roc"), dict) and _finite(au.get("auc")) is not None:
        fpr, tpr = np.asarray(au["roc"]["fpr"], float), np.asarray(au["roc"]["tpr"], float)
        out.append(SimpleNamespace(name="canaries", auc=float(au["auc"]), alpha=fpr, beta=1 - tpr))
    return out


def attack_figure(sides, log_fpr: bool = False):
    """Both sides' attack curves, each with its own bounds (only the private side has any);
    sides: [(side name, run bundle, results)]. Legend entries "side · attack · AUC"."""
    from dpcore import report

    return report.attack_figure([report.run_curves(b, results, name) for name, b, results in sides],
                                log_fpr=log_fpr, compact=True)


def report_html(private_name: str, nonprivate_name: str, sentence: str) -> str:
    """The two-run story report (private: it holds attack statistics)."""
    from dpcore import report
    from dpcore.ui.cache import bundle
    from dpcore.ui.workspace import run_path

    return report.story_report(run_path(private_name), run_path(nonprivate_name), sentence,
                               bundles=(bundle(private_name), bundle(nonprivate_name)))
