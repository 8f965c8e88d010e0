//! Optimized cubature (An, Kim and James 2008) against the cubic polynomial on the StVK
//! bridge split into tets (`hex_to_tets` of the 1736-voxel bridge: 10,416 tets, 3,923
//! vertices, the 44 vertices of `_enlarged.bou` fixed), in bases of r mass-orthonormal
//! linear modes, with the workload of `benches/reduced.rs` (implicit Newmark, dt = 1 ms,
//! one Newton iteration, stiffness damping 0.01, load f0 = 100 sin(1e-3 step)). Single
//! thread. Training (default [`CubatureOptions`]) runs before the timed loops, and its
//! points are cached in `target/bench-cache`, as is the basis.
//!
//! - `cubature/eval/r`: cubature force plus stiffness at a held-out pose.
//! - `cubature/step/r`: one reduced Newmark step with cubature forces.
//! - `cubature/step-sliced/r`: the same step with 8 stiffness slices
//!   ([`CubatureForces::evaluate_step`]): the exact force every step, the Newton matrix's
//!   nonlinear part refreshed an eighth of the points at a time. Printed before it: the
//!   largest distance between its trajectory and the whole-stiffness one over 2000 steps.
//! - `cubature/polynomial-step/r`: the same step with the cubic polynomial. At r = 100 its
//!   precompute takes about a minute on both cores and 1.8 GB (skip it with
//!   `CUBATURE_BENCH_POLY100=0`); polynomials are cached in `target/bench-cache` too.
//!
//! `CUBATURE_BENCH_R=20,60` limits the basis sizes; `CUBATURE_BENCH_TOL=0.03` sets the
//! training tolerance (default 0.02). Printed before the timings: the
//! number of points, the training residual, and the held-out error of the cubature
//! force against the exact reduced force (the projected full force, which the StVK
//! polynomial equals).

mod common;

use std::io::Write;
use std::path::PathBuf;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw, StvkMaterial, TetKernel};
use haptics::mesh::{bou::read_bou, veg::read_veg, voxelize::hex_to_tets};
use haptics::reduction::cubature::{
    exact_reduced_force, relative_error, train_cubature, CubatureForces, CubatureOptions, FitError,
    PoseSampler,
};
use haptics::reduction::evaluator::{ReducedForces, ReducedInternalForces};
use haptics::reduction::modes::{linear_modes, ModesOptions};
use haptics::reduction::precompute::reduced_polynomial;
use haptics::reduction::vega::{read_cub, read_matrix, write_cub, write_matrix, Precision};
use nalgebra::DMatrix;
use rand::SeedableRng;

fn tet_bridge() -> (FemModel, TetKernel, StvkMaterial) {
    let dir = haptics::assets::model("simpleBridge");
    let hex = read_veg(&dir.join("simpleBridge_resol92-b1.155_enlarged.veg")).expect("bridge");
    let mesh = hex_to_tets(&hex);
    (
        FemModel::new(&mesh, MaterialLaw::StVK).expect("model"),
        TetKernel::new(&mesh).expect("kernel"),
        StvkMaterial::from_mesh(&mesh),
    )
}

/// The first `count` mass-orthonormal linear modes of the tet bridge (cached).
fn modes(model: &FemModel, count: usize) -> DMatrix<f64> {
    let path = common::cache_dir().join(format!("tet-bridge-modes-{count}.U"));
    if let Ok(u) = read_matrix(&path, Precision::F64) {
        return u;
    }
    let dir = haptics::assets::model("simpleBridge");
    let fixed_v = read_bou(
        &dir.join("simpleBridge_resol92-b1.155_enlarged.bou"),
        Some(model.num_vertices()),
    )
    .expect("bou");
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
    let u = common::timed(&format!("{count} linear modes"), || {
        linear_modes(&k, &m, &fixed, &model.rest_positions, &opts)
            .expect("modes")
            .vectors
    });
    write_matrix(&path, &u, Precision::F64).expect("cache the modes");
    u
}

/// The trained cubature for the first r modes, its points cached by r and options.
fn cubature(
    kernel: &TetKernel,
    material: &StvkMaterial,
    basis: &DMatrix<f64>,
    opts: &CubatureOptions,
) -> CubatureForces<StvkMaterial> {
    let r = basis.ncols();
    let key = format!("{opts:?}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
    let path: PathBuf =
        common::cache_dir().join(format!("tet-bridge-cubature-r{r}-{key:016x}.txt"));
    if let Ok(text) = std::fs::read_to_string(&path) {
        let (mut els, mut ws) = (Vec::new(), Vec::new());
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let mut it = line.split_whitespace();
            if let (Some(e), Some(w)) = (it.next(), it.next()) {
                els.push(e.parse::<usize>().expect("element"));
                ws.push(w.parse::<f64>().expect("weight"));
            }
        }
        eprintln!("  r = {r}: cached cubature, {} points", els.len());
        return CubatureForces::from_points(
            kernel,
            basis,
            material.clone(),
            &els,
            &ws,
            opts.exact_linear,
        )
        .expect("cubature");
    }
    let (cub, report) = common::timed(&format!("cubature training r = {r}"), || {
        train_cubature(kernel, material.clone(), basis, opts).expect("training")
    });
    eprintln!(
        "  r = {r}: {} points in {} iterations, training residual {:.4} (rms), data {:.1} s, selection {:.1} s",
        report.points, report.iterations, report.training.rms, report.data_seconds, report.selection_seconds
    );
    let mut out = std::fs::File::create(&path).expect("cache file");
    writeln!(
        out,
        "# r = {r}, {} points, training rms {}, held-out mean {} max {}",
        report.points, report.training.rms, report.held_out.mean, report.held_out.max
    )
    .unwrap();
    for (e, w) in cub.elements().iter().zip(cub.weights()) {
        writeln!(out, "{e} {w:e}").unwrap();
    }
    cub
}

/// The stiffness slices of `cubature/step-sliced/r`, the muscle scene's default.
const SLICES: usize = haptics::scene::format::DEFAULT_STIFFNESS_SLICES;

fn params() -> ReducedParams {
    ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        damping_stiffness: 0.01,
        newton_iterations: 1,
        ..ReducedParams::default()
    }
}

/// The bench's load on the first coordinate at step `i`: 100 sin(1e-3 i).
fn load(i: usize) -> f64 {
    100.0 * ((i as f64) * 1e-3).sin()
}

/// Benches `cubature/{name}/r`: one reduced Newmark step with `forces` under [`load`].
fn bench_steps<F: ReducedInternalForces>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    forces: F,
) {
    let r = forces.r();
    let mut sim = ReducedNewmark::new(forces, params());
    let (mut step, mut fext) = (0usize, vec![0.0; r]);
    g.bench_with_input(BenchmarkId::new(name, r), &r, |b, _| {
        b.iter(|| {
            step += 1;
            fext[0] = load(step);
            sim.step(&fext)
        })
    });
}

fn bench(c: &mut Criterion) {
    faer::set_global_parallelism(faer::Par::Seq);
    let rs: Vec<usize> = std::env::var("CUBATURE_BENCH_R")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().parse().expect("r")).collect())
        .unwrap_or_else(|| vec![20, 60, 100]);
    let poly100 = std::env::var("CUBATURE_BENCH_POLY100").map_or(true, |v| v != "0");
    let (model, kernel, material) = tet_bridge();
    let rmax = *rs.iter().max().expect("some r");
    let u = modes(&model, rmax);
    let mut opts = CubatureOptions::default();
    if let Some(t) = std::env::var("CUBATURE_BENCH_TOL")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        opts.tolerance = t;
    }
    let mut g = c.benchmark_group("cubature");
    for &r in &rs {
        let basis = u.columns(0, r).into_owned();
        let cub = cubature(&kernel, &material, &basis, &opts);
        // Held-out poses (a seed the training never used): error against the exact
        // reduced force U^T R(U q), which the StVK polynomial equals.
        let sampler = PoseSampler::new(&kernel, &material, &basis, &opts);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(777);
        let poses: Vec<Vec<f64>> = (0..30).map(|_| sampler.sample(&basis, &mut rng)).collect();
        let mut sc = cub.scratch();
        let mut f = vec![0.0; r];
        let errs: Vec<f64> = poses
            .iter()
            .map(|q| {
                cub.evaluate_force(q, &mut f, &mut sc);
                relative_error(&f, &exact_reduced_force(&kernel, &material, &basis, q))
            })
            .collect();
        let e = FitError::from_errors(&errs);
        eprintln!(
            "  r = {r}: {} cubature points; held-out force error vs exact: mean {:.4}, rms {:.4}, max {:.4}",
            cub.num_points(),
            e.mean,
            e.rms,
            e.max
        );
        let poly = if r <= 60 || poly100 {
            let path = common::cache_dir().join(format!("tet-bridge-poly-r{r}.cub"));
            let p = match read_cub(&path) {
                Ok(p) => p,
                Err(_) => {
                    let (p, t) = common::timed(&format!("polynomial r = {r}"), || {
                        reduced_polynomial(&model, &basis, faer::Par::rayon(0)).expect("polynomial")
                    });
                    eprintln!("  polynomial precompute r = {r}: {:.1} s", t.total);
                    write_cub(&path, &p).expect("cache the polynomial");
                    p
                }
            };
            let forces = ReducedForces::new(&p, r).expect("forces");
            let mut ps = forces.scratch();
            let (mut fp, mut kp) = (vec![0.0; r], vec![0.0; r * r]);
            let perr: Vec<f64> = poses
                .iter()
                .map(|q| {
                    cub.evaluate_force(q, &mut f, &mut sc);
                    forces.evaluate(q, &mut fp, &mut kp, &mut ps);
                    relative_error(&f, &fp)
                })
                .collect();
            let e = FitError::from_errors(&perr);
            eprintln!(
                "  r = {r}: cubature vs polynomial on the same poses: mean {:.4}, max {:.4}",
                e.mean, e.max
            );
            Some(forces)
        } else {
            let nc = r * r * (r + 1) * (r + 2) / 6;
            eprintln!(
                "  r = {r}: polynomial skipped ({} cubic + {} quadratic coefficients; CUBATURE_BENCH_POLY100=0)",
                nc,
                r * r * (r + 1) / 2
            );
            None
        };
        let q = &poses[0];
        let (mut fo, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        g.bench_with_input(BenchmarkId::new("eval", r), &r, |b, _| {
            b.iter(|| cub.evaluate(q, &mut fo, &mut k, &mut sc))
        });
        bench_steps(&mut g, "step", cub.clone());
        // The same step with the stiffness slices (`CubatureForces::evaluate_step`): the
        // exact force every step, the Newton matrix's nonlinear part refreshed one slice
        // of the points at a time. Printed first: how far its trajectory strays from the
        // whole-stiffness one over two seconds of the bench's load.
        let mut sliced = cub.clone();
        sliced.set_stiffness_slices(SLICES);
        let (mut a, mut b) = (
            ReducedNewmark::new(cub.clone(), params()),
            ReducedNewmark::new(sliced.clone(), params()),
        );
        let (mut worst, mut peak) = (0.0f64, 0.0f64);
        let mut fext = vec![0.0; r];
        for i in 1..=2000 {
            fext[0] = load(i);
            a.step(&fext);
            b.step(&fext);
            let d =
                a.q.iter()
                    .zip(&b.q)
                    .map(|(x, y)| (x - y).powi(2))
                    .sum::<f64>();
            worst = worst.max(d.sqrt());
            peak = peak.max(a.q.iter().map(|x| x * x).sum::<f64>().sqrt());
        }
        eprintln!(
            "  r = {r}: {SLICES} stiffness slices, 2000 steps: max |q_sliced - q_whole| = {:.2e} of max |q| = {:.3e} ({:.2e} relative)",
            worst,
            peak,
            worst / peak
        );
        bench_steps(&mut g, "step-sliced", sliced);
        if let Some(forces) = poly {
            bench_steps(&mut g, "polynomial-step", forces);
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
