"""The Dataset every model, evaluation and page exchanges.

Why two views of the same rows: models learn on `features` (a float32 matrix in [0, 1], one-hot
categoricals, images flattened), while users want rows back in *their* columns, types and category
names. `schema` + `encoder` hold what is needed to go from one to the other; they are public
information (declared by the user or documented for the dataset), never statistics of private data
unless `preprocessing_private` says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The only meta keys a run may publish (model.json's template, reports): each is a config, a public
# fact or a ledgered release. Row counts, realised split shares, clipping counts and source paths
# stay in memory with the data owner.
PUBLIC_META = ("missing", "data_derived", "privacy_records", "split", "split_seed", "role", "pixel_domain",
               "outlier", "outlier_label", "dim", "generator_seed", "synthetic", "delimiter")


@dataclass
class Dataset:
    """Encoded rows plus what is needed to decode them.

    name: registry name or file name.
    features: float32 (n, d) in model space (numeric scaled to [0, 1], categoricals one-hot,
        image pixels in [0, 1] flattened row-major).
    labels: int64 (n,) class indices into `label_names`, or None for unlabelled data.
    label_names: the target's class names in their original type (e.g. ["no", "yes"] or 0..9).
    schema: the public schema (a `dpcore.data.schema.Schema`, or None for images).
    encoder: the reversible encoder (`dpcore.data.encoder.TabularEncoder`), None for images.
    image_shape: (H, W) or (C, H, W) for image sets, else None.
    outlier_index: row index of an injected outlier (the L-VAE experiment), else None.
    preprocessing_private: False when scaling bounds/categories came from the data without noise
        ("preprocessing not covered by ε" must then be shown wherever the run is shown).
    meta: free-form provenance (source path, split seed, ...).
    row_ids: (n, 2) uint64 identities of a file's rows (content digest, occurrence index; see
        dpcore.data.split.row_digests), what a keyed split decides each row by; None for built-ins.
        Private (they identify rows): never saved or published.
    """

    name: str
    features: np.ndarray
    labels: np.ndarray | None = None
    label_names: list[Any] | None = None
    schema: Any = None
    encoder: Any = None
    image_shape: tuple[int, ...] | None = None
    outlier_index: int | None = None
    preprocessing_private: bool = True
    meta: dict = field(default_factory=dict)
    row_ids: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.features = np.ascontiguousarray(self.features, dtype=np.float32)
        if self.features.ndim != 2:
            raise ValueError(f"features must be 2-D, got shape {self.features.shape}")
        if self.labels is not None:
            self.labels = np.asarray(self.labels, dtype=np.int64)
            if self.labels.shape != (self.features.shape[0],):
                raise ValueError("labels must have one entry per row")

    def public_meta(self) -> dict:
        """The part of `meta` that may be published (see PUBLIC_META)."""
        return {k: v for k, v in self.meta.items() if k in PUBLIC_META}

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def is_image(self) -> bool:
        return self.image_shape is not None

    @property
    def n_classes(self) -> int:
        if self.labels is None:
            return 0
        if self.label_names is not None:
            return len(self.label_names)
        return int(self.labels.max()) + 1 if self.n else 0

    def subset(self, index: np.ndarray) -> Dataset:
        """Rows `index` as a new Dataset sharing schema and encoder (outlier index remapped)."""
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        outlier = None
        if self.outlier_index is not None:
            hit = np.flatnonzero(index == self.outlier_index)
            outlier = int(hit[0]) if hit.size else None
        return Dataset(
            name=self.name,
            features=self.features[index],
            labels=None if self.labels is None else self.labels[index],
            label_names=self.label_names,
            schema=self.schema,
            encoder=self.encoder,
            image_shape=self.image_shape,
            outlier_index=outlier,
            preprocessing_private=self.preprocessing_private,
            meta=dict(self.meta),
            row_ids=None if self.row_ids is None else self.row_ids[index],
        )

    def with_features(self, features: np.ndarray, labels: np.ndarray | None) -> Dataset:
        """Synthetic rows in the same schema (what `Synthesizer.sample` returns)."""
        return Dataset(
            name=self.name,
            features=features,
            labels=labels,
            label_names=self.label_names,
            schema=self.schema,
            encoder=self.encoder,
            image_shape=self.image_shape,
            preprocessing_private=self.preprocessing_private,
            meta={**self.meta, "synthetic": True},
        )

    def to_frame(self, as_written: bool = False):
        """Rows in the original columns, types and category names (pandas DataFrame).

        Dates are day numbers (what the evaluation compares) unless `as_written`: then they are text
        in the file's own format, as exports and previews show them. Images come back as one column
        per pixel plus the label column.
        """
        import pandas as pd

        if self.encoder is not None:
            frame = self.encoder.decode(self.features, self.labels)
            if as_written and self.schema is not None:
                from dpcore.data.dates import from_days

                for c in self.schema.columns:
                    if c.date_format and c.name in frame.columns:
                        frame[c.name] = from_days(frame[c.name].to_numpy(dtype=float, na_value=float("nan")),
                                                  c.date_format)
            return frame
        cols = {f"px{i}": self.features[:, i] for i in range(self.n_features)}
        frame = pd.DataFrame(cols)
        if self.labels is not None:
            names = self.label_names
            frame["label"] = [names[i] for i in self.labels] if names is not None else self.labels
        return frame
