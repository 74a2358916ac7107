"""Train: choose a model and a privacy budget, preview the noise, train live in the background."""
from __future__ import annotations

import json
import math

import streamlit as st

from dpcore import ui
from dpcore.errors import DPCoreError
from dpcore.text import md

st.title("Train")
st.caption("Pick a model and a privacy budget. The budget is turned into noise *before* training "
           "starts (preview below); training then runs in the background — you can browse the other "
           "pages and come back. Every run is saved the moment it starts.")

ui.restore_widgets("train.")  # the settings chosen before another page ran (Streamlit drops them)
choice = ui.data_choice()
train, test = ui.load_data(choice)
c1, c2 = st.columns([4, 1])
c1.markdown(f"Training on **{md(ui.data_label(choice))}** — {train.n:,} private rows × {train.n_features} "
            f"features{f', {train.n_classes} classes' if train.n_classes else ''}.")
c2.page_link("app_pages/data.py", label="Change data", icon=":material/table_view:")
unknown_keys = set(choice) - ui.data_config_fields()
if unknown_keys:
    st.warning("Your schema edits (" + ", ".join(sorted(unknown_keys)) + ") cannot be recorded in a "
               "run yet: the run re-reads the file with the inferred schema.", icon=":material/warning:")

# What a model trained without DP is for, by its declared role (BaseSynthesizer.role)
NON_PRIVATE_ROLES = {
    "ceiling": "Use it as the utility ceiling the private model of its family is compared with.",
    "baseline": "A non-private baseline: compare with it, but it is the noise-free twin of no private model here.",
}

live = ui.live_run()
busy = live is not None and live.running
from dpcore.ui import class_queue  # noqa: E402 (no Ray until class mode asks for the queue)

member = class_queue.member()  # class mode: trainings go to the class queue, never into this process
queued = None
if member is not None:
    live = None
    try:
        queued = class_queue.session_job("train")
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
    busy = queued is not None and not queued.ended

# ------------------------------------------------------------------ the live view
@st.fragment(run_every=ui.POLL_SECONDS if (live is not None and live.running) else None)
def live_panel() -> None:
    from dpcore.figures import measures_marginals, phase_label, progress_figure

    live = ui.live_run()
    if live is None:
        return
    events = live.drain()
    status = live.status
    last = events[-1] if events else None
    target = live.config["params"].get("epsilon", math.inf)
    c1, c2, c3 = st.columns([3, 1, 1])
    c1.markdown(f"**{md(live.run_name or 'starting…')}** · {live.config['model']} on "
                f"{md(ui.data_label(live.config['data']))} · status **{status}**")
    if live.running:
        if c3.button("Stop", icon=":material/stop:", key="train.stop",
                     help="Stops after the current step and saves a usable model."):
            live.handle.stop()
            st.toast("Stopping after this step…")
    if last is not None:
        frac = min(1.0, last["step"] / max(1, last["total_steps"]))
        left = ui.eta_seconds(live.progress, last["total_steps"]) if live.running else None
        phases = []
        for e in events:
            if e["phase"] not in phases:
                phases.append(e["phase"])
        strip = " → ".join(f"{phase_label(p)}{' ✓' if p != last['phase'] or not live.running else ''}"
                           for p in phases)
        st.progress(frac, text=f"step {last['step']:,} / {last['total_steps']:,} · {strip} · "
                    + ((f"about {ui.fmt_seconds(left)} left" if left is not None else "estimating time left…")
                       if live.running else f"took {ui.fmt_seconds(live.seconds_taken())}"))
        spent = last.get("epsilon", 0.0)
        if math.isfinite(target) and spent is not None and math.isfinite(spent):
            c2.metric("ε spent", f"{spent:.2f}", help="The accountant's ε of the ledger so far")
            st.progress(min(1.0, spent / target), text=f"ε spent: {spent:.2f} of {target:g}")
        else:
            c2.metric("ε", "∞")
        st.plotly_chart(progress_figure(events), key="train.losses")
        if measures_marginals(events):
            st.caption("Each round measures marginals (counts over one or two columns) with Gaussian noise of "
                       "std σ; the ledger records every σ and the accountant turns them into ε. No loss: the "
                       "model is fitted to the noisy counts once they are in.")
        else:
            st.caption("raw losses — not covered by ε (data owner only): computed on the private rows without noise.")
        with st.expander("About these numbers"):
            for note in ui.TRAINING_NOTES:
                st.markdown(f"- {note}")
    elif live.running:
        st.progress(0.0, text="loading data and calibrating…")
    if status == "failed":
        st.error(f"Training failed: {md(live.handle.error or 'unknown error')} — the run is saved as failed.",
                 icon=":material/error:")
    elif status in ("done", "stopped"):
        msg = "Training finished." if status == "done" else "Training stopped; the model so far is saved."
        st.success(msg + " Open **Compare** for samples and scores, **Privacy** for the budget and attacks.",
                   icon=":material/check_circle:")
        if live.run_name:
            warns, check = ui.fit_warnings(*ui.key(live.run_name, ui.runs_root()))
            for w in warns:
                st.warning(md(w), icon=":material/warning:")
            if check and check["predicts"]:
                st.info(md(check["text"]), icon=":material/fact_check:")
    if not live.running and not getattr(live, "announced", False):
        live.announced = True
        st.rerun(scope="app")



if queued is not None:
    st.subheader("Your job in the class queue", anchor=False)
    class_queue.job_panel("train")
    st.subheader("New run", divider="gray", anchor=False)
if live is not None:
    with st.container(border=True):
        st.subheader("Live run" if busy else "Last run", anchor=False)
        live_panel()
    st.subheader("New run", divider="gray", anchor=False)

# ------------------------------------------------------------------ model and budget
from dpcore.models import MODELS  # noqa: E402 (cheap: models are imported on first use)

names = list(MODELS)
recommended = ui.recommended_model(choice, train)  # preselects it in the box below for new data
model = st.selectbox("Model", names, key="train.model", format_func=lambda n: ui.model_info(n)["label"])
info = ui.model_info(model)
st.caption(info["description"])
if model == recommended.model:
    st.caption(":material/recommend: Recommended for this data. " + md(recommended.reason))
else:
    st.info(f"Recommended for this data: **{ui.model_info(recommended.model)['label']}**. "
            + md(recommended.reason), icon=":material/recommend:")
fields = {p.name: p for p in ui.config_fields(info["config_class"])}
public_rows = ui.public_size(choice, train.n)  # a built-in's row count; None for a file (private)
# the model's own defaults for this size, the ones the CLI's RunConfig fills in (P3GM: ε and epochs)
defaults = ui.model_defaults(info["config_class"], public_rows)
sized = {name: v for name, v in defaults.items() if v != fields[name].default}  # such a widget is keyed
# by its default, so another size starts afresh
size_auto = set(MODELS[model].size_auto_fields)  # left auto (None), a run resolves them from ñ
params: dict = {}
k = f"train.{model}."  # widget keys per model: switching models keeps each model's settings
facts_json = ui.data_facts_json(train)
from dpcore.models.presets import preset as _preset  # noqa: E402
from dpcore.models.presets import preset_names  # noqa: E402

chosen_preset = None
if preset_names(model):
    opts = ["default"] + preset_names(model)
    pick = st.radio("Preset", opts, horizontal=True, key=k + "preset",
                    format_func=lambda o: o if o == "default" else f"{o} — {_preset(model, o)['help']}")
    if pick != "default":
        chosen_preset = _preset(model, pick)
        defaults.update(chosen_preset["params"])
        k += pick + "."  # the preset's own widgets, starting from its values
        st.info(f"Preset **{pick}**: " + ", ".join(f"{n} = {v}" for n, v in chosen_preset["params"].items())
                + "; trains on half of the rows (test_size 0.5) so the attacks have as many non-members. "
                "This model is meant to leak: see the Privacy page.", icon=":material/school:")
try:  # the defaults' plan on this data: what `auto` fields become and how far a field may go
    default_plan = ui.plan_preview(model, json.dumps(defaults, default=str), facts_json)
except DPCoreError:
    default_plan = {"params": defaults, "limits": {}}
limits, planned = default_plan["limits"], default_plan["params"]


def main_widget(p) -> None:
    """The Model column: a slider over the field's typical range (or what the data allows)."""
    top = limits.get(p.name)
    if p.typical is not None or top is not None:
        lo, hi = p.typical or (1, 100)
        hi = (max(1, min(top, 100)) if top is not None  # an auto field (None) offers what the plan resolved
              else max(hi, int(defaults[p.name] or planned.get(p.name) or hi)))
        start = min(int(planned.get(p.name) or defaults[p.name] or lo), hi)
        key = k + (f"{p.name}.{hi}" if top is not None else p.name) + (f".d{start}" if p.name in sized else "")
        value = st.slider(p.name.replace("_", " ").capitalize(), lo, hi, start, key=key, help=p.help)
        # a size-dependent auto field left where the plan put it stays auto: the run resolves it
        # from its released noisy count ñ (the CLI's None), never from the exact rows shown here
        auto = p.name in size_auto and defaults[p.name] is None and value == start
        params[p.name] = None if auto else value
    else:
        params[p.name] = ui.config_widget(p, k + p.name, st, default=defaults[p.name])


left, right = st.columns(2, gap="large")
with left:
    st.subheader("Privacy budget", divider="gray")
    if info["private"] and "epsilon" in fields:
        default_eps = float(defaults["epsilon"])
        eps_opts = list(ui.EPSILON_CHOICES)
        if default_eps not in eps_opts:
            default_eps = 1.0
        params["epsilon"] = st.select_slider(
            "Total ε", eps_opts, value=default_eps, key=k + "epsilon" + (f".d{default_eps:g}" if "epsilon" in sized else ""),
            help=fields["epsilon"].help, format_func=lambda v: f"{v:g}")
        if fields["epsilon"].by_size is not None:
            st.caption(f"Default ε = {default_eps:g} for {train.n:,} training rows (small data needs a larger ε)."
                       if public_rows is not None else
                       f"Default ε = {default_eps:g}: a file's row count is private, so its defaults are "
                       "constants (epochs and batch are resolved from the released noisy count in the run).")
        d0 = float(defaults.get("delta", ui.default_delta()))
        params["delta"] = st.number_input(
            "δ", min_value=1e-12, max_value=0.1, value=d0, step=1e-6, format="%.1e",
            key=k + "delta", help="Default: 10⁻⁵ for every dataset (a δ computed from the row count "
                                  "would publish it).")
        if params["delta"] >= 1 / train.n:
            st.warning(f"δ ≥ 1/n = {1 / train.n:.1e}: the guarantee would allow leaking a whole record.",
                       icon=":material/warning:")
        for p in fields.values():  # the budget's split (a field of group "budget", e.g. an encoder share)
            if p.group == "budget" and p.name not in params:
                params[p.name] = st.slider(p.name.replace("_", " ").capitalize() + " of ε", 0.05, 0.95,
                                           float(defaults[p.name]), 0.05, key=k + p.name, help=p.help)
        for note in info["notes"]:
            st.caption(md(note))
    else:
        st.metric("ε", "∞", help="Not differentially private")
        st.info("**ε = ∞** — this model is trained without differential privacy. " + NON_PRIVATE_ROLES[info["role"]]
                + "".join(" " + note for note in info["notes"]), icon=":material/lock_open:")
    with st.expander("What do ε and δ mean?"):
        st.markdown(ui.EPSILON_EXPLAINER)
with right:
    st.subheader("Model", divider="gray")
    for p in fields.values():
        if p.group == "main":
            main_widget(p)

with st.expander("Advanced settings"):
    rest = [p for name, p in fields.items() if name not in params and p.group != "budget"]
    cols = st.columns(3)
    for i, p in enumerate(rest):
        auto = f"auto: {planned.get(p.name)}" if p.auto is not None else None
        params[p.name] = ui.config_widget(p, k + "adv." + p.name, cols[i % 3], default=defaults[p.name],
                                          placeholder=auto)
ui.keep_widgets("train.")  # …and survive going to another page and back

# ------------------------------------------------------------------ validate + the model's plan
error = None
config = None
plan = None
try:
    from dpcore.runs import RunConfig

    # every widget's value through its field's parser (the CLI's and the sweeps' too)
    params = {name: ui.coerce_param(fields[name], v) if name in fields else v for name, v in params.items()}
    data_cfg = {key: v for key, v in choice.items() if key in ui.data_config_fields()}
    if chosen_preset is not None:
        data_cfg.update(chosen_preset.get("data", {}))
    config = RunConfig(model=model, params=params, data=data_cfg)
    plan = ui.plan_preview(model, json.dumps(config.params, sort_keys=True, default=str), facts_json)
except DPCoreError as exc:
    error = str(exc)
if error is None:
    ui.remember_params(model, config.params)  # the Runs page's ε sweep starts from these

st.subheader("Noise preview", divider="gray")
if error:
    st.error(md(error), icon=":material/error:")
else:
    if plan["adapted"]:
        st.info("Adapted to this data: " + "; ".join(f"**{n}** {why}" for n, why in plan["adapted"].items()),
                icon=":material/tune:")
    st.caption(f"{plan['steps']:,} training steps.")
if error is None and plan["noise"]:
    from dpcore.figures import budget_share_figure
    from dpcore.privacy.ledger import PrivacyLedger

    st.caption("How the budget becomes noise. Each σ is a *noise multiplier*: the noise's standard "
               "deviation relative to the most one person can change that step. Larger σ = more "
               "privacy, noisier learning.")
    m = st.columns(len(plan["noise"]) + 1)
    for col, (label, sigma) in zip(m, plan["noise"].items()):
        col.metric(label, "—" if sigma is None else f"{sigma:.4g}")
    m[-1].metric("ε by the accountant", ui.fmt_eps(plan["epsilon"], 3),
                 help="Computed from the planned ledger with RDP composition — never typed in. The "
                      "ledger starts with the noisy row count ñ (σ_n = 50, bar \"dataset-size\") "
                      "the run releases first; the run then uses ñ, not your exact row count, for "
                      "its sampling rate and steps, so its σ's differ slightly from these and its ε "
                      "is the same.")
    st.plotly_chart(budget_share_figure(PrivacyLedger.from_list(plan["ledger"]), plan["delta"]),
                    key="train.share")
    for note in plan["notes"]:  # the model's own words on its preview (P3GM: the encoder's share)
        st.caption(md(note))
elif error is None and not info["private"]:
    st.caption("No noise is added (ε = ∞).")
elif error is None:
    st.caption("No noise at this setting (ε = ∞).")

start = st.button("Start training", type="primary", icon=":material/play_arrow:",
                  disabled=busy or error is not None, key="train.start",
                  help="Training runs in the background; one run at a time per session."
                  + (" In class mode it waits its turn in the class queue." if member is not None else ""))
if busy:
    st.caption("A run is in progress — stop it or wait for it to finish to start another.")
if start and config is not None and not busy and member is not None:
    try:
        class_queue.submit([config], ui.runs_root(), kind="training", title=f"{info['label']} training",
                           steps=plan["steps"] if plan else None, slot="train")
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
    else:
        st.rerun()
elif start and config is not None and not busy:
    from dpcore.jobs import start_training

    handle = start_training(config, ui.runs_root())
    ui.set_live_run(ui.LiveRun(handle, config.to_dict()))
    st.rerun()

