use super::*;
use crate::mesh::shapes::{self, box_surface, union};
use crate::proximity::rigid::{motion_bound, turn_of};
use nalgebra::{UnitQuaternion, Vector3};

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
    // Stopping at the first contact: the same start (exact, where the leading face
    // arrives: the motion is a translation, cast at the wall; the whole check's
    // bisection lies within 1e-6 after it), one contact, no depth, and the path beyond
    // it unchecked (fewer evaluations).
    let first_only = CheckOptions {
        first_contact_only: true,
        ..CheckOptions::default()
    };
    let f = check_path(&robot, &world, &path, &first_only, &mut |_| {});
    assert!(!f.collision_free);
    let f_first = f.first_collision.unwrap();
    assert!((f_first.t - 0.425).abs() < 1e-12, "{f_first:?}");
    assert!((f_first.t - first.t).abs() <= 1e-6, "{f_first:?} {first:?}");
    assert_eq!(f.contacts.len(), 1);
    assert!(f.deepest.is_none() && f.max_penetration == 0.0);
    assert!(f.contacts[0].to.t < 0.575 && f.contacts[0].to.t >= f_first.t);
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

/// A wavy ring tube (curved, nearly parallel surfaces, the sweep's hard case) and a
/// box with subdivided faces.
fn wavy_ring_and_box() -> (World, Robot) {
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
    (world, robot)
}

/// Twelve states of the box circling [`wavy_ring_and_box`]'s tube outside it, turning
/// one and a half times as fast as it goes round.
fn circling_the_ring() -> Vec<State> {
    (0..12)
        .map(|i| {
            let a = std::f64::consts::TAU * i as f64 / 11.0;
            State::new(
                Vector3::new(1.45 * a.cos(), 1.45 * a.sin(), 0.05 * a.sin()),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 1.5 * a),
            )
        })
        .collect()
}

/// The certified minimum against a dense exact sampling: a box turning while it
/// circles a wavy ring tube (curved, nearly parallel surfaces, the sweep's hard
/// case). The reported minimum `m` is a distance found on the path, so the true
/// minimum is at most `m`; certification means nowhere below `m - tol`. With the
/// dense minimum `s` (itself above the true minimum by at most the motion between
/// two samples, `delta`): `s - delta <= m <= s + tol`.
#[test]
fn the_certified_minimum_agrees_with_dense_sampling() {
    let (world, robot) = wavy_ring_and_box();
    let path = circling_the_ring();
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

/// A check that stops at the first contact, on a free path that stays far from the
/// world (more than twice the tolerance), walks it again as the whole check does: the
/// same minimum, at the same place, from the same samples. The box circles the wavy ring
/// tube 0.014 from it at its nearest, against a tolerance of 0.37 mm, turning as it goes.
#[test]
fn a_free_path_far_from_the_world_reports_the_whole_checks_minimum() {
    let (world, robot) = wavy_ring_and_box();
    let path = circling_the_ring();
    let first_only = CheckOptions {
        first_contact_only: true,
        ..CheckOptions::default()
    };
    let full = check_path(&robot, &world, &path, &CheckOptions::default(), &mut |_| {});
    let fast = check_path(&robot, &world, &path, &first_only, &mut |_| {});
    assert!(full.collision_free && fast.collision_free);
    assert!(full.min_clearance > 2.0 * full.tolerance, "{full:?}");
    assert_eq!(fast.min_clearance, full.min_clearance);
    assert_eq!(fast.min_clearance_at, full.min_clearance_at);
    assert_eq!(fast.samples, full.samples);
}

/// A check that stops at the first contact decides states instead of measuring them
/// (or, on a translation, casts the robot at the world); its first collision must still
/// be the first. A box moving into a wavy ring tube, on four motions turning and four
/// translating: the first collision is the full check's (the full check bisects to
/// 1e-6 of the segment; the other bisects between other samples, or is exact), the
/// meshes meet there (nearer than the finest tolerance), and an exact distance at 2,000
/// states of the motion finds no contact before it (a state earlier by more than the
/// bisection's 1e-6 is free).
#[test]
fn the_first_contact_is_the_full_checks_and_nothing_meets_before_it() {
    let (world, robot) = wavy_ring_and_box();
    let first_only = CheckOptions {
        first_contact_only: true,
        ..CheckOptions::default()
    };
    let touch = FINEST_TOLERANCE * robot.diagonal;
    for k in 0..8 {
        let a = 0.7 * (k % 4) as f64;
        let turned = if k < 4 { 1.2 } else { 0.0 };
        let state = |r: f64, turn: f64| {
            State::new(
                Vector3::new(r * a.cos(), r * a.sin(), 0.3),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), a + turn),
            )
        };
        // From above the tube and outside it, down and in onto it, turning 1.2 rad or
        // not at all.
        let mut path = [state(1.9, 0.0), state(1.0, turned)];
        path[1].position.z = 0.0;
        let full = check_path(&robot, &world, &path, &CheckOptions::default(), &mut |_| {});
        let fast = check_path(&robot, &world, &path, &first_only, &mut |_| {});
        let (Some(f), Some(g)) = (full.first_collision, fast.first_collision) else {
            panic!("motion {k}: both checks collide: {full:?} {fast:?}");
        };
        assert!((f.t - g.t).abs() <= 1e-6, "motion {k}: {f:?} {g:?}");
        let at_first = clearance(&robot, &world, &state_at(&path, g));
        assert!(at_first <= touch, "motion {k}: {at_first} at {g:?}");
        let n = 2000;
        for i in 0..n {
            let t = i as f64 / n as f64;
            if t >= g.t - 1e-6 {
                break;
            }
            let c = clearance(&robot, &world, &path[0].interpolate(&path[1], t));
            assert!(c > 0.0, "motion {k}: {c} at t = {t}, first contact {g:?}");
        }
    }
}

/// A thin rod turning about its centre through a thin plate: they meet over 2e-3 rad
/// of the turn (the rod tip moves about one tolerance), between states 90 degrees
/// apart. Both checks find the contact, at the angle where the rod's leading face
/// reaches the plate (to the bisection's 1e-6 and the formula's rounding).
#[test]
fn a_brief_contact_stops_a_first_contact_check() {
    // Rod along x, half length 1, half thickness 5e-4 (tolerance: 0.1% of its
    // diagonal, 2e-3).
    let robot = Robot::new(&box_surface(
        Point3::origin(),
        Vector3::new(1.0, 5e-4, 5e-4),
        2,
    ));
    // A plate in the plane y = 0 at x in [0.8, 0.9], 5e-4 thick, rotated by 45
    // degrees about z: the rod sweeps through it at 45 degrees.
    let plate = box_surface(
        Point3::new(0.85, 0.0, 0.0),
        Vector3::new(0.05, 2.5e-4, 0.1),
        1,
    );
    let turn = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_4);
    let plate = SurfaceMesh {
        vertices: plate.vertices.iter().map(|v| turn * v).collect(),
        triangles: plate.triangles.clone(),
    };
    let world = World::new(&plate);
    let path = [
        State::new(Vector3::zeros(), UnitQuaternion::identity()),
        State::new(
            Vector3::zeros(),
            UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_2),
        ),
    ];
    // The rod's leading face (y = 5e-4 in its frame) first meets the plate's near
    // edge: the point p at 0.8 along the plate, 2.5e-4 off its plane, whose polar
    // angle is 45 degrees less atan(2.5e-4 / 0.8), when the face's line, 5e-4 from the
    // axis, passes it: asin(5e-4 / |p|) before that angle.
    let p = (0.8_f64.powi(2) + 2.5e-4_f64.powi(2)).sqrt();
    let angle = std::f64::consts::FRAC_PI_4 - (2.5e-4_f64 / 0.8).atan() - (5e-4 / p).asin();
    let expected = angle / std::f64::consts::FRAC_PI_2;
    let first_only = CheckOptions {
        first_contact_only: true,
        ..CheckOptions::default()
    };
    for options in [CheckOptions::default(), first_only] {
        let r = check_path(&robot, &world, &path, &options, &mut |_| {});
        let first = r.first_collision.expect("the rod meets the plate");
        assert!(
            (first.t - expected).abs() < 2e-6,
            "{first:?}, expected t = {expected} (first contact only: {})",
            options.first_contact_only
        );
    }
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
