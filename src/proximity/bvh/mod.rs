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
//! longest axis (as FCL does), at most [`LEAF_SIZE`] triangles per leaf.
//!
//! The queries:
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
//! The queries live beside the hierarchy: `distance` (best-first distance and the
//! planner's decision), `sweep` (an interval of rigid motion), `cast` (a translation's
//! first contact), `pairs` (the relative
//! placement of two hierarchies and the scratch kept between queries) and `bounds`
//! (triangle planes and boxes, and the construction).

mod bounds;
mod cast;
mod distance;
mod motion;
mod pairs;
mod sweep;
#[cfg(test)]
mod tests;

use nalgebra::{Matrix3, Point3, Vector3};

use crate::geometry::triangle::closest_point;
use crate::mesh::{Aabb, SurfaceMesh};
use bounds::{build, segment_hits_box, Plane};
use motion::centroid_radius;

pub use distance::{Bounded, Slack};
pub use motion::{Motion, Sweep};
pub use pairs::{Entry, PairScratch};
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
    /// points, still exact).
    pub fn new(mesh: &SurfaceMesh) -> Bvh {
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
                0,
                triangles.len(),
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

    /// The least distance from point `p` (this mesh's frame) to the mesh.
    pub fn point_distance(&self, p: &Point3<f64>) -> f64 {
        self.point_distance_below(p, f64::INFINITY)
    }

    /// The least distance from point `p` (this mesh's frame) to the mesh, or `cap` when
    /// that is less: parts of the mesh farther than `cap` are never opened. The nearer
    /// child is visited first, so that the bound tightens early.
    pub fn point_distance_below(&self, p: &Point3<f64>, cap: f64) -> f64 {
        let mut best = cap;
        let mut stack = Vec::with_capacity(64);
        stack.push(0usize);
        while let Some(i) = stack.pop() {
            let Some(n) = self.nodes.get(i) else { continue };
            if n.aabb.distance_squared(p).sqrt() >= best {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    for t in &self.triangles[start..end] {
                        let (c, _) = closest_point(p, &t[0], &t[1], &t[2]);
                        best = best.min((p - c).norm());
                    }
                }
                Kind::Inner { left, right } => {
                    let near = |k: usize| {
                        self.nodes
                            .get(k)
                            .map_or(f64::INFINITY, |n| n.aabb.distance_squared(p).sqrt())
                    };
                    if near(left) <= near(right) {
                        stack.push(right);
                        stack.push(left);
                    } else {
                        stack.push(left);
                        stack.push(right);
                    }
                }
            }
        }
        best
    }

    /// Whether the segment `p q` crosses a triangle of the mesh (a segment in a
    /// triangle's plane does not count; see [`crate::proximity::exact::segment_crosses_triangle`]).
    pub fn crosses(&self, p: &Point3<f64>, q: &Point3<f64>) -> bool {
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let Some(n) = self.nodes.get(i) else { continue };
            if !segment_hits_box(p, q, &n.aabb) {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    if self.triangles[start..end]
                        .iter()
                        .any(|t| crate::proximity::exact::segment_crosses_triangle(p, q, t))
                    {
                        return true;
                    }
                }
                Kind::Inner { left, right } => {
                    stack.push(left);
                    stack.push(right);
                }
            }
        }
        false
    }

    /// Whether `p` is inside the (closed) mesh: the parity of crossings of a ray from `p`
    /// in a fixed, irrational-looking direction (so that it meets no edge exactly in
    /// practice). Crossings at the same place along the ray count once: meshes exported
    /// double-sided (each face twice, as SketchUp writes OMPL.app's models) would
    /// otherwise cross everything an even number of times.
    pub fn contains(&self, p: &Point3<f64>) -> bool {
        let dir = Vector3::new(0.577_215_664_9, 0.618_033_988_7, 0.533_751_168_6).normalize();
        let far = self.aabb().extent().norm() * 4.0 + 1.0 + (p - self.aabb().center()).norm();
        let q = p + dir * far;
        let mut crossings: Vec<f64> = Vec::new();
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let Some(n) = self.nodes.get(i) else { continue };
            if !segment_hits_box(p, &q, &n.aabb) {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    for t in &self.triangles[start..end] {
                        crossings
                            .extend(crate::proximity::exact::segment_triangle_crossing(p, &q, t));
                    }
                }
                Kind::Inner { left, right } => {
                    stack.push(left);
                    stack.push(right);
                }
            }
        }
        crossings.sort_by(f64::total_cmp);
        crossings.dedup_by(|a, b| (*a - *b).abs() <= 1e-12);
        crossings.len() % 2 == 1
    }
}
