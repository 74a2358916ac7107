"""Every workbench page under Streamlit's AppTest: fresh session, with finished runs, and the live run.

Runs are stored in a temporary DPCORE_RUNS_DIR; the finished runs are made with
`dpcore.jobs.train_run` on digits with tiny settings. Plotly figures are read from the element's
proto `spec` (the figure JSON).
"""
from __future__ import annotations

import html
import json
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 120
TINY = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200}




@pytest.fixture(scope="module")
def finished(runs_dir):
    """A private P3GM run and a non-private PGM run, both tiny, on digits."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    data = {"dataset": "digits", "test_size": 0.2}
    p3gm = train_run(RunConfig(model="p3gm", params={**TINY, "epsilon": 2.0}, data={**data, "outlier": True}),
                     runs_dir)
    pgm = train_run(RunConfig(model="pgm", params=TINY, data=data), runs_dir)
    return p3gm, pgm


def _app(page: str | None = None, dataset: str = "digits"):
    """A fresh session on `page`, opened on `dataset` through the address (?dataset=, as a reload
    would): the page tests stay on digits' small, fast rows whatever the app's default is."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = dataset
    at.run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def _titles(at) -> list[str]:
    out = []
    for fig in _figures(at):
        title = fig.get("layout", {}).get("title", {})
        out.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return out


def _metric(at, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


# ----------------------------------------------------------------------------- configuration
def test_server_config_binds_localhost_and_limits_uploads():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["browser"]["gatherUsageStats"] is False
    from dpcore.data.csv import DEFAULT_MAX_BYTES

    # The page passes the server limit to the data layer; both agree on the same number of bytes.
    assert cfg["server"]["maxUploadSize"] * 1024 * 1024 == DEFAULT_MAX_BYTES


def test_pages_are_reached_only_through_st_navigation():
    """No `pages/` folder next to app.py (Streamlit would run it as a legacy multipage app, with a
    deep link executing a page without app.py), and every st.Page in app.py names a file that exists."""
    import re

    assert not (ROOT / "pages").exists()
    listed = re.findall(r'st\.Page\("([^"]+)"', (ROOT / "app.py").read_text())
    assert listed and all((ROOT / p).is_file() for p in listed), listed


# ----------------------------------------------------------------------------- Data
def test_data_page_fresh_session(runs_dir):
    at = _app()
    assert at.title[0].value == "Data"
    from dpcore.data import load_split

    train, test = load_split("digits", seed=0, test_size=0.2)
    assert _metric(at, "Training rows (private)") == f"{train.n:,}"
    assert _metric(at, "Test rows (held out)") == f"{test.n:,}"
    kinds = {tr["type"] for fig in _figures(at) for tr in fig["data"]}
    assert "heatmap" in kinds  # the image grid


def test_data_page_bad_csv_shows_one_line_and_keeps_dataset(runs_dir):
    at = _app()
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value(("bad.csv", b"a,b,c\n1,2,3\n4,5\n", "text/csv")).run()
    assert not at.exception
    assert len(at.error) == 1 and "row 2" in at.error[0].value and "\n" not in at.error[0].value
    assert at.subheader[0].value == "Active dataset: digits"


def test_data_page_csv_with_schema(runs_dir):
    import numpy as np

    rng = np.random.default_rng(0)
    lines = ["age,city,income,label"] + [
        f"{rng.integers(18, 90)},{rng.choice(['a', 'b', 'c'])},{rng.normal(50, 10):.2f},{rng.choice(['no', 'yes'])}"
        for _ in range(120)]
    at = _app()
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value(("people.csv", "\n".join(lines).encode(), "text/csv")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="data.target").value == "label"
    mode = next(r for r in at.radio if r.key.startswith("data.bounds_mode."))
    assert mode.value == "dp"  # the default is covered by ε whatever the (private) row count…
    warning = html.unescape(next(w.value for w in at.warning if "too few for DP bounds" in w.value))
    assert "120 rows" in warning and "Declare the bounds of age, income" in warning  # …and 120 rows are few
    mode.set_value("declare").run()
    at.button(key="data.use_csv").click().run()
    assert [html.unescape(e.value) for e in at.error] == [
        "declare the bounds of 'age', 'income' (public knowledge, e.g. age 0 to 120), or choose \"estimate with "
        "DP (covered by ε)\" or \"read from the rows (not covered by ε)\""]
    mode.set_value("rows").run()  # the last choice, and labelled wherever the data is shown
    at.button(key="data.use_csv").click().run()
    assert not at.exception and not at.error
    assert html.unescape(at.subheader[0].value) == "Active dataset: people.csv"
    assert _metric(at, "Classes") == "2"
    assert any("not covered by ε" in w.value for w in at.warning)  # bounds were read from the data


def test_data_page_csv_with_dp_bounds(runs_dir):
    """"estimate with DP": numeric bounds get origin "dp" and the choice carries the noise to runs."""
    import numpy as np

    rng = np.random.default_rng(0)
    lines = ["age,city,income,label"] + [
        f"{rng.integers(18, 90)},{rng.choice(['a', 'b', 'c'])},{rng.normal(50, 10):.2f},{rng.choice(['no', 'yes'])}"
        for _ in range(200)]
    at = _app()
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value(("people.csv", "\n".join(lines).encode(), "text/csv")).run()
    next(r for r in at.radio if r.key.startswith("data.bounds_mode.")).set_value("dp").run()
    at.number_input(key="data.bounds_noise").set_value(2.0).run()
    at.button(key="data.use_csv").click().run()
    assert not at.exception and not at.error
    choice = at.session_state["dpcore.data"]
    assert choice["dp_bounds_noise"] == 2.0 and choice["types"] == {"age": "integer", "income": "numeric"}
    warning = next(w.value for w in at.warning if "not covered by ε" in w.value)
    assert "city" in warning and "age" not in warning and "income" not in warning
    from dpcore.ui.data import load_data  # the page's own loader: a run's path, secret noise, keyed split

    train, test = load_data(choice)
    assert [r["noise"] for r in train.meta["privacy_records"]] == ["secret"]
    assert train.meta["split"] == test.meta["split"] == "keyed"


# ----------------------------------------------------------------------------- Train
def test_train_page_preview_follows_the_budget(runs_dir):
    at = _app("app_pages/train.py")
    sigma_1 = float(_metric(at, "σ_s  (DP-SGD)"))
    eps_1 = float(_metric(at, "ε by the accountant"))
    assert "Budget share by mechanism" in " ".join(_titles(at))
    assert any("of the budget" in c.value for c in at.caption)  # P3GM's own note on its preview
    at.select_slider(key="train.p3gm.epsilon.d10").set_value(0.5).run()  # digits' own default ε = 10
    sigma_half = float(_metric(at, "σ_s  (DP-SGD)"))
    eps_half = float(_metric(at, "ε by the accountant"))
    assert sigma_half > sigma_1 and eps_half < eps_1  # less budget → more noise
    at.selectbox(key="train.model").set_value("vae").run()
    assert not at.exception and _metric(at, "ε") == "∞"
    role = [i.value for i in at.info if "Recommended for this data" not in i.value]  # the model's own box
    assert "utility ceiling" in role[0]  # VAE's role: DP-VAE's noise-free twin
    at.selectbox(key="train.model").set_value("lvae").run()  # not private: nothing it releases is
    assert not at.exception and _metric(at, "ε") == "∞"
    lvae_box = [i.value for i in at.info if "Recommended for this data" not in i.value][0]  # a baseline's role
    assert "baseline" in lvae_box and "ceiling" not in lvae_box and "exact posterior re-sampling" in lvae_box
    assert "certified" not in " ".join(c.value for c in at.caption).replace("not certified", "")


def _tiny(at, model="p3gm"):
    epochs = next(s.key for s in at.slider if s.key.startswith(f"train.{model}.epochs"))  # ".dN": size's default
    at.slider(key=epochs).set_value(1).run()
    for name in ("hidden", "warmup_steps"):
        at.number_input(key=f"train.{model}.adv.{name}").set_value(TINY[name]).run()


def _wait(at, timeout=90):
    end = time.time() + timeout
    while time.time() < end:
        time.sleep(0.5)
        at.run()
        live = at.session_state["dpcore.live"]
        if not live.running:
            at.run()  # the final redraw after the run ended
            return live
    raise AssertionError("the run did not finish in time")


def test_train_page_runs_a_tiny_model_live(runs_dir):
    from dpcore.runs import Run
    from dpcore.ui.nav import fmt_seconds as ui_fmt_seconds

    at = _app("app_pages/train.py")
    _tiny(at)
    at.button(key="train.start").click().run()
    assert not at.exception
    assert at.session_state["dpcore.live"] is not None
    other = _app("app_pages/train.py")  # another browser session sees no live run
    assert "dpcore.live" not in other.session_state
    live = _wait(at)
    assert live.status == "done", live.handle.error
    assert not at.exception and not at.error
    assert any("Training finished" in s.value for s in at.success)
    run = Run.load(runs_dir / live.run_name)
    assert run.status()["status"] == "done"
    assert _metric(at, "ε spent") == f"{run.epsilon:.2f}"
    fig = next(f for f, t in zip(_figures(at), _titles(at)) if "Training losses" in t)
    assert {tr["name"] for tr in fig["data"]} >= {"loss"}
    assert any("raw losses — not covered by ε (data owner only)" in c.value for c in at.caption)
    assert len(live.events) == live.events[-1]["total_steps"]
    notes = " ".join(m.value for m in next(e for e in at.expander if e.label == "About these numbers").markdown)
    assert "no privacy cost" in notes and "not additive" in notes and "RDP" in notes and "PLD" in notes
    took = next(p for p in at.get("progress") if "took" in str(p.proto.text)).proto.text
    assert ui_fmt_seconds(run.status()["seconds"]) in took  # the run's own duration, not the wall clock


def test_train_page_stop_keeps_a_usable_model(runs_dir):
    from dpcore.runs import Run

    at = _app("app_pages/train.py")
    _tiny(at)
    at.number_input(key="train.p3gm.adv.warmup_steps").set_value(20_000).run()  # long enough to stop
    at.button(key="train.start").click().run()
    live = at.session_state["dpcore.live"]
    end = time.time() + 60
    while time.time() < end and not live.events:
        time.sleep(0.2)
        at.run()
    at.button(key="train.stop").click().run()
    live = _wait(at)
    assert live.status == "stopped", live.handle.error
    assert any("stopped" in s.value for s in at.success)
    run = Run.load(runs_dir / live.run_name)
    assert run.status()["status"] == "stopped" and run.has_model()
    assert run.load_model().sample(5, seed=0).n == 5


def test_train_page_shows_a_failed_run(runs_dir, monkeypatch):
    from dpcore.models.p3gm import P3GM

    def boom(self, *a, **k):
        raise RuntimeError("boom in fit")

    monkeypatch.setattr(P3GM, "fit", boom)
    at = _app("app_pages/train.py")
    _tiny(at)
    at.button(key="train.start").click().run()
    live = _wait(at)
    assert live.status == "failed"
    assert any("boom in fit" in e.value for e in at.error)
    from dpcore.runs import Run

    assert Run.load(runs_dir / live.run_name).status()["status"] == "failed"
    at.switch_page("app_pages/data.py").run()  # the app keeps working
    assert not at.exception


# ----------------------------------------------------------------------------- Compare / Privacy / Runs
def test_compare_page_without_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path))
    at = _app("app_pages/compare.py")
    assert any("No finished runs" in i.value for i in at.info)


def test_compare_page_with_runs(finished, monkeypatch):
    from dpcore import report

    calls = []
    for fn in ("utility", "marginals", "latent", "samples_figures"):
        original = getattr(report, fn)
        monkeypatch.setattr(report, fn, lambda *a, _f=original, _n=fn, **k: calls.append(_n) or _f(*a, **k))
    p3gm, pgm = finished
    at = _app("app_pages/compare.py")
    at.selectbox(key="compare.run").set_value(p3gm.name).run()
    assert not at.exception
    titles = " | ".join(_titles(at))
    for part in ("samples", "2-way marginal TVD", "Latent space (PCA)", "Utility"):
        assert part in titles, titles
    kinds = {tr["type"] for fig in _figures(at) for tr in fig["data"]}
    assert {"heatmap", "table", "bar"} <= kinds
    at.selectbox(key="compare.other").set_value(pgm.name).run()  # side by side
    assert not at.exception
    assert sum("Utility" in t for t in _titles(at)) == 2
    heat = [tr for fig in _figures(at) for tr in fig["data"] if "TVD" in str(tr.get("colorbar", ""))]
    assert len(heat) == 2 and heat[0]["zmax"] == heat[1]["zmax"] and heat[0]["zmin"] == heat[1]["zmin"]
    assert [tr.get("showscale", True) for tr in heat] == [True, True]  # the same colour bar on both
    assert any("K = " in c.value for c in at.caption)  # the latent caption names the prior's K
    at.radio(key="compare.latent_method").set_value("umap").run()  # slow: waits for its button
    assert not at.exception and "UMAP" in at.button(key="compare.umap_go").label
    assert not any("UMAP" in t for t in _titles(at)) and any("Press the button" in c.value for c in at.caption)
    at.radio(key="compare.latent_method").set_value("pca").run()
    assert sorted(calls) == sorted(["utility", "marginals", "latent", "samples_figures"] * 2)
    at.switch_page("app_pages/data.py").run()
    at.switch_page("app_pages/compare.py").run()  # re-opening is served from the cache
    assert not at.exception and len(calls) == 8


def test_privacy_page(finished):
    p3gm, pgm = finished
    at = _app("app_pages/privacy.py")
    at.selectbox(key="privacy.run").set_value(p3gm.name).run()
    assert not at.exception
    assert _metric(at, "ε (accountant)") == f"{p3gm.epsilon:.3f}"
    figs = dict(zip(_titles(at), _figures(at)))
    mia = next(f for t, f in figs.items() if "Membership inference" in t)
    names = " ".join(tr.get("name", "") for tr in mia["data"])
    assert "random guess" in names and "AUC" in names and "GDP" in names and "-DP" in names
    gdp = next(tr for tr in mia["data"] if "GDP" in tr.get("name", ""))
    assert "approximation, not a bound" in gdp["name"] and gdp["line"]["dash"] == "dot"
    from dpcore.privacy.coverage import NEIGHBOURING, covered

    panel = next(e for e in at.expander if e.label == "What ε covers")
    text = " ".join(m.value for m in panel.markdown) + " ".join(c.value for c in panel.caption)
    assert NEIGHBOURING in text and all(o.label in text for o in covered())
    assert any("Budget share by mechanism" in t for t in figs)
    assert any("different accounting" in t for t in figs)
    rank = int(_metric(at, "Outlier's rank").split("/")[0])  # the injected outlier is located
    assert 1 <= rank
    at.selectbox(key="privacy.run").set_value(pgm.name).run()
    assert not at.exception
    assert _metric(at, "ε") == "∞"


def test_privacy_page_compares_only_runs_on_the_same_dataset_and_zooms_into_low_fpr(finished, monkeypatch):
    """Attacks on another dataset do not compare: such runs are not offered. The MIA plot has the
    ROC view beside the trade-off, legends name the model and ε (the full run id only on hover)."""
    import dataclasses

    from dpcore.ui import picker

    p3gm, pgm = finished
    real = picker.model_runs
    at = _app("app_pages/privacy.py")
    at.selectbox(key="privacy.run").set_value(p3gm.name).run()
    assert pgm.name in at.selectbox(key="privacy.more").options
    monkeypatch.setattr(picker, "model_runs", lambda: [dataclasses.replace(s, dataset="elsewhere")
                                                       if s.name == pgm.name else s for s in real()])
    at.run()
    assert not at.exception and pgm.name not in at.selectbox(key="privacy.more").options
    mia = next(f for t, f in zip(_titles(at), _figures(at)) if "Membership inference" in t)
    assert {tr.get("xaxis") for tr in mia["data"]} == {"x", "x2"}
    names = [tr.get("name", "") for tr in mia["data"]]
    assert any("AUC" in n for n in names) and not any(p3gm.name in n for n in names)
    assert any(p3gm.name in tr.get("hovertemplate", "") for tr in mia["data"])
    at.toggle(key="privacy.log_fpr").set_value(True).run()
    mia = next(f for t, f in zip(_titles(at), _figures(at)) if "Membership inference" in t)
    assert not at.exception and mia["layout"]["xaxis"]["type"] == "log"


def test_privacy_page_lvae_releases_have_infinite_epsilon(runs_dir):
    """L-VAE's decoder is trained without DP: the page must show ε = ∞, the certificate only as a
    property of exact posterior re-sampling (which the app does not offer)."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    run = train_run(RunConfig(model="lvae", params={"epochs": 1, "hidden": 16, "batch_size": 256},
                              data={"dataset": "digits", "test_size": 0.2}), runs_dir)
    at = _app("app_pages/privacy.py")
    at.selectbox(key="privacy.run").set_value(run.name).run()
    assert not at.exception
    assert _metric(at, "ε") == "∞"
    labels = [m.label for m in at.metric]
    assert "Certified ε" not in labels and "Privacy claim" not in labels
    text = " ".join(w.value for w in at.warning)
    assert "ε = ∞" in text and "does not offer" in text and "Metropolis" in text


def test_runs_page_manage_and_report(finished, runs_dir):
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    extra = train_run(RunConfig(model="pgm", params={**TINY, "seed": 3},
                                data={"dataset": "digits", "test_size": 0.2}), runs_dir)
    at = _app("app_pages/runs.py")
    frame = at.dataframe[0].value
    assert {finished[0].name, extra.name} <= set(frame["run"])
    assert frame.set_index("run").loc[finished[1].name, "ε"] == "∞"
    at.selectbox(key="runs.selected").set_value(finished[0].name).run()
    buttons = [b.key for b in at.button if b.key and b.key.startswith("runs.export")]
    assert buttons == ["runs.export.shareable", "runs.export.private"]  # shareable first
    assert at.number_input(key="runs.report_rows").value == 1000  # small by default, the user's choice
    at.number_input(key="runs.report_rows").set_value(25).run()
    at.button(key="runs.export.shareable").click().run()
    assert not at.exception
    name, html = at.session_state["runs.reports"]["shareable"]
    assert name == finished[0].name
    assert "synthetic rows drawn for this release</th><td>25</td>" in html and "<h2>Summary</h2>" in html
    assert html.count("<script type=\"text/javascript\">/**") <= 1 and "plotly" in html.lower()
    assert "Membership inference" not in html and f"{finished[0].epsilon:.4g}" in html
    at.button(key="runs.export.private").click().run()
    name, html = at.session_state["runs.reports"]["private"]
    assert "Membership inference" in html and "PRIVATE" in html
    assert "best membership attack" in html and "consistent with the accountant" in html
    at.run()  # the private report evaluated the run: the table shows the ladder's best attack
    row = at.dataframe[0].value.set_index("run").loc[finished[0].name]
    from dpcore.evaluate.attacks import BLACK_BOX

    assert row["best attack"] in BLACK_BOX + ("loss",) and 0 <= float(row["attack AUC"]) <= 1
    assert row["consistent"] in ("yes", "NO") and float(row["ε ≥ (attack)"]) >= 0
    at.selectbox(key="runs.selected").set_value(extra.name).run()
    at.text_input(key=f"runs.newname.{extra.name}").set_value("renamed-run").run()
    at.button(key="runs.rename").click().run()
    assert not at.exception and (runs_dir / "renamed-run").is_dir()
    at.selectbox(key="runs.selected").set_value("renamed-run").run()
    at.checkbox(key="runs.sure.renamed-run").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception and not (runs_dir / "renamed-run").exists()


def test_an_edited_run_is_listed_inconsistent_and_never_exported(finished, runs_dir):
    """ε is recomputed when the Runs page opens a run: an edited ledger.json is "ledger inconsistent
    (edited?)", without ε or exports, and the pages that show a run's privacy do not offer it."""
    import shutil

    from dpcore.runs.verify import INCONSISTENT
    from dpcore.text import md

    path = shutil.copytree(finished[0].path, runs_dir / "edited-ledger")
    try:
        d = json.loads((path / "ledger.json").read_text())
        (path / "ledger.json").write_text(json.dumps({**d, "epsilon": 0.01}))
        at = _app("app_pages/runs.py")
        row = at.dataframe[0].value.set_index("run").loc["edited-ledger"]
        assert row["guarantee"] == INCONSISTENT and row["ε"] == "—" and row["status"] == "inconsistent"
        at.selectbox(key="runs.selected").set_value("edited-ledger").run()
        assert not at.exception and any(md(INCONSISTENT) in e.value for e in at.error)  # escaped markdown
        assert not [b.key for b in at.button if b.key and b.key.startswith("runs.export")]
        at = _app("app_pages/privacy.py")
        assert "edited-ledger" not in at.selectbox(key="privacy.run").options
    finally:
        shutil.rmtree(path)


def test_runs_page_sweep(finished, runs_dir):
    at = _app("app_pages/train.py")
    _tiny(at)  # the sweep reuses the Train page's settings
    at.switch_page("app_pages/runs.py").run()
    before = {p.name for p in runs_dir.iterdir()}
    at.multiselect(key="runs.sweep_eps").set_value([1.0, 5.0]).run()
    at.button(key="runs.sweep_start").click().run()
    end = time.time() + 120
    while time.time() < end and at.session_state["dpcore.sweep"]["handle"].is_alive():
        time.sleep(0.5)
    at.run()
    assert not at.exception and not at.error
    new = {p.name for p in runs_dir.iterdir()} - before
    assert len([n for n in new if not n.startswith("_")]) == 2
    assert any("Privacy–utility" in t for t in _titles(at))


def test_seeded_noise_run_is_labelled_not_private_everywhere(runs_dir):
    """reproducible_noise (debugging): the Privacy page, the Runs table and both reports say the
    run is not private and cover nothing, whatever its ε (issue "Privacy truth")."""
    from dpcore.jobs import train_run
    from dpcore.privacy.coverage import NOT_PRIVATE
    from dpcore.report import load_bundle, run_report
    from dpcore.runs import RunConfig

    run = train_run(RunConfig(model="p3gm", params={**TINY, "epsilon": 2.0, "reproducible_noise": True},
                              data={"dataset": "digits", "test_size": 0.2}), runs_dir)
    assert run.ledger().reproducible_noise
    at = _app("app_pages/privacy.py")
    at.selectbox(key="privacy.run").set_value(run.name).run()
    assert not at.exception
    assert any(NOT_PRIVATE.capitalize() in e.value for e in at.error)
    at = _app("app_pages/runs.py")
    frame = at.dataframe[0].value.set_index("run")
    assert frame.loc[run.name, "guarantee"] == NOT_PRIVATE
    bundle = load_bundle(run.path, n_samples=200)
    assert bundle.seeded_noise
    for kind in ("shareable", "private"):
        html = run_report(run.path, kind=kind, bundle=bundle, n_targets=50)
        assert NOT_PRIVATE.capitalize() in html and ">covered<" not in html


def test_train_page_offers_the_marginal_models(runs_dir):
    at = _app("app_pages/train.py")
    for model in ("aim", "mst"):
        at.selectbox(key="train.model").set_value(model).run()
        assert not at.exception
        keys = " ".join(str(getattr(w, "key", "")) for w in at.number_input) + " ".join(
            str(getattr(w, "key", "")) for w in at.text_input)
        assert f"train.{model}.adv.bins" in keys


def test_train_page_trains_a_six_column_csv_with_default_settings(runs_dir):
    """A first run on a small table: pca_dim and batch_size adapt to it instead of failing."""
    import numpy as np

    rng = np.random.default_rng(1)
    lines = ["a,b,c,d,e,f"] + [",".join(f"{v:.3f}" for v in rng.normal(0, 1, 6)) for _ in range(200)]
    at = _app()
    at.segmented_control(key="data.source").set_value("Upload a CSV").run()
    at.file_uploader(key="data.upload").set_value(("six.csv", "\n".join(lines).encode(), "text/csv")).run()
    at.selectbox(key="data.target").set_value("(none)").run()  # 6 feature columns, no label
    # 200 rows are too few for DP bounds of six columns: this user reads them off the rows
    next(r for r in at.radio if r.key.startswith("data.bounds_mode.")).set_value("rows").run()
    at.button(key="data.use_csv").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert html.unescape(at.subheader[0].value) == "Active dataset: six.csv", [s.value for s in at.subheader]
    at.switch_page("app_pages/train.py").run()
    at.selectbox(key="train.model").set_value("p3gm").run()  # a table's recommendation is AIM: P3GM's adaptation is tested
    assert not at.exception and not at.error
    assert any("batch_size" in i.value for i in at.info), [i.value for i in at.info]
    assert at.slider(key="train.p3gm.pca_dim.6").value == 6
    at.button(key="train.start").click().run()
    live = _wait(at)
    assert live.status == "done", live.handle.error
    # the bounds were read off the uploaded rows: the page says so, naming the columns (issue 29)
    warned = " ".join(html.unescape(w.value) for w in at.warning)
    assert "NOT covered by ε" in warned and "a, b, c, d, e, f" in warned, warned
