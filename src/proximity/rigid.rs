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
        let position = self.position.lerp(&other.position, t);
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
