"""Sweeps: a grid over any model's parameters × seeds, each point a normal run in the runs store.

Why runs and not a table: every point keeps its config, ledger + ε, model and evaluation like a
run trained by hand, so the Runs page, reports and `evaluate` work on it. A point's name comes
from the sweep's name and the point (`point_name`), so running the same sweep again finds the
finished runs (status done, a model and the sweep's scores in evaluation.json) and skips them;
a stopped or failed point is trained again. Scores come from `dpcore.runs.evaluation` (the same
calls as a single run). The summary is ROOT/_sweeps/NAME.json.

A sweep is a job (`dpcore.jobs.jobs`, `sweep_job`): "in-process" trains the points one after
another; "ray" runs one point per Ray task (`dpcore.jobs.sweep_ray`), locally or on the cluster at
`address`; every worker must reach ROOT (on a cluster: a shared filesystem path). Without Ray
importable or reachable, "auto" and "ray" run in-process and the summary says so ("backend":
"in-process", "note").
"""
from __future__ import annotations

import functools
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
from dpcore.jobs.job import BACKENDS, Job, Training
from dpcore.jobs.jobs import JobHandle

SWEEPS_DIR = "_sweeps"
SCORES = ("utility", "marginals", "mia")
DEFAULT_SCORES = ("utility", "marginals")
_SAVED_AS = {"mia": "attacks"}  # score name → its key in evaluation.json
_NAME_OK = re.compile(r"[^A-Za-z0-9._=+-]+")
ProgressFn = Callable[[dict], None]


def sweep_axes(model: str) -> dict[str, tuple]:
    """What a sweep of `model` varies by default: the axes its class declares (`sweep_axes`, field →
    values) that are fields of its config; none for an ε = ∞ model (no privacy to trade)."""
    from dpcore.models import get_model

    cls = get_model(model)
    if not cls.private:
        return {}
    fields = set(typing.get_type_hints(cls.config_class))
    return {k: tuple(v) for k, v in cls.sweep_axes.items() if k in fields}


def sweepable_models() -> list[str]:
    """The models the Runs page's ε sweep and grid sweep offer: those whose sweep varies ε."""
    from dpcore.models import MODELS

    return [m for m in MODELS if "epsilon" in sweep_axes(m)]


def default_grid_text(model: str) -> str:
    """The grid a sweep of `model` starts from, one axis per line: "epsilon=0.5,1,2,4"."""
    return "\n".join(f"{k}=" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in vals)
                     for k, vals in sweep_axes(model).items())


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
    from dpcore.jobs.runner import prepare
    from dpcore.runs.config import DataConfig, RunConfig

    assert spec.name is not None  # __post_init__ names every sweep
    keys = list(spec.grid)
    out = []
    for combo in itertools.product(*(spec.grid[k] for k in keys)):
        for seed in spec.seeds:
            point = {**dict(zip(keys, combo)), "seed": seed}
            name = point_name(spec.name, point)
            try:
                cfg = RunConfig(model=spec.model, params={**spec.params, **point}, data=DataConfig(**spec.data), name=name)
            except DPCoreError as exc:
                raise InvalidParameter(f"sweep point {name}: {exc}") from None
            out.append((point, cfg))
    checked = set()
    for _point, cfg in out:  # the data-dependent checks, once per distinct setting
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
    from dpcore.runs.evaluation import load_evaluation
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


def score_point(run, say=None, scores=DEFAULT_SCORES) -> None:
    """The sweep's scores of a trained point, computed as for a single run and saved with it
    (a job's `after` step: it runs where the point trained, in-process or on a Ray worker)."""
    from dpcore.runs.evaluation import load_bundle, score_numbers

    score_numbers(load_bundle(run.path), tuple(scores))


def point_row(root, name: str, point: dict, skipped: bool = False, message: str | None = None) -> dict:
    """One line of a sweep: run, params, accountant's ε, scores, status."""
    from dpcore.runs.evaluation import headline, load_evaluation
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


# ----------------------------------------------------------------------------- the sweep as a job
def points_job(kind: str, root, named: list, scores=DEFAULT_SCORES, *, backend: str = "auto",
               address: str | None = None, num_cpus: int | None = None, key: str | None = None,
               title: str = "Sweep", finish=None):
    """A job training and scoring `named` [(point, RunConfig)]: a point already scored is skipped,
    one trained but not scored is only scored, a failed one does not stop the others."""
    scorer = functools.partial(score_point, scores=tuple(scores))
    trainings = [Training(cfg, point=point, after=scorer, resume=True) for point, cfg in named]
    root = str(root)

    def skip(t: Training) -> bool:
        assert t.name is not None  # point_configs names every point
        return finished(root, t.name, scores)

    return Job(kind=kind, root=root, trainings=trainings, key=key, title=title, keep_going=True,
               skip=skip, backend=backend, address=address,
               num_cpus=num_cpus, finish=finish)


def rows_of(handle) -> list[dict]:
    """The sweep's lines for a job's trainings, from what each left on disk."""
    rows = []
    for t, r in zip(handle.trainings or [], handle.results):
        r = r or {}
        rows.append(point_row(handle.root, t.name, t.point, skipped=bool(r.get("skipped")), message=r.get("error")))
    return rows


def sweep_job(spec: SweepSpec, root, *, backend: str = "auto", address: str | None = None,
              num_cpus: int | None = None):
    """The grid sweep as a job: every point validated before it starts (one-line InvalidParameter),
    its summary saved to ROOT/_sweeps/NAME.json when it ends (`handle.summary`). Started twice,
    the same sweep is joined (its key is its name)."""
    if backend not in BACKENDS:
        raise InvalidParameter(f"backend must be one of {BACKENDS}, got {backend!r}")
    points = point_configs(spec)
    Path(root).mkdir(parents=True, exist_ok=True)
    return points_job("grid-sweep", root, points, spec.scores, backend=backend, address=address,
                      num_cpus=num_cpus, key=f"sweep:{Path(root).resolve()}:{spec.name}",
                      title=f"Sweep {spec.name}", finish=functools.partial(_summarise, spec))


def _summarise(spec: SweepSpec, handle) -> dict:
    summary = {"sweep": spec.to_dict(), "backend": handle.backend, "runs": rows_of(handle),
               "seconds": round(time.time() - handle.started, 2), "stopped": handle.stop_requested,
               "selection": "best on private data (selection not covered by ε)"}
    if handle.note:
        summary["note"] = handle.note
    assert spec.name is not None  # __post_init__ names every sweep
    save_summary(handle.root, spec.name, summary)
    return summary


def run_sweep(spec: SweepSpec, root, *, backend: str = "auto", address: str | None = None,
              num_cpus: int | None = None, stop: threading.Event | None = None,
              progress: ProgressFn | None = None) -> dict:
    """Train and score every point not finished yet, here; returns (and saves) the sweep summary.

    Everything is validated before the first run starts. `stop` halts the sweep (points not yet
    started are left for the next run; a point training in-process ends as "stopped").
    """
    job = sweep_job(spec, root, backend=backend, address=address, num_cpus=num_cpus)
    return JobHandle(job, stop=stop, on_progress=progress).run_here().summary


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
    label says so. Use `dpcore.jobs.selection.select_private` for a covered choice."""
    rows = [r for r in summary["runs"] if r.get("status") == "done" and r.get(metric) is not None]
    if not rows:
        return None
    best = (min if metric in ("tvd_2way", "mia_auc") else max)(rows, key=lambda r: r[metric])
    return {**best, "label": "best on private data (selection not covered by ε)"}
