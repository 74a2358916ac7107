"""`python -m dpcore train` / `sample` on digits, in-process (the dispatcher's main)."""
import json
import re

import numpy as np
import pytest

from dpcore.cli import main
from dpcore.privacy.accountant import epsilon as accountant_epsilon
from dpcore.privacy.ledger import PrivacyLedger

TINY = ["--pca-dim", "8", "--hidden", "32", "--epochs", "1", "--batch-size", "100", "--warmup-steps", "5"]


def test_train_then_sample(tmp_path, capsys):
    out = tmp_path / "runs" / "r1"
    rc = main(["train", "--model", "p3gm", "--dataset", "digits", "--epsilon", "1", "--delta", "1e-5",
               "--encoder-share", "0.3", "--components", "1", "--seed", "0", *TINY,
               "--out", str(out), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["run"] == str(out) and res["status"] == "done" and res["seconds"] > 0
    assert res["epsilon"] == accountant_epsilon(PrivacyLedger.from_list(res["ledger"]), res["delta"])
    assert res["params"]["pca_dim"] == 8 and res["delta"] == 1e-5

    for ext in ("csv", "npz", "png"):
        target = tmp_path / f"synth.{ext}"
        assert main(["sample", str(out), "--n", "40", "--out", str(target), "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["rows"] == 40 and target.stat().st_size > 0
    import pandas as pd

    frame = pd.read_csv(tmp_path / "synth.csv")
    assert frame.shape == (40, 65) and "label" in frame.columns
    arrays = np.load(tmp_path / "synth.npz")
    assert arrays["images"].shape == (40, 8, 8) and arrays["labels"].shape == (40,)
    assert (tmp_path / "synth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_non_private_model_reports_infinite_epsilon(tmp_path, capsys):
    rc = main(["train", "--model", "vae", "--dataset", "digits", "--latent-dim", "4", "--hidden", "16",
               "--epochs", "1", "--batch-size", "100", "--out", str(tmp_path / "v"), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["epsilon"] == "inf" and res["ledger"] == []


def test_lvae_releases_have_infinite_epsilon_and_the_certificate_is_scoped(tmp_path, capsys):
    """L-VAE's training is not private: everything it releases has ε = ∞. `--epsilon` sets L so that
    the certificate of *exact* posterior re-sampling (not offered) equals it; the JSON must not
    present that number as the run's ε."""
    rc = main(["train", "--model", "lvae", "--dataset", "digits", "--epsilon", "50", "--hidden", "16",
               "--epochs", "1", "--batch-size", "256", "--out", str(tmp_path / "l"), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["epsilon"] == "inf" and res["covered_by_epsilon"] == []
    claim = res["privacy_claim"]
    assert claim["releases_epsilon"] == "inf" and "epsilon" not in claim
    assert claim["certified"] is True and claim["certificate_epsilon"] == pytest.approx(50.0, rel=1e-4)
    assert "does not offer" in claim["certificate_applies_to"]
    assert "ε = ∞" in claim["summary"] and "Metropolis" in claim["summary"]


def test_train_json_lists_what_epsilon_covers(tmp_path, capsys):
    from dpcore.privacy.coverage import covered

    assert main(["train", "--model", "p3gm", "--dataset", "digits", "--epsilon", "2", *TINY, "--out",
                 str(tmp_path / "p"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["covered_by_epsilon"] == [o.key for o in covered()]
    assert {"raw_losses", "real_rows", "attack_statistics"} <= set(res["not_covered"])
    assert res["preprocessing_covered"] is True and "adding or removing one row" in res["neighbouring"]


@pytest.mark.parametrize("argv, words", [
    (["--model", "lvae", "--variant", "penalty", "--dataset", "digits", "--epsilon", "5"], "penalty"),
    (["--model", "p3gm", "--dataset", "digits", "--epsilon", "0"], "epsilon"),
    (["--model", "p3gm", "--dataset", "digits", "--epsilon", "-2"], "epsilon"),
    (["--model", "nope", "--dataset", "digits"], "model"),
    (["--model", "p3gm", "--dataset", "digits", "--pca-dim", "1000"], "pca_dim"),
    (["--model", "vae", "--dataset", "digits", "--epsilon", "1"], "epsilon"),
    (["--model", "p3gm"], "--dataset"),
    (["--model", "p3gm", "--dataset", "no-such-set"], "no-such-set"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(["train", *argv, "--out", str(tmp_path / "x")]))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_sample_from_a_missing_run_exits_2(tmp_path, capsys):
    assert main(["sample", str(tmp_path / "nothing"), "--out", str(tmp_path / "a.csv")]) == 2
    assert "not a run" in capsys.readouterr().err


def test_csv_with_dp_bounds_spends_its_share_inside_the_target(tmp_path, capsys):
    """--bounds dp: the bounds release opens the run's ledger and the run's ε is still the target."""
    rng = np.random.default_rng(0)
    csv = tmp_path / "t.csv"
    rows = ["a,b,y"] + [f"{rng.normal(50, 10):.3f},{rng.integers(0, 40)},{i % 2}" for i in range(400)]
    csv.write_text("\n".join(rows) + "\n")
    declare = tmp_path / "schema.json"
    declare.write_text(json.dumps({"types": {"a": "numeric", "b": "integer"}, "categories": {"y": [0, 1]}}))
    out = tmp_path / "runs" / "dp"
    rc = main(["train", "--model", "dp-vae", "--data", str(csv), "--target", "y", "--declare", str(declare),
               "--bounds", "dp", "--bounds-noise", "4", "--epsilon", "2", "--latent-dim", "2", "--hidden", "16",
               "--epochs", "1", "--batch-size", "32", "--out", str(out), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    first = res["ledger"][0]
    assert first["name"] == "preprocessing: noisy bounds" and first["noise_multiplier"] == 4.0
    assert res["epsilon"] == pytest.approx(2.0, rel=1e-3)
    assert res["epsilon"] == accountant_epsilon(PrivacyLedger.from_list(res["ledger"]), res["delta"])
    template = json.loads((out / "model" / "model.json").read_text())
    assert "template" in template and '"dp"' in json.dumps(template["template"])
    assert template["template"]["preprocessing_private"] is True
    config = json.loads((out / "config.json").read_text())
    assert config["data"]["dp_bounds_noise"] == 4.0


@pytest.mark.parametrize("argv, words", [
    (["--dataset", "digits", "--bounds", "dp"], "--bounds dp applies to --data"),
    (["--dataset", "digits", "--declare", "x.json"], "--schema (--declare) applies to --data"),
    (["--dataset", "digits", "--schema", "x.json"], "--schema (--declare) applies to --data"),
])
def test_bounds_flags_need_a_csv(tmp_path, capsys, argv, words):
    assert main(["train", "--model", "p3gm", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def _train_and_sample(tmp_path, capsys, name, *extra):
    out = tmp_path / "runs" / name
    assert main(["train", "--model", "p3gm", "--dataset", "digits", "--seed", "0", *TINY, "--em-iters", "2",
                 *extra, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    res = json.loads(text) if "--json" in extra else text
    rows = []
    for i in range(2):
        target = tmp_path / f"{name}-{i}.npz"
        assert main(["sample", str(out), "--n", "20", "--seed", "5", "--out", str(target)]) == 0
        rows.append(np.load(target)["images"])
    capsys.readouterr()
    np.testing.assert_array_equal(rows[0], rows[1])  # one run, one sample seed: identical rows
    return res, rows[0]


def test_same_seed_trains_different_models_unless_noise_is_reproducible(tmp_path, capsys):
    a, rows_a = _train_and_sample(tmp_path, capsys, "a", "--json")
    b, rows_b = _train_and_sample(tmp_path, capsys, "b")
    assert not np.array_equal(rows_a, rows_b)  # the mechanism noise is secret, not the seed's
    assert (a["noise"], a["private"]) == ("secret", True) and "not private" not in b
    c, rows_c = _train_and_sample(tmp_path, capsys, "c", "--reproducible-noise", "--json")
    d, rows_d = _train_and_sample(tmp_path, capsys, "d", "--reproducible-noise")
    np.testing.assert_array_equal(rows_c, rows_d)
    assert (c["noise"], c["private"]) == ("seeded", False) and c["epsilon"] == pytest.approx(a["epsilon"], rel=1e-6)
    assert "not private: noise reproducible from the seed" in d


def test_schema_file_gives_the_target_and_a_conflict_fails_first(tmp_path, capsys):
    from dpcore.cli.train import _declared

    schema = tmp_path / "schema.json"
    schema.write_text('{"types": {"a": "numeric"}, "bounds": {"a": [0, 1]}, "target": "y"}')
    assert _declared(str(schema), "t.csv") == {"types": {"a": "numeric"}, "bounds": {"a": [0, 1]}, "target": "y"}
    csv = tmp_path / "t.csv"
    csv.write_text("a,y\n0.5,no\n0.2,yes\n")
    assert main(["train", "--model", "mst", "--data", str(csv), "--schema", str(schema), "--target", "a",
                 "--out", str(tmp_path / "x")]) == 2
    assert "differs from the schema's target 'y'" in capsys.readouterr().err


def six_column_csv(path, rows=200):
    """A first user's table: 6 numeric columns, fewer rows than the default batch of 300."""
    rng = np.random.default_rng(1)
    lines = ["a,b,c,d,e,f"] + [",".join(f"{v:.3f}" for v in rng.normal(0, 1, 6)) for _ in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_six_column_csv_trains_with_default_settings(tmp_path, capsys):
    csv = six_column_csv(tmp_path / "six.csv")
    assert main(["train", "--model", "p3gm", "--data", str(csv), "--out", str(tmp_path / "r" / "six"),
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    released = json.loads((tmp_path / "r" / "six" / "model" / "model.json").read_text())["released_rows"]
    # batch and epochs are resolved in the run from ñ (about 180 ± 50), never from the exact 180 rows
    assert res["status"] == "done" and res["params"]["pca_dim"] == 6
    assert res["params"]["batch_size"] == res["auto"]["batch_size"] == released // 4
    assert set(res["adapted"]) == {"pca_dim", "batch_size", "epochs"} and "6 model columns" in res["adapted"]["pca_dim"]
    assert res["params"]["epochs"] == 200  # auto epochs: ~1000 steps wanted, capped at 200 passes
    config = json.loads((tmp_path / "r" / "six" / "config.json").read_text())
    assert config["params"]["batch_size"] is None and config["params"]["epochs"] is None  # stored as auto
    assert main(["train", "--model", "vae", "--data", str(csv), "--out", str(tmp_path / "r" / "vae")]) == 0
    # ε = ∞: the VAE's batch is a quarter of the exact training rows (a secret-keyed split: ~180)
    m = re.search(r"adapted to the data: batch_size 300 → (\d+): a quarter of the (\d+) training rows",
                  capsys.readouterr().out)
    assert m and int(m.group(1)) == int(m.group(2)) // 4 and 120 < int(m.group(2)) < 200
