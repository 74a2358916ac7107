"""The Train page's clocks: time left from the running phase's own pace, and a finished run's own
duration (issue "The workbench in front of a class and a board": a 2.7 min run first said 2 h 25 min,
and "took" kept counting after the end)."""
from types import SimpleNamespace

import pytest

from dpcore.ui.live import LiveRun, eta_seconds


def test_eta_follows_the_running_phase_not_the_whole_run():
    # one slow PCA step and one slow EM step (10 s), then DP-SGD at 100 steps a second
    progress = [(0.0, 1, "pca"), (10.0, 2, "em"), (11.0, 102, "sgd"), (12.0, 202, "sgd")]
    assert eta_seconds(progress, 1202) == pytest.approx(10.0)
    # a whole-run average would have said (12 s / 202 steps) × 1000 ≈ 59 s
    assert eta_seconds(progress[:3], 1202) is None  # the phase has been watched for 0 s
    assert eta_seconds([], 10) is None


def test_a_finished_run_reports_its_own_duration_not_the_wall_clock():
    run = SimpleNamespace(status=lambda: {"status": "done", "seconds": 164.0}, target_name="r")
    handle = SimpleNamespace(run=run, status="done", is_alive=lambda: False, events=lambda since: [])
    live = LiveRun(handle, {"model": "p3gm", "params": {}, "data": {}}, started=0.0)  # "started" long ago
    assert live.seconds_taken() == 164.0
