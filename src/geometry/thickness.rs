//! Local thickness of a closed solid, and whether a distance grid resolves it.
//!
//! The local half-thickness at a surface point `c` with outward normal `n` is half the
//! chord of the inward ray `c - s n` through the solid (the shape diameter along the
//! normal, Shapira, Shamir and Cohen-Or 2008, with one ray instead of a cone): half the
//! wall for a slab, the radius for a rod, however close `c` is to an edge. Its least value
//! over the surface bounds how deep a point can go into the solid before it could come
//! out of the other side, so the continuous contact ([`crate::contact::continuous`]) keeps
//! its penetration limit below it; and a grid whose cells are wider than it cannot
//! represent the part (a 2 mm rod in 1.6 mm cells reads at most a fraction of its depth),
//! so the held object is then queried exactly instead.
//!
//! The chord is found by sphere tracing the exact signed distance (a step of `|d|` never
//! crosses the surface), with a least step of `cap / 512`, then bisection of the exit.

use nalgebra::{Point3, Vector3};

use super::MeshDistance;
use crate::mesh::SurfaceMesh;

/// The least step of the trace, as a fraction of the cap: chords shorter than this read
/// as this.
const MIN_STEP: f64 = 1.0 / 512.0;

/// The least local half-thickness of the solid bounded by `mesh`, measured up to `cap`
/// (a part thicker than `2 cap` counts as `cap`), over at most `max_samples` triangle
/// centroids spread evenly over the mesh.
pub fn min_half_thickness(
    mesh: &SurfaceMesh,
    distance: &MeshDistance,
    cap: f64,
    max_samples: usize,
) -> f64 {
    let n = mesh.triangles.len();
    if n == 0 || cap.is_nan() || cap <= 0.0 {
        return cap;
    }
    let stride = n.div_ceil(max_samples.max(1));
    let mut least = cap;
    for t in (0..n).step_by(stride) {
        let [a, b, c] = mesh.triangle(t);
        let normal = (b - a).cross(&(c - a));
        let len = normal.norm();
        if len.is_nan() || len <= 0.0 {
            continue;
        }
        let centroid = Point3::from((a.coords + b.coords + c.coords) / 3.0);
        least = least.min(0.5 * inward_chord(distance, &centroid, &(normal / len), 2.0 * cap));
    }
    least.min(cap)
}

/// The length of the inward ray `c - s n` inside the solid, up to `max`.
fn inward_chord(distance: &MeshDistance, c: &Point3<f64>, n: &Vector3<f64>, max: f64) -> f64 {
    let min_step = 0.5 * max * MIN_STEP;
    let at = |s: f64| distance.signed_distance(&(c - n * s));
    let mut inside = 0.0;
    let mut s = min_step;
    loop {
        if s >= max {
            return max;
        }
        let d = at(s);
        if !d.is_finite() {
            return max;
        }
        if d > 0.0 {
            break;
        }
        inside = s;
        s += (-d).max(min_step);
    }
    // The exit lies in (inside, s]: bisect it.
    let mut outside = s;
    for _ in 0..30 {
        let mid = 0.5 * (inside + outside);
        if at(mid) > 0.0 {
            outside = mid;
        } else {
            inside = mid;
        }
    }
    outside
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boxes: the least half-thickness is half the thinnest side (the bisection is exact to
    /// far below 1e-9 m), or the cap.
    #[test]
    fn half_thickness_of_boxes_is_half_the_thinnest_side() {
        for (size, cap, expected) in [
            (Vector3::new(0.1, 0.002, 0.002), 0.008, 0.001),
            (Vector3::new(0.02, 0.02, 0.02), 0.008, 0.008),
            (Vector3::new(0.3, 0.2, 0.01), 0.02, 0.005),
        ] {
            let mesh = crate::mesh::box_surface_mesh(size, [1, 1, 1]);
            let d = MeshDistance::new(&mesh).unwrap();
            let h = min_half_thickness(&mesh, &d, cap, 1000);
            assert!((h - expected).abs() <= 1e-9, "{size:?}: {h} vs {expected}");
        }
    }
}
