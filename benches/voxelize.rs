//! Voxelization of the bridge surface (a 32,014-triangle polygon soup), with interior
//! fill, at three resolutions.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use haptics::mesh::{read_obj, voxelize::voxelize, voxelize::VoxelizeOptions};
use haptics::progress::NoProgress;

fn bench(c: &mut Criterion) {
    let path = haptics::assets::model("simpleBridge/simpleBridge.obj");
    let surface = read_obj(&path).expect("bridge surface");
    let mut g = c.benchmark_group("voxelize/simpleBridge");
    for res in [64usize, 128, 256] {
        let opts = VoxelizeOptions {
            resolution: res,
            ..VoxelizeOptions::default()
        };
        g.bench_with_input(BenchmarkId::from_parameter(res), &opts, |b, o| {
            b.iter(|| voxelize(&surface, o, &NoProgress).expect("voxelize"))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
