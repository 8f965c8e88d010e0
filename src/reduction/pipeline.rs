//! The modal-derivative basis (Barbic and James 2005; thesis 2.8.3), the one pipeline of
//! the bake, the accuracy experiment and the reduced muscle:
//! 1. the lowest linear modes psi_i of K psi = lambda M psi at rest (shift-invert
//!    Lanczos, [`linear_modes`]);
//! 2. the modal derivatives Phi_ij of the first k modes, by the caller's
//!    [`ModalDerivatives`]: analytic for StVK ([`StvkDerivatives`]:
//!    K Phi_ij = -(H : psi_i) psi_j, or the bordered system of thesis eq. 2.60 for a free
//!    object), or by differences of a tangent that has no closed-form Hessian;
//! 3. the vectors of thesis eq. 2.52, (lambda_1/lambda_j) psi_j and
//!    (lambda_1^2/(lambda_i lambda_j)) Phi_ij;
//! 4. their mass-PCA: the r dominant mass-orthonormal directions, U^T M U = I.
//!
//! Each step is a timed [`Progress`] stage, and a cancelled progress stops the pipeline
//! before the next step.

use nalgebra::{DMatrix, DVector, Point3};

use super::basis::{
    mass_pca, modal_derivatives_unconstrained, modal_derivatives_with_progress,
    scaled_modes_and_all_derivatives, scaled_modes_and_derivatives, BasisError,
};
use super::modes::{linear_modes, LinearModes, ModesError, ModesOptions};
use crate::fem::{model::FemModel, BlockSparseMatrix};
use crate::progress::{timed_stage, Progress};

/// An object at rest: what its linear modes and its mass-PCA are computed from.
#[derive(Clone, Copy)]
pub(crate) struct RestSystem<'a> {
    /// The tangent stiffness K at rest.
    pub k0: &'a BlockSparseMatrix,
    /// The mass matrix M.
    pub mass: &'a BlockSparseMatrix,
    /// Per degree of freedom: whether it is fixed.
    pub fixed: &'a [bool],
    /// The rest positions (the rigid motions a free object's modes skip).
    pub rest: &'a [Point3<f64>],
}

/// The sizes of a modal-derivative basis.
pub(crate) struct BasisSizes {
    /// The linear modes to compute.
    pub modes: ModesOptions,
    /// k: the first k linear modes, whose derivatives join the basis (at most
    /// `modes.count`).
    pub derivative_modes: usize,
    /// r: the columns of the basis.
    pub basis: usize,
}

/// How the modal derivatives of an object's linear modes are computed.
pub(crate) trait ModalDerivatives {
    /// What computing them can fail with.
    type Error;

    /// Whether Phi_ij = Phi_ji, so that only i <= j are computed (Vega's packed order);
    /// otherwise all k^2 ordered pairs are, row-major.
    fn symmetric(&self) -> bool;

    /// The derivatives of the columns of `modes` (whose eigenvalues are `eigenvalues`), in
    /// the order [`ModalDerivatives::symmetric`] says; `done(n)` reports n more finished
    /// (it may be called from worker threads).
    fn compute(
        &self,
        modes: &DMatrix<f64>,
        eigenvalues: &[f64],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<DVector<f64>>, Self::Error>;
}

/// The analytic modal derivatives of an StVK model: [`modal_derivatives_with_progress`]
/// of a constrained object, [`modal_derivatives_unconstrained`] of a free one.
pub(crate) struct StvkDerivatives<'a> {
    /// The model, whose stiffness Hessian at rest the derivatives contract.
    pub model: &'a FemModel,
    /// Its stiffness, mass and fixed degrees of freedom at rest.
    pub system: RestSystem<'a>,
    /// Whether to solve the bordered systems of a free object (thesis eq. 2.60).
    pub unconstrained: bool,
}

impl ModalDerivatives for StvkDerivatives<'_> {
    type Error = BasisError;

    fn symmetric(&self) -> bool {
        !self.unconstrained
    }

    fn compute(
        &self,
        modes: &DMatrix<f64>,
        eigenvalues: &[f64],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<DVector<f64>>, BasisError> {
        let s = &self.system;
        if self.unconstrained {
            let phis =
                modal_derivatives_unconstrained(self.model, s.k0, s.mass, modes, eigenvalues)?;
            done(phis.len() as u64);
            Ok(phis)
        } else {
            modal_derivatives_with_progress(self.model, s.k0, s.fixed, modes, &|| done(1))
        }
    }
}

/// The step of the pipeline that failed.
#[derive(Debug)]
pub(crate) enum PipelineError<E> {
    /// The caller asked to stop ([`Progress::cancelled`], polled before each step).
    Cancelled,
    /// The linear modes.
    Modes(ModesError),
    /// The caller's modal derivatives.
    Derivatives(E),
    /// The mass-PCA.
    Pca(BasisError),
}

/// Seconds spent in each step.
pub(crate) struct StepSeconds {
    /// The linear modes.
    pub linear_modes: f64,
    /// The modal derivatives and their scaling.
    pub modal_derivatives: f64,
    /// The mass-PCA.
    pub pca: f64,
}

/// A modal-derivative basis and the linear modes it came from.
pub(crate) struct ModalDerivativeBasis {
    /// The mass-orthonormal basis U (n x r).
    pub u: DMatrix<f64>,
    /// The fraction of the mass-weighted variance of the scaled modes and derivatives
    /// that U keeps.
    pub retained: f64,
    /// All the linear modes computed (`modes.count` of [`BasisSizes`]).
    pub modes: LinearModes,
    /// Seconds spent in each step.
    pub seconds: StepSeconds,
}

/// The r-column mass-PCA basis of the first k linear modes of `system` and their
/// `derivatives`, scaled by thesis eq. 2.52; each step a stage of `progress`.
pub(crate) fn modal_derivative_basis<D: ModalDerivatives>(
    system: &RestSystem,
    sizes: &BasisSizes,
    derivatives: &D,
    progress: &dyn Progress,
) -> Result<ModalDerivativeBasis, PipelineError<D::Error>> {
    let (modes, linear_seconds) = linear_modes_stage(system, &sizes.modes, progress)?;
    let (y, derivative_seconds) =
        scaled_derivatives_stage(&modes, sizes.derivative_modes, derivatives, progress)?;
    let ((u, retained), pca_seconds) = timed_stage(progress, "mass-PCA", 1, cancelled, || {
        let pca = mass_pca(system.mass, &y, sizes.basis).map_err(PipelineError::Pca)?;
        progress.advance(1);
        Ok(pca)
    })?;
    Ok(ModalDerivativeBasis {
        u,
        retained,
        modes,
        seconds: StepSeconds {
            linear_modes: linear_seconds,
            modal_derivatives: derivative_seconds,
            pca: pca_seconds,
        },
    })
}

/// Step 1: the linear modes of `system`, as a progress stage of one unit; also returns
/// its seconds.
pub(crate) fn linear_modes_stage<E>(
    system: &RestSystem,
    opts: &ModesOptions,
    progress: &dyn Progress,
) -> Result<(LinearModes, f64), PipelineError<E>> {
    timed_stage(
        progress,
        "linear modes (shift-invert Lanczos)",
        1,
        cancelled,
        || {
            let s = system;
            let modes =
                linear_modes(s.k0, s.mass, s.fixed, s.rest, opts).map_err(PipelineError::Modes)?;
            progress.advance(1);
            Ok(modes)
        },
    )
}

/// Steps 2 and 3: the scaled first `k` linear modes and their derivatives, as columns; a
/// progress stage of one unit per derivative. Also returns its seconds.
fn scaled_derivatives_stage<D: ModalDerivatives>(
    modes: &LinearModes,
    k: usize,
    derivatives: &D,
    progress: &dyn Progress,
) -> Result<(DMatrix<f64>, f64), PipelineError<D::Error>> {
    let symmetric = derivatives.symmetric();
    let count = if symmetric { k * (k + 1) / 2 } else { k * k };
    timed_stage(
        progress,
        "modal derivatives",
        count as u64,
        cancelled,
        || {
            let vectors = modes.vectors.columns(0, k).into_owned();
            let eigenvalues = &modes.eigenvalues[..k];
            let phis = derivatives
                .compute(&vectors, eigenvalues, &|n| progress.advance(n))
                .map_err(PipelineError::Derivatives)?;
            Ok(if symmetric {
                scaled_modes_and_derivatives(eigenvalues, &vectors, &phis)
            } else {
                scaled_modes_and_all_derivatives(eigenvalues, &vectors, &phis)
            })
        },
    )
}

/// The error of a pipeline stopped by its caller.
fn cancelled<E>() -> PipelineError<E> {
    PipelineError::Cancelled
}
