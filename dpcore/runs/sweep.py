"""Sweeps: a grid over any model's parameters × seeds, each point a normal run in the runs store.

Why runs and not a table: every point keeps its config, ledger + ε, model and evaluation like a
run trained by hand, so the Runs page, reports and `evaluate` work on it. A point's name comes
from the sweep's name and the point (`point_name`), so running the same sweep again finds the
finished runs (status done, a model and the sweep's scores in evaluation.json) and skips them;
a stopped or failed point is trained again. Scores come from `dpcore.report` (the same calls as
a single run). The summary is ROOT/_sweeps/NAME.json.

Backends: "in-process" trains the points one after another here; "ray" runs one point per Ray
task (`dpcore.runs.sweep_ray`), locally or on the cluster at `address`; every worker must reach
ROOT (on a cluster: a shared filesystem path). Without Ray importable or reachable, "auto" and
"ray" run in-process and the summary says so ("backend": "in-process", "note").
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dpcore.errors import DPCoreError, InvalidParameter

SWEEPS_DIR = "_sweeps"
BACKENDS = ("auto", "ray", "in-process")
SCORES = ("utility", "marginals", "mia")
DEFAULT_SCORES = ("utility", "marginals")
_SAVED_AS = {"mia": "attacks"}  # score name → its key in evaluation.json
_NAME_OK = re.compile(r"[^A-Za-z0-9._=+-]+")
ProgressFn = Callable[[dict], None]


@dataclass
class SweepSpec:
    """model × data × fixed `params` × the `grid` (name → values, in order) × `seeds`."""

    model: str
    grid: dict
    data: dict = field(default_factory=lambda: {"dataset": "digits"})
    params: dict = field(default_factory=dict)
    seeds: list = field(default_factory=lambda: [0])
    name: str | None = None
    scores: tuple = DEFAULT_SCORES

    def __post_init__(self) -> None:
        from dpcore.models import config_class, get_model

        get_model(self.model)
        fields = set(typing.get_type_hints(config_class(self.model)))
        for k in list(self.grid) + list(self.params):
            if k not in fields:
                raise InvalidParameter(f"{k!r} is not a parameter of model {self.model!r}")
        for k, vals in self.grid.items():
            if not isinstance(vals, (list, tuple)) or not vals:
                raise InvalidParameter(f"grid {k!r} needs at least one value")
        if "seed" in self.grid:
            raise InvalidParameter("give seeds with --seeds, not as a grid axis")
        if isinstance(self.seeds, int):
            self.seeds = list(range(int(self.params.get("seed", 0)), int(self.params.get("seed", 0)) + self.seeds))
        if not self.seeds or any(not isinstance(s, int) or s < 0 for s in self.seeds):
            raise InvalidParameter(f"seeds must be a count ≥ 1 or non-negative integers, got {self.seeds!r}")
        bad = set(self.scores) - set(SCORES)
        if bad:
            raise InvalidParameter(f"scores must be among {SCORES}, got {sorted(bad)}")
        self.grid = {k: [coerce(self.model, k, v) for v in vals] for k, vals in self.grid.items()}
        self.params = {k: coerce(self.model, k, v) for k, v in self.params.items()}
        if self.name is None:
            self.name = self.default_name()
        if _NAME_OK.sub("", self.name) != self.name or not self.name[:1].isalnum() or len(self.name) > 64:
            raise InvalidParameter(f"sweep name must be 1–64 of A-Z a-z 0-9 . _ = + - (starting with a "
                                   f"letter or digit), got {self.name!r}")

    def default_name(self) -> str:
        """model-data-<hash of grid, params and seeds>: the same sweep gets the same name."""
        doc = json.dumps([self.grid, self.params, self.seeds, self.data], sort_keys=True, default=str)
        label = _NAME_OK.sub("_", str(self.data.get("dataset") or Path(str(self.data.get("csv"))).stem))
        return f"{self.model}-{label[:24]}-{hashlib.sha256(doc.encode()).hexdigest()[:8]}"

    def to_dict(self) -> dict:
        return {"name": self.name, "model": self.model, "grid": self.grid, "data": self.data,
                "params": self.params, "seeds": self.seeds, "scores": list(self.scores)}


def coerce(model: str, key: str, value):
    """`value` (text from the CLI/app or a TOML value) as field `key` of the model's config: the
    declaration's own parser (dpcore.models.params.parse_param), the same one the CLI's flags use."""
    from dpcore.models import config_class
    from dpcore.models.params import parse_param

    return parse_param(config_class(model), key, value)


def parse_grid(items) -> dict:
    """["epsilon=0.5,1,2,4", "encoder_share=0.1,0.3"] → {"epsilon": ["0.5", …], …} (text values)."""
    grid: dict = {}
    for item in items or []:
        key, sep, vals = str(item).partition("=")
        key = key.strip().replace("-", "_")
        values = [v.strip() for v in vals.split(",")]
        if not sep or not key or not all(values):
            raise InvalidParameter(f"--grid must look like NAME=V1,V2,… (no empty value), got {item!r}")
        if key in grid:
            raise InvalidParameter(f"--grid {key} is given twice")
        grid[key] = values
    return grid


def load_toml(path) -> dict:
    """A sweep file: name, model, dataset (or csv + target), seeds, [params], [grid] (lists)."""
    import tomllib

    try:
        doc = tomllib.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidParameter(f"--file {path}: cannot read it as TOML ({' '.join(str(exc).split())})") from None
    unknown = set(doc) - {"name", "model", "dataset", "csv", "target", "rows", "seeds", "params", "grid", "scores"}
    if unknown:
        raise InvalidParameter(f"--file {path}: unknown keys {sorted(unknown)}")
    if not isinstance(doc.get("grid", {}), dict) or not isinstance(doc.get("params", {}), dict):
        raise InvalidParameter(f"--file {path}: [grid] and [params] must be tables")
    return doc


# ----------------------------------------------------------------------------- points
def point_name(sweep: str, params: dict) -> str:
    """NAME--k=v+k=v-sSEED (long ones end in a hash), a valid run name, the same on every rerun."""
    def fmt(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    body = "+".join(f"{k}={fmt(v)}" for k, v in params.items() if k != "seed")
    name = _NAME_OK.sub("_", f"{sweep}--{body}-s{params.get('seed', 0)}")
    if len(name) > 120:
        name = f"{name[:100]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


def point_configs(spec: SweepSpec):
    """RunConfig of every point (grid × seeds), named by `point_name`; each validated against
    the data before any run starts (bad values: a one-line InvalidParameter naming the point)."""
    from dpcore.runs.runner import prepare
    from dpcore.runs.store import RunConfig

    keys = list(spec.grid)
    out = []
    for combo in itertools.product(*(spec.grid[k] for k in keys)):
        for seed in spec.seeds:
            point = {**dict(zip(keys, combo)), "seed": seed}
            name = point_name(spec.name, point)
            try:
                cfg = RunConfig(model=spec.model, params={**spec.params, **point}, data=dict(spec.data), name=name)
            except DPCoreError as exc:
                raise InvalidParameter(f"sweep point {name}: {exc}") from None
            out.append((point, cfg))
    checked = set()
    for point, cfg in out:  # the data-dependent checks, once per distinct setting
        key = json.dumps({k: v for k, v in cfg.params.items() if k != "seed"}, sort_keys=True, default=str)
        if key not in checked:
            try:
                prepare(cfg)
            except DPCoreError as exc:
                raise InvalidParameter(f"sweep point {cfg.name}: {exc}") from None
            checked.add(key)
    return out


# ----------------------------------------------------------------------------- one point
def finished(root, name: str, scores=DEFAULT_SCORES) -> bool:
    """A finished point: status done, a saved model and every score of the sweep saved."""
    from dpcore.report import load_evaluation
    from dpcore.runs.store import Run

    path = Path(root) / name
    try:
        run = Run(path)
        if run.status().get("status") != "done" or not run.has_model():
            return False
    except DPCoreError:
        return False
    ev = load_evaluation(path)
    return all(_SAVED_AS.get(s, s) in ev or (s == "utility" and ev.get("labels") is False) for s in scores)


def evaluate_point(root, name: str, scores=DEFAULT_SCORES) -> None:
    """The sweep's scores, computed as for a single run (dpcore.report) and saved with it."""
    from dpcore import report

    b = report.load_bundle(Path(root) / name)
    if "utility" in scores:
        res, _ = report.utility(b)
        if res is None:
            report.save_evaluation(b.run.path, labels=False)
        else:
            report.save_evaluation(b.run.path, utility=res.to_dict())
    if "marginals" in scores:
        m = report.marginals(b)
        report.save_evaluation(b.run.path, marginals={"tvd_1way": m["tvd_1way"], "tvd_2way": m["tvd_2way"]})
    if "mia" in scores:  # the attack ladder's black-box rungs, saved as a single run's attacks are
        report.attack_run(b, "black-box")


def point_row(root, name: str, point: dict, skipped: bool = False, message: str | None = None) -> dict:
    """One line of a sweep: run, params, accountant's ε, scores, status."""
    from dpcore.report import headline, load_evaluation
    from dpcore.runs.store import Run

    row = {"run": name, "params": dict(point), "epsilon": math.nan, "utility": None, "utility_metric": None,
           "tvd_2way": None, "mia_auc": None, "status": "missing", "skipped": skipped, "seconds": None}
    path = Path(root) / name
    try:
        run = Run(path)
        st = run.status()
        row.update(status=st.get("status"), seconds=st.get("seconds"), epsilon=run.epsilon,
                   message=message or st.get("message"))
        h = headline(load_evaluation(path))
        row.update(utility=h["utility"], utility_metric=h["utility_metric"], tvd_2way=h["tvd_2way"],
                   mia_auc=h["attack_auc"])
    except DPCoreError as exc:
        row.update(status="failed", message=message or str(exc))
    return row


def run_point(config: dict, root: str, scores=DEFAULT_SCORES, threads: int | None = None,
              stop: threading.Event | None = None) -> dict:
    """Train (unless finished) and score one point; its row. What every backend's worker runs."""
    from dpcore.runs.runner import train_run
    from dpcore.runs.store import RunConfig

    if threads:
        import torch

        torch.set_num_threads(int(threads))
    cfg = RunConfig.from_dict(config)
    point = config.get("point", {})
    if finished(root, cfg.name, scores):
        return point_row(root, cfg.name, point, skipped=True)
    try:
        if not _trained(root, cfg.name):
            exists = (Path(root) / cfg.name).exists()
            run = train_run(cfg, root, overwrite=exists, stop=stop)
            if run.status().get("status") != "done":
                return point_row(root, cfg.name, point)
        evaluate_point(root, cfg.name, scores)
    except DPCoreError as exc:
        return point_row(root, cfg.name, point, message=str(exc))
    return point_row(root, cfg.name, point)


def _trained(root, name: str) -> bool:
    from dpcore.runs.store import Run

    try:
        run = Run(Path(root) / name)
        return run.status().get("status") == "done" and run.has_model()
    except DPCoreError:
        return False


# ----------------------------------------------------------------------------- the sweep
class Progress:
    """Runs done / total and time left (from the throughput of the runs trained so far)."""

    def __init__(self, total: int, callback: ProgressFn | None = None):
        self.total, self.callback = total, callback
        self.done = self.skipped = 0
        self.started = time.time()
        self.rows: list[dict] = []

    def add(self, row: dict) -> None:
        self.rows.append(row)
        self.done += 1
        self.skipped += bool(row.get("skipped"))
        if self.callback is not None:
            self.callback(self.snapshot())

    def snapshot(self) -> dict:
        trained = self.done - self.skipped
        left = self.total - self.done
        elapsed = time.time() - self.started
        eta = elapsed / trained * left if trained else None
        return {"done": self.done, "total": self.total, "skipped": self.skipped,
                "elapsed": round(elapsed, 2), "seconds_left": None if eta is None else round(eta, 1),
                "last": self.rows[-1] if self.rows else None}


def run_sweep(spec: SweepSpec, root, *, backend: str = "auto", address: str | None = None,
              num_cpus: int | None = None, stop: threading.Event | None = None,
              progress: ProgressFn | None = None) -> dict:
    """Train and score every point not finished yet; returns (and saves) the sweep summary.

    Everything is validated before the first run starts. `stop` halts the sweep (points not yet
    started are left for the next run; a point training in-process ends as "stopped").
    """
    if backend not in BACKENDS:
        raise InvalidParameter(f"backend must be one of {BACKENDS}, got {backend!r}")
    root = Path(root)
    points = point_configs(spec)
    root.mkdir(parents=True, exist_ok=True)
    jobs = [{**cfg.to_dict(), "point": point} for point, cfg in points]
    prog = Progress(len(jobs), progress)
    t0 = time.time()
    done = [j for j in jobs if finished(root, j["name"], spec.scores)]  # skipped here, no worker needed
    for job in done:
        prog.add(point_row(root, job["name"], job["point"], skipped=True))
    rows = list(prog.rows)
    jobs = [j for j in jobs if j not in done]
    more, used, note = execute(jobs, root, spec.scores, prog, backend=backend, address=address,
                               num_cpus=num_cpus, stop=stop)
    rows += more
    by_name = {r["run"]: r for r in rows}
    rows = [by_name.get(cfg.name) or point_row(root, cfg.name, point) for point, cfg in points]
    summary = {"sweep": spec.to_dict(), "backend": used, "runs": rows, "seconds": round(time.time() - t0, 2),
               "stopped": bool(stop is not None and stop.is_set()),
               "selection": "best on private data (selection not covered by ε)"}
    if note:
        summary["note"] = note
    save_summary(root, spec.name, summary)
    return summary


def execute(jobs: list[dict], root, scores, prog: Progress, *, backend: str = "auto",
            address: str | None = None, num_cpus: int | None = None,
            stop: threading.Event | None = None) -> tuple[list[dict], str, str | None]:
    """Run `jobs` (RunConfig dicts + "point") on the backend: (rows, backend used, note)."""
    rows: list[dict] = []
    used, note = "in-process", None
    if not jobs:
        return rows, used, "every run was finished already: nothing trained"
    if backend in ("auto", "ray"):
        from dpcore.runs import sweep_ray

        pool, note = sweep_ray.connect(address=address, num_cpus=num_cpus)
        if pool is not None:
            return pool.run(jobs, str(root), scores, prog, stop), "ray", None
    for job in jobs:
        if stop is not None and stop.is_set():
            break
        row = run_point(job, str(root), scores, stop=stop)
        rows.append(row)
        prog.add(row)
    return rows, used, note


def save_summary(root, name: str, summary: dict) -> Path:
    from dpcore.io import atomic_write_json

    path = Path(root) / SWEEPS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, summary)
    return path


def load_summary(root, name: str) -> dict:
    from dpcore.errors import RunError

    path = Path(root) / SWEEPS_DIR / f"{name}.json"
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        raise RunError(f"no readable sweep summary {str(path)!r}") from None
    if not isinstance(d, dict) or not isinstance(d.get("runs"), list) or not isinstance(d.get("sweep"), dict):
        raise RunError(f"sweep summary {str(path)!r} is malformed")
    return d


def list_sweeps(root) -> list[str]:
    folder = Path(root) / SWEEPS_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if not p.stem.endswith((".selection", ".released")))


def best_on_private_data(summary: dict, metric: str = "utility") -> dict | None:
    """The row with the best score — a choice made on private data, so NOT covered by ε: the
    label says so. Use `dpcore.runs.selection.select_private` for a covered choice."""
    rows = [r for r in summary["runs"] if r.get("status") == "done" and r.get(metric) is not None]
    if not rows:
        return None
    best = (min if metric in ("tvd_2way", "mia_auc") else max)(rows, key=lambda r: r[metric])
    return {**best, "label": "best on private data (selection not covered by ε)"}
