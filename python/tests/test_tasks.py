"""Tasks from Python: the with-statement, submit and run; capacity really taken from the job;
errors of the task's work reach the caller."""

import gc
import threading
import time

import coop
import numpy as np
import pytest


def long_gemm(rt):
    """A cooperative job that runs until stopped (the background of the co-location story)."""
    return rt.launch_app("gemm", m=256, n=256, k=64, passes=10**7)


def stop_and_check(job):
    """Stops the job once it has made one whole product, and checks it."""
    while job.stats()["tiles_done"] < job.stats()["tiles_per_product"] and not job.done():
        time.sleep(0.001)
    job.stop()
    job.wait()
    assert job.validate()["ok"], job.validate()["detail"]


def test_task_scope_takes_workgroups_from_the_job(rt):
    job = long_gemm(rt)
    n = job.max_groups
    k = max(1, n // 2)
    with rt.task(groups=k) as t:
        assert t.groups == k
        assert job.active_groups <= n - k  # the job gave them up
        if rt.backend == "cuda":
            assert isinstance(t.stream, int) and t.stream != 0
        else:
            assert t.stream is None
    record = None
    for r in rt.task_records():
        record = r
    assert record["groups"] == k and record["gather_ms"] >= 0 and record["end_ms"] >= record["start_ms"]
    stop_and_check(job)


def test_stats_of_a_running_job(rt):
    job = long_gemm(rt)
    while job.stats()["tiles_done"] < 8:  # read from the device while the job runs
        pass
    s = job.stats()
    assert s["end_ms"] == 0 and s["max_groups"] == job.max_groups
    stop_and_check(job)
    assert job.stats()["end_ms"] >= job.stats()["start_ms"]


def test_a_job_dropped_while_another_runs(rt):
    # Freeing a job's memory waits for every kernel on a GPU; beside a running cooperative job
    # coop defers the free (it would never return), and the memory goes when no job runs.
    first = long_gemm(rt)
    stop_and_check(first)
    second = long_gemm(rt)
    del first
    gc.collect()
    stop_and_check(second)


def test_scope_record_and_fraction(rt):
    job = long_gemm(rt)
    scope = rt.task(fraction=1.0, priority=2)
    assert scope.record is None
    with scope as t:
        assert t.groups >= 1
        assert job.active_groups <= 1  # all but workgroup 0
    assert scope.record["priority"] == 2
    stop_and_check(job)


def test_submit_runs_python_work_on_a_runtime_thread(rt):
    job = long_gemm(rt)
    seen = {}

    def work(task):
        seen["thread"] = threading.get_ident()
        seen["groups"] = task.groups
        seen["product"] = int(np.arange(10).sum())

    handle = rt.submit(work, groups=1)
    handle.wait()
    assert handle.done()
    assert seen == {"thread": seen["thread"], "groups": 1, "product": 45}
    assert seen["thread"] != threading.get_ident()
    assert handle.record()["groups"] == 1
    stop_and_check(job)


def test_many_submitted_tasks_all_run(rt):
    job = long_gemm(rt)
    count = []
    handles = [rt.submit(lambda t: count.append(t.groups), groups=1 + i % 2) for i in range(20)]
    for h in handles:
        h.wait()
    assert sorted(count) == sorted(1 + i % 2 for i in range(20))
    stop_and_check(job)


def test_run_blocks_and_returns_the_record(rt):
    job = long_gemm(rt)
    calls = []
    record = rt.run(lambda t: calls.append(t.backend), groups=1)
    assert calls == [rt.backend]
    assert record["groups"] == 1 and record["run_ms"] >= 0
    assert rt.run(2, lambda t: calls.append(t.groups))["groups"] == 2  # size first
    assert calls[-1] == 2
    stop_and_check(job)


def test_errors_of_the_work_reach_the_caller(rt):
    def fail(task):
        raise KeyError("from the task")

    with pytest.raises(KeyError, match="from the task"):
        rt.submit(fail, groups=1).wait()
    with pytest.raises(KeyError):
        rt.run(fail, groups=1)
    with pytest.raises(ZeroDivisionError):
        with rt.task(groups=1):
            1 / 0
    # the capacity came back each time: a task that needs all of it still runs
    rt.run(lambda t: None, fraction=1.0)


def test_impossible_task_sizes_are_refused(rt):
    with pytest.raises(ValueError, match="exactly one of groups"):
        rt.task()
    with pytest.raises(ValueError, match="exactly one of groups"):
        rt.submit(lambda t: None, groups=1, fraction=0.5)
    with pytest.raises(ValueError):
        rt.run(lambda t: None, groups=10**9)
    with pytest.raises(ValueError):
        rt.run(lambda t: None, fraction=1.5)


def test_gather_deadline_fails_as_gather_timeout():
    rt = coop.Runtime(backend="cpu", cpu_slots=4, gather_deadline_s=0.2, gather_deadline_fails=True)
    # a plain persistent job (standalone form: one long product) gives no workgroup back until
    # it ends
    job = rt.launch_app("gemm", m=1024, n=1024, k=4096, form="standalone")
    t0 = time.monotonic()
    with pytest.raises(coop.GatherTimeout):
        with rt.task(groups=1):
            pass
    assert time.monotonic() - t0 < 5
    job.stop()
    job.wait()


def test_task_launch_is_an_option_of_the_runtime():
    with coop.Runtime(backend="cpu", cpu_slots=4, task_launch="at_request") as rt:
        assert rt.task_launch == "at_request"
        rt.set_task_launch("after_gather")
        assert rt.task_launch == "after_gather"
        with pytest.raises(ValueError):
            rt.set_task_launch("soon")
        # the CPU backend runs tasks once gathered, whatever the setting
        rt.set_task_launch("at_request")
        job = rt.launch_app("gemm", m=256, n=256, k=256, form="cooperative")
        rec = rt.run(1, lambda t: None)
        assert rec["groups"] == 1
        job.wait()
    with pytest.raises(ValueError):
        coop.Runtime(backend="cpu", task_launch="later")
