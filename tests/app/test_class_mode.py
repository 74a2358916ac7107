"""Class mode under AppTest: sign-in before any page, and isolation — two students and a lecturer,
every page and every address parameter.

One tiny PGM run on digits is trained once into student A's workspace; B's and the lecturer's are
copies of it under other names (the same files, so only the workspace tells them apart — exactly
what a name- or mtime-keyed cache would confuse). Each student also has a stored table.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 120
TINY = {"epochs": 1, "hidden": 32, "warmup_steps": 10, "pca_dim": 10, "batch_size": 200}
CHEAP = {"name": "scrypt", "n": 2**10, "r": 8, "p": 1}
PAGES = ["data", "story", "train", "compare", "privacy", "runs"]
CSV = b"a,b,y\n" + b"".join(f"{i},{i % 3},{i % 2}\n".encode() for i in range(40))


@pytest.fixture(scope="module")
def klass(runs_dir, tmp_path_factory):
    from dpcore.classroom import Member, workspace_root
    from dpcore.classroom.classfile import create_class, parse_class
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig, rename_run
    from dpcore.runs.tables import remember_table
    from dpcore.runs.uploads import store_upload

    doc, codes = create_class("DP 101", 2, kdf=CHEAP)
    path = tmp_path_factory.mktemp("class") / "class.json"
    path.write_text(json.dumps(doc))
    old = os.environ.get("DPCORE_CLASS")
    os.environ["DPCORE_CLASS"] = str(path)
    cf = parse_class(doc)
    roots = {m.name: workspace_root(runs_dir, m) for m in cf.members}
    run = train_run(RunConfig(model="pgm", params=TINY, data={"dataset": "digits", "test_size": 0.2}),
                    roots["student-01"])
    rename_run(run.path, "alpha-run")
    for member, name in (("student-02", "beta-run"), ("lecturer", "lecture-run")):
        shutil.copytree(roots["student-01"] / "alpha-run", roots[member] / "alpha-run")
        rename_run(roots[member] / "alpha-run", name)
    tokens = {}
    for member, table in (("student-01", "atable.csv"), ("student-02", "bsecret.csv")):
        csv = str(store_upload(roots[member], CSV, table))
        tokens[member] = remember_table(roots[member], {"csv": csv, "target": "y", "name": table})
    yield {"cf": cf, "codes": codes, "roots": roots, "tokens": tokens, "member": {m.name: m for m in cf.members},
           "Member": Member}
    if old is None:
        os.environ.pop("DPCORE_CLASS", None)
    else:
        os.environ["DPCORE_CLASS"] = old


def _signed_in(klass, who: str, page: str | None = None, params: dict | None = None, view: str | None = None):
    """A session of `who` (signed in through the session record the form writes), on `page`."""
    from streamlit.testing.v1 import AppTest

    from dpcore.classroom.signin import new_session

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dpcore.member"] = new_session(klass["cf"], klass["member"][who])
    if view is not None:
        at.session_state["dpcore.view"] = view
    for k, v in {"dataset": "digits", **(params or {})}.items():
        if v is not None:  # dataset=None: no ?dataset= (it would win over ?table=)
            at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _everything(at) -> bytes:
    """Every byte the session would send to its browser (all elements' protos, sidebar included)."""
    out = []

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "SerializeToString"):
            out.append(proto.SerializeToString())
        for child in (getattr(node, "children", None) or {}).values():
            walk(child)

    walk(at._tree)
    return b"".join(out)


def _options(at, label: str) -> list[str]:
    """The select box's choices as shown, cut at the run picker's "  ·  " (the run's name)."""
    return [o.split("  ·  ")[0] for o in [list(s.options) for s in at.selectbox if s.label == label][0]]


# ----------------------------------------------------------------------------- sign-in
def test_nothing_runs_before_sign_in_and_a_wrong_code_is_one_line(klass):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["table"] = klass["tokens"]["student-02"]  # read only after signing in, in one's own workspace
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["DP 101: sign in"]
    assert b"beta-run" not in _everything(at) and b"bsecret" not in _everything(at)
    at.text_input(key="signin.code").input("01-AAAA-BBBB-CCCC-DDDD")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["That access code is not right. Check it with your lecturer."]
    assert "dpcore.member" not in at.session_state
    at.text_input(key="signin.code").input(klass["codes"]["student-01"])
    at.button[0].click().run()
    assert not at.exception
    assert any("Signed in as **student-01**" in c.value for c in at.sidebar.caption)
    page = _everything(at)
    assert b"bsecret" not in page and b"beta-run" not in page  # B's ?table= is not A's: never opened
    assert at.session_state["dpcore.member"].member.name == "student-01"
    at.button(key="signin.out").click().run()
    assert [t.value for t in at.title] == ["DP 101: sign in"]
    assert "dpcore.member" not in at.session_state


def test_a_broken_class_file_serves_nothing(tmp_path, monkeypatch, runs_dir):
    from streamlit.testing.v1 import AppTest

    bad = tmp_path / "class.json"
    bad.write_text('{"format": "dpcore-class/1", "members": "everyone"}')
    monkeypatch.setenv("DPCORE_CLASS", str(bad))
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = "digits"
    at.run()
    assert not at.exception and len(at.error) == 1 and "class name" in at.error[0].value
    assert not at.title and not at.text_input  # no page, no sign-in form: never an open workbench


def test_wrong_codes_from_one_session_are_rate_limited(klass):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    for _ in range(klass["cf"].max_wrong):
        at.text_input(key="signin.code").input("02-WRONG").run()
        at.button[0].click().run()
    at.text_input(key="signin.code").input(klass["codes"]["student-02"])
    at.button[0].click().run()
    assert "wait" in at.error[0].value and "dpcore.member" not in at.session_state


def test_an_expired_session_is_signed_out(klass):
    import dataclasses

    at = _signed_in(klass, "student-01")
    at.session_state["dpcore.member"] = dataclasses.replace(at.session_state["dpcore.member"], expires=0.0)
    at.run()
    assert [t.value for t in at.title] == ["DP 101: sign in"]
    assert "expired" in at.info[0].value


# ----------------------------------------------------------------------------- isolation
@pytest.mark.parametrize("page", PAGES)
def test_a_student_sees_only_their_own_runs_and_tables_on_every_page(klass, page):
    forged = {"run": "beta-run", "runs": "beta-run,../student-02/beta-run"}
    if page == "data":  # ?table= is read in app.py for every page alike; once is enough (and keeps digits elsewhere)
        forged.update(dataset=None, table=klass["tokens"]["student-02"])
    at = _signed_in(klass, "student-01", page, params=forged, view="student-02")  # a student cannot pick B
    sent = _everything(at)
    for other in (b"beta-run", b"bsecret", b"lecture-run", b"student-02"):
        assert other not in sent, (page, other)
    if page in ("compare", "privacy", "runs"):
        assert b"alpha-run" in sent
    if page == "data":  # the control: A's own ?table= opens A's table (and still nothing of B's)
        own = _everything(_signed_in(klass, "student-01", page, params={"dataset": None,
                                                                          "table": klass["tokens"]["student-01"]}))
        assert b"atable.csv" in own and b"bsecret" not in own
    assert "runs.selected" not in at.session_state or at.session_state["runs.selected"] == "alpha-run"


def test_the_lecturer_sees_every_workspace_and_publishes_a_run_students_only_read(klass, runs_dir):
    at = _signed_in(klass, "lecturer", "runs")
    assert _options(at, "Runs of") == ["My workspace", "Published to the class",
                                        "student-01's workspace", "student-02's workspace"]
    assert _options(at, "Run") == ["lecture-run"]
    at.button(key="workspace.publish").click().run()
    assert not at.exception and (runs_dir / "published" / "lecture-run" / "config.json").is_file()
    at.selectbox(key="dpcore.view").select("student-02").run()
    assert _options(at, "Run") == ["beta-run"]
    at.selectbox(key="dpcore.view").select("student-01").run()
    assert _options(at, "Run") == ["alpha-run"]

    for page in ("runs", "compare"):  # a student opens the published run, read-only
        st_at = _signed_in(klass, "student-02", page, view="published")
        sent = _everything(st_at)
        assert b"lecture-run" in sent and b"alpha-run" not in sent and b"beta-run" not in sent
        if page == "runs":
            keys = {b.key for b in st_at.button}
            assert "runs.delete" not in keys and "runs.rename" not in keys and "workspace.publish" not in keys
            assert st_at.button(key="runs.score_all").disabled  # scores could not be kept in a published run
    assert not (runs_dir / "published" / "lecture-run" / "evaluation.json").exists()  # nothing written into it
    mine = _signed_in(klass, "student-02", "runs")  # back in B's own workspace
    assert _options(mine, "Run") == ["beta-run"]


def test_a_student_deletes_only_in_their_own_workspace(klass):
    from dpcore.runs import rename_run

    roots = klass["roots"]
    shutil.copytree(roots["student-01"] / "alpha-run", roots["student-01"] / "copy")
    rename_run(roots["student-01"] / "copy", "alpha-doomed")
    at = _signed_in(klass, "student-01", "runs")
    at.selectbox(key="runs.selected").select("alpha-doomed").run()
    at.checkbox(key="runs.sure.alpha-doomed").check().run()
    at.button(key="runs.delete").click().run()
    assert not at.exception
    assert not (roots["student-01"] / "alpha-doomed").exists()
    assert (roots["student-01"] / "alpha-run").is_dir() and (roots["student-02"] / "beta-run").is_dir()


def test_class_mode_never_autostarts_the_story(klass, monkeypatch):
    """Per student it would be one identical training each; the lecturer trains it once and publishes it."""
    import dpcore.ui.story_job as story_job

    calls = []
    monkeypatch.setattr(story_job, "autostart", lambda root: calls.append(root))
    _signed_in(klass, "student-01")
    assert calls == []
    monkeypatch.delenv("DPCORE_CLASS")  # the control: outside class mode the app does call it
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["dataset"] = "digits"
    at.run()
    assert len(calls) == 1


def _tree_bytes(root) -> dict:
    """Every file under `root` with its bytes (what a byte-identical check compares)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_click_of_a_student_in_the_published_view_leaves_published_byte_identical(klass, runs_dir):
    """Read-only means read-only: a student once added a usefulness score to the lecturer's published
    run (its ledger, so every student's ε changed). Each button of every page that opens runs is
    clicked in a fresh session, and published/ must not change by one byte."""
    from dpcore.classroom import publish_run

    published = runs_dir / "published"
    if not (published / "lecture-run").is_dir():
        publish_run(runs_dir, klass["roots"]["lecturer"] / "lecture-run")
    before = _tree_bytes(published)
    clicked = []
    for page in ("runs", "compare", "privacy", "story"):
        at = _signed_in(klass, "student-02", page, view="published")
        keys = [b.key for b in at.button if b.key and not b.disabled and b.key != "signin.out"]
        for key in keys:
            at = _signed_in(klass, "student-02", page, view="published")
            if key not in {b.key for b in at.button}:
                continue
            at.button(key=key).click().run()
            clicked.append(f"{page}:{key}")
            assert _tree_bytes(published) == before, f"{page}: the button {key} wrote into published/"
    assert "runs:runs.release_score" not in clicked  # the score offer is gone from a published run
    assert {"runs:runs.export.shareable", "privacy:privacy.audit"} <= set(clicked), clicked


def test_a_published_copy_refuses_every_write_whoever_asks(klass, runs_dir):
    """The library's own guard, below the pages: a score, an evaluation or a side file."""
    from dpcore.classroom import publish_run
    from dpcore.errors import RunError
    from dpcore.io import atomic_write_json
    from dpcore.runs.evaluation import save_evaluation

    published = runs_dir / "published" / "lecture-run"
    if not published.is_dir():
        publish_run(runs_dir, klass["roots"]["lecturer"] / "lecture-run")
    before = _tree_bytes(published)
    with pytest.raises(RunError, match="published run and read-only"):
        save_evaluation(published, utility={"mean": 0.5})
    with pytest.raises(RunError, match="published run and read-only"):
        atomic_write_json(published / "model" / "extra.json", {})
    assert _tree_bytes(published) == before


def test_a_student_is_never_shown_the_servers_folders(klass, runs_dir):
    at = _signed_in(klass, "student-02", "runs")
    sent = _everything(at)
    assert str(runs_dir).encode() not in sent and str(runs_dir.resolve()).encode() not in sent
    assert b"your workspace on the class" in sent
