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
