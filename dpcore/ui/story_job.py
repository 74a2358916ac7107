"""The Story's one background job: train the pair (the app's runner, `start_training`), then score
each side (utility, the attack ladder, the canary audit) and save the numbers with the runs.

Why one job per process: the app starts it on its first start, so a presenter who opens the Story
page finds it done or running; a click or a new tab joins the running job instead of starting a
second pair on the same two cores. A later start finds the pair by its key and trains nothing.
No Streamlit here: the page polls `progress()`.
"""
from __future__ import annotations

import os
import threading
import time

from dpcore.ui.story import ROLES, SIDE, saved_pair, score_side, story_configs, story_key

# The share of the job's time each stage takes (Fashion-MNIST's 20 000 demo rows, two cores): the
# private training's per-example gradients cost about twice the non-private one.
STAGES = (("train", "private", 0.40), ("train", "nonprivate", 0.18),
          ("score", "private", 0.22), ("score", "nonprivate", 0.20))
MODEL_NAMES = {"private": "P3GM", "nonprivate": "PGM"}


class StoryJob:
    """Train the Story's pair and score it, in a thread: `.progress()`, `.status`, `.pair`, `.join()`."""

    def __init__(self, configs: list | None, root, choice: dict | None = None):
        """`configs`: the pair; or None and `choice` (a data choice): the job loads the data and
        builds the pair itself (the app's first start, which must not wait for the data)."""
        self.configs, self.root, self.choice = configs, str(root), choice
        self.key = story_key(configs) if configs else None
        self.status, self.error, self.pair = "pending", None, None
        self.handle = None
        self.stage, self.detail = 0, ""
        self.started = time.time()
        self.seconds: dict[str, dict[str, float]] = {role: {} for role in ROLES}  # {role: {train, score}}
        self._thread = threading.Thread(target=self._main, name="dpcore-story", daemon=True)

    def start(self) -> "StoryJob":
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        from dpcore.runs import start_training

        self.status = "running"
        try:
            if self.configs is None:
                self.configs = pair_for(self.choice)
                self.key = story_key(self.configs)
                if saved_pair(_summaries(self.root), self.key):  # trained by an earlier start
                    self.status = "done"
                    return
            self.handle = start_training(self.configs, self.root)
            self.handle.join()
            if self.handle.status != "done":
                self.status, self.error = self.handle.status, self.handle.error
                return
            runs = self.handle.runs
            for role, run in zip(ROLES, runs):
                self.seconds[role]["train"] = float(run.status().get("seconds") or 0.0)
            for i, (role, run) in enumerate(zip(ROLES, runs)):
                self.stage, t0 = 2 + i, time.perf_counter()
                score_side(run, role, self.key, progress=self._say)
                self.seconds[role]["score"] = time.perf_counter() - t0
            self.pair = tuple(r.name for r in runs)
            self.status = "done"
        except Exception as exc:  # noqa: BLE001 - shown on the page as one line
            from dpcore.errors import DPCoreError

            self.status = "failed"
            self.error = str(exc) if isinstance(exc, DPCoreError) else f"{type(exc).__name__}: {' '.join(str(exc).split())}"

    def _say(self, text: str) -> None:
        self.detail = text

    # ------------------------------------------------------------------ what the page shows
    def _stage(self) -> int:
        """Index into STAGES of what runs now."""
        if self.stage >= 2 or self.handle is None:
            return self.stage
        return min(1, len(self.handle.runs))

    def fraction(self) -> float:
        """Share of the job done, from the stage weights and the training's global step."""
        if self.status == "done":
            return 1.0
        stage, within, h = self._stage(), 0.0, self.handle
        cur = h.current if h is not None else None
        if stage < 2 and cur is not None and (last := h.latest) and last.get("run") == cur.target_name:
            within = last["step"] / max(1, last["total_steps"])
        return min(0.99, sum(w for _, _, w in STAGES[:stage]) + STAGES[stage][2] * within)

    def seconds_left(self) -> float | None:
        """Time left from the time spent so far and the share done (None until there is a share)."""
        f = self.fraction()
        if f < 0.03:
            return None
        return max(0.0, (time.time() - self.started) * (1 - f) / f)

    def progress(self) -> tuple[str, float]:
        """(text, fraction): what runs now, and about how long is left."""
        f = self.fraction()
        if not self.is_alive():
            return (f"Story ready ({time.time() - self.started:.0f} s)" if self.status == "done"
                    else f"Story {self.status}"), f
        kind, role, _ = STAGES[self._stage()]
        what = (f"Training the {SIDE[role]} run ({MODEL_NAMES[role]})" if kind == "train"
                else f"Scoring the {SIDE[role]} run: {self.detail or 'starting'}")
        if kind == "train" and self.handle is not None and (last := self.handle.latest):
            what += f" · {last.get('phase')}"
        left = self.seconds_left()
        eta = "estimating the time left" if left is None else f"about {_duration(left)} left"
        return f"{what} · {eta}", f


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 90 else f"{s // 60} min {s % 60:02d} s"


_LOCK = threading.Lock()
_JOB: StoryJob | None = None


def current_job() -> StoryJob | None:
    """The Story job of this process (running or finished), if any."""
    return _JOB


def start_story(configs: list | None, root, choice: dict | None = None) -> StoryJob:
    """Start the Story job, or join the one already running (one at a time per process)."""
    global _JOB
    with _LOCK:
        if _JOB is None or not _JOB.is_alive():
            _JOB = StoryJob(configs, root, choice).start()
        return _JOB


def data_fields(choice: dict) -> dict:
    """The data choice's fields a run's data config holds (the page's choice has a few more)."""
    import dataclasses

    from dpcore.runs.store import DataConfig

    names = {f.name for f in dataclasses.fields(DataConfig)}
    return {k: v for k, v in choice.items() if k in names}


def pair_for(choice: dict) -> list:
    """The Story's pair on a data choice (loads the data: its size sets ε and epochs)."""
    from dpcore.runs.store import DataConfig

    data = data_fields(choice)
    train, _ = DataConfig(**data).load()
    return story_configs(data, train.n)


def _summaries(root) -> list:
    from dpcore.runs.store import list_runs

    return list_runs(root)


_AUTOSTARTED = False


def autostart_enabled() -> bool:
    """Off with DPCORE_STORY_AUTOSTART=0 (the page tests: each would train the pair)."""
    return os.environ.get("DPCORE_STORY_AUTOSTART", "1") != "0"


def autostart(root) -> StoryJob | None:
    """The app's first start (once per process): the Story on the default data, in the background,
    unless it is saved already (the job then ends at once) or autostart is off."""
    global _AUTOSTARTED
    with _LOCK:
        if _AUTOSTARTED or not autostart_enabled():
            return None
        _AUTOSTARTED = True
    from dpcore.ui.defaults import default_data_choice

    return start_story(None, root, default_data_choice())
