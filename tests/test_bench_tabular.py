"""bench/tabular.py: flags fail with one line naming the flag (exit 2), and the table shows every cell."""
import importlib.util
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("bench_tabular", Path(__file__).parents[1] / "bench" / "tabular.py")
tab = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(tab)


@pytest.mark.parametrize("argv, flag", [(["--models", "p3gm,gan"], "--models"), (["--datasets", "adult"], "--datasets"),
                                        (["--epsilons", "1,x"], "--epsilons"), (["--epsilons", "0"], "--epsilons"),
                                        (["--seeds", ""], "--seeds")])
def test_bad_flags_exit_2_naming_the_flag(argv, flag, capsys):
    with pytest.raises(SystemExit) as exc:
        tab.main(argv)
    assert exc.value.code == 2 and flag in capsys.readouterr().err.strip().splitlines()[-1]


def test_table_rows():
    row = {"dataset": "cps1988", "model": "mst", "epsilon_target": 1.0, "seed": 0, "epsilon": 0.9999999,
           "tvd_1way_train": 0.0031, "tvd_2way_train": 0.0172, "tvd_1way_test": 0.0125, "tvd_2way_test": 0.0268,
           "auc_logistic_regression": float("nan"), "auc_gradient_boosting": 0.556, "classes": "1/2", "fit_s": 15.2}
    floor = dict(row, model="real train", epsilon_target=None, seed=None, epsilon=None, fit_s=None)
    lines = tab.table([floor, row]).splitlines()
    assert len(lines) == 4 and lines[0].count("|") == lines[2].count("|") == 14
    assert "| cps1988 | mst | 1 | 0 | 1.0000 | 0.0031 | 0.0172 | 0.0125 | 0.0268 | nan | 0.556 | 1/2 | 15 |" == lines[3]
    assert "| real train | – | – | – |" in lines[2]
