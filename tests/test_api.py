"""dpcore.fit: a DataFrame in, a fitted model with its ε and ledger, synthetic rows out — and the
same model a run of the same settings trains (the CLI and the app go through `jobs.runner.prepare`)."""
import numpy as np
import pandas as pd
import pytest

import dpcore
from dpcore.errors import InvalidParameter
from dpcore.models import get_model
from dpcore.privacy.accountant import epsilon as accountant_epsilon

TINY = {"epochs": 1, "hidden": 16, "latent_dim": 2, "batch_size": 64}


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 400
    x = rng.uniform(0, 10, n)
    return pd.DataFrame({"x": x, "w": rng.integers(0, 5, n), "c": rng.choice(["a", "b", "c"], n),
                         "y": np.where(x > 5, "hi", "lo")})


def test_a_frame_in_a_fitted_model_and_rows_in_its_columns_out(frame):
    model = dpcore.fit(frame, model="dp-vae", epsilon=1.0, target="y", bounds={"x": [0, 10], "w": [0, 4]},
                       categories={"c": ["a", "b", "c"], "y": ["hi", "lo"]},
                       nullable={"x": False, "w": False, "c": False}, **TINY)
    assert type(model) is get_model("dp-vae") and model.fit_result is not None
    assert len(model.ledger) and model.epsilon == accountant_epsilon(model.ledger, model.delta) <= 1.0 + 1e-9
    assert model.delta == 1e-5 and model.template.preprocessing_private  # every bound declared: covered
    rows = model.sample(50, seed=0).to_frame()
    assert list(rows.columns) == list(frame.columns) and len(rows) == 50
    assert set(rows["c"]) <= {"a", "b", "c"} and set(rows["y"]) <= {"hi", "lo"}
    assert rows["x"].between(0, 10).all()


def test_a_non_private_model_has_infinite_epsilon(frame):
    model = dpcore.fit(frame, model="vae", target="y", **TINY)
    assert model.epsilon == float("inf") and model.delta == 0.0 and len(model.ledger) == 0
    assert not model.template.preprocessing_private  # bounds read from the rows: said, not hidden


def test_same_model_as_a_run_of_the_same_settings():
    """The config `fit` trains is the one `prepare` (the CLI's and the app's path) gives a run."""
    from dpcore.api import unfitted_model
    from dpcore.jobs.runner import prepare
    from dpcore.runs import RunConfig

    params = {"epsilon": 2.0, "epochs": 1, "hidden": 16}
    cfg, run_model, train, _ = prepare(RunConfig(model="p3gm", params=params,
                                                 data={"dataset": "digits", "test_size": 0.2}))
    mine = unfitted_model(get_model("p3gm"), params, train)
    assert mine.config == run_model.config
    assert [f for f in get_model("p3gm").size_auto_fields if getattr(mine.config, f) is None]  # left to ñ


@pytest.mark.parametrize("kwargs, words", [
    ({"model": "nope"}, "unknown model"),
    ({"model": "dp-vae", "epsilon": 0.0}, "epsilon"),
    ({"model": "dp-vae", "epsilon": 1.0, "no_such_field": 3}, "no_such_field"),
])
def test_bad_settings_fail_in_one_line_before_training(frame, kwargs, words):
    seen = []
    with pytest.raises(InvalidParameter) as exc:
        dpcore.fit(frame, target="y", callback=seen.append, **kwargs)
    assert words in str(exc.value) and "\n" not in str(exc.value) and not seen


def test_the_readme_block_runs(frame, tmp_path, monkeypatch, capsys):
    """The README's Python API block, as written, on a small CSV."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    frame.to_csv(tmp_path / "table.csv", index=False)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    model, rows = scope["model"], scope["rows"]
    assert type(model) is get_model("aim") and model.epsilon == pytest.approx(1.0, rel=1e-6)
    assert str(model.epsilon) in capsys.readouterr().out
    assert list(rows.columns) == list(frame.columns) and len(rows) == 1000
