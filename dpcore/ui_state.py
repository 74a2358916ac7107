"""Session helpers shared by the workbench pages: the active dataset, the live run, cached results.

Why one small module: every page needs the same few things (which data is selected, where runs are
stored, "is my run still training?", formatting ε for people), and keeping them here keeps the pages
to widgets and layout. No training or evaluation maths lives here — numbers come from dpcore.
Streamlit is imported lazily inside the helpers that draw, so `dpcore` stays importable without it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import threading
import time
import typing
from pathlib import Path
from typing import Any

import streamlit as st

log = logging.getLogger("dpcore.ui")

DEFAULT_DATASET = "digits"
DEFAULT_MODEL = "p3gm"
EPSILON_CHOICES = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0)
POLL_SECONDS = 1.0  # how often the live view redraws while a run trains
_DATA_KEY, _LIVE_KEY, _SWEEP_KEY = "dpcore.data", "dpcore.live", "dpcore.sweep"


# ----------------------------------------------------------------------------- navigation
def ensure_navigation() -> None:
    """Make a deep link (/train) on a fresh server go through app.py's st.navigation.

    Streamlit treats an app with a `pages/` folder as a legacy multipage app until some session
    has called st.navigation; until then /train would run pages/train.py alone, with file names in
    the sidebar. Each page calls this first: it switches the process to st.navigation and reruns.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a future Streamlit without the legacy mode
        return
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


# ----------------------------------------------------------------------------- paths and limits
def runs_root() -> Path:
    """Where runs are saved: $DPCORE_RUNS_DIR, else ./runs (created on first use)."""
    root = Path(os.environ.get("DPCORE_RUNS_DIR") or "runs").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def upload_limit_bytes() -> int:
    """The upload limit the server enforces (server.maxUploadSize, MB); the data layer gets the same."""
    return int(st.get_option("server.maxUploadSize")) * 1024 * 1024


# ----------------------------------------------------------------------------- errors and text
@contextlib.contextmanager
def guard():
    """Show a user's mistake (DPCoreError) as one line; keep bugs out of a user's face but logged.

    Set DPCORE_UI_RAISE=1 (the tests do) to let unexpected exceptions through.
    """
    from dpcore.errors import DPCoreError

    try:
        yield
    except DPCoreError as exc:
        st.error(str(exc), icon=":material/error:")
    except Exception as exc:  # noqa: BLE001 - the page must keep working
        if os.environ.get("DPCORE_UI_RAISE"):
            raise
        log.exception("unexpected error in a workbench page")
        st.error(f"Something went wrong: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
                 icon=":material/bug_report:")


def fmt_eps(eps: float | None, digits: int = 2) -> str:
    """ε for people: "ε = ∞" for non-private runs, "—" when unknown."""
    if eps is None or (isinstance(eps, float) and math.isnan(eps)):
        return "—"
    if math.isinf(eps):
        return "∞"
    return f"{eps:.{digits}f}" if eps < 100 else f"{eps:.0f}"


def fmt_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


EPSILON_EXPLAINER = (
    "**ε (epsilon)** is the privacy budget: it bounds how much any single person's record can change "
    "what the model learns. Smaller is more private — at ε = 1 an attacker's odds of telling whether "
    "someone was in the data grow by at most a factor e ≈ 2.7; non-private models have ε = ∞. "
    "**δ** is the small probability that the guarantee fails; keep it below 1/n."
)


# ----------------------------------------------------------------------------- the active dataset
@st.cache_resource(show_spinner="Loading dataset…", max_entries=6)
def _load_data(config_json: str, max_bytes: int):
    """(train, test) for a data choice (shared read-only across sessions; never mutate them).

    The same calls `dpcore.runs.DataConfig.load` makes (so a run trains on exactly what the Data
    page shows), made here directly so the first page does not import the run store (and torch);
    CSV choices also carry the schema edits (types, bounds, categories, delimiter).
    """
    import numpy as np

    from dpcore.data import load_split, read_csv, train_test_split

    c = json.loads(config_json)
    if c.get("dataset") is not None:
        return load_split(c["dataset"], seed=c.get("split_seed", 0), test_size=c.get("test_size", 0.1),
                          outlier=c.get("outlier", False), n=c.get("n"))
    ds = read_csv(c["csv"], target=c.get("target"), delimiter=c.get("delimiter", ","),
                  types=c.get("types"), bounds=c.get("bounds"), categories=c.get("categories"),
                  max_bytes=max_bytes, name=c.get("name"))
    if c.get("n") is not None and ds.n > c["n"]:
        ds = ds.subset(np.sort(np.random.default_rng(c.get("split_seed", 0)).choice(ds.n, c["n"], replace=False)))
    return train_test_split(ds, test_size=c.get("test_size", 0.1), seed=c.get("split_seed", 0))


def data_config_fields() -> set[str]:
    from dpcore.runs.store import DataConfig

    return {f.name for f in dataclasses.fields(DataConfig)}


def default_data_choice() -> dict:
    return {"dataset": DEFAULT_DATASET, "test_size": 0.2, "split_seed": 0, "outlier": False}


def data_choice() -> dict:
    """The session's selected data config (a dict accepted by DataConfig)."""
    return dict(st.session_state.get(_DATA_KEY) or default_data_choice())


def load_data(choice: dict | None = None):
    """(train, test) of `choice` (default: the session's). Raises DPCoreError for bad data."""
    choice = data_choice() if choice is None else choice
    return _load_data(json.dumps(choice, sort_keys=True, default=str), upload_limit_bytes())


def set_data_choice(choice: dict):
    """Load `choice`; only when it loads does it become the session's dataset (nothing is lost)."""
    train, test = load_data(choice)
    st.session_state[_DATA_KEY] = dict(choice)
    return train, test


def data_label(choice: dict | None = None) -> str:
    c = data_choice() if choice is None else choice
    return c.get("dataset") or c.get("name") or Path(str(c.get("csv", "table"))).name


def save_upload(data: bytes, filename: str) -> Path:
    """Keep an uploaded CSV under the runs root, named by content, so runs can reload it."""
    digest = hashlib.sha1(data).hexdigest()[:12]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(filename).stem)[:40] or "upload"
    path = runs_root() / "_uploads" / f"{stem}-{digest}.csv"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


@st.cache_data(show_spinner=False, max_entries=8)
def parse_table(path: str, delimiter: str, max_bytes: int):
    """The raw text table of an uploaded CSV (for the schema editor)."""
    from dpcore.data import parse_csv

    return parse_csv(path, delimiter=delimiter, max_bytes=max_bytes)


# ----------------------------------------------------------------------------- model settings widgets
def config_fields(cls) -> list[tuple[str, Any, Any, str]]:
    """(name, type, default, help) of each field of a model's config dataclass."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append((f.name, hints.get(f.name, type(default)), default, f.metadata.get("help", "")))
    return out


def _options_from_help(help_text: str, default) -> list[str] | None:
    opts = re.findall(r"'([^'\s]+)'", help_text or "")
    opts = list(dict.fromkeys(opts))
    if len(opts) >= 2 and default in opts:
        return opts
    return None


def config_widget(name: str, typ, default, help_text: str, key: str, container=None):
    """One widget for one config field, chosen from its type (help text shown as the tooltip)."""
    c = container or st
    label = name.replace("_", " ")
    args = typing.get_args(typ)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), typ) if args else typ
    if base is bool:
        return c.checkbox(label, value=bool(default), help=help_text, key=key)
    if base is int:
        return c.number_input(label, value=None if default is None else int(default), step=1,
                              help=help_text, key=key, placeholder="None" if optional else None)
    if base is float:
        val = None if default is None else float(default)
        if val is not None and math.isinf(val):
            return c.text_input(label, value="inf", help=help_text, key=key)
        fmt = "%.1e" if val is not None and 0 < abs(val) < 1e-3 else "%g"
        step = 10.0 ** math.floor(math.log10(abs(val))) / 10 if val else 0.01  # a tenth of the magnitude
        return c.number_input(label, value=val, help=help_text, key=key, format=fmt,
                              step=step, placeholder="None" if optional else None)
    opts = _options_from_help(help_text, default)
    if opts:
        return c.selectbox(label, opts, index=opts.index(default), help=help_text, key=key)
    return c.text_input(label, value="" if default is None else str(default), help=help_text, key=key)


def coerce_param(typ, value):
    """Widget value → the field's type ("inf" text → inf, "" → None)."""
    args = typing.get_args(typ)
    base = next((a for a in args if a is not type(None)), typ) if args else typ
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    if base is float:
        return float(value)
    if base is int:
        return int(value)
    return value


# ----------------------------------------------------------------------------- runs on disk
def list_runs():
    from dpcore.runs.store import list_runs as _list

    return _list(runs_root())


def run_mtime(path) -> float:
    """Latest change of a run's own files (not evaluation.json): the key that invalidates caches."""
    p = Path(path)
    times = [0.0]
    for name in ("config.json", "status.json", "ledger.json", "metrics.jsonl", "model/model.json",
                 "model/weights.safetensors"):
        with contextlib.suppress(OSError):
            times.append((p / name).stat().st_mtime)
    return max(times)


# ----------------------------------------------------------------------------- the live run
class LiveRun:
    """The session's training run: the runner's handle plus every event drawn so far.

    Lives in st.session_state, so each browser session sees only its own run and it survives page
    changes; the training itself runs in the runner's background thread.
    """

    def __init__(self, handle, config: dict, started: float | None = None):
        self.handle = handle
        self.config = config
        self.started = started or time.time()
        self.events: list[dict] = []
        self.announced = False
        self._lock = threading.Lock()

    def drain(self) -> list[dict]:
        """Copy new events from the runner's buffer; return all events so far."""
        with self._lock:
            self.events.extend(self.handle.events(len(self.events)))
            return list(self.events)

    @property
    def run_name(self) -> str | None:
        run = self.handle.run
        return run.name if run is not None else None

    @property
    def status(self) -> str:
        return str(self.handle.status)

    @property
    def running(self) -> bool:
        return self.handle.status in ("pending", "running") or self.handle.is_alive()


def remember_params(model: str, params: dict) -> None:
    st.session_state[f"dpcore.params.{model}"] = dict(params)


def remembered_params(model: str) -> dict:
    """The last valid settings of `model` on the Train page ({} if never opened)."""
    return dict(st.session_state.get(f"dpcore.params.{model}") or {})


def live_run() -> LiveRun | None:
    return st.session_state.get(_LIVE_KEY)


def set_live_run(live: LiveRun | None) -> None:
    st.session_state[_LIVE_KEY] = live


def sweep_state():
    return st.session_state.get(_SWEEP_KEY)


def set_sweep_state(sweep) -> None:
    st.session_state[_SWEEP_KEY] = sweep


# ----------------------------------------------------------------------------- sidebar
def sidebar_status() -> None:
    """Which dataset is active and whether this session's run is training (cheap; no heavy imports)."""
    with st.sidebar:
        st.caption(f"Dataset: **{data_label()}**")
        live = live_run()
        if live is not None:
            state = live.status
            icon = {"done": ":material/check_circle:", "stopped": ":material/stop_circle:",
                    "failed": ":material/error:"}.get(state, ":material/hourglass_top:")
            st.caption(f"{icon} Your run `{live.run_name or '…'}`: {state}")
        st.caption(f"Runs are saved in `{runs_root()}`")


# ----------------------------------------------------------------------------- models and calibration
MODEL_BLURBS = {
    "p3gm": "P3GM: DP-PCA encoder + DP-EM mixture prior, then a decoder trained with DP-SGD. "
            "Spends part of ε on the encoder, the rest on the decoder.",
    "pgm": "PGM: P3GM without noise (ε = ∞) — the non-private ceiling of the same architecture.",
    "p3gm-ae": "P3GM-AE: P3GM with a deterministic encoder (the PCA code itself); only the decoder learns.",
    "vae": "VAE: a plain variational autoencoder, no privacy (ε = ∞).",
    "dp-vae": "DP-VAE: the whole VAE trained with DP-SGD — the usual baseline P3GM improves on.",
    "lvae": "L-VAE: a VAE whose privacy is certified rather than spent from a ledger.",
    "gs-wgan": "GS-WGAN: a Wasserstein GAN whose generator gets DP gradients through the critics.",
}


def model_info(name: str) -> dict:
    """Label, privacy and a one-line description of a registered model (imports its module)."""
    from dpcore.models import get_model

    cls = get_model(name)
    doc = (cls.__doc__ or "").strip().splitlines()
    return {"name": name, "label": getattr(cls, "label", name), "private": bool(getattr(cls, "private", True)),
            "description": MODEL_BLURBS.get(name) or (doc[0] if doc else ""), "config_class": cls.config_class,
            "certified": hasattr(cls, "privacy_claim")}


def default_delta(n: int) -> float:
    """δ default: the smaller of 1e-5 and 1/n^1.1 (δ must stay well below one person in n)."""
    return float(min(1e-5, 1.0 / max(n, 2) ** 1.1))


@st.cache_data(show_spinner=False, max_entries=256)
def calibration_preview(model: str, params_json: str, n: int) -> dict | None:
    """The noise a run with these settings will use, before training (the model's own calibration
    call, made here with the same arguments). None for non-private models or unknown families."""
    from dpcore.models import get_model
    from dpcore.privacy import accountant as acc

    cls = get_model(model)
    if not getattr(cls, "private", True):
        return None
    p = json.loads(params_json)
    if "encoder_share" in p and "pca_dim" in p:
        cal = acc.calibrate_p3gm(p["epsilon"], p["delta"], p["encoder_share"], n, p["batch_size"],
                                 p["epochs"], components=p.get("components", 1),
                                 em_iters=p.get("em_iters", 20), center=p.get("pca_center", "noisy"))
    elif {"epsilon", "delta", "batch_size", "epochs"} <= set(p) and "encoder_share" not in p:
        cal = acc.calibrate_dp_vae(p["epsilon"], p["delta"], n, p["batch_size"], p["epochs"])
    else:
        return None
    return cal.to_dict()


# ----------------------------------------------------------------------------- cached evaluations
# Keyed by run name + run_mtime: re-opening a page never re-evaluates; retraining or renaming does.
@st.cache_resource(max_entries=6, show_spinner="Loading the run and drawing synthetic rows…")
def _bundle(name: str, mtime: float):
    from dpcore.report import load_bundle

    return load_bundle(runs_root() / name)


def bundle(name: str):
    """The run's model, real splits and synthetic sample (shared read-only; never mutate)."""
    return _bundle(name, run_mtime(runs_root() / name))


def key(name: str) -> tuple[str, float]:
    return name, run_mtime(runs_root() / name)


@st.cache_data(max_entries=32, show_spinner="Training classifiers on synthetic data, testing on real…")
def utility(name: str, mtime: float):
    """(UtilityResult, figure) — also saved to the run's evaluation.json."""
    from dpcore import report

    b = _bundle(name, mtime)
    res, fig = report.utility(b)
    if res is not None:
        report.save_evaluation(b.run.path, utility=res.to_dict())
    return res, fig


@st.cache_data(max_entries=32, show_spinner="Comparing marginals…")
def marginals(name: str, mtime: float) -> dict:
    from dpcore import report

    b = _bundle(name, mtime)
    out = report.marginals(b)
    report.save_evaluation(b.run.path, marginals={"tvd_1way": out["tvd_1way"], "tvd_2way": out["tvd_2way"]})
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def one_way(name: str, mtime: float, column: str):
    from dpcore.evaluate import one_way_figure

    b = _bundle(name, mtime)
    return one_way_figure(b.train, b.synthetic, column)


@st.cache_data(max_entries=32, show_spinner="Drawing samples…")
def samples(name: str, mtime: float) -> list:
    from dpcore import report

    return report.samples_figures(_bundle(name, mtime))


@st.cache_data(max_entries=32, show_spinner="Projecting latent codes…")
def latent(name: str, mtime: float, method: str):
    from dpcore import report

    return report.latent(_bundle(name, mtime), method=method)


@st.cache_data(max_entries=32, show_spinner="Running the membership-inference attack…")
def mia(name: str, mtime: float):
    """The attack's MIAResult — its summary is saved to the run's evaluation.json."""
    from dpcore import report

    b = _bundle(name, mtime)
    res = report.mia(b)
    report.save_evaluation(b.run.path, mia={k: v for k, v in res.to_dict().items() if k != "curve"})
    return res


@st.cache_data(max_entries=16, show_spinner="Building the report…")
def report_html(name: str, mtime: float) -> str:
    from dpcore import report

    return report.run_report(runs_root() / name, bundle=_bundle(name, mtime))


def model_runs() -> list:
    """Summaries of runs that have a usable model (done or stopped), newest first."""
    out = []
    for s in list_runs():
        if s.status in ("done", "stopped") and (Path(s.path) / "model" / "model.json").is_file():
            out.append(s)
    return out


def run_picker(label: str, summaries: list, key: str, *, allow_none: bool = False, default: str | None = None):
    """A select box over run names showing model, dataset and ε; returns the chosen name or None."""
    names = [s.name for s in summaries]
    info = {s.name: s for s in summaries}
    opts = (["(none)"] if allow_none else []) + names
    live = live_run()
    if default is None and not allow_none and live is not None and live.run_name in names:
        default = live.run_name
    index = opts.index(default) if default in opts else 0

    def fmt(n):
        if n == "(none)":
            return "(none)"
        s = info[n]
        return f"{n}  ·  {s.model} on {s.dataset}  ·  ε = {fmt_eps(s.epsilon)}"

    choice = st.selectbox(label, opts, index=index, key=key, format_func=fmt)
    return None if choice == "(none)" else choice


def headline_missing(path) -> bool:
    """True when a run has no saved utility or attack score yet."""
    from dpcore.report import headline, load_evaluation

    h = headline(load_evaluation(path))
    return h["mia_auc"] is None or (h["utility"] is None and h["utility_metric"] is None)


@st.cache_data(max_entries=8, show_spinner=False)
def synthetic_csv(name: str, mtime: float) -> bytes:
    """The run's synthetic sample in the original columns, as CSV bytes."""
    return _bundle(name, mtime).synthetic.to_frame().to_csv(index=False).encode()


def utility_points() -> list[dict]:
    """(model, dataset, ε, utility) of every scored run: the privacy–utility curve's points."""
    from dpcore.report import headline, load_evaluation

    out = []
    for s in list_runs():
        h = headline(load_evaluation(s.path))
        if h["utility"] is not None and not math.isnan(s.epsilon):
            out.append({"run": s.name, "model": s.model, "dataset": s.dataset, "epsilon": s.epsilon,
                        "utility": h["utility"], "metric": h["utility_metric"], "reference": h["reference"]})
    return out
