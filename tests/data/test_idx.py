"""IDX reader/writer on tiny files written here (gz and raw), the folder layout, and bad files."""
import gzip
import struct

import numpy as np
import pytest

from dpcore.data.idx import find_idx_files, idx_sizes, load_idx_folder, parse_idx, read_idx, write_idx
from dpcore.errors import DataError, DatasetUnavailable


def _idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    # Written by hand (not with write_idx) so the reader is checked against the format itself.
    return bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


@pytest.mark.parametrize("compressed", [False, True])
def test_read_idx_raw_and_gz(tmp_path, compressed):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, size=(3, 4, 5), dtype=np.uint8)
    raw = _idx_bytes(arr)
    path = tmp_path / ("x.idx.gz" if compressed else "x.idx")
    path.write_bytes(gzip.compress(raw) if compressed else raw)
    got = read_idx(path)
    assert got.shape == (3, 4, 5) and got.dtype == np.uint8
    np.testing.assert_array_equal(got, arr)


def test_big_endian_types_and_writer_round_trip(tmp_path):
    arr = np.arange(-6, 6, dtype=">i4").reshape(3, 4)
    assert np.array_equal(parse_idx(_idx_bytes(arr, 0x0C)), arr.astype(np.int32))
    for dtype in (np.uint8, np.int16, np.float32, np.float64):
        a = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
        for name in ("a.idx", "a.idx.gz"):
            np.testing.assert_array_equal(read_idx(write_idx(tmp_path / name, a)), a)


@pytest.mark.parametrize("raw, words", [
    (b"\x01\x00\x08\x01", "magic"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x02ab", "type code"),
    (b"\x00\x00\x08\x02\x00\x00", "truncated"),
    (b"\x00\x00\x08\x01\x00\x00\x00\x05abc", "expected 5"),
])
def test_bad_idx_bytes(raw, words):
    with pytest.raises(DataError, match=words):
        parse_idx(raw)


def _write_folder(folder, n_train=12, n_test=6, gz=True):
    rng = np.random.default_rng(1)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".gz" if gz else ""
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": (np.arange(n_train) % 10).astype(np.uint8),
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": (np.arange(n_test) % 10).astype(np.uint8)}
    for name, a in arrays.items():
        write_idx(folder / (name + suffix), a)
    return arrays


def test_folder_layout(tmp_path):
    arrays = _write_folder(tmp_path / "m", gz=False)
    assert set(find_idx_files(tmp_path / "m")) == {"train_images", "train_labels", "test_images", "test_labels"}
    assert idx_sizes(tmp_path / "m")["train_images"] == (12, 28, 28)
    loaded = load_idx_folder(tmp_path / "m")
    np.testing.assert_array_equal(loaded["test_images"], arrays["t10k-images-idx3-ubyte"])
    with pytest.raises(DatasetUnavailable, match="t10k-labels"):
        (tmp_path / "m" / "t10k-labels-idx1-ubyte").unlink()
        find_idx_files(tmp_path / "m")
