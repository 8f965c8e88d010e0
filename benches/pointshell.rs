//! Pointshell generation on the tube (15,840 triangles, area 159.8): particle repulsion
//! of 85,120 points in 4 levels (N1 = 1,330, default parameters), and the farthest-point
//! ordering of 256,000 stratified random points on the same surface.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::geometry::farthest::farthest_point_order;
use haptics::geometry::pointshell::{sample_pointshell, PointshellParams, SurfaceSampler};
use haptics::geometry::MeshDistance;
use haptics::mesh::read_obj;
use haptics::progress::NoProgress;
use haptics_devices::rng::SplitMix64;

fn bench(c: &mut Criterion) {
    let path = haptics::assets::model("tube/tube.veg.obj");
    let mesh = read_obj(&path).expect("tube surface");
    let distance = MeshDistance::new(&mesh).expect("closed tube");

    let mut g = c.benchmark_group("pointshell/tube");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    let params = PointshellParams {
        first_level_points: 1330,
        levels: 4,
        ..PointshellParams::default()
    };
    g.bench_function("repulsion 85K in 4 levels", |b| {
        b.iter(|| sample_pointshell(&distance, &mesh, &params, &NoProgress).expect("pointshell"))
    });

    let points = SurfaceSampler::new(&mesh)
        .expect("tube area")
        .sample(256_000, &mut SplitMix64::new(1));
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("farthest-point order 256K", |b| {
        b.iter(|| farthest_point_order(&points, 0).expect("ordering"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
