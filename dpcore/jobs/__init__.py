"""Jobs: the trainings that make runs (`runner`), one or many as a job in a thread or on Ray with one
handle to poll and stop (`job`, `jobs`), sweeps and private selection over them (`sweep`,
`selection`), and the class queue with its training service (`queue*`, `class_server`).

The run store they write is `dpcore.runs`, a layer below.
"""
from dpcore.jobs.jobs import Job, JobHandle, Training, start_training
from dpcore.jobs.runner import prepare, train_run

__all__ = ["Job", "JobHandle", "Training", "prepare", "start_training", "train_run"]
