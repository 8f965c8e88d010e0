//! A rigid motion over an interval, seen from its middle, and the bounds on how far a
//! moving point or triangle travels along a direction (the directional bound of C2A,
//! Tang, Kim and Manocha 2009); the result of a sweep.

use nalgebra::{Isometry3, Point3, Vector3};

use super::bounds::Plane;
use super::Bvh;
use crate::mesh::Aabb;

/// A rigid motion over an interval of a path, seen from its middle (see
/// [`Bvh::clear_over`]): at `s` in [-1, 1] (the middle at 0) the moving mesh's origin
/// is at `pose`'s translation plus `s half_dp`, and the mesh is turned by the angle
/// `s |half_turn|` about the axis `half_turn` (world frame, through the origin) from
/// its middle orientation. Position lerp and slerp are such motions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Motion {
    /// The pose at the middle of the interval.
    pub pose: Isometry3<f64>,
    /// The translation from the middle to the end.
    pub half_dp: Vector3<f64>,
    /// The rotation from the middle to the end: its axis (world frame) times its angle.
    pub half_turn: Vector3<f64>,
}

impl Motion {
    /// How far a body (a ball of `radius` about `center`, relative to the moving origin,
    /// world frame, at the middle) can move along the unit direction `n` over the
    /// interval. A point `q` moves by `s half_dp + (R(s phi) - I) q`; along `n` that is
    /// `s (n . half_dp + q . (n x half_turn))` (the velocity's component) plus the
    /// curvature of the arc, at most `(phi^2 / 2 + phi^3 / 6) |q|`. The first term is
    /// what makes the bound directional: a screw whose points slide along a surface
    /// (translation and rotation cancelling along its normal) hardly moves towards it.
    pub fn toward(&self, n: &Vector3<f64>, center: &Vector3<f64>, radius: f64) -> f64 {
        Swept::of(self).toward(n, center, center.norm(), radius)
    }

    /// The farthest a body can move in any direction over the interval:
    /// `|half_dp| + phi |q|` (a chord is shorter than its arc).
    pub fn reach(&self, center: &Vector3<f64>, radius: f64) -> f64 {
        Swept::of(self).reach(center.norm(), radius)
    }
}

/// A [`Motion`]'s constants, computed once per sweep: the bounds of
/// [`Motion::toward`] and [`Motion::reach`] are evaluated for every pair of nodes and
/// of triangles, and their square roots of the motion's own lengths would otherwise be
/// taken each time (the same arithmetic, so the same bits).
#[derive(Debug, Clone, Copy)]
pub(super) struct Swept {
    pub(super) half_dp: Vector3<f64>,
    pub(super) half_turn: Vector3<f64>,
    /// `|half_dp|`.
    pub(super) shift: f64,
    /// `phi = |half_turn|`.
    pub(super) phi: f64,
    /// The arc's curvature term `phi^2 / 2 + phi^3 / 6`.
    pub(super) curve: f64,
}

impl Swept {
    pub(super) fn of(m: &Motion) -> Swept {
        let phi = m.half_turn.norm();
        Swept {
            half_dp: m.half_dp,
            half_turn: m.half_turn,
            shift: m.half_dp.norm(),
            phi,
            curve: 0.5 * phi * phi + phi * phi * phi / 6.0,
        }
    }

    /// [`Motion::toward`], given `|center|`.
    pub(super) fn toward(
        &self,
        n: &Vector3<f64>,
        center: &Vector3<f64>,
        center_norm: f64,
        radius: f64,
    ) -> f64 {
        let n_x_w = n.cross(&self.half_turn);
        (n.dot(&self.half_dp) + center.dot(&n_x_w)).abs()
            + radius * n_x_w.norm()
            + self.curve * (center_norm + radius)
    }

    /// [`Motion::reach`], given `|center|`.
    pub(super) fn reach(&self, center_norm: f64, radius: f64) -> f64 {
        self.shift + self.phi * (center_norm + radius)
    }
}

/// A moving triangle of a sweep as a body: a ball about its centroid (relative to the
/// moving origin, at the middle pose), with the bounds shared by its pairs.
pub(super) struct SweptTriangle {
    pub(super) center: Vector3<f64>,
    pub(super) center_norm: f64,
    pub(super) radius: f64,
    /// The floor plus the farthest the ball moves (the box filter, without a
    /// direction).
    pub(super) needed: f64,
    /// How far it moves along its own plane's normal.
    pub(super) toward_plane: f64,
}

impl SweptTriangle {
    /// Triangle `k` of `mesh`, moved to the middle pose (`moved`).
    pub(super) fn of(
        mesh: &Bvh,
        k: usize,
        moved: &([Point3<f64>; 3], Aabb, Plane),
        pose: &Isometry3<f64>,
        swept: &Swept,
        floor: f64,
    ) -> SweptTriangle {
        let (tb, _, pb) = moved;
        let centroid = (tb[0].coords + tb[1].coords + tb[2].coords) / 3.0;
        // The radius is the mesh frame's (a rigid motion keeps it), padded for the
        // rounding of the moved centroid.
        let radius = mesh.radii[k] * (1.0 + 1e-12) + 1e-12 * centroid.norm();
        let center = centroid - pose.translation.vector;
        let center_norm = center.norm();
        SweptTriangle {
            center,
            center_norm,
            radius,
            needed: floor + swept.reach(center_norm, radius),
            toward_plane: swept.toward(&pb.normal, &center, center_norm, radius),
        }
    }
}

/// The radius of the ball about a triangle's centroid that holds the triangle.
pub(super) fn centroid_radius(t: &[Point3<f64>; 3]) -> f64 {
    let centroid = (t[0].coords + t[1].coords + t[2].coords) / 3.0;
    t.iter()
        .map(|v| (v.coords - centroid).norm())
        .fold(0.0, f64::max)
}

/// What [`Bvh::clear_over`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sweep {
    /// The distance stays at least the floor over the whole interval.
    pub clear: bool,
    /// The least distance of the pairs of triangles met, at the middle pose (an upper
    /// bound of the distance there; infinite when none was met).
    pub upper: f64,
}
