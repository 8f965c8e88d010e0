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
