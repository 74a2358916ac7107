"""Queue (class mode): your jobs in the class's training queue — their place, progress and cancel;
the lecturer sees every student's jobs and can cancel any."""
from __future__ import annotations

import streamlit as st

from dpcore.ui import class_queue

st.title("Queue")
m = class_queue.member()
if m is None:
    st.info("The training queue is part of class mode: without a class file every training runs "
            "in this app directly (Train page).", icon=":material/info:")
    st.stop()
lecturer = m.is_lecturer
q = class_queue.class_queue()
waiting, running = len(q.waiting()), sum(j.state == "running" for j in q.jobs())
st.caption(f"Every training of the class waits its turn here and runs on Ray: {running} running, "
           f"{waiting} waiting, {q.slots} at a time in all, {q.per_owner} per person."
           + (" As the lecturer you see every job and can cancel any." if lecturer else ""))


@st.fragment(run_every=2.0 if running or waiting else None)
def table() -> None:
    class_queue.jobs_table(None if lecturer else m.name)


table()
