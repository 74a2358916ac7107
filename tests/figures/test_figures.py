"""dpcore.figures: the live loss figure and the budget-share chart read their numbers from events
and from the accountant (nothing typed in)."""
import math

import pytest

from dpcore import figures
from dpcore.figures import training
from dpcore.privacy import budget
from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger


def _events(n_warm=5, n_sgd=1000):
    ev = [{"phase": "pca", "step": 1, "total_steps": 2 + n_warm + n_sgd, "losses": {}, "epsilon": 0.1}]
    ev += [{"phase": "warmup", "step": 2 + i, "total_steps": 0, "losses": {"recon": 10.0 - i}, "epsilon": 0.1}
           for i in range(n_warm)]
    ev += [{"phase": "sgd", "step": 7 + i, "total_steps": 0, "losses": {"recon": 5.0, "kl": 1.0, "loss": 6.0},
            "epsilon": 0.2} for i in range(n_sgd)]
    return ev


def test_loss_curves_one_panel_per_phase_with_losses_and_bounded_points():
    fig = figures.loss_curves_figure(_events())
    assert [a.text for a in fig.layout.annotations] == ["decoder warm-up", "(DP-)SGD"]
    names = {t.name for t in fig.data}
    assert names == {"recon", "kl", "loss"}
    assert max(len(t.x) for t in fig.data) <= training.MAX_POINTS
    assert figures.loss_curves_figure([]).layout.title.text.startswith("Loss curves")


def test_a_marginal_models_progress_is_not_drawn_on_a_loss_axis():
    events = [{"phase": "measure", "step": i, "total_steps": 10, "losses": {"marginals": 11.0 + i}}
              for i in range(1, 9)]
    fig = figures.loss_curves_figure(events)
    assert fig.layout.title.text == "Training progress"
    assert fig.layout.yaxis.title.text == "marginals measured so far"
    neural = figures.loss_curves_figure(_events())
    assert neural.layout.yaxis.title.text == "loss (per example)" and neural.layout.title.text == "Training losses"


def test_budget_share_sums_to_one_and_matches_the_accountant():
    from dpcore.privacy.accountant import epsilon

    led = PrivacyLedger()
    led.add(MechanismRecord("dp-pca", "gaussian", 5.0))
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.2, sampling_rate=0.01, steps=500))
    rows, eps, order = budget.budget_share(led, 1e-5)
    assert math.isclose(sum(r["share"] for r in rows), 1.0)
    assert eps == pytest.approx(epsilon(led, 1e-5))
    assert order > 1
    fig = figures.budget_share_figure(led, 1e-5)
    assert list(fig.data[0].y) == ["dp-pca", "dp-sgd"]
    comp = budget.composition_table(led, 1e-5)
    tight = next(r["epsilon"] for r in comp if "tight" in r["analysis"])
    baseline = next(r["epsilon"] for r in comp if "Sequential" in r["analysis"])
    assert tight == pytest.approx(eps) and baseline > tight


def test_privacy_utility_figure_draws_reference_and_infinite_runs():
    rows = [{"model": "p3gm", "epsilon": e, "utility": u, "reference": 0.9} for e, u in ((0.5, 0.4), (2.0, 0.6))]
    rows.append({"model": "pgm", "epsilon": math.inf, "utility": 0.8, "reference": 0.9})
    fig = figures.privacy_utility_figure(rows)
    assert [t.name for t in fig.data] == ["p3gm", "pgm (ε = ∞)"]  # ε = ∞ runs are points, not lines
    assert len(fig.layout.shapes) == 1  # the real-data ceiling
    assert list(fig.layout.xaxis.ticktext) == ["0.5", "1", "2", "∞"]  # 0.5, not "5"


def test_a_marginal_models_live_view_is_its_measurements_sigma_and_epsilon():
    """AIM's rounds in its own terms: σ per measurement and ε spent, no loss axis; a neural run keeps
    its loss curves."""
    events = [{"phase": "measure", "step": i, "total_steps": 10, "epsilon": 0.1 * i,
               "losses": {"marginals": 8.0 + i, "sigma": 40.0 - i}} for i in range(1, 9)]
    fig = figures.progress_figure(events)
    assert [t.name for t in fig.data] == ["σ of the counts measured", "ε spent"]
    assert list(fig.data[0].y) == [40.0 - i for i in range(1, 9)] and fig.data[1].yaxis == "y2"
    assert fig.layout.title.text == "Measurements: 16 marginals so far"
    assert "loss" not in (fig.layout.yaxis.title.text + fig.layout.yaxis2.title.text)
    assert figures.progress_figure(_events()).layout.title.text == "Training losses"


def test_runs_at_the_same_epsilon_share_one_x_on_an_axis_wider_than_their_rounding():
    """AIM's accountant lands at ε = 0.9999999994, P3GM's at 1.0: one place on the axis, not its two ends."""
    rows = [{"model": "aim", "epsilon": 0.9999999994536506, "utility": 0.78},
            {"model": "p3gm", "epsilon": 1.0, "utility": 0.64}]
    lo, hi = figures.privacy_utility_figure(rows).layout.xaxis.range
    assert hi - lo >= math.log10(4) - 1e-9 and lo < 0 < hi  # decades, around ε = 1


def test_privacy_utility_figure_one_line_per_settings_with_seed_bands():
    rows = [{"model": "p3gm", "series": s, "epsilon": e, "utility": u}
            for s, e, u in (("p3gm", 1.0, 0.5), ("p3gm", 1.0, 0.6), ("p3gm", 3.0, 0.7),
                            ("p3gm share0.1", 1.0, 0.4), ("p3gm share0.1", 3.0, 0.45))]
    fig = figures.privacy_utility_figure(rows)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["p3gm", "p3gm share0.1"]
    assert list(lines[0].y) == [0.55, 0.7]  # the mean over seeds
    assert sum(t.fill == "toself" for t in fig.data) == 1  # a band where seeds differ
    assert list(fig.layout.xaxis.ticktext) == ["1", "2", "3"]


def test_accounting_labels_are_plain_text_and_the_figure_breaks_them():
    """Data labels carry no markup (a CSV or JSON export shows them as they are); only the figure
    breaks a long label over two lines."""
    led = PrivacyLedger()
    led.add(MechanismRecord("dp-sgd", "subsampled_gaussian", 1.2, sampling_rate=0.01, steps=500))
    rows = budget.composition_table(led, 1e-5)
    assert rows and not any("<" in r["analysis"] for r in rows)
    ticks = list(figures.composition_figure(led, 1e-5, rows=rows).data[0].x)
    assert all("<br>" in t for t in ticks) and ticks[0].replace("<br>", " ") == rows[0]["analysis"]


def test_pareto_front_puts_runs_calibrated_to_one_target_at_one_epsilon():
    """Two seeds calibrated to ε = 2 end at 1.99999999999994 and 2.00000000000001: one x, one band."""
    from dpcore.figures.sweeps import pareto_figure

    runs = [{"params": {"encoder_share": 0.2, "seed": s}, "epsilon": e, "status": "done", "utility": u}
            for s, e, u in ((0, 1.99999999999994, 0.5), (1, 2.00000000000001, 0.7))]
    fig = pareto_figure({"sweep": {"grid": {"epsilon": [2.0], "encoder_share": [0.2]}}, "runs": runs})
    line = next(t for t in fig.data if t.mode == "lines+markers")
    assert list(line.x) == [2.0] and list(line.y) == [0.6]


def test_attack_plots_stay_square_inside_the_unit_square():
    """Errors live in [0, 1]: with `scaleanchor` alone plotly widened the x-axis to −0.5…1.5 on a
    wide page; constrain="domain" shrinks the plot instead, keeping both ranges at [0, 1]."""
    from dpcore.figures.attacks import attack_curves_figure, mia_tradeoff_figure

    for fig in (attack_curves_figure([]), mia_tradeoff_figure([])):
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert tuple(axis.range) == (0, 1) and axis.constrain == "domain"
        assert fig.layout.yaxis.scaleanchor == "x"


def _result(name="distance", auc=0.7):
    from types import SimpleNamespace

    import numpy as np

    a = np.linspace(0, 1, 11)
    return SimpleNamespace(name=name, auc=auc, alpha=a, beta=(1 - a) ** 2)


def _ledger(sigma):
    return PrivacyLedger([MechanismRecord(name="g", mechanism="gaussian", noise_multiplier=sigma, sensitivity=1.0,
                                          steps=4)])


def test_attack_plot_shows_roc_beside_the_tradeoff_and_zooms_into_low_fpr():
    """ROC (TPR = 1 − β against FPR = α) on the left, the trade-off on the right; the log view spans
    1e-3…1 and stays square (3 decades against one unit of TPR)."""
    import numpy as np

    from dpcore.figures.attacks import attack_curves_figure

    fig = attack_curves_figure([("run", [_result()])])
    roc, trade = [t for t in fig.data if "AUC" in t.name]
    assert roc.xaxis == "x" and trade.xaxis == "x2"
    assert np.allclose(roc.y, 1 - np.asarray(trade.y)) and np.allclose(roc.x, trade.x)
    assert "ROC" in fig.layout.annotations[0].text and "Trade-off" in fig.layout.annotations[1].text
    log = attack_curves_figure([("run", [_result()])], log_fpr=True)
    assert log.layout.xaxis.type == "log" and tuple(log.layout.xaxis.range) == (-3, 0)
    assert tuple(log.layout.yaxis.range) == (0, 1) and log.layout.yaxis.scaleratio == 3
    assert all(min(t.x) >= 5e-4 for t in log.data if t.xaxis == "x")  # log(0) is never drawn
    assert log.layout.xaxis2.type != "log" and tuple(log.layout.xaxis2.range) == (0, 1)


def test_each_private_run_gets_its_own_bound_in_its_colour():
    from dpcore.evaluate.bounds import APPROXIMATION, bound_curves
    from dpcore.figures.attacks import RunCurves, attack_curves_figure

    runs = [RunCurves("p3gm, ε = 1", [_result()], bound_curves(_ledger(2.0), 1e-5), "p3gm-digits-20261130-full-id"),
            RunCurves("p3gm, ε = 4", [_result(auc=0.8)], bound_curves(_ledger(0.7), 1e-5), "p3gm-other-id"),
            RunCurves("vae, ε = ∞", [_result(auc=0.9)])]
    fig = attack_curves_figure(runs)
    left = [t for t in fig.data if t.xaxis == "x"]
    for label, hover in (("p3gm, ε = 1", "p3gm-digits-20261130-full-id"), ("p3gm, ε = 4", "p3gm-other-id")):
        mine = [t for t in left if t.name.startswith(label)]
        attack = next(t for t in mine if "AUC" in t.name)
        dp = next(t for t in mine if t.name.endswith(")-DP"))
        gdp = next(t for t in mine if "GDP" in t.name)
        assert dp.line.color == attack.line.color and dp.line.dash == "dash"
        assert gdp.line.color == attack.line.color and gdp.line.dash == "dot"
        assert "central-limit" in gdp.name and APPROXIMATION in gdp.name
        assert hover in attack.hovertemplate and hover not in attack.name
    colours = {next(t for t in left if t.name.startswith(r.label) and "AUC" in t.name).line.color for r in runs}
    assert len(colours) == 3
    assert not any(t.name.startswith("vae") and "DP" in t.name for t in left)  # ε = ∞: no bound
    assert sum(")-DP" in t.name for t in left) == 2


def test_short_labels_name_only_the_settings_that_differ():
    from dpcore.figures.labels import short_labels

    runs = [{"model": "p3gm", "epsilon": 1.0, "params": {"epochs": 5, "components": 3, "device": "cpu"}},
            {"model": "p3gm", "epsilon": 1.0, "params": {"epochs": 5, "components": 1, "device": "cuda"}},
            {"model": "vae", "epsilon": math.inf, "params": {"epochs": 5}}]
    assert short_labels(runs) == ["p3gm, ε = 1, components=3", "p3gm, ε = 1, components=1", "vae, ε = ∞"]
    assert short_labels([runs[0]]) == ["p3gm, ε = 1"]
    assert short_labels([runs[2], runs[2]]) == ["vae, ε = ∞", "vae, ε = ∞ #2"]


def test_latent_view_draws_real_points_over_synthetic_with_the_legend_outside_and_names_k():
    import numpy as np

    from dpcore.figures.latent import components_note, latent_figure, umap_seconds

    rng = np.random.default_rng(0)
    codes = rng.normal(size=(200, 4))
    prior = {"weights": [1.0], "means": np.zeros((1, 4)), "variances": np.ones((1, 4))}
    fig = latent_figure(codes, rng.integers(0, 2, 200), prior, synthetic_codes=codes[:50])
    names = [t.name for t in fig.data]
    syn = names.index("synthetic")
    assert all(syn < i for i, n in enumerate(names) if n.startswith("real"))  # later traces are drawn on top
    assert fig.layout.legend.y < 0 and fig.layout.legend.orientation == "h"  # outside the plot area
    assert fig.layout.meta["components"] == 1 and "K = 1" in fig.layout.title.text
    assert "K > 1" in components_note(1) and "K > 1" not in components_note(3) and "K = 3" in components_note(3)
    assert umap_seconds(10_000) == pytest.approx(65) and umap_seconds(20_000) > umap_seconds(4_000)


def test_side_by_side_heatmaps_share_one_colour_scale():
    import pandas as pd

    from dpcore.figures.data import shared_color_scale, two_way_heatmap

    a = two_way_heatmap(pd.DataFrame([[0.0, 0.1], [0.1, 0.0]], columns=["x", "y"], index=["x", "y"]))
    b = two_way_heatmap(pd.DataFrame([[0.0, 0.6], [0.6, 0.0]], columns=["x", "y"], index=["x", "y"]))
    left, right = shared_color_scale([a, b])
    assert (left.data[0].zmin, left.data[0].zmax) == (right.data[0].zmin, right.data[0].zmax) == (0, 0.6)
    assert left.data[0].showscale is True and right.data[0].showscale is True  # the same bar on both
    assert left.data[0].colorbar.title.text == "TVD (shared scale)"
    assert a.data[0].zmax == 0.1  # the cached originals are left alone
