"""Training one run (`train_run`): validated first, trained under a lock with a heartbeat, saved as
done, stopped or failed. Many trainings, in the background or on Ray, are a job (`dpcore.jobs.jobs`).

Why a stop flag and not a killed thread: training only stops between two steps, so the model is
always in a consistent state and is saved as a usable "stopped" run.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dpcore.errors import DPCoreError, RunError
from dpcore.models.protocol import PrivacyBudget, TrainingEvent
from dpcore.runs.config import RunConfig, now_iso
from dpcore.runs.folders import begin_run, finish_run
from dpcore.runs.liveness import HEARTBEAT_SECONDS, liveness
from dpcore.runs.store import Run

EventFn = Callable[[TrainingEvent], "bool | None"]
_FLUSH_SECONDS = 1.0


def one_line(exc: BaseException) -> str:
    if isinstance(exc, DPCoreError):
        return str(exc)
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {msg}"


def prepare(config: RunConfig | dict):
    """Validate a config against its data *before* any folder is made: (config, model, train, plan).

    The model's `plan` checks every rule (unknown model, ε ≤ 0, pca_dim > the columns left after
    pooling, batch ≥ rows, step caps) as one-line DPCoreErrors and fills in the defaults that adapt
    to the data; the returned config holds those values, except the ones that depend on the row
    count (the model's `size_auto_fields`): they stay None ("auto") and the run resolves them from
    its released noisy count ñ, so config.json is the same for neighbouring datasets.
    """
    from dpcore.models import get_model
    from dpcore.privacy.randomness import NoiseSource

    cfg = config if isinstance(config, RunConfig) else RunConfig.from_dict(config)
    cls = get_model(cfg.model)
    # the data's own DP releases (bounds, a file's row limit) draw from secret streams too, seeded
    # only when the run asks for reproducible_noise (debugging; then labelled not private)
    train, _ = cfg.data.load(noise=NoiseSource.for_config(cfg.model_config(), private=True))
    plan = cls.plan(cfg.model_config(), train)
    # the plan resolved `auto` fields from the exact row count (the preview); a size-dependent one
    # stays auto (None) in config.json and the model resolves it from the released ñ in `fit`
    left_auto = {f: None for f in cls.size_auto_fields if cfg.params.get(f) is None}
    cfg = RunConfig(cfg.model, {**plan.params, **left_auto}, cfg.data, cfg.name)
    return cfg, cls(cfg.model_config()), train, plan


def _adopt(config: RunConfig | dict, root) -> RunConfig:
    """`config` reading its CSVs from ROOT/_uploads (copied there once) before anything reads
    them. Why before `prepare`: a file's split key lives beside the file the run reads, so training
    and every later re-read (evaluation, attacks) must use the same copy, or the test rows differ."""
    import dataclasses

    from dpcore.runs.uploads import adopt_csvs

    cfg = config if isinstance(config, RunConfig) else RunConfig.from_dict(config)
    if cfg.data.csv is None and cfg.data.test_csv is None:
        return cfg
    Path(root).mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(cfg, data=adopt_csvs(root, cfg.data))


def _forget_copies(config, adopted: RunConfig, root) -> None:
    from dpcore.runs.folders import forget_upload

    given = config if isinstance(config, RunConfig) else RunConfig.from_dict(config)
    for key in ("csv", "test_csv"):
        before, after = getattr(given.data, key, None), getattr(adopted.data, key, None)
        if after is not None and after != before:
            forget_upload(root, after)


def train_run(config: RunConfig | dict, root, callback: EventFn | None = None, *,
              name: str | None = None, overwrite: bool = False,
              stop: threading.Event | None = None, on_created: Callable[[Run], None] | None = None,
              on_plan: Callable | None = None) -> Run:
    """Train one run to completion (or until `callback` returns False / `stop` is set); returns it.

    The run is created only after the config and data validate (`prepare`; `on_plan(plan)` then
    sees the model's plan, e.g. the defaults it adapted), trains in ROOT/.NAME.partial-XXXX
    under an exclusive lock on NAME and moves to ROOT/NAME when it ends (a finished run replaces
    the old one under `overwrite`; a failed one never does). status.json carries the process's pid,
    host and a heartbeat, so a killed run reads as "interrupted". On a NaN loss or any error the
    run is saved as "failed" with a one-line message and the error is re-raised.
    """
    adopted = _adopt(config, root)
    try:
        cfg, model, train, plan = prepare(adopted)
    except BaseException:
        _forget_copies(config, adopted, root)  # a refused config leaves no copy of the user's table
        raise
    if on_plan is not None:
        on_plan(plan)
    run, lock = begin_run(root, name, cfg, overwrite=overwrite)
    try:
        return _train_locked(run, cfg, model, train, callback, stop, on_created)
    finally:
        lock.release()


class _Heartbeat(threading.Thread):
    """Refreshes status.json's heartbeat every HEARTBEAT_SECONDS while a run trains."""

    def __init__(self, run: Run, guard: threading.Lock):
        super().__init__(name="dpcore-heartbeat", daemon=True)
        self.target, self.guard, self.done = run, guard, threading.Event()

    def run_once(self) -> None:
        with self.guard:
            if not self.done.is_set():
                self.target.set_status("running", **liveness())

    def run(self) -> None:  # noqa: D102 - threading entry point
        while not self.done.wait(HEARTBEAT_SECONDS):
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - a missed beat only makes the run look stale
                pass


def _train_locked(run, cfg, model, train, callback, stop, on_created) -> Run:
    if on_created is not None:
        on_created(run)
    t0 = time.time()
    guard = threading.Lock()
    run.set_status("running", started=now_iso(), step=0, total_steps=None, epsilon=None, **liveness())
    beat = _Heartbeat(run, guard)
    beat.start()
    buffer: list[dict] = []
    last_flush = [time.monotonic()]
    last_event: list[TrainingEvent | None] = [None]

    def flush(ev: TrainingEvent | None = None) -> None:
        run.append_metrics(buffer)
        buffer.clear()
        last_flush[0] = time.monotonic()
        if ev is not None:
            with guard:
                run.set_status("running", step=ev.step, total_steps=ev.total_steps, epsilon=ev.epsilon,
                               phase=ev.phase, **liveness())

    def on_event(ev: TrainingEvent):
        last_event[0] = ev
        buffer.append({**ev.to_dict(), "time": round(time.time() - t0, 4)})
        if time.monotonic() - last_flush[0] > _FLUSH_SECONDS:
            flush(ev)
        keep = True
        if callback is not None and callback(ev) is False:
            keep = False
        if stop is not None and stop.is_set():
            keep = False
        return keep

    try:
        budget = None
        if getattr(model, "private", False):
            budget = PrivacyBudget(cfg.params["epsilon"], cfg.params["delta"])
        result = model.fit(train, budget, callback=on_event)
        flush(last_event[0])  # status.json ends on the last step and phase, however fast the run was
        model.save(run.model_dir)
        eps = run.save_ledger(model.privacy_ledger(), result.delta if model.private else 0.0,
                              model.private)
        if model.private and not math.isclose(eps, result.epsilon, rel_tol=1e-9, abs_tol=1e-12):
            raise RunError(f"ε mismatch: model reported {result.epsilon}, accountant {eps}")
        _end(beat, guard)
        run = finish_run(run)
        run.set_status("stopped" if result.stopped else "done", finished=now_iso(),
                       seconds=round(time.time() - t0, 3), message=None, epsilon=eps,
                       step=result.steps, ledger_chain=run.ledger_chain())  # the heartbeat may have dropped it
    except BaseException as exc:
        _end(beat, guard)
        if not run.path.is_dir():  # moved into place already, or deleted under us
            raise
        try:
            flush()
            run.save_ledger(model.privacy_ledger(), cfg.params.get("delta", 0.0), model.private)
        except Exception:  # noqa: BLE001 - best effort: the run is failing already
            pass
        try:
            chain = run.ledger_chain() if (run.path / "ledger.json").is_file() else None
            run.set_status("failed", finished=now_iso(), seconds=round(time.time() - t0, 3),
                           message=one_line(exc), **({"ledger_chain": chain} if chain else {}))
            finish_run(run, replace=False)
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass
        raise
    return run


def _end(beat: _Heartbeat, guard: threading.Lock) -> None:
    with guard:
        beat.done.set()
