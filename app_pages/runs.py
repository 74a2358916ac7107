"""Runs: every run ever trained, what to do with one, ε sweeps and the privacy–utility curve."""
from __future__ import annotations

import math
import time
from pathlib import Path

import streamlit as st

from dpcore import ui
from dpcore.errors import DPCoreError
from dpcore.files import MAX_JSON_BYTES, read_run_bytes
from dpcore.runs.folders import interrupted_partials
from dpcore.runs.store import UNREADABLE
from dpcore.text import md

st.title("Runs")
st.caption("Every training run is kept on disk with its settings, losses, privacy ledger and model. "
           "Scores appear once a run has been evaluated (on Compare / Privacy, or with **Score all**).")


from dpcore.ui.story_job import current_job  # noqa: E402

if (story_job := current_job()) is not None and story_job.is_alive():  # the Story's one job, while it runs
    text, frac = story_job.progress()
    st.progress(frac, text=md(f"Story job: {text}"))


def _preprocessing_covered(path: Path, model: str) -> bool:
    """Did the run's model take only declared or DP bounds and categories (its saved template says)?"""
    from dpcore.models.saved import read_model_meta

    try:
        return bool(read_model_meta(path / "model", model)["template"].get("preprocessing_private", True))
    except DPCoreError:
        return True  # an unreadable model is reported where it is opened


def _usefulness(name: str, path: Path) -> None:
    """Usefulness evidence covered by ε for the shareable release: a classifier trained on the
    synthetic rows, its held-out accuracy released as noisy counts with its own ledger record
    (dpcore.runs.run_score); refused with one line where a run cannot take one."""
    from dpcore.runs import Run
    from dpcore.runs.evaluation import load_evaluation
    from dpcore.runs.run_score import (
        MAX_SCORE_EPSILON,
        default_score_epsilon,
        describe,
        release_score,
        score_refusal,
        stored_score,
    )
    from dpcore.ui.workspace import is_published

    run = Run(path)
    if is_published(path):  # the class's copy: a score would change every student's ε
        st.caption("Usefulness covered by ε: a published run is read-only; score the original in its "
                   "owner's workspace before publishing.")
        return
    if math.isinf(run.epsilon):
        st.caption("Usefulness covered by ε: not for this run (ε = ∞, nothing it releases is covered).")
        return
    with ui.guard():
        found = stored_score(run, load_evaluation(path))
        if found is not None:
            from dpcore.evaluate.usefulness import shared_words
            from dpcore.release_words import shared_sentence

            _, note = describe(*found)
            st.success(f"**In the shareable release:** {md(shared_sentence(found[0], run.config.data.target))} "
                       f"{md(shared_words(found[0], found[1], run.epsilon))}", icon=":material/verified:")
            st.caption(md(note))
            return
        e1, e2 = st.columns([1, 3], vertical_alignment="bottom")
        if st.session_state.get("runs.score_eps.run") != name:  # the widget keeps its value across runs:
            st.session_state["runs.score_eps"] = default_score_epsilon(run)  # each run gets its own offer
            st.session_state["runs.score_eps.run"] = name
        eps = e1.number_input("ε of the score", min_value=0.01, max_value=MAX_SCORE_EPSILON,
                              step=0.05, format="%.2f", key="runs.score_eps",
                              help="Spent on the held-out rows. On a file's keyed split it composes in parallel with "
                                   "the training (each person is on one side): the value offered is the largest "
                                   "that leaves the run's ε as it is. Otherwise it adds to the run's ε.")
        if not e2.button(f"Add a usefulness score covered by ε (ε = {eps:g})", icon=":material/add_chart:",
                         key="runs.release_score",
                         help="Trains a classifier on the synthetic rows and releases its balanced accuracy on the "
                              "held-out people with Gaussian noise, recorded in the run's ledger"):
            return
        before = run.epsilon
        with st.status("Adding a usefulness score covered by ε…", expanded=True) as box:
            st.write("Loading the run and its synthetic rows…")
            bundle = ui.bundle(name)
            if why := score_refusal(bundle):
                box.update(label="No usefulness score added", state="error")
                st.error(md(why), icon=":material/block:")
                return
            st.write("Training a classifier on the synthetic rows, counting right and wrong on held-out people…")
            out = release_score(path, eps, bundle=bundle)
            box.update(label=f"Usefulness score released (ε = {out['epsilon']:.2g}); the run's ε is now "
                             f"{out['run_epsilon']:.2f} (was {before:.2f})", state="complete", expanded=False)
        st.session_state.get("runs.reports", {}).pop("shareable", None)  # a release built before lacks the score
        st.rerun()


summaries = ui.run_summaries()
if not summaries:
    st.info("No runs yet. Train one on the **Train** page.", icon=":material/info:")
else:
    from dpcore.ui.tables import runs_table

    frame = runs_table(summaries, seconds_fmt=ui.fmt_seconds)
    st.dataframe(frame, hide_index=True, width="stretch", column_config={
        "run": st.column_config.TextColumn("run", width="medium", pinned=True),
        "ε": st.column_config.TextColumn("ε", help="∞ = not private"),
        "share": st.column_config.TextColumn("share", help="Encoder share of ε (P3GM)"),
        "pca": st.column_config.TextColumn("pca", help="PCA dimension (latent size)"),
        "K": st.column_config.TextColumn("K", help="Mixture components of the prior"),
        "variant": st.column_config.TextColumn("variant", help="Dataset variant (outlier: one injected outlier)"),
        "utility": st.column_config.TextColumn(
            "utility", help="Usefulness: balanced accuracy of a logistic regression trained on the synthetic rows, "
                            "tested on the real held-out rows; the number Compare and both reports show "
                            "(— = not scored)"),
        "shared (with noise)": st.column_config.TextColumn(
            "shared (with noise)", help="The same number as released in the shareable release, with the noise "
                                        "added for sharing (— = none released; add one below)"),
        "best attack": st.column_config.TextColumn(
            "best attack", help="The attack of the ladder that proves the largest ε lower bound (Privacy page)"),
        "attack AUC": st.column_config.TextColumn("attack AUC", help="0.5 = the attack learns nothing"),
        "ε ≥ (attack)": st.column_config.TextColumn(
            "ε ≥ (attack)", help="Empirical ε lower bound the best attack proves (95 %)"),
        "ε ≥ (canary audit)": st.column_config.TextColumn(
            "ε ≥ (canary audit)", help="The ε lower bound the Story's canary audit proved for the run (95 %): the "
                                       "Story's headline figure (— = no audit saved)"),
        "consistent": st.column_config.TextColumn(
            "consistent", help="yes: the attack's ε lower bound is within the accountant's ε; NO means a bug "
                               "somewhere (ledger, accountant or evaluation split)"),
    })
    c1, c2 = st.columns([1, 3])
    todo = [s for s in ui.model_runs() if ui.headline_missing(s.path)]
    if c1.button(f"Score all ({len(todo)} unscored)", disabled=not todo or ui.read_only(), key="runs.score_all",
                 help="Utility and the attack ladder for every finished run without scores"):
        from dpcore.evaluate.attacks import DEFAULT

        bar = st.progress(0.0, text="Scoring…")
        for i, s in enumerate(todo):
            with ui.guard():
                ui.cached_utility(*ui.key(s.name))
                ui.attacks(*ui.key(s.name), DEFAULT)
            bar.progress((i + 1) / len(todo), text=f"Scored {s.name}")
        st.rerun()

    # -------------------------------------------------------------- one run
    st.subheader("Manage a run", divider="gray")
    info = {s.name: s for s in summaries}
    name = ui.run_picker("Run", summaries, "runs.selected")
    s = info[name]
    path = Path(s.path)
    unreadable = s.status.startswith(UNREADABLE)
    if s.status == "failed":
        st.error(f"This run failed: {md(s.message)}", icon=":material/error:")
    elif s.status == "inconsistent":  # dpcore.runs.verify: never shown or exported as private
        st.error(f"{md(s.message)}. Its ε is not shown and it cannot be exported.", icon=":material/gpp_bad:")
    if unreadable:
        st.error(f"This run folder cannot be used: {md(s.message)}. Nothing in it is read; you can delete "
                 "it below.", icon=":material/error:")
    a, b, c, d = st.columns(4)
    if not unreadable:
        a.download_button("Config (JSON)", lambda: read_run_bytes(path / "config.json", max_bytes=MAX_JSON_BYTES,
                                                                  base=path),
                          file_name=f"{name}-config.json", mime="application/json", icon=":material/download:",
                          key="runs.dl_config", on_click="ignore")
    has_model = s.status in ("done", "stopped") and (path / "model" / "model.json").is_file()
    if has_model and not _preprocessing_covered(path, s.model):
        st.warning("Preprocessing not covered by ε: this run's bounds or category lists were read from the "
                   "private rows (its releases say so). Declare them, or estimate bounds with DP, on the Data "
                   "page for a run that is covered.", icon=":material/warning:")
    if has_model:
        b.download_button("Synthetic data (CSV)", lambda: ui.synthetic_csv(*ui.key(name)),
                          file_name=f"{name}-synthetic.csv", mime="text/csv", icon=":material/download:",
                          key="runs.dl_synth", on_click="ignore")
        exports = {"shareable": ("Shareable release", "Only outputs covered by ε: settings, ε/δ and the "
                                 "ledger, synthetic samples (no real rows, no scores against real data)"),
                   "private": ("Private report", "Everything, including real rows, raw losses and the attack: "
                               "not covered by ε, for the data owner only")}
        if ui.read_only():  # a student on a published run: the private report would score (and write) it
            exports.pop("private")
        from dpcore.release import REPORT_ROWS

        rows = c.number_input("Synthetic rows in the report", min_value=1, max_value=20_000, value=REPORT_ROWS,
                              step=500, key="runs.report_rows",
                              help="Rows of synthetic data embedded in the report as a CSV download (numbers "
                                   "rounded to the input's precision). Fewer rows, smaller file.")
        built = st.session_state.setdefault("runs.reports", {})  # one per kind: building one keeps the other
        for kind, (label, tip) in exports.items():
            if c.button(label, icon=":material/description:", key=f"runs.export.{kind}", help=tip):
                with ui.guard():
                    built[kind] = (name, ui.report_html(*ui.key(name), kind, int(rows)))
        for kind, (label, _) in exports.items():
            rep = built.get(kind)
            if rep and rep[0] == name:
                d.download_button(f"Download {label.lower()} (HTML)", rep[1].encode(),
                                  file_name=f"{name}-{kind}.html", mime="text/html", icon=":material/download:",
                                  key=f"runs.dl_report.{kind}", type="primary" if kind == "shareable" else "secondary",
                                  on_click="ignore")
                if kind == "private":
                    d.caption("Private: contains data not covered by ε. Do not share.")
        _usefulness(name, path)

    def _rename(path: Path, new: str) -> None:
        from dpcore.runs import rename_run

        try:
            if ui.read_only():
                raise DPCoreError("a published run is read-only")
            rename_run(path, new)
            st.session_state["runs.selected"] = new
        except DPCoreError as exc:
            st.session_state["runs.msg"] = str(exc)

    def _delete(path: Path) -> None:
        from dpcore.runs import delete_run

        try:
            if ui.read_only():
                raise DPCoreError("a published run is read-only")
            delete_run(path)
            st.session_state.pop("runs.selected", None)
        except DPCoreError as exc:
            st.session_state["runs.msg"] = str(exc)

    if ui.read_only():  # class mode: a published run is the lecturer's, students only open it
        st.caption("Published by the lecturer: open it on Compare, Privacy and Story; it cannot be changed here.")
    else:
        from dpcore.ui.workspace import publish_button

        publish_button(path, has_model and not unreadable)
        with st.expander("Rename or delete"):
            r1, r2 = st.columns([3, 1])
            new = r1.text_input("New name", value=name, key=f"runs.newname.{name}")
            r2.button("Rename", key="runs.rename", disabled=new == name, on_click=_rename, args=(path, new))
            sure = st.checkbox(f"Yes, delete {name} and its model", key=f"runs.sure.{name}")
            st.button("Delete run", type="secondary", icon=":material/delete:", disabled=not sure,
                      key="runs.delete", on_click=_delete, args=(path,))
            if msg := st.session_state.pop("runs.msg", None):
                st.error(md(msg), icon=":material/error:")

partials = interrupted_partials(ui.runs_root())
if partials:
    def _prune() -> None:
        from dpcore.runs.folders import prune_partials

        st.session_state["runs.pruned"] = len(prune_partials(ui.runs_root()))

    with st.expander(f"Interrupted runs ({len(partials)})"):
        st.caption("Runs whose training process was killed (a crash, a restart, kill -9) leave an unfinished "
                   "folder behind. Nothing in them is a finished run: deleting them loses no result.")
        sure = st.checkbox(f"Yes, delete these {len(partials)} unfinished folders", key="runs.prune_sure")
        st.button("Delete interrupted runs", icon=":material/delete_sweep:", disabled=not sure,
                  key="runs.prune", on_click=_prune)
if (pruned := st.session_state.pop("runs.pruned", None)) is not None:
    st.success(f"Deleted {pruned} interrupted run folder(s).", icon=":material/check:")

# ------------------------------------------------------------------ ε sweep
st.subheader("ε sweep", divider="gray")
st.caption("Train one model at several budgets, one after another in the background, on the active "
           f"dataset (**{ui.data_label()}**), then read off the privacy–utility trade-off.")
from dpcore.jobs.sweep import sweepable_models  # noqa: E402

private_models = sweepable_models()
sweep = ui.sweep_state()
sweep_busy = sweep is not None and sweep["handle"].is_alive()
from dpcore.ui import class_queue  # noqa: E402

in_class = class_queue.member() is not None  # class mode: the sweep is one job of the class queue
if in_class:
    sweep, queued_sweep = None, class_queue.session_job("sweep")
    sweep_busy = queued_sweep is not None and not queued_sweep.ended
c1, c2 = st.columns([1, 2])
sweep_model = c1.selectbox("Model", private_models, key="runs.sweep_model",
                           format_func=lambda m: ui.model_info(m)["label"])
grid = c2.multiselect("ε values", list(ui.EPSILON_CHOICES), default=[0.3, 1.0, 3.0, 10.0],
                      key="runs.sweep_eps", format_func=lambda v: f"{v:g}")
base = ui.remembered_params(sweep_model)
st.caption("Each run uses this model's settings from the **Train** page"
           + (f" (epochs {base.get('epochs') or 'auto'}, seed {base.get('seed')}, …)" if base
              else " (defaults: not opened yet)")
           + "; only ε changes.")
if st.button("Start sweep", type="primary", icon=":material/play_arrow:", key="runs.sweep_start",
             disabled=sweep_busy or not grid):
    try:
        from dpcore.jobs import jobs
        from dpcore.runs import RunConfig

        choice = ui.data_choice()
        data_cfg = {k: v for k, v in choice.items() if k in ui.data_config_fields()}
        train, _ = ui.load_data(choice)
        from dpcore.ui.sweep import fit_to_data

        fitted, changed = fit_to_data(sweep_model, base, train, public_rows=ui.public_size(choice, train.n))
        if changed:
            st.session_state["runs.sweep_note"] = "Adjusted to this dataset: " + "; ".join(changed)
        params = {"delta": ui.default_delta(), **fitted}
        configs = [RunConfig(model=sweep_model, data=data_cfg, params={**params, "epsilon": float(e)})
                   for e in sorted(grid)]
        if in_class:
            class_queue.submit(configs, ui.runs_root(), kind="eps-sweep", title="ε sweep", slot="sweep")
            st.rerun()
        handle = jobs.start(jobs.trainings_job(configs, ui.runs_root(), kind="eps-sweep", title="ε sweep"))
        ui.set_sweep_state({"handle": handle, "n": len(configs), "started": time.time(), "scored": False})
        st.rerun()
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")


if note := st.session_state.get("runs.sweep_note"):
    st.caption(md(note))


@st.fragment(run_every=ui.POLL_SECONDS if sweep_busy else None)
def sweep_panel() -> None:
    sweep = ui.sweep_state()
    if sweep is None:
        return
    h = sweep["handle"]
    text, frac = h.progress()
    st.progress(frac, text=md(text))
    if h.status == "failed":
        st.error(f"The sweep stopped: {md(h.error)}", icon=":material/error:")
    if h.is_alive():
        if st.button("Stop sweep", icon=":material/stop:", key="runs.sweep_stop"):
            h.stop()
    elif not sweep.get("announced"):
        sweep["announced"] = True
        st.rerun(scope="app")


if in_class:
    class_queue.job_panel("sweep")
else:
    sweep_panel()
if sweep is not None and not sweep["handle"].is_alive() and not sweep.get("scored"):
    for run in sweep["handle"].runs:
        if run.status().get("status") in ("done", "stopped"):
            with ui.guard():
                ui.cached_utility(*ui.key(run.name, ui.runs_root()))  # the sweep trained into our own workspace
    sweep["scored"] = True

# ------------------------------------------------------------------ privacy–utility curve
st.subheader("Privacy–utility curve", divider="gray")
rows = ui.utility_points()
if rows:
    from dpcore.figures import privacy_utility_figure

    datasets = sorted({r["dataset"] for r in rows})
    ds = st.selectbox("Dataset", datasets, key="runs.curve_ds",
                      index=datasets.index(ui.data_label()) if ui.data_label() in datasets else 0)
    pts = [r for r in rows if r["dataset"] == ds]
    metric = pts[0]["metric"]
    st.plotly_chart(privacy_utility_figure(pts), key="runs.curve")
    st.caption(f"Utility = {metric} of one classifier trained on synthetic rows, tested on real ones "
               "(the Runs table's and the reports' usefulness number). "
               "One line per model family and settings (mean over seeds, band: their range); diamonds at ∞: "
               f"the family's model without noise ({ui.ceiling_pairs()}), the top of its curve; "
               "dotted: the same classifier trained on the real rows.")
    from dpcore.figures import curve_checks

    if off := curve_checks(pts):
        st.warning(md("Not the usual trade-off — the model without noise is not the top of its curve: "
                      + "; ".join(off) + "."), icon=":material/report:")
else:
    st.caption("The privacy–utility curve appears once runs have utility scores.")

# ------------------------------------------------------------------ grid sweep (any parameters × seeds)
from dpcore.ui.sweep import sweep_panel  # noqa: E402

if in_class:  # its scored points run in the server's process: not through the class queue yet
    st.caption("Grid sweeps are not part of class mode yet: use the ε sweep above (it waits its turn "
               "in the class queue).")
else:
    sweep_panel()
