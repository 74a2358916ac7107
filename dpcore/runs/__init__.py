"""Runs: config + live metrics + model + privacy ledger on disk, and the (background) runner."""
from dpcore.runs.config import DataConfig, RunConfig
from dpcore.runs.folders import create_run, delete_run, rename_run
from dpcore.runs.runner import TrainingHandle, prepare, start_training, train_many, train_run
from dpcore.runs.store import Run, RunSummary, list_runs

__all__ = [
    "DataConfig", "Run", "RunConfig", "RunSummary", "TrainingHandle", "create_run", "delete_run",
    "list_runs", "prepare", "rename_run", "start_training", "train_many", "train_run",
]
