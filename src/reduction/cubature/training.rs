//! Training: poses sampled about the rest shape and the equilibria, the exact reduced
//! forces of the full mesh, and the fit of points and weights ([`train_cubature`]).

use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::{DMatrix, DVector, Matrix3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::fem::{TetKernel, TetMaterial};
use crate::reduction::evaluator::dot;

use super::kernels::{axpy9, dot9, subtract_linearization};
use super::linear::{affine_linearization, exact_reduced_force};
use super::nnls::nnls_gram;
use super::*;

/// Draws training poses (module docs, "Training"): modal amplitudes lambda_1 / lambda_i
/// times standard normals, scaled to a largest vertex displacement uniform in
/// [`min_magnitude`, 1] x `displacement_fraction` x the rest bounding-box diagonal.
#[derive(Debug, Clone)]
pub struct PoseSampler {
    /// Amplitude of each mode before the magnitude scaling.
    pub mode_scale: Vec<f64>,
    /// Largest vertex displacement of the largest pose (m).
    pub max_displacement: f64,
    /// Smallest magnitude relative to the largest.
    pub min_magnitude: f64,
}

impl PoseSampler {
    /// The sampler of `opts` for the mesh and basis, from the modal stiffness
    /// (U^T K0 U)_ii of `material` at rest.
    pub fn new<M: TetMaterial + ?Sized>(
        kernel: &TetKernel,
        material: &M,
        basis: &DMatrix<f64>,
        opts: &CubatureOptions,
    ) -> Self {
        let n = kernel.num_dofs();
        let mut k0 = kernel.new_matrix();
        kernel.tangent_stiffness(material, &vec![0.0; n], &mut k0);
        let mut ku = vec![0.0; n];
        let lambda: Vec<f64> = (0..basis.ncols())
            .map(|j| {
                let col = basis.column(j);
                k0.mul_vec(col.as_slice(), &mut ku);
                dot(col.as_slice(), &ku)
            })
            .collect();
        let positive: Vec<f64> = lambda.iter().cloned().filter(|&l| l > 0.0).collect();
        let lmin = positive.iter().cloned().fold(f64::INFINITY, f64::min);
        let mode_scale = lambda
            .iter()
            .map(|&l| if l > 0.0 { lmin / l } else { 1.0 })
            .collect();
        let (mut lo, mut hi) = (
            nalgebra::Vector3::repeat(f64::INFINITY),
            nalgebra::Vector3::repeat(f64::NEG_INFINITY),
        );
        for p in &kernel.rest {
            lo = lo.inf(&p.coords);
            hi = hi.sup(&p.coords);
        }
        PoseSampler {
            mode_scale,
            max_displacement: opts.displacement_fraction * (hi - lo).norm(),
            min_magnitude: opts.min_magnitude.clamp(0.0, 1.0),
        }
    }

    /// One pose.
    pub fn sample(&self, basis: &DMatrix<f64>, rng: &mut impl Rng) -> Vec<f64> {
        let q = DVector::from_iterator(
            self.mode_scale.len(),
            self.mode_scale
                .iter()
                .map(|s| s * rng.sample::<f64, _>(StandardNormal)),
        );
        let u = basis * &q;
        let largest = u
            .as_slice()
            .chunks_exact(3)
            .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
            .fold(0.0, f64::max);
        let magnitude = self.max_displacement * rng.random_range(self.min_magnitude..=1.0);
        let s = if largest > 0.0 {
            magnitude / largest
        } else {
            0.0
        };
        q.iter().map(|x| x * s).collect()
    }
}

/// The exact linear part of the training rows: at the current activation, and the
/// affine base and slope it follows the activation by.
struct TrainingLinear {
    /// The linear part at the current activation.
    now: LinearPart,
    /// The affine part's base ([`affine_linearization`]).
    base: LinearPart,
    /// Its slope in the activation, where the material is affine in it.
    slope: Option<LinearPart>,
}

impl TrainingLinear {
    /// The affine part and the per-tet linearization at rest of every tet.
    fn at_rest<M: TetMaterial>(kernel: &TetKernel, material: &mut M, basis: &DMatrix<f64>) -> Self {
        let ne = kernel.num_elements();
        let all: Vec<usize> = (0..ne).collect();
        let (base, slope) = affine_linearization(kernel, material, basis, &all, &vec![1.0; ne]);
        TrainingLinear {
            now: base.clone(),
            base,
            slope,
        }
    }

    /// Moves `now` to the activation of `material` (where the part depends on it).
    fn follow<M: TetMaterial + ?Sized>(&mut self, material: &M) {
        if let Some(slope) = &self.slope {
            self.now.combine(&self.base, slope, material.activation());
        }
    }
}

/// G_e of every tet, r x 9E column-major ([`TrainingData::g_all`]).
fn all_mode_gradients(kernel: &TetKernel, basis: &DMatrix<f64>) -> Vec<f64> {
    use rayon::prelude::*;
    let r = basis.ncols();
    let mut g_all = vec![0.0; 9 * kernel.num_elements() * r];
    g_all
        .par_chunks_mut(9 * r)
        .enumerate()
        .for_each(|(e, out)| mode_gradients(kernel, basis, e, out));
    g_all
}

/// Per-element training data: G_e for every tet and the scaled stresses at every pose.
pub(super) struct TrainingData {
    pub(super) r: usize,
    pub(super) t: usize,
    /// The first `forces` of the T rows are force rows, the rest stiffness probes.
    pub(super) forces: usize,
    pub(super) ne: usize,
    /// r x 9E column-major (column 9e + c: component c of G_e, transposed).
    pub(super) g_all: Vec<f64>,
    /// 9E x T column-major: V_e vec P(F_e(q_t)) / |b_t|.
    pub(super) p_all: Vec<f64>,
    /// r x T column-major: b_t / |b_t|.
    pub(super) targets: Vec<f64>,
    /// |g_e| (norm of the column over all poses).
    pub(super) norms: Vec<f64>,
    /// |b_t| of the full force after normalization: 1, or 0 for a zero force.
    pub(super) full_norms: Vec<f64>,
}

impl TrainingData {
    /// The rows of the force poses and the stiffness probes, and the column norms.
    pub(super) fn build<M: TetMaterial>(
        kernel: &TetKernel,
        material: &mut M,
        basis: &DMatrix<f64>,
        poses: &[Vec<f64>],
        activations: &[Option<f64>],
        probes: &[StiffnessProbe],
        exact_linear: bool,
    ) -> Self {
        let r = basis.ncols();
        let ne = kernel.num_elements();
        let t = poses.len() + probes.len();
        // The affine part and the per-tet linearization at rest, as a function of the
        // activation where the material is affine in it ([`affine_linearization`]).
        let mut linear = exact_linear.then(|| TrainingLinear::at_rest(kernel, material, basis));
        let g_all = all_mode_gradients(kernel, basis);
        let mut data = TrainingData {
            r,
            t,
            forces: poses.len(),
            ne,
            g_all,
            p_all: vec![0.0; 9 * ne * t],
            targets: vec![0.0; r * t],
            norms: Vec::new(),
            full_norms: vec![0.0; t],
        };
        // vec F for every tet and pose: I + G_all^T Q, one product.
        data.displacement_gradients(poses);
        for (k, q) in poses.iter().enumerate() {
            if let Some(a) = activations[k] {
                material.set_activation(a);
            }
            data.force_row(k, kernel, &*material, basis, q, linear.as_mut());
        }
        // Per tet V T(I) dF of the current probe (with an exact linear part).
        let mut rest = vec![0.0; 9 * ne];
        for (i, probe) in probes.iter().enumerate() {
            if let Some(a) = probe.activation {
                material.set_activation(a);
            }
            let k = poses.len() + i;
            data.probe_row(k, kernel, &*material, probe, linear.as_mut(), &mut rest);
        }
        data.norms = (0..ne).map(|e| data.column_norm(e)).collect();
        data
    }

    /// vec (F - I) = G_all^T Q of every tet at every force pose, in one product, into
    /// the force columns of `p_all`.
    fn displacement_gradients(&mut self, poses: &[Vec<f64>]) {
        let (r, ne) = (self.r, self.ne);
        let mut qmat = faer::Mat::<f64>::zeros(r, poses.len());
        for (k, q) in poses.iter().enumerate() {
            for j in 0..r {
                qmat[(j, k)] = q[j];
            }
        }
        let g = MatRef::from_column_major_slice(&self.g_all, r, 9 * ne);
        let dst = MatMut::from_column_major_slice_mut(
            &mut self.p_all[..9 * ne * poses.len()],
            9 * ne,
            poses.len(),
        );
        matmul(
            dst,
            Accum::Replace,
            g.transpose(),
            qmat.as_ref(),
            1.0,
            Par::rayon(0),
        );
    }

    /// Row `k` of the force pose `q`: the target b / |b| (less the exact linear part) and
    /// the per-tet V vec P(F) / |b| (less its linearization) from the vec (F - I) in the
    /// column.
    fn force_row<M: TetMaterial + ?Sized>(
        &mut self,
        k: usize,
        kernel: &TetKernel,
        material: &M,
        basis: &DMatrix<f64>,
        q: &[f64],
        mut linear: Option<&mut TrainingLinear>,
    ) {
        use rayon::prelude::*;
        let (r, ne) = (self.r, self.ne);
        let mut b = exact_reduced_force(kernel, material, basis, q);
        let bn = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        let inv = if bn > 0.0 { 1.0 / bn } else { 1.0 };
        self.full_norms[k] = if bn > 0.0 { 1.0 } else { 0.0 };
        // The linearization at this pose's activation.
        if let Some(lin) = linear.as_deref_mut() {
            lin.follow(material);
        }
        let lin = linear.map(|l| &l.now);
        if let Some(now) = lin {
            // The fitted part: b - f0 - K0 q (normalized by the full |b|).
            for j in 0..r {
                b[j] -= now.f0[j] + dot(&now.k0[j * r..(j + 1) * r], q);
            }
        }
        for j in 0..r {
            self.targets[k * r + j] = b[j] * inv;
        }
        let col = &mut self.p_all[k * 9 * ne..(k + 1) * 9 * ne];
        col.par_chunks_mut(9).enumerate().for_each(|(e, v)| {
            let mut f = Matrix3::from_column_slice(v);
            f[(0, 0)] += 1.0;
            f[(1, 1)] += 1.0;
            f[(2, 2)] += 1.0;
            let mut pk = material.first_pk(e, &f);
            if let Some(lin) = lin {
                subtract_linearization(&mut pk, f.as_slice(), &lin.p0[e], &lin.t0[e]);
            }
            v.copy_from_slice((pk * (kernel.volume[e] * inv)).as_slice());
        });
    }

    /// Row `k` of the stiffness probe: the target K(q) d / |K(q) d| (less K0 d) and the
    /// per-tet V T(F) dF / |K(q) d| (less V T(I) dF, computed into `rest`).
    fn probe_row<M: TetMaterial + ?Sized>(
        &mut self,
        k: usize,
        kernel: &TetKernel,
        material: &M,
        probe: &StiffnessProbe,
        mut linear: Option<&mut TrainingLinear>,
        rest: &mut [f64],
    ) {
        let (r, ne) = (self.r, self.ne);
        if let Some(lin) = linear.as_deref_mut() {
            lin.follow(material);
        }
        let lin = linear.map(|l| &l.now);
        let g_all = &self.g_all;
        let col = &mut self.p_all[k * 9 * ne..(k + 1) * 9 * ne];
        // Per tet V T(F) dF and, with an exact linear part, V T(I) dF: their sums
        // through G_e are K(q) d and K0 d.
        {
            use rayon::prelude::*;
            col.par_chunks_mut(9)
                .zip(rest.par_chunks_mut(9))
                .enumerate()
                .for_each(|(e, (v, v0))| {
                    let g = &g_all[9 * e * r..9 * (e + 1) * r];
                    let fv = dot9::<f64>(g, &probe.q, r, r);
                    let df = nalgebra::SVector::<f64, 9>::from_fn(|c, _| {
                        dot(&g[c * r..(c + 1) * r], &probe.direction)
                    });
                    let f = Matrix3::from_column_slice(&fv);
                    let tv = material.first_pk_tangent(e, &f) * df * kernel.volume[e];
                    v.copy_from_slice(tv.as_slice());
                    if let Some(lin) = lin {
                        v0.copy_from_slice((lin.t0[e] * df * kernel.volume[e]).as_slice());
                    }
                });
        }
        let mut kd = vec![0.0; r];
        for e in 0..ne {
            let v: [f64; 9] = std::array::from_fn(|c| col[9 * e + c]);
            axpy9::<f64>(&v, &g_all[9 * e * r..9 * (e + 1) * r], &mut kd, r, r);
        }
        let bn = kd.iter().map(|x| x * x).sum::<f64>().sqrt();
        let inv = if bn > 0.0 { 1.0 / bn } else { 1.0 };
        self.full_norms[k] = if bn > 0.0 { 1.0 } else { 0.0 };
        if let Some(now) = lin {
            // The fitted part: (K(q) - K0) d.
            for j in 0..r {
                kd[j] -= dot(&now.k0[j * r..(j + 1) * r], &probe.direction);
            }
            for (v, v0) in col.iter_mut().zip(rest.iter()) {
                *v -= v0;
            }
        }
        for j in 0..r {
            self.targets[k * r + j] = kd[j] * inv;
        }
        col.iter_mut().for_each(|v| *v *= inv);
    }

    /// |g_e|^2 = sum_t p_t^T (G_e^T G_e) p_t.
    pub(super) fn column_norm(&self, e: usize) -> f64 {
        let r = self.r;
        let g = &self.g_all[9 * e * r..9 * (e + 1) * r];
        let mut gram = [[0.0; 9]; 9];
        for a in 0..9 {
            for c in a..9 {
                let v = dot(&g[a * r..(a + 1) * r], &g[c * r..(c + 1) * r]);
                gram[a][c] = v;
                gram[c][a] = v;
            }
        }
        let n9 = 9 * self.ne;
        let mut s = 0.0;
        for k in 0..self.t {
            let p = &self.p_all[k * n9 + 9 * e..k * n9 + 9 * e + 9];
            for a in 0..9 {
                for c in 0..9 {
                    s += p[a] * gram[a][c] * p[c];
                }
            }
        }
        s.max(0.0).sqrt()
    }

    /// The column g_e (r x T column-major, pose-normalized).
    pub(super) fn column(&self, e: usize) -> Vec<f64> {
        let (r, n9) = (self.r, 9 * self.ne);
        let g = &self.g_all[9 * e * r..9 * (e + 1) * r];
        let mut out = vec![0.0; r * self.t];
        for k in 0..self.t {
            let p = &self.p_all[k * n9 + 9 * e..k * n9 + 9 * e + 9];
            let o = &mut out[k * r..(k + 1) * r];
            for c in 0..9 {
                axpy(p[c], &g[c * r..(c + 1) * r], o);
            }
        }
        out
    }

    /// g_e . R / |g_e| for each candidate (R: r x T column-major), by one product
    /// S = G_C^T R.
    pub(super) fn scores(
        &self,
        candidates: &[usize],
        resid: &[f64],
        gather: &mut Vec<f64>,
    ) -> Vec<f64> {
        let (r, t, n9) = (self.r, self.t, 9 * self.ne);
        let nc = candidates.len();
        gather.clear();
        for &e in candidates {
            gather.extend_from_slice(&self.g_all[9 * e * r..9 * (e + 1) * r]);
        }
        let mut s = faer::Mat::<f64>::zeros(9 * nc, t);
        let g = MatRef::from_column_major_slice(gather, r, 9 * nc);
        let rm = MatRef::from_column_major_slice(resid, r, t);
        matmul(
            s.as_mut(),
            Accum::Replace,
            g.transpose(),
            rm,
            1.0,
            Par::rayon(0),
        );
        candidates
            .iter()
            .enumerate()
            .map(|(i, &e)| {
                let mut d = 0.0;
                for k in 0..t {
                    for c in 0..9 {
                        d += self.p_all[k * n9 + 9 * e + c] * s[(9 * i + c, k)];
                    }
                }
                if self.norms[e] > 0.0 {
                    d / self.norms[e]
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// Trains a cubature for `material` on the tets of `kernel` in the basis `basis`
/// (module docs, "Training"): draws the training and held-out poses, computes the
/// exact reduced forces, selects points by greedy NNLS, and reports the fit errors.
pub fn train_cubature<M: TetMaterial>(
    kernel: &TetKernel,
    material: M,
    basis: &DMatrix<f64>,
    opts: &CubatureOptions,
) -> Result<(CubatureForces<M>, CubatureReport), CubatureError> {
    let mut material = material;
    let r = check_basis(kernel, basis)?;
    check_options(opts)?;
    let t0 = Instant::now();
    // With an activation range, the pose sampler's modal scaling is taken at its low
    // end (the linear part follows each pose's activation, [`affine_linearization`]).
    if let Some((lo, _)) = opts.activation {
        material.set_activation(lo);
    }
    let sampler = PoseSampler::new(kernel, &material, basis, opts);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let (mut poses, mut activations): (Vec<Vec<f64>>, Vec<Option<f64>>) = (0..opts.training_poses)
        .map(|_| draw_pose(&sampler, basis, opts, &mut rng))
        .unzip();
    append_extra_poses(opts, r, &mut poses, &mut activations)?;
    check_probes(opts, r)?;
    let data = TrainingData::build(
        kernel,
        &mut material,
        basis,
        &poses,
        &activations,
        &opts.stiffness_probes,
        opts.exact_linear,
    );
    let data_seconds = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let (elements, weights, residual_history, training_errors) =
        greedy_selection(&data, opts, &mut rng);
    let selection_seconds = t1.elapsed().as_secs_f64();
    let iterations = residual_history.len();
    if let Some((lo, _)) = opts.activation {
        material.set_activation(lo);
    }
    let mut cub = CubatureForces::from_points(
        kernel,
        basis,
        material,
        &elements,
        &weights,
        opts.exact_linear,
    )?;
    let errors = held_out_errors(kernel, &mut cub, basis, &sampler, opts);
    if let Some((lo, _)) = opts.activation {
        cub.set_activation(lo);
    }
    let report = CubatureReport {
        points: cub.num_points(),
        iterations,
        training: FitError::from_errors(&training_errors),
        held_out: FitError::from_errors(&errors),
        residual_history,
        data_seconds,
        selection_seconds,
    };
    Ok((cub, report))
}

/// Refuses options without training poses, points or candidates, or with a displacement
/// fraction that is not positive and finite.
fn check_options(opts: &CubatureOptions) -> Result<(), CubatureError> {
    if opts.training_poses == 0 || opts.max_points == 0 || opts.candidates == 0 {
        return Err(CubatureError::BadOptions(
            "training_poses, max_points and candidates must be positive".into(),
        ));
    }
    if !(opts.displacement_fraction > 0.0 && opts.displacement_fraction.is_finite()) {
        return Err(CubatureError::BadOptions(format!(
            "displacement_fraction {}",
            opts.displacement_fraction
        )));
    }
    Ok(())
}

/// One pose of `sampler` and, with an activation range, its activation.
fn draw_pose(
    sampler: &PoseSampler,
    basis: &DMatrix<f64>,
    opts: &CubatureOptions,
    rng: &mut ChaCha8Rng,
) -> (Vec<f64>, Option<f64>) {
    let q = sampler.sample(basis, rng);
    let a = opts.activation.map(|(lo, hi)| {
        if hi > lo {
            rng.random_range(lo..=hi)
        } else {
            lo
        }
    });
    (q, a)
}

/// Appends the options' extra training poses, each of `r` coordinates.
fn append_extra_poses(
    opts: &CubatureOptions,
    r: usize,
    poses: &mut Vec<Vec<f64>>,
    activations: &mut Vec<Option<f64>>,
) -> Result<(), CubatureError> {
    for (q, a) in &opts.extra_poses {
        if q.len() != r {
            return Err(CubatureError::BadOptions(format!(
                "an extra training pose has {} coordinates; the basis has {r}",
                q.len()
            )));
        }
        poses.push(q.clone());
        activations.push(*a);
    }
    Ok(())
}

/// Refuses a stiffness probe whose pose or direction does not have `r` coordinates.
fn check_probes(opts: &CubatureOptions, r: usize) -> Result<(), CubatureError> {
    if let Some(p) = opts
        .stiffness_probes
        .iter()
        .find(|p| p.q.len() != r || p.direction.len() != r)
    {
        return Err(CubatureError::BadOptions(format!(
            "a stiffness probe has a pose of {} and a direction of {} coordinates; the \
             basis has {r}",
            p.q.len(),
            p.direction.len()
        )));
    }
    Ok(())
}

/// The relative force error of `cub` at each held-out pose (drawn from their own seed).
fn held_out_errors<M: TetMaterial>(
    kernel: &TetKernel,
    cub: &mut CubatureForces<M>,
    basis: &DMatrix<f64>,
    sampler: &PoseSampler,
    opts: &CubatureOptions,
) -> Vec<f64> {
    let mut held_rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut errors = Vec::with_capacity(opts.held_out_poses);
    let mut scratch = cub.scratch();
    let mut f = vec![0.0; basis.ncols()];
    for _ in 0..opts.held_out_poses {
        let (q, a) = draw_pose(sampler, basis, opts, &mut held_rng);
        if let Some(a) = a {
            cub.set_activation(a);
        }
        let exact = exact_reduced_force(kernel, cub.material(), basis, &q);
        cub.evaluate_force(&q, &mut f, &mut scratch);
        errors.push(relative_error(&f, &exact));
    }
    errors
}

/// |a - b| / |b| (|a - b| where b = 0).
pub fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt();
    let n = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    if n > 0.0 {
        d / n
    } else {
        d
    }
}

/// An et al.'s greedy NNLS. Returns the points, weights, the residual after each
/// iteration, and the per-pose relative errors on the training set.
#[allow(clippy::type_complexity)]
pub(super) fn greedy_selection(
    data: &TrainingData,
    opts: &CubatureOptions,
    rng: &mut ChaCha8Rng,
) -> (Vec<usize>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (r, t, ne) = (data.r, data.t, data.ne);
    let len = r * t;
    let b = &data.targets;
    let mut resid = b.clone();
    let mut set = ActiveSet::new(ne);
    let mut history = Vec::new();
    let mut gather = Vec::new();
    let max_points = opts.max_points.min(ne);
    let max_iterations = 4 * max_points + 10;
    let mut rel = group_residual(data, &resid);
    while rel > opts.tolerance && set.selected.len() < max_points && history.len() < max_iterations
    {
        let free = ne - set.selected.len();
        let want = opts.candidates.min(free);
        let candidates = draw_candidates(&set.in_set, free, want, rng);
        let scores = data.scores(&candidates, &resid, &mut gather);
        let Some((best, &score)) = scores.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))
        else {
            break;
        };
        if score <= 0.0 {
            break;
        }
        let e = candidates[best];
        set.add(e, data.column(e), b);
        nnls_gram(&set.gram, &set.rhs, &mut set.w);
        // Drop the points whose weight went to zero.
        set.drop_zero_weights();
        resid.copy_from_slice(b);
        for (wi, ci) in set.w.iter().zip(&set.columns) {
            axpy(-wi, ci, &mut resid);
        }
        rel = group_residual(data, &resid);
        history.push(rel);
    }
    let per_pose = per_pose_errors(data, &resid);
    debug_assert_eq!(resid.len(), len);
    (
        set.selected,
        set.w.iter().cloned().collect(),
        history,
        per_pose,
    )
}

/// The residual `resid` relative to the full force, the larger over the force rows and
/// the stiffness probe rows.
///
/// Relative to the full force (with an exact linear part the targets are only the
/// nonlinear remainder, but every pose's full force has norm 1 after normalization).
/// Each group of rows (forces, stiffness probes) must meet the tolerance on its own.
fn group_residual(data: &TrainingData, resid: &[f64]) -> f64 {
    let len = data.r * data.t;
    let split = data.r * data.forces;
    let rel = |range: std::ops::Range<usize>, norms: &[f64]| {
        let n = dot(norms, norms).sqrt();
        if n > 0.0 {
            dot(&resid[range.clone()], &resid[range]).sqrt() / n
        } else {
            0.0
        }
    };
    let forces = rel(0..split, &data.full_norms[..data.forces]);
    let probes = rel(split..len, &data.full_norms[data.forces..]);
    forces.max(probes)
}

/// `want` candidate tets outside the set: every free one when `want` is all `free` of
/// them, else drawn at random without repeats.
fn draw_candidates(in_set: &[bool], free: usize, want: usize, rng: &mut ChaCha8Rng) -> Vec<usize> {
    let ne = in_set.len();
    if want == free {
        (0..ne).filter(|&e| !in_set[e]).collect()
    } else {
        let mut c = Vec::with_capacity(want);
        while c.len() < want {
            let e = rng.random_range(0..ne);
            if !in_set[e] && !c.contains(&e) {
                c.push(e);
            }
        }
        c
    }
}

/// |r_t| / |b_t| of each pose's residual (|r_t| where b_t = 0).
fn per_pose_errors(data: &TrainingData, resid: &[f64]) -> Vec<f64> {
    let r = data.r;
    (0..data.t)
        .map(|k| {
            let rk = &resid[k * r..(k + 1) * r];
            let d = dot(rk, rk).sqrt();
            if data.full_norms[k] > 0.0 {
                d / data.full_norms[k]
            } else {
                d
            }
        })
        .collect()
}

/// The selected points of the greedy NNLS with their columns, Gram matrix, right-hand
/// side and weights.
struct ActiveSet {
    /// The selected tets.
    selected: Vec<usize>,
    /// Per tet, whether it is selected.
    in_set: Vec<bool>,
    /// The column g_e of each selected tet.
    columns: Vec<Vec<f64>>,
    /// The Gram matrix of the columns.
    gram: DMatrix<f64>,
    /// g_e . b of each column.
    rhs: DVector<f64>,
    /// The weight of each selected tet.
    w: DVector<f64>,
}

impl ActiveSet {
    /// The empty set of a mesh of `ne` tets.
    fn new(ne: usize) -> Self {
        ActiveSet {
            selected: Vec::new(),
            in_set: vec![false; ne],
            columns: Vec::new(),
            gram: DMatrix::<f64>::zeros(0, 0),
            rhs: DVector::<f64>::zeros(0),
            w: DVector::<f64>::zeros(0),
        }
    }

    /// Adds tet `e` with its column `col` and weight zero, bordering the Gram matrix and
    /// the right-hand side (`b`: the targets).
    fn add(&mut self, e: usize, col: Vec<f64>, b: &[f64]) {
        let n = self.selected.len();
        let mut g2 = DMatrix::<f64>::zeros(n + 1, n + 1);
        g2.view_mut((0, 0), (n, n)).copy_from(&self.gram);
        for (i, ci) in self.columns.iter().enumerate() {
            let v = dot(ci, &col);
            g2[(i, n)] = v;
            g2[(n, i)] = v;
        }
        g2[(n, n)] = dot(&col, &col);
        self.gram = g2;
        let rhs = std::mem::replace(&mut self.rhs, DVector::zeros(0));
        self.rhs = rhs.push(dot(&col, b));
        let w = std::mem::replace(&mut self.w, DVector::zeros(0));
        self.w = w.push(0.0);
        self.selected.push(e);
        self.in_set[e] = true;
        self.columns.push(col);
    }

    /// Drops the points whose weight went to zero.
    fn drop_zero_weights(&mut self) {
        let keep: Vec<usize> = (0..self.selected.len())
            .filter(|&i| self.w[i] > 0.0)
            .collect();
        if keep.len() < self.selected.len() {
            for (i, &e) in self.selected.iter().enumerate() {
                if self.w[i] <= 0.0 {
                    self.in_set[e] = false;
                }
            }
            self.gram = self.gram.select_rows(&keep).select_columns(&keep);
            self.rhs = self.rhs.select_rows(&keep);
            self.w = self.w.select_rows(&keep);
            self.selected = keep.iter().map(|&i| self.selected[i]).collect();
            let mut old: Vec<Option<Vec<f64>>> = std::mem::take(&mut self.columns)
                .into_iter()
                .map(Some)
                .collect();
            self.columns = keep
                .iter()
                .map(|&i| old[i].take().expect("kept once"))
                .collect();
        }
    }
}
