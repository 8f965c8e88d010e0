//! Path planning for a rigid part in SE(3): a bidirectional sampling planner
//! (RRT-Connect, Kuffner and LaValle 2000) whose states and motions are validated by
//! exact mesh distances ([`validity`]), with the distance and its gradient steering it
//! through narrow passages, where collision-only planners sample blindly.
//!
//! **RRT-Connect.** Two trees, rooted at the start and the goal, take turns: one grows a
//! step towards a sample (in the metric of [`space`]), and the other then grows towards
//! the new state, step after step, until it reaches it (a path) or is trapped. Motions
//! are certified continuously ([`validity::Checker::motion`]): a returned path never
//! clips an obstacle between its states, and there is no resolution to choose.
//!
//! **The trees' metric** weighs a turn at a quarter of the robot's radius `R`
//! ([`PlanOptions::rotation_weight`]): `|dp| + R theta / 4` picks the nearest node and
//! sizes the steps, so the trees choose neighbours mostly by position and turn freely
//! while they move, as OMPL's SE(3) metric lets them (where a radian weighs one unit).
//! The true bound `|dp| + R theta` (how far a robot point moves) still certifies every
//! motion and measures the path (docs/plan.md measures the weight).
//!
//! **Steps that adapt.** The base step `range` (3% of the space) is the step near the
//! world. A state reached by a free step of `s` tries `2 s` first (up to `max_range`), so
//! that a tree crosses open space in a few doubling steps; when a longer step is blocked,
//! the state drops back to the base step for good (then slides, below). A blocked long
//! step costs one failed check per state, and near the world the steps stay short,
//! where long ones would fail.
//!
//! **What the distance adds** (the field's value and gradient, free with every query):
//! - *Sliding*: when a step is blocked, the blocked motion is projected on the tangent
//!   space of the nearest contact: the component of the motion `v = (dp, dw)` along the
//!   distance's gradient `g = (n, (r - c) x n)` (translation, rotation; `n` the unit
//!   normal from the world's closest point to the robot's, `r` the robot's closest point,
//!   `c` its origin) is removed, as a retraction onto the contact space (Zhang and
//!   Manocha 2008, retraction-based RRT). Trees then follow walls into passages instead
//!   of stopping at them.
//! - *Obstacle-based samples*: a colliding sample is retracted onto the free space's
//!   boundary along the segment to a free Gaussian neighbour, by conservative advancement
//!   on the distance (one query per step, no resolution), and pushed out along the
//!   gradient to a clearance of a few tolerances.
//! - *Bridge samples* (Hsu et al. 2003): the midpoint of two colliding states close to
//!   each other, kept when it is free: states in narrow passages.
//! - *Guidance*: a rough path (recorded with the haptic device) biases half the samples
//!   to a Gaussian tube around it, in order: each tree draws about the few guide states
//!   just past the farthest one it has come near (from the start's end for the start's
//!   tree, from the goal's for the goal's), so that the trees follow the guide instead
//!   of being pulled at once towards all of it.
//! - *The widest corridor* ([`corridor`]): without a guide, the planner first searches
//!   the world's distance field for the way with the widest passages for the robot's
//!   centre, and when that way is a detour (longer than one and a half times the
//!   straight segment, plus the ends' slack), it guides 70% of the samples as a rough
//!   path would: positions about the corridor, orientations about the one of the node
//!   that came farthest along it. Where the corridor is about straight it is not used;
//!   its search costs a few milliseconds. docs/plan.md has the figures.
//!
//! **Simplification** ([`simplify`]): random shortcuts between states and between points
//! on the path's segments, each certified by the same continuous check, so the returned
//! path is as valid as the tree's.
//!
//! **Reproducibility.** One thread's run is a function of the seed (a ChaCha8 stream)
//! unless the time limit ends it. `threads > 1` runs independent restarts (thread `k`
//! seeded with `seed + k`) and returns the first solution found.

pub mod benchmark;
pub mod corridor;
pub mod report;
pub mod simplify;
pub mod space;
pub mod validity;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use nalgebra::{Point3, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::check::ompl::State;
use crate::check::{turn_of, Robot, World};
use crate::progress::{cancelled, Cancel};
use space::Space;
use validity::{Checker, Clearance, Work};

/// What to plan: a robot, a world, the state space, the start and the goal.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    /// The moving part.
    pub robot: &'a Robot,
    /// The fixed world.
    pub world: &'a World,
    /// The state space (the box of positions).
    pub space: Space,
    /// The start state.
    pub start: State,
    /// The goal state.
    pub goal: State,
}

/// The planner's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// Wall-clock limit of the search (s); simplification comes on top.
    pub time_limit: f64,
    /// The random seed of thread 0.
    pub seed: u64,
    /// Parallel restarts (1: a single, reproducible run).
    pub threads: usize,
    /// The clearance a state needs, in problem units; motions keep three quarters of it
    /// (default: 0.2% of the robot's bounding-box diagonal, so that motions keep 0.15%,
    /// above the 0.1% default tolerance of `haptics check`: its check passes every
    /// planned path).
    pub clearance: Option<f64>,
    /// The base step of a tree, in the metric of [`space`] (default: 3% of the
    /// space's extent): the step near the world, and after a slide.
    pub range: Option<f64>,
    /// The longest step (default: the space's extent). A node made by a free step of
    /// `s` tries `2 s` first (at most this), and drops back to the base step once that
    /// is blocked; equal to `range`, every step is the base step.
    pub max_range: Option<f64>,
    /// The rotation weight of the trees' metric, as a fraction of the robot's radius
    /// (default [`DEFAULT_ROTATION_WEIGHT`]): the trees choose neighbours and take steps
    /// in `|dp| + w R theta`. Motions are still certified with the true bound (`w = 1`),
    /// and path lengths are reported in it.
    pub rotation_weight: f64,
    /// A rough path to bias the samples around (empty: none).
    pub guide: Vec<State>,
    /// Shortcut attempts of the simplification (0: return the tree's path).
    pub shortcuts: usize,
    /// Where the samples come from (besides the guide).
    pub sampler: Sampler,
    /// Without a guide, search the widest corridor first ([`corridor`]): the way with
    /// the widest passages for the robot's centre, on a grid of the world's distance;
    /// when it is a detour, it guides the samples as a rough path would.
    pub corridor: bool,
    /// Stop early when this is cancelled (a user's interrupt): the plan ends unsolved,
    /// as when the time limit passes.
    pub cancel: Option<Cancel>,
}

/// The samples the trees grow towards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampler {
    /// Uniform in the box and on SO(3): with sliding, the fastest on OMPL.app's
    /// problems (see the README's planning table).
    #[default]
    Uniform,
    /// Obstacle-based: the free space's boundary between a colliding sample and a free
    /// Gaussian neighbour, found by conservative advancement on the distance.
    Obstacle,
    /// Bridge test: the free midpoint of two colliding states close together.
    Bridge,
    /// Half uniform, 30% obstacle-based, 20% bridge.
    Mixed,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            time_limit: 10.0,
            seed: 1,
            threads: 1,
            clearance: None,
            range: None,
            max_range: None,
            rotation_weight: DEFAULT_ROTATION_WEIGHT,
            guide: Vec::new(),
            shortcuts: 100,
            sampler: Sampler::Uniform,
            corridor: true,
            cancel: None,
        }
    }
}

/// Why a problem cannot be planned (the command exits 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A state's position is outside the box.
    #[error("the {which} state is outside the bounds: position {position:?} not in the box {min:?} .. {max:?}")]
    OutsideBounds {
        /// "start" or "goal".
        which: &'static str,
        /// Its position.
        position: [f64; 3],
        /// The box's lower corner.
        min: [f64; 3],
        /// The box's upper corner.
        max: [f64; 3],
    },
    /// A state collides, or is closer to the world than the clearance.
    #[error("the {which} state is in collision: its distance to the world is {distance:.6}, and a state needs more than the clearance {clearance:.6}")]
    InCollision {
        /// "start" or "goal".
        which: &'static str,
        /// Its distance to the world (0: the meshes intersect).
        distance: f64,
        /// The clearance needed.
        clearance: f64,
    },
    /// A state lies inside a closed obstacle (its surfaces do not meet the world's, but
    /// the robot is enclosed by it).
    #[error("the {which} state is inside an obstacle: the robot is enclosed by the world's closed surface")]
    InsideObstacle {
        /// "start" or "goal".
        which: &'static str,
    },
    /// An option is out of range.
    #[error("{0}")]
    Options(String),
    /// The planned path fails the path check: a bug, since every motion was certified.
    #[error("internal error: the planned path fails the path check (first contact at segment {segment}); please report it")]
    FailsCheck {
        /// The segment where the check found the first contact.
        segment: usize,
    },
}

/// A plan with the path check of its path (when solved).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPlan {
    /// The plan.
    pub plan: Plan,
    /// The path check of the planned path ([`crate::check::check_path`], default
    /// options); `None` when unsolved.
    pub check: Option<crate::check::Report>,
}

/// Plans as [`plan`] does, then checks the path with the path check, independently of
/// the planner's own validity checker: its report gives the path's clearance, and a
/// path it finds colliding is refused ([`PlanError::FailsCheck`]).
pub fn plan_checked(
    problem: &Problem,
    options: &PlanOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<CheckedPlan, PlanError> {
    let plan = plan(problem, options, progress)?;
    let check = plan.solved.then(|| {
        crate::check::check_path(
            problem.robot,
            problem.world,
            &plan.path,
            &crate::check::CheckOptions::default(),
            &mut |_| {},
        )
    });
    if let Some(c) = check.as_ref().filter(|c| !c.collision_free) {
        return Err(PlanError::FailsCheck {
            segment: c.first_collision.map_or(0, |p| p.segment),
        });
    }
    Ok(CheckedPlan { plan, check })
}

/// The outcome of a search (the default: unsolved, nothing done).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// A path from the start to the goal was found.
    pub solved: bool,
    /// The path (start first, goal last), simplified; empty when not solved.
    pub path: Vec<State>,
    /// The states of the tree's path before simplification.
    pub raw_states: usize,
    /// States in the trees (all threads).
    pub states: usize,
    /// Samples drawn (all threads).
    pub samples: usize,
    /// Seconds of search.
    pub solve_seconds: f64,
    /// Seconds of simplification.
    pub simplify_seconds: f64,
    /// The path's length in the metric of [`space`] (robot-point motion bound).
    pub length: f64,
    /// The path's length before simplification.
    pub raw_length: f64,
    /// The clearance used (problem units).
    pub clearance: f64,
    /// The base step used.
    pub range: f64,
    /// The longest step used.
    pub max_range: f64,
    /// The rotation weight of the trees' metric used (a fraction of the robot's radius).
    pub rotation_weight: f64,
    /// The thread whose tree found the path.
    pub thread: usize,
    /// The validity checker's work (all threads).
    pub work: Work,
    /// The corridor's search, when tried.
    pub corridor: Option<CorridorReport>,
}

/// What the corridor's search did ([`corridor`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CorridorReport {
    /// A corridor was found.
    pub found: bool,
    /// It guided the samples (it was long enough against the straight segment).
    pub guided: bool,
    /// The least distance along it (its narrowest passage, less half a cell).
    pub width: f64,
    /// Its length (before shortening).
    pub length: f64,
    /// Point distance queries of the grid search and the shortening.
    pub queries: usize,
    /// Cells expanded by A*.
    pub expanded: usize,
    /// The grid's side.
    pub side: f64,
    /// Seconds spent (included in the search time).
    pub seconds: f64,
}

/// Progress of a search, reported about ten times a second by thread 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Seconds since the start.
    pub seconds: f64,
    /// States in the trees (all threads).
    pub states: usize,
}

/// The share of samples drawn about a rough path (`--guide`).
const GUIDE_SHARE: f64 = 0.5;

/// The share of samples drawn about the widest corridor. On cubicles, seeds 1-10 twice,
/// interleaved: median search time 0.0537 s at 0.7 against 0.0553 s at 0.5.
const CORRIDOR_SHARE: f64 = 0.7;

/// Guide samples are drawn about one of the next this many guide states (a quarter of a
/// base step apart) past how far the growing tree has come.
const GUIDE_LOOKAHEAD: usize = 8;

/// A rough path that biases the samples.
#[derive(Debug, Clone, Default)]
struct Guide {
    /// Its states, the start's end first.
    states: Vec<State>,
    /// For a corridor: the robot point (robot frame) its positions are of; its
    /// orientations are free.
    point: Option<Vector3<f64>>,
}

/// The widest corridor ([`corridor::widest`]) of the robot's centre (its bounding
/// box's) as a guide, and what its search did.
fn corridor_guide(problem: &Problem) -> (Guide, CorridorReport) {
    let t = Instant::now();
    let mut report = CorridorReport::default();
    let ball = corridor::Ball::of(problem.robot);
    let centre = |s: &State| Point3::from(s.position + s.orientation * ball.centre);
    let reach = Vector3::repeat(ball.centre.norm());
    let mut search = corridor::Search::new(
        CORRIDOR_SIDE * ball.radius,
        CORRIDOR_CELLS,
        CORRIDOR_QUERIES,
    );
    let world = problem.world;
    // Widths beyond the robot's diameter all let it pass: distances are capped there.
    let cap = 2.0 * ball.radius;
    let mut distance = |q: &Point3<f64>| world.bvh.point_distance_below(q, cap);
    let found = corridor::widest(
        &mut distance,
        &mut |a: &Point3<f64>, b: &Point3<f64>| !world.bvh.crosses(a, b),
        &(problem.space.min - reach),
        &(problem.space.max + reach),
        &centre(&problem.start),
        &centre(&problem.goal),
        &mut search,
    );
    let straight = (centre(&problem.goal) - centre(&problem.start)).norm();
    let mut guide = Guide::default();
    if let Some(c) = found {
        report.found = true;
        report.width = c.width;
        report.length = c.length();
        if report.length > CORRIDOR_DETOUR * straight + 4.0 * search.side {
            report.guided = true;
            let points = corridor::shorten(&mut distance, &c.points, c.width, &mut search.queries);
            guide = Guide {
                states: points
                    .iter()
                    .map(|p| State::new(p.coords, UnitQuaternion::identity()))
                    .collect(),
                point: Some(ball.centre),
            };
        }
    }
    report.queries = search.queries;
    report.expanded = search.expanded;
    report.side = search.side;
    report.seconds = t.elapsed().as_secs_f64();
    (guide, report)
}

/// A corridor guides the samples only when it is this many times longer than the
/// straight segment between the ends, plus four cells (the ends' links may wander two
/// cells each): a straight corridor tells the trees nothing that
/// RRT-Connect's greedy connection does not already try, and measured on OMPL.app's
/// problems, guiding along one slowed Twistycool and alpha-1.5 (docs/plan.md).
const CORRIDOR_DETOUR: f64 = 1.5;

/// The corridor grid's side, as a fraction of the radius of the robot's bounding ball.
/// Measured on OMPL.app's cubicles (seeds 1-6, summed search time): 0.5 found the same
/// way round as 0.75 at three times the queries (0.62 s against 0.40 s); 1.0 found a
/// narrower way, which the trees could not follow (2.5 s).
const CORRIDOR_SIDE: f64 = 0.75;

/// The most cells of the corridor's grid.
const CORRIDOR_CELLS: usize = 1 << 15;

/// The most point distance queries of the corridor's search.
const CORRIDOR_QUERIES: usize = 1 << 15;

/// The default rotation weight of the trees' metric: a quarter of the robot's radius.
///
/// The true motion bound weighs a turn by the robot's radius `R`, the farthest any
/// point moves; measured on OMPL.app's problems (seeds 1-10, docs/plan.md), a tree that
/// weighs turns at `R / 4` explores faster: it picks neighbours by position and turns
/// more per step. Medians, weight 1 against 1/4: cubicles 0.85 s against 0.58 s,
/// Twistycool 2.07 s against 1.02 s, alpha-1.5 3.99 s against 1.29 s (0.15, 0.2 and
/// 0.35 were also faster than 1, by less; see docs/plan.md).
pub const DEFAULT_ROTATION_WEIGHT: f64 = 0.25;

/// The default clearance: 0.2% of the robot's bounding-box diagonal.
pub fn default_clearance(robot: &Robot) -> f64 {
    2e-3 * robot.diagonal
}

/// Checks that `problem` can be planned: start and goal in the box, clear of the world
/// by more than `clearance`, and not inside a closed obstacle.
pub fn validate(problem: &Problem, clearance: f64) -> Result<(), PlanError> {
    let mut checker = Checker::new(problem.robot, problem.world, clearance);
    for (which, s) in [("start", &problem.start), ("goal", &problem.goal)] {
        if !problem.space.contains(s) {
            return Err(PlanError::OutsideBounds {
                which,
                position: s.position.into(),
                min: problem.space.min.into(),
                max: problem.space.max.into(),
            });
        }
        let c = checker.clearance_at(s);
        if c.lower <= clearance {
            let distance = crate::check::clearance(problem.robot, problem.world, s).max(0.0);
            return Err(PlanError::InCollision {
                which,
                distance,
                clearance,
            });
        }
        // A robot enclosed by a closed world: one of its vertices is inside (its
        // surface meets none of the world's, so all are).
        if problem.world.open_edges == 0 {
            if let Some(v) = problem.robot.vertices.first() {
                if problem.world.bvh.contains(&(s.isometry() * v)) {
                    return Err(PlanError::InsideObstacle { which });
                }
            }
        }
    }
    Ok(())
}

/// Plans a path for `problem`; `progress` is called about ten times a second.
pub fn plan(
    problem: &Problem,
    options: &PlanOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Plan, PlanError> {
    let clearance = options
        .clearance
        .unwrap_or_else(|| default_clearance(problem.robot));
    if !(clearance > 0.0 && clearance.is_finite()) {
        return Err(PlanError::Options(format!(
            "the clearance must be positive, not {clearance}"
        )));
    }
    let range = options.range.unwrap_or(0.03 * problem.space.extent());
    if !(range > 0.0 && range.is_finite()) {
        return Err(PlanError::Options(format!(
            "the range must be positive, not {range}"
        )));
    }
    let long = options.max_range.unwrap_or(problem.space.extent());
    if !(long >= range && long.is_finite()) {
        return Err(PlanError::Options(format!(
            "the longest step must be at least the step {range}, not {long}"
        )));
    }
    let weight = options.rotation_weight;
    if !(weight > 0.0 && weight.is_finite()) {
        return Err(PlanError::Options(format!(
            "the rotation weight must be positive, not {weight}"
        )));
    }
    validate(problem, clearance)?;
    let threads = options.threads.max(1);
    let start = Instant::now();
    let mut corridor_report = None;
    let guide = if !options.guide.is_empty() {
        Guide {
            states: options.guide.clone(),
            point: None,
        }
    } else if options.corridor {
        let (guide, report) = corridor_guide(problem);
        corridor_report = Some(report);
        guide
    } else {
        Guide::default()
    };
    let guide = &guide;
    let stop = AtomicBool::new(false);
    let states = AtomicUsize::new(0);
    let shared = Shared {
        start,
        stop: &stop,
        states: &states,
        progress,
    };
    let mut outcomes: Vec<Search> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let shared = &shared;
                scope.spawn(move || {
                    let seed = options.seed.wrapping_add(k as u64);
                    let mut s =
                        Search::new(problem, options, guide, clearance, range, long, seed, k);
                    s.run(shared);
                    s
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a planner thread panicked"))
            .collect()
    });
    let solve_seconds = start.elapsed().as_secs_f64();
    let total_states = outcomes
        .iter()
        .map(|s| s.trees[0].len() + s.trees[1].len())
        .sum();
    let samples = outcomes.iter().map(|s| s.samples).sum();
    let winner = outcomes
        .iter()
        .enumerate()
        .filter_map(|(k, s)| s.solution_time.map(|t| (t, k)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k);
    let mut work = Work::default();
    let mut result = Plan {
        solved: false,
        path: Vec::new(),
        raw_states: 0,
        states: total_states,
        samples,
        solve_seconds,
        simplify_seconds: 0.0,
        length: 0.0,
        raw_length: 0.0,
        clearance,
        range,
        max_range: long,
        rotation_weight: weight,
        thread: winner.unwrap_or(0),
        work,
        corridor: corridor_report,
    };
    if let Some(k) = winner {
        let s = &mut outcomes[k];
        let raw = std::mem::take(&mut s.solution);
        result.raw_states = raw.len();
        result.raw_length = length(&problem.space, raw.iter().map(|n| &n.0));
        let t = Instant::now();
        let path = simplify::simplify(
            raw,
            &problem.space,
            &mut s.checker,
            &mut s.rng,
            options.shortcuts,
        );
        result.simplify_seconds = t.elapsed().as_secs_f64();
        result.path = path.into_iter().map(|n| n.0).collect();
        result.length = length(&problem.space, result.path.iter());
        result.solved = true;
    }
    for s in &outcomes {
        work.queries += s.checker.work.queries;
        work.sweeps += s.checker.work.sweeps;
        work.motions += s.checker.work.motions;
    }
    result.work = work;
    Ok(result)
}

/// The length of a path in the space's metric.
pub fn length<'s>(space: &Space, path: impl Iterator<Item = &'s State>) -> f64 {
    let states: Vec<&State> = path.collect();
    states.windows(2).map(|w| space.distance(w[0], w[1])).sum()
}

/// What the threads share.
struct Shared<'a> {
    start: Instant,
    stop: &'a AtomicBool,
    states: &'a AtomicUsize,
    progress: &'a (dyn Fn(Progress) + Sync),
}

/// A node of a tree.
#[derive(Debug, Clone, Copy)]
struct Node {
    state: State,
    /// The parent's index (`usize::MAX` at the root).
    parent: usize,
    /// A lower bound of its distance to the world.
    lower: f64,
    /// Its nearest contact (closest points), queried the first time a step from it is
    /// blocked.
    contact: Option<Clearance>,
    /// The step tried first from it: twice the free step that made it (up to the
    /// longest step), the base step after a slide or once a longer step was blocked.
    step: f64,
}

/// A tree of states, with its positions and orientations also kept apart (a compact
/// copy for the nearest-neighbour scan, which reads every node).
struct Tree {
    nodes: Vec<Node>,
    positions: Vec<Vector3<f64>>,
    orientations: Vec<UnitQuaternion<f64>>,
}

impl Tree {
    fn new(root: Node) -> Tree {
        let mut tree = Tree {
            nodes: Vec::new(),
            positions: Vec::new(),
            orientations: Vec::new(),
        };
        tree.push(root);
        tree
    }

    fn push(&mut self, node: Node) {
        self.positions.push(node.state.position);
        self.orientations.push(node.state.orientation);
        self.nodes.push(node);
    }

    fn len(&self) -> usize {
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
enum Grow {
    Trapped,
    Advanced,
    Reached,
}

/// The sampling strategies, drawn in turn by weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Uniform,
    Obstacle,
    Bridge,
    Guide,
}

/// One thread's search.
struct Search<'a> {
    problem: Problem<'a>,
    /// The trees' metric: the problem's space with turns weighed by
    /// [`PlanOptions::rotation_weight`].
    metric: Space,
    checker: Checker<'a>,
    rng: ChaCha8Rng,
    range: f64,
    /// The longest step.
    long: f64,
    /// The trees: 0 grows from the start, 1 from the goal.
    trees: [Tree; 2],
    guide: Vec<State>,
    time_limit: f64,
    cancel: Option<Cancel>,
    samples: usize,
    thread: usize,
    solution: Vec<(State, f64)>,
    solution_time: Option<f64>,
    sampler: Sampler,
    /// When the guide is a corridor: the robot point (robot frame) its positions are
    /// of, its orientations free.
    guide_point: Option<Vector3<f64>>,
    /// How far each tree has come along the guide: the last guide state tree 0 has a
    /// node near, and the first one tree 1 has.
    reach: [usize; 2],
    /// The tree the current sample grows.
    from: usize,
    /// The orientation of the node that last moved each tree's reach (a corridor's
    /// samples turn about it).
    reach_turn: [UnitQuaternion<f64>; 2],
    /// The share of samples drawn about the guide.
    guide_share: f64,
}

impl<'a> Search<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
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
        let trees = [
            Tree::new(root(&mut checker, &problem.start)),
            Tree::new(root(&mut checker, &problem.goal)),
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
        }
    }

    fn run(&mut self, shared: &Shared) {
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
    fn advance_reach(&mut self, tree: usize, new: &State) {
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
    fn join(&self, ta: usize, a: usize, tb: usize, b: usize) -> Vec<(State, f64)> {
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

    /// The node of `tree` nearest to `target` in the space's metric (the first of
    /// equals): a scan of the positions, whose distance alone is a lower bound, with
    /// the rotation's part computed only for the nodes that pass it.
    fn nearest(&self, tree: usize, target: &State) -> usize {
        let tree = &self.trees[tree];
        let radius = self.metric.radius;
        let p = target.position;
        let mut best = (f64::INFINITY, 0);
        // Squared distances skip most nodes without a square root; the margin keeps the
        // skip conservative, so the choice is the one of the exact comparison.
        let mut best2 = f64::INFINITY;
        for (i, q) in tree.positions.iter().enumerate() {
            let dp2 = (q - p).norm_squared();
            if dp2 > best2 {
                continue;
            }
            let dp = dp2.sqrt();
            if dp >= best.0 {
                continue;
            }
            let d = dp + radius * tree.orientations[i].angle_to(&target.orientation);
            if d < best.0 {
                best = (d, i);
                best2 = d * d * (1.0 + 1e-12);
            }
        }
        best.1
    }

    /// Grows `tree` by one step towards `target` (sliding along the contact when the
    /// step is blocked).
    fn grow(&mut self, tree: usize, target: &State) -> Grow {
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
    fn extend(&mut self, tree: usize, near: usize, n: &Node, new: State, step: f64) -> bool {
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
    fn step(
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
    fn slide(&self, from: &State, contact: &Clearance, to: &State) -> Option<State> {
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

    fn strategy(&mut self) -> Strategy {
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
    fn sample(&mut self) -> State {
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
    fn retract(&mut self, free: &State, mut c: Clearance, into: &State) -> State {
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
fn densify(path: &[State], space: &Space, step: f64) -> Vec<State> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::shapes::box_surface;
    use nalgebra::{Point3, Vector3};

    /// The sliding direction is the distance's gradient: `n` in translation and
    /// `(r - c) x n` in rotation (about world axes through the robot's origin), checked
    /// against central differences of the exact distance. A tilted cube's lowest corner
    /// is its unique closest point to a floor, so the distance is smooth there; steps of
    /// 1e-6 give differences good to about 1e-9, and 1e-6 leaves room for rounding.
    #[test]
    fn the_contact_gradient_matches_finite_differences() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let floor = box_surface(Point3::new(0.0, -1.0, 0.0), Vector3::new(2.0, 0.5, 2.0), 1);
        let world = World::new(&floor);
        let tilt = UnitQuaternion::from_euler_angles(0.3, 0.2, 0.4);
        let s = State::new(Vector3::new(0.1, -0.25, 0.05), tilt);
        let mut checker = Checker::new(&robot, &world, 1e-4);
        let c = checker.clearance_at(&s);
        let exact = |s: &State| crate::check::clearance(&robot, &world, s);
        let d0 = exact(&s);
        assert!(d0 > 0.0 && d0 < 0.2, "{d0}");
        let n = c.normal().unwrap();
        let (_, r) = c.closest.unwrap();
        let m = (r.coords - s.position).cross(&n);
        let h = 1e-6;
        for k in 0..3 {
            let e = Vector3::ith(k, h);
            let moved = |sign: f64| State::new(s.position + e * sign, s.orientation);
            let fd = (exact(&moved(1.0)) - exact(&moved(-1.0))) / (2.0 * h);
            assert!(
                (fd - n[k]).abs() < 1e-6,
                "translation {k}: {fd} vs {}",
                n[k]
            );
            let turned = |sign: f64| {
                State::new(
                    s.position,
                    UnitQuaternion::from_scaled_axis(e * sign) * s.orientation,
                )
            };
            let fd = (exact(&turned(1.0)) - exact(&turned(-1.0))) / (2.0 * h);
            assert!((fd - m[k]).abs() < 1e-6, "rotation {k}: {fd} vs {}", m[k]);
        }
    }

    /// The problem of moving `robot`, unturned, from `x0` to `x1` on the x axis.
    fn along_x<'a>(
        robot: &'a Robot,
        world: &'a World,
        space: Space,
        x0: f64,
        x1: f64,
    ) -> Problem<'a> {
        let at = |x: f64| State::new(Vector3::new(x, 0.0, 0.0), UnitQuaternion::identity());
        Problem {
            robot,
            world,
            space,
            start: at(x0),
            goal: at(x1),
        }
    }

    /// A wall with two slots between the start and the goal: a narrow one (0.2 wide) on
    /// the straight line, which the robot (a cube of side 0.24) cannot pass in any
    /// orientation, and a wide one (0.6) 1.3 to the side. The widest corridor goes
    /// through the wide slot and is long against the straight segment, so it guides the
    /// samples; the planned path goes through the wide slot and passes the independent
    /// check. Without the corridor the planner solves it too (the corridor only biases
    /// samples).
    #[test]
    fn a_winding_corridor_guides_the_trees_through_the_wide_slot() {
        use crate::check::shapes::union;
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.12), 1));
        let piece = |y0: f64, y1: f64| {
            box_surface(
                Point3::new(0.0, 0.5 * (y0 + y1), 0.0),
                Vector3::new(0.05, 0.5 * (y1 - y0), 1.2),
                1,
            )
        };
        let world = World::new(&union(&[
            piece(-2.2, -0.1),
            piece(0.1, 1.0),
            piece(1.6, 2.2),
        ]));
        let space = Space {
            min: Vector3::new(-1.0, -2.0, -1.0),
            max: Vector3::new(1.0, 2.0, 1.0),
            radius: robot.radius,
        };
        let problem = along_x(&robot, &world, space, -0.5, 0.5);
        for corridor in [true, false] {
            let options = PlanOptions {
                corridor,
                ..PlanOptions::default()
            };
            let r = plan(&problem, &options, &|_| {}).unwrap();
            assert!(r.solved, "corridor {corridor}");
            if corridor {
                let c = r.corridor.expect("a corridor search");
                assert!(c.found && c.guided, "{c:?}");
                assert!(c.width > 0.1 && c.width <= 0.3, "{c:?}");
            } else {
                assert!(r.corridor.is_none());
            }
            let crossing = r
                .path
                .windows(2)
                .find(|w| w[0].position.x < 0.0 && w[1].position.x >= 0.0)
                .expect("the path crosses the wall");
            let y = 0.5 * (crossing[0].position.y + crossing[1].position.y);
            assert!(y > 1.0 && y < 1.6, "crosses at y = {y}");
            let report = crate::check::check_path(
                &robot,
                &world,
                &r.path,
                &crate::check::CheckOptions::default(),
                &mut |_| {},
            );
            assert!(report.collision_free, "corridor {corridor}");
        }
    }

    /// In open space the steps double: a start and a goal 40 base steps apart (an
    /// obstacle far to the side) are joined in a few states with the doubling steps,
    /// where the base step alone needs at least 40 (one per step on the way). A longest
    /// step below the base step is refused.
    #[test]
    fn steps_double_in_open_space() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let block = box_surface(Point3::new(0.0, 20.0, 0.0), Vector3::repeat(0.5), 1);
        let world = World::new(&block);
        let space = Space {
            min: Vector3::repeat(-25.0),
            max: Vector3::repeat(25.0),
            radius: robot.radius,
        };
        let problem = along_x(&robot, &world, space, -20.0, 20.0);
        let run = |max_range: Option<f64>| {
            let options = PlanOptions {
                range: Some(1.0),
                max_range,
                shortcuts: 0,
                ..PlanOptions::default()
            };
            plan(&problem, &options, &|_| {}).unwrap()
        };
        let doubling = run(None);
        let base = run(Some(1.0));
        assert!(doubling.solved && base.solved);
        assert_eq!(doubling.max_range, space.extent());
        assert!(doubling.states < 20, "{} states", doubling.states);
        assert!(base.states >= 40, "{} states", base.states);
        let options = PlanOptions {
            range: Some(1.0),
            max_range: Some(0.5),
            ..PlanOptions::default()
        };
        assert!(matches!(
            plan(&problem, &options, &|_| {}),
            Err(PlanError::Options(_))
        ));
    }

    /// The trees' metric weighs a turn by the rotation weight: a node a short way off but
    /// turned half a turn is the nearest with a quarter weight, and a node farther off
    /// with the target's orientation is the nearest with the full one. A weight that is
    /// not positive is refused.
    #[test]
    fn the_rotation_weight_sets_the_trees_metric() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let wall = box_surface(Point3::new(0.0, -1.5, 0.0), Vector3::new(2.0, 0.1, 2.0), 1);
        let world = World::new(&wall);
        let space = Space {
            min: Vector3::repeat(-3.0),
            max: Vector3::repeat(3.0),
            radius: robot.radius,
        };
        let at = |x: f64, turn: f64| {
            State::new(
                Vector3::new(x, 0.0, 0.0),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), turn),
            )
        };
        let problem = Problem {
            robot: &robot,
            world: &world,
            space,
            start: State::new(Vector3::repeat(2.0), UnitQuaternion::identity()),
            goal: State::new(Vector3::repeat(-2.0), UnitQuaternion::identity()),
        };
        // R = 0.1 sqrt(3): turned by pi, 0.1 + R pi = 0.64 (w = 1) or 0.24 (w = 1/4)
        // from the target; the unturned node is 0.3 away either way.
        let nearest = |weight: f64| {
            let options = PlanOptions {
                rotation_weight: weight,
                ..PlanOptions::default()
            };
            let mut search =
                Search::new(&problem, &options, &Guide::default(), 1e-3, 0.5, 0.5, 1, 0);
            for state in [at(0.1, std::f64::consts::PI), at(0.3, 0.0)] {
                search.trees[0].push(Node {
                    state,
                    parent: 0,
                    lower: 0.0,
                    contact: None,
                    step: 0.5,
                });
            }
            assert!((search.metric.radius - weight * robot.radius).abs() < 1e-15);
            search.nearest(0, &at(0.0, 0.0))
        };
        assert_eq!(nearest(1.0), 2);
        assert_eq!(nearest(DEFAULT_ROTATION_WEIGHT), 1);
        for weight in [0.0, -1.0, f64::NAN] {
            let options = PlanOptions {
                rotation_weight: weight,
                ..PlanOptions::default()
            };
            assert!(matches!(
                plan(&problem, &options, &|_| {}),
                Err(PlanError::Options(_))
            ));
        }
    }

    /// A slid step has no component into the contact (to first order it moves away by a
    /// tenth of the clearance) and keeps the translation along the contact.
    #[test]
    fn a_slid_step_keeps_its_tangential_part() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let floor = box_surface(Point3::new(0.0, -1.0, 0.0), Vector3::new(2.0, 0.5, 2.0), 1);
        let world = World::new(&floor);
        let space = Space {
            min: Vector3::repeat(-2.0),
            max: Vector3::repeat(2.0),
            radius: robot.radius,
        };
        let start = State::new(Vector3::new(0.0, -0.39, 0.0), UnitQuaternion::identity());
        let problem = Problem {
            robot: &robot,
            world: &world,
            space,
            start,
            goal: start,
        };
        let search = Search::new(
            &problem,
            &PlanOptions::default(),
            &Guide::default(),
            1e-3,
            0.5,
            0.5,
            1,
            0,
        );
        let mut checker = Checker::new(&robot, &world, 1e-3);
        let contact = checker.clearance_at(&start);
        // Down and sideways: the floor's normal is +y.
        let to = State::new(Vector3::new(0.3, -0.6, 0.0), UnitQuaternion::identity());
        let slid = search.slide(&start, &contact, &to).unwrap();
        let dp = slid.position - start.position;
        let dw = slid.orientation.scaled_axis();
        let n = contact.normal().unwrap();
        assert!((n - Vector3::y()).norm() < 1e-12, "{n}");
        let (_, r) = contact.closest.unwrap();
        let m = (r.coords - start.position).cross(&n);
        // The first-order change of the distance along the slid step: the tenth of the
        // clearance kept away from the contact.
        let change = n.dot(&dp) + m.dot(&dw);
        assert!((change - 1e-4).abs() < 1e-12, "{change}");
        // The part of the translation along the floor is kept as it was.
        assert!((dp.x - 0.3).abs() < 1e-12 && dp.z.abs() < 1e-12, "{dp}");
        // Moving away already: nothing to remove.
        let up = State::new(Vector3::new(0.3, 0.0, 0.0), UnitQuaternion::identity());
        assert!(search.slide(&start, &contact, &up).is_none());
    }
}
