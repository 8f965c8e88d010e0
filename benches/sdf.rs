//! Signed distance fields: lookups (coherent, like a pointshell traversal, and random),
//! the exact distance of a closed mesh ([`MeshDistance`], the held object's distance and
//! every bake's), the tube (15,840 triangles) at 128^3 and 256^3, and the bridge soup at
//! 256^3.

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use haptics::geometry::{
    soup::soup_signed_field, soup::SoupOptions, MeshDistance, SdfOptions, SignedDistanceField,
};
use haptics::mesh::{read_obj, SurfaceMesh};
use haptics::progress::NoProgress;
use haptics_devices::rng::SplitMix64;
use nalgebra::{Point3, Vector3};

fn model(rel: &str) -> SurfaceMesh {
    read_obj(&haptics::assets::asset("models").join(rel)).expect("model")
}

fn field(m: &SurfaceMesh, resolution: usize) -> SignedDistanceField {
    let md = MeshDistance::new(m).expect("closed mesh");
    let opts = SdfOptions {
        resolution,
        ..SdfOptions::default()
    };
    SignedDistanceField::compute_with(&md, &opts, &NoProgress).expect("field")
}

/// Coherent queries: the mesh's vertices in file order, nudged off the surface, like a
/// pointshell's points visited in traversal order.
fn near_surface(mesh: &SurfaceMesh) -> Vec<Point3<f64>> {
    mesh.vertices
        .iter()
        .map(|v| v + Vector3::new(0.01, -0.02, 0.015))
        .collect()
}

/// `n` points uniform in the box from `min` spanning `extent`, from the stream `seed`.
fn uniform_in_box(
    min: &Point3<f64>,
    extent: &Vector3<f64>,
    n: usize,
    seed: u64,
) -> Vec<Point3<f64>> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let mut r = || rng.next_f64();
            min + extent.component_mul(&Vector3::new(r(), r(), r()))
        })
        .collect()
}

fn lookups(c: &mut Criterion) {
    let tube = model("tube/tube.veg.obj");
    let f = field(&tube, 256);
    let near = near_surface(&tube);
    let side = f.spacing * f.cells[0] as f64;
    let random = uniform_in_box(&f.origin, &Vector3::repeat(side), near.len(), 7);
    per_point(
        c,
        "sdf/lookup (tube 256^3, per point)",
        &[
            ("near surface, coherent", &near),
            ("random in box", &random),
        ],
        |p| f.lookup(p),
    );
}

/// The exact signed distance per query: near the surface (as the held object's distance
/// is asked in a contact) and anywhere in the box (as a bake asks it).
fn exact(c: &mut Criterion) {
    let tube = model("tube/tube.veg.obj");
    let md = MeshDistance::new(&tube).expect("closed mesh");
    let near = near_surface(&tube);
    let b = md.bounding_box();
    let random = uniform_in_box(&b.min, &(b.max - b.min), near.len(), 11);
    c.bench_function("sdf/exact build (tube)", |bch| {
        bch.iter(|| MeshDistance::new(std::hint::black_box(&tube)).expect("closed mesh"))
    });
    per_point(
        c,
        "sdf/exact (tube, per point)",
        &[("near surface", &near), ("random in box", &random)],
        |p| md.signed_distance(p),
    );
}

/// A group `name` timing `query` over each named set of points (throughput: points per
/// second; the sets are the same size).
fn per_point(
    c: &mut Criterion,
    name: &str,
    sets: &[(&str, &[Point3<f64>])],
    query: impl Fn(&Point3<f64>) -> f64,
) {
    let mut g = c.benchmark_group(name);
    g.throughput(criterion::Throughput::Elements(sets[0].1.len() as u64));
    for &(label, points) in sets {
        g.bench_function(label, |b| {
            b.iter(|| {
                points
                    .iter()
                    .map(|p| query(std::hint::black_box(p)))
                    .sum::<f64>()
            })
        });
    }
    g.finish();
}

fn compute(c: &mut Criterion) {
    let tube = model("tube/tube.veg.obj");
    let mut g = c.benchmark_group("sdf/compute");
    g.sample_size(10);
    g.bench_function("tube 128^3 signed", |b| b.iter(|| field(&tube, 128)));
    g.finish();
}

fn compute_large(c: &mut Criterion) {
    let tube = model("tube/tube.veg.obj");
    let bridge = model("simpleBridge/simpleBridge.obj");
    let mut g = c.benchmark_group("sdf/compute large");
    g.sample_size(10).sampling_mode(SamplingMode::Flat);
    g.bench_function("tube 256^3 signed", |b| b.iter(|| field(&tube, 256)));
    g.bench_function("bridge soup 256^3", |b| {
        let opts = SoupOptions {
            resolution: 256,
            ..SoupOptions::default()
        };
        b.iter(|| soup_signed_field(&bridge, &opts, &NoProgress).expect("soup field"))
    });
    g.finish();
}

criterion_group!(benches, lookups, exact, compute, compute_large);
criterion_main!(benches);
