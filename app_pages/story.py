"""Story: one model with and without privacy on the same rows — what privacy costs, what it buys."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from dpcore import ui
from dpcore.report import load_evaluation
from dpcore.text import md
from dpcore.ui import class_queue, story, story_job
from dpcore.ui.workspace import base_root, show_published

st.title("Story")
st.caption("Privacy in one screen: the same model trained on the same rows twice — with privacy (P3GM) and "
           "without (PGM: P3GM's pipeline with no noise, ε = ∞). Compare what they generate, how useful it "
           "is, and what each gives away about its training rows.")

# ------------------------------------------------------------------ the Story's job (one per app)
choice = ui.data_choice()
train, _ = ui.load_data(choice)
configs = story.story_configs(story_job.data_fields(choice), train.n)
eps = configs[0].params["epsilon"]
member = class_queue.member()
in_class = member is not None  # class mode: the pair is a job of the class queue
student = in_class and not member.is_lecturer
job = None if in_class else story_job.current_job()
queued = class_queue.session_job("story") if in_class else None
busy = (job is not None and job.is_alive()) or (queued is not None and not queued.ended)
runs = ui.model_runs()
pair = story.saved_pair(runs, story.story_key(configs))
label = "Train the Story again" if pair else "Train the Story"
button = dict(icon=":material/play_arrow:", key="story.train", disabled=busy,
              on_click=class_queue.submit_pair if in_class else story_job.start_story, args=(configs, ui.runs_root()),
              help=f"P3GM at ε = {eps:g} and PGM (ε = ∞) with the same settings, then their scores, the attacks "
                   "and a canary audit of each — one job; a second click or tab joins it")
if student and ui.read_only():  # the lecturer's pair: open it, never retrain it from here
    st.caption("The lecturer's published Story, read-only. For a pair of your own, pick **My workspace** under "
               "*Runs of* in the sidebar.")
elif student and not pair and not busy:
    if story_job.published_pair(base_root(), configs):
        st.info("The lecturer published this Story: open it instead of training thirty identical pairs.",
                icon=":material/campaign:")
        st.button("Open the published Story", type="primary", icon=":material/open_in_new:", key="story.published",
                  on_click=show_published)
    with st.expander("Train a pair of my own (it waits its turn in the class queue)"):
        st.button(f"Train my own Story on {ui.data_label()}", type="secondary", **button)
else:
    st.button(f"{label} on {ui.data_label()}", type="primary" if not pair else "secondary", **button)
st.caption(md(f"Private: P3GM at ε = {eps:g}, the default for {train.n:,} training rows (small data needs a "
              "larger ε). Not private: PGM, the same pipeline and settings without noise."))


@st.fragment(run_every=ui.POLL_SECONDS if busy else None)
def progress() -> None:
    j = story_job.current_job()
    if j is None or (not j.is_alive() and j.status == "done" and st.session_state.get("story.seen") is j):
        return
    text, frac = j.progress()
    st.progress(frac, text=md(text))
    if j.status == "failed":
        st.error(f"The Story stopped: {md(j.error)}", icon=":material/error:")
    if not j.is_alive() and st.session_state.get("story.seen") is not j:
        st.session_state["story.seen"] = j
        st.rerun(scope="app")


if in_class:
    class_queue.job_panel("story")
else:
    progress()
if busy and pair is None:
    st.stop()  # nothing to show until the job has scored its pair

# ------------------------------------------------------------------ the pair
private_runs = [s for s in runs if story.is_private(s)]
open_runs = [s for s in runs if not story.is_private(s)]
if not private_runs or not open_runs:
    st.info("Train the Story above (or any private and any non-private run) to see what privacy costs and buys.",
            icon=":material/info:")
    st.stop()
p_default, n_default = story.story_names(runs, pair)
c1, c2 = st.columns(2)
with c1:
    p_name = ui.run_picker("Private run", private_runs, "story.private", default=p_default)
with c2:
    n_name = ui.run_picker("Non-private run", open_runs, "story.leaky", default=n_default)

from dpcore.evaluate.attacks import DEFAULT  # noqa: E402

sides, drawn, who = {}, [], {}
cols = st.columns(2)
for col, name, role in ((cols[0], p_name, "private"), (cols[1], n_name, "nonprivate")):
    with col, ui.guard():
        s = next(r for r in runs if r.name == name)
        st.subheader(f"{story.SIDE[role].capitalize()} · {s.model.upper()} · ε = {ui.fmt_eps(s.epsilon)}",
                     divider="gray")
        st.caption(md(s.name))
        ev = load_evaluation(s.path)
        results = story.saved_results(ev)
        if not results or not ev.get("utility"):  # not a Story run: score it here (cached, saved)
            ui.cached_utility(*ui.key(name))
            results = ui.attacks(*ui.key(name), DEFAULT)[0]
            ev = load_evaluation(s.path)
        sides[role] = nums = story.side_numbers(ev, s.epsilon)
        nums["curves"] = nums["curves"] or {r.name: {"fpr": list(r.alpha), "tpr": list(1 - r.beta)} for r in results}
        who[role] = f"{s.model.upper()}, ε = {ui.fmt_eps(s.epsilon)}"
        drawn.append((story.SIDE[role], ui.bundle(name), results))
        for col_, t in zip(st.columns(3), story.tiles(nums, role)):  # first: the evidence that separates them
            col_.metric(t["label"], t["value"], delta=t["delta"], delta_color="off", delta_arrow=t["arrow"],
                        help=t["help"])
        au = nums["audit"]
        st.caption(md(f"Best attack on the training rows: {nums['best'] or '—'}, AUC "
                      + ("—" if nums["auc"] is None else f"{nums['auc']:.2f}")
                      + " (0.5 = chance)" + (f"; the audit retrained on {au.get('rows', 0):,} training rows plus "
                                            f"{au['canaries']} canaries." if au else ".")))
        figs = ui.samples(*ui.key(name))
        if figs:  # below the headline: what each side generates
            grid = go.Figure(figs["synthetic"]).update_layout(height=300, margin=dict(l=0, r=0, t=30, b=0))
            st.plotly_chart(grid, key=f"story.samples.{name}")
        for w in ui.synthetic_warnings(*ui.key(name)):
            st.warning(md(w), icon=":material/warning:")

if len(sides) == 2:
    sentence = story.verdict(sides["private"], sides["nonprivate"])
    if story.story_checks(sides["private"], sides["nonprivate"]):
        st.warning(md(sentence), icon=":material/report:")
    else:
        st.success(md(sentence), icon=":material/campaign:")
    from dpcore.figures import lesson_figure

    with ui.guard():
        st.plotly_chart(lesson_figure(story.lesson_curves(sides), who), key="story.lesson")
    st.caption("Each curve: planted canaries the model was trained on, named as such (up), against canaries it "
               "never saw, named anyway (right). Guessing is the dotted diagonal. The dashed curve is the most "
               "any attack can do against the private model's ε: its curve must stay below it (up to sampling error); "
               "the curve without privacy is free to cross it.")
    with st.expander(f"Every attack on both sides ({sum(len(r) for _, _, r in drawn)} curves) and what each "
                     "attacker sees"):
        st.markdown("**What each attacker sees**")
        st.dataframe(story.attack_table(sides), hide_index=True, width="stretch")
        log_fpr = st.toggle("Log-scaled false positive rate", key="story.log_fpr",
                            help="Zoom into the low false-positive region (0.1 %…100 %) where an attacker names "
                                 "members with almost no false alarms.")
        with ui.guard():
            st.plotly_chart(story.attack_figure(drawn, log_fpr), key="story.attacks")
        st.caption("Left: the share of training rows an attacker names (true positive rate) against the share of "
                   "other rows it wrongly names (false positive rate) — the closer to the diagonal (guessing), "
                   "the safer. Right: the same as type-II vs type-I error (higher is safer). The dashed curve in "
                   "the private run's colour is the most its ε allows; the dotted GDP curve is an approximation, "
                   "not a bound.")
    if st.button("Story report (private, HTML)", icon=":material/description:", key="story.export",
                 help="Both runs, their scores and the attacks: not covered by ε, for the data owner only"):
        with ui.guard():
            st.session_state["story.report"] = (p_name, n_name, story.report_html(p_name, n_name, sentence))
    rep = st.session_state.get("story.report")
    if rep and rep[:2] == (p_name, n_name):
        st.download_button("Download the story report (HTML)", rep[2].encode(), file_name=f"story-{p_name}.html",
                           mime="text/html", icon=":material/download:", key="story.download", on_click="ignore")
        st.caption("Private: contains attack statistics and scores against real data. Do not share.")
