"""Queue (class mode): your jobs in the class's training queue — their place, progress, result and
cancel; the lecturer sees every student's jobs and can cancel any. Everything is re-read from the
queue's files every two seconds, so the counts are the jobs' real state."""
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


@st.fragment(run_every=2.0)
def live() -> None:
    class_queue.service_notice()
    running, waiting = class_queue.counts(q)
    st.caption(f"Every training of the class waits its turn here: {running} running, {waiting} waiting, "
               f"{q.slots} at a time in all, {q.per_owner} per person."
               + (" As the lecturer you see every job and can cancel any." if lecturer else ""))
    class_queue.jobs_table(None if lecturer else m.name)


live()
