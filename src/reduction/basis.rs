//! Reduced bases: modal derivatives (thesis 2.8.3) and mass-PCA (thesis 2.8.3).
//!
//! - Modal derivatives of a constrained object: K Phi_ij = -(H : psi_i) psi_j, with H the
//!   stiffness Hessian at rest (`FemModel::hessian_contraction` at u = 0); symmetric in
//!   i, j. They are the second derivatives of the static response to loads
//!   M U_lin Lambda p (thesis 2.8.4, tested that way).
//! - Mass-PCA of a set of vectors Y (weighted modes and derivatives, or simulation
//!   snapshots): with the mass Gram matrix G = Y^T M Y = W S W^T, the r dominant
//!   directions U = Y W_r S_r^-1/2 are mass-orthonormal, U^T M U = I. This is the method
//!   of snapshots, equal to the SVD of L^T Y (M = L L^T) without factoring M.

use nalgebra::{DMatrix, DVector};
use rayon::prelude::*;

use crate::fem::{model::FemModel, BlockSparseMatrix, FreeDofSolver, SolveError};

/// Errors building a basis.
#[derive(Debug, thiserror::Error)]
pub enum BasisError {
    /// The system of the modal derivatives could not be factored: K on the free dofs
    /// (constrained objects), or the bordered system of eq. 2.60 (unconstrained ones).
    #[error(
        "the stiffness matrix cannot be factored on the free dofs (unconstrained object?): {0}"
    )]
    Singular(#[from] SolveError),
    /// Mass-PCA was asked for more directions than its input spans.
    #[error("asked for {asked} basis vectors but the input spans only {rank} (numerically independent) directions")]
    RankTooLow {
        /// The basis size r asked for.
        asked: usize,
        /// Number of directions whose Gram eigenvalue exceeds 1e-12 times the largest.
        rank: usize,
    },
}

/// Modal derivatives Phi_ij (i <= j, in Vega's packed order) of a constrained object.
/// `modes` are the linear modes (columns); `fixed[d]` marks constrained dofs.
pub fn modal_derivatives(
    model: &FemModel,
    k0: &BlockSparseMatrix,
    fixed: &[bool],
    modes: &DMatrix<f64>,
) -> Result<Vec<DVector<f64>>, BasisError> {
    modal_derivatives_with_progress(model, k0, fixed, modes, &|| {})
}

/// As [`modal_derivatives`], calling `done` after each derivative (from worker threads).
pub fn modal_derivatives_with_progress(
    model: &FemModel,
    k0: &BlockSparseMatrix,
    fixed: &[bool],
    modes: &DMatrix<f64>,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<DVector<f64>>, BasisError> {
    let n = model.num_dofs();
    let k = modes.ncols();
    let mut solver = FreeDofSolver::new(k0, fixed)?;
    solver.factor(k0)?;
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i..k).map(move |j| (i, j))).collect();
    let zero = vec![0.0; n];
    Ok(pairs
        .par_iter()
        .map(|&(i, j)| {
            let mut rhs = vec![0.0; n];
            model.hessian_contraction(
                &zero,
                modes.column(i).as_slice(),
                modes.column(j).as_slice(),
                &mut rhs,
            );
            rhs.iter_mut().for_each(|x| *x = -*x);
            let mut phi = vec![0.0; n];
            solver.solve(&rhs, &mut phi);
            done();
            DVector::from_vec(phi)
        })
        .collect())
}

/// Modal derivatives of an unconstrained object (thesis eq. 2.60): for every ordered
/// pair (i, j), (K - lambda_i M) Phi_ij = (M psi_i psi_i^T - I)(H : psi_j) psi_i with
/// psi_i^T M Phi_ij = 0. K - lambda_i M is singular along psi_i, so each i is solved as the
/// bordered system [[K - lambda_i M, M psi_i], [psi_i^T M, 0]] [Phi; mu] = [b; 0] by sparse
/// LU (faer), which is nonsingular when lambda_i is a simple eigenvalue. Returns the k^2
/// derivatives in row-major (i, j) order; they are not symmetric.
pub fn modal_derivatives_unconstrained(
    model: &FemModel,
    k0: &BlockSparseMatrix,
    m: &BlockSparseMatrix,
    modes: &DMatrix<f64>,
    eigenvalues: &[f64],
) -> Result<Vec<DVector<f64>>, BasisError> {
    use faer::linalg::solvers::Solve;
    use faer::sparse::{SparseColMat, Triplet};
    let n = model.num_dofs();
    let k = modes.ncols();
    let zero = vec![0.0; n];
    let mut out = vec![DVector::zeros(n); k * k];
    for i in 0..k {
        let psi = modes.column(i);
        let mut mpsi = vec![0.0; n];
        m.mul_vec(psi.as_slice(), &mut mpsi);
        let mut triplets = Vec::with_capacity(k0.nnz() + 2 * n);
        for c in 0..n {
            for idx in k0.col_ptr()[c]..k0.col_ptr()[c + 1] {
                let r = k0.row_idx()[idx];
                let v = k0.values[idx] - eigenvalues[i] * m.values[idx];
                triplets.push(Triplet::new(r, c, v));
            }
            triplets.push(Triplet::new(c, n, mpsi[c]));
            triplets.push(Triplet::new(n, c, mpsi[c]));
        }
        let a = SparseColMat::<usize, f64>::try_new_from_triplets(n + 1, n + 1, &triplets)
            .map_err(|e| BasisError::Singular(SolveError::Factorization(format!("{e:?}"))))?;
        let lu = a
            .sp_lu()
            .map_err(|e| BasisError::Singular(SolveError::Factorization(format!("{e:?}"))))?;
        for j in 0..k {
            let mut h = vec![0.0; n];
            model.hessian_contraction(&zero, modes.column(j).as_slice(), psi.as_slice(), &mut h);
            // b = M psi (psi^T h) - h.
            let ph: f64 = psi.iter().zip(&h).map(|(a, b)| a * b).sum();
            let mut rhs: Vec<f64> = (0..n).map(|d| mpsi[d] * ph - h[d]).collect();
            rhs.push(0.0);
            lu.solve_in_place(faer::ColMut::from_slice_mut(&mut rhs));
            out[i * k + j] = DVector::from_column_slice(&rhs[..n]);
        }
    }
    Ok(out)
}

/// The vectors of thesis eq. 2.52: (lambda_1/lambda_j) psi_j and
/// (lambda_1^2/(lambda_i lambda_j)) Phi_ij, as columns, for derivatives given in the
/// order of `pairs`.
fn scaled_columns(
    eigenvalues: &[f64],
    modes: &DMatrix<f64>,
    derivatives: &[DVector<f64>],
    pairs: &[(usize, usize)],
) -> DMatrix<f64> {
    let k = modes.ncols();
    let l1 = eigenvalues[0];
    let mut y = DMatrix::zeros(modes.nrows(), k + pairs.len());
    for j in 0..k {
        y.set_column(j, &(modes.column(j) * (l1 / eigenvalues[j])));
    }
    for (c, (&(i, j), phi)) in pairs.iter().zip(derivatives).enumerate() {
        y.set_column(
            k + c,
            &(phi * (l1 * l1 / (eigenvalues[i] * eigenvalues[j]))),
        );
    }
    y
}

/// Eq. 2.52 for the symmetric derivatives of a constrained object (i <= j, as returned
/// by [`modal_derivatives`]).
pub fn scaled_modes_and_derivatives(
    eigenvalues: &[f64],
    modes: &DMatrix<f64>,
    derivatives: &[DVector<f64>],
) -> DMatrix<f64> {
    let k = modes.ncols();
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i..k).map(move |j| (i, j))).collect();
    scaled_columns(eigenvalues, modes, derivatives, &pairs)
}

/// Eq. 2.52 for unconstrained objects, whose derivatives are not symmetric: every
/// ordered pair (row-major, as returned by [`modal_derivatives_unconstrained`]).
pub fn scaled_modes_and_all_derivatives(
    eigenvalues: &[f64],
    modes: &DMatrix<f64>,
    derivatives: &[DVector<f64>],
) -> DMatrix<f64> {
    let k = modes.ncols();
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (0..k).map(move |j| (i, j))).collect();
    scaled_columns(eigenvalues, modes, derivatives, &pairs)
}

/// Mass-PCA: the `r` dominant mass-orthonormal directions of the columns of `y`, and the
/// fraction of the (mass-weighted) variance they retain.
pub fn mass_pca(
    m: &BlockSparseMatrix,
    y: &DMatrix<f64>,
    r: usize,
) -> Result<(DMatrix<f64>, f64), BasisError> {
    let (n, cols) = (y.nrows(), y.ncols());
    let mut my = DMatrix::zeros(n, cols);
    for c in 0..cols {
        let mut out = vec![0.0; n];
        m.mul_vec(y.column(c).as_slice(), &mut out);
        my.set_column(c, &DVector::from_vec(out));
    }
    let g = y.transpose() * my;
    let eig = g.symmetric_eigen();
    let mut order: Vec<usize> = (0..cols).collect();
    order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
    let total: f64 = eig.eigenvalues.iter().map(|v| v.max(0.0)).sum();
    let top = eig.eigenvalues[order[0]].max(f64::MIN_POSITIVE);
    let rank = order
        .iter()
        .filter(|&&i| eig.eigenvalues[i] > 1e-12 * top)
        .count();
    if r > rank {
        return Err(BasisError::RankTooLow { asked: r, rank });
    }
    let mut u = DMatrix::zeros(n, r);
    let mut kept = 0.0;
    for (c, &i) in order[..r].iter().enumerate() {
        let s = eig.eigenvalues[i];
        kept += s;
        u.set_column(c, &(y * eig.eigenvectors.column(i) / s.sqrt()));
    }
    // The Gram matrix squares the conditioning; one mass Gram-Schmidt pass (twice)
    // restores U^T M U = I to rounding without changing the span.
    let mut mu = vec![0.0; n];
    for c in 0..r {
        mass_orthonormalize_column(m, &mut u, c, &mut mu);
    }
    Ok((u, kept / total))
}

/// Makes column `c` of `u` M-orthogonal to the columns before it and of unit M-norm
/// (classical Gram-Schmidt, two passes, which restores orthogonality to rounding);
/// `mu` is a buffer of length `u.nrows()`.
pub fn mass_orthonormalize_column(
    m: &BlockSparseMatrix,
    u: &mut DMatrix<f64>,
    c: usize,
    mu: &mut [f64],
) {
    for _ in 0..2 {
        m.mul_vec(u.column(c).as_slice(), mu);
        for p in 0..c {
            let d: f64 = u.column(p).iter().zip(mu.iter()).map(|(a, b)| a * b).sum();
            let col_p = u.column(p).into_owned();
            u.column_mut(c).axpy(-d, &col_p, 1.0);
        }
    }
    m.mul_vec(u.column(c).as_slice(), mu);
    let nrm: f64 = u
        .column(c)
        .iter()
        .zip(mu.iter())
        .map(|(a, b)| a * b)
        .sum::<f64>()
        .sqrt();
    u.column_mut(c).scale_mut(1.0 / nrm);
}

/// The basis of an embedded render mesh: row block i of the result is
/// `sum_k w_ik U[v_ik]` (the interpolation weights applied to the simulation basis), so
/// the render displacement is u_render = U_render q.
pub fn render_basis(interp: &crate::mesh::interp::Interpolation, u: &DMatrix<f64>) -> DMatrix<f64> {
    let nr = interp.num_vertices();
    let k = interp.nodes_per_vertex;
    let mut out = DMatrix::zeros(3 * nr, u.ncols());
    for i in 0..nr {
        for c in 0..k {
            let (v, w) = (interp.indices[i * k + c], interp.weights[i * k + c]);
            for d in 0..3 {
                for j in 0..u.ncols() {
                    out[(3 * i + d, j)] += w * u[(3 * v + d, j)];
                }
            }
        }
    }
    out
}
