"""Signing in with an access code: a check in constant time, wrong codes rate-limited, sessions
that expire.

Why each part: a code compared with `==` leaks, by its timing, how much of it was right; an
unknown member ID answers as slowly as a known one (a dummy scrypt). Codes carry ~79 bits, so
guessing is hopeless — unless nothing slows it: wrong codes are counted per browser session, per
member ID and for the whole server, and past `max_wrong` (per session or ID) or
`max_wrong_global` (server) within `window_seconds` every further try waits. A session lasts
`session_hours` (the class file), then the person signs in again. No Streamlit here.
"""
from __future__ import annotations

import collections
import dataclasses
import hmac
import math
import threading
import time

from dpcore.classroom.classfile import ClassFile, Member, hash_code, normalise
from dpcore.errors import DPCoreError

_DUMMY_SALT = bytes(16)


class SignInError(DPCoreError):
    """A wrong code, or too many wrong codes (the message says how long to wait)."""


def check_code(cf: ClassFile, code: str) -> Member | None:
    """The member whose code this is, else None; one scrypt and a constant-time compare either way."""
    code = normalise(code)[:200]
    record = cf.record(code.split("-", 1)[0])
    digest = hash_code(code, record.salt if record else _DUMMY_SALT, cf.kdf)
    expected = record.hash if record else bytes(32)
    return record.member if hmac.compare_digest(digest, expected) and record else None


class RateLimiter:
    """Wrong tries per key within a sliding window (thread-safe: one per server process)."""

    def __init__(self, window_seconds: float, clock=time.monotonic):
        self.window = float(window_seconds)
        self.clock = clock
        self._wrong: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._lock = threading.Lock()

    def _trim(self, key: str, now: float) -> collections.deque:
        q = self._wrong[key]
        while q and q[0] <= now - self.window:
            q.popleft()
        return q

    def wait_seconds(self, key: str, max_wrong: int) -> float:
        """0 when `key` may try again now, else the seconds until its oldest wrong try ages out."""
        with self._lock:
            now = self.clock()
            q = self._trim(key, now)
            return 0.0 if len(q) < max_wrong else max(0.0, q[len(q) - max_wrong] + self.window - now)

    def record_wrong(self, *keys: str) -> None:
        with self._lock:
            now = self.clock()
            for key in keys:
                self._trim(key, now).append(now)


GLOBAL = "*"


def sign_in(cf: ClassFile, code: str, session_key: str, limiter: RateLimiter) -> Member:
    """The member for `code`, else SignInError (wrong, or wait: the limits are checked first, so a
    right code tried while waiting is refused too — waiting cannot be skipped by guessing right)."""
    member_id = "id:" + normalise(code).split("-", 1)[0][:8]
    waits = [limiter.wait_seconds("session:" + session_key, cf.max_wrong),
             limiter.wait_seconds(member_id, cf.max_wrong),
             limiter.wait_seconds(GLOBAL, cf.max_wrong_global)]
    if max(waits) > 0:
        raise SignInError(f"Too many wrong codes: wait {math.ceil(max(waits))} s and try again.")
    member = check_code(cf, code)
    if member is None:
        limiter.record_wrong("session:" + session_key, member_id, GLOBAL)
        raise SignInError("That access code is not right. Check it with your lecturer.")
    return member


@dataclasses.dataclass(frozen=True)
class Session:
    member: Member
    class_key: str  # the class file's fingerprint
    expires: float  # seconds since the epoch

    def valid(self, cf: ClassFile | None, now: float | None = None) -> bool:
        """Not expired, and still a member of the same class (a replaced class file ends sessions)."""
        now = time.time() if now is None else now
        return (cf is not None and cf.fingerprint == self.class_key and self.member in cf.members
                and now < self.expires)


def new_session(cf: ClassFile, member: Member, now: float | None = None) -> Session:
    now = time.time() if now is None else now
    return Session(member, cf.fingerprint, now + cf.session_hours * 3600.0)
