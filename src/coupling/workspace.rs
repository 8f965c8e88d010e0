//! Workspace mapping from device coordinates to the simulation world (thesis 4.5):
//! `x_sim = T_index (x_device / alpha)`, with a clutch for workspace indexing: while the
//! clutch is held the manipulandum stays where it was in the simulation; on release,
//! `T_index` is recomputed so that the motion continues from there.

use nalgebra::{Isometry3, Translation3};

/// Largest manipulandum coordinate (simulation units, i.e. metres) accepted from a device
/// by [`Workspace::try_manipulandum`]: the bound scene positions obey
/// (`crate::scene::format`). Beyond it a reading is garbage, not a hand position: a
/// kilometre-scale spring saturates, its squared norm heads for overflow, and f64 keeps no
/// contact-scale precision there.
pub const MAX_COORDINATE: f64 = 1e6;

/// Device-to-simulation mapping with clutch indexing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workspace {
    /// Device metres per simulation unit (`alpha`).
    pub scale: f64,
    /// The indexing transform `T_index`.
    pub index: Isometry3<f64>,
    clutched: Option<Isometry3<f64>>,
}

impl Workspace {
    /// A mapping with scale `alpha = scale` and indexing transform `index`, clutch released.
    pub fn new(scale: f64, index: Isometry3<f64>) -> Self {
        Workspace {
            scale,
            index,
            clutched: None,
        }
    }

    fn scaled(&self, device: &Isometry3<f64>) -> Isometry3<f64> {
        Isometry3::from_parts(
            Translation3::from(device.translation.vector / self.scale),
            device.rotation,
        )
    }

    /// The manipulandum pose in the simulation world for a device pose, given whether the
    /// clutch button is held.
    pub fn manipulandum(&mut self, device: &Isometry3<f64>, clutch: bool) -> Isometry3<f64> {
        match (clutch, self.clutched) {
            (true, None) => {
                let frozen = self.index * self.scaled(device);
                self.clutched = Some(frozen);
                frozen
            }
            (true, Some(frozen)) => frozen,
            (false, Some(frozen)) => {
                // Continue from the frozen pose: T_index' = frozen * scaled(device)^-1.
                self.index = frozen * self.scaled(device).inverse();
                self.clutched = None;
                frozen
            }
            (false, None) => self.index * self.scaled(device),
        }
    }

    /// [`Workspace::manipulandum`] for untrusted device input: `None`, with the mapping and
    /// clutch state left exactly as they were, if the device pose, its scaled pose or the
    /// resulting manipulandum is not finite (e.g. a coordinate of 1e308 divided by a scale
    /// below 1) or lies beyond [`MAX_COORDINATE`], or the re-indexed mapping is not finite.
    /// A bad reading thus never poisons later cycles (not even through the clutch, whose
    /// re-indexing would lose all precision on an absurd but finite reading).
    pub fn try_manipulandum(
        &mut self,
        device: &Isometry3<f64>,
        clutch: bool,
    ) -> Option<Isometry3<f64>> {
        // A rotation whose squared norm overflows (a quaternion coordinate of 1e308) is no
        // rotation at all, even if each coordinate is finite.
        let in_range = |p: &Isometry3<f64>| {
            super::pose_is_finite(p)
                && p.rotation.coords.norm_squared().is_finite()
                && p.translation.vector.amax() <= MAX_COORDINATE
        };
        if !in_range(&self.scaled(device)) {
            return None;
        }
        let saved = *self;
        let m = self.manipulandum(device, clutch);
        if in_range(&m) && super::pose_is_finite(&self.index) {
            Some(m)
        } else {
            *self = saved;
            None
        }
    }

    /// Whether the clutch is engaged.
    pub fn clutched(&self) -> bool {
        self.clutched.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{UnitQuaternion, Vector3};

    #[test]
    fn clutch_freezes_and_continues() {
        let mut w = Workspace::new(2.0, Isometry3::identity());
        let d0 = Isometry3::translation(0.2, 0.0, 0.0);
        assert!((w.manipulandum(&d0, false).translation.x - 0.1).abs() < 1e-15);
        // Clutch held: the device moves and turns back to its origin, the manipulandum stays.
        let held = w.manipulandum(&d0, true);
        let d1 = Isometry3::from_parts(
            Translation3::new(0.0, 0.0, 0.0),
            UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 0.0, 1.0)),
        );
        assert_eq!(w.manipulandum(&d1, true), held);
        // Released: no jump, and later device motion moves the manipulandum from there.
        assert!(
            (w.manipulandum(&d1, false).translation.vector - held.translation.vector).norm()
                < 1e-15
        );
        let d2 = d1 * Isometry3::translation(0.02, 0.0, 0.0);
        let m2 = w.manipulandum(&d2, false);
        assert!((m2.translation.vector - held.translation.vector).norm() - 0.01 < 1e-12);
    }

    #[test]
    fn non_finite_device_poses_leave_the_mapping_untouched() {
        let mut w = Workspace::new(0.1, Isometry3::translation(0.0, 1.0, 0.0));
        let d0 = Isometry3::translation(0.01, 0.0, 0.0);
        let m0 = w.try_manipulandum(&d0, false).unwrap();
        for bad in [f64::NAN, f64::INFINITY, 1e308, f64::MAX, 1e7] {
            let d = Isometry3::translation(bad, 0.0, 0.0);
            // Free, grabbing the clutch, and releasing it on the bad reading.
            assert_eq!(w.try_manipulandum(&d, false), None);
            assert_eq!(w.try_manipulandum(&d, true), None);
            assert!(!w.clutched());
            let held = w.try_manipulandum(&d0, true).unwrap();
            assert_eq!(w.try_manipulandum(&d, false), None);
            assert!(w.clutched());
            assert_eq!(w.try_manipulandum(&d0, false), Some(held));
        }
        let m = w.try_manipulandum(&d0, false).unwrap();
        assert!((m.translation.vector - m0.translation.vector).norm() < 1e-12);
    }
}
