"""Runs: config + live metrics + model + privacy ledger on disk, and the (background) runner."""
from dpcore.runs.runner import TrainingHandle, prepare, start_training, train_many, train_run
from dpcore.runs.store import (DataConfig, Run, RunConfig, RunSummary, create_run, delete_run,
                               list_runs, rename_run)

__all__ = [
    "DataConfig", "Run", "RunConfig", "RunSummary", "TrainingHandle", "create_run", "delete_run",
    "list_runs", "prepare", "rename_run", "start_training", "train_many", "train_run",
]
