"""Attacker's view of what a run publishes: on a declared table D and D + one adversarial row,
everything a run publishes except its noisy values is equal.

Why: ε covers a run's outputs only if every published value is a function of public facts and the
run's noisy releases. A setting computed from the exact row count (auto epochs ⌈1000·B/n⌉, a batch
of n//4, δ = 1/n^1.1, a size-based ε) would tell D from D + 1 outright. The runs here release the
same noisy count ñ (the event that both draws land on one value: `noisy_count` is pinned), so
everything computed from public facts and ñ must be byte-equal; what may differ is only what the
secret noise draws (weights, noisy statistics) and raw numbers that are labelled not covered
(losses). Settings are the defaults, plus constants that keep the runs small.
"""
import json
import shutil

import pytest
from neighbour_tables import RELEASED_N, SCHEMA, TABLE_STEPS, pin_released_count, write_pair

from dpcore.cli import main
from dpcore.models import MODELS
from dpcore.runs.uploads import split_key, split_key_path

PRIVATE = [name for name in MODELS if MODELS[name].private]
NOT_PRIVATE = [name for name in MODELS if not MODELS[name].private]
# constants, not functions of the data: small networks and few steps, auto epochs/batch untouched
SMALL = {"p3gm": ["--hidden", "8", "--em-iters", "2", "--warmup-steps", "0"],
         "p3gm-ae": ["--hidden", "8", "--em-iters", "2", "--warmup-steps", "0"],
         "dp-vae": ["--hidden", "8", "--latent-dim", "2"],
         "gs-wgan": ["--steps", "3", "--warmup-steps", "2", "--n-discriminators", "2", "--gen-hidden", "8",
                     "--critic-hidden", "8"],
         "aim": ["--rounds", "2", "--round-iters", "10", "--iters", "20"], "mst": ["--iters", "20"]}
# model.json fields that differ from run to run on the same data: the wall time, and the marginals
# AIM/MST select with the exponential mechanism (a ledgered noisy release); the trained state
# (weights, noisy statistics) is masked below
NOISY = {"fit_result": ("seconds",), "calibration": ("selected",)}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("neighbours")
    d, d1 = write_pair(tmp)
    split_key(d)
    shutil.copy(split_key_path(d), split_key_path(d1))  # one key: the split of D + 1 adds at most that row
    schema = tmp / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    return tmp, d, d1, schema


@pytest.fixture
def pinned_count(monkeypatch):
    pin_released_count(monkeypatch)


def _published(run_dir) -> dict:
    """Every file a run publishes, minus what its secret noise draws and the raw losses."""
    from dpcore.release import settings_section
    from dpcore.report import load_bundle

    config = json.loads((run_dir / "config.json").read_text())
    config["data"].pop("csv")  # the file's path (d.csv / d1.csv) is the test's, not the run's
    config["data"].pop("split_key_id", None)  # random per stored table (tests/privacy/test_published_bytes.py)
    model = json.loads((run_dir / "model" / "model.json").read_text())
    for key, fields in NOISY.items():
        for f in fields:
            model.get(key, {}).pop(f, None)
    state = {k: v for k, v in model.items() if k not in ("config", "template", "ledger", "calibration",
                                                         "released_rows", "fit_result", "model",
                                                         "n_features", "n_classes")}
    model = {k: v for k, v in model.items() if k not in state}
    model["state_keys"] = sorted(state)  # the state's values are noisy releases (masked), its shape is not
    ledger = json.loads((run_dir / "ledger.json").read_text())
    status = json.loads((run_dir / "status.json").read_text())
    status = {k: status.get(k) for k in ("status", "step", "total_steps", "epsilon", "message")}
    events = [{k: e.get(k) for k in ("phase", "step", "total_steps", "epoch", "epsilon")}
              for e in (json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines())]
    settings = settings_section(load_bundle(run_dir, n_samples=10))
    return {"config": config, "model": model, "ledger": ledger, "status": status, "events": events,
            "release_settings": settings}


def _diff(a, b, path="") -> list:
    """The paths where two JSON values differ (the assertion's message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for k in sorted(set(a) | set(b), key=str) for p in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:60]} != {str(b)[:60]}"]


def _train(tmp, csv, schema, model, root):
    out = tmp / root / model  # one run name for both: the name is the user's choice
    assert main(["train", "--model", model, "--data", str(csv), "--declare", str(schema), "--target", "y",
                 "--test-size", "0", *SMALL[model], "--out", str(out), "--json", "--overwrite"]) == 0
    return out


@pytest.mark.parametrize("model", PRIVATE)
def test_cli_defaults_publish_the_same_for_neighbours(tables, pinned_count, capsys, model):
    tmp, d, d1, schema = tables
    a = _published(_train(tmp, d, schema, model, "runs-d"))
    b = _published(_train(tmp, d1, schema, model, "runs-d1"))
    capsys.readouterr()
    for part in a:
        assert a[part] == b[part], f"{model}: {part} differs between D and D + 1 row: {_diff(a[part], b[part])}"
    cfg = a["config"]["params"]
    for field in MODELS[model].size_auto_fields:  # config.json says auto; model.json the value from ñ
        assert cfg.get(field) is None, f"{model}: {field} resolved from the exact n in config.json"


def test_every_model_is_checked_or_not_private():
    assert set(SMALL) == set(PRIVATE)  # a new private model must join the suite
    assert {"pgm", "vae", "lvae"} <= set(NOT_PRIVATE)  # ε = ∞: nothing covered, nothing to compare


def test_the_runs_resolve_auto_settings_from_the_released_count(tables, pinned_count, capsys):
    tmp, d, _, schema = tables
    out = _train(tmp, d, schema, "dp-vae", "runs-auto")
    capsys.readouterr()
    saved = json.loads((out / "model" / "model.json").read_text())
    from dpcore.models.neural import MAX_AUTO_EPOCHS

    batch = RELEASED_N // 4  # ñ ≤ 300: a quarter of ñ, not of the 103 training rows (25)
    assert saved["config"]["batch_size"] == batch and saved["released_rows"] == RELEASED_N
    assert saved["config"]["epochs"] == min(MAX_AUTO_EPOCHS, max(4, -(-TABLE_STEPS * batch // RELEASED_N)))
    config = json.loads((out / "config.json").read_text())
    assert config["params"]["batch_size"] is None and config["params"]["epochs"] is None  # "auto"
    from dpcore.release import settings_section
    from dpcore.report import load_bundle

    assert f"auto → {batch} from ñ" in settings_section(load_bundle(out, n_samples=10))[1]


def test_data_choice_defaults_are_the_same_for_neighbours(tables):
    """The Train and Story pages' defaults on an uploaded file: constants, whatever its size."""
    from dpcore.ui.defaults import default_delta, public_size, size_defaults
    from dpcore.ui.story import story_configs

    tmp, d, d1, _ = tables
    for n in (90, 1_000, 3_000, 10_000, 40_000, 100_000):
        assert size_defaults(public_size({"csv": str(d)}, n)) == size_defaults(public_size({"csv": str(d1)}, n + 1))
        assert default_delta(n) == default_delta(n + 1)
    runs = [story_configs({"csv": str(f), "target": "y"}, n) for f, n in ((d, 2_999), (d1, 3_000))]
    for ra, rb in zip(*runs):
        assert ra.params == rb.params
