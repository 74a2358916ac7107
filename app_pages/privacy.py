"""Privacy: where the budget went (the ledger), and what an attacker can still learn (MIA)."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore import ui

st.title("Privacy")
st.caption("Two views of the same question. **The guarantee**: every noisy step on private data is "
           "recorded in a ledger, and the accountant turns the ledger into ε. **The attack**: a "
           "membership-inference attacker looks only at the synthetic data and guesses who was in "
           "the training set; the guarantee bounds how well any such attacker can do.")

info, name, _ = ui.choose_runs("privacy")
s = info[name]
b = ui.bundle(name)
model = b.model

# ------------------------------------------------------------------ the guarantee
st.subheader("The guarantee", divider="gray")
claim = model.privacy_claim()  # a model's own claim beside the accountant's ε (None for most)
ledger = b.run.ledger()
if claim is not None:
    ui.model_claim(claim)
elif not b.private:
    st.metric("ε", "∞", help="Not differentially private")
    st.warning("**ε = ∞** — this model was trained without differential privacy. Nothing bounds what "
               "the synthetic data reveals about a training record; the attack below shows how much "
               "it actually leaks.", icon=":material/lock_open:")
elif not len(ledger):
    st.caption("The run recorded no mechanisms (stopped before touching the data).")
else:
    from dpcore import figures
    from dpcore.privacy.budget import budget_share

    delta = b.delta
    share_rows, eps, order = budget_share(ledger, delta)
    m = st.columns(4)
    m[0].metric("ε (accountant)", ui.fmt_eps(s.epsilon, 3),
                help="RDP composition of every ledger record, tight RDP → (ε, δ) conversion")
    m[1].metric("δ", f"{delta:.1e}")
    m[2].metric("Optimal RDP order α*", f"{order:g}")
    m[3].metric("Mechanisms", len(ledger))
    st.caption(ui.EPSILON_EXPLAINER)
    table = pd.DataFrame([{
        "mechanism": r["name"], "kind": r["mechanism"], "noise multiplier σ/Δ": r["noise_multiplier"],
        "sampling rate q": r["sampling_rate"], "steps": r["steps"], "sensitivity Δ": r["sensitivity"],
        "share of budget": r["share"]} for r in share_rows])
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "noise multiplier σ/Δ": st.column_config.NumberColumn(format="%.4g"),
        "sampling rate q": st.column_config.NumberColumn(format="%.4g"),
        "share of budget": st.column_config.ProgressColumn("share of budget", min_value=0.0, max_value=1.0,
                                                            format="percent")})
    c1, c2 = st.columns(2)
    with c1:
        st.plotly_chart(figures.budget_share_figure(ledger, delta), key="privacy.share")
    with c2:
        st.plotly_chart(figures.composition_figure(ledger, delta), key="privacy.composition")
        st.caption("RDP composition (what the workbench reports) is much tighter than adding up each "
                   "step's ε sequentially, the P3GM paper's baseline.")
    with st.expander("Privacy profile δ(ε) from the PLD accountant"):
        st.plotly_chart(figures.pld_figure(ledger, delta), key="privacy.pld")
ui.what_eps_covers(b.private and claim is None, b.train.preprocessing_private, ledger.reproducible_noise)
if not b.train.preprocessing_private:
    st.warning("Preprocessing not covered by ε: some scaling bounds or category lists were read from "
               "the private data.", icon=":material/warning:")

# ------------------------------------------------------------------ the attack
st.subheader("The attacks", divider="gray")
st.warning("Everything in this section is measured against the real training and held-out rows: "
           "**not covered by ε — data owner only**. Do not publish it with the synthetic data.",
           icon=":material/shield_person:")
from dpcore.evaluate.attacks import ATTACKS, DEFAULT, available  # noqa: E402
from dpcore.report import load_evaluation  # noqa: E402
from dpcore.text import md  # noqa: E402
from dpcore.ui import story  # noqa: E402

saved = story.side_numbers(load_evaluation(s.path), s.epsilon)
if saved["audit"] or saved["auc"] is not None:  # the Story's numbers for this run, as the Story shows them
    st.markdown("**Saved with this run** (the Story's scores: no need to run anything)")
    for col_, t in zip(st.columns(3), story.tiles(saved, "private" if story.is_private(s) else "nonprivate")):
        col_.metric(t["label"], t["value"], delta=t["delta"], delta_color="off", delta_arrow=t["arrow"],
                    help=t["help"])
    st.caption(md(f"Best attack on the training rows: {saved['best'] or '—'}, AUC "
                     + ("—" if saved["auc"] is None else f"{saved['auc']:.2f}") + " (0.5 = chance)."))

can_run = [n for n in ATTACKS if available(n, model) is None]
chosen = st.multiselect("Attacks", can_run, default=[n for n in DEFAULT if n in can_run], key="privacy.attacks",
                        format_func=lambda n: f"{n} — sees {ATTACKS[n].sees}",
                        help="A ladder of attackers, from one who sees only the synthetic rows to the data "
                             "owner holding the model. loss-reference trains one more model.")
for n in ATTACKS:
    why = available(n, model)
    if why:
        st.caption(f"{n}: not available — {why}.")
others = [n for n in info if n != name and info[n].dataset == s.dataset]  # attacks on other data do not compare
extra = st.selectbox("Compare with another run", ["—"] + others, key="privacy.more",
                     help=f"Runs on the same dataset ({s.dataset}) only. Its attacks are drawn in their own colour, "
                          "with its own bound.")
log_fpr = st.toggle("Log-scaled false positive rate (zoom into 0.1 %…100 %)", key="privacy.log_fpr",
                    help="A real attacker cares about the few members it can name with almost no false alarms: "
                         "the low-FPR corner of the ROC curve.")
names = tuple(chosen)
est = ui.attack_estimate_seconds(name, names) if names else 0.0
go_ = st.button(f"Run the attacks (about {ui.fmt_seconds(est)})", key="privacy.run_attacks", type="primary") \
    if est > 5 else True
if names and go_:
    with ui.guard():
        results, skipped, exposed = ui.attacks(*ui.key(name), names)
        runs = [(name, results)]
        if extra != "—":
            other = ui.bundle(extra)
            ok = tuple(n for n in names if available(n, other.model) is None)
            runs.append((extra, ui.attacks(*ui.key(extra), ok)[0]))
        from dpcore.figures import exposed_records_figure, short_labels
        from dpcore.report import attack_figure, run_curves

        labels = short_labels([{"model": info[n].model, "epsilon": info[n].epsilon, "params": info[n].params}
                               for n, _ in runs])
        curves = [run_curves(ui.bundle(n), res, lab) for (n, res), lab in zip(runs, labels)]
        st.plotly_chart(attack_figure(curves, log_fpr=log_fpr), key="privacy.mia")
        st.caption("Left, the ROC view: the share of members an attacker names (true positive rate) against "
                   "the share of non-members it wrongly names (false positive rate); the diagonal is "
                   "guessing. Right, the same attacks as a trade-off: type-I error α (calling a non-member a "
                   "member) against type-II error β (missing a member). Each run has one colour; its dashed "
                   "curves are what its own ε and δ allow — no attack can do better (up to sampling error). "
                   "The dotted GDP curve is a central-limit approximation, not a bound. Hover a curve for "
                   "the full run name.")
        rows = []
        for run_name, res in runs:
            eps = info[run_name].epsilon
            for r in res:
                rows.append({"run": run_name, "attack": r.name, "sees": r.sees, "AUC": round(r.auc, 3),
                             "TPR @ 0.1 % FPR": r.tpr_at_fpr["0.001"], "TPR @ 1 % FPR": r.tpr_at_fpr["0.01"],
                             "TPR @ 10 % FPR": r.tpr_at_fpr["0.1"],
                             "empirical ε ≥ (95 %)": round(r.eps_lower_bound, 3),
                             "ε CI": f"[{r.eps_lower_bound:.2f}, {r.eps_upper:.2f}]",
                             "ε (accountant)": "∞" if math.isinf(eps) else round(eps, 3)})
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption("AUC 0.5 = the attacker learns nothing; an AUC a little below 0.5 is sampling noise "
                   "around 0.5, not extra protection. The empirical ε lower bound is what an attack "
                   "*proves* at 95 % confidence (Clopper–Pearson); for a DP run it must stay below the "
                   "accountant's ε. Not covered by ε — data owner only.")
        if skipped:
            st.caption("Not run: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
        if exposed is not None and exposed["outlier_rank"] is not None:
            st.metric("Outlier's rank", f"{exposed['outlier_rank']} / {exposed['n_scored']}",
                      help=f"Where {exposed['attack']} ranks the injected all-white image (1 = surest it was "
                           "a member). Not covered by ε — data owner only.")
        if exposed is not None and exposed["image_shape"] is not None:
            caps = ["member" if m else "non-member" for m in exposed["member"]]
            st.plotly_chart(exposed_records_figure(exposed["targets"], exposed["nearest"], exposed["image_shape"],
                                                   caps), key="privacy.exposed")
            st.caption(f"The targets **{exposed['attack']}** is surest were trained on, and their nearest "
                       "synthetic rows. Not covered by ε — data owner only.")
        elif exposed is not None:
            st.markdown(f"**Most exposed records** (by {exposed['attack']}; not covered by ε — data owner only)")
            cols = b.train.to_frame().columns[:b.train.n_features]
            frame = pd.DataFrame(exposed["targets"], columns=[str(c) for c in cols[:exposed["targets"].shape[1]]]) \
                if len(cols) == exposed["targets"].shape[1] else pd.DataFrame(exposed["targets"])
            frame.insert(0, "was a member", exposed["member"])
            st.dataframe(frame, hide_index=True)

st.markdown("**How tight is this ε?** A canary audit (Steinke, Nasr & Jagielski 2023) retrains the model "
            "once with crafted canaries, each included by a secret coin flip, and proves a lower bound "
            "on ε from how many the loss attack guesses right.")
m_can = st.select_slider("Canaries", [64, 128, 256, 512], value=256, key="privacy.canaries")
train_s = b.run.status().get("seconds")
if st.button(f"Run the canary audit (retrains the model: about "
             f"{ui.fmt_seconds((train_s or 60) * (b.train.n + m_can / 2) / max(1, b.train.n))})",
             key="privacy.audit", disabled=not hasattr(model, "encode")):
    with ui.guard(), st.spinner("Training once with canaries…"):
        au = ui.canary_audit(*ui.key(name), m_can)
        c = st.columns(3)
        c[0].metric("ε (accountant)", ui.fmt_eps(au["accountant_epsilon"], 3))
        c[1].metric(f"ε lower bound ({au['confidence']:.0%})", f"{au['epsilon_lower_bound']:.2f}")
        c[2].metric("correct guesses", f"{au['correct']} / {au['guesses']}")
        st.caption("The audit's bound is loose by design: it sees losses, not gradients, and uses "
                   f"{au['canaries']} canaries in one run. Not covered by ε — data owner only.")
