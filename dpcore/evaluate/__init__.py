"""Evaluation of synthetic data: utility, marginals, latent views, membership inference, f-DP bounds.

Numbers and the plotly figures that show them live side by side, so pages and notebooks draw the
same pictures. Names are imported lazily (PEP 562): `utility` and `mia` pull in torch, and the
workbench's Data page should paint without waiting for it.
"""
from importlib import import_module

_EXPORTS = {
    "bounds": ["best_advantage", "bound_curves", "dpsgd_gdp_mu", "envelope_tradeoff",
               "eps_from_errors", "gdp_delta", "ledger_gdp_mu", "mia_tradeoff_figure",
               "tradeoff_eps_delta", "tradeoff_gdp"],
    "latent": ["latent_figure"],
    "marginals": ["class_mean_images_figure", "image_grid_figure", "one_way_figure", "one_way_tvd",
                  "two_way_heatmap", "two_way_tvd"],
    "mia": ["MIAResult", "clopper_pearson", "empirical_eps", "monte_carlo_mia"],
    "report": ["evaluate_all", "score_marginals", "score_mia", "score_utility"],
    "utility": ["UtilityResult", "utility_scores", "utility_table_figure"],
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
