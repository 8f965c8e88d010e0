//! The exact linear part of the cubature force (f(0) + K0 q of the full mesh) and the
//! equilibrium correction at the rest and training equilibria, with the linearizations
//! of the material that they need.

use nalgebra::{DMatrix, DVector, Matrix3};

use crate::fem::{TetKernel, TetMaterial};
use crate::reduction::evaluator::ReducedInternalForces;

use super::*;

/// The affine part f(0) + K0 q of the reduced force, exact, and per point its
/// linearization at rest, subtracted from the point's stress (scaled by w V).
#[derive(Debug, Clone)]
pub(super) struct LinearPart {
    /// r x r column-major U^T K0 U.
    pub(super) k0: Vec<f64>,
    /// U^T R(0) (zero for a passive material).
    pub(super) f0: Vec<f64>,
    /// w V vec P(I) per point.
    pub(super) p0: Vec<[f64; 9]>,
    /// w V dP/dF(I) per point.
    pub(super) t0: Vec<nalgebra::SMatrix<f64, 9, 9>>,
    /// The force's affine part with the points' linearizations summed into it:
    /// k0 - sum_p G_p^T t0_p G_p (r x r) and f0 - sum_p G_p^T p0_p, with G as stored
    /// ([`CubatureForces::sum_point_linearizations`]), so that the force takes each
    /// point's stress whole (the same force, without 81 multiply-adds and a 9 x 9 load
    /// per point). Empty until summed.
    pub(super) k_force: Vec<f64>,
    pub(super) f_force: Vec<f64>,
}

impl LinearPart {
    /// The linearization at rest at the material's current activation: the reduced
    /// U^T K0 U and U^T R(0) of the full mesh, and P(I), dP/dF(I) of each listed element
    /// times its `scale`.
    pub(super) fn at_rest<M: TetMaterial + ?Sized>(
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
    pub(super) fn combine(&mut self, base: &LinearPart, slope: &LinearPart, alpha: f64) {
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
    pub(super) fn difference(a: &LinearPart, b: &LinearPart) -> LinearPart {
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
pub(super) struct EquilibriumCorrection {
    /// Ascending activations of the table.
    pub(super) activations: Vec<f64>,
    /// Per activation, f~(q*) - f(q*) = f~(q*) at the exact reduced equilibrium q*.
    pub(super) offsets: Vec<Vec<f64>>,
    /// The offset at the current activation.
    pub(super) now: Vec<f64>,
}

impl EquilibriumCorrection {
    /// `now` = the table interpolated at `alpha` (clamped to its ends; allocates nothing).
    pub(super) fn interpolate(&mut self, alpha: f64) {
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
pub(super) fn reduced_equilibrium<F: ReducedInternalForces>(
    forces: &F,
    q: &mut [f64],
    scale: f64,
) -> f64 {
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
pub(super) fn point_linearizations<M: TetMaterial + ?Sized>(
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
pub(super) fn affine_linearization<M: TetMaterial + ?Sized>(
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
pub(super) fn reduced_linearization<M: TetMaterial + ?Sized>(
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

/// force += the affine part with the points' linearizations summed into it (the force
/// of points whose stresses were taken whole; [`LinearPart::k_force`]).
#[inline(always)]
pub(super) fn add_affine(lin: &LinearPart, q: &[f64], force: &mut [f64]) {
    let r = q.len();
    for (j, &qj) in q.iter().enumerate() {
        axpy(qj, &lin.k_force[j * r..(j + 1) * r], force);
    }
    for (f, f0) in force.iter_mut().zip(&lin.f_force) {
        *f += f0;
    }
}
