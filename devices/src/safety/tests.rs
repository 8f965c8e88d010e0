use super::*;
use crate::Pose;

/// A scripted device: each read advances 1 ms and returns `pose`/`buttons`; writes are
/// recorded. `connected` false makes reads and writes fail with Disconnected.
struct Mock {
    info: DeviceInfo,
    t: f64,
    pose: Pose,
    buttons: u32,
    writes: Vec<Wrench>,
    connected: bool,
    reconnect_ok: bool,
    reconnects: usize,
}

impl Mock {
    fn new() -> Self {
        Self {
            info: DeviceInfo::phantom_premium_6dof(),
            t: 0.0,
            pose: Pose::identity(),
            buttons: 0,
            writes: Vec::new(),
            connected: true,
            reconnect_ok: true,
            reconnects: 0,
        }
    }
}

impl Device for Mock {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        if !self.connected {
            return Err(DeviceError::Disconnected("unplugged".into()));
        }
        self.t += 0.001;
        Ok(DeviceSample {
            time_s: self.t,
            pose: self.pose,
            buttons: self.buttons,
        })
    }
    fn write(&mut self, w: &Wrench) -> Result<(), DeviceError> {
        if !self.connected {
            return Err(DeviceError::Disconnected("unplugged".into()));
        }
        self.writes.push(*w);
        Ok(())
    }
    fn reconnect(&mut self) -> Result<(), DeviceError> {
        self.reconnects += 1;
        if self.reconnect_ok {
            self.connected = true;
            Ok(())
        } else {
            Err(DeviceError::NotFound("still gone".into()))
        }
    }
}

fn fx(x: f64) -> Wrench {
    Wrench::from_force(Vector3::new(x, 0.0, 0.0))
}

fn cycle(d: &mut SafeDevice<Mock>, w: Wrench) -> Wrench {
    d.read().expect("mock read");
    d.write(&w).expect("mock write");
    d.last_output()
}

fn no_ramp() -> SafetySettings {
    SafetySettings {
        ramp_time_s: 0.0,
        ..SafetySettings::default()
    }
}

fn drained(d: &mut SafeDevice<Mock>) -> Vec<SafetyEvent> {
    d.events().drain().map(|r| r.event).collect()
}

#[test]
fn ramp_is_linear_over_ramp_time() {
    let mut d = SafeDevice::new(Mock::new(), SafetySettings::default()).unwrap();
    // The gate opens on the first cycle (0.2 N < 0.5 N): ramp starts at t = 1 ms.
    assert_eq!(cycle(&mut d, fx(0.2)).force.x, 0.0);
    for k in 1..=600 {
        let out = cycle(&mut d, fx(0.2)).force.x;
        let expected = 0.2 * (k as f64 * 0.001 / 0.5).min(1.0);
        // Mock times are sums of 0.001, exact to ~1e-15 s.
        assert!(
            (out - expected).abs() < 1e-12,
            "cycle {k}: {out} vs {expected}"
        );
    }
    assert_eq!(d.state(), OutputState::Active);
    let ev = drained(&mut d);
    assert_eq!(
        ev,
        vec![
            SafetyEvent::Enabled,
            SafetyEvent::RampStarted,
            SafetyEvent::RampComplete
        ]
    );
}

#[test]
fn output_waits_for_small_force() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    for _ in 0..100 {
        assert_eq!(cycle(&mut d, fx(3.0)), Wrench::zero());
    }
    assert_eq!(d.state(), OutputState::WaitSmall);
    // Below the threshold the gate opens (no ramp: full scale at once), and a larger
    // force afterwards goes through.
    assert_eq!(cycle(&mut d, fx(0.4)).force.x, 0.4);
    assert_eq!(cycle(&mut d, fx(3.0)).force.x, 3.0);
    // Torque too must be small to open the gate.
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    let w = Wrench::new(Vector3::zeros(), Vector3::new(0.0, 0.1, 0.0));
    assert_eq!(cycle(&mut d, w), Wrench::zero());
    assert_eq!(d.state(), OutputState::WaitSmall);
}

#[test]
fn force_and_torque_are_clamped_keeping_direction() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    cycle(&mut d, Wrench::zero());
    let cmd = Wrench::new(Vector3::new(30.0, 40.0, 0.0), Vector3::new(0.0, 0.0, -1.0));
    for _ in 0..10 {
        let out = cycle(&mut d, cmd);
        assert!((out.force.norm() - 8.5).abs() < 1e-12);
        assert!((out.force.normalize() - Vector3::new(0.6, 0.8, 0.0)).norm() < 1e-12);
        assert!((out.torque - Vector3::new(0.0, 0.0, -0.188)).norm() < 1e-12);
    }
    // Hardware never saw more than the maximum.
    assert!(d
        .inner()
        .writes
        .iter()
        .all(|w| w.force.norm() <= 8.5 + 1e-12));
    assert_eq!(d.events().count(SafetyEvent::ForceClamped), 10);
    let ev = drained(&mut d);
    // Edge-triggered: one ring record each for the sustained clamps.
    assert_eq!(
        ev.iter()
            .filter(|e| **e == SafetyEvent::ForceClamped)
            .count(),
        1
    );
    assert_eq!(
        ev.iter()
            .filter(|e| **e == SafetyEvent::TorqueClamped)
            .count(),
        1
    );

    // A settings cap below the device maximum wins.
    let s = SafetySettings {
        max_force_n: Some(2.0),
        ..no_ramp()
    };
    let mut d = SafeDevice::new(Mock::new(), s).unwrap();
    cycle(&mut d, Wrench::zero());
    assert!((cycle(&mut d, fx(-5.0)).force.x + 2.0).abs() < 1e-12);
}

/// A re-arm (the haptic thread's, after a reset) drops active output back to the gate:
/// a large force stays off until a small one opens the gate again. A box passes it on;
/// disabled output stays disabled.
#[test]
fn rearm_drops_active_output_to_the_gate() {
    let mut safe = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    assert_eq!(cycle(&mut safe, fx(0.1)).force.x, 0.1);
    assert_eq!(cycle(&mut safe, fx(3.0)).force.x, 3.0);
    safe.rearm();
    assert_eq!(safe.state(), OutputState::WaitSmall);
    assert_eq!(cycle(&mut safe, fx(3.0)).force.x, 0.0);
    assert_eq!(cycle(&mut safe, fx(0.2)).force.x, 0.2);
    assert_eq!(cycle(&mut safe, fx(3.0)).force.x, 3.0);
    let mut boxed = Box::new(safe);
    Device::rearm(&mut boxed);
    assert_eq!(boxed.state(), OutputState::WaitSmall);
    let enable = SafetySettings {
        enable_button: Some(0),
        ..no_ramp()
    };
    let mut off = SafeDevice::new(Mock::new(), enable).unwrap();
    cycle(&mut off, fx(0.1));
    off.rearm();
    assert_eq!(off.state(), OutputState::Disabled);
}

#[test]
fn non_finite_force_gives_zero_and_rearms() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    cycle(&mut d, fx(0.1));
    assert_eq!(d.state(), OutputState::Active);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let w = Wrench::new(Vector3::new(1.0, bad, 0.0), Vector3::zeros());
        assert_eq!(cycle(&mut d, w), Wrench::zero());
        let w = Wrench::new(Vector3::zeros(), Vector3::new(bad, 0.0, 0.0));
        assert_eq!(cycle(&mut d, w), Wrench::zero());
    }
    assert_eq!(d.state(), OutputState::WaitSmall);
    assert!(d.inner().writes.iter().all(|w| w.is_finite()));
    assert!(drained(&mut d).contains(&SafetyEvent::NonFiniteForce));
    // A large finite force right after stays zero (gate), a small one re-enables.
    assert_eq!(cycle(&mut d, fx(4.0)), Wrench::zero());
    assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
}

#[test]
fn deadman_release_cuts_at_once_and_press_ramps_again() {
    // The enable button on bit 1, the clutch moved off it to bit 2.
    let s = SafetySettings {
        enable_button: Some(1),
        clutch_button: Some(2),
        ..SafetySettings::default()
    };
    let mut d = SafeDevice::new(Mock::new(), s).unwrap();
    for _ in 0..10 {
        assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
    }
    assert_eq!(d.state(), OutputState::Disabled);
    d.inner_mut().buttons = 0b10;
    for _ in 0..600 {
        cycle(&mut d, fx(0.1));
    }
    assert!((d.last_output().force.x - 0.1).abs() < 1e-12);
    // Release: the read itself writes zero, before the caller's write.
    d.inner_mut().buttons = 0;
    let n = d.inner().writes.len();
    d.read().unwrap();
    assert_eq!(d.inner().writes.len(), n + 1);
    assert_eq!(d.inner().writes[n], Wrench::zero());
    d.write(&fx(0.1)).unwrap();
    assert_eq!(d.last_output(), Wrench::zero());
    // Press again: ramp from zero.
    d.inner_mut().buttons = 0b10;
    cycle(&mut d, fx(0.1));
    let out = cycle(&mut d, fx(0.1)).force.x;
    assert!(out > 0.0 && out < 0.001, "ramping from zero: {out}");
    let ev = drained(&mut d);
    assert_eq!(
        ev.iter()
            .filter(|e| **e == SafetyEvent::DeadmanReleased)
            .count(),
        1
    );
}

#[test]
fn velocity_limit_cuts_output_until_slow() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    cycle(&mut d, fx(0.1));
    assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
    // 5 mm in 1 ms = 5 m/s > 1.5 m/s.
    d.inner_mut().pose.position.x += 0.005;
    assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
    assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
    // Standing still again: gate and (zero-length) ramp re-enable.
    assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
    // Angular: 0.05 rad in 1 ms = 50 rad/s > 20 rad/s.
    d.inner_mut().pose.orientation =
        nalgebra::UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.05);
    assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
    assert_eq!(d.events().count(SafetyEvent::VelocityLimit), 2);
}

#[test]
fn impulse_limit_bounds_the_leaky_integral() {
    let s = SafetySettings {
        max_impulse_n_s: Some(0.05),
        impulse_window_s: 0.1,
        ..no_ramp()
    };
    let mut d = SafeDevice::new(Mock::new(), s).unwrap();
    cycle(&mut d, Wrench::zero());
    let mut first_limited = None;
    let mut integral = 0.0;
    for k in 0..1000 {
        let out = cycle(&mut d, fx(2.0)).force.x;
        integral = integral * (-0.001f64 / 0.1).exp() + out * 0.001;
        assert!(integral <= 0.05 + 1e-12);
        if out < 2.0 && first_limited.is_none() {
            first_limited = Some(k);
        }
    }
    // 2 N bursts for about 0.05 / 2 s = 25 ms (a little more as the integral leaks),
    // then the sustained force settles at max/window = 0.5 N.
    let k = first_limited.expect("the limit must engage");
    assert!((24..=30).contains(&k), "limited from cycle {k}");
    assert!((d.last_output().force.x - 0.5).abs() < 0.01);
    assert!(d.events().count(SafetyEvent::ImpulseLimit) > 900);
}

#[test]
fn stall_on_read_zeroes_and_rearms() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    cycle(&mut d, fx(0.2));
    assert_eq!(d.state(), OutputState::Active);
    // Six reads without a write: the sixth is 6 ms after the last write > 5 ms.
    for _ in 0..6 {
        d.read().unwrap();
    }
    assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
    assert_eq!(d.state(), OutputState::WaitSmall);
    assert_eq!(d.events().count(SafetyEvent::Stall), 1);
    // Explicit check by a supervisor that owns the device.
    cycle(&mut d, fx(0.2));
    assert!(!d.check_stall(d.now_s + 0.004));
    assert!(d.check_stall(d.now_s + 0.0051));
    assert_eq!(d.events().count(SafetyEvent::Stall), 2);
    // Not armed: nothing to report.
    assert!(!d.check_stall(d.now_s + 1.0));
}

#[test]
fn watchdog_handle_flags_a_stall_for_the_next_cycle() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    let wd = d.watchdog();
    assert!(!wd.check_stall(Instant::now() + std::time::Duration::from_secs(1)));
    cycle(&mut d, fx(0.2));
    assert!(!wd.check_stall(Instant::now()));
    let later = Instant::now() + std::time::Duration::from_millis(50);
    assert!(std::thread::spawn(move || wd.check_stall(later))
        .join()
        .unwrap());
    d.read().unwrap();
    assert_eq!(d.events().count(SafetyEvent::Stall), 1);
    assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
    assert_eq!(d.state(), OutputState::WaitSmall);
}

#[test]
fn disconnect_zeroes_then_reconnects_and_ramps() {
    let s = SafetySettings {
        reconnect_interval_s: 0.0,
        ..no_ramp()
    };
    let mut d = SafeDevice::new(Mock::new(), s).unwrap();
    cycle(&mut d, fx(0.3));
    assert_eq!(d.last_output().force.x, 0.3);
    d.inner_mut().connected = false;
    d.inner_mut().reconnect_ok = false;
    assert!(matches!(d.read(), Err(DeviceError::Disconnected(_))));
    assert_eq!(d.state(), OutputState::Disconnected);
    assert_eq!(d.last_output(), Wrench::zero());
    assert!(matches!(
        d.write(&fx(0.3)),
        Err(DeviceError::Disconnected(_))
    ));
    for _ in 0..3 {
        assert!(d.read().is_err());
    }
    assert_eq!(d.inner().reconnects, 3);
    d.inner_mut().reconnect_ok = true;
    d.read().expect("reconnected");
    // Re-armed through the gate: a large force stays zero, a small one passes.
    d.write(&fx(3.0)).unwrap();
    assert_eq!(d.last_output(), Wrench::zero());
    assert_eq!(cycle(&mut d, fx(0.3)).force.x, 0.3);
    let ev = drained(&mut d);
    let pos = |e| ev.iter().position(|x| *x == e).unwrap();
    assert!(pos(SafetyEvent::Disconnected) < pos(SafetyEvent::ReconnectFailed));
    assert!(pos(SafetyEvent::ReconnectFailed) < pos(SafetyEvent::Reconnected));
    assert_eq!(d.events().count(SafetyEvent::ReconnectFailed), 3);
}

#[test]
fn reconnect_attempts_are_paced() {
    let s = SafetySettings {
        reconnect_interval_s: 60.0,
        ..no_ramp()
    };
    let mut d = SafeDevice::new(Mock::new(), s).unwrap();
    cycle(&mut d, Wrench::zero());
    d.inner_mut().connected = false;
    d.inner_mut().reconnect_ok = false;
    for _ in 0..100 {
        assert!(d.read().is_err());
    }
    // The disconnect itself starts the interval: no attempt within a minute.
    assert_eq!(d.inner().reconnects, 0);
}

#[test]
fn non_finite_pose_is_rejected() {
    let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
    cycle(&mut d, fx(0.1));
    d.inner_mut().pose.position.y = f64::NAN;
    assert!(matches!(d.read(), Err(DeviceError::NonFiniteSample)));
    assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
    assert_eq!(d.events().count(SafetyEvent::NonFinitePose), 1);
}

#[test]
fn the_layer_clock_follows_a_good_device_clock_exactly_and_survives_a_bad_one() {
    let mut c = LayerClock::default();
    for t in [5.0, 5.001, 5.0015, 5.9] {
        assert_eq!(c.advance(t), t);
    }
    // Backwards counts as zero, then the clock runs on by the device's steps.
    assert_eq!(c.advance(1.0), 5.9);
    assert!((c.advance(1.25) - 6.15).abs() < 1e-12);
    // A jump far ahead counts as MAX_CLOCK_STEP_S; the way back as zero.
    let before = c.advance(1.25);
    assert!((c.advance(1e300) - (before + MAX_CLOCK_STEP_S)).abs() < 1e-12);
    let after = c.advance(1.5);
    assert!((after - (before + MAX_CLOCK_STEP_S)).abs() < 1e-12);
    assert!((c.advance(1.6) - (after + 0.1)).abs() < 1e-12);
}

#[test]
fn a_device_clock_that_jumps_ahead_and_back_stalls_then_recovers() {
    let mut d = SafeDevice::new(Mock::new(), SafetySettings::default()).unwrap();
    for _ in 0..600 {
        cycle(&mut d, fx(0.2));
    }
    assert_eq!(d.state(), OutputState::Active);
    // The device clock leaps to 1e300 s: a stall (zero at once), then back to normal
    // times: the ramp restarts from the layer's clock, not from 1e300 s.
    let t = d.inner().t;
    d.inner_mut().t = 1e300;
    assert_eq!(cycle(&mut d, fx(0.2)).force.x, 0.0);
    d.inner_mut().t = t;
    let mut out = 0.0;
    for _ in 0..700 {
        out = cycle(&mut d, fx(0.2)).force.x;
    }
    assert_eq!(out, 0.2, "output must recover after the ramp");
    assert_eq!(d.state(), OutputState::Active);
    assert!(d.events().count(SafetyEvent::Stall) >= 1);
}

#[test]
fn settings_are_validated() {
    let bad = [
        SafetySettings {
            ramp_time_s: -1.0,
            ..SafetySettings::default()
        },
        SafetySettings {
            stall_timeout_s: 0.0,
            ..SafetySettings::default()
        },
        SafetySettings {
            max_velocity_m_s: Some(f64::NAN),
            ..SafetySettings::default()
        },
        SafetySettings {
            enable_button: Some(32),
            ..SafetySettings::default()
        },
        SafetySettings {
            clutch_button: Some(32),
            ..SafetySettings::default()
        },
        // The enable button on the clutch's bit: holding it would hold both.
        SafetySettings {
            enable_button: Some(DEFAULT_CLUTCH_BUTTON),
            ..SafetySettings::default()
        },
    ];
    for s in bad {
        assert!(matches!(
            SafeDevice::new(Mock::new(), s),
            Err(DeviceError::InvalidSettings(_))
        ));
    }
    // Another clutch, or none, frees the button.
    for clutch_button in [Some(2), None] {
        let s = SafetySettings {
            enable_button: Some(DEFAULT_CLUTCH_BUTTON),
            clutch_button,
            ..SafetySettings::default()
        };
        assert!(SafeDevice::new(Mock::new(), s).is_ok(), "{clutch_button:?}");
    }
    assert_eq!(SafetySettings::default().clutch_mask(), 1 << 1);
    assert_eq!(clutch_mask(None), 0);
    assert_eq!(clutch_mask(Some(40)), 0);
}

#[test]
fn event_ring_overwrites_oldest_and_counts() {
    let mut log = EventLog::default();
    for k in 0..100 {
        log.record(k as f64, SafetyEvent::Stall);
    }
    assert_eq!(log.len(), EVENT_CAPACITY);
    assert_eq!(log.overwritten(), 100 - EVENT_CAPACITY as u64);
    assert_eq!(log.count(SafetyEvent::Stall), 100);
    let times: Vec<f64> = log.drain().map(|r| r.time_s).collect();
    assert_eq!(times.first(), Some(&36.0));
    assert_eq!(times.last(), Some(&99.0));
    assert!(log.is_empty());
    assert_eq!(SafetyEvent::ALL.len(), SafetyEvent::COUNT);
    for (i, e) in SafetyEvent::ALL.iter().enumerate() {
        assert_eq!(e.index(), i);
    }
}

#[test]
fn pure_helpers() {
    let (v, c) = clamp_magnitude(Vector3::new(3.0, 4.0, 0.0), 1.0);
    assert!(c && (v - Vector3::new(0.6, 0.8, 0.0)).norm() < 1e-15);
    let (v, c) = clamp_magnitude(Vector3::new(0.3, 0.4, 0.0), 1.0);
    assert!(!c && v == Vector3::new(0.3, 0.4, 0.0));
    assert_eq!(clamp_magnitude(Vector3::x(), 0.0), (Vector3::zeros(), true));
    assert_eq!(ramp_scale(0.25, 0.5), 0.5);
    assert_eq!(ramp_scale(-1.0, 0.5), 0.0);
    assert_eq!(ramp_scale(2.0, 0.5), 1.0);
    assert_eq!(ramp_scale(0.0, 0.0), 1.0);
}
