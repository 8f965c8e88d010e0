//! Path and assembly checks: can a rigid part (the robot) move along a path of SE(3)
//! states through a fixed world without collision, with how much clearance, where does it
//! first touch and how deep does it go.
//!
//! **Continuous, not sampled.** Between consecutive states the robot moves by position
//! lerp and quaternion slerp on the shorter arc ([`ompl::State::interpolate`]). A robot
//! point `p` (|p| <= R, R the robot's radius about its origin) then moves at most
//! `B = |dp| + |dtheta| R` per unit of the segment parameter, and so does the distance
//! between the meshes. Conservative advancement: from a state whose distance is at least `d`, the
//! parameter may advance by `d / B` without any contact in between (Mirtich 1996;
//! Tang, Kim and Manocha 2009 for the bound). No resolution parameter decides the
//! verdict: a thin wall between two free states is met, because each step stops short of
//! it.
//!
//! **The tolerance** `tol` (default 0.1% of the robot's bounding-box diagonal) is the one
//! length the check cannot resolve: a state closer than `tol` counts as contact (a
//! collision for the verdict, which therefore errs on the side of "collides"). Through a
//! contact region the check steps by `max(tol, 0.1% of the robot's diagonal)` of motion,
//! sampling the penetration depth there (the depth between samples can be larger by at
//! most that motion); the region's ends are bisected to 1e-6 of the segment.
//!
//! **Two passes.** Advancing needs only a lower bound of the distance, so the first pass
//! asks the hierarchy for the distance within 25% ([`Slack`]), which on nearly parallel
//! surfaces costs a small fraction of an exact query; the step shrinks by as much. The
//! second pass certifies the minimum clearance `m` (the smallest distance found) to
//! `tol` over the whole path: every sample's lower bound, and the distance over every
//! interval between samples, must be at least `m - tol`. An interval passes on its two
//! samples when `(l_k + l_{k+1} - B h) / 2` clears that floor, else on a sweep of the
//! robot over it ([`bvh::Bvh::clear_over`]: node-pair bounds that count only the motion
//! *towards* the world, the directional bound of C2A, Tang, Kim and Manocha 2009), else
//! it is split at its middle. Only the few intervals around the minimum are ever split
//! finely; where the robot slides past the world, the sweep passes long intervals that
//! the Lipschitz bound `B` would cut into thousands.
//!
//! **Exact near contact.** Distances are exact triangle-mesh distances ([`bvh`],
//! [`exact`]).
//!
//! **An exact verdict.** Within `tol` of the world the check steps by decisions; a
//! stretch there in which the meshes never meet is checked again on its own at a quarter
//! of its least distance, recursively, to 1e-9 of the robot's diagonal
//! ([`FINEST_TOLERANCE`]): the path collides where the meshes meet (touching counts), as
//! in OMPL.app's FCL checker, and the tolerance is the resolution of the clearance only.
//!
//! **Penetration** is the translational penetration depth at each contact interval's
//! deepest state ([`penetration`]): the shortest translation that separates the parts,
//! an upper bound from a search over directions, exact along each.
//!
//! Inputs: OMPL.app problems and paths ([`ompl`]), meshes in COLLADA ([`crate::mesh::collada`]),
//! OBJ or STL.

pub mod bvh;
pub mod compliant;
pub mod exact;
pub mod ompl;
pub mod penetration;
pub mod problem;
pub mod puzzles;
pub mod report;
pub mod shapes;

use std::time::Instant;

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

use crate::mesh::SurfaceMesh;
use crate::progress::{cancelled, Cancel};
use bvh::Bvh;
use ompl::State;

/// A rigid part that moves: its mesh in its own frame (origin already chosen).
#[derive(Debug, Clone)]
pub struct Robot {
    /// The hierarchy over the triangles, in the robot's frame.
    pub bvh: Bvh,
    /// The vertices (for the penetration depth), in the robot's frame.
    pub vertices: Vec<Point3<f64>>,
    /// Largest distance of a vertex from the origin (m).
    pub radius: f64,
    /// The bounding-box diagonal (m).
    pub diagonal: f64,
    /// Edges used by one triangle only: a mesh with any is not closed, and points
    /// inside it, hence penetration depths, are not defined.
    pub open_edges: usize,
}

/// Edges of `mesh` used by one triangle only (by position: OBJ and COLLADA files often
/// repeat vertices along seams).
pub fn open_edges(mesh: &SurfaceMesh) -> usize {
    let key = |p: &Point3<f64>| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
    let mut count = std::collections::HashMap::new();
    for t in &mesh.triangles {
        for k in 0..3 {
            let (a, b) = (
                key(&mesh.vertices[t[k]]),
                key(&mesh.vertices[t[(k + 1) % 3]]),
            );
            if a != b {
                *count
                    .entry(if a < b { (a, b) } else { (b, a) })
                    .or_insert(0usize) += 1;
            }
        }
    }
    count.values().filter(|&&c| c == 1).count()
}

impl Robot {
    /// A robot from its mesh, in its own frame.
    pub fn new(mesh: &SurfaceMesh) -> Robot {
        Robot {
            open_edges: open_edges(mesh),
            bvh: Bvh::new(mesh),
            vertices: mesh.vertices.clone(),
            radius: mesh
                .vertices
                .iter()
                .map(|v| v.coords.norm())
                .fold(0.0, f64::max),
            diagonal: mesh.bounding_box().extent().norm(),
        }
    }
}

/// The fixed environment: one or more named objects.
#[derive(Debug, Clone)]
pub struct World {
    /// The hierarchy over all the objects' triangles.
    pub bvh: Bvh,
    /// The vertices (for the penetration depth).
    pub vertices: Vec<Point3<f64>>,
    /// Each object's name and hierarchy, to say which one a contact is with (empty for
    /// a single-object world, named "world").
    pub objects: Vec<(String, Bvh)>,
    /// Edges used by one triangle only (see [`Robot::open_edges`]).
    pub open_edges: usize,
}

impl World {
    /// A world of one object.
    pub fn new(mesh: &SurfaceMesh) -> World {
        World {
            bvh: Bvh::new(mesh),
            vertices: mesh.vertices.clone(),
            objects: Vec::new(),
            open_edges: open_edges(mesh),
        }
    }

    /// A world of named objects (meshes in world coordinates).
    pub fn from_objects(objects: &[(String, SurfaceMesh)]) -> World {
        let meshes: Vec<SurfaceMesh> = objects.iter().map(|(_, m)| m.clone()).collect();
        let all = shapes::union(&meshes);
        World {
            bvh: Bvh::new(&all),
            open_edges: open_edges(&all),
            vertices: all.vertices,
            objects: objects
                .iter()
                .map(|(n, m)| (n.clone(), Bvh::new(m)))
                .collect(),
        }
    }

    /// The names of the objects within `tol` of the robot at `pose`.
    pub fn objects_near(&self, robot: &Robot, pose: &Isometry3<f64>, tol: f64) -> Vec<String> {
        if self.objects.is_empty() {
            return vec!["world".to_string()];
        }
        self.objects
            .iter()
            .filter(|(_, b)| {
                b.distance_to(&robot.bvh, pose, tol.max(f64::MIN_POSITIVE) * (1.0 + 1e-9))
                    .is_some()
            })
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// A contact interval and the objects touched at its start.
#[derive(Debug, Clone, PartialEq)]
pub struct Contact {
    /// Where the contact starts.
    pub from: PathPos,
    /// The first free parameter after it (or the last sample of the segment).
    pub to: PathPos,
    /// The objects within the tolerance at its start.
    pub objects: Vec<String>,
    /// The deepest translational penetration found in the interval (an upper bound at
    /// its deepest sampled state, [`penetration`]; 0 where the parts only touch).
    pub depth: f64,
    /// Where that depth is.
    pub deepest_at: PathPos,
}

/// The mesh moved so that `origin` is at the origin (OMPL.app's robot convention: the
/// origin is the mean of the imported vertices, [`crate::mesh::collada::Collada::vertex_mean`]).
pub fn robot_origin(mesh: &SurfaceMesh, origin: &Point3<f64>) -> SurfaceMesh {
    SurfaceMesh {
        vertices: mesh
            .vertices
            .iter()
            .map(|v| Point3::from(v - origin))
            .collect(),
        triangles: mesh.triangles.clone(),
    }
}

/// A place on a path: state `segment` to `segment + 1`, at fraction `t`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathPos {
    /// The index of the segment's first state.
    pub segment: usize,
    /// The fraction of the segment, in [0, 1].
    pub t: f64,
}

/// The state at `at` on `path` (at least one state; a path of one state is that state).
pub fn state_at(path: &[State], at: PathPos) -> State {
    if path.len() < 2 {
        path[0]
    } else {
        path[at.segment].interpolate(&path[at.segment + 1], at.t)
    }
}

impl PathPos {
    /// The position as a fraction of the whole path's parameter (segments count equally).
    pub fn fraction(&self, segments: usize) -> f64 {
        (self.segment as f64 + self.t) / segments.max(1) as f64
    }
}

/// One evaluated state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Where on the path.
    pub at: PathPos,
    /// The distance of the closest pair of triangles found (an upper bound of the
    /// distance, exact where `lower` equals it) when free; minus the penetration depth
    /// when intersecting (0 when touching).
    pub clearance: f64,
    /// A lower bound of the distance (equal to `clearance` when exact or in contact).
    pub lower: f64,
}

/// Check settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOptions {
    /// The tolerance, m (see the module docs); `None`: 0.1% of the robot's diagonal.
    pub tolerance: Option<f64>,
    /// Largest number of distance evaluations before giving up (a budget, not a
    /// resolution: the check reports it ran out).
    pub max_evaluations: usize,
    /// Stop at the first collision: the verdict and where the first contact starts, with
    /// neither the path beyond it (its other intervals, its minimum) nor any penetration
    /// depth. For the question "can this part pass?".
    pub first_contact_only: bool,
    /// Stop early when this is cancelled (a user's interrupt): the report then covers
    /// the path up to there and is marked [`Report::incomplete`].
    pub cancel: Option<Cancel>,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            tolerance: None,
            max_evaluations: 20_000_000,
            first_contact_only: false,
            cancel: None,
        }
    }
}

/// What the check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// No state of the path comes within the tolerance of the world.
    pub collision_free: bool,
    /// The smallest clearance (certified to the tolerance); minus the largest penetration
    /// when the path collides with penetration.
    pub min_clearance: f64,
    /// Where the minimum clearance is.
    pub min_clearance_at: PathPos,
    /// Largest penetration depth found (0 when free or only touching): the
    /// translational depth at the deepest state sampled, an upper bound
    /// ([`penetration::penetration_depth`]).
    pub max_penetration: f64,
    /// Where the largest depth is, and the direction of its separating translation.
    pub deepest: Option<Deepest>,
    /// The first state within the tolerance of the world, refined by bisection.
    pub first_collision: Option<PathPos>,
    /// Parameter intervals in contact (within the tolerance), in path order.
    pub contacts: Vec<Contact>,
    /// Every evaluated state, in path order (with the certification's split points,
    /// whose lower bound is unknown: minus infinity).
    pub samples: Vec<Sample>,
    /// The tolerance used (m).
    pub tolerance: f64,
    /// The robot's radius about its origin (m).
    pub robot_radius: f64,
    /// The robot's bounding-box diagonal (m).
    pub robot_diagonal: f64,
    /// States on the path.
    pub states: usize,
    /// Distance evaluations (within 25% when advancing, within a quarter of the
    /// tolerance when certifying; exact at contact).
    pub evaluations: usize,
    /// Interval sweeps of the certification ([`bvh::Bvh::clear_over`]).
    pub sweeps: usize,
    /// The evaluation budget ran out, or the check was cancelled, before the end of the
    /// path.
    pub incomplete: bool,
    /// Wall time of the check (s).
    pub seconds: f64,
}

impl Report {
    /// Whether the path passes: collision-free, at least `min_clearance` from the world
    /// when one is required, and checked to its end.
    pub fn passes(&self, min_clearance: Option<f64>) -> bool {
        let clearance_ok =
            min_clearance.is_none_or(|m| self.collision_free && self.min_clearance >= m);
        self.collision_free && clearance_ok && !self.incomplete
    }
}

/// The clearance at a state: exact distance when free, minus the translational
/// penetration depth when intersecting ([`penetration::penetration_depth`], an upper
/// bound of the depth).
pub fn clearance(robot: &Robot, world: &World, state: &State) -> f64 {
    let s = evaluate(
        robot,
        world,
        state,
        Slack::EXACT,
        &mut bvh::PairScratch::default(),
    );
    if s.clearance > 0.0 {
        return s.clearance;
    }
    -penetration::penetration_depth(
        &world.bvh,
        &robot.bvh,
        &state.isometry(),
        penetration::Effort::FINE,
        None,
        &mut penetration::Scratch::default(),
    )
    .depth
}

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

/// The clearance and a lower bound at a state (see [`Sample`]; `at` is left at the
/// path's start for the caller to set). Exact when the meshes touch, 0 when they
/// intersect (the depth is measured apart, [`penetration`]), and within `slack`
/// otherwise.
pub fn evaluate(
    robot: &Robot,
    world: &World,
    state: &State,
    slack: Slack,
    scratch: &mut bvh::PairScratch,
) -> Sample {
    let pose = state.isometry();
    let at = PathPos { segment: 0, t: 0.0 };
    let mut found = world
        .bvh
        .distance_with(&robot.bvh, &pose, f64::INFINITY, slack, scratch);
    if matches!(found, Some(b) if b.lower <= 0.0 && b.upper() > 0.0) {
        // Touching or not is decided exactly.
        found = world
            .bvh
            .distance_with(&robot.bvh, &pose, f64::INFINITY, Slack::EXACT, scratch);
    }
    match found {
        Some(b) if b.upper() > 0.0 => Sample {
            at,
            clearance: b.upper(),
            lower: b.lower,
        },
        Some(_) => Sample {
            at,
            clearance: 0.0,
            lower: 0.0,
        },
        None => Sample {
            at,
            clearance: f64::INFINITY,
            lower: f64::INFINITY,
        },
    }
}

/// The points to mark at a pose (world coordinates), at most `limit`: the closest pair
/// when the robot is free, else the robot's vertices inside the world and the world's
/// inside the robot (the points that make the penetration depth), or the touching point.
pub fn contact_points(
    robot: &Robot,
    world: &World,
    pose: &Isometry3<f64>,
    limit: usize,
) -> Vec<Point3<f64>> {
    let Some(c) = world.bvh.distance_to(&robot.bvh, pose, f64::INFINITY) else {
        return Vec::new();
    };
    if c.distance > 0.0 {
        return vec![c.on_a, c.on_b];
    }
    let inv = pose.inverse();
    let mut points: Vec<Point3<f64>> = robot
        .vertices
        .iter()
        .map(|v| pose * v)
        .filter(|w| world.bvh.contains(w))
        .chain(
            world
                .vertices
                .iter()
                .filter(|w| robot.bvh.contains(&(inv * *w)))
                .copied(),
        )
        .take(limit)
        .collect();
    if points.is_empty() {
        points.push(c.on_a);
    }
    points
}

/// The motion bound of a segment: `|dp| + |dtheta| R`.
pub fn motion_bound(a: &State, b: &State, radius: f64) -> f64 {
    let theta = a.orientation.angle_to(&b.orientation);
    // angle_to is in [0, pi] for unit quaternions: the shorter arc slerp takes.
    (b.position - a.position).norm() + theta * radius
}

/// The slack of the queries that advance along the path: a quarter of the distance (the
/// step then falls short of the conservative one by at most that much), at least half
/// the tolerance. Exact answers are only needed where the minimum is certified.
fn advance_slack(tol: f64) -> Slack {
    Slack {
        absolute: 0.5 * tol,
        relative: 0.25,
        enough: f64::INFINITY,
    }
}

/// The slack of the queries that certify the minimum: a quarter of the tolerance.
fn certify_slack(tol: f64) -> Slack {
    Slack {
        absolute: 0.25 * tol,
        relative: 0.0,
        enough: f64::INFINITY,
    }
}

/// Checks `path` (at least one state) for `robot` against `world`; `progress` is called
/// with each finished segment.
///
/// The steps: advance along the path (`advance`); resolve the stretches that came
/// within the tolerance without the meshes meeting, each by a check of its own at a finer
/// tolerance (`resolve_near`); certify the minimum clearance when the path is free
/// (`certify_minimum`); collect the intervals where the meshes meet, their ends
/// bisected; measure the deepest state of each (`deepest_in`). With
/// [`CheckOptions::first_contact_only`] the first two steps stop at the first contact
/// and no depth is measured.
pub fn check_path(
    robot: &Robot,
    world: &World,
    path: &[State],
    options: &CheckOptions,
    progress: &mut dyn FnMut(usize),
) -> Report {
    let start = Instant::now();
    let tol = options
        .tolerance
        .unwrap_or(1e-3 * robot.diagonal)
        .max(f64::MIN_POSITIVE);
    let mut count = Counts::default();
    let (mut samples, incomplete) =
        resolved_samples(robot, world, path, tol, options, &mut count, progress);
    let (contacts, deepest) = meeting_intervals(
        robot,
        world,
        path,
        &mut samples,
        tol,
        options.first_contact_only,
        &options.cancel,
    );
    let incomplete = incomplete || cancelled(&options.cancel);
    let min_s = samples
        .iter()
        .copied()
        .min_by(|a, b| a.clearance.total_cmp(&b.clearance))
        .unwrap_or(Sample {
            at: PathPos { segment: 0, t: 0.0 },
            clearance: f64::INFINITY,
            lower: f64::INFINITY,
        });
    Report {
        collision_free: contacts.is_empty(),
        min_clearance: min_s.clearance,
        min_clearance_at: min_s.at,
        max_penetration: deepest.map_or(0.0, |d| d.depth),
        deepest,
        first_collision: contacts.first().map(|c| c.from),
        contacts,
        samples,
        tolerance: tol,
        robot_radius: robot.radius,
        robot_diagonal: robot.diagonal,
        states: path.len(),
        evaluations: count.evaluations,
        sweeps: count.sweeps,
        incomplete,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The samples of a path with its near stretches resolved and, when the meshes never
/// meet, its minimum certified: the part of [`check_path`] that a near stretch's own check
/// repeats ([`resolve_near`]). Returns them in path order, and whether the evaluation
/// budget ran out.
fn resolved_samples(
    robot: &Robot,
    world: &World,
    path: &[State],
    tol: f64,
    options: &CheckOptions,
    count: &mut Counts,
    progress: &mut dyn FnMut(usize),
) -> (Vec<Sample>, bool) {
    let bounds: Vec<f64> = path
        .windows(2)
        .map(|w| motion_bound(&w[0], &w[1], robot.radius))
        .collect();
    let (samples, incomplete) = advance(robot, world, path, &bounds, tol, options, count, progress);
    let samples = resolve_near(robot, world, path, samples, tol, options, count);
    let meets = samples.iter().any(|s| s.clearance <= 0.0);
    if meets || incomplete || bounds.is_empty() {
        return (samples, incomplete);
    }
    let mut per_segment = by_segment(samples, bounds.len());
    let mut scratch = bvh::PairScratch::default();
    let mut eval_scratch = bvh::PairScratch::default();
    let (mut sweeps, mut evaluations) = (0, 0);
    certify_minimum(
        &mut per_segment,
        path,
        &bounds,
        tol,
        &mut |motion, floor| {
            sweeps += 1;
            world
                .bvh
                .clear_over(&robot.bvh, motion, floor, &mut scratch)
        },
        &mut |at, slack| {
            evaluations += 1;
            let s = evaluate(robot, world, &state_at(path, at), slack, &mut eval_scratch);
            Sample { at, ..s }
        },
    );
    count.sweeps += sweeps;
    count.evaluations += evaluations;
    (per_segment.into_iter().flatten().collect(), false)
}

/// Work counters of a check.
#[derive(Debug, Default)]
struct Counts {
    evaluations: usize,
    sweeps: usize,
}

/// Samples grouped by segment (in path order).
fn by_segment(samples: Vec<Sample>, segments: usize) -> Vec<Vec<Sample>> {
    let mut out: Vec<Vec<Sample>> = vec![Vec::new(); segments.max(1)];
    for s in samples {
        out[s.at.segment.min(segments.max(1) - 1)].push(s);
    }
    out
}

/// The first pass: conservative advancement where the robot is farther than `tol`, and
/// steps of `max(tol, 0.1% of the robot's diagonal)` of motion where it is nearer (each
/// a decision, measured exactly where it fails: 0 where the meshes meet). Returns the
/// samples in path order and whether the evaluation budget ran out.
#[allow(clippy::too_many_arguments)]
fn advance(
    robot: &Robot,
    world: &World,
    path: &[State],
    bounds: &[f64],
    tol: f64,
    options: &CheckOptions,
    count: &mut Counts,
    progress: &mut dyn FnMut(usize),
) -> (Vec<Sample>, bool) {
    let contact_step = tol.max(1e-3 * robot.diagonal);
    let mut scratch = bvh::PairScratch::default();
    let mut decide_scratch = bvh::PairScratch::default();
    let mut eval = |at: PathPos, slack: Slack, count: &mut Counts| -> Sample {
        count.evaluations += 1;
        let s = state_at(path, at);
        let mut sample = evaluate(robot, world, &s, slack, &mut scratch);
        if sample.lower <= tol && sample.clearance > tol {
            // Near or not is decided on the exact distance.
            sample = evaluate(robot, world, &s, Slack::EXACT, &mut scratch);
        }
        Sample { at, ..sample }
    };
    let mut samples = Vec::new();
    if bounds.is_empty() {
        samples.push(eval(PathPos { segment: 0, t: 0.0 }, Slack::EXACT, count));
        return (samples, false);
    }
    let mut incomplete = false;
    for (i, &b) in bounds.iter().enumerate() {
        let mut t = 0.0;
        'segment: loop {
            // Within 25%, not merely enough for the rest of the segment: the
            // certification's bounds start from these samples' lower bounds, and loose
            // ones cost it more than they save here.
            let s = eval(PathPos { segment: i, t }, advance_slack(tol), count);
            samples.push(s);
            if options.first_contact_only && s.clearance <= 0.0 {
                return (samples, false);
            }
            if t >= 1.0 || b == 0.0 {
                break;
            }
            if count.evaluations >= options.max_evaluations || cancelled(&options.cancel) {
                incomplete = true;
                break;
            }
            if s.clearance > tol {
                t = (t + s.lower / b).min(1.0);
                continue;
            }
            // Near: decided steps until a state is farther than `tol` (measured at the
            // loop's top).
            loop {
                t = (t + contact_step / b).min(1.0);
                count.evaluations += 1;
                let at = PathPos { segment: i, t };
                let pose = state_at(path, at).isometry();
                let d = world
                    .bvh
                    .separated(&robot.bvh, &pose, tol, &mut decide_scratch);
                if d.clear {
                    break;
                }
                let sample = if d.upper > 0.0 {
                    eval(at, Slack::EXACT, count)
                } else {
                    Sample {
                        at,
                        clearance: 0.0,
                        lower: 0.0,
                    }
                };
                samples.push(sample);
                if options.first_contact_only && sample.clearance <= 0.0 {
                    return (samples, false);
                }
                if t >= 1.0 {
                    break 'segment;
                }
                if count.evaluations >= options.max_evaluations || cancelled(&options.cancel) {
                    incomplete = true;
                    break 'segment;
                }
            }
        }
        progress(i);
        if incomplete || cancelled(&options.cancel) {
            break;
        }
    }
    (samples, incomplete)
}

/// The finest tolerance a stretch is resolved to, relative to the robot's diagonal:
/// below it the parts count as touching (a collision).
pub const FINEST_TOLERANCE: f64 = 1e-9;

/// Resolves each stretch of samples nearer than `tol` in which the meshes never meet
/// (every sample's exact distance positive): the stretch, from the sample before it to
/// the sample after it, is checked on its own at a tolerance of a quarter of its least
/// distance, whose samples then replace it. So the verdict does not depend on the
/// tolerance: a path that passes 0.004 from the world at a tolerance of 0.3 is free,
/// with its clearance certified to the finer tolerance there.
fn resolve_near(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: Vec<Sample>,
    tol: f64,
    options: &CheckOptions,
    count: &mut Counts,
) -> Vec<Sample> {
    let near = |s: &Sample| s.clearance <= tol;
    let mut out: Vec<Sample> = Vec::with_capacity(samples.len());
    let mut k = 0;
    while k < samples.len() {
        if options.first_contact_only && out.iter().any(|s| s.clearance <= 0.0) {
            // The first contact is found: nothing after it is needed.
            break;
        }
        if !near(&samples[k]) {
            out.push(samples[k]);
            k += 1;
            continue;
        }
        let mut e = k;
        while e + 1 < samples.len() && near(&samples[e + 1]) {
            e += 1;
        }
        let stretch = &samples[k..=e];
        let least = stretch
            .iter()
            .map(|s| s.clearance)
            .fold(f64::INFINITY, f64::min);
        let finer = 0.25 * least;
        if least <= 0.0 || finer < FINEST_TOLERANCE * robot.diagonal {
            out.extend_from_slice(stretch);
            k = e + 1;
            continue;
        }
        let from = if k > 0 {
            samples[k - 1].at
        } else {
            samples[k].at
        };
        let to = if e + 1 < samples.len() {
            samples[e + 1].at
        } else {
            samples[e].at
        };
        let (sub_path, map) = sub_path(path, from, to);
        // The counts are shared, so the budget is the whole check's.
        let sub_options = CheckOptions {
            tolerance: Some(finer),
            ..options.clone()
        };
        let (sub_samples, _) = resolved_samples(
            robot,
            world,
            &sub_path,
            finer,
            &sub_options,
            count,
            &mut |_| {},
        );
        // The sub-check's samples strictly inside the stretch's span.
        for s in &sub_samples {
            let at = map(s.at);
            if (at.segment, at.t) > (from.segment, from.t)
                && (at.segment, at.t) < (to.segment, to.t)
            {
                out.push(Sample { at, ..*s });
            }
        }
        k = e + 1;
    }
    out
}

/// The part of `path` from `from` to `to` as a path of its own, and the map of its
/// positions back to `path`'s (lerp and slerp restricted to part of a segment are the
/// lerp and slerp between the part's ends).
fn sub_path(
    path: &[State],
    from: PathPos,
    to: PathPos,
) -> (Vec<State>, impl Fn(PathPos) -> PathPos) {
    let mut states = vec![state_at(path, from)];
    // (segment of `path`, its t at the sub-segment's start and end)
    let mut spans: Vec<(usize, f64, f64)> = Vec::new();
    let mut at = from;
    while at.segment < to.segment {
        states.push(path[at.segment + 1]);
        spans.push((at.segment, at.t, 1.0));
        at = PathPos {
            segment: at.segment + 1,
            t: 0.0,
        };
    }
    if to.t > at.t || spans.is_empty() {
        states.push(state_at(path, to));
        spans.push((at.segment, at.t, to.t));
    }
    let map = move |p: PathPos| {
        let (segment, t0, t1) = spans[p.segment.min(spans.len() - 1)];
        PathPos {
            segment,
            t: t0 + p.t * (t1 - t0),
        }
    };
    (states, map)
}

/// The intervals where the meshes meet (runs of samples at clearance 0, their ends
/// bisected between the free and the meeting side), each with its deepest state's
/// depth, which joins the samples; and the path's deepest state, measured finely.
fn meeting_intervals(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: &mut Vec<Sample>,
    tol: f64,
    first_only: bool,
    cancel: &Option<Cancel>,
) -> (Vec<Contact>, Option<Deepest>) {
    let mut scratch = bvh::PairScratch::default();
    let floor = FINEST_TOLERANCE * robot.diagonal;
    let mut meets = |at: PathPos| {
        !world
            .bvh
            .separated(
                &robot.bvh,
                &state_at(path, at).isometry(),
                floor,
                &mut scratch,
            )
            .clear
    };
    let meeting = |s: &Sample| s.clearance <= 0.0;
    let mut contacts = Vec::new();
    let mut depth_scratch = penetration::Scratch::default();
    // Each interval's separating direction; the last one found is the next one's hint.
    let mut directions: Vec<Vector3<f64>> = Vec::new();
    let mut k = 0;
    while k < samples.len() && !cancelled(cancel) {
        if !meeting(&samples[k]) {
            k += 1;
            continue;
        }
        let begin = if k == 0 || samples[k - 1].at.segment != samples[k].at.segment {
            samples[k].at
        } else {
            bisect(samples[k - 1].at, samples[k].at, &mut |at| meets(at))
        };
        let mut e = k;
        while e + 1 < samples.len() && meeting(&samples[e + 1]) {
            e += 1;
        }
        let end = if e + 1 < samples.len() && samples[e + 1].at.segment == samples[e].at.segment {
            // The first free parameter after the contact.
            bisect(samples[e].at, samples[e + 1].at, &mut |at| !meets(at))
        } else {
            samples[e].at
        };
        let state = state_at(path, begin);
        if first_only {
            // Where the first contact starts; the last state known to collide ends it.
            contacts.push(Contact {
                from: begin,
                to: samples[e].at,
                objects: world.objects_near(robot, &state.isometry(), tol),
                depth: 0.0,
                deepest_at: begin,
            });
            return (contacts, None);
        }
        let (depth, deepest_at, direction) = deepest_in(
            robot,
            world,
            path,
            &samples[k..=e],
            &mut depth_scratch,
            directions.last().copied(),
        );
        directions.push(direction);
        contacts.push(Contact {
            from: begin,
            to: end,
            objects: world.objects_near(robot, &state.isometry(), tol),
            depth,
            deepest_at,
        });
        k = e + 1;
    }
    // The deepest interval's depth, measured finely (again while the fine measure
    // drops it below another interval's coarse one).
    let mut fine = vec![false; contacts.len()];
    let mut cut_short = depth_scratch.budget == 0;
    while let Some(i) =
        (0..contacts.len()).max_by(|&a, &b| contacts[a].depth.total_cmp(&contacts[b].depth))
    {
        if contacts[i].depth <= 0.0 || fine[i] || cancelled(cancel) {
            break;
        }
        let d = penetration::penetration_depth(
            &world.bvh,
            &robot.bvh,
            &state_at(path, contacts[i].deepest_at).isometry(),
            penetration::Effort::FINE,
            Some(directions[i]),
            &mut depth_scratch,
        );
        fine[i] = true;
        cut_short |= d.cut_short;
        if d.depth < contacts[i].depth {
            contacts[i].depth = d.depth;
            directions[i] = d.direction;
        }
    }
    let deepest = (0..contacts.len())
        .max_by(|&a, &b| contacts[a].depth.total_cmp(&contacts[b].depth))
        .filter(|&i| contacts[i].depth > 0.0)
        .map(|i| Deepest {
            at: contacts[i].deepest_at,
            depth: contacts[i].depth,
            direction: directions[i],
            cut_short,
        });
    // The intervals' depths join the samples, in path order.
    for c in contacts.iter().filter(|c| c.depth > 0.0) {
        let at = c.deepest_at;
        let i = samples.partition_point(|s| (s.at.segment, s.at.t) < (at.segment, at.t));
        samples.insert(
            i,
            Sample {
                at,
                clearance: -c.depth,
                lower: -c.depth,
            },
        );
    }
    (contacts, deepest)
}

/// The deepest state of a path that collides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deepest {
    /// Where.
    pub at: PathPos,
    /// The translational penetration depth there (an upper bound, measured finely).
    pub depth: f64,
    /// The direction of the separating translation (unit, world frame).
    pub direction: Vector3<f64>,
    /// Whether the depth searches ran out of their budget (the depth is then the least
    /// separation over fewer directions: still an upper bound).
    pub cut_short: bool,
}

/// States of one contact interval whose depth is measured coarsely: up to this many,
/// evenly spread over its samples, then a local search about the deepest.
const DEPTH_PROBES: usize = 5;

/// The deepest state of a contact interval (its samples, in order): the depth (coarse,
/// an upper bound), where, and the separating direction.
fn deepest_in(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: &[Sample],
    scratch: &mut penetration::Scratch,
    mut hint: Option<Vector3<f64>>,
) -> (f64, PathPos, Vector3<f64>) {
    let depth_at = |at: PathPos, hint: Option<Vector3<f64>>, scratch: &mut penetration::Scratch| {
        penetration::penetration_depth(
            &world.bvh,
            &robot.bvh,
            &state_at(path, at).isometry(),
            penetration::Effort::COARSE,
            hint,
            scratch,
        )
    };
    let n = samples.len();
    let probes = n.min(DEPTH_PROBES);
    let mut best = (0.0, samples[0].at, hint.unwrap_or(Vector3::z()));
    for p in 0..probes {
        let i = if probes == 1 {
            0
        } else {
            p * (n - 1) / (probes - 1)
        };
        let d = depth_at(samples[i].at, hint, scratch);
        if d.depth > 0.0 {
            hint = Some(d.direction);
        }
        if d.depth > best.0 {
            best = (d.depth, samples[i].at, d.direction);
        }
    }
    // The probes' spacing on the deepest one's segment, halved about it.
    if probes > 1 {
        let seg: Vec<f64> = samples
            .iter()
            .filter(|s| s.at.segment == best.1.segment)
            .map(|s| s.at.t)
            .collect();
        if let (Some(lo), Some(hi)) = (seg.first(), seg.last()) {
            let (lo, hi) = (*lo, *hi);
            let mut spacing = (hi - lo) / probes as f64;
            for _ in 0..2 {
                spacing *= 0.5;
                for t in [best.1.t - spacing, best.1.t + spacing] {
                    if t < lo || t > hi {
                        continue;
                    }
                    let at = PathPos {
                        segment: best.1.segment,
                        t,
                    };
                    let d = depth_at(at, Some(best.2), scratch);
                    if d.depth > best.0 {
                        best = (d.depth, at, d.direction);
                    }
                }
            }
        }
    }
    best
}

/// Bisects the parameter between `from` (where `hit` is false) and `to` (where it is
/// true), on one segment, to 1e-6 of the segment; returns the first `hit` side.
fn bisect(from: PathPos, to: PathPos, hit: &mut dyn FnMut(PathPos) -> bool) -> PathPos {
    let (mut a, mut b) = (from.t, to.t);
    for _ in 0..40 {
        if (b - a).abs() <= 1e-6 {
            break;
        }
        let m = 0.5 * (a + b);
        if hit(PathPos {
            segment: to.segment,
            t: m,
        }) {
            b = m;
        } else {
            a = m;
        }
    }
    PathPos {
        segment: to.segment,
        t: b,
    }
}

/// Refines samples until the minimum clearance `m` (the smallest upper bound) is
/// certified to `tol`: the distance over every interval between samples, ends included,
/// is at least `m - tol` (a segment's lone sample is re-evaluated with
/// [`certify_slack`] if its own bound falls short). An interval passes on its samples alone when their
/// Lipschitz bound `(l_k + l_{k+1} - B h) / 2` clears `m - tol`, else by a sweep of
/// the robot over it ([`Bvh::clear_over`], which counts only the motion towards the
/// world), else it is split at its middle. `m` only falls as samples are added, so
/// what passed stays passed.
fn certify_minimum(
    per_segment: &mut [Vec<Sample>],
    path: &[State],
    bounds: &[f64],
    tol: f64,
    sweep: &mut dyn FnMut(&bvh::Motion, f64) -> bvh::Sweep,
    eval: &mut dyn FnMut(PathPos, Slack) -> Sample,
) {
    let tight = certify_slack(tol);
    let mut m = per_segment
        .iter()
        .flatten()
        .map(|s| s.clearance)
        .fold(f64::INFINITY, f64::min);
    // The segments nearest the world first: the minimum falls early, and everything
    // else is judged against a lower floor.
    let mut order: Vec<usize> = (0..per_segment.len()).collect();
    let seg_min = |s: &Vec<Sample>| s.iter().map(|s| s.clearance).fold(f64::INFINITY, f64::min);
    order.sort_by(|&a, &b| seg_min(&per_segment[a]).total_cmp(&seg_min(&per_segment[b])));
    for i in order {
        let samples = std::mem::take(&mut per_segment[i]);
        let mut ctx = Certify {
            a: &path[i],
            b: &path[i + 1],
            turn: turn_of(&path[i], &path[i + 1]),
            bound: bounds[i],
            tol,
            tight,
            m: &mut m,
            sweep: &mut *sweep,
            eval: &mut *eval,
        };
        let mut out = Vec::with_capacity(samples.len());
        let alone = samples.len() == 1;
        for s in samples {
            // A sample between two intervals is covered by their certification (both
            // bounds hold at the ends); only a sample alone needs its own.
            let s = if alone { ctx.tighten(s) } else { s };
            if let Some(&prev) = out.last() {
                ctx.between(prev, s, &mut out, 0);
            }
            out.push(s);
        }
        per_segment[i] = out;
    }
}

/// The rotation that slerp applies over a segment, as its axis in the world frame times
/// its angle (the shorter arc): `q(t) = exp(t turn) q_a`.
pub fn turn_of(a: &State, b: &State) -> Vector3<f64> {
    let mut rel = a.orientation.inverse() * b.orientation;
    if rel.w < 0.0 {
        rel = UnitQuaternion::new_unchecked(-rel.into_inner());
    }
    a.orientation * rel.scaled_axis()
}

/// One segment's certification (see [`certify_minimum`]).
struct Certify<'a> {
    a: &'a State,
    b: &'a State,
    /// The segment's rotation, axis (world frame) times angle ([`turn_of`]).
    turn: Vector3<f64>,
    bound: f64,
    tol: f64,
    tight: Slack,
    m: &'a mut f64,
    sweep: &'a mut dyn FnMut(&bvh::Motion, f64) -> bvh::Sweep,
    eval: &'a mut dyn FnMut(PathPos, Slack) -> Sample,
}

impl Certify<'_> {
    fn floor(&self) -> f64 {
        *self.m - self.tol
    }

    /// The sample, re-evaluated tightly if its lower bound is below the floor.
    fn tighten(&mut self, s: Sample) -> Sample {
        let s = if s.lower < self.floor() && s.clearance - s.lower > self.tight.absolute {
            (self.eval)(s.at, self.tight)
        } else {
            s
        };
        *self.m = self.m.min(s.clearance);
        s
    }

    /// Certifies the interval between `s0` and `s1`, pushing the samples it adds (in
    /// order, `s0` and `s1` excluded) onto `out`.
    fn between(&mut self, s0: Sample, s1: Sample, out: &mut Vec<Sample>, depth: usize) {
        let h = s1.at.t - s0.at.t;
        if 0.5 * (s0.lower + s1.lower - self.bound * h) >= self.floor() || h <= 1e-12 || depth > 60
        {
            return;
        }
        let mid = PathPos {
            segment: s0.at.segment,
            t: 0.5 * (s0.at.t + s1.at.t),
        };
        let motion = bvh::Motion {
            pose: self.a.interpolate(self.b, mid.t).isometry(),
            half_dp: (self.b.position - self.a.position) * (0.5 * h),
            half_turn: self.turn * (0.5 * h),
        };
        let floor = self.floor();
        let sweep = (self.sweep)(&motion, floor);
        if sweep.clear {
            return;
        }
        let s = if self.bound * h > self.tol && depth < 30 && sweep.upper.is_finite() {
            // Split without a distance query: the sweep met a pair of triangles at the
            // middle, whose distance is a witness for the minimum (an upper bound there).
            *self.m = self.m.min(sweep.upper);
            Sample {
                at: mid,
                clearance: sweep.upper,
                lower: f64::NEG_INFINITY,
            }
        } else {
            // Enough for both halves to pass on their samples, if the distance is there.
            let s = (self.eval)(
                mid,
                Slack {
                    enough: floor + 0.5 * self.bound * h,
                    ..self.tight
                },
            );
            self.tighten(s)
        };
        self.between(s0, s, out, depth + 1);
        out.push(s);
        self.between(s, s1, out, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{UnitQuaternion, Vector3};
    use shapes::{box_surface, union};

    fn st(x: f64, y: f64, z: f64) -> State {
        State::new(Vector3::new(x, y, z), UnitQuaternion::identity())
    }

    /// A 0.2 m cube through a slot of width 0.3 m in a wall: the clearance is exactly
    /// 0.05 m on both sides (to the tolerance, 1e-6 here: exact distances).
    #[test]
    fn a_box_through_a_slot_has_the_analytic_clearance() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 2));
        // Wall in the plane x = 0, 0.1 thick, with a slot |y| < 0.15 (|z| < 1).
        let wall = union(&[
            box_surface(Point3::new(0.0, 0.65, 0.0), Vector3::new(0.05, 0.5, 1.0), 2),
            box_surface(
                Point3::new(0.0, -0.65, 0.0),
                Vector3::new(0.05, 0.5, 1.0),
                2,
            ),
        ]);
        let world = World::new(&wall);
        let path = [st(-1.0, 0.0, 0.0), st(1.0, 0.0, 0.0)];
        // The default tolerance (0.1% of the cube's diagonal) certifies the minimum to
        // 0.35 mm; the value itself is an exact distance at a sample on the plateau.
        let options = CheckOptions::default();
        let r = check_path(&robot, &world, &path, &options, &mut |_| {});
        assert!(r.collision_free, "{:?}", r.first_collision);
        assert!(
            (r.min_clearance - 0.05).abs() <= 1e-6,
            "{}",
            r.min_clearance
        );
        assert_eq!(r.max_penetration, 0.0);
        // Shifted 0.06 sideways it hits the wall: the leading face (x + 0.1) meets the
        // wall's face x = -0.05 at x = -0.15, t = 0.425, and leaves it at t = 0.575 (the
        // path is 2 long); the ends are bisected to 1e-6 of the segment.
        let path = [st(-1.0, 0.06, 0.0), st(1.0, 0.06, 0.0)];
        let r = check_path(&robot, &world, &path, &options, &mut |_| {});
        assert!(!r.collision_free);
        let first = r.first_collision.unwrap();
        assert!((first.t - 0.425).abs() < 2e-6, "{first:?}");
        // Inside the wall the cube overlaps it by 0.06 - 0.05 = 0.01 sideways: the
        // translational depth, along -y (one of the axes the search tries first).
        assert!(
            (r.max_penetration - 0.01).abs() < 1e-9,
            "{}",
            r.max_penetration
        );
        let d = r.deepest.unwrap();
        assert!(d.direction.y < -0.999, "{:?}", d.direction);
        assert_eq!(r.contacts.len(), 1);
        assert!(
            (r.contacts[0].to.t - 0.575).abs() < 2e-6,
            "{:?}",
            r.contacts[0]
        );
        assert_eq!(r.contacts[0].objects, ["world"]);
        // Stopping at the first contact: the same start, one contact, no depth, and the
        // path beyond it unchecked (fewer evaluations).
        let first_only = CheckOptions {
            first_contact_only: true,
            ..CheckOptions::default()
        };
        let f = check_path(&robot, &world, &path, &first_only, &mut |_| {});
        assert!(!f.collision_free);
        assert_eq!(f.first_collision, r.first_collision);
        assert_eq!(f.contacts.len(), 1);
        assert!(f.deepest.is_none() && f.max_penetration == 0.0);
        assert!(f.contacts[0].to.t < 0.575 && f.contacts[0].to.t >= first.t);
        assert!(
            f.evaluations < r.evaluations,
            "{} of {}",
            f.evaluations,
            r.evaluations
        );
        // On a free path it is the whole check.
        let free = [st(-1.0, 0.0, 0.0), st(1.0, 0.0, 0.0)];
        let a = check_path(&robot, &world, &free, &options, &mut |_| {});
        let b = check_path(&robot, &world, &free, &first_only, &mut |_| {});
        assert_eq!(
            (a.collision_free, a.min_clearance),
            (b.collision_free, b.min_clearance)
        );
    }

    /// The certified minimum against a dense exact sampling: a box turning while it
    /// circles a wavy ring tube (curved, nearly parallel surfaces, the sweep's hard
    /// case). The reported minimum `m` is a distance found on the path, so the true
    /// minimum is at most `m`; certification means nowhere below `m - tol`. With the
    /// dense minimum `s` (itself above the true minimum by at most the motion between
    /// two samples, `delta`): `s - delta <= m <= s + tol`.
    #[test]
    fn the_certified_minimum_agrees_with_dense_sampling() {
        let ring: Vec<Point3<f64>> = (0..80)
            .map(|i| {
                let t = std::f64::consts::TAU * i as f64 / 80.0;
                Point3::new(t.cos(), t.sin(), 0.15 * (3.0 * t).sin())
            })
            .collect();
        let world = World::new(&shapes::closed_tube(&ring, 0.2, 16));
        let robot = Robot::new(&box_surface(
            Point3::origin(),
            Vector3::new(0.15, 0.1, 0.05),
            5,
        ));
        let path: Vec<State> = (0..12)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / 11.0;
                State::new(
                    Vector3::new(1.45 * a.cos(), 1.45 * a.sin(), 0.05 * a.sin()),
                    UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 1.5 * a),
                )
            })
            .collect();
        let r = check_path(&robot, &world, &path, &CheckOptions::default(), &mut |_| {});
        assert!(r.collision_free);
        let n = 400;
        let mut dense = f64::INFINITY;
        let mut delta: f64 = 0.0;
        for i in 0..path.len() - 1 {
            let b = motion_bound(&path[i], &path[i + 1], robot.radius);
            delta = delta.max(b / n as f64);
            for k in 0..=n {
                let s = path[i].interpolate(&path[i + 1], k as f64 / n as f64);
                dense = dense.min(clearance(&robot, &world, &s));
            }
        }
        let m = r.min_clearance;
        assert!(
            dense - delta <= m && m <= dense + r.tolerance,
            "certified {m}, dense {dense} (delta {delta}, tol {})",
            r.tolerance
        );
    }

    /// A box is closed; a face split off with its own copies of the seam's vertices is
    /// still closed (edges are matched by position); a missing triangle leaves three.
    #[test]
    fn open_edges_are_counted_by_position() {
        let m = box_surface(Point3::origin(), Vector3::repeat(1.0), 2);
        assert_eq!(
            open_edges(&m),
            0,
            "box_surface repeats vertices along its edges"
        );
        let mut cut = m.clone();
        cut.triangles.pop();
        assert_eq!(open_edges(&cut), 3);
    }

    /// Slerp is a rotation about a fixed world axis at a constant rate: `turn_of`'s.
    #[test]
    fn slerp_turns_about_the_world_axis_of_turn_of() {
        let a = State::new(
            Vector3::zeros(),
            UnitQuaternion::from_euler_angles(0.3, -1.1, 2.0),
        );
        // The far side of the double cover, to exercise the shorter arc.
        let qb = UnitQuaternion::from_euler_angles(-2.5, 0.4, 0.9);
        let b = State::new(
            Vector3::x(),
            UnitQuaternion::new_unchecked(-qb.into_inner()),
        );
        let turn = turn_of(&a, &b);
        assert!(turn.norm() <= std::f64::consts::PI + 1e-12);
        for k in 0..=10 {
            let t = k as f64 / 10.0;
            let q = a.interpolate(&b, t).orientation;
            let expected = UnitQuaternion::from_scaled_axis(turn * t) * a.orientation;
            assert!(q.angle_to(&expected) < 1e-12, "t = {t}");
        }
    }

    /// A wall 0.1% of the path thick between two free states: caught, whatever the
    /// sampling a discrete checker would use.
    #[test]
    fn a_thin_wall_between_two_free_states_is_caught() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.05), 1));
        let wall = box_surface(Point3::origin(), Vector3::new(0.001, 1.0, 1.0), 1);
        let world = World::new(&wall);
        let path = [st(-1.0, 0.0, 0.0), st(1.0, 0.0, 0.0)];
        let r = check_path(&robot, &world, &path, &CheckOptions::default(), &mut |_| {});
        assert!(!r.collision_free);
        let first = r.first_collision.unwrap();
        // Contact when x + 0.05 = -0.001: t = (1 - 0.051) / 2.
        assert!((first.t - 0.4745).abs() < 1e-3, "{first:?}");
    }

    /// A rod rotating about its centre past a corner: free at both ends, touching only in
    /// the middle of the segment.
    #[test]
    fn a_rod_rotating_past_a_corner_touches_only_mid_segment() {
        // Rod along x, half length 1, thin.
        let robot = Robot::new(&box_surface(
            Point3::origin(),
            Vector3::new(1.0, 0.02, 0.02),
            4,
        ));
        // A post at 45 degrees, 0.9 from the centre: the rod sweeps over it only while
        // passing 45 degrees.
        let c = std::f64::consts::FRAC_1_SQRT_2 * 0.9;
        let post = box_surface(Point3::new(c, c, 0.0), Vector3::new(0.03, 0.03, 0.5), 1);
        let world = World::new(&post);
        let q0 = UnitQuaternion::identity();
        let q1 = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_2);
        let path = [
            State::new(Vector3::zeros(), q0),
            State::new(Vector3::zeros(), q1),
        ];
        assert!(clearance(&robot, &world, &path[0]) > 0.3);
        assert!(clearance(&robot, &world, &path[1]) > 0.3);
        let r = check_path(&robot, &world, &path, &CheckOptions::default(), &mut |_| {});
        assert!(!r.collision_free);
        let (a, b) = (r.contacts[0].from, r.contacts[0].to);
        assert!(
            a.t > 0.35 && b.t < 0.65 && a.t < 0.5 && b.t > 0.5,
            "{a:?} {b:?}"
        );
    }
}
