# Type stubs of the extension module (the Rust half of the package; see src/lib.rs).
# Arrays cross as bytes of little-endian float64 (int64 for triangles); the public API
# in haptics/__init__.py converts them to and from NumPy.

from typing import List, Optional, Tuple

__version__: str

_Arrays = Tuple[bytes, bytes]
_Box = Tuple[Tuple[float, float, float], Tuple[float, float, float]]
_State = Tuple[float, float, float, float, float, float, float]

class Problem:
    @staticmethod
    def from_cfg(path: str) -> Problem: ...
    @staticmethod
    def from_parts(
        name: str,
        robot_path: Optional[str],
        robot_arrays: Optional[_Arrays],
        world_path: Optional[str],
        world_arrays: Optional[_Arrays],
        start: Optional[List[float]],
        goal: Optional[List[float]],
        bounds: Optional[_Box],
    ) -> Problem: ...
    @property
    def name(self) -> str: ...
    @property
    def start(self) -> Optional[List[float]]: ...
    @property
    def goal(self) -> Optional[List[float]]: ...
    @property
    def bounds(self) -> Optional[Tuple[List[float], List[float]]]: ...
    @property
    def time_limit(self) -> Optional[float]: ...
    @property
    def robot_origin(self) -> List[float]: ...
    @property
    def robot_radius(self) -> float: ...
    @property
    def robot_diagonal(self) -> float: ...
    @property
    def load_seconds(self) -> float: ...
    def clearance(self, state: List[float]) -> float: ...

class Scene:
    @staticmethod
    def load(path: str, cache: str) -> Scene: ...
    @property
    def name(self) -> str: ...
    def replay(self, trajectory: str) -> Tuple[List[str], int, bytes]: ...

def check(
    problem: Problem,
    states: bytes,
    tolerance: Optional[float] = ...,
    first_contact: bool = ...,
    min_clearance: Optional[float] = ...,
    max_evaluations: Optional[int] = ...,
) -> Tuple[str, bytes]: ...
def plan_path(
    problem: Problem,
    start: Optional[List[float]],
    goal: Optional[List[float]],
    time_limit: Optional[float],
    seed: int,
    threads: int,
    clearance: Optional[float],
    range: Optional[float],
    max_range: Optional[float],
    rotation_weight: Optional[float],
    shortcuts: int,
    sampler: str,
    corridor: bool,
    guide: Optional[bytes],
) -> Tuple[bool, bytes, str]: ...
def benchmark(
    problem: Problem,
    runs: int,
    start: Optional[List[float]],
    goal: Optional[List[float]],
    time_limit: Optional[float],
    seed: int,
    threads: int,
    clearance: Optional[float],
    range: Optional[float],
    max_range: Optional[float],
    rotation_weight: Optional[float],
    shortcuts: int,
    sampler: str,
    corridor: bool,
    guide: Optional[bytes],
) -> Tuple[str, str]: ...
def sdf(
    path: Optional[str],
    arrays: Optional[_Arrays],
    resolution: int,
    exact: bool,
    band: float,
    box_enlarge: float,
) -> Tuple[bytes, Tuple[int, int, int], Tuple[float, float, float], float]: ...
def read_path(path: str) -> bytes: ...
def write_path(path: str, states: bytes) -> None: ...
def mesh_open_edges(path: str) -> int: ...
def _panic_for_test() -> None: ...
def _sleep_for_test(seconds: float) -> bool: ...
