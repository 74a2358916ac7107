"""CSV upload: a hand-written mixed table round-trips; every bad input is a one-line named error."""
import numpy as np
import pandas as pd
import pytest

from dpcore.data import cast_frame, check_pca_dim, parse_csv, read_csv
from dpcore.errors import DataError, DPCoreError, InvalidParameter

MIXED = """age,income,city,member,score,grade,zip,label
34,52000.5,Paris,true,0.75,A,02134,yes
NA,,Berlin,false,1.5,,10115,no
51,61000.25,"Rome, IT",true,-2.0,B,00184,no
29,38000.0,Paris,false,0.0,A,75001,yes
47,45500.75,Berlin,true,3.25,C,10117,no
,70000.0,Paris,false,1.0,B,75002,yes
38,41000.5,Rome,true,2.5,A,00185,no
"""


def _write(tmp_path, text, name="t.csv", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize("missing", ["indicator", "category"])
def test_mixed_csv_round_trip(tmp_path, missing):
    path = _write(tmp_path, MIXED)
    ds = read_csv(path, target="label", types={"zip": "categorical"}, missing=missing)
    kinds = {c.name: c.kind for c in ds.schema.columns}
    assert kinds == {"age": "integer", "income": "numeric", "city": "categorical", "member": "boolean",
                     "score": "numeric", "grade": "categorical", "zip": "categorical", "label": "categorical"}
    assert ds.features.dtype == np.float32 and ds.features.min() >= 0 and ds.features.max() <= 1
    assert ds.label_names == ["no", "yes"] and ds.labels.tolist() == [1, 0, 0, 1, 0, 1, 0]
    assert "label" not in " ".join(ds.encoder.feature_names)  # the target is not a feature
    assert ds.preprocessing_private is False and "income" in ds.meta["data_derived"]

    back = ds.to_frame()
    expected = cast_frame(parse_csv(path), ds.schema)
    pd.testing.assert_frame_equal(back, expected, check_exact=False, rtol=1e-6, atol=1e-4)  # float32 features
    # ...and against the text itself: types, category names, missing values
    assert str(back["age"].dtype) == "Int64" and back["age"].isna().tolist() == [0, 1, 0, 0, 0, 1, 0]
    assert back["income"].dtype == np.float64 and np.isnan(back["income"][1])
    assert back["member"].dtype == bool and back["member"].tolist() == [True, False, True, False, True, False, True]
    assert back["city"].astype(object).tolist() == ["Paris", "Berlin", "Rome, IT", "Paris", "Berlin", "Paris", "Rome"]
    assert back["zip"].astype(object).tolist()[0] == "02134"  # the override kept the text
    assert pd.isna(back["grade"][1]) and back["label"].astype(object).tolist()[:2] == ["yes", "no"]


def test_declared_schema_is_private_and_clips(tmp_path):
    path = _write(tmp_path, MIXED)
    ds = read_csv(path, target="label", drop=["zip"], types={"member": "boolean", "age": "integer"},
                  bounds={"age": (18, 100), "income": (0, 50000), "score": (-5, 5)},
                  categories={"city": ["Paris", "Berlin", "Rome", "Rome, IT"], "grade": ["A", "B", "C"],
                              "label": ["no", "yes"]})
    assert ds.preprocessing_private is True and ds.meta["data_derived"] == []
    assert "clipped" not in ds.meta  # an exact count of out-of-bound values is not for publishing
    assert ds.to_frame()["income"].max() == 50000.0
    # a level outside the declared list is treated as missing: the published layout stays the same
    few = read_csv(path, target="label", categories={"city": ["Paris", "Berlin"]})
    assert "city__missing" in few.encoder.feature_names
    assert few.to_frame()["city"].isna().tolist() == [False, False, True, False, False, False, True]
    with pytest.raises(DataError, match="'city' is declared not nullable"):
        read_csv(path, target="label", categories={"city": ["Paris", "Berlin"]}, nullable={"city": False})


def test_declared_column_clips_rounds_and_ignores_the_rows(tmp_path):
    path = _write(tmp_path, "a,b,y\n1,2,0\n4,-inf,1\n7,8.6,0\n9,,1\n")
    ds = read_csv(path, target="y", types={"b": "integer"}, bounds={"b": (0, 10)})
    b = ds.schema.column("b")
    assert (b.kind, b.nullable, b.origin) == ("integer", True, "declared")
    assert ds.to_frame()["b"].tolist()[:3] == [2, 0, 9] and pd.isna(ds.to_frame()["b"][3])
    # the same declaration on rows without any missing value publishes the same schema
    same = read_csv(_write(tmp_path, "a,b,y\n1,2,0\n4,3,1\n7,8,0\n9,1,1\n", "u.csv"), target="y",
                    types={"b": "integer"}, bounds={"b": (0, 10)})
    assert same.schema.column("b") == b and same.encoder.feature_names == ds.encoder.feature_names


def test_reads_bytes_and_file_objects(tmp_path):
    import io
    a = read_csv(MIXED.encode(), target="label")
    b = read_csv(io.BytesIO(MIXED.encode()), target="label")
    assert np.array_equal(a.features, b.features) and a.n == 7


def _one_line(exc):
    assert "\n" not in str(exc.value)
    return str(exc.value)


BAD = [
    # (file text or bytes, read_csv kwargs, exception, words in the message)
    (b"", {}, DataError, "empty"),
    (b"\n  \n", {}, DataError, "empty"),
    (b"a,b,c\n", {}, DataError, "header but no data rows"),
    (b"a,b,c\n1,2,3\n4,5\n6,7,8\n", {}, DataError, "row 2 has 2 fields"),
    (b"a,b\n1,2\n3,4,5\n6,7\n", {}, DataError, "row 2 has 3 fields"),
    ("a,b\n1,caf\u00e9\n2,x\n3,y\n".encode("latin-1"), {}, DataError, "not UTF-8"),
    (b"a;b;c\n1;2;3\n4;5;6\n", {}, DataError, "delimited by ';'"),
    (b"a,b,c\n1,2,3\n4,5,6\n", {"delimiter": ";"}, DataError, "delimited by ','"),
    (b"a,b,a\n1,2,3\n4,5,6\n7,8,9\n", {}, DataError, "duplicate column names: a"),
    (b"a,b,y\n1,2,0\n4,5,1\n7,8,0\n", {"target": "label"}, InvalidParameter, "target column 'label' not found"),
    (b"a,b,y\n1,2,0\n4,5,0\n7,8,0\n", {"target": "y"}, DataError, "target column 'y' has only one class"),
    (b"a,b,y\n1,2,0\n1,5,1\n1,8,0\n", {"target": "y"}, DataError, "column 'a' is constant"),
    (b"a,b,y\n1,,0\n4,NA,1\n7,,0\n", {"target": "y"}, DataError, "column 'b' is empty"),
    (b"a,b,y\n1,2,0\n4,inf,1\n7,8,0\n", {"target": "y"}, DataError, "column 'b' contains infinite"),
    (b"a,b,c,d,y\n1,2,3,4,0\n5,6,7,8,1\n", {"target": "y"}, DataError, "more columns (4) than rows (2)"),
    (b"a,b\n1,2\n3,x\n", {"types": {"b": "numeric"}}, DataError, "column 'b' declared numeric"),
    (b"a,b\n1,2\n3,4\n", {"types": {"b": "text"}}, InvalidParameter, "types['b']"),
    (b"a,b\n1,2\n3,4\n", {"missing": "drop"}, InvalidParameter, "missing"),
    (b"a,b,y\n1,,0\n4,5,1\n7,8,0\n", {"target": "y", "bounds": {"b": (5, 1)}}, InvalidParameter, "bounds of column 'b'"),
]


@pytest.mark.parametrize("raw, kwargs, exc_type, words", BAD, ids=[b[3] for b in BAD])
def test_bad_input(tmp_path, raw, kwargs, exc_type, words):
    path = _write(tmp_path, raw)
    with pytest.raises(exc_type) as exc:
        read_csv(path, **kwargs)
    assert words in _one_line(exc)


def test_thousands_of_levels(tmp_path):
    rows = "\n".join(f"id{i},{i % 7},{i % 2}" for i in range(3000))
    path = _write(tmp_path, "code,x,y\n" + rows + "\n")
    with pytest.raises(DataError) as exc:
        read_csv(path, target="y")
    assert "column 'code' has 3000 distinct values" in _one_line(exc)
    assert read_csv(path, target="y", drop=["code"]).n == 3000  # dropping it is the way out


def test_file_over_size_limit(tmp_path):
    path = _write(tmp_path, MIXED)
    for source in (path, path.read_bytes()):
        with pytest.raises(DataError) as exc:
            read_csv(source, target="label", max_bytes=100)
        assert "max_bytes" in _one_line(exc)
    with pytest.raises(InvalidParameter, match="max_bytes"):
        read_csv(path, max_bytes=0)


def test_missing_file_and_bad_source(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_csv(tmp_path / "nope.csv")
    with pytest.raises(InvalidParameter, match="source"):
        read_csv(12)
    with pytest.raises(InvalidParameter, match="delimiter"):
        read_csv(MIXED.encode(), delimiter=";;")


def test_pca_dim_larger_than_features(tmp_path):
    ds = read_csv(_write(tmp_path, MIXED), target="label")
    with pytest.raises(InvalidParameter) as exc:
        check_pca_dim(ds, ds.n_features + 1)
    assert "pca_dim" in _one_line(exc)


def test_errors_are_dpcore_errors():
    assert issubclass(DataError, DPCoreError) and issubclass(InvalidParameter, DPCoreError)


def test_row_and_column_caps_say_how_to_raise_them(tmp_path, monkeypatch):
    wide = _write(tmp_path, ",".join(f"c{i}" for i in range(30)) + "\n" + ",".join("1" * 30) + "\n", "w.csv")
    with pytest.raises(DataError) as exc:
        read_csv(wide, max_columns=20)
    assert "30 columns, over the cap of 20 (max_columns, or the environment variable DPCORE_MAX_COLUMNS)" \
        in _one_line(exc)
    long = _write(tmp_path, "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(50)), "l.csv")
    with pytest.raises(DataError, match="more than 40 rows, over the cap .*DPCORE_MAX_ROWS"):
        read_csv(long, target="y", max_rows=40)
    monkeypatch.setenv("DPCORE_MAX_ROWS", "40")
    with pytest.raises(DataError, match="more than 40 rows"):
        read_csv(long, target="y")
    assert read_csv(long, target="y", max_rows=50).n == 50  # the argument wins over the environment
    monkeypatch.setenv("DPCORE_MAX_ROWS", "lots")
    with pytest.raises(InvalidParameter, match="DPCORE_MAX_ROWS must be a positive whole number"):
        read_csv(long, target="y")
    monkeypatch.delenv("DPCORE_MAX_ROWS")
    with pytest.raises(InvalidParameter, match="max_columns must be"):
        read_csv(long, target="y", max_columns=0)


def test_wide_text_table_inference_matches_the_column_by_column_path():
    """The vectorised profile gives the kinds and bounds the per-column guess gives."""
    from dpcore.data.infer import infer_kind, infer_schema

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "i": rng.integers(-5, 5, 50).astype(str), "f": np.char.mod("%.3f", rng.normal(size=50)),
        "b": np.array(["True", "false"])[rng.integers(0, 2, 50)], "c": np.array(["x", "y", " x "])[rng.integers(0, 3, 50)],
        "m": np.where(rng.random(50) < 0.3, "NA", rng.integers(0, 9, 50).astype(str)), "e": np.array(["", "n/a"] * 25)})
    s = infer_schema(frame)
    assert [c.kind for c in s.columns] == [infer_kind(frame[c]) for c in frame.columns]
    assert [c.kind for c in s.columns] == ["integer", "numeric", "boolean", "categorical", "integer", "categorical"]
    assert s.column("c").categories == ["x", "y"] and s.column("m").nullable and not s.column("i").nullable
    assert s.column("f").lower == float(frame["f"].astype(float).min())
