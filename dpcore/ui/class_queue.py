"""Class mode's side of the pages: who is signed in, the class's queue as its files say, submitting
a page's trainings to it and showing a job's place, progress, result and a cancel button.

Why here: outside class mode (`member()` is None) nothing of this runs and the pages keep their
in-process thread; in class mode every training goes through the queue. The web server never
starts or imports Ray: it writes job files and reads them (`Queue(base)` without an executor); the
training service (`python -m dpcore class serve`, i.e. `make run CLASS=…`) runs them, so a dying Ray
never takes a page down. The queue's folder is BASE/_queue with BASE the runs root every workspace
lives under (BASE/workspaces/<name>).
"""
from __future__ import annotations

import threading

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.text import md
from dpcore.ui.workspace import base_root  # the runs root every workspace lives under

_LOCK = threading.Lock()
_QUEUES: dict[str, object] = {}
STATE_ICONS = {"queued": ":material/schedule:", "running": ":material/hourglass_top:",
               "done": ":material/check_circle:", "failed": ":material/error:",
               "stopped": ":material/stop_circle:", "cancelled": ":material/cancel:",
               "interrupted": ":material/report:"}
SLOT_KINDS = {"train": ("training",), "story": ("story",), "sweep": ("eps-sweep", "sweep")}


def member():
    """The signed-in class member, or None outside class mode (dpcore.ui.signin.current_member)."""
    from dpcore.ui.signin import current_member

    return current_member()


def class_queue(executor=None):
    """The queue over base_root() as this server sees it: a client that writes requests and reads
    the files (the training service dispatches). `executor` is for tests and the load benchmark:
    a queue that dispatches itself (its tests tick it)."""
    from dpcore.jobs.queue import Queue

    key = str(base_root().resolve())
    with _LOCK:
        q = _QUEUES.get(key)
        if q is None or executor is not None:
            if q is not None:
                q.close()  # type: ignore[attr-defined]
            q = Queue(base_root(), executor) if executor is not None else Queue(base_root())
            if executor is not None:
                q.start_dispatcher()
            _QUEUES[key] = q
        return q


def forget_queues() -> None:
    """Forget this process's queues (tests, benchmarks)."""
    with _LOCK:
        for q in _QUEUES.values():
            q.close()  # type: ignore[attr-defined]
        _QUEUES.clear()


def service_notice() -> None:
    """One line when the training service is not dispatching: restarting, never started, or refused."""
    from dpcore.jobs.queue_files import service_status

    q = class_queue()
    if getattr(q, "dispatching", False):
        return
    s = service_status(q.base)
    if s.up:
        return
    if s.error:
        st.error(md(f"The training service could not start: {s.error}. Jobs wait in the queue; the service "
                    "tries again by itself."), icon=":material/error:")
    elif s.seen is not None:
        st.warning(md(f"The training service is restarting (last seen {s.ago:.0f} s ago): queued jobs wait and "
                      "start when it is back; a job it lost runs again."), icon=":material/sync_problem:")
    else:
        st.warning("The training service is not running: start the class with `make run CLASS=…` (or "
                   "`python -m dpcore class serve`). Jobs wait in the queue until it runs.",
                   icon=":material/sync_problem:")


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
    """This session's job in `slot`, else the member's newest unfinished job of that kind (after a
    server restart the session forgot it; the queue did not). None when there is none."""
    q = class_queue()
    job_id = st.session_state.get(f"dpcore.queued.{slot}")
    job = None if job_id is None else q.get(job_id)
    m = member()
    if m is not None and (job is None or job.ended):
        live = [j for j in q.jobs(m.name) if not j.ended and j.kind in SLOT_KINDS.get(slot, ())]
        if live:
            job = live[-1]
            st.session_state[f"dpcore.queued.{slot}"] = job.id
    return job


def fmt_wait(seconds: float | None) -> str:
    if seconds is None:
        return "time left not known yet"
    s = int(round(seconds))
    return f"about {s} s" if s < 90 else f"about {round(s / 60)} min"


def status_line(q, job) -> str:
    """"queued, position 3 of 7, about 2 min" / "running, 40 %, about 1 min left" / its end."""
    asked = q.cancelling(job.id) and not job.ended
    if job.state == "queued":
        pos = q.position(job.id)
        where = f", position {pos[0]} of {pos[1]}" if pos else ""
        again = " (runs again: the training service restarted)" if job.attempts else ""
        return ("cancelling" if asked else f"queued{where}, {fmt_wait(q.seconds_left(job.id))}") + again
    if job.state == "running":
        left = q.seconds_left(job.id)
        return (f"running, {q.fraction(job):.0%}" + (", stopping" if job.cancelled_by or asked else "")
                + f", {fmt_wait(left)}" + (" left" if left is not None else ""))
    took = f" ({job.seconds:.0f} s)" if job.seconds else ""
    return job.state + took + (f": {job.error}" if job.error and job.state != "done" else "")


def cancel_button(q, job, key: str) -> None:
    m = member()
    if m is None or job.ended or (job.owner != m.name and not m.is_lecturer) or q.cancelling(job.id):
        return
    if st.button("Cancel", icon=":material/cancel:", key=key,
                 help="A waiting job never starts; a running one stops after its current step and its run is saved as stopped."):
        q.cancel(job.id, m.name, lecturer=m.is_lecturer)
        st.rerun()


def _point(job) -> None:
    """Point the pages at a finished job's runs (a button's callback: before the sidebar's picker
    draws): the owner's workspace (the lecturer's view of a student's), its last run on Compare."""
    from dpcore.ui.workspace import OWN, VIEW

    m = member()
    st.session_state[VIEW] = OWN if m is None or job.owner == m.name else job.owner
    if job.kind != "story":
        st.session_state["compare.run"] = job.runs[-1]


def open_button(job, key: str) -> None:
    """"Open" for a finished job with runs: Compare on its run, the Story page for a Story pair."""
    if job.state != "done" or not job.runs:
        return
    if st.button("Open", icon=":material/open_in_new:", key=key, on_click=_point, args=(job,),
                 help="Open its run on Compare (a Story pair on the Story page)"):
        st.switch_page("app_pages/story.py" if job.kind == "story" else "app_pages/compare.py")


def job_panel(slot: str) -> None:
    """This session's job in `slot`: its place in the queue or its progress, and cancel."""
    if (refused := st.session_state.pop(f"dpcore.queued.{slot}.error", None)) is not None:
        st.error(md(refused), icon=":material/error:")
    job = session_job(slot)
    if job is None:
        return
    q = class_queue()
    running = not job.ended
    if running:
        service_notice()

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


def ordered(q, jobs: list) -> list:
    """Running first, then the waiting ones by their place in the queue, then the ended, newest first."""
    place = {j.id: i for i, j in enumerate(q.waiting())}
    running = [j for j in jobs if j.state == "running"]
    waiting = sorted((j for j in jobs if j.state == "queued"), key=lambda j: place.get(j.id, 1 << 30))
    ended = sorted((j for j in jobs if j.ended), key=lambda j: (j.finished or j.created), reverse=True)
    return running + waiting + ended


def counts(q) -> tuple[int, int]:
    """(running, waiting) in the whole queue, from the files as they are now."""
    jobs = q.jobs()
    return sum(j.state == "running" for j in jobs), sum(j.state == "queued" for j in jobs)


def jobs_table(owner: str | None) -> None:
    """Every job of `owner` (None: every job, the lecturer's view): running, waiting by place, then
    ended with their runs, an Open button and the one-line reason of a failure; cancel where allowed."""
    q = class_queue()
    jobs = ordered(q, q.jobs(owner))
    if not jobs:
        st.info("No jobs yet: start a training on the Train page.", icon=":material/info:")
        return
    for job in jobs:
        c1, c2, c3 = st.columns([3, 4, 1.4])
        who = f" · {md(job.owner)}" if owner is None else ""
        c1.markdown(f"{STATE_ICONS.get(job.state, '')} **{md(job.title)}**{who}")
        line = status_line(q, job)
        if job.runs and job.ended:
            line += " · " + ", ".join(job.runs)
        c2.caption(md(line))
        with c3:
            cancel_button(q, job, key=f"queue.cancel.{job.id}")
            open_button(job, key=f"queue.open.{job.id}")
