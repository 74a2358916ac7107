"""The run pickers' labels: the browser sends the chosen label back, so a label must not change
while the run stays the same (a released score changes a run's ε; the Runs page then jumped to
another run at the next click)."""
from types import SimpleNamespace

from dpcore.ui.picker import run_label


def test_a_runs_label_does_not_change_with_its_epsilon():
    before = SimpleNamespace(name="aim-patients-eps1", model="aim", dataset="patients.csv", epsilon=1.0)
    after = SimpleNamespace(**{**before.__dict__, "epsilon": 1.0863})
    assert run_label(before) == run_label(after)
    assert run_label(before).startswith("aim-patients-eps1") and "aim on patients.csv" in run_label(before)
