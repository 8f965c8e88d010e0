//! The [`Device`] trait and the values that cross it.
//!
//! A device hands the haptic thread a [`DeviceSample`] (pose in metres and a unit
//! quaternion, a button bitmask and a timestamp in seconds on the device's clock) and takes
//! back a [`Wrench`] (force in N, torque in N·m, both in the device's world frame). What a
//! device can do is described by [`DeviceInfo`], so the layers above can scale the workspace
//! and clamp forces without knowing the model. Every failure is a typed [`DeviceError`].
//!
//! Implementations must not allocate or lock in [`Device::read`] and [`Device::write`]:
//! they run inside the 1 kHz haptic cycle.

use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

/// A rigid pose: position in metres and orientation as a unit quaternion (device frame to
/// world frame).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Position in metres.
    pub position: Vector3<f64>,
    /// Orientation.
    pub orientation: UnitQuaternion<f64>,
}

impl Pose {
    /// The identity pose (origin, no rotation).
    pub fn identity() -> Self {
        Self {
            position: Vector3::zeros(),
            orientation: UnitQuaternion::identity(),
        }
    }

    /// A pose from a position and an orientation.
    pub fn new(position: Vector3<f64>, orientation: UnitQuaternion<f64>) -> Self {
        Self {
            position,
            orientation,
        }
    }

    /// A pose at `position` with no rotation.
    pub fn from_position(position: Vector3<f64>) -> Self {
        Self::new(position, UnitQuaternion::identity())
    }

    /// The pose as a rigid transform (rotation, then translation).
    pub fn isometry(&self) -> Isometry3<f64> {
        Isometry3::from_parts(Translation3::from(self.position), self.orientation)
    }

    /// Linear interpolation of the position and spherical interpolation of the orientation
    /// (shortest arc), `t` in [0, 1].
    pub fn interpolate(&self, other: &Pose, t: f64) -> Pose {
        if t <= 0.0 {
            return *self;
        }
        if t >= 1.0 {
            return *other;
        }
        let position = self.position.lerp(&other.position, t);
        // Opposite quaternions are the same rotation: slerp can fail to pick an axis only
        // for exactly opposite rotations (angle pi apart), where nlerp is used instead.
        let orientation = self
            .orientation
            .try_slerp(&other.orientation, t, 1e-12)
            .unwrap_or_else(|| self.orientation.nlerp(&other.orientation, t));
        Pose::new(position, orientation)
    }

    /// True when every component is finite.
    pub fn is_finite(&self) -> bool {
        self.position.iter().all(|v| v.is_finite())
            && self.orientation.coords.iter().all(|v| v.is_finite())
    }
}

impl Default for Pose {
    fn default() -> Self {
        Self::identity()
    }
}

/// One reading of a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceSample {
    /// Seconds on the device's clock (monotonic; the origin is device-defined, usually the
    /// moment it was opened).
    pub time_s: f64,
    /// The end-effector (stylus) pose.
    pub pose: Pose,
    /// Button states, bit i set while button i is pressed.
    pub buttons: u32,
}

impl DeviceSample {
    /// True when button `index` (0-based) is pressed; false for indices past 31.
    pub fn button(&self, index: u32) -> bool {
        index < 32 && self.buttons & (1 << index) != 0
    }
}

/// Force and torque sent to a device, in the device's world frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wrench {
    /// Force in newtons.
    pub force: Vector3<f64>,
    /// Torque in newton-metres.
    pub torque: Vector3<f64>,
}

impl Wrench {
    /// No force and no torque.
    pub fn zero() -> Self {
        Self {
            force: Vector3::zeros(),
            torque: Vector3::zeros(),
        }
    }

    /// A wrench from a force and a torque.
    pub fn new(force: Vector3<f64>, torque: Vector3<f64>) -> Self {
        Self { force, torque }
    }

    /// A pure force.
    pub fn from_force(force: Vector3<f64>) -> Self {
        Self::new(force, Vector3::zeros())
    }

    /// True when every component is finite.
    pub fn is_finite(&self) -> bool {
        self.force
            .iter()
            .chain(self.torque.iter())
            .all(|v| v.is_finite())
    }
}

impl Default for Wrench {
    fn default() -> Self {
        Self::zero()
    }
}

/// The reachable region of the end effector, centred on the device origin.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workspace {
    /// A sphere of this radius in metres.
    Sphere { radius_m: f64 },
    /// An axis-aligned box with these half extents in metres.
    Box { half_extents_m: Vector3<f64> },
}

impl Workspace {
    /// The radius of the smallest sphere around the origin that holds the workspace.
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Workspace::Sphere { radius_m } => *radius_m,
            Workspace::Box { half_extents_m } => half_extents_m.norm(),
        }
    }

    /// The workspace's size as one radius, for scaling a scene to a device: the radius
    /// for a sphere, the geometric mean of the half extents for a box (the sphere of
    /// about the box's proportions; a box 381 x 267 x 191 mm, the PHANTOM Premium 1.5's,
    /// gives 0.134 m).
    pub fn characteristic_radius(&self) -> f64 {
        match self {
            Workspace::Sphere { radius_m } => *radius_m,
            Workspace::Box { half_extents_m } => half_extents_m.iter().product::<f64>().cbrt(),
        }
    }
}

/// What a device can sense and render.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// Human-readable model name.
    pub name: String,
    /// Degrees of freedom sensed (3 = position only, 6 = position and orientation).
    pub dof_sensed: u8,
    /// Degrees of freedom actuated (0 = input only, 3 = force, 6 = force and torque).
    pub dof_actuated: u8,
    /// Largest force magnitude the device may be sent, N (0 for input-only devices).
    pub max_force_n: f64,
    /// Largest force the device sustains without overheating, N (at most `max_force_n`).
    pub max_continuous_force_n: f64,
    /// Largest torque magnitude the device may be sent, N·m.
    pub max_torque_nm: f64,
    /// Largest stiffness the device renders stably, N/m (for the virtual coupling).
    pub max_stiffness_n_per_m: f64,
    /// Largest angular stiffness the device renders stably, N·m/rad (for the coupling's
    /// torque spring; 0: not rated, or no torque output).
    pub max_angular_stiffness_nm_per_rad: f64,
    /// The reachable region.
    pub workspace: Workspace,
}

impl DeviceInfo {
    /// The PHANTOM Premium 1.5 6-DOF used in the thesis: 8.5 N, 0.188 N·m, about 0.6 N/mm
    /// stable stiffness, 0.12 m workspace radius. The simulated device's default.
    pub fn phantom_premium_6dof() -> Self {
        Self {
            name: "Simulated PHANTOM Premium 1.5 6-DOF".to_string(),
            dof_sensed: 6,
            dof_actuated: 6,
            max_force_n: 8.5,
            max_continuous_force_n: 1.4,
            max_torque_nm: 0.188,
            max_stiffness_n_per_m: 600.0,
            max_angular_stiffness_nm_per_rad: 0.0,
            workspace: Workspace::Sphere { radius_m: 0.12 },
        }
    }
}

/// Why a device operation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// The device went away (unplugged, powered off) or was never opened.
    #[error("device disconnected{}", if .0.is_empty() { String::new() } else { format!(": {}", .0) })]
    Disconnected(String),
    /// No data arrived in time.
    #[error("device timed out after {timeout_ms} ms")]
    Timeout { timeout_ms: u32 },
    /// The device sent bytes that do not fit its profile.
    #[error("protocol error in report {report_id}: {detail}")]
    Protocol { report_id: u8, detail: String },
    /// The device reported a pose or time that is not a finite number (refused by the
    /// safety layer; no allocation, so the haptic cycle can return it).
    #[error("the device reported a non-finite pose or time")]
    NonFiniteSample,
    /// No connected device matches the request.
    #[error("no device found: {0}")]
    NotFound(String),
    /// The HID library could not start or enumerate.
    #[error("HID backend error: {0}")]
    Backend(String),
    /// A named profile does not exist.
    #[error("unknown device profile '{name}'; known profiles: {}", .known.join(", "))]
    UnknownProfile { name: String, known: Vec<String> },
    /// A profile file could not be read or parsed.
    #[error(transparent)]
    Profile(#[from] crate::hid::profile::ProfileError),
    /// A recorded trajectory has no more samples.
    #[error("end of the recorded trajectory")]
    EndOfStream,
    /// Safety settings out of range.
    #[error("invalid safety settings: {0}")]
    InvalidSettings(String),
    /// The operation is not supported by this device (e.g. reconnecting a simulation).
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// A vendor SDK reported a fault (communication error, servo loop stopped). Fatal:
    /// the device is not used again in this session.
    #[error("{0}")]
    Vendor(crate::vendor::VendorFault),
}

impl DeviceError {
    /// The vendor fault, if this error is one (fatal: end the session).
    pub fn fatal(&self) -> Option<crate::vendor::VendorFault> {
        match self {
            DeviceError::Vendor(f) => Some(*f),
            _ => None,
        }
    }
}

/// A haptic device: pose and buttons in, force and torque out.
///
/// `read` and `write` are called once per haptic cycle from the haptic thread and must not
/// allocate, lock or block for longer than one servo period.
pub trait Device {
    /// What the device can sense and render.
    fn info(&self) -> &DeviceInfo;

    /// The latest pose, buttons and timestamp.
    fn read(&mut self) -> Result<DeviceSample, DeviceError>;

    /// Sends force and torque. Callers go through [`crate::safety::SafeDevice`], which guarantees
    /// finite values within the device maximum; implementations should still never pass a
    /// non-finite value to hardware.
    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError>;

    /// Tries to reopen a disconnected device. Called by the safety layer at a bounded rate
    /// (never inside a normal cycle); may allocate. The default cannot reconnect.
    fn reconnect(&mut self) -> Result<(), DeviceError> {
        Err(DeviceError::Unsupported("this device cannot reconnect"))
    }

    /// Holds the output at zero until the commanded force is small, then ramps it up, as
    /// when output is first enabled: the haptic thread calls it when the simulation
    /// jumps (a reset). The safety layer does this, a wrapper passes it on, and the
    /// default does nothing. Never allocates.
    fn rearm(&mut self) {}
}

impl<D: Device + ?Sized> Device for Box<D> {
    fn info(&self) -> &DeviceInfo {
        (**self).info()
    }
    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        (**self).read()
    }
    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        (**self).write(wrench)
    }
    fn reconnect(&mut self) -> Result<(), DeviceError> {
        (**self).reconnect()
    }
    fn rearm(&mut self) {
        (**self).rearm()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_endpoints_and_midpoint() {
        let a = Pose::from_position(Vector3::new(0.0, 0.0, 0.0));
        let b = Pose::new(
            Vector3::new(0.1, -0.2, 0.3),
            UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 1.0),
        );
        let m = a.interpolate(&b, 0.5);
        assert!((m.position - Vector3::new(0.05, -0.1, 0.15)).norm() < 1e-15);
        assert!((m.orientation.angle() - 0.5).abs() < 1e-12);
        assert_eq!(a.interpolate(&b, -1.0), a);
        assert!((a.interpolate(&b, 2.0).orientation.angle_to(&b.orientation)) < 1e-12);
    }

    #[test]
    fn buttons_and_finiteness() {
        let s = DeviceSample {
            time_s: 0.0,
            pose: Pose::identity(),
            buttons: 0b101,
        };
        assert!(s.button(0) && !s.button(1) && s.button(2) && !s.button(40));
        assert!(Wrench::zero().is_finite());
        assert!(!Wrench::from_force(Vector3::new(f64::NAN, 0.0, 0.0)).is_finite());
        let box_ws = Workspace::Box {
            half_extents_m: Vector3::new(0.3, 0.4, 0.0),
        };
        assert!((box_ws.bounding_radius() - 0.5).abs() < 1e-15);
        let premium = Workspace::Box {
            half_extents_m: Vector3::new(0.1905, 0.1335, 0.0955),
        };
        assert!((premium.characteristic_radius() - 0.1344).abs() < 1e-3);
    }

    #[test]
    fn errors_read_well() {
        let e = DeviceError::UnknownProfile {
            name: "foo".into(),
            known: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            e.to_string(),
            "unknown device profile 'foo'; known profiles: a, b"
        );
        assert_eq!(
            DeviceError::Disconnected(String::new()).to_string(),
            "device disconnected"
        );
    }
}
