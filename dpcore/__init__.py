"""dpcore: differentially private generative models, privacy accounting and evaluation.

Layers (imports point down only): cli → jobs → runs → evaluate → models → privacy → data.
"""
import os as _os

# Idle OpenMP threads must sleep, not spin: on a 2-core machine a spinning pool (torch, scikit-learn)
# starves a training thread running beside an evaluation (measured: 13 s vs 3.6 s for one test).
# Must be set before torch or scikit-learn load their OpenMP runtime, hence here.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"


def fit(data, model: str = "p3gm", **kwargs):
    """A fitted model from a DataFrame: `dpcore.fit(df, model="aim", epsilon=1.0, target="y")`.
    See `dpcore.api.fit` (imported on first call, so `import dpcore` stays cheap)."""
    from dpcore.api import fit as _fit

    return _fit(data, model, **kwargs)


def recommend(data, schema=None, time_budget=None):
    """The model to start with and why: `dpcore.recommend(df).model` ("aim" for a table, "p3gm"
    for images). See `dpcore.api.recommend`."""
    from dpcore.api import recommend as _recommend

    return _recommend(data, schema=schema, time_budget=time_budget)


__all__ = ["fit", "recommend", "__version__"]
