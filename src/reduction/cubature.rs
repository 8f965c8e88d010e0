//! Optimized cubature for reduced hyperelastic forces (An, Kim and James 2008,
//! "Optimizing Cubature for Efficient Integration of Subspace Deformations", ACM Trans.
//! Graph. 27(5), SIGGRAPH Asia): the reduced internal force of any material, evaluated
//! from a small set of weighted tets fitted to training poses by non-negative least
//! squares, so that the cost of a reduced step depends on the number of points and r, not
//! on the mesh.
//!
//! # What it computes
//!
//! In a basis U (3n x r), the reduced internal force is a sum over tets,
//! f(q) = U^T R(U q) = sum_e g_e(q), with g_e(q) = U_e^T R_e(U_e q). For a linear tet,
//! F_e(q) = I + sum_j q_j G_e,j, where G_e,j = sum_a U_a,j g_a^T is the (constant)
//! deformation-gradient change of mode j (g_a the barycentric gradients); stored as
//! 9-vectors (`vec`, column-major) they form a 9 x r matrix G_e. Then, exactly,
//! - g_e(q)_j = V_e P(F_e) : G_e,j, i.e. g_e = V_e G_e^T vec(P(F_e));
//! - dg_e/dq = V_e G_e^T (dP/dF) G_e with the 9x9 tangent dP/dF.
//!
//! Cubature replaces the sum over all tets by a weighted sum over a few points E:
//! - f~(q) = sum_{e in E} w_e V_e G_e^T vec(P(F_e(q))),
//! - K~(q) = sum_{e in E} w_e V_e G_e^T (dP/dF)(F_e(q)) G_e (symmetric: the tangent of a
//!   hyperelastic material is the Hessian of W),
//!
//! the exact gradient and Hessian of the fitted energy W~(q) = sum w_e V_e W(F_e(q)). The
//! material is held by the evaluator, so its run-time inputs (muscle activation,
//! [`TetMaterial::set_activation`]) change the forces without refitting; the cubature is
//! trained over the activation range it will see ([`CubatureOptions::activation`]).
//!
//! # Exact linear part ([`CubatureOptions::exact_linear`], on by default)
//!
//! A refinement of An et al.: the affine part of the force, f(0) + K0 q with
//! K0 = U^T K(0) U, is precomputed exactly from the full mesh, and the points integrate
//! only the remainder, each point's stress minus its linearization at rest:
//! - f~(q) = f(0) + K0 q + sum w_e V_e G_e^T vec(P(F_e) - P(I) - dP/dF(I) : (F_e - I)),
//! - K~(q) = K0 + sum w_e V_e G_e^T (dP/dF(F_e) - dP/dF(I)) G_e.
//!
//! Small deformations (most of a haptic interaction) are then exact, and the same
//! relative error of the full force needs fewer points: on the StVK bridge at r = 20,
//! 83 points against 152 for the verbatim method at 2%. With all tets at weight 1 both
//! forms are the exact reduced force.
//!
//! For an active material whose stress is affine in the activation alpha (the Blemker
//! muscle: P = P_passive + alpha P_active, [`crate::fem::muscle`]), f(0), K0 and each
//! point's P(I), dP/dF(I) are affine in alpha too: they are computed at alpha = 0 and 1,
//! and [`CubatureForces::set_activation`] recombines them, so the affine part is exact
//! at every activation, in training and at run time. This matters for the activated
//! muscle: at rest its fibres already pull at sigma_max (300 times the shear modulus),
//! and taken at alpha = 0 that whole active stress, with the geometric stiffness it
//! gives the taut belly, would be left to the fit's 2% (docs/muscle.md). Materials not
//! affine in their activation keep the linearization at the activation on entry.
//!
//! # Training (An et al. Sec. 4)
//!
//! - Poses q_t (T of them) from a seeded ChaCha8 stream: z_i standard normal, mode i
//!   scaled by lambda_1 / lambda_i with lambda_i = (U^T K0 U)_ii the modal stiffness (for
//!   mass-orthonormal linear modes the eigenvalue omega_i^2): the static response to a
//!   load with equal modal components, so every component of the reduced force is of
//!   the same order (An et al. also scale by the modal eigenvalues). The pose is then
//!   scaled so that its largest vertex displacement is s D, with D the diagonal of the
//!   rest bounding box, s uniform in [`CubatureOptions::min_magnitude`, 1] times
//!   [`CubatureOptions::displacement_fraction`] (small poses train the linear regime,
//!   large ones the nonlinear one). [`CubatureOptions::extra_poses`] adds chosen ones.
//! - Targets b_t = U^T R(U q_t) from the full [`TetKernel::internal_forces`] (the exact
//!   reduced force; minus the exact affine part with an exact linear part), and
//!   per-element columns g_e(q_t); the rows of pose t are divided by the full |b_t| so
//!   that every pose counts equally and the residual is a relative error of the full
//!   force.
//! - Greedy NNLS selection (An et al. Alg. 1): with the residual r = b - A w, take a
//!   random subset of the unselected tets, add the one with the largest positive
//!   normalized dot product g_e . r / |g_e|, solve NNLS ([`nnls_gram`], Lawson-Hanson)
//!   for the weights on the selected columns, drop the tets whose weight went to zero,
//!   and repeat until |r| / |b| is below [`CubatureOptions::tolerance`] or
//!   [`CubatureOptions::max_points`] is reached.
//!
//! The columns are never stored for all tets (T r x E would be 0.8 GB at r = 100): per
//! tet the training keeps G_e (9 x r) and vec P at each pose (9 x T), so a column is
//! G_e^T P_e, and the scores of a candidate subset are one matrix product.
//!
//! # Run time
//!
//! [`CubatureForces::evaluate`] stacks the G_e of the N points as an r x 9N matrix G
//! (column 9p + c is component c of point p's 9 x r matrix, transposed). In one pass
//! over the points, each point's 9 x r block gives vec F = I + G_p^T q (nine dot products
//! of length r), adds G_p vec(P~) to the force, and H_p = (T~ G_p^T)^T (81 axpys of
//! length r); after each block of points (128 KiB of H, so that it and its G columns stay
//! in cache) the block's K += G_B H_B^T is one lower-triangle product (9N r^2 / 2
//! multiply-adds in all: the dominant cost), mirrored at the end. P~ and T~ carry the
//! factor w_e V_e. By default G is stored in f32, each column padded with zeros to whole
//! 8-lane registers (no scalar tail at r = 20, 60 or 100), and the product is f32
//! ([`CubaturePrecision`]). Nothing is allocated per call.
//!
//! Every sum is a fixed chain of fused multiply-adds, so an evaluation gives the same
//! bits on every CPU: a replay recorded on one machine reproduces on another. The
//! kernels are compiled three times ([`CubatureKernels`]: portable, AVX2+FMA, AVX-512),
//! chosen at run time, and differ only in speed; the stiffness product is written here
//! rather than taken from faer, whose kernel and blocking depend on the CPU.

use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use nalgebra::{DMatrix, DVector, Matrix3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use super::evaluator::{dot, ReducedInternalForces, MAX_R};
use crate::fem::{TetKernel, TetMaterial};

/// Settings of the cubature training.
#[derive(Debug, Clone, PartialEq)]
pub struct CubatureOptions {
    /// Number of training poses T (the fit has T r equations).
    pub training_poses: usize,
    /// Number of held-out poses drawn (from another seed) to report the fit error.
    pub held_out_poses: usize,
    /// Largest vertex displacement of a pose, as a fraction of the rest bounding-box
    /// diagonal.
    pub displacement_fraction: f64,
    /// Smallest pose magnitude relative to the largest: magnitudes are uniform in
    /// [`min_magnitude`, 1] x `displacement_fraction`.
    pub min_magnitude: f64,
    /// Activation range sampled uniformly per pose (for active materials); `None` keeps
    /// the material's current activation.
    pub activation: Option<(f64, f64)>,
    /// Candidate tets scored per greedy iteration (a random subset, An et al.).
    pub candidates: usize,
    /// Relative residual |b - A w| / |b| at which the selection stops.
    pub tolerance: f64,
    /// Largest number of cubature points.
    pub max_points: usize,
    /// Seed of the pose and candidate streams (ChaCha8).
    pub seed: u64,
    /// Keep the linear part of the force exact (module docs, "Exact linear part"): the
    /// cubature fits only f(q) - f(0) - K0 q. `false` is An et al. verbatim.
    pub exact_linear: bool,
    /// Representative poses added to the random ones, each with its activation (`None`:
    /// the material's current one): states the model is known to visit, such as a
    /// muscle's contracted equilibria, which random poses around rest rarely reach.
    pub extra_poses: Vec<(Vec<f64>, Option<f64>)>,
    /// Stiffness rows fitted beside the forces (module docs, "Stiffness probes"): the
    /// reduced tangent at a pose applied to a direction, for the directions where the
    /// model's small stiffnesses must be right (a muscle palpated about its contracted
    /// equilibrium).
    pub stiffness_probes: Vec<StiffnessProbe>,
}

/// One stiffness row of the training: K(q) d, the reduced tangent at pose `q` (at
/// `activation`, `None`: the material's current one) applied to the direction `d`,
/// normalized by its own norm like a force row.
#[derive(Debug, Clone, PartialEq)]
pub struct StiffnessProbe {
    /// The pose q (length r).
    pub q: Vec<f64>,
    /// The activation of the pose.
    pub activation: Option<f64>,
    /// The direction d (length r).
    pub direction: Vec<f64>,
}

impl Default for CubatureOptions {
    fn default() -> Self {
        CubatureOptions {
            training_poses: 200,
            held_out_poses: 50,
            displacement_fraction: 0.05,
            min_magnitude: 0.05,
            activation: None,
            candidates: 1000,
            tolerance: 0.02,
            max_points: 2000,
            seed: 1,
            exact_linear: true,
            extra_poses: Vec::new(),
            stiffness_probes: Vec::new(),
        }
    }
}

/// Relative errors |f~(q) - f(q)| / |f(q)| of a set of poses.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FitError {
    /// Mean over the poses.
    pub mean: f64,
    /// Root mean square over the poses (on the training set, the NNLS residual
    /// |b - A w| / |b|, since every pose is normalized).
    pub rms: f64,
    /// Largest over the poses.
    pub max: f64,
}

impl FitError {
    /// Statistics of per-pose relative errors.
    pub fn from_errors(errors: &[f64]) -> Self {
        if errors.is_empty() {
            return FitError::default();
        }
        let n = errors.len() as f64;
        FitError {
            mean: errors.iter().sum::<f64>() / n,
            rms: (errors.iter().map(|e| e * e).sum::<f64>() / n).sqrt(),
            max: errors.iter().cloned().fold(0.0, f64::max),
        }
    }
}

/// What the training did.
#[derive(Debug, Clone, PartialEq)]
pub struct CubatureReport {
    /// Number of cubature points (tets with a positive weight).
    pub points: usize,
    /// Greedy iterations run.
    pub iterations: usize,
    /// Fit error on the training poses.
    pub training: FitError,
    /// Error on the held-out poses against the exact reduced force.
    pub held_out: FitError,
    /// Relative residual after each greedy iteration (the convergence history).
    pub residual_history: Vec<f64>,
    /// Seconds spent computing the training data (poses, exact forces, columns).
    pub data_seconds: f64,
    /// Seconds spent in the greedy selection and NNLS.
    pub selection_seconds: f64,
}

/// Errors of the cubature.
#[derive(Debug, thiserror::Error)]
pub enum CubatureError {
    /// The basis does not have one row per degree of freedom of the mesh.
    #[error("the basis has {rows} rows but the mesh has {dofs} degrees of freedom")]
    BasisShape {
        /// Rows of U.
        rows: usize,
        /// Degrees of freedom of the mesh (3 per vertex).
        dofs: usize,
    },
    /// The basis has no columns, or more than the reduced integrator supports.
    #[error("cubature needs 1 to {MAX_R} modes, the basis has {0}")]
    BasisSize(usize),
    /// The points and weights are inconsistent (lengths, element indices, or a negative
    /// or non-finite weight).
    #[error("bad cubature points: {0}")]
    BadPoints(String),
    /// The training options cannot produce a fit.
    #[error("bad cubature options: {0}")]
    BadOptions(String),
}

/// Reduced forces and stiffness by cubature over a few weighted tets, for any
/// [`TetMaterial`] (module docs). Implements [`ReducedInternalForces`], so it runs in
/// [`crate::dynamics::ReducedNewmark`].
#[derive(Debug, Clone)]
pub struct CubatureForces<M> {
    r: usize,
    material: M,
    elements: Vec<usize>,
    weights: Vec<f64>,
    /// w_e V_e per point.
    scale: Vec<f64>,
    /// r x 9N column-major: column 9p + c holds component c of vec(dF/dq_j) of point p,
    /// for j = 0..r.
    gt: Vec<f64>,
    /// `gt` rounded to f32, present with [`CubaturePrecision::F32`] (then every path
    /// uses it), each column of length r padded with zeros to [`Self::stride32`] so
    /// that the tangent products run in whole 8-lane registers.
    gt32: Option<Vec<f32>>,
    /// The exact affine part, when the cubature fits only the nonlinear remainder (at
    /// the activation `linear_activation`).
    linear: Option<LinearPart>,
    /// The linear part at activation 0 and its slope in the activation, for materials
    /// affine in it ([`affine_linearization`]): `linear` follows the activation.
    linear_slope: Option<Box<(LinearPart, LinearPart)>>,
    /// The activation `linear` was combined at.
    linear_activation: f64,
    /// The equilibrium correction ([`Self::correct_equilibria`]): the fit's force
    /// residual at the exact reduced equilibria, by ascending activation.
    correction: Option<Box<EquilibriumCorrection>>,
    /// The compilation the kernels run in ([`CubatureKernels`]).
    kernels: CubatureKernels,
    /// Bytes of one block of tangent products ([`BLOCK_BYTES`]; tests shrink it).
    block_bytes: usize,
    /// Slices of the points whose stiffness [`Self::evaluate_step`] refreshes in turn
    /// (1: all of it every step).
    stiffness_slices: usize,
}

/// The affine part f(0) + K0 q of the reduced force, exact, and per point its
/// linearization at rest, subtracted from the point's stress (scaled by w V).
#[derive(Debug, Clone)]
struct LinearPart {
    /// r x r column-major U^T K0 U.
    k0: Vec<f64>,
    /// U^T R(0) (zero for a passive material).
    f0: Vec<f64>,
    /// w V vec P(I) per point.
    p0: Vec<[f64; 9]>,
    /// w V dP/dF(I) per point.
    t0: Vec<nalgebra::SMatrix<f64, 9, 9>>,
    /// The force's affine part with the points' linearizations summed into it:
    /// k0 - sum_p G_p^T t0_p G_p (r x r) and f0 - sum_p G_p^T p0_p, with G as stored
    /// ([`CubatureForces::sum_point_linearizations`]), so that the force takes each
    /// point's stress whole (the same force, without 81 multiply-adds and a 9 x 9 load
    /// per point). Empty until summed.
    k_force: Vec<f64>,
    f_force: Vec<f64>,
}

impl LinearPart {
    /// The linearization at rest at the material's current activation: the reduced
    /// U^T K0 U and U^T R(0) of the full mesh, and P(I), dP/dF(I) of each listed element
    /// times its `scale`.
    fn at_rest<M: TetMaterial + ?Sized>(
        kernel: &TetKernel,
        material: &M,
        basis: &DMatrix<f64>,
        elements: &[usize],
        scale: &[f64],
    ) -> Self {
        let (k0, f0) = reduced_linearization(kernel, material, basis);
        let (p0, t0) = point_linearizations(material, elements, scale);
        LinearPart {
            k0,
            f0,
            p0,
            t0,
            k_force: Vec::new(),
            f_force: Vec::new(),
        }
    }

    /// `self = base + alpha slope`, in place (allocates nothing).
    fn combine(&mut self, base: &LinearPart, slope: &LinearPart, alpha: f64) {
        let lerp = |out: &mut [f64], b: &[f64], s: &[f64]| {
            for ((o, b), s) in out.iter_mut().zip(b).zip(s) {
                *o = b + alpha * s;
            }
        };
        lerp(&mut self.k0, &base.k0, &slope.k0);
        lerp(&mut self.f0, &base.f0, &slope.f0);
        lerp(&mut self.k_force, &base.k_force, &slope.k_force);
        lerp(&mut self.f_force, &base.f_force, &slope.f_force);
        for (o, (b, s)) in self.p0.iter_mut().zip(base.p0.iter().zip(&slope.p0)) {
            lerp(o, b, s);
        }
        for (o, (b, s)) in self.t0.iter_mut().zip(base.t0.iter().zip(&slope.t0)) {
            lerp(o.as_mut_slice(), b.as_slice(), s.as_slice());
        }
    }

    /// `a - b`, entry by entry.
    fn difference(a: &LinearPart, b: &LinearPart) -> LinearPart {
        let sub =
            |x: &[f64], y: &[f64]| -> Vec<f64> { x.iter().zip(y).map(|(x, y)| x - y).collect() };
        LinearPart {
            k0: sub(&a.k0, &b.k0),
            f0: sub(&a.f0, &b.f0),
            p0: a
                .p0
                .iter()
                .zip(&b.p0)
                .map(|(x, y)| std::array::from_fn(|c| x[c] - y[c]))
                .collect(),
            t0: a.t0.iter().zip(&b.t0).map(|(x, y)| x - y).collect(),
            k_force: sub(&a.k_force, &b.k_force),
            f_force: sub(&a.f_force, &b.f_force),
        }
    }
}

/// A force offset, piecewise linear in the activation, that makes the cubature's
/// unloaded equilibria those of exact integration ([`CubatureForces::correct_equilibria`]).
#[derive(Debug, Clone)]
struct EquilibriumCorrection {
    /// Ascending activations of the table.
    activations: Vec<f64>,
    /// Per activation, f~(q*) - f(q*) = f~(q*) at the exact reduced equilibrium q*.
    offsets: Vec<Vec<f64>>,
    /// The offset at the current activation.
    now: Vec<f64>,
}

impl EquilibriumCorrection {
    /// `now` = the table interpolated at `alpha` (clamped to its ends; allocates nothing).
    fn interpolate(&mut self, alpha: f64) {
        let a = &self.activations;
        if a.len() == 1 {
            self.now.copy_from_slice(&self.offsets[0]);
            return;
        }
        let i = a.partition_point(|&x| x <= alpha).clamp(1, a.len() - 1);
        let t = ((alpha - a[i - 1]) / (a[i] - a[i - 1])).clamp(0.0, 1.0);
        for ((o, lo), hi) in self
            .now
            .iter_mut()
            .zip(&self.offsets[i - 1])
            .zip(&self.offsets[i])
        {
            *o = lo + t * (hi - lo);
        }
    }
}

/// A stable unloaded equilibrium of reduced forces `forces` at its current activation,
/// from `q`, in place: Newton on the energy, with the tangent shifted until positive
/// definite where it is not (so every step descends) and backtracking until the energy
/// decreases; near the solution, plain Newton steps. Saddles of the energy are
/// equilibria too, and plain Newton converges to them as readily: near 0.8 activation
/// the contracting muscle has one beside its stable state. Returns the final residual
/// norm relative to `scale`.
fn reduced_equilibrium<F: ReducedInternalForces>(forces: &F, q: &mut [f64], scale: f64) -> f64 {
    let r = q.len();
    let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
    let mut scratch = forces.scratch();
    let mut trial = vec![0.0; r];
    let mut rel = f64::INFINITY;
    for _ in 0..200 {
        forces.evaluate(q, &mut f, &mut k, &mut scratch);
        rel = f.iter().map(|x| x * x).sum::<f64>().sqrt() / scale;
        if rel <= 1e-11 {
            break;
        }
        let km = DMatrix::from_column_slice(r, r, &k);
        let fv = DVector::from_column_slice(&f);
        let diag = (0..r).map(|i| km[(i, i)].abs()).fold(0.0f64, f64::max);
        let mut shift = 0.0;
        let dq = loop {
            let shifted = &km + DMatrix::identity(r, r) * shift;
            if let Some(ch) = shifted.cholesky() {
                break ch.solve(&fv);
            }
            if shift > 1e6 * diag.max(f64::MIN_POSITIVE) {
                return f64::INFINITY;
            }
            shift = if shift == 0.0 {
                1e-8 * diag
            } else {
                4.0 * shift
            };
        };
        let Some(e0) = forces.energy(q) else {
            return f64::INFINITY;
        };
        let slope = fv.dot(&dq);
        let mut step = 1.0;
        loop {
            for i in 0..r {
                trial[i] = q[i] - step * dq[i];
            }
            let e = forces.energy(&trial).unwrap_or(f64::INFINITY);
            // Armijo; within rounding of the energy, the step is taken as is (close to
            // the minimum the energy no longer resolves the decrease).
            let rounding = 1e-12 * e0.abs().max(f64::MIN_POSITIVE);
            if e <= e0 - 1e-4 * step * slope || (shift == 0.0 && (e - e0).abs() <= rounding) {
                break;
            }
            step *= 0.5;
            if step < 1e-12 {
                return rel;
            }
        }
        q.copy_from_slice(&trial);
    }
    rel
}

/// The unloaded equilibria of exact integration in the basis `basis` (all tets of
/// `kernel`, weight 1) at each of `activations`: [`stable_equilibria`] of
/// [`CubatureForces::all_elements`].
pub fn exact_equilibria<M: TetMaterial + Clone>(
    kernel: &TetKernel,
    basis: &DMatrix<f64>,
    material: &M,
    activations: &[f64],
) -> Result<Vec<(f64, Vec<f64>)>, CubatureError> {
    let mut exact = CubatureForces::all_elements(kernel, basis, material.clone())?;
    stable_equilibria(&mut exact, activations)
}

/// The stable unloaded equilibria of reduced forces `forces` (which must have an
/// energy) at each of `activations` (sorted and deduplicated), continued from rest (the
/// equilibrium at activation 0) in activation steps of at most 0.25, each a minimum of
/// the energy reached from the last (Newton from rest straight to full activation can
/// land on another root, and plain Newton on a saddle). Returns (activation, q*) pairs,
/// ascending; leaves `forces` at the last activation.
pub fn stable_equilibria<F: ReducedInternalForces>(
    forces: &mut F,
    activations: &[f64],
) -> Result<Vec<(f64, Vec<f64>)>, CubatureError> {
    let mut table: Vec<f64> = activations.to_vec();
    table.sort_by(f64::total_cmp);
    table.dedup();
    if table.is_empty() || table.iter().any(|a| !a.is_finite()) {
        return Err(CubatureError::BadOptions(format!(
            "equilibria at activations {activations:?}"
        )));
    }
    let r = forces.r();
    // The force scale of the convergence test: the largest force at rest over the table
    // (the active pull). Where it is rounding beside the stiffness (a passive material,
    // or only activation 0), rest is the equilibrium at every activation.
    let mut scale = 0.0f64;
    let mut stiffness = 0.0f64;
    let (mut f0, mut k0) = (vec![0.0; r], vec![0.0; r * r]);
    let mut scratch = forces.scratch();
    for &alpha in &table {
        forces.set_activation(alpha);
        forces.evaluate(&vec![0.0; r], &mut f0, &mut k0, &mut scratch);
        scale = scale.max(f0.iter().map(|x| x * x).sum::<f64>().sqrt());
        stiffness = k0.iter().fold(stiffness, |m, x| m.max(x.abs()));
    }
    if scale <= 1e-12 * stiffness {
        return Ok(table.iter().map(|&a| (a, vec![0.0; r])).collect());
    }
    let mut q = vec![0.0; r];
    let mut from = 0.0;
    let mut states = Vec::new();
    for &alpha in &table {
        let steps = ((alpha - from).abs() / 0.25).ceil().max(1.0) as usize;
        for s in 1..=steps {
            let a = from + (alpha - from) * s as f64 / steps as f64;
            forces.set_activation(a);
            let rel = reduced_equilibrium(&*forces, &mut q, scale);
            if rel.is_nan() || rel > 1e-8 {
                return Err(CubatureError::BadOptions(format!(
                    "equilibria: Newton on the reduced forces did not converge at \
                     activation {a} (residual {rel:.2e} of the active force at rest)"
                )));
            }
        }
        from = alpha;
        states.push((alpha, q.clone()));
    }
    Ok(states)
}

/// P(I) and dP/dF(I) of each listed element, times its `scale`.
#[allow(clippy::type_complexity)]
fn point_linearizations<M: TetMaterial + ?Sized>(
    material: &M,
    elements: &[usize],
    scale: &[f64],
) -> (Vec<[f64; 9]>, Vec<nalgebra::SMatrix<f64, 9, 9>>) {
    let id = Matrix3::identity();
    elements
        .iter()
        .zip(scale)
        .map(|(&e, &s)| {
            let p = material.first_pk(e, &id) * s;
            (
                std::array::from_fn(|c| p.as_slice()[c]),
                material.first_pk_tangent(e, &id) * s,
            )
        })
        .unzip()
}

/// The exact linear part as a function of the activation (module docs, "Exact linear
/// part"): where the material's stress and tangent at rest are affine in the activation
/// (the Blemker muscle: P = P_passive + alpha P_active), the linearization at activation
/// 0 and its slope, so that every activation gets its own exact affine part. Otherwise
/// (a passive material, or one not affine in its activation) the linearization at the
/// material's activation on entry and no slope. The material's activation is restored.
fn affine_linearization<M: TetMaterial + ?Sized>(
    kernel: &TetKernel,
    material: &mut M,
    basis: &DMatrix<f64>,
    elements: &[usize],
    scale: &[f64],
) -> (LinearPart, Option<LinearPart>) {
    let entry = material.activation();
    // Checked on every tet of the mesh (the reduced part sums them all).
    let all: Vec<usize> = (0..kernel.num_elements()).collect();
    let ones = vec![1.0; all.len()];
    let mut at = |alpha: f64| {
        material.set_activation(alpha);
        point_linearizations(&*material, &all, &ones)
    };
    let (p_lo, t_lo) = at(0.0);
    let (p_mid, t_mid) = at(0.5);
    let (p_hi, t_hi) = at(1.0);
    material.set_activation(entry);
    // Affine to rounding: the midpoint is the mean of the ends.
    let mut largest = 0.0f64;
    let mut deviation = 0.0f64;
    let mut changes = false;
    let mut check = |lo: &[f64], mid: &[f64], hi: &[f64]| {
        for ((l, m), h) in lo.iter().zip(mid).zip(hi) {
            largest = largest.max(l.abs()).max(h.abs());
            deviation = deviation.max((m - 0.5 * (l + h)).abs());
            changes |= l != h;
        }
    };
    for e in 0..all.len() {
        check(&p_lo[e], &p_mid[e], &p_hi[e]);
        check(t_lo[e].as_slice(), t_mid[e].as_slice(), t_hi[e].as_slice());
    }
    if !changes || deviation > 1e-10 * largest {
        return (
            LinearPart::at_rest(kernel, &*material, basis, elements, scale),
            None,
        );
    }
    material.set_activation(0.0);
    let base = LinearPart::at_rest(kernel, &*material, basis, elements, scale);
    material.set_activation(1.0);
    let one = LinearPart::at_rest(kernel, &*material, basis, elements, scale);
    material.set_activation(entry);
    let slope = LinearPart::difference(&one, &base);
    (base, Some(slope))
}

/// The reduced linearization at rest of the full mesh: U^T K0 U and U^T R(0).
fn reduced_linearization<M: TetMaterial + ?Sized>(
    kernel: &TetKernel,
    material: &M,
    basis: &DMatrix<f64>,
) -> (Vec<f64>, Vec<f64>) {
    let (n, r) = (kernel.num_dofs(), basis.ncols());
    let zero = vec![0.0; n];
    let mut k0 = kernel.new_matrix();
    kernel.tangent_stiffness(material, &zero, &mut k0);
    let mut ku = DMatrix::<f64>::zeros(n, r);
    let mut col = vec![0.0; n];
    for j in 0..r {
        k0.mul_vec(basis.column(j).as_slice(), &mut col);
        ku.column_mut(j).copy_from_slice(&col);
    }
    let kr = basis.transpose() * ku;
    let kr = (&kr + kr.transpose()) * 0.5;
    let f0 = exact_reduced_force(kernel, material, basis, &vec![0.0; r]);
    (kr.as_slice().to_vec(), f0)
}

/// Buffers of one cubature evaluation: the tangent applied to the mode gradients for
/// one block of points (r x 9B), in the precision of the stiffness product; and, for
/// [`CubatureForces::evaluate_step`] with stiffness slices, each slice's share of the
/// stiffness and which slice is refreshed next.
#[derive(Debug, Clone)]
pub struct CubatureScratch {
    h64: Vec<f64>,
    h32: Vec<f32>,
    /// The f32 product (f32 precision), r columns of the padded length.
    k32: Vec<f32>,
    /// The stiffness slices' products (lower triangles, one after the other), in the
    /// precision of the product; empty with one slice.
    slices64: Vec<f64>,
    slices32: Vec<f32>,
    /// Number of slices the buffers hold.
    slices: usize,
    /// The slice [`CubatureForces::evaluate_step`] refreshes next.
    next_slice: usize,
    /// Whether every slice holds a product (false until the first step).
    filled: bool,
}

impl CubatureScratch {
    /// Marks the stiffness slices stale: the next [`CubatureForces::evaluate_step`]
    /// refreshes them all.
    pub fn restart(&mut self) {
        self.filled = false;
        self.next_slice = 0;
    }
}

/// Storage of the mode gradients G and arithmetic of the stiffness product K = G H^T,
/// the dominant cost (9N r^2 / 2 multiply-adds). Stresses, forces and their sums are
/// f64 in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CubaturePrecision {
    /// G in f64, the product in f64.
    F64,
    /// G rounded to f32 once (a relative change of 6e-8 of the model, used consistently
    /// by the force, the energy and the stiffness, so the force stays the exact
    /// gradient of the energy), the stiffness product in f32 (relative rounding about
    /// 1e-6; the stiffness only steers the Newton update): half the memory traffic and
    /// twice the vector width. The default ([`CubaturePrecision::default_for`]).
    F32,
}

impl CubaturePrecision {
    /// f32 at every r. With its columns padded to whole 8-lane registers it is the
    /// faster at every size measured, force and stiffness (the StVK bridge and the muscle
    /// at r = 20, the bridge at r = 60 and 100; docs/performance.md, "Optimized cubature
    /// and the reduced muscle"). The argument is kept for callers that choose by size.
    pub fn default_for(_r: usize) -> Self {
        CubaturePrecision::F32
    }
}

/// Bytes of one block of the tangent products (with the block of G it multiplies and
/// K, it stays in a 512 KiB L2 cache).
const BLOCK_BYTES: usize = 128 * 1024;

/// The 9 x r matrix G_e (column-major, vec F convention) of tet `e`: column j is
/// vec(sum_a U_a,j g_a^T), written transposed into `out` (r x 9, column c of length r).
fn mode_gradients(kernel: &TetKernel, basis: &DMatrix<f64>, e: usize, out: &mut [f64]) {
    let r = basis.ncols();
    let tet = kernel.tets[e];
    let g = &kernel.grads[e];
    out[..9 * r].iter_mut().for_each(|x| *x = 0.0);
    for (a, &v) in tet.iter().enumerate() {
        for c in 0..3 {
            let gac = g[a][c];
            for i in 0..3 {
                // vec index 3 c + i is F[i][c] += u_a[i] g_a[c].
                let col = &mut out[(3 * c + i) * r..(3 * c + i + 1) * r];
                let row = 3 * v + i;
                for (j, x) in col.iter_mut().enumerate() {
                    *x += basis[(row, j)] * gac;
                }
            }
        }
    }
}

fn check_basis(kernel: &TetKernel, basis: &DMatrix<f64>) -> Result<usize, CubatureError> {
    if basis.nrows() != kernel.num_dofs() {
        return Err(CubatureError::BasisShape {
            rows: basis.nrows(),
            dofs: kernel.num_dofs(),
        });
    }
    let r = basis.ncols();
    if r == 0 || r > MAX_R {
        return Err(CubatureError::BasisSize(r));
    }
    Ok(r)
}

#[inline]
fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yv, xv) in y.iter_mut().zip(x) {
        *yv += alpha * xv;
    }
}

/// 1 on the vec-diagonal entries (0, 4, 8) of a 3x3 matrix.
#[inline]
fn identity_entry(c: usize) -> f64 {
    if c.is_multiple_of(4) {
        1.0
    } else {
        0.0
    }
}

/// Scalar types of the stored gradients and the stiffness product.
trait Real:
    Copy + Default + std::ops::Mul<Output = Self> + std::ops::Add<Output = Self> + Into<f64>
{
    /// Lanes of one AVX2 register.
    const LANES: usize;
    fn mul_add(self, b: Self, c: Self) -> Self;
    fn from_f64(x: f64) -> Self;
    /// [`lower_tile_n`] in AVX2 registers (`LANES` lanes) or, `wide`, AVX-512 ones.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and AVX-512F when `wide`.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn simd_tile<const M: usize, const N: usize>(
        wide: bool,
        k: &mut [Self],
        ldk: usize,
        b: &LowerBlock<'_, Self>,
        i0: usize,
        j0: usize,
        accumulate: bool,
    );
    /// [`dot9`] in AVX2 registers (the same chains, so the same bits).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn simd_dot9(g: &[Self], q: &[f64], r: usize, stride: usize) -> [f64; 9];
    /// [`axpy9`] in AVX2 registers (the same chains, so the same bits).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    unsafe fn simd_axpy9(p: &[f64; 9], g: &[Self], force: &mut [f64], r: usize, stride: usize);
}
/// The impl of [`Real`] for one float type, its lanes per AVX2 register and its two
/// register tiles.
macro_rules! real {
    ($t:ty, $lanes:literal, $avx2:ident, $avx512:ident, $dot9:ident, $axpy9:ident) => {
        impl Real for $t {
            const LANES: usize = $lanes;
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_tile<const M: usize, const N: usize>(
                wide: bool,
                k: &mut [$t],
                ldk: usize,
                b: &LowerBlock<'_, $t>,
                i0: usize,
                j0: usize,
                accumulate: bool,
            ) {
                if wide {
                    tiles::$avx512::<M, N>(k, ldk, b, i0, j0, accumulate)
                } else {
                    tiles::$avx2::<M, N>(k, ldk, b, i0, j0, accumulate)
                }
            }
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_dot9(g: &[$t], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
                rows::$dot9(g, q, r, stride)
            }
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn simd_axpy9(
                p: &[f64; 9],
                g: &[$t],
                force: &mut [f64],
                r: usize,
                stride: usize,
            ) {
                rows::$axpy9(p, g, force, r, stride)
            }
            #[inline(always)]
            fn mul_add(self, b: $t, c: $t) -> $t {
                <$t>::mul_add(self, b, c)
            }
            #[inline(always)]
            #[allow(clippy::unnecessary_cast)]
            fn from_f64(x: f64) -> $t {
                x as $t
            }
        }
    };
}
real!(f64, 4, avx2_f64, avx512_f64, dot9_f64, axpy9_f64);
real!(f32, 8, avx2_f32, avx512_f32, dot9_f32, axpy9_f32);

/// [`dot9`] and [`axpy9`] in explicit AVX2 registers: four f64 lanes of every column
/// at a time, the f32 storage widened on load. The compiler's own vectorization of the
/// generic loops spilled the column pointers and shuffled pairs of lanes; these are
/// the same fused multiply-adds in the same order.
#[cfg(target_arch = "x86_64")]
mod rows {
    use std::arch::x86_64::*;

    macro_rules! rows {
        ($dot9:ident, $axpy9:ident, $t:ty, $load4:expr) => {
            /// # Safety
            /// The CPU has AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $dot9(g: &[$t], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
                assert!(g.len() >= 9 * stride && stride >= r && q.len() >= r);
                let chunks = r / 4;
                let (gp, qp) = (g.as_ptr(), q.as_ptr());
                // Nine independent chains side by side (one register each), so that
                // the multiply-adds' latency overlaps.
                let mut acc = [_mm256_setzero_pd(); 9];
                for k in 0..chunks {
                    // SAFETY: 4 k + 3 < r <= stride, inside g and q (asserted).
                    unsafe {
                        let qk = _mm256_loadu_pd(qp.add(4 * k));
                        for (c, a) in acc.iter_mut().enumerate() {
                            let gk = $load4(gp.add(c * stride + 4 * k));
                            *a = _mm256_fmadd_pd(gk, qk, *a);
                        }
                    }
                }
                let mut out = [0.0; 9];
                for (c, v) in out.iter_mut().enumerate() {
                    let mut a = [0.0f64; 4];
                    // SAFETY: a holds four f64.
                    unsafe { _mm256_storeu_pd(a.as_mut_ptr(), acc[c]) };
                    *v = super::identity_entry(c) + ((a[0] + a[1]) + (a[2] + a[3]));
                    for j in 4 * chunks..r {
                        *v = (g[c * stride + j] as f64).mul_add(q[j], *v);
                    }
                }
                out
            }

            /// # Safety
            /// The CPU has AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn $axpy9(
                p: &[f64; 9],
                g: &[$t],
                force: &mut [f64],
                r: usize,
                stride: usize,
            ) {
                assert!(g.len() >= 9 * stride && stride >= r && force.len() >= r);
                let chunks = r / 4;
                let (gp, fp) = (g.as_ptr(), force.as_mut_ptr());
                let pv: [__m256d; 9] = std::array::from_fn(|c| _mm256_set1_pd(p[c]));
                for k in 0..chunks {
                    // SAFETY: 4 k + 3 < r <= stride, inside g and force (asserted).
                    unsafe {
                        let mut acc = _mm256_loadu_pd(fp.add(4 * k));
                        for (c, pc) in pv.iter().enumerate() {
                            let gk = $load4(gp.add(c * stride + 4 * k));
                            acc = _mm256_fmadd_pd(*pc, gk, acc);
                        }
                        _mm256_storeu_pd(fp.add(4 * k), acc);
                    }
                }
                for j in 4 * chunks..r {
                    for (c, &pc) in p.iter().enumerate() {
                        force[j] = pc.mul_add(g[c * stride + j] as f64, force[j]);
                    }
                }
            }
        };
    }

    /// Four f32 widened to f64.
    ///
    /// # Safety
    /// Four f32 readable at `p`; the CPU has AVX.
    #[inline(always)]
    unsafe fn load4_f32(p: *const f32) -> __m256d {
        // SAFETY: as the caller promises.
        unsafe { _mm256_cvtps_pd(_mm_loadu_ps(p)) }
    }

    /// Four f64.
    ///
    /// # Safety
    /// Four f64 readable at `p`; the CPU has AVX.
    #[inline(always)]
    unsafe fn load4_f64(p: *const f64) -> __m256d {
        // SAFETY: as the caller promises.
        unsafe { _mm256_loadu_pd(p) }
    }

    rows!(dot9_f32, axpy9_f32, f32, load4_f32);
    rows!(dot9_f64, axpy9_f64, f64, load4_f64);
}

#[inline(always)]
fn fmadd_t<T: Real>(a: T, b: T, c: T) -> T {
    a.mul_add(b, c)
}

/// h_a = sum_c t[a, c] g_c for the 9 r-vectors g_c of one point (r x 9 column-major
/// blocks), one register width of modes at a time so that the nine g chunks stay in
/// registers.
#[inline(always)]
fn apply_tangent<T: Real>(t: &[[T; 9]; 9], g: &[T], h: &mut [T], r: usize) {
    // `r` is the column stride of g and h (padded for f32: every lane is computed, the
    // padding's zeros give zeros).
    if T::LANES == 8 {
        apply_tangent_lanes::<T, 8>(t, g, h, r)
    } else {
        apply_tangent_lanes::<T, 4>(t, g, h, r)
    }
}

#[inline(always)]
fn apply_tangent_lanes<T: Real, const L: usize>(t: &[[T; 9]; 9], g: &[T], h: &mut [T], r: usize) {
    let g = &g[..9 * r];
    let h = &mut h[..9 * r];
    let mut j = 0;
    while j + L <= r {
        let mut gc = [[T::default(); L]; 9];
        for (c, chunk) in gc.iter_mut().enumerate() {
            chunk.copy_from_slice(&g[c * r + j..c * r + j + L]);
        }
        for (a, ta) in t.iter().enumerate() {
            let mut acc = [T::default(); L];
            for (chunk, &tac) in gc.iter().zip(ta) {
                for l in 0..L {
                    acc[l] = fmadd_t::<T>(tac, chunk[l], acc[l]);
                }
            }
            h[a * r + j..a * r + j + L].copy_from_slice(&acc);
        }
        j += L;
    }
    for jj in j..r {
        for (a, ta) in t.iter().enumerate() {
            let mut acc = T::default();
            for (c, &tac) in ta.iter().enumerate() {
                acc = fmadd_t::<T>(tac, g[c * r + jj], acc);
            }
            h[a * r + jj] = acc;
        }
    }
}

/// vec F = I + G_p q of one point: nine dot products of length r in one pass over q,
/// in f64 whatever the storage of G (columns `stride` apart).
#[inline(always)]
fn dot9<S: Real>(g: &[S], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
    const L: usize = 4;
    let g = &g[..9 * stride];
    let q = &q[..r];
    let mut acc = [[0.0f64; L]; 9];
    let mut j = 0;
    while j + L <= r {
        let qc: [f64; L] = std::array::from_fn(|l| q[j + l]);
        for (c, a) in acc.iter_mut().enumerate() {
            let gc = &g[c * stride + j..c * stride + j + L];
            for l in 0..L {
                a[l] = fmadd_t::<f64>(gc[l].into(), qc[l], a[l]);
            }
        }
        j += L;
    }
    std::array::from_fn(|c| {
        let a = &acc[c];
        let mut v = identity_entry(c) + ((a[0] + a[1]) + (a[2] + a[3]));
        for jj in j..r {
            v = fmadd_t::<f64>(g[c * stride + jj].into(), q[jj], v);
        }
        v
    })
}

/// [`dot9`], in explicit AVX2 registers when `SIMD` (the same bits).
#[inline(always)]
fn dot9_with<S: Real, const SIMD: bool>(g: &[S], q: &[f64], r: usize, stride: usize) -> [f64; 9] {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: `SIMD` paths run only where the CPU has AVX2 and FMA (their callers'
        // contract, `CubatureKernels`).
        return unsafe { S::simd_dot9(g, q, r, stride) };
    }
    dot9::<S>(g, q, r, stride)
}

/// [`axpy9`], in explicit AVX2 registers when `SIMD` (the same bits).
#[inline(always)]
fn axpy9_with<S: Real, const SIMD: bool>(
    p: &[f64; 9],
    g: &[S],
    force: &mut [f64],
    r: usize,
    stride: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if SIMD {
        // SAFETY: as in `dot9_with`.
        return unsafe { S::simd_axpy9(p, g, force, r, stride) };
    }
    axpy9::<S>(p, g, force, r, stride)
}

/// force += sum_c p_c g_c over one point's nine r-vectors (f64 sums).
#[inline(always)]
fn axpy9<S: Real>(p: &[f64; 9], g: &[S], force: &mut [f64], r: usize, stride: usize) {
    const L: usize = 4;
    let g = &g[..9 * stride];
    let force = &mut force[..r];
    let mut j = 0;
    while j + L <= r {
        let mut fc: [f64; L] = std::array::from_fn(|l| force[j + l]);
        for (c, &pc) in p.iter().enumerate() {
            let gc = &g[c * stride + j..c * stride + j + L];
            for l in 0..L {
                fc[l] = fmadd_t::<f64>(pc, gc[l].into(), fc[l]);
            }
        }
        force[j..j + L].copy_from_slice(&fc);
        j += L;
    }
    for jj in j..r {
        for (c, &pc) in p.iter().enumerate() {
            force[jj] = fmadd_t::<f64>(pc, g[c * stride + jj].into(), force[jj]);
        }
    }
}

/// pk -= p0 + t0 vec(F - I) (all scaled by the point's w V).
#[inline(always)]
fn subtract_linearization(
    pk: &mut Matrix3<f64>,
    fv: &[f64],
    p0: &[f64; 9],
    t0: &nalgebra::SMatrix<f64, 9, 9>,
) {
    let d: [f64; 9] = std::array::from_fn(|c| fv[c] - identity_entry(c));
    let out = pk.as_mut_slice();
    for a in 0..9 {
        let mut v = p0[a];
        for (c, dc) in d.iter().enumerate() {
            v += t0[(a, c)] * dc;
        }
        out[a] -= v;
    }
}

/// The lower triangle of `k` (r columns, leading dimension `ldk`, in the product's
/// precision) added to that of `stiffness` (r x r, f64).
#[inline(always)]
fn add_lower<T: Real>(stiffness: &mut [f64], k: &[T], ldk: usize, r: usize) {
    for j in 0..r {
        for i in j..r {
            stiffness[j * r + i] += k[j * ldk + i].into();
        }
    }
}

/// force += the affine part with the points' linearizations summed into it (the force
/// of points whose stresses were taken whole; [`LinearPart::k_force`]).
#[inline(always)]
fn add_affine(lin: &LinearPart, q: &[f64], force: &mut [f64]) {
    let r = q.len();
    for (j, &qj) in q.iter().enumerate() {
        axpy(qj, &lin.k_force[j * r..(j + 1) * r], force);
    }
    for (f, f0) in force.iter_mut().zip(&lin.f_force) {
        *f += f0;
    }
}

/// K (lower triangle, column-major, leading dimension `ldk`) (+)= G H^T for one block
/// of `cols` columns of G and H (r rows each, `stride` apart), with tiles of `L`-lane
/// registers (and `H = L / 2`-lane ones for what is left).
///
/// Every entry is a chain of fused multiply-adds over the columns in order, started from
/// K (`accumulate`) or from zero, whatever the register width, the tiling or the chunks
/// of columns, so the result is the same bit for bit on every CPU and for any block size
/// (a chain cut between blocks and resumed from the stored entry is the same chain).
/// Written by hand instead of faer's triangular product because faer picks its kernel
/// (AVX2 or AVX-512) and its blocking (from the cache sizes it reads) at run time: with
/// f32 storage the rounded stiffness then differed from one CPU to another, and a
/// recorded replay whose contact set sits on an edge did not reproduce on another
/// machine.
///
/// Columns go in chunks that stay in the L1 cache while every tile passes over them;
/// tiles are two registers of rows by four columns (8 accumulators). The tiles that
/// straddle the diagonal also compute a few entries above it, which the caller never
/// reads. Rows past `r` up to `stride` are the zero padding of G.
#[inline(always)]
fn lower_product<T: Real, const L: usize, const H: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    block: &LowerBlock<'_, T>,
    accumulate: bool,
) {
    let LowerBlock {
        g,
        h,
        r,
        stride,
        cols,
    } = *block;
    assert!(ldk >= stride && k.len() >= ldk * r && H * 2 == L);
    let chunk = (16 * 1024 / (stride * std::mem::size_of::<T>())).max(8);
    let mut c0 = 0;
    while c0 < cols {
        let c1 = (c0 + chunk).min(cols);
        let part = LowerBlock {
            g: &g[c0 * stride..c1 * stride],
            h: &h[c0 * stride..c1 * stride],
            cols: c1 - c0,
            ..*block
        };
        lower_chunk::<T, L, H, SIMD>(k, ldk, &part, accumulate || c0 > 0);
        c0 = c1;
    }
}

/// The operands of [`lower_product`]: G and H, `cols` columns of `stride` entries
/// each, of which the first r are used.
#[derive(Clone, Copy)]
struct LowerBlock<'a, T> {
    g: &'a [T],
    h: &'a [T],
    r: usize,
    stride: usize,
    cols: usize,
}

#[inline(always)]
fn lower_chunk<T: Real, const L: usize, const H: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    accumulate: bool,
) {
    let LowerBlock {
        g,
        h,
        r,
        stride,
        cols,
    } = *b;
    let mut j0 = 0;
    while j0 < r {
        let nj = (r - j0).min(4);
        let mut i0 = (j0 / H) * H;
        while i0 + 2 * L <= stride {
            lower_tile::<T, L, 2, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += 2 * L;
        }
        if i0 + L <= stride {
            lower_tile::<T, L, 1, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += L;
        }
        if i0 + H <= stride {
            lower_tile::<T, H, 1, SIMD>(k, ldk, b, i0, j0, nj, accumulate);
            i0 += H;
        }
        // Rows that do not fill a register (f64 storage with r not a multiple of H).
        for i in i0.max(j0)..r {
            for j in j0..j0 + nj {
                let mut v = if accumulate {
                    k[j * ldk + i]
                } else {
                    T::default()
                };
                for c in 0..cols {
                    v = fmadd_t(g[c * stride + i], h[c * stride + j], v);
                }
                k[j * ldk + i] = v;
            }
        }
        j0 += nj;
    }
}

/// One tile of [`lower_product`]: rows i0 .. i0 + M L, columns j0 .. j0 + nj (nj <= 4).
/// The tile kernels must be called with no more lanes than the CPU has.
#[inline(always)]
fn lower_tile<T: Real, const L: usize, const M: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    i0: usize,
    j0: usize,
    nj: usize,
    accumulate: bool,
) {
    if nj == 4 {
        lower_tile_n::<T, L, M, 4, SIMD>(k, ldk, b, i0, j0, accumulate)
    } else {
        for j in j0..j0 + nj {
            lower_tile_n::<T, L, M, 1, SIMD>(k, ldk, b, i0, j, accumulate)
        }
    }
}

///
/// With `SIMD` the tile runs in explicit AVX2 (L = `T::LANES`) or AVX-512 (L = 2
/// `T::LANES`) registers ([`tiles`]); the caller guarantees that the CPU has them.
#[inline(always)]
fn lower_tile_n<T: Real, const L: usize, const M: usize, const N: usize, const SIMD: bool>(
    k: &mut [T],
    ldk: usize,
    b: &LowerBlock<'_, T>,
    i0: usize,
    j0: usize,
    accumulate: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if SIMD && (L == T::LANES || L == 2 * T::LANES) {
        // SAFETY: the caller's CPU has the registers of L lanes (`SIMD`).
        unsafe { T::simd_tile::<M, N>(L == 2 * T::LANES, k, ldk, b, i0, j0, accumulate) };
        return;
    }
    let LowerBlock {
        g, h, stride, cols, ..
    } = *b;
    if cols == 0 {
        return;
    }
    // The last column's reads end inside g and h (checked once: the loop below reads
    // without bounds checks, which otherwise cost as much as its multiply-adds).
    assert!(i0 + M * L <= stride && j0 + N <= stride && (j0 + N - 1) * ldk + i0 + M * L <= k.len());
    assert!(g.len() >= cols * stride && h.len() >= cols * stride);
    let mut acc = [[[T::default(); L]; M]; N];
    if accumulate {
        for (n, accn) in acc.iter_mut().enumerate() {
            for (m, a) in accn.iter_mut().enumerate() {
                let at = (j0 + n) * ldk + i0 + m * L;
                a.copy_from_slice(&k[at..at + L]);
            }
        }
    }
    for c in 0..cols {
        let (gb, hb) = (c * stride + i0, c * stride + j0);
        for (n, accn) in acc.iter_mut().enumerate() {
            // SAFETY: hb + n < c * stride + j0 + N <= cols * stride <= h.len() (asserted).
            let hv = unsafe { *h.get_unchecked(hb + n) };
            for (m, a) in accn.iter_mut().enumerate() {
                for (l, al) in a.iter_mut().enumerate() {
                    // SAFETY: gb + m L + l < c * stride + i0 + M L <= g.len() (asserted).
                    let x = unsafe { *g.get_unchecked(gb + m * L + l) };
                    *al = fmadd_t(x, hv, *al);
                }
            }
        }
    }
    for (n, accn) in acc.iter().enumerate() {
        for (m, a) in accn.iter().enumerate() {
            let at = (j0 + n) * ldk + i0 + m * L;
            k[at..at + L].copy_from_slice(a);
        }
    }
}

/// The tiles of [`lower_product`] in explicit AVX2 and AVX-512 registers: the same
/// chains of fused multiply-adds as the generic [`lower_tile_n`], so the same bits.
/// Written with intrinsics because the compiler's vectorization of the generic tile is
/// fragile: compiled for AVX-512, its 2 x 4 tile of 16-lane accumulators (128 floats)
/// stayed on the stack as scalar fused multiply-adds, and the r = 100 product ran ten
/// times slower than the AVX2 one.
#[cfg(target_arch = "x86_64")]
mod tiles {
    use super::LowerBlock;
    use std::arch::x86_64::*;

    macro_rules! tile {
        ($name:ident, $feature:literal, $t:ty, $v:ty, $lanes:literal,
         $load:ident, $store:ident, $splat:ident, $fmadd:ident, $zero:ident) => {
            /// K (rows i0 .. i0 + M L, columns j0 .. j0 + N) (+)= G H^T over the block's
            /// columns: M N registers of accumulators.
            ///
            /// # Safety
            /// The CPU has the instructions of `$feature`.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name<const M: usize, const N: usize>(
                k: &mut [$t],
                ldk: usize,
                b: &LowerBlock<'_, $t>,
                i0: usize,
                j0: usize,
                accumulate: bool,
            ) {
                const L: usize = $lanes;
                let LowerBlock {
                    g, h, stride, cols, ..
                } = *b;
                if cols == 0 {
                    return;
                }
                assert!(
                    i0 + M * L <= stride
                        && j0 + N <= stride
                        && (j0 + N - 1) * ldk + i0 + M * L <= k.len()
                );
                assert!(g.len() >= cols * stride && h.len() >= cols * stride);
                let mut acc = [[$zero(); M]; N];
                let kp = k.as_mut_ptr();
                if accumulate {
                    for (n, accn) in acc.iter_mut().enumerate() {
                        for (m, a) in accn.iter_mut().enumerate() {
                            // SAFETY: inside k (asserted).
                            *a = unsafe { $load(kp.add((j0 + n) * ldk + i0 + m * L)) };
                        }
                    }
                }
                let (gp, hp) = (g.as_ptr(), h.as_ptr());
                for c in 0..cols {
                    let (gb, hb) = (c * stride + i0, c * stride + j0);
                    let mut x = [$zero(); M];
                    for (m, xm) in x.iter_mut().enumerate() {
                        // SAFETY: gb + M L <= cols * stride <= g.len() (asserted).
                        *xm = unsafe { $load(gp.add(gb + m * L)) };
                    }
                    for (n, accn) in acc.iter_mut().enumerate() {
                        // SAFETY: hb + N <= cols * stride <= h.len() (asserted).
                        let hv = $splat(unsafe { *hp.add(hb + n) });
                        for (a, &xm) in accn.iter_mut().zip(&x) {
                            *a = $fmadd(xm, hv, *a);
                        }
                    }
                }
                for (n, accn) in acc.iter().enumerate() {
                    for (m, &a) in accn.iter().enumerate() {
                        // SAFETY: inside k (asserted).
                        unsafe { $store(kp.add((j0 + n) * ldk + i0 + m * L), a) };
                    }
                }
            }
        };
    }

    tile!(
        avx2_f32,
        "avx2,fma",
        f32,
        __m256,
        8,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        _mm256_setzero_ps
    );
    tile!(
        avx2_f64,
        "avx2,fma",
        f64,
        __m256d,
        4,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_set1_pd,
        _mm256_fmadd_pd,
        _mm256_setzero_pd
    );
    tile!(
        avx512_f32,
        "avx512f",
        f32,
        __m512,
        16,
        _mm512_loadu_ps,
        _mm512_storeu_ps,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        _mm512_setzero_ps
    );
    tile!(
        avx512_f64,
        "avx512f",
        f64,
        __m512d,
        8,
        _mm512_loadu_pd,
        _mm512_storeu_pd,
        _mm512_set1_pd,
        _mm512_fmadd_pd,
        _mm512_setzero_pd
    );
}

/// The compilations of the per-point kernels and the stiffness product. All three do
/// the same arithmetic (the same chains of fused multiply-adds, in the same order), so
/// they give the same bits; they differ only in the instructions and their speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CubatureKernels {
    /// No target features (every fused multiply-add a library call where the build's
    /// target has no FMA: correct and slow).
    Portable,
    /// AVX2 and FMA (8 f32 lanes).
    Avx2,
    /// AVX-512F (16 f32 lanes for the stiffness product).
    Avx512,
}

impl CubatureKernels {
    /// The default at r modes: AVX-512 where the stiffness product dominates (r above
    /// 32), else at most AVX2: AVX-512 speeds the product up at r = 60 and 100, but slows
    /// the whole muscle evaluation at r = 20, where the scalar per-point material law
    /// dominates (wide instructions lower the core's clock for it too; the figures are in
    /// docs/performance.md, "Optimized cubature and the reduced muscle").
    pub fn default_for(r: usize) -> Self {
        let best = Self::detect();
        if r > 32 {
            best
        } else {
            best.min(CubatureKernels::Avx2)
        }
    }

    /// The fastest this CPU runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                return if has!("avx512f") {
                    CubatureKernels::Avx512
                } else {
                    CubatureKernels::Avx2
                };
            }
        }
        CubatureKernels::Portable
    }
}

impl<M: TetMaterial> CubatureForces<M> {
    /// Cubature with the given tets (`elements`, indices into `kernel`) and weights, in
    /// the basis `basis` (3n x r, one column per mode). With `exact_linear` the points
    /// integrate only the nonlinear remainder and the affine part U^T R(0) + U^T K0 U q
    /// is exact (at the material's activation now); the weights must come from a
    /// training with the same setting. The precision is
    /// [`CubaturePrecision::default_for`] r.
    pub fn from_points(
        kernel: &TetKernel,
        basis: &DMatrix<f64>,
        material: M,
        elements: &[usize],
        weights: &[f64],
        exact_linear: bool,
    ) -> Result<Self, CubatureError> {
        let r = check_basis(kernel, basis)?;
        if elements.len() != weights.len() {
            return Err(CubatureError::BadPoints(format!(
                "{} elements but {} weights",
                elements.len(),
                weights.len()
            )));
        }
        if let Some(&e) = elements.iter().find(|&&e| e >= kernel.num_elements()) {
            return Err(CubatureError::BadPoints(format!(
                "element {e} of a mesh of {} tets",
                kernel.num_elements()
            )));
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite() || **w < 0.0) {
            return Err(CubatureError::BadPoints(format!("weight {w}")));
        }
        let n = elements.len();
        let mut gt = vec![0.0; 9 * n * r];
        for (p, &e) in elements.iter().enumerate() {
            mode_gradients(kernel, basis, e, &mut gt[9 * p * r..9 * (p + 1) * r]);
        }
        let scale: Vec<f64> = elements
            .iter()
            .zip(weights)
            .map(|(&e, &w)| w * kernel.volume[e])
            .collect();
        let mut material = material;
        let (linear, linear_slope) = if exact_linear {
            let (base, slope) =
                affine_linearization(kernel, &mut material, basis, elements, &scale);
            match slope {
                Some(slope) => (Some(base.clone()), Some(Box::new((base, slope)))),
                None => (Some(base), None),
            }
        } else {
            (None, None)
        };
        let mut cub = CubatureForces {
            r,
            material,
            elements: elements.to_vec(),
            weights: weights.to_vec(),
            scale,
            gt,
            gt32: None,
            linear,
            linear_slope,
            linear_activation: 0.0,
            correction: None,
            kernels: CubatureKernels::default_for(r),
            block_bytes: BLOCK_BYTES,
            stiffness_slices: 1,
        };
        cub.set_precision(CubaturePrecision::default_for(r));
        let alpha = cub.material.activation();
        cub.set_activation(alpha);
        Ok(cub)
    }

    /// Every tet with weight 1: the exact reduced force U^T R(U q) and stiffness
    /// U^T K(U q) U (a reference, as slow as the full mesh; no separate linear part).
    /// Stored in f64: the exact equilibria and the training's stiffness probes are
    /// computed with it, and the f32 rounding of G would move them by about 1e-7.
    pub fn all_elements(
        kernel: &TetKernel,
        basis: &DMatrix<f64>,
        material: M,
    ) -> Result<Self, CubatureError> {
        let elements: Vec<usize> = (0..kernel.num_elements()).collect();
        let weights = vec![1.0; elements.len()];
        let mut exact = Self::from_points(kernel, basis, material, &elements, &weights, false)?;
        exact.set_precision(CubaturePrecision::F64);
        Ok(exact)
    }

    /// Whether the affine part of the force is exact ([`CubatureOptions::exact_linear`]).
    pub fn exact_linear(&self) -> bool {
        self.linear.is_some()
    }

    /// Number of reduced coordinates r.
    pub fn r(&self) -> usize {
        self.r
    }

    /// Number of cubature points N.
    pub fn num_points(&self) -> usize {
        self.elements.len()
    }

    /// The tets of the cubature points (indices into the kernel's mesh).
    pub fn elements(&self) -> &[usize] {
        &self.elements
    }

    /// The non-negative weight of each point (multiplying its rest volume).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The material.
    pub fn material(&self) -> &M {
        &self.material
    }

    /// Sets the material's run-time activation (a run-time input: no refit). With a
    /// material affine in its activation the exact linear part follows it (recombined
    /// only when the activation changes; allocates nothing).
    pub fn set_activation(&mut self, alpha: f64) {
        self.material.set_activation(alpha);
        let alpha = self.material.activation();
        if alpha != self.linear_activation {
            if let (Some(lin), Some(affine)) = (&mut self.linear, &self.linear_slope) {
                lin.combine(&affine.0, &affine.1, alpha);
            }
            if let Some(c) = &mut self.correction {
                c.interpolate(alpha);
            }
            self.linear_activation = alpha;
        }
    }

    /// Equilibrium correction: makes the unloaded equilibria of this cubature those of
    /// exact integration in the same basis, `equilibria` (activation, q*) from
    /// [`exact_equilibria`], by subtracting the fit's force residual there, f~(q*), linearly
    /// interpolated in the activation (a constant offset per activation: the stiffness
    /// is unchanged, and the energy gains the matching linear term). For a muscle whose
    /// unloaded equilibrium moves with its activation (an 8.8 mm contraction): the
    /// palpation stiffness depends on where the belly sits, and a force fit to 2%
    /// misplaces it (docs/muscle.md). Allocates; call it once after training or loading.
    pub fn correct_equilibria(
        &mut self,
        equilibria: &[(f64, Vec<f64>)],
    ) -> Result<(), CubatureError> {
        let r = self.r;
        if equilibria.is_empty()
            || equilibria
                .iter()
                .any(|(a, q)| !a.is_finite() || q.len() != r)
            || equilibria.windows(2).any(|w| w[0].0 >= w[1].0)
        {
            return Err(CubatureError::BadOptions(format!(
                "equilibrium correction: {} states, which must be of {r} coordinates at \
                 finite, strictly ascending activations",
                equilibria.len()
            )));
        }
        let entry = self.material.activation();
        self.correction = None;
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let mut scratch = self.scratch();
        let mut offsets = Vec::new();
        for (alpha, q) in equilibria {
            self.set_activation(*alpha);
            self.evaluate(q, &mut f, &mut k, &mut scratch);
            offsets.push(f.clone());
        }
        self.correction = Some(Box::new(EquilibriumCorrection {
            activations: equilibria.iter().map(|(a, _)| *a).collect(),
            offsets,
            now: vec![0.0; r],
        }));
        // Recombine at the activation on entry.
        self.linear_activation = f64::NAN;
        self.set_activation(entry);
        Ok(())
    }

    /// The storage and stiffness arithmetic in use.
    pub fn precision(&self) -> CubaturePrecision {
        if self.gt32.is_some() {
            CubaturePrecision::F32
        } else {
            CubaturePrecision::F64
        }
    }

    /// Sets the storage and stiffness arithmetic (default:
    /// [`CubaturePrecision::default_for`] r). Make new scratch buffers afterwards.
    pub fn set_precision(&mut self, precision: CubaturePrecision) {
        self.gt32 = match precision {
            CubaturePrecision::F64 => None,
            CubaturePrecision::F32 => {
                let (r, stride) = (self.r, self.stride32());
                let mut g = vec![0.0f32; stride * self.gt.len() / r];
                for (dst, src) in g.chunks_exact_mut(stride).zip(self.gt.chunks_exact(r)) {
                    for (d, &x) in dst.iter_mut().zip(src) {
                        *d = x as f32;
                    }
                }
                Some(g)
            }
        };
        self.sum_point_linearizations();
    }

    /// Fills [`LinearPart::k_force`] and [`LinearPart::f_force`] of the linear part (and
    /// of its activation endpoints) from the points' linearizations and G as stored, and
    /// recombines at the current activation. Allocates; called when G is (re)stored.
    fn sum_point_linearizations(&mut self) {
        let (r, n) = (self.r, self.elements.len());
        let stride = self.stride32();
        let g: Vec<f64> = match &self.gt32 {
            None => self.gt.clone(),
            Some(g32) => g32
                .chunks_exact(stride)
                .flat_map(|c| c[..r].iter().map(|&x| x as f64))
                .collect(),
        };
        let sum = |lin: &mut LinearPart| {
            let mut k = lin.k0.clone();
            let mut f = lin.f0.clone();
            let mut tg = vec![0.0; 9 * r];
            for p in 0..n {
                let gp = &g[9 * p * r..9 * (p + 1) * r];
                // tg column a = sum_c t0[a, c] g_c (r-vectors).
                for a in 0..9 {
                    for j in 0..r {
                        tg[a * r + j] = (0..9).map(|c| lin.t0[p][(a, c)] * gp[c * r + j]).sum();
                    }
                }
                for a in 0..9 {
                    let (ga, pa) = (&gp[a * r..(a + 1) * r], lin.p0[p][a]);
                    for j in 0..r {
                        f[j] -= pa * ga[j];
                        let tj = tg[a * r + j];
                        for (i, gi) in ga.iter().enumerate() {
                            k[j * r + i] -= gi * tj;
                        }
                    }
                }
            }
            // Symmetric in exact arithmetic (t0 is a Hessian); averaged so it is in
            // floating point too.
            for j in 0..r {
                for i in j + 1..r {
                    let m = 0.5 * (k[j * r + i] + k[i * r + j]);
                    k[j * r + i] = m;
                    k[i * r + j] = m;
                }
            }
            lin.k_force = k;
            lin.f_force = f;
        };
        if let Some(lin) = &mut self.linear {
            sum(lin);
        }
        if let Some(affine) = &mut self.linear_slope {
            sum(&mut affine.0);
            sum(&mut affine.1);
        }
        // Recombine at the current activation.
        self.linear_activation = f64::NAN;
        let alpha = self.material.activation();
        self.set_activation(alpha);
    }

    /// Points per block of the stiffness product.
    fn block_points(&self) -> usize {
        let (bytes, stride) = match self.precision() {
            CubaturePrecision::F64 => (8, self.r),
            CubaturePrecision::F32 => (4, self.stride32()),
        };
        (self.block_bytes / (9 * stride * bytes)).clamp(1, self.elements.len().max(1))
    }

    /// Column length of the f32 storage: r rounded up to whole 8-lane registers.
    fn stride32(&self) -> usize {
        self.r.div_ceil(8) * 8
    }

    /// Column length of the storage of scalar type `S` (f64: r; f32: [`Self::stride32`]).
    fn stride_of<S: Real>(&self) -> usize {
        if S::LANES == 8 {
            self.stride32()
        } else {
            self.r
        }
    }

    /// Buffers for [`Self::evaluate`] (sized for the current precision).
    pub fn scratch(&self) -> CubatureScratch {
        let (n64, n32) = match self.precision() {
            CubaturePrecision::F64 => (9 * self.block_points() * self.r, 0),
            CubaturePrecision::F32 => (0, 9 * self.block_points() * self.stride32()),
        };
        let slices = self.stiffness_slices;
        let lagged = if slices > 1 { slices } else { 0 };
        CubatureScratch {
            h64: vec![0.0; n64],
            h32: vec![0.0; n32],
            k32: vec![0.0; if n32 > 0 { self.stride32() * self.r } else { 0 }],
            slices64: vec![0.0; if n64 > 0 { lagged * self.r * self.r } else { 0 }],
            slices32: vec![
                0.0;
                if n32 > 0 {
                    lagged * self.stride32() * self.r
                } else {
                    0
                }
            ],
            slices,
            next_slice: 0,
            filled: false,
        }
    }

    /// The reduced force f~(q) alone (length r): the force of [`Self::evaluate`] without
    /// the stiffness (portable kernels). Allocates nothing; `scratch` is unused (kept for
    /// a uniform signature).
    pub fn evaluate_force(&self, q: &[f64], force: &mut [f64], scratch: &mut CubatureScratch) {
        let _ = scratch;
        #[cfg(target_arch = "x86_64")]
        if self.kernels >= CubatureKernels::Avx2 {
            // SAFETY: the CPU has AVX2 and FMA (`kernels` is never above `detect`).
            return unsafe { self.force_avx2(q, force) };
        }
        self.force_any::<false>(q, force)
    }

    /// [`Self::force_any`] with hardware fused multiply-adds (the same bits as the
    /// portable build's library calls, which cost a function call each).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn force_avx2(&self, q: &[f64], force: &mut [f64]) {
        self.force_any::<true>(q, force)
    }

    /// `SIMD`: the point loops in explicit AVX2 registers (the caller's CPU has them).
    #[inline(always)]
    fn force_any<const SIMD: bool>(&self, q: &[f64], force: &mut [f64]) {
        let r = self.r;
        force[..r].iter_mut().for_each(|x| *x = 0.0);
        let all = 0..self.elements.len();
        match &self.gt32 {
            None => self.force_with::<f64, SIMD>(&self.gt, q, force, all),
            Some(g32) => self.force_with::<f32, SIMD>(g32, q, force, all),
        }
        if let Some(lin) = &self.linear {
            add_affine(lin, &q[..r], &mut force[..r]);
        }
        self.subtract_correction(&mut force[..r]);
    }

    /// Adds the stresses of the points in `points` to `force` (without the affine part
    /// and the correction).
    #[inline(always)]
    fn force_with<S: Real, const SIMD: bool>(
        &self,
        g: &[S],
        q: &[f64],
        force: &mut [f64],
        points: std::ops::Range<usize>,
    ) {
        let r = self.r;
        let stride = self.stride_of::<S>();
        let q = &q[..r];
        let force = &mut force[..r];
        for p in points {
            let e = self.elements[p];
            let gp = &g[9 * p * stride..9 * (p + 1) * stride];
            let fv = dot9_with::<S, SIMD>(gp, q, r, stride);
            let f = Matrix3::from_column_slice(&fv);
            let pk = self.material.first_pk(e, &f) * self.scale[p];
            let pk: [f64; 9] = std::array::from_fn(|c| pk.as_slice()[c]);
            axpy9_with::<S, SIMD>(&pk, gp, force, r, stride);
        }
    }

    /// force -= the equilibrium correction at the current activation.
    #[inline(always)]
    fn subtract_correction(&self, force: &mut [f64]) {
        if let Some(c) = &self.correction {
            for (f, o) in force.iter_mut().zip(&c.now) {
                *f -= o;
            }
        }
    }

    /// f~(q) into `force` (length r) and K~(q) into `stiffness` (r x r column-major),
    /// using `scratch` (from [`Self::scratch`]). Allocates nothing.
    pub fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.dispatch::<false>(q, force, stiffness, scratch)
    }

    /// [`Self::evaluate`] (`SLICED` false) or the sliced evaluation of
    /// [`Self::evaluate_step`], in the compilation of the kernels in use.
    #[inline(always)]
    fn dispatch<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        match self.kernels {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX-512F, AVX2 and FMA (`kernels` is never above
            // `CubatureKernels::detect`).
            CubatureKernels::Avx512 => unsafe {
                self.evaluate_avx512::<SLICED>(q, force, stiffness, scratch)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2 and FMA (as above).
            CubatureKernels::Avx2 => unsafe {
                self.evaluate_avx2::<SLICED>(q, force, stiffness, scratch)
            },
            _ => self.evaluate_any::<false, false, SLICED>(q, force, stiffness, scratch),
        }
    }

    /// The force and stiffness for one step of an integrator
    /// ([`ReducedInternalForces::evaluate_step`]). With one stiffness slice (the
    /// default) this is [`Self::evaluate`]. With S slices
    /// ([`Self::set_stiffness_slices`]) the points are cut into S consecutive slices;
    /// the force is exact (every point's stress at `q`), but only one slice's tangent
    /// is evaluated and multiplied out, in turn, and the stiffness is the exact affine
    /// part plus every slice's share as of its last refresh, at most S - 1 calls ago
    /// (the first call, with a fresh `scratch`, refreshes them all). The Newton step
    /// that uses it is then a modified Newton step: the same residual, so the same
    /// equilibria, with a Jacobian lagged by at most S - 1 steps in its nonlinear part.
    /// The cost per call is the force plus 1 / S of the stiffness. The slices'
    /// products live in `scratch`, which must come from [`Self::scratch`] after the
    /// last [`Self::set_stiffness_slices`] (else this is [`Self::evaluate`]).
    /// Deterministic: the result depends only on the calls made with this `scratch`.
    /// Allocates nothing.
    pub fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let (s, r) = (self.stiffness_slices, self.r);
        let sized = match self.precision() {
            CubaturePrecision::F64 => scratch.slices64.len() == s * r * r,
            CubaturePrecision::F32 => scratch.slices32.len() == s * self.stride32() * r,
        };
        if s <= 1 || scratch.slices != s || !sized {
            return self.evaluate(q, force, stiffness, scratch);
        }
        self.dispatch::<true>(q, force, stiffness, scratch)
    }

    /// Cuts the points into `slices` (at least 1, at most the number of points) whose
    /// stiffness [`Self::evaluate_step`] refreshes in turn. Make new scratch buffers
    /// afterwards.
    pub fn set_stiffness_slices(&mut self, slices: usize) {
        self.stiffness_slices = slices.clamp(1, self.elements.len().max(1));
    }

    /// The number of stiffness slices ([`Self::set_stiffness_slices`]).
    pub fn stiffness_slices(&self) -> usize {
        self.stiffness_slices
    }

    /// Runs the given compilation of the kernels, or the fastest below it this CPU
    /// has, so tests can compare them on one machine. Returns the one chosen.
    pub fn use_kernels(&mut self, kernels: CubatureKernels) -> CubatureKernels {
        self.kernels = kernels.min(CubatureKernels::detect());
        self.kernels
    }

    /// The compilation of the kernels in use.
    pub fn kernels(&self) -> CubatureKernels {
        self.kernels
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn evaluate_avx2<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.evaluate_any::<false, true, SLICED>(q, force, stiffness, scratch);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn evaluate_avx512<const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        self.evaluate_any::<true, true, SLICED>(q, force, stiffness, scratch);
    }

    /// `WIDE`: the stiffness product in AVX-512's register width; `SIMD`: in explicit
    /// AVX2 / AVX-512 registers (the caller's CPU has them); `SLICED`: the stiffness
    /// slices of [`Self::evaluate_step`] (their buffers checked by the caller).
    #[inline(always)]
    fn evaluate_any<const WIDE: bool, const SIMD: bool, const SLICED: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let stiffness = &mut stiffness[..r * r];
        match &self.linear {
            Some(lin) => stiffness.copy_from_slice(&lin.k0),
            None => stiffness.iter_mut().for_each(|x| *x = 0.0),
        }
        force[..r].iter_mut().for_each(|x| *x = 0.0);
        if SLICED {
            self.sliced::<WIDE, SIMD>(q, force, stiffness, scratch);
        } else {
            self.whole::<WIDE, SIMD>(q, force, stiffness, scratch);
        }
        if let Some(lin) = &self.linear {
            add_affine(lin, &q[..r], &mut force[..r]);
        }
        self.subtract_correction(&mut force[..r]);
        for j in 0..r {
            for i in j + 1..r {
                stiffness[i * r + j] = stiffness[j * r + i];
            }
        }
    }

    /// The points' force and the lower triangle of their whole stiffness, added to
    /// `force` and `stiffness`.
    #[inline(always)]
    fn whole<const WIDE: bool, const SIMD: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let all = 0..self.elements.len();
        let CubatureScratch { h64, h32, k32, .. } = scratch;
        match &self.gt32 {
            None => {
                let k = &mut *stiffness;
                self.evaluate_with::<f64, WIDE, SIMD>(&self.gt, q, force, k, r, h64, true, all);
            }
            Some(g32) => {
                let ldk = self.stride32();
                assert!(k32.len() == ldk * r, "scratch from another precision");
                if self.evaluate_with::<f32, WIDE, SIMD>(g32, q, force, k32, ldk, h32, false, all) {
                    add_lower(stiffness, k32, ldk, r);
                }
            }
        }
    }

    /// The points' force and the lower triangle of their stiffness slices (one
    /// refreshed, or all on a fresh scratch), added to `force` and `stiffness`; then the
    /// next slice's turn.
    #[inline(always)]
    fn sliced<const WIDE: bool, const SIMD: bool>(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        let r = self.r;
        let refresh = if scratch.filled {
            Some(scratch.next_slice)
        } else {
            None
        };
        let CubatureScratch {
            h64,
            h32,
            slices64,
            slices32,
            ..
        } = scratch;
        match &self.gt32 {
            None => self.sliced_with::<f64, WIDE, SIMD>(
                &self.gt, q, force, stiffness, slices64, r, h64, refresh,
            ),
            Some(g32) => self.sliced_with::<f32, WIDE, SIMD>(
                g32,
                q,
                force,
                stiffness,
                slices32,
                self.stride32(),
                h32,
                refresh,
            ),
        }
        scratch.filled = true;
        scratch.next_slice = (scratch.next_slice + 1) % self.stiffness_slices;
    }

    /// The points' force, every slice's, and the stiffness of slice `refresh` (of every
    /// slice when `None`) into its buffer in `slices` (lower triangles, leading
    /// dimension `ldk`, one after the other); then every slice's buffer added, in slice
    /// order, to the lower triangle of `stiffness`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn sliced_with<T: Real, const WIDE: bool, const SIMD: bool>(
        &self,
        g: &[T],
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        slices: &mut [T],
        ldk: usize,
        h: &mut [T],
        refresh: Option<usize>,
    ) {
        let (r, n, count) = (self.r, self.elements.len(), self.stiffness_slices);
        for s in 0..count {
            let points = s * n / count..(s + 1) * n / count;
            if refresh.is_none_or(|k| k == s) {
                let k = &mut slices[s * ldk * r..(s + 1) * ldk * r];
                let h = &mut *h;
                if !self.evaluate_with::<T, WIDE, SIMD>(g, q, force, k, ldk, h, false, points) {
                    k.iter_mut().for_each(|x| *x = T::default());
                }
            } else {
                self.force_with::<T, SIMD>(g, q, force, points);
            }
        }
        for s in 0..count {
            add_lower(stiffness, &slices[s * ldk * r..(s + 1) * ldk * r], ldk, r);
        }
    }

    /// Adds the stresses of the points in `points` to `force` (without the affine part)
    /// and the lower triangle of their sum_p G_p^T T_p G_p into `k` (added to it when
    /// `accumulate`, else overwritten when there are points). Points go in blocks: the
    /// tangent products of a block (`h`) and its G columns stay in cache for the
    /// block's product. Returns whether `k` was written.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn evaluate_with<T: Real, const WIDE: bool, const SIMD: bool>(
        &self,
        g: &[T],
        q: &[f64],
        force: &mut [f64],
        k: &mut [T],
        ldk: usize,
        h: &mut [T],
        accumulate: bool,
        points: std::ops::Range<usize>,
    ) -> bool {
        let r = self.r;
        let q = &q[..r];
        let force = &mut force[..r];
        let stride = self.stride_of::<T>();
        let block = self.block_points();
        assert!(
            h.len() >= 9 * block * stride,
            "scratch from another precision"
        );
        let mut written = false;
        let n = points.end;
        let mut start = points.start;
        while start < n {
            let end = (start + block).min(n);
            for p in start..end {
                let e = self.elements[p];
                let gp = &g[9 * p * stride..9 * (p + 1) * stride];
                let fv = dot9_with::<T, SIMD>(gp, q, r, stride);
                let f = Matrix3::from_column_slice(&fv);
                let s = self.scale[p];
                let (pk, t) = self.material.first_pk_and_tangent(e, &f);
                // The stress whole (the force's affine part holds the sum of the
                // points' linearizations), the tangent's remainder (in the f32 product
                // the whole bulk tangent would round off the soft directions).
                let (pk, mut t) = (pk * s, t * s);
                if let Some(lin) = &self.linear {
                    t -= &lin.t0[p];
                }
                let pk: [f64; 9] = std::array::from_fn(|c| pk.as_slice()[c]);
                axpy9_with::<T, SIMD>(&pk, gp, force, r, stride);
                let tt: [[T; 9]; 9] =
                    std::array::from_fn(|a| std::array::from_fn(|c| T::from_f64(t[(a, c)])));
                let hp = &mut h[9 * (p - start) * stride..9 * (p - start + 1) * stride];
                apply_tangent::<T>(&tt, gp, hp, stride);
            }
            let cols = 9 * (end - start);
            let b = LowerBlock {
                g: &g[9 * start * stride..9 * end * stride],
                h: &h[..cols * stride],
                r,
                stride,
                cols,
            };
            let acc = accumulate || written;
            // Register widths in lanes of T: f32 8 (AVX2) or 16 (AVX-512), f64 4 or 8.
            match (T::LANES == 8, WIDE) {
                (true, true) => lower_product::<T, 16, 8, SIMD>(k, ldk, &b, acc),
                (true, false) | (false, true) => lower_product::<T, 8, 4, SIMD>(k, ldk, &b, acc),
                (false, false) => lower_product::<T, 4, 2, SIMD>(k, ldk, &b, acc),
            }
            written = true;
            start = end;
        }
        written
    }

    /// The fitted reduced energy W~(q) = sum_e w_e V_e W(F_e(q)) (with an exact linear
    /// part: the exact quadratic expansion at rest plus the points' remainders, zero at
    /// rest). Its gradient is the force and its Hessian the stiffness.
    pub fn strain_energy(&self, q: &[f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if self.kernels >= CubatureKernels::Avx2 {
            // SAFETY: the CPU has AVX2 and FMA (`kernels` is never above `detect`).
            return unsafe { self.energy_avx2(q) };
        }
        self.energy_any(q)
    }

    /// [`Self::energy_any`] with hardware fused multiply-adds (the same bits).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn energy_avx2(&self, q: &[f64]) -> f64 {
        self.energy_any(q)
    }

    #[inline(always)]
    fn energy_any(&self, q: &[f64]) -> f64 {
        match &self.gt32 {
            None => self.energy_with::<f64>(&self.gt, q),
            Some(g32) => self.energy_with::<f32>(g32, q),
        }
    }

    #[inline(always)]
    fn energy_with<S: Real>(&self, g: &[S], q: &[f64]) -> f64 {
        let r = self.r;
        let stride = self.stride_of::<S>();
        let q = &q[..r];
        let mut w = 0.0;
        for (p, &e) in self.elements.iter().enumerate() {
            let fv = dot9::<S>(&g[9 * p * stride..9 * (p + 1) * stride], q, r, stride);
            let f = Matrix3::from_column_slice(&fv);
            w += self.scale[p] * self.material.energy_density(e, &f);
            if let Some(lin) = &self.linear {
                // Minus the point's quadratic expansion at rest (W(I) included).
                let d: [f64; 9] = std::array::from_fn(|c| fv[c] - identity_entry(c));
                let dv = nalgebra::SVector::<f64, 9>::from_column_slice(&d);
                let w0 = self.scale[p] * self.material.energy_density(e, &Matrix3::identity());
                let p0 = nalgebra::SVector::<f64, 9>::from_column_slice(&lin.p0[p]);
                w -= w0 + p0.dot(&dv) + 0.5 * dv.dot(&(lin.t0[p] * dv));
            }
        }
        if let Some(lin) = &self.linear {
            let kq = DMatrix::from_column_slice(r, r, &lin.k0) * DVector::from_column_slice(q);
            w += dot(&lin.f0, q) + 0.5 * dot(kq.as_slice(), q);
        }
        if let Some(c) = &self.correction {
            w -= dot(&c.now, q);
        }
        w
    }
}

impl<M: TetMaterial> ReducedInternalForces for CubatureForces<M> {
    type Scratch = CubatureScratch;
    fn r(&self) -> usize {
        self.r
    }
    fn scratch(&self) -> CubatureScratch {
        CubatureForces::scratch(self)
    }
    fn evaluate(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        CubatureForces::evaluate(self, q, force, stiffness, scratch)
    }
    fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        scratch: &mut CubatureScratch,
    ) {
        CubatureForces::evaluate_step(self, q, force, stiffness, scratch)
    }
    fn restart(&self, scratch: &mut CubatureScratch) {
        scratch.restart();
    }
    fn energy(&self, q: &[f64]) -> Option<f64> {
        Some(self.strain_energy(q))
    }
    fn set_activation(&mut self, alpha: f64) {
        CubatureForces::set_activation(self, alpha)
    }
}

/// The exact reduced force U^T R(U q) of the full mesh (allocates; for training and
/// tests).
pub fn exact_reduced_force<M: TetMaterial + ?Sized>(
    kernel: &TetKernel,
    material: &M,
    basis: &DMatrix<f64>,
    q: &[f64],
) -> Vec<f64> {
    let u = basis * DVector::from_column_slice(q);
    let mut f = vec![0.0; kernel.num_dofs()];
    kernel.internal_forces(material, u.as_slice(), &mut f);
    (basis.transpose() * DVector::from_vec(f))
        .as_slice()
        .to_vec()
}

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

/// Per-element training data: G_e for every tet and the scaled stresses at every pose.
struct TrainingData {
    r: usize,
    t: usize,
    /// The first `forces` of the T rows are force rows, the rest stiffness probes.
    forces: usize,
    ne: usize,
    /// r x 9E column-major (column 9e + c: component c of G_e, transposed).
    g_all: Vec<f64>,
    /// 9E x T column-major: V_e vec P(F_e(q_t)) / |b_t|.
    p_all: Vec<f64>,
    /// r x T column-major: b_t / |b_t|.
    targets: Vec<f64>,
    /// |g_e| (norm of the column over all poses).
    norms: Vec<f64>,
    /// |b_t| of the full force after normalization: 1, or 0 for a zero force.
    full_norms: Vec<f64>,
}

impl TrainingData {
    fn build<M: TetMaterial>(
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
        let all: Vec<usize> = (0..ne).collect();
        let mut linear = exact_linear.then(|| {
            let (base, slope) = affine_linearization(kernel, material, basis, &all, &vec![1.0; ne]);
            (base.clone(), base, slope)
        });
        let mut g_all = vec![0.0; 9 * ne * r];
        {
            use rayon::prelude::*;
            g_all
                .par_chunks_mut(9 * r)
                .enumerate()
                .for_each(|(e, out)| mode_gradients(kernel, basis, e, out));
        }
        // vec F for every tet and pose: I + G_all^T Q, one product.
        let mut qmat = faer::Mat::<f64>::zeros(r, poses.len());
        for (k, q) in poses.iter().enumerate() {
            for j in 0..r {
                qmat[(j, k)] = q[j];
            }
        }
        let mut p_all = vec![0.0; 9 * ne * t];
        {
            let g = MatRef::from_column_major_slice(&g_all, r, 9 * ne);
            let dst = MatMut::from_column_major_slice_mut(
                &mut p_all[..9 * ne * poses.len()],
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
        let mut targets = vec![0.0; r * t];
        let mut full_norms = vec![0.0; t];
        for k in 0..poses.len() {
            if let Some(a) = activations[k] {
                material.set_activation(a);
            }
            let mut b = exact_reduced_force(kernel, &*material, basis, &poses[k]);
            let bn = b.iter().map(|x| x * x).sum::<f64>().sqrt();
            let inv = if bn > 0.0 { 1.0 / bn } else { 1.0 };
            full_norms[k] = if bn > 0.0 { 1.0 } else { 0.0 };
            // The linearization at this pose's activation.
            if let Some((now, base, Some(slope))) = &mut linear {
                now.combine(base, slope, material.activation());
            }
            if let Some((now, _, _)) = &linear {
                // The fitted part: b - f0 - K0 q (normalized by the full |b|).
                for j in 0..r {
                    b[j] -= now.f0[j] + dot(&now.k0[j * r..(j + 1) * r], &poses[k]);
                }
            }
            for j in 0..r {
                targets[k * r + j] = b[j] * inv;
            }
            let col = &mut p_all[k * 9 * ne..(k + 1) * 9 * ne];
            let mat = &*material;
            let lin = linear.as_ref().map(|l| &l.0);
            use rayon::prelude::*;
            col.par_chunks_mut(9).enumerate().for_each(|(e, v)| {
                let mut f = Matrix3::from_column_slice(v);
                f[(0, 0)] += 1.0;
                f[(1, 1)] += 1.0;
                f[(2, 2)] += 1.0;
                let mut pk = mat.first_pk(e, &f);
                if let Some(lin) = lin {
                    subtract_linearization(&mut pk, f.as_slice(), &lin.p0[e], &lin.t0[e]);
                }
                v.copy_from_slice((pk * (kernel.volume[e] * inv)).as_slice());
            });
        }
        // Per tet V T(I) dF of the current probe (with an exact linear part).
        let mut rest = vec![0.0; 9 * ne];
        for (i, probe) in probes.iter().enumerate() {
            let k = poses.len() + i;
            if let Some(a) = probe.activation {
                material.set_activation(a);
            }
            if let Some((now, base, Some(slope))) = &mut linear {
                now.combine(base, slope, material.activation());
            }
            let col = &mut p_all[k * 9 * ne..(k + 1) * 9 * ne];
            let mat = &*material;
            let lin = linear.as_ref().map(|l| &l.0);
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
                        let tv = mat.first_pk_tangent(e, &f) * df * kernel.volume[e];
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
            full_norms[k] = if bn > 0.0 { 1.0 } else { 0.0 };
            if let Some((now, _, _)) = &linear {
                // The fitted part: (K(q) - K0) d.
                for j in 0..r {
                    kd[j] -= dot(&now.k0[j * r..(j + 1) * r], &probe.direction);
                }
                for (v, v0) in col.iter_mut().zip(&rest) {
                    *v -= v0;
                }
            }
            for j in 0..r {
                targets[k * r + j] = kd[j] * inv;
            }
            col.iter_mut().for_each(|v| *v *= inv);
        }
        let mut data = TrainingData {
            r,
            t,
            forces: poses.len(),
            ne,
            g_all,
            p_all,
            targets,
            norms: Vec::new(),
            full_norms,
        };
        data.norms = (0..ne).map(|e| data.column_norm(e)).collect();
        data
    }

    /// |g_e|^2 = sum_t p_t^T (G_e^T G_e) p_t.
    fn column_norm(&self, e: usize) -> f64 {
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
    fn column(&self, e: usize) -> Vec<f64> {
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
    fn scores(&self, candidates: &[usize], resid: &[f64], gather: &mut Vec<f64>) -> Vec<f64> {
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
    let t0 = Instant::now();
    // With an activation range, the pose sampler's modal scaling is taken at its low
    // end (the linear part follows each pose's activation, [`affine_linearization`]).
    if let Some((lo, _)) = opts.activation {
        material.set_activation(lo);
    }
    let sampler = PoseSampler::new(kernel, &material, basis, opts);
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let draw = |rng: &mut ChaCha8Rng| {
        let q = sampler.sample(basis, rng);
        let a = opts.activation.map(|(lo, hi)| {
            if hi > lo {
                rng.random_range(lo..=hi)
            } else {
                lo
            }
        });
        (q, a)
    };
    let (mut poses, mut activations): (Vec<Vec<f64>>, Vec<Option<f64>>) =
        (0..opts.training_poses).map(|_| draw(&mut rng)).unzip();
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
    let mut held_rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut errors = Vec::with_capacity(opts.held_out_poses);
    let mut scratch = cub.scratch();
    let mut f = vec![0.0; r];
    for _ in 0..opts.held_out_poses {
        let (q, a) = draw(&mut held_rng);
        if let Some(a) = a {
            cub.set_activation(a);
        }
        let exact = exact_reduced_force(kernel, cub.material(), basis, &q);
        cub.evaluate_force(&q, &mut f, &mut scratch);
        errors.push(relative_error(&f, &exact));
    }
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
fn greedy_selection(
    data: &TrainingData,
    opts: &CubatureOptions,
    rng: &mut ChaCha8Rng,
) -> (Vec<usize>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (r, t, ne) = (data.r, data.t, data.ne);
    let len = r * t;
    let b = &data.targets;
    // Relative to the full force (with an exact linear part the targets are only the
    // nonlinear remainder, but every pose's full force has norm 1 after normalization).
    // Each group of rows (forces, stiffness probes) must meet the tolerance on its own.
    let split = r * data.forces;
    let group_rel = |resid: &[f64]| -> f64 {
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
    };
    let mut resid = b.clone();
    let mut selected: Vec<usize> = Vec::new();
    let mut in_set = vec![false; ne];
    let mut columns: Vec<Vec<f64>> = Vec::new();
    let mut gram = DMatrix::<f64>::zeros(0, 0);
    let mut rhs = DVector::<f64>::zeros(0);
    let mut w = DVector::<f64>::zeros(0);
    let mut history = Vec::new();
    let mut gather = Vec::new();
    let max_points = opts.max_points.min(ne);
    let max_iterations = 4 * max_points + 10;
    let mut rel = group_rel(&resid);
    while rel > opts.tolerance && selected.len() < max_points && history.len() < max_iterations {
        let free = ne - selected.len();
        let want = opts.candidates.min(free);
        let candidates: Vec<usize> = if want == free {
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
        };
        let scores = data.scores(&candidates, &resid, &mut gather);
        let Some((best, &score)) = scores.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))
        else {
            break;
        };
        if score <= 0.0 {
            break;
        }
        let e = candidates[best];
        let col = data.column(e);
        let n = selected.len();
        let mut g2 = DMatrix::<f64>::zeros(n + 1, n + 1);
        g2.view_mut((0, 0), (n, n)).copy_from(&gram);
        for (i, ci) in columns.iter().enumerate() {
            let v = dot(ci, &col);
            g2[(i, n)] = v;
            g2[(n, i)] = v;
        }
        g2[(n, n)] = dot(&col, &col);
        gram = g2;
        rhs = rhs.push(dot(&col, b));
        w = w.push(0.0);
        selected.push(e);
        in_set[e] = true;
        columns.push(col);
        nnls_gram(&gram, &rhs, &mut w);
        // Drop the points whose weight went to zero.
        let keep: Vec<usize> = (0..selected.len()).filter(|&i| w[i] > 0.0).collect();
        if keep.len() < selected.len() {
            for (i, &e) in selected.iter().enumerate() {
                if w[i] <= 0.0 {
                    in_set[e] = false;
                }
            }
            gram = gram.select_rows(&keep).select_columns(&keep);
            rhs = rhs.select_rows(&keep);
            w = w.select_rows(&keep);
            selected = keep.iter().map(|&i| selected[i]).collect();
            let mut old: Vec<Option<Vec<f64>>> = columns.into_iter().map(Some).collect();
            columns = keep
                .iter()
                .map(|&i| old[i].take().expect("kept once"))
                .collect();
        }
        resid.copy_from_slice(b);
        for (wi, ci) in w.iter().zip(&columns) {
            axpy(-wi, ci, &mut resid);
        }
        rel = group_rel(&resid);
        history.push(rel);
    }
    let per_pose: Vec<f64> = (0..t)
        .map(|k| {
            let rk = &resid[k * r..(k + 1) * r];
            let d = dot(rk, rk).sqrt();
            if data.full_norms[k] > 0.0 {
                d / data.full_norms[k]
            } else {
                d
            }
        })
        .collect();
    debug_assert_eq!(resid.len(), len);
    (selected, w.iter().cloned().collect(), history, per_pose)
}

/// Solves the least-squares problem on the passive set: G_PP s = c_P (Cholesky, with a
/// growing ridge if G_PP is numerically singular).
fn solve_passive(g: &DMatrix<f64>, c: &DVector<f64>, passive: &[usize]) -> DVector<f64> {
    let gp = g.select_rows(passive).select_columns(passive);
    let cp = c.select_rows(passive);
    let scale = gp
        .diagonal()
        .iter()
        .cloned()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut ridge = 0.0;
    for _ in 0..8 {
        let mut m = gp.clone();
        for i in 0..m.nrows() {
            m[(i, i)] += ridge;
        }
        if let Some(ch) = m.cholesky() {
            return ch.solve(&cp);
        }
        ridge = if ridge == 0.0 {
            1e-14 * scale
        } else {
            ridge * 100.0
        };
    }
    // Last resort: least squares by SVD.
    gp.svd(true, true)
        .solve(&cp, 1e-12 * scale)
        .unwrap_or_else(|_| DVector::zeros(passive.len()))
}

/// Non-negative least squares min |A x - b| subject to x >= 0, given the Gram matrix
/// G = A^T A and c = A^T b (Lawson and Hanson 1974, Ch. 23, in the normal-equation form
/// of Bro and De Jong 1997). `x` is the warm start on entry (clipped to x >= 0; its
/// positive entries start as the passive set) and the solution on return.
///
/// Hand-written rather than the `nnls` crate (a port of Lawson-Hanson over ndarray): the
/// greedy cubature calls it once per added point on a growing set of columns with T r
/// rows (10^4 at r = 100); that crate copies and Householder-factors the full m x n
/// matrix at every call, O(m n^2), while this form works on the n x n Gram matrix that
/// the greedy loop extends by one row per point, O(n^3) per call, and starts from the
/// previous solution; it also keeps ndarray out of a crate built on nalgebra and faer.
pub fn nnls_gram(g: &DMatrix<f64>, c: &DVector<f64>, x: &mut DVector<f64>) {
    let n = c.len();
    assert!(g.nrows() == n && g.ncols() == n && x.len() == n);
    if n == 0 {
        return;
    }
    let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let cmax = c.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    x.iter_mut().for_each(|v| *v = v.max(0.0));
    let mut passive: Vec<bool> = x.iter().map(|&v| v > 0.0).collect();
    let max_outer = 3 * n + 10;
    let mut first = true;
    for _ in 0..max_outer {
        if !first {
            // w = c - G x = A^T (b - A x), minus the gradient of 1/2 |A x - b|^2.
            let w = c - g * &*x;
            let tol = 10.0 * n as f64 * f64::EPSILON * (cmax + gmax * x.amax());
            let mut best: Option<(usize, f64)> = None;
            for j in 0..n {
                if !passive[j] && w[j] > tol && best.is_none_or(|(_, v)| w[j] > v) {
                    best = Some((j, w[j]));
                }
            }
            let Some((j, _)) = best else {
                break;
            };
            passive[j] = true;
        }
        first = false;
        // Inner loop: least squares on the passive set, stepping back along x -> s to
        // the first constraint hit while s is infeasible (each pass frees at least one).
        for _ in 0..=n {
            let idx: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
            if idx.is_empty() {
                break;
            }
            let s = solve_passive(g, c, &idx);
            if s.iter().all(|&v| v > 0.0) {
                for (k, &j) in idx.iter().enumerate() {
                    x[j] = s[k];
                }
                break;
            }
            let (mut alpha, mut hit) = (1.0f64, idx[0]);
            for (k, &j) in idx.iter().enumerate() {
                if s[k] <= 0.0 {
                    let d = x[j] - s[k];
                    let a = if d > 0.0 { x[j] / d } else { 0.0 };
                    if a <= alpha {
                        alpha = a;
                        hit = j;
                    }
                }
            }
            let xmax = x.amax();
            for (k, &j) in idx.iter().enumerate() {
                x[j] += alpha * (s[k] - x[j]);
            }
            x[hit] = 0.0;
            for &j in &idx {
                if x[j] <= 1e-14 * xmax {
                    x[j] = 0.0;
                    passive[j] = false;
                }
            }
        }
    }
}

/// Non-negative least squares min |A x - b|, x >= 0 (Lawson-Hanson, [`nnls_gram`]).
pub fn nnls(a: &DMatrix<f64>, b: &DVector<f64>) -> DVector<f64> {
    let g = a.transpose() * a;
    let c = a.transpose() * b;
    let mut x = DVector::zeros(a.ncols());
    nnls_gram(&g, &c, &mut x);
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::StvkMaterial;
    use crate::mesh::{box_tet_mesh, Material};
    use nalgebra::{Point3, Vector3};

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        }
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
        let mut rng = Lcg(7);
        for trial in 0..40 {
            let (m, n) = (12 + trial % 5, 1 + trial % 8);
            let a = DMatrix::from_fn(m, n, |_, _| rng.next());
            let b = DVector::from_fn(m, |_, _| rng.next());
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
        let mut rng = Lcg(11);
        let mut a = DMatrix::from_fn(6, 10, |_, _| rng.next());
        let c0 = a.column(0).clone_owned();
        a.set_column(5, &c0);
        let b = DVector::from_fn(6, |_, _| rng.next());
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
        let mut rng = Lcg(3);
        let r = 5;
        let coef: Vec<f64> = (0..r * 9).map(|_| rng.next()).collect();
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
            let cub = CubatureForces::from_points(
                &kernel,
                &basis,
                mat.clone(),
                &all,
                &ones,
                exact_linear,
            )
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
            for kernels in [
                CubatureKernels::Portable,
                CubatureKernels::Avx2,
                CubatureKernels::Avx512,
            ] {
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
                (CubatureKernels::Portable, 7 * 9 * 5 * 4),
                (CubatureKernels::Avx2, 13 * 9 * 5 * 4),
                (CubatureKernels::Avx512, 13 * 9 * 5 * 4),
                (CubatureKernels::Avx512, BLOCK_BYTES),
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
        for kernels in [CubatureKernels::Portable, CubatureKernels::detect()] {
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
        let reference = run(CubatureKernels::Portable);
        for kernels in [CubatureKernels::Avx2, CubatureKernels::Avx512] {
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
    fn check_lower_product<
        T: Real + std::fmt::Debug + PartialEq,
        const L: usize,
        const H: usize,
    >(
        r: usize,
        stride: usize,
        cols: usize,
    ) {
        check_lower_product_with::<T, L, H, false>(r, stride, cols);
        let needed = if L == 2 * T::LANES {
            CubatureKernels::Avx512
        } else {
            CubatureKernels::Avx2
        };
        if CubatureKernels::detect() >= needed {
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
        fn first_pk_differential(
            &self,
            e: usize,
            f: &Matrix3<f64>,
            df: &Matrix3<f64>,
        ) -> Matrix3<f64> {
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
}
