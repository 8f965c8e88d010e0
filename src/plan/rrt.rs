//! The RRT-Connect search (Kuffner and LaValle 2000): two trees grown in turn, steps that
//! double in open space, blocked steps slid along the contact, and the samplers (uniform,
//! Gaussian about a guide, obstacle-based and bridge samples).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use nalgebra::{UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::guide::{CORRIDOR_SHARE, GUIDE_LOOKAHEAD, GUIDE_SHARE};
use super::nearest::Nearest;
use super::space::Space;
use super::validity::{Checker, Clearance};
use super::*;
use crate::proximity::rigid::{turn_of, State};

/// The side of the trees' nearest-neighbour cells, in base steps (sides from 0.5 to 4
/// gave the same times on OMPL.app's Twistycooler).
const NEAREST_CELL: f64 = 1.0;

/// What the threads share.
pub(super) struct Shared<'a> {
    pub(super) start: Instant,
    pub(super) stop: &'a AtomicBool,
    pub(super) states: &'a AtomicUsize,
    pub(super) progress: &'a (dyn Fn(Progress) + Sync),
}

/// A node of a tree.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    pub(super) state: State,
    /// The parent's index (`usize::MAX` at the root).
    pub(super) parent: usize,
    /// A lower bound of its distance to the world.
    pub(super) lower: f64,
    /// Its nearest contact (closest points), queried the first time a step from it is
    /// blocked.
    pub(super) contact: Option<Clearance>,
    /// The step tried first from it: twice the free step that made it (up to the
    /// longest step), the base step after a slide or once a longer step was blocked.
    pub(super) step: f64,
}

/// A tree of states, with an index of them for the nearest-neighbour search.
pub(super) struct Tree {
    pub(super) nodes: Vec<Node>,
    pub(super) index: Nearest,
}

impl Tree {
    /// A tree of `root` whose nodes lie in `space`, indexed by cells of about `side`.
    pub(super) fn new(root: Node, space: &Space, side: f64) -> Tree {
        let mut tree = Tree {
            nodes: Vec::new(),
            index: Nearest::new(space.min, space.max, side),
        };
        tree.push(root);
        tree
    }

    pub(super) fn push(&mut self, node: Node) {
        self.index.push(&node.state);
        self.nodes.push(node);
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }
}

impl std::ops::Index<usize> for Tree {
    type Output = Node;
    fn index(&self, i: usize) -> &Node {
        &self.nodes[i]
    }
}

impl std::ops::IndexMut<usize> for Tree {
    fn index_mut(&mut self, i: usize) -> &mut Node {
        &mut self.nodes[i]
    }
}

/// The result of growing a tree towards a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Grow {
    Trapped,
    Advanced,
    Reached,
}

/// The sampling strategies, drawn in turn by weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strategy {
    Uniform,
    Obstacle,
    Bridge,
    Guide,
}

/// One thread's search.
pub(super) struct Search<'a> {
    pub(super) problem: Problem<'a>,
    /// The trees' metric: the problem's space with turns weighed by
    /// [`PlanOptions::rotation_weight`].
    pub(super) metric: Space,
    pub(super) checker: Checker<'a>,
    pub(super) rng: ChaCha8Rng,
    pub(super) range: f64,
    /// The longest step.
    pub(super) long: f64,
    /// The trees: 0 grows from the start, 1 from the goal.
    pub(super) trees: [Tree; 2],
    pub(super) guide: Vec<State>,
    pub(super) time_limit: f64,
    pub(super) cancel: Option<Cancel>,
    pub(super) samples: usize,
    pub(super) thread: usize,
    pub(super) solution: Vec<(State, f64)>,
    pub(super) solution_time: Option<f64>,
    pub(super) sampler: Sampler,
    /// When the guide is a corridor: the robot point (robot frame) its positions are
    /// of, its orientations free.
    pub(super) guide_point: Option<Vector3<f64>>,
    /// How far each tree has come along the guide: the last guide state tree 0 has a
    /// node near, and the first one tree 1 has.
    pub(super) reach: [usize; 2],
    /// The tree the current sample grows.
    pub(super) from: usize,
    /// The orientation of the node that last moved each tree's reach (a corridor's
    /// samples turn about it).
    pub(super) reach_turn: [UnitQuaternion<f64>; 2],
    /// The share of samples drawn about the guide.
    pub(super) guide_share: f64,
    /// The clearance the relaxing schedule starts from ([`scheduled_clearance`]),
    /// `None` when the clearance is fixed.
    pub(super) schedule: Option<f64>,
}

impl<'a> Search<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        problem: &Problem<'a>,
        options: &PlanOptions,
        guide: &Guide,
        clearance: f64,
        range: f64,
        long: f64,
        seed: u64,
        thread: usize,
    ) -> Search<'a> {
        let mut checker = Checker::new(problem.robot, problem.world, clearance);
        checker.enough = range;
        let root = |checker: &mut Checker, s: &State| Node {
            state: *s,
            parent: usize::MAX,
            lower: checker.valid(s).unwrap_or(0.0),
            contact: None,
            step: range,
        };
        let side = NEAREST_CELL * range;
        let trees = [
            Tree::new(root(&mut checker, &problem.start), &problem.space, side),
            Tree::new(root(&mut checker, &problem.goal), &problem.space, side),
        ];
        let mut metric = problem.space;
        metric.radius *= options.rotation_weight;
        let guide_states = densify(&guide.states, &problem.space, 0.25 * range);
        let guide_end = guide_states.len().saturating_sub(1);
        Search {
            problem: *problem,
            metric,
            checker,
            rng: ChaCha8Rng::seed_from_u64(seed),
            range,
            long: long.max(range),
            trees,
            guide: guide_states,
            time_limit: options.time_limit,
            cancel: options.cancel.clone(),
            samples: 0,
            thread,
            solution: Vec::new(),
            solution_time: None,
            sampler: options.sampler,
            guide_point: guide.point,
            reach: [0, guide_end],
            from: 0,
            reach_turn: [problem.start.orientation, problem.goal.orientation],
            guide_share: if guide.point.is_some() {
                CORRIDOR_SHARE
            } else {
                GUIDE_SHARE
            },
            schedule: options.relax_clearance.then_some(clearance),
        }
    }

    pub(super) fn run(&mut self, shared: &Shared) {
        let mut last_report = 0.0;
        let mut from = 0usize;
        loop {
            if shared.stop.load(Ordering::Relaxed) || cancelled(&self.cancel) {
                return;
            }
            let now = shared.start.elapsed().as_secs_f64();
            if now >= self.time_limit {
                return;
            }
            if self.thread == 0 && now - last_report >= 0.1 {
                last_report = now;
                (shared.progress)(Progress {
                    seconds: now,
                    states: shared.states.load(Ordering::Relaxed),
                });
            }
            self.from = from;
            let target = self.sample();
            self.samples += 1;
            if let Some(start) = self.schedule {
                self.checker.clearance = scheduled_clearance(start, self.samples);
            }
            let before = self.trees[0].len() + self.trees[1].len();
            let grown = self.grow(from, &target);
            if grown != Grow::Trapped {
                // The other tree connects to the new state, step after step.
                let new = self.trees[from].len() - 1;
                let goal_state = self.trees[from][new].state;
                let other = 1 - from;
                // Every step gets closer by a tenth of a step at least: a bounded loop.
                let mut g = Grow::Advanced;
                while g == Grow::Advanced {
                    g = self.grow(other, &goal_state);
                }
                if g == Grow::Reached {
                    let reached = self.trees[other].len() - 1;
                    self.solution = self.join(from, new, other, reached);
                    self.solution_time = Some(shared.start.elapsed().as_secs_f64());
                    shared.stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
            let after = self.trees[0].len() + self.trees[1].len();
            shared.states.fetch_add(after - before, Ordering::Relaxed);
            from = 1 - from;
        }
    }

    /// Moves tree `tree`'s reach along the guide past the guide states within a base
    /// step of its new state `new` (by the guide's point).
    pub(super) fn advance_reach(&mut self, tree: usize, new: &State) {
        let point = new.position + new.orientation * self.guide_point.unwrap_or_default();
        let near = |g: &State| (g.position - point).norm() < self.range;
        let reach = self.reach[tree];
        let passed = if tree == 0 {
            (reach + 1..self.guide.len())
                .rev()
                .find(|&i| near(&self.guide[i]))
        } else {
            (0..reach).find(|&i| near(&self.guide[i]))
        };
        if let Some(i) = passed {
            self.reach[tree] = i;
            self.reach_turn[tree] = new.orientation;
        }
    }

    /// The path from the start's root to the goal's, through the nodes `a` of tree
    /// `ta` and `b` of tree `tb` (the same state), with each state's distance bound.
    pub(super) fn join(&self, ta: usize, a: usize, tb: usize, b: usize) -> Vec<(State, f64)> {
        let chain = |t: usize, mut i: usize| {
            let mut out = Vec::new();
            while i != usize::MAX {
                let n = &self.trees[t][i];
                out.push((n.state, n.lower));
                i = n.parent;
            }
            out
        };
        let (mut s, g) = if ta == 0 {
            (chain(ta, a), chain(tb, b))
        } else {
            (chain(tb, b), chain(ta, a))
        };
        // s runs from the meeting state to the start, g from it to the goal.
        s.reverse();
        s.extend(g.into_iter().skip(1));
        s
    }

    /// The node of `tree` nearest to `target` in the trees' metric (the first of
    /// equals).
    pub(super) fn nearest(&self, tree: usize, target: &State) -> usize {
        self.trees[tree].index.nearest(target, self.metric.radius)
    }

    /// Grows `tree` by one step towards `target` (sliding along the contact when the
    /// step is blocked).
    pub(super) fn grow(&mut self, tree: usize, target: &State) -> Grow {
        let near = self.nearest(tree, target);
        let n = self.trees[tree][near];
        let d = self.metric.distance(&n.state, target);
        if d <= 1e-12 * self.range {
            return Grow::Reached;
        }
        if n.step > self.range && d > self.range {
            // A node whose own step was free tries a longer one first.
            match self.step(tree, near, &n, target, d, n.step) {
                Ok(g) => return g,
                Err(_) => self.trees[tree][near].step = self.range,
            }
        }
        let new = match self.step(tree, near, &n, target, d, self.range) {
            Ok(g) => return g,
            Err(new) => new,
        };
        // Blocked: slide along the nearest contact instead, if that gets closer.
        let contact = match n.contact {
            Some(c) => c,
            None => {
                let c = self.checker.clearance_at(&n.state);
                self.trees[tree][near].contact = Some(c);
                c
            }
        };
        if let Some(slid) = self
            .slide(&n.state, &contact, &new)
            .filter(|s| self.metric.distance(s, target) < d - 0.1 * self.range)
        {
            if self.extend(tree, near, &n, slid, self.range) {
                return Grow::Advanced;
            }
        }
        Grow::Trapped
    }

    /// Adds `new` to `tree` as a child of node `near` (`n`), with `step` as the first
    /// step to try from it, when it is valid and the motion to it is.
    pub(super) fn extend(
        &mut self,
        tree: usize,
        near: usize,
        n: &Node,
        new: State,
        step: f64,
    ) -> bool {
        let Some(lower) = self.checker.valid(&new) else {
            return false;
        };
        if !self.checker.motion(&n.state, n.lower, &new, lower) {
            return false;
        }
        self.trees[tree].push(Node {
            state: new,
            parent: near,
            lower,
            contact: None,
            step,
        });
        self.advance_reach(tree, &new);
        true
    }

    /// One step of at most `step` from node `near` (`n`) towards `target` (at distance
    /// `d`): the grown result, or the blocked state when the state or the motion to it
    /// is not valid.
    pub(super) fn step(
        &mut self,
        tree: usize,
        near: usize,
        n: &Node,
        target: &State,
        d: f64,
        step: f64,
    ) -> Result<Grow, State> {
        let (new, reaches) = if d > step {
            (n.state.interpolate(target, step / d), false)
        } else {
            (*target, true)
        };
        let next = (2.0 * step).min(self.long).max(self.range);
        if !self.extend(tree, near, n, new, next) {
            return Err(new);
        }
        Ok(if reaches {
            Grow::Reached
        } else {
            Grow::Advanced
        })
    }

    /// The motion from `n` towards `to` with its component into the nearest contact
    /// removed (see the module docs), or `None` when the motion moves away from it
    /// anyway or nothing is near.
    pub(super) fn slide(&self, from: &State, contact: &Clearance, to: &State) -> Option<State> {
        let normal = contact.normal()?;
        let (_, on_robot) = contact.closest?;
        let lever = on_robot.coords - from.position;
        let m = lever.cross(&normal);
        let dp = to.position - from.position;
        let dw = turn_of(from, to);
        let r2 = self.metric.radius.powi(2).max(f64::MIN_POSITIVE);
        let into = normal.dot(&dp) + m.dot(&dw);
        if into >= 0.0 {
            return None;
        }
        // Remove the component along the gradient in the trees' metric (translation
        // weight 1, rotation (w R)^2), keeping a small motion away from the contact.
        let gg = 1.0 + m.norm_squared() / r2;
        let away = 0.1 * self.checker.clearance;
        let k = (into - away) / gg;
        let dp2 = dp - normal * k;
        let dw2 = dw - m * (k / r2);
        let state = State::new(
            from.position + dp2,
            UnitQuaternion::from_scaled_axis(dw2) * from.orientation,
        );
        self.problem.space.contains(&state).then_some(state)
    }

    pub(super) fn strategy(&mut self) -> Strategy {
        let u: f64 = self.rng.random();
        if !self.guide.is_empty() && u < self.guide_share {
            return Strategy::Guide;
        }
        match self.sampler {
            Sampler::Uniform => Strategy::Uniform,
            Sampler::Obstacle => Strategy::Obstacle,
            Sampler::Bridge => Strategy::Bridge,
            Sampler::Mixed => {
                let u: f64 = self.rng.random();
                if u < 0.5 {
                    Strategy::Uniform
                } else if u < 0.8 {
                    Strategy::Obstacle
                } else {
                    Strategy::Bridge
                }
            }
        }
    }

    /// A sample to grow towards.
    pub(super) fn sample(&mut self) -> State {
        let space = self.problem.space;
        let sigma = 0.02 * space.extent();
        match self.strategy() {
            Strategy::Uniform => space.uniform(&mut self.rng),
            Strategy::Guide => {
                // A few guide states past how far the growing tree has come.
                let ahead = self.rng.random_range(0..GUIDE_LOOKAHEAD);
                let i = if self.from == 0 {
                    (self.reach[0] + ahead).min(self.guide.len() - 1)
                } else {
                    self.reach[1].saturating_sub(ahead)
                };
                let around = self.guide[i];
                match self.guide_point {
                    None => space.gaussian(&around, 0.5 * sigma, &mut self.rng),
                    Some(c) => {
                        // A corridor's point (the robot's centre's position).
                        // About the orientation of the node that came farthest:
                        // the tree turns as the passages ask, a little at a time.
                        let turned = State::new(Vector3::zeros(), self.reach_turn[self.from]);
                        let q = space.gaussian(&turned, sigma, &mut self.rng).orientation;
                        let mut s = space.gaussian(&around, 0.5 * sigma, &mut self.rng);
                        s.orientation = q;
                        s.position -= q * c;
                        s.position = s.position.sup(&space.min).inf(&space.max);
                        s
                    }
                }
            }
            Strategy::Obstacle => {
                // A colliding state and a free neighbour: the boundary between them.
                for _ in 0..8 {
                    let a = space.uniform(&mut self.rng);
                    let b = space.gaussian(&a, sigma, &mut self.rng);
                    let (ca, cb) = (self.checker.clearance_at(&a), self.checker.clearance_at(&b));
                    let free = |c: &Clearance| c.lower > self.checker.clearance;
                    match (free(&ca), free(&cb)) {
                        (true, false) => return self.retract(&a, ca, &b),
                        (false, true) => return self.retract(&b, cb, &a),
                        _ => {}
                    }
                }
                space.uniform(&mut self.rng)
            }
            Strategy::Bridge => {
                for _ in 0..8 {
                    let a = space.uniform(&mut self.rng);
                    if self.checker.valid(&a).is_some() {
                        continue;
                    }
                    let b = space.gaussian(&a, sigma, &mut self.rng);
                    if self.checker.valid(&b).is_some() {
                        continue;
                    }
                    let mid = a.interpolate(&b, 0.5);
                    if self.checker.valid(&mid).is_some() {
                        return mid;
                    }
                }
                space.uniform(&mut self.rng)
            }
        }
    }

    /// From the free state `free` (its clearance `c`) towards the colliding `into`:
    /// conservative advancement on the distance until it is a few clearances, then a push
    /// back along the gradient to that clearance (a state on the free space's boundary).
    pub(super) fn retract(&mut self, free: &State, mut c: Clearance, into: &State) -> State {
        let target = 4.0 * self.checker.clearance;
        let bound = self.problem.space.distance(free, into);
        let mut t = 0.0;
        let mut s = *free;
        for _ in 0..64 {
            if c.lower <= 2.0 * target || bound <= 0.0 {
                break;
            }
            t += (c.lower - target) / bound;
            if t >= 1.0 {
                break;
            }
            s = free.interpolate(into, t);
            c = self.checker.clearance_at(&s);
        }
        if let Some(n) = c.normal() {
            if c.lower < target {
                let pushed = State::new(s.position + n * (target - c.lower), s.orientation);
                if self.problem.space.contains(&pushed) {
                    return pushed;
                }
            }
        }
        s
    }
}

/// `path` with states inserted so that consecutive ones are at most `step` apart.
pub(super) fn densify(path: &[State], space: &Space, step: f64) -> Vec<State> {
    let mut out = Vec::new();
    for w in path.windows(2) {
        let n = (space.distance(&w[0], &w[1]) / step).ceil().max(1.0) as usize;
        for i in 0..n {
            out.push(w[0].interpolate(&w[1], i as f64 / n as f64));
        }
    }
    out.extend(path.last());
    out
}
