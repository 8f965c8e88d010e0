//! Force Dimension devices (omega, sigma, delta, lambda; the Novint Falcon through the
//! same SDK) through the DHD API, loaded at run time from `libdhd.so`.
//!
//! DHD is polled: the haptic thread calls it directly in [`Device::read`]
//! (`dhdGetPositionAndOrientationFrame`, metres and a row-major rotation matrix;
//! `dhdGetButtonMask`) and [`Device::write`] (`dhdSetForceAndTorque`, N and N·m). A call
//! returning a negative status is a fatal [`VendorFault`] carrying `dhdErrorGetLast`.
//!
//! Limits: `dhdGetMaxForce`/`dhdGetMaxTorque` return a negative value when no limit is set
//! (the SDK default). Then the model's published figures ([`specs::force_dimension`],
//! CHAI3D's per-model specifications, looked up by `dhdGetSystemType`) are used and set in the library with `dhdSetMaxForce` /
//! `dhdSetMaxTorque`, so the SDK enforces them too; where the library reports a limit, the
//! lower of the two wins.
//!
//! Constants and signatures: `dhdc.h` of the public DHD SDK (3.x); values cited beside
//! each. In the C ABI the C++ default argument `char ID = -1` is an ordinary last
//! parameter; -1 means "the current device".

use std::ffi::{c_char, c_int, c_uint};
use std::time::Instant;

use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};

use super::{c_string, find_library, symbol, LibrarySource, Probe, ProbedDevice, Vendor};
use super::{specs, VendorError, VendorFault};
use crate::Device;
use crate::DeviceError;
use crate::DeviceInfo;
use crate::DeviceSample;
use crate::Pose;
use crate::Workspace;
use crate::Wrench;

/// dhdc.h `enum dhd_errors`, in order from `DHD_NO_ERROR` = 0.
const ERROR_NAMES: [&str; 22] = [
    "DHD_NO_ERROR",
    "DHD_ERROR",
    "DHD_ERROR_COM",
    "DHD_ERROR_DHC_BUSY",
    "DHD_ERROR_NO_DRIVER_FOUND",
    "DHD_ERROR_NO_DEVICE_FOUND",
    "DHD_ERROR_NOT_AVAILABLE",
    "DHD_ERROR_TIMEOUT",
    "DHD_ERROR_GEOMETRY",
    "DHD_ERROR_EXPERT_MODE_DISABLED",
    "DHD_ERROR_NOT_IMPLEMENTED",
    "DHD_ERROR_OUT_OF_MEMORY",
    "DHD_ERROR_DEVICE_NOT_READY",
    "DHD_ERROR_FILE_NOT_FOUND",
    "DHD_ERROR_CONFIGURATION",
    "DHD_ERROR_INVALID_INDEX",
    "DHD_ERROR_DEPRECATED",
    "DHD_ERROR_NULL_ARGUMENT",
    "DHD_ERROR_REDUNDANT_FAIL",
    "DHD_ERROR_NOT_ENABLED",
    "DHD_ERROR_DEVICE_IN_USE",
    "DHD_ERROR_INVALID",
];

/// The header's name of a DHD error code.
pub fn error_name(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| ERROR_NAMES.get(i))
        .copied()
        .unwrap_or("(unknown DHD error)")
}

// dhdc.h: DHD_ON / DHD_OFF.
const DHD_ON: u8 = 1;
const DHD_OFF: u8 = 0;

/// The DHD functions used (dhdc.h), copied out of the library.
#[derive(Clone, Copy)]
struct Api {
    get_device_count: unsafe extern "C" fn() -> c_int,
    open: unsafe extern "C" fn() -> c_int,
    open_id: Option<unsafe extern "C" fn(c_char) -> c_int>,
    close: unsafe extern "C" fn(c_char) -> c_int,
    get_system_type: unsafe extern "C" fn(c_char) -> c_int,
    get_system_name: Option<unsafe extern "C" fn(c_char) -> *const c_char>,
    enable_force: unsafe extern "C" fn(u8, c_char) -> c_int,
    get_pose: unsafe extern "C" fn(*mut f64, *mut f64, *mut f64, *mut [f64; 3], c_char) -> c_int,
    get_button_mask: unsafe extern "C" fn(c_char) -> c_uint,
    set_force_and_torque: unsafe extern "C" fn(f64, f64, f64, f64, f64, f64, c_char) -> c_int,
    get_max_force: Option<unsafe extern "C" fn(c_char) -> f64>,
    get_max_torque: Option<unsafe extern "C" fn(c_char) -> f64>,
    set_max_force: Option<unsafe extern "C" fn(f64, c_char) -> c_int>,
    set_max_torque: Option<unsafe extern "C" fn(f64, c_char) -> c_int>,
    has_active_wrist: Option<unsafe extern "C" fn(c_char) -> bool>,
    error_get_last: unsafe extern "C" fn() -> c_int,
    error_get_last_str: unsafe extern "C" fn() -> *const c_char,
}

impl Api {
    fn load(lib: &libloading::Library, src: &LibrarySource) -> Result<Api, VendorError> {
        let v = Vendor::ForceDimension;
        // SAFETY: each signature is the one declared in dhdc.h. Functions added in later
        // SDK releases (names, limits, wrist query) are optional.
        unsafe {
            Ok(Api {
                get_device_count: symbol(lib, v, src, "dhdGetDeviceCount")?,
                open: symbol(lib, v, src, "dhdOpen")?,
                open_id: symbol(lib, v, src, "dhdOpenID").ok(),
                close: symbol(lib, v, src, "dhdClose")?,
                get_system_type: symbol(lib, v, src, "dhdGetSystemType")?,
                get_system_name: symbol(lib, v, src, "dhdGetSystemName").ok(),
                enable_force: symbol(lib, v, src, "dhdEnableForce")?,
                get_pose: symbol(lib, v, src, "dhdGetPositionAndOrientationFrame")?,
                get_button_mask: symbol(lib, v, src, "dhdGetButtonMask")?,
                set_force_and_torque: symbol(lib, v, src, "dhdSetForceAndTorque")?,
                get_max_force: symbol(lib, v, src, "dhdGetMaxForce").ok(),
                get_max_torque: symbol(lib, v, src, "dhdGetMaxTorque").ok(),
                set_max_force: symbol(lib, v, src, "dhdSetMaxForce").ok(),
                set_max_torque: symbol(lib, v, src, "dhdSetMaxTorque").ok(),
                has_active_wrist: symbol(lib, v, src, "dhdHasActiveWrist").ok(),
                error_get_last: symbol(lib, v, src, "dhdErrorGetLast")?,
                error_get_last_str: symbol(lib, v, src, "dhdErrorGetLastStr")?,
            })
        }
    }

    fn last_error(&self) -> String {
        // SAFETY: a static string of the library.
        unsafe { c_string((self.error_get_last_str)()) }
    }

    /// Name, capabilities and the limits to enforce for the open device `id`.
    fn describe(&self, id: c_char) -> DeviceInfo {
        // SAFETY: plain DHD queries on an open device.
        let system_type = unsafe { (self.get_system_type)(id) };
        let model = specs::force_dimension(system_type);
        let name = self
            .get_system_name
            .map(|f| unsafe { c_string(f(id)) })
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| model.name.to_string());
        // A negative or non-finite figure is "no limit reported" (`lower_of` ignores it).
        let reported = |f: Option<unsafe extern "C" fn(c_char) -> f64>| f.map(|f| unsafe { f(id) });
        let max_force = specs::lower_of(reported(self.get_max_force), model.max_force_n);
        let active_wrist = self
            .has_active_wrist
            .map_or(model.max_torque_nm > 0.0, |f| unsafe { f(id) });
        let max_torque = if active_wrist {
            specs::lower_of(reported(self.get_max_torque), model.max_torque_nm)
        } else {
            0.0
        };
        DeviceInfo {
            name,
            dof_sensed: 6,
            dof_actuated: if active_wrist { 6 } else { 3 },
            max_force_n: max_force,
            max_continuous_force_n: max_force,
            max_torque_nm: max_torque,
            max_stiffness_n_per_m: model.max_linear_stiffness_n_per_m,
            max_angular_stiffness_nm_per_rad: if active_wrist {
                model.max_angular_stiffness_nm_per_rad
            } else {
                0.0
            },
            workspace: Workspace::Sphere {
                radius_m: model.workspace_radius_m,
            },
        }
    }
}

/// A Force Dimension device, polled from the haptic thread. Dropping it zeroes the force,
/// disables force output and closes the device.
pub struct ForceDimensionDevice {
    api: Api,
    id: c_char,
    info: DeviceInfo,
    source: LibrarySource,
    epoch: Instant,
    fault: Option<VendorFault>,
    closed: bool,
    _library: libloading::Library,
}

impl ForceDimensionDevice {
    /// Loads `libdhd.so`, opens the first device, sets its force and torque limits when
    /// the library has none, and enables force output.
    pub fn open() -> Result<ForceDimensionDevice, VendorError> {
        let (library, source) = find_library(Vendor::ForceDimension)?;
        let api = Api::load(&library, &source)?;
        let device_err = |detail: String| VendorError::Device {
            vendor: Vendor::ForceDimension,
            detail,
        };
        // SAFETY: plain DHD calls.
        let count = unsafe { (api.get_device_count)() };
        if count < 1 {
            return Err(device_err(format!(
                "no device found (dhdGetDeviceCount = {count}: {}); is it powered and connected by USB, and may this user access it (see devices/README.md, udev)?",
                api.last_error()
            )));
        }
        let id = unsafe { (api.open)() };
        if id < 0 {
            return Err(device_err(format!("dhdOpen failed: {}", api.last_error())));
        }
        let id = id as c_char;
        let info = api.describe(id);
        // Put the limits in the library too, so the SDK enforces them as well.
        unsafe {
            if let Some(set) = api.set_max_force {
                set(info.max_force_n, id);
            }
            if let (Some(set), true) = (api.set_max_torque, info.dof_actuated >= 6) {
                set(info.max_torque_nm, id);
            }
        }
        let mut dev = ForceDimensionDevice {
            api,
            id,
            info,
            source,
            epoch: Instant::now(),
            fault: None,
            closed: false,
            _library: library,
        };
        // Zero first, then enable: the device never starts with a stale force.
        let status = unsafe {
            (api.set_force_and_torque)(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, id)
                .min((api.enable_force)(DHD_ON, id))
        };
        if status < 0 {
            let msg = api.last_error();
            dev.close();
            return Err(device_err(format!("dhdEnableForce failed: {msg}")));
        }
        Ok(dev)
    }

    /// Where the library was found.
    pub fn library(&self) -> &LibrarySource {
        &self.source
    }

    /// The fault that stopped the device, if any.
    pub fn fault(&self) -> Option<VendorFault> {
        self.fault
    }

    /// The library's text for the latest error (allocates: not for the haptic cycle).
    pub fn last_error_text(&self) -> String {
        self.api.last_error()
    }

    /// Zeroes the force, disables force output and closes the device. Idempotent; also
    /// run on drop.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        // SAFETY: plain DHD calls on the open device; failures are ignored (closing).
        unsafe {
            (self.api.set_force_and_torque)(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, self.id);
            (self.api.enable_force)(DHD_OFF, self.id);
            (self.api.close)(self.id);
        }
    }

    fn fail(&mut self) -> DeviceError {
        // SAFETY: a plain DHD call.
        let code = unsafe { (self.api.error_get_last)() };
        let f = VendorFault {
            vendor: Vendor::ForceDimension,
            code,
            internal: 0,
        };
        self.fault = Some(f);
        DeviceError::Vendor(f)
    }
}

impl Drop for ForceDimensionDevice {
    fn drop(&mut self) {
        self.close();
    }
}

impl Device for ForceDimensionDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        if let Some(f) = self.fault {
            return Err(DeviceError::Vendor(f));
        }
        let (mut px, mut py, mut pz) = (0.0, 0.0, 0.0);
        let mut m = [[0.0f64; 3]; 3];
        // SAFETY: three doubles and a 3x3 matrix, as dhdc.h declares.
        let status =
            unsafe { (self.api.get_pose)(&mut px, &mut py, &mut pz, m.as_mut_ptr(), self.id) };
        if status < 0 {
            return Err(self.fail());
        }
        let buttons = unsafe { (self.api.get_button_mask)(self.id) };
        Ok(DeviceSample {
            time_s: self.epoch.elapsed().as_secs_f64(),
            pose: Pose::new(Vector3::new(px, py, pz), orientation_from_frame(&m)),
            buttons,
        })
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        if let Some(f) = self.fault {
            return Err(DeviceError::Vendor(f));
        }
        let (f, t) = (wrench.force, wrench.torque);
        let t = if self.info.dof_actuated >= 6 && t.iter().all(|v| v.is_finite()) {
            t
        } else {
            Vector3::zeros()
        };
        if !f.iter().all(|v| v.is_finite()) {
            return Err(DeviceError::Unsupported("a non-finite force"));
        }
        // SAFETY: a plain DHD call. DHD_TIMEGUARD (1) and DHD_MOTOR_SATURATED (2) are
        // successes.
        let status =
            unsafe { (self.api.set_force_and_torque)(f.x, f.y, f.z, t.x, t.y, t.z, self.id) };
        if status < 0 {
            return Err(self.fail());
        }
        Ok(())
    }
}

/// The orientation of a DHD frame: a row-major 3x3 rotation matrix.
pub fn orientation_from_frame(m: &[[f64; 3]; 3]) -> UnitQuaternion<f64> {
    let r = Matrix3::new(
        m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2], m[2][0], m[2][1], m[2][2],
    );
    UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r))
}

/// Lists the Force Dimension devices: each is opened (forces off), described and closed.
pub fn probe() -> Probe {
    let (library, source) = match find_library(Vendor::ForceDimension) {
        Ok(v) => v,
        Err(e) => return Probe::Unavailable(e),
    };
    let api = match Api::load(&library, &source) {
        Ok(a) => a,
        Err(e) => return Probe::Unavailable(e),
    };
    // SAFETY: plain DHD calls; each opened device is closed before the next.
    let count = unsafe { (api.get_device_count)() };
    if count < 1 {
        return Probe::Found {
            source,
            devices: vec![],
            note: Some(format!(
                "dhdGetDeviceCount = {count} ({})",
                api.last_error()
            )),
        };
    }
    let mut devices = Vec::new();
    let mut note = None;
    for i in 0..count.min(16) {
        let id = match (api.open_id, i) {
            (Some(open_id), _) => unsafe { open_id(i as c_char) },
            (None, 0) => unsafe { (api.open)() },
            (None, _) => break,
        };
        if id < 0 {
            note = Some(format!("device {i}: {}", api.last_error()));
            continue;
        }
        let info = api.describe(id as c_char);
        unsafe { (api.close)(id as c_char) };
        devices.push(ProbedDevice {
            model: info.name,
            dof_sensed: info.dof_sensed,
            dof_actuated: info.dof_actuated,
            max_force_n: info.max_force_n,
        });
    }
    Probe::Found {
        source,
        devices,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_row_major() {
        let a: f64 = -0.7;
        let (c, s) = (a.cos(), a.sin());
        let m = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]];
        let q = orientation_from_frame(&m);
        let expected = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), a);
        assert!(q.angle_to(&expected) < 1e-12);
    }

    #[test]
    fn error_names_follow_the_header() {
        assert_eq!(error_name(2), "DHD_ERROR_COM");
        assert_eq!(error_name(21), "DHD_ERROR_INVALID");
        assert_eq!(error_name(-3), "(unknown DHD error)");
    }
}
