//! A stand-in for Force Dimension's `libdhd.so`, for tests without hardware.
//!
//! It exports the DHD functions the device layer uses, with the same names and C ABI as
//! the public header (dhdc.h: `char ID` last, `int` status returns, -1 on error), and
//! behaves like a device polled by the application: the stylus follows a scripted motion
//! in wall time, and every force and torque sent is logged with its time. It is built by
//! `haptics_devices::vendor::fakes` with `rustc --crate-type cdylib` (std only).
//!
//! Settings, read from the environment by `dhdGetDeviceCount` and `dhdOpen`:
//! - `FAKE_DHD_LOG`: file written by `dhdClose`: one line per `dhdSetForceAndTorque*`
//!   call, `t,fx,fy,fz,tx,ty,tz,enabled`, then `# calls N`, `# violations N`, `# closed`,
//!   `# closed_at T` (seconds since `dhdOpen`). A violation is a non-finite value, a
//!   force above the limit in force (`dhdSetMaxForce`, else the model's), or a call on a
//!   closed device.
//! - `FAKE_DHD_COUNT` (default 1): devices reported by `dhdGetDeviceCount`.
//! - `FAKE_DHD_TYPE` (default 104, sigma.7): the system type.
//! - `FAKE_DHD_MAX_FORCE` (default -1: no limit set, as the SDK reports).
//! - `FAKE_DHD_FAULT_AFTER_MS`: from then on every call fails with `DHD_ERROR_COM`.
//! - `FAKE_DHD_RADIUS_M` (default 0.02): radius of the scripted circle (0.25 Hz).
//! - `FAKE_DHD_BUTTONS`: the button mask reported (default 0).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::c_char;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const DHD_NO_ERROR: i32 = 0;
const DHD_ERROR_COM: i32 = 2;
const DHD_ERROR_NO_DEVICE_FOUND: i32 = 5;

struct Device {
    log_path: Option<String>,
    system_type: i32,
    start: Instant,
    fault_after: Option<Duration>,
    radius_m: f64,
    buttons: u32,
    force_enabled: bool,
    max_force: f64,
    max_torque: f64,
    calls: u64,
    violations: u64,
    log: Vec<[f64; 8]>,
}

struct State {
    device: Option<Device>,
    last_error: i32,
    epoch: Instant,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            Mutex::new(State {
                device: None,
                last_error: DHD_NO_ERROR,
                epoch: Instant::now(),
            })
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The published model limits the fake enforces when none was set: (force N, torque N·m).
fn model_limits(system_type: i32) -> (f64, f64) {
    match system_type {
        104..=107 => (20.0, 0.4),
        63 | 64 => (20.0, 0.2),
        60 => (8.9, 0.0),
        _ => (12.0, 0.0),
    }
}

/// Runs `f` on the open device, failing with `code` when there is none or it has faulted.
fn with_device<T>(fail: T, f: impl FnOnce(&mut Device) -> T) -> T {
    let mut s = state();
    let faulted = match s.device.as_ref() {
        None => Some(DHD_ERROR_NO_DEVICE_FOUND),
        Some(d) if d.fault_after.is_some_and(|a| d.start.elapsed() >= a) => Some(DHD_ERROR_COM),
        Some(_) => None,
    };
    if let Some(code) = faulted {
        s.last_error = code;
        if let Some(d) = s.device.as_mut() {
            d.calls += 1;
        }
        return fail;
    }
    f(s.device.as_mut().expect("checked above"))
}

#[no_mangle]
pub extern "C" fn dhdGetDeviceCount() -> i32 {
    env_f64("FAKE_DHD_COUNT", 1.0) as i32
}

#[no_mangle]
pub extern "C" fn dhdOpen() -> i32 {
    let mut s = state();
    if env_f64("FAKE_DHD_COUNT", 1.0) < 1.0 {
        s.last_error = DHD_ERROR_NO_DEVICE_FOUND;
        return -1;
    }
    let system_type = env_f64("FAKE_DHD_TYPE", 104.0) as i32;
    let max_force = env_f64("FAKE_DHD_MAX_FORCE", -1.0);
    s.device = Some(Device {
        log_path: std::env::var("FAKE_DHD_LOG").ok(),
        system_type,
        start: Instant::now(),
        fault_after: std::env::var("FAKE_DHD_FAULT_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis),
        radius_m: env_f64("FAKE_DHD_RADIUS_M", 0.02),
        buttons: env_f64("FAKE_DHD_BUTTONS", 0.0) as u32,
        force_enabled: false,
        max_force,
        max_torque: -1.0,
        calls: 0,
        violations: 0,
        log: Vec::with_capacity(65536),
    });
    0
}

#[no_mangle]
pub extern "C" fn dhdOpenID(id: c_char) -> i32 {
    if id == 0 {
        dhdOpen()
    } else {
        state().last_error = DHD_ERROR_NO_DEVICE_FOUND;
        -1
    }
}

#[no_mangle]
pub extern "C" fn dhdClose(_id: c_char) -> i32 {
    let mut s = state();
    let Some(d) = s.device.take() else {
        return -1;
    };
    if let Some(path) = &d.log_path {
        if let Ok(f) = std::fs::File::create(path) {
            let mut w = std::io::BufWriter::new(f);
            for r in &d.log {
                let _ = writeln!(
                    w,
                    "{},{},{},{},{},{},{},{}",
                    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
                );
            }
            let _ = writeln!(w, "# calls {}", d.calls);
            let _ = writeln!(w, "# violations {}", d.violations);
            let _ = writeln!(w, "# closed");
            let _ = writeln!(w, "# closed_at {}", d.start.elapsed().as_secs_f64());
        }
    }
    0
}

#[no_mangle]
pub extern "C" fn dhdGetSystemType(_id: c_char) -> i32 {
    with_device(-1, |d| d.system_type)
}

#[no_mangle]
pub extern "C" fn dhdGetSystemName(_id: c_char) -> *const c_char {
    let name: &'static [u8] = match with_device(0, |d| d.system_type) {
        104 => b"sigma.7\0",
        35 => b"omega.7\0",
        33 => b"omega.3\0",
        63 => b"delta.3\0",
        64 => b"delta.6\0",
        60 => b"Falcon\0",
        _ => b"unknown\0",
    };
    name.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn dhdHasActiveWrist(_id: c_char) -> bool {
    with_device(false, |d| matches!(d.system_type, 64 | 104..=107))
}

#[no_mangle]
pub extern "C" fn dhdEnableForce(val: u8, _id: c_char) -> i32 {
    with_device(-1, |d| {
        d.force_enabled = val != 0;
        DHD_NO_ERROR
    })
}

#[no_mangle]
pub extern "C" fn dhdGetMaxForce(_id: c_char) -> f64 {
    with_device(-1.0, |d| d.max_force)
}

#[no_mangle]
pub extern "C" fn dhdGetMaxTorque(_id: c_char) -> f64 {
    with_device(-1.0, |d| d.max_torque)
}

#[no_mangle]
pub extern "C" fn dhdSetMaxForce(f: f64, _id: c_char) -> i32 {
    with_device(-1, |d| {
        d.max_force = f;
        DHD_NO_ERROR
    })
}

#[no_mangle]
pub extern "C" fn dhdSetMaxTorque(t: f64, _id: c_char) -> i32 {
    with_device(-1, |d| {
        d.max_torque = t;
        DHD_NO_ERROR
    })
}

#[no_mangle]
pub unsafe extern "C" fn dhdGetPositionAndOrientationFrame(
    px: *mut f64,
    py: *mut f64,
    pz: *mut f64,
    matrix: *mut [f64; 3],
    _id: c_char,
) -> i32 {
    with_device(-1, |d| {
        let t = d.start.elapsed().as_secs_f64();
        let w = std::f64::consts::TAU * 0.25;
        let a = 0.3 * (w * t).sin();
        // SAFETY: the caller passes three doubles and a 3x3 row-major matrix, as dhdc.h.
        unsafe {
            *px = d.radius_m * (w * t).sin();
            *py = d.radius_m * (1.0 - (w * t).cos());
            *pz = 0.25 * d.radius_m * (2.0 * w * t).sin();
            let (c, s) = (a.cos(), a.sin());
            *matrix = [c, -s, 0.0];
            *matrix.add(1) = [s, c, 0.0];
            *matrix.add(2) = [0.0, 0.0, 1.0];
        }
        DHD_NO_ERROR
    })
}

#[no_mangle]
pub extern "C" fn dhdGetButtonMask(_id: c_char) -> u32 {
    with_device(0, |d| d.buttons)
}

#[no_mangle]
pub extern "C" fn dhdSetForceAndTorque(
    fx: f64,
    fy: f64,
    fz: f64,
    tx: f64,
    ty: f64,
    tz: f64,
    _id: c_char,
) -> i32 {
    with_device(-1, |d| {
        let t = d.start.elapsed().as_secs_f64();
        d.calls += 1;
        let v = [fx, fy, fz, tx, ty, tz];
        let (mf, mt) = model_limits(d.system_type);
        let fmax = if d.max_force >= 0.0 { d.max_force } else { mf };
        let tmax = if d.max_torque >= 0.0 { d.max_torque } else { mt };
        let f = (fx * fx + fy * fy + fz * fz).sqrt();
        let tq = (tx * tx + ty * ty + tz * tz).sqrt();
        if v.iter().any(|x| !x.is_finite()) || f > fmax * (1.0 + 1e-9) || tq > tmax * (1.0 + 1e-9)
        {
            d.violations += 1;
        }
        let on = if d.force_enabled { 1.0 } else { 0.0 };
        d.log.push([t, fx, fy, fz, tx, ty, tz, on]);
        // The SDK accepts the call while forces are disabled; it renders nothing then.
        DHD_NO_ERROR
    })
}

#[no_mangle]
pub extern "C" fn dhdErrorGetLast() -> i32 {
    state().last_error
}

#[no_mangle]
pub extern "C" fn dhdErrorGetStr(code: i32) -> *const c_char {
    let s: &'static [u8] = match code {
        DHD_NO_ERROR => b"no error\0",
        DHD_ERROR_COM => b"communication error between the host and the haptic device\0",
        DHD_ERROR_NO_DEVICE_FOUND => b"no compatible Force Dimension device found\0",
        _ => b"undocumented error\0",
    };
    s.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn dhdErrorGetLastStr() -> *const c_char {
    dhdErrorGetStr(dhdErrorGetLast())
}

#[no_mangle]
pub extern "C" fn dhdGetTime() -> f64 {
    state().epoch.elapsed().as_secs_f64()
}
