"""The ledger's hash chain: a record count and a digest over every record, in ledger.json and again
in status.json, written at each append (training, a released score, a selection's closing record).

Why: records are only ever appended, and ε only grows with them. Without an anchor, deleting the
trailing records of a ledger (three released scores) and writing the smaller ε passed every check,
since the training records alone are consistent. The digest chains the records in order
(h_i = SHA-256(h_{i-1} ‖ record_i)), so a record removed, changed or moved no longer matches the
chain, and a chain rewritten to fit no longer matches status.json's copy; a released score in
evaluation.json must also still have its record. Like the rest of dpcore.runs.verify this is a
consistency check, not a signature: someone who rewrites ledger.json, status.json and
evaluation.json consistently gets the accountant's ε of the records they left.

Runs saved before the chain (no "chain" in ledger.json and no "ledger_chain" in status.json) still
open: they are checked as before and marked legacy (`LEGACY_NOTE`); the first append by this code
(a released score) chains every record then in the ledger, and the run is checked from then on. A
chain in one file but not the other is a problem, so removing one does not make a run legacy.
"""
from __future__ import annotations

import hashlib
import json

from dpcore.evaluate.released_score import RELEASED_KEY, SCORE_RECORD
from dpcore.io import dumps

ANCHOR = "ledger_chain"  # status.json's copy
LEGACY_NOTE = "ledger saved before hash chains: records removed from its end cannot be detected"
_SEED = b"dpcore ledger chain v1"


def _canon(obj) -> bytes:
    """One byte string per JSON value, as written (inf as "inf") and as read back alike."""
    return json.dumps(json.loads(dumps(obj)), sort_keys=True, separators=(",", ":")).encode()


def chain(records: list, selection=None) -> dict:
    """{"count", "digest"} of a ledger's records (dicts as ledger.json holds them), in order, and its
    selection record when one closes it."""
    h = hashlib.sha256(_SEED).digest()
    for rec in records:
        h = hashlib.sha256(h + _canon(rec)).digest()
    if selection is not None:
        h = hashlib.sha256(h + b"selection" + _canon(selection)).digest()
    return {"count": len(records), "digest": h.hex()}


def _valid(c) -> bool:
    return (isinstance(c, dict) and isinstance(c.get("count"), int) and not isinstance(c.get("count"), bool)
            and isinstance(c.get("digest"), str) and len(c["digest"]) == 64)


def problems(ledger_doc: dict, status: dict, evaluation: dict) -> tuple[list[str], bool]:
    """(what disagrees, legacy) for ledger.json's document, status.json and evaluation.json."""
    out: list[str] = []
    stored, anchor = ledger_doc.get("chain"), status.get(ANCHOR)
    records = ledger_doc.get("records") or []
    legacy = stored is None and anchor is None
    if not legacy:
        if not _valid(stored):
            out.append("ledger.json has no valid hash chain, but status.json records one")
        elif not _valid(anchor):
            out.append("status.json does not record the ledger's hash chain that ledger.json holds")
        elif isinstance(stored, dict) and isinstance(anchor, dict):  # (_valid: for the type checker)
            now = chain(records, ledger_doc.get("selection"))
            if now != {"count": stored["count"], "digest": stored["digest"]}:
                out.append(f"ledger.json's records do not match its hash chain ({len(records)} records, the chain "
                           f"{stored['count']}): a record was removed, changed or reordered")
            if (anchor["count"], anchor["digest"]) != (stored["count"], stored["digest"]):
                out.append(f"status.json recorded a ledger of {anchor['count']} records with another digest, "
                           f"ledger.json holds {stored['count']}")
    out += _released_scores(records, evaluation)
    return out, legacy


def _released_scores(records: list, evaluation: dict) -> list[str]:
    """Every released score in evaluation.json has its record in the ledger (index, name, σ, partition)."""
    s = evaluation.get(RELEASED_KEY)
    if not isinstance(s, dict):
        return []
    i = s.get("record_index")
    rec = records[i] if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(records) else None
    if not isinstance(rec, dict) or rec.get("name") != SCORE_RECORD or rec.get("partition") != s.get("partition") \
            or not _same(rec.get("noise_multiplier"), s.get("noise_multiplier")):
        return [f"evaluation.json holds a released score whose ledger record (#{i}) is not in ledger.json"]
    return []


def _same(a, b) -> bool:
    try:
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    except (TypeError, ValueError):
        return False
