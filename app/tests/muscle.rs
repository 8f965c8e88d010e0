//! `haptics muscle` the way a user runs it: the isometric experiment writes its CSV (the
//! issue's header, one row per case) and plot, agrees with the homogeneous solution, and
//! refuses bad material files and activations with messages naming the file, line and
//! key.

#[path = "common/cli.rs"]
mod cli;

use cli::{haptics, stderr, stdout};

#[test]
fn isometric_writes_the_curve_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("curve.csv");
    let png = dir.path().join("curve.png");
    let out = haptics(&[
        "muscle",
        "isometric",
        "--stretch",
        "0.7,0.85,1.0",
        "--activation",
        "0,0.5,1",
        "--out",
        csv.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // Resolution 2: 9 x 3 x 3 nodes, 6 x 8 x 2 x 2 tets.
    assert!(text.contains("81 nodes, 192 linear tets"), "{text}");
    let body = std::fs::read_to_string(&csv).unwrap();
    let mut lines = body.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("stretch,activation,force_n"), "{header}");
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 9);
    for r in &rows {
        // force_n against reference_force_n: 1e-6 relative (see tests/muscle.rs).
        let tol = 1e-6 * r[3].abs().max(0.03);
        assert!((r[2] - r[3]).abs() <= tol, "{r:?}");
    }
    // Activation at the optimal length pulls with about sigma_max x area = 30 N, a
    // little less: the block swells by 1% (J = 1.010), so the deviatoric fibre stretch
    // J^(-1/3) is 0.9967 and the force 29.90 N.
    let full = rows.iter().find(|r| r[0] == 1.0 && r[1] == 1.0).unwrap();
    assert!((full[2] - 29.9).abs() < 0.01, "{full:?}");
    assert!((full[5] - 1.010).abs() < 1e-3, "{full:?}");
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
}

#[test]
fn bad_material_and_activation_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    let mat = dir.path().join("m.toml");
    std::fs::write(&mat, "sigma_max = 3e5\nkappa = -2\n").unwrap();
    let out = haptics(&[
        "muscle",
        "isometric",
        "--material",
        mat.to_str().unwrap(),
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("m.toml:2") && err.contains("kappa"), "{err}");
    assert!(!csv.exists());
    let out = haptics(&[
        "muscle",
        "isometric",
        "--activation",
        "0,1.5",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("activation 1.5 is outside [0, 1]"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn mesh_writes_the_veg_fibres_and_bou_and_contract_reports() {
    let dir = tempfile::tempdir().unwrap();
    let veg = dir.path().join("m.veg");
    let out = haptics(&[
        "muscle",
        "mesh",
        "--cells-radial",
        "3",
        "--cells-axial",
        "10",
        "--out",
        veg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // 4 x 4 x 11 nodes, 6 x 3 x 3 x 10 tets.
    assert!(
        stdout(&out).contains("176 nodes, 540 linear tets"),
        "{}",
        stdout(&out)
    );
    let mesh = haptics::mesh::veg::read_veg(&veg).unwrap();
    let fibres =
        haptics::mesh::fibres::read_fibres(&dir.path().join("m.fibres"), Some(540)).unwrap();
    assert_eq!(mesh.num_elements(), fibres.len());
    assert!(dir.path().join("m.bou").exists());
    let surface = haptics::mesh::read_obj(&dir.path().join("m.obj")).unwrap();
    assert_eq!(
        surface.boundary_and_nonmanifold_edges(),
        (0, 0),
        "closed surface"
    );
    let csv = dir.path().join("c.csv");
    let out = haptics(&[
        "muscle",
        "contract",
        "--cells-radial",
        "3",
        "--cells-axial",
        "10",
        "--activation",
        "0,1",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let body = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<Vec<f64>> = body
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows[1][3] > 2.0 * rows[0][3],
        "activation stiffens: {rows:?}"
    );
    assert!(
        rows[1][1] > 0.0 && rows[1][1] < 0.02,
        "volume change {rows:?}"
    );
}

#[test]
fn activation_flag_stiffens_the_palpated_muscle() {
    // The shipped palpation scene, pressed 16 mm and held, replayed relaxed and with
    // --activation 0.6: the activated muscle pushes the fingertip back harder.
    let dir = tempfile::tempdir().unwrap();
    let traj = dir.path().join("press.csv");
    let mut text = String::from("time_s,px,py,pz,qw,qx,qy,qz,buttons\n");
    for i in 0..900 {
        let t = i as f64 * 1e-3;
        let y = -0.016 * (0.5 - 0.5 * (std::f64::consts::PI * (t / 0.5).min(1.0)).cos());
        text.push_str(&format!("{t},0,{y},0,1,0,0,0,0\n"));
    }
    std::fs::write(&traj, text).unwrap();
    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let force_at_end = |activation: &str| -> f64 {
        let log = dir.path().join(format!("log-{activation}.csv"));
        let out = haptics(&[
            "replay",
            "assets/scenes/muscle-palpate.toml",
            traj.to_str().unwrap(),
            "--out",
            log.to_str().unwrap(),
            "--activation",
            activation,
            "--cache",
            cache.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let body = std::fs::read_to_string(&log).unwrap();
        let mut lines = body.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let last: Vec<f64> = lines
            .last()
            .unwrap()
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect();
        (last[col("fx")].powi(2) + last[col("fy")].powi(2) + last[col("fz")].powi(2)).sqrt()
    };
    let relaxed = force_at_end("0");
    let active = force_at_end("0.6");
    // The same 16 mm press as the first 0.8 s of the shipped golden replay
    // (muscle-palpate-press), whose relaxed force has settled by then: 0.35909 N at 0.7 s
    // and at 0.8 s alike. 2% holds it across CPUs' rounding, far inside what a changed
    // basis, contact or coupling would move.
    let golden = 0.35909;
    assert!(
        (relaxed - golden).abs() < 0.02 * golden,
        "relaxed {relaxed} N, the golden replay's {golden} N"
    );
    assert!(
        active > 2.0 * relaxed,
        "activated {active} N vs relaxed {relaxed} N"
    );
    let out = haptics(&[
        "replay",
        "assets/scenes/muscle-palpate.toml",
        traj.to_str().unwrap(),
        "--out",
        dir.path().join("x.csv").to_str().unwrap(),
        "--activation",
        "1.5",
    ]);
    assert!(!out.status.success());
}
