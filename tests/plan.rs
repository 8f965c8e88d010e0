//! The planner on the shipped problems, through the public API: the generated alpha
//! puzzle (`assets/check/alpha`, OMPL.app's format) solved for seeds 1 to 10 within its
//! 60 s limit, every path collision-free under the continuous path check; a seed that
//! reproduces its path bit for bit; and the peg lowered into the shipped peg-in-shaft
//! scene's shaft (2 cm of play per side), its path checked the same way. Every planned
//! path is also certified free by an exact test that shares no code with the engine
//! (`independent`: its own triangle distances, grid and motion bound).

mod independent;

use std::path::Path;

use haptics::check::ompl::read_problem;
use haptics::check::{check_path, robot_origin, CheckOptions, Robot, World};
use haptics::mesh::collada::distinct_vertex_sum;
use haptics::mesh::{read_obj, SurfaceMesh};
use haptics::plan::space::Space;
use haptics::plan::{plan, Plan, PlanOptions, Problem};
use haptics::proximity::rigid::State;
use nalgebra::{Point3, UnitQuaternion, Vector3};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The alpha puzzle's robot (about OMPL.app's origin, the mean of its distinct vertices)
/// and world, its start, goal and box.
fn alpha() -> (Robot, World, State, State, Space) {
    let (robot, world, p) = alpha_meshes();
    alpha_from(&robot, &world, &p)
}

/// [`alpha`] from meshes already read.
fn alpha_from(
    robot: &SurfaceMesh,
    world: &SurfaceMesh,
    p: &haptics::check::ompl::Problem,
) -> (Robot, World, State, State, Space) {
    let robot = Robot::new(robot);
    let world = World::new(world);
    let (min, max) = p.volume.unwrap();
    let space = Space {
        min,
        max,
        radius: robot.radius,
    };
    (robot, world, p.start, p.goal, space)
}

/// The alpha puzzle's robot mesh (about its origin) and world mesh, and the problem.
fn alpha_meshes() -> (SurfaceMesh, SurfaceMesh, haptics::check::ompl::Problem) {
    let p = read_problem(&root().join("assets/check/alpha/alpha.cfg")).unwrap();
    let robot_mesh = read_obj(&p.robot).unwrap();
    let (sum, count) = distinct_vertex_sum(robot_mesh.vertices.iter().copied());
    let origin = Point3::from(sum / count as f64);
    let robot = robot_origin(&robot_mesh, &origin);
    let world = read_obj(&p.world).unwrap();
    (robot, world, p)
}

/// Certifies `path` free for `robot` (in its own frame) against `world` with the
/// independent exact test (grid cells of 5% of the robot's diagonal; touching is closer
/// than 1e-6 of it, far below the planner's clearance floor); returns the least distance
/// at its steps.
fn independently_free(robot: &SurfaceMesh, world: &SurfaceMesh, path: &[State]) -> f64 {
    let (lo, hi) = robot.vertices.iter().fold(
        (Vector3::repeat(f64::MAX), Vector3::repeat(f64::MIN)),
        |(lo, hi), p| (lo.inf(&p.coords), hi.sup(&p.coords)),
    );
    let diagonal = (hi - lo).norm();
    let grid = independent::Grid::new(
        independent::triangles(&world.vertices, &world.triangles),
        0.05 * diagonal,
    );
    let part = independent::triangles(&robot.vertices, &robot.triangles);
    let poses: Vec<independent::Pose> = path.iter().map(|s| (s.position, s.orientation)).collect();
    independent::certify_free(&part, &grid, &poses, 1e-6 * diagonal)
        .unwrap_or_else(|t| panic!("the independent test finds the path touching: {t}"))
}

fn run(problem: &Problem, seed: u64, time_limit: f64) -> Plan {
    let options = PlanOptions {
        seed,
        time_limit,
        ..PlanOptions::default()
    };
    plan(problem, &options, &|_| {}).unwrap()
}

/// The target of the planning issue: 10 of 10 seeds within 60 s. A path the planner
/// returns must pass the path check (its own tolerance, 0.1% of the robot's diagonal, is
/// below the planner's motion floor of 0.15%), and the first seed's also the independent
/// exact test, whose least distance may not fall below the check's certified minimum
/// by more than the check's tolerance.
#[test]
fn the_alpha_puzzle_is_solved_for_ten_seeds_and_every_path_is_free() {
    let (robot_mesh, world_mesh, p) = alpha_meshes();
    let (robot, world, start, goal, space) = alpha_from(&robot_mesh, &world_mesh, &p);
    let problem = Problem {
        robot: &robot,
        world: &world,
        space,
        start,
        goal,
    };
    for seed in 1..=10 {
        let r = run(&problem, seed, 60.0);
        assert!(r.solved, "seed {seed}: not solved in 60 s");
        assert_eq!(r.path[0], start);
        assert_eq!(*r.path.last().unwrap(), goal);
        assert!(r.length <= r.raw_length + 1e-12, "shortcuts never lengthen");
        let c = check_path(
            &robot,
            &world,
            &r.path,
            &CheckOptions::default(),
            &mut |_| {},
        );
        assert!(
            c.collision_free,
            "seed {seed}: the planned path collides at {:?}",
            c.first_collision
        );
        println!(
            "seed {seed}: {:.3} s, {} states, min clearance {:.5}",
            r.solve_seconds, r.states, c.min_clearance
        );
        // The independent test advances by exact distances of 0.0025 through the
        // puzzle's passage: about two minutes per path, so it certifies the first seed's.
        if seed == 1 {
            let independent = independently_free(&robot_mesh, &world_mesh, &r.path);
            println!("seed 1: the independent test's least distance {independent:.5}");
            assert!(
                independent >= c.min_clearance - c.tolerance,
                "the independent test saw {independent}, the path check certified {} to {}",
                c.min_clearance,
                c.tolerance
            );
        }
    }
}

#[test]
fn a_seed_reproduces_its_path_bit_for_bit() {
    let (robot, world, start, goal, space) = alpha();
    let problem = Problem {
        robot: &robot,
        world: &world,
        space,
        start,
        goal,
    };
    let bits = |p: &Plan| -> Vec<u64> {
        p.path
            .iter()
            .flat_map(|s| {
                let q = s.orientation.coords;
                [s.position.x, s.position.y, s.position.z, q.x, q.y, q.z, q.w]
            })
            .map(f64::to_bits)
            .collect()
    };
    let (a, b, c) = (
        run(&problem, 4, 60.0),
        run(&problem, 4, 60.0),
        run(&problem, 5, 60.0),
    );
    assert!(a.solved && b.solved && c.solved);
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.states, b.states);
    assert_ne!(bits(&a), bits(&c));
}

/// The shipped peg-in-shaft scene: the peg (0.2 x 1.0 x 0.2) from its pose above the
/// shaft to 0.8 lower, its bottom half inside the shaft (0.24 x 0.24: 2 cm of play per
/// side), as `haptics plan assets/scenes/peg-shaft.toml --goal 0,1,0` does.
#[test]
fn the_peg_is_planned_into_the_shipped_shaft() {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let scene = haptics::scene::load_scene(
        &root().join("assets/scenes/peg-shaft.toml"),
        &cache,
        &haptics::progress::NoProgress,
    )
    .unwrap();
    let robot = Robot::new(&scene.haptic.surface);
    let objects: Vec<(String, haptics::mesh::SurfaceMesh)> = scene
        .environment
        .iter()
        .map(|e| {
            let mut mesh = e.surface.clone();
            mesh.vertices.iter_mut().for_each(|v| *v = e.pose * *v);
            (e.name.clone(), mesh)
        })
        .collect();
    let world = World::from_objects(&objects);
    let pose = scene.haptic.pose;
    let start = State::new(pose.translation.vector, pose.rotation);
    let goal = State::new(Vector3::new(0.0, 1.0, 0.0), UnitQuaternion::identity());
    let b = world.bvh.aabb();
    let r = Vector3::repeat(robot.radius);
    let space = Space {
        min: b.min.coords.inf(&start.position) - r,
        max: b.max.coords.sup(&start.position) + r,
        radius: robot.radius,
    };
    let problem = Problem {
        robot: &robot,
        world: &world,
        space,
        start,
        goal,
    };
    let plan = run(&problem, 1, 60.0);
    assert!(plan.solved);
    let c = check_path(
        &robot,
        &world,
        &plan.path,
        &CheckOptions::default(),
        &mut |_| {},
    );
    assert!(c.collision_free, "{:?}", c.first_collision);
    let meshes: Vec<SurfaceMesh> = objects.iter().map(|(_, m)| m.clone()).collect();
    let world_mesh = haptics::mesh::shapes::union(&meshes);
    let independent = independently_free(&scene.haptic.surface, &world_mesh, &plan.path);
    assert!(independent <= 0.02 + 1e-9, "{independent}");
    // In the shaft the play is 2 cm per side: the path's clearance is at most that, and
    // the check's minimum (a pair's distance, certified to the tolerance) at most the
    // tolerance above it.
    assert!(
        c.min_clearance > 0.0 && c.min_clearance <= 0.02 + c.tolerance,
        "{} (tolerance {})",
        c.min_clearance,
        c.tolerance
    );
}
