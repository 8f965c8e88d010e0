//! The continuous path check at the scale: a 100-state path of a ~5K-triangle
//! robot through a ~100K-triangle world.
//!
//! The world is a trefoil-knot pipe (radius 0.03 m swept along a knot of scale 0.1, 2,000
//! rings of 25 facets: 100,000 triangles); the robot a 60 x 40 x 20 mm box with 20 x 20
//! quads per face (4,800 triangles) that circles the knot 0.38 m from its axis while
//! turning twice about z, passing its three outer lobes at about a centimetre.
//!
//! The files are also written to `target/check-bench/` (world.obj, robot.obj, path.path)
//! for `benches/compare/fcl_sweep.py`, the dense FCL sweep measured beside it (run both
//! with `benches/compare/check_vs_fcl.sh`, by hand, outside the test suite).
//!
//! Then `--first-contact` on the shipped alpha puzzle (`assets/check/alpha`: an
//! 18,040-triangle helix entangled with a 7,680-triangle ring): the helix translated
//! from its start towards its goal's position collides; a translation is cast at the
//! world, and the same motion turning by 1e-6 rad is walked, decision by decision. And
//! the box robot translated past the knot without touching it, cast and then walked,
//! against the same motion turning by 1e-6 rad, walked alone: the price of a cast that
//! finds nothing.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::check::ompl::format_path;
use haptics::check::problem::load_problem;
use haptics::check::{check_path, CheckOptions, Robot, World};
use haptics::mesh::shapes::{box_surface, closed_tube};
use haptics::mesh::{write_obj, SurfaceMesh};
use haptics::proximity::rigid::State;
use nalgebra::{Point3, UnitQuaternion, Vector3};

/// The knot pipe, the box robot and the path.
pub fn problem() -> (SurfaceMesh, SurfaceMesh, Vec<State>) {
    let k = 2000;
    let knot: Vec<Point3<f64>> = (0..k)
        .map(|i| {
            let t = std::f64::consts::TAU * i as f64 / k as f64;
            Point3::new(
                t.sin() + 2.0 * (2.0 * t).sin(),
                t.cos() - 2.0 * (2.0 * t).cos(),
                -(3.0 * t).sin(),
            ) * 0.1
        })
        .collect();
    let world = closed_tube(&knot, 0.03, 25);
    let robot = box_surface(Point3::origin(), Vector3::new(0.03, 0.02, 0.01), 20);
    let path = (0..100)
        .map(|i| {
            let a = std::f64::consts::TAU * i as f64 / 99.0;
            State::new(
                Vector3::new(0.38 * a.cos(), 0.38 * a.sin(), 0.0),
                UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 2.0 * a),
            )
        })
        .collect();
    (world, robot, path)
}

fn bench(c: &mut Criterion) {
    let (world_mesh, robot_mesh, path) = problem();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/check-bench");
    std::fs::create_dir_all(&dir).unwrap();
    write_obj(&dir.join("world.obj"), &world_mesh).unwrap();
    write_obj(&dir.join("robot.obj"), &robot_mesh).unwrap();
    std::fs::write(dir.join("path.path"), format_path(&path)).unwrap();
    let robot = Robot::new(&robot_mesh);
    let world = World::new(&world_mesh);
    let options = CheckOptions::default();
    let r = check_path(&robot, &world, &path, &options, &mut |_| {});
    println!(
        "world {} triangles, robot {} triangles, {} states: {} (min clearance {:.6} m, certified to {:.2e}; {} distance evaluations, {} interval sweeps, {:.3} s; first contact {:?})",
        world_mesh.triangles.len(),
        robot_mesh.triangles.len(),
        path.len(),
        if r.collision_free { "collision-free" } else { "collides" },
        r.min_clearance,
        r.tolerance,
        r.evaluations,
        r.sweeps,
        r.seconds,
        r.first_collision
    );
    let mut g = c.benchmark_group("path_check");
    g.sample_size(10);
    g.bench_function("knot_100_states", |b| {
        b.iter(|| check_path(&robot, &world, &path, &options, &mut |_| {}))
    });
    g.bench_function("bvh_build_world", |b| b.iter(|| World::new(&world_mesh)));
    g.finish();
}

/// A motion from `a` to `b`'s position, in `a`'s orientation (a translation) or turned
/// by `turn` rad about z.
fn straight(a: &State, b: &State, turn: f64) -> [State; 2] {
    let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), turn) * a.orientation;
    [*a, State::new(b.position, q)]
}

fn first_contact(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let alpha = load_problem(&root.join("assets/check/alpha/alpha.cfg")).unwrap();
    let (helix, ring) = (Robot::new(&alpha.robot_mesh), World::new(&alpha.world_mesh));
    let p = &alpha.problem;
    let (world_mesh, robot_mesh, _) = problem();
    let (knot, boxed) = (World::new(&world_mesh), Robot::new(&robot_mesh));
    let options = CheckOptions {
        first_contact_only: true,
        ..CheckOptions::default()
    };
    // Over the knot's outer lobes, 0.15 above its plane: free.
    let over = State::new(Vector3::new(-0.4, 0.0, 0.15), UnitQuaternion::identity());
    let past = State::new(Vector3::new(0.4, 0.0, 0.15), UnitQuaternion::identity());
    let cases = [
        (
            "alpha_translation_cast",
            &helix,
            &ring,
            straight(&p.start, &p.goal, 0.0),
            false,
        ),
        (
            "alpha_turning_walked",
            &helix,
            &ring,
            straight(&p.start, &p.goal, 1e-6),
            false,
        ),
        (
            "knot_free_translation_cast_then_walked",
            &boxed,
            &knot,
            straight(&over, &past, 0.0),
            true,
        ),
        (
            "knot_free_turning_walked",
            &boxed,
            &knot,
            straight(&over, &past, 1e-6),
            true,
        ),
    ];
    let mut g = c.benchmark_group("first_contact");
    g.sample_size(20);
    for (name, robot, world, path, free) in &cases {
        let r = check_path(robot, world, path, &options, &mut |_| {});
        assert_eq!(r.collision_free, *free, "{name}: {:?}", r.first_collision);
        println!(
            "{name}: first contact {:?}, {} decisions, {} sweeps",
            r.first_collision, r.evaluations, r.sweeps
        );
        g.bench_function(*name, |b| {
            b.iter(|| check_path(robot, world, path, &options, &mut |_| {}))
        });
    }
    g.finish();
}

criterion_group!(benches, bench, first_contact);
criterion_main!(benches);
