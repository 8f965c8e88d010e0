#!/usr/bin/env python3
"""200 path checks, serially in one process and on a local Dask cluster of two worker
processes (haptics.batch.check), and the cluster's overhead per task. By hand, outside
the test suite, after ``pip install "./python[batch]"``:

    python benches/python/batch_checks.py [N]

The jobs cycle through the four paths of the repository's check fixtures (the slot's two
and the alpha puzzle's two). Serial: one process, each problem loaded once, ``haptics.check``
per job. Cluster: ``LocalCluster(n_workers=2, threads_per_worker=1)``, started before the
clock, then ``haptics.batch.check`` (one task per check, problems loaded once per worker;
a first batch warms the workers' caches and is not timed). The overhead per task is
measured on N trivial checks (a two-state path through the slot, a few microseconds of
work): the cluster's wall time times two workers over N, less the serial time per check.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from dask.distributed import Client, LocalCluster

import haptics
import haptics.batch

ROOT = Path(__file__).resolve().parents[2]
SLOT = ROOT / "assets/check/slot/slot.cfg"
ALPHA = ROOT / "assets/check/alpha/alpha.cfg"
PATHS = [(SLOT, SLOT.parent / "pass.path"), (SLOT, SLOT.parent / "collide.path"),
         (ALPHA, ALPHA.parent / "solution.path"), (ALPHA, ALPHA.parent / "perturbed.path")]


def serial(jobs):
    problems = {cfg: haptics.Problem.from_cfg(cfg) for cfg in {c for c, _ in jobs}}
    t0 = time.perf_counter()
    for cfg, path in jobs:
        haptics.check(problems[cfg], path)
    return time.perf_counter() - t0


def on_cluster(client, jobs):
    haptics.batch.check(jobs[:8], cluster=client, progress=False)  # warm the caches
    t0 = time.perf_counter()
    results = haptics.batch.check(jobs, cluster=client, progress=False)
    wall = time.perf_counter() - t0
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return wall


def main(n: int) -> None:
    jobs = [PATHS[i % len(PATHS)] for i in range(n)]
    trivial_path = haptics.read_path(SLOT.parent / "pass.path")[:2]
    trivial = [(SLOT, trivial_path)] * n
    t_serial = serial(jobs)
    t_trivial_serial = serial(trivial)
    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        start = time.perf_counter() - t0
        t_cluster = on_cluster(client, jobs)
        t_trivial = [on_cluster(client, trivial) for _ in range(3)]
    per_task = statistics.median(t_trivial) * 2 / n - t_trivial_serial / n
    print(f"{n} checks (the 4 fixture paths, cycled):")
    print(f"  serial, one process:        {t_serial:.2f} s ({1e3 * t_serial / n:.1f} ms per check)")
    print(f"  LocalCluster, 2 workers:    {t_cluster:.2f} s ({t_serial / t_cluster:.2f}x; "
          f"cluster start {start:.2f} s, not included)")
    print(f"  overhead per task:          {1e3 * per_task:.2f} ms (median of 3 batches of {n} "
          f"trivial checks: {statistics.median(t_trivial):.2f} s on the cluster, "
          f"{t_trivial_serial:.3f} s serial)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
