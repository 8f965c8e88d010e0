"""The package's types and stubs satisfy mypy --strict, as a user's script sees them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *args],
        capture_output=True, text=True, cwd=HERE,
    )


def test_mypy_strict_accepts_a_users_script_and_the_package():
    for args in ([str(HERE / "typing_example.py")], ["-p", "haptics"]):
        r = mypy(*args)
        assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_rejects_a_wrong_call():
    """The stubs carry real types: a wrong argument type is an error."""
    bad = HERE / "typing_wrong.py"
    bad.write_text("import haptics\nhaptics.check(haptics.Problem.from_cfg(1.5), 'p', tolerance='x')\n")
    try:
        r = mypy(str(bad))
    finally:
        bad.unlink()
    assert r.returncode == 1 and "incompatible type" in r.stdout, r.stdout
