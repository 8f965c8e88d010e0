//! Particle repulsion (thesis 3.8.1; docs/equations.md "Particle repulsion (3.8.1)").
//!
//! Two particles at distance d < R push each other apart with the force magnitude (the
//! thesis's "gradient" of the radial potential)
//!
//! ```text
//!     f(d) = 2 (d/R)^3 - 3 (d/R)^2 + 1      (d < R),      f(d) = 0 (d >= R),
//! ```
//!
//! which falls smoothly from 1 at d = 0 to 0 with zero slope at d = R. One iteration
//! (Jacobi style: every move is computed from the same snapshot, then all are applied)
//! sums
//!
//! ```text
//!     F_i = sum_j f(|p_i - p_j|) (p_i - p_j) / |p_i - p_j|
//! ```
//!
//! over every particle j of levels 0..=current (frozen ones included) found through the
//! uniform grid ([`PointGrid`], cell size R), removes the component along the normal of
//! the level set, moves the particle by eta R F_i (capped at half the target spacing)
//! and projects it back onto the level set ([`LevelSet::project`]). The Jacobi update
//! makes the result independent of the thread count.

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::{LevelSet, PointGrid};

/// The repulsion force magnitude 2 t^3 - 3 t^2 + 1 at t = d / R (thesis 3.8.1), zero for
/// t >= 1 and 1 for t <= 0.
pub fn repulsion_kernel(t: f64) -> f64 {
    if t >= 1.0 {
        0.0
    } else if t <= 0.0 {
        1.0
    } else {
        (2.0 * t - 3.0) * t * t + 1.0
    }
}

/// The net repulsion force on the particle at `p` (caller index `me`) from every particle
/// of `grid` within `radius`: sum_j f(d_j / R) (p - p_j) / d_j. Coincident particles
/// (d = 0) have no direction and are skipped.
pub fn repulsion_force(grid: &PointGrid, p: &Point3<f64>, me: usize, radius: f64) -> Vector3<f64> {
    let mut force = Vector3::zeros();
    grid.for_each_within(p, radius, |g, d2| {
        if d2 > 0.0 && grid.index(g) != me {
            let d = d2.sqrt();
            force += (p - grid.point(g)) * (repulsion_kernel(d / radius) / d);
        }
    });
    force
}

/// The force with its component along `normal` removed, then scaled by eta R and capped
/// in length at `cap`.
fn tangent_step(force: &Vector3<f64>, normal: &Vector3<f64>, eta_r: f64, cap: f64) -> Vector3<f64> {
    let tangent = force - normal * force.dot(normal);
    let step = tangent * eta_r;
    let len = step.norm();
    if len > cap && len > 0.0 {
        step * (cap / len)
    } else {
        step
    }
}

/// One repulsion iteration of the particles `begin..` (the earlier ones stay frozen but
/// still push): each moves by its capped tangential step `eta * radius * F` and is
/// projected back onto `set`; `outward` receives the new outward normals. Returns the
/// mean move of the moving particles divided by `radius`.
pub(super) fn relax(
    points: &mut [Point3<f64>],
    outward: &mut [Vector3<f64>],
    begin: usize,
    radius: f64,
    eta: f64,
    cap: f64,
    set: &LevelSet,
) -> f64 {
    let grid = PointGrid::new(points, radius);
    let (current, normals) = (&*points, &*outward);
    let moved: Vec<(Point3<f64>, Vector3<f64>, f64)> = (begin..current.len())
        .into_par_iter()
        .map(|i| {
            let p = current[i];
            let force = repulsion_force(&grid, &p, i, radius);
            let step = tangent_step(&force, &normals[i], eta * radius, cap);
            let (q, n) = set.project(&(p + step));
            (q, n, (q - p).norm())
        })
        .collect();
    let mut sum = 0.0;
    for (k, (q, n, d)) in moved.into_iter().enumerate() {
        points[begin + k] = q;
        outward[begin + k] = n;
        sum += d;
    }
    sum / (points.len() - begin).max(1) as f64 / radius
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_is_one_at_zero_and_flat_zero_at_r() {
        assert_eq!(repulsion_kernel(0.0), 1.0);
        assert_eq!(repulsion_kernel(1.0), 0.0);
        assert_eq!(repulsion_kernel(2.0), 0.0);
        assert!((repulsion_kernel(0.5) - 0.5).abs() < 1e-15);
        // Zero slope at both ends (central differences of a cubic are exact up to
        // rounding, and here the derivative 6t^2 - 6t vanishes).
        let e = 1e-6;
        assert!((repulsion_kernel(e) - 1.0).abs() < 1e-11);
        assert!(repulsion_kernel(1.0 - e) < 1e-11);
        // Decreasing on (0, 1).
        let mut prev = 1.0;
        for k in 1..100 {
            let v = repulsion_kernel(k as f64 / 100.0);
            assert!(v < prev);
            prev = v;
        }
    }

    #[test]
    fn tangent_step_drops_the_normal_part_and_caps() {
        let n = Vector3::z();
        let s = tangent_step(&Vector3::new(1.0, 0.0, 5.0), &n, 0.1, 1.0);
        assert!((s - Vector3::new(0.1, 0.0, 0.0)).norm() < 1e-15);
        let s = tangent_step(&Vector3::new(30.0, 40.0, 1.0), &n, 1.0, 2.0);
        assert!((s.norm() - 2.0).abs() < 1e-12 && s.z == 0.0);
    }

    #[test]
    fn repulsion_force_of_a_symmetric_ring_vanishes_and_a_pair_pushes_apart() {
        let mut pts = vec![Point3::origin()];
        for k in 0..6 {
            let a = k as f64 * std::f64::consts::PI / 3.0;
            pts.push(Point3::new(a.cos(), a.sin(), 0.0));
        }
        let grid = PointGrid::new(&pts, 2.0);
        assert!(repulsion_force(&grid, &pts[0], 0, 2.0).norm() < 1e-12);
        let pair = [Point3::origin(), Point3::new(0.5, 0.0, 0.0)];
        let grid = PointGrid::new(&pair, 1.0);
        let f = repulsion_force(&grid, &pair[0], 0, 1.0);
        assert!((f - Vector3::new(-0.5, 0.0, 0.0)).norm() < 1e-15);
    }
}
