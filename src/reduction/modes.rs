//! Linear modes: the k smallest generalized eigenpairs K psi = lambda M psi of the
//! stiffness and mass matrices (thesis 2.8.2), by shift-invert Lanczos with full
//! M-orthogonalization over a sparse Cholesky factorization of K - sigma M.
//!
//! Hand-written because no maintained Rust crate solves sparse generalized symmetric
//! eigenproblems by shift-invert (the dense tridiagonal eigenproblem inside is nalgebra's).
//!
//! Lanczos runs on the operator (K - sigma M)^-1 M, which is self-adjoint in the M inner
//! product; its largest eigenvalues theta give the eigenvalues nearest sigma,
//! lambda = sigma + 1/theta. Constrained objects use sigma = 0. Unconstrained objects
//! (singular K) use a small negative shift, and their six rigid modes (lambda ~ 0) are
//! dropped.

use nalgebra::{DMatrix, DVector};

use crate::fem::{BlockSparseMatrix, FreeDofSolver, SolveError};

/// Settings of the eigensolver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModesOptions {
    /// Number of modes wanted (after dropping rigid modes).
    pub count: usize,
    /// Whether the object is unconstrained (then the six rigid modes are skipped).
    pub unconstrained: bool,
    /// Relative residual below which a Ritz pair is accepted.
    pub tolerance: f64,
}

/// Mass-orthonormal linear modes.
#[derive(Debug, Clone)]
pub struct LinearModes {
    /// Eigenvalues lambda = omega^2 (ascending).
    pub eigenvalues: Vec<f64>,
    /// Columns: mass-orthonormal modes over all dofs (zero on fixed dofs).
    pub vectors: DMatrix<f64>,
    /// Lanczos steps used.
    pub lanczos_steps: usize,
}

impl LinearModes {
    /// Natural frequencies sqrt(lambda) / (2 pi) in Hz.
    pub fn frequencies_hz(&self) -> Vec<f64> {
        self.eigenvalues
            .iter()
            .map(|l| l.max(0.0).sqrt() / (2.0 * std::f64::consts::PI))
            .collect()
    }
}

/// Errors of the eigensolver.
#[derive(Debug, thiserror::Error)]
pub enum ModesError {
    /// More modes were asked for than the free dofs allow (or none at all).
    #[error("asked for {asked} modes but the object has only {free} free degrees of freedom{}", if *.rigid { " (6 of them rigid)" } else { "" })]
    TooManyModes {
        /// Number of modes asked for ([`ModesOptions::count`]).
        asked: usize,
        /// Number of free (unconstrained) degrees of freedom.
        free: usize,
        /// Whether the object is unconstrained, so 6 of the free dofs are rigid modes.
        rigid: bool,
    },
    /// K (shifted by -sigma M for unconstrained objects) could not be Cholesky-factored on
    /// the free dofs.
    #[error("the stiffness matrix is singular or indefinite on the free degrees of freedom: is the object unconstrained (no fixed vertices)? Bake it as unconstrained, or fix some vertices. ({0})")]
    Singular(SolveError),
    /// A Lanczos run grew its Krylov space to every free, non-deflated dof without enough
    /// Ritz pairs meeting the tolerance.
    #[error("Lanczos did not converge: {converged} of {wanted} modes after {steps} steps")]
    NoConvergence {
        /// Number of modes that met the tolerance in the failing run.
        converged: usize,
        /// Number of modes asked for.
        wanted: usize,
        /// Lanczos steps of the failing run.
        steps: usize,
    },
}

fn m_dot(m: &BlockSparseMatrix, a: &[f64], b: &[f64], tmp: &mut [f64]) -> f64 {
    m.mul_vec(b, tmp);
    a.iter().zip(tmp.iter()).map(|(x, y)| x * y).sum()
}

/// The six rigid-body motions (translations and infinitesimal rotations about the
/// centroid) of points `rest`, as full-length dof vectors.
pub(crate) fn rigid_motions(rest: &[nalgebra::Point3<f64>]) -> Vec<Vec<f64>> {
    let n = rest.len();
    let c = rest
        .iter()
        .fold(nalgebra::Vector3::zeros(), |a, p| a + p.coords)
        / n.max(1) as f64;
    let mut out = Vec::with_capacity(6);
    for axis in 0..3 {
        let mut t = vec![0.0; 3 * n];
        for v in 0..n {
            t[3 * v + axis] = 1.0;
        }
        out.push(t);
    }
    for axis in 0..3 {
        let mut w = nalgebra::Vector3::zeros();
        w[axis] = 1.0;
        let mut r = vec![0.0; 3 * n];
        for (v, p) in rest.iter().enumerate() {
            let d = w.cross(&(p.coords - c));
            r[3 * v..3 * v + 3].copy_from_slice(d.as_slice());
        }
        out.push(r);
    }
    out
}

/// M-orthonormalizes `vectors` in place (modified Gram-Schmidt, twice).
fn m_orthonormalize(m: &BlockSparseMatrix, vectors: &mut [Vec<f64>], tmp: &mut [f64]) {
    for i in 0..vectors.len() {
        for _ in 0..2 {
            for j in 0..i {
                let (a, b) = vectors.split_at_mut(i);
                let c = m_dot(m, &b[0], &a[j], tmp);
                for (x, y) in b[0].iter_mut().zip(&a[j]) {
                    *x -= c * y;
                }
            }
        }
        let nrm = m_dot(m, &vectors[i], &vectors[i], tmp).sqrt();
        vectors[i].iter_mut().for_each(|x| *x /= nrm);
    }
}

/// Converged (eigenvalue, vector) pairs of one Lanczos run and the steps it took.
type LanczosResult = Result<(Vec<(f64, Vec<f64>)>, usize), (usize, usize)>;

/// One Lanczos run with `deflate` (M-orthonormal) projected out; returns converged
/// (lambda, vector) pairs, smallest lambda first, or the count converged on failure.
#[allow(clippy::too_many_arguments)]
fn lanczos_run(
    m: &BlockSparseMatrix,
    solver: &FreeDofSolver,
    fixed: &[bool],
    sigma: f64,
    deflate: &[Vec<f64>],
    wanted: usize,
    free: usize,
    tolerance: f64,
    seed: u64,
) -> LanczosResult {
    let n = fixed.len();
    let avail = free.saturating_sub(deflate.len());
    let mut steps = (2 * wanted + 20).min(avail);
    let mut tmp = vec![0.0; n];
    loop {
        let start = start_vector(m, solver, fixed, deflate, seed, &mut tmp);
        let krylov = krylov_space(m, solver, deflate, start, steps, &mut tmp);
        let mlen = krylov.alpha.len();
        let eig = krylov.tridiagonal().symmetric_eigen();
        let mut order: Vec<usize> = (0..mlen).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[b].total_cmp(&eig.eigenvalues[a]));
        let last_beta = if krylov.breakdown {
            0.0
        } else {
            *krylov.beta.last().unwrap_or(&0.0)
        };
        let take = wanted.min(mlen);
        let ok = |i: usize| {
            let theta = eig.eigenvalues[i];
            (last_beta * eig.eigenvectors[(mlen - 1, i)]).abs() <= tolerance * theta.abs()
        };
        let converged = order[..take].iter().filter(|&&i| ok(i)).count();
        if converged >= take && (take == wanted || krylov.breakdown) {
            let mut out = Vec::with_capacity(take);
            for &i in &order[..take] {
                let s = eig.eigenvectors.column(i);
                let x = ritz_vector(m, &krylov.v, s.as_slice(), mlen, &mut tmp);
                out.push((sigma + 1.0 / eig.eigenvalues[i], x));
            }
            return Ok((out, mlen));
        }
        if steps >= avail {
            return Err((converged, steps));
        }
        steps = (steps * 2).min(avail);
    }
}

/// Subtracts from `w` its M-projections onto the M-orthonormal `vs` (`tmp`: M w).
fn project_out(m: &BlockSparseMatrix, w: &mut [f64], tmp: &mut [f64], vs: &[Vec<f64>]) {
    m.mul_vec(w, tmp);
    for vi in vs {
        let c: f64 = vi.iter().zip(tmp.iter()).map(|(x, y)| x * y).sum();
        for (wd, vd) in w.iter_mut().zip(vi) {
            *wd -= c * vd;
        }
    }
}

/// The Lanczos start vector: a pseudo-random vector from `seed` (zero on fixed dofs),
/// put through the operator once, with `deflate` projected out, M-normalized.
fn start_vector(
    m: &BlockSparseMatrix,
    solver: &FreeDofSolver,
    fixed: &[bool],
    deflate: &[Vec<f64>],
    seed: u64,
    tmp: &mut [f64],
) -> Vec<f64> {
    let mut state = seed;
    let mut start: Vec<f64> = (0..fixed.len())
        .map(|d| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if fixed[d] {
                0.0
            } else {
                ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            }
        })
        .collect();
    m.mul_vec(&start, tmp);
    solver.solve(tmp, &mut start);
    for _ in 0..2 {
        project_out(m, &mut start, tmp, deflate);
    }
    let nrm = m_dot(m, &start, &start, tmp).sqrt();
    start.iter_mut().for_each(|x| *x /= nrm);
    start
}

/// The Lanczos basis and the tridiagonal matrix of one run.
struct Krylov {
    /// The M-orthonormal Lanczos vectors.
    v: Vec<Vec<f64>>,
    /// The tridiagonal's diagonal.
    alpha: Vec<f64>,
    /// The tridiagonal's off-diagonal, then the last residual norm.
    beta: Vec<f64>,
    /// Whether the Krylov space became invariant before `steps`.
    breakdown: bool,
}

impl Krylov {
    /// The symmetric tridiagonal matrix of `alpha` and `beta`.
    fn tridiagonal(&self) -> DMatrix<f64> {
        let mlen = self.alpha.len();
        let mut t = DMatrix::zeros(mlen, mlen);
        for i in 0..mlen {
            t[(i, i)] = self.alpha[i];
            if i + 1 < mlen {
                t[(i, i + 1)] = self.beta[i];
                t[(i + 1, i)] = self.beta[i];
            }
        }
        t
    }
}

/// Runs up to `steps` Lanczos steps from the M-normalized `start`, fully
/// reorthogonalized against `deflate` and the Lanczos vectors.
fn krylov_space(
    m: &BlockSparseMatrix,
    solver: &FreeDofSolver,
    deflate: &[Vec<f64>],
    start: Vec<f64>,
    steps: usize,
    tmp: &mut [f64],
) -> Krylov {
    let n = start.len();
    let mut v: Vec<Vec<f64>> = Vec::with_capacity(steps + 1);
    let mut alpha = Vec::with_capacity(steps);
    let mut beta: Vec<f64> = Vec::with_capacity(steps);
    v.push(start);
    let mut w = vec![0.0; n];
    let mut breakdown = false;
    for j in 0..steps {
        m.mul_vec(&v[j], tmp);
        solver.solve(tmp, &mut w);
        let a = m_dot(m, &v[j], &w, tmp);
        alpha.push(a);
        // Full reorthogonalization (twice) against the deflated and Lanczos vectors.
        for _ in 0..2 {
            project_out(m, &mut w, tmp, deflate);
            project_out(m, &mut w, tmp, &v);
        }
        let b = m_dot(m, &w, &w, tmp).sqrt();
        if j + 1 == steps {
            beta.push(b);
            break;
        }
        if b <= 1e-12 * a.abs().max(f64::MIN_POSITIVE) {
            beta.push(0.0);
            breakdown = true;
            break;
        }
        beta.push(b);
        v.push(w.iter().map(|x| x / b).collect());
    }
    Krylov {
        v,
        alpha,
        beta,
        breakdown,
    }
}

/// The M-normalized Ritz vector with coefficients `s` over the first `mlen` Lanczos
/// vectors `v`.
fn ritz_vector(
    m: &BlockSparseMatrix,
    v: &[Vec<f64>],
    s: &[f64],
    mlen: usize,
    tmp: &mut [f64],
) -> Vec<f64> {
    let mut x = vec![0.0; tmp.len()];
    for (jj, vj) in v.iter().enumerate().take(mlen) {
        for (xd, vd) in x.iter_mut().zip(vj) {
            *xd += s[jj] * vd;
        }
    }
    let nrm = m_dot(m, &x, &x, tmp).sqrt();
    x.iter_mut().for_each(|e| *e /= nrm);
    x
}

/// Computes linear modes. `fixed[d]` marks constrained dofs; `rest` (the rest positions)
/// is needed for unconstrained objects, whose rigid motions are projected out.
///
/// Lanczos from one start vector finds one vector per distinct eigenvalue, so repeated
/// eigenvalues (symmetric shapes: the two bending directions of a square beam) are
/// found by rerunning with the modes found so far deflated, until a run finds nothing
/// below the largest accepted eigenvalue.
pub fn linear_modes(
    k: &BlockSparseMatrix,
    m: &BlockSparseMatrix,
    fixed: &[bool],
    rest: &[nalgebra::Point3<f64>],
    opts: &ModesOptions,
) -> Result<LinearModes, ModesError> {
    let n = k.dim();
    let free = fixed.iter().filter(|f| !**f).count();
    let rigid = if opts.unconstrained { 6 } else { 0 };
    if opts.count + rigid > free || opts.count == 0 {
        return Err(ModesError::TooManyModes {
            asked: opts.count,
            free,
            rigid: opts.unconstrained,
        });
    }
    let mut tmp = vec![0.0; n];
    let sigma = modes_shift(k, m, opts.unconstrained);
    let solver = shifted_solver(k, m, fixed, sigma)?;
    let mut deflate: Vec<Vec<f64>> = if opts.unconstrained {
        let mut r = rigid_motions(rest);
        m_orthonormalize(m, &mut r, &mut tmp);
        r
    } else {
        Vec::new()
    };
    let mut found: Vec<(f64, Vec<f64>)> = Vec::new();
    let mut total_steps = 0;
    for round in 0..6u64 {
        let (new, steps) = lanczos_run(
            m,
            &solver,
            fixed,
            sigma,
            &deflate,
            opts.count,
            free,
            opts.tolerance,
            0x9E3779B97F4A7C15 ^ round,
        )
        .map_err(|(converged, steps)| ModesError::NoConvergence {
            converged,
            wanted: opts.count,
            steps,
        })?;
        total_steps += steps;
        if nothing_new(&found, &new, opts.count) {
            break;
        }
        for (l, x) in new {
            deflate.push(x.clone());
            found.push((l, x));
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.truncate(opts.count);
    }
    let mut vectors = DMatrix::zeros(n, opts.count);
    for (c, (_, x)) in found.iter().enumerate() {
        vectors.set_column(c, &DVector::from_column_slice(x));
    }
    Ok(LinearModes {
        eigenvalues: found.iter().map(|f| f.0).collect(),
        vectors,
        lanczos_steps: total_steps,
    })
}

/// The eigensolver's shift sigma.
fn modes_shift(k: &BlockSparseMatrix, m: &BlockSparseMatrix, unconstrained: bool) -> f64 {
    let n = k.dim();
    // Shift: zero for constrained objects; for unconstrained ones a small negative shift
    // relative to the typical diagonal ratio of K and M, so K - sigma M is definite.
    if unconstrained {
        let kd: f64 = (0..n).map(|d| k.get(d, d)).sum::<f64>();
        let md: f64 = (0..n).map(|d| m.get(d, d)).sum::<f64>();
        -1e-4 * kd / md
    } else {
        0.0
    }
}

/// The factored K - sigma M on the free dofs.
fn shifted_solver(
    k: &BlockSparseMatrix,
    m: &BlockSparseMatrix,
    fixed: &[bool],
    sigma: f64,
) -> Result<FreeDofSolver, ModesError> {
    let mut shifted = k.clone();
    for (s, mv) in shifted.values.iter_mut().zip(&m.values) {
        *s -= sigma * mv;
    }
    let mut solver = FreeDofSolver::new(&shifted, fixed).map_err(ModesError::Singular)?;
    solver.factor(&shifted).map_err(ModesError::Singular)?;
    Ok(solver)
}

/// Whether a Lanczos run found nothing below the largest of `count` accepted modes.
fn nothing_new(found: &[(f64, Vec<f64>)], new: &[(f64, Vec<f64>)], count: usize) -> bool {
    let largest = found.last().map(|f| f.0);
    match (largest, new.first()) {
        (Some(l), Some(first)) => found.len() >= count && first.0 >= l * (1.0 - 1e-9),
        (_, None) => true,
        _ => false,
    }
}
