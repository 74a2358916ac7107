"""The queue's files: a job as it is stored (`QueuedJob`, BASE/_queue/<id>.json) and the checks
a job file passes before the queue believes it — every field against an allow-list, the runs
folder inside the runs root, each config through RunConfig. Why so strict: a job file is data
a student's request produced, and the dispatcher trains whatever it says where it says.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcore.errors import DPCoreError
from dpcore.files import RunFileError
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
    "steps": (int, type(None)), "seconds": (float, type(None))}


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
