"""A user's script, type-checked by mypy --strict in test_typing.py (not run)."""

from __future__ import annotations

import numpy as np

import haptics


def clearance_of(cfg: str, path: str) -> float:
    problem = haptics.Problem.from_cfg(cfg)
    report: haptics.CheckReport = haptics.check(problem, path, tolerance=1e-3)
    if report.min_clearance is None:
        return float("nan")
    return report.min_clearance


def planned(cfg: str) -> np.ndarray:
    result: haptics.PlanResult = haptics.plan(haptics.Problem.from_cfg(cfg), seed=2)
    return result.path if result.solved else np.empty((0, 7))


def field(mesh: str) -> float:
    grid, (lo, hi) = haptics.sdf(mesh, 32)
    return float(grid.min()) + float((hi - lo).max())


def replayed(scene: str, trajectory: str) -> np.ndarray:
    return haptics.Scene.load(scene).replay(trajectory)["fx"]


def bad(cfg: str) -> str:
    try:
        haptics.Problem.from_cfg(cfg)
    except haptics.FormatError as e:
        return f"{e.path}:{e.line}: expected {e.expected}"
    return ""
