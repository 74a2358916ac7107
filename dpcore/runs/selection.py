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
4. only the best trial is released: its ledger.json gets a SelectionRecord (candidates = the
   grid's and the trials' ledgers), so the ε the store shows is the accountant's over the
   extended ledger, the selection included.

K and the drawn points are secret: they are kept in ROOT/_sweeps/NAME.selection.json (private,
like the runs root; never shared) so that a stopped selection resumes with the same draw instead
of drawing again (re-drawing until a result pleases would void the guarantee).
Not covered: the held-out test rows the scores are computed on (the training rows are).
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from dpcore.errors import InvalidParameter
from dpcore.privacy.accountants.selection import (
    NEGATIVE_BINOMIAL,
    check_parameters,
    draw_trials,
    expected_trials,
)
from dpcore.runs.sweep import (
    SWEEPS_DIR,
    Progress,
    SweepSpec,
    execute,
    point_configs,
    point_row,
    run_sweep,
    save_summary,
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

    if distribution == NEGATIVE_BINOMIAL:
        mu = None
        if gamma is None:
            if mean_trials is None:
                raise InvalidParameter("give gamma or mean_trials for the negative binomial")
            check_parameters(NEGATIVE_BINOMIAL, eta, 0.5)
            gamma = gamma_for_mean(eta, mean_trials)
    else:
        eta = gamma = None
    check_parameters(distribution, eta, gamma, mu)
    if metric not in ("utility",) + LOWER_IS_BETTER:
        raise InvalidParameter(f"metric must be utility, tvd_2way or mia_auc, got {metric!r}")
    dist = {"distribution": distribution, "eta": eta, "gamma": gamma, "mu": mu}
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
    jobs = []
    for i, idx in enumerate(plan["points"]):
        point, cfg = points[idx]
        cfg.name = f"{spec.name}--trial{i + 1:03d}"
        jobs.append({**cfg.to_dict(), "point": point})
    from dpcore.runs.sweep import finished

    prog = Progress(len(jobs), progress)
    done = [j for j in jobs if finished(root, j["name"], spec.scores)]
    for job in done:
        prog.add(point_row(root, job["name"], job["point"], skipped=True))
    more, used, _ = execute([j for j in jobs if j not in done], root, spec.scores, prog, backend=backend,
                            address=address, num_cpus=num_cpus, stop=stop)
    rows = {r["run"]: r for r in list(prog.rows) + more}
    trials = [rows.get(j["name"]) or point_row(root, j["name"], j["point"]) for j in jobs]
    out = {"sweep": sweep["sweep"]["name"], "backend": used, "distribution": dist,
           "expected_trials": expected_trials(**dist), "trials": trials, "released": None}
    if stop is not None and stop.is_set() or any(t["status"] != "done" for t in trials):
        out["note"] = "the selection did not finish: run it again (the same draw is kept)"
        return out
    if trials:
        out.update(release_best(root, spec, sweep, trials, dist, metric))
    save_summary(root, f"{spec.name}.released", out)
    return out


def release_best(root, spec: SweepSpec, sweep: dict, trials: list[dict], dist: dict, metric: str) -> dict:
    """Close the best trial's ledger with the selection record; its ε is then the accountant's."""
    from dpcore.privacy.ledger import SelectionRecord
    from dpcore.runs.store import Run

    scored = [t for t in trials if t.get(metric) is not None]
    if not scored:
        raise InvalidParameter(f"no trial has a {metric} score to select on")
    pick = min if metric in LOWER_IS_BETTER else max
    best = pick(scored, key=lambda t: t[metric])
    run = Run(Path(root) / best["run"])
    own = run.ledger()
    if own.selection is not None:  # released already (a resumed call): nothing to add
        from dpcore.privacy.accountant import epsilon
        from dpcore.privacy.ledger import PrivacyLedger

        alone = PrivacyLedger(list(own.records))
        return {"released": point_row(root, best["run"], best["params"]), "epsilon": run.epsilon,
                "epsilon_single": epsilon(alone, run.delta),
                "epsilon_base": base_epsilon(alone, own.selection.candidates, run.delta)}
    seen, candidates = {json.dumps(own.to_list(), sort_keys=True)}, []
    for row in list(sweep["runs"]) + trials:
        led = Run(Path(root) / row["run"]).ledger()
        key = json.dumps(led.to_list(), sort_keys=True)
        if key not in seen:
            seen.add(key)
            candidates.append(tuple(led.records))
    record = SelectionRecord(**dist, candidates=tuple(candidates), trials=len(trials))
    single = run.epsilon
    base = base_epsilon(own, candidates, run.delta)
    eps = run.save_ledger(own.with_selection(record), run.delta, True)
    run.set_status(run.raw_status().get("status", "done"), selection="private (Papernot & Steinke 2022)",
                   epsilon=eps, released_at=time.strftime("%Y-%m-%dT%H:%M:%S"))
    return {"released": point_row(root, best["run"], best["params"]), "epsilon": eps, "epsilon_single": single,
            "epsilon_base": base}


def base_epsilon(own, candidates, delta: float) -> float:
    """ε of one trial of the base algorithm Q (a random grid point): the accountant's conversion of
    the pointwise maximum of the grid's RDP curves — at least the largest ε of the grid."""
    import numpy as np

    from dpcore.privacy.accountant import DEFAULT_ORDERS, epsilon_from_rdp, rdp
    from dpcore.privacy.ledger import PrivacyLedger

    curve = rdp(own)
    for c in candidates:
        curve = np.maximum(curve, rdp(PrivacyLedger(list(c))))
    return epsilon_from_rdp(curve, DEFAULT_ORDERS, delta)[0]
