"""Encoder: layout, decoding of continuous synthetic values, missing modes, schema edits."""
import numpy as np
import pandas as pd
import pytest

from dpcore.data import ColumnSpec, Schema, TabularEncoder, cast_frame, infer_schema
from dpcore.data.encoder import MISSING
from dpcore.errors import DataError, InvalidParameter


def _schema(nullable=True):
    return Schema([
        ColumnSpec("n", "integer", 0, 10, nullable=nullable),
        ColumnSpec("x", "numeric", -1.0, 1.0),
        ColumnSpec("c", "categorical", categories=["a", "b", "c"], nullable=nullable),
        ColumnSpec("f", "boolean"),
        ColumnSpec("y", "categorical", categories=[0, 1]),
    ], target="y")


def _frame():
    return pd.DataFrame({"n": [1, None, 10, 3], "x": [-1.0, 0.5, 1.0, 0.0], "c": ["a", "c", None, "b"],
                         "f": [True, False, True, True], "y": [0, 1, 1, 0]})


def test_layout_indicator_vs_category():
    ind = TabularEncoder(_schema(), missing="indicator")
    assert ind.feature_names == ["n", "n__missing", "x", "c=a", "c=b", "c=c", "c__missing", "f"]
    cat = TabularEncoder(_schema(), missing="category")
    assert cat.feature_names == ["n", "n__missing", "x", "c=a", "c=b", "c=c", f"c={MISSING}", "f"]
    assert cat.onehot_blocks() == [(3, 7)]


@pytest.mark.parametrize("missing", ["indicator", "category"])
def test_round_trip(missing):
    enc = TabularEncoder(_schema(), missing=missing)
    feats, labels = enc.encode(_frame())
    assert feats.dtype == np.float32 and labels.tolist() == [0, 1, 1, 0]
    back = enc.decode(feats, labels)
    pd.testing.assert_frame_equal(back, cast_frame(_frame(), enc.schema))
    assert back["y"].dtype == np.int64 or back["y"].astype(object).tolist() == [0, 1, 1, 0]
    assert enc.decode(feats).columns.tolist() == ["n", "x", "c", "f"]  # no labels → no target column


def test_decode_continuous_synthetic_values():
    enc = TabularEncoder(_schema(), missing="indicator")
    synth = np.array([[0.26, 0.2, 1.7, 0.1, 0.8, 0.3, 0.1, 0.7],     # n→3 (2.6 rounds), x clipped to 1
                      [-0.5, 0.1, -0.2, 0.9, 0.1, 0.95, 0.2, 0.2],   # n clipped to 0, c→c (argmax)
                      [1.4, 0.1, 0.5, 0.0, 0.0, 0.0, 0.6, 0.5]])     # n→10 (clipped), c missing
    back = enc.decode(synth, np.array([1, 0, 1]))
    assert back["n"].tolist() == [3, 0, 10]
    assert back["x"].tolist() == [1.0, -1.0, 0.0]
    assert back["c"].astype(object).tolist()[:2] == ["b", "c"] and pd.isna(back["c"][2])
    assert back["f"].tolist() == [True, False, False]
    with pytest.raises(InvalidParameter, match="shape"):
        enc.decode(synth[:, :3])
    with pytest.raises(InvalidParameter, match="class indices"):
        enc.decode(synth, np.array([0, 1, 2]))


def test_encode_errors():
    enc = TabularEncoder(_schema(nullable=False))
    with pytest.raises(DataError, match="column 'n' has 1 missing values"):
        enc.encode(_frame())
    with pytest.raises(DataError, match="lacks column"):
        enc.encode(_frame().drop(columns=["x"]))
    bad = _frame().assign(y=[0, 1, 2, 0])
    with pytest.raises(DataError, match="'y' has a value 2"):
        TabularEncoder(_schema()).encode(bad)
    with pytest.raises(InvalidParameter, match="missing"):
        TabularEncoder(_schema(), missing="zero")
    with pytest.raises(InvalidParameter, match="needs bounds"):
        TabularEncoder(Schema([ColumnSpec("x", "numeric")]))


def test_infer_schema_marks_data_derived_and_serialises():
    frame = _frame()
    s = infer_schema(frame, target="y", bounds={"x": (-2, 2)}, categories={"y": [0, 1]})
    by = {c.name: c for c in s.columns}
    assert by["x"].origin == "declared" and (by["x"].lower, by["x"].upper) == (-2.0, 2.0)
    assert by["n"].origin == "data" and by["c"].origin == "data" and not s.private
    assert s.label_names == [0, 1] and by["y"].origin == "declared" and by["n"].nullable
    assert infer_schema(frame, target="y").column("y").origin == "data"  # class list read off the rows and not by["x"].nullable
    assert by["f"].origin == "data"  # a kind guessed from the rows is not public, even for booleans
    assert by["x"].nullable and not by["y"].nullable  # declared: nullable by default, not by the rows
    edited = s.with_column("n", lower=0, upper=100, origin="declared").with_column(
        "c", categories=["a", "b", "c", "d"], origin="declared").with_column("f", origin="declared")
    assert edited.private and edited.column("c").categories[-1] == "d"
    assert Schema.from_dict(edited.to_dict()).to_dict() == edited.to_dict()
    with pytest.raises(InvalidParameter, match="kind"):
        ColumnSpec("z", "text")
    with pytest.raises(DataError, match="duplicate"):
        Schema([ColumnSpec("a", "boolean"), ColumnSpec("a", "boolean")])


def test_onehot_block_after_column_127():
    """pandas gives int8 category codes; adding a block start past 127 must not overflow."""
    from dpcore.data import dataset_from_frame

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{i}": rng.random(300) for i in range(130)})
    frame["c"] = np.array(["a", "b"])[rng.integers(0, 2, 300)]
    ds = dataset_from_frame(frame, bounds={f"x{i}": (0, 1) for i in range(130)}, categories={"c": ["a", "b"]})
    block = ds.features[:, ds.encoder.feature_names.index("c=a"):][:, :2]
    assert (block.sum(axis=1) == 1).all() and ds.to_frame()["c"].astype(object).tolist() == frame["c"].tolist()


def test_synthetic_numbers_keep_the_inputs_precision():
    """Incomes written in cents decode in cents (not 12 decimals); a declared precision is checked."""
    from dpcore.data.csv import read_csv

    text = "income,score,y\n1200.50,0.125,a\n980.25,0.5,b\n1500.00,0.75,a\n1111.11,0.875,b\n"
    ds = read_csv(text.encode(), target="y")
    enc = TabularEncoder(ds.schema)
    assert enc.schema.column("income").decimals == 2 and enc.schema.column("score").decimals == 3
    x = np.random.default_rng(0).random((50, enc.n_features))
    frame = enc.decode(x)
    assert np.allclose(frame["income"], frame["income"].round(2)) and not np.allclose(x[:, 0], np.round(x[:, 0], 2))
    again = Schema.from_dict(enc.schema.to_dict())  # saved with the run, read back by old and new code
    assert again.column("income").decimals == 2
    assert Schema.from_dict({"columns": [{"name": "v", "kind": "numeric", "lower": 0, "upper": 1}]}).columns[0].decimals is None
    with pytest.raises(InvalidParameter, match="decimals of column 'v'"):
        ColumnSpec("v", "numeric", 0.0, 1.0, decimals=-1)


def _soft_table(n=1000, seed=0):
    """A flat model's soft rows for `_schema()`: the flags of n and c at 0.1 ± 0.05 (all under 0.5,
    mean 0.1), c's third level second-best in every row (block means 0.5 / 0.2 / 0.3)."""
    enc = TabularEncoder(_schema(), missing="indicator")
    rng = np.random.default_rng(seed)
    x = rng.random((n, enc.n_features))
    x[:, 1] = x[:, 6] = 0.1 + rng.uniform(-0.05, 0.05, n)
    x[:, 3:6] = [0.5, 0.2, 0.3] + rng.uniform(-0.05, 0.05, (n, 3))
    return enc, x


def test_soft_flags_keep_their_mean_share_of_missing_values():
    """Old decoding (0.5 threshold): no missing value at all; now 10 % of the rows, as the outputs say."""
    enc, x = _soft_table()
    back = enc.decode(x)
    assert back["n"].isna().mean() == pytest.approx(x[:, 1].mean(), abs=0.002)
    assert back["c"].isna().mean() == pytest.approx(x[:, 6].mean(), abs=0.002)
    assert ((x[:, 1] > 0.5).mean(), (x[:, 6] > 0.5).mean()) == (0.0, 0.0)  # what the threshold gave


def test_soft_flags_that_say_complete_keep_the_column_complete():
    enc, x = _soft_table()
    x[:, 1] = 0.0004  # a mean share that rounds to no row of 1 000
    assert not enc.decode(x)["n"].isna().any()


def test_a_level_second_everywhere_keeps_its_share():
    """Old decoding (argmax): c = 'c' never appears and 'a' takes every row; now each level keeps the
    block's mean share within a row of rounding, among the rows present."""
    from dpcore.data.decode_shares import level_codes

    enc, x = _soft_table()
    codes = level_codes(x[:, 3:6])
    means = x[:, 3:6].mean(0) / x[:, 3:6].mean(0).sum()
    assert np.abs(np.bincount(codes, minlength=3) / len(x) - means).max() <= 1.0 / len(x)
    assert (np.argmax(x[:, 3:6], axis=1) == 2).sum() == 0  # what the argmax gave
    assert x[codes == 2, 5].mean() > x[codes == 1, 5].mean()  # the rows that prefer it most get it
    present = enc.decode(x)["c"].dropna()
    assert (present == "c").mean() == pytest.approx(means[2], abs=0.03)


def test_exact_rows_decode_as_an_argmax_and_a_threshold():
    """Real rows and per-column heads' draws (exact 0/1) decode as before, with rare levels and gaps."""
    from dpcore.data.decode_shares import flag_rows, level_codes

    rng = np.random.default_rng(1)
    codes = rng.choice(4, 997, p=[0.7, 0.25, 0.045, 0.005])
    onehot = np.eye(4)[codes]
    onehot[rng.random(997) < 0.1] = 0.0  # rows of a missing category: an all-zero block
    kept = onehot.any(1)
    assert (level_codes(onehot)[kept] == codes[kept]).all()
    flags = rng.random(997) < 0.03
    assert (flag_rows(flags.astype(float)) == flags).all()


def test_numbers_without_a_declared_precision_round_to_the_encodings():
    """Money declared over 0–100 000 without decimals decodes in cents (before: 12 decimals), a value
    stored exactly comes back exactly; the precision is a function of the public bounds."""
    from dpcore.data.encoder import value_decimals

    spec = ColumnSpec("debt", "numeric", 0.0, 100_000.0, nullable=True)
    enc = TabularEncoder(Schema([spec]))
    assert value_decimals(spec) == 2 and value_decimals(ColumnSpec("r", "numeric", 0.0, 1.5)) == 6
    assert value_decimals(ColumnSpec("r", "numeric", 0.0, 1.5, decimals=3)) == 3
    x = np.random.default_rng(0).random((50, enc.n_features)).astype(np.float32)
    x[:, 1] = 0.0
    debt = enc.decode(x)["debt"].to_numpy(dtype=float)
    old = x[:, 0].astype(float) * 1e5  # the old decoding: every digit of the float32
    assert np.abs(debt - np.round(debt, 2)).max() < 1e-9 < np.abs(old - np.round(old, 2)).max()
    real = pd.DataFrame({"debt": [0.0, 12345.67, 99990.01, 5.01]})  # (99 999.99 sits on the atom at the cap)
    assert enc.decode(enc.encode(real)[0])["debt"].tolist() == real["debt"].tolist()


def test_atoms_are_public_functions_of_the_bounds_and_decode_exactly():
    from dpcore.data.encoder import atom_values, atoms_of

    spec = ColumnSpec("x", "numeric", -3.0, 7.0)
    assert atoms_of(spec) == (0.0, 0.3, 1.0) and atom_values(spec) == (-3.0, 0.0, 7.0)
    assert atoms_of(ColumnSpec("x", "numeric", 0.0, 7.0)) == (0.0, 1.0)
    enc = TabularEncoder(Schema([spec]))
    feats, _ = enc.encode(pd.DataFrame({"x": [-3.0, 0.0, 7.0, 0.3, 12.0]}))
    assert feats.dtype == np.float32 and float(feats[1, 0]) != 0.3  # 0.3 is not a float32: decoded by tolerance
    back = enc.decode(feats)["x"].tolist()
    assert back[:3] == [-3.0, 0.0, 7.0] and back[4] == 7.0  # exactly, not 1e-7 off (12 clipped to the cap)
    assert back[3] == pytest.approx(0.3, abs=1e-5) and back[3] != 0.0  # a value near an atom is not moved
