"""The class file: who is in the class and how to check their access codes.

Why hashed: the file sits beside the app, in backups and in the lecturer's folder; a copy of it
must not let anyone sign in. Each member's code is drawn from OS entropy (`secrets`), shown once,
and only its scrypt hash with a salt of its own is kept. A code is `ID-SECRET`: the ID (public,
like a user name: `07` for student-07, `L` for the lecturer) says which hash to check, so a
sign-in costs one scrypt, not one per member.

The file is data, never code: `load_class_file` reads it with an allow-list of fields, checks every
value's type and range (names, roles, salts, hashes, the scrypt cost, the limits) and refuses
anything else with one line. A broken or missing class file stops the app (class mode never falls
back to an open workbench).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
import tempfile
import time
from pathlib import Path
from typing import Literal

from dpcore.errors import DPCoreError

FORMAT = "dpcore-class/1"
ENV = "DPCORE_CLASS"
MAX_STUDENTS = 1000
MAX_BYTES = 2**20
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or copied by hand
SECRET_GROUPS, GROUP = 4, 4  # 16 symbols of 31: ~79 bits
KDF = {"name": "scrypt", "n": 2**14, "r": 8, "p": 1}
LIMITS = {"session_hours": 8.0, "max_wrong": 5, "max_wrong_global": 30, "window_seconds": 60.0}

_NAME = re.compile(r"^(student-\d{2,4}|lecturer)$")
_ID = re.compile(r"^(\d{2,4}|L)$")
_CLASS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$")
_HEX = re.compile(r"^[0-9a-f]+$")
_FIELDS = {"format", "name", "created", "kdf", "members", *LIMITS}
_MEMBER_FIELDS = {"name", "role", "id", "salt", "hash"}
_KDF_FIELDS = {"name", "n", "r", "p"}


class ClassFileError(DPCoreError):
    """The class file is missing, unreadable, or has a field that is not allowed."""


@dataclasses.dataclass(frozen=True)
class Member:
    """A signed-in person: their workspace is named after `name`."""
    name: str
    role: Literal["student", "lecturer"]

    @property
    def is_lecturer(self) -> bool:
        return self.role == "lecturer"


@dataclasses.dataclass(frozen=True)
class MemberRecord:
    member: Member
    id: str
    salt: bytes
    hash: bytes


@dataclasses.dataclass(frozen=True)
class ClassFile:
    name: str
    records: tuple[MemberRecord, ...]
    kdf: dict
    session_hours: float = LIMITS["session_hours"]
    max_wrong: int = int(LIMITS["max_wrong"])
    max_wrong_global: int = int(LIMITS["max_wrong_global"])
    window_seconds: float = LIMITS["window_seconds"]
    path: str | None = None

    @property
    def members(self) -> tuple[Member, ...]:
        return tuple(r.member for r in self.records)

    @property
    def fingerprint(self) -> str:
        """Changes when the class file is recreated (new codes): sessions of the old one end."""
        return hashlib.sha256(self.name.encode() + b"".join(r.hash for r in self.records)).hexdigest()[:16]

    def record(self, member_id: str) -> MemberRecord | None:
        return next((r for r in self.records if r.id == member_id), None)


# ----------------------------------------------------------------------------- codes and hashes
def hash_code(code: str, salt: bytes, kdf: dict) -> bytes:
    """scrypt of the normalised code (the cost comes from a checked class file)."""
    n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
    return hashlib.scrypt(normalise(code).encode(), salt=salt, n=n, r=r, p=p, dklen=32,
                          maxmem=256 * n * r * p + 2**20)


def normalise(code: str) -> str:
    """What a person typed, as stored: upper case, no spaces; O→0 is not guessed (never drawn)."""
    return "".join(str(code).split()).upper()


def _secret() -> str:
    groups = ("".join(secrets.choice(ALPHABET) for _ in range(GROUP)) for _ in range(SECRET_GROUPS))
    return "-".join(groups)


def create_class(name: str, students: int, *, kdf: dict | None = None) -> tuple[dict, dict[str, str]]:
    """(the class file's JSON, {member name: plain code}). The codes exist only in the second value."""
    if not isinstance(name, str) or not _CLASS_NAME.match(name):
        raise ClassFileError("--name must be 1-80 letters, digits, spaces or ._- starting with a letter or digit")
    if isinstance(students, bool) or not isinstance(students, int) or not 1 <= students <= MAX_STUDENTS:
        raise ClassFileError(f"--students must be a whole number from 1 to {MAX_STUDENTS}, got {students!r}")
    kdf = dict(kdf or KDF)
    _check_kdf(kdf)
    width = max(2, len(str(students)))
    people = [("lecturer", "lecturer", "L")] + [
        (f"student-{i:0{width}d}", "student", f"{i:0{width}d}") for i in range(1, students + 1)]
    members, codes = [], {}
    for member_name, role, member_id in people:
        code = f"{member_id}-{_secret()}"
        salt = secrets.token_bytes(16)
        members.append({"name": member_name, "role": role, "id": member_id, "salt": salt.hex(),
                        "hash": hash_code(code, salt, kdf).hex()})
        codes[member_name] = code
    doc = {"format": FORMAT, "name": name, "created": time.time(), "kdf": kdf, **LIMITS, "members": members}
    return doc, codes


def write_new(path: Path, text: str, *, force: bool, mode: int = 0o600) -> None:
    """Write `text` to `path` (private to its owner); refuse an existing file unless `force`."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ClassFileError(f"{str(path)!r} is not a plain file; choose another --out")
    if path.exists() and not force:
        raise ClassFileError(f"{str(path)!r} exists; add --force to replace it (its codes then stop working)")
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=".class.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------- loading and checking
def _check_kdf(kdf) -> None:
    if not isinstance(kdf, dict) or set(kdf) != _KDF_FIELDS or kdf.get("name") != "scrypt":
        raise ClassFileError("kdf must be {'name': 'scrypt', 'n', 'r', 'p'}")
    n, r, p = kdf["n"], kdf["r"], kdf["p"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (n, r, p)):
        raise ClassFileError("kdf n, r and p must be whole numbers")
    if not (2**10 <= n <= 2**17 and n & (n - 1) == 0 and 1 <= r <= 16 and 1 <= p <= 4):
        raise ClassFileError("kdf cost out of range (n a power of two in 2^10..2^17, r 1..16, p 1..4)")


def _number(doc: dict, key: str, lo: float, hi: float, kind=float):
    v = doc.get(key, LIMITS[key])
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi or (kind is int and v != int(v)):
        raise ClassFileError(f"{key} must be a number from {lo:g} to {hi:g}, got {v!r}")
    return kind(v)


def _record(m) -> MemberRecord:
    if not isinstance(m, dict) or set(m) != _MEMBER_FIELDS:
        raise ClassFileError(f"a member must have exactly the fields {sorted(_MEMBER_FIELDS)}")
    name, role, member_id, salt, digest = (m[k] for k in ("name", "role", "id", "salt", "hash"))
    if not isinstance(name, str) or not _NAME.match(name):
        raise ClassFileError(f"member name {str(name)[:40]!r} is not student-NN or lecturer")
    if role not in ("student", "lecturer") or (role == "lecturer") != (name == "lecturer"):
        raise ClassFileError(f"member {name}: role must be 'lecturer' for the lecturer, else 'student'")
    if not isinstance(member_id, str) or not _ID.match(member_id):
        raise ClassFileError(f"member {name}: id must be digits or L")
    for what, value, size in (("salt", salt, 16), ("hash", digest, 32)):
        if not isinstance(value, str) or len(value) != 2 * size or not _HEX.match(value):
            raise ClassFileError(f"member {name}: {what} must be {2 * size} lower-case hex digits")
    return MemberRecord(Member(name, role), member_id, bytes.fromhex(salt), bytes.fromhex(digest))


def parse_class(doc, path: str | None = None) -> ClassFile:
    """A checked ClassFile from the file's JSON (ClassFileError naming the first bad field)."""
    if not isinstance(doc, dict):
        raise ClassFileError("the class file must hold one JSON object")
    extra = set(doc) - _FIELDS
    if extra:
        raise ClassFileError(f"unknown field {sorted(extra)[0][:40]!r} in the class file")
    if doc.get("format") != FORMAT:
        raise ClassFileError(f"not a class file of this workbench (format must be {FORMAT!r})")
    name = doc.get("name")
    if not isinstance(name, str) or not _CLASS_NAME.match(name):
        raise ClassFileError("the class name must be 1-80 letters, digits, spaces or ._-")
    _check_kdf(doc.get("kdf"))
    members = doc.get("members")
    if not isinstance(members, list) or not 2 <= len(members) <= MAX_STUDENTS + 1:
        raise ClassFileError("members must be a list of the lecturer and 1 or more students")
    records = tuple(_record(m) for m in members)
    for field in ("name", "id"):
        values = [getattr(r.member, field) if field == "name" else r.id for r in records]
        if len(set(values)) != len(values):
            raise ClassFileError(f"two members share a {field}")
    if sum(r.member.is_lecturer for r in records) != 1:
        raise ClassFileError("a class has exactly one lecturer")
    return ClassFile(name=name, records=records, kdf=dict(doc["kdf"]),
                     session_hours=_number(doc, "session_hours", 0.05, 24 * 14),
                     max_wrong=_number(doc, "max_wrong", 1, 1000, int),
                     max_wrong_global=_number(doc, "max_wrong_global", 1, 100_000, int),
                     window_seconds=_number(doc, "window_seconds", 1, 86_400), path=path)


def load_class_file(path) -> ClassFile:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise ClassFileError(f"the class file {str(p)!r} is larger than {MAX_BYTES} bytes")
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ClassFileError(f"no class file at {str(p)!r}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ClassFileError(f"cannot read the class file {str(p)!r}: {type(exc).__name__}") from None
    return parse_class(doc, str(p))


_CACHE: dict[tuple, ClassFile] = {}


def class_file() -> ClassFile | None:
    """The class file named by $DPCORE_CLASS (None: not class mode). Re-read when the file changes;
    a broken file raises ClassFileError — class mode never silently turns off."""
    where = os.environ.get(ENV)
    if not where:
        return None
    p = Path(where).expanduser()
    try:
        st = p.stat()
        stamp = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    if stamp is not None and stamp in _CACHE:
        return _CACHE[stamp]
    loaded = load_class_file(p)
    if stamp is not None:
        _CACHE.clear()
        _CACHE[stamp] = loaded
    return loaded
