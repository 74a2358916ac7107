"""DP Generative Workbench — the Streamlit entry point.

Run with `make run` (or `python -m streamlit run app.py`). This file only builds the navigation;
each page lives in `app_pages/` (not `pages/`, so Streamlit's legacy folder discovery stays out of
the way) and imports what it needs, so the first page paints before torch,
opacus or umap are imported.
"""
from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="DP Generative Workbench", page_icon=":material/shield_lock:",
                   layout="wide")

PAGES = [
    st.Page("app_pages/data.py", title="Data", icon=":material/table_view:", default=True),
    st.Page("app_pages/story.py", title="Story", icon=":material/auto_stories:"),
    st.Page("app_pages/train.py", title="Train", icon=":material/model_training:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare:"),
    st.Page("app_pages/privacy.py", title="Privacy", icon=":material/shield_lock:"),
    st.Page("app_pages/runs.py", title="Runs", icon=":material/history:"),
]

from dpcore.errors import DPCoreError  # noqa: E402
from dpcore.text import md  # noqa: E402
from dpcore.ui import signin, workspace  # noqa: E402

try:  # class mode ($DPCORE_CLASS): nobody reaches a page, or the address, before signing in
    member = signin.require_member()
except DPCoreError as exc:  # a broken class file: serve nothing rather than an open workbench
    st.error(md(exc), icon=":material/error:")
    st.stop()

if member is not None:  # class mode: the training queue's page
    PAGES.append(st.Page("app_pages/queue.py", title="Queue", icon=":material/queue:"))
page = st.navigation(PAGES)

from dpcore import ui  # noqa: E402  (light: no torch at import time)
from dpcore.ui.story_job import autostart  # noqa: E402

if member is None:  # class mode trains only through the queue (the lecturer trains the Story once
    autostart(ui.runs_root())  # and publishes it); first start: the Story trains in the background
workspace.sidebar(member)

with ui.guard():  # a reload keeps the dataset and model: ?dataset=…&model=… (checked, else a note)
    ui.read_url()
for note in ui.url_notes():
    st.warning(md(note), icon=":material/link_off:")
try:
    with ui.guard():
        page.run()
finally:  # after the page, so it shows what the page just changed (dataset, live run)
    ui.sidebar_status()
    with ui.guard():
        ui.write_url()
