"""The class training queue: limits (per owner, in all), fair FIFO order, cancel (queued and
running), restart over the same folder (queued, finished and running-at-death jobs), hostile job
files refused; one job really run on a local Ray. The web server's side is a client over the same
files (it submits and asks to cancel; only the training service changes a job's state)."""
from __future__ import annotations

import json
import threading
import time

import pytest
from queue_kit import ManualExecutor

from dpcore.errors import DPCoreError
from dpcore.jobs.queue import Queue, QueueError
from dpcore.jobs.queue_worker import progress_path, run_queued
from dpcore.runs import Run

DATA = {"dataset": "digits", "split_seed": 0}
TINY = {"latent_dim": 4, "hidden": 16, "epochs": 1, "batch_size": 100, "epsilon": 2.0}


def cfg(**kw) -> dict:
    return {"model": "dp-vae", "params": {**TINY, **kw}, "data": DATA}


class ThreadExecutor(ManualExecutor):
    """Runs the real worker body (`run_queued`) in a thread: what a Ray worker runs."""

    def submit(self, spec):
        box: dict = {}
        t = threading.Thread(target=lambda: box.setdefault("r", run_queued(spec)), daemon=True)
        t.start()
        self.started.append(spec["job"])
        return t, box

    def poll(self, handle):
        t, box = handle
        return None if t.is_alive() else ("ok", box["r"])


def ws(tmp_path, owner):
    return tmp_path / "workspaces" / owner


def test_per_owner_and_global_limits_fair_fifo(tmp_path):
    ex = ManualExecutor()
    q = Queue(tmp_path, ex, per_owner=1, slots=2)
    a1 = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    a2 = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    b1 = q.submit([cfg()], ws(tmp_path, "bob"), "bob")
    c1 = q.submit([cfg()], ws(tmp_path, "carol"), "carol")
    q.tick()
    # alice's second job waits for her first; bob's goes ahead of it; two slots in all
    assert ex.started == [a1.id, b1.id]
    assert q.position(a2.id) == (1, 2) and q.position(c1.id) == (2, 2)
    ex.end(b1.id)
    q.tick()
    assert ex.started == [a1.id, b1.id, c1.id]  # alice is still at her limit: carol goes first
    assert q.get(b1.id).state == "done"
    ex.end(a1.id)
    q.tick()
    assert ex.started[-1] == a2.id and q.get(a2.id).state == "running"
    assert [j.id for j in q.jobs("alice")] == [a1.id, a2.id] and len(q.jobs()) == 4


def test_bad_submissions_are_refused_with_one_line(tmp_path):
    q = Queue(tmp_path, ManualExecutor(), max_waiting=2)
    with pytest.raises(QueueError, match="owner"):
        q.submit([cfg()], ws(tmp_path, "x"), "../etc")
    with pytest.raises(QueueError, match="workspace inside"):
        q.submit([cfg()], tmp_path.parent / "elsewhere", "alice")
    with pytest.raises(DPCoreError):
        q.submit([{"model": "no-such-model", "params": {}, "data": DATA}], ws(tmp_path, "alice"), "alice")
    q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    with pytest.raises(QueueError, match="waiting already"):
        q.submit([cfg()], ws(tmp_path, "alice"), "alice")


def test_cancel_queued_by_owner_or_lecturer_only(tmp_path):
    ex = ManualExecutor()
    q = Queue(tmp_path, ex, slots=1)
    a = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    b = q.submit([cfg()], ws(tmp_path, "bob"), "bob")
    c = q.submit([cfg()], ws(tmp_path, "carol"), "carol")
    with pytest.raises(QueueError, match="no such job"):
        q.cancel(b.id, "alice")  # a student cannot touch another's job
    assert q.cancel(b.id, "bob").state == "cancelled"
    assert q.cancel(c.id, "lecturer", lecturer=True).state == "cancelled"
    q.tick()
    assert ex.started == [a.id]  # cancelled jobs never start
    assert q.position(a.id) is None and q.waiting() == []


def test_cancel_running_stops_the_training_and_saves_it_stopped(tmp_path):
    q = Queue(tmp_path, ThreadExecutor(), slots=1)
    job = q.submit([cfg(epochs=400)], ws(tmp_path, "alice"), "alice")
    q.tick()
    end = time.time() + 60
    while not q.progress(job.id).get("step") and time.time() < end:
        time.sleep(0.1)
    assert q.progress(job.id).get("step"), "the job never reported progress"
    assert q.fraction(q.get(job.id)) > 0
    q.cancel(job.id, "alice")
    while q.get(job.id).state == "running" and time.time() < end:
        q.tick()
        time.sleep(0.1)
    job = q.get(job.id)
    assert job.state == "cancelled" and job.cancelled_by == "alice" and len(job.runs) == 1
    run = Run(ws(tmp_path, "alice") / job.runs[0])
    assert run.status()["status"] == "stopped" and run.has_model()
    assert not progress_path(q.dir, job.id).exists()  # the worker's files are cleaned up


def test_restart_keeps_queued_and_finished_and_queues_a_lost_job_again_once(tmp_path):
    ex = ManualExecutor()
    q = Queue(tmp_path, ex, slots=2)
    done = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    lost = q.submit([cfg()], ws(tmp_path, "bob"), "bob")
    q.tick()
    ex.end(done.id, runs=["r1"])
    q.tick()
    waiting = q.submit([cfg()], ws(tmp_path, "carol"), "carol", title="Story pair", kind="story")
    # bob's worker had started a run when the service died: its progress names the run, its
    # partial folder is left behind
    (ws(tmp_path, "bob") / ".r2.partial-abcd").mkdir(parents=True)
    progress_path(q.dir, lost.id).write_text(json.dumps({"runs": ["r2"], "step": 3}))
    del q  # the service dies

    q2 = Queue(tmp_path, ManualExecutor(), slots=2)
    assert q2.refused == []
    assert q2.get(done.id).state == "done" and q2.get(done.id).runs == ["r1"]
    assert q2.get(waiting.id).state == "queued" and q2.get(waiting.id).title == "Story pair"
    bob = q2.get(lost.id)  # lost with the service: queued again, ahead of carol (its old place)
    assert bob.state == "queued" and bob.attempts == 1 and bob.partials == ["r2.partial-abcd"]
    assert "queued again" in bob.error and not progress_path(q2.dir, lost.id).exists()
    q2.tick()
    assert q2.executor.started == [lost.id, waiting.id]
    assert q2.get(lost.id).attempts == 2
    del q2  # the service dies again while bob's second try runs: now it ends, interrupted

    q3 = Queue(tmp_path, ManualExecutor(), slots=2)
    bob = q3.get(lost.id)
    assert bob.state == "interrupted" and "kept as interrupted" in bob.error


def test_a_worker_ray_lost_is_run_again_but_a_failed_job_is_not(tmp_path):
    ex = ManualExecutor()
    q = Queue(tmp_path, ex, slots=2)
    a = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    b = q.submit([cfg()], ws(tmp_path, "bob"), "bob")
    q.tick()
    ex.results[a.id] = None
    ex.poll = lambda h: ({a.id: ("lost", "Ray lost the worker (NodeDiedError)"),
                          b.id: ("error", "Ray task ended without a result (RayTaskError)")}.get(h))
    q.tick()
    assert q.get(a.id).state == "running" and q.get(a.id).attempts == 2  # queued again, started again
    assert q.get(b.id).state == "failed" and "RayTaskError" in q.get(b.id).error


def test_the_web_servers_client_submits_reads_live_state_and_asks_to_cancel(tmp_path):
    """The web server holds a client: what it shows is the files' state now, however often the
    service changed it since (the Queue page once said "2 running" long after both had ended)."""
    ex = ManualExecutor()
    service = Queue(tmp_path, ex, slots=1)
    page = Queue(tmp_path)  # no executor: submits and reads only
    assert not page.dispatching
    a = page.submit([cfg()], ws(tmp_path, "alice"), "alice")
    b = page.submit([cfg()], ws(tmp_path, "bob"), "bob")
    with pytest.raises(QueueError, match="training service"):
        page.tick()
    service.tick()
    assert ex.started == [a.id]
    assert page.get(a.id).state == "running" and page.position(b.id) == (1, 1)
    page.cancel(b.id, "bob")  # a request: only the service changes the state
    assert page.get(b.id).state == "queued" and page.cancelling(b.id)
    with pytest.raises(QueueError, match="no such job"):
        page.cancel(a.id, "bob")
    service.tick()
    assert page.get(b.id).state == "cancelled" and page.get(b.id).cancelled_by == "bob"
    assert not page.cancelling(b.id)
    ex.end(a.id, runs=["r1"])
    service.tick()
    assert [(j.state, j.runs) for j in page.jobs()] == [("done", ["r1"]), ("cancelled", [])]
    assert ex.started == [a.id]  # the cancelled job never started


def test_the_heartbeat_tells_up_down_and_refused(tmp_path, monkeypatch):
    from dpcore.jobs import queue_files
    from dpcore.jobs.queue_files import service_status, write_heartbeat

    assert service_status(tmp_path) == queue_files.ServiceStatus(up=False)  # never started
    q = Queue(tmp_path, ManualExecutor(slots=3))
    q.beat()
    s = service_status(tmp_path)
    assert s.up and s.slots == 3 and Queue(tmp_path).slots == 3
    monkeypatch.setattr(queue_files.time, "time", lambda: s.seen + queue_files.BEAT_STALE_S + 1)
    assert not service_status(tmp_path).up and service_status(tmp_path).ago > queue_files.BEAT_STALE_S
    monkeypatch.undo()
    write_heartbeat(q.dir, slots=None, error="Ray unreachable")
    assert not service_status(tmp_path).up and service_status(tmp_path).error == "Ray unreachable"
    (q.dir / ".service.json").write_text('{"beat": "soon", "slots": -1, "error": 3}')
    assert service_status(tmp_path) == queue_files.ServiceStatus(up=False)


def test_restart_reads_a_result_the_worker_left(tmp_path):
    q = Queue(tmp_path, ManualExecutor(), slots=1)
    job = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    q.tick()
    (q.dir / f"{job.id}.result.json").write_text(json.dumps({"status": "done", "runs": ["r9"], "error": None}))
    q2 = Queue(tmp_path, ManualExecutor(), slots=1)
    assert q2.get(job.id).state == "done" and q2.get(job.id).runs == ["r9"]


@pytest.mark.parametrize("change", [
    {"root": "../../etc"}, {"root": "/etc"}, {"owner": "<script>"}, {"state": "owned"},
    {"kind": "shell"}, {"runs": ["../x"]}, {"configs": []}, {"extra": 1}, {"created": "yesterday"},
    {"configs": [{"model": "dp-vae", "params": {"epochs": "rm -rf"}, "data": DATA}]}, {"id": "j0"},
])
def test_hostile_or_corrupted_job_files_are_refused(tmp_path, change):
    q = Queue(tmp_path, ManualExecutor())
    job = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    path = q.dir / f"{job.id}.json"
    d = json.loads(path.read_text())
    d.update(change)
    path.write_text(json.dumps(d))
    q2 = Queue(tmp_path, ManualExecutor())
    assert q2.jobs() == [] and len(q2.refused) == 1


def test_a_truncated_job_file_is_refused_not_fatal(tmp_path):
    q = Queue(tmp_path, ManualExecutor())
    a = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    b = q.submit([cfg()], ws(tmp_path, "bob"), "bob")
    (q.dir / f"{a.id}.json").write_text('{"id": "j')
    q2 = Queue(tmp_path, ManualExecutor())
    assert [j.id for j in q2.jobs()] == [b.id] and "not JSON" in q2.refused[0]


def test_time_left_from_finished_jobs_before_start(tmp_path):
    ex = ManualExecutor()
    q = Queue(tmp_path, ex, slots=1)
    first = q.submit([cfg()], ws(tmp_path, "alice"), "alice", steps=10)
    nxt = q.submit([cfg()], ws(tmp_path, "bob"), "bob", steps=20)
    q.tick()
    assert q.seconds_left(nxt.id) is None  # nothing finished yet: no honest estimate
    time.sleep(0.05)
    ex.end(first.id)
    q.tick()
    took = q.get(first.id).seconds
    assert took and took > 0
    later = q.submit([cfg()], ws(tmp_path, "carol"), "carol", steps=20)
    # bob runs now (no progress yet: his estimate), carol waits behind him: 2 × (20 steps × took/10)
    assert q.seconds_left(later.id) == pytest.approx(2 * 20 * took / 10, rel=0.3)


def test_one_job_really_runs_on_local_ray(local_ray, tmp_path):
    from dpcore.jobs.queue_ray import RayExecutor

    q = Queue(tmp_path, RayExecutor(num_cpus=1))  # the session's Ray (2 CPUs) is running: it is used
    assert q.slots == 2  # one job per CPU the cluster reports
    job = q.submit([cfg()], ws(tmp_path, "alice"), "alice")
    end = time.time() + 90
    while not q.get(job.id).ended and time.time() < end:
        q.tick()
        time.sleep(0.2)
    job = q.get(job.id)
    assert job.state == "done", job.error
    assert [Run(ws(tmp_path, "alice") / r).status()["status"] for r in job.runs] == ["done"]


def test_one_dispatcher_per_queue_folder(tmp_path):
    first = Queue(tmp_path, ManualExecutor()).start_dispatcher()
    try:
        with pytest.raises(QueueError, match="another training service"):
            Queue(tmp_path, ManualExecutor()).start_dispatcher()
    finally:
        first.close()
    Queue(tmp_path, ManualExecutor()).start_dispatcher().close()  # free again once the first closed


def test_a_second_process_does_not_touch_a_live_services_jobs(tmp_path):
    server = Queue(tmp_path, ManualExecutor(), slots=1)
    job = server.submit([cfg()], ws(tmp_path, "alice"), "alice")
    server.tick()
    server.start_dispatcher(every=60)  # holds the dispatcher's lock, as a running service does
    try:
        assert Queue(tmp_path).get(job.id).state == "running"  # a page
        assert Queue(tmp_path, ManualExecutor()).get(job.id).state == "running"  # a second service
    finally:
        server.close()
    again = Queue(tmp_path, ManualExecutor()).get(job.id)  # the service is gone: its job runs again
    assert again.state == "queued" and again.attempts == 1


def test_slots_from_the_environment_or_the_executor(tmp_path, monkeypatch):
    monkeypatch.delenv("DPCORE_QUEUE_SLOTS", raising=False)
    assert Queue(tmp_path, ManualExecutor(slots=3)).slots == 3  # what Ray reports
    monkeypatch.setenv("DPCORE_QUEUE_SLOTS", "7")
    assert Queue(tmp_path, ManualExecutor(slots=3)).slots == 7
    monkeypatch.setenv("DPCORE_QUEUE_SLOTS", "many")
    with pytest.raises(QueueError, match="DPCORE_QUEUE_SLOTS"):
        Queue(tmp_path, ManualExecutor())
