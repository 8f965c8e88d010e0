use super::rrt::Node;
use super::*;
use crate::mesh::shapes::box_surface;
use crate::mesh::SurfaceMesh;
use nalgebra::{Point3, UnitQuaternion, Vector3};

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

/// The path check's report of `path` at its default tolerance: exact triangle
/// distances, independent of the planner's validity checker.
fn path_check(robot: &Robot, world: &World, path: &[State]) -> crate::check::Report {
    crate::check::check_path(
        robot,
        world,
        path,
        &crate::check::CheckOptions::default(),
        &mut |_| {},
    )
}

/// The problem of moving `robot`, unturned, from `x0` to `x1` on the x axis.
fn along_x<'a>(robot: &'a Robot, world: &'a World, space: Space, x0: f64, x1: f64) -> Problem<'a> {
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
    use crate::mesh::shapes::union;
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
        let report = path_check(&robot, &world, &r.path);
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
        let mut search = Search::new(&problem, &options, &Guide::default(), 1e-3, 0.5, 0.5, 1, 0);
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

/// The clearance schedule: the start for a stage, halved at each stage's end, and the
/// last stage's for good.
#[test]
fn the_scheduled_clearance_halves_at_each_stage() {
    let c = 0.8;
    assert_eq!(scheduled_clearance(c, 0), c);
    assert_eq!(scheduled_clearance(c, CLEARANCE_STAGE - 1), c);
    assert_eq!(scheduled_clearance(c, CLEARANCE_STAGE), 0.5 * c);
    assert_eq!(scheduled_clearance(c, 3 * CLEARANCE_STAGE + 7), c / 8.0);
    let last = c / f64::from(1u32 << CLEARANCE_HALVINGS);
    assert_eq!(
        scheduled_clearance(c, CLEARANCE_HALVINGS as usize * CLEARANCE_STAGE),
        last
    );
    assert_eq!(scheduled_clearance(c, usize::MAX), last);
}

/// A closed polyhedron inscribed in the sphere of `radius` about the origin, with a
/// vertex on each axis: an octahedron whose faces are split in four `levels` times,
/// every new vertex pushed out to the sphere.
fn ball(radius: f64, levels: usize) -> SurfaceMesh {
    let mut vertices: Vec<Point3<f64>> = [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ]
    .iter()
    .map(|v| Point3::from(Vector3::from(*v) * radius))
    .collect();
    let mut triangles: Vec<[usize; 3]> = vec![
        [0, 2, 4],
        [2, 1, 4],
        [1, 3, 4],
        [3, 0, 4],
        [2, 0, 5],
        [1, 2, 5],
        [3, 1, 5],
        [0, 3, 5],
    ];
    for _ in 0..levels {
        let mut middles = std::collections::HashMap::new();
        let mut middle = |a: usize, b: usize, vertices: &mut Vec<Point3<f64>>| {
            *middles.entry((a.min(b), a.max(b))).or_insert_with(|| {
                let m = (vertices[a].coords + vertices[b].coords).normalize() * radius;
                vertices.push(Point3::from(m));
                vertices.len() - 1
            })
        };
        let mut split = Vec::with_capacity(4 * triangles.len());
        for [a, b, c] in triangles {
            let (ab, bc, ca) = (
                middle(a, b, &mut vertices),
                middle(b, c, &mut vertices),
                middle(c, a, &mut vertices),
            );
            split.extend([[a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca]]);
        }
        triangles = split;
    }
    SurfaceMesh {
        vertices,
        triangles,
    }
}

/// A ball (radius 0.05, inscribed in its sphere, with a vertex on each axis) through a
/// square hole in a thin plate, 0.0001 wider than the ball on each side; the box of
/// positions holds the ball's centre within 0.00001 of the hole's axis, so the search
/// is free in orientation and along the axis only. The default clearance (0.2% of the
/// ball's box diagonal, about 0.000346) closes the hole: the ball holds the sphere of
/// its inradius `rho` (its nearest face plane), so at every pose it is within
/// `h + 0.00001 - rho` of a side of the hole (`h` the hole's half-width), less than the
/// three quarters of the default that a motion must keep. With the clearance fixed at
/// the default the search does not pass; with the clearance relaxed it does, and the
/// path check (exact triangle distances, not the planner's checker) finds the path
/// free.
#[test]
fn a_relaxed_clearance_opens_a_passage_the_default_closes() {
    use crate::mesh::shapes::union;
    let mesh = ball(0.05, 5);
    let rho = mesh
        .triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| mesh.vertices[i].coords);
            (b - a).cross(&(c - a)).normalize().dot(&a).abs()
        })
        .fold(f64::INFINITY, f64::min);
    let robot = Robot::new(&mesh);
    let (h, off) = (0.05 + 0.0001, 1e-5);
    let bar = |y0: f64, y1: f64, z0: f64, z1: f64| {
        box_surface(
            Point3::new(0.0, 0.5 * (y0 + y1), 0.5 * (z0 + z1)),
            Vector3::new(0.001, 0.5 * (y1 - y0), 0.5 * (z1 - z0)),
            1,
        )
    };
    let world = World::new(&union(&[
        bar(-0.5, -h, -0.5, 0.5),
        bar(h, 0.5, -0.5, 0.5),
        bar(-h, h, -0.5, -h),
        bar(-h, h, h, 0.5),
    ]));
    let space = Space {
        min: Vector3::new(-0.3, -off, -off),
        max: Vector3::new(0.3, off, off),
        radius: robot.radius,
    };
    let problem = along_x(&robot, &world, space, -0.2, 0.2);
    let default = default_clearance(&robot);
    assert!(h + off - rho < 0.75 * default, "{rho} {default}");
    let in_hole = State::new(Vector3::zeros(), UnitQuaternion::identity());
    assert!(Checker::new(&robot, &world, default)
        .valid(&in_hole)
        .is_none());

    // Fixed at the default, the search never passes (a 2 s limit stops it).
    let fixed = PlanOptions {
        time_limit: 2.0,
        ..PlanOptions::default()
    };
    let r = plan(&problem, &fixed, &|_| {}).unwrap();
    assert!(!r.solved && r.clearance == default, "{r:?}");

    let relaxed = PlanOptions {
        time_limit: 60.0,
        relax_clearance: true,
        ..PlanOptions::default()
    };
    let r = plan(&problem, &relaxed, &|_| {}).unwrap();
    assert!(r.solved, "{} samples", r.samples);
    assert_eq!(r.initial_clearance, default);
    // Passed after the first halving at the soonest.
    assert!(r.samples > CLEARANCE_STAGE, "{} samples", r.samples);
    assert!(
        r.clearance <= 0.5 * default,
        "{} against {default}",
        r.clearance
    );
    let report = path_check(&robot, &world, &r.path);
    assert!(report.collision_free, "min {}", report.min_clearance);
}
