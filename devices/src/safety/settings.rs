//! The safety settings of a device profile (its `[safety]` table), their validation and
//! the clutch button.

use serde::Deserialize;

/// Safety settings, loaded from the `[safety]` table of a device profile. Every field has a
/// default, so a profile lists only what differs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SafetySettings {
    /// Duration of the linear force ramp after enabling, s (0 = no ramp). Default 0.5.
    pub ramp_time_s: f64,
    /// Extra force cap below the device maximum, N. Default: none (device maximum).
    pub max_force_n: Option<f64>,
    /// Extra torque cap below the device maximum, N·m. Default: none.
    pub max_torque_nm: Option<f64>,
    /// Wait-for-small-force threshold on the commanded force, N. Default 0.5.
    pub small_force_n: f64,
    /// Wait-for-small-force threshold on the commanded torque, N·m. Default 0.02.
    pub small_torque_nm: f64,
    /// 0-based index of the enable (deadman) button; none = always enabled. Default none.
    pub enable_button: Option<u32>,
    /// 0-based index of the clutch button (held: the hand moves without moving the held
    /// object, to re-centre in the workspace); none = no clutch. Default 1. It must differ
    /// from the enable button: holding one would hold both. Recorded trajectories keep the
    /// raw buttons, and replays read the clutch on the default button.
    pub clutch_button: Option<u32>,
    /// Translational speed above which output is cut, m/s. Default 1.5; none disables.
    pub max_velocity_m_s: Option<f64>,
    /// Angular speed above which output is cut, rad/s. Default 20; none disables.
    pub max_angular_velocity_rad_s: Option<f64>,
    /// Time constant of the leaky impulse integral, s. Default 0.1.
    pub impulse_window_s: f64,
    /// Largest leaky impulse integral of |F|, N·s. A sustained force F settles at
    /// F·window, so this also caps sustained force at max_impulse/window. Default none
    /// (off): set it per device.
    pub max_impulse_n_s: Option<f64>,
    /// Longest allowed time between two writes while output is enabled, s. Default 0.005.
    pub stall_timeout_s: f64,
    /// Time between reconnect attempts after a disconnect, s (wall clock). Default 0.5.
    pub reconnect_interval_s: f64,
}

impl Default for SafetySettings {
    fn default() -> Self {
        Self {
            ramp_time_s: 0.5,
            max_force_n: None,
            max_torque_nm: None,
            small_force_n: 0.5,
            small_torque_nm: 0.02,
            enable_button: None,
            clutch_button: Some(DEFAULT_CLUTCH_BUTTON),
            max_velocity_m_s: Some(1.5),
            max_angular_velocity_rad_s: Some(20.0),
            impulse_window_s: 0.1,
            max_impulse_n_s: None,
            stall_timeout_s: 0.005,
            reconnect_interval_s: 0.5,
        }
    }
}

impl SafetySettings {
    /// Checks that every number is finite and in range; returns what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        fn nonneg(name: &str, v: f64) -> Result<(), String> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite number >= 0, got {v}"))
            }
        }
        fn pos(name: &str, v: f64) -> Result<(), String> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite number > 0, got {v}"))
            }
        }
        nonneg("ramp_time_s", self.ramp_time_s)?;
        nonneg("small_force_n", self.small_force_n)?;
        nonneg("small_torque_nm", self.small_torque_nm)?;
        pos("impulse_window_s", self.impulse_window_s)?;
        pos("stall_timeout_s", self.stall_timeout_s)?;
        nonneg("reconnect_interval_s", self.reconnect_interval_s)?;
        for (name, v) in [
            ("max_force_n", self.max_force_n),
            ("max_torque_nm", self.max_torque_nm),
            ("max_impulse_n_s", self.max_impulse_n_s),
        ] {
            if let Some(v) = v {
                nonneg(name, v)?;
            }
        }
        for (name, v) in [
            ("max_velocity_m_s", self.max_velocity_m_s),
            (
                "max_angular_velocity_rad_s",
                self.max_angular_velocity_rad_s,
            ),
        ] {
            if let Some(v) = v {
                pos(name, v)?;
            }
        }
        for (name, b) in [
            ("enable_button", self.enable_button),
            ("clutch_button", self.clutch_button),
        ] {
            if let Some(b) = b {
                if b >= 32 {
                    return Err(format!("{name} must be 0..=31, got {b}"));
                }
            }
        }
        if let (Some(e), Some(c)) = (self.enable_button, self.clutch_button) {
            if e == c {
                return Err(format!(
                    "button {e} is the clutch (clutch_button, workspace indexing): holding it as the enable button would also hold the clutch, and the held object would stop following the hand; choose another enable button, another clutch_button, or none"
                ));
            }
        }
        Ok(())
    }

    /// The clutch button as a mask of [`crate::DeviceSample::buttons`] (0: no clutch).
    pub fn clutch_mask(&self) -> u32 {
        clutch_mask(self.clutch_button)
    }
}

/// The clutch button of [`SafetySettings::default`].
pub const DEFAULT_CLUTCH_BUTTON: u32 = 1;

/// A button index as a mask of [`crate::DeviceSample::buttons`] (0 for none or an index
/// past 31).
pub fn clutch_mask(button: Option<u32>) -> u32 {
    button.and_then(|b| 1u32.checked_shl(b)).unwrap_or(0)
}
