//! The full-space reference simulator: implicit Newmark on the finite element model with
//! Newton iterations to a tolerance, Rayleigh damping, fixed or prescribed vertices,
//! gravity and vertex or point loads, plus a static-equilibrium mode.
//!
//! Equations of motion (thesis 2.1): M u'' + (alpha M + beta K(u)) u' + R(u) = f(t).
//! Each step solves for the end-of-step displacement u1 by Newton's method on
//! r(u1) = M a1 + C v1 + R(u1) - f1, with a1, v1 the Newmark expressions of u1
//! ([`super::NewmarkCoefficients`]) and the tangent A = (a1 + a4 alpha) M + (1 + a4 beta) K(u1)
//! (the derivative of K in the damping term is dropped, as Vega does). Linear systems are
//! solved by sparse Cholesky (faer, AMD ordering) on the free degrees of freedom.
//!
//! This is the ground truth the reduced models are measured against.

use nalgebra::Vector3;

use crate::dynamics::NewmarkCoefficients;

use crate::dynamics::NewmarkParams;
use crate::fem::{model::FemModel, model::MassKind, BlockSparseMatrix, FreeDofSolver, SolveError};

/// Settings of the full-space simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FullSimParams {
    /// Newmark step dt and parameters beta~, gamma~.
    pub newmark: NewmarkParams,
    /// Mass-proportional Rayleigh damping alpha (1/s).
    pub damping_mass: f64,
    /// Stiffness-proportional Rayleigh damping beta (s).
    pub damping_stiffness: f64,
    /// Consistent or lumped mass matrix M.
    pub mass: MassKind,
    /// Newton stops when the free residual falls below `tolerance` times its first value
    /// (or the update below `tolerance` times the displacement).
    pub tolerance: f64,
    /// Newton iterations allowed per step or static solve before
    /// [`SimError::NoConvergence`] (with 1, a dynamic step is accepted after one iteration).
    pub max_newton_iterations: usize,
}

impl Default for FullSimParams {
    fn default() -> Self {
        FullSimParams {
            newmark: NewmarkParams::average_acceleration(1e-3),
            damping_mass: 0.0,
            damping_stiffness: 0.0,
            mass: MassKind::Consistent,
            tolerance: 1e-8,
            max_newton_iterations: 20,
        }
    }
}

/// A load on the object, active over a time interval.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Uniform acceleration (m/s^2) on every vertex, always active.
    Gravity(Vector3<f64>),
    /// A force (N) on one vertex during [start, end).
    Vertex {
        /// 0-based vertex index.
        vertex: usize,
        /// Force (N).
        force: Vector3<f64>,
        /// Time the force turns on (s).
        start: f64,
        /// Time the force turns off (s), exclusive.
        end: f64,
    },
    /// A force at a point inside an element, spread by its interpolation weights
    /// (trilinear or barycentric, see `geometry::embed`) during [start, end).
    Point {
        /// 0-based vertices of the element containing the point.
        vertices: Vec<usize>,
        /// Interpolation weight of the point for each of `vertices` (summing to 1).
        weights: Vec<f64>,
        /// Total force (N) at the point.
        force: Vector3<f64>,
        /// Time the force turns on (s).
        start: f64,
        /// Time the force turns off (s), exclusive.
        end: f64,
    },
}

/// Assembles the external force vector of `loads` at time `t` (overwrites `f`).
pub fn assemble_loads(loads: &[Load], gravity_unit: &[f64], t: f64, f: &mut [f64]) {
    f.iter_mut().for_each(|x| *x = 0.0);
    for load in loads {
        match load {
            Load::Gravity(g) => {
                // gravity_unit holds the lumped vertex masses (M times ones, per vertex).
                for (v, m) in gravity_unit.iter().enumerate() {
                    for i in 0..3 {
                        f[3 * v + i] += m * g[i];
                    }
                }
            }
            Load::Vertex {
                vertex,
                force,
                start,
                end,
            } => {
                if t >= *start && t < *end {
                    for i in 0..3 {
                        f[3 * vertex + i] += force[i];
                    }
                }
            }
            Load::Point {
                vertices,
                weights,
                force,
                start,
                end,
            } => {
                if t >= *start && t < *end {
                    for (v, w) in vertices.iter().zip(weights) {
                        for i in 0..3 {
                            f[3 * v + i] += w * force[i];
                        }
                    }
                }
            }
        }
    }
}

/// Errors of the full-space simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The sparse Cholesky factorization failed.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// Newton did not reach `tolerance` within `max_newton_iterations`.
    #[error("Newton did not converge at t = {time:.6} s: relative residual {relative_residual:.3e} after {iterations} iterations")]
    NoConvergence {
        /// Simulation time (s) at the start of the failed step or static solve.
        time: f64,
        /// Residual norm on the free dofs, relative to its reference scale, at the last iteration.
        relative_residual: f64,
        /// Iterations run.
        iterations: usize,
    },
    /// The residual became NaN or infinite.
    #[error("the simulation produced a non-finite displacement at t = {time:.6} s")]
    NonFinite {
        /// Simulation time (s) at the start of the failed step or static solve.
        time: f64,
    },
    /// A fixed vertex index is not in the mesh.
    #[error("fixed vertex {vertex} is out of range (the mesh has {count} vertices)")]
    FixedOutOfRange {
        /// The offending 0-based vertex index.
        vertex: usize,
        /// Number of vertices in the mesh.
        count: usize,
    },
}

/// What one step or solve did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// Newton iterations (linear solves) performed.
    pub newton_iterations: usize,
    /// Residual norm on the free dofs relative to its reference scale, at the last check.
    pub relative_residual: f64,
}

/// Full-space implicit Newmark simulator and static solver.
pub struct FullSimulator {
    /// The finite element model: mesh, material law and element data.
    pub model: FemModel,
    /// Simulator settings; the Newmark constants are computed from `params.newmark` in
    /// [`Self::new`], so changing it afterwards has no effect.
    pub params: FullSimParams,
    coeffs: NewmarkCoefficients,
    mass: BlockSparseMatrix,
    vertex_masses: Vec<f64>,
    fixed: Vec<bool>,
    solver: FreeDofSolver,
    /// Displacement u (m), one entry per degree of freedom (3 per vertex, x y z interleaved).
    pub u: Vec<f64>,
    /// Velocity u' (m/s), one entry per degree of freedom.
    pub v: Vec<f64>,
    /// Acceleration u'' (m/s^2), one entry per degree of freedom.
    pub a: Vec<f64>,
    /// Simulation time (s), advanced by dt each step.
    pub time: f64,
    k: BlockSparseMatrix,
    system: BlockSparseMatrix,
    f_int: Vec<f64>,
    residual: Vec<f64>,
    du: Vec<f64>,
    tmp: Vec<f64>,
    tmp2: Vec<f64>,
}

impl FullSimulator {
    /// `fixed_vertices`: 0-based vertices whose three displacements are prescribed (zero
    /// unless changed with [`Self::set_prescribed`]).
    pub fn new(
        model: FemModel,
        fixed_vertices: &[usize],
        params: FullSimParams,
    ) -> Result<Self, SimError> {
        let n = model.num_dofs();
        let mut fixed = vec![false; n];
        for &v in fixed_vertices {
            if v >= model.num_vertices() {
                return Err(SimError::FixedOutOfRange {
                    vertex: v,
                    count: model.num_vertices(),
                });
            }
            fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
        }
        let mass = model.mass_matrix(params.mass);
        let vertex_masses = model.lumped_vertex_masses();
        let k = model.new_matrix();
        let solver = FreeDofSolver::new(&k, &fixed)?;
        Ok(FullSimulator {
            coeffs: params.newmark.coefficients(),
            params,
            mass,
            vertex_masses,
            fixed,
            solver,
            u: vec![0.0; n],
            v: vec![0.0; n],
            a: vec![0.0; n],
            time: 0.0,
            system: k.clone(),
            k,
            f_int: vec![0.0; n],
            residual: vec![0.0; n],
            du: vec![0.0; n],
            tmp: vec![0.0; n],
            tmp2: vec![0.0; n],
            model,
        })
    }

    /// Number of degrees of freedom, 3 per vertex (x, y, z interleaved).
    pub fn num_dofs(&self) -> usize {
        self.u.len()
    }

    /// The mass matrix M, of the kind chosen in `params.mass`.
    pub fn mass_matrix(&self) -> &BlockSparseMatrix {
        &self.mass
    }

    /// Lumped mass of each vertex (kg), used to apply [`Load::Gravity`].
    pub fn vertex_masses(&self) -> &[f64] {
        &self.vertex_masses
    }

    /// Whether degree of freedom `dof` (3 vertex + axis) is fixed (prescribed).
    pub fn is_fixed(&self, dof: usize) -> bool {
        self.fixed[dof]
    }

    /// Sets the displacement of the fixed degrees of freedom (for example a rotated
    /// support); `values` is full-length, only its fixed entries are used.
    pub fn set_prescribed(&mut self, values: &[f64]) {
        for d in 0..self.u.len() {
            if self.fixed[d] {
                self.u[d] = values[d];
            }
        }
    }

    /// Sets the acceleration consistent with the equations of motion at the current state,
    /// M a = f_ext - R(u) - (alpha M + beta K(u)) v, so that a simulation started from a
    /// deformed or moving state is a solution from its first step (Newmark's energy
    /// conservation for linear systems depends on it).
    pub fn initialize_acceleration(&mut self, f_ext: &[f64]) -> Result<(), SimError> {
        let n = self.u.len();
        let (alpha, beta) = (self.params.damping_mass, self.params.damping_stiffness);
        self.model
            .forces_and_stiffness(&self.u, &mut self.f_int, &mut self.k);
        self.mass.mul_vec(&self.v, &mut self.tmp);
        self.k.mul_vec(&self.v, &mut self.tmp2);
        for d in 0..n {
            self.residual[d] = f_ext[d] - self.f_int[d] - alpha * self.tmp[d] - beta * self.tmp2[d];
        }
        self.solver.factor(&self.mass)?;
        self.solver.solve(&self.residual, &mut self.a);
        Ok(())
    }

    /// External force vector of `loads` at time `t`.
    pub fn loads_at(&self, loads: &[Load], t: f64) -> Vec<f64> {
        let mut f = vec![0.0; self.u.len()];
        assemble_loads(loads, &self.vertex_masses, t, &mut f);
        f
    }

    fn free_norm(&self, x: &[f64]) -> f64 {
        x.iter()
            .zip(&self.fixed)
            .filter(|(_, f)| !**f)
            .map(|(x, _)| x * x)
            .sum::<f64>()
            .sqrt()
    }

    /// The Newmark residual of the current iterate (step started at `u0`) into `residual`,
    /// and `f_int`, `k` at the current displacement.
    fn newmark_residual(&mut self, u0: &[f64], f_ext: &[f64]) {
        let c = self.coeffs;
        let (alpha, beta) = (self.params.damping_mass, self.params.damping_stiffness);
        let n = self.u.len();
        self.model
            .forces_and_stiffness(&self.u, &mut self.f_int, &mut self.k);
        // Newmark velocity and acceleration of the current iterate.
        for d in 0..n {
            let dx = self.u[d] - u0[d];
            self.tmp[d] = c.acceleration(dx, self.v[d], self.a[d]);
            self.tmp2[d] = c.velocity(dx, self.v[d], self.a[d]);
        }
        // r = M acc + (alpha M + beta K) vel + R - f.
        for d in 0..n {
            self.tmp[d] += alpha * self.tmp2[d];
        }
        self.mass.mul_vec(&self.tmp, &mut self.residual);
        self.k.mul_vec(&self.tmp2, &mut self.du);
        for d in 0..n {
            self.residual[d] += beta * self.du[d] + self.f_int[d] - f_ext[d];
        }
    }

    /// The Newton increment `du` solving the Newmark tangent system
    /// ((a1 + a4 alpha) M + (1 + a4 beta) K) du = residual.
    fn newmark_increment(&mut self) -> Result<(), SimError> {
        let c = self.coeffs;
        let (alpha, beta) = (self.params.damping_mass, self.params.damping_stiffness);
        let (cm, ck) = (c.a1 + c.a4 * alpha, 1.0 + c.a4 * beta);
        for ((s, m), k) in self
            .system
            .values
            .iter_mut()
            .zip(&self.mass.values)
            .zip(&self.k.values)
        {
            *s = cm * m + ck * k;
        }
        self.solver.factor(&self.system)?;
        self.solver.solve(&self.residual, &mut self.du);
        Ok(())
    }

    /// Subtracts the increment `du` from `u`; whether the increment is negligible
    /// (|du| <= tolerance / 100 |u|).
    fn apply_increment(&mut self) -> bool {
        let mut dun = 0.0;
        let mut un = 0.0;
        for d in 0..self.u.len() {
            self.u[d] -= self.du[d];
            dun += self.du[d] * self.du[d];
            un += self.u[d] * self.u[d];
        }
        dun.sqrt() <= self.params.tolerance * 1e-2 * un.sqrt()
    }

    /// Ends the step started at `u0` and reports it.
    fn finished(&mut self, u0: &[f64], newton_iterations: usize, rel: f64) -> StepReport {
        self.finish_step(u0);
        StepReport {
            newton_iterations,
            relative_residual: rel,
        }
    }

    /// One implicit Newmark step to time + dt under the external force `f_ext` (evaluated
    /// at the end of the step).
    pub fn step(&mut self, f_ext: &[f64]) -> Result<StepReport, SimError> {
        let u0 = self.u.clone();
        let mut first = None;
        let mut rel = f64::INFINITY;
        for it in 0..self.params.max_newton_iterations {
            self.newmark_residual(&u0, f_ext);
            let rn = self.free_norm(&self.residual);
            // Relative to the first residual, or to the force scale when the step starts
            // in equilibrium.
            let r0 = *first.get_or_insert(
                rn.max(self.free_norm(f_ext))
                    .max(self.free_norm(&self.f_int))
                    .max(f64::MIN_POSITIVE),
            );
            rel = rn / r0;
            if !rn.is_finite() {
                return Err(SimError::NonFinite { time: self.time });
            }
            if it > 0 && rel <= self.params.tolerance {
                return Ok(self.finished(&u0, it, rel));
            }
            self.newmark_increment()?;
            if self.apply_increment() && it > 0 {
                return Ok(self.finished(&u0, it + 1, rel));
            }
        }
        if self.params.max_newton_iterations == 1 {
            return Ok(self.finished(&u0, 1, rel));
        }
        Err(SimError::NoConvergence {
            time: self.time,
            relative_residual: rel,
            iterations: self.params.max_newton_iterations,
        })
    }

    fn finish_step(&mut self, u0: &[f64]) {
        let c = self.coeffs;
        for d in 0..self.u.len() {
            let dx = self.u[d] - u0[d];
            let acc = c.acceleration(dx, self.v[d], self.a[d]);
            let vel = c.velocity(dx, self.v[d], self.a[d]);
            self.a[d] = acc;
            self.v[d] = vel;
        }
        self.time += self.params.newmark.dt;
    }

    /// Static equilibrium R(u) = f_ext by Newton's method from the current u (fixed
    /// dofs keep their prescribed values). For large loads or prescribed motions, call
    /// it over a sequence of increasing loads (load stepping).
    pub fn solve_static(&mut self, f_ext: &[f64]) -> Result<StepReport, SimError> {
        let n = self.u.len();
        let mut first = None;
        let mut rel = f64::INFINITY;
        for it in 0..self.params.max_newton_iterations {
            self.model
                .forces_and_stiffness(&self.u, &mut self.f_int, &mut self.k);
            for d in 0..n {
                self.residual[d] = self.f_int[d] - f_ext[d];
            }
            let rn = self.free_norm(&self.residual);
            if !rn.is_finite() {
                return Err(SimError::NonFinite { time: self.time });
            }
            // Scale by the external force (or the first residual when the load is zero,
            // as for a prescribed support motion).
            let scale = *first.get_or_insert(rn.max(self.free_norm(f_ext)).max(f64::MIN_POSITIVE));
            rel = rn / scale;
            if rel <= self.params.tolerance {
                return Ok(StepReport {
                    newton_iterations: it,
                    relative_residual: rel,
                });
            }
            self.solver.factor(&self.k)?;
            self.solver.solve(&self.residual, &mut self.du);
            for d in 0..n {
                self.u[d] -= self.du[d];
            }
        }
        Err(SimError::NoConvergence {
            time: self.time,
            relative_residual: rel,
            iterations: self.params.max_newton_iterations,
        })
    }

    /// Kinetic plus elastic energy (for monitors and conservation tests).
    pub fn energy(&self) -> f64 {
        let mut mv = vec![0.0; self.u.len()];
        self.mass.mul_vec(&self.v, &mut mv);
        0.5 * mv.iter().zip(&self.v).map(|(a, b)| a * b).sum::<f64>()
            + self.model.strain_energy(&self.u)
    }
}
