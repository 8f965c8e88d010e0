//! Time-critical traversal of the nested point tree against a distance field (thesis
//! 3.10), once per haptic cycle, allocation-free.
//!
//! Breadth-first, level by level: a node's point is transformed into the distance-field
//! object's frame (`y = T_field^-1 T_shell (P_s + U_s q)`) and looked up once per cycle
//! (cached per point: deeper copies of a point re-use it); if `d > R(q)` its subtree is
//! culled, else its children are queued; a point adds its penalty force at the depth of
//! its own level if `d < 0`.
//!
//! **Graceful degradation.** `V` counts the nodes of the levels started so far. A level
//! of `n` queued nodes starts only if `V + n` stays within the threshold: the warm budget
//! `V_W` for levels up to last cycle's deepest, the cold budget `0.8 V_W` for deeper ones
//! (two thresholds avoid flickering between depths; thesis 3.10.1). Levels are completed
//! or not started, so the result equals a tree-less pass over all points of the levels
//! reached (tested), and `V` never exceeds the budget. The roots (level 0) are always
//! traversed. Budgets are node counts, so replays are deterministic.
//!
//! **Temporal coherence** (3.10.2). A culled node caches how much relative motion it can
//! absorb before it might need testing: `(d - R) ` in units of an accumulated motion bound
//! `A`. Every cycle adds to `A`
//!
//! ```text
//! L_f (|dt| + theta (reach + |U|max |q|) + |U|max |dq|) + |a|max |dq|
//! ```
//!
//! (`L_f` the field's Lipschitz constant, `dt`, `theta` the change of the relative
//! transform, `|U|max` the largest `||U_s||_F`, `|a|max` the largest radius-coefficient
//! norm): a bound on how much `d - R` of any node can drop. A node is skipped while `A`
//! stays below its cached threshold, which proves it would be culled, so temporal
//! coherence never changes the result (tested). Unlike the thesis's fixed `dmax`,
//! `thetamax` estimate, the bound uses the actual motion, so it holds even if the caller
//! does not limit velocities. Skipped nodes still count toward `V`, so the budget, the
//! depth reached and the forces are the same with and without it; it saves lookups.
//!
//! Contacts are summed in point order, so any two traversals that find the same contact
//! set give bit-identical forces.
//!
//! Against a deformed distance field, [`Traversal::for_field`] gives every point a
//! [`ProxyCache`] (its nearest proxies, kept from cycle to cycle), which answers the
//! same distances bit for bit without most of the nearest-proxy searches.

use nalgebra::{Isometry3, Point3, Vector3};

use super::distance::ProxyCache;
use super::distance::{cached_distance_above, DistanceQuery, Lookup};
use super::model::{ContactAccumulator, PointContact};
use super::params::ContactParams;
use crate::contact::ContactShell;

/// Where the two objects are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Poses {
    /// Body-to-world transform of the pointshell object.
    pub shell: Isometry3<f64>,
    /// Body-to-world transform of the distance-field object.
    pub field: Isometry3<f64>,
    /// World point about which the torque on the distance-field object is taken.
    pub grasp: Point3<f64>,
}

/// One point in contact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactPoint {
    /// Pointshell point index.
    pub point: u32,
    /// Signed distance (negative).
    pub depth: f64,
    /// World position.
    pub position: Point3<f64>,
    /// World inward normal of the pointshell.
    pub normal: Vector3<f64>,
    /// Penalty force on the distance-field object at this point, `k d n` (world),
    /// before the L/l scaling (multiply by [`ContactOutput::scale`]).
    pub force: Vector3<f64>,
}

/// The result of one cycle. Buffers are allocated once by [`Traversal::output`].
#[derive(Debug, Clone)]
pub struct ContactOutput {
    /// Force, torque (about the grasp point) and their gradients on the distance-field
    /// object, after the L/l scaling.
    pub contact: PointContact,
    /// The scaling applied (1 or L/l).
    pub scale: f64,
    /// Points in contact, in point order.
    pub contacts: Vec<ContactPoint>,
    /// Nodes of all levels started (the budgeted count `V`).
    pub traversed: usize,
    /// Distance lookups made (fewer than `traversed` with temporal coherence).
    pub lookups: usize,
    /// Deepest level started (0 = the roots).
    pub deepest_level: usize,
    /// `sum_s U_s^T R_shell^T f_s` over contacts (scaled): the reduced contact force on a
    /// deformable pointshell (empty for rigid ones).
    pub reduced_force: Vec<f64>,
    /// The reduced contact force on a deformable distance-field object (empty for rigid
    /// ones; see [`DistanceQuery::add_reduced_force`]).
    pub field_reduced_force: Vec<f64>,
}

/// The point lookups of a traversal's last run ([`Traversal::lookups_at`]).
#[derive(Debug, Clone, Copy)]
pub struct Lookups<'a> {
    traversal: &'a Traversal,
}

impl Lookups<'_> {
    /// Point `s`'s signed distance, or the lower bound of it that culled its node (a
    /// field that bounds more cheaply than it looks up,
    /// [`DistanceQuery::distance_above_cached`]), and its deformed body-frame position,
    /// if the run looked it up.
    #[inline]
    pub fn get(&self, s: usize) -> Option<(Lookup, Point3<f64>)> {
        let t = self.traversal;
        (t.dist_stamp[s] == t.cycle).then(|| {
            let d = t.dist[s];
            let l = if t.dist_exact[s] {
                Lookup::Exact(d)
            } else {
                Lookup::Above(d)
            };
            (l, t.body[s])
        })
    }
}

/// The traversal state of one pointshell against one distance field.
#[derive(Debug, Clone)]
pub struct Traversal {
    /// Contact settings, read every cycle (they may be changed between cycles).
    pub params: ContactParams,
    current: Vec<u32>,
    next: Vec<u32>,
    /// This cycle's distance of every point looked up, or the lower bound that culled it
    /// where `dist_exact` is false.
    dist: Vec<f64>,
    dist_exact: Vec<bool>,
    /// Deformed body-frame position of every point looked up this cycle.
    body: Vec<Point3<f64>>,
    dist_stamp: Vec<u32>,
    /// One per point against a field that uses them ([`Traversal::for_field`]); else
    /// empty.
    proxy_cache: Vec<ProxyCache>,
    contact_points: Vec<u32>,
    tc_threshold: Vec<f64>,
    motion: f64,
    /// The Lipschitz constant temporal coherence used in the last run (`None`: off).
    last_lip: Option<f64>,
    last: Option<Isometry3<f64>>,
    last_q: Vec<f64>,
    /// This cycle's relative transform (field body from shell body) and pointshell `q`,
    /// which the stamped lookups were made at ([`Traversal::lookups_at`]).
    rel: Isometry3<f64>,
    q_now: Vec<f64>,
    q_abs: Vec<f64>,
    cycle: u32,
    last_deepest: usize,
    /// Debug views: every node looked up in the last cycle, with whether its sphere
    /// reached the surface (`d <= R`). Off (and empty) unless recording is on.
    recording: bool,
    visited_nodes: Vec<(u32, bool)>,
}

impl Traversal {
    /// Allocates every buffer for `shell`.
    pub fn new(shell: &ContactShell, params: ContactParams) -> Self {
        let nodes = shell.tree.num_nodes();
        let points = shell.len();
        Traversal {
            params,
            current: Vec::with_capacity(nodes),
            next: Vec::with_capacity(nodes),
            dist: vec![0.0; points],
            dist_exact: vec![true; points],
            body: vec![Point3::origin(); points],
            dist_stamp: vec![0; points],
            proxy_cache: Vec::new(),
            contact_points: Vec::with_capacity(points),
            tc_threshold: vec![f64::NEG_INFINITY; nodes],
            motion: 0.0,
            last_lip: None,
            last: None,
            last_q: vec![0.0; shell.r()],
            rel: Isometry3::identity(),
            q_now: vec![0.0; shell.r()],
            q_abs: vec![0.0; shell.r()],
            cycle: 0,
            last_deepest: 0,
            recording: false,
            visited_nodes: Vec::new(),
        }
    }

    /// A traversal of `shell` against `field`, with a [`ProxyCache`] per point if the
    /// field uses them (a deformed distance field); otherwise [`Traversal::new`].
    pub fn for_field<D: DistanceQuery>(
        shell: &ContactShell,
        params: ContactParams,
        field: &D,
    ) -> Self {
        let mut t = Traversal::new(shell, params);
        if field.uses_proxy_cache() {
            t.proxy_cache = vec![ProxyCache::default(); shell.len()];
        }
        t
    }

    /// Turns on or off the recording of visited nodes for debug views (thesis Fig.
    /// 3.11). Recording grows a vector, so it is for a render-side copy of the
    /// traversal, never for the haptic thread's.
    pub fn set_recording(&mut self, on: bool) {
        self.recording = on;
        if !on {
            self.visited_nodes = Vec::new();
        }
    }

    /// The nodes looked up in the last cycle, with whether each sphere reached the
    /// surface (empty unless recording; nodes skipped by temporal coherence are absent).
    pub fn visited_nodes(&self) -> &[(u32, bool)] {
        &self.visited_nodes
    }

    /// An output with room for every point; `field_r` is the reduced dimension of the
    /// distance-field object (0 if rigid).
    pub fn output(shell: &ContactShell, field_r: usize) -> ContactOutput {
        ContactOutput {
            contact: PointContact::zero(),
            scale: 1.0,
            contacts: Vec::with_capacity(shell.len()),
            traversed: 0,
            lookups: 0,
            deepest_level: 0,
            reduced_force: vec![0.0; shell.r()],
            field_reduced_force: vec![0.0; field_r],
        }
    }

    /// Forgets the warm depth and the temporal-coherence cache (after a teleport).
    pub fn reset(&mut self) {
        self.tc_threshold.fill(f64::NEG_INFINITY);
        self.motion = 0.0;
        self.last = None;
        self.last_deepest = 0;
    }

    fn begin_cycle(&mut self, q: &[f64], rel: &Isometry3<f64>) {
        self.rel = *rel;
        self.q_now.copy_from_slice(q);
        self.cycle = self.cycle.wrapping_add(1);
        if self.cycle == 0 {
            // Stamps wrapped around: invalidate them all (once in 2^32 cycles).
            self.dist_stamp.fill(0);
            self.cycle = 1;
        }
        for (a, &x) in self.q_abs.iter_mut().zip(q) {
            *a = x.abs();
        }
        self.contact_points.clear();
    }

    /// Signed distance of point `s` this cycle (looked up once, then cached), or, where
    /// the field shows more cheaply that it exceeds `above`, a lower bound that does
    /// (kept as a bound: a later query it does not answer looks the point up again).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn distance<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        rel: &Isometry3<f64>,
        q: &[f64],
        s: usize,
        above: f64,
        lookups: &mut usize,
    ) -> f64 {
        let known = self.dist_stamp[s] == self.cycle;
        if known && (self.dist_exact[s] || self.dist[s] > above) {
            return self.dist[s];
        }
        let p = if known {
            self.body[s]
        } else {
            shell.position(s, q)
        };
        let (d, exact) =
            match cached_distance_above(field, &mut self.proxy_cache, s, &(rel * p), above) {
                Lookup::Exact(d) => (d, true),
                Lookup::Above(bound) => (bound, false),
            };
        self.dist[s] = d;
        self.dist_exact[s] = exact;
        self.body[s] = p;
        self.dist_stamp[s] = self.cycle;
        *lookups += 1;
        d
    }

    /// Adds this cycle's bound on the drop of `d - R` of any node (module docs).
    fn accumulate_motion(
        &mut self,
        shell: &ContactShell,
        rel: &Isometry3<f64>,
        q: &[f64],
        lip: f64,
    ) {
        if let Some(last) = self.last {
            let dt = (rel.translation.vector - last.translation.vector).norm();
            let theta = (rel.rotation * last.rotation.inverse()).angle();
            let qn = q.iter().map(|x| x * x).sum::<f64>().sqrt();
            let dq = q
                .iter()
                .zip(&self.last_q)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            let center =
                dt + theta * (shell.reach + shell.max_mode_norm * qn) + shell.max_mode_norm * dq;
            // Relative slack for rounding in the transforms and lookups.
            self.motion += (lip * center + shell.max_radius_growth * dq) * (1.0 + 1e-9) + 1e-15;
        }
        self.last = Some(*rel);
        self.last_q.copy_from_slice(q);
    }

    /// The lookups of the last run, if it was made at exactly the relative transform
    /// `rel` (field body from shell body) and pointshell coordinates `q`: then a point's
    /// stored distance is what a lookup there would return, bit for bit (the sweep's
    /// candidate search starts from them).
    pub fn lookups_at(&self, rel: &Isometry3<f64>, q: &[f64]) -> Option<Lookups<'_>> {
        (self.cycle != 0 && self.rel == *rel && self.q_now == q)
            .then_some(Lookups { traversal: self })
    }

    /// A lower bound on `d - R` (a node's distance less its radius) at the pose of the
    /// last [`Self::run`], from the temporal-coherence cache; minus infinity where none is
    /// known (coherence off, or the node not culled). A node culled when the accumulated
    /// motion bound was `m_0` with `d_0 - R_0 = L (theta - m_0)` (its threshold `theta`)
    /// has `d - R >= L (theta - m_0) - (m - m_0) >= min(L, 1) theta - m` now.
    pub fn clearance_bound(&self, node: usize) -> f64 {
        match self.last_lip {
            Some(l) => l.min(1.0) * self.tc_threshold[node] - self.motion,
            None => f64::NEG_INFINITY,
        }
    }

    /// One haptic cycle: traverses the tree and fills `out`.
    pub fn run<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        poses: &Poses,
        q: &[f64],
        out: &mut ContactOutput,
    ) {
        debug_assert_eq!(q.len(), shell.r());
        let rel = poses.field.inverse() * poses.shell;
        self.begin_cycle(q, &rel);
        let lip = self.coherence(shell, field, &rel, q);
        let tree = &shell.tree;
        let roots = tree.depth_offsets[1];
        let warm = self.params.warm_budget.max(roots);
        let cold = ((warm as f64 * self.params.cold_fraction) as usize).max(roots);
        let mut current = std::mem::take(&mut self.current);
        let mut next = std::mem::take(&mut self.next);
        current.clear();
        current.extend(0..roots as u32);
        let mut visited = 0usize;
        let mut lookups = 0usize;
        let mut deepest = 0usize;
        self.visited_nodes.clear();
        for depth in 0..tree.depths() {
            if current.is_empty() {
                break;
            }
            let budget = if depth <= self.last_deepest {
                warm
            } else {
                cold
            };
            if depth > 0 && visited + current.len() > budget {
                break;
            }
            visited += current.len();
            deepest = depth;
            next.clear();
            for &node in &current {
                let node = node as usize;
                if lip.is_some() && self.motion < self.tc_threshold[node] {
                    continue;
                }
                let s = tree.node_point[node] as usize;
                let radius = tree.radius(node, &self.q_abs);
                let d = self.distance(shell, field, &rel, q, s, radius, &mut lookups);
                if !self.opens(node, d, radius, lip) {
                    continue;
                }
                if d < 0.0 && shell.point_level[s] as usize == depth {
                    self.contact_points.push(s as u32);
                }
                let (a, b) = tree.node_children[node];
                next.extend(a..b);
            }
            std::mem::swap(&mut current, &mut next);
        }
        self.current = current;
        self.next = next;
        self.last_deepest = deepest;
        out.traversed = visited;
        out.lookups = lookups;
        out.deepest_level = deepest;
        self.accumulate_contacts(shell, field, poses, q, out);
    }

    /// The field's Lipschitz constant when temporal coherence is on (the motion since
    /// the last cycle accumulated with it, [`Traversal::accumulate_motion`]), else `None`.
    fn coherence<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        rel: &Isometry3<f64>,
        q: &[f64],
    ) -> Option<f64> {
        let lip = if self.params.temporal_coherence {
            field.lipschitz()
        } else {
            None
        };
        if let Some(l) = lip {
            self.accumulate_motion(shell, rel, q, l);
        }
        self.last_lip = lip;
        lip
    }

    /// Whether `node`, its point at distance `d` and its subtree within `radius` of it,
    /// opens (`d <= radius`); the visit is recorded. With temporal coherence (`lip`, the
    /// field's Lipschitz constant) a node that stays shut keeps the motion its subtree
    /// may make before it can open, and one that opens is visited again next cycle.
    fn opens(&mut self, node: usize, d: f64, radius: f64, lip: Option<f64>) -> bool {
        if self.recording {
            self.visited_nodes.push((node as u32, d <= radius));
        }
        if d > radius {
            if let Some(l) = lip {
                self.tc_threshold[node] = self.motion + (d - radius) / l;
            }
            return false;
        }
        if lip.is_some() {
            self.tc_threshold[node] = f64::NEG_INFINITY;
        }
        true
    }

    /// The tree-less reference: every point of levels `0..levels` looked up directly.
    /// Fills `out` exactly as [`Traversal::run`] would with an unlimited budget
    /// restricted to those levels.
    pub fn run_treeless<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        poses: &Poses,
        q: &[f64],
        levels: usize,
        out: &mut ContactOutput,
    ) {
        self.last_lip = None;
        let rel = poses.field.inverse() * poses.shell;
        self.begin_cycle(q, &rel);
        let levels = levels.clamp(1, shell.level_offsets.len() - 1);
        let end = shell.level_offsets[levels];
        let mut lookups = 0;
        for s in 0..end {
            if self.distance(shell, field, &rel, q, s, f64::INFINITY, &mut lookups) < 0.0 {
                self.contact_points.push(s as u32);
            }
        }
        out.traversed = end;
        out.lookups = lookups;
        out.deepest_level = levels - 1;
        self.accumulate_contacts(shell, field, poses, q, out);
    }

    /// Sums the contacts in point order, applies the L/l scaling and projects the
    /// pointshell forces into its basis.
    fn accumulate_contacts<D: DistanceQuery>(
        &mut self,
        shell: &ContactShell,
        field: &D,
        poses: &Poses,
        q: &[f64],
        out: &mut ContactOutput,
    ) {
        self.contact_points.sort_unstable();
        let mut total = ContactAccumulator::new(self.params.stiffness);
        out.contacts.clear();
        out.reduced_force.fill(0.0);
        out.field_reduced_force.fill(0.0);
        let deformable_field = !out.field_reduced_force.is_empty();
        let rot = poses.shell.rotation;
        for &s in &self.contact_points {
            let s = s as usize;
            let d = self.dist[s];
            let x = poses.shell * self.body[s];
            let n = rot * shell.normal(s, q);
            let force = total.add(d, &n, &(x - poses.grasp));
            if let Some(m) = &shell.modes {
                // The pointshell point feels -F; project it in the body frame.
                let f_body = rot.inverse_transform_vector(&(-force));
                m.add_transpose(s, &f_body, &mut out.reduced_force);
            }
            if deformable_field {
                let y = poses.field.inverse_transform_point(&x);
                let f_field = poses.field.rotation.inverse_transform_vector(&force);
                match self.proxy_cache.get_mut(s) {
                    Some(cache) => field.add_reduced_force_cached(
                        &y,
                        &f_field,
                        &mut out.field_reduced_force,
                        cache,
                    ),
                    None => field.add_reduced_force(&y, &f_field, &mut out.field_reduced_force),
                }
            }
            out.contacts.push(ContactPoint {
                point: s as u32,
                depth: d,
                position: x,
                normal: n,
                force,
            });
        }
        let l = self.contact_points.len();
        let cap = self.params.max_unscaled_contacts.max(1);
        out.scale = if l > cap { cap as f64 / l as f64 } else { 1.0 };
        let mut total = total.finish();
        total.scale(out.scale);
        for f in out
            .reduced_force
            .iter_mut()
            .chain(&mut out.field_reduced_force)
        {
            *f *= out.scale;
        }
        out.contact = total;
    }
}
