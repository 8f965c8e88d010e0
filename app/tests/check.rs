//! `haptics check` the way an engineer runs it in a pipeline: an OMPL.app-style problem
//! (`assets/check/slot`: a 0.2 m cube, written as a centimetre Z_UP COLLADA file with
//! nested node transforms, through a 0.3 m slot in a wall), paths that pass and collide,
//! the JSON report, the exit status (0 free, 1 collides, 2 bad input) and the errors.

#[path = "common/cli.rs"]
mod cli;

use std::path::Path;

use cli::{haptics, stderr, stdout};

const CFG: &str = "assets/check/slot/slot.cfg";

/// Pixels of the plot's contact shading (light red: the plot's red at 18% over white).
fn shaded_pixels(png_path: &Path) -> usize {
    let (rgba, _, _) = read_png(png_path);
    rgba.chunks(4)
        .filter(|p| {
            (p[0] as i32 - 248).abs() <= 3
                && (p[1] as i32 - 216).abs() <= 3
                && (p[2] as i32 - 216).abs() <= 3
        })
        .count()
}

/// An RGBA PNG's pixels and size.
fn read_png(path: &Path) -> (Vec<u8>, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    let rgba = match info.color_type {
        png::ColorType::Rgba => buf,
        png::ColorType::Rgb => buf
            .chunks(3)
            .flat_map(|p| [p[0], p[1], p[2], 255])
            .collect(),
        other => panic!("{}: unexpected colour type {other:?}", path.display()),
    };
    (rgba, info.width, info.height)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("the report is JSON")
}

#[test]
fn the_collada_fixture_loads_with_ompl_conventions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (mesh, origin) =
        haptics_app::cli::check::read_mesh(&root.join("assets/check/slot/robot.dae")).unwrap();
    // 20 cm cube at x = 500 cm in a Z_UP file: centre (5, 0, 0) m after the unit and the
    // up-axis conversion, edges 0.2 m.
    assert!(
        (origin.coords - nalgebra::Vector3::new(5.0, 0.0, 0.0)).norm() < 1e-12,
        "{origin}"
    );
    let b = mesh.bounding_box();
    assert!((b.extent() - nalgebra::Vector3::repeat(0.2)).norm() < 1e-12);
    assert_eq!(mesh.triangles.len(), 12);
    assert!(mesh.signed_volume() > 0.0, "outward after the conversion");
}

#[test]
fn a_free_path_passes_with_the_analytic_clearance() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let plot = dir.path().join("c.png");
    let o = haptics(&[
        "check",
        CFG,
        "--path",
        "assets/check/slot/pass.path",
        "--report",
        report.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("slot: collision-free"), "{out}");
    let j = json(&report);
    assert_eq!(j["verdict"], "collision-free", "{j}");
    assert!(j["first_collision"].is_null(), "{j}");
    // The minimum is the distance of a pair of triangles found (never below the true
    // 0.05) and certified to the tolerance (the path comes no nearer than it minus the
    // tolerance).
    let (min, tol) = (
        j["min_clearance"].as_f64().unwrap(),
        j["tolerance"].as_f64().unwrap(),
    );
    assert!(min >= 0.05 - 1e-12 && min <= 0.05 + tol, "{j}");
    assert_eq!(j["max_penetration"].as_f64(), Some(0.0));
    assert_eq!(j["contacts"].as_array().unwrap().len(), 0);
    assert_eq!(shaded_pixels(&plot), 0, "no contact, nothing shaded");

    // The same path, with a required clearance above what it has: exit 1.
    let o = haptics(&[
        "check",
        CFG,
        "--path",
        "assets/check/slot/pass.path",
        "--min-clearance",
        "0.06",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("required clearance 0.06: NOT met"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_colliding_path_reports_where_and_how_deep() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.json");
    let plot = dir.path().join("c.png");
    let shot = dir.path().join("worst.png");
    let o = haptics(&[
        "check",
        CFG,
        "--path",
        "assets/check/slot/collide.path",
        "--report",
        report.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--screenshot",
        shot.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("slot: COLLIDES"), "{}", stdout(&o));
    let j = json(&report);
    assert_eq!(j["verdict"], "collides", "{j}");
    // First contact at t = 0.425 (the leading face reaches the wall); 0.01 deep
    // (0.06 - 0.05 sideways: the translational depth).
    assert_eq!(j["first_collision"]["segment"], 0);
    let t = j["first_collision"]["t"].as_f64().unwrap();
    assert!((t - 0.425).abs() < 1e-3, "{t}");
    assert!(
        (j["max_penetration"].as_f64().unwrap() - 0.01).abs() < 1e-3,
        "{j}"
    );
    assert!(
        (j["min_clearance"].as_f64().unwrap() + 0.01).abs() < 1e-3,
        "{j}"
    );
    assert_eq!(j["contacts"][0]["objects"][0], "world", "{j}");
    // The contact, 0.425 to 0.575 of the path, is shaded: about 15% of the plot's
    // 1,140 x 600 pixel area, less what the lines and the grid cover.
    let shaded = shaded_pixels(&plot);
    assert!(
        (40_000..110_000).contains(&shaded),
        "{shaded} shaded pixels"
    );
    // The worst pose (deepest), rendered with the cube's corners inside the wall
    // marked, on a 1280 x 720 frame mostly filled by the two parts (framed on the
    // robot).
    let out = stdout(&o);
    let marked: usize = out
        .split("worst pose (")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(marked >= 1, "{out}");
    let (rgba, w, h) = read_png(&shot);
    assert_eq!((w, h), (1280, 720));
    let bg = haptics_app::render::offscreen::background_srgb();
    let drawn = rgba
        .chunks(4)
        .filter(|p| {
            p.iter()
                .zip(bg)
                .take(3)
                .any(|(a, b)| (*a as i32 - b as i32).abs() > 8)
        })
        .count();
    assert!(drawn > 50_000, "only {drawn} pixels drawn");
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let slot = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/check/slot");
    for f in ["robot.dae", "wall.obj"] {
        std::fs::copy(slot.join(f), d.join(f)).unwrap();
    }
    let cfg = std::fs::read_to_string(slot.join("slot.cfg")).unwrap();
    let write = |name: &str, text: &str| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let good_cfg = write("good.cfg", &cfg);
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![write("missing.cfg", &cfg.replace("goal.theta=0\n", ""))],
            "missing.cfg:3: [problem] has no key 'goal.theta'".into(),
        ),
        (
            vec![
                good_cfg.clone(),
                "--path".into(),
                write("cols.path", "0 0 0 0 0 0 1\n1 2 3\n"),
            ],
            "cols.path:2: expected 7 numbers".into(),
        ),
        (
            vec![
                good_cfg.clone(),
                "--path".into(),
                write("nan.path", "0 0 NaN 0 0 0 1\n"),
            ],
            "nan.path:1: expected a finite number for z".into(),
        ),
        (
            vec![
                good_cfg.clone(),
                "--path".into(),
                write("zero.path", "0 0 0 0 0 0 0\n"),
            ],
            "zero.path:1: expected a unit quaternion".into(),
        ),
        (
            vec![write(
                "nomesh.cfg",
                &cfg.replace("world=wall.obj", "world=absent.obj"),
            )],
            "absent.obj".into(),
        ),
        (
            vec![write(
                "3ds.cfg",
                &cfg.replace("world=wall.obj", "world=wall.3ds"),
            )],
            "3D Studio (.3ds) meshes are not supported".into(),
        ),
    ];
    for (args, expect) in cases {
        let mut all = vec!["check".to_string()];
        all.extend(args);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        let o = haptics(&refs);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(
            err.contains(&expect),
            "{all:?}: expected '{expect}' in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A scene and a recorded stylus trajectory: the peg follows the hand through the
/// scene's workspace mapping. The start of the insertion is free; around 42% of the
/// recording the hand's motion would take the rigid peg into the shaft (the virtual
/// coupling keeps it out in the session): the check says where, and with which object.
#[test]
fn a_scene_trajectory_is_checked_through_the_workspace_mapping() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text =
        std::fs::read_to_string(root.join("assets/trajectories/peg-shaft-insert.csv")).unwrap();
    let mut lines = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header = lines.next().unwrap().to_string();
    let rows: Vec<&str> = lines.collect();
    let dir = tempfile::tempdir().unwrap();
    let cut = |name: &str, range: std::ops::Range<usize>| {
        let p = dir.path().join(name);
        let body: Vec<&str> = rows[range].to_vec();
        std::fs::write(&p, format!("{header}\n{}\n", body.join("\n"))).unwrap();
        p
    };
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let run = |traj: &Path, report: &Path| {
        haptics(&[
            "check",
            "assets/scenes/peg-shaft.toml",
            "--trajectory",
            traj.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ])
    };
    let free = cut("free.csv", 0..1500);
    let report = dir.path().join("free.json");
    let o = run(&free, &report);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let j = json(&report);
    assert!(j["min_clearance"].as_f64().unwrap() > 0.0, "{j}");

    let touching = cut("touch.csv", 2600..2900);
    let report = dir.path().join("touch.json");
    let o = run(&touching, &report);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let j = json(&report);
    assert_eq!(j["contacts"][0]["objects"][0], "shaft", "{j}");
    // The peg comes within the tolerance (1 mm) of the shaft 134 samples in, and meets
    // it 144 samples in (sample 2744 of the whole recording): the first collision.
    assert_eq!(j["first_collision"]["segment"], 144, "{j}");
}

/// The hose-disassembly scene (`assets/scenes/hose-disassembly.toml`): a 0.5-thick plate
/// pulled up through a 0.3-wide gap between two deformable hoses. Rigid, the path
/// collides (0.1 into each hose); compliant, it passes, the hoses pushed 0.1 aside, and
/// the report gives the force; the limits turn it into a failure.
#[test]
fn hoses_give_way_in_the_compliant_check() {
    let dir = tempfile::tempdir().unwrap();
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let report = dir.path().join("r.json");
    let base = [
        "check",
        "assets/scenes/hose-disassembly.toml",
        "--path",
        "assets/check/hose/pull.path",
        "--cache",
        cache.to_str().unwrap(),
    ];
    let o = haptics(&base);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    // The translational depth: 0.1 into each hose, so no sideways move of less than
    // 0.1 + 0.3 frees it; the shortest separation is along the pull (y), out of the
    // hoses' cross-section: more than the 0.1 overlap, less than the plate's 0.5
    // thickness plus that overlap.
    let out = stdout(&o);
    let depth: f64 = out
        .split("max penetration ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no max penetration in {out}"));
    assert!(depth > 0.1 && depth <= 0.6, "{out}");
    assert!(
        out.contains("to separate along (0.000, 1.000, 0.000)")
            || out.contains("to separate along (0.000, -1.000, 0.000)"),
        "{out}"
    );

    // Samples every 0.05 of motion (121 equilibria) keep the debug binary quick.
    let compliant = [&base[..], &["--compliant", "--compliant-step", "0.05"]].concat();
    let o = haptics(&[&compliant[..], &["--report", report.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let j = json(&report);
    let c = &j["compliant"];
    assert_eq!(c["unconverged"], 0, "{j}");
    // Each hose gives the 0.1 of overlap, less the penalty's compression (a few
    // thousandths), plus the ovalization of its cross-section: 0.095 to 0.125.
    let d = c["max_displacement"].as_f64().unwrap();
    assert!((0.095..0.125).contains(&d), "{j}");
    // The force one hose pushes with: a clamped-clamped tube of E = 500 bent 0.1 at
    // mid-span takes about 33 N as an Euler-Bernoulli beam (192 E I d / L^3); the
    // crushing of its thick wall under a local load makes it softer. 5 to 33 N.
    let f = c["max_force"].as_f64().unwrap();
    assert!((5.0..33.0).contains(&f), "{j}");
    let force = format!("{f}");

    // The same path with a force limit below it, and a displacement limit below it.
    let o = haptics(&[&compliant[..], &["--max-force", "5"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("force limit 5 N: NOT met"),
        "{}",
        stdout(&o)
    );
    let o = haptics(&[&compliant[..], &["--max-displacement", "0.05"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("displacement limit 0.05: NOT met"),
        "{}",
        stdout(&o)
    );
    let o = haptics(
        &[
            &compliant[..],
            &["--max-force", "40", "--max-displacement", "0.2"],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), force);

    // --compliant on an OMPL problem (no deformable objects): bad input.
    let o = haptics(&["check", CFG, "--compliant"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("--compliant needs a scene"),
        "{}",
        stderr(&o)
    );
}
