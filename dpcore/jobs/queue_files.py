"""The queue's files: a job as it is stored (`QueuedJob`, BASE/_queue/<id>.json) and the checks
a job file passes before the queue believes it — every field against an allow-list, the runs
folder inside the runs root, each config through RunConfig. Why so strict: a job file is data
a student's request produced, and the dispatcher trains whatever it says where it says.
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcore.errors import DPCoreError
from dpcore.files import RunFileError, read_json
from dpcore.io import atomic_write_json
from dpcore.runs.store import RunConfig

QUEUE_DIR = "_queue"
STATES = ("queued", "running", "done", "failed", "stopped", "cancelled", "interrupted")
ENDED = ("done", "failed", "stopped", "cancelled", "interrupted")
KINDS = ("training", "story", "sweep", "eps-sweep")
MAX_CONFIGS = 64  # trainings in one job (a grid sweep's points)
OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}")
JOB_ID = re.compile(r"j[0-9]{13}-[0-9a-f]{8}")
RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.=+-]{0,199}")
FIELDS: dict[str, Any] = {
    "id": str, "owner": str, "kind": str, "title": str, "root": str, "configs": list, "state": str,
    "created": float, "started": (float, type(None)), "finished": (float, type(None)), "runs": list,
    "partials": list, "error": (str, type(None)), "cancelled_by": (str, type(None)),
    "steps": (int, type(None)), "seconds": (float, type(None)), "attempts": int}
OPTIONAL = {"attempts": 0}  # fields a job file written by an older version may lack, with their default
MAX_ATTEMPTS = 2  # a job the training service lost mid-run (Ray died, the service restarted) runs again once


class QueueError(DPCoreError):
    """A queue request refused (one line for the page and the CLI)."""


@dataclass
class QueuedJob:
    """One job of the queue, as stored in BASE/_queue/<id>.json (`root` relative to BASE)."""

    id: str
    owner: str
    kind: str
    title: str
    root: str
    configs: list
    state: str = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    runs: list = field(default_factory=list)
    partials: list = field(default_factory=list)
    error: str | None = None
    cancelled_by: str | None = None
    steps: int | None = None  # the model's planned steps (the Train page's preview), for the estimate
    seconds: float | None = None  # how long it ran, once ended
    attempts: int = 0  # times it started (a job lost to a restart of the training service is queued again)

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    @property
    def model(self) -> str:
        return str(self.configs[0].get("model", "")) if self.configs else ""


def check_owner(owner: str) -> str:
    if not isinstance(owner, str) or not OWNER.fullmatch(owner):
        raise QueueError(f"not a valid owner name: {str(owner)[:40]!r}")
    return owner


def check_record(d: Any, base: Path, where: str) -> QueuedJob:
    """A job file's contents, checked field by field against the allow-list (they are data)."""
    if isinstance(d, dict):
        d = {**{k: v for k, v in OPTIONAL.items() if k not in d}, **d}
    if not isinstance(d, dict) or set(d) != set(FIELDS):
        raise RunFileError(Path(where), "not a queue job (unexpected or missing fields)")
    for name, kind in FIELDS.items():
        v = d[name]
        if kind is float or (isinstance(kind, tuple) and float in kind):
            if isinstance(v, bool) or not isinstance(v, (int, float, type(None))) or (v is None and kind is float):
                raise RunFileError(Path(where), f"field {name!r} has the wrong type")
            d[name] = None if v is None else float(v)
        elif isinstance(v, bool) or not isinstance(v, kind):
            raise RunFileError(Path(where), f"field {name!r} has the wrong type")
    if not JOB_ID.fullmatch(d["id"]) or Path(where).name != f"{d['id']}.json":
        raise RunFileError(Path(where), "job id does not match its file")
    if not OWNER.fullmatch(d["owner"]) or d["kind"] not in KINDS or d["state"] not in STATES:
        raise RunFileError(Path(where), "owner, kind or state not allowed")
    if len(d["title"]) > 120 or any(c in d["title"] for c in "\n\r<>"):
        raise RunFileError(Path(where), "title not allowed")
    if not all(isinstance(r, str) and RUN_NAME.fullmatch(r) for r in d["runs"] + d["partials"]):
        raise RunFileError(Path(where), "a run name is not allowed")
    if not 0 <= d["attempts"] <= MAX_ATTEMPTS + 1:
        raise RunFileError(Path(where), "attempts out of range")
    if not 1 <= len(d["configs"]) <= MAX_CONFIGS:
        raise RunFileError(Path(where), "no configs, or too many")
    job = QueuedJob(**d)
    resolve_root(base, job.root, where)
    for c in job.configs:
        try:
            RunConfig.from_dict(c)
        except (DPCoreError, TypeError, ValueError) as exc:
            raise RunFileError(Path(where), f"a config is refused ({' '.join(str(exc).split())[:80]})") from None
    return job


def resolve_root(base: Path, rel: str, where: str = "queue") -> Path:
    """BASE/rel, refused unless it is a plain relative path that stays inside BASE."""
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not rel or QUEUE_DIR in p.parts:
        raise RunFileError(Path(where), f"runs folder {rel[:60]!r} is not inside the runs root")
    full = (base / p).resolve()
    if not full.is_relative_to(base.resolve()):
        raise RunFileError(Path(where), f"runs folder {rel[:60]!r} is not inside the runs root")
    return full


def cancel_path(qdir: Path, job_id: str) -> Path:
    """A page's request to cancel a job (the training service applies it: only it changes a job's state)."""
    return Path(qdir) / f"{job_id}.cancel"


SERVICE_FILE = ".service.json"  # the training service's heartbeat: pid, started, beat, slots, error


BEAT_STALE_S = 10.0  # a heartbeat older than this: the training service is down or restarting
_STARTED = time.time()  # when this process started (the heartbeat's "started")


@dataclass(frozen=True)
class ServiceStatus:
    """What the pages know of the training service: `up` (a fresh heartbeat), its slots, when it was
    last seen, and the one line it left when it could not start (e.g. Ray would not start)."""

    up: bool
    seen: float | None = None
    slots: int | None = None
    error: str | None = None

    @property
    def ago(self) -> float | None:
        return None if self.seen is None else max(0.0, time.time() - self.seen)


def write_heartbeat(qdir: Path, *, slots: int | None, error: str | None = None, executor: str = "") -> None:
    atomic_write_json(Path(qdir) / SERVICE_FILE, {"pid": os.getpid(), "started": _STARTED, "beat": time.time(),
                                                  "slots": slots, "executor": executor, "error": error})


def service_status(base) -> ServiceStatus:
    """The heartbeat as data (every field checked); no file: never started."""
    try:
        d = read_json(Path(base) / QUEUE_DIR / SERVICE_FILE, base=Path(base) / QUEUE_DIR)
    except RunFileError:
        return ServiceStatus(up=False)
    if not isinstance(d, dict):
        return ServiceStatus(up=False)
    beat = d.get("beat") if isinstance(d.get("beat"), (int, float)) and not isinstance(d.get("beat"), bool) else None
    slots = d.get("slots") if isinstance(d.get("slots"), int) and 0 < d["slots"] < 10_000 else None
    error = " ".join(str(d["error"]).split())[:300] if isinstance(d.get("error"), str) else None
    up = beat is not None and error is None and time.time() - beat < BEAT_STALE_S
    return ServiceStatus(up=up, seen=beat, slots=slots, error=error)
