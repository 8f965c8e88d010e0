//! 3D Systems OpenHaptics devices (Touch, Touch X, PHANTOM Premium) through HDAPI,
//! loaded at run time from `libHD.so`.
//!
//! The servo loop is used the way the vendor intends: one asynchronous callback
//! (`hdScheduleAsynchronous`) runs in HDAPI's 1 kHz servo thread and brackets its device
//! access with `hdBeginFrame`/`hdEndFrame`. In each frame it reads the stylus transform
//! (`HD_CURRENT_TRANSFORM`, millimetres) and buttons, publishes them, and sends the latest
//! wrench from the haptic thread (`HD_CURRENT_FORCE` in N; `HD_CURRENT_TORQUE` in mN·m on
//! 6-DOF-output models). The two threads exchange state through the lock-free slots of
//! [`super::handoff`]; the servo side zeroes a wrench that is more than [`STALE_FRAMES`]
//! frames old (the haptic thread stalled) and clamps it to the device's nominal maxima
//! once more, whatever the layers above did. `hdGetError` is checked after every frame:
//! force errors (`0x02xx`: the driver's own velocity and force safeties) zero that frame
//! and are counted; any other error is a fatal [`VendorFault`]: the callback sends one
//! last zero frame and unschedules itself, and the next [`Device::read`] reports it.
//!
//! `HD_CURRENT_TORQUE` is deprecated in OpenHaptics 3 in favour of joint-space gimbal
//! torques, which need each model's gimbal kinematics; the Cartesian torque is still
//! accepted by the 6-DOF PHANTOM Premium drivers, so it is used here.
//!
//! Constants and signatures: `hdDefines.h`, `hd.h` and `hdScheduler.h` of the public
//! OpenHaptics 3.0 headers (values cited beside each constant).

use std::ffi::{c_char, c_uint, c_ulong, c_ushort, c_void};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};

use super::handoff::SeqSlot;
use super::{c_string, find_library, symbol, LibrarySource, Probe, ProbedDevice, Vendor};
use super::{clamp3, specs, VendorError, VendorFault};
use crate::Device;
use crate::DeviceError;
use crate::DeviceInfo;
use crate::DeviceSample;
use crate::Pose;
use crate::Workspace;
use crate::Wrench;

// hdDefines.h: types. HHD, HDenum and HDerror are `unsigned int`; HDSchedulerHandle is
// `unsigned long`; HDCallbackCode is `unsigned int`.
type Hhd = c_uint;
type HdEnum = c_uint;

/// hdDefines.h: `typedef struct { HDerror errorCode; int internalErrorCode; HHD hHD; }
/// HDErrorInfo;`
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct HdErrorInfo {
    pub error_code: c_uint,
    pub internal_error_code: i32,
    pub hhd: Hhd,
}

/// hdDefines.h error codes.
pub const HD_SUCCESS: u32 = 0x0000;
const ERROR_NAMES: [(u32, &str); 21] = [
    (0x0000, "HD_SUCCESS"),
    (0x0100, "HD_INVALID_ENUM"),
    (0x0101, "HD_INVALID_VALUE"),
    (0x0102, "HD_INVALID_OPERATION"),
    (0x0103, "HD_INVALID_INPUT_TYPE"),
    (0x0104, "HD_BAD_HANDLE"),
    (0x0200, "HD_WARM_MOTORS"),
    (0x0201, "HD_EXCEEDED_MAX_FORCE"),
    (0x0202, "HD_EXCEEDED_MAX_FORCE_IMPULSE"),
    (0x0203, "HD_EXCEEDED_MAX_VELOCITY"),
    (0x0204, "HD_FORCE_ERROR"),
    (0x0300, "HD_DEVICE_FAULT"),
    (0x0301, "HD_DEVICE_ALREADY_INITIATED"),
    (0x0302, "HD_COMM_ERROR"),
    (0x0303, "HD_COMM_CONFIG_ERROR"),
    (0x0304, "HD_TIMER_ERROR"),
    (0x0400, "HD_ILLEGAL_BEGIN"),
    (0x0401, "HD_ILLEGAL_END"),
    (0x0402, "HD_FRAME_ERROR"),
    (0x0500, "HD_INVALID_PRIORITY"),
    (0x0600, "HD_INVALID_LICENSE"),
];

/// The header's name of an HDAPI error code.
pub fn error_name(code: u32) -> &'static str {
    ERROR_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("(unknown HDAPI error)", |(_, n)| n)
}

/// Force errors (`0x0200..=0x02ff`): the driver's own safeties tripped this frame; not
/// fatal.
fn is_force_error(code: u32) -> bool {
    code & 0xff00 == 0x0200
}

// hdDefines.h: get/set parameters and capabilities.
const HD_CURRENT_BUTTONS: HdEnum = 0x2000;
const HD_CURRENT_TRANSFORM: HdEnum = 0x2052;
const HD_DEVICE_MODEL_TYPE: HdEnum = 0x2501;
const HD_USABLE_WORKSPACE_DIMENSIONS: HdEnum = 0x2551;
const HD_INPUT_DOF: HdEnum = 0x2553;
const HD_OUTPUT_DOF: HdEnum = 0x2554;
const HD_NOMINAL_MAX_STIFFNESS: HdEnum = 0x2602;
const HD_NOMINAL_MAX_FORCE: HdEnum = 0x2603;
const HD_NOMINAL_MAX_CONTINUOUS_FORCE: HdEnum = 0x2604;
const HD_NOMINAL_MAX_TORQUE_FORCE: HdEnum = 0x2622;
const HD_CURRENT_FORCE: HdEnum = 0x2700;
const HD_CURRENT_TORQUE: HdEnum = 0x2701;
const HD_FORCE_OUTPUT: HdEnum = 0x4000;
const HD_INVALID_HANDLE: Hhd = 0xFFFF_FFFF;
// hdScheduler.h.
const HD_CALLBACK_DONE: c_uint = 0;
const HD_CALLBACK_CONTINUE: c_uint = 1;
/// hdDefines.h: `(HD_MAX_SCHEDULER_PRIORITY + HD_MIN_SCHEDULER_PRIORITY) / 2` with
/// `USHRT_MAX` and 0.
const HD_DEFAULT_SCHEDULER_PRIORITY: c_ushort = 0x7fff;

/// Servo frames after which a wrench from the haptic thread counts as stale and zero is
/// sent instead (the haptic thread's own stall timeout is 5 ms).
pub const STALE_FRAMES: u64 = 10;
/// How long the servo may go without a frame before reads report
/// [`VendorFault::SERVO_STOPPED`].
pub const SERVO_SILENCE: Duration = Duration::from_millis(100);
/// How long [`OpenHapticsDevice::open`] waits for the first servo frame.
const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(2);

type SchedulerCallback = extern "C" fn(*mut c_void) -> c_uint;

/// The HDAPI functions used (hd.h, hdScheduler.h), copied out of the library.
#[derive(Clone, Copy)]
struct Api {
    init_device: unsafe extern "C" fn(*const c_char) -> Hhd,
    disable_device: unsafe extern "C" fn(Hhd),
    make_current_device: unsafe extern "C" fn(Hhd),
    begin_frame: unsafe extern "C" fn(Hhd),
    end_frame: unsafe extern "C" fn(Hhd),
    get_doublev: unsafe extern "C" fn(HdEnum, *mut f64),
    get_integerv: unsafe extern "C" fn(HdEnum, *mut i32),
    get_string: unsafe extern "C" fn(HdEnum) -> *const c_char,
    set_doublev: unsafe extern "C" fn(HdEnum, *const f64),
    enable: unsafe extern "C" fn(HdEnum),
    disable: unsafe extern "C" fn(HdEnum),
    get_error: unsafe extern "C" fn() -> HdErrorInfo,
    get_error_string: unsafe extern "C" fn(c_uint) -> *const c_char,
    start_scheduler: unsafe extern "C" fn(),
    stop_scheduler: unsafe extern "C" fn(),
    schedule_asynchronous:
        unsafe extern "C" fn(SchedulerCallback, *mut c_void, c_ushort) -> c_ulong,
    unschedule: unsafe extern "C" fn(c_ulong),
}

impl Api {
    fn load(lib: &libloading::Library, src: &LibrarySource) -> Result<Api, VendorError> {
        let v = Vendor::OpenHaptics;
        // SAFETY: each signature is the one declared in the public HDAPI headers.
        unsafe {
            Ok(Api {
                init_device: symbol(lib, v, src, "hdInitDevice")?,
                disable_device: symbol(lib, v, src, "hdDisableDevice")?,
                make_current_device: symbol(lib, v, src, "hdMakeCurrentDevice")?,
                begin_frame: symbol(lib, v, src, "hdBeginFrame")?,
                end_frame: symbol(lib, v, src, "hdEndFrame")?,
                get_doublev: symbol(lib, v, src, "hdGetDoublev")?,
                get_integerv: symbol(lib, v, src, "hdGetIntegerv")?,
                get_string: symbol(lib, v, src, "hdGetString")?,
                set_doublev: symbol(lib, v, src, "hdSetDoublev")?,
                enable: symbol(lib, v, src, "hdEnable")?,
                disable: symbol(lib, v, src, "hdDisable")?,
                get_error: symbol(lib, v, src, "hdGetError")?,
                get_error_string: symbol(lib, v, src, "hdGetErrorString")?,
                start_scheduler: symbol(lib, v, src, "hdStartScheduler")?,
                stop_scheduler: symbol(lib, v, src, "hdStopScheduler")?,
                schedule_asynchronous: symbol(lib, v, src, "hdScheduleAsynchronous")?,
                unschedule: symbol(lib, v, src, "hdUnschedule")?,
            })
        }
    }

    /// The first pending error, if any (its code, internal code and message).
    fn error(&self) -> Option<(u32, i32, String)> {
        // SAFETY: plain HDAPI calls; the string is static in the library.
        let e = unsafe { (self.get_error)() };
        (e.error_code != HD_SUCCESS).then(|| {
            let text = unsafe { c_string((self.get_error_string)(e.error_code)) };
            (e.error_code, e.internal_error_code, text)
        })
    }
}

/// Sample slot layout: frame, time (s), position (m), quaternion (w, x, y, z), buttons.
const SAMPLE_LEN: usize = 10;
/// Wrench slot layout: force (N), torque (N·m), the servo frame of the sample it answers.
const WRENCH_LEN: usize = 7;

/// What the servo callback and the haptic thread share (boxed: the callback holds its
/// address until the scheduler is stopped).
struct Servo {
    api: Api,
    hhd: Hhd,
    epoch: Instant,
    torque_out: bool,
    max_force_n: f64,
    max_torque_nm: f64,
    sample: SeqSlot<SAMPLE_LEN>,
    wrench: SeqSlot<WRENCH_LEN>,
    frames: AtomicU64,
    /// 0 = no fault; else `(code << 32) | internal as u32`.
    fault: AtomicU64,
    force_errors: AtomicU64,
    /// Set by the haptic side on close: the callback sends zero and finishes.
    stop: AtomicBool,
    /// Set by the callback once it has finished (stopped or faulted).
    finished: AtomicBool,
}

impl Servo {
    /// One servo frame. Never panics (it runs on the vendor's thread, behind a C ABI).
    fn frame(&self) -> c_uint {
        let api = &self.api;
        let zero = [0.0f64; 3];
        // SAFETY: HDAPI calls with buffers of the sizes the headers specify (16 doubles
        // for the transform, one int for the buttons, three doubles for force/torque).
        unsafe {
            (api.begin_frame)(self.hhd);
            if self.stop.load(Ordering::Acquire) {
                (api.set_doublev)(HD_CURRENT_FORCE, zero.as_ptr());
                if self.torque_out {
                    (api.set_doublev)(HD_CURRENT_TORQUE, zero.as_ptr());
                }
                (api.end_frame)(self.hhd);
                self.finished.store(true, Ordering::Release);
                return HD_CALLBACK_DONE;
            }
            let mut m = [0.0f64; 16];
            (api.get_doublev)(HD_CURRENT_TRANSFORM, m.as_mut_ptr());
            let mut buttons: i32 = 0;
            (api.get_integerv)(HD_CURRENT_BUTTONS, &mut buttons);
            let frame = self.frames.fetch_add(1, Ordering::AcqRel) + 1;
            let (p, q) = pose_from_transform(&m);
            self.sample.store(&[
                frame as f64,
                self.epoch.elapsed().as_secs_f64(),
                p.x,
                p.y,
                p.z,
                q.w,
                q.i,
                q.j,
                q.k,
                f64::from(buttons as u32),
            ]);
            let (force, torque_mnm) = self.output(frame);
            (api.set_doublev)(HD_CURRENT_FORCE, force.as_ptr());
            if self.torque_out {
                (api.set_doublev)(HD_CURRENT_TORQUE, torque_mnm.as_ptr());
            }
            (api.end_frame)(self.hhd);
            let e = (api.get_error)();
            if e.error_code == HD_SUCCESS || is_force_error(e.error_code) {
                if e.error_code != HD_SUCCESS {
                    self.force_errors.fetch_add(1, Ordering::Relaxed);
                }
                return HD_CALLBACK_CONTINUE;
            }
            let bits = (u64::from(e.error_code) << 32) | u64::from(e.internal_error_code as u32);
            self.fault.store(bits.max(1), Ordering::Release);
            // One last frame with zero output, then leave the servo loop.
            (api.begin_frame)(self.hhd);
            (api.set_doublev)(HD_CURRENT_FORCE, zero.as_ptr());
            if self.torque_out {
                (api.set_doublev)(HD_CURRENT_TORQUE, zero.as_ptr());
            }
            (api.end_frame)(self.hhd);
            let _ = (api.get_error)();
            self.finished.store(true, Ordering::Release);
            HD_CALLBACK_DONE
        }
    }

    /// The force (N) and torque (mN·m) to send in `frame`: the haptic thread's latest,
    /// zero when stale or non-finite, clamped to the nominal maxima.
    fn output(&self, frame: u64) -> ([f64; 3], [f64; 3]) {
        let Some(w) = self.wrench.load() else {
            return ([0.0; 3], [0.0; 3]);
        };
        let stale = w[6] < 0.0 || (frame as f64) - w[6] > STALE_FRAMES as f64;
        if stale || !w.iter().all(|v| v.is_finite()) {
            return ([0.0; 3], [0.0; 3]);
        }
        let f = clamp3([w[0], w[1], w[2]], self.max_force_n);
        let t = clamp3([w[3], w[4], w[5]], self.max_torque_nm);
        (f, [t[0] * 1e3, t[1] * 1e3, t[2] * 1e3])
    }

    fn fault(&self) -> Option<VendorFault> {
        let bits = self.fault.load(Ordering::Acquire);
        (bits != 0).then_some(VendorFault {
            vendor: Vendor::OpenHaptics,
            code: (bits >> 32) as i32,
            internal: bits as u32 as i32,
        })
    }
}

extern "C" fn servo_callback(user_data: *mut c_void) -> c_uint {
    if user_data.is_null() {
        return HD_CALLBACK_DONE;
    }
    // SAFETY: `user_data` is the boxed `Servo` of an open device; the device stops the
    // scheduler (which waits for this callback to return) before freeing it.
    let servo = unsafe { &*(user_data as *const Servo) };
    servo.frame()
}
/// The stylus position (m) and orientation of an HDAPI transform: a column-major 4x4
/// matrix (OpenGL order) with the translation in millimetres in elements 12..15.
pub fn pose_from_transform(m: &[f64; 16]) -> (Vector3<f64>, UnitQuaternion<f64>) {
    let r = Matrix3::new(m[0], m[4], m[8], m[1], m[5], m[9], m[2], m[6], m[10]);
    let q = UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r));
    (Vector3::new(m[12], m[13], m[14]) * 1e-3, q)
}

/// An OpenHaptics device with its servo loop running. Dropping it zeroes the output, stops
/// the scheduler, unschedules the callback and disables the device.
pub struct OpenHapticsDevice {
    servo: Box<Servo>,
    handle: c_ulong,
    info: DeviceInfo,
    source: LibrarySource,
    last_frame: u64,
    last_change: Instant,
    /// The latest consistent sample slot, used when the servo thread is preempted in the
    /// middle of publishing (the slot stays torn for the whole preemption).
    last_sample: [f64; SAMPLE_LEN],
    closed: bool,
    // Declared last: dropped after `close` has run in `Drop`.
    _library: libloading::Library,
}

/// The capabilities HDAPI reports for the current device.
fn read_info(api: &Api) -> (DeviceInfo, f64) {
    let double = |e: HdEnum| {
        let mut v = [0.0f64; 6];
        // SAFETY: the largest parameter read here has 6 doubles.
        unsafe { (api.get_doublev)(e, v.as_mut_ptr()) };
        v
    };
    let int = |e: HdEnum| {
        let mut v = 0i32;
        // SAFETY: one int.
        unsafe { (api.get_integerv)(e, &mut v) };
        v
    };
    // SAFETY: a static string of the library.
    let model = unsafe { c_string((api.get_string)(HD_DEVICE_MODEL_TYPE)) };
    let input = int(HD_INPUT_DOF).clamp(0, 6) as u8;
    let output = int(HD_OUTPUT_DOF).clamp(0, 6) as u8;
    let max_force = finite_or(double(HD_NOMINAL_MAX_FORCE)[0], 0.0);
    let continuous = finite_or(double(HD_NOMINAL_MAX_CONTINUOUS_FORCE)[0], max_force);
    // N/mm in HDAPI.
    let stiffness = finite_or(double(HD_NOMINAL_MAX_STIFFNESS)[0], 0.0) * 1e3;
    // minx, miny, minz, maxx, maxy, maxz in mm.
    let ws = double(HD_USABLE_WORKSPACE_DIMENSIONS);
    let half = Vector3::new(ws[3] - ws[0], ws[4] - ws[1], ws[5] - ws[2]) * 0.5e-3;
    let workspace = if half.iter().all(|h| h.is_finite() && *h > 0.0) {
        Workspace::Box {
            half_extents_m: half,
        }
    } else {
        Workspace::Sphere { radius_m: 0.08 }
    };
    // The published figures cap what the library reports (and stand in where it reports
    // nothing).
    // HDAPI leaves a figure it does not report at 0.
    let reported = |v: f64| Some(v).filter(|v| *v > 0.0);
    let spec = specs::openhaptics(&model);
    let max_force = specs::lower_of(reported(max_force), spec.max_force_n);
    let torque = if output >= 6 {
        // mN·m in HDAPI.
        let t = finite_or(double(HD_NOMINAL_MAX_TORQUE_FORCE)[0], 0.0) * 1e-3;
        specs::lower_of(reported(t), spec.max_torque_nm)
    } else {
        0.0
    };
    let stiffness = specs::lower_of(reported(stiffness), spec.max_linear_stiffness_n_per_m);
    let info = DeviceInfo {
        name: if model.is_empty() {
            "OpenHaptics device".into()
        } else {
            model
        },
        dof_sensed: input,
        dof_actuated: output,
        max_force_n: max_force,
        max_continuous_force_n: continuous.min(max_force),
        max_torque_nm: torque,
        max_stiffness_n_per_m: stiffness,
        max_angular_stiffness_nm_per_rad: if output >= 6 {
            spec.max_angular_stiffness_nm_per_rad
        } else {
            0.0
        },
        workspace,
    };
    (info, continuous)
}

fn finite_or(v: f64, default: f64) -> f64 {
    if v.is_finite() && v >= 0.0 {
        v
    } else {
        default
    }
}

/// The error for a failed HDAPI call `what`, from the pending error it left.
fn hd_failure(what: &str, (code, internal, text): (u32, i32, String)) -> VendorError {
    VendorError::Device {
        vendor: Vendor::OpenHaptics,
        detail: format!(
            "{what} failed: error 0x{code:04x} {} ({text}; internal code {internal})",
            error_name(code)
        ),
    }
}

/// Initializes the default device and returns its handle.
fn init_device(api: &Api) -> Result<Hhd, VendorError> {
    // SAFETY: HD_DEFAULT_DEVICE is NULL.
    let hhd = unsafe { (api.init_device)(std::ptr::null()) };
    if let Some(e) = api.error() {
        return Err(hd_failure(
            "hdInitDevice (is the device plugged in and configured with Touch Setup?)",
            e,
        ));
    }
    if hhd == HD_INVALID_HANDLE {
        return Err(VendorError::Device {
            vendor: Vendor::OpenHaptics,
            detail: "hdInitDevice returned an invalid handle".into(),
        });
    }
    Ok(hhd)
}

/// The servo callback's state for device `hhd`, before its first frame.
fn new_servo(api: Api, hhd: Hhd, info: &DeviceInfo) -> Box<Servo> {
    Box::new(Servo {
        api,
        hhd,
        epoch: Instant::now(),
        torque_out: info.dof_actuated >= 6,
        max_force_n: info.max_force_n,
        max_torque_nm: info.max_torque_nm,
        sample: SeqSlot::new([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
        // Frame -1: stale until the haptic thread writes.
        wrench: SeqSlot::new([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]),
        frames: AtomicU64::new(0),
        fault: AtomicU64::new(0),
        force_errors: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        finished: AtomicBool::new(false),
    })
}

impl OpenHapticsDevice {
    /// Loads `libHD.so`, initializes the default device, enables force output, schedules
    /// the servo callback and starts the scheduler; returns once the first frame arrived.
    pub fn open() -> Result<OpenHapticsDevice, VendorError> {
        let (library, source) = find_library(Vendor::OpenHaptics)?;
        let api = Api::load(&library, &source)?;
        let hhd = init_device(&api)?;
        // SAFETY: a handle just returned by hdInitDevice.
        unsafe { (api.make_current_device)(hhd) };
        let (info, _) = read_info(&api);
        // SAFETY: plain HDAPI calls on the current device.
        unsafe { (api.enable)(HD_FORCE_OUTPUT) };
        let servo = new_servo(api, hhd, &info);
        let data = &*servo as *const Servo as *mut c_void;
        // SAFETY: the callback reads `servo` until the scheduler is stopped in `close`,
        // and the box outlives that.
        let handle = unsafe {
            (api.schedule_asynchronous)(servo_callback, data, HD_DEFAULT_SCHEDULER_PRIORITY)
        };
        unsafe { (api.start_scheduler)() };
        let mut dev = OpenHapticsDevice {
            servo,
            handle,
            info,
            source,
            last_frame: 0,
            last_change: Instant::now(),
            last_sample: [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
            closed: false,
            _library: library,
        };
        if let Some(e) = api.error() {
            dev.close();
            return Err(hd_failure("hdStartScheduler", e));
        }
        dev.wait_first_frame()?;
        Ok(dev)
    }

    /// Waits for the servo's first frame; closes the device when it fails or times out.
    fn wait_first_frame(&mut self) -> Result<(), VendorError> {
        let start = Instant::now();
        while self.servo.frames.load(Ordering::Acquire) == 0 {
            if let Some(f) = self.servo.fault() {
                self.close();
                return Err(VendorError::Device {
                    vendor: Vendor::OpenHaptics,
                    detail: format!("the first servo frame failed: {f}"),
                });
            }
            if start.elapsed() > FIRST_FRAME_TIMEOUT {
                self.close();
                return Err(VendorError::Device {
                    vendor: Vendor::OpenHaptics,
                    detail: format!(
                        "the servo loop did not start within {} s",
                        FIRST_FRAME_TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Where the library was found.
    pub fn library(&self) -> &LibrarySource {
        &self.source
    }

    /// Servo frames run so far.
    pub fn frames(&self) -> u64 {
        self.servo.frames.load(Ordering::Acquire)
    }

    /// Frames in which the driver reported a force error (its own safeties).
    pub fn force_errors(&self) -> u64 {
        self.servo.force_errors.load(Ordering::Relaxed)
    }

    /// The fault that ended the servo loop, if any.
    pub fn fault(&self) -> Option<VendorFault> {
        self.servo.fault()
    }

    /// Zeroes the output, stops the scheduler, unschedules the callback, disables force
    /// output and the device. Idempotent; also run on drop.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        let api = self.servo.api;
        self.servo
            .wrench
            .store(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]);
        self.servo.stop.store(true, Ordering::Release);
        // The callback sends a zero frame and finishes (at most a few frames), unless the
        // servo loop is already gone.
        let start = Instant::now();
        while !self.servo.finished.load(Ordering::Acquire)
            && start.elapsed() < Duration::from_millis(50)
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        // SAFETY: hdStopScheduler returns once no callback is running; only then are the
        // callback's data and the device released.
        unsafe {
            (api.stop_scheduler)();
            (api.unschedule)(self.handle);
            (api.disable)(HD_FORCE_OUTPUT);
            (api.disable_device)(self.servo.hhd);
        }
    }
}

impl Drop for OpenHapticsDevice {
    fn drop(&mut self) {
        self.close();
    }
}

impl Device for OpenHapticsDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        if let Some(f) = self.servo.fault() {
            return Err(DeviceError::Vendor(f));
        }
        // A torn slot means the servo thread was preempted mid-publish: the previous
        // frame is the latest consistent one (and the silence check below still runs).
        let s = match self.servo.sample.load() {
            Some(s) => {
                self.last_sample = s;
                s
            }
            None => self.last_sample,
        };
        let frame = s[0] as u64;
        let now = Instant::now();
        if frame != self.last_frame {
            self.last_frame = frame;
            self.last_change = now;
        } else if now.duration_since(self.last_change) > SERVO_SILENCE {
            return Err(DeviceError::Vendor(VendorFault {
                vendor: Vendor::OpenHaptics,
                code: VendorFault::SERVO_STOPPED,
                internal: 0,
            }));
        }
        let q = nalgebra::Quaternion::new(s[5], s[6], s[7], s[8]);
        Ok(DeviceSample {
            // Stamped at the read, like a polled device: the haptic thread and the servo
            // run on separate clocks, so two reads can see the same frame, and each
            // cycle (recorded, replayed) needs its own time. The frame is at most one
            // servo period old.
            time_s: now.duration_since(self.servo.epoch).as_secs_f64(),
            pose: Pose::new(
                Vector3::new(s[2], s[3], s[4]),
                UnitQuaternion::new_normalize(q),
            ),
            buttons: s[9] as u32,
        })
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        if let Some(f) = self.servo.fault() {
            return Err(DeviceError::Vendor(f));
        }
        let t = if self.servo.torque_out {
            wrench.torque
        } else {
            Vector3::zeros()
        };
        let f = wrench.force;
        self.servo
            .wrench
            .store(&[f.x, f.y, f.z, t.x, t.y, t.z, self.last_frame as f64]);
        Ok(())
    }
}

/// Lists the OpenHaptics device (HDAPI opens the default device; forces stay off).
pub fn probe() -> Probe {
    let (library, source) = match find_library(Vendor::OpenHaptics) {
        Ok(v) => v,
        Err(e) => return Probe::Unavailable(e),
    };
    let api = match Api::load(&library, &source) {
        Ok(a) => a,
        Err(e) => return Probe::Unavailable(e),
    };
    // SAFETY: HD_DEFAULT_DEVICE is NULL; the handle is disabled before returning.
    let hhd = unsafe { (api.init_device)(std::ptr::null()) };
    if let Some((code, _, text)) = api.error() {
        return Probe::Found {
            source,
            devices: vec![],
            note: Some(format!(
                "hdInitDevice: error 0x{code:04x} {} ({text})",
                error_name(code)
            )),
        };
    }
    unsafe { (api.make_current_device)(hhd) };
    let (info, _) = read_info(&api);
    unsafe { (api.disable_device)(hhd) };
    Probe::Found {
        source,
        devices: vec![ProbedDevice {
            model: info.name,
            dof_sensed: info.dof_sensed,
            dof_actuated: info.dof_actuated,
            max_force_n: info.max_force_n,
        }],
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_are_column_major_millimetres() {
        let a: f64 = 0.4;
        let (c, s) = (a.cos(), a.sin());
        // Rotation about z by a, translation (10, -20, 30) mm, column-major.
        let m = [
            c, s, 0.0, 0.0, -s, c, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 10.0, -20.0, 30.0, 1.0,
        ];
        let (p, q) = pose_from_transform(&m);
        assert!((p - Vector3::new(0.010, -0.020, 0.030)).norm() < 1e-15);
        let expected = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), a);
        assert!(q.angle_to(&expected) < 1e-12, "{q:?}");
    }

    #[test]
    fn clamps_keep_direction() {
        assert_eq!(clamp3([3.0, 4.0, 0.0], 10.0), [3.0, 4.0, 0.0]);
        let c = clamp3([3.0, 4.0, 0.0], 2.5);
        assert!((c[0] - 1.5).abs() < 1e-15 && (c[1] - 2.0).abs() < 1e-15);
        assert_eq!(clamp3([1.0, 0.0, 0.0], 0.0), [0.0; 3]);
        assert_eq!(clamp3([1.0, 0.0, 0.0], f64::NAN), [0.0; 3]);
    }

    #[test]
    fn error_names_follow_the_header() {
        assert_eq!(error_name(0x0302), "HD_COMM_ERROR");
        assert_eq!(error_name(0x0203), "HD_EXCEEDED_MAX_VELOCITY");
        assert!(is_force_error(0x0201) && !is_force_error(0x0302));
        assert_eq!(error_name(0x7777), "(unknown HDAPI error)");
    }
}
