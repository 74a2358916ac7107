"""Every figure the workbench, the reports and the notebooks draw, in one place.

Figures only arrange numbers computed elsewhere (`dpcore.evaluate`, `dpcore.privacy`, a run's
events); one module per family. Names are imported lazily (PEP 562) so a page that draws one figure
does not import torch or umap for another.
"""
from dpcore.lazy import lazy_exports

_EXPORTS = {
    "attacks": ["RunCurves", "attack_curves_figure", "exposed_records_figure", "lesson_figure", "mia_scores_figure", "mia_tradeoff_figure"],
    "data": ["class_mean_images_figure", "image_grid_figure", "one_way_figure", "shared_color_scale",
             "two_way_heatmap"],
    "labels": ["short_labels"],
    "latent": ["components_note", "latent_figure", "umap_seconds"],
    "privacy": ["budget_share_figure", "composition_figure", "pld_figure"],
    "sweeps": ["heatmap_figure", "pareto_figure"],
    "training": ["loss_curves_figure", "measurements_figure", "measures_marginals", "phase_label",
                 "progress_figure"],
    "utility": ["curve_checks", "family", "privacy_utility_figure", "utility_table_figure"],
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, globals())
