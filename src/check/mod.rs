//! Path and assembly checks: can a rigid part (the robot) move along a path of SE(3)
//! states through a fixed world without collision, with how much clearance, where does it
//! first touch and how deep does it go.
//!
//! **Continuous, not sampled.** Between consecutive states the robot moves by position
//! lerp and quaternion slerp on the shorter arc ([`crate::proximity::rigid::State::interpolate`]). A robot
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
//! asks the hierarchy for the distance within 25% ([`crate::proximity::bvh::Slack`]), which on nearly parallel
//! surfaces costs a small fraction of an exact query; the step shrinks by as much. From
//! each such sample it then sweeps the robot over growing multiples of the step, halving
//! the stride after a sweep that fails ([`bvh::Bvh::clear_over`] at `tol`; the stride is
//! `advance::Stride`): a part a sweep clears needs no sample (a state
//! of the path that a sweep cleared is left unmeasured, its lower bound `tol`). The
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
//! [`crate::proximity::exact`]).
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

pub mod compliant;
pub mod ompl;
pub mod penetration;
pub mod problem;
// The generators of the shipped puzzles (`assets/check`), run by their tests only.
#[cfg(test)]
mod puzzles;
pub mod report;

mod advance;
mod certify;
mod intervals;
mod path;
#[cfg(test)]
mod tests;

pub use intervals::Deepest;
pub use path::check_path;

use nalgebra::{Isometry3, Point3};

use crate::mesh::SurfaceMesh;
use crate::progress::Cancel;
use crate::proximity::bvh::{self, Bvh, Slack};
use crate::proximity::rigid::State;

/// The finest tolerance a stretch is resolved to, relative to the robot's diagonal:
/// below it the parts count as touching (a collision).
pub const FINEST_TOLERANCE: f64 = 1e-9;

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
        let all = crate::mesh::shapes::union(&meshes);
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
    } else if at.t >= 1.0 {
        // A segment's ends are the path's states themselves, not their interpolation
        // (slerp at 0 and 1 is exact only to rounding).
        path[at.segment + 1]
    } else if at.t <= 0.0 {
        path[at.segment]
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
    /// when intersecting (0 when touching); infinite where no distance was measured (a
    /// sweep cleared the state at the tolerance, which `lower` then holds).
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
