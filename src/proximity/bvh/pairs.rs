//! Two hierarchies in one query: their relative placement and the lower bounds between
//! two nodes (spheres and oriented boxes), the depth-first descent shared by the
//! decisions and sweeps, and the scratch of moved nodes and triangles kept between
//! queries of the same pair.

use nalgebra::{Isometry3, Matrix3, Point3, Vector3};

use super::bounds::{box_box_distance, Plane};
use super::motion::Swept;
use super::{Bvh, Kind, Node};
use crate::mesh::Aabb;

/// The relative placement of two hierarchies in one query, and the lower bound of the
/// distance between two of their nodes.
pub(super) struct PairFrame {
    pub(super) pose: Isometry3<f64>,
    /// The rotation's matrix.
    pub(super) rot: Matrix3<f64>,
}

impl PairFrame {
    pub(super) fn new(pose: &Isometry3<f64>) -> PairFrame {
        let rot = *pose.rotation.to_rotation_matrix().matrix();
        PairFrame { pose: *pose, rot }
    }

    /// The bound of [`PairFrame::gaps`] (`g`) and the direction in which moving `b` increases it fastest
    /// (a unit vector, in `a`'s frame; zero when the bound is zero). Each of the bounds
    /// is the distance from a point to a convex set as a function of `b`'s translation,
    /// so it is convex in the translation with that direction as its gradient: moving
    /// `b` by `v` lowers it by at most `|direction . v|`, to first and every order.
    pub(super) fn bound_and_direction(
        &self,
        a: &Node,
        g: &Gaps,
        mb: &MovedNode,
    ) -> (f64, Vector3<f64>) {
        let value = g.value();
        if value <= 0.0 {
            return (0.0, Vector3::zeros());
        }
        let signed = |gap: &Vector3<f64>, t: &Vector3<f64>| {
            Vector3::new(
                gap.x.copysign(t.x),
                gap.y.copysign(t.y),
                gap.z.copysign(t.z),
            )
        };
        let dir = if value == g.sphere {
            g.c - a.center
        } else if value == g.sphere_box {
            g.c.coords - g.c.coords.sup(&a.aabb.min.coords).inf(&a.aabb.max.coords)
        } else if g.gap_a.norm_squared() >= g.gap_b.norm_squared() {
            a.axes * signed(&g.gap_a, &g.t)
        } else {
            mb.axes * signed(&g.gap_b, &g.t_b)
        };
        let n = dir.norm();
        (value, if n > 0.0 { dir / n } else { Vector3::zeros() })
    }

    /// A lower bound of the distance between `a` and `b` while `b` goes through
    /// `motion`, exact enough to decide whether it reaches `floor`. Each bound of
    /// [`PairFrame::gaps`] is a projection gap along a direction (the bound's own, or one
    /// axis of either oriented box) that stays fixed over the interval, so it falls by
    /// at most the motion of `b`'s sphere along that direction ([`Motion::toward`]); the
    /// largest of the results is kept. A gap already below `floor` at the middle cannot
    /// reach it over the interval, so its motion is not computed: below `floor`, the
    /// value returned is the static bound at the middle, which only orders the pairs to
    /// visit. `center` is `b`'s sphere centre relative to the moving origin, at the
    /// middle.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bound_over(
        &self,
        a: &Node,
        b: &Node,
        mb: &MovedNode,
        swept: &Swept,
        center: &Vector3<f64>,
        center_norm: f64,
        floor: f64,
    ) -> f64 {
        let g = self.gaps(a, b, mb);
        let (value, dir) = self.bound_and_direction(a, &g, mb);
        if value < floor {
            return value;
        }
        let toward = |n: Vector3<f64>| swept.toward(&n, center, center_norm, b.radius);
        let mut best = value - toward(dir);
        for k in 0..3 {
            if best >= floor {
                return best;
            }
            if g.gap_a[k] >= floor {
                best = best.max(g.gap_a[k] - toward(a.axes.column(k).into()));
            }
            if g.gap_b[k] >= floor {
                best = best.max(g.gap_b[k] - toward(mb.axes.column(k).into()));
            }
        }
        best
    }

    /// A lower bound of the distance between `a` and `b` (placed: `mb`), exact enough
    /// to decide whether it reaches `floor`: the spheres and the axis-aligned boxes first
    /// (most pairs far apart end there), then the oriented boxes.
    pub(super) fn static_bound(&self, a: &Node, b: &Node, mb: &MovedNode, floor: f64) -> f64 {
        let sphere = (a.center - mb.center).norm() - a.radius - b.radius;
        if sphere >= floor {
            return sphere;
        }
        let boxes = box_box_distance(&a.aabb, &mb.aabb);
        if boxes >= floor {
            return boxes;
        }
        sphere.max(boxes).max(self.box_gap(a, b, mb, floor))
    }

    /// The oriented boxes' part of [`PairFrame::gaps`] alone, `a`'s face axes first and
    /// `b`'s only when those leave the bound below `floor` (a decision needs no more).
    pub(super) fn box_gap(&self, a: &Node, b: &Node, mb: &MovedNode, floor: f64) -> f64 {
        let RelativeBoxes { m, abs_m, t } = RelativeBoxes::of(a, mb);
        let gap_a = (t.abs() - a.half - abs_m * b.half)
            .sup(&Vector3::zeros())
            .norm_squared();
        if gap_a >= floor * floor {
            return gap_a.sqrt();
        }
        let t_b = m.tr_mul(&t);
        let gap_b = (t_b.abs() - b.half - abs_m.tr_mul(&a.half))
            .sup(&Vector3::zeros())
            .norm_squared();
        gap_a.max(gap_b).sqrt()
    }

    pub(super) fn gaps(&self, a: &Node, b: &Node, mb: &MovedNode) -> Gaps {
        let c = mb.center;
        let sphere = (a.center - c).norm() - a.radius - b.radius;
        let sphere_box = a.aabb.distance_squared(&c).sqrt() - b.radius;
        let RelativeBoxes { m, abs_m, t } = RelativeBoxes::of(a, mb);
        let gap_a = (t.abs() - a.half - abs_m * b.half).sup(&Vector3::zeros());
        let t_b = m.tr_mul(&t);
        let gap_b = (t_b.abs() - b.half - abs_m.tr_mul(&a.half)).sup(&Vector3::zeros());
        Gaps {
            c,
            sphere,
            sphere_box,
            t,
            gap_a,
            t_b,
            gap_b,
        }
    }
}

/// `b`'s oriented box (moved: `mb`) seen from `a`'s, what the separating-axis test on
/// both boxes' face axes needs (Gottschalk, Lin and Manocha 1996): the rotation `m =
/// A^T B` between their axes, its absolute values, and `b`'s box centre in `a`'s box
/// frame.
pub(super) struct RelativeBoxes {
    pub(super) m: Matrix3<f64>,
    pub(super) abs_m: Matrix3<f64>,
    pub(super) t: Vector3<f64>,
}

impl RelativeBoxes {
    pub(super) fn of(a: &Node, mb: &MovedNode) -> RelativeBoxes {
        let m = a.axes.tr_mul(&mb.axes);
        RelativeBoxes {
            abs_m: m.abs(),
            t: a.axes.tr_mul(&(mb.obb_center - a.obb_center)),
            m,
        }
    }
}

/// The depth-first descent of the threshold queries ([`Bvh::clear_over`],
/// [`Bvh::separated`], [`Bvh::sweep_from`]): from the pairs of nodes of `a` and `b` on
/// `stack` (the roots, or a front), the pairs whose `bound` is below `floor`, the larger
/// node split, the nearer child pair visited first (a pair that fails is found early);
/// `leaves` gets each pair of leaves (the nodes, and their triangle ranges) and returns
/// `false` to end the descent, which leaves the pairs not visited on `stack`.
pub(super) fn descend(
    a: &Bvh,
    b: &Bvh,
    floor: f64,
    stack: &mut Vec<(u32, u32)>,
    bound: &mut impl FnMut(usize, usize) -> f64,
    leaves: &mut impl FnMut((u32, u32), (usize, usize), (usize, usize)) -> bool,
) {
    stack.retain(|&(i, j)| bound(i as usize, j as usize) < floor);
    let mut push_children = |stack: &mut Vec<(u32, u32)>, p: (usize, usize), q: (usize, usize)| {
        let (bp, bq) = (bound(p.0, p.1), bound(q.0, q.1));
        let (first, second) = if bp <= bq {
            ((p, bp), (q, bq))
        } else {
            ((q, bq), (p, bp))
        };
        if second.1 < floor {
            stack.push((second.0 .0 as u32, second.0 .1 as u32));
        }
        if first.1 < floor {
            stack.push((first.0 .0 as u32, first.0 .1 as u32));
        }
    };
    while let Some((i, j)) = stack.pop() {
        let pair = (i, j);
        let (i, j) = (i as usize, j as usize);
        if let Some([p, q]) = a.split(b, i, j) {
            push_children(stack, p, q);
            continue;
        }
        if let (Kind::Leaf { start, end }, Kind::Leaf { start: s2, end: e2 }) =
            (a.nodes[i].kind, b.nodes[j].kind)
        {
            if !leaves(pair, (start, end), (s2, e2)) {
                return;
            }
        }
    }
}

/// A node of the moving mesh, placed by the query's pose.
#[derive(Debug, Clone, Copy)]
pub(super) struct MovedNode {
    pub(super) center: Point3<f64>,
    pub(super) axes: Matrix3<f64>,
    pub(super) obb_center: Point3<f64>,
    /// The moved oriented box's axis-aligned bounding box (a cheap first test against the
    /// other tree's boxes, tight where both are nearly axis-aligned).
    pub(super) aabb: Aabb,
}

/// Node `j` of `other`, moved by the frame's pose; computed once per query.
pub(super) fn moved_node<'c>(
    nodes: &'c mut Memo<MovedNode>,
    frame: &PairFrame,
    other: &Bvh,
    j: usize,
) -> &'c MovedNode {
    nodes.get_or(j, || {
        let b = &other.nodes[j];
        let axes = frame.rot * b.axes;
        let obb_center = frame.pose * b.obb_center;
        let reach = axes.abs() * b.half;
        MovedNode {
            center: frame.pose * b.center,
            axes,
            obb_center,
            aabb: Aabb {
                min: obb_center - reach,
                max: obb_center + reach,
            },
        }
    })
}

/// Values computed at most once per query for some of `n` indices (the other mesh's
/// nodes or triangles, moved by the query's pose). The values grow with the entries a
/// query uses, not with `n`; the per-index stamps and slots are zeroed once per size
/// and touched only where used: a query near a large mesh touches a small part of it,
/// and a table of every value would cost more to fill than the query itself.
#[derive(Debug, Clone)]
pub(super) struct Memo<T> {
    /// The query that filled each index's slot, and the slot in `values`.
    stamp: Vec<u32>,
    slot: Vec<u32>,
    generation: u32,
    values: Vec<T>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            stamp: Vec::new(),
            slot: Vec::new(),
            generation: 0,
            values: Vec::new(),
        }
    }
}

impl<T> Memo<T> {
    /// Starts a query over `n` indices: every entry is computed again.
    pub(super) fn begin(&mut self, n: usize) {
        if self.stamp.len() != n {
            self.stamp = vec![0; n];
            self.slot = vec![0; n];
            self.generation = 0;
        }
        self.values.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.stamp.fill(0);
            self.generation = 1;
        }
    }

    /// The entry at `k`, computed by `make` on the query's first use.
    pub(super) fn get_or(&mut self, k: usize, make: impl FnOnce() -> T) -> &T {
        if self.stamp[k] != self.generation {
            self.stamp[k] = self.generation;
            self.slot[k] = self.values.len() as u32;
            self.values.push(make());
        }
        &self.values[self.slot[k] as usize]
    }
}

/// The parts of [`PairFrame::gaps`]' bound.
pub(super) struct Gaps {
    /// `b`'s sphere centre, moved.
    pub(super) c: Point3<f64>,
    pub(super) sphere: f64,
    pub(super) sphere_box: f64,
    /// `b`'s box centre in `a`'s box frame, and the gaps along `a`'s axes.
    pub(super) t: Vector3<f64>,
    pub(super) gap_a: Vector3<f64>,
    /// `b`'s box centre relative to `a`'s in `b`'s box frame, and the gaps along `b`'s
    /// axes.
    pub(super) t_b: Vector3<f64>,
    pub(super) gap_b: Vector3<f64>,
}

impl Gaps {
    pub(super) fn value(&self) -> f64 {
        self.sphere
            .max(self.sphere_box)
            .max(
                self.gap_a
                    .norm_squared()
                    .max(self.gap_b.norm_squared())
                    .sqrt(),
            )
            .max(0.0)
    }
}

/// A pair of nodes to visit, ordered by its lower bound (smallest first in the heap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The bound's bits: for non-negative floats the bit order is the numeric order.
    pub(super) key: u64,
    pub(super) i: u32,
    pub(super) j: u32,
}

impl Entry {
    pub(super) fn new(bound: f64, i: usize, j: usize) -> Entry {
        Entry {
            key: bound.max(0.0).to_bits(),
            i: i as u32,
            j: j as u32,
        }
    }

    pub(super) fn bound(&self) -> f64 {
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
    pub(super) heap: std::collections::BinaryHeap<Entry>,
    /// The other mesh's triangles, moved, with their boxes and planes.
    pub(super) triangles: Memo<MovedTriangle>,
    /// The closest pair of triangles of the previous query.
    pub(super) hint: Option<(usize, usize)>,
    /// The pairs of nodes still to visit in the threshold queries.
    pub(super) stack: Vec<(u32, u32)>,
    /// The front of [`Bvh::clear_over`]'s sweep.
    pub(super) front: Vec<(u32, u32)>,
    /// The pair of triangles that ended the last failed [`Bvh::separated`].
    pub(super) blocker: Option<(u32, u32)>,
    /// The other mesh's nodes, moved.
    pub(super) nodes: Memo<MovedNode>,
    /// The pairs of nodes bounded and of triangles tested by the decisions
    /// ([`Bvh::separated`]): a count that budgets their callers' work the same on every
    /// machine.
    pub(super) tested: usize,
}

/// A triangle of the other mesh, moved by the query's pose, with its box and plane.
pub(super) type MovedTriangle = ([Point3<f64>; 3], Aabb, Plane);

impl PairScratch {
    /// Starts a query with `other`, the moving mesh: its moved triangles and nodes are
    /// computed again, where the query needs them.
    pub(super) fn prepare(&mut self, other: &Bvh) {
        self.triangles.begin(other.triangles.len());
        self.nodes.begin(other.nodes.len());
    }

    /// The pairs of nodes bounded and of triangles tested by the decisions with this
    /// scratch.
    pub(crate) fn pairs_tested(&self) -> usize {
        self.tested
    }

    /// Triangle `k` of `other` placed by `pose`, with its box and plane (computed once
    /// per query).
    pub(super) fn placed(
        &mut self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        k: usize,
    ) -> &MovedTriangle {
        scratch_moved(&mut self.triangles, other, pose, k)
    }

    pub(super) fn moved(&mut self, other: &Bvh, pose: &Isometry3<f64>, k: usize) -> MovedTriangle {
        *self.placed(other, pose, k)
    }
}

/// Triangle `k` of `other`, placed by `pose`, with its box and plane; computed once per
/// query.
pub(super) fn scratch_moved<'c>(
    triangles: &'c mut Memo<MovedTriangle>,
    other: &Bvh,
    pose: &Isometry3<f64>,
    k: usize,
) -> &'c MovedTriangle {
    triangles.get_or(k, || {
        let t = other.triangles[k];
        let moved = [pose * t[0], pose * t[1], pose * t[2]];
        let normal = pose.rotation * other.planes[k].normal;
        let plane = Plane {
            normal,
            offset: normal.dot(&moved[0].coords),
        };
        (moved, Aabb::from_points(moved.iter()), plane)
    })
}
