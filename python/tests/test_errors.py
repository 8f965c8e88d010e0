"""Bad input raises the named exception with the file, the line and what was expected; a
Rust panic becomes haptics.InternalError and the interpreter survives; Ctrl-C interrupts a
long call within a second."""

from __future__ import annotations

import _thread
import threading
import time

import numpy as np
import pytest

import haptics
from haptics import _haptics
from conftest import ASSETS

SLOT = ASSETS / "check" / "slot" / "slot.cfg"
ALPHA = ASSETS / "check" / "alpha" / "alpha.cfg"


def test_a_missing_problem_is_file_not_found(tmp_path):
    missing = tmp_path / "nowhere.cfg"
    with pytest.raises(FileNotFoundError) as e:
        haptics.Problem.from_cfg(missing)
    assert isinstance(e.value, haptics.MissingFileError) and isinstance(e.value, haptics.Error)
    assert e.value.path == str(missing) and e.value.filename == str(missing)


def test_a_malformed_path_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.path"
    bad.write_text("0 0 0 0 0 0 1\n1 2 3\n")
    with pytest.raises(ValueError) as e:
        haptics.read_path(bad)
    err = e.value
    assert isinstance(err, haptics.FormatError)
    assert (err.path, err.line) == (str(bad), 2)
    assert "7 numbers" in err.expected and f"{bad}:2:" in str(err)
    with pytest.raises(haptics.FormatError):
        haptics.check(haptics.Problem.from_cfg(SLOT), bad)


def test_a_malformed_cfg_names_its_line(tmp_path):
    cfg = tmp_path / "p.cfg"
    cfg.write_text(SLOT.read_text().replace("start.x=-1", "start.x=minus one"))
    with pytest.raises(haptics.FormatError) as e:
        haptics.Problem.from_cfg(cfg)
    assert e.value.path == str(cfg) and e.value.line == 7


def test_a_malformed_mesh_names_the_mesh_file_and_line(tmp_path):
    cfg = tmp_path / "p.cfg"
    cfg.write_text(SLOT.read_text().replace("robot=robot.dae", f"robot={SLOT.parent / 'robot.dae'}").replace("world=wall.obj", "world=wall.obj"))
    (tmp_path / "wall.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 zero\nf 1 2 3\n")
    with pytest.raises(haptics.FormatError) as e:
        haptics.Problem.from_cfg(cfg)
    assert e.value.path == str(tmp_path / "wall.obj") and e.value.line == 3
    assert "the world of" in str(e.value)


def test_bad_states_and_options_are_input_errors():
    problem = haptics.Problem.from_cfg(SLOT)
    with pytest.raises(haptics.InputError, match="unit quaternion"):
        haptics.check(problem, [[0, 0, 0, 0, 0, 0, 2]])
    with pytest.raises(ValueError, match="N x 7"):
        haptics.check(problem, np.zeros((3, 6)))
    with pytest.raises(haptics.InputError, match="finite"):
        haptics.check(problem, [[np.nan, 0, 0, 0, 0, 0, 1]])
    with pytest.raises(haptics.InputError, match="tolerance"):
        haptics.check(problem, [[-1, 0, 0, 0, 0, 0, 1]], tolerance=-1.0)
    with pytest.raises(haptics.InputError, match="sampler"):
        haptics.plan(problem, sampler="magic")
    # A start inside the wall: the planner says why, as the command does (exit 2).
    with pytest.raises(haptics.InputError, match="start state is in collision"):
        haptics.plan(problem, start=[0, 0.1, 0])
    with pytest.raises(haptics.InputError, match="out of range"):
        haptics.Problem(
            (np.zeros((3, 3)), np.array([[0, 1, 5]])), (np.eye(3), np.array([[0, 1, 2]]))
        )


def test_a_rust_panic_is_an_internal_error_and_the_interpreter_survives():
    with pytest.raises(haptics.InternalError, match="deliberate test panic"):
        _haptics._panic_for_test()
    # Still alive, and the package still works.
    assert haptics.Problem.from_cfg(SLOT).name == "slot"


def interrupt_after(seconds: float) -> threading.Timer:
    t = threading.Timer(seconds, _thread.interrupt_main)
    t.start()
    return t


def test_ctrl_c_interrupts_a_long_call_within_a_second():
    t0 = time.monotonic()
    timer = interrupt_after(0.3)
    with pytest.raises(KeyboardInterrupt):
        _haptics._sleep_for_test(30.0)
    timer.join()
    assert time.monotonic() - t0 < 1.3


def test_ctrl_c_interrupts_a_plan_within_a_second():
    # Planning the alpha puzzle with a tiny step takes far longer than the interrupt.
    problem = haptics.Problem.from_cfg(ALPHA)
    timer = interrupt_after(0.5)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        haptics.plan(problem, time_limit=120, range=1e-4, max_range=1e-4, corridor=False)
    elapsed = time.monotonic() - t0
    timer.join()
    assert elapsed < 1.5
