//! Continuous contact between haptic frames: the first time of contact of the held
//! object's motion over one cycle, by conservative advancement of the pointshell points
//! against the distance field (Mirtich 1996; Tang, Kim and Manocha 2009 for the
//! advancement of points against a distance bound).
//!
//! The thesis tests points against the field once per cycle (3.10), so a motion longer
//! than the object's thickness per cycle, or a push harder than the penalty can hold,
//! carries the held object through a thin wall. Here the coupling's proposed motion of the
//! held (distance-field) object, its grasp frame going from `(c_0, R_0)` to
//! `(c_0 + dx, exp(dw) R_0)`, is swept as `(c_0 + t dx, exp(t dw) R_0)`, `t` in `[0, 1]`,
//! and cut at the first `t` where a point would go deeper than it may:
//!
//! - a point outside at `t = 0`, or in contact, may go as deep as the *penetration
//!   limit* `p` (the scene's `max_penetration`, at most half the held object's thinnest
//!   half-thickness, so no point crosses a thin part unseen), deep enough for the penalty
//!   contact to hold the object there; the sweep never cuts a motion that stays within
//!   it, so contacts shallower than `p` behave exactly as the thesis's discrete contact;
//! - a point at the limit (its margin `d + p` under 1% of `p`), or beyond it (placed
//!   there by a deformation, a teleport or rounding), may not go deeper at all: a probe
//!   of the first `1e-3 p` of its motion says whether the motion deepens it, and if so the
//!   motion is cut at `t = 0` (the slide below then keeps its tangential part); if not,
//!   it is free this cycle. A point that a deformation carried beyond the limit pushes
//!   the held object back out at the start of the next cycle ([`push_out`]).
//!
//! A point `x` (world) moves in the field's frame by at most
//! `M = |dx| + |dw| (|x - c_0| + |dx|)` per unit `t` (the rotation about the moving grasp
//! point `c(t)` moves it by at most `theta |x - c(t)|`),
//! so with the field's Lipschitz constant `L` its margin `phi = d + p` cannot
//! vanish before `t + phi / (L M)`: each point carries that safe time, and the sweep
//! advances to the least one and re-tests only that point (event-driven conservative
//! advancement). A point blocks when its margin falls below a tenth of the limit
//! (and below half its margin at `t = 0`, so a point near its limit approaches it
//! geometrically, cycle after cycle, instead of freezing the object). Candidates come
//! from the nested point tree, culled with the same bound: a node whose sphere (its
//! radius taken at face value, as the traversal's culling does) cannot come within the
//! limit of the surface during the sweep is skipped with its subtree, and so is one the
//! traversal's temporal coherence already proved far enough.
//!
//! Everything is bounded by counts, not time: a node budget for the candidate search
//! (levels completed or not started, as in the traversal) and an evaluation budget for
//! the advancement, after which the sweep stops where it is (still safe). So replays are
//! deterministic, and the cycle allocation-free.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

use super::distance::ProxyCache;
use super::distance::{cached_distance, cached_distance_above, DistanceQuery, Lookup};
use super::params::DEFAULT_NODE_BUDGET;
use crate::contact::ContactShell;
use crate::contact::Traversal;
use crate::proximity::rigid::screw_bound;

/// Points at the limit a sweep keeps for the slide ([`ShellSweep::at_limit`]).
pub const MAX_AT_LIMIT: usize = 32;

/// A point whose margin is below this fraction of the limit is *at* the limit.
const NEAR: f64 = 0.01;

/// Settings of the sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepParams {
    /// How deep a point may go (scene units).
    pub penetration_limit: f64,
    /// Node budget of the candidate search.
    pub node_budget: usize,
    /// Distance evaluations of the advancement, at most.
    pub evaluation_budget: usize,
}

impl SweepParams {
    /// A sweep with penetration limit `limit` and the default budgets.
    pub fn with_limit(limit: f64) -> Self {
        SweepParams {
            penetration_limit: limit,
            node_budget: DEFAULT_NODE_BUDGET,
            evaluation_budget: 4000,
        }
    }
}

/// The motion of the held object over one cycle: its grasp frame moves from `from` by a
/// world translation `dx` and a world rotation vector `dw`; its body frame is the grasp
/// frame translated by `-grasp` (the body-frame grasp point).
///
/// A path check's interval ([`crate::proximity::bvh::Motion`]) is the same kind of
/// screw motion, parameterized from its middle so that its bounds are directional; a
/// cycle starts where the last one stopped and is cut at its first contact time, so it
/// is parameterized from its start, and bounded by [`screw_bound`] about the moving grasp
/// point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleMotion {
    /// Grasp frame at `t = 0`.
    pub from: Isometry3<f64>,
    /// World translation of the grasp point over the cycle.
    pub dx: Vector3<f64>,
    /// World rotation vector over the cycle.
    pub dw: Vector3<f64>,
    /// Body-frame grasp point.
    pub grasp: Point3<f64>,
}

impl CycleMotion {
    /// The grasp frame at `t`.
    pub fn grasp_at(&self, t: f64) -> Isometry3<f64> {
        Isometry3::from_parts(
            Translation3::from(self.from.translation.vector + self.dx * t),
            UnitQuaternion::from_scaled_axis(self.dw * t) * self.from.rotation,
        )
    }

    /// Whether a sweep with penetration limit `limit` has anything to do: the limit is
    /// on and the object moves.
    fn sweeps(&self, limit: f64) -> bool {
        limit > 0.0 && !(self.dx.norm() == 0.0 && self.dw.norm() == 0.0)
    }

    /// The body frame at `t`.
    pub fn body_at(&self, t: f64) -> Isometry3<f64> {
        self.grasp_at(t) * Translation3::from(-self.grasp.coords)
    }

    /// Bound on how far a point at world position `x` (plus `radius`) moves in the body
    /// frame per unit `t`.
    fn speed(&self, x: &Point3<f64>, radius: f64) -> f64 {
        let c0 = Point3::from(self.from.translation.vector);
        let dx = self.dx.norm();
        // The grasp point moves too, so the lever arm grows by up to |dx|.
        screw_bound(dx, self.dw.norm(), (x - c0).norm() + radius + dx)
    }
}

impl SweepResult {
    /// The whole motion is safe; nothing tested.
    pub const WHOLE: SweepResult = SweepResult {
        t: 1.0,
        blocking: None,
        candidates: 0,
        evaluations: 0,
        shared: 0,
    };
}

/// The Lipschitz constant a sweep uses for `field` (1 where the field gives none).
pub fn lipschitz<D: DistanceQuery>(field: &D) -> f64 {
    field.lipschitz().unwrap_or(1.0).max(1e-12)
}

/// The point that stopped a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Blocking {
    /// Pointshell point index.
    pub point: u32,
    /// World position of the point.
    pub position: Point3<f64>,
    /// The held object's outward surface normal at the point (world; the gradient of
    /// its distance): a motion of the held object with velocity `v` at the point takes
    /// the point deeper iff `v . normal > 0`.
    pub normal: Vector3<f64>,
}

/// What a sweep found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepResult {
    /// The fraction of the motion that is safe (1: all of it).
    pub t: f64,
    /// The contact that blocked the motion.
    pub blocking: Option<Blocking>,
    /// Points that could touch during the sweep.
    pub candidates: usize,
    /// Distance evaluations made (candidate search and advancement).
    pub evaluations: usize,
    /// Of those, the ones not made again: the candidate search's taken from the
    /// traversal's lookups at the motion's start ([`Traversal::lookups_at`]), and a
    /// slide's taken from the last sweep from the same pose.
    pub shared: usize,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    point: u32,
    /// World position (fixed during the sweep: only the held object moves).
    world: Point3<f64>,
    /// Block when the margin falls to this.
    block_at: f64,
    speed: f64,
    /// Safe up to this `t`.
    safe_until: f64,
}

/// A point within reach of a gathered motion, with its distance at the motion's start
/// and, once needed, the held object's outward normal there.
#[derive(Debug, Clone, Copy)]
struct Near {
    point: u32,
    world: Point3<f64>,
    d0: f64,
    /// [`outward_normal`] at the start pose; `None` until a sweep from that pose needs it.
    normal: Option<Vector3<f64>>,
}

/// A candidate's safe time, ordered so that [`BinaryHeap`] pops the least first.
#[derive(Debug, Clone, Copy)]
struct Event(f64, u32);

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Event {}

impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

/// Reusable buffers of the sweep of one pointshell.
#[derive(Debug, Clone)]
pub struct ShellSweep {
    /// Points the last gather found within reach of the motion.
    near: Vec<Near>,
    candidates: Vec<Candidate>,
    /// The candidates by safe time (a min-heap).
    events: BinaryHeap<Event>,
    /// Points at the limit that this motion deepens (at most [`MAX_AT_LIMIT`]).
    at_limit: Vec<Blocking>,
    current: Vec<u32>,
    next: Vec<u32>,
    seen: Vec<bool>,
    q_abs: Vec<f64>,
    /// One per point against a field that uses them ([`ShellSweep::for_field`]); else empty.
    proxy_cache: Vec<ProxyCache>,
    /// The start pose (grasp frame) at which the advancement evaluated the `near`
    /// distances (not set by the candidate search, whose composed transform rounds
    /// differently).
    near_from: Option<Isometry3<f64>>,
    /// The start pose the `near` normals belong to.
    normals_from: Option<Isometry3<f64>>,
}

/// What the sweep of one motion works with.
struct SweepInput<'a, D> {
    shell: &'a ContactShell,
    field: &'a D,
    shell_pose: &'a Isometry3<f64>,
    q: &'a [f64],
    motion: &'a CycleMotion,
    params: &'a SweepParams,
    /// The field's Lipschitz constant.
    lip: f64,
}

impl<D> Clone for SweepInput<'_, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for SweepInput<'_, D> {}

impl ShellSweep {
    /// Allocates every buffer for `shell`.
    pub fn new(shell: &ContactShell) -> Self {
        ShellSweep {
            near: Vec::with_capacity(shell.len()),
            candidates: Vec::with_capacity(shell.len()),
            events: BinaryHeap::with_capacity(shell.len()),
            at_limit: Vec::with_capacity(MAX_AT_LIMIT),
            current: Vec::with_capacity(shell.tree.num_nodes()),
            next: Vec::with_capacity(shell.tree.num_nodes()),
            seen: vec![false; shell.len()],
            q_abs: vec![0.0; shell.r()],
            proxy_cache: Vec::new(),
            near_from: None,
            normals_from: None,
        }
    }

    /// The buffers for sweeps of `shell` against `field`, with a [`ProxyCache`] per point
    /// if the field uses them (a deformed distance field: the sweep queries the same
    /// points cycle after cycle); otherwise [`ShellSweep::new`].
    pub fn for_field<D: DistanceQuery>(shell: &ContactShell, field: &D) -> Self {
        let mut sweep = ShellSweep::new(shell);
        if field.uses_proxy_cache() {
            sweep.proxy_cache = vec![ProxyCache::default(); shell.len()];
        }
        sweep
    }

    /// Forgets the distances and normals kept from the last sweep's start pose, so that
    /// the next [`Self::continue_contact`] looks its points up again (for a caller that
    /// changed the field or the pointshell since).
    pub fn forget_distances(&mut self) {
        self.near_from = None;
        self.normals_from = None;
    }

    /// The points at the limit that the last sweep's motion would take deeper (each
    /// blocks it at `t = 0`), at most [`MAX_AT_LIMIT`]: the contacts a slide must respect.
    pub fn at_limit(&self) -> &[Blocking] {
        &self.at_limit
    }

    /// The safe fraction of `motion` for the pointshell `shell` (at world pose
    /// `shell_pose`, reduced coordinates `q`) against the held object's `field`. A
    /// `traversal` of the same pair at the motion's start lends its temporal-coherence
    /// bounds ([`Traversal::clearance_bound`]): subtrees it proved far enough are skipped
    /// without a lookup.
    #[allow(clippy::too_many_arguments)]
    pub fn first_contact<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        shell_pose: &Isometry3<f64>,
        q: &[f64],
        motion: &CycleMotion,
        params: &SweepParams,
        traversal: Option<&Traversal>,
    ) -> SweepResult {
        let mut result = SweepResult::WHOLE;
        self.near.clear();
        self.near_from = None;
        self.normals_from = None;
        let limit = params.penetration_limit;
        if !motion.sweeps(limit) {
            return result;
        }
        let lip = lipschitz(field);
        for (a, &x) in self.q_abs.iter_mut().zip(q) {
            *a = x.abs();
        }
        let body0 = motion.body_at(0.0).inverse();
        let to_body0 = body0 * shell_pose;
        self.gather(
            shell,
            field,
            shell_pose,
            &to_body0,
            q,
            motion,
            params,
            lip,
            traversal,
            &mut result,
        );
        self.normals_from = Some(motion.from);
        let input = SweepInput {
            shell,
            field,
            shell_pose,
            q,
            motion,
            params,
            lip,
        };
        self.advance(&input, true, &mut result);
        result
    }

    /// [`Self::first_contact`] for a motion that continues the last one swept (a slide of
    /// its rest, [`slide`]), in the same cycle (the field and the pointshell unchanged):
    /// the points gathered for the last motion cover it (the rests translate by at most
    /// `|dx|` and turn by at most `|dw|` in all), so only they are tested again, without a
    /// new search of the tree. A slide from where the last motion started (it was stopped
    /// at once) reuses the normals found there, and, from the second slide on, the
    /// distances.
    pub fn continue_contact<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        shell_pose: &Isometry3<f64>,
        q: &[f64],
        motion: &CycleMotion,
        params: &SweepParams,
    ) -> SweepResult {
        let mut result = SweepResult::WHOLE;
        let limit = params.penetration_limit;
        if !motion.sweeps(limit) {
            return result;
        }
        let lip = lipschitz(field);
        // The same start pose, bit for bit: the stored distances and normals are what the
        // advancement would compute again.
        let fresh = self.near_from == Some(motion.from);
        if self.normals_from != Some(motion.from) {
            for n in &mut self.near {
                n.normal = None;
            }
            self.normals_from = Some(motion.from);
        }
        if fresh {
            // Counted as the evaluations they replace: the budget, and so the result,
            // are those of a sweep that made them.
            result.evaluations += self.near.len();
            result.shared += self.near.len();
        }
        let input = SweepInput {
            shell,
            field,
            shell_pose,
            q,
            motion,
            params,
            lip,
        };
        self.advance(&input, fresh, &mut result);
        self.near_from = Some(motion.from);
        result
    }

    /// Classifies the gathered points for the motion and runs the conservative
    /// advancement over the candidates.
    fn advance<D: DistanceQuery>(
        &mut self,
        input: &SweepInput<'_, D>,
        fresh: bool,
        result: &mut SweepResult,
    ) {
        self.classify(input, fresh, result);
        result.candidates = self.candidates.len();
        self.advance_events(input, result);
    }

    /// Classifies the gathered points for the motion (distance at its `t = 0` stored by
    /// the gather if `fresh`, else evaluated): those at the limit that the motion takes
    /// deeper block at once, those that could reach the limit become candidates.
    fn classify<D: DistanceQuery>(
        &mut self,
        input: &SweepInput<'_, D>,
        fresh: bool,
        result: &mut SweepResult,
    ) {
        let limit = input.params.penetration_limit;
        self.candidates.clear();
        self.at_limit.clear();
        let body0 = input.motion.body_at(0.0);
        let to_body0 = body0.inverse();
        for k in 0..self.near.len() {
            let d0 = if fresh {
                self.near[k].d0
            } else {
                self.measure_start(k, input.field, &to_body0, result)
            };
            let Near { point, world, .. } = self.near[k];
            let margin = d0 + limit;
            let speed = input.motion.speed(&world, 0.0).max(1e-300);
            if margin <= NEAR * limit {
                self.block_if_deeper(k, input, &body0, d0, speed, result);
            } else if margin - input.lip * speed <= 0.0 {
                self.candidates.push(Candidate {
                    point,
                    world,
                    block_at: (0.1 * limit).min(0.5 * margin),
                    speed,
                    safe_until: margin / (input.lip * speed),
                });
            }
        }
    }

    /// The distance of near point `k` at the motion's start (`to_body0` takes the world
    /// to the held object's body there), measured and kept.
    fn measure_start<D: DistanceQuery>(
        &mut self,
        k: usize,
        field: &D,
        to_body0: &Isometry3<f64>,
        result: &mut SweepResult,
    ) -> f64 {
        result.evaluations += 1;
        let Near { point, world, .. } = self.near[k];
        let d = cached_distance(
            field,
            &mut self.proxy_cache,
            point as usize,
            &(to_body0 * world),
        );
        self.near[k].d0 = d;
        d
    }

    /// Near point `k`, at (or, after a deformation or rounding, beyond) the limit at
    /// distance `d0`, moving at `speed`: no motion may take it deeper. A probe of the
    /// first `1e-3 p` of its motion says whether this one does; if so it blocks at once
    /// (a candidate blocking at the start, and a blocking contact while there is room).
    fn block_if_deeper<D: DistanceQuery>(
        &mut self,
        k: usize,
        input: &SweepInput<'_, D>,
        body0: &Isometry3<f64>,
        d0: f64,
        speed: f64,
        result: &mut SweepResult,
    ) {
        let limit = input.params.penetration_limit;
        let Near { point, world, .. } = self.near[k];
        let h = (1e-3 * limit / speed).min(1.0);
        let y = input.motion.body_at(h).inverse() * world;
        let dh = cached_distance(input.field, &mut self.proxy_cache, point as usize, &y);
        result.evaluations += 1;
        if dh >= d0 - 1e-2 * (h * speed) {
            return;
        }
        if self.at_limit.len() < MAX_AT_LIMIT {
            let normal = self.normal_at(k, input, body0);
            self.at_limit.push(Blocking {
                point,
                position: world,
                normal,
            });
        }
        self.candidates.push(Candidate {
            point,
            world,
            block_at: f64::INFINITY,
            speed,
            safe_until: 0.0,
        });
    }

    /// The held object's outward normal at near point `k` ([`outward_normal`], the
    /// object's body at `body0`), found once per sweep.
    fn normal_at<D: DistanceQuery>(
        &mut self,
        k: usize,
        input: &SweepInput<'_, D>,
        body0: &Isometry3<f64>,
    ) -> Vector3<f64> {
        if let Some(n) = self.near[k].normal {
            return n;
        }
        let point = self.near[k].point as usize;
        let fallback = input.shell_pose.rotation * input.shell.normal(point, input.q);
        let limit = input.params.penetration_limit;
        let n = outward_normal(input.field, body0, &self.near[k].world, limit, fallback);
        self.near[k].normal = Some(n);
        n
    }

    /// Event-driven conservative advancement over the candidates: the candidate safe for
    /// the least time is re-tested next (a binary heap; each candidate is in it once),
    /// until the motion ends, a candidate blocks or the evaluation budget is spent.
    fn advance_events<D: DistanceQuery>(
        &mut self,
        input: &SweepInput<'_, D>,
        result: &mut SweepResult,
    ) {
        let SweepInput {
            shell,
            field,
            shell_pose,
            q,
            motion,
            params,
            lip,
        } = *input;
        let limit = params.penetration_limit;
        self.events.clear();
        self.events.extend(
            self.candidates
                .iter()
                .enumerate()
                .map(|(i, c)| Event(c.safe_until, i as u32)),
        );
        // Nothing within reach: the whole motion is safe.
        let mut t = if self.events.is_empty() { 1.0 } else { 0.0f64 };
        while let Some(Event(next_t, i)) = self.events.pop() {
            let i = i as usize;
            if next_t >= 1.0 {
                t = 1.0;
                break;
            }
            if result.evaluations >= params.evaluation_budget {
                // Out of budget: stop where it is proven safe.
                t = next_t.max(t);
                break;
            }
            t = next_t.max(t);
            let body = motion.body_at(t).inverse();
            let c = self.candidates[i];
            let d = cached_distance(
                field,
                &mut self.proxy_cache,
                c.point as usize,
                &(body * c.world),
            );
            result.evaluations += 1;
            let margin = d + limit;
            if margin <= c.block_at {
                let fallback = shell_pose.rotation * shell.normal(c.point as usize, q);
                result.blocking = Some(Blocking {
                    point: c.point,
                    position: c.world,
                    normal: outward_normal(field, &motion.body_at(t), &c.world, limit, fallback),
                });
                break;
            }
            self.candidates[i].safe_until = t + margin / (lip * c.speed);
            self.events
                .push(Event(self.candidates[i].safe_until, i as u32));
        }
        result.t = t.clamp(0.0, 1.0);
    }

    /// Collects the points that could go deeper than the limit during the sweep.
    #[allow(clippy::too_many_arguments)]
    fn gather<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        shell_pose: &Isometry3<f64>,
        to_body0: &Isometry3<f64>,
        q: &[f64],
        motion: &CycleMotion,
        params: &SweepParams,
        lip: f64,
        traversal: Option<&Traversal>,
        result: &mut SweepResult,
    ) {
        let limit = params.penetration_limit;
        let tree = &shell.tree;
        let roots = tree.depth_offsets[1];
        let budget = params.node_budget.max(roots);
        self.current.clear();
        self.current.extend(0..roots as u32);
        self.seen.fill(false);
        // The traversal of this cycle looked up many of the same points at the same pose.
        let shared = traversal.and_then(|tr| tr.lookups_at(to_body0, q));
        let mut visited = 0usize;
        for depth in 0..tree.depths() {
            if self.current.is_empty() || (depth > 0 && visited + self.current.len() > budget) {
                break;
            }
            visited += self.current.len();
            self.next.clear();
            for k in 0..self.current.len() {
                let node = self.current[k] as usize;
                let s = tree.node_point[node] as usize;
                let known = shared.and_then(|l| l.get(s));
                let p = known.map_or_else(|| shell.position(s, q), |(_, p)| p);
                let world = shell_pose * p;
                let radius = tree.radius(node, &self.q_abs);
                // The subtree lies within `radius` of the node's point, taken at face value
                // as the traversal does (thesis 3.10); the motion is bounded with `L`.
                let reach = radius + lip * motion.speed(&world, radius) - limit;
                // The traversal proved the subtree at least this far: no lookup needed.
                if let Some(tr) = traversal {
                    if radius + tr.clearance_bound(node) > reach {
                        continue;
                    }
                }
                // A shared lookup counts as an evaluation: the budgets, and so the
                // result, are those of a sweep that made it.
                result.evaluations += 1;
                let lookup = || to_body0 * p;
                let Some(d0) = self.start_distance(field, known, s, lookup, reach, result) else {
                    continue;
                };
                // No point of the subtree can come within the limit of the surface.
                if d0 > reach {
                    continue;
                }
                if !self.seen[s] {
                    self.seen[s] = true;
                    self.note_near(s, world, d0, limit, lip * motion.speed(&world, 0.0));
                }
                let (a, b) = tree.node_children[node];
                self.next.extend(a..b);
            }
            std::mem::swap(&mut self.current, &mut self.next);
        }
    }

    /// The distance at the motion's start of shell point `s` (its body-frame position
    /// from `at`), or `None` when it is farther than `reach` (culled): the traversal's
    /// lookup at this pose where it made one (`known`), else the field's.
    fn start_distance<D: DistanceQuery>(
        &mut self,
        field: &D,
        known: Option<(Lookup, Point3<f64>)>,
        s: usize,
        at: impl FnOnce() -> Point3<f64>,
        reach: f64,
        result: &mut SweepResult,
    ) -> Option<f64> {
        match known {
            Some((Lookup::Exact(d), _)) => {
                result.shared += 1;
                Some(d)
            }
            // The traversal's bound already puts it out of reach.
            Some((Lookup::Above(bound), _)) if bound > reach => {
                result.shared += 1;
                None
            }
            _ => match cached_distance_above(field, &mut self.proxy_cache, s, &at(), reach) {
                Lookup::Exact(d) => Some(d),
                // Farther than it can reach: culled like `d0 > reach`.
                Lookup::Above(_) => None,
            },
        }
    }

    /// Keeps shell point `s` (at `world`, distance `d0`) as near when it is at the
    /// penetration `limit` or the motion (`moves` at most, times the field's Lipschitz
    /// constant) can take it there.
    fn note_near(&mut self, s: usize, world: Point3<f64>, d0: f64, limit: f64, moves: f64) {
        let margin = d0 + limit;
        if margin <= NEAR * limit || margin - moves <= 0.0 {
            self.near.push(Near {
                point: s as u32,
                world,
                d0,
                normal: None,
            });
        }
    }
}

/// The held object's outward unit normal at world point `x` (the held object's body at
/// `body`), by central differences of its distance with step `1e-3 scale`; `fallback`
/// (the pointshell's inward normal, the same direction for faces in contact) where the
/// gradient vanishes (a medial point) or is not finite.
fn outward_normal<D: DistanceQuery>(
    field: &D,
    body: &Isometry3<f64>,
    x: &Point3<f64>,
    scale: f64,
    fallback: Vector3<f64>,
) -> Vector3<f64> {
    let p = body.inverse_transform_point(x);
    let h = 1e-3 * scale;
    let axis = |i: usize| {
        let e = Vector3::ith(i, h);
        (field.distance(&(p + e)) - field.distance(&(p - e))) / (2.0 * h)
    };
    let g = body.rotation * Vector3::new(axis(0), axis(1), axis(2));
    match g.try_normalize(1e-9) {
        Some(n) if n.iter().all(|v| v.is_finite()) => n,
        _ => fallback,
    }
}

/// The rest of a motion blocked at `t`, slid along the contacts that blocked it so far:
/// the rest's rotation `(1 - t) dw` is kept, and its translation `(1 - t) dx` is
/// corrected so that no contact point `p_i` goes deeper: `n_i . (dx + dw x (p_i - c_t))
/// <= 0`, `n_i` the held object's outward normal there and `c_t` the grasp point at `t`. Each
/// violated half-space is projected on in turn (cyclic projections, at most
/// [`PROJECTION_PASSES`] passes; where the half-spaces leave no translation, the next
/// sweep stops the object instead). Only the translation is corrected: a correction in
/// rotation would tilt a face pushed flat onto a wall, and a tilted edge sinks between
/// the pointshell's points.
pub fn slide(motion: &CycleMotion, t: f64, contacts: &[Blocking]) -> CycleMotion {
    let from = motion.grasp_at(t);
    let (dx, dw) = (motion.dx * (1.0 - t), motion.dw * (1.0 - t));
    let c = Point3::from(from.translation.vector);
    let dx = project_translation(
        dx,
        contacts
            .iter()
            .map(|b| (b.normal, dw.cross(&(b.position - c)), 0.0)),
    );
    CycleMotion {
        from,
        dx,
        dw,
        grasp: motion.grasp,
    }
}

/// A point that a deformation (of an environment, or of the held object) carried deeper
/// into the held object than the penetration limit allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    /// The gradient of the held object's distance at the point (world): its outward
    /// normal, shorter than unit where an interpolated field rounds an edge.
    pub normal: Vector3<f64>,
    /// How far the point is beyond the limit (> 0).
    pub excess: f64,
}

/// The translation of the held object that takes it out of `overlaps`: to first order
/// (a translation `dx` changes a point's distance by `-g . dx`, `g` its `normal`) each point comes
/// back to the limit, `normal_i . dx <= -excess_i`, by cyclic projections onto these
/// half-spaces from `dx = 0` (at most [`PROJECTION_PASSES`] passes). For overlaps on one
/// face it is the face's normal times the largest excess; where overlaps on opposite
/// faces leave no translation (the object squeezed), the passes end wherever they are and
/// the caller's sweep of the push keeps it from going deeper elsewhere.
pub fn push_out(overlaps: &[Overlap]) -> Vector3<f64> {
    project_translation(
        Vector3::zeros(),
        overlaps
            .iter()
            .map(|o| (o.normal, Vector3::zeros(), -o.excess)),
    )
}

/// `dx` projected in turn onto each half-space `n_i . (dx + w_i) <= b_i` of
/// `half_spaces` (items `(n_i, w_i, b_i)`; `w_i` the part of the point's motion that the
/// translation does not change), by cyclic projections: at most [`PROJECTION_PASSES`]
/// passes over them, ending early once a pass finds none violated.
fn project_translation<I>(mut dx: Vector3<f64>, half_spaces: I) -> Vector3<f64>
where
    I: Iterator<Item = (Vector3<f64>, Vector3<f64>, f64)> + Clone,
{
    for _ in 0..PROJECTION_PASSES {
        let mut violated = false;
        for (n, w, b) in half_spaces.clone() {
            let over = n.dot(&(dx + w)) - b;
            if over > 0.0 {
                violated = true;
                dx -= n * (over / n.norm_squared());
            }
        }
        if !violated {
            break;
        }
    }
    dx
}

/// Passes of the cyclic projections of [`slide`] and [`push_out`].
pub const PROJECTION_PASSES: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::distance::HalfSpace;

    /// The slid rest stops the contact points' motion into the wall, keeps motion along
    /// and away from it, and keeps the rotation.
    #[test]
    fn slide_removes_only_the_motion_into_the_wall() {
        let n = Vector3::z();
        let at = |x: f64| Blocking {
            point: 0,
            position: Point3::new(x, 0.0, 0.0),
            normal: n,
        };
        let m = |dx: Vector3<f64>, dw: Vector3<f64>| CycleMotion {
            from: Isometry3::identity(),
            dx,
            dw,
            grasp: Point3::origin(),
        };
        let s = slide(
            &m(Vector3::new(1.0, 2.0, 3.0), Vector3::zeros()),
            0.5,
            &[at(0.0)],
        );
        assert_eq!(s.dx, Vector3::new(0.5, 1.0, 0.0));
        assert_eq!(s.from.translation.vector, Vector3::new(0.5, 1.0, 1.5));
        let s = slide(
            &m(Vector3::new(1.0, 2.0, -3.0), Vector3::zeros()),
            0.5,
            &[at(0.0)],
        );
        assert_eq!(s.dx, Vector3::new(0.5, 1.0, -1.5));
        // A turn about y moves the point at x = 1 by -z (away), more than the translation
        // moves it in: nothing changes.
        let turn = Vector3::new(0.0, 1.0, 0.0);
        let s = slide(&m(Vector3::new(0.0, 0.0, 0.5), turn), 0.0, &[at(1.0)]);
        assert_eq!((s.dx, s.dw), (Vector3::new(0.0, 0.0, 0.5), turn));
        // Two contacts, at x = 1 and x = -1: the turn moves the second in, the translation
        // both; afterwards neither moves in, and the first still lifts off.
        let s = slide(
            &m(Vector3::new(0.0, 0.0, 0.3), turn),
            0.0,
            &[at(1.0), at(-1.0)],
        );
        let v = |x: f64| (s.dx + s.dw.cross(&Vector3::new(x, 0.0, 0.0))).dot(&n);
        assert!(
            v(1.0) <= 1e-12 && v(-1.0) <= 1e-12,
            "{} {}",
            v(1.0),
            v(-1.0)
        );
        assert!(v(1.0) < -0.1, "{}", v(1.0));
    }

    /// The push out of overlaps on one face is that face's normal times the largest
    /// excess; on two faces at right angles, each its own; on opposite faces (no
    /// translation can satisfy both), a bounded, finite compromise.
    #[test]
    fn push_out_takes_each_overlap_back_to_the_limit() {
        let o = |n: Vector3<f64>, excess: f64| Overlap { normal: n, excess };
        let (x, z) = (Vector3::x(), Vector3::z());
        let dx = push_out(&[o(z, 1e-4), o(z, 3e-4), o(z, 2e-4)]);
        assert!((dx - z * -3e-4).norm() < 1e-18, "{dx}");
        let dx = push_out(&[o(z, 3e-4), o(x, 1e-4)]);
        assert!(
            (dx - Vector3::new(-1e-4, 0.0, -3e-4)).norm() < 1e-18,
            "{dx}"
        );
        // A tilted face: the overlap is removed along its own normal.
        let n = Vector3::new(1.0, 0.0, 1.0).normalize();
        let dx = push_out(&[o(n, 2e-4)]);
        assert!((n.dot(&dx) + 2e-4).abs() < 1e-18 && dx.cross(&n).norm() < 1e-18);
        // Squeezed: the passes end, finite and no longer than the largest excess.
        let dx = push_out(&[o(z, 3e-4), o(-z, 1e-4)]);
        assert!(
            dx.iter().all(|v| v.is_finite()) && dx.norm() <= 3e-4,
            "{dx}"
        );
        assert_eq!(push_out(&[]), Vector3::zeros());
    }

    #[test]
    fn motion_interpolates_translation_and_rotation() {
        let m = CycleMotion {
            from: Isometry3::translation(1.0, 0.0, 0.0),
            dx: Vector3::new(0.0, 2.0, 0.0),
            dw: Vector3::new(0.0, 0.0, 1.0),
            grasp: Point3::new(0.5, 0.0, 0.0),
        };
        let g = m.grasp_at(0.5);
        assert!((g.translation.vector - Vector3::new(1.0, 1.0, 0.0)).norm() < 1e-15);
        assert!((g.rotation.angle() - 0.5).abs() < 1e-15);
        // The body origin sits at -grasp in the grasp frame.
        let b = m.body_at(0.0);
        assert!((b.translation.vector - Vector3::new(0.5, 0.0, 0.0)).norm() < 1e-15);
    }

    /// A held half-space (z <= 0 in its body frame) moved up through one point at world
    /// z = 0.5: the sweep stops where the point is at the penetration limit (within the block
    /// tolerance), whatever the length of the motion; a motion away is never blocked.
    #[test]
    fn a_point_stops_the_half_space_at_the_penetration_limit() {
        let shell = ContactShell::new(
            vec![Point3::new(0.0, 0.0, 0.5)],
            vec![Vector3::new(0.0, 0.0, 1.0)],
            vec![0, 1],
            None,
        )
        .unwrap();
        let field = HalfSpace::floor(0.0);
        let params = SweepParams::with_limit(0.01);
        let mut sweep = ShellSweep::new(&shell);
        for length in [0.6, 1.0, 100.0] {
            let m = CycleMotion {
                from: Isometry3::identity(),
                dx: Vector3::new(0.0, 0.0, length),
                dw: Vector3::zeros(),
                grasp: Point3::origin(),
            };
            let r = sweep.first_contact(
                &shell,
                &field,
                &Isometry3::identity(),
                &[],
                &m,
                &params,
                None,
            );
            let depth = 0.5 - length * r.t; // signed distance of the point, body frame
            assert!(r.blocking.is_some(), "{length}");
            // At most the limit (an exact 1-Lipschitz field's first safe step lands on
            // it, up to rounding: 1e-12), and past nine tenths of it.
            let limit = 0.01;
            assert!(
                depth < -0.9 * limit + 1e-12 && depth >= -limit - 1e-12,
                "{length}: depth {depth}"
            );
        }
        let away = CycleMotion {
            from: Isometry3::identity(),
            dx: Vector3::new(0.0, 0.0, -10.0),
            dw: Vector3::zeros(),
            grasp: Point3::origin(),
        };
        let r = sweep.first_contact(
            &shell,
            &field,
            &Isometry3::identity(),
            &[],
            &away,
            &params,
            None,
        );
        assert_eq!(r.t, 1.0);
        assert!(r.blocking.is_none());
    }
}
