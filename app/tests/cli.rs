//! The `haptics` binary driven the way a user drives it: help, the demo, inspect,
//! voxelize and fullsim, and readable failures on bad input.

#[path = "common/cli.rs"]
mod cli;

use cli::{haptics, stderr, stdout};

fn model(rel: &str) -> String {
    haptics::assets::model(rel).to_string_lossy().into_owned()
}

#[test]
fn help_lists_the_subcommands() {
    let o = haptics(&["--help"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for cmd in [
        "beam",
        "fullsim",
        "inspect",
        "voxelize",
        "run",
        "screenshot",
    ] {
        assert!(s.contains(cmd), "--help does not mention {cmd}:\n{s}");
    }
}

#[test]
fn demo_reports_tip_displacement_and_step_time() {
    let o = haptics(&["beam", "--steps", "40"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("tip = vertex"), "{s}");
    assert!(s.contains("time per step: median"), "{s}");
    // After 40 ms under gravity along -x the free end has moved along -x: the
    // last table row's ux is negative and of the order g t^2 / 2 = 8 mm or less.
    let last_row = s
        .lines()
        .rfind(|l| l.trim_start().starts_with("0.04"))
        .expect("a row at t = 0.04 s");
    let ux: f64 = last_row.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(ux < 0.0 && ux > -0.01, "ux = {ux}");
}

#[test]
fn inspect_volume_mesh_reports_counts_volume_and_mass() {
    let o = haptics(&["inspect", &model("beam3/beam3.veg")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("vertices: 208"), "{s}");
    assert!(s.contains("elements: 75 (hexahedra)"), "{s}");
    // 0.12 x 1 x 0.04 m at 1000 kg/m^3.
    assert!(s.contains("total volume: 4.800000e-3"), "{s}");
    assert!(s.contains("total mass: 4.800000e0"), "{s}");
    assert!(
        s.contains("BODY: density 1000 kg/m^3, E 10000000 Pa, nu 0.45 (75 elements)"),
        "{s}"
    );
    assert!(s.contains("inverted or degenerate elements: none"), "{s}");
}

/// A COLLADA robot: the counts, and the origin OMPL.app gives it (the mean of the
/// vertices assimp imports, as the core's reader computes it).
#[test]
fn inspect_reads_collada_and_prints_the_robot_origin() {
    let dae =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/check/slot/robot.dae");
    let o = haptics(&["inspect", dae.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("surface mesh"), "{s}");
    let c = haptics::mesh::collada::read_collada(&dae).unwrap();
    let m = c.vertex_mean();
    let expect = format!("({:.6}, {:.6}, {:.6})", m.x, m.y, m.z);
    assert!(
        s.contains(&format!(
            "robot origin (OMPL.app: the mean of the vertices assimp imports): {expect}"
        )),
        "{s}"
    );
}

/// glTF wherever a surface mesh is read: `inspect` (with the OMPL.app origin), `sdf`,
/// `pointshell`, and `check` and `plan` on a problem whose robot is the `.glb` and whose
/// world is the `.gltf` (the fixture's two boxes, 2 units across in y): a straight
/// motion 10 units above the world is free, one through it collides.
#[test]
fn gltf_meshes_are_read_by_inspect_sdf_pointshell_check_and_plan() {
    let (gltf, glb) = (model("gltf/two-boxes.gltf"), model("gltf/two-boxes.glb"));
    for f in [&gltf, &glb] {
        let o = haptics(&["inspect", f]);
        assert!(o.status.success(), "{}", stderr(&o));
        let s = stdout(&o);
        assert!(s.contains("closed: yes"), "{s}");
        assert!(s.contains("connected components: 2"), "{s}");
        assert!(s.contains("robot origin"), "{s}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let o = haptics(&["sdf", &glb, "-r", "24", "-o", &out("b.dist")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = haptics(&[
        "pointshell",
        &gltf,
        "--points",
        "16",
        "--levels",
        "2",
        "-o",
        &out("b.pshell"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cfg = |y0: f64| {
        let mut s = format!("[problem]\nname=gltf\nrobot={glb}\nworld={gltf}\n");
        for (k, x) in [("start", -20.0), ("goal", 20.0)] {
            s += &format!("{k}.x={x}\n{k}.y={y0}\n{k}.z=0\n{k}.axis.x=0\n{k}.axis.y=0\n{k}.axis.z=1\n{k}.theta=0\n");
        }
        for (k, v) in [("min", -30), ("max", 30)] {
            s += &format!("volume.{k}.x={v}\nvolume.{k}.y={v}\nvolume.{k}.z={v}\n");
        }
        s
    };
    let write = |name: &str, y0: f64| {
        let p = out(name);
        std::fs::write(&p, cfg(y0)).unwrap();
        std::fs::write(
            format!("{p}.path"),
            format!("-20 {y0} 0 0 0 0 1\n20 {y0} 0 0 0 0 1\n"),
        )
        .unwrap();
        p
    };
    let free = write("free.cfg", 10.0);
    let o = haptics(&["check", &free, "--path", &format!("{free}.path")]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let through = write("through.cfg", 0.0);
    let o = haptics(&["check", &through, "--path", &format!("{through}.path")]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let o = haptics(&["plan", &free, "--out", &out("p.path"), "--time-limit", "10"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn inspect_surface_mesh_reports_closedness() {
    let o = haptics(&["inspect", &model("beam3/beam3.obj")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("surface mesh"), "{s}");
    assert!(s.contains("closed: yes"), "{s}");
    assert!(s.contains("connected components: 1"), "{s}");
    // The same beam with its last face removed has a hole.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(haptics::assets::model("beam3/beam3.obj")).unwrap();
    let last_face = text.rfind("\nf ").unwrap();
    let end = text[last_face + 1..]
        .find('\n')
        .map_or(text.len(), |e| last_face + 1 + e);
    // Drop the face count from the header comment too, or the reader rightly reports
    // a truncated file.
    let holed = format!("{}{}", &text[..last_face], &text[end..])
        .lines()
        .filter(|l| !l.starts_with("# Number of faces"))
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.path().join("holed.obj");
    std::fs::write(&path, holed).unwrap();
    let o = haptics(&["inspect", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    // The removed face was a quad: its four edges are now on the boundary.
    assert!(s.contains("closed: no (4 boundary edges"), "{s}");
    // The bridge is a set of separate closed parts that intersect (a polygon soup).
    let o = haptics(&["inspect", &model("simpleBridge/simpleBridge.obj")]);
    let s = stdout(&o);
    let comps: usize = s
        .lines()
        .find_map(|l| l.strip_prefix("connected components: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(comps > 1, "{s}");
}

#[test]
fn inspect_lists_inverted_elements_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(haptics::assets::model("beam3/beam3_tet.veg")).unwrap();
    // Element 3 is "3 3 2 54 4": swap two nodes to invert it.
    let bad = text.replacen("\n3 3 2 54 4\n", "\n3 2 3 54 4\n", 1);
    assert_ne!(bad, text);
    let path = dir.path().join("inverted.veg");
    std::fs::write(&path, bad).unwrap();
    let o = haptics(&["inspect", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("inverted or degenerate elements: 1"), "{s}");
    assert!(s.contains("element 3 (0-based 2): inverted"), "{s}");
    // Simulating it is refused, naming the element.
    let o = haptics(&["fullsim", path.to_str().unwrap(), "--steps", "1"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("element 3 (0-based 2) is inverted"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_gives_file_and_line_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(haptics::assets::model("beam3/beam3.veg")).unwrap();
    let cases = [
        // (name, edit, expected fragment of the message)
        (
            "nan.veg",
            text.replacen("1 -0.06 0 -0.02", "1 nan 0 -0.02", 1),
            "line 6",
        ),
        (
            "garbled.veg",
            text.replacen("1 -0.06 0 -0.02", "1 -0.06 abc -0.02", 1),
            "line 6",
        ),
        (
            "range.veg",
            text.replacen("1 1 53 55 3 2 54 56 4", "1 1 53 55 3 2 54 56 999", 1),
            "out of range",
        ),
        (
            "nomaterial.veg",
            text.replacen("*MATERIAL BODY", "*MATERIAL OTHER", 1),
            "BODY",
        ),
        (
            "truncated.veg",
            text[..text.len() / 2].to_string(),
            "truncated.veg",
        ),
    ];
    for (name, content, fragment) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let o = haptics(&["inspect", path.to_str().unwrap()]);
        assert!(!o.status.success(), "{name} was accepted");
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{name} panicked: {e}");
        assert!(
            e.contains(name),
            "{name}: message does not name the file: {e}"
        );
        assert!(
            e.contains(fragment),
            "{name}: message lacks '{fragment}': {e}"
        );
    }
    let o = haptics(&["inspect", "no/such/file.veg"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no/such/file.veg"));
    let o = haptics(&["inspect", "Cargo.toml"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unsupported"), "{}", stderr(&o));
}

#[test]
fn voxelize_writes_a_mesh_that_inspects_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam_vox.veg");
    let interp = dir.path().join("beam_vox.interp");
    let o = haptics(&[
        "voxelize",
        &model("beam3/beam3.obj"),
        "--resolution",
        "40",
        "--out",
        out.to_str().unwrap(),
        "--interp",
        interp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("render vertices embedded"));
    let o = haptics(&["inspect", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("hexahedra"), "{s}");
    assert!(s.contains("inverted or degenerate elements: none"), "{s}");
    let interp = haptics::mesh::interp::read_interp(&interp, None, None).unwrap();
    assert_eq!(interp.nodes_per_vertex, 8);
}

#[test]
fn fullsim_writes_a_csv_of_the_reported_vertex() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("u.csv");
    let o = haptics(&[
        "fullsim",
        &model("beam3/beam3_tet.veg"),
        "--fixed",
        &model("beam3/beam3.bou"),
        "--steps",
        "20",
        "--gravity",
        "0,0,-9.81",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "step,t,ux,uy,uz");
    assert_eq!(lines.len(), 21);
    let uz: f64 = lines[20].split(',').nth(4).unwrap().parse().unwrap();
    assert!(uz < 0.0, "the tip falls along -z: uz = {uz}");
    let o = haptics(&["fullsim", &model("beam3/beam3.veg"), "--gravity", "0,0"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("three comma-separated numbers"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn replay_refuses_a_tolerance_that_is_not_a_finite_non_negative_number() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("log.csv");
    for tol in ["nan", "inf", "-1e-6"] {
        let o = haptics(&[
            "replay",
            "assets/scenes/bridge-probe.toml",
            "assets/trajectories/bridge-probe-poke.csv",
            "--out",
            out.to_str().unwrap(),
            "--compare",
            "assets/golden/bridge-probe-poke.log.csv",
            &format!("--tol={tol}"),
        ]);
        assert!(!o.status.success(), "--tol {tol} was accepted");
        let e = stderr(&o);
        assert!(e.contains("--tol"), "{e}");
        assert!(e.contains(">= 0"), "{e}");
        assert!(!out.exists(), "--tol {tol}: the replay ran");
    }
}

#[test]
fn simulate_validates_its_numeric_flags_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.csv");
    let cases: [(&[&str], &str, &str); 9] = [
        (&["--dt", "1e308"], "--dt", "longer than 1 s"),
        (&["--dt", "0"], "--dt", "> 0"),
        (&["--dt", "nan"], "--dt", "not finite"),
        (&["--dt", "-1e-3"], "--dt", "> 0"),
        (&["--steps", "0"], "--steps", "outside 1..="),
        (&["--damping-mass", "-1"], "--damping-mass", ">= 0"),
        (
            &["--damping-stiffness", "inf"],
            "--damping-stiffness",
            "not finite",
        ),
        (
            &["--newton-iterations", "0"],
            "--newton-iterations",
            "outside 1..=100",
        ),
        (&["--modes", "0"], "--modes", "outside 1..="),
    ];
    for (flags, name, fragment) in cases {
        let mut args = vec![
            "simulate",
            "assets/models/vega-beam3-fixture/beam3_lin10.cub",
            "--out",
            out.to_str().unwrap(),
        ];
        // `--flag=value` so that negative numbers are not taken for flags.
        let joined = format!("{}={}", flags[0], flags[1]);
        args.push(&joined);
        let o = haptics(&args);
        assert!(!o.status.success(), "{flags:?} was accepted");
        let e = stderr(&o);
        assert!(e.contains(name), "{flags:?}: {e}");
        assert!(e.contains(fragment), "{flags:?}: lacks '{fragment}': {e}");
        assert!(!e.contains("panicked"), "{flags:?}: {e}");
        assert!(!out.exists(), "{flags:?}: the simulation ran");
    }
    // --modes beyond the model's r is refused once the model is loaded.
    let o = haptics(&[
        "simulate",
        "assets/models/vega-beam3-fixture/beam3_lin10.cub",
        "--out",
        out.to_str().unwrap(),
        "--modes",
        "11",
        "--steps",
        "2",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--modes: 11 is outside 1..=10"),
        "{}",
        stderr(&o)
    );
    // Valid values still run.
    let o = haptics(&[
        "simulate",
        "assets/models/vega-beam3-fixture/beam3_lin10.cub",
        "--out",
        out.to_str().unwrap(),
        "--dt",
        "1",
        "--steps",
        "2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn devices_check_refuses_an_axis_mapped_twice() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string("../devices/profiles/generic-ffb.toml").unwrap();
    let bad = text.replacen(
        "{ axis = \"y\", offset = 5,",
        "{ axis = \"x\", offset = 5,",
        1,
    );
    assert_ne!(bad, text);
    let path = dir.path().join("twice.toml");
    std::fs::write(&path, &bad).unwrap();
    let o = haptics(&["devices", "--check", path.to_str().unwrap()]);
    assert!(!o.status.success(), "accepted: {}", stdout(&o));
    let e = stderr(&o);
    assert!(e.contains("twice.toml:"), "{e}");
    assert!(
        e.contains("axis `x` is mapped by the fields at offsets 1 and 5"),
        "{e}"
    );
}

#[test]
fn invalid_utf8_in_a_scene_or_trajectory_gives_line_and_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("log.csv");
    // A scene with an invalid byte on line 3.
    let scene = dir.path().join("bad-scene.toml");
    let mut bytes = b"# a scene\n# line 2\nname = \"ab".to_vec();
    let at = bytes.len();
    bytes.extend_from_slice(b"\xff\"\n");
    std::fs::write(&scene, &bytes).unwrap();
    let o = haptics(&[
        "replay",
        scene.to_str().unwrap(),
        "assets/trajectories/bridge-probe-poke.csv",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("bad-scene.toml:3:"), "{e}");
    assert!(e.contains(&format!("byte offset {at}")), "{e}");
    // A trajectory with an invalid byte on line 2.
    let text = std::fs::read("../assets/trajectories/bridge-probe-poke.csv").unwrap();
    let first_nl = text.iter().position(|&b| b == b'\n').unwrap();
    let mut bad = text.clone();
    bad[first_nl + 1] = 0xfe;
    let traj = dir.path().join("bad-traj.csv");
    std::fs::write(&traj, &bad).unwrap();
    let o = haptics(&[
        "replay",
        "assets/scenes/bridge-probe.toml",
        traj.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("bad-traj.csv:2:"), "{e}");
    assert!(e.contains(&format!("byte offset {}", first_nl + 1)), "{e}");
}

#[test]
fn an_os_error_is_printed_once() {
    let o = haptics(&[
        "replay",
        "assets/scenes/bridge-probe.toml",
        "no/such/trajectory.csv",
        "--out",
        "target/never-written.csv",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert_eq!(
        e.matches("No such file or directory").count(),
        1,
        "the OS error is repeated:\n{e}"
    );
    assert!(e.contains("no/such/trajectory.csv"), "{e}");
}

/// Every numeric flag refuses NaN, infinity and values outside its range before any work
/// starts: exit code 2 (a usage error), and the message names the flag and the range.
#[test]
fn numeric_flags_out_of_range_are_refused_with_the_flag_and_range() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["bake", "m.veg", "--out", "o"], "--basis", "0"),
        (&["bake", "m.veg", "--out", "o"], "--basis", "201"),
        (&["bake", "m.veg", "--out", "o"], "--linear-modes", "501"),
        (&["bake", "m.obj", "--out", "o"], "--resolution", "513"),
        (&["pointshell", "m.obj", "--out", "o"], "--points", "0"),
        (&["pointshell", "m.obj", "--out", "o"], "--levels", "13"),
        (&["pointshell", "m.obj", "--out", "o"], "--offset", "nan"),
        (&["pointshell", "m.obj", "--out", "o"], "--offset", "-1"),
        (
            &["pointshell", "m.obj", "--out", "o"],
            "--iterations",
            "10001",
        ),
        (&["pointshell", "m.obj", "--out", "o"], "--step", "0"),
        (
            &["pointshell", "m.obj", "--out", "o"],
            "--radius-factor",
            "inf",
        ),
        (&["sdf", "m.obj", "--out", "o"], "--resolution", "1"),
        (&["sdf", "m.obj", "--out", "o"], "--resolution", "100000"),
        (&["sdf", "m.obj", "--out", "o"], "--band", "0.5"),
        (&["sdf", "m.obj", "--out", "o"], "--box-enlarge", "0.9"),
        (&["sdf", "m.obj", "--out", "o", "--soup"], "--offset", "65"),
        (&["voxelize", "m.obj", "--out", "o"], "--resolution", "2000"),
        (
            &["voxelize", "m.obj", "--out", "o"],
            "--poisson-ratio",
            "0.5",
        ),
        (&["voxelize", "m.obj", "--out", "o"], "--density", "-1"),
        (
            &["voxelize", "m.obj", "--out", "o"],
            "--youngs-modulus",
            "nan",
        ),
        (&["voxelize", "m.obj", "--out", "o"], "--box-enlarge", "inf"),
        (&["beam"], "--dt", "1e308"),
        (&["beam"], "--steps", "0"),
        (&["fullsim", "m.veg", "--out", "o.csv"], "--dt", "-1"),
        (&["fullsim", "m.veg", "--out", "o.csv"], "--tolerance", "0"),
        (
            &["fullsim", "m.veg", "--out", "o.csv"],
            "--damping-mass",
            "-1",
        ),
        (&["inspect", "m.veg"], "--max-listed", "-1"),
        (&["screenshot", "s.toml", "--out", "o.png"], "--width", "0"),
        (
            &["screenshot", "s.toml", "--out", "o.png"],
            "--height",
            "100000",
        ),
        (
            &["screenshot", "s.toml", "--out", "o.png"],
            "--pointshell-levels",
            "17",
        ),
        (&["record", "s.toml", "--out", "t.csv"], "--duration", "0"),
        (&["record", "s.toml", "--out", "t.csv"], "--duration", "nan"),
    ];
    for (base, flag, value) in cases {
        // FLAG=VALUE, so that negative values are not taken for flags.
        let assignment = format!("{flag}={value}");
        let mut args: Vec<&str> = base.to_vec();
        args.push(&assignment);
        let o = haptics(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag),
            "{args:?}: the message does not name {flag}: {err}"
        );
        // Refused by the flag's own parser, whose message states what is allowed.
        assert!(
            err.contains(&format!("invalid value '{value}'")),
            "{args:?}: not refused as a value: {err}"
        );
        assert!(
            [
                "range",
                "outside",
                "is not in",
                "finite",
                "must be",
                "longer than",
                "not a"
            ]
            .iter()
            .any(|w| err.contains(w)),
            "{args:?}: the message does not say what is allowed: {err}"
        );
    }
}

/// `haptics stability` on a short ladder at one rate: the table, the CSV with its header
/// and a judged run per ladder; a rate out of range is refused with the range.
#[test]
fn stability_finds_the_largest_stable_stiffness() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("runs.csv");
    let o = haptics(&[
        "stability",
        "--rates",
        "1000",
        "--from",
        "3000",
        "--to",
        "8000",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("largest stable"), "{}", stdout(&o));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("rate_hz,ladder,stiffness_n_per_m,stable,hold_force_n,hold_spread_n,observer_drift_j")
    );
    let rows: Vec<&str> = lines.collect();
    // The coupling ladder 3000, 3750, 4688, 5859 N/m: stable up to 4688, not at 5859.
    assert!(
        rows.iter()
            .any(|r| r.starts_with("1000,coupling,4687.5,true")),
        "{rows:?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("1000,coupling,5859.375,false")),
        "{rows:?}"
    );
    let o = haptics(&["stability", "--rates", "50"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("100 to 10000"), "{}", stderr(&o));
}

/// `haptics scene new` from two meshes in millimetres and the same two in metres (a
/// 20 x 100 x 20 part over a 500 x 100 x 500 plate): both scenes load and render, with
/// the same resolutions and point counts, and workspace scales 1000 apart; a second
/// write is refused without --force; `--deformable` writes the voxel mesh and its anchor
/// and loads as a reduced model.
#[test]
fn scene_new_writes_a_scene_that_loads_and_renders_at_either_scale() {
    use haptics::mesh::{box_surface_mesh, write_obj};
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut loaded = Vec::new();
    for (unit, s) in [("mm", 1.0), ("m", 1e-3)] {
        let d = dir.path().join(unit);
        std::fs::create_dir_all(d.join("scenes")).unwrap();
        let held = box_surface_mesh(nalgebra::Vector3::new(20.0, 100.0, 20.0) * s, [1, 1, 1]);
        let world = box_surface_mesh(nalgebra::Vector3::new(500.0, 100.0, 500.0) * s, [1, 1, 1]);
        write_obj(&d.join("part.obj"), &held).unwrap();
        write_obj(&d.join("plate.obj"), &world).unwrap();
        let out = d.join("scenes/s.toml");
        let args = |extra: &[&str]| {
            let mut v = vec![
                "scene".to_string(),
                "new".into(),
                "--held".into(),
                d.join("part.obj").to_string_lossy().into_owned(),
                "--world".into(),
                d.join("plate.obj").to_string_lossy().into_owned(),
                "--out".into(),
                out.to_string_lossy().into_owned(),
            ];
            v.extend(extra.iter().map(|x| x.to_string()));
            v
        };
        let run = |extra: &[&str]| {
            let a = args(extra);
            haptics(&a.iter().map(String::as_str).collect::<Vec<_>>())
        };
        let o = run(&[]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("mesh = \"../part.obj\""), "{text}");
        let o = run(&[]);
        assert!(
            !o.status.success() && stderr(&o).contains("--force"),
            "{}",
            stderr(&o)
        );
        let scene = haptics::scene::load_scene(&out, &cache, &haptics::progress::NoProgress)
            .unwrap_or_else(|e| panic!("{e}"));
        let png = d.join("s.png");
        let o = haptics(&[
            "screenshot",
            out.to_str().unwrap(),
            "--out",
            png.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        assert!(png.is_file());
        loaded.push(scene);
        if unit == "m" {
            let o = run(&["--deformable", "--force"]);
            assert!(o.status.success(), "{}", stderr(&o));
            assert!(d.join("scenes/plate.veg").is_file() && d.join("scenes/plate.bou").is_file());
            let scene = haptics::scene::load_scene(&out, &cache, &haptics::progress::NoProgress)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(scene.environment[0].dynamics.is_some());
        }
    }
    let (mm, m) = (&loaded[0], &loaded[1]);
    assert_eq!(mm.environment[0].shell.len(), m.environment[0].shell.len());
    let ratio = m.workspace_scale / mm.workspace_scale;
    assert!((ratio - 1e3).abs() < 1e-6, "{ratio}");
}
