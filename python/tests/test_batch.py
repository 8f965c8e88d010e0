"""haptics.batch on a local Dask cluster of two worker processes: results equal to the
serial ones and in input order, a bad input failing alone with its message, problems
loaded once per worker, and the tasks of a worker killed mid-run re-run elsewhere."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

# dask is a test requirement (requirements-test.txt): a missing one fails, never skips.
from dask.distributed import Client, LocalCluster

import haptics
import haptics.batch
from conftest import ASSETS, without_timings

SLOT = ASSETS / "check" / "slot" / "slot.cfg"
ALPHA = ASSETS / "check" / "alpha" / "alpha.cfg"
JOBS = [
    (SLOT, SLOT.parent / "pass.path"),
    (SLOT, SLOT.parent / "collide.path"),
    (ALPHA, ALPHA.parent / "solution.path"),
    (ALPHA, ALPHA.parent / "perturbed.path"),
]


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


def serial(jobs):
    return [without_timings(haptics.check(haptics.Problem.from_cfg(cfg), path).to_dict())
            for cfg, path in jobs]


def test_results_equal_the_serial_ones_in_input_order(client, capsys):
    jobs = JOBS * 3
    results = haptics.batch.check(jobs, cluster=client)
    assert [r.index for r in results] == list(range(len(jobs)))
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert [without_timings(r.report) for r in results] == serial(jobs)
    assert [r.input for r in results] == jobs
    # Both workers took part, and progress was shown.
    assert len({r.worker for r in results}) == 2
    assert f"check: {len(jobs)}/{len(jobs)} done, 0 failed" in capsys.readouterr().err


def test_each_worker_loads_a_problem_once(client):
    client.run(haptics.batch._problem.cache_clear)
    jobs = JOBS * 4
    assert all(r.ok for r in haptics.batch.check(jobs, cluster=client, progress=False))
    misses = client.run(lambda: haptics.batch._problem.cache_info().misses)
    # Two problems: each worker loaded each at most once, not once per task (16 tasks).
    assert len(misses) == 2 and all(m <= 2 for m in misses.values()), misses


def test_a_bad_input_fails_alone_with_its_message(client, tmp_path):
    bad_path = tmp_path / "bad.path"
    bad_path.write_text("0 0 0 0 0 0 1\n1 2 three 0 0 0 1\n")
    missing = tmp_path / "missing.cfg"
    jobs = [JOBS[0], (missing, JOBS[0][1]), (SLOT, bad_path), JOBS[1]]
    results = haptics.batch.check(jobs, cluster=client, progress=False)
    assert [r.ok for r in results] == [True, False, False, True]
    assert results[1].error.startswith("MissingFileError") and str(missing) in results[1].error
    assert results[2].error.startswith("FormatError") and f"{bad_path}:2" in results[2].error
    assert results[1].input == jobs[1] and results[2].input == jobs[2]
    assert [without_timings(results[i].report) for i in (0, 3)] == serial([jobs[0], jobs[3]])


def test_plans_equal_the_serial_ones():
    jobs = [(SLOT, {"seed": s}) for s in (1, 2, 3)] + [str(SLOT)]
    # cluster=None: the call starts (and stops) its own local cluster of two workers.
    results = haptics.batch.plan(jobs, progress=False)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    for r, (cfg, opts) in zip(results, [*jobs[:3], (SLOT, {})]):
        expect = haptics.plan(haptics.Problem.from_cfg(cfg), **opts)
        assert (r.path == expect.path).all()
        assert without_timings(r.report) == without_timings(expect.report)


def test_a_killed_workers_tasks_are_rerun(client):
    jobs = [JOBS[2], JOBS[3]] * 5  # the alpha puzzle: about a second a check, caught running
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    killed = {}

    def kill_when_busy() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = client.processing().get(victim, ())
            if busy and client.run(lambda: True, workers=[victim]):
                killed["tasks"] = [haptics.batch.task_index(k) for k in busy]
                os.kill(pids[victim], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    results = haptics.batch.check(jobs, cluster=client, progress=False)
    killer.join()
    assert killed.get("tasks"), "the worker was never caught running a task"
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert [without_timings(r.report) for r in results] == serial(jobs)
    # The tasks the killed worker held finished on another worker.
    for i in killed["tasks"]:
        assert results[i].worker != victim, (i, results[i].worker)
