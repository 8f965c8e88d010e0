"""haptics.bake against ``haptics bake`` (the same files, byte for byte) and
haptics.muscle.isometric against ``haptics muscle isometric`` (the same curve)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import haptics
import haptics.muscle
from conftest import ASSETS, run_cli

BEAM = ASSETS / "models" / "beam3"


def without_timings(manifest):
    return {k: v for k, v in manifest.items() if k != "timings_s"}


@pytest.mark.parametrize("kind", ["modal-derivatives", "linear-modes"])
def test_bake_writes_the_commands_files(cli, tmp_path, kind):
    mesh, fixed = BEAM / "beam3.veg", BEAM / "beam3.bou"
    by_cli, by_py = tmp_path / "cli", tmp_path / "py"
    run_cli(cli, ["bake", str(mesh), "--fixed", str(fixed), "--linear-modes", "6", "--basis",
                  "6", "--basis-kind", kind, "-o", str(by_cli)], tmp_path)
    result = haptics.bake(mesh, by_py, fixed=fixed, linear_modes=6, basis=6, basis_kind=kind)
    assert result.baked and result.r == 6 and result.linear_frequencies_hz.shape == (6,)
    assert np.all(np.diff(result.linear_frequencies_hz) >= 0)
    names = sorted(p.name for p in by_cli.iterdir())
    assert names == sorted(p.name for p in by_py.iterdir()) and "reduced.cub" in names
    for name in names:
        if name != "manifest.toml":
            assert (by_cli / name).read_bytes() == (by_py / name).read_bytes(), name
    # The manifest as Python sees it is the file's, and its hashes are the command's.
    import tomllib  # noqa: PLC0415  (3.11+, as the test environment)

    on_disk = tomllib.loads((by_cli / "manifest.toml").read_text())
    assert without_timings(result.manifest)["outputs"] == on_disk["outputs"]
    # An unchanged bake is not redone.
    again = haptics.bake(mesh, by_py, fixed=fixed, linear_modes=6, basis=6, basis_kind=kind)
    assert not again.baked and without_timings(again.manifest) == without_timings(result.manifest)


def test_bad_bakes_raise_the_named_errors(tmp_path):
    with pytest.raises(haptics.MissingFileError) as e:
        haptics.bake(tmp_path / "none.veg", tmp_path / "out", unconstrained=True)
    assert e.value.path == str(tmp_path / "none.veg")
    with pytest.raises(haptics.InputError, match="basis: expected 1 to 200"):
        haptics.bake(BEAM / "beam3.veg", tmp_path / "out", basis=0)
    with pytest.raises(haptics.InputError, match="no fixed vertices"):
        haptics.bake(BEAM / "beam3.veg", tmp_path / "out")
    with pytest.raises(haptics.InputError, match="basis_kind"):
        haptics.bake(BEAM / "beam3.veg", tmp_path / "out", basis_kind="pca")
    bad = tmp_path / "bad.veg"
    bad.write_text("*VERTICES\n4 3 0 0\n1 0 0 zero\n")
    with pytest.raises(haptics.FormatError) as e:
        haptics.bake(bad, tmp_path / "out", unconstrained=True)
    assert e.value.path == str(bad) and e.value.line == 3
    assert not (tmp_path / "out").exists()


def read_curve(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array([[float(v) for v in r] for r in rows[1:]])


def test_isometric_equals_the_command(cli, tmp_path):
    out = tmp_path / "curve.csv"
    stretch, activation = [0.8, 1.0, 1.25], [0.0, 1.0]
    run_cli(cli, ["muscle", "isometric", "--stretch", ",".join(map(str, stretch)),
                  "--activation", ",".join(map(str, activation)), "--out", str(out)], tmp_path)
    header, expected = read_curve(out)
    curve = haptics.muscle.isometric(stretch, activation)
    assert curve.columns == header and len(curve) == 6 and curve.nodes > 0
    for i, name in enumerate(header):
        # The CSV prints forces with 13 significant digits (%.12e) and stretches to 12
        # decimals: equal to that rounding (plus one unit of the last digit).
        np.testing.assert_allclose(curve[name], expected[:, i], rtol=2e-12, atol=1e-14,
                                   err_msg=name)
    # Stretches and activations are the inputs, activations outer.
    np.testing.assert_array_equal(curve["stretch"], stretch * 2)
    np.testing.assert_array_equal(curve["activation"], [0.0] * 3 + [1.0] * 3)
    # The finite element force matches the independent homogeneous solution.
    np.testing.assert_allclose(curve["force_n"], curve["reference_force_n"], rtol=1e-6)


def test_bad_isometric_inputs_raise_the_named_errors(tmp_path):
    with pytest.raises(haptics.InputError, match="activation"):
        haptics.muscle.isometric([1.0], [1.5])
    with pytest.raises(haptics.InputError, match="stretch"):
        haptics.muscle.isometric([-1.0], [0.0])
    with pytest.raises(haptics.InputError, match="resolution"):
        haptics.muscle.isometric([1.0], [0.0], resolution=0)
    bad = tmp_path / "m.toml"
    bad.write_text("mu = 1.0\nsigma_max = 'strong'\n")
    with pytest.raises(haptics.FormatError) as e:
        haptics.muscle.isometric([1.0], [0.0], material=bad)
    assert e.value.path == str(bad) and e.value.line == 2
