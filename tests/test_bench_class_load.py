"""bench/class_load.py, small: a class of three signs in, each student queues a small digits
training on a local Ray while their pages render; every job finishes, every run is in its owner's workspace, no student's
Queue page offers another's job."""
import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("bench_class_load", Path(__file__).parents[1] / "bench" / "class_load.py")
load = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = load  # its dataclass looks its module up
SPEC.loader.exec_module(load)


def test_three_students_on_local_ray(local_ray, tmp_path):
    r = load.run_load(students=3, cpus=1, base=tmp_path, timeout=300, kdf={"name": "scrypt", "n": 2**10, "r": 8, "p": 1})
    assert r["jobs"] == r["done"] == 3 and r["states"] == ["done"], r
    assert r["runs"] == r["runs_in_workspaces"] == 3 and r["runs_per_workspace"] == [1]
    assert r["misplaced_runs"] == r["stray_runs"] == 0
    assert r["other_students_shown"] == 0 and r["renders"] >= 2
    for n in ("student-01", "student-02", "student-03"):
        assert len([p for p in (tmp_path / "workspaces" / n).iterdir() if (p / "config.json").is_file()]) == 1


def test_bad_flags_exit_2():
    with pytest.raises(SystemExit) as exc:
        load.main(["--students", "0"])
    assert exc.value.code == 2
