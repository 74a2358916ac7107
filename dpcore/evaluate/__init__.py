"""Evaluation of synthetic data: utility, marginals, latent views, membership inference, f-DP bounds.

Numbers only: the figures that show them are in `dpcore.figures`, and `scoring` is the one path every
caller scores through. Names are imported lazily (PEP 562): `utility` and the attacks pull in torch, and the
workbench's Data page should paint without waiting for it.
"""
from dpcore.lazy import lazy_exports

_EXPORTS = {
    "bounds": ["best_advantage", "bound_curves", "dpsgd_gdp_mu", "envelope_tradeoff",
               "eps_from_errors", "gdp_delta", "ledger_gdp_mu", "tradeoff_eps_delta", "tradeoff_gdp"],
    "latent": ["ellipse_points", "pca_projection"],
    "marginals": ["one_way_histogram", "one_way_tvd", "two_way_tvd"],
    "quality": ["quality_report", "quality_summary"],
    "attacks.result": ["AttackResult", "clopper_pearson", "empirical_eps"],
    "scoring": ["AttackScores", "evaluate_all", "score_attacks", "score_marginals", "score_utility"],
    "utility": ["UtilityResult", "utility_scores"],
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, globals())
