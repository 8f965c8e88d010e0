//! Triangle planes and box distances, the oriented box of a node, and the top-down
//! construction of the hierarchy.

use nalgebra::{Matrix3, Point3, Vector3};

use super::{Kind, Node, LEAF_SIZE};
use crate::mesh::Aabb;

/// A triangle's plane: unit normal (zero for a degenerate triangle) and offset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Plane {
    pub(super) normal: Vector3<f64>,
    pub(super) offset: f64,
}

impl Plane {
    pub(super) const NONE: Plane = Plane {
        normal: Vector3::new(0.0, 0.0, 0.0),
        offset: 0.0,
    };

    pub(super) fn of(t: &[Point3<f64>; 3]) -> Plane {
        let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
        let len = n.norm();
        if len.is_nan() || len <= 0.0 {
            return Plane::NONE;
        }
        let normal = n / len;
        Plane {
            normal,
            offset: normal.dot(&t[0].coords),
        }
    }

    /// A lower bound of the distance from this plane's triangle to triangle `t`: when
    /// `t` lies wholly on one side of the plane, its nearest corner's distance to the
    /// plane (the triangle lies in the plane); 0 otherwise.
    pub(super) fn gap(&self, t: &[Point3<f64>; 3]) -> f64 {
        let s = [
            self.normal.dot(&t[0].coords) - self.offset,
            self.normal.dot(&t[1].coords) - self.offset,
            self.normal.dot(&t[2].coords) - self.offset,
        ];
        let lo = s[0].min(s[1]).min(s[2]);
        let hi = s[0].max(s[1]).max(s[2]);
        if lo > 0.0 {
            lo
        } else if hi < 0.0 {
            -hi
        } else {
            0.0
        }
    }
}

pub(super) fn box_box_distance(a: &Aabb, b: &Aabb) -> f64 {
    let d = (a.min - b.max).sup(&(b.min - a.max)).sup(&Vector3::zeros());
    d.norm()
}

/// Slab test of segment `p q` against a box.
pub(super) fn segment_hits_box(p: &Point3<f64>, q: &Point3<f64>, b: &Aabb) -> bool {
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

/// The oriented box of a set of points along their principal axes (the eigenvectors of
/// their covariance): tight around flat and elongated patches, which is where axis-aligned
/// boxes and spheres are loosest.
pub(super) fn oriented_box<'a>(
    points: impl Iterator<Item = &'a Point3<f64>> + Clone,
) -> (Matrix3<f64>, Point3<f64>, Vector3<f64>) {
    let (mut n, mut mean) = (0.0f64, Vector3::zeros());
    for p in points.clone() {
        n += 1.0;
        mean += p.coords;
    }
    mean /= n.max(1.0);
    let mut cov = Matrix3::zeros();
    for p in points.clone() {
        let d = p.coords - mean;
        cov += d * d.transpose();
    }
    let eigen = nalgebra::SymmetricEigen::new(cov);
    let mut axes = eigen.eigenvectors;
    if !axes.iter().all(|x| x.is_finite()) {
        axes = Matrix3::identity();
    }
    let (mut lo, mut hi) = (
        Vector3::repeat(f64::INFINITY),
        Vector3::repeat(f64::NEG_INFINITY),
    );
    for p in points {
        let q = axes.tr_mul(&p.coords);
        lo = lo.inf(&q);
        hi = hi.sup(&q);
    }
    let center = Point3::from(axes * ((lo + hi) * 0.5));
    (axes, center, (hi - lo) * 0.5)
}

/// Splits `order` (more than one triangle) in two about the mean of its centroids
/// along the oriented box's longest axis (`axes`, `half`): the centroids below it first.
/// Returns how many that is; at the median when the mean leaves a side empty or `mean`
/// is false.
///
/// The mean splits space, the median the count: where a few large triangles (walls,
/// a floor) lie among many small ones, a split at the median mixes them, and every node
/// down to the leaves spans the room; a split at the mean sets the large ones apart
/// within a few levels. This is FCL's default for its oriented trees, and it cuts the
/// pairs a query visits by orders of magnitude on such scenes (docs/check.md).
fn split(
    order: &mut [usize],
    centroids: &[Point3<f64>],
    axes: &Matrix3<f64>,
    half: &Vector3<f64>,
    mean: bool,
) -> usize {
    let along = axes.column(half.imax()).into_owned();
    let at = |i: usize| along.dot(&centroids[i].coords);
    let mut below = 0;
    if mean {
        let mean = order.iter().map(|&i| at(i)).sum::<f64>() / order.len() as f64;
        for k in 0..order.len() {
            if at(order[k]) < mean {
                order.swap(below, k);
                below += 1;
            }
        }
    }
    if below == 0 || below == order.len() {
        below = order.len() / 2;
        order.select_nth_unstable_by(below, |&a, &b| at(a).total_cmp(&at(b)));
    }
    below
}

/// The depth below which nodes split at the median count instead of the mean: mean
/// splits can peel a few triangles a level off a mesh of geometrically spaced parts, and
/// this bounds the depth by `MEAN_SPLIT_DEPTH + log2(triangles) + 1` (the stack of the
/// point queries, [`super::point::STACK`]).
const MEAN_SPLIT_DEPTH: usize = 64;

/// How a node's triangles are shared between its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Split {
    /// At the mean of the centroids along the oriented box's longest axis, at most
    /// [`LEAF_SIZE`] a leaf (FCL's rule, see [`split`]): the hierarchy of mesh-mesh
    /// queries.
    Mean,
    /// At the median of the centroids along the axis-aligned box's longest axis, at most
    /// [`POINT_LEAF_SIZE`] a leaf: a balanced tree, `log2(n / 4) + 1` deep, for point
    /// queries alone (the signed distance).
    Median,
}

/// Triangles per leaf at most in a [`Split::Median`] hierarchy.
pub(super) const POINT_LEAF_SIZE: usize = 4;

/// Builds the subtree of `order[start..end]` at `depth` into `nodes`; returns its root.
pub(super) fn build(
    tris: &[[Point3<f64>; 3]],
    centroids: &[Point3<f64>],
    order: &mut [usize],
    (start, end): (usize, usize),
    (rule, depth): (Split, usize),
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
    let (axes, obb_center, half) =
        oriented_box(order[start..end].iter().flat_map(|&i| tris[i].iter()));
    let index = nodes.len();
    nodes.push(Node {
        aabb,
        center,
        radius,
        axes,
        obb_center,
        half,
        kind: Kind::Leaf { start, end },
    });
    let leaf = match rule {
        Split::Mean => LEAF_SIZE,
        Split::Median => POINT_LEAF_SIZE,
    };
    if end - start > leaf {
        let mid = start
            + match rule {
                Split::Mean => split(
                    &mut order[start..end],
                    centroids,
                    &axes,
                    &half,
                    depth < MEAN_SPLIT_DEPTH,
                ),
                Split::Median => median_split(&mut order[start..end], centroids, &aabb),
            };
        let below = (rule, depth + 1);
        let left = build(tris, centroids, order, (start, mid), below, nodes);
        let right = build(tris, centroids, order, (mid, end), below, nodes);
        nodes[index].kind = Kind::Inner { left, right };
    }
    index
}

/// Splits `order` (more than one triangle) at its median centroid along the longest axis
/// of `aabb`: the lower half first. Returns the size of the lower half.
fn median_split(order: &mut [usize], centroids: &[Point3<f64>], aabb: &Aabb) -> usize {
    let ext = aabb.extent();
    let axis = if ext.x >= ext.y && ext.x >= ext.z {
        0
    } else if ext.y >= ext.z {
        1
    } else {
        2
    };
    let mid = order.len() / 2;
    order.select_nth_unstable_by(mid, |&a, &b| {
        centroids[a][axis].total_cmp(&centroids[b][axis])
    });
    mid
}
