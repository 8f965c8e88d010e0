//! Scene files: parsing and validation errors (file, line, key, resolved path), a full
//! load of a small scene with every kind of object (rigid and deformable haptic and
//! environment objects), the cache (a second load recomputes nothing; a corrupt cache
//! file is detected and recomputed), a full load of the shipped peg-in-shaft scene with a
//! geometric check, and parse-only validation of every shipped scene.
//!
//! `cargo test --release --test scene -- --ignored --nocapture` also loads every shipped
//! scene twice (from scratch, then cached) and prints the times.

use std::path::{Path, PathBuf};
use std::time::Instant;

use haptics::progress::NoProgress;
use haptics::scene::{
    error::SceneError, format::parse_scene, load_scene_with_report, HapticField, LoadReport, Scene,
};
use nalgebra::{Point3, Vector3};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn write_scene(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write the scene");
    p
}

/// A small scene of every kind of object: a deformable box probe (voxelized, free,
/// 4 linear modes), a rigid union of two boxes, and the deformable beam3 (its render
/// mesh sampled, its hex mesh baked with 3 modal derivatives from 3 linear modes).
fn small_scene(dir: &Path) -> PathBuf {
    let beam = repo().join("assets/models/beam3");
    let text = format!(
        r#"
description = "test scene"
rate_hz = 500.0
workspace_scale = 0.2

[haptic]
name = "probe"
box = [0.2, 0.4, 0.2]
sdf_resolution = 24
grasp = [0.0, 0.1, 0.0]
position = [0.0, 1.0, 0.0]
rotation = [0.0, 0.1, 0.0]

[haptic.deformable]
voxel_resolution = 4
linear_modes = 4
basis_kind = "linear-modes"
proxies = 12
neighbours = 4

[[environment]]
name = "blocks"
boxes = [{{ size = [0.5, 0.1, 0.5], position = [0.0, -0.1, 0.0] }}, {{ size = [0.1, 0.1, 0.1], position = [1.0, 0.0, 0.0] }}]
points = 16
levels = 3

[[environment]]
name = "beam"
mesh = "{beam}/beam3.obj"
points = 16
levels = 3
position = [0.0, 0.0, 1.0]

[environment.deformable]
volume = "{beam}/beam3.veg"
fixed = "{beam}/beam3.bou"
linear_modes = 3
damping_stiffness = 0.01

[contact]
stiffness = 500.0

[coupling]
saturation_force = 0.0
"#,
        beam = beam.display()
    );
    write_scene(dir, "small.toml", &text)
}

fn load(path: &Path, cache: &Path) -> (Scene, LoadReport) {
    load_scene_with_report(path, cache, &NoProgress).unwrap_or_else(|e| panic!("{e}"))
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the cache")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn small_scene_loads_and_second_load_reuses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let path = small_scene(dir.path());
    let (scene, first) = load(&path, &cache);

    // Every piece built: SDF, 2 pointshells, the probe's voxel mesh, 2 bakes.
    assert_eq!(first.computed.len(), 6, "{first:?}");
    assert!(
        first.reused.is_empty() && first.rejected.is_empty(),
        "{first:?}"
    );
    assert_eq!(files_with_ext(&cache, "dist").len(), 1);
    assert_eq!(files_with_ext(&cache, "pshell").len(), 2);
    assert_eq!(files_with_ext(&cache, "veg").len(), 1);
    assert_eq!(files_with_ext(&cache, "sha256").len(), 4);

    // The loaded scene.
    assert_eq!(scene.name, "small");
    assert_eq!(scene.description, "test scene");
    assert_eq!(scene.rate_hz, 500.0);
    assert_eq!(scene.workspace_scale, 0.2);
    assert_eq!(scene.contact.stiffness, 500.0);
    // A deformable haptic object gets the deformed-field defaults: the full budget,
    // without temporal coherence (the deformed field has no Lipschitz bound).
    assert_eq!(
        scene.contact,
        haptics::contact::params::ContactParams {
            stiffness: 500.0,
            ..haptics::contact::params::ContactParams::deformed_field()
        }
    );
    assert!(!scene.contact.temporal_coherence);
    assert_eq!(
        scene.contact.warm_budget,
        haptics::contact::params::ContactParams::default().warm_budget
    );
    assert_eq!(scene.coupling.saturation_force, None);
    assert!((scene.coupling.dt - 2e-3).abs() < 1e-15);
    let h = &scene.haptic;
    assert_eq!(h.grasp, Point3::new(0.0, 0.1, 0.0));
    assert!((h.pose.translation.vector - Vector3::new(0.0, 1.0, 0.0)).norm() < 1e-15);
    assert!((h.pose.rotation.scaled_axis() - Vector3::new(0.0, 0.1, 0.0)).norm() < 1e-12);
    match &h.field {
        HapticField::Deformable { field, dynamics } => {
            assert_eq!(dynamics.r(), 4);
            assert_eq!(field.num_proxies(), 12);
            assert!(field.rest_field().lookup(&Point3::origin()) < -0.05);
        }
        HapticField::Rigid(_) | HapticField::Exact(_) => panic!("the probe is deformable"),
    }
    assert_eq!(h.render_basis.len(), h.surface.vertices.len() * 3 * 4);

    let blocks = &scene.environment[0];
    assert_eq!(blocks.shell.len(), 16 * 16);
    assert!(blocks.dynamics.is_none() && blocks.render_basis.is_empty());
    assert_eq!(blocks.shell.r(), 0);
    let beam = &scene.environment[1];
    let r = beam.shell.r();
    assert_eq!(r, 6);
    assert_eq!(beam.dynamics.as_ref().map(|d| d.r()), Some(r));
    assert_eq!(beam.render_basis.len(), beam.surface.vertices.len() * 3 * r);
    assert!((beam.pose.translation.vector - Vector3::new(0.0, 0.0, 1.0)).norm() < 1e-15);

    // The second load recomputes nothing, and gives the same scene.
    let t = Instant::now();
    let (again, second) = load(&path, &cache);
    let secs = t.elapsed().as_secs_f64();
    assert!(second.computed.is_empty(), "{second:?}");
    assert_eq!(second.reused.len(), 6, "{second:?}");
    assert!(secs < 5.0, "cached load took {secs} s");
    assert_eq!(again.environment[1].shell.points, beam.shell.points);
    assert_eq!(again.environment[1].render_basis, beam.render_basis);
}

#[test]
fn corrupt_cache_files_are_detected_and_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let path = write_scene(
        dir.path(),
        "rigid.toml",
        r#"
[haptic]
name = "probe"
box = [0.2, 0.2, 0.2]
sdf_resolution = 16

[[environment]]
name = "block"
boxes = [{ size = [1.0, 0.2, 1.0] }]
points = 32
levels = 2
"#,
    );
    let (scene, _) = load(&path, &cache);
    // Flip one byte in the middle of the pointshell (still a well-formed file, so only
    // the checksum can tell), and truncate the field.
    let pshell = &files_with_ext(&cache, "pshell")[0];
    let mut bytes = std::fs::read(pshell).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x10;
    std::fs::write(pshell, &bytes).unwrap();
    let dist = &files_with_ext(&cache, "dist")[0];
    let len = std::fs::metadata(dist).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(dist)
        .unwrap()
        .set_len(len / 2)
        .unwrap();

    let (again, report) = load(&path, &cache);
    assert_eq!(report.rejected.len(), 2, "{report:?}");
    assert!(
        report.rejected.iter().all(|r| r.contains("checksum")),
        "{report:?}"
    );
    assert_eq!(report.computed.len(), 2, "{report:?}");
    assert_eq!(
        again.environment[0].shell.points,
        scene.environment[0].shell.points
    );

    // A missing checksum is not trusted either.
    std::fs::remove_file(format!("{}.sha256", pshell.display())).unwrap();
    let (_, report) = load(&path, &cache);
    assert_eq!(report.rejected.len(), 1, "{report:?}");
    assert_eq!(report.computed.len(), 1, "{report:?}");
    // Repaired: the next load reuses everything.
    let (_, report) = load(&path, &cache);
    assert_eq!((report.computed.len(), report.reused.len()), (0, 2));
}

fn parse_err(text: &str) -> (SceneError, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_scene(dir.path(), "bad.toml", text);
    let err = parse_scene(&path).expect_err("the scene is invalid");
    (err, path, dir)
}

/// Parses `text`, which must fail as an invalid value of `key` in the file's own path;
/// returns the message, which must name the key.
fn invalid_key_message(text: &str, key: &str) -> String {
    let (err, path, _dir) = parse_err(text);
    assert!(
        matches!(&err, SceneError::Invalid { key: k, path: p, .. } if k == key && p == &path),
        "{key}: {err}"
    );
    let msg = err.to_string();
    assert!(msg.contains(key), "{key}: {msg}");
    msg
}

const HAPTIC_BOX: &str = "[haptic]\nname = \"p\"\nbox = [0.1, 0.1, 0.1]\n";

#[test]
fn syntax_error_names_the_file_line_and_column() {
    let (err, path, _dir) = parse_err(&format!("{HAPTIC_BOX}rate_hz = = 3\n"));
    match &err {
        SceneError::Syntax {
            path: p,
            line,
            column,
            ..
        } => {
            assert_eq!(p, &path);
            assert_eq!(*line, 4);
            assert!(*column >= 9, "column {column}");
        }
        other => panic!("expected a syntax error, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("{}:4:", path.display())), "{msg}");
}

#[test]
fn wrong_type_and_unknown_key_are_errors_with_lines() {
    let (err, _, _dir) = parse_err(&format!("{HAPTIC_BOX}colour = \"red\"\n"));
    let msg = err.to_string();
    assert!(
        matches!(err, SceneError::Syntax { line: 4, .. }),
        "unknown key on line 4: {msg}"
    );
    assert!(msg.contains("colour"), "{msg}");

    let (err, _, _dir) = parse_err(&format!(
        "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nboxes = [{{ size = [1, 1, 1] }}]\npoints = \"many\"\n"
    ));
    assert!(
        matches!(err, SceneError::Syntax { line: 8, .. }),
        "wrong type on line 8: {err}"
    );
}

#[test]
fn missing_file_names_the_key_and_the_resolved_path() {
    let (err, path, _dir) = parse_err(&format!(
        "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nmesh = \"models/nope.obj\"\npoints = 10\n"
    ));
    match &err {
        SceneError::MissingFile {
            path: p,
            key,
            resolved,
        } => {
            assert_eq!(p, &path);
            assert_eq!(key, "environment[0].mesh");
            assert_eq!(resolved, &path.parent().unwrap().join("models/nope.obj"));
        }
        other => panic!("expected a missing file, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("environment[0].mesh") && msg.contains("nope.obj"),
        "{msg}"
    );
}

#[test]
fn invalid_values_say_what_was_expected() {
    let (err, _, _dir) =
        parse_err("[haptic]\nname = \"p\"\nbox = [0.1, 0.1, 0.1]\nmesh = \"x.obj\"\n");
    let msg = err.to_string();
    assert!(
        matches!(&err, SceneError::Invalid { key, .. } if key == "haptic"),
        "{msg}"
    );
    assert!(msg.contains("both `box` and `mesh`"), "{msg}");

    let (err, _, _dir) = parse_err("[haptic]\nname = \"p\"\n");
    assert!(
        err.to_string().contains("neither `box` nor `mesh`"),
        "{err}"
    );

    let cases = [
        ("sdf_resolution = 0\n", "haptic.sdf_resolution"),
        ("box = [0.1, -1, 0.1]\n", "haptic.box"),
    ];
    for (line, key) in cases {
        let text = format!(
            "[haptic]\nname = \"p\"\n{line}{}",
            if line.starts_with("box") {
                ""
            } else {
                "box = [1, 1, 1]\n"
            }
        );
        let (err, _, _dir) = parse_err(&text);
        assert!(
            matches!(&err, SceneError::Invalid { key: k, .. } if k == key),
            "{key}: {err}"
        );
    }
    let (err, _, _dir) = parse_err(&format!(
        "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nboxes = [{{ size = [1, 1, 1] }}]\npoints = 0\n"
    ));
    assert!(
        matches!(&err, SceneError::Invalid { key, .. } if key == "environment[0].points"),
        "{err}"
    );
    assert!(err.to_string().contains("at least 4"), "{err}");
}

/// `[contact]` and `[coupling]` values are checked against each parameter's one
/// definition (`haptics::scene::params::Param`): the same key, range and message as `--set` and
/// the application's sliders.
#[test]
fn contact_and_coupling_values_are_checked_by_their_parameter_definition() {
    use haptics::scene::params::Param;
    let cases = [
        (
            "[coupling]\nstatic_damping = 0.97\n",
            Param::StaticDamping,
            "[0, 0.95]",
        ),
        (
            "[coupling]\nstiffness = -300.0\n",
            Param::CouplingStiffness,
            "(0, 1000000000]",
        ),
        (
            "[coupling]\nsaturation_force = nan\n",
            Param::SaturationForce,
            "[0, 1000000]",
        ),
        (
            "[contact]\ncold_fraction = 0.0\n",
            Param::ColdFraction,
            "(0, 1]",
        ),
        (
            "[contact]\nwarm_budget = 0\n",
            Param::WarmBudget,
            "a whole number in [1, 1000000000]",
        ),
    ];
    for (section, param, range) in cases {
        let (err, _, _dir) = parse_err(&format!("{HAPTIC_BOX}{section}"));
        let key = param.spec().key;
        assert!(
            matches!(&err, SceneError::Invalid { key: k, .. } if k == key),
            "{key}: {err}"
        );
        assert!(err.to_string().contains(range), "{key}: {err}");
    }
    // Accepted values land where the session reads them, with the rest at their defaults.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    let text = format!("{HAPTIC_BOX}[coupling]\nstatic_damping = 0.25\nsaturation_force = 0\n[contact]\nwarm_budget = 123\n");
    let file = haptics::scene::format::parse_scene_str(&text, &path).unwrap();
    let s = file.settings();
    assert_eq!(Param::StaticDamping.get(&s), 0.25);
    assert_eq!(s.coupling.saturation_force, None);
    assert_eq!(s.contact.warm_budget, 123);
    assert_eq!(
        s.coupling.stiffness,
        haptics::coupling::CouplingParams::default().stiffness
    );
}

#[test]
fn shipped_scenes_parse() {
    let dir = repo().join("assets/scenes");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            let s = parse_scene(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.description.is_empty(), "{}", p.display());
            names.push(s.scene_name());
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "alpha-puzzle",
            "bridge-probe",
            "hose-disassembly",
            "hoses-gap",
            "muscle-palpate",
            "peg-shaft"
        ]
    );
}

/// The shipped peg-in-shaft scene, loaded fully: centred in the shaft the peg touches no
/// wall point; moved 3 cm sideways (past the 2 cm clearance) it does.
#[test]
fn peg_shaft_loads_and_the_clearance_is_right() {
    let cache = tempfile::tempdir().unwrap();
    let (scene, report) = load(&repo().join("assets/scenes/peg-shaft.toml"), cache.path());
    assert_eq!(report.computed.len(), 2, "{report:?}");
    let shaft = &scene.environment[0];
    assert_eq!(shaft.shell.len(), 500 * 64);
    let HapticField::Rigid(field) = &scene.haptic.field else {
        panic!("the peg is rigid");
    };
    let inside = |dx: f64| {
        // The peg lowered to the middle of the shaft, shifted by dx along x.
        let peg = nalgebra::Isometry3::translation(dx, 0.5, 0.0);
        shaft
            .shell
            .points
            .iter()
            .filter(|p| field.lookup(&(peg.inverse() * (shaft.pose * **p))) < 0.0)
            .count()
    };
    assert_eq!(inside(0.0), 0);
    assert_eq!(inside(0.015), 0);
    assert!(inside(0.03) > 10, "{}", inside(0.03));
}

/// Every shipped scene loads into an empty cache, computing its artifacts (reading back
/// only those an earlier object of the same load wrote: the two hoses of `hoses-gap` are
/// one mesh, so they share one pointshell); the second load computes none, rejects none,
/// reads back every artifact of the first and gives the same pointshells, bit for bit.
/// (`benches/scene.rs` times both loads.)
#[test]
fn shipped_scenes_load_from_their_cache_the_second_time() {
    let cache = tempfile::tempdir().unwrap();
    for name in ["peg-shaft", "hoses-gap", "bridge-probe"] {
        let path = repo().join(format!("assets/scenes/{name}.toml"));
        let (scene, first) = load(&path, cache.path());
        let (again, second) = load(&path, cache.path());
        assert!(!first.computed.is_empty(), "{name}: {first:?}");
        assert!(first.rejected.is_empty(), "{name}: {first:?}");
        assert!(
            first.reused.len() < first.computed.len(),
            "{name}: the first load read back more than it computed: {first:?}"
        );
        assert!(second.computed.is_empty(), "{name}: {second:?}");
        assert!(second.rejected.is_empty(), "{name}: {second:?}");
        let sorted = |v: Vec<String>| {
            let mut v = v;
            v.sort();
            v
        };
        let first_all = [first.computed.clone(), first.reused.clone()].concat();
        assert_eq!(sorted(second.reused), sorted(first_all), "{name}");
        assert_eq!(scene.environment.len(), again.environment.len());
        for (a, b) in scene.environment.iter().zip(&again.environment) {
            assert_eq!(a.shell.points, b.shell.points, "{name}: {}", a.name);
            assert_eq!(a.shell.normals, b.shell.normals, "{name}: {}", a.name);
        }
    }
}

/// A scene whose held part and environment are glTF meshes (the fixture's two boxes, a
/// `.glb` held above a `.gltf`): they load through their node transforms, the held
/// part's distance field and the environment's pointshell are built from them.
#[test]
fn a_scene_reads_gltf_meshes() {
    let dir = tempfile::tempdir().unwrap();
    let gltf = repo().join("assets/models/gltf");
    let text = format!(
        "name = \"gltf\"\n[haptic]\nname = \"held\"\nmesh = \"{g}/two-boxes.glb\"\nsdf_resolution = 24\nposition = [0.0, 3.0, 0.0]\n\n[[environment]]\nname = \"base\"\nmesh = \"{g}/two-boxes.gltf\"\npoints = 16\nlevels = 2\n",
        g = gltf.display()
    );
    let path = write_scene(dir.path(), "gltf.toml", &text);
    let (scene, _) = load(&path, &dir.path().join("cache"));
    assert_eq!(scene.haptic.surface.triangles.len(), 24);
    assert_eq!(scene.environment[0].surface.vertices.len(), 16);
    assert!(!scene.environment[0].shell.is_empty());
}

/// The complete example of the README's "Scenes" section is a valid scene.
#[test]
fn readme_example_parses() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = &readme[readme.find("## Scenes").expect("a Scenes section")..];
    let start = section.find("```toml\n").expect("a toml example") + 8;
    let end = start + section[start..].find("```").unwrap();
    // Paths resolve as if the example were in assets/scenes.
    let path = repo().join("assets/scenes/readme-example.toml");
    let s = haptics::scene::format::parse_scene_str(&section[start..end], &path)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.scene_name(), "bridge-probe");
    assert_eq!(
        s.environment[0].deformable.as_ref().map(|d| d.r()),
        Some(20)
    );
}

/// Positions, grasp points and rotations are refused, naming the key, when they are not
/// finite or so large that their use overflows (a grasp of 1e308 made the coupling's SVD
/// spin forever): positions and grasp points within 1e6 scene units, rotation vectors
/// within 1e3 rad. Values at the bounds are accepted.
#[test]
fn huge_positions_grasps_and_rotations_are_refused_with_the_key() {
    let env = |line: &str| {
        format!(
            "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nboxes = [{{ size = [1, 1, 1] }}]\npoints = 8\n{line}"
        )
    };
    let env_box = |pos: &str| {
        format!(
            "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nboxes = [{{ size = [1, 1, 1], position = {pos} }}]\npoints = 8\n"
        )
    };
    let cases = [
        (
            format!("{HAPTIC_BOX}grasp = [0, 1e308, 0]\n"),
            "haptic.grasp",
            "1e6",
        ),
        (
            format!("{HAPTIC_BOX}grasp = [0, 0, -1.5e6]\n"),
            "haptic.grasp",
            "1e6",
        ),
        (
            format!("{HAPTIC_BOX}grasp = [nan, 0, 0]\n"),
            "haptic.grasp",
            "1e6",
        ),
        (
            format!("{HAPTIC_BOX}position = [1e308, 0, 0]\n"),
            "haptic.position",
            "1e6",
        ),
        (
            format!("{HAPTIC_BOX}position = [0, -inf, 0]\n"),
            "haptic.position",
            "1e6",
        ),
        (
            format!("{HAPTIC_BOX}rotation = [0, 0, 1e308]\n"),
            "haptic.rotation",
            "1e3",
        ),
        (
            format!("{HAPTIC_BOX}rotation = [1001, 0, 0]\n"),
            "haptic.rotation",
            "1e3",
        ),
        (
            format!("{HAPTIC_BOX}rotation = [0, inf, 0]\n"),
            "haptic.rotation",
            "1e3",
        ),
        (
            env("position = [0, 2e6, 0]\n"),
            "environment[0].position",
            "1e6",
        ),
        (
            env("rotation = [-1e308, 0, 0]\n"),
            "environment[0].rotation",
            "1e3",
        ),
        (
            env_box("[1e308, 0, 0]"),
            "environment[0].boxes[0].position",
            "1e6",
        ),
    ];
    for (text, key, bound) in &cases {
        let msg = invalid_key_message(text, key);
        assert!(
            msg.contains(bound) && msg.contains("finite"),
            "{key}: {msg}"
        );
    }
    // The bounds themselves are fine.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    for text in [
        format!("{HAPTIC_BOX}grasp = [1e6, -1e6, 0]\nposition = [0, 0, 1e6]\nrotation = [1e3, 0, -1e3]\n"),
        env("position = [-1e6, 0, 0]\nrotation = [0, 1e3, 0]\n"),
        env_box("[0, 0, -1e6]"),
    ] {
        haptics::scene::format::parse_scene_str(&text, &path)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

/// Every numeric scene key outside its range (or NaN/inf) is refused with the key, the
/// file and the allowed range; the range's ends are accepted.
#[test]
fn numeric_keys_out_of_range_are_refused_with_the_key_and_range() {
    // An environment box with 8 first-level points unless `line` sets them.
    let env = |line: &str| {
        let points = if line.contains("points") {
            ""
        } else {
            "points = 8\n"
        };
        format!(
            "{HAPTIC_BOX}\n[[environment]]\nname = \"e\"\nboxes = [{{ size = [1, 1, 1] }}]\n{points}{line}"
        )
    };
    let top = |line: &str| format!("{line}\n{HAPTIC_BOX}");
    let cases: Vec<(String, &str, &str)> = vec![
        (top("rate_hz = 50"), "rate_hz", "1e4"),
        (top("rate_hz = 20000"), "rate_hz", "1e4"),
        (top("rate_hz = nan"), "rate_hz", "1e4"),
        (top("workspace_scale = 1e-9"), "workspace_scale", "1e6"),
        (top("workspace_scale = inf"), "workspace_scale", "1e6"),
        (
            format!("{HAPTIC_BOX}sdf_resolution = 2048\n"),
            "haptic.sdf_resolution",
            "512",
        ),
        (
            format!("{HAPTIC_BOX}sdf_resolution = 2\n"),
            "haptic.sdf_resolution",
            "512",
        ),
        (
            "[haptic]\nname = \"p\"\nbox = [0.1, 1e300, 0.1]\n".to_string(),
            "haptic.box",
            "1e6",
        ),
        (
            env("points = 100000000"),
            "environment[0].points",
            "10000000",
        ),
        (
            env("iterations = 1000000"),
            "environment[0].iterations",
            "10000",
        ),
        (env("levels = 13"), "environment[0].levels", "12"),
        (env("offset = -1"), "environment[0].offset", ">= 0"),
        (env("offset = nan"), "environment[0].offset", ">= 0"),
    ];
    for (text, key, bound) in &cases {
        let msg = invalid_key_message(text, key);
        assert!(msg.contains(bound), "{key}: {msg}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    for text in [
        top("rate_hz = 100\nworkspace_scale = 1e-6"),
        top("rate_hz = 10000\nworkspace_scale = 1e6"),
        format!("{HAPTIC_BOX}sdf_resolution = 512\n"),
        env("points = 10000000\niterations = 10000\nlevels = 12"),
    ] {
        haptics::scene::format::parse_scene_str(&text, &path)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

/// `stiffness_slices` belongs to a muscle (its cubature) and lies in 1..=64.
#[test]
fn stiffness_slices_need_a_muscle_and_a_range() {
    // The bundled scene with its model paths made absolute (it is parsed elsewhere).
    let models = repo().join("assets/models/");
    let muscle = std::fs::read_to_string(repo().join("assets/scenes/muscle-palpate.toml"))
        .unwrap()
        .replace("\"../models/", &format!("\"{}", models.display()));
    let with = |line: &str| {
        muscle.replace(
            "damping_stiffness = 0.01\n",
            &format!("damping_stiffness = 0.01\n{line}\n"),
        )
    };
    let key = "environment[0].deformable.stiffness_slices";
    for n in [0, 65] {
        let msg = invalid_key_message(&with(&format!("stiffness_slices = {n}")), key);
        assert!(msg.contains("1 to 64"), "{msg}");
    }
    let passive = with("stiffness_slices = 4")
        .lines()
        .filter(|l| !l.starts_with("fibres ="))
        .collect::<Vec<_>>()
        .join("\n");
    let msg = invalid_key_message(&passive, key);
    assert!(msg.contains("fibres"), "{msg}");
    let path = repo().join("assets/scenes/s.toml");
    for n in [1, 64] {
        let file = haptics::scene::format::parse_scene_str(
            &with(&format!("stiffness_slices = {n}")),
            &path,
        )
        .unwrap();
        assert_eq!(
            file.environment[0]
                .deformable
                .as_ref()
                .unwrap()
                .stiffness_slices,
            Some(n)
        );
    }
}
