//! Reliability of `haptics replay` on hostile input: a trajectory row with a coordinate of
//! 1e308 (finite, so the trajectory reader accepts it, but infinite once divided by the
//! peg-in-shaft scene's workspace scale of 0.1) used to send the coupling's SVD into an
//! endless loop. The replay must finish, flag a fault on that row with zero force, keep
//! every logged force finite, and carry on normally afterwards.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use haptics::haptic::log::{column, read_log};

/// The repository root (the application crate lives in `app/`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `haptics ARGS` in the repository root, killing it (and failing) after `limit`.
fn haptics_with_timeout(args: &[&str], limit: Duration) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run haptics");
    // Drain the pipes on threads so that a chatty child never blocks on a full pipe.
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for haptics") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "haptics {} still running after {limit:?}: killed (the replay hangs)",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        out.join().unwrap(),
        err.join().unwrap()
    );
    (status.success(), text)
}

#[test]
fn replay_with_a_1e308_coordinate_finishes_and_flags_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let traj = dir.path().join("peg-shaft-1e308.csv");
    let log_path = dir.path().join("peg-shaft-1e308.log.csv");
    // 0.5 s at 1 kHz: the device drifts 1 cm down (10 cm in the scene); row 200 has
    // px = 1e308.
    let (rows, bad) = (500usize, 200usize);
    let mut csv = String::from("time_s,px,py,pz,qw,qx,qy,qz,buttons\n");
    for i in 0..rows {
        let t = i as f64 * 1e-3;
        let px = if i == bad {
            "1e308".to_string()
        } else {
            "0".into()
        };
        csv += &format!("{t},{px},{},0,1,0,0,0,0\n", -0.02 * t);
    }
    std::fs::write(&traj, csv).unwrap();
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let (ok, text) = haptics_with_timeout(
        &[
            "replay",
            "assets/scenes/peg-shaft.toml",
            traj.to_str().unwrap(),
            "--out",
            log_path.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(ok, "the replay failed\n{text}");
    assert!(text.contains("1 faults"), "{text}");

    let log = read_log(&log_path).unwrap();
    assert_eq!(log.rows.len(), rows);
    let c = |name: &str| column(name).unwrap();
    let (px, fault) = (c("px"), c("fault"));
    let wrench = ["fx", "fy", "fz", "tx", "ty", "tz"].map(c);
    let sim = ["sx", "sy", "sz", "sqw", "sqx", "sqy", "sqz"].map(c);
    for (i, r) in log.rows.iter().enumerate() {
        assert!(
            wrench.iter().chain(&sim).all(|&k| r[k].is_finite()),
            "row {i}: a non-finite force or pose: {r:?}"
        );
        if i == bad {
            assert_eq!(r[px], 1e308, "the reader kept the value");
            assert_eq!(r[fault], 1.0, "row {i}: no fault flagged");
            assert!(wrench.iter().all(|&k| r[k] == 0.0), "row {i}: {r:?}");
            // The simulated pose stayed where it was.
            assert!(sim.iter().all(|&k| r[k] == log.rows[i - 1][k]), "row {i}");
        } else {
            assert_eq!(r[fault], 0.0, "row {i}: unexpected fault");
        }
    }
    // After the bad row the object follows the device again (10 cm down in the scene, at
    // most 0.3 scene units per second: 0.06 over the last 200 ms, well above a standstill).
    let sy = c("sy");
    assert!(
        log.rows[rows - 1][sy] < log.rows[bad][sy] - 0.01,
        "the object did not move after the bad row: {} -> {}",
        log.rows[bad][sy],
        log.rows[rows - 1][sy]
    );
}

/// `haptics ARGS` started in the repository root, quiet.
fn spawn_haptics(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run haptics")
}

/// The names in `dir`, sorted.
fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Kills `args` (a command writing an output) at many moments of its run, from early
/// in the computation to the last milliseconds of the write, and checks after each kill
/// that the output is either absent or whole (`valid`), never half-written. A final run
/// to completion must succeed and leave only the output in its directory: the
/// temporaries of the killed runs are swept. Returns the number of kills.
fn kill_at_every_moment(
    args: &[&str],
    dir: &std::path::Path,
    output: &str,
    valid: &dyn Fn(&std::path::Path) -> bool,
) -> usize {
    let full = {
        let start = Instant::now();
        let status = spawn_haptics(args).wait().unwrap();
        assert!(status.success(), "haptics {}", args.join(" "));
        start.elapsed()
    };
    std::fs::remove_dir_all(dir.join(output))
        .or_else(|_| std::fs::remove_file(dir.join(output)))
        .unwrap();
    let mut kills = 0;
    for fraction in [
        0.05, 0.2, 0.4, 0.6, 0.75, 0.85, 0.9, 0.93, 0.96, 0.98, 0.99, 1.0,
    ] {
        let mut child = spawn_haptics(args);
        std::thread::sleep(full.mul_f64(fraction));
        let _ = child.kill();
        let _ = child.wait();
        kills += 1;
        let out = dir.join(output);
        if out.exists() {
            assert!(
                valid(&out),
                "killed at {fraction} of the run: a corrupt {output}"
            );
        }
    }
    let status = spawn_haptics(args).wait().unwrap();
    assert!(status.success());
    assert!(valid(&dir.join(output)));
    assert_eq!(
        listing(dir),
        vec![output.to_string()],
        "leftovers after the kills"
    );
    kills
}

#[test]
fn an_sdf_killed_mid_run_never_leaves_a_corrupt_or_stale_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.dist");
    let args = [
        "sdf",
        "assets/models/beam3/beam3.obj",
        "-r",
        "160",
        "--out",
        out.to_str().unwrap(),
    ];
    let valid = |p: &std::path::Path| haptics::geometry::dist::read_dist(p).is_ok();
    let kills = kill_at_every_moment(&args, dir.path(), "beam.dist", &valid);
    eprintln!("{kills} kills of haptics sdf");
}

#[test]
fn a_bake_killed_mid_run_never_leaves_a_corrupt_or_stale_bake() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let args = [
        "bake",
        "assets/models/beam3/beam3.veg",
        "--fixed",
        "assets/models/beam3/beam3.bou",
        "--linear-modes",
        "12",
        "--basis",
        "20",
        "--out",
        out.to_str().unwrap(),
    ];
    let valid = |p: &std::path::Path| haptics::reduction::bake::load_baked(p).is_ok();
    let kills = kill_at_every_moment(&args, dir.path(), "beam", &valid);
    eprintln!("{kills} kills of haptics bake");
}

#[test]
fn concurrent_sdf_writers_leave_one_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.dist");
    let children: Vec<_> = (0..4)
        .map(|i| {
            spawn_haptics(&[
                "sdf",
                "assets/models/beam3/beam3.obj",
                "-r",
                ["48", "64", "80", "96"][i],
                "--out",
                out.to_str().unwrap(),
            ])
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    // One of the four fields, whole.
    let field = haptics::geometry::dist::read_dist(&out).unwrap();
    assert!(
        [48, 64, 80, 96].contains(&field.cells[0]),
        "{:?}",
        field.cells
    );
    assert_eq!(listing(dir.path()), vec!["beam.dist".to_string()]);
}

#[test]
fn a_full_disk_or_read_only_directory_is_reported_with_the_file_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.dist");
    for (fault, reason) in [
        ("nospace:4096", "No space left on device"),
        ("readonly", "Read-only file system"),
        ("rename", "Input/output error"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_haptics"))
            .args([
                "sdf",
                "assets/models/beam3/beam3.obj",
                "-r",
                "32",
                "--out",
                out.to_str().unwrap(),
            ])
            .current_dir(root())
            .env("HAPTICS_INJECT_FAULT", fault)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{fault}");
        assert!(
            err.contains(reason) && err.contains("beam.dist"),
            "{fault}: {err}"
        );
        assert!(
            listing(dir.path()).is_empty(),
            "{fault}: {:?}",
            listing(dir.path())
        );
    }
    let o = Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(["sdf", "assets/models/beam3/beam3.obj", "--out", "x.dist"])
        .env("HAPTICS_INJECT_FAULT", "full")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("HAPTICS_INJECT_FAULT"));
}
