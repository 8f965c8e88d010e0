//! Loading the shipped scenes (`assets/scenes`): with an empty artifact cache (every
//! distance field, pointshell and bake computed) and from a warm cache (every artifact
//! read back and verified). The first-load figure of `bridge-probe` (about 10 s) is
//! left out: ten samples of it would take minutes, and its cached load is the one a
//! user meets after the first run.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use haptics::progress::NoProgress;
use haptics::scene::load_scene_with_report;

fn scene_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/scenes/{name}.toml"))
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("scene/load");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for name in ["peg-shaft", "hoses-gap"] {
        let path = scene_path(name);
        g.bench_function(format!("{name}/empty cache"), |b| {
            b.iter_batched(
                || tempfile::tempdir().expect("temporary cache"),
                |cache| load_scene_with_report(&path, cache.path(), &NoProgress).expect(name),
                BatchSize::PerIteration,
            )
        });
    }
    for name in ["peg-shaft", "hoses-gap", "bridge-probe"] {
        let path = scene_path(name);
        let cache = tempfile::tempdir().expect("temporary cache");
        load_scene_with_report(&path, cache.path(), &NoProgress).expect(name);
        g.bench_function(format!("{name}/cached"), |b| {
            b.iter(|| load_scene_with_report(&path, cache.path(), &NoProgress).expect(name))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
