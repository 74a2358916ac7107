"""Runs: config + live metrics + model + privacy ledger on disk, and the jobs that train them."""
from dpcore.runs.config import DataConfig, RunConfig
from dpcore.runs.folders import create_run, delete_run, rename_run
from dpcore.runs.jobs import Job, JobHandle, Training, start_training
from dpcore.runs.runner import prepare, train_run
from dpcore.runs.store import Run, RunSummary, list_runs

__all__ = [
    "DataConfig", "Job", "JobHandle", "Run", "RunConfig", "RunSummary", "Training", "create_run", "delete_run",
    "list_runs", "prepare", "rename_run", "start_training", "train_run",
]
