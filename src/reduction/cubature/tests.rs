use super::kernels::{lower_product, LowerBlock, Real};
use super::*;
use crate::fem::{StvkMaterial, TetMaterial};
use crate::mesh::{box_tet_mesh, volume::Material};
use crate::reduction::evaluator::ReducedInternalForces;
use haptics_devices::rng::SplitMix64;
use nalgebra::{DVector, Matrix3};
use nalgebra::{Point3, Vector3};

/// A uniform number in [-0.5, 0.5).
fn centred(rng: &mut SplitMix64) -> f64 {
    rng.next_f64() - 0.5
}

/// Checks the KKT conditions of NNLS: x >= 0, w = A^T (b - A x) <= tol, and
/// w_j = 0 where x_j > 0.
fn assert_kkt(a: &DMatrix<f64>, b: &DVector<f64>, x: &DVector<f64>) {
    let w = a.transpose() * (b - a * x);
    let scale = (a.transpose() * b).amax().max(1e-300);
    for j in 0..x.len() {
        assert!(x[j] >= 0.0, "x[{j}] = {}", x[j]);
        assert!(w[j] <= 1e-9 * scale, "w[{j}] = {} (x = {})", w[j], x[j]);
        if x[j] > 0.0 {
            assert!(
                w[j].abs() <= 1e-9 * scale,
                "w[{j}] = {} at x = {}",
                w[j],
                x[j]
            );
        }
    }
}

/// The NNLS optimum by enumerating every passive set (unconstrained least squares
/// on the subset, kept when feasible).
fn brute_force(a: &DMatrix<f64>, b: &DVector<f64>) -> (DVector<f64>, f64) {
    let n = a.ncols();
    let mut best = (DVector::zeros(n), b.norm());
    for mask in 1u32..(1 << n) {
        let idx: Vec<usize> = (0..n).filter(|j| mask & (1 << j) != 0).collect();
        let sub = a.select_columns(&idx);
        let Some(s) = (sub.transpose() * &sub)
            .cholesky()
            .map(|ch| ch.solve(&(sub.transpose() * b)))
        else {
            continue;
        };
        if s.iter().any(|&v| v < 0.0) {
            continue;
        }
        let mut x = DVector::zeros(n);
        for (k, &j) in idx.iter().enumerate() {
            x[j] = s[k];
        }
        let res = (a * &x - b).norm();
        if res < best.1 {
            best = (x, res);
        }
    }
    best
}

#[test]
fn nnls_satisfies_kkt_and_matches_brute_force() {
    let mut rng = SplitMix64::new(7);
    for trial in 0..40 {
        let (m, n) = (12 + trial % 5, 1 + trial % 8);
        let a = DMatrix::from_fn(m, n, |_, _| centred(&mut rng));
        let b = DVector::from_fn(m, |_, _| centred(&mut rng));
        let x = nnls(&a, &b);
        assert_kkt(&a, &b, &x);
        let (xb, rb) = brute_force(&a, &b);
        let res = (&a * &x - &b).norm();
        assert!(
            (res - rb).abs() <= 1e-10 * (1.0 + rb),
            "trial {trial}: {res} vs {rb}"
        );
        assert!((&x - &xb).amax() <= 1e-8, "trial {trial}: {x} vs {xb}");
    }
}

#[test]
fn nnls_warm_start_and_degenerate_cases() {
    // Underdetermined (more columns than rows) with duplicated columns.
    let mut rng = SplitMix64::new(11);
    let mut a = DMatrix::from_fn(6, 10, |_, _| centred(&mut rng));
    let c0 = a.column(0).clone_owned();
    a.set_column(5, &c0);
    let b = DVector::from_fn(6, |_, _| centred(&mut rng));
    let x = nnls(&a, &b);
    assert_kkt(&a, &b, &x);
    // A warm start from any non-negative vector reaches a KKT point too.
    let g = a.transpose() * &a;
    let c = a.transpose() * &b;
    let mut xw = DVector::from_fn(10, |i, _| (i % 3) as f64 * 0.5);
    nnls_gram(&g, &c, &mut xw);
    assert_kkt(&a, &b, &xw);
    assert!(((&a * &xw - &b).norm() - (&a * &x - &b).norm()).abs() < 1e-10);
    // b in the negative cone: x = 0.
    let a = DMatrix::from_row_slice(3, 2, &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    let b = DVector::from_vec(vec![-1.0, -2.0, -1.0]);
    assert_eq!(nnls(&a, &b), DVector::zeros(2));
}

fn block() -> (TetKernel, StvkMaterial, DMatrix<f64>) {
    let mesh = box_tet_mesh(
        Vector3::new(0.04, 0.01, 0.012),
        [4, 2, 2],
        Point3::origin(),
        Material::new("m", 1000.0, 1.0e5, 0.4),
    );
    let kernel = TetKernel::new(&mesh).unwrap();
    let mat = StvkMaterial::from_mesh(&mesh);
    // A smooth random basis, zero at x = 0 (clamped end).
    let mut rng = SplitMix64::new(3);
    let r = 5;
    let coef: Vec<f64> = (0..r * 9).map(|_| centred(&mut rng)).collect();
    let basis = DMatrix::from_fn(kernel.num_dofs(), r, |i, j| {
        let p = kernel.rest[i / 3];
        let s = p.x / 0.04;
        let k = 9 * j + 3 * (i % 3);
        s * (coef[k] + coef[k + 1] * s + coef[k + 2] * (p.y * 50.0 + p.z * 40.0))
    });
    (kernel, mat, basis)
}

#[test]
fn all_elements_with_unit_weights_is_the_exact_reduced_force() {
    let (kernel, mat, basis) = block();
    let r = basis.ncols();
    let all: Vec<usize> = (0..kernel.num_elements()).collect();
    let ones = vec![1.0; all.len()];
    for exact_linear in [false, true] {
        let cub =
            CubatureForces::from_points(&kernel, &basis, mat.clone(), &all, &ones, exact_linear)
                .unwrap();
        // The identity is algebraic: f64 storage (f32 rounds G by 6e-8).
        let mut cub = cub;
        cub.set_precision(CubaturePrecision::F64);
        let q: Vec<f64> = (0..r).map(|i| 3e-3 * (i as f64 + 0.5).sin()).collect();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        cub.evaluate(&q, &mut f, &mut k, &mut cub.scratch());
        let exact = exact_reduced_force(&kernel, &mat, &basis, &q);
        // Same sums in another order (and, with the affine part split off, a
        // cancellation of the linear terms): 1e-12 relative.
        assert!(relative_error(&f, &exact) < 1e-12, "{f:?} vs {exact:?}");
        let u = &basis * DVector::from_column_slice(&q);
        let mut kf = kernel.new_matrix();
        kernel.tangent_stiffness(&mat, u.as_slice(), &mut kf);
        let kr = basis.transpose() * kf.to_dense() * &basis;
        let km = DMatrix::from_column_slice(r, r, &k);
        assert!((&km - &kr).norm() <= 1e-12 * kr.norm(), "{km} vs {kr}");
        // The energy is the full strain energy (zero at rest for StVK).
        let e = cub.strain_energy(&q);
        let ef = kernel.strain_energy(&mat, u.as_slice());
        assert!((e - ef).abs() <= 1e-11 * ef.abs(), "{e} vs {ef}");
        // Every compilation this CPU runs (portable, AVX2, AVX-512), in blocks of
        // 10 points too, gives the same bits: every sum is the same chain of fused
        // multiply-adds (the force-only and energy paths compared with this
        // build's default compilation).
        let mut force_only = vec![0.0; r];
        cub.evaluate_force(&q, &mut force_only, &mut cub.scratch());
        for kernels in [SimdLevel::Portable, SimdLevel::Avx2, SimdLevel::Avx512] {
            let mut c2 = cub.clone();
            c2.use_kernels(kernels);
            c2.block_bytes = 10 * 9 * 5 * 8;
            let (mut f2, mut k2) = (vec![0.0; r], vec![0.0; r * r]);
            c2.evaluate(&q, &mut f2, &mut k2, &mut c2.scratch());
            assert_eq!(f2, f, "{:?}", c2.kernels());
            assert_eq!(k2, k, "{:?}", c2.kernels());
            // The force-only and energy paths too.
            let mut f3 = vec![0.0; r];
            c2.evaluate_force(&q, &mut f3, &mut c2.scratch());
            assert_eq!(f3, force_only, "force only, {:?}", c2.kernels());
            assert_eq!(c2.strain_energy(&q), e, "energy, {:?}", c2.kernels());
        }
        // f32 gradients: the model moves by the rounding of G (6e-8 relative, 1e-6
        // allowed on the force), the stiffness by f32 sums over 96 tets (1e-5); the
        // force-only path uses the same rounded G. Small blocks of points (7 and 13
        // per block) and every compilation give the same bits.
        let mut first_f32: Option<(Vec<f64>, Vec<f64>)> = None;
        for (kernels, block_bytes) in [
            (SimdLevel::Portable, 7 * 9 * 5 * 4),
            (SimdLevel::Avx2, 13 * 9 * 5 * 4),
            (SimdLevel::Avx512, 13 * 9 * 5 * 4),
            (SimdLevel::Avx512, BLOCK_BYTES),
        ] {
            let mut c3 = cub.clone();
            c3.use_kernels(kernels);
            c3.block_bytes = block_bytes;
            c3.set_precision(CubaturePrecision::F32);
            assert_eq!(c3.precision(), CubaturePrecision::F32);
            let (mut f3, mut k3) = (vec![0.0; r], vec![0.0; r * r]);
            c3.evaluate(&q, &mut f3, &mut k3, &mut c3.scratch());
            let ef = relative_error(&f3, &f);
            assert!(ef < 1e-6 && ef > 0.0, "f32 force error {ef:e}");
            let e = relative_error(&k3, &k);
            assert!(e < 1e-5 && e > 0.0, "f32 stiffness error {e:e}");
            let mut f4 = vec![0.0; r];
            c3.evaluate_force(&q, &mut f4, &mut c3.scratch());
            assert!(relative_error(&f4, &f3) < 1e-13);
            match &first_f32 {
                None => first_f32 = Some((f3, k3)),
                Some((f0, k0)) => assert!(*f0 == f3 && *k0 == k3),
            }
        }
    }
    assert!(!CubatureForces::all_elements(&kernel, &basis, mat)
        .unwrap()
        .exact_linear());
}

#[test]
fn stiffness_slices_lag_the_stiffness_but_never_the_force() {
    let (kernel, mat, basis) = block();
    let r = basis.ncols();
    let all: Vec<usize> = (0..kernel.num_elements()).collect();
    let ones = vec![1.0; all.len()];
    let exact = CubatureForces::from_points(&kernel, &basis, mat, &all, &ones, true).unwrap();
    let q0: Vec<f64> = (0..r).map(|i| 3e-3 * (i as f64 + 0.5).sin()).collect();
    let q1: Vec<f64> = (0..r).map(|i| 6e-3 * (i as f64 + 1.5).cos()).collect();
    let eval = |q: &[f64]| {
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        exact.evaluate(q, &mut f, &mut k, &mut exact.scratch());
        (f, k)
    };
    let (f0, k0) = eval(&q0);
    let (f1, k1) = eval(&q1);
    let slices = 4;
    for kernels in [SimdLevel::Portable, SimdLevel::detect()] {
        let mut cub = exact.clone();
        cub.use_kernels(kernels);
        cub.set_stiffness_slices(slices);
        assert_eq!(cub.stiffness_slices(), slices);
        let mut sc = cub.scratch();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        // The first step refreshes every slice: the stiffness at q0, up to the f32
        // sums' order (the slices' partial sums added at the end: 1e-6).
        cub.evaluate_step(&q0, &mut f, &mut k, &mut sc);
        assert!(relative_error(&f, &f0) < 1e-13);
        assert!(
            relative_error(&k, &k0) < 1e-6,
            "{:e}",
            relative_error(&k, &k0)
        );
        // Moved to q1: the force is exact at once (the stress-only path: 1e-13);
        // the stiffness reaches K(q1) one slice per step, exactly after `slices`
        // steps, and is lagged before.
        let mut errors = Vec::new();
        for _ in 0..slices {
            cub.evaluate_step(&q1, &mut f, &mut k, &mut sc);
            assert!(relative_error(&f, &f1) < 1e-13);
            errors.push(relative_error(&k, &k1));
        }
        assert!(errors[0] > 1e-3, "the stiffness is lagged: {errors:?}");
        assert!(errors.windows(2).all(|w| w[1] < w[0]), "{errors:?}");
        assert!(errors[slices - 1] < 1e-6, "{errors:?}");
        // A restart refreshes every slice at the next step.
        cub.evaluate_step(&q0, &mut f, &mut k, &mut sc);
        assert!(relative_error(&k, &k0) > 1e-3);
        sc.restart();
        cub.evaluate_step(&q0, &mut f, &mut k, &mut sc);
        assert!(relative_error(&k, &k0) < 1e-6);
        // A scratch from before the slices were set gives the exact evaluation.
        let mut old = exact.scratch();
        let (mut f2, mut k2) = (vec![0.0; r], vec![0.0; r * r]);
        cub.evaluate_step(&q1, &mut f2, &mut k2, &mut old);
        let (mut f3, mut k3) = (vec![0.0; r], vec![0.0; r * r]);
        cub.evaluate(&q1, &mut f3, &mut k3, &mut old);
        assert_eq!((f2, k2), (f3, k3));
    }
    // Every compilation gives the same bits for the same sequence of steps.
    let run = |kernels| {
        let mut cub = exact.clone();
        cub.use_kernels(kernels);
        cub.set_stiffness_slices(3);
        let mut sc = cub.scratch();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let mut out = Vec::new();
        for step in 0..7 {
            let q: Vec<f64> = q0
                .iter()
                .zip(&q1)
                .map(|(a, b)| a + 0.1 * step as f64 * (b - a))
                .collect();
            cub.evaluate_step(&q, &mut f, &mut k, &mut sc);
            out.extend_from_slice(&f);
            out.extend_from_slice(&k);
        }
        out
    };
    let reference = run(SimdLevel::Portable);
    for kernels in [SimdLevel::Avx2, SimdLevel::Avx512] {
        assert_eq!(run(kernels), reference, "{kernels:?}");
    }
}

/// K (+)= G H^T entry by entry: one fused chain over the columns, in order.
#[allow(clippy::too_many_arguments)]
fn lower_product_reference<T: Real>(
    k: &mut [T],
    ldk: usize,
    g: &[T],
    h: &[T],
    r: usize,
    stride: usize,
    cols: usize,
    accumulate: bool,
) {
    for j in 0..r {
        for i in j..r {
            let mut v = if accumulate {
                k[j * ldk + i]
            } else {
                T::default()
            };
            for c in 0..cols {
                v = g[c * stride + i].mul_add(h[c * stride + j], v);
            }
            k[j * ldk + i] = v;
        }
    }
}

/// The generic tiles, and the explicit-register ones where the CPU has them.
fn check_lower_product<T: Real + std::fmt::Debug + PartialEq, const L: usize, const H: usize>(
    r: usize,
    stride: usize,
    cols: usize,
) {
    check_lower_product_with::<T, L, H, false>(r, stride, cols);
    let needed = if L == 2 * T::LANES {
        SimdLevel::Avx512
    } else {
        SimdLevel::Avx2
    };
    if SimdLevel::detect() >= needed {
        check_lower_product_with::<T, L, H, true>(r, stride, cols);
    }
}

fn check_lower_product_with<
    T: Real + std::fmt::Debug + PartialEq,
    const L: usize,
    const H: usize,
    const SIMD: bool,
>(
    r: usize,
    stride: usize,
    cols: usize,
) {
    let value = |i: usize| T::from_f64(((i * 7919 % 1013) as f64 / 1013.0 - 0.5) * 3.0);
    // Zero padding below row r, as the cubature stores it.
    let padded = |seed: usize| -> Vec<T> {
        (0..stride * cols)
            .map(|x| {
                if x % stride < r {
                    value(x + seed)
                } else {
                    T::default()
                }
            })
            .collect()
    };
    let (g, h) = (padded(1), padded(500));
    let ldk = stride;
    let k0: Vec<T> = (0..ldk * r).map(|x| value(x + 77)).collect();
    for accumulate in [false, true] {
        let mut want = k0.clone();
        lower_product_reference(&mut want, ldk, &g, &h, r, stride, cols, accumulate);
        let mut got = k0.clone();
        let whole = LowerBlock {
            g: &g,
            h: &h,
            r,
            stride,
            cols,
        };
        lower_product::<T, L, H, SIMD>(&mut got, ldk, &whole, accumulate);
        // Split in two blocks of columns, the second resuming the first's chains.
        let mut split = k0.clone();
        let first = LowerBlock { cols: 9, ..whole };
        lower_product::<T, L, H, SIMD>(&mut split, ldk, &first, accumulate);
        let second = LowerBlock {
            g: &g[9 * stride..],
            h: &h[9 * stride..],
            cols: cols - 9,
            ..whole
        };
        lower_product::<T, L, H, SIMD>(&mut split, ldk, &second, true);
        for j in 0..r {
            for i in j..r {
                let at = j * ldk + i;
                assert_eq!(
                    got[at], want[at],
                    "r {r} stride {stride} simd {SIMD} ({i}, {j})"
                );
                assert_eq!(split[at], want[at], "split, r {r} ({i}, {j})");
            }
        }
    }
}

#[test]
fn the_stiffness_product_is_the_same_chain_of_fused_sums_for_every_tiling() {
    // f64 storage is unpadded (scalar rows when r is not a multiple of the half
    // register); f32 is padded to whole 8-lane registers. Sizes cover every tile
    // shape and tail, both register widths (AVX2's and AVX-512's lane counts: the
    // arithmetic, not the instructions, is under test here), and, with 600 columns,
    // several chunks of columns.
    for r in 1..=21usize {
        let s32 = r.div_ceil(8) * 8;
        check_lower_product::<f64, 4, 2>(r, r, 23);
        check_lower_product::<f64, 8, 4>(r, r, 23);
        check_lower_product::<f32, 8, 4>(r, s32, 23);
        check_lower_product::<f32, 16, 8>(r, s32, 23);
    }
    check_lower_product::<f32, 8, 4>(100, 104, 600);
    check_lower_product::<f32, 16, 8>(100, 104, 600);
    check_lower_product::<f64, 4, 2>(60, 60, 600);
    check_lower_product::<f64, 8, 4>(60, 60, 600);
}

#[test]
fn stiffness_is_the_derivative_of_the_force() {
    let (kernel, mat, basis) = block();
    for exact_linear in [false, true] {
        check_stiffness_and_energy(&kernel, &mat, &basis, exact_linear);
    }
}

fn check_stiffness_and_energy(
    kernel: &TetKernel,
    mat: &StvkMaterial,
    basis: &DMatrix<f64>,
    exact_linear: bool,
) {
    let r = basis.ncols();
    let cub = CubatureForces::from_points(
        kernel,
        basis,
        mat.clone(),
        &[1, 7, 30, 55, 80],
        &[2.0, 0.5, 3.0, 1.0, 7.5],
        exact_linear,
    )
    .unwrap();
    let q: Vec<f64> = (0..r)
        .map(|i| 4e-3 * (i as f64 * 1.3 + 0.2).cos())
        .collect();
    let mut sc = cub.scratch();
    let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
    cub.evaluate(&q, &mut f, &mut k, &mut sc);
    let kmax = k.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let h = 1e-6;
    for j in 0..r {
        let (mut qp, mut qm) = (q.clone(), q.clone());
        qp[j] += h;
        qm[j] -= h;
        let (mut fp, mut fm) = (vec![0.0; r], vec![0.0; r]);
        cub.evaluate_force(&qp, &mut fp, &mut sc);
        cub.evaluate_force(&qm, &mut fm, &mut sc);
        for i in 0..r {
            let fd = (fp[i] - fm[i]) / (2.0 * h);
            // Central differences of a cubic: O(h^2) truncation, about 1e-9 relative.
            assert!(
                (fd - k[j * r + i]).abs() <= 1e-7 * kmax,
                "K[{i},{j}] {} vs {fd}",
                k[j * r + i]
            );
        }
        // The force is the gradient of the fitted energy.
        let fde = (cub.strain_energy(&qp) - cub.strain_energy(&qm)) / (2.0 * h);
        let fmax = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            (fde - f[j]).abs() <= 1e-6 * fmax,
            "f[{j}] {} vs {fde}",
            f[j]
        );
    }
}

/// A toy active material, affine in its activation alpha: StVK with its stress
/// scaled by (1 + gain alpha), plus a stress `pull` alpha along x that acts at rest
/// (W += pull alpha (F_00 - 1)), as a muscle's fibres do.
#[derive(Debug, Clone)]
struct Activated {
    stvk: StvkMaterial,
    alpha: f64,
    gain: f64,
    pull: f64,
}
impl Activated {
    fn scaled(stvk: StvkMaterial, alpha: f64) -> Self {
        Activated {
            stvk,
            alpha,
            gain: 2.0,
            pull: 0.0,
        }
    }
    fn pulling(stvk: StvkMaterial) -> Self {
        Activated {
            stvk,
            alpha: 0.0,
            gain: 0.0,
            pull: -2.0e3,
        }
    }
}
impl TetMaterial for Activated {
    fn energy_density(&self, e: usize, f: &Matrix3<f64>) -> f64 {
        (1.0 + self.gain * self.alpha) * self.stvk.energy_density(e, f)
            + self.alpha * self.pull * (f[(0, 0)] - 1.0)
    }
    fn first_pk(&self, e: usize, f: &Matrix3<f64>) -> Matrix3<f64> {
        let mut p = self.stvk.first_pk(e, f) * (1.0 + self.gain * self.alpha);
        p[(0, 0)] += self.alpha * self.pull;
        p
    }
    fn first_pk_differential(&self, e: usize, f: &Matrix3<f64>, df: &Matrix3<f64>) -> Matrix3<f64> {
        self.stvk.first_pk_differential(e, f, df) * (1.0 + self.gain * self.alpha)
    }
    fn set_activation(&mut self, alpha: f64) {
        self.alpha = alpha;
    }
    fn activation(&self) -> f64 {
        self.alpha
    }
}

#[test]
fn activation_is_a_run_time_input() {
    let (kernel, stvk, basis) = block();
    let r = basis.ncols();
    let mat = Activated::scaled(stvk, 0.3);
    let opts = CubatureOptions {
        training_poses: 40,
        held_out_poses: 20,
        tolerance: 0.01,
        candidates: 50,
        activation: Some((0.0, 1.0)),
        ..CubatureOptions::default()
    };
    let (mut cub, report) = train_cubature(&kernel, mat.clone(), &basis, &opts).unwrap();
    assert!(report.held_out.mean < 0.05, "{report:?}");
    let q: Vec<f64> = (0..r).map(|i| 2e-3 * (i as f64 + 1.0).cos()).collect();
    let mut sc = cub.scratch();
    let mut f = vec![0.0; r];
    let mut reference = mat;
    for alpha in [0.0, 0.5, 1.0] {
        cub.set_activation(alpha);
        reference.set_activation(alpha);
        cub.evaluate_force(&q, &mut f, &mut sc);
        let exact = exact_reduced_force(&kernel, &reference, &basis, &q);
        let err = relative_error(&f, &exact);
        assert!(err < 0.05, "alpha {alpha}: {err}");
        // Through the integrator's trait as well.
        let mut k = vec![0.0; r * r];
        let mut f2 = vec![0.0; r];
        ReducedInternalForces::set_activation(&mut cub, alpha);
        ReducedInternalForces::evaluate(&cub, &q, &mut f2, &mut k, &mut sc);
        assert!(relative_error(&f2, &f) < 1e-12);
    }
}

/// With no points the cubature is its exact affine part alone: for a material affine
/// in its activation it must be f(0) + K0 q at every activation, not at the one the
/// cubature was built with.
#[test]
fn exact_linear_part_follows_the_activation() {
    let (kernel, stvk, basis) = block();
    let r = basis.ncols();
    let mut cub = CubatureForces::from_points(
        &kernel,
        &basis,
        Activated::scaled(stvk, 0.3),
        &[],
        &[],
        true,
    )
    .unwrap();
    let mut reference =
        CubatureForces::all_elements(&kernel, &basis, cub.material().clone()).unwrap();
    // Both in f64: the claim is exactness, which f32 storage would blur at 1e-7.
    cub.set_precision(CubaturePrecision::F64);
    reference.set_precision(CubaturePrecision::F64);
    // A pose small enough that the quadratic remainder is below 1e-6 of the force
    // (strain ~1e-7).
    let q: Vec<f64> = (0..r).map(|i| 1e-9 * (i as f64 + 1.0).sin()).collect();
    let zero = vec![0.0; r];
    let (mut f, mut k, mut fx, mut kx) = (
        vec![0.0; r],
        vec![0.0; r * r],
        vec![0.0; r],
        vec![0.0; r * r],
    );
    let (mut sc, mut scx) = (cub.scratch(), reference.scratch());
    for alpha in [0.0, 0.3, 0.5, 1.0, 0.0] {
        cub.set_activation(alpha);
        reference.set_activation(alpha);
        cub.evaluate(&q, &mut f, &mut k, &mut sc);
        reference.evaluate(&q, &mut fx, &mut kx, &mut scx);
        assert!(relative_error(&f, &fx) < 1e-6, "alpha {alpha}: force");
        // The stiffness at rest is K0 itself: equal to rounding.
        reference.evaluate(&zero, &mut fx, &mut kx, &mut scx);
        assert!(relative_error(&k, &kx) < 1e-10, "alpha {alpha}: stiffness");
    }
}

/// The equilibrium correction on a material that contracts with its activation:
/// the cubature's force vanishes at exact integration's stable equilibria, the
/// force stays the gradient of the energy, and its own stable equilibria are
/// exact integration's.
#[test]
fn equilibrium_correction_makes_exact_equilibria_equilibria() {
    let (kernel, stvk, basis) = block();
    let r = basis.ncols();
    let mat = Activated::pulling(stvk);
    // Deliberately few points, so that the fit is visibly off before correction.
    let mut cub = CubatureForces::from_points(
        &kernel,
        &basis,
        mat.clone(),
        &[3, 20, 41],
        &[30.0, 20.0, 25.0],
        true,
    )
    .unwrap();
    let table = [0.0, 0.5, 1.0];
    let eq = exact_equilibria(&kernel, &basis, &mat, &table).unwrap();
    // The pull moves the equilibrium (else the test is vacuous).
    let size = |q: &[f64]| q.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(size(&eq[2].1) > 0.0);
    let mut sc = cub.scratch();
    let mut f = vec![0.0; r];
    cub.set_activation(1.0);
    cub.evaluate_force(&eq[2].1, &mut f, &mut sc);
    let before = size(&f);
    cub.correct_equilibria(&eq).unwrap();
    let mut exact = CubatureForces::all_elements(&kernel, &basis, mat.clone()).unwrap();
    let mut fx = vec![0.0; r];
    let mut sx = exact.scratch();
    exact.set_activation(1.0);
    exact.evaluate_force(&vec![0.0; r], &mut fx, &mut sx);
    let pull = size(&fx);
    assert!(before > 1e-6 * pull, "the uncorrected fit is already exact");
    for (a, q) in &eq {
        cub.set_activation(*a);
        cub.evaluate_force(q, &mut f, &mut sc);
        // Zero to rounding beside the pull.
        assert!(size(&f) <= 1e-12 * pull, "activation {a}: {}", size(&f));
    }
    // Between table entries the offset is interpolated; the force is still the
    // gradient of the energy (central differences, O(h^2) about 1e-9 relative).
    cub.set_activation(0.7);
    let q: Vec<f64> = (0..r).map(|i| 2e-3 * (i as f64 + 0.5).sin()).collect();
    cub.evaluate_force(&q, &mut f, &mut sc);
    let fmax = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let h = 1e-6;
    for j in 0..r {
        let (mut qp, mut qm) = (q.clone(), q.clone());
        qp[j] += h;
        qm[j] -= h;
        let fd = (cub.strain_energy(&qp) - cub.strain_energy(&qm)) / (2.0 * h);
        assert!((fd - f[j]).abs() <= 1e-6 * fmax, "f[{j}] {} vs {fd}", f[j]);
    }
    // The stable equilibria agree with stable_equilibria on the corrected cubature.
    let own = stable_equilibria(&mut cub, &table).unwrap();
    for ((_, a), (_, b)) in own.iter().zip(&eq) {
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        assert!(size(&d) <= 1e-8 * size(&eq[2].1));
    }
}

#[test]
fn training_on_a_block_reproduces_held_out_forces() {
    let (kernel, mat, basis) = block();
    let opts = CubatureOptions {
        training_poses: 40,
        held_out_poses: 20,
        tolerance: 0.01,
        candidates: 50,
        ..CubatureOptions::default()
    };
    let (cub, report) = train_cubature(&kernel, mat, &basis, &opts).unwrap();
    assert!(cub.num_points() > 0 && cub.num_points() < kernel.num_elements());
    assert!(report.training.rms <= 0.01, "{report:?}");
    assert!(cub.weights().iter().all(|&w| w > 0.0));
    // Held out: a few times the training error.
    assert!(report.held_out.mean < 0.05, "{report:?}");
    let last = *report.residual_history.last().unwrap();
    assert!((last - report.training.rms).abs() < 1e-9 * (1.0 + last));
}
