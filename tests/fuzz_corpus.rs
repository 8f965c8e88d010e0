//! Replays the fuzzers' corpus and the crashers they found through every reader, on the
//! stable toolchain, in CI.
//!
//! `fuzz/corpus/NAME/` holds, for each [`Format`] named NAME, the inputs that the
//! coverage-guided fuzzer (`fuzz/`, cargo-fuzz) kept because they reached new code,
//! minimized with `cargo fuzz cmin`; the files named `seed-*` are the valid inputs it
//! started from (written by `the_generated_seeds_match_the_committed_ones` with
//! `HAPTICS_REGENERATE_CORPUS=1`). `fuzz/regressions/NAME/`
//! holds the inputs that once broke a reader. Every one must keep the contract of
//! [`haptics::formats`]: no panic, and an error names the file; the seeds must parse.

use std::path::{Path, PathBuf};

use haptics::formats::{check_contract, parse, Format};
use haptics::geometry::{
    pointshell::sample_pointshell, pointshell::PointshellParams, MeshDistance, SignedDistanceField,
};
use haptics::mesh::{box_tet_mesh, parse_obj, stl::write_stl_binary, veg::write_veg, SurfaceMesh};
use haptics::progress::NoProgress;
use haptics::reduction::polynomial::CubicPolynomial;
use haptics::reduction::vega::{write_cub, write_matrix, Precision};
use nalgebra::{DMatrix, Point3, Vector3};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files directly inside `dir` (none if it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

#[test]
fn every_corpus_input_and_crasher_keeps_the_reader_contract() {
    let mut breaches = Vec::new();
    let mut counted = Vec::new();
    for format in Format::ALL {
        let mut n = 0;
        for sub in ["corpus", "regressions"] {
            for file in files(&fuzz_dir().join(sub).join(format.name())) {
                let bytes = std::fs::read(&file).unwrap();
                if let Err(b) = check_contract(format, &bytes) {
                    breaches.push(format!("{}: {b}", file.display()));
                }
                n += 1;
            }
        }
        counted.push((format.name(), n));
    }
    assert!(breaches.is_empty(), "{}", breaches.join("\n"));
    // Every format has a corpus: a missing directory would silently test nothing.
    for (name, n) in counted {
        assert!(
            n >= 3,
            "fuzz/corpus/{name} holds {n} inputs; expected a corpus"
        );
    }
}

#[test]
fn the_seed_inputs_are_valid_files_of_their_format() {
    for format in Format::ALL {
        let dir = fuzz_dir().join("corpus").join(format.name());
        let seeds: Vec<_> = files(&dir)
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("seed-")
            })
            .collect();
        assert!(!seeds.is_empty(), "no seed in {}", dir.display());
        for s in seeds {
            let bytes = std::fs::read(&s).unwrap();
            if let Err(e) = parse(format, &bytes) {
                panic!("{}: {e}", s.display());
            }
        }
    }
}

/// Set to `1` to write the generated seeds into `fuzz/corpus/NAME/seed-K` instead of
/// comparing them, after a deliberate format change:
/// `HAPTICS_REGENERATE_CORPUS=1 cargo test --test fuzz_corpus the_generated_seeds`.
const REGENERATE: &str = "HAPTICS_REGENERATE_CORPUS";

#[test]
fn the_generated_seeds_match_the_committed_ones() {
    // The committed seeds are exactly what `seeds` generates: a reader or writer change
    // that alters a format shows up here, and the corpus is regenerated on purpose.
    let regenerate = std::env::var(REGENERATE).is_ok_and(|v| v == "1");
    for (format, inputs) in seeds() {
        let dir = fuzz_dir().join("corpus").join(format.name());
        if regenerate {
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (i, bytes) in inputs.iter().enumerate() {
            let path = dir.join(format!("seed-{i}"));
            if regenerate {
                std::fs::write(&path, bytes).unwrap();
            }
            let committed = std::fs::read(&path).unwrap_or_else(|e| {
                panic!("{}: {e}; regenerate with {REGENERATE}=1", path.display())
            });
            assert!(
                committed == *bytes,
                "{} differs from its generator; regenerate with {REGENERATE}=1 after a \
                 deliberate format change",
                path.display()
            );
        }
    }
}

/// A unit cube as OBJ text: 8 vertices, 12 outward triangles.
const CUBE_OBJ: &str = "# unit cube\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
v 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n\
f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n\
f 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8\n";

/// Small valid inputs of every format (a few hundred bytes to a few kilobytes, within
/// the fuzzer's default input length), built with the engine's own writers where it has
/// one. Deterministic.
fn seeds() -> Vec<(Format, Vec<Vec<u8>>)> {
    let tmp = tempfile::tempdir().unwrap();
    let written = |name: &str, write: &dyn Fn(&Path)| -> Vec<u8> {
        let p = tmp.path().join(name);
        write(&p);
        std::fs::read(&p).unwrap()
    };
    let cube: SurfaceMesh = parse_obj(CUBE_OBJ, Path::new("cube.obj")).unwrap();
    let tets = box_tet_mesh(
        Vector3::new(1.0, 1.0, 2.0),
        [1, 1, 2],
        Point3::origin(),
        haptics::mesh::read::default_material(),
    );
    let distance = MeshDistance::new(&cube).unwrap();
    let matrix = DMatrix::from_fn(4, 3, |i, j| (i as f64 + 1.0) * 0.5 - j as f64);
    let r = 2;
    let cub = CubicPolynomial {
        r,
        linear: (0..r * r).map(|i| i as f64 + 1.0).collect(),
        quadratic: (0..r * 3).map(|i| 0.1 * i as f64).collect(),
        cubic: (0..r * 4).map(|i| -0.01 * i as f64).collect(),
    };
    let text = |s: &str| s.as_bytes().to_vec();
    let asset = |p: &str| std::fs::read(haptics::assets::asset(p)).unwrap();
    let profile = |p: &str| std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(p)).unwrap();
    vec![
        (
            Format::Obj,
            vec![
                text(CUBE_OBJ),
                text("o tri\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nvt 0 0\nf 1/1/1 2//1 -1\n"),
            ],
        ),
        (
            Format::Stl,
            vec![
                written("cube.stl", &|p| write_stl_binary(p, &cube).unwrap()),
                text(
                    "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n\
                     vertex 0 1 0\nendloop\nendfacet\nendsolid t\n",
                ),
            ],
        ),
        (
            Format::Veg,
            vec![
                written("box.veg", &|p| write_veg(p, &tets).unwrap()),
                asset("models/beam3/beam3.veg"),
            ],
        ),
        (
            Format::Bou,
            vec![
                text("# fixed\n1, 2, 3,\n4\n"),
                asset("models/beam3/beam3.bou"),
            ],
        ),
        (
            Format::Interp,
            vec![text("0 0 0.25 1 0.25 2 0.25 3 0.25\n1 4 1 5 0 6 0 7 0\n")],
        ),
        (
            Format::TetGen,
            vec![text(
                "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n\0# tets\n1 4 0\n1 1 2 3 4\n",
            )],
        ),
        (
            Format::MatrixU,
            vec![written("m.U", &|p| {
                write_matrix(p, &matrix, Precision::F64).unwrap()
            })],
        ),
        (
            Format::MatrixFloat,
            vec![written("m.float", &|p| {
                write_matrix(p, &matrix, Precision::F32).unwrap()
            })],
        ),
        (
            Format::Cub,
            vec![written("p.cub", &|p| write_cub(p, &cub).unwrap())],
        ),
        (
            Format::Dist,
            vec![written("cube.dist", &|p| {
                let f = SignedDistanceField::compute(&distance, 4, 1.5, &NoProgress).unwrap();
                haptics::geometry::dist::write_dist(p, &f).unwrap()
            })],
        ),
        (
            Format::Pointshell,
            vec![written("cube.pshell", &|p| {
                let params = PointshellParams {
                    first_level_points: 8,
                    levels: 2,
                    iterations: 4,
                    ..PointshellParams::default()
                };
                sample_pointshell(&distance, &cube, &params, &NoProgress)
                    .unwrap()
                    .write(p)
                    .unwrap()
            })],
        ),
        (
            Format::Scene,
            vec![
                asset("scenes/peg-shaft.toml"),
                asset("scenes/hoses-gap.toml"),
                asset("scenes/bridge-probe.toml"),
            ],
        ),
        (
            Format::Trajectory,
            vec![
                asset("trajectories/targets/peg-shaft-insert.csv"),
                asset("trajectories/targets/bridge-probe-poke.csv"),
            ],
        ),
        (
            Format::DeviceProfile,
            vec![
                profile("devices/profiles/spacemouse-split.toml"),
                profile("devices/profiles/spacemouse-combined.toml"),
                profile("devices/profiles/generic-ffb.toml"),
            ],
        ),
        (Format::Manifest, vec![text(SAMPLE_MANIFEST)]),
        (
            Format::Collada,
            vec![asset("check/slot/robot.dae"), text(SAMPLE_DAE)],
        ),
        (
            Format::Gltf,
            vec![
                asset("models/gltf/two-boxes.glb"),
                asset("models/gltf/two-boxes.gltf"),
                text(SAMPLE_GLTF),
            ],
        ),
        (Format::OmplProblem, vec![asset("check/slot/slot.cfg")]),
        (
            Format::OmplPath,
            vec![
                asset("check/slot/pass.path"),
                asset("check/slot/collide.path"),
                text(&haptics::check::ompl::format_path(&[
                    haptics::proximity::rigid::State::new(
                        Vector3::new(0.25, -1.5, 3e-7),
                        nalgebra::UnitQuaternion::from_euler_angles(0.3, -0.2, 1.1),
                    ),
                ])),
            ],
        ),
    ]
}

/// A glTF file with a node matrix and an unindexed triangle strip.
const SAMPLE_GLTF: &str = r#"{"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"matrix": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 2, 0, 0, 1], "mesh": 0}], "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "mode": 5}]}], "accessors": [{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]}], "bufferViews": [{"buffer": 0, "byteLength": 48}], "buffers": [{"byteLength": 48, "uri": "data:application/octet-stream;base64,AAAAAAAAAAAAAAAAAACAPwAAAAAAAAAAAAAAAAAAgD8AAAAAAACAPwAAgD8AAAAA"}]}
"#;

/// A COLLADA file with the other primitive blocks (triangles, polygons, lines), a
/// matrix and an `<instance_node>`.
const SAMPLE_DAE: &str = r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="1"/><up_axis>Y_UP</up_axis></asset>
  <library_geometries>
    <geometry id="g"><mesh>
      <source id="g-p"><float_array id="g-a" count="12">0 0 0 1 0 0 1 1 0 0 1 0</float_array>
        <technique_common><accessor source="#g-a" count="4" stride="3"/></technique_common></source>
      <vertices id="g-v"><input semantic="POSITION" source="#g-p"/></vertices>
      <triangles count="1"><input semantic="VERTEX" source="#g-v" offset="0"/><p>0 1 2</p></triangles>
      <polygons count="1"><input semantic="VERTEX" source="#g-v" offset="0"/><p>0 1 2 3</p></polygons>
      <lines count="1"><input semantic="VERTEX" source="#g-v" offset="0"/><p>0 2</p></lines>
    </mesh></geometry>
  </library_geometries>
  <library_nodes><node id="shared"><instance_geometry url="#g"/></node></library_nodes>
  <library_visual_scenes>
    <visual_scene id="s">
      <node><matrix>1 0 0 2 0 1 0 0 0 0 1 0 0 0 0 1</matrix><instance_node url="#shared"/></node>
      <node><scale>2 2 2</scale><instance_geometry url="#g"/></node>
    </visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"##;

/// A manifest as `bake` writes it (the bridge's, with three of its ten frequencies).
const SAMPLE_MANIFEST: &str = r#"format_version = 1
mass_matrix = "consistent"
linear_frequencies_hz = [
    0.1475431712614414,
    0.24127488869380093,
    0.40866161236011306,
]
r = 20
num_vertices = 3923
num_elements = 1736
element_type = "hexahedra"
pca_retained_variance = 0.9999999991783888

[parameters]
linear_modes = 10
basis = 20
basis_kind = "modal-derivatives"
mass_matrix = "consistent"
unconstrained = false
material_groups = false

[[inputs]]
role = "mesh"
path = "assets/models/simpleBridge/simpleBridge_resol92-b1.155_enlarged.veg"
sha256 = "c6838ce6e6a150a6c572dc0a84256b942eb42a41cb0bbc9b3020971e5f7810f9"

[[inputs]]
role = "fixed"
path = "assets/models/simpleBridge/simpleBridge_resol92-b1.155_enlarged.bou"
sha256 = "3dced219c12df3db920fd2d2c5a0cb08ab2f7993701cd4aba50c187900977edd"

[[outputs]]
role = "output"
path = "basis.U"
sha256 = "ac03004d81bb34116d6640d15402447652ff6d78e137af3517337000bf7bfe38"

[[outputs]]
role = "output"
path = "reduced.cub"
sha256 = "3da92cfed1feda9759abd6ca08c85e7d8beab65febb60d3b9844014c8308d17b"

[[outputs]]
role = "output"
path = "linear_modes.U"
sha256 = "4716c410a87a3a1d5bac071ac51b32fb18af0b05e045c14e3ab099feb96a359f"

[timings_s]
load_and_fem = 0.052498276
linear_modes = 1.612287542
modal_derivatives = 0.441728186
pca = 0.087751927
polynomial = 0.986545672
write = 0.009648247
total = 3.19146748
"#;
