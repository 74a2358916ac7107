"""Evaluation of synthetic data: utility, marginals, latent views, membership inference, f-DP bounds.

Numbers and the plotly figures that show them live side by side, so pages and notebooks draw the
same pictures. Nothing here imports the accountant at module import time.
"""
from dpcore.evaluate.bounds import (
    best_advantage,
    bound_curves,
    dpsgd_gdp_mu,
    envelope_tradeoff,
    eps_from_errors,
    gdp_delta,
    ledger_gdp_mu,
    mia_tradeoff_figure,
    tradeoff_eps_delta,
    tradeoff_gdp,
)
from dpcore.evaluate.latent import latent_figure
from dpcore.evaluate.marginals import (
    class_mean_images_figure,
    image_grid_figure,
    one_way_figure,
    one_way_tvd,
    two_way_heatmap,
    two_way_tvd,
)
from dpcore.evaluate.mia import MIAResult, clopper_pearson, empirical_eps, monte_carlo_mia
from dpcore.evaluate.report import evaluate_all
from dpcore.evaluate.utility import UtilityResult, utility_scores, utility_table_figure

__all__ = [
    "MIAResult", "UtilityResult", "best_advantage", "bound_curves", "class_mean_images_figure",
    "clopper_pearson", "dpsgd_gdp_mu", "empirical_eps", "envelope_tradeoff", "eps_from_errors", "evaluate_all",
    "gdp_delta", "image_grid_figure", "latent_figure", "ledger_gdp_mu", "mia_tradeoff_figure",
    "monte_carlo_mia", "one_way_figure", "one_way_tvd", "tradeoff_eps_delta", "tradeoff_gdp",
    "two_way_heatmap", "two_way_tvd", "utility_scores", "utility_table_figure",
]
