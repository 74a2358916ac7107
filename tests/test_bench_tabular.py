"""bench/tabular.py: flags fail with one line naming the flag (exit 2), and the table shows every cell."""
import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("bench_tabular", Path(__file__).parents[1] / "bench" / "tabular.py")
tab = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tab)


@pytest.mark.parametrize("argv, flag", [(["--models", "p3gm,gan"], "--models"), (["--datasets", "adult"], "--datasets"),
                                        (["--epsilons", "1,x"], "--epsilons"), (["--epsilons", "0"], "--epsilons"),
                                        (["--seeds", ""], "--seeds")])
def test_bad_flags_exit_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        tab.main(argv)
    assert exc.value.code == 2 and flag in capsys.readouterr().err.strip().splitlines()[-1]


def test_table_rows():
    row = {"dataset": "cps1988", "model": "mst", "epsilon_target": 1.0, "seed": 0, "epsilon": 0.9999999,
           "tvd_1way_train": 0.0031, "tvd_2way_train": 0.0172, "tvd_1way_test": 0.0125, "tvd_2way_test": 0.0268,
           "auc_logistic_regression": float("nan"), "auc_gradient_boosting": 0.556, "classes": "1/2", "fit_s": 15.2}
    floor = dict(row, model="real train", epsilon_target=None, seed=None, epsilon=None, fit_s=None)
    row.update(q99_worst=0.123, q99_worst_column="wage", q99_off="1/2", mass_worst=0.4, mass_worst_column="debt",
               levels_missing=["city=b"])
    lines = tab.table([floor, row]).splitlines()
    assert len(lines) == 4 and lines[0].count("|") == lines[2].count("|") == 18
    assert ("| cps1988 | mst | 1 | 0 | 1.0000 | 0.0031 | 0.0172 | 0.0125 | 0.0268 | nan | 0.556 | 1/2 | "
            "0.12 (wage) | 1/2 | 0.40 (debt) | 1 | 15 |") == lines[3]
    assert "| real train | – | – | – |" in lines[2]


def _tiny():
    """Ten rows over every column kind, a nullable integer and a non-string target."""
    import pandas as pd

    from dpcore.data import dataset_from_frame
    from dpcore.data.schema import ColumnSpec, Schema

    schema = Schema([ColumnSpec("n", "integer", 0, 10, nullable=True), ColumnSpec("x", "numeric", -1.0, 1.0),
                     ColumnSpec("c|<b>", "categorical", categories=["a", "b"]), ColumnSpec("f", "boolean"),
                     ColumnSpec("y", "categorical", categories=[0, 1])], target="y")
    frame = pd.DataFrame({"n": [1, 2, None, 4, 5, 6, 7, 8, 9, 10], "x": [-0.5, 0.5] * 5,
                          "c|<b>": ["a", "b"] * 5, "f": [True, False] * 5, "y": [0, 1, 1, 0, 1] * 2})
    return dataset_from_frame(frame, schema=schema)


def test_save_synthetic_files(tmp_path):
    """--save-synthetic's files: the decoded rows with the user's columns, and sdmetrics metadata per kind."""
    import json

    import numpy as np
    import pandas as pd

    ds = _tiny()
    train, test = ds.subset(np.arange(7)), ds.subset(np.arange(7, 10))
    tab.save_reference(str(tmp_path), "tiny", train, test)
    tab.write_csv(test, tab.synthetic_path(str(tmp_path), "tiny", "dp-vae", 0.5, 3))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metadata-tiny.json", "tiny-dp-vae-eps0.5-s3.csv", "tiny-test.csv", "tiny-train.csv"]
    meta = json.loads((tmp_path / "metadata-tiny.json").read_text())
    assert meta == {"METADATA_SPEC_VERSION": "SINGLE_TABLE_V1", "columns": {
        "n": {"sdtype": "numerical", "computer_representation": "Int64"},
        "x": {"sdtype": "numerical", "computer_representation": "Float"},
        "c|<b>": {"sdtype": "categorical"}, "f": {"sdtype": "boolean"}, "y": {"sdtype": "categorical"}}}
    back = pd.read_csv(tmp_path / "tiny-train.csv")
    assert list(back.columns) == ["n", "x", "c|<b>", "f", "y"] and len(back) == 7
    assert back["n"].isna().sum() == 1 and back["y"].tolist() == [0, 1, 1, 0, 1, 0, 1]
    assert back["c|<b>"].tolist()[:2] == ["a", "b"] and back["f"].tolist()[:2] == [True, False]
    assert len(pd.read_csv(tmp_path / "tiny-dp-vae-eps0.5-s3.csv")) == 3


def test_sdmetrics_script_finds_the_cells_and_escapes(tmp_path):
    """bench/sdmetrics_scores.py (its own env) pairs each synthetic CSV with its dataset; no sdmetrics needed here."""
    spec = importlib.util.spec_from_file_location("sdm", Path(__file__).parents[1] / "bench" / "sdmetrics_scores.py")
    sdm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sdm)
    ds = _tiny()
    for data in ("tiny", "tiny-x"):
        tab.save_reference(str(tmp_path), data, ds, ds)
    tab.write_csv(ds, tab.synthetic_path(str(tmp_path), "tiny", "dp-vae", 1.0, 0))
    tab.write_csv(ds, tab.synthetic_path(str(tmp_path), "tiny-x", "mst", 4.0, 1))
    got = [(d, m, e, s, Path(p).name) for d, m, e, s, p in sdm.cells(str(tmp_path))]
    assert got == [("tiny", "real test", None, None, "tiny-test.csv"), ("tiny", "dp-vae", 1.0, 0, "tiny-dp-vae-eps1-s0.csv"),
                   ("tiny-x", "real test", None, None, "tiny-x-test.csv"), ("tiny-x", "mst", 4.0, 1, "tiny-x-mst-eps4-s1.csv")]
    row = {"dataset": "a|<b>", "model": "mst", "epsilon_target": 1.0, "seed": 0, "column_shapes": 0.9,
           "pair_trends": float("nan"), "pairs_counted": 0, "pairs_total": 3, "pair_trends_all": 0.8,
           "overall": 0.9, "overall_all": 0.85}
    assert sdm.table([row]).splitlines()[2] == (
        "| a\\|&lt;b&gt; | mst | 1 | 0 | 0.9000 | – | 0/3 | 0.8000 | 0.9000 | 0.8500 |")


def test_save_synthetic_dir_that_is_a_file(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    with pytest.raises(SystemExit) as exc:
        tab.main(["--save-synthetic", str(tmp_path / "f")])
    assert exc.value.code == 2 and "--save-synthetic" in capsys.readouterr().err.strip().splitlines()[-1]


def test_shape_checks_see_tails_point_masses_and_missing_levels():
    """A synthetic set with the real tail cut, the zeros spread out and a level dropped is caught
    on all three counts; the real rows against themselves score zero."""
    import numpy as np
    import pandas as pd

    from dpcore.data import dataset_from_frame

    rng = np.random.default_rng(0)
    n = 400
    real = pd.DataFrame({"debt": np.where(rng.random(n) < 0.5, 0.0, rng.gamma(2, 100, n).round()),
                         "c": rng.choice(["a", "b", "r"], n, p=[0.5, 0.45, 0.05]), "y": rng.choice(["n", "y"], n)})
    fake = real.assign(debt=np.minimum(real["debt"] + 1.0, real["debt"].quantile(0.5)), c="a")
    kw = dict(target="y", types={"debt": "numeric", "c": "categorical"}, bounds={"debt": (0, 5000)},
              categories={"c": ["a", "b", "r"], "y": ["n", "y"]}, nullable={"debt": False, "c": False})
    r, f = dataset_from_frame(real, **kw), dataset_from_frame(fake, **kw)
    same = tab.shape_checks(r, r)
    assert same["q99_worst"] == 0 and same["mass_worst"] == 0 and same["levels_missing"] == []
    out = tab.shape_checks(r, f)
    assert out["q99_worst_column"] == "debt" and out["q99_worst"] > 0.5 and out["q99_off"] == "1/1"
    assert same["q99_off"] == "0/1"
    assert out["mass_worst_column"] == "debt" and out["mass_worst"] == pytest.approx((real["debt"] == 0).mean())
    assert out["levels_missing"] == ["c=b", "c=r"]


def test_shuffle_columns_keeps_every_one_way_and_breaks_the_links():
    """--floors' 'independent columns': the same 1-way marginals, no link left between two columns."""
    import numpy as np
    import pandas as pd

    from dpcore.data import dataset_from_frame
    from dpcore.data.schema import ColumnSpec, Schema
    from dpcore.evaluate import one_way_tvd, two_way_tvd

    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 400)
    schema = Schema([ColumnSpec("a", "integer", 0, 4), ColumnSpec("b", "integer", 0, 4),
                     ColumnSpec("c", "categorical", categories=["p", "q"]),
                     ColumnSpec("y", "categorical", categories=["n", "y"])], target="y")
    frame = pd.DataFrame({"a": a, "b": a, "c": np.where(a > 2, "p", "q"), "y": np.where(a > 1, "y", "n")})
    ds = dataset_from_frame(frame, schema=schema)
    apart = tab.shuffle_columns(ds, np.random.default_rng(1))
    assert max(one_way_tvd(ds, apart).values()) == 0.0
    assert sorted(apart.labels.tolist()) == sorted(ds.labels.tolist())
    assert two_way_tvd(ds, ds)[0] == 0.0 and two_way_tvd(ds, apart)[0] > 0.3  # a = b, c = f(a): gone
    before = np.corrcoef(ds.features[:, 0], ds.features[:, 1])[0, 1]
    after = np.corrcoef(apart.features[:, 0], apart.features[:, 1])[0, 1]
    assert before > 0.99 and abs(after) < 0.2
