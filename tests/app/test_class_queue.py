"""Class mode's queue on the pages: the Train button queues a job for the signed-in student (in
their workspace, never trained in the server), the page shows its place; the Queue page lists a
student's own jobs only, the lecturer's every job with a cancel that works. Sign-in is patched
in (`current_member`): tests/app/test_class_mode.py covers signing in itself."""
from __future__ import annotations

import html
from pathlib import Path

import pytest
from queue_kit import ManualExecutor

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


CHEAP = {"name": "scrypt", "n": 2**10, "r": 8, "p": 1}  # a fast key derivation: tests only
ALIAS = {"alice": "student-01", "bob": "student-02", "carol": "student-03", "lecturer": "lecturer"}


@pytest.fixture
def classroom(runs_dir, monkeypatch, tmp_path):
    """A class of three (alice, bob, carol) and a lecturer; `who["m"]` names the member whose
    session `_page` opens (signed in through the session record the sign-in form writes)."""
    import json

    from dpcore.classroom.classfile import create_class, parse_class
    from dpcore.ui import class_queue

    doc, _ = create_class("queue class", 3, kdf=CHEAP)
    (tmp_path / "class.json").write_text(json.dumps(doc))
    monkeypatch.setenv("DPCORE_CLASS", str(tmp_path / "class.json"))
    cf = parse_class(doc)
    who = {"m": "alice", "cf": cf, "members": {m.name: m for m in cf.members}}
    ex = ManualExecutor(slots=1)
    q = class_queue.class_queue(executor=ex)
    q.close()  # the test ticks the queue itself
    yield who, q, ex
    class_queue.forget_queues()


def _page(page: str, who: dict | None = None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    if who is not None:
        from dpcore.classroom.signin import new_session

        at.session_state["dpcore.member"] = new_session(who["cf"], who["members"][ALIAS[who["m"]]])
    at.query_params["dataset"] = "digits"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at) -> str:
    return html.unescape(" ".join([p.proto.text for p in at.get("progress")] + [c.value for c in at.caption]
                    + [m.value for m in at.markdown]))


def test_train_in_class_mode_queues_for_the_student_and_the_lecturer_cancels(classroom, runs_dir):
    who, q, ex = classroom
    q.submit([{"model": "pgm", "params": {"epochs": 1}, "data": {"dataset": "digits"}}],
             runs_dir / "workspaces" / "student-02", "student-02")  # bob's job holds the one slot
    q.tick()
    at = _page("app_pages/train.py", who)
    at.button(key="train.start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    mine = q.jobs("student-01")
    assert len(mine) == 1 and mine[0].state == "queued" and mine[0].kind == "training"
    assert mine[0].root == "workspaces/student-01" and mine[0].steps  # the preview's steps, for the estimate
    assert "queued, position 1 of 1" in _texts(at)
    assert at.button(key="train.start").disabled  # one job at a time per session
    assert len(ex.started) == 1  # nothing of alice's started: bob's job holds the slot

    queue_page = _page("app_pages/queue.py", who)  # alice sees her job only
    assert "student-02" not in _texts(queue_page)
    assert [b.key for b in queue_page.button if b.key.startswith("queue.")] == [f"queue.cancel.{mine[0].id}"]

    who["m"] = "lecturer"
    lect = _page("app_pages/queue.py", who)
    assert {f"queue.cancel.{j.id}" for j in q.jobs()} == {b.key for b in lect.button if b.key.startswith("queue.")}
    lect.button(key=f"queue.cancel.{mine[0].id}").click().run()
    assert q.get(mine[0].id).state == "cancelled" and q.get(mine[0].id).cancelled_by == "lecturer"


def test_outside_class_mode_no_queue_is_made(runs_dir):
    from dpcore.ui import class_queue

    at = _page("app_pages/train.py")  # the single-user app: no member, no queue, no Ray
    assert not class_queue._QUEUES and at.button(key="train.start")


def test_story_pair_and_eps_sweep_are_queued_jobs_in_class_mode(classroom, runs_dir):
    who, q, ex = classroom
    who["m"] = "carol"
    story = _page("app_pages/story.py", who)
    story.button(key="story.train").click().run()
    assert not story.exception, [e.value for e in story.exception]
    runs = _page("app_pages/runs.py", who)
    runs.multiselect(key="runs.sweep_eps").set_value([1.0, 5.0]).run()
    runs.button(key="runs.sweep_start").click().run()
    assert not runs.exception, [e.value for e in runs.exception]
    jobs = {j.kind: j for j in q.jobs("student-03")}
    assert set(jobs) == {"story", "eps-sweep"} and all(j.root == "workspaces/student-03" for j in jobs.values())
    assert [c["model"] for c in jobs["story"].configs] == ["p3gm", "pgm"]
    assert sorted(c["params"]["epsilon"] for c in jobs["eps-sweep"].configs) == [1.0, 5.0]
    assert "position" in _texts(runs) and runs.button(key="runs.sweep_start").disabled
    assert not list((runs_dir / "workspaces" / "student-03").glob("*/config.json"))  # nothing trained in here


def test_class_mode_without_ray_says_so_in_one_line(monkeypatch):
    import sys

    from dpcore.errors import DPCoreError

    monkeypatch.undo()  # the real executor (conftest stands one in for page tests)
    from dpcore.jobs.queue_ray import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as when it is not installed
    with pytest.raises(DPCoreError, match="not installed") as exc:
        RayExecutor()
    assert "\n" not in str(exc.value)


def test_the_web_server_never_starts_ray_it_only_reads_and_writes_the_queue_files(runs_dir, monkeypatch):
    """Class mode's pages hold a client over the queue's files: no executor, no Ray in the web
    process (Ray dying took the whole server down when it ran inside it)."""
    from dpcore.jobs import queue_ray
    from dpcore.ui import class_queue

    tries = []
    monkeypatch.setattr(queue_ray, "RayExecutor", lambda *a, **k: tries.append(1))
    class_queue.forget_queues()
    try:
        q = class_queue.class_queue()
        assert not q.dispatching and tries == []
    finally:
        class_queue.forget_queues()


def test_the_queue_page_shows_live_counts_in_queue_order_results_and_the_services_state(classroom, tmp_path,
                                                                                        monkeypatch):
    """The real set-up: the pages' client and a training service apart (here ticked by the test)."""
    from dpcore.jobs.queue import Queue
    from dpcore.jobs.queue_files import write_heartbeat
    from dpcore.ui import class_queue

    who, _, _ = classroom
    runs_dir = tmp_path / "fresh-runs"  # a queue of this test's jobs only
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(runs_dir))
    class_queue.forget_queues()  # the pages get a client; the "service" below dispatches
    ex = ManualExecutor(slots=1)
    service = Queue(runs_dir, ex)
    job = {"model": "pgm", "params": {"epochs": 1}, "data": {"dataset": "digits"}}
    for name in ("student-02", "student-03", "student-01", "student-01"):
        service.submit([job], runs_dir / "workspaces" / name, name, title=f"T {name}")
    service.tick()  # student-02's job runs (one slot); the rest wait
    who["m"] = "lecturer"
    lect = _page("app_pages/queue.py", who)
    text = _texts(lect) + " ".join(w.value for w in lect.warning)
    assert "training service is not running" in text  # no heartbeat yet: said, not hidden
    assert "1 running, 3 waiting" in text
    places = [text.index(f"position {i} of 3") for i in (1, 2, 3)]
    assert places == sorted(places)  # position 1 above position 2 above position 3
    first = service.jobs()[0]
    ex.results[first.id] = {"status": "done", "runs": ["pgm-digits-r1"], "error": None}
    service.tick()
    write_heartbeat(service.dir, slots=1)
    lect = _page("app_pages/queue.py", who)
    text = _texts(lect)
    assert "1 running, 2 waiting" in text and not lect.warning  # live counts; the service is up
    assert "pgm-digits-r1" in text and lect.button(key=f"queue.open.{first.id}")
    lect.button(key=f"queue.open.{first.id}").click().run()  # the lecturer opens a student's result
    assert not lect.exception, [e.value for e in lect.exception]
    assert lect.session_state["dpcore.view"] == first.owner and lect.session_state["compare.run"] == "pgm-digits-r1"
    assert html.unescape(lect.title[0].value) == "Compare"
    class_queue.forget_queues()


def test_a_student_with_no_runs_lands_on_what_the_lecturer_published(classroom, tmp_path, monkeypatch):
    from dpcore.ui import workspace

    who, _, _ = classroom
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(tmp_path / "base"))
    alice, lecturer = who["members"]["student-01"], who["members"]["lecturer"]
    assert workspace.first_view(alice) == workspace.OWN  # nothing published yet
    monkeypatch.setattr("dpcore.runs.store.list_runs", lambda root: ["a run"] if root.name == "published" else [])
    (tmp_path / "base" / "published").mkdir(parents=True, exist_ok=True)
    assert workspace.first_view(alice) == workspace.PUBLISHED
    assert workspace.first_view(lecturer) == workspace.OWN  # the lecturer starts in their own workspace


def test_after_a_web_server_restart_the_student_finds_their_job_again(classroom, runs_dir):
    """The session that queued it is gone (a restart signs everyone out); the queue is not: the
    Train page shows the job and does not offer a second one."""
    who, q, ex = classroom
    job = q.submit([{"model": "pgm", "params": {"epochs": 1}, "data": {"dataset": "digits"}}],
                   runs_dir / "workspaces" / "student-01", "student-01", title="PGM training")
    who["m"] = "alice"
    at = _page("app_pages/train.py", who)  # a fresh session: nothing of the job in it
    assert at.button(key="train.start").disabled
    assert "PGM training" in _texts(at) and at.session_state["dpcore.queued.train"] == job.id
    q.cancel(job.id, "student-01")
