"""Runs: config + live metrics + model + privacy ledger on disk, and the jobs that train them."""
from dpcore.runs.jobs import Job, JobHandle, Training, start_training
from dpcore.runs.runner import prepare, train_run
from dpcore.runs.store import (DataConfig, Run, RunConfig, RunSummary, create_run, delete_run,
                               list_runs, rename_run)

__all__ = [
    "DataConfig", "Job", "JobHandle", "Run", "RunConfig", "RunSummary", "Training", "create_run", "delete_run",
    "list_runs", "prepare", "rename_run", "start_training", "train_run",
]
