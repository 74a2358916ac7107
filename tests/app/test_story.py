"""The Story's lesson on its defaults: the same model with and without noise on the same rows; the
non-private side is the better generator (the top of the privacy–utility curve) and gives away
more (planted canaries), the private side stays within its ε. And when a pair breaks that, the
page says what it sees instead."""
import math
import time

import pytest

from dpcore.figures import curve_checks
from dpcore.ui import story


def _side(utility, canary_auc, *, epsilon=1.0, lb=0.0, reference=0.85, consistent=True):
    audit = {"auc": canary_auc, "epsilon_lower_bound": lb, "accountant_epsilon": epsilon, "top_in": 7, "k": 13}
    return {"utility": utility, "reference": reference, "metric": "accuracy", "epsilon": epsilon,
            "attacks": [{"name": "loss", "sees": "the model", "auc": 0.51, "eps_lower_bound": 0.0,
                         "consistent": consistent}], "best": "loss", "auc": 0.51, "audit": audit}


def test_pair_is_one_model_with_and_without_noise_on_the_same_rows():
    data = {"dataset": "fashion-mnist", "n": 23_333, "test_size": 0.2}
    private, nonprivate = story.story_configs(data, 20_000)
    assert (private.model, nonprivate.model) == ("p3gm", "pgm")
    assert private.data == nonprivate.data and private.params["epsilon"] == 1.0
    shared = set(nonprivate.params) - {"device"}
    assert {k: private.params[k] for k in shared} == {k: nonprivate.params[k] for k in shared}
    small, _ = story.story_configs({"dataset": "digits", "test_size": 0.2}, 1_437)
    assert small.params["epsilon"] == 10.0
    assert story.story_key([private, nonprivate]) != story.story_key([small, nonprivate])


def test_checks_fail_when_the_pair_breaks_the_lesson():
    good_p, good_n = _side(0.70, 0.50), _side(0.80, 0.70, epsilon=math.inf, lb=0.7)
    assert story.story_checks(good_p, good_n) == []
    text = story.verdict(good_p, good_n)
    assert "costs some utility" in text and "82 %" in text and "94 %" in text and "within its ε = 1" in text
    worse = story.story_checks(good_p, _side(0.60, 0.70, epsilon=math.inf))
    assert worse and "scores lower" in worse[0]
    no_leak = story.story_checks(good_p, _side(0.80, 0.50, epsilon=math.inf))
    assert no_leak and "leaks no more" in no_leak[0]
    assert "above its ε" in story.story_checks(_side(0.7, 0.5, lb=1.5), good_n)[0]
    assert "beats what its ε allows" in story.story_checks(_side(0.7, 0.5, consistent=False), good_n)[0]
    instead = story.verdict(good_p, _side(0.60, 0.70, epsilon=math.inf))
    assert instead.startswith("This pair does not show the lesson") and "0.60" in instead


def test_headline_tiles_lead_with_the_audit_and_say_where_it_stands_against_epsilon():
    p, q = _side(0.70, 0.50, lb=0.4), _side(0.80, 0.75, epsilon=math.inf, lb=1.37)
    pt, qt = story.tiles(p, "private"), story.tiles(q, "nonprivate")
    assert [t["label"] for t in pt][:2] == ["canary audit proves", "canaries found"]
    assert (pt[0]["value"], qt[0]["value"]) == ("ε ≥ 0.40", "ε ≥ 1.37")
    assert pt[0]["delta"] == "within its ε = 1" and "no ε promised" in qt[0]["delta"]
    assert "a bug" in story.tiles(_side(0.7, 0.5, lb=1.5), "private")[0]["delta"]
    assert pt[1]["value"] == "7 of 13" and pt[2]["value"] == "0.70"
    bare = story.tiles({**p, "audit": None}, "private")
    assert bare[0]["value"] == bare[1]["value"] == story.MISSING and bare[0]["delta"] is None


def test_curve_check_wants_the_noiseless_point_on_top():
    rows = [{"series": "p3gm", "epsilon": 1.0, "utility": 0.70}, {"series": "p3gm", "epsilon": 3.0, "utility": 0.75},
            {"series": "p3gm", "epsilon": math.inf, "utility": 0.80}]
    assert curve_checks(rows) == []
    rows[-1]["utility"] = 0.72
    assert curve_checks(rows) == ["p3gm: ε = ∞ scores 0.72, below ε = 3 (0.75)"]


def test_attack_legend_names_side_attack_and_auc_in_under_40_characters():
    from types import SimpleNamespace

    import numpy as np

    from dpcore.figures.attacks import LEGEND_CHARS, RunCurves, attack_curves_figure

    grid = np.linspace(0, 1, 11)
    res = [SimpleNamespace(name=n, auc=0.5123, alpha=grid, beta=1 - grid) for n in ("monte-carlo", "loss")]
    bounds = [("(ε=1.00, δ=1e-05)-DP", grid, 1 - grid), ("PLD envelope", grid, 1 - grid),
              ("GDP curve, μ = 0.50 (central-limit approximation, not a bound)", grid, 1 - grid)]
    fig = attack_curves_figure([RunCurves("private", res, bounds, "p3gm-run"), RunCurves("non-private", res)],
                               compact=True)
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert "non-private · monte-carlo · AUC 0.51" in names
    assert all(len(n) < LEGEND_CHARS for n in names), max(names, key=len)
    assert len(set(names)) == len(names)


@pytest.fixture(scope="module")
def digits_story(tmp_path_factory):
    """The Story job on digits (the default where Fashion-MNIST is not installed, as in CI):
    P3GM at ε = 10 and PGM, 10 epochs each, scored and audited (~15 s of CPU)."""
    from dpcore.jobs import jobs
    from dpcore.report import load_evaluation
    from dpcore.ui.defaults import default_data_choice
    from dpcore.ui.story_job import pair_for, story_job

    root = tmp_path_factory.mktemp("story")
    job = jobs.JobHandle(story_job(pair_for(default_data_choice("digits")), root)).start()
    seen = []
    while not job.join(0.2):
        seen.append(job.progress())
    assert job.status == "done", job.error
    sides = {role: story.side_numbers(load_evaluation(run.path), run.epsilon)
             for role, run in zip(story.ROLES, job.runs)}
    return job, sides, seen


def test_story_defaults_show_privacy_costing_utility_and_buying_protection(digits_story):
    job, sides, _ = digits_story
    p, q = sides["private"], sides["nonprivate"]
    assert story.story_checks(p, q) == [], story.verdict(p, q)
    assert q["utility"] >= p["utility"]  # the noiseless model is the better generator
    assert q["audit"]["auc"] > p["audit"]["auc"]  # and memorises the canaries it trained on
    assert p["audit"]["epsilon_lower_bound"] <= p["epsilon"]  # the private side within its ε
    points = [{"series": "p3gm", "epsilon": s["epsilon"], "utility": s["utility"]} for s in sides.values()]
    assert curve_checks(points) == []
    assert {a["sees"] for a in q["attacks"]} >= {"synthetic rows", "the model (encoder + decoder)"}


def test_real_pair_headline_shows_the_leak_and_the_runs_table_and_privacy_page_agree(digits_story, monkeypatch):
    """On a real small pair the tiles show the audit's numbers in the lesson's direction, and the
    Runs table's and the Privacy page's figure for each run is the Story's."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from dpcore.runs.store import list_runs
    from dpcore.ui.tables import runs_table

    job, sides, _ = digits_story
    tiles = {role: story.tiles(sides[role], role) for role in story.ROLES}
    lbs = {role: sides[role]["audit"]["epsilon_lower_bound"] for role in story.ROLES}
    assert lbs["nonprivate"] > lbs["private"] and lbs["private"] <= sides["private"]["epsilon"]
    assert {role: t[0]["value"] for role, t in tiles.items()} == {r: f"ε ≥ {lb:.2f}" for r, lb in lbs.items()}
    assert tiles["private"][0]["delta"].startswith("within its ε")
    table = runs_table(list_runs(job.root)).set_index("run")
    for role, run in zip(story.ROLES, job.runs):
        assert "ε ≥ " + table.loc[run.name, "ε ≥ (canary audit)"] == tiles[role][0]["value"]
    monkeypatch.setenv("DPCORE_RUNS_DIR", job.root)
    at = AppTest.from_file(str(Path(__file__).parents[2] / "app.py"), default_timeout=120)
    at.query_params["dataset"] = "digits"
    at.run()
    at.switch_page("app_pages/privacy.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}  # no button pressed: the saved Story numbers
    role = story.ROLES[[r.name for r in job.runs].index(at.selectbox(key="privacy.run").value)]
    assert shown["canary audit proves"] == tiles[role][0]["value"]
    assert shown["canaries found"] == tiles[role][1]["value"]


def test_story_job_reports_progress_with_time_left_and_is_reused(digits_story, tmp_path):
    from dpcore.runs.store import list_runs
    from dpcore.ui import story_job

    job, _, seen = digits_story
    texts = [t for t, _ in seen]
    assert any(t.startswith("private (P3GM): training") for t in texts)
    assert any(t.startswith("non-private (PGM): training") for t in texts)
    assert any(t.endswith(" left") and "about" in t for t in texts), texts[-3:]
    fracs = [f for _, f in seen]
    assert fracs == sorted(fracs) or max(abs(a - b) for a, b in zip(fracs, sorted(fracs))) < 0.05
    assert story.saved_pair(list_runs(job.root), job.summary["key"]) == job.summary["pair"]
    from dpcore.ui.defaults import default_data_choice

    again = story_job.start_story(None, job.root, default_data_choice("digits"))
    t0 = time.time()
    assert again.join(60) and again.status == "done" and again.runs == []  # found, not retrained
    assert time.time() - t0 < 30


def test_one_story_job_at_a_time(monkeypatch, tmp_path):
    from dpcore.jobs import jobs
    from dpcore.ui import story_job

    started = []

    def slow_pair(choice):  # the job's first step: loading the data and building the pair
        started.append(choice)
        time.sleep(0.5)
        return []

    monkeypatch.setattr(story_job, "pair_for", slow_pair)
    monkeypatch.setattr(jobs, "_BY_KEY", {})
    a = story_job.start_story(None, tmp_path, {"dataset": "digits"})
    b = story_job.start_story(None, tmp_path, {"dataset": "digits"})  # a second click or tab joins
    assert a is b and len(started) == 1 and story_job.current_job() is a
    assert a.join(30) and a.status == "done"
    c = story_job.start_story(None, tmp_path, {"dataset": "digits"})  # once it ended, a click starts anew
    assert c is not a and c.join(30) and len(started) == 2


def test_story_page_trains_the_pair_in_one_job_and_shows_it(runs_dir, monkeypatch):
    """The page's flow with tiny settings: one click starts the job (a second joins it), the page
    shows progress and no stale box, then both sides' numbers, the verdict (or what the pair shows
    instead), what each attacker sees, a compact legend and the export."""
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from dpcore.figures.attacks import LEGEND_CHARS
    from dpcore.jobs import jobs
    from dpcore.runs import RunConfig
    from dpcore.ui import story_job

    tiny = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200, "seed": 0}

    def configs(data, n, seed=0):
        return [RunConfig(model="p3gm", params={**tiny, "epsilon": 5.0}, data=dict(data)),
                RunConfig(model="pgm", params=tiny, data=dict(data))]

    monkeypatch.setattr(story, "story_configs", configs)
    monkeypatch.setattr(story, "AUDIT_ROWS", 300)
    monkeypatch.setattr(jobs, "_BY_KEY", {})
    at = AppTest.from_file(str(Path(__file__).parents[2] / "app.py"), default_timeout=180)
    at.query_params["dataset"] = "digits"
    at.run()
    at.switch_page("app_pages/story.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Train the Story" in i.value for i in at.info)
    at.button(key="story.train").click().run()
    job = story_job.current_job()
    assert job is not None and story_job.start_story(None, runs_dir) is job  # a second click joins
    assert not [i for i in at.info if "Train the Story" in i.value]  # no stale box under the bar
    assert job.join(300) and job.status == "done", job.error
    at.run()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert (at.selectbox(key="story.private").value, at.selectbox(key="story.leaky").value) == job.summary["pair"]
    shown = " ".join(str(m.value) for m in at.metric)
    assert "nan" not in shown.lower() and "None" not in shown and "ε ≥" in shown
    from dpcore.report import load_evaluation

    heads = [m for m in at.metric if m.label == "canary audit proves"]  # the headline: the audit, both sides
    saved = [story.saved_audit(load_evaluation(r.path))["epsilon_lower_bound"] for r in job.runs]
    assert [m.value for m in heads] == [f"ε ≥ {lb:.2f}" for lb in saved]
    lesson = next(f for f in (json.loads(el.proto.spec) for el in at.get("plotly_chart"))
                  if "trained on" in json.dumps(f["layout"].get("title"), ensure_ascii=False))
    sides_drawn = [t["name"] for t in lesson["data"] if t["name"].startswith(("with privacy", "without privacy"))]
    assert len(sides_drawn) == 2 and all("AUC" in n for n in sides_drawn)
    assert (at.success or at.warning) and "what each attacker sees" in " ".join(m.value for m in at.markdown).lower()
    figs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    mia = next(f for f in figs if "Membership inference" in json.dumps(f["layout"].get("title")))
    names = [t["name"] for t in mia["data"] if t.get("showlegend", True)]
    assert any(n.startswith("non-private · loss · AUC ") for n in names)
    assert all(len(n) < LEGEND_CHARS for n in names), max(names, key=len)
    at.button(key="story.export").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "PRIVATE" in at.session_state["story.report"][2]


def test_runs_page_draws_pgm_as_the_top_of_p3gm_curve_and_says_when_it_is_not(digits_story, monkeypatch):
    import html
    import json
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from dpcore.report import load_evaluation, save_evaluation

    job, sides, _ = digits_story
    monkeypatch.setenv("DPCORE_RUNS_DIR", job.root)

    def curve():
        at = AppTest.from_file(str(Path(__file__).parents[2] / "app.py"), default_timeout=120)
        at.query_params["dataset"] = "digits"
        at.run()
        at.switch_page("app_pages/runs.py").run()
        assert not at.exception, [e.value for e in at.exception]
        figs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
        fig = next(f for f in figs if "Privacy–utility trade-off" in json.dumps(f["layout"].get("title"),
                                                                                 ensure_ascii=False))
        return at, fig

    at, fig = curve()
    inf = next(t for t in fig["data"] if t.get("name", "").endswith("(ε = ∞)"))
    assert inf["name"].startswith("p3gm") and inf["y"] == [sides["nonprivate"]["utility"]]  # PGM ends P3GM's line
    assert not [w for w in at.warning if "not the top" in w.value]
    pgm = job.runs[1].path
    saved = load_evaluation(pgm)["utility"]
    low = json.loads(json.dumps(saved))
    from dpcore.evaluate.usefulness import SAVED_KEY

    low[SAVED_KEY]["value"] = 0.01  # as if the noiseless model had scored below the private one
    save_evaluation(pgm, utility=low)
    try:
        at, _ = curve()
        said = [html.unescape(w.value).replace("\u2060", "") for w in at.warning]
        assert any("not the top of its curve: p3gm epochs10: ε = ∞ scores 0.01, below ε = 10" in w for w in said), said
    finally:
        save_evaluation(pgm, utility=saved)
