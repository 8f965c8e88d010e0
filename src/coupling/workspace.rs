//! Workspace mapping from device coordinates to the simulation world (thesis 4.5):
//! `x_sim = T_index (x_device / alpha)`, with a clutch for workspace indexing: while the
//! clutch is held the manipulandum stays where it was in the simulation; on release,
//! `T_index` is recomputed so that the motion continues from there.

use nalgebra::{Isometry3, Translation3};

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
}
