//! Real force-feedback hardware, end to end through the CLI, against the fake vendor
//! libraries (`devices/fakes/*.rs`, built by rustc) and a fake Haply Inverse Service (run
//! in the test process, `haptics_devices::vendor::fake_inverse`): `haptics devices` lists
//! and self-tests them, `haptics record --device openhaptics|forcedimension|haply` runs the
//! haptic loop on them in real time, a recording replays exactly, and a communication fault mid
//! run ends the process quickly with the device and the error named, zero force from the
//! fault on and the trajectory so far saved. The fakes log every force they receive: the
//! assertions are about what the hand would feel.

#[path = "common/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use cli::{stderr, stdout};
use haptics::haptic::log::{column, read_log};
use haptics_devices::trajectory::read_trajectory;
use haptics_devices::vendor::fake_inverse::{circle_from_centre, FakeInverseService, Script};
use haptics_devices::vendor::fakes;
use haptics_devices::vendor::Vendor;

fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache")
}

/// `haptics ARGS` with `env` set (and the vendor variables cleared unless given).
fn haptics_env(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_haptics"));
    c.args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env_remove("HAPTICS_OPENHAPTICS_LIB")
        .env_remove("HAPTICS_DHD_LIB")
        .env_remove("HAPTICS_HAPLY_SERVICE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run haptics")
}

fn fake(v: Vendor) -> String {
    fakes::build(v).unwrap().display().to_string()
}

/// A fake's force log: rows `t, f (3), torque (3), enabled`, and `# key value` lines.
fn fake_log(path: &Path) -> (Vec<[f64; 8]>, Vec<String>) {
    let text = std::fs::read_to_string(path).expect("the fake wrote its log when closed");
    let mut rows = Vec::new();
    let mut trailer = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("# ") {
            Some(t) => trailer.push(t.to_string()),
            None => {
                let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
                rows.push(v.try_into().unwrap());
            }
        }
    }
    (rows, trailer)
}

fn trailer_value(trailer: &[String], key: &str) -> f64 {
    trailer
        .iter()
        .find_map(|t| t.strip_prefix(key).map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no '# {key}' in {trailer:?}"))
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

#[test]
fn devices_lists_vendor_devices_and_says_which_libraries_are_missing() {
    let o = haptics_env(
        &["devices"],
        &[
            ("HAPTICS_OPENHAPTICS_LIB", fake(Vendor::OpenHaptics)),
            ("HAPTICS_DHD_LIB", "/nonexistent/haptics/libdhd.so".into()),
        ],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("PHANTOM Premium 1.5 6DOF: 6-DOF in, 6-DOF force feedback, max 8.5 N  (--device openhaptics)"), "{out}");
    assert!(out.contains("(from HAPTICS_OPENHAPTICS_LIB)"), "{out}");
    assert!(
        out.contains("Force Dimension (DHD): not available: Force Dimension (DHD) library not found: HAPTICS_DHD_LIB=/nonexistent/haptics/libdhd.so"),
        "{out}"
    );
    assert!(out.contains("Known device profiles:"), "{out}");

    // Without the variables, the sonames are found through LD_LIBRARY_PATH.
    let dirs = format!(
        "{}:{}",
        fakes::directory(Vendor::OpenHaptics).unwrap().display(),
        fakes::directory(Vendor::ForceDimension).unwrap().display()
    );
    let o = haptics_env(
        &["devices"],
        &[("LD_LIBRARY_PATH", dirs), ("FAKE_DHD_TYPE", "64".into())],
    );
    let out = stdout(&o);
    assert!(
        out.contains("OpenHaptics (HDAPI): library libHD.so\n"),
        "{out}"
    );
    assert!(
        // CHAI3D rates no delta.6: the conservative 5 N until the library reports a limit.
        out.contains("delta.6: 6-DOF in, 6-DOF force feedback, max 5 N"),
        "{out}"
    );

    // Neither found: both say where they looked.
    let o = haptics_env(&["devices"], &[("LD_LIBRARY_PATH", "/nonexistent".into())]);
    let out = stdout(&o);
    assert!(o.status.success());
    assert!(out.contains("HAPTICS_OPENHAPTICS_LIB is unset and the dynamic loader found no libHD.so (LD_LIBRARY_PATH=/nonexistent"), "{out}");
    assert!(out.contains("found no libdhd.so"), "{out}");
}

#[test]
fn self_test_reports_rate_range_and_force() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let o = haptics_env(
        &[
            "devices",
            "--test",
            "openhaptics",
            "--duration",
            "1.5",
            "--deadman",
            "off",
        ],
        &[
            ("HAPTICS_OPENHAPTICS_LIB", fake(Vendor::OpenHaptics)),
            ("FAKE_HD_LOG", log.display().to_string()),
        ],
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let rate: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("loop rate"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(rate >= 900.0, "{out}");
    assert!(
        out.contains("self-test of PHANTOM Premium 1.5 6DOF (OpenHaptics (HDAPI))"),
        "{out}"
    );
    // The stylus's 20 mm circle shows in the range (x reaches the radius within 1.5 s of
    // its 0.25 Hz motion).
    let extent_x: f64 = out
        .split("extent ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(extent_x > 19.0 && extent_x <= 20.05, "{out}");
    let (rows, trailer) = fake_log(&log);
    assert!(trailer.contains(&"violations 0".to_string()));
    let peak = rows.iter().map(|r| norm(&r[1..4])).fold(0.0, f64::max);
    // At most 100 N/m over at most sqrt(20^2 + 34^2 + 5^2) = 40 mm. The spring reaches
    // half a newton when the start ramp completed; on a loaded machine stalls or velocity
    // cuts may re-arm it all along, which the report then says.
    assert!(peak <= 4.05, "peak {peak} N");
    if out.contains("start ramp       completed") {
        assert!(peak > 0.5, "peak {peak} N\n{out}");
    } else {
        assert!(
            out.contains("re-armed it") && peak > 0.0,
            "peak {peak} N\n{out}"
        );
    }
    assert_eq!(norm(&rows.last().unwrap()[1..7]), 0.0, "zero at the end");

    let o = haptics_env(
        &["devices", "--test", "forcedimension", "--duration", "0.5"],
        &[("HAPTICS_DHD_LIB", "/nonexistent/libdhd.so".into())],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("library not found"), "{}", stderr(&o));
}

/// Records `seconds` on `device` (`openhaptics` / `forcedimension`) with the deadman held
/// by the fake; returns the output, the trajectory path and the fake's log path.
fn record(
    device: &str,
    seconds: &str,
    extra_env: &[(&str, String)],
    dir: &Path,
) -> (Output, PathBuf, PathBuf, f64) {
    let traj = dir.join("traj.csv");
    let log = dir.join("fake.log");
    let (lib_var, lib, log_var, buttons) = match device {
        "openhaptics" => (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics),
            "FAKE_HD_LOG",
            "FAKE_HD_BUTTONS",
        ),
        _ => (
            "HAPTICS_DHD_LIB",
            fake(Vendor::ForceDimension),
            "FAKE_DHD_LOG",
            "FAKE_DHD_BUTTONS",
        ),
    };
    let mut env = vec![
        (lib_var, lib),
        (log_var, log.display().to_string()),
        (buttons, "1".to_string()),
    ];
    env.extend(extra_env.iter().cloned());
    let start = Instant::now();
    let o = haptics_env(
        &[
            "record",
            "assets/scenes/peg-shaft.toml",
            "--device",
            device,
            "--duration",
            seconds,
            "--out",
            traj.to_str().unwrap(),
            "--cache",
            cache().to_str().unwrap(),
        ],
        &env,
    );
    (o, traj, log, start.elapsed().as_secs_f64())
}

/// The safety contract on a fake's log for a device with `max_force` N: finite, clamped,
/// the start ramp (mean |F| over the first 50 ms at most 25% of the maximum), zero last,
/// and at least 900 frames or calls per second.
fn check_contract(rows: &[[f64; 8]], max_force: f64) {
    for r in rows {
        assert!(r.iter().all(|v| v.is_finite()), "{r:?}");
        assert!(norm(&r[1..4]) <= max_force * (1.0 + 1e-9), "{r:?}");
    }
    let t0 = rows[0][0];
    let early: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] - t0 <= 0.05)
        .map(|r| norm(&r[1..4]))
        .collect();
    let mean = early.iter().sum::<f64>() / early.len() as f64;
    assert!(
        mean <= 0.25 * max_force,
        "mean |F| over the first 50 ms: {mean}"
    );
    assert_eq!(
        norm(&rows.last().unwrap()[1..7]),
        0.0,
        "the last force is zero"
    );
}

#[test]
fn record_on_openhaptics_then_replay_reproduces_the_forces() {
    let dir = tempfile::tempdir().unwrap();
    let (o, traj, log, _) = record("openhaptics", "2", &[], dir.path());
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("device PHANTOM Premium 1.5 6DOF: 6-DOF in, 6-DOF out"),
        "{out}"
    );
    let (rows, trailer) = fake_log(&log);
    assert!(trailer.contains(&"violations 0".to_string()), "{trailer:?}");
    check_contract(&rows, 8.5);
    let span = rows.last().unwrap()[0] - rows[0][0];
    assert!(
        rows.len() as f64 / span >= 900.0,
        "{} frames in {span} s",
        rows.len()
    );
    // The recording: ~2 s of samples at the scene's 1 kHz, in metres, with the device
    // and the fitted settings in its header.
    let t = read_trajectory(&traj).unwrap();
    assert!(t.samples.len() >= 1800, "{} samples", t.samples.len());
    let text = std::fs::read_to_string(&traj).unwrap();
    assert!(
        text.starts_with("# device: PHANTOM Premium 1.5 6DOF (OpenHaptics (HDAPI))\n"),
        "{text:.200}"
    );
    assert!(text.contains("# fitted: workspace_scale="), "{text:.400}");
    let max_r = t
        .samples
        .iter()
        .map(|s| s.pose.position.norm())
        .fold(0.0, f64::max);
    assert!(max_r > 0.02 && max_r < 0.05, "positions in metres: {max_r}");
    // Replaying it with the recorded settings renders the very forces that were sent to
    // the safety layer, sample for sample.
    let replayed = dir.path().join("log.csv");
    let o = haptics_env(
        &[
            "replay",
            "assets/scenes/peg-shaft.toml",
            traj.to_str().unwrap(),
            "--out",
            replayed.to_str().unwrap(),
            "--cache",
            cache().to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("applied 5 device-fitted settings"),
        "{}",
        stdout(&o)
    );
    let l = read_log(&replayed).unwrap();
    let recorded = &t.wrenches;
    assert!(!recorded.is_empty(), "the recording has wrench columns");
    assert_eq!(l.rows.len(), recorded.len());
    let fx = column("fx").unwrap();
    let mut max_diff = 0.0f64;
    for (row, w) in l.rows.iter().zip(recorded) {
        for k in 0..3 {
            max_diff = max_diff.max((row[fx + k] - w.force[k]).abs());
        }
    }
    assert!(max_diff <= 1e-9, "replayed forces differ by {max_diff} N");
}

#[test]
fn a_communication_fault_ends_the_recording_quickly_and_keeps_what_was_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (o, traj, log, _) = record(
        "openhaptics",
        "30",
        &[("FAKE_HD_FAULT_AFTER_MS", "1500".into())],
        dir.path(),
    );
    let err = stderr(&o);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("PHANTOM Premium 1.5 6DOF (OpenHaptics (HDAPI)) failed after"),
        "{err}"
    );
    assert!(err.contains("HD_COMM_ERROR"), "{err}");
    assert!(err.contains(traj.to_str().unwrap()), "{err}");
    let (rows, trailer) = fake_log(&log);
    // The device was released (zero, scheduler stopped, disabled) within 5 s of the fault.
    let disabled_at = trailer_value(&trailer, "disabled_at");
    assert!(
        disabled_at > 1.5 && disabled_at < 1.5 + 5.0,
        "{disabled_at}"
    );
    // No force after the fault: the frame that reported it, one zero frame, nothing more.
    assert!(
        rows.iter().all(|r| r[0] < 1.5 + 0.05),
        "frames after the fault"
    );
    assert_eq!(norm(&rows.last().unwrap()[1..7]), 0.0);
    // The recording covers the device's cycles from its start to the fault: the device
    // is opened after the scene is loaded, so no loading time is lost from it, however
    // slow the machine (the fault's 1.5 s count from the device's start; the trajectory's
    // times are the device's).
    let t = read_trajectory(&traj).unwrap();
    let (first, last) = (t.samples[0].time_s, t.samples.last().unwrap().time_s);
    assert!(
        first < 0.25,
        "the first sample at {first} s of the device's time"
    );
    assert!(
        last > 1.5 - 0.1,
        "the last sample at {last} s, the fault at 1.5 s"
    );
    assert!(t.samples.len() > 1000, "{} samples kept", t.samples.len());
}

#[test]
fn record_on_forcedimension_and_its_fault() {
    let dir = tempfile::tempdir().unwrap();
    let (o, traj, log, _) = record("forcedimension", "1.5", &[], dir.path());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let (rows, trailer) = fake_log(&log);
    assert!(trailer.contains(&"violations 0".to_string()), "{trailer:?}");
    check_contract(&rows, 20.0);
    let span = rows.last().unwrap()[0] - rows[0][0];
    assert!(
        rows.len() as f64 / span >= 900.0,
        "{} calls in {span} s",
        rows.len()
    );
    assert!(read_trajectory(&traj).unwrap().samples.len() >= 1300);

    let dir = tempfile::tempdir().unwrap();
    let (o, traj, log, _) = record(
        "forcedimension",
        "30",
        &[("FAKE_DHD_FAULT_AFTER_MS", "1000".into())],
        dir.path(),
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("sigma.7 (Force Dimension (DHD)) failed after"),
        "{err}"
    );
    assert!(err.contains("DHD_ERROR_COM"), "{err}");
    let (rows, trailer) = fake_log(&log);
    assert!(trailer_value(&trailer, "closed_at") < 1.0 + 5.0);
    assert!(
        rows.iter().all(|r| r[0] < 1.0 + 0.01),
        "forces accepted after the fault"
    );
    assert!(read_trajectory(&traj).unwrap().samples.len() > 500);
}

#[test]
fn a_missing_library_fails_fast_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let o = haptics_env(
        &[
            "record",
            "assets/scenes/peg-shaft.toml",
            "--device",
            "openhaptics",
            "--out",
            dir.path().join("t.csv").to_str().unwrap(),
        ],
        &[(
            "HAPTICS_OPENHAPTICS_LIB",
            "/nonexistent/sdk/libHD.so".into(),
        )],
    );
    assert!(start.elapsed().as_secs_f64() < 5.0);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("OpenHaptics (HDAPI) library not found: HAPTICS_OPENHAPTICS_LIB=/nonexistent/sdk/libHD.so"), "{err}");
    assert!(!err.contains("panicked"));
    // `run` without a display refuses a real device instead of running the demo.
    let o = haptics_env(
        &["run", "--device", "openhaptics", "--headless"],
        &[("HAPTICS_OPENHAPTICS_LIB", fake(Vendor::OpenHaptics))],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--device openhaptics needs the window"),
        "{}",
        stderr(&o)
    );
}

/// `haptics ARGS` against the fake Inverse Service `fake`.
fn haptics_haply(args: &[&str], fake: &FakeInverseService) -> Output {
    haptics_env(
        args,
        &[("HAPTICS_HAPLY_SERVICE", fake.address().to_string())],
    )
}

/// `haptics record` of the peg-in-shaft scene for `seconds` on the Inverse3 of `fake`,
/// into `dir`; returns the output and the trajectory's path.
fn record_haply(fake: &FakeInverseService, seconds: &str, dir: &Path) -> (Output, PathBuf) {
    let traj = dir.join("traj.csv");
    let o = haptics_haply(
        &[
            "record",
            "assets/scenes/peg-shaft.toml",
            "--device",
            "haply",
            "--duration",
            seconds,
            "--out",
            traj.to_str().unwrap(),
            "--cache",
            cache().to_str().unwrap(),
        ],
        fake,
    );
    (o, traj)
}

/// The forces the fake service received, N.
fn haply_forces(fake: &FakeInverseService) -> Vec<[f64; 3]> {
    fake.settle(std::time::Duration::from_secs(2));
    fake.frames().iter().filter_map(|f| f.force).collect()
}

#[test]
fn haply_is_listed_self_tested_and_recorded() {
    let fake = FakeInverseService::start(Script {
        position: circle_from_centre,
        ..Script::default()
    })
    .unwrap();
    let o = haptics_haply(&["devices"], &fake);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains(&format!(
            "Haply Inverse Service: service {} (from HAPTICS_HAPLY_SERVICE)",
            fake.address()
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "Haply Inverse3 049D: 6-DOF in, 3-DOF force feedback, max 2 N  (--device haply)"
        ),
        "{out}"
    );

    // The self-test: a soft spring to the workspace centre, through the safety layer,
    // with the grip's button a as the enable button (the fake holds it).
    let o = haptics_haply(&["devices", "--test", "haply", "--duration", "1"], &fake);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("self-test of Haply Inverse3 (Haply Inverse Service)"),
        "{out}"
    );
    let f = haply_forces(&fake);
    // A spring of 80 N/m (a tenth of 800) along the circle, within the 2 N limit.
    let peak = f.iter().map(|v| norm(v)).fold(0.0, f64::max);
    assert!(peak > 0.0 && peak <= 2.0 + 1e-6, "peak {peak} N\n{out}");
    assert_eq!(*f.last().unwrap(), [0.0; 3]);

    // A recording: the scene fitted to the Inverse3, every command within its 2 N, the
    // start ramp, zero at the end, and the trajectory with the device in its header.
    let dir = tempfile::tempdir().unwrap();
    let before = fake.frames().len();
    let (o, traj) = record_haply(&fake, "2", dir.path());
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("device Haply Inverse3: 6-DOF in, 3-DOF out, max 2 N"),
        "{out}"
    );
    let frames = fake.frames();
    let run = &frames[before..];
    let f: Vec<[f64; 3]> = run.iter().filter_map(|f| f.force).collect();
    assert!(f.len() > 1500, "{} commands", f.len());
    assert!(f
        .iter()
        .all(|v| v.iter().all(|x| x.is_finite()) && norm(v) <= 2.0 + 1e-6));
    let t0 = run[0].t_s;
    let early: Vec<f64> = run
        .iter()
        .filter(|r| r.t_s - t0 <= 0.05)
        .filter_map(|r| r.force.map(|v| norm(&v)))
        .collect();
    assert!(early.iter().sum::<f64>() / early.len() as f64 <= 0.5);
    assert_eq!(*f.last().unwrap(), [0.0; 3]);
    let text = std::fs::read_to_string(&traj).unwrap();
    assert!(
        text.starts_with("# device: Haply Inverse3 (Haply Inverse Service)\n"),
        "{text:.200}"
    );
    // The recording covers the run: 2 s of the haptic loop's cycles (at most 2000; a
    // machine loaded by other builds misses some, which the loop skips rather than
    // bunches).
    let t = read_trajectory(&traj).unwrap();
    let span = t.samples.last().unwrap().time_s - t.samples[0].time_s;
    assert!(span > 1.9 && span < 2.1, "the recording spans {span} s");
    assert!(
        t.samples.len() > 1000 && t.samples.len() <= 2001,
        "{} samples in {span} s",
        t.samples.len()
    );
}

/// The service drops the connection mid-run: the process ends quickly with the device
/// and the cause named, keeps the trajectory so far, and the last command was within the
/// limit (no command can follow a dropped connection).
#[test]
fn haply_dropped_connection_ends_the_recording_and_keeps_it() {
    let fake = FakeInverseService::start(Script {
        drop_after_frames: Some(1500),
        ..Script::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let (o, traj) = record_haply(&fake, "30", dir.path());
    let err = stderr(&o);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("Haply Inverse3 (Haply Inverse Service) failed after"),
        "{err}"
    );
    assert!(
        err.contains("the service closed the connection") || err.contains("the connection failed"),
        "{err}"
    );
    assert!(start.elapsed().as_secs_f64() < 25.0);
    let t = read_trajectory(&traj).unwrap();
    assert!(t.samples.len() > 1000, "{} samples kept", t.samples.len());
    assert!(haply_forces(&fake).iter().all(|v| norm(v) <= 2.0 + 1e-6));
}

#[test]
fn haply_without_a_service_or_a_grip_fails_fast_and_says_why() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let o = haptics_env(
        &[
            "record",
            "assets/scenes/peg-shaft.toml",
            "--device",
            "haply",
            "--out",
            dir.path().join("t.csv").to_str().unwrap(),
        ],
        &[("HAPTICS_HAPLY_SERVICE", format!("127.0.0.1:{port}"))],
    );
    assert!(start.elapsed().as_secs_f64() < 5.0);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "Haply Inverse Service not reachable at ws://127.0.0.1:{port}"
        )),
        "{err}"
    );
    assert!(err.contains("set HAPTICS_HAPLY_SERVICE"), "{err}");

    // An Inverse3 without a Verse Grip has no enable button: the default --deadman 0 is
    // refused with the way out; --deadman off runs.
    let fake = FakeInverseService::start(Script {
        grip: false,
        ..Script::default()
    })
    .unwrap();
    let o = haptics_haply(&["devices", "--test", "haply", "--duration", "0.3"], &fake);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no Verse Grip is paired"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--deadman off"), "{}", stderr(&o));
    let o = haptics_haply(
        &[
            "devices",
            "--test",
            "haply",
            "--duration",
            "0.3",
            "--deadman",
            "off",
        ],
        &fake,
    );
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("self-test of Haply Inverse3"),
        "{}",
        stdout(&o)
    );
}
