//! The tunable parameters of a haptic session, defined once: each [`Param`] has its
//! scene-file key, unit, documentation and valid range here, and its default in the
//! `Default` impl of the struct it lives in ([`ContactParams`], [`CouplingParams`],
//! [`ReducedParams`](crate::dynamics::ReducedParams)). The scene file ([`crate::scene::format`]), the command line
//! (`--set KEY=VALUE`) and the application's sliders all validate through
//! [`Param::validate`], and the haptic thread applies live edits with
//! [`crate::haptic::Command::Set`], so no two places can disagree on a range.

use std::fmt;

use crate::contact::params::ContactParams;
use crate::coupling::CouplingParams;

/// A tunable parameter of the contact model, the virtual coupling or the reduced
/// dynamics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Param {
    /// Penalty stiffness `k_C` of the point contacts (thesis 3.5).
    ContactStiffness,
    /// Warm node budget `V_W` of the traversal (thesis 3.10).
    WarmBudget,
    /// Cold budget as a fraction of the warm one.
    ColdFraction,
    /// `L`: forces are scaled by `L / l` when `l > L` points touch.
    MaxUnscaledContacts,
    /// How far the held object may go into what it touches (continuous contact); 0 is
    /// the thesis's discrete contact.
    MaxPenetration,
    /// Node budget of the continuous sweep's candidate search.
    SweepBudget,
    /// Translational coupling stiffness `k_VC`.
    CouplingStiffness,
    /// Rotational coupling stiffness.
    TorqueStiffness,
    /// Saturation plateau of the coupling force (4.40); 0 for a linear spring.
    SaturationForce,
    /// Static damping `alpha` (4.8).
    StaticDamping,
    /// Largest speed of the simulation object per cycle (4.6).
    MaxVelocity,
    /// Largest angular speed of the simulation object per cycle (4.6).
    MaxAngularVelocity,
    /// Singular values below this fraction of the largest are degenerate (4.10).
    DegenerateRatio,
    /// The device's force limit: the rendered force is clamped to it.
    DeviceMaxForce,
    /// The device's torque limit: the rendered torque is clamped to it.
    DeviceMaxTorque,
    /// Young's modulus scale of every reduced object (1 = as baked).
    MaterialScale,
    /// Modes in use by every reduced object (the rest are held at zero).
    ModesUsed,
    /// Activation in [0, 1] of every active (muscle) object; passive materials ignore it.
    Activation,
}

/// A closed or half-open interval of valid values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// Smallest value.
    pub min: f64,
    /// Whether `min` itself is valid.
    pub min_inclusive: bool,
    /// Largest value.
    pub max: f64,
    /// Whether `max` itself is valid.
    pub max_inclusive: bool,
}

impl Range {
    const fn closed(min: f64, max: f64) -> Self {
        Range {
            min,
            min_inclusive: true,
            max,
            max_inclusive: true,
        }
    }

    const fn positive(max: f64) -> Self {
        Range {
            min: 0.0,
            min_inclusive: false,
            max,
            max_inclusive: true,
        }
    }

    /// Whether `v` is finite and inside.
    pub fn contains(&self, v: f64) -> bool {
        v.is_finite()
            && (v > self.min || (self.min_inclusive && v == self.min))
            && (v < self.max || (self.max_inclusive && v == self.max))
    }

    /// The nearest value inside (for slider ends); NaN maps to `min`.
    pub fn clamp(&self, v: f64) -> f64 {
        if v.is_nan() {
            return self.min;
        }
        v.clamp(self.min, self.max)
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let open = if self.min_inclusive { '[' } else { '(' };
        let close = if self.max_inclusive { ']' } else { ')' };
        write!(f, "{open}{}, {}{close}", self.min, self.max)
    }
}

/// What is known about a parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// The scene-file key (`section.name`) and the `--set` key.
    pub key: &'static str,
    /// A short label for the user interface.
    pub label: &'static str,
    /// SI unit, or "" for a pure number.
    pub unit: &'static str,
    /// Valid values.
    pub range: Range,
    /// Whether only whole numbers are valid.
    pub integer: bool,
    /// Whether a slider should be logarithmic (the range spans decades).
    pub logarithmic: bool,
    /// The interactive range of a slider (inside `range`): the values that make sense
    /// for a hand-held device at the scenes' scales.
    pub slider: (f64, f64),
}

/// A value outside a parameter's range, or an unknown key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// The value is not finite, not whole where it must be, or outside the range.
    #[error("{key} = {value}: expected {expected}")]
    OutOfRange {
        /// The parameter's key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// What is valid.
        expected: String,
    },
    /// No parameter has this key.
    #[error("unknown parameter '{0}'; expected one of: {keys}", keys = Param::keys())]
    Unknown(String),
    /// A `KEY=VALUE` assignment without `=` or with a value that is not a number.
    #[error("'{0}': expected KEY=VALUE with a number, e.g. coupling.static_damping=0.3")]
    Syntax(String),
}

/// Every parameter with its specification, in the order of [`Param::ALL`] (the enum's
/// order, so that [`Param::spec`] indexes it; a test holds the three orders equal).
const SPECS: [(Param, ParamSpec); 18] = [
    (
        Param::ContactStiffness,
        ParamSpec {
            key: "contact.stiffness",
            label: "contact stiffness",
            unit: "N/m",
            range: Range::positive(1e9),
            integer: false,
            logarithmic: true,
            slider: (1.0, 1e6),
        },
    ),
    (
        Param::WarmBudget,
        ParamSpec {
            key: "contact.warm_budget",
            label: "node budget",
            unit: "nodes",
            range: Range::closed(1.0, 1e9),
            integer: true,
            logarithmic: true,
            slider: (16.0, 20000.0),
        },
    ),
    (
        Param::ColdFraction,
        ParamSpec {
            key: "contact.cold_fraction",
            label: "cold budget fraction",
            unit: "",
            range: Range::positive(1.0),
            integer: false,
            logarithmic: false,
            slider: (0.05, 1.0),
        },
    ),
    (
        Param::MaxUnscaledContacts,
        ParamSpec {
            key: "contact.max_unscaled_contacts",
            label: "unscaled contacts L",
            unit: "points",
            range: Range::closed(1.0, 1e9),
            integer: true,
            logarithmic: true,
            slider: (1.0, 1000.0),
        },
    ),
    (
        Param::MaxPenetration,
        ParamSpec {
            key: "contact.max_penetration",
            label: "max penetration (0: discrete)",
            unit: "m",
            range: Range::closed(0.0, 1e3),
            integer: false,
            logarithmic: false,
            slider: (0.0, 0.01),
        },
    ),
    (
        Param::SweepBudget,
        ParamSpec {
            key: "contact.sweep_budget",
            label: "sweep node budget",
            unit: "nodes",
            range: Range::closed(1.0, 1e9),
            integer: true,
            logarithmic: true,
            slider: (16.0, 20000.0),
        },
    ),
    (
        Param::CouplingStiffness,
        ParamSpec {
            key: "coupling.stiffness",
            label: "coupling stiffness",
            unit: "N/m",
            range: Range::positive(1e9),
            integer: false,
            logarithmic: true,
            slider: (0.1, 1e4),
        },
    ),
    (
        Param::TorqueStiffness,
        ParamSpec {
            key: "coupling.torque_stiffness",
            label: "coupling torque stiffness",
            unit: "N m",
            range: Range::positive(1e6),
            integer: false,
            logarithmic: true,
            slider: (1e-3, 100.0),
        },
    ),
    (
        Param::SaturationForce,
        ParamSpec {
            key: "coupling.saturation_force",
            label: "saturation force (0: none)",
            unit: "N",
            range: Range::closed(0.0, 1e6),
            integer: false,
            logarithmic: false,
            slider: (0.01, 100.0),
        },
    ),
    (
        Param::StaticDamping,
        ParamSpec {
            key: "coupling.static_damping",
            label: "static damping α",
            unit: "",
            range: Range {
                min: 0.0,
                min_inclusive: true,
                max: 0.95,
                max_inclusive: true,
            },
            integer: false,
            logarithmic: false,
            slider: (0.0, 0.95),
        },
    ),
    (
        Param::MaxVelocity,
        ParamSpec {
            key: "coupling.max_velocity",
            label: "velocity limit",
            unit: "m/s",
            range: Range::positive(1e3),
            integer: false,
            logarithmic: true,
            slider: (0.01, 100.0),
        },
    ),
    (
        Param::MaxAngularVelocity,
        ParamSpec {
            key: "coupling.max_angular_velocity",
            label: "angular velocity limit",
            unit: "rad/s",
            range: Range::positive(1e4),
            integer: false,
            logarithmic: true,
            slider: (0.1, 100.0),
        },
    ),
    (
        Param::DegenerateRatio,
        ParamSpec {
            key: "coupling.degenerate_ratio",
            label: "degenerate singular-value ratio",
            unit: "",
            range: Range::positive(1.0),
            integer: false,
            logarithmic: true,
            slider: (1e-6, 0.1),
        },
    ),
    (
        Param::DeviceMaxForce,
        ParamSpec {
            key: "coupling.device_max_force",
            label: "device force limit",
            unit: "N",
            range: Range::positive(1e4),
            integer: false,
            logarithmic: true,
            slider: (0.1, 100.0),
        },
    ),
    (
        Param::DeviceMaxTorque,
        ParamSpec {
            key: "coupling.device_max_torque",
            label: "device torque limit",
            unit: "N m",
            range: Range::positive(1e3),
            integer: false,
            logarithmic: true,
            slider: (0.01, 10.0),
        },
    ),
    (
        Param::MaterialScale,
        ParamSpec {
            key: "dynamics.material_scale",
            label: "material scale",
            unit: "",
            range: Range::closed(1e-3, 1e3),
            integer: false,
            logarithmic: true,
            slider: (0.05, 20.0),
        },
    ),
    (
        Param::ModesUsed,
        ParamSpec {
            key: "dynamics.modes_used",
            label: "modes used",
            unit: "modes",
            range: Range::closed(1.0, 1e6),
            integer: true,
            logarithmic: false,
            slider: (1.0, 100.0),
        },
    ),
    (
        Param::Activation,
        ParamSpec {
            key: "dynamics.activation",
            label: "muscle activation",
            unit: "",
            range: Range::closed(0.0, 1.0),
            integer: false,
            logarithmic: false,
            slider: (0.0, 1.0),
        },
    ),
];

impl Param {
    /// Every parameter, in display order.
    pub const ALL: [Param; 18] = [
        Param::ContactStiffness,
        Param::WarmBudget,
        Param::ColdFraction,
        Param::MaxUnscaledContacts,
        Param::MaxPenetration,
        Param::SweepBudget,
        Param::CouplingStiffness,
        Param::TorqueStiffness,
        Param::SaturationForce,
        Param::StaticDamping,
        Param::MaxVelocity,
        Param::MaxAngularVelocity,
        Param::DegenerateRatio,
        Param::DeviceMaxForce,
        Param::DeviceMaxTorque,
        Param::MaterialScale,
        Param::ModesUsed,
        Param::Activation,
    ];

    /// Key, label, unit and range.
    pub const fn spec(self) -> ParamSpec {
        SPECS[self as usize].1
    }

    /// The parameter with this key.
    pub fn from_key(key: &str) -> Result<Param, ParamError> {
        Param::ALL
            .into_iter()
            .find(|p| p.spec().key == key)
            .ok_or_else(|| ParamError::Unknown(key.to_string()))
    }

    /// Every key, comma-separated (for messages and `--help`).
    pub fn keys() -> String {
        Param::ALL.map(|p| p.spec().key).join(", ")
    }

    /// `v` if it is valid for this parameter, else an error naming the key and the range.
    pub fn validate(self, v: f64) -> Result<f64, ParamError> {
        let s = self.spec();
        if s.range.contains(v) && (!s.integer || v.fract() == 0.0) {
            Ok(v)
        } else {
            Err(ParamError::OutOfRange {
                key: s.key,
                value: v.to_string(),
                expected: format!(
                    "{} in {}{}",
                    if s.integer {
                        "a whole number"
                    } else {
                        "a finite number"
                    },
                    s.range,
                    if s.unit.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", s.unit)
                    }
                ),
            })
        }
    }

    /// Parses `KEY=VALUE` (as `--set` takes it) into a validated parameter edit.
    pub fn parse_assignment(s: &str) -> Result<(Param, f64), ParamError> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| ParamError::Syntax(s.to_string()))?;
        let p = Param::from_key(key.trim())?;
        let v: f64 = value
            .trim()
            .parse()
            .map_err(|_| ParamError::Syntax(s.to_string()))?;
        Ok((p, p.validate(v)?))
    }

    /// The current value of this parameter in a session's settings.
    pub fn get(self, s: &Settings) -> f64 {
        let (c, k) = (&s.contact, &s.coupling);
        match self {
            Param::ContactStiffness => c.stiffness,
            Param::WarmBudget => c.warm_budget as f64,
            Param::ColdFraction => c.cold_fraction,
            Param::MaxUnscaledContacts => c.max_unscaled_contacts as f64,
            Param::MaxPenetration => c.max_penetration,
            Param::SweepBudget => c.sweep_budget as f64,
            Param::CouplingStiffness => k.stiffness,
            Param::TorqueStiffness => k.torque_stiffness,
            Param::SaturationForce => k.saturation_force.unwrap_or(0.0),
            Param::StaticDamping => k.static_damping,
            Param::MaxVelocity => k.max_velocity,
            Param::MaxAngularVelocity => k.max_angular_velocity,
            Param::DegenerateRatio => k.degenerate_ratio,
            Param::DeviceMaxForce => k.device_max_force,
            Param::DeviceMaxTorque => k.device_max_torque,
            Param::MaterialScale => s.material_scale,
            Param::ModesUsed => s.modes_used as f64,
            Param::Activation => s.activation,
        }
    }

    /// Sets this parameter, clamped into its range (callers validate first where the
    /// value comes from a user; the clamp keeps the haptic thread safe regardless).
    /// Allocation-free, for the haptic thread.
    pub fn set(self, s: &mut Settings, v: f64) {
        let v = self.spec().range.clamp(v);
        let (c, k) = (&mut s.contact, &mut s.coupling);
        let count = v.round() as usize;
        match self {
            Param::ContactStiffness => c.stiffness = v,
            Param::WarmBudget => c.warm_budget = count,
            Param::ColdFraction => c.cold_fraction = v,
            Param::MaxUnscaledContacts => c.max_unscaled_contacts = count,
            Param::MaxPenetration => c.max_penetration = v,
            Param::SweepBudget => c.sweep_budget = count,
            Param::CouplingStiffness => k.stiffness = v,
            Param::TorqueStiffness => k.torque_stiffness = v,
            Param::SaturationForce => k.saturation_force = (v > 0.0).then_some(v),
            Param::StaticDamping => k.static_damping = v,
            Param::MaxVelocity => k.max_velocity = v,
            Param::MaxAngularVelocity => k.max_angular_velocity = v,
            Param::DegenerateRatio => k.degenerate_ratio = v,
            Param::DeviceMaxForce => k.device_max_force = v,
            Param::DeviceMaxTorque => k.device_max_torque = v,
            Param::MaterialScale => s.material_scale = v,
            Param::ModesUsed => s.modes_used = count,
            Param::Activation => s.activation = v,
        }
    }

    /// Whether this parameter belongs to the reduced dynamics (applied to every reduced
    /// object) rather than to the contact model or the coupling.
    pub fn is_dynamics(self) -> bool {
        matches!(
            self,
            Param::MaterialScale | Param::ModesUsed | Param::Activation
        )
    }

    /// Whether this parameter belongs to the contact model.
    pub fn is_contact(self) -> bool {
        matches!(
            self,
            Param::ContactStiffness
                | Param::WarmBudget
                | Param::ColdFraction
                | Param::MaxUnscaledContacts
                | Param::MaxPenetration
        )
    }
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.spec().key)
    }
}

/// The tunable settings of a session, by group: what [`Param::get`] reads and
/// [`Param::set`] writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Contact model and traversal.
    pub contact: ContactParams,
    /// Virtual coupling.
    pub coupling: CouplingParams,
    /// Young's modulus scale of every reduced object (1 = as baked).
    pub material_scale: f64,
    /// Modes in use by every reduced object (`usize::MAX`: all).
    pub modes_used: usize,
    /// Activation of every active (muscle) object, in [0, 1].
    pub activation: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            contact: ContactParams::default(),
            coupling: CouplingParams::default(),
            material_scale: 1.0,
            modes_used: usize::MAX,
            activation: 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Settings {
        Settings::default()
    }

    #[test]
    fn every_default_is_valid_and_keys_are_unique() {
        for (i, p) in Param::ALL.into_iter().enumerate() {
            assert_eq!((p as usize, SPECS[i].0), (i, p), "the table's row {i}");
        }
        let s = defaults();
        for p in Param::ALL {
            let v = p.get(&s);
            if p == Param::ModesUsed {
                // "all modes" is usize::MAX by default, outside any slider.
                continue;
            }
            assert!(
                p.validate(v).is_ok(),
                "{p} default {v} is outside {}",
                p.spec().range
            );
            assert_eq!(Param::from_key(p.spec().key), Ok(p));
        }
        let mut keys: Vec<_> = Param::ALL.iter().map(|p| p.spec().key).collect();
        for p in Param::ALL {
            let (lo, hi) = p.spec().slider;
            assert!(
                lo < hi && p.validate(lo).is_ok() && p.validate(hi).is_ok(),
                "{p}"
            );
        }
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), Param::ALL.len());
    }

    #[test]
    fn set_then_get_round_trips_and_clamps() {
        let mut s = defaults();
        for p in Param::ALL {
            let r = p.spec().range;
            let inside = if r.min_inclusive { r.min } else { r.max };
            p.set(&mut s, inside);
            assert_eq!(p.get(&s), inside, "{p}");
        }
        Param::StaticDamping.set(&mut s, 7.0);
        assert_eq!(s.coupling.static_damping, 0.95);
        Param::StaticDamping.set(&mut s, f64::NAN);
        assert_eq!(s.coupling.static_damping, 0.0);
        Param::SaturationForce.set(&mut s, 0.0);
        assert_eq!(s.coupling.saturation_force, None);
    }

    #[test]
    fn validation_names_the_key_and_range() {
        let e = Param::StaticDamping.validate(1.0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "coupling.static_damping = 1: expected a finite number in [0, 0.95]"
        );
        assert!(Param::ContactStiffness.validate(0.0).is_err());
        assert!(Param::ContactStiffness.validate(f64::INFINITY).is_err());
        assert!(Param::WarmBudget.validate(10.5).is_err());
        assert_eq!(
            Param::parse_assignment("coupling.stiffness = 250").unwrap(),
            (Param::CouplingStiffness, 250.0)
        );
        assert!(matches!(
            Param::parse_assignment("coupling.stifness=1"),
            Err(ParamError::Unknown(_))
        ));
        assert!(matches!(
            Param::parse_assignment("coupling.stiffness"),
            Err(ParamError::Syntax(_))
        ));
    }
}
