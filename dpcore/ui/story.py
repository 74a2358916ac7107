"""The Story page's logic: a private and a non-private run side by side, and the sentence that says
what they show. Also the utility badge Compare and Story share (never a "nan" with a green arrow).

Why: a lecturer needs one screen where "privacy costs a little utility and stops the attack" is
visible without reading a table; the numbers come from the runs' cached evaluations.
"""
from __future__ import annotations

import math

from dpcore.ui.defaults import (budget_note, default_epsilon, leaky_epochs, public_size,  # noqa: F401 (re-exported)
                                size_defaults)

MISSING = "—"


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


# ----------------------------------------------------------------------------- the pair's defaults
PRIVATE_MODEL = "p3gm"
LEAKY_MODEL, LEAKY_PRESET = "vae", "overfit"
LEAK_AUC = 0.65  # the non-private run "visibly leaks" from here
USEFUL_SHARE = 0.6  # the private run "is useful" at this share of the real reference
LEAKY_ROWS = 2_000  # rows the overfit VAE trains on (200 epochs of batches of 32)


def story_configs(data: dict, n: int, seed: int = 0) -> list:
    """The two runs of the story on `data` (`n` training rows): P3GM at the size's default ε and
    epochs, and the `overfit` VAE."""
    from dpcore.models.presets import preset
    from dpcore.runs import RunConfig
    from dpcore.ui.forms import default_delta

    sized = size_defaults(public_size(data, n))  # a file's size is private: constants then
    leaky = preset(LEAKY_MODEL, LEAKY_PRESET)
    params = {"epsilon": sized["epsilon"], "delta": default_delta(), "seed": seed}
    if sized["epochs"] is not None:
        params["epochs"] = sized["epochs"]
    private = RunConfig(model=PRIVATE_MODEL, params=params, data=dict(data))
    # the same data (split and all) for both, so the attacks target the same kind of rows
    # memorising needs many passes over few rows: at most LEAKY_ROWS rows, so it trains in minutes
    small = {"n": LEAKY_ROWS} if n > LEAKY_ROWS and "dataset" in data else {}
    passes = {"epochs": leaky_epochs(n)} if leaky_epochs(n) else {}
    nonprivate = RunConfig(model=LEAKY_MODEL, params={**leaky["params"], **passes, "seed": seed},
                           data={**data, **leaky["data"], **small})
    return [private, nonprivate]


def is_private(summary) -> bool:
    return math.isfinite(summary.epsilon) and not summary.seeded_noise


def story_names(summaries, trained: tuple | None = None) -> tuple[str | None, str | None]:
    """The pair the page opens on: the pair just trained here, else the newest private and
    non-private finished runs."""
    names = {s.name for s in summaries}
    if trained and all(n in names for n in trained):
        return trained[0], trained[1]
    priv = next((s.name for s in summaries if is_private(s)), None)
    leaky = next((s.name for s in summaries if not is_private(s)), None)
    return priv, leaky


# ----------------------------------------------------------------------------- the sentence
def side(utility: float | None, reference: float | None, auc: float | None, epsilon: float) -> dict:
    """One run's story numbers, with whether it is useful and whether it leaks."""
    useful = None if utility is None or not reference else utility >= USEFUL_SHARE * reference
    leaks = None if auc is None else auc >= LEAK_AUC
    return {"utility": utility, "reference": reference, "auc": auc, "epsilon": epsilon,
            "useful": useful, "leaks": leaks}


def _pct(u, r) -> str:
    return f"{100 * u / r:.0f} %" if u is not None and r else "an unknown share"


def verdict(private: dict, leaky: dict) -> str:
    """One sentence in plain words: what the pair shows (or why it does not show it yet)."""
    if private["utility"] is None or leaky["auc"] is None or private["auc"] is None:
        return "Score both runs (utility and the attacks) to read the story."
    eps = private["epsilon"]
    p_leak = "an attacker can barely tell its training rows from others" if not private["leaks"] else \
        "yet an attacker still tells its training rows apart more than expected"
    if leaky["leaks"] and private["useful"]:
        return (f"The private model keeps {_pct(private['utility'], private['reference'])} of the real data's "
                f"usefulness at ε = {eps:.3g}, and {p_leak} (AUC {private['auc']:.2f}), while the "
                f"non-private model gives its training rows away (AUC {leaky['auc']:.2f}).")
    if not leaky["leaks"]:
        return (f"The non-private model does not visibly leak here (AUC {leaky['auc']:.2f} < {LEAK_AUC}): "
                "train it longer or on fewer rows to see what privacy protects against.")
    return (f"The non-private model leaks (AUC {leaky['auc']:.2f}), but at ε = {eps:.3g} the private model keeps "
            f"only {_pct(private['utility'], private['reference'])} of the real data's usefulness: "
            "try a larger ε or a larger dataset.")


# ----------------------------------------------------------------------------- the page's pieces
def start_pair(choice: dict, n: int) -> None:
    """Train the story pair in the background (the Story button's callback)."""
    import streamlit as st

    from dpcore.errors import DPCoreError
    from dpcore.runs import start_training
    from dpcore.ui.data import data_config_fields
    from dpcore.ui.nav import runs_root

    data = {k: v for k, v in choice.items() if k in data_config_fields()}
    try:
        configs = story_configs(data, n)
        h = start_training(configs, runs_root())
    except DPCoreError as exc:
        st.session_state["story.error"] = str(exc)
        return
    st.session_state["story.handle"] = h
    st.session_state["story.announced"] = False
    st.session_state.pop("story.pair", None)


def progress_text(h) -> tuple[str, float]:
    """(text, fraction) of the pair's training: which run, its phase and step."""
    done = len(h.runs)
    last = h.latest
    alive = h.is_alive()
    step = (last["step"] / max(1, last["total_steps"])) if last and alive else 0.0
    frac = min(1.0, (done + step) / 2)
    if not alive:
        if done == 2:
            import streamlit as st

            st.session_state["story.pair"] = tuple(r.name for r in h.runs)
        return f"{done} of 2 runs trained · {h.status}", frac
    which = "private (P3GM)" if done == 0 else "not private (overfit VAE)"
    phase = f" · {last.get('phase')}" if last and last.get("phase") else ""
    return f"Training the {which} run{phase} · run {done + 1} of 2", frac


def side_numbers(res, results, epsilon: float) -> dict:
    """The story numbers of one run from its utility result and attack results."""
    from dpcore.evaluate.attacks import best

    metric = res.metrics[0] if res is not None else None
    u = _finite(res.mean.get(metric)) if res is not None else None
    r = _finite((res.reference or {}).get("mean", {}).get(metric)) if res is not None and res.reference else None
    top = best(results) if results else None
    return side(u, r, _finite(top.auc) if top is not None else None, epsilon)


def attack_figure(private_name: str, leaky_name: str, names: tuple, log_fpr: bool = False):
    """Both runs' attack curves, each with its own bounds (only the private run has any; cached results)."""
    from dpcore import report
    from dpcore.ui.cache import attacks, bundle, key

    bs = [bundle(private_name), bundle(leaky_name)]
    labels = report.run_labels(bs)
    curves = [report.run_curves(b, attacks(*key(n), names)[0], f"{side}: {lab}")
              for b, n, side, lab in zip(bs, (private_name, leaky_name), ("private", "not private"), labels)]
    return report.attack_figure(curves, log_fpr=log_fpr)


def report_html(private_name: str, leaky_name: str, sentence: str) -> str:
    """The two-run story report (private: it holds attack statistics)."""
    from dpcore import report
    from dpcore.ui.cache import bundle
    from dpcore.ui.nav import runs_root

    return report.story_report(runs_root() / private_name, runs_root() / leaky_name, sentence,
                               bundles=(bundle(private_name), bundle(leaky_name)))
