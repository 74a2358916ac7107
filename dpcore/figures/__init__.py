"""Every figure the workbench, the reports and the notebooks draw, in one place.

Figures only arrange numbers computed elsewhere (`dpcore.evaluate`, `dpcore.privacy`, a run's
events); one module per family. Names are imported lazily (PEP 562) so a page that draws one figure
does not import torch or umap for another.
"""
from importlib import import_module

_EXPORTS = {
    "attacks": ["attack_curves_figure", "exposed_records_figure", "mia_scores_figure", "mia_tradeoff_figure"],
    "data": ["class_mean_images_figure", "image_grid_figure", "one_way_figure", "two_way_heatmap"],
    "latent": ["latent_figure"],
    "privacy": ["budget_share_figure", "composition_figure", "pld_figure"],
    "sweeps": ["heatmap_figure", "pareto_figure"],
    "training": ["loss_curves_figure", "phase_label"],
    "utility": ["privacy_utility_figure", "utility_table_figure"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'dpcore.figures' has no attribute {name!r}")
    value = getattr(import_module(f"dpcore.figures.{_MODULE_OF[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
