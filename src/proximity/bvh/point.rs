//! Queries of one mesh by a point, a segment or a box, through the hierarchy's
//! axis-aligned boxes: the closest triangle (the exact point distance, and the closest
//! feature that the signed distance of [`crate::geometry::MeshDistance`] signs by), the
//! crossing of a segment, the inside test by ray parity, and the triangles whose boxes
//! meet a box.
//!
//! The closest triangle is a depth-first branch and bound (Ericson, "Real-Time Collision
//! Detection", 6.1): the nearer child first, subtrees no nearer than the best triangle so
//! far pruned. It holds its pending nodes in a fixed stack, [`STACK`] deep, which the
//! construction's depth bound (`MEAN_SPLIT_DEPTH` plus a balanced remainder) keeps
//! sufficient (a median-split hierarchy is `log2(n / 4) + 1` deep): the haptic cycle asks
//! it without allocating.

use std::ops::Range;

use nalgebra::{Point3, Vector3};

use super::bounds::segment_hits_box;
use super::{Bvh, Kind};
use crate::mesh::Aabb;
use crate::proximity::exact::{segment_crosses_triangle, segment_triangle_crossing};
use crate::proximity::triangle::{closest_point, Feature};

/// The pending nodes of a depth-first query at most: the depth-first search holds one
/// sibling per level, and the hierarchy is at most `MEAN_SPLIT_DEPTH` (64) levels of
/// mean splits over at most 32 of median splits (fewer than 2^32 triangles).
pub(crate) const STACK: usize = 128;

/// The closest triangle of a mesh to a point ([`Bvh::nearest_triangle`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NearestTriangle {
    /// The squared distance.
    pub(crate) distance_squared: f64,
    /// The triangle's index in the mesh the hierarchy was built from.
    pub(crate) triangle: usize,
    /// The closest point.
    pub(crate) point: Point3<f64>,
    /// The feature of the triangle the closest point lies on (its corners in the mesh's
    /// order).
    pub(crate) feature: Feature,
}

impl Bvh {
    /// The least distance from point `p` (this mesh's frame) to the mesh.
    pub fn point_distance(&self, p: &Point3<f64>) -> f64 {
        self.point_distance_below(p, f64::INFINITY)
    }

    /// The least distance from point `p` (this mesh's frame) to the mesh, or `cap` when
    /// that is less: parts of the mesh farther than `cap` are never opened.
    pub fn point_distance_below(&self, p: &Point3<f64>, cap: f64) -> f64 {
        self.nearest_triangle(p, cap * cap)
            .map_or(cap, |n| n.distance_squared.sqrt())
    }

    /// The closest triangle to `p` whose squared distance is below `bound2`, or none.
    /// Of triangles equally near, the first met wins: the nearer child's first (the
    /// right one when both are as near), in leaf order.
    pub(crate) fn nearest_triangle(&self, p: &Point3<f64>, bound2: f64) -> Option<NearestTriangle> {
        let mut best: Option<NearestTriangle> = None;
        let mut best_d2 = bound2;
        let mut stack = [0u32; STACK];
        let mut top = usize::from(!self.nodes.is_empty());
        while top > 0 {
            top -= 1;
            let n = &self.nodes[stack[top] as usize];
            if n.aabb.distance_squared(p) >= best_d2 {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    for (i, t) in self.triangles[start..end].iter().enumerate() {
                        let (q, feature) = closest_point(p, &t[0], &t[1], &t[2]);
                        let d2 = (q - p).norm_squared();
                        if d2 < best_d2 {
                            best_d2 = d2;
                            best = Some(NearestTriangle {
                                distance_squared: d2,
                                triangle: self.source[start + i] as usize,
                                point: q,
                                feature,
                            });
                        }
                    }
                }
                Kind::Inner { left, right } => {
                    let dl = self.nodes[left].aabb.distance_squared(p);
                    let dr = self.nodes[right].aabb.distance_squared(p);
                    let (near, far) = if dl < dr {
                        (left, right)
                    } else {
                        (right, left)
                    };
                    stack[top] = far as u32;
                    stack[top + 1] = near as u32;
                    top += 2;
                }
            }
        }
        best
    }

    /// Visits, depth first, the leaves under the nodes whose boxes pass `enter`, and
    /// calls `leaf` with each one's range of triangles (in the hierarchy's order) until
    /// it returns true; returns whether it did. A fixed stack, no allocation.
    fn any_leaf(
        &self,
        enter: impl Fn(&Aabb) -> bool,
        mut leaf: impl FnMut(Range<usize>) -> bool,
    ) -> bool {
        let mut stack = [0u32; STACK];
        let mut top = usize::from(!self.nodes.is_empty());
        while top > 0 {
            top -= 1;
            let n = &self.nodes[stack[top] as usize];
            if !enter(&n.aabb) {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    if leaf(start..end) {
                        return true;
                    }
                }
                Kind::Inner { left, right } => {
                    stack[top] = left as u32;
                    stack[top + 1] = right as u32;
                    top += 2;
                }
            }
        }
        false
    }

    /// Calls `f` with the index (in the mesh the hierarchy was built from) of every
    /// triangle whose box overlaps `b`, until it returns true; returns whether it did.
    pub(crate) fn any_triangle_near(&self, b: &Aabb, mut f: impl FnMut(usize) -> bool) -> bool {
        self.any_leaf(
            |node| node.overlaps(b),
            |range| {
                range
                    .into_iter()
                    .any(|i| self.boxes[i].overlaps(b) && f(self.source[i] as usize))
            },
        )
    }

    /// Whether the segment `p q` crosses a triangle of the mesh (a segment in a
    /// triangle's plane does not count; see [`segment_crosses_triangle`]).
    pub fn crosses(&self, p: &Point3<f64>, q: &Point3<f64>) -> bool {
        self.any_leaf(
            |node| segment_hits_box(p, q, node),
            |range| {
                self.triangles[range]
                    .iter()
                    .any(|t| segment_crosses_triangle(p, q, t))
            },
        )
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
        self.any_leaf(
            |node| segment_hits_box(p, &q, node),
            |range| {
                for t in &self.triangles[range] {
                    crossings.extend(segment_triangle_crossing(p, &q, t));
                }
                false
            },
        );
        crossings.sort_by(f64::total_cmp);
        crossings.dedup_by(|a, b| (*a - *b).abs() <= 1e-12);
        crossings.len() % 2 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::SurfaceMesh;
    use crate::proximity::exact::uniform_stream;

    fn ring() -> SurfaceMesh {
        let ring: Vec<Point3<f64>> = (0..60)
            .map(|i| {
                let t = std::f64::consts::TAU * i as f64 / 60.0;
                Point3::new(t.cos(), t.sin(), 0.2 * (3.0 * t).sin())
            })
            .collect();
        crate::mesh::shapes::closed_tube(&ring, 0.2, 12)
    }

    fn depth(tree: &Bvh, node: usize) -> usize {
        match tree.nodes[node].kind {
            Kind::Leaf { .. } => 1,
            Kind::Inner { left, right } => 1 + depth(tree, left).max(depth(tree, right)),
        }
    }

    /// The tree's closest triangle is the tree-less minimum over every triangle: the
    /// same squared distance bit for bit (each is one triangle's `closest_point`), a
    /// triangle that attains it, and its closest point and feature. A bound below the
    /// distance finds nothing. Both constructions: mean splits (every query's) and the
    /// balanced one for point queries, whose depth is `log2(n / 4) + 1` rounded up.
    #[test]
    fn the_nearest_triangle_is_the_least_over_all_triangles() {
        let mesh = ring();
        let balanced = Bvh::for_point_queries(&mesh);
        let levels = (mesh.triangles.len() as f64 / 4.0).log2().ceil() as usize + 1;
        assert_eq!(depth(&balanced, 0), levels);
        for (tree, k) in [(Bvh::new(&mesh), 0..250), (balanced, 250..500)] {
            the_nearest_triangles_of(&mesh, &tree, k);
        }
    }

    fn the_nearest_triangles_of(mesh: &SurfaceMesh, tree: &Bvh, queries: std::ops::Range<u64>) {
        for k in queries {
            let mut r = uniform_stream(k);
            let p = Point3::new(1.5 * r(), 1.5 * r(), 0.5 * r());
            let brute = (0..mesh.triangles.len())
                .map(|t| {
                    let [a, b, c] = mesh.triangle(t);
                    (closest_point(&p, &a, &b, &c).0 - p).norm_squared()
                })
                .fold(f64::INFINITY, f64::min);
            let near = tree.nearest_triangle(&p, f64::INFINITY).unwrap();
            assert_eq!(near.distance_squared, brute, "query {k}");
            let [a, b, c] = mesh.triangle(near.triangle);
            assert_eq!(
                closest_point(&p, &a, &b, &c),
                (near.point, near.feature),
                "query {k}"
            );
            assert_eq!(tree.point_distance(&p), brute.sqrt());
            assert!(tree.nearest_triangle(&p, brute).is_none(), "query {k}");
            assert_eq!(
                tree.point_distance_below(&p, 0.5 * brute.sqrt()),
                0.5 * brute.sqrt()
            );
        }
    }

    /// The box query visits exactly the triangles whose boxes meet the box, and stops
    /// when asked to.
    #[test]
    fn the_box_query_visits_the_triangles_whose_boxes_meet_it() {
        let mesh = ring();
        let mut r = uniform_stream(9);
        for k in 0..200 {
            let tree = if k % 2 == 0 {
                Bvh::new(&mesh)
            } else {
                Bvh::for_point_queries(&mesh)
            };
            let c = Point3::new(1.2 * r(), 1.2 * r(), 0.3 * r());
            let h = Vector3::new(0.15 * (1.0 + r()), 0.15 * (1.0 + r()), 0.15 * (1.0 + r()));
            let b = Aabb {
                min: c - h,
                max: c + h,
            };
            let mut seen = Vec::new();
            assert!(!tree.any_triangle_near(&b, |t| {
                seen.push(t);
                false
            }));
            seen.sort_unstable();
            let expected: Vec<usize> = (0..mesh.triangles.len())
                .filter(|&t| Aabb::from_points(mesh.triangle(t).iter()).overlaps(&b))
                .collect();
            assert_eq!(seen, expected, "box {k}");
            if let Some(&first) = expected.first() {
                let mut calls = 0;
                assert!(tree.any_triangle_near(&b, |_| {
                    calls += 1;
                    true
                }));
                assert_eq!(calls, 1, "box {k}, first {first}");
            }
        }
    }

    /// Triangles along a line, each 1024 times as far as the one before: the mean of
    /// any run of them lies past all but the farthest, so every mean split would peel off
    /// one triangle and the tree would nest 100 levels (and as many as there are
    /// triangles, past the queries' fixed stack). Below 64 levels the splits are at the median: the depth is over
    /// 64 (the peeling happened) and at most 64 + log2(36 / 2) + 2, and the queries
    /// find each triangle from a point on it. (Squared distances across such a range
    /// overflow to infinity; the search still orders and prunes by them.)
    #[test]
    fn geometrically_spaced_triangles_keep_the_depth_bounded() {
        let n = 100;
        let mut mesh = SurfaceMesh {
            vertices: Vec::new(),
            triangles: Vec::new(),
        };
        for k in 0..n {
            let x = 1024f64.powi(k as i32);
            let v = mesh.vertices.len();
            mesh.vertices.extend([
                Point3::new(x, 0.0, 0.0),
                Point3::new(x, 1.0, 0.0),
                Point3::new(x, 0.0, 1.0),
            ]);
            mesh.triangles.push([v, v + 1, v + 2]);
        }
        let tree = Bvh::new(&mesh);
        let d = depth(&tree, 0);
        assert!((65..=64 + 7).contains(&d), "depth {d}");
        for k in [0, 7, 35, 36, 63, 64, 99] {
            let p = Point3::new(mesh.vertices[3 * k].x, 0.25, 0.25 + 1e-3);
            let brute = (0..n)
                .map(|t| {
                    let [a, b, c] = mesh.triangle(t);
                    (closest_point(&p, &a, &b, &c).0 - p).norm_squared()
                })
                .fold(f64::INFINITY, f64::min);
            assert_eq!(
                tree.nearest_triangle(&p, f64::INFINITY)
                    .unwrap()
                    .distance_squared,
                brute
            );
            assert_eq!(
                tree.nearest_triangle(&p, f64::INFINITY).unwrap().triangle,
                k
            );
        }
    }
}
