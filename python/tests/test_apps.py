"""The apps launched from Python, checked against plain-Python references, under adversarial
schedules too; parameters and bad input as Python errors."""

import pathlib
import threading
import time

import coop
import numpy as np
import pytest
from references import bfs_levels, dijkstra, read_dimacs

GRAPHS = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "graphs"
ROME = GRAPHS / "rome99.gr"


def test_info_and_names():
    info = coop.info()
    assert info["version"] == coop.__version__
    assert info["cpu"]["built"] and info["cpu"]["hardware_threads"] >= 1
    assert coop.launchable()[:8] == ["color", "mis", "p-sssp", "bfs", "l-sssp", "octree", "game", "bc"]
    assert "gemm" in coop.launchable()
    assert {"graph", "gen", "source", "policy", "barrier", "groups", "threads"} <= set(coop.parameters("bfs"))


def test_cpu_runtime_has_the_slots_asked_for():
    rt = coop.Runtime(backend="cpu", cpu_slots=6)
    assert rt.backend == "cpu" and rt.capacity == 6
    assert "6 workgroup slots" in rt.device_name


def test_bfs_on_a_road_graph_equals_python_bfs(rt):
    n, arcs = read_dimacs(ROME)
    job = rt.launch_app("bfs", graph=ROME, source=5)
    job.wait()
    got = job.result()
    assert got.dtype == np.int64 and got.shape == (n,)
    assert got.tolist() == bfs_levels(n, arcs, 5)
    assert job.validate()["ok"]
    stats = job.stats()
    assert stats["max_groups"] >= 1 and stats["barriers"] > 0 and stats["end_ms"] >= stats["start_ms"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sssp_under_adversarial_schedules_equals_dijkstra(rt, seed):
    n, arcs = read_dimacs(ROME)
    job = rt.launch_app("l-sssp", graph=str(ROME), source=0, policy=f"adversarial:{seed}")
    job.wait()
    assert job.result().tolist() == dijkstra(n, arcs, 0)
    stats = job.stats()
    assert stats["kills"] + stats["forked_groups"] > 0, "the adversary changed nothing"


def test_every_form_of_bfs_on_a_grid(rt):
    rows, cols = 7, 9
    want = [r + c for r in range(rows) for c in range(cols)]  # levels from the corner
    for form in ["cooperative", "standalone", "multi-launch"]:
        job = rt.launch_app("bfs", gen=f"grid:{rows}x{cols}", form=form)
        job.wait()
        assert job.result().tolist() == want, form


def test_runs_per_kernel_repeats_the_run_inside_one_launch(rt):
    rows, cols = 7, 9
    want = [r + c for r in range(rows) for c in range(cols)]
    one = rt.launch_app("bfs", gen=f"grid:{rows}x{cols}")
    one.wait()
    job = rt.launch_app("bfs", gen=f"grid:{rows}x{cols}", runs_per_kernel=3, policy="adversarial:5")
    job.wait()
    assert job.result().tolist() == want
    # Three runs' barriers and two per restart: the restarts ran the app again from the start.
    assert job.stats()["barriers"] == 3 * one.stats()["barriers"] + 4
    # A work-stealing app restarts from its pools: two barriers per restart, none otherwise.
    octree = rt.launch_app("octree", particles=2000, max_leaf=16, runs_per_kernel=3,
                           policy="adversarial:6")
    octree.wait()
    assert octree.validate()["ok"], octree.validate()["detail"]
    assert octree.stats()["barriers"] == 4
    with pytest.raises(ValueError, match="multi-launch form has no such kernel"):
        rt.launch_app("bfs", gen="grid:3x3", form="multi-launch", runs_per_kernel=2)


def test_results_of_the_other_apps_are_valid(rt):
    color = rt.launch_app("color", graph=ROME, policy="adversarial:9")
    game = rt.launch_app("game", moves="3,3", depth=4)
    octree = rt.launch_app("octree", particles=2000, max_leaf=16)
    for job in (color, game, octree):
        job.wait()
        assert job.validate()["ok"], job.validate()["detail"]
    colours = color.result()
    _, arcs = read_dimacs(ROME)
    assert all(colours[u] != colours[v] for u, v, _ in arcs if u != v)  # a proper colouring
    assert isinstance(game.result(), int)
    leaves = octree.result()
    assert leaves.shape[1] == 5 and leaves[:, 4].sum() == 2000 and (leaves[:, 4] <= 16).all()


def test_gemm_equals_numpy(rt):
    job = rt.launch_app("gemm", m=256, n=384, k=64, passes=2, seed=7)
    job.wait()
    ops = job.inputs()
    want = ops["a"].astype(np.float64) @ ops["b"].astype(np.float64)
    assert np.array_equal(job.result(), want.astype(np.float32))
    assert job.validate()["ok"]
    assert job.stats()["tiles_done"] == 2 * 2 * 3


def test_wait_releases_the_gil():
    # The job runs until another Python thread stops it: wait() returns only if that thread
    # could run meanwhile (the passes bound the wait should the GIL be held).
    rt = coop.Runtime(backend="cpu", cpu_slots=4)
    job = rt.launch_app("gemm", m=256, n=256, k=32, passes=20000)
    ticks = []

    def stop_after_ticks():
        while len(ticks) < 20:
            ticks.append(1)
            time.sleep(0.001)
        job.stop()

    t = threading.Thread(target=stop_after_ticks)
    t.start()
    job.wait()
    t.join()
    assert job.validate()["ok"]
    assert job.stats()["tiles_done"] < 4 * 20000, "wait() held the GIL until the job ended"


def test_suspend_resume_and_cap():
    rt = coop.Runtime(backend="cpu", cpu_slots=8)
    rows = cols = 80
    job = rt.launch_app("bfs", gen=f"grid:{rows}x{cols}", groups=8, policy="cap:8")
    assert job.suspend() is True
    assert job.active_groups == 0
    m = job.resume(2)
    assert 1 <= m <= 2
    job.set_cap(3)
    job.wait()
    assert job.result().tolist() == [r + c for r in range(rows) for c in range(cols)]
    stats = job.stats()
    assert stats["suspends"] == 1
    assert 0 in [m for _, m in stats["timeline"]]  # M went to 0 while suspended
    assert stats["final_groups"] <= 3


def test_cancel_raises_job_cancelled():
    rt = coop.Runtime(backend="cpu", cpu_slots=4)
    job = rt.launch_app("gemm", m=512, n=512, k=256, passes=1000)
    assert job.cancel() is True
    with pytest.raises(coop.JobCancelled, match="cancelled"):
        job.wait()
    assert job.done()
    with pytest.raises(RuntimeError, match="no result"):
        job.result()


def test_stop_keeps_whole_products():
    rt = coop.Runtime(backend="cpu", cpu_slots=4)
    job = rt.launch_app("gemm", m=256, n=256, k=32, passes=100000)
    while job.stats()["tiles_done"] < 8:
        pass
    assert job.stop()
    job.wait()
    done = job.stats()["tiles_done"]
    assert 8 <= done < 4 * 100000
    assert job.validate()["ok"]


def test_bad_input_is_a_python_error(tmp_path):
    rt = coop.Runtime(backend="cpu", cpu_slots=4)
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 2\na 1 2 5\na 1 x 3\n")
    with pytest.raises(RuntimeError, match=r"bad\.gr:3: .*'x'"):
        rt.launch_app("bfs", graph=bad)
    with pytest.raises(ValueError, match="unknown app or kernel 'bfz'.*bfs"):
        rt.launch_app("bfz", gen="grid:3x3")
    with pytest.raises(TypeError, match="unexpected keyword 'sauce'"):
        rt.launch_app("bfs", gen="grid:3x3", sauce=1)
    with pytest.raises(ValueError, match="source 99 is not a vertex"):
        rt.launch_app("bfs", gen="grid:3x3", source=99)
    with pytest.raises(ValueError, match="exactly one of graph"):
        rt.launch_app("bfs")
    with pytest.raises(ValueError, match="groups: expected an int"):
        rt.launch_app("bfs", gen="grid:3x3", groups="four")
    with pytest.raises(ValueError, match="multiples of 128"):
        rt.launch_app("gemm", m=100)
    with pytest.raises(ValueError):
        rt.launch_app("bfs", gen="grid:3x3", policy="sometimes")
    with pytest.raises(ValueError, match="backend"):
        coop.Runtime(backend="tpu")
    job = rt.launch_app("color", gen="grid:3x3", form="multi-launch")
    job.wait()
    with pytest.raises(RuntimeError, match="multi-launch"):
        job.set_cap(1)


def test_shutdown_closes_the_runtime():
    rt = coop.Runtime(backend="cpu", cpu_slots=4)
    rt.shutdown()
    with pytest.raises(coop.RuntimeClosed):
        rt.launch_app("bfs", gen="grid:3x3")
    with pytest.raises(coop.Error):  # the base of coop's own errors
        rt.run(lambda t: None, groups=1)
