"""`--bounds dp` in a run: noise from the run's secret stream, one ledger record, a private run."""
import json

import numpy as np

from dpcore.cli import main
from dpcore.runs import DataConfig, Run


def _table(path, rows=400):
    """Column a: the bulk in [64, 128) and 6 rows in [256, 512): at σ = 2 (k = 1 column) the
    threshold is 3·2 = 6, so that bin is kept in about half of the draws (the upper bound is 512
    or 128) — fresh noise gives different bounds from one draw to the next."""
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(70, 120, rows - 6), np.full(6, 300.0)])
    lines = ["a,b,y"] + [f"{v:.2f},{rng.integers(0, 50)},{'yes' if rng.random() < .3 else 'no'}" for v in a]
    path.write_text("\n".join(lines) + "\n")
    schema = path.with_suffix(".json")  # kinds declared, a's bounds not: the run estimates them with DP
    schema.write_text(json.dumps({"types": {"a": "numeric", "b": "integer"}, "bounds": {"b": [0, 50]},
                                  "categories": {"y": ["no", "yes"]}}))
    return path, schema


def test_each_load_draws_fresh_secret_bounds(tmp_path):
    csv, _ = _table(tmp_path / "d.csv")
    cfg = DataConfig(csv=str(csv), target="y", types={"a": "numeric", "b": "integer"}, bounds={"b": [0, 50]},
                     categories={"y": ["no", "yes"]}, dp_bounds_noise=2.0, split_seed=0)
    seen = set()
    for _ in range(20):
        train, _ = cfg.load()
        col = train.schema.column("a")
        seen.add((col.lower, col.upper))
        recs = train.meta["privacy_records"]
        assert len(recs) == 1 and recs[0]["noise"] == "secret" and recs[0]["noise_multiplier"] == 2.0
    assert len(seen) > 1  # the same split seed, different noise: P(one value 20 times) < 1e-5


def test_bounds_dp_twice_gives_private_runs_with_one_record_each(tmp_path, capsys):
    csv, schema = _table(tmp_path / "d.csv")
    for i in range(2):
        out = tmp_path / "runs" / f"r{i}"
        assert main(["train", "--model", "dp-vae", "--data", str(csv), "--declare", str(schema), "--target", "y",
                     "--bounds", "dp", "--bounds-noise", "2", "--epsilon", "5", "--hidden", "8", "--epochs", "1",
                     "--out", str(out), "--json"]) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["private"] is True and res["noise"] == "secret"
        run = Run(out)
        led = json.loads((out / "ledger.json").read_text())
        assert led["private"] is True
        recs = [r for r in led["records"] if r["name"] == "preprocessing: noisy bounds"]
        assert len(recs) == 1 and all(r["noise"] == "secret" for r in led["records"])
        assert not run.summary().seeded_noise
        # re-reading the run's data gives the bounds it trained with (no new draw)
        model = Run(out).load_model()
        trained = model.template.schema.column("a")
        for _ in range(3):
            train, _ = run.load_data()
            assert (train.schema.column("a").lower, train.schema.column("a").upper) == (trained.lower, trained.upper)
