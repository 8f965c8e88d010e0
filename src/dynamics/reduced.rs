//! Reduced implicit Newmark dynamics (thesis 2.9, docs/equations.md): q'' + D~ + R~(q) = f~ in
//! a mass-orthonormal basis (identity reduced mass), with reduced Rayleigh damping
//! D~ = (alpha I + beta K~(q)) q'.
//!
//! Each step runs `newton_iterations` Newton iterations (1 is the real-time setting) on
//! res = a1 dq - a2 v0 - a3 a0 + C (a4 dq + a5 v0 + a6 a0) + R~(q1) - f~,
//! A = (a1 + a4 alpha) I + (1 + a4 beta) K~(q1), solved by a dense Cholesky
//! factorization in place. Where A is not positive definite (K~ more negative than the
//! inertia term: a buckling or snapping state) the Newton matrix is shifted by a multiple
//! of the inertia term until it is (a modified Newton step of the same residual; Vega
//! resets instead). The step allocates nothing. A non-finite or exploding state, or a
//! matrix no shift repairs, is detected, the object is reset to rest (as Vega does), and
//! the step reports it.
//!
//! The forces are any [`ReducedInternalForces`]: the cubic StVK polynomial
//! ([`ReducedForces`], the default type parameter, so `ReducedNewmark` alone names the
//! polynomial integrator) or optimized cubature
//! ([`crate::reduction::cubature::CubatureForces`], any hyperelastic material).

use crate::dynamics::NewmarkCoefficients;

use crate::dynamics::NewmarkParams;
use crate::reduction::evaluator::{dot, ReducedForces, ReducedInternalForces};
use crate::reduction::simd::SimdLevel;

/// Settings of the reduced integrator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReducedParams {
    /// Newmark step dt and parameters beta~, gamma~.
    pub newmark: NewmarkParams,
    /// Rayleigh mass damping alpha (1/s); the reduced mass is the identity, so the term is
    /// alpha q'.
    pub damping_mass: f64,
    /// Rayleigh stiffness damping beta (s), multiplying the reduced tangent stiffness K~(q).
    pub damping_stiffness: f64,
    /// Newton iterations per step (at least one runs; 1 is the real-time setting).
    pub newton_iterations: usize,
    /// |q| above which the state counts as diverged.
    pub divergence_limit: f64,
    /// Multiplies the internal forces R~ and stiffness K~: scaling Young's modulus,
    /// since StVK's Lame parameters are both proportional to it (1 = as baked).
    pub material_scale: f64,
    /// Modes in use: coordinates `q_j` with `j >= active_modes` are held at zero (the
    /// interactive "number of modes" setting; values >= r use every mode).
    pub active_modes: usize,
    /// Activation in [0, 1] of an active (muscle) force model, handed to it before each
    /// step ([`ReducedInternalForces::set_activation`]); passive models ignore it.
    pub activation: f64,
}

impl Default for ReducedParams {
    fn default() -> Self {
        ReducedParams {
            newmark: NewmarkParams::average_acceleration(1e-3),
            damping_mass: 0.0,
            damping_stiffness: 0.0,
            newton_iterations: 1,
            divergence_limit: 1e6,
            material_scale: 1.0,
            active_modes: usize::MAX,
            activation: 0.0,
        }
    }
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEvent {
    /// The step completed normally.
    Ok,
    /// The state became non-finite or exceeded the divergence limit (or the system matrix
    /// stayed indefinite under every shift) and was reset to rest.
    DivergedAndReset,
}

/// Reduced implicit Newmark integrator with preallocated buffers, generic over the
/// reduced force model (the cubic polynomial by default).
#[derive(Debug, Clone)]
pub struct ReducedNewmark<F: ReducedInternalForces = ReducedForces> {
    /// Evaluator of the reduced internal forces R~(q) and tangent stiffness K~(q).
    pub forces: F,
    /// Integrator settings. The Newmark constants are computed from `params.newmark` in
    /// [`Self::new`]; changing it afterwards has no effect.
    pub params: ReducedParams,
    coeffs: NewmarkCoefficients,
    /// Reduced displacement q (length r).
    pub q: Vec<f64>,
    /// Reduced velocity q' (length r).
    pub qvel: Vec<f64>,
    /// Reduced acceleration q'' (length r).
    pub qacc: Vec<f64>,
    q0: Vec<f64>,
    r_int: Vec<f64>,
    k: Vec<f64>,
    a: Vec<f64>,
    res: Vec<f64>,
    kv: Vec<f64>,
    /// The system matrix and residual as built, kept for a shifted retry.
    a_work: Vec<f64>,
    res_work: Vec<f64>,
    scratch: F::Scratch,
    /// Number of divergence resets so far.
    pub resets: usize,
    /// Number of Newton solves that needed a shifted system matrix ([`Self::step`]).
    pub shifted: usize,
}

impl<F: ReducedInternalForces> ReducedNewmark<F> {
    /// An integrator at rest for `forces`, with every buffer sized to its r modes.
    pub fn new(forces: F, params: ReducedParams) -> Self {
        let r = forces.r();
        ReducedNewmark {
            coeffs: params.newmark.coefficients(),
            params,
            q: vec![0.0; r],
            qvel: vec![0.0; r],
            qacc: vec![0.0; r],
            q0: vec![0.0; r],
            r_int: vec![0.0; r],
            k: vec![0.0; r * r],
            a: vec![0.0; r * r],
            res: vec![0.0; r],
            kv: vec![0.0; r],
            a_work: vec![0.0; r * r],
            res_work: vec![0.0; r],
            scratch: forces.scratch(),
            resets: 0,
            shifted: 0,
            forces,
        }
    }

    /// Number of reduced coordinates r.
    pub fn r(&self) -> usize {
        self.q.len()
    }

    /// Resets to rest (and the force model's step state, such as lagged stiffness
    /// slices, to fresh).
    pub fn reset(&mut self) {
        self.forces.restart(&mut self.scratch);
        for x in self
            .q
            .iter_mut()
            .chain(&mut self.qvel)
            .chain(&mut self.qacc)
        {
            *x = 0.0;
        }
    }

    /// One step under the reduced external force `f` (length r). Allocates nothing.
    pub fn step(&mut self, f: &[f64]) -> StepEvent {
        let r = self.r();
        let c = self.coeffs;
        let (alpha, beta) = (self.params.damping_mass, self.params.damping_stiffness);
        self.forces.set_activation(self.params.activation);
        self.q0.copy_from_slice(&self.q);
        for _ in 0..self.params.newton_iterations.max(1) {
            self.forces
                .evaluate_step(&self.q, &mut self.r_int, &mut self.k, &mut self.scratch);
            let scale = self.params.material_scale;
            if scale != 1.0 {
                for x in self.r_int.iter_mut().chain(&mut self.k) {
                    *x *= scale;
                }
            }
            // vel (into kv temporarily) and the residual.
            for i in 0..r {
                let dq = self.q[i] - self.q0[i];
                self.res[i] = c.acceleration(dq, self.qvel[i], self.qacc[i]);
                self.kv[i] = c.velocity(dq, self.qvel[i], self.qacc[i]);
            }
            // res += alpha vel + beta K vel + R - f.
            for i in 0..r {
                self.res[i] += alpha * self.kv[i] + self.r_int[i] - f[i];
            }
            if beta != 0.0 {
                for j in 0..r {
                    let vj = beta * self.kv[j];
                    let col = &self.k[j * r..(j + 1) * r];
                    for i in 0..r {
                        self.res[i] += col[i] * vj;
                    }
                }
            }
            // A = (a1 + a4 alpha) I + (1 + a4 beta) K.
            let (ci, ck) = (c.a1 + c.a4 * alpha, 1.0 + c.a4 * beta);
            for (a, k) in self.a.iter_mut().zip(&self.k) {
                *a = ck * k;
            }
            for i in 0..r {
                self.a[i * r + i] += ci;
            }
            // Inactive modes: the equation of q_j becomes q_j <- 0.
            for j in self.params.active_modes.min(r)..r {
                for i in 0..r {
                    self.a[i * r + j] = 0.0;
                    self.a[j * r + i] = 0.0;
                }
                self.a[j * r + j] = 1.0;
                self.res[j] = self.q[j];
            }
            if !self.solve_modified(ci) {
                return self.recover();
            }
            for i in 0..r {
                self.q[i] -= self.res[i];
            }
        }
        let mut norm2 = 0.0;
        for i in 0..r {
            let dq = self.q[i] - self.q0[i];
            let acc = c.acceleration(dq, self.qvel[i], self.qacc[i]);
            let vel = c.velocity(dq, self.qvel[i], self.qacc[i]);
            self.qacc[i] = acc;
            self.qvel[i] = vel;
            norm2 += self.q[i] * self.q[i];
        }
        if !norm2.is_finite() || norm2.sqrt() > self.params.divergence_limit {
            return self.recover();
        }
        StepEvent::Ok
    }

    /// Solves A x = res for the Newton update (into `res`) by Cholesky. Where A is not
    /// positive definite (the tangent K~ is more negative than the inertia term: a
    /// buckling or snapping state, such as the fully activated muscle pressed by a
    /// fingertip), retries with A + s I on the active modes, s = `inertia` x 4^k for
    /// k = 0..8: a modified Newton step of the same residual that keeps the state
    /// continuous, where a reset to rest would jerk the object away from the hand
    /// (docs/muscle.md). Returns false only if every shift fails. Allocates nothing.
    fn solve_modified(&mut self, inertia: f64) -> bool {
        let r = self.r();
        let active = self.params.active_modes.min(r);
        let mut shift = 0.0;
        for attempt in 0..10 {
            self.a_work.copy_from_slice(&self.a);
            self.res_work.copy_from_slice(&self.res);
            for i in 0..active {
                self.a_work[i * r + i] += shift;
            }
            if cholesky_solve_in_place(&mut self.a_work, r, &mut self.res_work) {
                self.res.copy_from_slice(&self.res_work);
                self.shifted += usize::from(attempt > 0);
                return true;
            }
            shift = if attempt == 0 { inertia } else { 4.0 * shift };
        }
        false
    }

    fn recover(&mut self) -> StepEvent {
        self.reset();
        self.resets += 1;
        StepEvent::DivergedAndReset
    }

    /// Reduced potential energy W(q): the force model's closed form where it has one
    /// ([`ReducedInternalForces::energy`]), else W = int_0^1 R~(t q) . q dt by 2-point
    /// Gauss, exact when the integrand is a cubic in t (the StVK polynomial, StVK
    /// cubature). Allocates; for monitors and tests.
    pub fn potential_energy(&self, q: &[f64]) -> f64 {
        if let Some(w) = self.forces.energy(q) {
            return w;
        }
        let r = self.r();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let mut scratch = self.forces.scratch();
        let g = 0.5 / 3f64.sqrt();
        let mut w = 0.0;
        for t in [0.5 - g, 0.5 + g] {
            let qt: Vec<f64> = q.iter().map(|x| t * x).collect();
            self.forces.evaluate(&qt, &mut f, &mut k, &mut scratch);
            w += 0.5 * f.iter().zip(q).map(|(a, b)| a * b).sum::<f64>();
        }
        w
    }

    /// Kinetic plus potential energy of the current state.
    pub fn energy(&self) -> f64 {
        0.5 * self.qvel.iter().map(|v| v * v).sum::<f64>() + self.potential_energy(&self.q)
    }
}

/// Solves A x = b for a symmetric positive definite A (column-major n x n, overwritten
/// by its Cholesky factor), x overwriting b. Returns false if A is not positive
/// definite. Hand-written: the 1 kHz loop needs an in-place solve on preallocated
/// memory, which nalgebra's owned decompositions do not offer. n <= MAX_R (255).
pub(crate) fn cholesky_solve_in_place(a: &mut [f64], n: usize, b: &mut [f64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if SimdLevel::detect() >= SimdLevel::Avx2 {
        // SAFETY: the CPU has AVX2.
        return unsafe { cholesky_avx2(a, n, b) };
    }
    cholesky_any(a, n, b)
}

/// [`cholesky_any`] compiled for AVX2: four-lane multiplies and adds where SSE2 has two.
/// Rust never fuses a multiply and an add on its own, so the operations, their order and
/// their roundings are the same: the same bits as the portable build.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn cholesky_avx2(a: &mut [f64], n: usize, b: &mut [f64]) -> bool {
    cholesky_any(a, n, b)
}

#[inline(always)]
fn cholesky_any(a: &mut [f64], n: usize, b: &mut [f64]) -> bool {
    // A is symmetric, so its column-major storage read row-major is the same matrix:
    // the lower factor is stored by rows (L[i][k] at a[i*n + k]), which keeps every inner
    // loop a contiguous dot product. It is built a column at a time (left-looking):
    // L[i][j] = (A[i][j] - L[i, ..j] . L[j, ..j]) / L[j][j] for all i > j are independent
    // dot products, which the core overlaps; built row by row, each entry waited for the
    // one before it (a chain of n^3 / 6 dependent additions). Each entry is the same
    // expression either way, so the factor is the same bits.
    // Reciprocals of the diagonal on the stack: divisions are long-latency and would
    // otherwise serialize the factorization.
    let a = &mut a[..n * n];
    let b = &mut b[..n];
    let mut inv = [0.0f64; crate::reduction::evaluator::MAX_R];
    for j in 0..n {
        let (done, rest) = a.split_at_mut((j + 1) * n);
        let row_j = &mut done[j * n..j * n + j + 1];
        let d = row_j[j] - dot(&row_j[..j], &row_j[..j]);
        if d.is_nan() || d <= 0.0 || !d.is_finite() {
            return false;
        }
        row_j[j] = d.sqrt();
        inv[j] = 1.0 / row_j[j];
        let row_j = &row_j[..j];
        let mut rows = rest.chunks_exact_mut(4 * n);
        for four in &mut rows {
            let s = dot_rows4(four, n, row_j);
            for (row_i, s) in four.chunks_exact_mut(n).zip(s) {
                row_i[j] = (row_i[j] - s) * inv[j];
            }
        }
        for row_i in rows.into_remainder().chunks_exact_mut(n) {
            let s = dot(&row_i[..j], row_j);
            row_i[j] = (row_i[j] - s) * inv[j];
        }
    }
    // L y = b.
    for i in 0..n {
        let row = &a[i * n..i * n + i + 1];
        let s = dot(&row[..i], &b[..i]);
        b[i] = (b[i] - s) * inv[i];
    }
    // L^T x = y, column-oriented on the rows of L.
    for i in (0..n).rev() {
        let row = &a[i * n..i * n + i + 1];
        b[i] *= inv[i];
        let xi = b[i];
        for (bk, l) in b[..i].iter_mut().zip(&row[..i]) {
            *bk -= l * xi;
        }
    }
    true
}

/// [`dot`] of the first `x.len()` entries of four rows (`n` apart in `rows`) with `x`,
/// in one pass over `x`: each is the same sum in the same order as [`dot`] (four lane
/// sums, paired, then the tail), so the same bits, but the four are interleaved.
#[inline(always)]
fn dot_rows4(rows: &[f64], n: usize, x: &[f64]) -> [f64; 4] {
    let m = x.len();
    let rows: [&[f64]; 4] = std::array::from_fn(|k| &rows[k * n..k * n + m]);
    let mut acc = [[0.0f64; 4]; 4];
    let m4 = m / 4 * 4;
    let mut c = 0;
    while c < m4 {
        let xc = &x[c..c + 4];
        for (a, row) in acc.iter_mut().zip(&rows) {
            let rc = &row[c..c + 4];
            for l in 0..4 {
                a[l] += rc[l] * xc[l];
            }
        }
        c += 4;
    }
    std::array::from_fn(|k| {
        let a = &acc[k];
        let mut s = (a[0] + a[1]) + (a[2] + a[3]);
        for (r, xv) in rows[k][m4..].iter().zip(&x[m4..]) {
            s += r * xv;
        }
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The factorization row by row, each entry one [`dot`]: the reference order.
    fn cholesky_by_rows(a: &mut [f64], n: usize) -> Vec<f64> {
        let mut inv = vec![0.0; n];
        for i in 0..n {
            for j in 0..i {
                let s = dot(&a[i * n..i * n + j], &a[j * n..j * n + j]);
                a[i * n + j] = (a[i * n + j] - s) * inv[j];
            }
            let d = a[i * n + i] - dot(&a[i * n..i * n + i], &a[i * n..i * n + i]);
            a[i * n + i] = d.sqrt();
            inv[i] = 1.0 / a[i * n + i];
        }
        (0..n)
            .flat_map(|i| a[i * n..i * n + i + 1].to_vec())
            .collect()
    }

    #[test]
    fn cholesky_factor_is_the_same_bits_as_row_by_row() {
        // Column at a time, four rows interleaved, compiled for AVX2 where the CPU has
        // it: every entry must still be the reference's expression, bit for bit. Sizes
        // cover every remainder of the four-row groups and of the four-lane sums.
        for n in (1..=13).chain([37, 100]) {
            let m: Vec<f64> = (0..n * n)
                .map(|i| (i * 7919 % 1013) as f64 / 1013.0 - 0.5)
                .collect();
            let mut a = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    a[j * n + i] = (0..n).map(|k| m[k * n + i] * m[k * n + j]).sum::<f64>()
                        + if i == j { 0.5 } else { 0.0 };
                }
            }
            let want = cholesky_by_rows(&mut a.clone(), n);
            let mut got = a.clone();
            let mut rhs = vec![1.0; n];
            assert!(cholesky_solve_in_place(&mut got, n, &mut rhs), "n {n}");
            let got: Vec<f64> = (0..n)
                .flat_map(|i| got[i * n..i * n + i + 1].to_vec())
                .collect();
            assert_eq!(got, want, "n {n}");
        }
    }

    #[test]
    fn cholesky_solves_spd_systems_and_rejects_indefinite_ones() {
        let n = 4;
        // A = B B^T + I.
        let b: Vec<f64> = (0..16).map(|i| ((i * 7 % 5) as f64 - 2.0) * 0.3).collect();
        let mut a = vec![0.0; 16];
        for i in 0..n {
            for j in 0..n {
                a[j * n + i] = (0..n).map(|k| b[k * n + i] * b[k * n + j]).sum::<f64>()
                    + if i == j { 1.0 } else { 0.0 };
            }
        }
        let a0 = a.clone();
        let rhs = vec![1.0, -2.0, 0.5, 3.0];
        let mut x = rhs.clone();
        assert!(cholesky_solve_in_place(&mut a, n, &mut x));
        for i in 0..n {
            let ax: f64 = (0..n).map(|j| a0[j * n + i] * x[j]).sum();
            assert!((ax - rhs[i]).abs() < 1e-12);
        }
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        let mut y = vec![1.0, 1.0];
        assert!(!cholesky_solve_in_place(&mut bad, 2, &mut y));
    }

    /// A snapping mode: W = -lambda q0^2 / 2 + mu q0^4 / 4 + k q1^2 / 2, wells at
    /// q0 = +-sqrt(lambda / mu). At rest K = -lambda is far below the inertia term.
    struct DoubleWell;
    const LAMBDA: f64 = 1e8;
    const WELL: f64 = 0.01;
    const MU: f64 = LAMBDA / (WELL * WELL);
    impl ReducedInternalForces for DoubleWell {
        type Scratch = ();
        fn r(&self) -> usize {
            2
        }
        fn scratch(&self) {}
        fn evaluate(&self, q: &[f64], force: &mut [f64], stiffness: &mut [f64], _: &mut ()) {
            force[0] = -LAMBDA * q[0] + MU * q[0].powi(3);
            force[1] = 1e6 * q[1];
            stiffness.copy_from_slice(&[-LAMBDA + 3.0 * MU * q[0] * q[0], 0.0, 0.0, 1e6]);
        }
    }

    /// Where the system matrix is indefinite the step shifts it instead of resetting to
    /// rest: the state stays continuous and settles in a well (before, every step reset
    /// and the object never left rest).
    #[test]
    fn an_indefinite_system_matrix_is_shifted_not_reset() {
        let params = ReducedParams {
            damping_mass: 100.0,
            ..ReducedParams::default()
        };
        let mut sim = ReducedNewmark::new(DoubleWell, params);
        // A small push off the unstable rest state.
        let f = [1e2, 0.0];
        for _ in 0..3000 {
            assert_eq!(sim.step(&f), StepEvent::Ok);
        }
        assert_eq!(sim.resets, 0);
        assert!(sim.shifted > 0, "the rest state must have needed a shift");
        // Settled in the well (the push moves it by f / K = 1e2 / 2e8: negligible
        // beside the 2% bound, which absorbs the residual ringing).
        assert!((sim.q[0] - WELL).abs() <= 0.02 * WELL, "q0 = {}", sim.q[0]);
        assert!(sim.q[1].abs() < 1e-12);
    }
}
