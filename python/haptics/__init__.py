"""Path checks and motion planning for rigid parts, haptic replays and signed distance
fields, from the ``haptics`` Rust core.

The functions here call the same code as the ``haptics`` command line, so a check's
report, a plan's path for a seed and a replay's log equal the command's::

    import haptics
    problem = haptics.Problem.from_cfg("Twistycool.cfg")
    result = haptics.plan(problem, seed=1, time_limit=30)
    report = haptics.check(problem, result.path)
    print(report.verdict, report.min_clearance)

States are rows ``x, y, z, qx, qy, qz, qw`` (OMPL's order; quaternions of norm within
1e-3 of 1, normalized on the way in). Long calls release the GIL, so Python threads run
checks in parallel, and Ctrl-C interrupts them within a tenth of a second.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _haptics
from .errors import (
    Error,
    FormatError,
    InputError,
    InternalError,
    MissingFileError,
    ReadError,
)

from . import muscle

__version__: str = _haptics.__version__

__all__ = [
    "Problem",
    "CheckReport",
    "PlanResult",
    "Scene",
    "ReplayLog",
    "check",
    "plan",
    "benchmark",
    "BenchmarkResult",
    "sdf",
    "bake",
    "BakeResult",
    "muscle",
    "read_path",
    "write_path",
    "Error",
    "FormatError",
    "InputError",
    "InternalError",
    "MissingFileError",
    "ReadError",
]

PathLike = Union[str, "os.PathLike[str]"]
"""A file name."""

MeshLike = Union[PathLike, Tuple[Any, Any]]
"""A mesh file (.dae, .obj, .stl, .gltf, .glb) or ``(vertices N x 3, triangles M x 3)``."""

DEFAULT_CACHE = os.path.join("target", "haptics-cache")
"""Where scenes keep their baked fields and models (the command line's default)."""


def _states_bytes(states: Any, what: str) -> bytes:
    a = np.asarray(states, dtype=np.float64)
    if a.ndim == 1 and a.shape[0] == 7:
        a = a[np.newaxis, :]
    if a.ndim != 2 or a.shape[1] != 7 or a.shape[0] == 0:
        raise InputError(
            f"{what}: expected an N x 7 array of states (x, y, z, qx, qy, qz, qw), "
            f"found shape {a.shape}"
        )
    return np.ascontiguousarray(a, dtype="<f8").tobytes()


def _state_list(state: Any, what: str) -> Optional[List[float]]:
    if state is None:
        return None
    a = np.asarray(state, dtype=np.float64).reshape(-1)
    if a.shape[0] == 3:
        a = np.concatenate([a, [0.0, 0.0, 0.0, 1.0]])
    if a.shape[0] != 7:
        raise InputError(
            f"{what}: expected x, y, z or x, y, z, qx, qy, qz, qw, found {a.shape[0]} numbers"
        )
    return [float(v) for v in a]


def _mesh_parts(mesh: MeshLike, what: str) -> Tuple[Optional[str], Optional[Tuple[bytes, bytes]]]:
    if isinstance(mesh, (str, os.PathLike)):
        return os.fspath(mesh), None
    try:
        vertices, triangles = mesh
    except (TypeError, ValueError):
        raise InputError(
            f"{what}: expected a mesh file or (vertices, triangles), found {type(mesh).__name__}"
        ) from None
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3:
        raise InputError(f"{what} vertices: expected an N x 3 array, found shape {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3 or not np.issubdtype(t.dtype, np.integer):
        raise InputError(
            f"{what} triangles: expected an M x 3 array of integers, found shape {t.shape} "
            f"of {t.dtype}"
        )
    return None, (
        np.ascontiguousarray(v, dtype="<f8").tobytes(),
        np.ascontiguousarray(t, dtype="<i8").tobytes(),
    )


def _array(states_bytes: bytes, columns: int) -> np.ndarray:
    return np.frombuffer(states_bytes, dtype="<f8").reshape(-1, columns).copy()


class Problem:
    """A rigid-body problem: a robot that moves, a world that stays, and optionally the
    start, the goal and the box of positions.

    ``Problem(robot, world, bounds=None, start=None, goal=None, name="problem")`` takes
    each mesh as a file (read as the command line reads it; the robot is moved to
    OMPL.app's origin, the mean of the vertices assimp would import) or as arrays
    ``(vertices N x 3, triangles M x 3)`` taken as given (the robot's frame is the
    arrays'). ``bounds`` is ``((xmin, ymin, zmin), (xmax, ymax, zmax))``; without it a
    plan searches the world's box with the start and goal, grown by the robot's radius.
    """

    def __init__(
        self,
        robot: MeshLike,
        world: MeshLike,
        bounds: Optional[Tuple[Sequence[float], Sequence[float]]] = None,
        start: Any = None,
        goal: Any = None,
        name: str = "problem",
    ) -> None:
        robot_path, robot_arrays = _mesh_parts(robot, "robot")
        world_path, world_arrays = _mesh_parts(world, "world")
        b = None
        if bounds is not None:
            lo, hi = (np.asarray(c, dtype=np.float64).reshape(-1) for c in bounds)
            if lo.shape != (3,) or hi.shape != (3,):
                raise InputError("bounds: expected ((xmin, ymin, zmin), (xmax, ymax, zmax))")
            b = (
                (float(lo[0]), float(lo[1]), float(lo[2])),
                (float(hi[0]), float(hi[1]), float(hi[2])),
            )
        self._native = _haptics.Problem.from_parts(
            name,
            robot_path,
            robot_arrays,
            world_path,
            world_arrays,
            _state_list(start, "start"),
            _state_list(goal, "goal"),
            b,
        )

    @classmethod
    def from_cfg(cls, path: PathLike) -> "Problem":
        """Reads an OMPL.app ``.cfg`` problem with its robot and world meshes, placed as
        OMPL.app places them."""
        problem = cls.__new__(cls)
        problem._native = _haptics.Problem.from_cfg(os.fspath(path))
        return problem

    @property
    def name(self) -> str:
        """The problem's name (``[problem] name``, else the file's stem)."""
        return str(self._native.name)

    @property
    def start(self) -> Optional[np.ndarray]:
        """The start state (7 numbers), if the problem has one."""
        s = self._native.start
        return None if s is None else np.array(s)

    @property
    def goal(self) -> Optional[np.ndarray]:
        """The goal state (7 numbers), if the problem has one."""
        g = self._native.goal
        return None if g is None else np.array(g)

    @property
    def bounds(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The box of positions ``(min, max)``, if given."""
        b = self._native.bounds
        return None if b is None else (np.array(b[0]), np.array(b[1]))

    @property
    def time_limit(self) -> Optional[float]:
        """The ``.cfg``'s time limit (s), if it gives one."""
        t = self._native.time_limit
        return None if t is None else float(t)

    @property
    def robot_origin(self) -> np.ndarray:
        """OMPL.app's robot origin in the robot file's coordinates (zero for arrays)."""
        return np.array(self._native.robot_origin)

    @property
    def robot_radius(self) -> float:
        """The robot's radius about its origin."""
        return float(self._native.robot_radius)

    def clearance(self, state: Any) -> float:
        """The distance from the robot at ``state`` to the world; minus the translational
        penetration depth where they intersect."""
        s = _state_list(state, "state")
        if s is None:
            raise InputError("state: expected x, y, z or x, y, z, qx, qy, qz, qw, found None")
        return float(self._native.clearance(s))

    def __repr__(self) -> str:
        return f"Problem({self.name!r}, robot radius {self.robot_radius:.4g})"


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check` found; ``to_dict()`` is the command line's JSON report."""

    verdict: str
    """``"collision-free"`` or ``"collides"``."""
    collision_free: bool
    passed: bool
    """Free, at least ``min_clearance`` when given, and the whole path checked."""
    min_clearance: Optional[float]
    """The smallest clearance; minus the largest penetration depth when colliding."""
    min_clearance_at: Tuple[int, float]
    """``(segment, t)`` of the minimum."""
    max_penetration: float
    first_collision: Optional[Tuple[int, float]]
    """``(segment, t)`` where the first contact starts, if any."""
    contacts: List[Dict[str, Any]]
    """The intervals in contact: ``from``, ``to``, ``objects``, ``depth``, ``deepest_at``."""
    deepest: Optional[Dict[str, Any]]
    tolerance: float
    incomplete: bool
    timings: Dict[str, float]
    samples: np.ndarray = field(repr=False)
    """Every evaluated state: rows ``segment, t, clearance, lower bound`` (the clearance
    is ``inf`` at a state that a sweep cleared at the tolerance without a distance)."""
    _dict: Dict[str, Any] = field(repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        """The report as ``haptics check --report`` writes it."""
        d: Dict[str, Any] = json.loads(json.dumps(self._dict))
        return d


def _position(p: Optional[Dict[str, Any]]) -> Optional[Tuple[int, float]]:
    return None if p is None else (int(p["segment"]), float(p["t"]))


def read_path(path: PathLike) -> np.ndarray:
    """Reads an OMPL ``.path`` file: an N x 7 array of states."""
    return _array(_haptics.read_path(os.fspath(path)), 7)


def write_path(path: PathLike, states: Any) -> None:
    """Writes states as an OMPL ``.path`` file (atomically: a temporary file, renamed)."""
    _haptics.write_path(os.fspath(path), _states_bytes(states, "states"))


def check(
    problem: Problem,
    path: Any,
    *,
    tolerance: Optional[float] = None,
    first_contact: bool = False,
    min_clearance: Optional[float] = None,
    max_evaluations: Optional[int] = None,
) -> CheckReport:
    """Checks the robot's motion along ``path`` (an N x 7 array of states, or an OMPL
    ``.path`` file) against the world, continuously: every state between the given ones
    (OMPL's interpolation) is covered.

    ``tolerance``: closer than this counts as contact (default 0.1% of the robot's
    bounding-box diagonal). ``first_contact``: stop at the first collision (the
    fastest answer to "can it pass?"). ``min_clearance``: the report's ``passed``
    requires at least this clearance.
    """
    if isinstance(path, (str, os.PathLike)):
        states = _haptics.read_path(os.fspath(path))
    else:
        states = _states_bytes(path, "path")
    text, samples = _haptics.check(
        problem._native, states, tolerance, first_contact, min_clearance, max_evaluations
    )
    d = json.loads(text)
    return CheckReport(
        verdict=d["verdict"],
        collision_free=d["verdict"] == "collision-free",
        passed=bool(d["passed"]),
        min_clearance=d["min_clearance"],
        min_clearance_at=_position(d["min_clearance_at"]) or (0, 0.0),
        max_penetration=float(d["max_penetration"] or 0.0),
        first_collision=_position(d["first_collision"]),
        contacts=d["contacts"],
        deepest=d["deepest"],
        tolerance=float(d["tolerance"]),
        incomplete=bool(d["incomplete"]),
        timings=d["timings"],
        samples=_array(samples, 4),
        _dict=d,
    )


@dataclass(frozen=True)
class PlanResult:
    """What :func:`plan` found."""

    solved: bool
    path: np.ndarray
    """The path, N x 7 (start first, goal last; empty when not solved)."""
    report: Dict[str, Any]
    """The command line's JSON report (``haptics plan --report``)."""

    def to_dict(self) -> Dict[str, Any]:
        """The report, as ``haptics plan --report`` writes it."""
        d: Dict[str, Any] = json.loads(json.dumps(self.report))
        return d


def _plan_args(
    start: Any,
    goal: Any,
    time_limit: Optional[float],
    seed: int,
    threads: int,
    clearance: Optional[float],
    relax_clearance: bool,
    range: Optional[float],
    max_range: Optional[float],
    rotation_weight: Optional[float],
    shortcuts: int,
    sampler: str,
    corridor: bool,
    guide: Any,
) -> Dict[str, Any]:
    """The planner's keywords as the extension takes them (one dict for plan and
    benchmark)."""
    return {
        "start": _state_list(start, "start"),
        "goal": _state_list(goal, "goal"),
        "time_limit": time_limit,
        "seed": int(seed),
        "threads": int(threads),
        "clearance": clearance,
        "relax_clearance": bool(relax_clearance),
        "range": range,
        "max_range": max_range,
        "rotation_weight": rotation_weight,
        "shortcuts": int(shortcuts),
        "sampler": str(sampler),
        "corridor": bool(corridor),
        "guide": None if guide is None else _states_bytes(guide, "guide"),
    }


def plan(
    problem: Problem,
    start: Any = None,
    goal: Any = None,
    *,
    time_limit: Optional[float] = None,
    seed: int = 1,
    threads: int = 1,
    clearance: Optional[float] = None,
    relax_clearance: bool = False,
    range: Optional[float] = None,
    max_range: Optional[float] = None,
    rotation_weight: Optional[float] = None,
    shortcuts: int = 100,
    sampler: str = "uniform",
    corridor: bool = True,
    guide: Any = None,
) -> PlanResult:
    """Plans a collision-free path from ``start`` to ``goal`` (default: the problem's),
    as ``haptics plan`` does: a bidirectional tree search (RRT-Connect with sliding),
    shortcut, and checked by :func:`check` before it is returned.

    ``time_limit`` defaults to the ``.cfg``'s, else 10 s. ``seed`` reproduces a path
    exactly with ``threads=1``. ``sampler``: ``"uniform"``, ``"obstacle"``,
    ``"bridge"`` or ``"mixed"``. ``guide``: a rough path (N x 7) to sample around.
    ``relax_clearance``: halve the clearance every 5,000 samples (8 times at most)
    while no path is found, for passages narrower than it.
    A start or goal in collision or outside the bounds raises :class:`InputError`.
    """
    args = _plan_args(start, goal, time_limit, seed, threads, clearance, relax_clearance,
                      range, max_range, rotation_weight, shortcuts, sampler, corridor, guide)
    solved, path, text = _haptics.plan_path(problem._native, args)
    return PlanResult(solved=bool(solved), path=_array(path, 7), report=json.loads(text))


@dataclass(frozen=True)
class BenchmarkResult:
    """What :func:`benchmark` ran: OMPL's benchmark log and a summary."""

    log: str
    """The benchmark log (the input of OMPL's ``ompl_benchmark_statistics.py``)."""
    summary: str


def benchmark(
    problem: Problem,
    runs: int,
    *,
    out_log: Optional[PathLike] = None,
    start: Any = None,
    goal: Any = None,
    time_limit: Optional[float] = None,
    seed: int = 1,
    threads: int = 1,
    clearance: Optional[float] = None,
    relax_clearance: bool = False,
    range: Optional[float] = None,
    max_range: Optional[float] = None,
    rotation_weight: Optional[float] = None,
    shortcuts: int = 100,
    sampler: str = "uniform",
    corridor: bool = True,
    guide: Any = None,
) -> BenchmarkResult:
    """Runs ``runs`` plans (seeds ``seed`` to ``seed + runs - 1``), each certified by the
    path check, as ``haptics plan --benchmark`` does, and writes OMPL's benchmark log to
    ``out_log`` (atomically) when given. ``ompl_benchmark_statistics.py RUNS.log`` turns
    it into the database Planner Arena shows."""
    args = _plan_args(start, goal, time_limit, seed, threads, clearance, relax_clearance,
                      range, max_range, rotation_weight, shortcuts, sampler, corridor, guide)
    log, summary = _haptics.benchmark(problem._native, int(runs), args)
    if out_log is not None:
        target = os.fspath(out_log)
        tmp = f"{target}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(log)
        os.replace(tmp, target)
    return BenchmarkResult(log=log, summary=summary)


class ReplayLog:
    """A haptic log: one row per haptic cycle, the columns of ``haptics replay``'s CSV.

    ``log["fx"]`` is a column as an array, ``log.array`` the whole N x C table,
    ``log.columns`` the names.
    """

    def __init__(self, columns: List[str], array: np.ndarray) -> None:
        self.columns: List[str] = list(columns)
        self.array: np.ndarray = array

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.array[:, self.columns.index(name)]
        except ValueError:
            raise KeyError(f"{name!r}: the log's columns are {', '.join(self.columns)}") from None

    def __len__(self) -> int:
        return int(self.array.shape[0])

    def to_dict(self) -> Dict[str, np.ndarray]:
        """Column name -> array."""
        return {c: self.array[:, i] for i, c in enumerate(self.columns)}


class Scene:
    """A haptic scene (a TOML file, see docs/scenes.md), loaded with its baked fields and
    models (cached under ``cache``)."""

    def __init__(self, native: Any) -> None:
        self._native = native

    @classmethod
    def load(cls, path: PathLike, cache: PathLike = DEFAULT_CACHE) -> "Scene":
        """Loads a scene, baking what the cache lacks."""
        return cls(_haptics.Scene.load(os.fspath(path), os.fspath(cache)))

    @property
    def name(self) -> str:
        return str(self._native.name)

    def replay(self, trajectory: Union[PathLike, Any]) -> ReplayLog:
        """Replays a recorded stylus trajectory on a fresh simulation of the scene, one
        haptic cycle per sample: the same log as ``haptics replay`` (its ``cycle_us``
        column, the cycle's wall time, aside).

        ``trajectory`` is a CSV file or an array in the file's columns: N x 9, ``time_s,
        px, py, pz, qw, qx, qy, qz, buttons``, then optionally the recorded wrench ``fx,
        fy, fz, tx, ty, tz`` (15 columns; ignored) and ``activation`` (10 or 16
        columns). An array is checked as the file is, and an array read from a file
        replays bit for bit as the file does. Bad rows raise :class:`InputError` naming
        the row.
        """
        if isinstance(trajectory, (str, os.PathLike)):
            columns, rows, data = self._native.replay(os.fspath(trajectory))
        else:
            a = np.asarray(trajectory, dtype=np.float64)
            if a.ndim != 2 or a.shape[1] not in (9, 10, 15, 16) or a.shape[0] == 0:
                raise InputError(
                    "trajectory: expected a file or an N x 9 array (time_s, px, py, pz, qw, "
                    "qx, qy, qz, buttons; then optionally fx..tz and activation: 10, 15 or 16 "
                    f"columns), found shape {a.shape}"
                )
            data_in = np.ascontiguousarray(a, dtype="<f8").tobytes()
            columns, rows, data = self._native.replay(None, (data_in, int(a.shape[1])))
        array = np.frombuffer(data, dtype="<f8").reshape(rows, len(columns)).copy()
        return ReplayLog(columns, array)


@dataclass(frozen=True)
class BakeResult:
    """What :func:`bake` did: the directory, whether it baked (``False``: it was already
    up to date with these inputs and parameters) and its manifest (``manifest.toml`` as a
    dict: sizes, linear frequencies, the retained PCA variance, stage timings)."""

    out: str
    baked: bool
    manifest: Dict[str, Any]

    @property
    def r(self) -> int:
        """The basis size."""
        return int(self.manifest["r"])

    @property
    def linear_frequencies_hz(self) -> np.ndarray:
        return np.asarray(self.manifest["linear_frequencies_hz"], dtype=np.float64)


def bake(
    mesh: PathLike,
    out: PathLike,
    *,
    fixed: Optional[PathLike] = None,
    linear_modes: int = 10,
    basis: int = 20,
    basis_kind: str = "modal-derivatives",
    basis_file: Optional[PathLike] = None,
    snapshots: Optional[PathLike] = None,
    render_interp: Optional[PathLike] = None,
    material_groups: bool = False,
    resolution: Optional[int] = None,
    lumped: bool = False,
    unconstrained: bool = False,
) -> BakeResult:
    """Bakes a reduced StVK model of ``mesh`` (.veg, TetGen .node/.ele; .obj or .stl with
    ``resolution`` voxels) into the directory ``out``, as ``haptics bake`` does, with the
    same defaults: the basis (``basis`` vectors: mass-PCA of ``linear_modes`` linear modes
    and their modal derivatives, or ``basis_kind="linear-modes"``, or ``basis_file``, or
    the mass-PCA of ``snapshots``) and its cubic reduced-force polynomial. ``fixed`` is a
    Vega ``.bou`` file; a free object needs ``unconstrained=True``. The directory is
    written atomically, and an unchanged bake is not redone. Ctrl-C stops it at the next
    stage, leaving ``out`` as it was."""

    def opt(p: Optional[PathLike]) -> Optional[str]:
        return None if p is None else os.fspath(p)

    args = {
        "mesh": os.fspath(mesh),
        "out": os.fspath(out),
        "fixed": opt(fixed),
        "linear_modes": int(linear_modes),
        "basis": int(basis),
        "basis_kind": str(basis_kind),
        "basis_file": opt(basis_file),
        "snapshots": opt(snapshots),
        "render_interp": opt(render_interp),
        "material_groups": bool(material_groups),
        "resolution": None if resolution is None else int(resolution),
        "lumped": bool(lumped),
        "unconstrained": bool(unconstrained),
    }
    baked, manifest = _haptics.bake(args)
    return BakeResult(out=os.fspath(out), baked=bool(baked), manifest=json.loads(manifest))


def sdf(
    mesh: MeshLike,
    resolution: int = 128,
    *,
    exact: bool = False,
    band: float = 3.0,
    box_enlarge: float = 1.5,
) -> Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """The signed distance field of a closed mesh on a cubic grid of ``resolution``
    cells per side (negative inside), as ``haptics sdf`` computes it.

    Returns ``(grid, (lo, hi))``: ``grid[i, j, k]`` is the distance at
    ``lo + spacing * (i, j, k)``, float32, of shape ``(resolution + 1,) * 3`` for a cubic
    box; ``hi`` is the far corner.
    """
    path, arrays = _mesh_parts(mesh, "mesh")
    data, cells, origin, spacing = _haptics.sdf(
        path, arrays, int(resolution), bool(exact), float(band), float(box_enlarge)
    )
    nx, ny, nz = (c + 1 for c in cells)
    grid = np.frombuffer(data, dtype="<f4").reshape(nz, ny, nx).transpose(2, 1, 0).copy()
    lo = np.array(origin)
    hi = lo + spacing * np.array(cells, dtype=np.float64)
    return grid, (lo, hi)
