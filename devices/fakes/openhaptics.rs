//! A stand-in for OpenHaptics' `libHD.so`, for tests without hardware.
//!
//! It exports the HDAPI functions the device layer uses, with the same names and C ABI as
//! the public headers (hd.h, hdDefines.h, hdScheduler.h), and behaves like a device on a
//! desk: a servo thread started by `hdStartScheduler` calls the scheduled callbacks at
//! 1 kHz (absolute deadlines), the stylus follows a scripted motion, and every force and
//! torque sent in a frame is logged. It is built by `haptics_devices::vendor::fakes` with
//! `rustc --crate-type cdylib` (std only), never shipped.
//!
//! Settings, read from the environment by `hdInitDevice`:
//! - `FAKE_HD_LOG`: file written by `hdDisableDevice`: one line per servo frame,
//!   `t,fx,fy,fz,tx,ty,tz,enabled`, then `# frames N`, `# violations N`, `# disabled`,
//!   `# disabled_at T` (seconds since `hdInitDevice`).
//!   A violation is a non-finite force, a force above the nominal maximum, or a force set
//!   outside `hdBeginFrame`/`hdEndFrame`.
//! - `FAKE_HD_MODEL` (default "PHANTOM Premium 1.5 6DOF"), `FAKE_HD_OUTPUT_DOF` (6),
//!   `FAKE_HD_MAX_FORCE` (8.5 N), `FAKE_HD_MAX_TORQUE` (188 mN·m).
//! - `FAKE_HD_FAULT_AFTER_MS`: from then on `hdGetError` reports `HD_COMM_ERROR`.
//! - `FAKE_HD_NO_DEVICE`: `hdInitDevice` fails with `HD_COMM_CONFIG_ERROR`.
//! - `FAKE_HD_BUTTONS`: the button mask reported (default 0); with
//!   `FAKE_HD_BUTTONS_UNTIL_FRAME`, only in the servo frames before that one (0 from it on:
//!   a released deadman). Counted in frames, not milliseconds, so that a test of the
//!   release reads the same frames of the log however loaded the machine is.
//! - `FAKE_HD_RADIUS_MM` (default 20): radius of the scripted circle (0.25 Hz, in x-y,
//!   with a 0.3 rad twist about z).

#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::collections::VecDeque;
use std::ffi::{c_char, c_ulong, c_ushort, c_void, CString};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const HD_SUCCESS: u32 = 0x0000;
const HD_INVALID_ENUM: u32 = 0x0100;
const HD_INVALID_OPERATION: u32 = 0x0102;
const HD_EXCEEDED_MAX_FORCE: u32 = 0x0201;
const HD_DEVICE_ALREADY_INITIATED: u32 = 0x0301;
const HD_COMM_ERROR: u32 = 0x0302;
const HD_COMM_CONFIG_ERROR: u32 = 0x0303;
const HD_ILLEGAL_BEGIN: u32 = 0x0400;
const HD_ILLEGAL_END: u32 = 0x0401;

const HD_CURRENT_BUTTONS: u32 = 0x2000;
const HD_CURRENT_POSITION: u32 = 0x2050;
const HD_CURRENT_TRANSFORM: u32 = 0x2052;
const HD_DEVICE_MODEL_TYPE: u32 = 0x2501;
const HD_DEVICE_VENDOR: u32 = 0x2503;
const HD_USABLE_WORKSPACE_DIMENSIONS: u32 = 0x2551;
const HD_INPUT_DOF: u32 = 0x2553;
const HD_OUTPUT_DOF: u32 = 0x2554;
const HD_UPDATE_RATE: u32 = 0x2600;
const HD_NOMINAL_MAX_STIFFNESS: u32 = 0x2602;
const HD_NOMINAL_MAX_FORCE: u32 = 0x2603;
const HD_NOMINAL_MAX_CONTINUOUS_FORCE: u32 = 0x2604;
const HD_NOMINAL_MAX_TORQUE_FORCE: u32 = 0x2622;
const HD_CURRENT_FORCE: u32 = 0x2700;
const HD_CURRENT_TORQUE: u32 = 0x2701;
const HD_FORCE_OUTPUT: u32 = 0x4000;
const HD_INVALID_HANDLE: u32 = 0xFFFF_FFFF;
const HD_CALLBACK_CONTINUE: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct HDErrorInfo {
    pub errorCode: u32,
    pub internalErrorCode: i32,
    pub hHD: u32,
}

type Callback = extern "C" fn(*mut c_void) -> u32;

struct Config {
    log: Option<String>,
    model: CString,
    output_dof: i32,
    max_force: f64,
    max_torque_mnm: f64,
    fault_after: Option<Duration>,
    no_device: bool,
    buttons: i32,
    buttons_until_frame: Option<u64>,
    radius_mm: f64,
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Config {
    fn from_env() -> Config {
        Config {
            log: std::env::var("FAKE_HD_LOG").ok(),
            model: CString::new(
                std::env::var("FAKE_HD_MODEL")
                    .unwrap_or_else(|_| "PHANTOM Premium 1.5 6DOF".into()),
            )
            .unwrap_or_default(),
            output_dof: env_f64("FAKE_HD_OUTPUT_DOF", 6.0) as i32,
            max_force: env_f64("FAKE_HD_MAX_FORCE", 8.5),
            max_torque_mnm: env_f64("FAKE_HD_MAX_TORQUE", 188.0),
            fault_after: std::env::var("FAKE_HD_FAULT_AFTER_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(Duration::from_millis),
            no_device: std::env::var("FAKE_HD_NO_DEVICE").is_ok(),
            buttons: env_f64("FAKE_HD_BUTTONS", 0.0) as i32,
            buttons_until_frame: std::env::var("FAKE_HD_BUTTONS_UNTIL_FRAME")
                .ok()
                .and_then(|v| v.parse().ok()),
            radius_mm: env_f64("FAKE_HD_RADIUS_MM", 20.0),
        }
    }
}

struct Device {
    config: Config,
    start: Instant,
    in_frame: bool,
    force_enabled: bool,
    force: [f64; 3],
    torque: [f64; 3],
    frames: u64,
    violations: u64,
    log: Vec<[f64; 8]>,
}

struct State {
    device: Option<Device>,
    errors: VecDeque<HDErrorInfo>,
    callbacks: Vec<(c_ulong, Callback, usize)>,
    next_handle: c_ulong,
}

fn state() -> MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    let m = STATE.get_or_init(|| {
        Mutex::new(State {
            device: None,
            errors: VecDeque::new(),
            callbacks: Vec::new(),
            next_handle: 1,
        })
    });
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Scheduler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

fn scheduler() -> MutexGuard<'static, Option<Scheduler>> {
    static SCHED: OnceLock<Mutex<Option<Scheduler>>> = OnceLock::new();
    SCHED
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn push_error(s: &mut State, code: u32) {
    s.errors.push_back(HDErrorInfo {
        errorCode: code,
        internalErrorCode: code as i32,
        hHD: 0,
    });
}

/// The scripted stylus pose at `t` seconds: (position in mm, rotation angle about z).
fn motion(radius_mm: f64, t: f64) -> ([f64; 3], f64) {
    let w = std::f64::consts::TAU * 0.25;
    (
        [
            radius_mm * (w * t).sin(),
            radius_mm * (1.0 - (w * t).cos()),
            0.25 * radius_mm * (2.0 * w * t).sin(),
        ],
        0.3 * (w * t).sin(),
    )
}

fn faulted(d: &Device) -> bool {
    d.config.fault_after.is_some_and(|f| d.start.elapsed() >= f)
}

#[no_mangle]
pub unsafe extern "C" fn hdInitDevice(_config: *const c_char) -> u32 {
    let mut s = state();
    let config = Config::from_env();
    if config.no_device {
        push_error(&mut s, HD_COMM_CONFIG_ERROR);
        return HD_INVALID_HANDLE;
    }
    if s.device.is_some() {
        push_error(&mut s, HD_DEVICE_ALREADY_INITIATED);
        return HD_INVALID_HANDLE;
    }
    s.device = Some(Device {
        config,
        start: Instant::now(),
        in_frame: false,
        force_enabled: false,
        force: [0.0; 3],
        torque: [0.0; 3],
        frames: 0,
        violations: 0,
        log: Vec::with_capacity(65536),
    });
    1
}

#[no_mangle]
pub extern "C" fn hdMakeCurrentDevice(_h: u32) {}

#[no_mangle]
pub extern "C" fn hdDisableDevice(_h: u32) {
    let mut s = state();
    let Some(d) = s.device.take() else { return };
    if let Some(path) = &d.config.log {
        if let Ok(f) = std::fs::File::create(path) {
            let mut w = std::io::BufWriter::new(f);
            for r in &d.log {
                let _ = writeln!(
                    w,
                    "{},{},{},{},{},{},{},{}",
                    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]
                );
            }
            let _ = writeln!(w, "# frames {}", d.frames);
            let _ = writeln!(w, "# violations {}", d.violations);
            let _ = writeln!(w, "# disabled");
            let _ = writeln!(w, "# disabled_at {}", d.start.elapsed().as_secs_f64());
        }
    }
}

#[no_mangle]
pub extern "C" fn hdBeginFrame(_h: u32) {
    let mut s = state();
    let Some(d) = s.device.as_mut() else { return };
    if d.in_frame {
        push_error(&mut s, HD_ILLEGAL_BEGIN);
        return;
    }
    d.in_frame = true;
    d.force = [0.0; 3];
    d.torque = [0.0; 3];
}

#[no_mangle]
pub extern "C" fn hdEndFrame(_h: u32) {
    let mut s = state();
    let Some(d) = s.device.as_mut() else { return };
    if !d.in_frame {
        push_error(&mut s, HD_ILLEGAL_END);
        return;
    }
    d.in_frame = false;
    d.frames += 1;
    let t = d.start.elapsed().as_secs_f64();
    let (f, tq) = (d.force, d.torque);
    let on = if d.force_enabled { 1.0 } else { 0.0 };
    d.log.push([t, f[0], f[1], f[2], tq[0], tq[1], tq[2], on]);
    let over = f.iter().chain(tq.iter()).any(|v| !v.is_finite())
        || (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]).sqrt() > d.config.max_force * (1.0 + 1e-9)
        || (tq[0] * tq[0] + tq[1] * tq[1] + tq[2] * tq[2]).sqrt()
            > d.config.max_torque_mnm * (1.0 + 1e-9);
    if over {
        d.violations += 1;
        push_error(&mut s, HD_EXCEEDED_MAX_FORCE);
    }
    if faulted(s.device.as_ref().expect("checked above")) {
        push_error(&mut s, HD_COMM_ERROR);
    }
}

#[no_mangle]
pub unsafe extern "C" fn hdGetDoublev(pname: u32, out: *mut f64) {
    let mut s = state();
    let Some(d) = s.device.as_ref() else {
        push_error(&mut s, HD_INVALID_OPERATION);
        return;
    };
    let t = d.start.elapsed().as_secs_f64();
    let (p, angle) = motion(d.config.radius_mm, t);
    let values: Vec<f64> = match pname {
        HD_CURRENT_POSITION => p.to_vec(),
        HD_CURRENT_TRANSFORM => {
            // Column-major 4x4 (OpenGL order): rotation about z by `angle`, then p (mm).
            let (c, sn) = (angle.cos(), angle.sin());
            vec![
                c, sn, 0.0, 0.0, -sn, c, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, p[0], p[1], p[2], 1.0,
            ]
        }
        HD_NOMINAL_MAX_FORCE => vec![d.config.max_force],
        HD_NOMINAL_MAX_CONTINUOUS_FORCE => vec![d.config.max_force * 0.2],
        HD_NOMINAL_MAX_STIFFNESS => vec![3.5],
        HD_NOMINAL_MAX_TORQUE_FORCE => vec![d.config.max_torque_mnm],
        HD_UPDATE_RATE => vec![1000.0],
        HD_USABLE_WORKSPACE_DIMENSIONS => vec![-190.0, -130.0, -95.0, 190.0, 130.0, 95.0],
        _ => {
            push_error(&mut s, HD_INVALID_ENUM);
            return;
        }
    };
    // SAFETY: the caller passes room for the parameter's values, as HDAPI requires.
    std::ptr::copy_nonoverlapping(values.as_ptr(), out, values.len());
}

#[no_mangle]
pub unsafe extern "C" fn hdGetIntegerv(pname: u32, out: *mut i32) {
    let mut s = state();
    let Some(d) = s.device.as_ref() else {
        push_error(&mut s, HD_INVALID_OPERATION);
        return;
    };
    let v = match pname {
        HD_CURRENT_BUTTONS => match d.config.buttons_until_frame {
            Some(until) if d.frames >= until => 0,
            _ => d.config.buttons,
        },
        HD_INPUT_DOF => 6,
        HD_OUTPUT_DOF => d.config.output_dof,
        _ => {
            push_error(&mut s, HD_INVALID_ENUM);
            return;
        }
    };
    *out = v;
}

#[no_mangle]
pub extern "C" fn hdGetString(pname: u32) -> *const c_char {
    static VENDOR: &[u8] = b"Fake OpenHaptics (haptics test double)\0";
    let mut s = state();
    let Some(d) = s.device.as_ref() else {
        push_error(&mut s, HD_INVALID_OPERATION);
        return std::ptr::null();
    };
    match pname {
        // The CString lives as long as the device; callers copy it at once.
        HD_DEVICE_MODEL_TYPE => d.config.model.as_ptr(),
        HD_DEVICE_VENDOR => VENDOR.as_ptr().cast(),
        _ => {
            push_error(&mut s, HD_INVALID_ENUM);
            std::ptr::null()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn hdSetDoublev(pname: u32, values: *const f64) {
    let mut s = state();
    let Some(d) = s.device.as_mut() else {
        push_error(&mut s, HD_INVALID_OPERATION);
        return;
    };
    if !d.in_frame {
        d.violations += 1;
        push_error(&mut s, HD_INVALID_OPERATION);
        return;
    }
    // SAFETY: HD_CURRENT_FORCE and HD_CURRENT_TORQUE take three doubles.
    let v = [*values, *values.add(1), *values.add(2)];
    match pname {
        HD_CURRENT_FORCE => d.force = v,
        HD_CURRENT_TORQUE => d.torque = v,
        _ => push_error(&mut s, HD_INVALID_ENUM),
    }
}

#[no_mangle]
pub extern "C" fn hdEnable(cap: u32) {
    let mut s = state();
    if let Some(d) = s.device.as_mut() {
        if cap == HD_FORCE_OUTPUT {
            d.force_enabled = true;
        }
    }
}

#[no_mangle]
pub extern "C" fn hdDisable(cap: u32) {
    let mut s = state();
    if let Some(d) = s.device.as_mut() {
        if cap == HD_FORCE_OUTPUT {
            d.force_enabled = false;
        }
    }
}

#[no_mangle]
pub extern "C" fn hdGetError() -> HDErrorInfo {
    let mut s = state();
    s.errors.pop_front().unwrap_or(HDErrorInfo {
        errorCode: HD_SUCCESS,
        internalErrorCode: 0,
        hHD: 0,
    })
}

#[no_mangle]
pub extern "C" fn hdGetErrorString(code: u32) -> *const c_char {
    let s: &'static [u8] = match code {
        HD_SUCCESS => b"no error\0",
        HD_COMM_ERROR => b"communication error\0",
        HD_COMM_CONFIG_ERROR => b"communication configuration error (no device)\0",
        HD_EXCEEDED_MAX_FORCE => b"exceeded max force\0",
        _ => b"error\0",
    };
    s.as_ptr().cast()
}

#[no_mangle]
pub extern "C" fn hdScheduleAsynchronous(
    callback: Callback,
    user_data: *mut c_void,
    _priority: c_ushort,
) -> c_ulong {
    let mut s = state();
    let h = s.next_handle;
    s.next_handle += 1;
    s.callbacks.push((h, callback, user_data as usize));
    h
}

#[no_mangle]
pub extern "C" fn hdUnschedule(handle: c_ulong) {
    state().callbacks.retain(|c| c.0 != handle);
}

#[no_mangle]
pub extern "C" fn hdStartScheduler() {
    let mut sched = scheduler();
    if sched.is_some() {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let period = Duration::from_millis(1);
        let mut next = Instant::now() + period;
        while !flag.load(Ordering::Relaxed) {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            next += period;
            let calls: Vec<(c_ulong, Callback, usize)> = state().callbacks.clone();
            for (h, cb, data) in calls {
                if cb(data as *mut c_void) != HD_CALLBACK_CONTINUE {
                    state().callbacks.retain(|c| c.0 != h);
                }
            }
        }
    });
    *sched = Some(Scheduler { stop, thread });
}

#[no_mangle]
pub extern "C" fn hdStopScheduler() {
    let taken = scheduler().take();
    if let Some(s) = taken {
        s.stop.store(true, Ordering::Relaxed);
        let _ = s.thread.join();
    }
}
