"""The check every opener of a run makes: ε recomputed from the ledger's records, never believed.

Why: a run folder is a few JSON files anyone can edit. Its ε is therefore recomputed by the
accountant over ledger.json's records whenever the run is opened (listing, sample, evaluate, attack,
both reports, the app), and checked against every other place that states it: ledger.json's stored
ε, δ and "private" flag, the config's target ε and δ, model.json's copy of the ledger and its fit
result, status.json, and the ε and steps in metrics.jsonl. Any disagreement marks the run
"ledger inconsistent (edited?)": it is listed without an ε, never as private, and every opener that
would show or export it refuses with that one-line message. A finished run without a ledger is
inconsistent too (it is not "done").

The records are append-only in effect: ledger.json and status.json hold the hash chain of every
record (dpcore.runs.ledger_chain), so a removed, shortened or reordered ledger is flagged, and a
released score in evaluation.json must have its record; a run saved before the chain is checked as
before and noted as legacy (`LedgerCheck.note`).

Records released after training (a usefulness score on the held-out rows,
dpcore.evaluate.released_score) trail the training records in ledger.json: model.json, status.json
and the fit result state the training ε (the accountant over the records before them, which must
also meet the config's target), ledger.json and every opener the ε over all records.

This is a consistency check, not a signature: someone who rewrites every file consistently (records,
ε, model.json, metrics) with a smaller noise still gets the accountant's ε of those records shown.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from dpcore.errors import DPCoreError, RunError

INCONSISTENT = "ledger inconsistent (edited?)"
REL_TOL, ABS_TOL = 1e-6, 1e-9  # stored numbers are the same accountant's: they agree to ~1e-12
METRICS_TAIL_BYTES = 64 * 1024
FINISHED = ("done", "stopped")


@dataclass(frozen=True)
class LedgerCheck:
    """What opening a run found: the accountant's ε (inf: not private; nan: no ledger yet or
    inconsistent) and every disagreement. `private`: ε may be shown and exported as a guarantee."""

    epsilon: float
    delta: float
    consistent: bool = True
    problems: tuple[str, ...] = field(default_factory=tuple)
    seeded_noise: bool = False
    claims_private: bool = False
    legacy: bool = False  # saved before the ledger's hash chain (dpcore.runs.ledger_chain)

    @property
    def private(self) -> bool:
        return self.consistent and self.claims_private and not self.seeded_noise and math.isfinite(self.epsilon)

    @property
    def message(self) -> str | None:
        """One line: "ledger inconsistent (edited?): <first problems>" (None when consistent)."""
        if self.consistent:
            return None
        more = f" (+{len(self.problems) - 2} more)" if len(self.problems) > 2 else ""
        return f"{INCONSISTENT}: " + "; ".join(self.problems[:2]) + more

    @property
    def note(self) -> str | None:
        """What a consistent run's check could not cover (a legacy ledger), else None."""
        from dpcore.runs.ledger_chain import LEGACY_NOTE

        return LEGACY_NOTE if self.consistent and self.legacy else None


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _num(v) -> float:
    from dpcore.runs.safety import as_number

    return math.nan if isinstance(v, bool) else as_number(v)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _last_event(path) -> dict | None:
    """The last whole JSON line of metrics.jsonl (only its tail is read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - METRICS_TAIL_BYTES))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(ev, dict):
            return ev
    return None


def _model_meta(run) -> dict | None:
    from dpcore.files import MAX_MODEL_JSON_BYTES, read_json

    path = run.model_dir / "model.json"
    if not path.is_file():
        return None
    meta = read_json(path, max_bytes=MAX_MODEL_JSON_BYTES)
    if not isinstance(meta, dict):
        raise RunError(f"{path} must be an object")
    return meta


def _records(items) -> list[dict] | None:
    from dpcore.privacy.ledger import MechanismRecord

    try:
        return [MechanismRecord.from_dict(r).to_dict() for r in items]
    except (DPCoreError, TypeError, ValueError, KeyError, AttributeError):
        return None


def training_records(led) -> list:
    """The ledger's records without the trailing ones released after training (released scores)."""
    from dpcore.evaluate.released_score import SCORE_RECORD

    recs = list(led.records)
    while recs and recs[-1].name == SCORE_RECORD:
        recs.pop()
    return recs


def check_run(run) -> LedgerCheck:
    """Recompute a run's ε from its ledger and compare it with every stored copy (see module doc).

    A file that cannot be read at all is a RunError (dpcore.files); a file that reads but
    disagrees is a problem in the returned LedgerCheck."""
    from dpcore.models import MODELS
    from dpcore.privacy.accountant import epsilon as accountant_epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    status = run.raw_status()
    st = status.get("status", "created")
    params = run.config.params
    model_private = bool(getattr(MODELS.get(run.config.model), "private", True))
    has_model = run.has_model()
    if not (run.path / "ledger.json").is_file():
        if st in FINISHED or has_model:
            return LedgerCheck(math.nan, math.nan, False, (f"no ledger.json in a {st} run with a model"
                                                          if has_model else f"no ledger.json in a {st} run",))
        return LedgerCheck(math.nan, math.nan)
    d = run._ledger_json()
    led = run.ledger()
    problems: list[str] = []
    claims = d.get("private", True)
    stored_eps, delta = _num(d.get("epsilon")), _num(d.get("delta"))
    sel = led.selection
    if claims != model_private:
        problems.append(f"ledger.json says private {str(claims).lower()}, but {run.config.model} is "
                        f"{'a private' if model_private else 'a non-private'} model")
    trained = training_records(led)
    if any(r.partition == "heldout" for r in led) and not run.config.data.keyed_split:
        problems.append("a held-out record composes in parallel, but this run's split does not keep rows apart")
    eps_train = math.nan
    if model_private:
        eps = math.nan
        if not (0 < delta < 1):
            problems.append(f"δ {_fmt(delta)} is outside (0, 1)")
        else:
            if not _close(delta, _num(params.get("delta"))):
                problems.append(f"ledger.json's δ {_fmt(delta)} is not the config's {_fmt(_num(params.get('delta')))}")
            try:
                eps = float(accountant_epsilon(led, delta))
                eps_train = eps if len(trained) == len(led) else float(
                    accountant_epsilon(PrivacyLedger(trained, sel), delta))
            except DPCoreError as exc:
                problems.append(f"the accountant cannot read the ledger ({exc})")
        if math.isfinite(eps) and not _close(stored_eps, eps):
            problems.append(f"ledger.json says ε {_fmt(stored_eps)}, the accountant over its records "
                            f"{_fmt(eps)}")
        target = _num(params.get("epsilon"))
        if math.isfinite(eps) and sel is not None and not _close(target, eps):
            problems.append(f"config.json's ε {_fmt(target)} is not the released ε {_fmt(eps)}")
        elif math.isfinite(eps_train) and sel is None and not eps_train <= target * (1 + REL_TOL) + ABS_TOL:
            problems.append(f"the accountant's ε {_fmt(eps_train)} exceeds the config's target {_fmt(target)}")
        if has_model and not any(r.steps for r in led):
            problems.append("a trained private model with no noisy step in its ledger")
        stored_sel = d.get("selection") or {}
        if sel is not None and "mean_trials" in stored_sel and not _close(_num(stored_sel["mean_trials"]),
                                                                          sel.mean_trials):
            problems.append("the selection's mean number of trials is not its distribution's")
    else:
        eps = eps_train = math.inf
        if not math.isinf(stored_eps) or stored_eps < 0:
            problems.append(f"ledger.json says ε {_fmt(stored_eps)} for a model without DP (ε = ∞)")
    problems += _copies(run, d, eps_train, delta, st, has_model, len(trained))
    from dpcore.runs.ledger_chain import problems as chain_problems

    broken, legacy = chain_problems(d, status, run.evaluation())
    problems += broken
    shown = eps if not problems else math.nan
    return LedgerCheck(shown, delta if not problems else math.nan, not problems, tuple(problems),
                       led.reproducible_noise, model_private and claims is True, legacy)


def _copies(run, d: dict, eps: float, delta: float, st: str, has_model: bool, n_trained: int) -> list[str]:
    """Disagreements between the recomputed training ε (`eps`, over the first `n_trained` records)
    and model.json, status.json and metrics.jsonl."""
    out: list[str] = []
    meta = _model_meta(run) if has_model else None
    steps = None
    if meta is not None:
        if _records(meta.get("ledger", [])) != _records(d.get("records", [])[:n_trained]):
            out.append("model.json's copy of the ledger differs from ledger.json")
        cfg = c if isinstance(c := meta.get("config"), dict) else {}
        for key in ("epsilon", "delta"):
            if key in cfg and key in run.config.params and not _close(_num(cfg[key]), _num(run.config.params[key])):
                out.append(f"model.json's {key} differs from config.json's")
        fit = meta.get("fit_result") if isinstance(meta.get("fit_result"), dict) else None
        if fit is not None:
            steps = fit.get("steps")
            if not math.isnan(eps) and not _close(_num(fit.get("epsilon")), eps):
                out.append(f"model.json says ε {_fmt(_num(fit.get('epsilon')))}, the accountant {_fmt(eps)}")
            if math.isfinite(eps) and not _close(_num(fit.get("delta")), delta):
                out.append("model.json's δ differs from ledger.json's")
    status = run.raw_status()
    if st in FINISHED and status.get("epsilon") is not None and not math.isnan(eps) \
            and not _close(_num(status.get("epsilon")), eps):
        out.append(f"status.json says ε {_fmt(_num(status.get('epsilon')))}, the accountant {_fmt(eps)}")
    last = _last_event(run.path / "metrics.jsonl") if st in FINISHED else None
    if last is not None:
        m_eps = _num(last.get("epsilon"))
        if math.isfinite(eps) and math.isfinite(m_eps) and m_eps > eps * (1 + REL_TOL) + ABS_TOL:
            # ε spent only grows: a log that spent more than the ledger holds means records went missing
            out.append(f"the training log reached ε {_fmt(m_eps)}, the ledger only {_fmt(eps)}")
        if isinstance(steps, int) and isinstance(last.get("step"), int) and last["step"] != steps:
            out.append(f"the training log ends at step {last['step']}, model.json says {steps}")
    return out


CHECKED_FILES = ("config.json", "status.json", "ledger.json", "metrics.jsonl", "model/model.json", "evaluation.json")


def files_key(run) -> tuple:
    """(size, mtime) of every file the check reads: a cached check is stale when this changes."""
    out: list[tuple[int, int] | None] = []
    for name in CHECKED_FILES:
        try:
            st = (run.path / name).stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def require_consistent(run) -> LedgerCheck:
    """`check_run` (cached on the Run), raising RunError with its one-line message when the run is
    inconsistent."""
    check = run.check() if hasattr(run, "check") else check_run(run)
    if not check.consistent:
        raise RunError(f"run {run.name!r}: {check.message}")
    return check
