//! The reduced muscle at r = 20 (`src/muscle/reduced.rs`): the default fusiform muscle
//! (6 x 6 x 24 cells, 5,184 tets, both tendon ends fixed), its basis (linear modes and
//! modal derivatives of the passive tangent, palpation snapshots, contracted shapes), its
//! optimized cubature trained over activations [0, 1], and one reduced implicit Newmark
//! step (dt = 1 ms, one Newton iteration) at activation 0.5 under a palpation-sized load.
//! Single thread; the basis and the training run before the timed loop.
//!
//! - `muscle/step/20`: one reduced step as the scene runs it: the exact cubature force,
//!   the stiffness refreshed one slice of eight per step
//!   (`CubatureForces::evaluate_step`, the scene default `stiffness_slices = 8`), the
//!   20 x 20 solve.
//! - `muscle/step-exact/20`: the same step with the whole stiffness every step
//!   (`stiffness_slices = 1`).
//! - `muscle/eval/20`: the cubature force and stiffness alone.
//! - `muscle/force/20`: the cubature force alone.
//!
//! Printed before the timings: the fastest of 2,000 evaluations in each compilation of
//! the cubature kernels this CPU runs (`SimdLevel`), taken in turns so that the
//! machine's load falls on each alike; the default at r = 20 is the faster of them.

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams};
use haptics::fem::blemker::MuscleMaterial;
use haptics::muscle::fusiform::FusiformSpec;
use haptics::muscle::reduced::{muscle_basis, muscle_cubature, MuscleBasisOptions};
use haptics::muscle::{FusiformModel, MaterialFile};
use haptics::reduction::cubature::{default_kernels, CubatureForces};
use haptics::reduction::simd::SimdLevel;
use haptics::scene::format::DEFAULT_STIFFNESS_SLICES;

fn bench(c: &mut Criterion) {
    faer::set_global_parallelism(faer::Par::Seq);
    let model = FusiformModel::new(&FusiformSpec::default(), &MaterialFile::default())
        .expect("fusiform muscle");
    let t0 = std::time::Instant::now();
    let basis = muscle_basis(
        &model.muscle.mesh,
        &model.kernel,
        &model.material,
        &model.fixed,
        &MuscleBasisOptions::default(),
    )
    .expect("basis");
    let t1 = std::time::Instant::now();
    let (cub, report) =
        muscle_cubature(&model.kernel, &model.material, &basis, 1).expect("cubature");
    eprintln!(
        "muscle: {} tets; basis {:.1} s, cubature {:.1} s: {} points, held-out force error mean {:.2}% max {:.2}%",
        model.kernel.num_elements(),
        (t1 - t0).as_secs_f64(),
        t1.elapsed().as_secs_f64(),
        report.points,
        100.0 * report.held_out.mean,
        100.0 * report.held_out.max
    );
    let r = basis.u.ncols();
    let mut group = c.benchmark_group("muscle");
    let q: Vec<f64> = (0..r).map(|i| 1e-4 * ((i as f64) * 0.7).sin()).collect();
    let mut eval = cub.clone();
    eval.set_activation(0.5);
    let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
    let mut scratch = eval.scratch();
    compare_kernels(&eval, &q);
    group.bench_function("eval/20", |b| {
        b.iter(|| eval.evaluate(std::hint::black_box(&q), &mut f, &mut k, &mut scratch))
    });
    group.bench_function("force/20", |b| {
        b.iter(|| eval.evaluate_force(std::hint::black_box(&q), &mut f, &mut scratch))
    });
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        damping_stiffness: 0.01,
        activation: 0.5,
        ..ReducedParams::default()
    };
    for (name, slices) in [("step/20", DEFAULT_STIFFNESS_SLICES), ("step-exact/20", 1)] {
        let mut cub = cub.clone();
        cub.set_stiffness_slices(slices);
        let mut sim = ReducedNewmark::new(cub, params);
        let mut step = 0u64;
        let mut load = vec![0.0; r];
        group.bench_function(name, |b| {
            b.iter(|| {
                step += 1;
                load[0] = 1e-3 * (1e-3 * step as f64).sin();
                sim.step(std::hint::black_box(&load))
            })
        });
    }
    group.finish();
}

/// Fastest evaluation per compilation of the kernels, interleaved in rounds.
fn compare_kernels(cub: &CubatureForces<MuscleMaterial>, q: &[f64]) {
    let r = q.len();
    let mut kernels = vec![SimdLevel::Portable];
    for k in [SimdLevel::Avx2, SimdLevel::Avx512] {
        if k <= SimdLevel::detect() {
            kernels.push(k);
        }
    }
    let mut best = vec![f64::INFINITY; kernels.len()];
    let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
    let mut cub = cub.clone();
    let mut scratch = cub.scratch();
    for _round in 0..40 {
        for (kernel, best) in kernels.iter().zip(&mut best) {
            cub.use_kernels(*kernel);
            for _ in 0..50 {
                let t = std::time::Instant::now();
                cub.evaluate(std::hint::black_box(q), &mut f, &mut k, &mut scratch);
                *best = best.min(t.elapsed().as_secs_f64());
            }
        }
    }
    for (kernel, best) in kernels.iter().zip(&best) {
        eprintln!(
            "muscle: {kernel:?} kernels, fastest evaluation {:.0} us",
            best * 1e6
        );
    }
    eprintln!("muscle: default at r = {r}: {:?}", default_kernels(r));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = bench
}
criterion_main!(benches);
