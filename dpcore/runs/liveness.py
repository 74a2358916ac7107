"""Is a run still training, and who may change it: liveness (pid, host, heartbeat) and the run lock.

Why: a training process holds an exclusive `flock` on ROOT/_locks/NAME.lock for as long as it trains
(the kernel drops it when the process dies), and writes its pid, host and a heartbeat into
status.json. A "running" run whose process is gone or whose heartbeat is stale reads as
"interrupted"; one whose heartbeat is in the future, or that another host stopped beating for,
reads as "unknown (last seen …)" — never as running forever.
"""
from __future__ import annotations

import fcntl
import math
import os
import socket
import time
from datetime import UTC
from pathlib import Path

from dpcore.errors import RunError

LOCKS = "_locks"               # ROOT/_locks/NAME.lock (names starting with _ are never runs)
HEARTBEAT_SECONDS = 2.0        # how often a training process refreshes status.json
STALE_SECONDS = float(os.environ.get("DPCORE_STALE_SECONDS", 30.0))


# ----------------------------------------------------------------------------- liveness
HOST = socket.gethostname()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):
        return False
    return True


def is_alive(status: dict, now: float | None = None) -> bool:
    """Is the process that wrote this "running" status still training it?"""
    return running_state(status, now) == "running"


def running_state(status: dict, now: float | None = None) -> str:
    """What a "running" status.json means now: "running", "interrupted" (its process on this host is
    gone, or silent) or "unknown (last seen …)" — a heartbeat from the future, or from another host
    and older than STALE_SECONDS: this host cannot tell, so it never reads as running forever."""
    now = time.time() if now is None else now
    beat = status.get("heartbeat")
    if not isinstance(beat, (int, float)) or isinstance(beat, bool) or not math.isfinite(beat):
        return "interrupted"
    pid, here = status.get("pid"), status.get("host") == HOST
    if beat > now + STALE_SECONDS:  # clocks never drift that far: a made-up heartbeat
        return f"unknown (last seen {_when(beat)}, in the future)"
    if here and isinstance(pid, int) and not isinstance(pid, bool):
        if not pid_alive(pid):
            return "interrupted"
        return "running" if now - beat <= STALE_SECONDS else "interrupted"
    if now - beat <= STALE_SECONDS:
        return "running"
    if here:
        return "interrupted"
    return f"unknown (last seen {_when(beat)} on {str(status.get('host'))[:64]})"


def _when(ts: float) -> str:
    from datetime import datetime

    try:
        return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return "never (a heartbeat no clock can show)"


def liveness() -> dict:
    return {"pid": os.getpid(), "host": HOST, "heartbeat": time.time()}


# ----------------------------------------------------------------------------- the lock
class RunLock:
    """An exclusive, non-blocking flock on ROOT/_locks/NAME.lock; released on `release` or process death."""

    def __init__(self, root: Path, name: str):
        self.name = name
        self.path = Path(root) / LOCKS / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(mode=0o700, exist_ok=True)  # in the runs root, never its parents
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise RunError(f"cannot lock run {self.name!r} in {self.path.parent}: "
                           f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RunLock:
        if not self.acquire():
            raise RunError(f"run {self.name!r} is being trained or changed by another process")
        return self

    def __exit__(self, *exc) -> None:
        self.release()
