//! Distances between two hierarchies: best-first branch and bound, exact or within a
//! [`Slack`], and the planner's decision ([`Bvh::separated`]).

use nalgebra::{Isometry3, Point3};

use super::bounds::box_box_distance;
use super::motion::Sweep;
use super::pairs::{
    descend, moved_node, scratch_moved, Entry, Memo, MovedTriangle, PairFrame, PairScratch,
};
use super::{Bvh, Closest, Kind};
use crate::proximity::exact::{edge_axes_separate, triangle_distance};

/// How far a distance query may stop short of the exact distance: once its lower bound
/// is within `absolute + relative * distance` of the best pair found, or has reached
/// `enough`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slack {
    /// Absolute slack (m).
    pub absolute: f64,
    /// Relative slack, in [0, 1).
    pub relative: f64,
    /// A lower bound that is enough for the caller (m; infinite: none is).
    pub enough: f64,
}

impl Slack {
    /// No slack: the exact distance.
    pub const EXACT: Slack = Slack {
        absolute: 0.0,
        relative: 0.0,
        enough: f64::INFINITY,
    };
}

/// The answer of a best-first search that ended with the lower bound `lower`: the best
/// pair found, if any, bracketed by the bound; else, with no pair below `upper`, either
/// nothing (the search ended there: the distance is at least `upper`) or only the bound
/// (it stopped early on `enough` before meeting any pair: no upper bound but infinity).
fn bounded(best: Closest, found: bool, lower: f64, upper: f64) -> Option<Bounded> {
    if found {
        return Some(Bounded {
            closest: best,
            lower: lower.min(best.distance),
        });
    }
    (lower < upper).then_some(Bounded {
        closest: Closest {
            distance: f64::INFINITY,
            ..best
        },
        lower,
    })
}

/// The best-first queue of a distance query's node pairs. A pair whose bound is at least
/// the cut-off never opens (the cut-off only falls as the best pair improves): it is not
/// queued, and the least such bound is kept for the answer's lower bound.
struct Queue<'h> {
    heap: &'h mut std::collections::BinaryHeap<Entry>,
    skipped: f64,
}

impl<'h> Queue<'h> {
    fn new(heap: &'h mut std::collections::BinaryHeap<Entry>) -> Queue<'h> {
        heap.clear();
        Queue {
            heap,
            skipped: f64::INFINITY,
        }
    }

    /// Queues the pair `(i, j)` at `bound` unless it is at least `cut`.
    fn offer(&mut self, cut: f64, bound: f64, i: usize, j: usize) {
        let e = Entry::new(bound, i, j);
        if e.bound() >= cut {
            self.skipped = self.skipped.min(e.bound());
        } else {
            self.heap.push(e);
        }
    }
}

impl Bvh {
    /// The least distance between this mesh and `other` placed by `pose` (other's frame
    /// to this mesh's frame), if below `upper` (`None` otherwise). Stops early at zero.
    pub fn distance_to(&self, other: &Bvh, pose: &Isometry3<f64>, upper: f64) -> Option<Closest> {
        self.distance_with(
            other,
            pose,
            upper,
            Slack::EXACT,
            &mut PairScratch::default(),
        )
        .map(|b| b.closest)
    }

    /// [`Bvh::distance_to`] with a scratch kept between queries of the same pair: the
    /// other mesh's triangles are moved lazily (once per query, only where the search
    /// goes), and the previous query's closest pair of triangles gives the first upper
    /// bound (consecutive states of a path are close, so it is usually nearly tight).
    ///
    /// The search is best-first: pairs of nodes in order of their lower bound. The
    /// smallest bound still queued is a lower bound of the distance, the best pair found
    /// an upper bound; the search ends when they are within the slack of each other
    /// ([`Slack::EXACT`]: exact), which saves most of the work on nearly parallel surfaces,
    /// where many pairs of triangles lie within a hair of the minimum.
    pub fn distance_with(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        upper: f64,
        slack: Slack,
        scratch: &mut PairScratch,
    ) -> Option<Bounded> {
        if self.is_empty() || other.is_empty() {
            return None;
        }
        scratch.prepare(other);
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
                    return Some(Bounded::exact(best));
                }
            }
        }
        let frame = PairFrame::new(pose);
        let nodes = &mut scratch.nodes;
        let mut bound = |i: usize, j: usize| -> f64 {
            let mb = moved_node(nodes, &frame, other, j);
            frame.gaps(&self.nodes[i], &other.nodes[j], mb).value()
        };
        let cut = |best: &Closest| {
            (best.distance - slack.absolute - slack.relative * best.distance).min(slack.enough)
        };
        let mut queue = Queue::new(&mut scratch.heap);
        queue.offer(f64::INFINITY, bound(0, 0), 0, 0);
        let mut lower = best.distance;
        while let Some(e) = queue.heap.pop() {
            if e.bound() >= cut(&best) {
                lower = e.bound().min(best.distance);
                break;
            }
            let (i, j) = (e.i as usize, e.j as usize);
            if let Some(children) = self.split(other, i, j) {
                let c = cut(&best);
                for (ci, cj) in children {
                    queue.offer(c, bound(ci, cj), ci, cj);
                }
                continue;
            }
            let (Kind::Leaf { start, end }, Kind::Leaf { start: s2, end: e2 }) =
                (self.nodes[i].kind, other.nodes[j].kind)
            else {
                continue;
            };
            let touching = self.nearest_in_leaves(
                other,
                pose,
                (start..end, s2..e2),
                &mut scratch.triangles,
                &mut best,
                &mut best_pair,
            );
            if touching {
                scratch.hint = best_pair;
                return Some(Bounded::exact(best));
            }
        }
        let skipped = queue.skipped;
        let lower = lower.min(skipped.min(best.distance));
        if best_pair.is_some() {
            scratch.hint = best_pair;
        }
        bounded(best, best_pair.is_some(), lower, upper)
    }

    /// The two pairs a pair of nodes splits into, `None` for two leaves: the inner
    /// node's children, or those of the larger sphere when both are inner. Every
    /// traversal of two trees opens its pairs this way.
    pub(super) fn split(&self, other: &Bvh, i: usize, j: usize) -> Option<[(usize, usize); 2]> {
        let (a, b) = (&self.nodes[i], &other.nodes[j]);
        match (a.kind, b.kind) {
            (Kind::Leaf { .. }, Kind::Leaf { .. }) => None,
            (Kind::Inner { left, right }, Kind::Leaf { .. }) => Some([(left, j), (right, j)]),
            (Kind::Inner { left, right }, Kind::Inner { .. }) if a.radius >= b.radius => {
                Some([(left, j), (right, j)])
            }
            (_, Kind::Inner { left, right }) => Some([(i, left), (i, right)]),
        }
    }

    /// Measures the pairs of this mesh's triangles `leaves.0` and the other's
    /// `leaves.1` (moved by `pose` into `moved`, the scratch's) that their boxes and
    /// planes leave closer than `best`, keeping the closest; true when the meshes touch.
    fn nearest_in_leaves(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        leaves: (std::ops::Range<usize>, std::ops::Range<usize>),
        moved: &mut Memo<MovedTriangle>,
        best: &mut Closest,
        best_pair: &mut Option<(usize, usize)>,
    ) -> bool {
        for ib in leaves.1 {
            let (tb, bb, pb) = scratch_moved(moved, other, pose, ib);
            for ia in leaves.0.clone() {
                if box_box_distance(&self.boxes[ia], bb) >= best.distance
                    || self.planes[ia].gap(tb) >= best.distance
                    || pb.gap(&self.triangles[ia]) >= best.distance
                {
                    continue;
                }
                let found = triangle_distance(&self.triangles[ia], tb);
                if improve(best, best_pair, (ia, ib), found) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether `other`, placed by `pose`, is at least `floor` from this mesh: a decision,
    /// as [`Bvh::clear_over`] with no motion, but with the static bounds only (a sphere
    /// test, then the oriented boxes' face axes), depth first, the nearer pair first,
    /// ending at the first pair of triangles closer than `floor`. This is the planner's
    /// state validity query; it visits far fewer pairs than a distance query (a pair
    /// farther than `floor` is never opened) and costs a fraction of a sweep per pair.
    /// The returned sweep's `upper` is the least triangle distance met.
    pub fn separated(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        floor: f64,
        scratch: &mut PairScratch,
    ) -> Sweep {
        let mut sweep = Sweep {
            clear: true,
            upper: f64::INFINITY,
        };
        if self.is_empty() || other.is_empty() {
            return sweep;
        }
        scratch.prepare(other);
        if let Some(d) = self.blocker_meets(other, pose, floor, scratch) {
            return Sweep {
                clear: false,
                upper: d,
            };
        }
        let frame = PairFrame::new(pose);
        let nodes = &mut scratch.nodes;
        // The pairs of nodes bounded and of triangles tested.
        let work = std::cell::Cell::new(0);
        let mut bound = |i: usize, j: usize| {
            work.set(work.get() + 1);
            let mb = moved_node(nodes, &frame, other, j);
            frame.static_bound(&self.nodes[i], &other.nodes[j], mb, floor)
        };
        let (triangles, blocker) = (&mut scratch.triangles, &mut scratch.blocker);
        scratch.stack.clear();
        scratch.stack.push((0, 0));
        descend(
            self,
            other,
            floor,
            &mut scratch.stack,
            &mut bound,
            &mut |_, leaf_a: (usize, usize), leaf_b: (usize, usize)| {
                work.set(work.get() + (leaf_a.1 - leaf_a.0) * (leaf_b.1 - leaf_b.0));
                let leaves = (leaf_a.0..leaf_a.1, leaf_b.0..leaf_b.1);
                match self.closer_pair(other, pose, leaves, triangles, floor, &mut sweep.upper) {
                    Some(pair) => {
                        sweep.clear = false;
                        *blocker = Some(pair);
                        false
                    }
                    None => true,
                }
            },
        );
        scratch.tested += work.get();
        sweep
    }

    /// The distance of the pair of triangles that ended the previous decision, if it is
    /// still below `floor`: the planner's decisions come in runs about one place (a
    /// step, a shorter one, a slide), and a state in collision is most often refused by
    /// the same two triangles.
    fn blocker_meets(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        floor: f64,
        scratch: &mut PairScratch,
    ) -> Option<f64> {
        let (ia, ib) = scratch.blocker?;
        let (ia, ib) = (ia as usize, ib as usize);
        if ia >= self.triangles.len() || ib >= other.triangles.len() {
            return None;
        }
        scratch.tested += 1;
        let (tb, _, _) = scratch.placed(other, pose, ib);
        let (d, _, _) = triangle_distance(&self.triangles[ia], tb);
        (d < floor).then_some(d)
    }

    /// The first pair of this mesh's triangles `leaves.0` and the other's `leaves.1`
    /// (moved by `pose` into `moved`) closer than `floor`, after the cheap separations
    /// (boxes, planes, the edges' cross directions); `upper` keeps the least distance
    /// measured.
    fn closer_pair(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        leaves: (std::ops::Range<usize>, std::ops::Range<usize>),
        moved: &mut Memo<MovedTriangle>,
        floor: f64,
        upper: &mut f64,
    ) -> Option<(u32, u32)> {
        for ib in leaves.1 {
            let moved = scratch_moved(moved, other, pose, ib);
            for ia in leaves.0.clone() {
                let Some(d) = self.pair_below(ia, moved, floor) else {
                    continue;
                };
                *upper = upper.min(d);
                if d < floor {
                    return Some((ia as u32, ib as u32));
                }
            }
        }
        None
    }

    /// The distance of triangle `ia` and the placed triangle `moved`, `None` when a cheap
    /// separation (boxes, planes, the edges' cross directions) shows it is at least
    /// `floor`.
    fn pair_below(&self, ia: usize, moved: &MovedTriangle, floor: f64) -> Option<f64> {
        let (tb, bb, pb) = moved;
        if box_box_distance(&self.boxes[ia], bb) >= floor
            || pb.gap(&self.triangles[ia]) >= floor
            || self.planes[ia].gap(tb) >= floor
            || edge_axes_separate(&self.triangles[ia], tb, |_| floor)
        {
            return None;
        }
        Some(triangle_distance(&self.triangles[ia], tb).0)
    }

    /// Whether a pair of triangles among `pairs` (this mesh's, `other`'s) is nearer than
    /// `floor` when `other` is placed by `pose`: [`Bvh::separated`]'s decision, not
    /// clear, when `pairs` holds every pair that can be that near there (those of
    /// [`Bvh::pairs_over`] for an interval that contains the state).
    pub(crate) fn meets_among(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        pairs: &[(u32, u32)],
        floor: f64,
        scratch: &mut PairScratch,
    ) -> bool {
        scratch.prepare(other);
        pairs.iter().any(|&(ia, ib)| {
            let moved = scratch_moved(&mut scratch.triangles, other, pose, ib as usize);
            self.pair_below(ia as usize, moved, floor)
                .is_some_and(|d| d < floor)
        })
    }

    /// A pair of triangles (this mesh's, `other`'s) that meet when `other` is placed by
    /// `pose`, `None` when the meshes do not meet: [`Bvh::separated`] at a floor that
    /// only an intersection is below.
    pub(crate) fn meeting_pair(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        scratch: &mut PairScratch,
    ) -> Option<(usize, usize)> {
        let sweep = self.separated(other, pose, f64::MIN_POSITIVE, scratch);
        if sweep.clear {
            return None;
        }
        scratch.blocker.map(|(a, b)| (a as usize, b as usize))
    }
}

/// Keeps triangle pair `pair` at `(distance, on_a, on_b)` if it is closer than `best`;
/// returns true when the meshes touch (nothing can be closer).
pub(super) fn improve(
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

/// The result of a query with slack: the best pair found (an upper bound of the
/// distance) and a lower bound, at most the slack below it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounded {
    /// The closest pair found; its distance is an upper bound.
    pub closest: Closest,
    /// A lower bound of the distance.
    pub lower: f64,
}

impl Bounded {
    pub(super) fn exact(closest: Closest) -> Bounded {
        Bounded {
            closest,
            lower: closest.distance,
        }
    }

    /// The upper bound (the distance of the closest pair found).
    pub fn upper(&self) -> f64 {
        self.closest.distance
    }
}
