//! Reduced StVK on Barbic's bridge (1736 voxels, 3923 vertices, the 44 vertices of the
//! `_enlarged.bou` fixed), in bases of r mass-orthonormal linear modes: the workload of
//! the side-by-side comparison with Vega FEM in docs/performance.md (implicit Newmark,
//! dt = 1 ms, one Newton iteration, stiffness damping 0.01, identity reduced mass).
//! Single thread except where named.
//!
//! - `reduced/step/r`: one implicit Newmark step (force, stiffness, solve).
//! - `reduced/eval/r`: force plus stiffness evaluation alone.
//! - `reduced/precompute/r`: the cubic polynomial from the basis (both cores).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{bou::read_bou, veg::read_veg};
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::modes::{linear_modes, ModesOptions};
use haptics::reduction::precompute::reduced_polynomial;
use nalgebra::DMatrix;

fn bridge_modes(count: usize) -> (FemModel, DMatrix<f64>) {
    let dir = haptics::assets::model("simpleBridge");
    let mesh = read_veg(&dir.join("simpleBridge_resol92-b1.155_enlarged.veg")).expect("bridge");
    let fixed_v = read_bou(
        &dir.join("simpleBridge_resol92-b1.155_enlarged.bou"),
        Some(mesh.vertices.len()),
    )
    .expect("bou");
    let model = FemModel::new(&mesh, MaterialLaw::StVK).expect("model");
    let mut fixed = vec![false; model.num_dofs()];
    for v in fixed_v {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let opts = ModesOptions {
        count,
        unconstrained: false,
        tolerance: 1e-10,
    };
    let modes = linear_modes(&k, &m, &fixed, &model.rest_positions, &opts).expect("modes");
    (model, modes.vectors)
}

fn bench(c: &mut Criterion) {
    faer::set_global_parallelism(faer::Par::Seq);
    let (model, u) = bridge_modes(60);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::rayon(0)).expect("polynomial");
    let mut g = c.benchmark_group("reduced");
    for r in [10usize, 20, 30, 40, 60] {
        let forces = ReducedForces::new(&poly, r).expect("forces");
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let q: Vec<f64> = (0..r).map(|i| 0.01 * (i as f64 + 1.0).sin()).collect();
        let mut scratch = forces.scratch();
        g.bench_with_input(BenchmarkId::new("eval", r), &r, |b, _| {
            b.iter(|| forces.evaluate(&q, &mut f, &mut k, &mut scratch))
        });
        let params = ReducedParams {
            newmark: NewmarkParams::average_acceleration(1e-3),
            damping_stiffness: 0.01,
            newton_iterations: 1,
            ..ReducedParams::default()
        };
        let mut sim = ReducedNewmark::new(forces, params);
        let mut step = 0usize;
        let mut fext = vec![0.0; r];
        g.bench_with_input(BenchmarkId::new("step", r), &r, |b, _| {
            b.iter(|| {
                // A slowly varying load keeps the state away from rest.
                step += 1;
                fext[0] = 100.0 * ((step as f64) * 1e-3).sin();
                sim.step(&fext)
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("reduced/precompute");
    g.sample_size(10);
    for r in [30usize, 60] {
        let ur = u.columns(0, r).into_owned();
        g.bench_with_input(BenchmarkId::from_parameter(r), &r, |b, _| {
            b.iter(|| reduced_polynomial(&model, &ur, faer::Par::rayon(0)).expect("polynomial"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
