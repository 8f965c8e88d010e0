//! Rigid motions in SE(3): a state (position and orientation), the motion between two
//! states as OMPL's `SE3StateSpace` interpolates it (position lerp, quaternion slerp on
//! the shorter arc), and the bound on how far a point of a body moves along it
//! (`|dp| + |dtheta| R`, the conservative-advancement bound of Mirtich 1996 and of
//! Tang, Kim and Manocha 2009), which every continuous check and the planner use.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use crate::proximity::bvh::Motion;

/// Largest accepted |‖q‖ − 1| of a stored quaternion (OMPL prints 6 to 17 digits).
pub const QUATERNION_NORM_TOLERANCE: f64 = 1e-3;

/// An SE(3) state: position and orientation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct State {
    /// Position.
    pub position: Vector3<f64>,
    /// Orientation.
    pub orientation: UnitQuaternion<f64>,
}

impl State {
    /// A state from its parts.
    pub fn new(position: Vector3<f64>, orientation: UnitQuaternion<f64>) -> State {
        State {
            position,
            orientation,
        }
    }

    /// Position lerp and quaternion slerp on the shorter arc (OMPL's
    /// `SE3StateSpace::interpolate`), `t` in [0, 1].
    pub fn interpolate(&self, other: &State, t: f64) -> State {
        // OMPL's form, `a + (b - a) t`: a coordinate both ends share is kept exactly, so
        // states on a face of the planner's box stay on it (`a (1 - t) + b t` can round
        // an ulp past it, outside OMPL.app's bounds); the end itself at `t = 1`.
        let position = if t == 1.0 {
            other.position
        } else {
            self.position + (other.position - self.position) * t
        };
        let mut q1 = other.orientation;
        if self.orientation.coords.dot(&q1.coords) < 0.0 {
            q1 = UnitQuaternion::new_unchecked(-q1.into_inner());
        }
        let orientation = self
            .orientation
            .try_slerp(&q1, t, 1e-12)
            .unwrap_or_else(|| self.orientation.nlerp(&q1, t));
        State::new(position, orientation)
    }

    /// A state from OMPL's `x y z qx qy qz qw`, the quaternion normalized; `Err(norm)`
    /// when its norm is farther than [`QUATERNION_NORM_TOLERANCE`] from 1 (the numbers
    /// must be finite).
    pub fn from_ompl(v: &[f64; 7]) -> Result<State, f64> {
        let q = Quaternion::new(v[6], v[3], v[4], v[5]);
        let n = q.norm();
        if (n - 1.0).abs() > QUATERNION_NORM_TOLERANCE {
            return Err(n);
        }
        Ok(State::new(
            Vector3::new(v[0], v[1], v[2]),
            UnitQuaternion::new_normalize(q),
        ))
    }

    /// The state as OMPL writes it: `x y z qx qy qz qw`.
    pub fn to_ompl(&self) -> [f64; 7] {
        let (p, q) = (self.position, self.orientation.coords);
        [p.x, p.y, p.z, q.x, q.y, q.z, q.w]
    }

    /// The state as a rigid transform.
    pub fn isometry(&self) -> nalgebra::Isometry3<f64> {
        nalgebra::Isometry3::from_parts(self.position.into(), self.orientation)
    }
}

/// The motion bound of a segment: `|dp| + |dtheta| R` ([`screw_bound`]).
pub fn motion_bound(a: &State, b: &State, radius: f64) -> f64 {
    let theta = a.orientation.angle_to(&b.orientation);
    // angle_to is in [0, pi] for unit quaternions: the shorter arc slerp takes.
    screw_bound((b.position - a.position).norm(), theta, radius)
}

/// How far a point moves under a rigid motion that translates a pivot by `translation`
/// and turns by the angle `angle` about it, the point at most `lever` from the pivot
/// throughout: `translation + angle lever` (an arc is no longer than its angle times
/// its radius). Conservative advancement divides a distance by this bound.
pub fn screw_bound(translation: f64, angle: f64, lever: f64) -> f64 {
    translation + angle * lever
}

/// The rotation that slerp applies over a segment, as its axis in the world frame times
/// its angle (the shorter arc): `q(t) = exp(t turn) q_a`.
pub fn turn_of(a: &State, b: &State) -> Vector3<f64> {
    let mut rel = a.orientation.inverse() * b.orientation;
    if rel.w < 0.0 {
        rel = UnitQuaternion::new_unchecked(-rel.into_inner());
    }
    a.orientation * rel.scaled_axis()
}

/// The motion over the part `[t0, t1]` of the segment from `a` to `b` (position lerp and
/// slerp), whose rotation is `turn` ([`turn_of`]).
pub(crate) fn part_motion(a: &State, b: &State, turn: &Vector3<f64>, t0: f64, t1: f64) -> Motion {
    let h = t1 - t0;
    Motion {
        pose: a.interpolate(b, 0.5 * (t0 + t1)).isometry(),
        half_dp: (b.position - a.position) * (0.5 * h),
        half_turn: turn * (0.5 * h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coordinate both ends share is kept exactly along the motion: states on a face of
    /// a planner's box (OMPL.app's Home has its ceiling at z = 142.332290649) stay on it.
    /// `a (1 - t) + b t` leaves it by an ulp at 71 of these 1,001 fractions.
    #[test]
    fn a_shared_coordinate_is_kept_exactly() {
        let z = 142.332290649;
        let a = State::new(
            Vector3::new(-1.17, 31.2, z),
            UnitQuaternion::from_euler_angles(0.3, -0.2, 1.1),
        );
        let b = State::new(
            Vector3::new(9.05, 50.1, z),
            UnitQuaternion::from_euler_angles(-0.4, 0.5, 0.2),
        );
        for k in 0..=1000 {
            let s = a.interpolate(&b, k as f64 / 1000.0);
            assert_eq!(s.position.z, z, "t = {}", k as f64 / 1000.0);
        }
        assert_eq!(a.interpolate(&b, 0.0).position, a.position);
        assert_eq!(a.interpolate(&b, 1.0).position, b.position);
    }
}
