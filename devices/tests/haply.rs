//! The Haply Inverse3 against the fake Inverse Service
//! (`haptics_devices::vendor::fake_inverse`): the real WebSocket transport, the `haply`
//! crate's wire types and state merge, the I/O hand-off, and the safety layer on top.
//!
//! The fake logs the force of every command it receives, frame by frame, so the
//! assertions are about what the hand would feel: the service's rate, the limits, the
//! start ramp, zero at the end, zero from a release of the enable button, and a fault
//! with zero force when the service drops the connection, stalls or loses the device.
//!
//! The service's address is an environment variable, so the tests run one at a time
//! under `SERIAL`.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{drive_until, overload};
use haptics_devices::vendor::fake_inverse::{FakeInverseService, Frame, Script, GRIP_ANGLE_RAD};
use haptics_devices::vendor::haply::{self, FAULT_CLOSED, FAULT_DEVICE_LOST, FAULT_TRANSPORT};
use haptics_devices::vendor::{self, Probe, Vendor, VendorError, VendorFault};
use haptics_devices::{
    safety::SafeDevice, vendor::haply::HaplyDevice, Device, DeviceError, SafetyEvent,
    SafetySettings, Workspace, Wrench,
};
use nalgebra::{UnitQuaternion, Vector3};

static SERIAL: Mutex<()> = Mutex::new(());

/// A fake service whose address the device will use; the variable is removed on drop.
struct Service {
    fake: FakeInverseService,
}

impl Service {
    fn start(script: Script) -> Service {
        let fake = FakeInverseService::start(script).expect("starting the fake service");
        std::env::set_var("HAPTICS_HAPLY_SERVICE", fake.address());
        Service { fake }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        std::env::remove_var("HAPTICS_HAPLY_SERVICE");
    }
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`overload`] again every 250 ms: after a stall (a loaded machine missing the 5 ms
/// watchdog) the safety layer re-arms only through its small-force gate, which a
/// constant overload never passes again; the repeat gives it a zero every 250 ms.
fn overload_repeating(t: f64) -> Wrench {
    overload(t % 0.25)
}

fn forces(frames: &[Frame]) -> Vec<Vector3<f64>> {
    frames
        .iter()
        .map(|f| {
            let v = f.force.expect("every command carries set_cursor_force");
            Vector3::new(v[0], v[1], v[2])
        })
        .collect()
}

/// Whether the ramp completed, and the stalls and velocity cuts that can keep it from
/// completing on a loaded machine.
fn ramp<D: Device>(dev: &mut SafeDevice<D>) -> (bool, u64) {
    let e = dev.events();
    (
        e.count(SafetyEvent::RampComplete) > 0,
        e.count(SafetyEvent::Stall) + e.count(SafetyEvent::VelocityLimit),
    )
}

/// The safety contract on what the service received: finite and within `max` N, the
/// mean over the first 50 ms at most 25% of it, the clamp level reached when the ramp
/// completed, and zero in the last command.
fn check_contract(frames: &[Frame], max: f64, (completed, cuts): (bool, u64)) {
    let f = forces(frames);
    assert!(f.len() > 100, "{} commands", f.len());
    for (i, v) in f.iter().enumerate() {
        assert!(v.iter().all(|x| x.is_finite()), "frame {i}: {v:?}");
        // The wire carries f32.
        assert!(
            v.norm() <= max * (1.0 + 1e-6),
            "frame {i}: {v:?} above {max} N"
        );
    }
    let t0 = frames[0].t_s;
    let early: Vec<f64> = frames
        .iter()
        .zip(&f)
        .filter(|(fr, _)| fr.t_s - t0 <= 0.05)
        .map(|(_, v)| v.norm())
        .collect();
    let mean = early.iter().sum::<f64>() / early.len() as f64;
    assert!(mean <= 0.25 * max, "mean |F| {mean} N in the first 50 ms");
    let peak = f.iter().map(|v| v.norm()).fold(0.0, f64::max);
    if completed {
        assert!(peak > 0.9 * max, "the ramp completed, peak only {peak} N");
    } else {
        assert!(cuts > 0, "the ramp never completed, without a stall or cut");
    }
    assert_eq!(
        *f.last().unwrap(),
        Vector3::zeros(),
        "the last command is zero"
    );
}

#[test]
fn haply_runs_at_the_service_rate_within_the_limits() {
    let _g = lock();
    let svc = Service::start(Script::default());
    let dev = HaplyDevice::open().expect("opening the fake Inverse3");
    let info = dev.info().clone();
    assert_eq!(info.name, "Haply Inverse3");
    assert_eq!((info.dof_sensed, info.dof_actuated), (6, 3));
    assert_eq!((info.max_force_n, info.max_torque_nm), (2.0, 0.0));
    assert_eq!(info.max_stiffness_n_per_m, 800.0);
    assert_eq!(info.workspace, Workspace::Sphere { radius_m: 0.10 });
    assert_eq!(dev.grip(), Some("1102"));
    let mut dev = SafeDevice::new(dev, SafetySettings::default()).unwrap();
    let mut last = None;
    let (cycles, fault) = drive_until(&mut dev, 1.5, |t, s| {
        last = Some(*s);
        Some(overload(t))
    });
    assert!(fault.is_none(), "{fault:?}");
    assert!(cycles > 1000, "{cycles} cycles");
    // The pose: the fake's cursor at (20, 0, 0) mm and the grip turned 0.3 rad about z,
    // with its button a as bit 0.
    let s = last.unwrap();
    assert!((s.pose.position - Vector3::new(0.02, 0.0, 0.0)).norm() < 1e-7);
    let expected = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), GRIP_ANGLE_RAD);
    assert!(s.pose.orientation.angle_to(&expected) < 1e-6);
    assert_eq!(s.buttons, 1);
    let ramp = ramp(&mut dev);
    drop(dev);
    svc.fake.settle(Duration::from_secs(2));
    let frames = svc.fake.frames();
    // The handshake names the session and centres the origin, once.
    assert_eq!(frames[0].profile.as_deref(), Some(haply::PROFILE_NAME));
    assert_eq!(frames[0].preset.as_deref(), Some(haply::PRESET));
    assert!(frames[1..]
        .iter()
        .all(|f| f.profile.is_none() && f.preset.is_none()));
    assert_eq!(svc.fake.malformed(), 0);
    check_contract(&frames, 2.0, ramp);
    // One command per state update, at the service's 1 kHz.
    let span = frames.last().unwrap().t_s - frames[0].t_s;
    let rate = frames.len() as f64 / span;
    assert!((850.0..=1050.0).contains(&rate), "{rate:.0} commands/s");
}

/// The loop follows the service's rate, not the haptic thread's: at 2 kHz and 500 Hz the
/// commands come at those rates while the haptic loop runs at 1 kHz.
#[test]
fn haply_follows_the_rate_of_the_service() {
    let _g = lock();
    for rate_hz in [2000.0, 500.0] {
        let svc = Service::start(Script {
            rate_hz,
            ..Script::default()
        });
        let mut dev =
            SafeDevice::new(HaplyDevice::open().unwrap(), SafetySettings::default()).unwrap();
        let (_, fault) = drive_until(&mut dev, 0.8, |t, _| Some(overload(t)));
        assert!(fault.is_none(), "{fault:?}");
        drop(dev);
        svc.fake.settle(Duration::from_secs(2));
        let frames = svc.fake.frames();
        let span = frames.last().unwrap().t_s - frames[0].t_s;
        let rate = frames.len() as f64 / span;
        assert!(
            rate >= 0.8 * rate_hz && rate <= 1.05 * rate_hz,
            "{rate:.0} commands/s from a {rate_hz} Hz service"
        );
        assert!(forces(&frames).iter().all(|f| f.norm() <= 2.0 + 1e-6));
    }
}

/// The enable button (the grip's button a) held for the first `RELEASE` state updates,
/// then released: the service receives zero from `RELEASE + STALE_FRAMES + 2` on, counted
/// in the fake's frames, so a loaded machine changes how long the test runs, not what it
/// asserts.
#[test]
fn haply_deadman_cuts_the_force_when_released() {
    const RELEASE: u64 = 1200;
    let _g = lock();
    let svc = Service::start(Script {
        button_until_frame: Some(RELEASE),
        ..Script::default()
    });
    let settings = SafetySettings {
        enable_button: Some(0),
        ..SafetySettings::default()
    };
    let mut dev = SafeDevice::new(HaplyDevice::open().unwrap(), settings).unwrap();
    let mut released = 0;
    let (_, fault) = drive_until(&mut dev, 60.0, |t, s| {
        if s.buttons & 1 == 0 {
            released += 1;
        }
        (released < 300).then(|| overload_repeating(t))
    });
    assert!(fault.is_none(), "{fault:?}");
    assert_eq!(released, 300, "the release was never seen");
    let (completed, cuts) = ramp(&mut dev);
    drop(dev);
    svc.fake.settle(Duration::from_secs(2));
    let frames = svc.fake.frames();
    let f = forces(&frames);
    let held = f[..RELEASE as usize]
        .iter()
        .map(|v| v.norm())
        .fold(0.0, f64::max);
    if completed {
        assert!(
            held > 1.5,
            "the ramp completed but {held} N flowed while held"
        );
    } else {
        assert!(cuts > 0 && held > 0.0, "no force while held ({held} N)");
    }
    let from = (RELEASE + haply::STALE_FRAMES + 2) as usize;
    assert!(f.len() > from + 100, "{} commands", f.len());
    assert!(
        f[from - 1..].iter().all(|v| *v == Vector3::zeros()),
        "force after the release"
    );
}

/// A haptic thread that stops writing: the I/O thread sends zero once the wrench is more
/// than STALE_FRAMES state updates old.
#[test]
fn haply_zeroes_a_stale_wrench() {
    let _g = lock();
    let svc = Service::start(Script::default());
    let mut dev = HaplyDevice::open().unwrap();
    // The raw device (no safety layer): one write of 1 N, then reads only.
    let s = dev.read().unwrap();
    dev.write(&Wrench::from_force(Vector3::new(1.0, 0.0, 0.0)))
        .unwrap();
    let written_at = s;
    assert!(svc.fake.wait_for_frames(200, Duration::from_secs(10)));
    drop(dev);
    svc.fake.settle(Duration::from_secs(2));
    let f = forces(&svc.fake.frames());
    let sent = f.iter().filter(|v| v.x == 1.0).count();
    assert!(sent >= 1, "the force was never sent");
    assert!(
        sent as u64 <= haply::STALE_FRAMES + 1,
        "{sent} commands carried a wrench written once ({written_at:?})"
    );
    assert!(f[f.len() - 100..].iter().all(|v| *v == Vector3::zeros()));
}

/// Reads until the first fatal error; returns it, the time from the scripted event and the
/// last force the service received.
fn run_to_fault(svc: &Service, seconds: f64) -> (VendorFault, Vec<Vector3<f64>>) {
    let mut dev = SafeDevice::new(HaplyDevice::open().unwrap(), SafetySettings::default()).unwrap();
    let (_, fault) = drive_until(&mut dev, seconds, |t, _| Some(overload(t)));
    let (err, _) = fault.expect("the scripted fault ended the run");
    let f = err.fatal().unwrap();
    assert!(
        err.to_string().starts_with("Haply Inverse Service: "),
        "{err}"
    );
    // After a fault the device refuses to run again.
    assert!(matches!(dev.read(), Err(DeviceError::Vendor(_))));
    drop(dev);
    svc.fake.settle(Duration::from_secs(2));
    (f, forces(&svc.fake.frames()))
}

#[test]
fn haply_dropped_connection_is_a_fault() {
    let _g = lock();
    let svc = Service::start(Script {
        drop_after_frames: Some(800),
        ..Script::default()
    });
    let start = Instant::now();
    let (fault, f) = run_to_fault(&svc, 10.0);
    assert!(
        matches!(fault.code, FAULT_CLOSED | FAULT_TRANSPORT),
        "{fault}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(f.len(), 801, "commands up to the drop");
    assert!(f.iter().all(|v| v.norm() <= 2.0 + 1e-6));
}

#[test]
fn haply_stalled_service_is_a_fault_with_zero_force() {
    let _g = lock();
    let svc = Service::start(Script {
        silent_after_frames: Some(600),
        ..Script::default()
    });
    let (fault, f) = run_to_fault(&svc, 10.0);
    assert_eq!(fault.code, VendorFault::SERVO_STOPPED, "{fault}");
    assert!(
        fault.to_string().contains("stopped sending state"),
        "{fault}"
    );
    // The last command, sent after the silence, is zero.
    assert!(f.len() > 600, "{}", f.len());
    assert_eq!(*f.last().unwrap(), Vector3::zeros());
}

#[test]
fn haply_unplugged_device_is_a_fault_with_zero_force() {
    let _g = lock();
    let svc = Service::start(Script {
        unplug_at_frame: Some(700),
        ..Script::default()
    });
    let (fault, f) = run_to_fault(&svc, 10.0);
    assert_eq!(fault.code, FAULT_DEVICE_LOST, "{fault}");
    assert!(fault.to_string().contains("unplugged"), "{fault}");
    assert_eq!(f.len(), 701);
    assert_eq!(*f.last().unwrap(), Vector3::zeros());
}

#[test]
fn haply_service_not_running_fails_fast_naming_the_address() {
    let _g = lock();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::env::set_var("HAPTICS_HAPLY_SERVICE", format!("127.0.0.1:{port}"));
    let start = Instant::now();
    let err = HaplyDevice::open().err().expect("nothing listens");
    let probe = vendor::probe(Vendor::Haply);
    std::env::remove_var("HAPTICS_HAPLY_SERVICE");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(err, VendorError::ServiceUnreachable { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&format!("ws://127.0.0.1:{port}")), "{msg}");
    assert!(msg.contains("HAPTICS_HAPLY_SERVICE"), "{msg}");
    assert!(matches!(
        probe,
        Probe::Unavailable(VendorError::ServiceUnreachable { .. })
    ));
}

#[test]
fn haply_service_without_an_inverse3_is_clear_and_probes_list_models() {
    let _g = lock();
    {
        let _svc = Service::start(Script {
            no_inverse3: true,
            ..Script::default()
        });
        let err = HaplyDevice::open().err().expect("no device listed");
        assert!(err.to_string().contains("lists no Inverse3"), "{err}");
        match vendor::probe(Vendor::Haply) {
            Probe::Found { devices, note, .. } => {
                assert!(devices.is_empty());
                assert!(note.unwrap().contains("no Inverse3"));
            }
            p => panic!("{p:?}"),
        }
    }
    // A Minverse without a grip: 3 DOF in, its smaller workspace, no buttons.
    let svc = Service::start(Script {
        device_type: "minverse".into(),
        grip: false,
        ..Script::default()
    });
    match vendor::probe(Vendor::Haply) {
        Probe::Found {
            devices, source, ..
        } => {
            assert_eq!(devices.len(), 1);
            assert_eq!(devices[0].model, "Haply Minverse 049D");
            assert_eq!((devices[0].dof_sensed, devices[0].dof_actuated), (3, 3));
            assert!(source.from_env);
        }
        p => panic!("{p:?}"),
    }
    let mut dev = HaplyDevice::open().unwrap();
    assert_eq!(dev.info().workspace, Workspace::Sphere { radius_m: 0.04 });
    assert_eq!(dev.info().dof_sensed, 3);
    let s = dev.read().unwrap();
    assert_eq!(
        (s.buttons, s.pose.orientation),
        (0, UnitQuaternion::identity())
    );
    drop(dev);
    // The probe's connection sent no command: the only commands are the device's.
    assert_eq!(svc.fake.connections(), 2);
}
