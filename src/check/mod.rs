//! Path and assembly checks: can a rigid part (the robot) move along a path of SE(3)
//! states through a fixed world without collision, with how much clearance, where does it
//! first touch and how deep does it go.
//!
//! **Continuous, not sampled.** Between consecutive states the robot moves by position
//! lerp and quaternion slerp on the shorter arc ([`ompl::State::interpolate`]). A robot
//! point `p` (|p| <= R, R the robot's radius about its origin) then moves at most
//! `B = |dp| + |dtheta| R` per unit of the segment parameter, and so does the distance
//! between the meshes. Conservative advancement: from a state at exact distance `d`, the
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
//! most that motion); the region's ends are bisected to 1e-6 of the segment. The minimum
//! clearance is
//! certified to `tol`: between two samples `d_k`, `d_{k+1}` a step `h` apart the distance
//! is at least `(d_k + d_{k+1} - B h) / 2`, and intervals whose bound falls more than
//! `tol` below the smallest sample are subdivided until it does not.
//!
//! **Exact near contact.** Distances are exact triangle-mesh distances ([`bvh`],
//! [`exact`]). **Penetration** at an intersecting state is the deepest robot vertex inside
//! the world or world vertex inside the robot, measured to the other surface (both meshes
//! must be closed for the inside test).
//!
//! Inputs: OMPL.app problems and paths ([`ompl`]), meshes in COLLADA ([`crate::mesh::collada`]),
//! OBJ or STL.

pub mod bvh;
pub mod exact;
pub mod ompl;
pub mod shapes;

use std::time::Instant;

use nalgebra::{Isometry3, Point3};

use crate::mesh::SurfaceMesh;
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
}

impl Robot {
    /// A robot from its mesh, in its own frame.
    pub fn new(mesh: &SurfaceMesh) -> Robot {
        Robot {
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
}

impl World {
    /// A world of one object.
    pub fn new(mesh: &SurfaceMesh) -> World {
        World {
            bvh: Bvh::new(mesh),
            vertices: mesh.vertices.clone(),
            objects: Vec::new(),
        }
    }

    /// A world of named objects (meshes in world coordinates).
    pub fn from_objects(objects: &[(String, SurfaceMesh)]) -> World {
        let meshes: Vec<SurfaceMesh> = objects.iter().map(|(_, m)| m.clone()).collect();
        let all = shapes::union(&meshes);
        World {
            bvh: Bvh::new(&all),
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
    /// Exact distance when free; minus the penetration depth when intersecting (0 when
    /// touching).
    pub clearance: f64,
}

/// Check settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckOptions {
    /// The tolerance, m (see the module docs); `None`: 0.1% of the robot's diagonal.
    pub tolerance: Option<f64>,
    /// Largest number of distance evaluations before giving up (a budget, not a
    /// resolution: the check reports it ran out).
    pub max_evaluations: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            tolerance: None,
            max_evaluations: 20_000_000,
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
    /// Largest penetration depth found (0 when free or only touching).
    pub max_penetration: f64,
    /// The first state within the tolerance of the world, refined by bisection.
    pub first_collision: Option<PathPos>,
    /// Parameter intervals in contact (within the tolerance), in path order.
    pub contacts: Vec<Contact>,
    /// Every evaluated state, in path order.
    pub samples: Vec<Sample>,
    /// The tolerance used (m).
    pub tolerance: f64,
    /// The robot's radius about its origin (m).
    pub robot_radius: f64,
    /// The robot's bounding-box diagonal (m).
    pub robot_diagonal: f64,
    /// States on the path.
    pub states: usize,
    /// Exact distance evaluations.
    pub evaluations: usize,
    /// The evaluation budget ran out before the end of the path.
    pub incomplete: bool,
    /// Wall time of the check (s).
    pub seconds: f64,
}

/// The clearance at a state: exact distance when free, minus the penetration depth when
/// intersecting.
pub fn clearance(robot: &Robot, world: &World, state: &State) -> f64 {
    clearance_with(robot, world, state, &mut bvh::PairScratch::default())
}

/// [`clearance`] with a scratch kept along a path (see [`Bvh::distance_with`]).
pub fn clearance_with(
    robot: &Robot,
    world: &World,
    state: &State,
    scratch: &mut bvh::PairScratch,
) -> f64 {
    let pose = state.isometry();
    match world
        .bvh
        .distance_with(&robot.bvh, &pose, f64::INFINITY, scratch)
    {
        Some(c) if c.distance > 0.0 => c.distance,
        Some(_) => -penetration(robot, world, &pose),
        None => f64::INFINITY,
    }
}

/// The deepest robot vertex inside the world or world vertex inside the robot, measured
/// to the other surface (0 when touching without vertices inside).
pub fn penetration(robot: &Robot, world: &World, pose: &Isometry3<f64>) -> f64 {
    let mut depth = 0.0f64;
    for v in &robot.vertices {
        let w = pose * v;
        if world.bvh.contains(&w) {
            depth = depth.max(world.bvh.point_distance(&w));
        }
    }
    let inv = pose.inverse();
    let center = pose.translation.vector;
    for w in &world.vertices {
        if (w.coords - center).norm() > robot.radius {
            continue;
        }
        let r = inv * w;
        if robot.bvh.contains(&r) {
            depth = depth.max(robot.bvh.point_distance(&r));
        }
    }
    depth
}

/// The motion bound of a segment: `|dp| + |dtheta| R`.
pub fn motion_bound(a: &State, b: &State, radius: f64) -> f64 {
    let theta = a.orientation.angle_to(&b.orientation);
    // angle_to is in [0, pi] for unit quaternions: the shorter arc slerp takes.
    (b.position - a.position).norm() + theta * radius
}

/// Checks `path` (at least one state) for `robot` against `world`; `progress` is called
/// with each finished segment.
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
    let contact_step = tol.max(1e-3 * robot.diagonal);
    let mut samples: Vec<Sample> = Vec::new();
    let mut evaluations = 0usize;
    let mut incomplete = false;
    let segments = path.len().saturating_sub(1);
    let mut scratch = bvh::PairScratch::default();
    let mut eval = |at: PathPos, evaluations: &mut usize| -> Sample {
        *evaluations += 1;
        let s = if segments == 0 {
            path[0]
        } else {
            path[at.segment].interpolate(&path[at.segment + 1], at.t)
        };
        Sample {
            at,
            clearance: clearance_with(robot, world, &s, &mut scratch),
        }
    };
    if segments == 0 {
        samples.push(eval(PathPos { segment: 0, t: 0.0 }, &mut evaluations));
    }
    for i in 0..segments {
        let b = motion_bound(&path[i], &path[i + 1], robot.radius);
        let mut seg: Vec<Sample> = Vec::new();
        let mut t = 0.0;
        loop {
            let s = eval(PathPos { segment: i, t }, &mut evaluations);
            seg.push(s);
            if t >= 1.0 || b == 0.0 {
                break;
            }
            if evaluations >= options.max_evaluations {
                incomplete = true;
                break;
            }
            // Free: the conservative step. In contact: steps of `contact_step` of motion
            // (penetration is sampled there; the interval's ends are bisected later).
            let step = if s.clearance > tol {
                s.clearance / b
            } else {
                contact_step / b
            };
            t = (t + step).min(1.0);
        }
        // Certify the minimum between samples (see the module docs).
        if b > 0.0 {
            refine_minimum(&mut seg, b, tol, &mut |at| eval(at, &mut evaluations));
        }
        samples.extend(seg);
        progress(i);
        if incomplete {
            break;
        }
    }
    // Contact intervals, with their ends refined by bisection.
    let in_contact = |s: &Sample| s.clearance <= tol;
    let mut contacts = Vec::new();
    let mut k = 0;
    while k < samples.len() {
        if !in_contact(&samples[k]) {
            k += 1;
            continue;
        }
        let begin = if k == 0 || samples[k - 1].at.segment != samples[k].at.segment {
            samples[k].at
        } else {
            bisect(samples[k - 1].at, samples[k].at, &|at| {
                let s = path[at.segment].interpolate(&path[at.segment + 1], at.t);
                clearance(robot, world, &s) <= tol
            })
        };
        let mut e = k;
        while e + 1 < samples.len() && in_contact(&samples[e + 1]) {
            e += 1;
        }
        let end = if e + 1 < samples.len() && samples[e + 1].at.segment == samples[e].at.segment {
            // The first free parameter after the contact.
            bisect(samples[e].at, samples[e + 1].at, &|at| {
                let s = path[at.segment].interpolate(&path[at.segment + 1], at.t);
                clearance(robot, world, &s) > tol
            })
        } else {
            samples[e].at
        };
        let at = &path[begin.segment.min(path.len() - 1)];
        let state = if segments == 0 {
            *at
        } else {
            at.interpolate(&path[begin.segment + 1], begin.t)
        };
        contacts.push(Contact {
            from: begin,
            to: end,
            objects: world.objects_near(robot, &state.isometry(), tol),
        });
        k = e + 1;
    }
    let (min_s, max_pen) = samples
        .iter()
        .fold((None::<Sample>, 0.0f64), |(best, pen), s| {
            let best = match best {
                Some(b) if b.clearance <= s.clearance => Some(b),
                _ => Some(*s),
            };
            (best, pen.max(-s.clearance))
        });
    let min_s = min_s.unwrap_or(Sample {
        at: PathPos { segment: 0, t: 0.0 },
        clearance: f64::INFINITY,
    });
    Report {
        collision_free: contacts.is_empty(),
        min_clearance: min_s.clearance,
        min_clearance_at: min_s.at,
        max_penetration: max_pen,
        first_collision: contacts.first().map(|c| c.from),
        contacts,
        samples,
        tolerance: tol,
        robot_radius: robot.radius,
        robot_diagonal: robot.diagonal,
        states: path.len(),
        evaluations,
        incomplete,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Bisects the parameter between `from` (where `hit` is false) and `to` (where it is
/// true), on one segment, to 1e-6 of the segment; returns the first `hit` side.
fn bisect(from: PathPos, to: PathPos, hit: &dyn Fn(PathPos) -> bool) -> PathPos {
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

/// Subdivides the intervals of one segment's samples until the lower bound of the
/// distance inside each is within `tol` of the smallest sample (free samples only).
fn refine_minimum(
    seg: &mut Vec<Sample>,
    b: f64,
    tol: f64,
    eval: &mut dyn FnMut(PathPos) -> Sample,
) {
    for _round in 0..60 {
        let best = seg
            .iter()
            .map(|s| s.clearance)
            .fold(f64::INFINITY, f64::min);
        let mut inserted = Vec::new();
        for w in seg.windows(2) {
            let (s0, s1) = (w[0], w[1]);
            if s0.clearance <= tol || s1.clearance <= tol {
                continue;
            }
            let h = s1.at.t - s0.at.t;
            let lower = 0.5 * (s0.clearance + s1.clearance - b * h);
            if lower < best - tol && h > 1e-12 {
                inserted.push(eval(PathPos {
                    segment: s0.at.segment,
                    t: 0.5 * (s0.at.t + s1.at.t),
                }));
            }
        }
        if inserted.is_empty() {
            return;
        }
        seg.extend(inserted);
        seg.sort_by(|a, b| a.at.t.total_cmp(&b.at.t));
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
        // wall's face x = -0.05 at x = -0.15, t = 0.425; contact counts from a gap of
        // `tol`, half a tolerance of parameter earlier (the path is 2 long).
        let path = [st(-1.0, 0.06, 0.0), st(1.0, 0.06, 0.0)];
        let r = check_path(&robot, &world, &path, &options, &mut |_| {});
        assert!(!r.collision_free);
        let first = r.first_collision.unwrap();
        let half_tol = r.tolerance / 2.0;
        assert!((first.t - (0.425 - half_tol)).abs() < 1e-5, "{first:?}");
        // Inside the wall the cube overlaps it by 0.06 - 0.05 = 0.01 sideways.
        assert!(
            (r.max_penetration - 0.01).abs() < 2e-3,
            "{}",
            r.max_penetration
        );
        assert_eq!(r.contacts.len(), 1);
        assert!(
            (r.contacts[0].to.t - (0.575 + half_tol)).abs() < 1e-5,
            "{:?}",
            r.contacts[0]
        );
        assert_eq!(r.contacts[0].objects, ["world"]);
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
