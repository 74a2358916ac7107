"""The run store: config + live metrics + model + privacy ledger on disk (+ the run's saved scores).

The jobs that train runs (one or many trainings, in a thread, on Ray or through the class queue) are
`dpcore.jobs`, a layer above: nothing here imports it.
"""
from dpcore.runs.config import DataConfig, RunConfig
from dpcore.runs.folders import create_run, delete_run, rename_run
from dpcore.runs.store import Run, RunSummary, list_runs

__all__ = ["DataConfig", "Run", "RunConfig", "RunSummary", "create_run", "delete_run", "list_runs", "rename_run"]
