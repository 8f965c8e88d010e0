"""Many path checks or plans fanned out over a Dask cluster, one task per check or plan.

Why Dask (``dask.distributed``) and not Ray: it is pure Python and installs from PyPI in
seconds, its ``LocalCluster`` runs the same code on one machine as on many (SSH,
Kubernetes, SLURM through ``dask-jobqueue``), and its scheduler re-runs the tasks of a
worker that dies. Ray would do the job too, but brings a much larger runtime (its own
object store and node daemons) that a batch of independent checks does not need.

Each worker process loads a problem's meshes and builds their trees once, the first time
a task needs them, and keeps them for its later tasks (:func:`_problem`). Results come
back in the order of the inputs; a task that fails (a missing or malformed file, a state
in collision) gives a :class:`TaskResult` with ``ok=False`` and the error's message,
without stopping the others.

Example::

    from dask.distributed import LocalCluster
    import haptics.batch

    jobs = [("Twistycool.cfg", "run-%d.path" % i) for i in range(200)]
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster:
        results = haptics.batch.check(jobs, cluster=cluster)
    failed = [r for r in results if not r.ok]
"""

from __future__ import annotations

import functools
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import haptics

__all__ = ["TaskResult", "check", "plan", "task_index"]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TaskResult:
    """One task's outcome: its input, and its report (``ok``) or its error."""

    index: int
    """The input's position."""
    input: Any
    ok: bool
    report: Optional[Dict[str, Any]] = None
    """``CheckReport.to_dict()`` or ``PlanResult.report``."""
    path: Any = None
    """For a plan: the N x 7 path."""
    error: Optional[str] = None
    """The exception's class and message when the task failed."""
    worker: Optional[str] = field(default=None, compare=False)
    seconds: float = field(default=0.0, compare=False)


@functools.lru_cache(maxsize=64)
def _problem(cfg: str, mtime_ns: int) -> haptics.Problem:
    """The problem of ``cfg``, loaded once per worker process (and again only when the
    file changes: its modification time is part of the key)."""
    return haptics.Problem.from_cfg(cfg)


def _load(cfg: PathLike) -> haptics.Problem:
    c = os.fspath(cfg)
    try:
        mtime = os.stat(c).st_mtime_ns
    except OSError:
        # Not cached: the loader raises its typed error (MissingFileError, ...).
        return haptics.Problem.from_cfg(c)
    return _problem(c, mtime)


def task_index(key: str) -> int:
    """The input position of a task key (``check-17-<batch>``)."""
    return int(str(key).split("-")[1])


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def _check_task(index: int, job: Tuple[PathLike, Any], options: Dict[str, Any]) -> TaskResult:
    t0 = time.perf_counter()
    try:
        cfg, path = job
        report = haptics.check(_load(cfg), path, **options)
        return TaskResult(index, job, True, report=report.to_dict(), worker=_worker_name(),
                          seconds=time.perf_counter() - t0)
    except Exception as e:  # every failure is reported by its input, the others go on
        return TaskResult(index, job, False, error=f"{type(e).__name__}: {e}",
                          worker=_worker_name(), seconds=time.perf_counter() - t0)


def _plan_task(index: int, job: Any, options: Dict[str, Any]) -> TaskResult:
    t0 = time.perf_counter()
    try:
        if isinstance(job, (str, os.PathLike)):
            cfg, extra = job, {}
        else:
            cfg, extra = job
        result = haptics.plan(_load(cfg), **{**options, **dict(extra)})
        return TaskResult(index, job, True, report=result.report, path=result.path,
                          worker=_worker_name(), seconds=time.perf_counter() - t0)
    except Exception as e:
        return TaskResult(index, job, False, error=f"{type(e).__name__}: {e}",
                          worker=_worker_name(), seconds=time.perf_counter() - t0)


def _client(cluster: Any) -> Tuple[Any, bool]:
    """A client of ``cluster``: a ``distributed.Client``, a cluster object, a scheduler
    address, or None for a local cluster of two worker processes. The second value says
    whether the client (and its cluster) belong to this call."""
    import distributed

    # dask.distributed has no type annotations: its calls are typed Any here.
    Client: Any = distributed.Client
    LocalCluster: Any = distributed.LocalCluster
    if isinstance(cluster, Client):
        return cluster, False
    if cluster is None:
        local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                             dashboard_address=":0")
        return Client(local), True
    return Client(cluster), True


def _run(task: Any, jobs: Sequence[Any], options: Dict[str, Any], cluster: Any,
         progress: bool) -> List[TaskResult]:
    import distributed

    as_completed: Any = distributed.as_completed
    client, owned = _client(cluster)
    try:
        # Keys name the kind and the input's position, so the dashboard (and a test) can
        # tell which input a task is.
        batch = uuid.uuid4().hex[:12]
        kind = task.__name__[1:-5]
        # One map call: the tasks go to the scheduler in one message, not one each.
        futures = client.map(task, range(len(jobs)), jobs, [options] * len(jobs), pure=False,
                             key=[f"{kind}-{i}-{batch}" for i in range(len(jobs))])
        results: List[Optional[TaskResult]] = [None] * len(jobs)
        failed = 0
        for done, future in enumerate(as_completed(futures), start=1):
            r: TaskResult = future.result()
            results[r.index] = r
            failed += 0 if r.ok else 1
            if progress:
                print(f"\r{kind}: {done}/{len(jobs)} done, {failed} failed",
                      end="", file=sys.stderr, flush=True)
        if progress:
            print(file=sys.stderr)
        return [r for r in results if r is not None]
    finally:
        if owned:
            cluster_obj = client.cluster
            client.close()
            if cluster_obj is not None and cluster is None:
                cluster_obj.close()


def check(jobs: Iterable[Tuple[PathLike, Any]], cluster: Any = None, *,
          progress: bool = True, **options: Any) -> List[TaskResult]:
    """Checks each ``(cfg, path)`` (a ``.path`` file or an N x 7 array) on the cluster,
    one task per check, with :func:`haptics.check`'s ``options``; the results in input
    order."""
    return _run(_check_task, list(jobs), options, cluster, progress)


def plan(jobs: Iterable[Any], cluster: Any = None, *, progress: bool = True,
         **options: Any) -> List[TaskResult]:
    """Plans each job, a ``cfg`` or ``(cfg, {option: value})`` (a seed, a time limit), on
    the cluster with :func:`haptics.plan`'s ``options``; the results in input order."""
    return _run(_plan_task, list(jobs), options, cluster, progress)
