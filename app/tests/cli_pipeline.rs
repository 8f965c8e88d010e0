//! The offline pipeline through the `haptics` binary, as a user runs it: `bake` then
//! `simulate` with a force file, and `pointshell` with its quality table.

#[path = "common/cli.rs"]
mod cli;

use cli::haptics;

use std::path::Path;

use haptics::geometry::pointshell::Pointshell;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cli_bake_then_simulate_with_a_force_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let mesh = haptics::assets::model("beam3/beam3.veg");
    let fixed = haptics::assets::model("beam3/beam3.bou");
    let o = haptics(&[
        "bake",
        s(&mesh),
        "--fixed",
        s(&fixed),
        "--linear-modes",
        "4",
        "--basis",
        "6",
        "--out",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("linear frequencies (Hz)"), "{text}");
    // Force the first mode for 10 steps.
    let force = dir.path().join("f.csv");
    let mut csv = String::from("step,f0,f1,f2,f3,f4,f5\n");
    for st in 1..=10 {
        csv += &format!("{st},1,0,0,0,0,0\n");
    }
    std::fs::write(&force, csv).unwrap();
    let q = dir.path().join("q.csv");
    let o = haptics(&[
        "simulate",
        s(&out),
        "--steps",
        "50",
        "--force",
        s(&force),
        "--out",
        s(&q),
        "--damping-stiffness",
        "0.01",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<String> = std::fs::read_to_string(&q)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines[0], "step,t,q0,q1,q2,q3,q4,q5");
    assert_eq!(lines.len(), 51);
    let q0_at_10: f64 = lines[10].split(',').nth(2).unwrap().parse().unwrap();
    assert!(q0_at_10 > 0.0, "the force pushed q0 positive: {q0_at_10}");
    // Vertex displacements u_v = U_v q for chosen vertices.
    let uv = dir.path().join("uv.csv");
    let o = haptics(&[
        "simulate",
        s(&out),
        "--steps",
        "20",
        "--force",
        s(&force),
        "--out",
        s(&q),
        "--vertices",
        "0,100",
        "--vertex-out",
        s(&uv),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let vlines: Vec<String> = std::fs::read_to_string(&uv)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(vlines[0], "step,t,v0_x,v0_y,v0_z,v100_x,v100_y,v100_z");
    assert_eq!(vlines.len(), 21);
    let o = haptics(&[
        "simulate",
        s(&out),
        "--steps",
        "2",
        "--out",
        s(&q),
        "--vertices",
        "5000",
        "--vertex-out",
        s(&uv),
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("out of range"));
    // A Vega .cub alone works too.
    let cub = haptics::assets::model("vega-realtime-bridge/simpleBridge.cub");
    let o = haptics(&["simulate", s(&cub), "--steps", "5", "--out", s(&q)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Bad force files name the file and line.
    std::fs::write(&force, "step,f0,f1,f2,f3,f4,f5\n3,1,0,0,0,nan,0\n").unwrap();
    let o = haptics(&[
        "simulate",
        s(&out),
        "--steps",
        "5",
        "--force",
        s(&force),
        "--out",
        s(&q),
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("f.csv:2") && e.contains("f4"), "{e}");
    std::fs::write(&force, "step,f0\n1,1\n").unwrap();
    let o = haptics(&[
        "simulate",
        s(&out),
        "--steps",
        "5",
        "--force",
        s(&force),
        "--out",
        s(&q),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("expected the header 'step,f0,f1,f2,f3,f4,f5'"),
        "{e}"
    );
}

#[test]
fn cli_writes_a_readable_shell_and_prints_the_quality_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.pshell");
    let mesh = haptics::assets::model("beam3/beam3.obj");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(["pointshell"])
        .arg(&mesh)
        .args([
            "--points",
            "60",
            "--levels",
            "3",
            "--quality-samples",
            "20000",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("960 points in 3 levels"), "{stdout}");
    assert!(
        stdout.contains("coverage") && stdout.contains("uniformity"),
        "{stdout}"
    );
    // One table row per level: level index, new points, cumulative.
    for (level, new, total) in [(0, 60, 60), (1, 180, 240), (2, 720, 960)] {
        let row = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&level.to_string()))
            .unwrap_or_else(|| panic!("no row for level {level}:\n{stdout}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], new.to_string(), "{row}");
        assert_eq!(cols[2], total.to_string(), "{row}");
    }
    let s = Pointshell::read(&out).unwrap();
    assert_eq!(s.level_offsets, vec![0, 60, 240, 960]);

    // An open mesh fails with the hint, naming the file.
    let open = dir.path().join("open.obj");
    std::fs::write(&open, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(["pointshell"])
        .arg(&open)
        .arg("--out")
        .arg(dir.path().join("x.pshell"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("open.obj") && stderr.contains("offset surface"),
        "{stderr}"
    );
}
