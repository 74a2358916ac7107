"""This session's training: the live run, the ε sweep, and the sidebar line that reports on them.

Why session state: each browser session sees only its own run, and it survives page changes; the
training itself runs in the runner's background thread.
"""
from __future__ import annotations

import threading
import time

import streamlit as st

from dpcore.text import md
from dpcore.ui.data import data_label
from dpcore.ui.nav import runs_root, shown_path

POLL_SECONDS = 1.0  # how often the live view redraws while a run trains
_LIVE_KEY, _SWEEP_KEY = "dpcore.live", "dpcore.sweep"


class LiveRun:
    """The session's training run: the runner's handle plus every event drawn so far.

    Lives in st.session_state, so each browser session sees only its own run and it survives page
    changes; the training itself runs in the runner's background thread.
    """

    def __init__(self, handle, config: dict, started: float | None = None):
        self.handle = handle
        self.config = config
        self.started = started or time.time()
        self.events: list[dict] = []
        self.announced = False
        self.progress: list[tuple[float, int, str]] = []  # (time seen, step, phase) at each poll
        self._lock = threading.Lock()

    def drain(self) -> list[dict]:
        """Copy new events from the runner's buffer; return all events so far."""
        with self._lock:
            self.events.extend(self.handle.events(len(self.events)))
            if self.events:
                last = self.events[-1]
                self.progress.append((time.time(), int(last["step"]), str(last["phase"])))
            return list(self.events)

    def seconds_taken(self) -> float:
        """The run's own duration once it has ended (status.json's start → end), else time so far."""
        run = self.handle.run
        if not self.running and run is not None:
            try:
                secs = run.status().get("seconds")
            except Exception:  # noqa: BLE001 - an unreadable status falls back to the clock
                secs = None
            if isinstance(secs, (int, float)):
                return float(secs)
        return time.time() - self.started

    @property
    def run_name(self) -> str | None:
        run = self.handle.run
        return run.target_name if run is not None else None

    @property
    def status(self) -> str:
        return str(self.handle.status)

    @property
    def running(self) -> bool:
        return self.handle.status in ("pending", "running") or self.handle.is_alive()


def live_run() -> LiveRun | None:
    return st.session_state.get(_LIVE_KEY)


def set_live_run(live: LiveRun | None) -> None:
    st.session_state[_LIVE_KEY] = live


def sweep_state():
    return st.session_state.get(_SWEEP_KEY)


def set_sweep_state(sweep) -> None:
    st.session_state[_SWEEP_KEY] = sweep


def sidebar_status() -> None:
    """Which dataset is active and whether this session's run is training (cheap; no heavy imports)."""
    with st.sidebar:
        st.caption(f"Dataset: **{md(data_label())}**")
        live = live_run()
        if live is not None:
            state = live.status
            icon = {"done": ":material/check_circle:", "stopped": ":material/stop_circle:",
                    "failed": ":material/error:"}.get(state, ":material/hourglass_top:")
            st.caption(f"{icon} Your run {md(live.run_name or '…')}: {state}")
        from dpcore.ui.signin import current_member

        if current_member() is None:  # class mode: a server's folders are nobody's business but its operator's
            st.caption(f"Runs are saved in {md(shown_path(runs_root()))}")
        else:
            st.caption("Runs are saved in your workspace on the class's server.")


def eta_seconds(progress: list[tuple[float, int, str]], total_steps: int, min_span: float = 1.0) -> float | None:
    """Time left from the current phase's own pace: (steps left) / (steps per second over the polls
    of the phase now running). Phases differ by orders of magnitude in step time (one DP-PCA step,
    thousands of DP-SGD steps), so a whole-run average misleads; None until the phase has been
    watched for `min_span` seconds."""
    if not progress:
        return None
    t_now, step_now, phase = progress[-1]
    same = [(t, s) for t, s, ph in progress if ph == phase]
    t0, s0 = same[0]
    if t_now - t0 < min_span or step_now <= s0:
        return None
    return max(0, total_steps - step_now) * (t_now - t0) / (step_now - s0)
