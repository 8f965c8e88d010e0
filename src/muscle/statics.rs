//! Static equilibrium R(u) = f_ext of a hyperelastic tet mesh by full Newton's method,
//! with prescribed displacements on constrained dofs and a sparse LU solve (faer, partial
//! pivoting), so that unstable equilibria (the descending limb of the tension-length
//! curve, where the tangent is indefinite) are found as they are: no stiffness clamping,
//! shift or dynamic relaxation that would move the answer. A backtracking line search on
//! the residual norm only shortens steps; it does not change the fixed point.

use super::MuscleError;
use crate::fem::{FreeDofSolver, TetKernel, TetMaterial};

/// Settings of [`solve_static`].
#[derive(Debug, Clone, Copy)]
pub struct StaticOptions {
    /// Newton iterations at most.
    pub max_iterations: usize,
    /// Converged when the residual's Euclidean norm on the free dofs is at most this
    /// (N).
    pub tolerance: f64,
}

impl Default for StaticOptions {
    fn default() -> Self {
        StaticOptions {
            max_iterations: 60,
            tolerance: 1e-9,
        }
    }
}

/// An equilibrium.
#[derive(Debug, Clone)]
pub struct StaticSolution {
    /// Displacements (m), prescribed values on the constrained dofs.
    pub u: Vec<f64>,
    /// Internal forces R(u) (N): on the constrained dofs, the reactions.
    pub forces: Vec<f64>,
    /// Newton iterations run.
    pub iterations: usize,
    /// Final residual norm on the free dofs (N).
    pub residual: f64,
}

fn free_norm(r: &[f64], fixed: &[bool]) -> f64 {
    r.iter()
        .zip(fixed)
        .filter(|(_, &f)| !f)
        .map(|(v, _)| v * v)
        .sum::<f64>()
        .sqrt()
}

/// Solves R(u) = f_ext for the free dofs, starting from `u0` (whose constrained entries
/// are the prescribed displacements). `case` names the load case in errors.
pub fn solve_static<M: TetMaterial + ?Sized>(
    kernel: &TetKernel,
    material: &M,
    fixed: &[bool],
    u0: Vec<f64>,
    external: Option<&[f64]>,
    options: StaticOptions,
    case: &str,
) -> Result<StaticSolution, MuscleError> {
    let n = kernel.num_dofs();
    assert_eq!(fixed.len(), n);
    assert_eq!(u0.len(), n);
    let mut u = u0;
    let mut k = kernel.new_matrix();
    let mut solver = FreeDofSolver::new(&k, fixed).map_err(|source| MuscleError::Solve {
        case: case.to_string(),
        source,
    })?;
    let mut f = vec![0.0; n];
    let mut res = vec![0.0; n];
    let mut du = vec![0.0; n];
    let mut trial = vec![0.0; n];
    let residual = |f: &[f64], res: &mut [f64]| {
        for d in 0..n {
            res[d] = f[d] - external.map_or(0.0, |e| e[d]);
        }
    };
    kernel.internal_forces(material, &u, &mut f);
    residual(&f, &mut res);
    let mut norm = free_norm(&res, fixed);
    for it in 0..options.max_iterations {
        if norm <= options.tolerance {
            return Ok(StaticSolution {
                u,
                forces: f,
                iterations: it,
                residual: norm,
            });
        }
        kernel.tangent_stiffness(material, &u, &mut k);
        solver
            .factor_indefinite(&k)
            .map_err(|source| MuscleError::Solve {
                case: case.to_string(),
                source,
            })?;
        solver.solve(&res, &mut du);
        // Backtracking on the residual norm; the full step is taken whenever it helps.
        let mut step = 1.0;
        loop {
            for d in 0..n {
                trial[d] = u[d] - step * du[d];
            }
            kernel.internal_forces(material, &trial, &mut f);
            residual(&f, &mut res);
            let trial_norm = free_norm(&res, fixed);
            if trial_norm.is_finite() && (trial_norm < norm || step < 1e-3) {
                norm = trial_norm;
                break;
            }
            step *= 0.5;
        }
        std::mem::swap(&mut u, &mut trial);
    }
    if norm <= options.tolerance {
        return Ok(StaticSolution {
            u,
            forces: f,
            iterations: options.max_iterations,
            residual: norm,
        });
    }
    Err(MuscleError::NotConverged {
        case: case.to_string(),
        iterations: options.max_iterations,
        residual: norm,
        tolerance: options.tolerance,
    })
}
