"""haptics.check and haptics.plan against ``haptics check`` and ``haptics plan`` on the same
inputs, problems built from arrays against analytic clearances, and the threads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import haptics
from conftest import ASSETS, read_json, run_cli, without_timings

SLOT = ASSETS / "check" / "slot" / "slot.cfg"
ALPHA = ASSETS / "check" / "alpha" / "alpha.cfg"


@pytest.mark.parametrize(
    "cfg, path, verdict",
    [
        (SLOT, SLOT.parent / "pass.path", "collision-free"),
        (SLOT, SLOT.parent / "collide.path", "collides"),
        (ALPHA, ALPHA.parent / "solution.path", "collision-free"),
        (ALPHA, ALPHA.parent / "perturbed.path", "collides"),
    ],
)
def test_check_report_equals_the_commands(cli, tmp_path, cfg, path, verdict):
    out = tmp_path / "r.json"
    run_cli(cli, ["check", str(cfg), "--path", str(path), "--report", str(out)], tmp_path, ok=(0, 1))
    problem = haptics.Problem.from_cfg(cfg)
    report = haptics.check(problem, path)
    assert report.verdict == verdict
    assert without_timings(report.to_dict()) == without_timings(read_json(out))
    # The same states as an array give the same report.
    again = haptics.check(problem, haptics.read_path(path))
    assert without_timings(again.to_dict()) == without_timings(report.to_dict())


def test_check_options_reach_the_report(cli, tmp_path):
    collide = SLOT.parent / "collide.path"
    out = tmp_path / "r.json"
    args = ["check", str(SLOT), "--path", str(collide), "--first-contact", "--tolerance", "0.002"]
    run_cli(cli, [*args, "--report", str(out)], tmp_path, ok=(1,))
    r = haptics.check(haptics.Problem.from_cfg(SLOT), collide, first_contact=True, tolerance=0.002)
    assert r.tolerance == 0.002 and r.first_collision is not None and not r.passed
    assert without_timings(r.to_dict()) == without_timings(read_json(out))


@pytest.mark.parametrize("seed,relax", [(1, False), (2, False), (1, True)])
def test_plan_path_and_report_equal_the_commands(cli, tmp_path, seed, relax):
    out, rep = tmp_path / "p.path", tmp_path / "r.json"
    run_cli(
        cli,
        ["plan", str(SLOT), "--seed", str(seed), "--out", str(out), "--report", str(rep), "--quiet"]
        + (["--relax-clearance"] if relax else []),
        tmp_path,
    )
    result = haptics.plan(haptics.Problem.from_cfg(SLOT), seed=seed, relax_clearance=relax)
    assert result.solved
    # Shortest round-trip decimals in the file: equal bit for bit.
    np.testing.assert_array_equal(result.path, haptics.read_path(out))
    assert without_timings(result.report) == without_timings(read_json(rep))
    # The planned path, checked independently by the check, is free.
    assert haptics.check(haptics.Problem.from_cfg(SLOT), result.path).collision_free


def cube(half: float, centre=(0.0, 0.0, 0.0)):
    """A closed axis-aligned box (12 outward triangles)."""
    c = np.asarray(centre, dtype=float)
    h = np.broadcast_to(np.asarray(half, dtype=float), (3,))
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    v = c + corners * h
    t = np.array(
        [
            [0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5],  # x- and x+
            [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],  # y- and y+
            [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3],  # z- and z+
        ]
    )
    return v, t


def slot_world():
    """Two walls (x in [-0.05, 0.05]) leaving a slot |y| < 0.15: one mesh, two boxes."""
    v1, t1 = cube((0.05, 0.425, 1.0), (0.0, 0.575, 0.0))
    v2, t2 = cube((0.05, 0.425, 1.0), (0.0, -0.575, 0.0))
    return np.vstack([v1, v2]), np.vstack([t1, t2 + len(v1)])


def test_problem_from_arrays_gives_analytic_clearances():
    problem = haptics.Problem(cube(0.1), slot_world(), bounds=((-2, -2, -2), (2, 2, 2)))
    assert problem.robot_origin.tolist() == [0.0, 0.0, 0.0]
    # A 0.2 cube centred in a 0.3 slot: 0.05 to each wall.
    assert problem.clearance([0, 0, 0]) == pytest.approx(0.05, abs=1e-12)
    # Moved 0.1 towards one wall: 0.05 deep; the least separating translation is 0.05
    # (back along -y; along x it is 0.15). The depth is an upper bound within 1%.
    d = -problem.clearance([0, 0.1, 0])
    assert 0.05 - 1e-9 <= d <= 0.05 * 1.01
    through = [[-1, 0, 0, 0, 0, 0, 1], [1, 0, 0, 0, 0, 0, 1]]
    r = haptics.check(problem, through)
    assert r.collision_free and r.min_clearance == pytest.approx(0.05, abs=r.tolerance)
    into = [[-1, 0.1, 0, 0, 0, 0, 1], [1, 0.1, 0, 0, 0, 0, 1]]
    r = haptics.check(problem, into)
    assert r.verdict == "collides" and 0.05 - 1e-9 <= r.max_penetration <= 0.05 * 1.01
    # Where the robot's leading face (x = s + 0.1) meets the wall's face x = -0.05.
    seg, t = r.first_collision
    assert seg == 0 and -1 + 2 * t + 0.1 == pytest.approx(-0.05, abs=r.tolerance)


def test_plan_on_arrays_is_valid_by_the_analytic_test():
    problem = haptics.Problem(
        cube(0.1), slot_world(), bounds=((-2, -2, -2), (2, 2, 2)),
        start=[-1, 0, 0], goal=[1, 0, 0],
    )
    result = haptics.plan(problem, seed=3, time_limit=20)
    assert result.solved
    # Independent of the planner: dense samples of the path against the two walls'
    # boxes, by separating axes (the robot turns, so test its 8 corners' extents).
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * 0.1
    for a, b in zip(result.path[:-1], result.path[1:]):
        for s in np.linspace(0, 1, 200):
            p = (1 - s) * a[:3] + s * b[:3]
            q = (1 - s) * a[3:] + s * b[3:]
            q /= np.linalg.norm(q)
            x, y, z, w = q
            rot = np.array([
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ])
            pts = p + corners @ rot.T
            lo, hi = pts.min(axis=0), pts.max(axis=0)
            # A box's extents overlap a wall's on every axis only when they intersect
            # (or, for a turned robot, possibly not: this test is conservative).
            for wall_lo, wall_hi in (((-0.05, 0.15, -1), (0.05, 1.0, 1)), ((-0.05, -1.0, -1), (0.05, -0.15, 1))):
                overlaps = all(lo[k] < wall_hi[k] and hi[k] > wall_lo[k] for k in range(3))
                if overlaps:
                    # Conservative boxes overlap: the exact distance decides.
                    st = np.concatenate([p, q])
                    assert problem.clearance(st) > 0, f"state {st} collides"


def test_two_threads_checking_at_once_give_the_serial_results():
    problem = haptics.Problem.from_cfg(ALPHA)
    paths = [ALPHA.parent / "solution.path", ALPHA.parent / "perturbed.path"]
    serial = [without_timings(haptics.check(problem, p).to_dict()) for p in paths]
    results = [None, None]

    def work(i):
        results[i] = without_timings(haptics.check(problem, paths[i]).to_dict())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == serial


def test_the_gil_is_released_during_a_check():
    """While one thread checks, another runs Python: its counter advances."""
    problem = haptics.Problem.from_cfg(ALPHA)
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    before = count[0]
    haptics.check(problem, ALPHA.parent / "perturbed.path")
    during = count[0] - before
    done.set()
    t.join()
    assert during > 1000
