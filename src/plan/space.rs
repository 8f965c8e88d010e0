//! The planner's state space, SE(3) with a box of positions: its metric and its samplers.
//!
//! **Metric.** `d(a, b) = |p_b - p_a| + R theta(a, b)`, `theta` the rotation angle between
//! the orientations (the shorter arc, as slerp takes) and `R` the robot's radius about its
//! origin. It bounds how far any robot point moves along the motion from `a` to `b`
//! ([`crate::proximity::rigid::motion_bound`]), so lengths are in the one unit that clearances are
//! in, and translation and rotation weigh what they move. The planner's trees use the
//! same metric with `R` scaled by [`crate::plan::PlanOptions::rotation_weight`] (a
//! quarter by default) to pick neighbours and size steps.
//!
//! **Uniform samples**: positions uniform in the box, orientations uniform on SO(3)
//! (Shoemake 1992, "Uniform random rotations", Graphics Gems III).
//!
//! **Gaussian samples** around a state: the position displaced by an isotropic normal of
//! standard deviation `sigma`, the orientation turned about a uniform axis by an angle of
//! standard deviation `sigma / R` (so that the robot's points move by about `sigma` in
//! both parts).

use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::check::{Robot, World};
use crate::proximity::rigid::State;

/// SE(3) with positions in a box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Space {
    /// The box's lower corner.
    pub min: Vector3<f64>,
    /// The box's upper corner.
    pub max: Vector3<f64>,
    /// The robot's radius about its origin (the metric's rotation weight).
    pub radius: f64,
}

impl Space {
    /// The default box of a problem without one: the world's bounding box with the
    /// start and goal positions, grown by the robot's radius.
    pub fn around(world: &World, robot: &Robot, start: &State, goal: &State) -> Space {
        let b = world.bvh.aabb();
        let mut min = b.min.coords;
        let mut max = b.max.coords;
        for s in [start, goal] {
            min = min.inf(&s.position);
            max = max.sup(&s.position);
        }
        let r = Vector3::repeat(robot.radius);
        Space {
            min: min - r,
            max: max + r,
            radius: robot.radius,
        }
    }

    /// The distance of the metric (see the module docs).
    pub fn distance(&self, a: &State, b: &State) -> f64 {
        (b.position - a.position).norm() + self.radius * a.orientation.angle_to(&b.orientation)
    }

    /// Whether `s`'s position lies in the box (its bounds included).
    pub fn contains(&self, s: &State) -> bool {
        (0..3).all(|k| s.position[k] >= self.min[k] && s.position[k] <= self.max[k])
    }

    /// The greatest distance between two states (the box's diagonal plus a half turn).
    pub fn extent(&self) -> f64 {
        (self.max - self.min).norm() + self.radius * std::f64::consts::PI
    }

    /// A uniform sample.
    pub fn uniform<R: Rng>(&self, rng: &mut R) -> State {
        let p = Vector3::from_fn(|k, _| rng.random_range(self.min[k]..=self.max[k]));
        State::new(p, uniform_rotation(rng))
    }

    /// A Gaussian sample about `around` (see the module docs), its position kept in the
    /// box.
    pub fn gaussian<R: Rng>(&self, around: &State, sigma: f64, rng: &mut R) -> State {
        let normal = |rng: &mut R| -> f64 { StandardNormal.sample(rng) };
        let dp = Vector3::new(normal(rng), normal(rng), normal(rng)) * sigma;
        let p = (around.position + dp).sup(&self.min).inf(&self.max);
        let axis = Vector3::new(normal(rng), normal(rng), normal(rng));
        let angle = normal(rng) * sigma / self.radius.max(f64::MIN_POSITIVE);
        let turn = axis
            .try_normalize(1e-12)
            .map(|a| UnitQuaternion::from_scaled_axis(a * angle))
            .unwrap_or_else(UnitQuaternion::identity);
        State::new(p, turn * around.orientation)
    }
}

/// A uniform rotation (Shoemake's subgroup algorithm).
pub fn uniform_rotation<R: Rng>(rng: &mut R) -> UnitQuaternion<f64> {
    let (u1, u2, u3): (f64, f64, f64) = (rng.random(), rng.random(), rng.random());
    let tau = std::f64::consts::TAU;
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    UnitQuaternion::from_quaternion(Quaternion::new(
        b * (tau * u3).cos(),
        a * (tau * u2).sin(),
        a * (tau * u2).cos(),
        b * (tau * u3).sin(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn space() -> Space {
        Space {
            min: Vector3::new(-1.0, -2.0, -3.0),
            max: Vector3::new(1.0, 2.0, 3.0),
            radius: 0.5,
        }
    }

    /// The metric bounds the motion of every robot point: checked on random pairs against
    /// the largest displacement of points on the robot's sphere along the slerp.
    #[test]
    fn the_metric_bounds_the_motion_of_robot_points() {
        let s = space();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..200 {
            let (a, b) = (s.uniform(&mut rng), s.uniform(&mut rng));
            let d = s.distance(&a, &b);
            let bound = crate::proximity::rigid::motion_bound(&a, &b, s.radius);
            assert!((d - bound).abs() <= 1e-12 * d.max(1.0));
            let point = Vector3::new(0.3, -0.2, 0.36).normalize() * s.radius;
            let (pa, pb) = (a.isometry() * point, b.isometry() * point);
            // A chord is never longer than the motion bound.
            assert!((pb - pa).norm() <= d + 1e-12);
        }
    }

    /// Uniform rotations: unit quaternions uniform on S^3 have `w` of density
    /// proportional to `sqrt(1 - w^2)`, so the mean of `|w|` is `4 / (3 pi)`; its standard
    /// deviation is 0.264, so over 20000 samples 0.01 is a 5-sigma bound.
    #[test]
    fn rotations_are_uniform() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 20000;
        let mean: f64 = (0..n)
            .map(|_| uniform_rotation(&mut rng).w.abs())
            .sum::<f64>()
            / n as f64;
        let expected = 4.0 / (3.0 * std::f64::consts::PI);
        assert!((mean - expected).abs() < 0.01, "{mean} vs {expected}");
    }

    #[test]
    fn gaussian_samples_stay_in_the_box_and_near_their_centre() {
        let s = space();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let c = State::new(Vector3::new(0.9, 0.0, 0.0), UnitQuaternion::identity());
        let sigma = 0.1;
        let mut mean_d = 0.0;
        for _ in 0..2000 {
            let g = s.gaussian(&c, sigma, &mut rng);
            assert!(s.contains(&g));
            mean_d += s.distance(&c, &g) / 2000.0;
        }
        // Each part moves the robot's points by about sigma sqrt(3) (a chi with three
        // degrees of freedom has mean 1.60 sigma); clamping at the box only shortens.
        assert!(mean_d > 1.0 * sigma && mean_d < 4.0 * sigma, "{mean_d}");
    }
}
