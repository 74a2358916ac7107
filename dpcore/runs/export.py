"""Writing synthetic rows to files: CSV (original columns), NPZ (arrays), PNG (an image grid).

Why a hand-written PNG encoder: matplotlib is not a dependency, and a grayscale PNG is just
zlib-compressed scanlines in three chunks (PNG spec, ISO/IEC 15948 §11), a dozen lines of numpy.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import InvalidParameter
from dpcore.io import atomic_write_bytes

FORMATS = (".csv", ".npz", ".png")


def png_bytes(image: np.ndarray) -> bytes:
    """PNG of a uint8 grayscale (H, W) or RGB (H, W, 3) image."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    if img.ndim == 2:
        color, channels = 0, 1
    elif img.ndim == 3 and img.shape[2] == 3:
        color, channels = 2, 3
    else:
        raise InvalidParameter(f"a PNG needs an (H, W) or (H, W, 3) image, got shape {img.shape}")
    h, w = img.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * channels)], axis=1)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))


def image_grid(data: Dataset, max_images: int = 100, ncols: int | None = None, pad: int = 1,
               scale: int = 2) -> np.ndarray:
    """Up to `max_images` images of `data` in a grid (sorted by label when there are labels)."""
    if data.image_shape is None:  # not `data.is_image`, which says the same in a way mypy cannot read
        raise InvalidParameter(f"dataset {data.name!r} is not an image set; write .csv or .npz instead")
    shape = tuple(data.image_shape)
    if len(shape) == 3 and shape[0] in (1, 3):
        shape = shape[1:] if shape[0] == 1 else shape
    h, w = shape[-2], shape[-1]
    k = min(data.n, max_images)
    if k == 0:
        raise InvalidParameter("no rows to draw")
    order = np.arange(k) if data.labels is None else np.argsort(data.labels[:k], kind="stable")
    imgs = data.features[order].reshape(k, h, w)
    ncols = ncols or int(np.ceil(np.sqrt(k)))
    nrows = int(np.ceil(k / ncols))
    grid = np.ones((nrows * (h + pad) + pad, ncols * (w + pad) + pad), np.float32)
    for i, im in enumerate(imgs):
        r, c = divmod(i, ncols)
        grid[pad + r * (h + pad): pad + r * (h + pad) + h, pad + c * (w + pad): pad + c * (w + pad) + w] = im
    grid = np.kron(grid, np.ones((scale, scale), np.float32))
    return (np.clip(grid, 0, 1) * 255).round().astype(np.uint8)


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(v):
    """A text cell a spreadsheet would run as a formula (starts with = + - @, tab or CR) gets a
    leading apostrophe; numbers, and text that is just a number ("-3.5"), stay as they are."""
    if not isinstance(v, str) or not v.startswith(FORMULA_START):
        return v
    try:
        float(v)
        return v
    except ValueError:
        return "'" + v


def csv_bytes(data: Dataset, raw: bool = False) -> bytes:
    """Rows as CSV in the original columns. By default formula-like text cells and column names are
    neutralised (CSV injection: synthetic text comes from private data and may hold `=HYPERLINK(…)`);
    raw=True keeps them verbatim."""
    frame = data.to_frame(as_written=True)
    if not raw:
        frame = frame.rename(columns=lambda c: neutralise_cell(str(c)))
        for col in frame.columns:
            if frame[col].dtype == object or str(frame[col].dtype) in ("string", "category"):
                frame[col] = frame[col].map(neutralise_cell)
    return frame.to_csv(index=False).encode()


def write_samples(data: Dataset, path, raw: bool = False) -> dict:
    """Write rows to `path` by its extension (.csv, .npz or .png); returns what was written.
    CSV cells that would run as spreadsheet formulas are neutralised unless `raw` (see csv_bytes)."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".csv":
        atomic_write_bytes(path, csv_bytes(data, raw=raw))
    elif ext == ".npz":
        import io

        buf = io.BytesIO()
        arrays = {"features": data.features}
        if data.labels is not None:
            arrays["labels"] = data.labels
        if data.label_names is not None:
            arrays["label_names"] = np.asarray([str(v) for v in data.label_names])
        if data.image_shape is not None:
            arrays["images"] = data.features.reshape((data.n, *data.image_shape))
        # numpy's stub: a **kwargs key might be its bool `allow_pickle` (ours are the names above)
        np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
        atomic_write_bytes(path, buf.getvalue())
    elif ext == ".png":
        atomic_write_bytes(path, png_bytes(image_grid(data)))
    else:
        raise InvalidParameter(f"unknown output format {ext or path.name!r}; use one of {', '.join(FORMATS)}")
    return {"path": str(path), "format": ext[1:], "rows": data.n}
