//! Sweeps of one hierarchy moving rigidly past another over an interval: whether the
//! distance stays above a floor ([`Bvh::clear_over`]), the front of pairs a sweep could
//! not clear ([`Bvh::sweep_from`]), and the candidate pairs of a translation.

use nalgebra::{Isometry3, Point3, Vector3};

use super::bounds::{box_box_distance, Plane};
use super::motion::{Motion, Sweep, Swept, SweptTriangle};
use super::pairs::{descend, moved_node, scratch_moved, Memo, MovedNode, PairFrame, PairScratch};
use super::{Bvh, Kind, Node};
use crate::mesh::Aabb;
use crate::proximity::exact::{edge_axes_separate, triangle_distance};

impl Bvh {
    /// Whether `other`, moving through `motion`, stays at least `floor` from this mesh
    /// over the whole interval: a decision, not a distance, so it prunes every pair of
    /// nodes that is far enough and stops at the first pair that is not.
    ///
    /// Every bound used (the node bounds of `PairFrame`, the triangles' planes, the
    /// distance of two triangles) is a projection gap along a direction `n`, the
    /// separation of the two sets' shadows on `n`. Fixed over the interval, it stays a
    /// valid bound at every instant and falls by at most the motion of the moving part
    /// along `n` ([`Motion::toward`]): only the motion towards the other mesh counts,
    /// which is what lets a part slide past a wall, or screw along a track, in long
    /// intervals (Tang, Kim and Manocha 2009 use a directional bound of this kind in
    /// C2A).
    pub fn clear_over(
        &self,
        other: &Bvh,
        motion: &Motion,
        floor: f64,
        scratch: &mut PairScratch,
    ) -> Sweep {
        // The first pair that fails ends it: a front of one pair, not kept.
        let mut front = std::mem::take(&mut scratch.front);
        front.clear();
        front.push((0, 0));
        let sweep = self.sweep_from(other, motion, floor, scratch, &mut front, 0..1, 0);
        scratch.front = front;
        sweep
    }

    /// [`Bvh::clear_over`] from the pairs of nodes `front[roots]` (the roots' pair, or
    /// the front of an interval that contains this one), leaving a front instead of
    /// stopping at the first pair that fails: the pairs of leaves it cannot clear over
    /// the interval are appended to `front`, and once more than `cap` have failed the
    /// pairs it has not visited yet are appended too, unopened. Every pair of nodes off
    /// the front is then cleared over the interval, and so over each of its parts: a
    /// part is certified by sweeping from the front alone (front tracking, as in the
    /// bounding-volume-test-tree fronts of Ehmann and Lin 2001, here carried from an
    /// interval to its halves instead of from frame to frame). The work of a sweep that
    /// fails is kept, and `cap` bounds the work of one sweep whose interval is too long
    /// for most pairs near the world: their halves open them.
    ///
    /// The returned sweep is clear when the front is left as it was; its `upper` below
    /// `floor` means two triangles are closer than `floor` at the middle (the motion
    /// fails, and the front is incomplete).
    #[allow(clippy::too_many_arguments)]
    pub fn sweep_from(
        &self,
        other: &Bvh,
        motion: &Motion,
        floor: f64,
        scratch: &mut PairScratch,
        front: &mut Vec<(u32, u32)>,
        roots: std::ops::Range<usize>,
        cap: usize,
    ) -> Sweep {
        let mut sweep = Sweep {
            clear: true,
            upper: f64::INFINITY,
        };
        if self.is_empty() || other.is_empty() {
            return sweep;
        }
        scratch.stack.clear();
        scratch.stack.extend_from_slice(&front[roots]);
        let mut failed = 0;
        self.descend_over(
            other,
            motion,
            floor,
            scratch,
            &mut |pair, _, over| match over {
                PairOver::Separated => Next::Triangle,
                PairOver::Passed(d) => {
                    sweep.upper = sweep.upper.min(d);
                    Next::Triangle
                }
                PairOver::Failed(d) => {
                    sweep.upper = sweep.upper.min(d);
                    sweep.clear = false;
                    if d < floor {
                        // Closer than the floor at the middle: the motion fails, no front
                        // needed.
                        return Next::Stop;
                    }
                    // The pair of leaves goes on the front, whole.
                    front.push(pair);
                    failed += 1;
                    if failed <= cap {
                        Next::Leaves
                    } else {
                        Next::Stop
                    }
                }
            },
        );
        if sweep.upper >= floor {
            front.extend_from_slice(&scratch.stack);
        }
        sweep
    }

    /// The pairs of triangles (this mesh's, `other`'s) that may come nearer than `floor`
    /// while `other` moves through `motion`: every pair whose bound over the interval
    /// ([`Bvh::clear_over`]'s, nodes and triangles) is below `floor`, none left out, in
    /// `out`. A decision at any state of the interval needs only these
    /// ([`Bvh::meets_among`]); the bisection of a contact's end decides a dozen states
    /// of one interval a tolerance long, each of which would otherwise open every pair of
    /// nodes whose boxes overlap there.
    pub(crate) fn pairs_over(
        &self,
        other: &Bvh,
        motion: &Motion,
        floor: f64,
        scratch: &mut PairScratch,
        out: &mut Vec<(u32, u32)>,
    ) {
        out.clear();
        if self.is_empty() || other.is_empty() {
            return;
        }
        scratch.stack.clear();
        scratch.stack.push((0, 0));
        self.descend_over(other, motion, floor, scratch, &mut |_, (ia, ib), over| {
            if let PairOver::Failed(_) = over {
                out.push((ia as u32, ib as u32));
            }
            Next::Triangle
        });
    }

    /// The descent of the sweeps over `motion` from the pairs of nodes on
    /// `scratch.stack`: the pairs whose bound over the interval is below `floor`, down to
    /// the triangles, each pair of triangles (this mesh's, `other`'s) tested
    /// ([`Bvh::triangle_over`]) and handed to `visit` with its pair of leaves; `visit`
    /// says where to go on. A stop leaves the pairs not visited on the stack.
    fn descend_over(
        &self,
        other: &Bvh,
        motion: &Motion,
        floor: f64,
        scratch: &mut PairScratch,
        visit: &mut impl FnMut((u32, u32), (usize, usize), PairOver) -> Next,
    ) {
        scratch.prepare(other);
        let pose = &motion.pose;
        let frame = PairFrame::new(pose);
        let nodes = &mut scratch.nodes;
        let swept = Swept::of(motion);
        let mut over = |i: usize, j: usize| {
            node_bound_over(self, other, &frame, motion, &swept, nodes, (i, j), floor)
        };
        let triangles = &mut scratch.triangles;
        descend(
            self,
            other,
            floor,
            &mut scratch.stack,
            &mut over,
            &mut |pair, leaf_a: (usize, usize), leaf_b: (usize, usize)| {
                for ib in leaf_b.0..leaf_b.1 {
                    let moved = scratch_moved(triangles, other, pose, ib);
                    let body = SweptTriangle::of(other, ib, moved, pose, &swept, floor);
                    for ia in leaf_a.0..leaf_a.1 {
                        let tested = self.triangle_over(ia, moved, &body, &swept, floor);
                        match visit(pair, (ia, ib), tested) {
                            Next::Triangle => {}
                            Next::Leaves => return true,
                            Next::Stop => return false,
                        }
                    }
                }
                true
            },
        );
    }

    /// The leaf test of the sweeps: whether triangle `ia` stays at least `floor` from
    /// the moving triangle `moved` (at the middle pose; `body` its ball) over the
    /// interval. Each triangle's plane, and each direction across their edges, is a
    /// separating direction fixed over the interval, so only the motion along it counts;
    /// the exact distance at the middle comes last.
    pub(super) fn triangle_over(
        &self,
        ia: usize,
        moved: &([Point3<f64>; 3], Aabb, Plane),
        body: &SweptTriangle,
        swept: &Swept,
        floor: f64,
    ) -> PairOver {
        let (tb, bb, pb) = moved;
        let (center, center_norm, radius) = (&body.center, body.center_norm, body.radius);
        let pa = &self.planes[ia];
        if box_box_distance(&self.boxes[ia], bb) >= body.needed
            || pb.gap(&self.triangles[ia]) - body.toward_plane >= floor
            || pa.gap(tb) - swept.toward(&pa.normal, center, center_norm, radius) >= floor
            || edge_axes_separate(&self.triangles[ia], tb, |n| {
                floor + swept.toward(n, center, center_norm, radius)
            })
        {
            return PairOver::Separated;
        }
        let (d, on_a, on_b) = triangle_distance(&self.triangles[ia], tb);
        if d <= 0.0 || d - swept.toward(&((on_b - on_a) / d), center, center_norm, radius) < floor {
            PairOver::Failed(d)
        } else {
            PairOver::Passed(d)
        }
    }

    /// The pairs of triangles (this mesh's, `other`'s) whose boxes meet while `other`,
    /// placed by `pose`, translates along `u` (unit, this mesh's frame) by any amount in
    /// `[0, reach]`: the candidates of a translational separation
    /// ([`crate::check::penetration`]). `other`'s nodes are bounded by their spheres, swept.
    pub(crate) fn pairs_along(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        u: &Vector3<f64>,
        reach: f64,
        out: &mut Vec<(usize, usize)>,
    ) {
        out.clear();
        if self.is_empty() || other.is_empty() {
            return;
        }
        let along = Translation {
            pose,
            rot: pose.rotation.to_rotation_matrix(),
            d: u * reach,
        };
        let mut stack = vec![(0usize, 0usize)];
        while let Some((ia, ib)) = stack.pop() {
            let (na, nb) = (&self.nodes[ia], &other.nodes[ib]);
            if !na.aabb.overlaps(&along.node_box(nb)) {
                continue;
            }
            if let Some(children) = self.split(other, ia, ib) {
                stack.extend(children);
                continue;
            }
            let (Kind::Leaf { start: sa, end: ea }, Kind::Leaf { start: sb, end: eb }) =
                (na.kind, nb.kind)
            else {
                continue;
            };
            for tb in sb..eb {
                let box_b = along.triangle_box(&other.triangles[tb]);
                for ta in sa..ea {
                    if self.boxes[ta].overlaps(&box_b) {
                        out.push((ta, tb));
                    }
                }
            }
        }
    }
}

/// The bound over a motion of node `i` of `a` and node `j` of `b` (moving through
/// `motion`, whose middle pose `frame` places it): a cheap first test, the axis-aligned
/// boxes' distance at the middle less the farthest the node can move, then the
/// directional bound of [`PairFrame::bound_over`].
#[allow(clippy::too_many_arguments)]
fn node_bound_over(
    a: &Bvh,
    b: &Bvh,
    frame: &PairFrame,
    motion: &Motion,
    swept: &Swept,
    nodes: &mut Memo<MovedNode>,
    (i, j): (usize, usize),
    floor: f64,
) -> f64 {
    let (na, nb) = (&a.nodes[i], &b.nodes[j]);
    let mb = moved_node(nodes, frame, b, j);
    let center = mb.center - motion.pose.translation.vector;
    let center_norm = center.coords.norm();
    let far = box_box_distance(&na.aabb, &mb.aabb) - swept.reach(center_norm, nb.radius);
    if far >= floor {
        return far;
    }
    frame.bound_over(na, nb, mb, swept, &center.coords, center_norm, floor)
}

/// The moving mesh of [`Bvh::pairs_along`]: placed by `pose` (rotation `rot`), then
/// translated by any part of `d`.
struct Translation<'a> {
    pose: &'a Isometry3<f64>,
    rot: nalgebra::Rotation3<f64>,
    d: Vector3<f64>,
}

impl Translation<'_> {
    /// A box of placed points, swept along `d`.
    fn swept(&self, b: Aabb) -> Aabb {
        Aabb {
            min: b.min.inf(&(b.min + self.d)),
            max: b.max.sup(&(b.max + self.d)),
        }
    }

    /// The placed node's box, swept: its sphere's, cut by its oriented box's (whichever
    /// is tighter along each axis).
    fn node_box(&self, n: &Node) -> Aabb {
        let (c, r) = (self.pose * n.center, Vector3::repeat(n.radius));
        let (o, reach) = (
            self.pose * n.obb_center,
            (self.rot.matrix() * n.axes).abs() * n.half,
        );
        self.swept(Aabb {
            min: (c - r).sup(&(o - reach)),
            max: (c + r).inf(&(o + reach)),
        })
    }

    /// The placed triangle's box, swept.
    fn triangle_box(&self, t: &[Point3<f64>; 3]) -> Aabb {
        self.swept(Aabb::from_points(
            [self.pose * t[0], self.pose * t[1], self.pose * t[2]].iter(),
        ))
    }
}

/// Where [`Bvh::descend_over`] goes on after a pair of triangles.
enum Next {
    /// To the next pair of triangles.
    Triangle,
    /// To the next pair of leaves.
    Leaves,
    /// Nowhere: the descent ends.
    Stop,
}

/// What a sweep's leaf test found for a pair of triangles.
pub(super) enum PairOver {
    /// A separating direction clears the floor over the interval.
    Separated,
    /// The exact distance at the middle, less the motion along it, clears the floor.
    Passed(f64),
    /// Not cleared: the exact distance at the middle.
    Failed(f64),
}
