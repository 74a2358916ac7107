"""Class mode's side of the pages: who is signed in, the one queue of this server process, submitting
a page's trainings to it and showing a job's place, progress and a cancel button.

Why here: outside class mode (`member()` is None) nothing of this runs and the pages keep their
in-process thread; in class mode every training goes through the queue, so thirty students'
clicks wait their turn on Ray instead of training inside the web server. The queue's folder is
BASE/_queue with BASE the runs root every workspace lives under (BASE/workspaces/<name>).
"""
from __future__ import annotations

import threading
import time

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.text import md
from dpcore.ui.workspace import base_root  # the runs root every workspace lives under

_LOCK = threading.Lock()
_QUEUES: dict[str, object] = {}
_REFUSED: dict[str, tuple[float, str]] = {}  # base → (when, why) Ray could not be reached
RETRY_RAY_S = 60.0  # pages do not each wait on an unreachable Ray: one try a minute
STATE_ICONS = {"queued": ":material/schedule:", "running": ":material/hourglass_top:",
               "done": ":material/check_circle:", "failed": ":material/error:",
               "stopped": ":material/stop_circle:", "cancelled": ":material/cancel:",
               "interrupted": ":material/report:"}


def member():
    """The signed-in class member, or None outside class mode (dpcore.ui.signin.current_member)."""
    from dpcore.ui.signin import current_member

    return current_member()


def class_queue(executor=None):
    """This process's queue over base_root() with its dispatcher thread, made on first use (the
    Ray executor: local Ray or $RAY_ADDRESS). `executor` is for tests and the load benchmark."""
    from dpcore.runs.queue import Queue

    key = str(base_root().resolve())
    with _LOCK:
        q = _QUEUES.get(key)
        if q is None or executor is not None:
            if q is not None:
                q.close()  # type: ignore[attr-defined]
            if executor is None:
                from dpcore.runs.queue_ray import RayExecutor

                when, why = _REFUSED.get(key, (0.0, ""))
                if time.time() - when < RETRY_RAY_S:
                    raise DPCoreError(why)
                try:
                    executor = RayExecutor()
                except DPCoreError as exc:
                    _REFUSED[key] = (time.time(), str(exc))
                    raise
            q = Queue(base_root(), executor).start_dispatcher()
            _QUEUES[key] = q
        return q


def forget_queues() -> None:
    """Stop every dispatcher of this process (tests, benchmarks)."""
    with _LOCK:
        for q in _QUEUES.values():
            q.close()  # type: ignore[attr-defined]
        _QUEUES.clear()
        _REFUSED.clear()


def submit(configs: list, root, *, kind: str, title: str, steps: int | None = None, slot: str):
    """Queue `configs` for the signed-in member; the job's id is kept in the session under `slot`
    (one per page: "train", "sweep"). Raises the queue's one-line error."""
    m = member()
    job = class_queue().submit(configs, root, m.name, kind=kind, title=title, steps=steps)
    st.session_state[f"dpcore.queued.{slot}"] = job.id
    return job


def submit_pair(configs: list, root) -> None:
    """The Story's button in class mode: its pair as one job (the page scores each side when it
    opens them); a refusal is shown by `job_panel`."""
    try:
        submit(configs, root, kind="story", title="Story pair", slot="story")
    except DPCoreError as exc:
        st.session_state["dpcore.queued.story.error"] = str(exc)


def session_job(slot: str):
    """This session's job in `slot` (None when none or no longer in the queue)."""
    job_id = st.session_state.get(f"dpcore.queued.{slot}")
    return None if job_id is None else class_queue().get(job_id)


def fmt_wait(seconds: float | None) -> str:
    if seconds is None:
        return "time left not known yet"
    s = int(round(seconds))
    return f"about {s} s" if s < 90 else f"about {round(s / 60)} min"


def status_line(q, job) -> str:
    """"queued, position 3 of 7, about 2 min" / "running, 40 %, about 1 min left" / its end."""
    if job.state == "queued":
        pos = q.position(job.id)
        where = f", position {pos[0]} of {pos[1]}" if pos else ""
        return f"queued{where}, {fmt_wait(q.seconds_left(job.id))}"
    if job.state == "running":
        left = q.seconds_left(job.id)
        return (f"running, {q.fraction(job):.0%}" + (", stopping" if job.cancelled_by else "")
                + f", {fmt_wait(left)}" + (" left" if left is not None else ""))
    took = f" ({job.seconds:.0f} s)" if job.seconds else ""
    return job.state + took + (f": {job.error}" if job.error else "")


def cancel_button(q, job, key: str) -> None:
    m = member()
    if m is None or job.ended or (job.owner != m.name and not m.is_lecturer):
        return
    if st.button("Cancel", icon=":material/cancel:", key=key,
                 help="A waiting job never starts; a running one stops after its current step and its run is saved as stopped."):
        q.cancel(job.id, m.name, lecturer=m.is_lecturer)
        st.rerun()


def job_panel(slot: str) -> None:
    """This session's job in `slot`: its place in the queue or its progress, and cancel."""
    if (refused := st.session_state.pop(f"dpcore.queued.{slot}.error", None)) is not None:
        st.error(md(refused), icon=":material/error:")
    job = session_job(slot)  # a page with nothing queued does not start the queue (nor a local Ray)
    if job is None:
        return
    q = class_queue()
    running = not job.ended

    @st.fragment(run_every=1.0 if running else None)
    def panel() -> None:
        j = q.get(job.id)
        if j is None:
            return
        st.progress(q.fraction(j), text=f"{md(j.title)}: {md(status_line(q, j))}")
        if j.runs:
            st.caption("Runs: " + ", ".join(md(r) for r in j.runs))
        cancel_button(q, j, key=f"queue.cancel.{slot}")
        if j.ended and running:
            st.rerun(scope="app")

    with st.container(border=True):
        panel()


def jobs_table(owner: str | None) -> None:
    """Every job of `owner` (None: every job, the lecturer's view), newest first, each with cancel."""
    q = class_queue()
    jobs = list(reversed(q.jobs(owner)))
    if not jobs:
        st.info("No jobs yet: start a training on the Train page.", icon=":material/info:")
        return
    for job in jobs:
        c1, c2, c3 = st.columns([3, 4, 1])
        who = f" · {md(job.owner)}" if owner is None else ""
        c1.markdown(f"{STATE_ICONS.get(job.state, '')} **{md(job.title)}**{who}")
        c2.caption(md(status_line(q, job)))
        with c3:
            cancel_button(q, job, key=f"queue.cancel.{job.id}")
