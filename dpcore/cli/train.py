"""`python -m dpcore train …` (what it prints at the end: train_report.py).

Every field of the chosen model's config dataclass is a flag of the same name (underscores →
dashes), with the field's help text and default. The flags are added only once `train` is the
command and `--model` is known, so other commands never pay for importing torch and the models.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import threading
import time
from pathlib import Path

from dpcore.cli.args import integer, number

PARAM_PREFIX = "param_"


# ----------------------------------------------------------------------------- flag generation
def _flag_type(p):
    """argparse type of field `p`: the declaration's own parser (dpcore.models.params.parse_value),
    its one-line message argparse's error (exit code 2)."""
    from dpcore.errors import InvalidParameter
    from dpcore.models.params import parse_value

    def parse(text: str):
        try:
            return parse_value(p, text)
        except InvalidParameter as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = p.base.__name__
    return parse


def add_config_flags(parser: argparse.ArgumentParser, config_cls, seen: set[str] | None = None) -> None:
    """One flag per field of `config_cls` (dest "param_<field>", default: not given)."""
    from dpcore.models.params import config_fields

    seen = set() if seen is None else seen
    group = parser.add_argument_group(f"{config_cls.__name__} parameters")
    for p in config_fields(config_cls):
        if p.name in seen:
            continue
        seen.add(p.name)
        auto = f"; None = adapted to the data, {p.auto} when it fits" if p.auto is not None else ""
        # argparse formats help with %: a declared "~5 %" would end `--help` in a traceback
        text = f"{p.help} (default: {p.default}{auto})".replace("%", "%%")
        flag = "--" + p.name.replace("_", "-")
        if p.base is bool:
            group.add_argument(flag, dest=PARAM_PREFIX + p.name, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=text)
            continue
        group.add_argument(flag, dest=PARAM_PREFIX + p.name, type=_flag_type(p),
                           default=argparse.SUPPRESS, metavar=p.name.upper(), help=text)


def _requested_model(args: list[str]) -> str | None:
    for i, a in enumerate(args):
        if a == "--model" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--model="):
            return a.split("=", 1)[1]
    return None


def _train_parse_known_args(self, args=None, namespace=None):
    """Adds the chosen model's flags (all models' for --help without --model), then parses."""
    from dpcore.models import MODELS

    args = list(sys.argv[1:] if args is None else args)
    if not getattr(self, "_model_flags_added", False):
        name = _requested_model(args)
        seen: set[str] = set()
        if name in MODELS:
            add_config_flags(self, MODELS[name].config_class, seen)
        elif name is None and any(a in ("-h", "--help") for a in args):
            for cls in MODELS.values():
                add_config_flags(self, cls.config_class, seen)
        self._model_flags_added = True
    ns, extras = type(self).__mro__[1].parse_known_args(self, args, namespace)
    flags = [a.split("=", 1)[0] for a in extras if a.startswith("--")]
    if flags and getattr(ns, "model", None) in MODELS:
        from dpcore.models.params import config_fields

        others = {p.name for cls in MODELS.values() for p in config_fields(cls.config_class)}
        known = [f for f in flags if f[2:].replace("-", "_") in others]
        if known:
            self.error(f"{known[0]} is not a parameter of model {ns.model!r}"
                       + (" (it is non-private: ε = ∞)" if not MODELS[ns.model].private else ""))
    return ns, extras


def register(sub) -> None:
    from dpcore.models import model_names

    p = sub.add_parser(
        "train", help="train a model on a dataset and save the run folder",
        description="Train a model and save the run (config, metrics, ledger + ε, weights). "
                    "Every hyperparameter of the model's config is a flag; see "
                    "`python -m dpcore train --model NAME --help`.")
    # The parser class is the dispatcher's; only its parse step changes (lazy model flags).
    p.__class__ = type("TrainParser", (type(p),), {"parse_known_args": _train_parse_known_args})
    p.add_argument("--model", required=True, choices=model_names(), help="which synthesizer to train")
    src = p.add_argument_group("data")
    src.add_argument("--dataset", help="a built-in dataset (python -m dpcore datasets)")
    src.add_argument("--data", metavar="FILE.csv", help="a CSV file instead of --dataset")
    src.add_argument("--target", help="label column of --data (optional)")
    src.add_argument("--test-size", type=number, default=None, help="held-out share (default 0.1, 0.5 for --preset overfit; "
                     "mnist/fashion-mnist use the official split); 0 = fit on every row, no test split "
                     "(utility and membership attacks then have no held-out rows)")
    src.add_argument("--test", metavar="FILE.csv", help="held-out rows of --data from a second CSV with the same "
                     "columns, read with --data's schema (then --data is not split)")
    src.add_argument("--split-seed", type=integer, default=0, help="seed of a built-in's train/test split (a --data file is split row by row with "
                          "a secret key kept beside it)")
    src.add_argument("--rows", type=integer, default=None, help="built-ins: keep a seeded subset of at most ROWS rows; --data: keep each row on its "
                          "own (keyed hash) with probability ROWS/Ñ, Ñ a ledgered noisy row count")
    src.add_argument("--outlier", action="store_true", help="add one all-white image to the training rows")
    src.add_argument("--schema", "--declare", dest="declare", metavar="SCHEMA.json",
                     help='the public schema of --data: {"types": {col: kind}, "bounds": {col: [lo, hi]}, '
                          '"categories": {col: [levels]}, "date_formats": {col: "%%d/%%m/%%Y"}, "target": col}; '
                          'declared columns are covered by ε (a date\'s format too; --declare is the old name)')
    src.add_argument("--bounds", choices=("data", "dp"), default="data",
                     help="bounds of --data columns whose bounds are not declared: 'data' reads min/max off "
                          "the rows (preprocessing not covered by ε), 'dp' estimates them with a ledgered "
                          "noisy histogram (needs the columns' kinds declared)")
    src.add_argument("--bounds-noise", type=number, default=10.0, metavar="SIGMA",
                     help="noise multiplier of --bounds dp (default 10)")
    p.add_argument("--preset", default=None,
                   help="named settings (vae: overfit = a model that memorises, for teaching); "
                        "explicit flags override them")
    p.add_argument("--out", help="run folder ROOT/NAME (default runs/<model>-<data>-eps…-<time>)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run folder")
    p.add_argument("--json", action="store_true", help="print one JSON object at the end")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train)


# ----------------------------------------------------------------------------- commands
def _params(args) -> dict:
    return {k[len(PARAM_PREFIX):]: v for k, v in vars(args).items() if k.startswith(PARAM_PREFIX)}


def _progress(args):
    if args.json or args.no_progress or not sys.stderr.isatty():
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=None, unit="step", file=sys.stderr, dynamic_ncols=True)

    def callback(ev):
        if bar.total != ev.total_steps:
            bar.total = ev.total_steps
        bar.n = ev.step
        eps = "∞" if math.isinf(ev.epsilon) else f"{ev.epsilon:.3f}"
        loss = ev.losses.get("loss")
        bar.set_postfix_str(f"{ev.phase} loss={loss:.2f} ε={eps}" if loss is not None
                            else f"{ev.phase} ε={eps}", refresh=False)
        bar.update(0)
    return bar, callback


def cmd_train(args) -> int:
    from dpcore.errors import InvalidParameter
    from dpcore.jobs import train_run

    if (args.dataset is None) == (args.data is None):
        raise InvalidParameter("give exactly one of --dataset NAME or --data FILE.csv")
    if args.target is not None and args.data is None:
        raise InvalidParameter("--target applies to --data FILE.csv only")
    check_train_args(args)
    from dpcore.cli.paths import check_readable, check_run_out

    root, name = check_run_out(args.out)
    if args.data is not None:
        check_readable(args.data)
        args.data = str(Path(args.data).resolve())  # the run re-reads it from any folder
    if args.test is not None:
        if args.data is None:
            raise InvalidParameter("--test applies to --data FILE.csv only (built-ins have their own split)")
        if args.test_size not in (None, 0):
            raise InvalidParameter("--test-size and --test exclude each other: --test is the held-out set")
        check_readable(args.test)
        args.test = str(Path(args.test).resolve())
    if args.test_size is not None and not (args.test_size == 0 or 0 < args.test_size < 1):
        raise InvalidParameter(f"--test-size must be 0 (no test split) or in (0, 1), got {args.test_size:g}")
    if args.bounds == "dp" and args.data is None:
        raise InvalidParameter("--bounds dp applies to --data FILE.csv only (built-ins have documented bounds)")
    cfg = train_config(args)
    bar, callback = _progress(args)
    t0 = time.time()
    stop = threading.Event()
    plans = []
    with _stop_on_signals(stop):  # until the command ends: a late signal must not kill the output
        try:
            run = train_run(cfg, root, callback, name=name, overwrite=args.overwrite, stop=stop,
                            on_plan=plans.append)
        finally:
            if bar is not None:
                bar.close()
        from dpcore.cli.train_report import report

        return report(args, run, plans[0], time.time() - t0)


def train_config(args):
    """The RunConfig `train` trains with: the flags given, the preset's values, then the model's
    own defaults (dpcore.models.params.defaults, filled in by RunConfig: the Train page's too)."""
    from dpcore.errors import InvalidParameter
    from dpcore.runs import DataConfig, RunConfig

    noise = None
    if args.bounds == "dp":
        from dpcore.errors import check_positive

        noise = check_positive("--bounds-noise", args.bounds_noise)
    declared = _declared(args.declare, args.data)
    target = declared.pop("target", None)
    if target is not None and args.target not in (None, target):
        raise InvalidParameter(f"--target {args.target!r} differs from the schema's target {target!r}")
    args.target = args.target if args.target is not None else target
    params, test_size = _params(args), args.test_size
    if args.preset is not None:
        from dpcore.models.presets import preset

        chosen = preset(args.model, args.preset)
        params = {**chosen["params"], **params}
        if test_size is None:
            test_size = chosen.get("data", {}).get("test_size")
    test_size = 0.0 if args.test is not None else 0.1 if test_size is None else test_size
    data = DataConfig(dataset=args.dataset, csv=args.data, target=args.target, test_size=test_size, test_csv=args.test,
                      split_seed=args.split_seed, outlier=args.outlier, n=args.rows, dp_bounds_noise=noise,
                      **declared)
    return RunConfig(args.model, params, data)


IMAGE_SETS = ("digits", "fashion-mnist", "mnist")
TABLE_ONLY = ("numeric_bins", "numeric_atoms", "tabular_heads")  # per-column heads of a table; an image has none


def check_train_args(args) -> None:
    """Every cap and every flag that cannot apply, before data is read (dpcore/limits.py)."""
    from dpcore.errors import InvalidParameter, check_int
    from dpcore.limits import check_name, check_params, check_seed

    for flag in ("dataset", "data", "target", "preset", "test", "declare"):
        value = getattr(args, flag, None)
        if value is not None:
            check_name(value, "--" + {"declare": "schema"}.get(flag, flag))
    params = _params(args)
    check_params(params)
    if params.get("seed") is not None:
        check_seed(params["seed"], "--seed")
    check_seed(args.split_seed, "--split-seed")
    if args.rows is not None:
        check_int("--rows", args.rows, minimum=1)
    if args.dataset is not None:
        from dpcore.data.registry import _canonical_name

        key = _canonical_name(args.dataset)
        given = [k for k in TABLE_ONLY if k in params]
        if key in IMAGE_SETS and given:
            raise InvalidParameter(f"--{given[0].replace('_', '-')} applies to tables only; {key} is an image set")


def _declared(path, csv) -> dict:
    """types / bounds / categories / date_formats from a --declare JSON file (one-line errors naming the flag)."""
    import json

    from dpcore.errors import InvalidParameter

    if path is None:
        return {}
    if csv is None:
        raise InvalidParameter("--schema (--declare) applies to --data FILE.csv only")
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InvalidParameter(f"--schema {path}: cannot read it as JSON ({exc})") from None
    keys = ("types", "bounds", "categories", "date_formats")
    target = doc.pop("target", None) if isinstance(doc, dict) else None
    if (not isinstance(doc, dict) or set(doc) - set(keys) or not all(isinstance(doc[k], dict) for k in doc)
            or not (target is None or isinstance(target, str))):
        raise InvalidParameter(f"--schema {path} must be a JSON object with keys among {', '.join(keys)}, "
                               "each mapping column names to a kind, [lower, upper], a list of levels or a date format, "
                               "and optionally \"target\": a column name")
    out = {k: doc[k] for k in keys if doc.get(k)}
    return {**out, "target": target} if target is not None else out


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event):
    """SIGINT (Ctrl-C) and SIGTERM stop training like the app's Stop button: the run ends after
    the current step as "stopped", its model saved. A second signal acts as usual (exits)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        if not stop.is_set():
            print(f"\n{signal.Signals(signum).name}: stopping after this step (again to abort)",
                  file=sys.stderr)
        stop.set()
        for sig, h in old.items():
            signal.signal(sig, h)

    for sig in old:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
