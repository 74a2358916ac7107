"""Story: one private and one non-private run side by side, and what they show in one sentence."""
from __future__ import annotations

import streamlit as st

from dpcore import ui
from dpcore.text import md
from dpcore.ui import story

st.title("Story")
st.caption("Privacy in one screen: a private model (P3GM) and a model trained without privacy that memorises "
           "its rows, on the same data. Compare what they generate, how useful it is, and what a "
           "membership attacker learns about the training rows.")

# ------------------------------------------------------------------ train the pair
choice = ui.data_choice()
train, _ = ui.load_data(choice)
eps = story.default_epsilon(ui.public_size(choice, train.n))  # a file's size is private: a constant
handle = st.session_state.get("story.handle")
busy = handle is not None and handle.is_alive()
st.button(f"Train the story pair on {ui.data_label()}", type="primary", icon=":material/play_arrow:",
          key="story.train", disabled=busy, on_click=story.start_pair, args=(choice, train.n),
          help=f"P3GM at ε = {eps:g} (this dataset's default) and the `overfit` VAE (ε = ∞), one after the other")
if err := st.session_state.pop("story.error", None):
    st.error(md(err), icon=":material/error:")
st.caption(md(f"Private: P3GM at ε = {eps:g}, the default for {train.n:,} training rows (small data needs "
              "a larger ε). Not private: a VAE trained to memorise its rows."))


@st.fragment(run_every=ui.POLL_SECONDS if busy else None)
def progress() -> None:
    h = st.session_state.get("story.handle")
    if h is None:
        return
    text, frac = story.progress_text(h)
    st.progress(frac, text=md(text))
    if h.status == "failed":
        st.error(f"Training stopped: {md(h.error)}", icon=":material/error:")
    if not h.is_alive() and not st.session_state.get("story.announced"):
        st.session_state["story.announced"] = True
        st.rerun(scope="app")


progress()

# ------------------------------------------------------------------ the pair
runs = ui.model_runs()
private_runs = [s for s in runs if story.is_private(s)]
leaky_runs = [s for s in runs if not story.is_private(s)]
if not private_runs or not leaky_runs:
    st.info("Train the pair above (or any private and any non-private run) to see the story.",
            icon=":material/info:")
    st.stop()
p_default, l_default = story.story_names(runs, st.session_state.get("story.pair"))
c1, c2 = st.columns(2)
with c1:
    p_name = ui.run_picker("Private run", private_runs, "story.private", default=p_default)
with c2:
    l_name = ui.run_picker("Non-private run", leaky_runs, "story.leaky", default=l_default)

from dpcore.evaluate.attacks import DEFAULT  # noqa: E402

sides = {}
cols = st.columns(2)
for col, name, title in ((cols[0], p_name, "Private"), (cols[1], l_name, "Not private")):
    with col, ui.guard():
        s = next(r for r in runs if r.name == name)
        st.subheader(f"{title} · ε = {ui.fmt_eps(s.epsilon)}", divider="gray")
        st.caption(md(f"{s.model} on {s.dataset}"))
        figs = ui.samples(*ui.key(name))
        if figs:
            st.plotly_chart(figs["synthetic"], key=f"story.samples.{name}")
        res, _ = ui.utility(*ui.key(name))
        results, _, _ = ui.attacks(*ui.key(name), DEFAULT)
        sides[title] = story.side_numbers(res, results, s.epsilon)
        a, b = st.columns(2)
        if res is not None:
            badge = story.utility_badge(res)
            a.metric(badge["label"], badge["value"], delta=badge["delta"], delta_color="normal",
                     help=f"Against {badge['reference_label']} = {badge['reference']}")
        auc = sides[title]["auc"]
        b.metric("best attack AUC", "—" if auc is None else f"{auc:.2f}",
                 help="0.5: the attacker cannot tell training rows from others; 1: it always can")
        for w in ui.synthetic_warnings(*ui.key(name)):
            st.warning(md(w), icon=":material/warning:")

if len(sides) == 2:
    sentence = story.verdict(sides["Private"], sides["Not private"])
    st.success(md(sentence), icon=":material/campaign:")
    log_fpr = st.toggle("Log-scaled false positive rate", key="story.log_fpr",
                        help="Zoom into the low false-positive region (0.1 %…100 %) where an attacker names "
                             "members with almost no false alarms.")
    with ui.guard():
        st.plotly_chart(story.attack_figure(p_name, l_name, DEFAULT, log_fpr), key="story.attacks")
    st.caption("Left: the share of training rows an attacker names (true positive rate) against the share of "
               "other rows it wrongly names (false positive rate) — the closer to the diagonal "
               "(guessing), the safer. Right: the same as type-II vs type-I error (higher is safer). The "
               "dashed curve in the private run's colour is what its ε allows at most; the dotted GDP curve "
               "is an approximation, not a bound. An AUC below 0.5 is chance with noise: the attacker "
               "learns nothing.")
    if st.button("Story report (private, HTML)", icon=":material/description:", key="story.export",
                 help="Both runs, their scores and the attacks: not covered by ε, for the data owner only"):
        with ui.guard():
            st.session_state["story.report"] = (p_name, l_name, story.report_html(p_name, l_name, sentence))
    rep = st.session_state.get("story.report")
    if rep and rep[:2] == (p_name, l_name):
        st.download_button("Download the story report (HTML)", rep[2].encode(), file_name=f"story-{p_name}.html",
                           mime="text/html", icon=":material/download:", key="story.download", on_click="ignore")
        st.caption("Private: contains attack statistics and scores against real data. Do not share.")
