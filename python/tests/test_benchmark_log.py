"""OMPL's benchmark log, from ``haptics plan --benchmark`` and ``haptics.benchmark``, read
by OMPL's own statistics script (Debian's ``ompl-demos``: ``ompl_benchmark_statistics``,
the input of Planner Arena) into its SQLite database, and read back."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

import pytest

import haptics
from conftest import ASSETS, run_cli

SLOT = ASSETS / "check" / "slot" / "slot.cfg"
RUNS = 3


def statistics_script() -> str:
    """OMPL's script: ``$OMPL_BENCHMARK_STATISTICS``, else on the PATH. Missing, the test
    fails (``.ci/run`` installs it); it never skips."""
    env = os.environ.get("OMPL_BENCHMARK_STATISTICS")
    found = env or shutil.which("ompl_benchmark_statistics") or shutil.which(
        "ompl_benchmark_statistics.py")
    if not found:
        pytest.fail("OMPL's ompl_benchmark_statistics was not found: install Debian's "
                    "ompl-demos (.ci/run does) or set OMPL_BENCHMARK_STATISTICS")
    return found


def log_runs(text: str):
    """The per-run rows of a log, as the script splits them (``v; v; ...``)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.endswith(" runs") and
                 not l.endswith("per planner")) + 1
    rows = []
    for l in lines[start:]:
        if l == ".":
            break
        rows.append([v.strip() for v in l.split(";") if v.strip()])
    return rows


def test_ompls_script_reads_both_logs_into_its_database(cli, tmp_path):
    cli_log, py_log, db = tmp_path / "cli.log", tmp_path / "py.log", tmp_path / "b.db"
    run_cli(cli, ["plan", str(SLOT), "--benchmark", str(RUNS), "--seed", "1",
                  "--out-log", str(cli_log)], tmp_path)
    result = haptics.benchmark(haptics.Problem.from_cfg(SLOT), RUNS, seed=1, out_log=py_log)
    assert py_log.read_text() == result.log
    r = subprocess.run([statistics_script(), str(cli_log), str(py_log), "-d", str(db)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(db)
    experiments = con.execute("SELECT id, name, runcount, version, seed FROM experiments "
                              "ORDER BY id").fetchall()
    assert [(e[1], e[2], e[4]) for e in experiments] == [("slot", RUNS, "1")] * 2
    assert all(e[3].startswith("haptics ") for e in experiments), experiments
    planners = con.execute("SELECT DISTINCT name FROM plannerConfigs").fetchall()
    assert planners == [("haptics_RRTConnectSliding",)]
    for (exp_id, *_), text in zip(experiments, [cli_log.read_text(), py_log.read_text()]):
        rows = con.execute(
            "SELECT time, solved, solution_length, simplified_solution_length, seed, "
            "graph_states FROM runs WHERE experimentid = ? ORDER BY id", (exp_id,)).fetchall()
        logged = log_runs(text)
        assert len(rows) == RUNS == len(logged)
        # Every run solved the slot, seeds 1 to RUNS, and the database holds the logged
        # numbers (time, then the simplified length) exactly.
        assert [row[1] for row in rows] == [1] * RUNS
        assert [row[4] for row in rows] == list(range(1, RUNS + 1))
        assert [row[0] for row in rows] == [float(l[0]) for l in logged]
        assert [row[3] for row in rows] == [float(l[7]) for l in logged]
    # Same seeds: the command and the package planned the same paths.
    lengths = [con.execute("SELECT simplified_solution_length, graph_states FROM runs WHERE "
                           "experimentid = ? ORDER BY id", (e[0],)).fetchall()
               for e in experiments]
    assert lengths[0] == lengths[1]
