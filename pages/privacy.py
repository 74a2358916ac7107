"""Privacy: where the budget went (the ledger), and what an attacker can still learn (MIA)."""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from dpcore import ui

ui.ensure_navigation()
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
claim = model.privacy_claim() if hasattr(model, "privacy_claim") else None
ledger = b.run.ledger()
if claim is not None:
    ui.lvae_guarantee(claim)
elif not b.private:
    st.metric("ε", "∞", help="Not differentially private")
    st.warning("**ε = ∞** — this model was trained without differential privacy. Nothing bounds what "
               "the synthetic data reveals about a training record; the attack below shows how much "
               "it actually leaks.", icon=":material/lock_open:")
elif not len(ledger):
    st.caption("The run recorded no mechanisms (stopped before touching the data).")
else:
    from dpcore import plots

    delta = b.delta
    share_rows, eps, order = plots.budget_share(ledger, delta)
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
        st.plotly_chart(plots.budget_share_figure(ledger, delta), key="privacy.share")
    with c2:
        st.plotly_chart(plots.composition_figure(ledger, delta), key="privacy.composition")
        st.caption("RDP composition (what the workbench reports) is much tighter than adding up each "
                   "step's ε sequentially, the P3GM paper's baseline.")
    with st.expander("Privacy profile δ(ε) from the PLD accountant"):
        st.plotly_chart(plots.pld_figure(ledger, delta), key="privacy.pld")
ui.what_eps_covers(b.private and claim is None, b.train.preprocessing_private)
if not b.train.preprocessing_private:
    st.warning("Preprocessing not covered by ε: some scaling bounds or category lists were read from "
               "the private data.", icon=":material/warning:")

# ------------------------------------------------------------------ the attack
st.subheader("The attack", divider="gray")
others = [n for n in info if n != name]
extra = st.multiselect("Add runs to the attack plot", others, key="privacy.more",
                       help="Compare how much different runs leak to the same attack.")
st.caption("Each curve is the attacker's trade-off: type-I error α (calling a non-member a member) "
           "against type-II error β (missing a member). Random guessing is the diagonal. The dashed "
           "curves are what the run's guarantee allows: **no attack can go below them** (up to sampling "
           "error). The dotted GDP (CLT) curve is an approximation, not a bound.")
results = []
for n in [name] + list(extra):
    with ui.guard():
        res = ui.mia(*ui.key(n))
        bn = ui.bundle(n)
        results.append((n, res, bn.run.ledger() if bn.private else None, bn))
if results:
    from dpcore import plots
    from dpcore.report import mia_figure

    fig = mia_figure([(n, r, led) for n, r, led, _ in results], b.delta)
    st.plotly_chart(fig, key="privacy.mia")
    rows = []
    for n, r, _, bn in results:
        eps = info[n].epsilon
        rows.append({"run": n, "model": info[n].model, "ε (guarantee)": "∞" if math.isinf(eps) else round(eps, 3),
                     "attack AUC": round(r.auc, 3), "empirical ε lower bound": round(r.eps_lower_bound, 3),
                     "targets per side": r.n_targets})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("AUC 0.5 = the synthetic data reveals nothing about membership. The empirical ε lower "
               "bound is what the attack *proves* (95 % confidence); it must stay below the guarantee.")
    main = results[0][1]
    if b.train.outlier_index is not None:
        st.markdown("**The outlier.** One all-white image was added to the training split. Where does the "
                    "attacker rank it?")
        c1, c2 = st.columns([1, 2])
        if main.outlier_rank is not None:
            c1.metric("Outlier's rank", f"{main.outlier_rank} / {2 * main.n_targets}",
                      help="1 = the target the attacker is most sure was a member")
            c1.metric("Distance to nearest synthetic row", f"{main.outlier_nearest:.3g}")
        c2.plotly_chart(plots.mia_scores_figure(main), key="privacy.scores")
    else:
        with st.expander("Score distributions"):
            st.plotly_chart(plots.mia_scores_figure(main), key="privacy.scores")
