"""Data layer: built-in datasets, CSV / IDX loaders, public schema + reversible encoder, splits."""
from dpcore.data.csv import dataset_from_frame, parse_csv, read_csv
from dpcore.data.dataset import Dataset
from dpcore.data.encoder import TabularEncoder
from dpcore.data.idx import read_idx, write_idx
from dpcore.data.infer import infer_schema
from dpcore.data.registry import DatasetInfo, add_outlier, list_datasets, load_dataset, load_split, load_table
from dpcore.data.schema import ColumnSpec, Schema, cast_frame
from dpcore.data.split import check_pca_dim, train_test_split

__all__ = [
    "ColumnSpec", "Dataset", "DatasetInfo", "Schema", "TabularEncoder", "add_outlier", "cast_frame",
    "check_pca_dim", "dataset_from_frame", "infer_schema", "list_datasets", "load_dataset",
    "load_split", "load_table", "parse_csv", "read_csv", "read_idx", "train_test_split", "write_idx",
]
