"""The Story's one background job: train the pair (the app's runner, `start_training`) and score
each side (utility, the attack ladder, the canary audit), saving the numbers with the runs.

Why one job per process: the app starts it on its first start, so a presenter who opens the Story
page finds it done or running; a click or a new tab joins the running job instead of starting a
second pair on the same two cores. A later start finds the pair by its key and trains nothing.
The sides run one after the other: side by side they raced on torch's global random state (the
utility classifiers seed it), and the same PGM run scored 0.77 or 0.44 — a Story's numbers must
be the same on every page and every start. No Streamlit here: the page polls `progress()`.
"""
from __future__ import annotations

import os
import threading
import time

from dpcore.ui.story import ROLES, SIDE, saved_pair, score_side, story_configs, story_key

MODEL_NAMES = {"private": "P3GM", "nonprivate": "PGM"}
TRAIN_SHARE = 0.55  # of a side's CPU time: training (the rest: utility, attacks, canary audit; measured)
SIDE_SHARE = {"private": 0.52, "nonprivate": 0.48}  # of the job's CPU time (Fashion-MNIST: 41 s and 37 s)
SCORE_STEPS = 4  # score_side's progress messages


class _Side:
    """One side of the job: its training handle, then its scoring."""

    def __init__(self, role: str):
        self.role, self.handle, self.run = role, None, None
        self.stage, self.detail, self.steps = "waiting", "", 0
        self.started = None
        self.seconds: dict[str, float] = {}

    def fraction(self) -> float:
        if self.stage == "done":
            return 1.0
        if self.stage == "score":
            return TRAIN_SHARE + (1 - TRAIN_SHARE) * min(self.steps, SCORE_STEPS) / (SCORE_STEPS + 1)
        h = self.handle
        cur = h.current if h is not None else None
        last = h.latest if h is not None else None
        if cur is None or not last or last.get("run") != cur.target_name:
            return 0.0
        return TRAIN_SHARE * last["step"] / max(1, last["total_steps"])

    def text(self) -> str:
        name = f"{SIDE[self.role]} ({MODEL_NAMES[self.role]})"
        if self.stage == "train":
            last = self.handle.latest if self.handle is not None else None
            return f"{name}: training" + (f", {last['phase']}" if last and last.get("phase") else "")
        if self.stage == "score":
            return f"{name}: {self.detail or 'scoring'}"
        return f"{name}: {self.stage}"


class StoryJob:
    """Train the Story's pair and score it, in a thread: `.progress()`, `.status`, `.pair`, `.join()`."""

    def __init__(self, configs: list | None, root, choice: dict | None = None):
        """`configs`: the pair; or None and `choice` (a data choice): the job loads the data and
        builds the pair itself (the app's first start, which must not wait for the data)."""
        self.configs, self.root, self.choice = configs, str(root), choice
        self.key = story_key(configs) if configs else None
        self.status, self.error, self.pair = "pending", None, None
        self.sides = {role: _Side(role) for role in ROLES}
        self.started, self._first = time.time(), None
        self._thread = threading.Thread(target=self._main, name="dpcore-story", daemon=True)

    def start(self) -> "StoryJob":
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def runs(self) -> list:
        """The pair's runs, [private, nonprivate] (once trained)."""
        return [self.sides[r].run for r in ROLES if self.sides[r].run is not None]

    @property
    def seconds(self) -> dict[str, dict[str, float]]:
        return {r: dict(self.sides[r].seconds) for r in ROLES}

    def _main(self) -> None:
        self.status = "running"
        try:
            if self.configs is None:
                self.configs = pair_for(self.choice)
                self.key = story_key(self.configs)
                if saved_pair(_summaries(self.root), self.key):  # trained by an earlier start
                    self.status = "done"
                    return
            errors: list[str] = []
            for role, cfg in zip(ROLES, self.configs):
                self._side(self.sides[role], cfg, errors)
                if errors:
                    break
            if errors:
                self.status, self.error = "failed", errors[0]
                return
            self.pair = tuple(r.name for r in self.runs)
            self.status = "done"
        except Exception as exc:  # noqa: BLE001 - shown on the page as one line
            self.status, self.error = "failed", _one_line(exc)

    def _side(self, side: _Side, config, errors: list) -> None:
        """Train one side with the app's runner, then score it (utility, attacks, canary audit)."""
        from dpcore.runs import start_training

        try:
            side.started, side.stage = time.time(), "train"
            side.handle = start_training(config, self.root)
            side.handle.join()
            if side.handle.status != "done":
                errors.append(f"the {SIDE[side.role]} run {side.handle.status}: {side.handle.error}")
                side.stage = side.handle.status
                return
            side.run = side.handle.runs[-1]
            side.seconds["train"] = time.time() - side.started
            side.stage, t0 = "score", time.time()

            def say(text: str) -> None:
                side.detail, side.steps = text, side.steps + 1

            score_side(side.run, side.role, self.key, progress=say)
            side.seconds["score"] = time.time() - t0
            side.stage = "done"
        except Exception as exc:  # noqa: BLE001 - reported by the job
            side.stage = "failed"
            errors.append(_one_line(exc))

    # ------------------------------------------------------------------ what the page shows
    def fraction(self) -> float:
        """Share of the job done: each side's share, weighted by its share of the job's CPU time."""
        if self.status == "done":
            return 1.0
        return min(0.99, sum(SIDE_SHARE[r] * s.fraction() for r, s in self.sides.items()))

    def seconds_left(self) -> float | None:
        """From the pace since the first training step (loading the data and PCA are not steps)."""
        f, now = self.fraction(), time.time()
        if self._first is None:
            if f > 0:
                self._first = (now, f)
            return None
        t0, f0 = self._first
        return None if f - f0 < 0.02 else (now - t0) * (1 - f) / (f - f0)

    def progress(self) -> tuple[str, float]:
        """(text, fraction): what each side does now, and about how long is left."""
        f = self.fraction()
        if not self.is_alive():
            done = self.status == "done"
            return (f"Story ready ({time.time() - self.started:.0f} s)" if done else f"Story {self.status}"), f
        left = self.seconds_left()
        eta = "estimating the time left" if left is None else f"about {_duration(left)} left"
        if self.status == "running" and all(s.stage == "waiting" for s in self.sides.values()):
            return f"Loading the data · {eta}", f
        now = next((s for s in self.sides.values() if s.stage in ("train", "score")), None)
        return " · ".join(([now.text()] if now is not None else []) + [eta]), f


def _one_line(exc: BaseException) -> str:
    from dpcore.errors import DPCoreError

    return str(exc) if isinstance(exc, DPCoreError) else f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 90 else f"{s // 60} min {s % 60:02d} s"


_LOCK = threading.Lock()
_JOB: StoryJob | None = None
_AUTOSTARTED = False


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
