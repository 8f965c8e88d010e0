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
//! [`crate::fem::TetMaterial::set_activation`]) change the forces without refitting; the cubature is
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
//! muscle: P = P_passive + alpha P_active, [`crate::fem::blemker`]), f(0), K0 and each
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
//! kernels are compiled three times ([`SimdLevel`]: portable, AVX2+FMA, AVX-512F/VL),
//! chosen at run time, and differ only in speed; the stiffness product is written here
//! rather than taken from faer, whose kernel and blocking depend on the CPU.

use nalgebra::DMatrix;

use super::evaluator::MAX_R;
use super::simd::SimdLevel;
use crate::fem::TetKernel;

mod forces;
mod kernels;
mod linear;
mod nnls;
#[cfg(test)]
mod tests;
mod training;

pub use linear::{exact_equilibria, exact_reduced_force, stable_equilibria};
use linear::{EquilibriumCorrection, LinearPart};
pub use nnls::{nnls, nnls_gram};
pub use training::{relative_error, train_cubature, PoseSampler};

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
/// [`crate::fem::TetMaterial`] (module docs). Implements
/// [`crate::reduction::evaluator::ReducedInternalForces`], so it runs in
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
    /// The compilation the kernels run in ([`SimdLevel`]).
    kernels: SimdLevel,
    /// Bytes of one block of tangent products ([`BLOCK_BYTES`]; tests shrink it).
    block_bytes: usize,
    /// Slices of the points whose stiffness [`Self::evaluate_step`] refreshes in turn
    /// (1: all of it every step).
    stiffness_slices: usize,
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

/// The kernels' compilation by default at r modes: AVX-512 where the stiffness product
/// dominates (r above 32), else at most AVX2. AVX-512 speeds the product up at r = 60
/// and 100, but slows the whole muscle evaluation at r = 20, where the scalar per-point
/// material law dominates (wide instructions lower the core's clock for it too; the
/// figures are in docs/performance.md, "Optimized cubature and the reduced muscle").
/// All three compilations do the same arithmetic (the same chains of fused
/// multiply-adds, in the same order), so they give the same bits; they differ only in
/// the instructions and their speed.
pub fn default_kernels(r: usize) -> SimdLevel {
    let best = SimdLevel::detect();
    if r > 32 {
        best
    } else {
        best.min(SimdLevel::Avx2)
    }
}
