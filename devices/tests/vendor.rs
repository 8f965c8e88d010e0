//! The vendor devices against the fake SDK libraries (built by rustc from
//! `devices/fakes/*.rs`): the real loading path, the C ABI, the servo hand-off, and the
//! safety layer on top, as on real hardware.
//!
//! What each fake logs is the force the "hardware" received, frame by frame, so the
//! assertions are about what a user's hand would feel: the rate, finiteness, the clamps,
//! the start ramp, zero at the end, and zero from a fault on.
//!
//! Tests in this file share process-wide state (environment variables read by the fakes,
//! HDAPI's single scheduler), so they run one at a time under `SERIAL`.

use std::path::{Path, PathBuf};
mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{drive_until, overload};
use haptics_devices::vendor::{self, fakes, Probe, Vendor, VendorError};
use haptics_devices::{
    safety::SafeDevice, vendor::dhd::ForceDimensionDevice, vendor::openhaptics::OpenHapticsDevice,
    Device, DeviceError, SafetyEvent, SafetySettings, Wrench,
};
use nalgebra::Vector3;

static SERIAL: Mutex<()> = Mutex::new(());

/// Environment variables set for one test and removed afterwards.
struct Env(Vec<&'static str>);

impl Env {
    fn set(vars: &[(&'static str, String)]) -> Env {
        for (k, v) in vars {
            std::env::set_var(k, v);
        }
        Env(vars.iter().map(|(k, _)| *k).collect())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for k in &self.0 {
            std::env::remove_var(k);
        }
    }
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn fake(vendor: Vendor) -> PathBuf {
    fakes::build(vendor).expect("building the fake vendor library")
}

/// One line of a fake's force log: time, force, torque (the vendor's units), enabled.
#[derive(Debug, Clone, Copy)]
struct Logged {
    t: f64,
    force: Vector3<f64>,
    torque: Vector3<f64>,
}

/// Reads a fake's log: the rows and the `# key value` trailer lines.
fn read_log(path: &Path) -> (Vec<Logged>, Vec<String>) {
    let text = std::fs::read_to_string(path).expect("the fake wrote its log on close");
    let mut rows = Vec::new();
    let mut trailer = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            trailer.push(rest.to_string());
            continue;
        }
        let v: Vec<f64> = line.split(',').map(|x| x.parse().unwrap()).collect();
        rows.push(Logged {
            t: v[0],
            force: Vector3::new(v[1], v[2], v[3]),
            torque: Vector3::new(v[4], v[5], v[6]),
        });
    }
    (rows, trailer)
}

/// [`drive_until`] with the stylus position given to `command`, for the whole run.
fn drive(
    device: &mut dyn Device,
    seconds: f64,
    mut command: impl FnMut(f64, Vector3<f64>) -> Wrench,
) -> (u64, Option<(DeviceError, f64)>) {
    drive_until(device, seconds, |t, s| Some(command(t, s.pose.position)))
}

/// How the safety layer's ramp went over a run: whether it reached full scale, and how
/// many stalls (no write within the 5 ms timeout: zero written, re-armed through the gate
/// and the 0.5 s ramp) and velocity cuts (output cut until the gate opens again) it saw.
#[derive(Debug, Clone, Copy)]
struct RampOutcome {
    completed: bool,
    stalls: u64,
    velocity_cuts: u64,
}

fn ramp_outcome<D: Device>(dev: &mut SafeDevice<D>) -> RampOutcome {
    let events = dev.events();
    RampOutcome {
        completed: events.count(SafetyEvent::RampComplete) > 0,
        stalls: events.count(SafetyEvent::Stall),
        velocity_cuts: events.count(SafetyEvent::VelocityLimit),
    }
}

/// Checks a fake's log against the safety contract, for a device with `max_force` N and
/// `max_torque` (in the log's units): every value finite and within the limits, the mean
/// |F| over the first 50 ms at most 25% of the maximum, the last frame zero, and at least
/// 900 frames per second over the run. The clamp level is reached whenever the ramp
/// completed; a ramp that never completed must have been cut by stalls or velocity cuts
/// (on a loaded machine a 1 kHz loop can miss the 5 ms timeout, and a servo frame
/// preempted between its pose and its timestamp can show a speed spike; the layer then
/// rightly cuts the output and, with this test's large command, never reaches full
/// scale), which is reported.
fn check_contract(rows: &[Logged], max_force: f64, max_torque: f64, ramp: RampOutcome) {
    assert!(!rows.is_empty());
    for r in rows {
        assert!(
            r.force.iter().chain(r.torque.iter()).all(|v| v.is_finite()),
            "{r:?}"
        );
        assert!(
            r.force.norm() <= max_force * (1.0 + 1e-9),
            "{r:?} above {max_force} N"
        );
        assert!(
            r.torque.norm() <= max_torque * (1.0 + 1e-9) + 1e-12,
            "{r:?}"
        );
    }
    let t0 = rows[0].t;
    let early: Vec<f64> = rows
        .iter()
        .filter(|r| r.t - t0 <= 0.05)
        .map(|r| r.force.norm())
        .collect();
    let mean = early.iter().sum::<f64>() / early.len() as f64;
    assert!(
        mean <= 0.25 * max_force,
        "mean |F| {mean} N in the first 50 ms"
    );
    let peak = rows.iter().map(|r| r.force.norm()).fold(0.0, f64::max);
    if ramp.completed {
        assert!(
            peak > 0.9 * max_force,
            "the ramp completed but the clamp level was not reached ({peak} N)"
        );
    } else {
        assert!(
            ramp.stalls + ramp.velocity_cuts > 0,
            "the ramp never completed, without a stall or a velocity cut ({peak} N)"
        );
        eprintln!(
            "the ramp never completed: {} stalls and {} velocity cuts cut it (peak {peak:.2} N)",
            ramp.stalls, ramp.velocity_cuts
        );
    }
    let last = rows.last().unwrap();
    assert_eq!(last.force, Vector3::zeros(), "the last frame is zero");
    assert_eq!(last.torque, Vector3::zeros());
    let span = rows.last().unwrap().t - t0;
    let rate = rows.len() as f64 / span;
    assert!(rate >= 900.0, "{rate:.0} frames/s over {span:.2} s");
}

fn safe<D: Device>(d: D) -> SafeDevice<D> {
    SafeDevice::new(d, SafetySettings::default()).unwrap()
}

#[test]
fn openhaptics_runs_the_servo_loop_within_the_limits() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_LOG", log.display().to_string()),
    ]);
    let dev = OpenHapticsDevice::open().expect("opening the fake device");
    let info = dev.info().clone();
    assert_eq!(info.name, "PHANTOM Premium 1.5 6DOF");
    assert_eq!((info.dof_sensed, info.dof_actuated), (6, 6));
    assert_eq!(info.max_force_n, 8.5);
    assert!(
        (info.max_torque_nm - 0.188).abs() < 1e-12,
        "mN·m converted to N·m"
    );
    // HDAPI's 3.5 N/mm (N/mm converted) is capped by the published 800 N/m (CHAI3D
    // 3.3.0's PHANTOM Premium 1.5 6DOF), which also gives the angular 0.3 N·m/rad.
    assert_eq!(info.max_stiffness_n_per_m, 800.0);
    assert_eq!(info.max_angular_stiffness_nm_per_rad, 0.3);
    let mut dev = safe(dev);
    let start = Instant::now();
    let mut span = (Vector3::repeat(f64::MAX), Vector3::repeat(f64::MIN));
    let (cycles, fault) = drive(&mut dev, 1.5, |t, p| {
        span = (span.0.inf(&p), span.1.sup(&p));
        overload(t)
    });
    assert!(fault.is_none(), "{fault:?}");
    assert!(cycles as f64 >= 900.0 * start.elapsed().as_secs_f64() * 0.95);
    // The scripted motion (a 20 mm circle at 0.25 Hz: 135 degrees of it in 1.5 s, so x
    // reaches the radius, 20 mm, and y passes it) arrives in metres.
    let extent = span.1 - span.0;
    assert!(extent.x > 0.019 && extent.x < 0.0201, "{extent:?}");
    assert!(extent.y > 0.025 && extent.y < 0.04, "{extent:?}");
    let ramp = ramp_outcome(&mut dev);
    drop(dev);
    let (rows, trailer) = read_log(&log);
    assert!(
        trailer.contains(&"disabled".to_string()),
        "hdDisableDevice ran"
    );
    assert!(trailer.contains(&"violations 0".to_string()), "{trailer:?}");
    // Torque in the log is mN·m.
    check_contract(&rows, 8.5, 188.0, ramp);
}

#[test]
fn openhaptics_three_dof_output_gets_force_only() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_LOG", log.display().to_string()),
        ("FAKE_HD_MODEL", "Touch".into()),
        ("FAKE_HD_OUTPUT_DOF", "3".into()),
        ("FAKE_HD_MAX_FORCE", "3.3".into()),
    ]);
    let dev = OpenHapticsDevice::open().unwrap();
    assert_eq!(dev.info().name, "Touch");
    assert_eq!(dev.info().dof_actuated, 3);
    assert_eq!(dev.info().max_torque_nm, 0.0);
    let mut dev = safe(dev);
    let (_, fault) = drive(&mut dev, 0.7, |t, _| overload(t));
    assert!(fault.is_none());
    drop(dev);
    let (rows, _) = read_log(&log);
    assert!(
        rows.iter().all(|r| r.torque == Vector3::zeros()),
        "torque was sent"
    );
    assert!(rows.iter().all(|r| r.force.norm() <= 3.3 + 1e-9));
}

/// The enable button: stylus button 0 held for the first `RELEASE` servo frames, then
/// released. Force flows only while it is held (after the gate and the ramp); from the
/// release on, the device gets zero within the servo's hand-off: the haptic side writes
/// zero on the first sample that shows the release, and a wrench computed from an older
/// sample goes stale after `STALE_FRAMES` frames whatever the haptic side does. Everything
/// is counted in the fake's logged frames, so a loaded machine changes how long the test
/// runs, not what it asserts.
#[test]
fn openhaptics_deadman_cuts_the_force_when_released() {
    const RELEASE: usize = 1500;
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_LOG", log.display().to_string()),
        ("FAKE_HD_BUTTONS", "1".into()),
        ("FAKE_HD_BUTTONS_UNTIL_FRAME", RELEASE.to_string()),
    ]);
    let settings = SafetySettings {
        enable_button: Some(0),
        ..SafetySettings::default()
    };
    let mut dev = SafeDevice::new(OpenHapticsDevice::open().unwrap(), settings).unwrap();
    // Drive until the haptic side has seen the release for 400 cycles (the 60 s only end
    // a run that never sees it).
    let mut released_cycles = 0;
    let (_, fault) = drive_until(&mut dev, 60.0, |t, s| {
        if s.buttons & 1 == 0 {
            released_cycles += 1;
        }
        (released_cycles < 400).then(|| overload(t))
    });
    assert!(fault.is_none(), "no fault is scripted: {fault:?}");
    assert_eq!(released_cycles, 400, "the release was never seen");
    let ramp = ramp_outcome(&mut dev);
    drop(dev);
    let (rows, _) = read_log(&log);
    assert!(rows.len() > RELEASE + 100, "{} frames logged", rows.len());
    let held = rows[..RELEASE]
        .iter()
        .map(|r| r.force.norm())
        .fold(0.0, f64::max);
    if ramp.completed {
        assert!(
            held > 1.0,
            "the ramp completed but {held} N flowed while held"
        );
    } else {
        assert!(
            ramp.stalls + ramp.velocity_cuts > 0,
            "the ramp never completed, without a stall or a velocity cut"
        );
        assert!(held > 0.0, "no force flowed while held");
    }
    let stale = vendor::openhaptics::STALE_FRAMES as usize;
    let late = &rows[RELEASE + stale + 1..];
    assert!(
        late.iter().all(|r| r.force == Vector3::zeros()),
        "force more than {} frames after the release",
        stale + 1
    );
}

/// A stalled haptic thread: after commanding a force it stops writing. The servo side
/// sends zero once the wrench is older than STALE_FRAMES frames, whatever the haptic
/// thread does next.
#[test]
fn openhaptics_servo_zeroes_a_stale_wrench() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_LOG", log.display().to_string()),
    ]);
    // No safety layer: the raw device, so only the servo side can zero.
    let mut dev = OpenHapticsDevice::open().unwrap();
    let start = Instant::now();
    let (_, fault) = drive(&mut dev, 0.3, |_, _| {
        Wrench::from_force(Vector3::new(2.0, 0.0, 0.0))
    });
    assert!(fault.is_none());
    let stalled_at = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(200));
    drop(dev);
    let (rows, _) = read_log(&log);
    let t0 = rows[0].t;
    let stall = rows.iter().position(|r| r.t - t0 >= stalled_at).unwrap();
    assert!(
        rows[..stall].iter().any(|r| r.force.x == 2.0),
        "the force was sent"
    );
    let stale_frames = vendor::openhaptics::STALE_FRAMES as usize;
    let after = &rows[(stall + stale_frames + 3).min(rows.len())..];
    assert!(after.len() > 100, "{} frames after the stall", after.len());
    assert!(
        after.iter().all(|r| r.force == Vector3::zeros()),
        "a stale force was kept"
    );
}

#[test]
fn openhaptics_communication_fault_zeroes_and_reports() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_LOG", log.display().to_string()),
        ("FAKE_HD_FAULT_AFTER_MS", "400".into()),
    ]);
    let mut dev = safe(OpenHapticsDevice::open().unwrap());
    let (_, fault) = drive(&mut dev, 3.0, |t, p| {
        Wrench::from_force(-150.0 * p * (t / 0.01).min(1.0))
    });
    let (err, at) = fault.expect("the fault reached the haptic side");
    assert!(at < 1.0, "reported {at} s in, the fault was at 0.4 s");
    let f = err.fatal().unwrap();
    assert_eq!(f.code, 0x0302);
    assert!(err.to_string().contains("HD_COMM_ERROR"), "{err}");
    // The safety layer keeps reporting it and sends nothing more.
    assert!(matches!(dev.read(), Err(DeviceError::Vendor(_))));
    assert!(matches!(
        dev.write(&Wrench::zero()),
        Err(DeviceError::Vendor(_))
    ));
    let close = Instant::now();
    drop(dev);
    assert!(close.elapsed() < Duration::from_secs(1), "closing hung");
    let (rows, trailer) = read_log(&log);
    assert!(trailer.contains(&"disabled".to_string()));
    // The frame in which the error was reported, then one zero frame, then nothing.
    let last = rows.last().unwrap();
    assert_eq!(last.force, Vector3::zeros());
    assert!(
        rows.last().unwrap().t < 0.6,
        "frames ran on after the fault"
    );
}

#[test]
fn openhaptics_missing_library_and_missing_device_are_clear() {
    let _g = lock();
    {
        let _env = Env::set(&[(
            "HAPTICS_OPENHAPTICS_LIB",
            "/nonexistent/haptics/libHD.so".into(),
        )]);
        let t = Instant::now();
        let e = OpenHapticsDevice::open().err().expect("no library");
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(matches!(e, VendorError::LibraryNotFound { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("/nonexistent/haptics/libHD.so"), "{msg}");
        assert!(msg.contains("HAPTICS_OPENHAPTICS_LIB"), "{msg}");
        assert!(matches!(
            vendor::probe(Vendor::OpenHaptics),
            Probe::Unavailable(_)
        ));
    }
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        ("FAKE_HD_NO_DEVICE", "1".into()),
    ]);
    let e = OpenHapticsDevice::open().err().expect("no device");
    let msg = e.to_string();
    assert!(msg.contains("HD_COMM_CONFIG_ERROR"), "{msg}");
    assert!(msg.contains("hdInitDevice"), "{msg}");
}

#[test]
fn forcedimension_polls_within_the_published_limits() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("dhd.log");
    let _env = Env::set(&[
        (
            "HAPTICS_DHD_LIB",
            fake(Vendor::ForceDimension).display().to_string(),
        ),
        ("FAKE_DHD_LOG", log.display().to_string()),
    ]);
    // The fake reports no limit (dhdGetMaxForce < 0): the sigma.7's published figures
    // (CHAI3D 3.3.0's specifications: 12 N, 0.2 N·m, 4000 N/m, 1 N·m/rad) apply, and are
    // set in the library.
    let dev = ForceDimensionDevice::open().expect("opening the fake device");
    let info = dev.info().clone();
    assert_eq!(info.name, "sigma.7");
    assert_eq!((info.dof_sensed, info.dof_actuated), (6, 6));
    assert_eq!((info.max_force_n, info.max_torque_nm), (12.0, 0.2));
    assert_eq!(
        (
            info.max_stiffness_n_per_m,
            info.max_angular_stiffness_nm_per_rad
        ),
        (4000.0, 1.0)
    );
    let mut dev = safe(dev);
    let (_, fault) = drive(&mut dev, 1.5, |t, _| overload(t));
    assert!(fault.is_none(), "{fault:?}");
    let ramp = ramp_outcome(&mut dev);
    drop(dev);
    let (rows, trailer) = read_log(&log);
    assert!(trailer.contains(&"closed".to_string()), "dhdClose ran");
    assert!(trailer.contains(&"violations 0".to_string()), "{trailer:?}");
    check_contract(&rows, 12.0, 0.2, ramp);
}

#[test]
fn forcedimension_fault_no_device_and_missing_library() {
    let _g = lock();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("dhd.log");
    {
        let _env = Env::set(&[
            (
                "HAPTICS_DHD_LIB",
                fake(Vendor::ForceDimension).display().to_string(),
            ),
            ("FAKE_DHD_LOG", log.display().to_string()),
            ("FAKE_DHD_FAULT_AFTER_MS", "300".into()),
            // A 3-DOF-output omega.3 with a limit set in the library.
            ("FAKE_DHD_TYPE", "33".into()),
            ("FAKE_DHD_MAX_FORCE", "6".into()),
        ]);
        let dev = ForceDimensionDevice::open().unwrap();
        assert_eq!(dev.info().dof_actuated, 3);
        assert_eq!(
            dev.info().max_force_n,
            6.0,
            "the library's limit wins when lower"
        );
        let mut dev = safe(dev);
        let (_, fault) = drive(&mut dev, 3.0, |t, _| overload(t));
        let (err, at) = fault.expect("the fault was reported");
        assert!(at < 0.5, "{at}");
        assert_eq!(err.fatal().unwrap().code, 2);
        assert!(err.to_string().contains("DHD_ERROR_COM"), "{err}");
        drop(dev);
        let (rows, _) = read_log(&log);
        assert!(rows
            .iter()
            .all(|r| r.force.norm() <= 6.0 + 1e-9 && r.torque == Vector3::zeros()));
        assert!(
            rows.iter().all(|r| r.t < 0.3 + 0.01),
            "forces were accepted after the fault"
        );
    }
    {
        let _env = Env::set(&[
            (
                "HAPTICS_DHD_LIB",
                fake(Vendor::ForceDimension).display().to_string(),
            ),
            ("FAKE_DHD_COUNT", "0".into()),
        ]);
        let msg = ForceDimensionDevice::open().err().unwrap().to_string();
        assert!(msg.contains("no device found"), "{msg}");
        match vendor::probe(Vendor::ForceDimension) {
            Probe::Found { devices, note, .. } => {
                assert!(devices.is_empty());
                assert!(note.is_some());
            }
            p => panic!("{p:?}"),
        }
    }
    let _env = Env::set(&[("HAPTICS_DHD_LIB", "/nonexistent/libdhd.so".into())]);
    let e = ForceDimensionDevice::open().err().unwrap();
    assert!(
        e.to_string()
            .contains("Force Dimension (DHD) library not found"),
        "{e}"
    );
}

#[test]
fn probes_list_the_models_the_libraries_report() {
    let _g = lock();
    let _env = Env::set(&[
        (
            "HAPTICS_OPENHAPTICS_LIB",
            fake(Vendor::OpenHaptics).display().to_string(),
        ),
        (
            "HAPTICS_DHD_LIB",
            fake(Vendor::ForceDimension).display().to_string(),
        ),
        ("FAKE_DHD_TYPE", "35".into()),
    ]);
    match vendor::probe(Vendor::OpenHaptics) {
        Probe::Found { devices, .. } => {
            assert_eq!(devices.len(), 1);
            assert_eq!(devices[0].model, "PHANTOM Premium 1.5 6DOF");
        }
        p => panic!("{p:?}"),
    }
    match vendor::probe(Vendor::ForceDimension) {
        Probe::Found { devices, .. } => {
            assert_eq!(devices.len(), 1);
            assert_eq!(devices[0].model, "omega.7");
            assert_eq!(devices[0].dof_actuated, 3);
        }
        p => panic!("{p:?}"),
    }
    // Probing leaves the devices closed: they open again.
    drop(OpenHapticsDevice::open().unwrap());
    drop(ForceDimensionDevice::open().unwrap());
}
