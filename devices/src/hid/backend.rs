//! [`HidDevice`]: a [`Device`] over hidapi, driven by a [`Profile`]; and
//! [`list_devices`] for the `haptics devices` command.
//!
//! `read` drains every pending input report without blocking (a SpaceMouse reports at
//! about 60-125 Hz, a force-feedback device at its servo rate; the haptic loop runs at
//! 1 kHz either way), decodes them with [`super::report`], and returns the pose: the
//! decoded one in position mode, the integrated one in rate mode. Timestamps are host
//! seconds since the device was opened. Any hidapi error on read or write is treated as a
//! disconnect: the handle is dropped and [`DeviceError::Disconnected`] returned, and
//! [`Device::reconnect`] (called by the safety layer) looks for the device again.
//! Buffers are fixed arrays: no allocation on the hot path.

use std::ffi::CString;
use std::time::Instant;

use hidapi::HidApi;

use super::profile::{builtin_profiles, ControlMode, Profile, MAX_REPORT_LEN};
use super::report::{
    apply_input_report, encode_output, position_mode_pose, InputState, RateIntegrator,
};
use crate::Device;
use crate::DeviceError;
use crate::DeviceInfo;
use crate::DeviceSample;
use crate::Pose;
use crate::Wrench;

/// Reports handled per `read` at most (bounds the time spent when a device floods).
const MAX_REPORTS_PER_READ: usize = 64;

/// A HID device seen by [`list_devices`].
#[derive(Debug, Clone, PartialEq)]
pub struct ListedDevice {
    /// USB vendor id.
    pub vendor_id: u16,
    /// USB product id.
    pub product_id: u16,
    /// Platform path (e.g. `/dev/hidraw3`).
    pub path: String,
    /// Manufacturer string, when the device has one.
    pub manufacturer: Option<String>,
    /// Product string.
    pub product: Option<String>,
    /// HID usage page (0 when the backend does not know).
    pub usage_page: u16,
    /// HID usage.
    pub usage: u16,
    /// USB interface number (-1 when unknown).
    pub interface_number: i32,
    /// The name of the built-in profile that matches, if any.
    pub profile: Option<String>,
}

/// The built-in profile matching a device, if any.
pub fn matching_profile(
    profiles: &[Profile],
    vendor_id: u16,
    product_id: u16,
    usage_page: u16,
    usage: u16,
) -> Option<&Profile> {
    profiles
        .iter()
        .find(|p| p.matching.matches(vendor_id, product_id, usage_page, usage))
}

fn backend_error(e: hidapi::HidError) -> DeviceError {
    DeviceError::Backend(e.to_string())
}

/// Every HID device the system shows, with the built-in profile that matches it. An empty
/// list when there are none (or when the system has no HID support to enumerate).
pub fn list_devices() -> Result<Vec<ListedDevice>, DeviceError> {
    let profiles = builtin_profiles()?;
    let api = HidApi::new().map_err(backend_error)?;
    Ok(api
        .device_list()
        .map(|d| ListedDevice {
            vendor_id: d.vendor_id(),
            product_id: d.product_id(),
            path: d.path().to_string_lossy().into_owned(),
            manufacturer: d.manufacturer_string().map(str::to_string),
            product: d.product_string().map(str::to_string),
            usage_page: d.usage_page(),
            usage: d.usage(),
            interface_number: d.interface_number(),
            profile: matching_profile(
                &profiles,
                d.vendor_id(),
                d.product_id(),
                d.usage_page(),
                d.usage(),
            )
            .map(|p| p.name.clone()),
        })
        .collect())
}

/// Opens the first device that `profile` matches (or the one at `path`).
fn open_matching(
    profile: &Profile,
    path: Option<&CString>,
) -> Result<(hidapi::HidDevice, CString), DeviceError> {
    let api = HidApi::new().map_err(backend_error)?;
    let found = api.device_list().find(|d| {
        path.is_none_or(|p| d.path() == p.as_c_str())
            && profile
                .matching
                .matches(d.vendor_id(), d.product_id(), d.usage_page(), d.usage())
    });
    let Some(info) = found else {
        return Err(DeviceError::NotFound(format!(
            "no connected HID device matches profile '{}' (vendor 0x{:04x}, products {})",
            profile.name,
            profile.matching.vendor_id,
            profile
                .matching
                .product_ids
                .iter()
                .map(|p| format!("0x{p:04x}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let path = info.path().to_owned();
    let dev = info.open_device(&api).map_err(|e| {
        DeviceError::Backend(format!(
            "cannot open {}: {e} (check permissions: a udev rule granting access to /dev/hidraw*)",
            path.to_string_lossy()
        ))
    })?;
    dev.set_blocking_mode(false).map_err(backend_error)?;
    Ok((dev, path))
}

/// A HID device driven by a profile.
pub struct HidDevice {
    profile: Profile,
    dev: Option<hidapi::HidDevice>,
    path: Option<CString>,
    state: InputState,
    integrator: RateIntegrator,
    opened: Instant,
    last_time_s: f64,
    buf: [u8; MAX_REPORT_LEN],
    out: [u8; MAX_REPORT_LEN + 1],
}

impl HidDevice {
    /// Opens the first connected device that `profile` matches.
    pub fn open(profile: Profile) -> Result<Self, DeviceError> {
        let (dev, path) = open_matching(&profile, None)?;
        Ok(Self::with_handle(profile, dev, path))
    }

    /// Opens the device at `path` (as [`list_devices`] shows it) with `profile`.
    pub fn open_path(profile: Profile, path: &str) -> Result<Self, DeviceError> {
        let c = CString::new(path)
            .map_err(|_| DeviceError::NotFound(format!("invalid device path '{path}'")))?;
        let (dev, path) = open_matching(&profile, Some(&c))?;
        Ok(Self::with_handle(profile, dev, path))
    }

    fn with_handle(profile: Profile, dev: hidapi::HidDevice, path: CString) -> Self {
        Self {
            profile,
            dev: Some(dev),
            path: Some(path),
            state: InputState::default(),
            integrator: RateIntegrator::default(),
            opened: Instant::now(),
            last_time_s: 0.0,
            buf: [0; MAX_REPORT_LEN],
            out: [0; MAX_REPORT_LEN + 1],
        }
    }

    /// The profile in use.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Re-centres a rate-controlled device's integrated pose.
    pub fn recenter(&mut self, pose: Pose) {
        self.integrator.pose = pose;
    }

    fn lost(&mut self, e: &hidapi::HidError) -> DeviceError {
        self.dev = None;
        DeviceError::Disconnected(e.to_string())
    }
}

impl Device for HidDevice {
    fn info(&self) -> &DeviceInfo {
        &self.profile.info
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        let Some(dev) = self.dev.as_ref() else {
            return Err(DeviceError::Disconnected(String::new()));
        };
        let mut failure = None;
        for _ in 0..MAX_REPORTS_PER_READ {
            match dev.read_timeout(&mut self.buf, 0) {
                Ok(0) => break,
                Ok(n) => {
                    apply_input_report(&self.profile, &self.buf[..n], &mut self.state)?;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            return Err(self.lost(&e));
        }
        let now = self.opened.elapsed().as_secs_f64();
        let pose = match self.profile.mode {
            ControlMode::Position => position_mode_pose(&self.profile, &self.state)?,
            ControlMode::Rate => {
                let dt = now - self.last_time_s;
                self.integrator.step(
                    &self.state.translation,
                    &self.state.rotation,
                    dt,
                    &self.profile.info.workspace,
                );
                self.integrator.pose
            }
        };
        self.last_time_s = now;
        Ok(DeviceSample {
            time_s: now,
            pose,
            buttons: self.state.buttons,
        })
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        let Some(rep) = self.profile.output.as_ref() else {
            // Input-only device: nothing to render.
            return Ok(());
        };
        let Some(dev) = self.dev.as_ref() else {
            return Err(DeviceError::Disconnected(String::new()));
        };
        let n = encode_output(rep, wrench, &mut self.out).ok_or(DeviceError::Protocol {
            report_id: rep.report_id,
            detail: String::new(),
        })?;
        match dev.write(&self.out[..n]) {
            Ok(_) => Ok(()),
            Err(e) => Err(self.lost(&e)),
        }
    }

    fn reconnect(&mut self) -> Result<(), DeviceError> {
        // Prefer the same path; fall back to any matching device (a replug may renumber).
        let (dev, path) = open_matching(&self.profile, self.path.as_ref())
            .or_else(|_| open_matching(&self.profile, None))?;
        self.dev = Some(dev);
        self.path = Some(path);
        self.state = InputState {
            translation: nalgebra::Vector3::zeros(),
            rotation: nalgebra::Vector3::zeros(),
            ..self.state
        };
        self.last_time_s = self.opened.elapsed().as_secs_f64();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hid::profile::builtin_profile;

    #[test]
    fn enumeration_without_hardware_does_not_fail_hard() {
        // On a machine with no HID devices (CI) this is an empty list; with devices, each
        // listed one has a path. Either way no panic, and a backend failure is typed.
        match list_devices() {
            Ok(list) => assert!(list.iter().all(|d| !d.path.is_empty())),
            Err(e) => assert!(matches!(e, DeviceError::Backend(_)), "{e}"),
        }
    }

    #[test]
    fn opening_an_absent_device_is_a_clear_error() {
        let p = builtin_profile("generic-ffb").unwrap();
        // pid.codes' test id is not plugged in here.
        match HidDevice::open(p.clone()) {
            Err(DeviceError::NotFound(m)) => {
                assert!(m.contains("generic-ffb") && m.contains("0x1209"), "{m}")
            }
            Err(DeviceError::Backend(_)) => {}
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("no generic-ffb device should be connected in tests"),
        }
        assert!(matches!(
            HidDevice::open_path(p, "/dev/hidraw-none"),
            Err(DeviceError::NotFound(_) | DeviceError::Backend(_))
        ));
    }

    #[test]
    fn matching_profile_picks_by_ids_and_usage() {
        let ps = builtin_profiles().unwrap();
        let m = |v, p, up, u| matching_profile(&ps, v, p, up, u).map(|p| p.name.as_str());
        assert_eq!(m(0x046d, 0xc626, 1, 8), Some("spacemouse-split"));
        assert_eq!(m(0x256f, 0xc635, 1, 8), Some("spacemouse-combined"));
        assert_eq!(m(0x1209, 0x0001, 0xff00, 1), Some("generic-ffb"));
        assert_eq!(m(0x046d, 0xc52b, 1, 6), None); // a Logitech receiver
    }
}
