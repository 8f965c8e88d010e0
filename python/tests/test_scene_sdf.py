"""Scene.replay against ``haptics replay`` (bit for bit) and haptics.sdf against
``haptics sdf`` (the same .dist values) and an analytic box."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

import haptics
from conftest import ASSETS, ROOT, run_cli


def read_csv(path):
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    rows = [[float(x) for x in line.split(",")] for line in lines[1:] if line]
    return header, np.array(rows)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    # cargo test passes the cache its Rust tests share ($HAPTICS_TEST_CACHE), so that a
    # scene is baked once per run; the command and the package read the same one.
    shared = os.environ.get("HAPTICS_TEST_CACHE")
    return Path(shared) if shared else tmp_path_factory.mktemp("haptics-cache")


def test_replay_equals_the_command_bit_for_bit(cli, tmp_path, cache):
    scene_file = ASSETS / "scenes" / "peg-shaft.toml"
    trajectory = ASSETS / "trajectories" / "peg-shaft-insert.csv"
    out = tmp_path / "log.csv"
    run_cli(
        cli,
        ["replay", str(scene_file), str(trajectory), "-o", str(out), "--cache", str(cache)],
        ROOT,
    )
    header, expected = read_csv(out)
    log = haptics.Scene.load(scene_file, cache=cache).replay(trajectory)
    assert log.columns == header and len(log) == expected.shape[0] > 1000
    timing = header.index("cycle_us")
    for i, name in enumerate(header):
        if i != timing:
            # The CSV holds shortest round-trip decimals: equality is bit for bit.
            np.testing.assert_array_equal(log[name], expected[:, i], err_msg=name)
    # And the golden log of the regression suite agrees within its 1e-6.
    _, golden = read_csv(ASSETS / "golden" / "peg-shaft-insert.log.csv")
    keep = [i for i in range(len(header)) if i != timing]
    np.testing.assert_allclose(log.array[:, keep], golden[:, keep], rtol=0, atol=1e-6)
    assert "fx" in log.to_dict() and log["fx"].shape == (len(log),)
    with pytest.raises(KeyError, match="columns"):
        log["no such column"]


def read_trajectory_array(path):
    """A trajectory CSV as an N x C array (its comments and header skipped), with numpy's
    own parser."""
    lines = [l for l in path.read_text().splitlines() if l.strip() and not l.startswith("#")]
    return np.loadtxt(lines[1:], delimiter=",", ndmin=2)


def test_replay_of_an_array_equals_the_files(cache):
    scene = haptics.Scene.load(ASSETS / "scenes" / "peg-shaft.toml", cache=cache)
    trajectory = ASSETS / "trajectories" / "peg-shaft-insert.csv"
    from_file = scene.replay(trajectory)
    samples = read_trajectory_array(trajectory)
    assert samples.shape[1] == 15  # with the recorded wrench, which the replay ignores
    timing = from_file.columns.index("cycle_us")
    keep = [i for i in range(len(from_file.columns)) if i != timing]
    for columns in (15, 9):  # with and without the wrench
        from_array = scene.replay(samples[:, :columns])
        np.testing.assert_array_equal(from_array.array[:, keep], from_file.array[:, keep])


def test_a_muscle_trajectory_array_carries_its_activation(cli, tmp_path, cache):
    scene_file = ASSETS / "scenes" / "muscle-palpate.toml"
    trajectory = ASSETS / "trajectories" / "muscle-palpate-press.csv"
    samples = read_trajectory_array(trajectory)
    assert samples.shape[1] == 10  # the activation column
    out = tmp_path / "log.csv"
    run_cli(cli, ["replay", str(scene_file), str(trajectory), "-o", str(out), "--cache",
                  str(cache)], ROOT)
    header, expected = read_csv(out)
    log = haptics.Scene.load(scene_file, cache=cache).replay(samples)
    for i, name in enumerate(header):
        if name != "cycle_us":
            np.testing.assert_array_equal(log[name], expected[:, i], err_msg=name)


def test_bad_trajectory_rows_name_the_row(cache):
    scene = haptics.Scene.load(ASSETS / "scenes" / "peg-shaft.toml", cache=cache)
    good = read_trajectory_array(ASSETS / "trajectories" / "peg-shaft-insert.csv")[:20]
    late = good.copy()
    late[5, 0] = late[4, 0]  # time not increasing at row 5
    with pytest.raises(haptics.InputError, match=r"row 5: .*expected a time after"):
        scene.replay(late)
    skew = good.copy()
    skew[3, 4:8] *= 1.1  # quaternion norm 1.1
    with pytest.raises(haptics.InputError, match=r"row 3: .*unit quaternion"):
        scene.replay(skew)
    nan = good.copy()
    nan[7, 1] = np.nan
    with pytest.raises(haptics.InputError, match=r"row 7: .*finite"):
        scene.replay(nan)
    half = good.copy()
    half[2, 8] = 0.5
    with pytest.raises(haptics.InputError, match=r"row 2: .*unsigned integer bitmask"):
        scene.replay(half)
    with pytest.raises(haptics.InputError, match="N x 9"):
        scene.replay(good[:, :8])
    with pytest.raises(haptics.InputError, match="11 columns"):
        scene._native.replay(None, (good[:, :11].tobytes(), 11))
    with pytest.raises(ValueError):
        scene.replay(np.zeros((0, 9)))


def test_a_bad_scene_names_the_file_and_line(tmp_path, cache):
    bad = tmp_path / "bad.toml"
    bad.write_text((ASSETS / "scenes" / "peg-shaft.toml").read_text() + "\n[haptic\n")
    with pytest.raises(haptics.FormatError) as e:
        haptics.Scene.load(bad, cache=cache)
    assert e.value.path == str(bad) and e.value.line is not None


def read_dist(path):
    b = path.read_bytes()
    nx, ny, nz = struct.unpack_from("<3i", b, 0)
    corners = struct.unpack_from("<6d", b, 12)
    values = np.frombuffer(b, dtype="<f4", offset=60).reshape(nz + 1, ny + 1, nx + 1)
    return values.transpose(2, 1, 0), np.array(corners[:3]), np.array(corners[3:])


def test_sdf_equals_the_command(cli, tmp_path):
    mesh = ASSETS / "check" / "slot" / "wall.obj"
    out = tmp_path / "wall.dist"
    run_cli(cli, ["sdf", str(mesh), "--resolution", "24", "--out", str(out)], ROOT)
    grid, (lo, hi) = haptics.sdf(mesh, 24)
    expected, elo, ehi = read_dist(out)
    assert grid.shape == expected.shape == (25, 25, 25)
    np.testing.assert_array_equal(grid, expected)
    np.testing.assert_array_equal(lo, elo)
    np.testing.assert_allclose(hi, ehi, rtol=0, atol=1e-12)


def test_sdf_of_a_box_is_its_analytic_distance():
    from test_check_plan import cube

    half = 0.5
    grid, (lo, hi) = haptics.sdf(cube(half), 20, exact=True)
    n = grid.shape[0] - 1
    spacing = (hi - lo) / n
    # Every node's exact distance to the box (negative inside), float32 rounding.
    idx = np.indices(grid.shape).reshape(3, -1).T
    p = lo + idx * spacing
    q = np.abs(p) - half
    outside = np.linalg.norm(np.maximum(q, 0), axis=1)
    inside = np.minimum(q.max(axis=1), 0)
    analytic = (outside + inside).reshape(grid.shape)
    np.testing.assert_allclose(grid, analytic, rtol=0, atol=1e-6)
