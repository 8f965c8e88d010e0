//! A bounding-volume hierarchy over a triangle mesh, for exact distances between a moving
//! robot and a fixed world.
//!
//! Nodes bound their triangles with a box (for point and ray queries in the mesh's frame)
//! and a sphere (for mesh-mesh queries under a rigid transform: a sphere stays a sphere
//! under rotation, so no box has to be re-fitted per state). Built top-down, splitting at
//! the median centroid along the box's longest axis, at most [`LEAF_SIZE`] triangles per
//! leaf. Queries are branch and bound: a pair of nodes whose spheres are farther apart
//! than the best distance so far is skipped, so the answer is exact.
//!
//! Hand-written because parry3d-f64 (the maintained choice) has moved to glam types,
//! while this engine is built on nalgebra; the queries needed here are a few dozen lines.

use nalgebra::{Isometry3, Point3, Vector3};

use super::exact::triangle_distance;
use crate::geometry::triangle::closest_point;
use crate::mesh::{Aabb, SurfaceMesh};

/// Triangles per leaf at most.
pub const LEAF_SIZE: usize = 4;

#[derive(Debug, Clone)]
struct Node {
    aabb: Aabb,
    center: Point3<f64>,
    radius: f64,
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
    /// Each triangle's box, for a cheap bound before the exact distance.
    boxes: Vec<Aabb>,
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
        Bvh {
            nodes,
            triangles,
            boxes,
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

    /// The least distance between this mesh and `other` placed by `pose` (other's frame
    /// to this mesh's frame), if below `upper` (`None` otherwise). Stops early at zero.
    pub fn distance_to(&self, other: &Bvh, pose: &Isometry3<f64>, upper: f64) -> Option<Closest> {
        self.distance_with(other, pose, upper, &mut PairScratch::default())
    }

    /// [`Bvh::distance_to`] with a scratch kept between queries of the same pair: the
    /// other mesh's triangles are moved lazily (once per query, only where the search
    /// goes), and the previous query's closest pair of triangles gives the first upper
    /// bound (consecutive states of a path are close, so it is usually nearly tight).
    /// The search is best-first: pairs of nodes in order of their lower bound, ending as
    /// soon as the next bound is no better than the best distance found.
    pub fn distance_with(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        upper: f64,
        scratch: &mut PairScratch,
    ) -> Option<Closest> {
        if self.is_empty() || other.is_empty() {
            return None;
        }
        scratch.prepare(other.triangles.len());
        let mut best = Closest {
            distance: upper,
            on_a: Point3::origin(),
            on_b: Point3::origin(),
        };
        let mut best_pair = None;
        if let Some((ia, ib)) = scratch.hint {
            if ia < self.triangles.len() && ib < other.triangles.len() {
                let tb = scratch.moved(other, pose, ib).0;
                let found = triangle_distance(&self.triangles[ia], &tb);
                if improve(&mut best, &mut best_pair, (ia, ib), found) {
                    return Some(best);
                }
            }
        }
        let bound = |i: usize, j: usize| -> f64 {
            let (a, b) = (&self.nodes[i], &other.nodes[j]);
            let c = pose * b.center;
            // The larger of two lower bounds: sphere to sphere, and this node's box to
            // the other's sphere (much tighter for flat walls).
            (((a.center - c).norm() - a.radius).max(box_distance(&a.aabb, &c)) - b.radius).max(0.0)
        };
        let heap = &mut scratch.heap;
        heap.clear();
        heap.push(Entry::new(bound(0, 0), 0, 0));
        while let Some(e) = heap.pop() {
            if e.bound() >= best.distance {
                break;
            }
            let (i, j) = (e.i as usize, e.j as usize);
            let (a, b) = (&self.nodes[i], &other.nodes[j]);
            match (a.kind, b.kind) {
                (Kind::Leaf { start, end }, Kind::Leaf { start: s2, end: e2 }) => {
                    for ib in s2..e2 {
                        let (tb, bb) = scratch_moved(
                            &mut scratch.cache,
                            &mut scratch.stamp,
                            scratch.generation,
                            other,
                            pose,
                            ib,
                        );
                        for ia in start..end {
                            if box_box_distance(&self.boxes[ia], &bb) >= best.distance {
                                continue;
                            }
                            let found = triangle_distance(&self.triangles[ia], &tb);
                            if improve(&mut best, &mut best_pair, (ia, ib), found) {
                                scratch.hint = best_pair;
                                return Some(best);
                            }
                        }
                    }
                }
                (Kind::Inner { left, right }, Kind::Leaf { .. }) => {
                    heap.push(Entry::new(bound(left, j), left, j));
                    heap.push(Entry::new(bound(right, j), right, j));
                }
                (Kind::Leaf { .. }, Kind::Inner { left, right }) => {
                    heap.push(Entry::new(bound(i, left), i, left));
                    heap.push(Entry::new(bound(i, right), i, right));
                }
                (
                    Kind::Inner { left, right },
                    Kind::Inner {
                        left: l2,
                        right: r2,
                    },
                ) => {
                    // Split the larger sphere.
                    if a.radius >= b.radius {
                        heap.push(Entry::new(bound(left, j), left, j));
                        heap.push(Entry::new(bound(right, j), right, j));
                    } else {
                        heap.push(Entry::new(bound(i, l2), i, l2));
                        heap.push(Entry::new(bound(i, r2), i, r2));
                    }
                }
            }
        }
        if best_pair.is_some() {
            scratch.hint = best_pair;
        }
        best_pair.map(|_| best)
    }

    /// The least distance from point `p` (this mesh's frame) to the mesh.
    pub fn point_distance(&self, p: &Point3<f64>) -> f64 {
        let mut best = f64::INFINITY;
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let Some(n) = self.nodes.get(i) else { continue };
            if box_distance(&n.aabb, p) >= best {
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
                    stack.push(left);
                    stack.push(right);
                }
            }
        }
        best
    }

    /// Whether `p` is inside the (closed) mesh: the parity of crossings of a ray from `p`
    /// in a fixed, irrational-looking direction (so that it meets no edge exactly in
    /// practice).
    pub fn contains(&self, p: &Point3<f64>) -> bool {
        let dir = Vector3::new(0.577_215_664_9, 0.618_033_988_7, 0.533_751_168_6).normalize();
        let far = self.aabb().extent().norm() * 4.0 + 1.0 + (p - self.aabb().center()).norm();
        let q = p + dir * far;
        let mut crossings = 0usize;
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            let Some(n) = self.nodes.get(i) else { continue };
            if !segment_hits_box(p, &q, &n.aabb) {
                continue;
            }
            match n.kind {
                Kind::Leaf { start, end } => {
                    for t in &self.triangles[start..end] {
                        if super::exact::segment_crosses_triangle(p, &q, t) {
                            crossings += 1;
                        }
                    }
                }
                Kind::Inner { left, right } => {
                    stack.push(left);
                    stack.push(right);
                }
            }
        }
        crossings % 2 == 1
    }
}

/// Keeps triangle pair `pair` at `(distance, on_a, on_b)` if it is closer than `best`;
/// returns true when the meshes touch (nothing can be closer).
fn improve(
    best: &mut Closest,
    best_pair: &mut Option<(usize, usize)>,
    pair: (usize, usize),
    (distance, on_a, on_b): (f64, Point3<f64>, Point3<f64>),
) -> bool {
    if distance < best.distance {
        *best = Closest {
            distance,
            on_a,
            on_b,
        };
        *best_pair = Some(pair);
    }
    best_pair.is_some() && best.distance == 0.0
}

/// A pair of nodes to visit, ordered by its lower bound (smallest first in the heap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The bound's bits: for non-negative floats the bit order is the numeric order.
    key: u64,
    i: u32,
    j: u32,
}

impl Entry {
    fn new(bound: f64, i: usize, j: usize) -> Entry {
        Entry {
            key: bound.max(0.0).to_bits(),
            i: i as u32,
            j: j as u32,
        }
    }

    fn bound(&self) -> f64 {
        f64::from_bits(self.key)
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: BinaryHeap is a max-heap.
        other
            .key
            .cmp(&self.key)
            .then(other.i.cmp(&self.i))
            .then(other.j.cmp(&self.j))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Reusable state of repeated distance queries between the same two meshes.
#[derive(Debug, Clone, Default)]
pub struct PairScratch {
    heap: std::collections::BinaryHeap<Entry>,
    /// The other mesh's triangles, moved, with their boxes, valid where `stamp` equals
    /// `generation`.
    cache: Vec<([Point3<f64>; 3], Aabb)>,
    stamp: Vec<u32>,
    generation: u32,
    /// The closest pair of triangles of the previous query.
    hint: Option<(usize, usize)>,
}

impl PairScratch {
    fn prepare(&mut self, n: usize) {
        if self.cache.len() != n {
            self.cache = vec![([Point3::origin(); 3], Aabb::empty()); n];
            self.stamp = vec![0; n];
            self.generation = 0;
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
    }

    fn moved(&mut self, other: &Bvh, pose: &Isometry3<f64>, k: usize) -> ([Point3<f64>; 3], Aabb) {
        scratch_moved(
            &mut self.cache,
            &mut self.stamp,
            self.generation,
            other,
            pose,
            k,
        )
    }
}

fn scratch_moved(
    cache: &mut [([Point3<f64>; 3], Aabb)],
    stamp: &mut [u32],
    generation: u32,
    other: &Bvh,
    pose: &Isometry3<f64>,
    k: usize,
) -> ([Point3<f64>; 3], Aabb) {
    if stamp[k] != generation {
        let t = other.triangles[k];
        let moved = [pose * t[0], pose * t[1], pose * t[2]];
        cache[k] = (moved, Aabb::from_points(moved.iter()));
        stamp[k] = generation;
    }
    cache[k]
}

fn box_box_distance(a: &Aabb, b: &Aabb) -> f64 {
    let d = (a.min - b.max).sup(&(b.min - a.max)).sup(&Vector3::zeros());
    d.norm()
}

fn box_distance(b: &Aabb, p: &Point3<f64>) -> f64 {
    let d = (b.min - p).sup(&Vector3::zeros()).sup(&(p - b.max));
    d.norm()
}

/// Slab test of segment `p q` against a box.
fn segment_hits_box(p: &Point3<f64>, q: &Point3<f64>, b: &Aabb) -> bool {
    let d = q - p;
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for k in 0..3 {
        if d[k].abs() < 1e-300 {
            if p[k] < b.min[k] || p[k] > b.max[k] {
                return false;
            }
            continue;
        }
        let (mut a, mut c) = ((b.min[k] - p[k]) / d[k], (b.max[k] - p[k]) / d[k]);
        if a > c {
            std::mem::swap(&mut a, &mut c);
        }
        t0 = t0.max(a);
        t1 = t1.min(c);
        if t0 > t1 {
            return false;
        }
    }
    true
}

fn build(
    tris: &[[Point3<f64>; 3]],
    centroids: &[Point3<f64>],
    order: &mut [usize],
    start: usize,
    end: usize,
    nodes: &mut Vec<Node>,
) -> usize {
    let mut aabb = Aabb::empty();
    for &i in &order[start..end] {
        for p in &tris[i] {
            aabb.grow(p);
        }
    }
    let center = aabb.center();
    let radius = order[start..end]
        .iter()
        .flat_map(|&i| tris[i].iter())
        .map(|p| (p - center).norm())
        .fold(0.0, f64::max);
    let index = nodes.len();
    nodes.push(Node {
        aabb,
        center,
        radius,
        kind: Kind::Leaf { start, end },
    });
    if end - start > LEAF_SIZE {
        let e = aabb.extent();
        let axis = if e.x >= e.y && e.x >= e.z {
            0
        } else if e.y >= e.z {
            1
        } else {
            2
        };
        let mid = (start + end) / 2;
        order[start..end].select_nth_unstable_by(mid - start, |&a, &b| {
            centroids[a][axis].total_cmp(&centroids[b][axis])
        });
        let left = build(tris, centroids, order, start, mid, nodes);
        let right = build(tris, centroids, order, mid, end, nodes);
        nodes[index].kind = Kind::Inner { left, right };
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::shapes::box_surface;
    use nalgebra::{Translation3, UnitQuaternion};

    fn brute(a: &Bvh, b: &Bvh, pose: &Isometry3<f64>) -> f64 {
        let mut best = f64::INFINITY;
        for ta in &a.triangles {
            for tb in &b.triangles {
                let tb = [pose * tb[0], pose * tb[1], pose * tb[2]];
                best = best.min(triangle_distance(ta, &tb).0);
            }
        }
        best
    }

    /// Tree traversal equals the tree-less all-pairs answer, over many relative poses.
    #[test]
    fn tree_equals_all_pairs() {
        let a = Bvh::new(&box_surface(
            Point3::origin(),
            Vector3::new(1.0, 0.5, 0.3),
            4,
        ));
        let b = Bvh::new(&box_surface(
            Point3::origin(),
            Vector3::new(0.2, 0.7, 0.4),
            3,
        ));
        for k in 0..30 {
            let s = k as f64 * 0.37;
            let pose = Isometry3::from_parts(
                Translation3::new(1.5 * s.cos(), 0.9 * s.sin(), 0.4 * (2.0 * s).sin()),
                UnitQuaternion::from_euler_angles(s, 0.5 * s, -0.3 * s),
            );
            let exact = brute(&a, &b, &pose);
            let tree = a.distance_to(&b, &pose, f64::INFINITY).unwrap().distance;
            assert!((tree - exact).abs() < 1e-12, "pose {k}: {tree} vs {exact}");
        }
    }

    #[test]
    fn points_inside_and_distances() {
        let m = box_surface(Point3::origin(), Vector3::new(0.5, 1.0, 1.5), 2);
        let bvh = Bvh::new(&m);
        assert!(bvh.contains(&Point3::new(0.1, -0.5, 1.0)));
        assert!(!bvh.contains(&Point3::new(0.6, 0.0, 0.0)));
        assert!((bvh.point_distance(&Point3::new(0.0, 0.0, 0.0)) - 0.5).abs() < 1e-12);
        assert!((bvh.point_distance(&Point3::new(2.5, 0.0, 0.0)) - 2.0).abs() < 1e-12);
    }
}
