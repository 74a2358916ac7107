"""The Story's one job: train the pair and score each side (utility, the attack ladder, the canary
audit), saving the numbers with the runs — a `dpcore.jobs.jobs` job like any training or sweep.

Why one job per process: the app starts it on its first start, so a presenter who opens the Story
page finds it done or running; a click or a new tab joins the running job (the jobs' one rule: the
same key, "story", while it runs) instead of starting a second pair on the same two cores. A later
start finds the pair by its key and trains nothing. The sides run one after the other: side by side
they raced on torch's global random state (the utility classifiers seed it), and the same PGM run
scored 0.77 or 0.44 — a Story's numbers must be the same on every page and every start. No
Streamlit here: the page polls the handle's `progress()`.
"""
from __future__ import annotations

import functools
import os
import threading

from dpcore.ui.story import ROLES, SIDE, saved_pair, score_side, story_configs, story_key

KEY = "story"  # the jobs' key of the Story: one at a time per process
MODEL_NAMES = {"private": "P3GM", "nonprivate": "PGM"}
TRAIN_SHARE = 0.4  # of a side's time: training (the rest: utility, attacks, canary audit; measured:
SIDE_SHARE = {"private": 0.5, "nonprivate": 0.5}  # Fashion-MNIST, 0.3–0.5 of each side's 40–80 s at load 5–9)
SCORE_STEPS = 9  # score_side's progress messages: loading, utility, 5 attacks, the audit and its halfway


def _score(run, say, role: str, key: str) -> None:
    score_side(run, role, key, progress=say)


def pair_trainings(pair: list, key: str | None = None) -> list:
    """The pair as two Trainings, each scored after it trains (utility, attacks, canary audit):
    the single-user job's and the class queue's worker's (a queued Story is audited too)."""
    from dpcore.jobs.job import Training

    key = key or story_key(pair)
    return [Training(cfg, label=f"{SIDE[role]} ({MODEL_NAMES[role]})", weight=SIDE_SHARE[role],
                     train_share=TRAIN_SHARE, after=functools.partial(_score, role=role, key=key),
                     after_steps=SCORE_STEPS) for role, cfg in zip(ROLES, pair)]


def story_job(configs: list | None, root, choice: dict | None = None):
    """The Story as a job. `configs`: the pair; or None and `choice` (a data choice): the job loads
    the data and builds the pair itself (the app's first start, which must not wait for the data),
    and trains nothing when that pair is saved already. Its summary: {"key", "pair"}."""
    from dpcore.jobs.jobs import Job

    found: dict = {}

    def build() -> list:
        pair = configs if configs is not None else pair_for(choice)
        found["key"] = key = story_key(pair)
        if configs is None and saved_pair(_summaries(root), key):  # trained by an earlier start
            return []
        return pair_trainings(pair, key)

    def finish(handle) -> dict:
        return {"key": found.get("key"), "pair": tuple(r.name for r in handle.runs) if handle.runs else None}

    return Job(kind="story", root=str(root), build=build, key=KEY, title="Story", finish=finish)


_LOCK = threading.Lock()
_AUTOSTARTED = False


def current_job():
    """The Story job of this process (running or finished), if any."""
    from dpcore.jobs import jobs

    return jobs.current(KEY)


def start_story(configs: list | None, root, choice: dict | None = None):
    """Start the Story job, or join the one already running (one at a time per process)."""
    from dpcore.jobs import jobs

    return jobs.start(story_job(configs, root, choice))


def published_pair(base, configs: list) -> tuple[str, str] | None:
    """The Story pair of these configs among the runs the lecturer published (class mode), if any."""
    from dpcore.classroom import published_root

    root = published_root(base)
    return saved_pair(_summaries(root), story_key(configs)) if root.is_dir() else None


def data_fields(choice: dict) -> dict:
    """The data choice's fields a run's data config holds (the page's choice has a few more)."""
    import dataclasses

    from dpcore.runs.config import DataConfig

    names = {f.name for f in dataclasses.fields(DataConfig)}
    return {k: v for k, v in choice.items() if k in names}


def pair_for(choice: dict) -> list:
    """The Story's pair on a data choice (loads the data: its size sets ε and epochs)."""
    from dpcore.runs.config import DataConfig

    data = data_fields(choice)
    train, _ = DataConfig(**data).load()
    return story_configs(data, train.n)


def _summaries(root) -> list:
    from dpcore.runs.store import list_runs

    return list_runs(root)


def autostart_enabled() -> bool:
    """Off with DPCORE_STORY_AUTOSTART=0 (the page tests: each would train the pair)."""
    return os.environ.get("DPCORE_STORY_AUTOSTART", "1") != "0"


def autostart(root):
    """The app's first start (once per process): the Story on the default data, in the background,
    unless it is saved already (the job then ends at once) or autostart is off."""
    global _AUTOSTARTED
    with _LOCK:
        if _AUTOSTARTED or not autostart_enabled():
            return None
        _AUTOSTARTED = True
    from dpcore.ui.defaults import default_data_choice

    return start_story(None, root, default_data_choice())
