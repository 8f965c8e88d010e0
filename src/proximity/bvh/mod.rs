//! A bounding-volume hierarchy over a triangle mesh, for exact distances between a moving
//! robot and a fixed world.
//!
//! Each node bounds its triangles three ways: an axis-aligned box (for point and ray
//! queries in the mesh's frame), a sphere, and an oriented box along the principal axes
//! of its corners (Gottschalk, Lin and Manocha 1996). Between a node of each mesh, under
//! the rigid transform that places the second, the lower bound is the largest of the
//! sphere distance and the box separations along either box's axes; the oriented boxes
//! are what keep nearly parallel surfaces cheap (a patch of a face is a thin box).
//! Triangle pairs are filtered by their boxes and by each triangle's plane before the
//! exact distance ([`crate::proximity::exact::triangle_distance`]); the threshold queries (a decision, a sweep)
//! also try the nine directions across the triangles' edges
//! ([`crate::proximity::exact::edge_axes_separate`]), the rest of the separating axes of two
//! triangles, which settle most pairs near a floor without the exact distance.
//!
//! Built top-down, splitting at the mean of the centroids along the oriented box's
//! longest axis (as FCL does), at most [`LEAF_SIZE`] triangles per leaf; below 64
//! levels at the median, so that the depth stays bounded (and the point queries'
//! fixed stacks sufficient) on any mesh. A hierarchy for point queries alone
//! (`Bvh::for_point_queries`, the signed distance's) splits at the median along the
//! axis-aligned box's longest axis, four triangles a leaf: balanced and shallow.
//!
//! The queries:
//! - [`Bvh::point_distance`], [`Bvh::crosses`], [`Bvh::contains`]: a point's distance
//!   (and, inside the crate, its closest triangle and feature), a segment's crossing
//!   and the inside test by ray parity;
//! - [`Bvh::distance_with`]: best-first branch and bound, exact or within a [`crate::proximity::bvh::Slack`].
//! - [`Bvh::clear_over`]: whether the distance stays above a floor while the second mesh
//!   moves over an interval (the certification of a path check), and
//!   [`Bvh::sweep_from`], the same sweep leaving the front of pairs it could not clear,
//!   from which the parts of the interval are swept (the planner's motion check);
//! - [`Bvh::first_meeting_along`]: the first contact of a translation, exactly (a
//!   linear shape cast).
//!
//! Hand-written because parry3d-f64 (the maintained choice) has moved to glam types,
//! while this engine is built on nalgebra, and has neither the slack nor the interval
//! query.
//!
//! The queries live beside the hierarchy: `point` (a point, a segment or a box against
//! one mesh), `distance` (best-first distance and the planner's decision), `sweep` (an
//! interval of rigid motion), `cast` (a translation's first contact), `pairs` (the
//! relative placement of two hierarchies and the scratch kept between queries) and
//! `bounds` (triangle planes and boxes, and the construction).

mod bounds;
mod cast;
mod distance;
mod motion;
mod pairs;
mod point;
mod sweep;
#[cfg(test)]
mod tests;

use nalgebra::{Matrix3, Point3, Vector3};

use crate::mesh::{Aabb, SurfaceMesh};
use bounds::{build, Plane, Split};
use motion::centroid_radius;

pub use distance::{Bounded, Slack};
pub use motion::{Motion, Sweep};
pub use pairs::{Entry, PairScratch};
pub(crate) use point::NearestTriangle;
/// Triangles per leaf at most.
pub const LEAF_SIZE: usize = 2;

#[derive(Debug, Clone)]
struct Node {
    aabb: Aabb,
    /// The box's centre: the sphere's centre.
    center: Point3<f64>,
    radius: f64,
    /// An oriented box: the columns of `axes` are its unit axes (the principal axes of
    /// the node's corners), `obb_center` its centre, `half` its half extents.
    axes: Matrix3<f64>,
    obb_center: Point3<f64>,
    half: Vector3<f64>,
    /// A leaf's range of triangles, or an inner node's children.
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Leaf { start: usize, end: usize },
    Inner { left: usize, right: usize },
}

/// The hierarchy, owning its triangles (as corner points, in the mesh's frame).
#[derive(Debug, Clone)]
pub struct Bvh {
    nodes: Vec<Node>,
    triangles: Vec<[Point3<f64>; 3]>,
    /// Each triangle's box and plane, for cheap bounds before the exact distance.
    boxes: Vec<Aabb>,
    planes: Vec<Plane>,
    /// Each triangle's radius about its centroid (the ball of a moving triangle).
    radii: Vec<f64>,
    /// Each triangle's index in the mesh the hierarchy was built from.
    source: Vec<u32>,
}

/// The result of a distance query: the distance and the closest points (on the first
/// mesh, on the second), in the first mesh's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closest {
    /// The distance.
    pub distance: f64,
    /// The closest point on the first mesh.
    pub on_a: Point3<f64>,
    /// The closest point on the second mesh.
    pub on_b: Point3<f64>,
}

impl Bvh {
    /// Builds the hierarchy of `mesh` (degenerate triangles included: they are segments or
    /// points, still exact), split at the mean as FCL does, for every query.
    pub fn new(mesh: &SurfaceMesh) -> Bvh {
        Bvh::built(mesh, Split::Mean)
    }

    /// Builds a balanced hierarchy of `mesh` (split at the median, four triangles a
    /// leaf) for point queries alone: what [`crate::geometry::MeshDistance`] searches.
    /// Its mesh-mesh queries are as exact as [`Bvh::new`]'s, and slower.
    pub(crate) fn for_point_queries(mesh: &SurfaceMesh) -> Bvh {
        Bvh::built(mesh, Split::Median)
    }

    fn built(mesh: &SurfaceMesh, rule: Split) -> Bvh {
        let triangles: Vec<[Point3<f64>; 3]> = (0..mesh.triangles.len())
            .map(|t| mesh.triangle(t))
            .collect();
        let mut order: Vec<usize> = (0..triangles.len()).collect();
        let centroids: Vec<Point3<f64>> = triangles
            .iter()
            .map(|t| Point3::from((t[0].coords + t[1].coords + t[2].coords) / 3.0))
            .collect();
        let mut nodes = Vec::with_capacity(2 * triangles.len() / LEAF_SIZE + 1);
        if !triangles.is_empty() {
            build(
                &triangles,
                &centroids,
                &mut order,
                (0, triangles.len()),
                (rule, 0),
                &mut nodes,
            );
        }
        let triangles: Vec<[Point3<f64>; 3]> = order.iter().map(|&i| triangles[i]).collect();
        let boxes = triangles
            .iter()
            .map(|t| Aabb::from_points(t.iter()))
            .collect();
        let planes = triangles.iter().map(Plane::of).collect();
        let radii = triangles.iter().map(centroid_radius).collect();
        Bvh {
            nodes,
            triangles,
            boxes,
            planes,
            radii,
            source: order.iter().map(|&i| i as u32).collect(),
        }
    }

    /// Number of triangles.
    pub fn len(&self) -> usize {
        self.triangles.len()
    }

    /// Whether there are no triangles.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The root's bounding box (in the mesh's frame).
    pub fn aabb(&self) -> Aabb {
        self.nodes.first().map_or(Aabb::empty(), |n| n.aabb)
    }

    /// Triangle `i` (in the hierarchy's order), in the mesh's frame.
    pub(crate) fn triangle(&self, i: usize) -> &[Point3<f64>; 3] {
        &self.triangles[i]
    }
}
