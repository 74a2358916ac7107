"""Evaluation of synthetic data: utility, marginals, latent views, membership inference, f-DP bounds.

Numbers only: the figures that show them are in `dpcore.figures`, and `scoring` is the one path every
caller scores through. Names are imported lazily (PEP 562): `utility` and `mia` pull in torch, and the
workbench's Data page should paint without waiting for it.
"""
from importlib import import_module

_EXPORTS = {
    "bounds": ["best_advantage", "bound_curves", "dpsgd_gdp_mu", "envelope_tradeoff",
               "eps_from_errors", "gdp_delta", "ledger_gdp_mu", "tradeoff_eps_delta", "tradeoff_gdp"],
    "latent": ["ellipse_points", "pca_projection"],
    "marginals": ["one_way_histogram", "one_way_tvd", "two_way_tvd"],
    "mia": ["MIAResult", "clopper_pearson", "empirical_eps", "monte_carlo_mia"],
    "scoring": ["AttackScores", "evaluate_all", "score_attacks", "score_marginals", "score_utility"],
    "utility": ["UtilityResult", "utility_scores"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'dpcore.evaluate' has no attribute {name!r}")
    value = getattr(import_module(f"dpcore.evaluate.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
