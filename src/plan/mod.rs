//! Path planning for a rigid part in SE(3): a bidirectional sampling planner
//! (RRT-Connect, Kuffner and LaValle 2000) whose states and motions are validated by
//! exact mesh distances ([`validity`]), with the distance and its gradient steering it
//! through narrow passages, where collision-only planners sample blindly.
//!
//! **RRT-Connect.** Two trees, rooted at the start and the goal, take turns: one grows a
//! step towards a sample (in the metric of [`space`]), and the other then grows towards
//! the new state, step after step, until it reaches it (a path) or is trapped. Motions
//! are certified continuously ([`validity::Checker::motion`]): a returned path never
//! clips an obstacle between its states, and there is no resolution to choose. Where
//! most motions cross the world, they are first decided at a few states (probes); the
//! nearest node comes from a grid of the trees' positions, searched ring by ring.
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
//! **Relaxing the clearance** ([`PlanOptions::relax_clearance`], off by default): a
//! passage narrower than about twice the clearance is closed to the search, and the
//! default clearance closes the alpha puzzles'. Relaxed, the clearance halves every
//! [`CLEARANCE_STAGE`] samples until the trees meet ([`scheduled_clearance`]), as a
//! continuation: the trees stay valid at every smaller clearance, so the search keeps
//! them. It is off by default because a small clearance lets the trees hug the walls,
//! where motions cost more to certify, and loses runs on problems the default opens
//! (bugtrap; docs/plan.md has the figures).
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

mod guide;
mod nearest;
mod rrt;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Instant;

use crate::check::{Robot, World};
use crate::progress::{cancelled, Cancel};
use crate::proximity::rigid::State;
use guide::{corridor_guide, Guide};
use rrt::{Search, Shared};
use space::Space;
use validity::{Checker, Work};

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
    /// Halve the clearance every [`CLEARANCE_STAGE`] samples while the trees have not
    /// met, [`CLEARANCE_HALVINGS`] times at most ([`scheduled_clearance`]), for passages
    /// narrower than the clearance. Off by default: a small clearance slows the
    /// certification of motions near the world, and on bugtrap, which the default
    /// opens, it loses runs (docs/plan.md).
    pub relax_clearance: bool,
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
            relax_clearance: false,
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
    /// The clearance when the search ended (problem units; of the thread whose path
    /// won, else thread 0's): the initial one unless [`PlanOptions::relax_clearance`]
    /// relaxed it.
    pub clearance: f64,
    /// The clearance the search started from.
    pub initial_clearance: f64,
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

/// The default rotation weight of the trees' metric: a quarter of the robot's radius.
///
/// The true motion bound weighs a turn by the robot's radius `R`, the farthest any
/// point moves; a tree that weighs turns at `R / 4` explores faster: it picks
/// neighbours by position and turns more per step (docs/plan.md has the measurements).
pub const DEFAULT_ROTATION_WEIGHT: f64 = 0.25;

/// The default clearance: 0.2% of the robot's bounding-box diagonal.
pub fn default_clearance(robot: &Robot) -> f64 {
    2e-3 * robot.diagonal
}

/// Samples a search draws at each clearance of the relaxing schedule before halving it.
pub const CLEARANCE_STAGE: usize = 5_000;

/// How many times the relaxing schedule halves the clearance (the last stage's is the
/// start's over `2^CLEARANCE_HALVINGS`).
pub const CLEARANCE_HALVINGS: u32 = 8;

/// The clearance after `samples` samples under [`PlanOptions::relax_clearance`]:
/// `start`, halved every [`CLEARANCE_STAGE`] samples, [`CLEARANCE_HALVINGS`] times at
/// most.
///
/// A passage narrower than about twice the clearance is closed to the search, and the
/// default clearance closes the tightest ones (the alpha puzzles'). Every state and
/// motion the trees hold stays valid at a smaller clearance, so the search keeps its
/// trees as it relaxes; the schedule counts samples, not seconds, so that a run stays a
/// function of its seed.
pub fn scheduled_clearance(start: f64, samples: usize) -> f64 {
    let halvings = (samples / CLEARANCE_STAGE).min(CLEARANCE_HALVINGS as usize);
    start / f64::from(1u32 << halvings)
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
///
/// The steps: check the options' steps and the start and goal (`Steps::checked`,
/// `validate`); choose the guide (`guide_of`); grow the trees on every thread
/// (`search`); simplify the path of the thread that first joined its trees and sum
/// the work (`summary`).
pub fn plan(
    problem: &Problem,
    options: &PlanOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Plan, PlanError> {
    let steps = Steps::checked(problem, options)?;
    validate(problem, steps.clearance)?;
    let start = Instant::now();
    let (guide, corridor) = guide_of(problem, options);
    let outcomes = search(problem, options, &guide, &steps, start, progress);
    let solve_seconds = start.elapsed().as_secs_f64();
    Ok(summary(
        problem,
        options,
        outcomes,
        &steps,
        solve_seconds,
        corridor,
    ))
}

/// The planner's lengths, from the options or their defaults, checked.
struct Steps {
    clearance: f64,
    range: f64,
    long: f64,
    weight: f64,
}

impl Steps {
    fn checked(problem: &Problem, options: &PlanOptions) -> Result<Steps, PlanError> {
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
        Ok(Steps {
            clearance,
            range,
            long,
            weight,
        })
    }
}

/// The guide of the samples: the options' states, else the corridor's (with its
/// report) when asked for, else none.
fn guide_of(problem: &Problem, options: &PlanOptions) -> (Guide, Option<CorridorReport>) {
    if !options.guide.is_empty() {
        let guide = Guide {
            states: options.guide.clone(),
            point: None,
        };
        (guide, None)
    } else if options.corridor {
        let (guide, report) = corridor_guide(problem);
        (guide, Some(report))
    } else {
        (Guide::default(), None)
    }
}

/// Grows the trees on `options.threads` threads (seeds `seed`, `seed + 1`, ...) until
/// one joins its trees or the time runs out; the threads' searches, in thread order.
fn search<'a>(
    problem: &Problem<'a>,
    options: &PlanOptions,
    guide: &Guide,
    steps: &Steps,
    start: Instant,
    progress: &(dyn Fn(Progress) + Sync),
) -> Vec<Search<'a>> {
    let stop = AtomicBool::new(false);
    let states = AtomicUsize::new(0);
    let shared = Shared {
        start,
        stop: &stop,
        states: &states,
        progress,
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..options.threads.max(1))
            .map(|k| {
                let shared = &shared;
                scope.spawn(move || {
                    let seed = options.seed.wrapping_add(k as u64);
                    let (clearance, range, long) = (steps.clearance, steps.range, steps.long);
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
    })
}

/// The plan: the path of the thread that first joined its trees, simplified, and the
/// counts of every thread (the simplification's work included).
fn summary(
    problem: &Problem,
    options: &PlanOptions,
    mut outcomes: Vec<Search>,
    steps: &Steps,
    solve_seconds: f64,
    corridor: Option<CorridorReport>,
) -> Plan {
    let winner = outcomes
        .iter()
        .enumerate()
        .filter_map(|(k, s)| s.solution_time.map(|t| (t, k)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k);
    let mut result = Plan {
        solved: false,
        path: Vec::new(),
        raw_states: 0,
        states: outcomes
            .iter()
            .map(|s| s.trees[0].len() + s.trees[1].len())
            .sum(),
        samples: outcomes.iter().map(|s| s.samples).sum(),
        solve_seconds,
        simplify_seconds: 0.0,
        length: 0.0,
        raw_length: 0.0,
        clearance: outcomes[winner.unwrap_or(0)].checker.clearance,
        initial_clearance: steps.clearance,
        range: steps.range,
        max_range: steps.long,
        rotation_weight: steps.weight,
        thread: winner.unwrap_or(0),
        work: Work::default(),
        corridor,
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
    // The work of every thread, the simplification's included.
    for s in &outcomes {
        result.work.queries += s.checker.work.queries;
        result.work.sweeps += s.checker.work.sweeps;
        result.work.motions += s.checker.work.motions;
        result.work.near += s.checker.work.near;
        result.work.refused += s.checker.work.refused;
    }
    result
}

/// The length of a path in the space's metric.
pub fn length<'s>(space: &Space, path: impl Iterator<Item = &'s State>) -> f64 {
    let states: Vec<&State> = path.collect();
    states.windows(2).map(|w| space.distance(w[0], w[1])).sum()
}
