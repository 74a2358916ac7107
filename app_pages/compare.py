"""Compare: real vs synthetic for one run, or two runs side by side."""
from __future__ import annotations

import streamlit as st

from dpcore import ui
from dpcore.text import md

st.title("Compare")
st.caption("How close is the synthetic data to the real training data, and is it *useful*? "
           "Samples, column distributions (marginals), the latent space the model learned, and "
           "classifiers trained on synthetic rows but tested on real ones.")

info, first, second = ui.choose_runs("compare", compare=True)
chosen = [n for n in (first, second) if n]


def header(name: str) -> None:
    s = info[name]
    eps = "ε = ∞ (not private)" if s.epsilon == float("inf") else f"ε = {ui.fmt_eps(s.epsilon)}"
    from dpcore.ui.tables import run_data, settings_label

    label = settings_label(s.model, s.params or {}, run_data(s.path))  # the run name's and Runs table's form
    st.markdown(f"**{md(s.model)}** on **{md(s.dataset)}** · {eps}" + (f" · `{label}`" if label else "")
                + f" · {s.status}")


def _score(value: float) -> str:
    return "–" if value != value else f"{value:.0%}"


def side_by_side(draw) -> None:
    """Call draw(name) in one column per chosen run."""
    cols = st.columns(len(chosen)) if len(chosen) > 1 else [st.container()]
    for col, name in zip(cols, chosen):
        with col:
            if len(chosen) > 1:
                header(name)
            with ui.guard():
                draw(name)


if len(chosen) == 1:
    header(first)

tabs = st.tabs(["Samples", "Marginals", "Latent space", "Utility"])

with tabs[0]:
    def draw_samples(name: str) -> None:
        b = ui.bundle(name)
        figs = ui.samples(*ui.key(name))
        if figs:
            if len(chosen) == 1:
                c1, c2 = st.columns(2)
                c1.plotly_chart(figs["synthetic"], key=f"compare.synth.{name}")
                c2.plotly_chart(figs["real"], key=f"compare.real.{name}")
            else:
                st.plotly_chart(figs["synthetic"], key=f"compare.synth.{name}")
            if "class_means" in figs:
                st.plotly_chart(figs["class_means"], key=f"compare.means.{name}")
        else:
            st.caption(f"Synthetic rows ({b.synthetic.n:,} drawn; first 100 shown, in your columns)")
            st.dataframe(b.synthetic.to_frame(as_written=True).head(100), width="stretch", height=300)
            st.caption("Real training rows (first 100)")
            st.dataframe(b.train.to_frame(as_written=True).head(100), width="stretch", height=300)
    side_by_side(draw_samples)

with tabs[1]:
    st.caption("**TVD** (total variation distance) is the largest difference in probability any event "
               "over the bins can show: 0 = identical distributions, 1 = disjoint. **Quality** is one "
               "number in [0, 1], higher is better (as in SDMetrics' quality report): the mean of "
               "*column shapes* (1 − each column's TVD) and *column pairs* (1 − each pair's TVD): how alike the "
               "columns look, not whether the rows are useful (that is the **Utility** tab's one number). "
               "A numeric column's rows exactly at a bound or at 0 (a point mass) count as a bin of "
               "their own, \"= 0\". These scores compare with the real training rows: an evaluation "
               "for you, not covered by ε, never in the shareable release.")

    def draw_marginals(name: str) -> None:
        m = ui.cached_marginals(*ui.key(name))
        q = m["quality"]
        a, b, c = st.columns(3)
        a.metric("Quality", _score(q["score"]), help="mean of column shapes and column pairs; 1 = the "
                 "synthetic marginals match the real ones")
        b.metric("Column shapes", _score(q["column_shapes"]), help="mean over columns of 1 − 1-way TVD")
        c.metric("Column pairs", _score(q["column_pairs"]),
                 help=f"mean over {q['pairs']} column pairs of 1 − 2-way TVD")
        a, b = st.columns(2)
        a.metric("1-way TVD (mean over columns)", f"{m['tvd_1way']:.3f}")
        b.metric("2-way TVD (mean over column pairs)", f"{m['tvd_2way']:.3f}")
        one = m["one_way"]
        cols = sorted(one, key=one.get, reverse=True)
        col = st.selectbox("Column (worst first)", cols, key=f"compare.col.{name}",
                           format_func=lambda c: f"{c}  (TVD {one[c]:.3f})")
        st.plotly_chart(ui.one_way(*ui.key(name), col), key=f"compare.oneway.{name}")
        st.plotly_chart(heatmaps.get(name, m["heatmap"]), key=f"compare.heatmap.{name}")

    heatmaps = {}
    if len(chosen) > 1:  # side by side: one colour scale, or equal colours would mean different TVDs
        with ui.guard():
            from dpcore.figures import shared_color_scale

            heatmaps = dict(zip(chosen, shared_color_scale([ui.cached_marginals(*ui.key(n))["heatmap"] for n in chosen])))
    side_by_side(draw_marginals)

with tabs[2]:
    method = st.radio("Projection", ["pca", "umap"], horizontal=True, key="compare.latent_method",
                      format_func=lambda m: {"pca": "PCA (fast, ellipses exact)",
                                             "umap": "UMAP (slow, non-linear)"}[m])
    st.caption("Real training rows encoded into the latent space (coloured by class, drawn on top), the "
               "mixture-of-Gaussians prior the model samples from (red), and synthetic rows re-encoded "
               "(grey ×, underneath).")
    if method == "umap":
        from dpcore.figures import umap_seconds
        from dpcore.report import LATENT_ROWS, LATENT_SYNTHETIC

        n_points = sum(min(ui.bundle(n).train.n, LATENT_ROWS) + LATENT_SYNTHETIC for n in chosen)
        est = umap_seconds(n_points)
        if est > 20:
            st.warning(f"UMAP on {n_points:,} points takes about {ui.fmt_seconds(est)} the first time "
                       "(PCA is instant).", icon=":material/hourglass_top:")
        go_umap = st.button(f"Project with UMAP (about {ui.fmt_seconds(est)})", key="compare.umap_go") \
            or st.session_state.get("compare.umap_done")

    def draw_latent(name: str) -> None:
        if method == "umap" and not go_umap:
            st.caption("Press the button above to start the UMAP projection.")
            return
        with st.status(f"Projecting latent codes ({method.upper()})…", expanded=False) as box:
            fig = ui.latent(*ui.key(name), method)
            box.update(label=f"Latent codes projected ({method.upper()})", state="complete")
        if fig is None:
            st.caption("This model has no encoder to project.")
        else:
            from dpcore.figures import components_note

            st.plotly_chart(fig, key=f"compare.latent.{name}.{method}")
            st.caption(components_note((fig.layout.meta or {}).get("components")))
    side_by_side(draw_latent)
    if method == "umap" and go_umap:
        st.session_state["compare.umap_done"] = True

with tabs[3]:
    st.caption("Usefulness: a classifier trained on the synthetic rows predicts the target of the real "
               "held-out rows; its balanced accuracy (the mean over classes of the share predicted right; "
               "guessing scores 1 / number of classes) beside the same classifier trained on the real rows. "
               "The same number is in the Runs table and both reports.")

    def draw_utility(name: str) -> None:
        res, fig = ui.cached_utility(*ui.key(name))
        if res is None:
            st.caption("No target column: utility needs labels.")
            return
        from dpcore.evaluate.usefulness import from_saved, tiles
        from dpcore.report import load_evaluation
        from dpcore.runs.run_score import stored_score

        b = ui.bundle(name)
        found = stored_score(b.run, load_evaluation(b.run.path))
        tile = tiles(from_saved(res.to_dict()), None if found is None else found[0])
        a, c = st.columns(2)
        a.metric(tile["label"], tile["value"], delta=None if tile["delta"] is None else f"{tile['delta']} vs real",
                 delta_color="normal", help="logistic regression trained on the synthetic rows; the gap to the real "
                                            "rows is the usefulness lost to privacy and modelling")
        if tile["reference"] is not None:
            c.metric(tile["reference_label"], tile["reference"], help="the same classifier trained on the real rows")
        st.markdown(md(tile["sentence"]))
        if tile["shared"]:
            st.caption(md(tile["shared"]))
        for w in ui.synthetic_warnings(*ui.key(name)):
            st.warning(md(w), icon=":material/warning:")
        with st.expander("Other scores (AUROC, AUPRC, accuracy) for four classifiers"):
            st.plotly_chart(fig, key=f"compare.utility.{name}")
    side_by_side(draw_utility)
