"""Private selection of a sweep's best run: Papernot & Steinke's random number of trials.

Why: choosing the best run by its score on private data is a release, so a plain "best of the
sweep" is labelled "best on private data (selection not covered by ε)". `select_private` makes a
covered choice instead:

1. the sweep itself runs (or is found finished): every grid point's ledger bounds the base
   algorithm Q = "train a uniformly random grid point" (a mixture: its RDP is at most the
   pointwise maximum of the points' curves);
2. K is drawn from a truncated negative binomial (Theorem 2) or Poisson (Theorem 6) with a
   secret stream (dpcore.privacy.randomness), and K grid points uniformly with another;
3. K fresh trials are trained and scored (runs NAME--trial001, …) on the sweep's backend;
4. only the best trial is released, as its own run ROOT/NAME--selected: its ledger.json gets a
   SelectionRecord (the rule, the grid's settings and Q's RDP bound, rounded up: the largest RDP
   curve of any grid point's plan over a public range of noisy counts around the released ñ,
   `public_base_curve`), so the ε the store shows is the accountant's over the closed ledger, and
   config.json, model.json and status.json carry that same ε.

K, the drawn points, the trials and their ledgers, counts and scores are secret (the theorem
needs K hidden; a trial's ledger tells its noisy count through q = B/ñ): they stay in the runs root
(NAME--trialNNN, ROOT/_sweeps/NAME.selection.json and NAME.released.json, private like the rows)
and never enter the released run, so that a stopped selection resumes with the same draw instead
of drawing again (re-drawing until a result pleases would void the guarantee). Q's published
bound is computed from public facts (the grid, the released run's ñ and the count's σ), not from
the trials' ledgers, whose curves differ with their noisy counts (by ~30 % on 600 rows); only for a
model whose plan does not tell its ledger (a trial's curve above the planned bound) does the bound
fall back to including the trials' curves.
Not covered: the held-out test rows the scores are computed on (the training rows are).
"""
from __future__ import annotations

import dataclasses
import json
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np

from dpcore.errors import InvalidParameter, RunError
from dpcore.jobs.jobs import JobHandle
from dpcore.jobs.sweep import (
    SWEEPS_DIR,
    SweepSpec,
    point_configs,
    point_row,
    points_job,
    rows_of,
    run_sweep,
    save_summary,
)
from dpcore.privacy.accountants.selection import (
    NEGATIVE_BINOMIAL,
    check_parameters,
    draw_trials,
    expected_trials,
)

LOWER_IS_BETTER = ("tvd_2way", "mia_auc")


def _plan_path(root, name: str) -> Path:
    return Path(root) / SWEEPS_DIR / f"{name}.selection.json"


def _draw_plan(n_points: int, dist: dict) -> dict:
    from dpcore.privacy.randomness import NoiseSource

    noise = NoiseSource.secret()
    k = draw_trials(noise.numpy("selection-trials"), **dist)
    picks = noise.numpy("selection-points").integers(0, n_points, size=k).tolist() if k else []
    return {**dist, "trials": k, "points": picks}


def _load_plan(root, name: str, dist: dict, n_points: int) -> dict | None:
    try:
        plan = json.loads(_plan_path(root, name).read_text())
    except (OSError, ValueError):
        return None
    same = all(plan.get(k) == v for k, v in dist.items())
    ok = isinstance(plan.get("points"), list) and all(isinstance(i, int) and 0 <= i < n_points for i in plan["points"])
    if not (same and ok):
        raise InvalidParameter(f"sweep {name!r} already has a private selection with other settings "
                               f"({_plan_path(root, name).name}); use another sweep name")
    return plan


def select_private(spec: SweepSpec, root, *, distribution: str = NEGATIVE_BINOMIAL, eta: float | None = 1.0,
                   gamma: float | None = None, mu: float | None = None, mean_trials: float | None = None,
                   metric: str = "utility", backend: str = "auto", address: str | None = None,
                   num_cpus: int | None = None, stop: threading.Event | None = None,
                   progress=None) -> dict:
    """Sweep, draw K, train K trials, release the best with the selection in its ledger.

    Negative binomial: give `gamma`, or `mean_trials` (E[K]) to solve for it; Poisson: `mu`.
    Returns {"released": row | None, "trials": rows, "expected_trials", "epsilon" (released, with
    the selection), "epsilon_single" (the released trial alone), "epsilon_base" (one trial of a
    random grid point: the largest ε of the grid or more), "sweep"}; everything is validated
    before any run starts. A grid over ε makes every trial cost the largest ε: select over the
    other axes at a fixed ε.
    """
    from dpcore.privacy.accountant import gamma_for_mean

    assert spec.name is not None  # SweepSpec.__post_init__ names every sweep
    if distribution == NEGATIVE_BINOMIAL:
        mu = None
        if gamma is None:
            if mean_trials is None:
                raise InvalidParameter("give gamma or mean_trials for the negative binomial")
            check_parameters(NEGATIVE_BINOMIAL, eta, 0.5)
            assert eta is not None  # for the type checker: check_parameters refused None
            gamma = gamma_for_mean(eta, mean_trials)
    else:
        eta = gamma = None
    check_parameters(distribution, eta, gamma, mu)
    if metric not in ("utility",) + LOWER_IS_BETTER:
        raise InvalidParameter(f"metric must be utility, tvd_2way or mia_auc, got {metric!r}")
    dist: dict[str, Any] = {"distribution": distribution, "eta": eta, "gamma": gamma, "mu": mu}
    points = point_configs(spec)  # validates every point before anything trains
    sweep = run_sweep(spec, root, backend=backend, address=address, num_cpus=num_cpus, stop=stop)
    if sweep["stopped"] or any(r["status"] != "done" for r in sweep["runs"]):
        raise InvalidParameter("private selection needs every grid point trained (its ledger bounds "
                               "the base algorithm); the sweep did not finish: run it again")
    plan = _load_plan(root, spec.name, dist, len(points))
    if plan is None:
        plan = _draw_plan(len(points), dist)
        from dpcore.io import atomic_write_json

        atomic_write_json(_plan_path(root, spec.name), plan)
    named = []
    for i, idx in enumerate(plan["points"]):
        point, cfg = points[idx]  # a point drawn twice is two trials: a copy per trial
        named.append((point, dataclasses.replace(cfg, name=f"{spec.name}--trial{i + 1:03d}")))
    job = points_job("selection-trials", root, named, spec.scores, backend=backend, address=address,
                     num_cpus=num_cpus, title=f"Selection {spec.name}")
    handle = JobHandle(job, stop=stop, on_progress=progress).run_here()
    trials, used = rows_of(handle), handle.backend
    out = {"sweep": sweep["sweep"]["name"], "backend": used, "distribution": dist,
           "expected_trials": expected_trials(**dist), "trials": trials, "released": None}
    if stop is not None and stop.is_set() or any(t["status"] != "done" for t in trials):
        out["note"] = "the selection did not finish: run it again (the same draw is kept)"
        return out
    if trials:
        out.update(release_best(root, spec, sweep, trials, dist, metric, configs=[cfg for _, cfg in points]))
    save_summary(root, f"{spec.name}.released", out)
    return out


def released_name(name: str) -> str:
    """The released run's folder: NAME--selected (a trial's own name, NAME--trialNNN, would tell
    that at least NNN trials ran)."""
    return f"{name}--selected"


def release_best(root, spec: SweepSpec, sweep: dict, trials: list[dict], dist: dict, metric: str,
                 configs: list | None = None) -> dict:
    """Release the best trial as its own run, ROOT/NAME--selected, whose ledger is closed by the
    selection record; its ε is then the accountant's, and config.json, model.json and status.json
    carry that ε. The released run holds the trial's model, settings and training log and the
    selection rule, never K nor another trial's ledger, count or score."""
    from dpcore.privacy.accountant import DEFAULT_ORDERS, epsilon, epsilon_from_rdp, rdp
    from dpcore.privacy.ledger import PrivacyLedger, SelectionRecord
    from dpcore.runs.store import Run

    scored = [t for t in trials if t.get(metric) is not None]
    if not scored:
        raise InvalidParameter(f"no trial has a {metric} score to select on")
    pick = min if metric in LOWER_IS_BETTER else max
    best = pick(scored, key=lambda t: t[metric])
    assert spec.name is not None  # SweepSpec.__post_init__ names every sweep
    name = released_name(spec.name)
    target = Path(root) / name
    if target.is_dir():  # released already (a resumed call): nothing to add
        run = Run(target)
        own = run.ledger()
        if own.selection is None:  # a run of this name that no selection released (was: AttributeError)
            raise RunError(f"run {name!r} exists but is not a private selection's release (its ledger has "
                           "no selection record); move it away or use another sweep name")
        alone = PrivacyLedger(list(own.records))
        base = np.maximum(rdp(alone), own.selection.base_curve(DEFAULT_ORDERS))
        return {"released": point_row(root, name, best["params"]), "epsilon": run.epsilon,
                "epsilon_single": epsilon(alone, run.delta),
                "epsilon_base": epsilon_from_rdp(base, DEFAULT_ORDERS, run.delta)[0]}
    trial = Run(Path(root) / best["run"])
    own, delta, single = trial.ledger(), trial.delta, trial.epsilon
    configs = [cfg for _, cfg in point_configs(spec)] if configs is None else configs
    curve = public_base_curve(configs, trial)
    seen = np.zeros(len(DEFAULT_ORDERS))
    for row in list(sweep["runs"]) + trials:
        seen = np.maximum(seen, rdp(Run(Path(root) / row["run"]).ledger(), DEFAULT_ORDERS))
    if curve is None or np.any(seen > curve * (1 + 1e-9)):  # a model whose ledger its plan does not tell
        curve = seen if curve is None else np.maximum(curve, seen)
    record = SelectionRecord(**dist, candidates=tuple(dict(r["params"]) for r in sweep["runs"]),
                             base_rdp=tuple(round_up(curve)), orders=tuple(DEFAULT_ORDERS))
    closed = own.with_selection(record)
    eps = epsilon(closed, delta)
    _copy_released(trial, target, closed, delta, eps, best["params"])
    base = np.maximum(rdp(own), record.base_curve(DEFAULT_ORDERS))
    return {"released": point_row(root, name, best["params"]), "epsilon": eps, "epsilon_single": single,
            "epsilon_base": epsilon_from_rdp(base, DEFAULT_ORDERS, delta)[0]}


# what the released run's status.json keeps of the trial's: no time (the trial's created, started
# and finished times, its seconds, a release time: each bounds K from below, with the sweep's start)
RELEASED_STATUS = ("status", "step", "total_steps", "phase", "message")


def _copy_released(trial, target: Path, closed, delta: float, eps: float, point: dict) -> None:
    """The trial's folder copied to `target` with the released ε in every file that states one, and
    none of the trial's times (status.json's, the training log's "time") nor its evaluation.json
    (the scores that ranked it, on private rows): the released run is evaluated afresh if wanted."""
    import os
    import shutil
    import tempfile

    from dpcore.files import read_json
    from dpcore.io import atomic_write_json
    from dpcore.runs.liveness import RunLock
    from dpcore.runs.store import PARTIAL, Run

    with RunLock(target.parent, target.name):
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}{PARTIAL}", dir=target.parent))
        try:
            for item in ("config.json", "status.json", "model"):
                src = trial.path / item
                if src.is_dir():
                    shutil.copytree(src, tmp / item)
                elif src.is_file():
                    shutil.copyfile(src, tmp / item)  # not copy2: the trial's mtimes are times too
            cfg = read_json(tmp / "config.json")
            cfg.update(name=target.name, params={**cfg["params"], "epsilon": eps})
            atomic_write_json(tmp / "config.json", cfg)
            meta_path = tmp / "model" / "model.json"
            meta = json.loads(meta_path.read_text())
            meta["config"] = {**meta["config"], "epsilon": eps}
            fit = {k: v for k, v in (meta.get("fit_result") or {}).items() if k != "seconds"}  # the trial's time
            meta["fit_result"] = {**fit, "epsilon": eps, "delta": delta}
            atomic_write_json(meta_path, meta)
            run = Run(tmp)
            run.append_metrics([{k: v for k, v in e.items() if k != "time"} for e in trial.metrics()])
            run.save_ledger(closed, delta, True)
            st = {k: v for k, v in run.raw_status().items() if k in RELEASED_STATUS}
            atomic_write_json(tmp / "status.json", {**st, "epsilon": eps, "ledger_chain": run.ledger_chain(),
                                                    "selection": "private (Papernot & Steinke 2022)"})
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


COUNT_SIGMAS = 8.0  # the public range of ñ: the released ñ ± 8 σ of the count's noise
COUNT_GRID = 17     # ñ values planned across that range


def public_base_curve(configs, released) -> np.ndarray | None:
    """Q's RDP bound from public facts only: the largest RDP curve of any grid point's plan
    (`Synthesizer.plan`, the ledger a run calibrates at its noisy count) over a grid of counts
    spanning the released run's ñ ± COUNT_SIGMAS·σ (σ: the count record's public noise). Another
    trial's ñ lies in that range unless its count noise and the released run's differ by more than
    8 σ together (probability ≈ 1.5e-8 per trial). None for a model that releases no ñ."""
    from dpcore.models import MODELS
    from dpcore.models.synthesizer import DataFacts
    from dpcore.privacy.accountant import DEFAULT_ORDERS, rdp
    from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

    meta = json.loads((released.model_dir / "model.json").read_text())
    n_pub, records = meta.get("released_rows"), list(released.ledger())
    first = next((i for i, r in enumerate(records) if r.name == "dataset-size"), None)
    if not isinstance(n_pub, int) or first is None:
        return None
    sigma = records[first].noise_multiplier * records[first].sensitivity
    shape = (meta.get("template") or {}).get("image_shape")
    spent = tuple(r.to_dict() for r in records[:first])  # the data's own DP preprocessing
    counts = np.unique(np.round(np.linspace(max(2.0, n_pub - COUNT_SIGMAS * sigma), n_pub + COUNT_SIGMAS * sigma,
                                            COUNT_GRID)).astype(int))
    curve = np.zeros(len(DEFAULT_ORDERS))
    for cfg in configs:
        model = MODELS[cfg.model]
        for n in counts:
            facts = DataFacts(n=int(n), n_features=meta["n_features"], n_classes=meta["n_classes"],
                              image_shape=None if shape is None else tuple(shape), spent=spent)
            try:
                plan = model.plan(cfg.model_config(), facts)
            except InvalidParameter:  # a count this point cannot train on: such a trial releases nothing
                continue
            led = PrivacyLedger([r if isinstance(r, MechanismRecord) else MechanismRecord.from_dict(r)
                                 for r in plan.ledger])
            curve = np.maximum(curve, rdp(led, DEFAULT_ORDERS))
    return curve


def round_up(curve, digits: int = 3) -> list[float]:
    """Each value rounded up to `digits` significant digits (a bound stays a bound; the stored
    numbers stay short). It does not hide the noisy counts behind the curves (see module doc)."""
    out = []
    for v in np.asarray(curve, float):
        if v <= 0 or not math.isfinite(v):
            out.append(max(float(v), 0.0))
            continue
        scale = 10.0 ** (digits - 1 - math.floor(math.log10(v)))
        r = math.ceil(v * scale) / scale
        out.append(r if r >= v else float(np.nextafter(v, math.inf)))
    return out
