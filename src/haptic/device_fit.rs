//! Fitting a scene's workspace mapping and virtual coupling to the device in the user's
//! hand: its capabilities drive the physics.
//!
//! A scene is tuned for a reference device, the simulated PHANTOM Premium 1.5 (workspace
//! radius [`REFERENCE_WORKSPACE_RADIUS_M`]). On another device:
//!
//! - **Workspace**: the mapping `x_sim = T_index (x_device / alpha)` (thesis 4.5) is
//!   rescaled so that the device's reach covers the same region of the scene:
//!   `alpha' = alpha * r_device / r_reference`, with `r` the workspace's characteristic
//!   radius ([`haptics_devices::Workspace::characteristic_radius`]).
//! - **Stiffness**: the coupling force is `F = k (x_m - x_s)` with `x_m = x_device / alpha'`,
//!   so the hand feels `k / alpha'` N per device metre. It may not exceed the device's
//!   stable stiffness `K`: `k <= K alpha'` (Colgate's passivity bound is what `K`
//!   summarizes; past it the device buzzes). Rotations map one to one, so the torque
//!   spring `k_torque` (N·m/rad) is capped at the device's stable angular stiffness where
//!   it renders torque and one is rated.
//! - **Force**: the coupling's saturation plateau and its device force limit are capped at
//!   the device's nominal maximum force; the torque limit at its maximum torque when it
//!   renders torque. A 3-DOF-output device keeps the scene's torque limit: the torque is
//!   computed and shown on screen, and the safety layer never sends it.
//!
//! Input-only devices (rate-controlled SpaceMice) render no force: nothing is fitted.
//! The caps also hold for live edits ([`CouplingCaps`], applied by
//! [`crate::haptic::HapticSimulation::set`]).

use haptics_devices::DeviceInfo;

use crate::coupling::CouplingParams;
use crate::scene::Scene;

/// Workspace radius (m) of the reference device scenes are tuned for: the simulated
/// PHANTOM Premium 1.5 ([`DeviceInfo::phantom_premium_6dof`]).
pub const REFERENCE_WORKSPACE_RADIUS_M: f64 = 0.12;

/// Upper bounds on the coupling's parameters for one device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CouplingCaps {
    /// Largest coupling stiffness `k_VC`, N per simulation metre.
    pub stiffness: f64,
    /// Largest torque spring `k_VC,torque`, N·m/rad (infinite: not rated).
    pub torque_stiffness: f64,
    /// Largest saturation plateau and device force limit, N.
    pub force: f64,
    /// Largest device torque limit, N·m (`None`: the device renders no torque).
    pub torque: Option<f64>,
}

impl CouplingCaps {
    /// Lowers `c`'s parameters to the caps; returns whether anything changed.
    pub fn apply(&self, c: &mut CouplingParams) -> bool {
        let before = *c;
        c.stiffness = c.stiffness.min(self.stiffness);
        c.torque_stiffness = c.torque_stiffness.min(self.torque_stiffness);
        c.saturation_force = c.saturation_force.map(|f| f.min(self.force));
        c.device_max_force = c.device_max_force.min(self.force);
        if let Some(t) = self.torque {
            c.device_max_torque = c.device_max_torque.min(t);
        }
        *c != before
    }
}

/// One parameter the fit changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The parameter's key (`workspace_scale`, or a [`crate::scene::params::Param`] key).
    pub key: &'static str,
    /// The scene's value.
    pub from: f64,
    /// The fitted value.
    pub to: f64,
    /// Why, in words.
    pub why: &'static str,
}

/// The fitted mapping and caps for one device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceFit {
    /// The rescaled `alpha` (device metres per simulation unit).
    pub workspace_scale: f64,
    /// The bounds on the coupling, also applied to live edits.
    pub caps: CouplingCaps,
    /// What changed, for the start-up message and the recording's header.
    pub changes: Vec<Change>,
}

/// The workspace scale `alpha` rescaled by the device's characteristic radius over the
/// reference device's (unchanged when the radius is not positive and finite).
fn fitted_workspace_scale(workspace_scale: f64, info: &DeviceInfo) -> f64 {
    let r = info.workspace.characteristic_radius();
    if r.is_finite() && r > 0.0 {
        workspace_scale * r / REFERENCE_WORKSPACE_RADIUS_M
    } else {
        workspace_scale
    }
}

/// The caps `info` puts on the coupling under the workspace scale `alpha`.
fn device_caps(info: &DeviceInfo, alpha: f64) -> CouplingCaps {
    let stiffness = if info.max_stiffness_n_per_m.is_finite() && info.max_stiffness_n_per_m > 0.0 {
        info.max_stiffness_n_per_m * alpha
    } else {
        f64::INFINITY
    };
    let k_angular = info.max_angular_stiffness_nm_per_rad;
    let torque_stiffness = if info.dof_actuated >= 6 && k_angular.is_finite() && k_angular > 0.0 {
        k_angular
    } else {
        f64::INFINITY
    };
    CouplingCaps {
        stiffness,
        torque_stiffness,
        force: info.max_force_n,
        torque: (info.dof_actuated >= 6 && info.max_torque_nm > 0.0).then_some(info.max_torque_nm),
    }
}

/// The parameters that differ between the scene's (`coupling`, `workspace_scale`) and the
/// fitted (`fitted`, `alpha`) ones, in a fixed order.
fn fit_changes(
    coupling: &CouplingParams,
    fitted: &CouplingParams,
    workspace_scale: f64,
    alpha: f64,
) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut note = |key, from: f64, to: f64, why| {
        if from != to {
            changes.push(Change { key, from, to, why });
        }
    };
    note(
        "workspace_scale",
        workspace_scale,
        alpha,
        "the device's reach covers the scene region the reference device's does",
    );
    note(
        "coupling.stiffness",
        coupling.stiffness,
        fitted.stiffness,
        "the felt stiffness k / workspace_scale stays within the device's stable stiffness",
    );
    note(
        "coupling.torque_stiffness",
        coupling.torque_stiffness,
        fitted.torque_stiffness,
        "the torque spring stays within the device's stable angular stiffness",
    );
    note(
        "coupling.saturation_force",
        coupling.saturation_force.unwrap_or(0.0),
        fitted.saturation_force.unwrap_or(0.0),
        "the plateau stays within the device's maximum force",
    );
    note(
        "coupling.device_max_force",
        coupling.device_max_force,
        fitted.device_max_force,
        "the device's maximum force",
    );
    note(
        "coupling.device_max_torque",
        coupling.device_max_torque,
        fitted.device_max_torque,
        "the device's maximum torque",
    );
    changes
}

/// The fit of `coupling` and `workspace_scale` to `info`; `None` for devices that render
/// no force.
pub fn fit(
    coupling: &CouplingParams,
    workspace_scale: f64,
    info: &DeviceInfo,
) -> Option<DeviceFit> {
    if info.dof_actuated == 0 || info.max_force_n.is_nan() || info.max_force_n <= 0.0 {
        return None;
    }
    let alpha = fitted_workspace_scale(workspace_scale, info);
    let caps = device_caps(info, alpha);
    let mut fitted = *coupling;
    caps.apply(&mut fitted);
    let changes = fit_changes(coupling, &fitted, workspace_scale, alpha);
    Some(DeviceFit {
        workspace_scale: alpha,
        caps,
        changes,
    })
}

/// Fits `scene` to `info` in place (see [`fit`]); returns the fit, `None` when nothing
/// applies.
pub fn fit_scene(scene: &mut Scene, info: &DeviceInfo) -> Option<DeviceFit> {
    let f = fit(&scene.coupling, scene.workspace_scale, info)?;
    scene.workspace_scale = f.workspace_scale;
    f.caps.apply(&mut scene.coupling);
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::Workspace;
    use nalgebra::Vector3;

    fn touch() -> DeviceInfo {
        DeviceInfo {
            name: "Touch".into(),
            dof_sensed: 6,
            dof_actuated: 3,
            max_force_n: 3.3,
            max_continuous_force_n: 0.88,
            max_torque_nm: 0.0,
            max_stiffness_n_per_m: 1260.0,
            max_angular_stiffness_nm_per_rad: 0.0,
            workspace: Workspace::Box {
                half_extents_m: Vector3::new(0.08, 0.06, 0.035),
            },
        }
    }

    #[test]
    fn the_reference_device_changes_nothing_it_does_not_have_to() {
        let c = CouplingParams::default();
        let f = fit(&c, 0.1, &DeviceInfo::phantom_premium_6dof()).unwrap();
        assert_eq!(f.workspace_scale, 0.1);
        // 600 N/m felt at alpha = 0.1: k <= 60 N/m; the 8.5 N limit stays.
        assert_eq!(f.caps.stiffness, 60.0);
        let keys: Vec<_> = f.changes.iter().map(|c| c.key).collect();
        assert!(keys.contains(&"coupling.stiffness"), "{keys:?}");
        assert!(!keys.contains(&"workspace_scale"), "{keys:?}");
        assert!(!keys.contains(&"coupling.device_max_force"), "{keys:?}");
    }

    /// A Touch: the workspace scale follows its smaller reach, the felt stiffness (k over
    /// the new scale) equals the device's bound when the scene asked for more, forces are
    /// capped at 3.3 N and the torque limit is left alone (3-DOF output).
    #[test]
    fn a_touch_gets_a_smaller_reach_a_softer_spring_and_lower_forces() {
        let mut c = CouplingParams {
            stiffness: 1e4,
            saturation_force: Some(5.0),
            ..CouplingParams::default()
        };
        let info = touch();
        let f = fit(&c, 0.1, &info).unwrap();
        let r = (0.08f64 * 0.06 * 0.035).cbrt();
        assert!((f.workspace_scale - 0.1 * r / 0.12).abs() < 1e-15);
        assert!(f.caps.apply(&mut c));
        assert!((c.stiffness / f.workspace_scale - 1260.0).abs() < 1e-9);
        assert_eq!(c.saturation_force, Some(3.3));
        assert_eq!(c.device_max_force, 3.3);
        assert_eq!(
            c.device_max_torque,
            CouplingParams::default().device_max_torque
        );
        assert!(
            !f.caps.apply(&mut c),
            "a second application changes nothing"
        );
    }

    /// A sigma.7 (CHAI3D's 4000 N/m and 1 N·m/rad): a torque spring above 1 N·m/rad is
    /// lowered to it; a Touch (no torque output) leaves the torque spring alone.
    #[test]
    fn the_torque_spring_is_capped_at_the_angular_stiffness_where_torque_is_rendered() {
        let sigma = DeviceInfo {
            name: "sigma.7".into(),
            dof_sensed: 6,
            dof_actuated: 6,
            max_force_n: 12.0,
            max_continuous_force_n: 12.0,
            max_torque_nm: 0.2,
            max_stiffness_n_per_m: 4000.0,
            max_angular_stiffness_nm_per_rad: 1.0,
            workspace: Workspace::Sphere { radius_m: 0.075 },
        };
        let c = CouplingParams {
            torque_stiffness: 10.0,
            ..CouplingParams::default()
        };
        let f = fit(&c, 0.1, &sigma).unwrap();
        assert_eq!(f.caps.torque_stiffness, 1.0);
        let mut fitted = c;
        f.caps.apply(&mut fitted);
        assert_eq!(fitted.torque_stiffness, 1.0);
        assert!(f
            .changes
            .iter()
            .any(|ch| ch.key == "coupling.torque_stiffness" && ch.from == 10.0 && ch.to == 1.0));
        let soft = CouplingParams {
            torque_stiffness: 0.5,
            ..c
        };
        let f = fit(&soft, 0.1, &sigma).unwrap();
        assert!(f
            .changes
            .iter()
            .all(|ch| ch.key != "coupling.torque_stiffness"));
        let touch = DeviceInfo {
            max_angular_stiffness_nm_per_rad: 1.0,
            ..touch()
        };
        assert_eq!(
            fit(&c, 0.1, &touch).unwrap().caps.torque_stiffness,
            f64::INFINITY
        );
    }

    #[test]
    fn input_only_devices_are_not_fitted() {
        let info = DeviceInfo {
            dof_actuated: 0,
            max_force_n: 0.0,
            ..touch()
        };
        assert!(fit(&CouplingParams::default(), 0.1, &info).is_none());
    }
}
