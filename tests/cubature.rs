//! Optimized cubature (An, Kim and James 2008) on the StVK bridge split into tets
//! (10,416 tets, 3,923 vertices, the 44 vertices of `_enlarged.bou` fixed) in a basis of
//! r = 20 mass-orthonormal linear modes: held-out accuracy against the exact reduced
//! force and the cubic polynomial, the stiffness against finite differences, the
//! all-tets identity, a reduced Newmark run against the polynomial's, and no allocation
//! in the step.

#[path = "common/alloc.rs"]
mod alloc;

use std::sync::OnceLock;
use std::time::Instant;

use alloc::{allocations, Counting};
use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams, StepEvent};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw, StvkMaterial, TetKernel};
use haptics::mesh::{bou::read_bou, veg::read_veg, voxelize::hex_to_tets};
use haptics::reduction::cubature::{
    exact_reduced_force, relative_error, train_cubature, CubatureForces, CubatureOptions,
    CubaturePrecision, CubatureReport, PoseSampler,
};
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::modes::{linear_modes, ModesOptions};
use haptics::reduction::{polynomial::CubicPolynomial, precompute::reduced_polynomial};
use nalgebra::{DMatrix, DVector};
use rand::SeedableRng;

#[global_allocator]
static GLOBAL: Counting = Counting;

const R: usize = 20;

struct Bridge {
    kernel: TetKernel,
    material: StvkMaterial,
    basis: DMatrix<f64>,
    poly: CubicPolynomial,
    cubature: CubatureForces<StvkMaterial>,
    report: CubatureReport,
    opts: CubatureOptions,
}

/// The tet bridge, its first R linear modes, the polynomial and a trained cubature, built
/// once for all tests of this file.
fn bridge() -> &'static Bridge {
    static B: OnceLock<Bridge> = OnceLock::new();
    B.get_or_init(|| {
        let t = Instant::now();
        let dir = haptics::assets::model("simpleBridge");
        let hex = read_veg(&dir.join("simpleBridge_resol92-b1.155_enlarged.veg")).unwrap();
        let fixed_v = read_bou(
            &dir.join("simpleBridge_resol92-b1.155_enlarged.bou"),
            Some(hex.vertices.len()),
        )
        .unwrap();
        let mesh = hex_to_tets(&hex);
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let mut fixed = vec![false; model.num_dofs()];
        for v in fixed_v {
            fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
        }
        let mut k = model.new_matrix();
        model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
        let m = model.mass_matrix(MassKind::Consistent);
        let opts = ModesOptions {
            count: R,
            unconstrained: false,
            tolerance: 1e-10,
        };
        let basis = linear_modes(&k, &m, &fixed, &model.rest_positions, &opts)
            .unwrap()
            .vectors;
        let (poly, _) = reduced_polynomial(&model, &basis, faer::Par::rayon(0)).unwrap();
        let kernel = TetKernel::new(&mesh).unwrap();
        let material = StvkMaterial::from_mesh(&mesh);
        eprintln!("bridge, modes and polynomial: {:.1} s", t.elapsed().as_secs_f64());
        let opts = CubatureOptions::default();
        let (cubature, report) = train_cubature(&kernel, material.clone(), &basis, &opts).unwrap();
        eprintln!(
            "cubature r = {R}: {} points, {} iterations, training {:?}, held out {:?}, data {:.1} s, selection {:.1} s",
            report.points,
            report.iterations,
            report.training,
            report.held_out,
            report.data_seconds,
            report.selection_seconds
        );
        Bridge {
            kernel,
            material,
            basis,
            poly,
            cubature,
            report,
            opts,
        }
    })
}

/// Held-out poses from a seed the training never used.
fn held_out_poses(b: &Bridge, count: usize, seed: u64) -> Vec<Vec<f64>> {
    let sampler = PoseSampler::new(&b.kernel, &b.material, &b.basis, &b.opts);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| sampler.sample(&b.basis, &mut rng))
        .collect()
}

#[test]
fn cubature_reproduces_reduced_forces_on_held_out_poses() {
    let b = bridge();
    assert!(b.report.training.rms <= b.opts.tolerance);
    let poly = ReducedForces::new(&b.poly, R).unwrap();
    let mut ps = poly.scratch();
    let mut cs = b.cubature.scratch();
    let (mut fc, mut fp, mut k) = (vec![0.0; R], vec![0.0; R], vec![0.0; R * R]);
    let (mut errs_exact, mut errs_poly) = (Vec::new(), Vec::new());
    for q in held_out_poses(b, 40, 12345) {
        let exact = exact_reduced_force(&b.kernel, &b.material, &b.basis, &q);
        b.cubature.evaluate_force(&q, &mut fc, &mut cs);
        poly.evaluate(&q, &mut fp, &mut k, &mut ps);
        // The polynomial is exact for StVK: it equals the projected full force.
        assert!(relative_error(&fp, &exact) < 1e-9);
        errs_exact.push(relative_error(&fc, &exact));
        errs_poly.push(relative_error(&fc, &fp));
    }
    let mean = errs_exact.iter().sum::<f64>() / errs_exact.len() as f64;
    let max = errs_exact.iter().cloned().fold(0.0, f64::max);
    let mean_poly = errs_poly.iter().sum::<f64>() / errs_poly.len() as f64;
    eprintln!(
        "{} points; held out: mean {mean:.4}, max {max:.4} (against the polynomial: mean {mean_poly:.4})",
        b.cubature.num_points()
    );
    // Trained to 2% RMS relative error on its poses (measured 1.8% mean, 4.7% worst on
    // held-out ones). An et al. report errors of a few percent; stated tolerance: 4% mean
    // and 10% for the worst of 40 held-out poses.
    assert!(mean < 0.04, "mean held-out error {mean}");
    assert!(max < 0.10, "worst held-out error {max}");
    assert!((mean - mean_poly).abs() < 1e-6);
    // Far fewer points than tets.
    assert!(b.cubature.num_points() < b.kernel.num_elements() / 20);
}

#[test]
fn cubature_stiffness_is_the_derivative_of_its_force() {
    let b = bridge();
    let q = held_out_poses(b, 1, 4242).remove(0);
    // The derivative identity in f64 storage; the default f32 storage (its stiffness
    // summed in f32, 1e-6 relative rounding) is compared with it below.
    let mut c64 = b.cubature.clone();
    c64.set_precision(CubaturePrecision::F64);
    let mut cs = c64.scratch();
    let (mut f, mut k) = (vec![0.0; R], vec![0.0; R * R]);
    c64.evaluate(&q, &mut f, &mut k, &mut cs);
    let kmax = k.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let qmax = q.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let h = 1e-5 * qmax;
    let (mut fp, mut fm) = (vec![0.0; R], vec![0.0; R]);
    let mut worst: f64 = 0.0;
    for j in 0..R {
        let (mut qp, mut qm) = (q.clone(), q.clone());
        qp[j] += h;
        qm[j] -= h;
        c64.evaluate_force(&qp, &mut fp, &mut cs);
        c64.evaluate_force(&qm, &mut fm, &mut cs);
        for i in 0..R {
            let fd = (fp[i] - fm[i]) / (2.0 * h);
            worst = worst.max((fd - k[j * R + i]).abs() / kmax);
        }
    }
    eprintln!("stiffness against central differences: {worst:e} of the largest entry");
    // StVK forces are cubic in q: the central difference has an O(h^2) truncation
    // (1e-10 relative at h = 1e-5 |q|) and a rounding of about 1e-16 |f| / h; 1e-7 allowed.
    assert!(worst < 1e-7, "{worst:e}");
    // The default f32 storage: the model moves by G's rounding (6e-8 relative) and the
    // stiffness sums over the points round at about 1e-6; 1e-5 allowed. Both symmetric.
    assert_eq!(b.cubature.precision(), CubaturePrecision::F32);
    let (mut f32_force, mut k32) = (vec![0.0; R], vec![0.0; R * R]);
    b.cubature
        .evaluate(&q, &mut f32_force, &mut k32, &mut b.cubature.scratch());
    let e = relative_error(&k32, &k);
    eprintln!(
        "f32 storage: stiffness {e:e}, force {:e} from f64",
        relative_error(&f32_force, &f)
    );
    assert!(e < 1e-5, "f32 stiffness {e:e}");
    assert!(relative_error(&f32_force, &f) < 1e-6);
    for kk in [&k, &k32] {
        for j in 0..R {
            for i in 0..R {
                assert_eq!(kk[j * R + i], kk[i * R + j]);
            }
        }
    }
}

#[test]
fn all_tets_with_unit_weights_equal_the_exact_reduced_forces() {
    let b = bridge();
    let poly = ReducedForces::new(&b.poly, R).unwrap();
    let q = held_out_poses(b, 1, 99).remove(0);
    let (mut fp, mut kp) = (vec![0.0; R], vec![0.0; R * R]);
    poly.evaluate(&q, &mut fp, &mut kp, &mut poly.scratch());
    let exact = exact_reduced_force(&b.kernel, &b.material, &b.basis, &q);
    let all: Vec<usize> = (0..b.kernel.num_elements()).collect();
    let ones = vec![1.0; all.len()];
    for exact_linear in [false, true] {
        let cub = CubatureForces::from_points(
            &b.kernel,
            &b.basis,
            b.material.clone(),
            &all,
            &ones,
            exact_linear,
        )
        .unwrap();
        // An identity of the algebra: f64 storage (f32 rounds G by 6e-8).
        let mut cub = cub;
        cub.set_precision(CubaturePrecision::F64);
        let (mut f, mut k) = (vec![0.0; R], vec![0.0; R * R]);
        cub.evaluate(&q, &mut f, &mut k, &mut cub.scratch());
        let ef = relative_error(&f, &exact);
        let ek = relative_error(&k, &kp);
        eprintln!("all tets (exact linear part: {exact_linear}): force {ef:e}, stiffness {ek:e}");
        // Identities: the same sums over 10,416 tets in another order, against the
        // projected full force and the polynomial's stiffness (itself exact to 1e-10).
        assert!(ef < 1e-11, "force {ef:e}");
        assert!(ek < 1e-10, "stiffness {ek:e}");
    }
}

/// The diagonal of the rest bounding box (m).
fn diagonal(b: &Bridge) -> f64 {
    let (mut lo, mut hi) = (
        nalgebra::Vector3::repeat(f64::INFINITY),
        nalgebra::Vector3::repeat(f64::NEG_INFINITY),
    );
    for p in &b.kernel.rest {
        lo = lo.inf(&p.coords);
        hi = hi.sup(&p.coords);
    }
    (hi - lo).norm()
}

/// The reduced load of a downward push on the middle of the deck (as in
/// tests/accuracy_bridge.rs), `total` newtons spread over the vertices within 0.8 m.
fn deck_push(b: &Bridge, total: f64) -> Vec<f64> {
    let rest = &b.kernel.rest;
    let top = rest
        .iter()
        .filter(|p| p.x.abs() < 0.3 && p.z.abs() < 0.3)
        .map(|p| p.y)
        .fold(f64::NEG_INFINITY, f64::max);
    let centre = nalgebra::Point3::new(0.0, top, 0.0);
    let load: Vec<usize> = (0..rest.len())
        .filter(|&v| (rest[v] - centre).norm() < 0.8)
        .collect();
    let mut f = DVector::zeros(b.kernel.num_dofs());
    for &v in &load {
        f[3 * v + 1] = total / load.len() as f64;
    }
    (b.basis.transpose() * f).as_slice().to_vec()
}

#[test]
fn reduced_newmark_with_cubature_tracks_the_polynomial() {
    let b = bridge();
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        damping_stiffness: 0.01,
        ..ReducedParams::default()
    };
    let mut cub = ReducedNewmark::new(b.cubature.clone(), params);
    let mut poly = ReducedNewmark::new(ReducedForces::new(&b.poly, R).unwrap(), params);
    // The same cubature with its stiffness refreshed one slice of eight per step (the
    // muscle scene's default): the same forces, a lagged Newton matrix.
    let mut sliced_forces = b.cubature.clone();
    sliced_forces.set_stiffness_slices(8);
    let mut sliced = ReducedNewmark::new(sliced_forces, params);
    let mut lag: f64 = 0.0;
    let push = deck_push(b, -2.5e5);
    let zero = vec![0.0; R];
    let peak = |q: &[f64]| {
        let u = &b.basis * DVector::from_column_slice(q);
        u.as_slice()
            .chunks_exact(3)
            .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
            .fold(0.0, f64::max)
    };
    let (mut diff, mut scale, mut largest): (f64, f64, f64) = (0.0, 0.0, 0.0);
    for step in 0..600 {
        // Held for 0.2 s, then released.
        let f = if step < 200 { &push } else { &zero };
        assert_eq!(cub.step(f), StepEvent::Ok);
        assert_eq!(poly.step(f), StepEvent::Ok);
        assert_eq!(sliced.step(f), StepEvent::Ok);
        let dl: f64 = cub
            .q
            .iter()
            .zip(&sliced.q)
            .map(|(a, b)| (a - b) * (a - b))
            .sum();
        lag = lag.max(dl.sqrt());
        let d: f64 = cub
            .q
            .iter()
            .zip(&poly.q)
            .map(|(a, b)| (a - b) * (a - b))
            .sum();
        let n: f64 = poly.q.iter().map(|a| a * a).sum();
        diff = diff.max(d.sqrt());
        scale = scale.max(n.sqrt());
        if step % 10 == 0 {
            largest = largest.max(peak(&poly.q));
        }
    }
    let rel = diff / scale;
    eprintln!(
        "cubature vs polynomial over 600 steps: largest |q_c - q_p| = {rel:.4} of the largest |q_p|; largest vertex displacement {largest:.3} m (training poses reach {:.3} m)",
        b.opts.displacement_fraction * diagonal(b)
    );
    // A large deformation inside the training range (5% of the rest diagonal).
    assert!(largest > 0.2 && largest < b.opts.displacement_fraction * diagonal(b));
    // The forces differ by about 2% on such poses; the trajectories by the same order.
    assert!(rel < 0.05, "{rel}");
    // The lagged stiffness changes only the Newton matrix: through the push and the
    // release (steps of the load, the fastest changes of this run) the trajectory
    // stays within 1% of the whole-stiffness one, of the largest |q| (measured 1.7e-3,
    // 2026-11-28; the cubature's own force error is 2%).
    let lag = lag / scale;
    eprintln!(
        "8 stiffness slices vs the whole stiffness: largest |q_s - q_c| = {lag:.2e} of the largest |q|"
    );
    assert!(lag < 0.01, "{lag}");
}

#[test]
fn cubature_step_allocates_nothing() {
    let b = bridge();
    let params = ReducedParams {
        damping_stiffness: 0.01,
        newton_iterations: 2,
        ..ReducedParams::default()
    };
    let mut sim = ReducedNewmark::new(b.cubature.clone(), params);
    let push = deck_push(b, -1.0e6);
    assert_eq!(sim.step(&push), StepEvent::Ok); // warm up (thread-local GEMM buffers)
    let before = allocations();
    for _ in 0..200 {
        assert_eq!(sim.step(&push), StepEvent::Ok);
    }
    let after = allocations();
    assert_eq!(
        after - before,
        0,
        "{} allocations in 200 steps",
        after - before
    );
    // With stiffness slices too (their buffers are in the scratch).
    let mut forces = b.cubature.clone();
    forces.set_stiffness_slices(4);
    let mut sim = ReducedNewmark::new(forces, params);
    assert_eq!(sim.step(&push), StepEvent::Ok);
    let before = allocations();
    for _ in 0..200 {
        assert_eq!(sim.step(&push), StepEvent::Ok);
    }
    assert_eq!(allocations() - before, 0, "sliced steps allocated");
}
