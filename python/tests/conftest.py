"""Shared fixtures: the repository's assets and the ``haptics`` command line, which every
function is compared with.

The command is found at ``$HAPTICS_BIN``, else under the cargo target directory
(``$CARGO_TARGET_DIR`` or ``target/``), release build first. Without it the comparisons
fail (they are the point of these tests); ``.ci/run`` builds it and sets
``HAPTICS_BIN``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"


def _find_cli() -> Path:
    env = os.environ.get("HAPTICS_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for profile in ("release", "debug"):
        p = target / profile / "haptics"
        if p.exists():
            return p
    raise RuntimeError(
        "the haptics command line was not found: build it (cargo build --release) or set "
        "HAPTICS_BIN; these tests compare the package with it"
    )


@pytest.fixture(scope="session")
def cli() -> Path:
    return _find_cli()


def run_cli(cli: Path, args: List[str], cwd: Path, ok: tuple = (0,)) -> subprocess.CompletedProcess:
    r = subprocess.run([str(cli), *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode in ok, f"haptics {' '.join(args)} -> {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


# Keys whose values are wall-clock times: they differ between any two runs.
TIMING_KEYS = {"timings", "seconds", "simplify_seconds", "total_seconds"}


def without_timings(d: Any) -> Any:
    """The report with its wall-clock times removed, at every depth."""
    if isinstance(d, dict):
        return {k: without_timings(v) for k, v in d.items() if k not in TIMING_KEYS}
    if isinstance(d, list):
        return [without_timings(v) for v in d]
    return d


def read_json(p: Path) -> Dict[str, Any]:
    return json.loads(p.read_text())
