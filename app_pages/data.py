"""Data: pick a built-in dataset or upload a CSV, check its schema, see the rows and the split."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dpcore import ui
from dpcore.errors import DPCoreError
from dpcore.text import md

st.title("Data")
st.caption("Choose the private data the models learn from. The **training split** is what the privacy "
           "guarantee protects; the **test split** is held out to measure utility and to play the "
           "non-members in the membership-inference attack.")


def _story_job():
    from dpcore.ui.story_job import current_job

    return current_job()


@st.fragment(run_every=ui.POLL_SECONDS if (_j := _story_job()) is not None and _j.is_alive() else None)
def _story_status() -> None:
    """First start: the app trains the Story in the background (story_job.autostart); say so here,
    with its progress, so the first page is not a silent wait."""
    job = _story_job()
    if job is None or (job.status == "done" and not job.runs):  # none, or the saved pair was found
        return
    if job.is_alive():
        st.info("The **Story** is being prepared in the background: the same model trained with and without "
                "privacy on the default data, then what each gives away. Look around meanwhile.",
                icon=":material/hourglass_top:")
        text, frac = job.progress()
        st.progress(frac, text=md(text))
    elif job.status == "done":
        st.page_link("app_pages/story.py", label="The Story is ready: open it", icon=":material/auto_stories:")


_story_status()


@st.cache_data(show_spinner=False)
def _datasets():
    from dpcore.data import list_datasets

    return [d.to_dict() for d in list_datasets()]


def _builtin_form(current: dict) -> dict | None:
    infos = {d["name"]: d for d in _datasets()}
    names = list(infos)
    default = current.get("dataset") if current.get("dataset") in infos else ui.default_dataset()
    c1, c2 = st.columns([3, 2], gap="large")
    with c1:
        name = st.selectbox("Dataset", names, index=names.index(default), key="data.builtin",
                            format_func=lambda n: f"{n}  ({infos[n]['kind']}, {infos[n]['rows']:,} rows)"
                            + ("" if infos[n]["available"] else "  — not installed"))
        info = infos[name]
        st.caption(info["description"])
        if not info["available"]:
            st.warning(f"**{name}** is not installed on this machine. {info['hint'] or ''}",
                       icon=":material/download:")
            return None
    with c2:
        official = info["split"] == "official"
        test_size = st.slider("Test share", 0.05, 0.5, float(current.get("test_size", 0.2)), 0.05,
                              key="data.test_size", disabled=official,
                              help="Fraction of rows held out as the real test set (stratified by label)."
                              + (" This dataset has an official split, used as is." if official else ""))
        split_seed = st.number_input("Split seed", 0, 10_000, int(current.get("split_seed", 0)),
                                     key="data.split_seed", help="Same seed → same split.")
        demo = ui.demo_rows(int(info["rows"]))
        n_default = current.get("n") if current.get("dataset") == name else demo
        limit = st.number_input("Row limit (optional)", min_value=20, max_value=max(20, int(info["rows"])),
                                value=n_default, step=100, key=f"data.n.{name}", placeholder="all rows",
                                help="Keep a seeded random subset (training and test rows together), for "
                                "quick demos." + (f" Default {demo:,}: a private run trains in about a minute "
                                                  "on two CPU cores." if demo else ""))
        outlier = False
        if "outlier" in info.get("parameters", ()):
            outlier = st.checkbox("Add one all-white outlier image", value=bool(current.get("outlier")),
                                  key="data.outlier",
                                  help="For the membership-inference demo: one very unusual record "
                                  "joins the training split; the Privacy page shows where it sits.")
    choice = {"dataset": name, "test_size": float(test_size), "split_seed": int(split_seed),
              "outlier": bool(outlier)}
    if limit:
        choice["n"] = int(limit)
    return choice


def _stored_form(current: dict) -> dict | None:
    """Tables uploaded and used before (kept with their schema edits): pick one again."""
    from datetime import datetime

    from dpcore.runs.tables import stored_tables

    tables = [t for t in stored_tables(ui.runs_root()) if t.available]
    if not tables:
        return None
    labels = {t.token: f"{t.name} — target {t.target or '(none)'}, chosen "
                       f"{datetime.fromtimestamp(t.saved):%d %b %H:%M}" for t in tables}
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    token = c1.selectbox(f"Or reuse a stored table ({len(tables)})", list(labels), format_func=labels.get,
                         key="data.stored")
    if not c2.button("Use", key="data.use_stored"):
        return None
    return next(t.choice for t in tables if t.token == token)


def _bounds_mode(frame, edited, target, current: dict, digest: str) -> tuple[str, float]:
    """Where the bounds of columns without typed bounds come from: declared first, DP one click away
    (its ε share said), the rows last and labelled. Every upload starts on DP (covered by ε): the
    default is never a function of the private row count, which a run's settings would publish;
    below the rows DP bounds need (dp_bounds_rows_needed) the page says so and asks to declare."""
    from dpcore.ui.schema_editor import BOUNDS_MODES, DATE, DECLARE, ESTIMATE, continuous_columns, dp_bounds_epsilon
    from dpcore.ui.schema_editor import dp_bounds_rows_needed as needs

    rows = edited.set_index("column")
    typed = rows["lower"].fillna("").astype(str).str.strip() != ""
    left = [c for c in continuous_columns(edited, target) if not typed[c]]
    b1, b2 = st.columns([3, 2])
    sigma = float(st.session_state.get("data.bounds_noise") or current.get("dp_bounds_noise") or 10.0)
    modes = list(BOUNDS_MODES)
    mode = b1.radio("Bounds of the numeric and date columns you did not declare", modes,
                    format_func=BOUNDS_MODES.get, index=modes.index(ESTIMATE), key=f"data.bounds_mode.{digest}",
                    help="Declared: public knowledge, no ε. Estimate with DP: a noisy histogram over a public "
                         "grid, one record in the run's ledger (part of its ε). Read from the rows: exact "
                         "min/max, NOT covered by ε (every view of the run says so).")
    noise = b2.number_input("Noise multiplier", 0.5, 100.0, sigma, 0.5, key="data.bounds_noise",
                            disabled=mode != ESTIMATE,
                            help="σ of the bounds' noisy histogram: larger spends less ε, needs more rows.")
    needed = needs(len(left), float(noise), dates=bool((rows.loc[left, "kind"].astype(str) == DATE).any()))
    if not left:
        b1.caption("Every numeric and date column has declared bounds: nothing to estimate.")
    elif mode == ESTIMATE:
        eps = dp_bounds_epsilon(len(left), float(noise), 1e-5)
        b1.caption(f"DP bounds for {md(', '.join(left))}: ε ≈ {eps:.2f} of the run's budget (at δ = 1e-5), "
                   "recorded in its ledger; the models get the rest.")
        if len(frame) < needed:
            st.warning(f"{len(frame):,} rows is too few for DP bounds at σ = {noise:g} (about {needed:,} needed): "
                       "a column's ends would be clipped, or the estimate refused. Declare the bounds of "
                       f"{md(', '.join(left))} (public knowledge), or choose another way.",
                       icon=":material/warning:")
    elif mode == DECLARE:
        b1.caption(f"Type the bounds of {md(', '.join(left))} in the table above.")
    return mode, float(noise)


def _csv_form(current: dict) -> dict | None:
    from dpcore.data.dates import FORMATS as DATE_FORMATS
    from dpcore.ui.schema_editor import (
        EDITOR_KINDS,
        ESTIMATE,
        declared_from_edits,
        guess_target,
        schema_rows,
        target_problem,
    )

    limit_mb = ui.upload_limit_bytes() // 2**20
    up = st.file_uploader(f"CSV file (up to {limit_mb} MB, UTF-8, header row)", type=["csv", "txt", "tsv"],
                          key="data.upload")
    if up is None:
        if current.get("csv"):
            st.caption(f"Current table: **{md(ui.data_label(current))}**. Upload a file to replace it.")
        return _stored_form(current)
    raw = up.getvalue()
    if len(raw) > ui.upload_limit_bytes():
        st.error(f"{md(up.name)} is {len(raw) / 2**20:.1f} MB, over the {limit_mb} MB upload limit")
        return None
    import hashlib

    digest = hashlib.sha256(raw).hexdigest()[:16]
    delims = {",": "comma ,", ";": "semicolon ;", "\t": "tab", "|": "pipe |"}
    c1, c2 = st.columns(2)
    delimiter = c1.selectbox("Delimiter", list(delims), format_func=delims.get, key="data.delimiter")
    try:
        frame = ui.parse_upload(raw, delimiter, ui.upload_limit_bytes(), up.name)
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
        return None
    if frame.shape[1] < 2:
        st.error(f"{md(up.name)} has one column ({md(frame.columns[0])}); a synthetic table needs at least "
                 "two. Check the delimiter, or add the other columns.", icon=":material/error:")
        return None
    cols = ["(none)"] + list(frame.columns)
    guess = guess_target(frame)
    target = c2.selectbox("Target column (the label to predict)", cols, index=cols.index(guess or "(none)"),
                          key="data.target")
    target = None if target == "(none)" else target
    if why := target_problem(frame, target):
        st.error(md(why), icon=":material/error:")
        return None
    st.markdown("**Schema** — edit kinds, drop columns, and **declare bounds** where a range is public "
                "knowledge (age 0 to 120, dates as YYYY-MM-DD): declared bounds cost no ε. Tick **public** "
                "when a category list is public too; check each date column's **format**. The note shows "
                "each column's range in the rows, for you only.")
    rows = schema_rows(frame, target)
    edited = st.data_editor(
        rows, key=f"data.schema.{digest}.{target}", hide_index=True, width="stretch",
        disabled=["column", "note"], placeholder="—",
        column_config={
            "kind": st.column_config.SelectboxColumn("kind", options=list(EDITOR_KINDS), required=True,
                                                     help="drop: leave the column out of the table"),
            "format": st.column_config.SelectboxColumn("format", options=list(DATE_FORMATS),
                                                       help="A date column's format, as your file writes it "
                                                            "(proposed from the rows: confirm it). A cell "
                                                            "not in this format counts as missing."),
            "lower": st.column_config.TextColumn("lower", help="Public lower bound (a number, or a date as "
                                                 "YYYY-MM-DD); empty: not declared"),
            "upper": st.column_config.TextColumn("upper", help="Public upper bound (a number, or a date as "
                                                 "YYYY-MM-DD); empty: not declared"),
            "categories": st.column_config.TextColumn("categories", help="Comma-separated levels"),
            "public": st.column_config.CheckboxColumn("public", help="The category list is public knowledge"),
            "note": st.column_config.TextColumn("note", help="What inference found: the rows' range, why a "
                                                "column is proposed for dropping", width="large"),
        })
    with st.expander("Raw rows (first 20)"):
        st.dataframe(frame.head(20), width="stretch")
    mode, noise = _bounds_mode(frame, edited, target, current, digest)
    c1, c2 = st.columns(2)
    test_size = c1.slider("Test share", 0.05, 0.5, float(current.get("test_size", 0.2)), 0.05,
                          key="data.csv_test_size")
    split_seed = c2.number_input("Split seed", 0, 10_000, int(current.get("split_seed", 0)),
                                 key="data.csv_split_seed", disabled=True,
                                 help="Not used for a file: each row goes to train or test by a keyed hash of "
                                      "the row, with a secret key kept beside the upload, so one row more or "
                                      "less changes only that row's side and every run shares one test set.")
    if not st.button("Use this table", type="primary", key="data.use_csv"):
        return None
    try:
        declared = declared_from_edits(rows, edited, target, mode)
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
        return None
    try:
        path = ui.save_upload(raw, up.name)
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
        return None
    choice = {"csv": str(path), "target": target, "name": up.name, "delimiter": delimiter,
              "test_size": float(test_size), "split_seed": int(split_seed)}
    choice.update(declared)
    if delimiter == ",":
        choice.pop("delimiter")
    estimated = [c for c, k in declared.get("types", {}).items()
                 if k in ("numeric", "integer", "date") and c not in declared.get("bounds", {})]
    if mode == ESTIMATE and estimated:
        choice["dp_bounds_noise"] = float(noise)
    return choice


def _apply(choice: dict | None, current: dict) -> None:
    if choice is None or choice == current:
        return
    try:
        ui.set_data_choice(choice)
        st.toast(f"Dataset: {md(ui.data_label(choice))}", icon=":material/check:")
    except DPCoreError as exc:
        st.error(f"{md(exc)} — keeping **{md(ui.data_label(current))}**.", icon=":material/error:")


if note := ui.fallback_note():
    st.info(note, icon=":material/info:")
current = ui.data_choice()
source = st.segmented_control("Source", ["Built-in dataset", "Upload a CSV"], key="data.source",
                              default="Upload a CSV" if current.get("csv") or ui.table_gone(current) else "Built-in dataset")
if source == "Upload a CSV":
    _apply(_csv_form(current), current)
else:
    _apply(_builtin_form(current), current)

# ------------------------------------------------------------------ the active dataset
current = ui.data_choice()
train, test = ui.load_data(current)
st.divider()
st.subheader(f"Active dataset: {md(ui.data_label(current))}")
m = st.columns(4)
m[0].metric("Training rows (private)", f"{train.n:,}")
m[1].metric("Test rows (held out)", f"{test.n:,}")
m[2].metric("Model features", f"{train.n_features:,}", help="Encoded width: one-hot categories, "
            "scaled numbers, flattened pixels, each in [0, 1].")
m[3].metric("Classes", train.n_classes or "—")
from dpcore.ui.story import budget_note  # noqa: E402

st.caption(budget_note(train.n, current))
if why := ui.dataset_why(current.get("dataset"), train.n):
    st.caption(why)
if not train.preprocessing_private:
    derived = md(", ".join(map(str, train.meta.get("data_derived") or getattr(train.schema, "data_derived", []))))
    st.warning(f"Preprocessing not covered by ε: the bounds/categories of **{derived}** were read from "
               "the private rows. Declare them public in the schema editor to close this leak.",
               icon=":material/warning:")
if train.outlier_index is not None:
    st.info("An all-white outlier image is the last training row (membership-inference demo).",
            icon=":material/person_alert:")

t1, t2, t3 = st.tabs(["Preview", "Class balance", "Split & schema"])
with t1:
    if train.is_image:
        from dpcore.figures import class_mean_images_figure, image_grid_figure

        c1, c2 = st.columns(2)
        c1.plotly_chart(image_grid_figure(train, n=64, seed=0), key="data.grid")
        if train.labels is not None:
            c2.plotly_chart(class_mean_images_figure(train), key="data.means")
    else:
        st.dataframe(train.to_frame(as_written=True).head(200), width="stretch", height=360)
with t2:
    if train.labels is None:
        st.caption("No target column: nothing to balance.")
    else:
        import numpy as np

        names = [str(v) for v in (train.label_names or range(train.n_classes))]
        counts = pd.DataFrame({
            "train": np.bincount(train.labels, minlength=len(names)),
            "test": np.bincount(test.labels, minlength=len(names)) if test.labels is not None else 0,
        }, index=pd.Index(names, name="class"))
        st.bar_chart(counts, stack=False, height=300)
        st.caption("Rows per class in each split. Rare classes are the hardest to learn privately.")
with t3:
    meta = train.meta
    how = f"seed {meta.get('split_seed')}" if "split_seed" in meta else "each row by the file's secret key"
    share = meta.get("test_size")
    st.markdown(f"- Split: **{meta.get('split', '—')}**, {how}"
                + (f", test share {share:.0%}" if isinstance(share, float) else ""))
    if meta.get("pixel_domain"):
        st.markdown(f"- Pixel domain: {meta['pixel_domain']} — public, so scaling costs no privacy.")
    if train.schema is not None:
        spec = pd.DataFrame([c.to_dict() for c in train.schema.columns])
        if "categories" in spec:  # levels of mixed types (1, "a") are text here, never an Arrow error
            spec["categories"] = [", ".join(map(str, v)) if isinstance(v, list) else "" for v in spec["categories"]]
        st.dataframe(spec, width="stretch", hide_index=True, placeholder="—")
