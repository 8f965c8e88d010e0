//! The planner on the shipped alpha puzzle (`assets/check/alpha`: an 18,040-triangle
//! helix screwed out of a 7,680-triangle ring, OMPL.app's format): a whole search with
//! seed 1 (single-threaded, so every iteration explores the same tree), and the state
//! validity query it makes at each sample (two depth-first threshold decisions) on 1,000
//! uniform states of the puzzle's box. Then the widest corridor's search
//! ([`haptics::plan::corridor`]) through a procedural maze: three walls across a box,
//! their slots at alternate ends, so that the widest way zig-zags (the search the
//! planner makes before sampling on OMPL.app's cubicles, which cannot ship).
//!
//! The comparison with OMPL.app on its own problems is `benches/compare/plan_vs_ompl.sh`
//! (by hand, outside the test suite; docs/plan.md).

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::check::problem::load_problem;
use haptics::check::{Robot, World};
use haptics::mesh::shapes::{box_surface, union};
use haptics::plan::corridor::{shorten, widest, Search};
use haptics::plan::space::Space;
use haptics::plan::validity::Checker;
use haptics::plan::{default_clearance, plan, PlanOptions, Problem};
use haptics::proximity::rigid::State;
use nalgebra::{Point3, Vector3};
use rand::SeedableRng;

fn alpha() -> (Robot, World, State, State, Space) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let alpha = load_problem(&root.join("assets/check/alpha/alpha.cfg")).unwrap();
    let (robot, world) = (Robot::new(&alpha.robot_mesh), World::new(&alpha.world_mesh));
    let p = alpha.problem;
    let (min, max) = p.volume.unwrap();
    let radius = robot.radius;
    (robot, world, p.start, p.goal, Space { min, max, radius })
}

fn bench(c: &mut Criterion) {
    let (robot, world, start, goal, space) = alpha();
    let problem = Problem {
        robot: &robot,
        world: &world,
        space,
        start,
        goal,
    };
    let options = PlanOptions {
        time_limit: 60.0,
        ..PlanOptions::default()
    };
    let first = plan(&problem, &options, &|_| {}).unwrap();
    println!(
        "alpha puzzle, seed 1: {} states, {} samples, {} distance queries, {} motions, {} sweeps, path {} states",
        first.states,
        first.samples,
        first.work.queries,
        first.work.motions,
        first.work.sweeps,
        first.path.len()
    );
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    g.bench_function("alpha_puzzle_seed_1", |b| {
        b.iter(|| plan(&problem, &options, &|_| {}).unwrap())
    });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let states: Vec<State> = (0..1000).map(|_| space.uniform(&mut rng)).collect();
    let mut checker = Checker::new(&robot, &world, default_clearance(&robot));
    checker.enough = 0.03 * space.extent();
    g.sample_size(20);
    g.bench_function("state_validity_1000_uniform", |b| {
        b.iter(|| states.iter().filter(|s| checker.valid(s).is_some()).count())
    });
    g.finish();
}

/// Three walls across the box -5..5 x -5..5 x -1..1, at x = -2.5, 0 and 2.5, each with
/// a slot 1 wide at alternate ends (y = 3..4, -4..-3, 3..4).
fn maze() -> World {
    let wall = |x: f64, slot: (f64, f64)| {
        [(-5.0, slot.0), (slot.1, 5.0)].map(|(y0, y1)| {
            box_surface(
                Point3::new(x, 0.5 * (y0 + y1), 0.0),
                Vector3::new(0.1, 0.5 * (y1 - y0), 1.0),
                1,
            )
        })
    };
    let parts: Vec<_> = [(-2.5, (3.0, 4.0)), (0.0, (-4.0, -3.0)), (2.5, (3.0, 4.0))]
        .into_iter()
        .flat_map(|(x, slot)| wall(x, slot))
        .collect();
    World::new(&union(&parts))
}

fn bench_corridor(c: &mut Criterion) {
    let world = maze();
    let (lo, hi) = (Vector3::new(-5.0, -5.0, -1.0), Vector3::new(5.0, 5.0, 1.0));
    let (from, to) = (Point3::new(-4.0, 0.0, 0.0), Point3::new(4.0, 0.0, 0.0));
    let run = || {
        let mut distance = |p: &Point3<f64>| world.bvh.point_distance_below(p, 1.0);
        // The planner's grid for a robot of bounding radius 0.4: cells of 0.3.
        let mut search = Search::new(0.3, 1 << 15, 1 << 15);
        let mut sees = |a: &Point3<f64>, b: &Point3<f64>| !world.bvh.crosses(a, b);
        let corridor = widest(&mut distance, &mut sees, &lo, &hi, &from, &to, &mut search).unwrap();
        let points = shorten(
            &mut distance,
            &corridor.points,
            corridor.width,
            &mut search.queries,
        );
        (corridor, points, search)
    };
    let (corridor, points, search) = run();
    println!(
        "maze corridor: width {:.3}, length {:.2} ({} waypoints shortened to {}), {} cells expanded, {} point queries",
        corridor.width,
        corridor.length(),
        corridor.points.len(),
        points.len(),
        search.expanded,
        search.queries
    );
    let mut g = c.benchmark_group("plan");
    g.sample_size(20);
    g.bench_function("widest_corridor_maze", |b| b.iter(run));
    g.finish();
}

criterion_group!(benches, bench, bench_corridor);
criterion_main!(benches);
