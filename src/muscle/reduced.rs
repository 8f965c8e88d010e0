//! The reduced muscle for the 1 kHz loop: a basis of linear modes and modal derivatives
//! of the muscle's own rest tangent (Barbic 2007, 2.5-2.6; the derivatives by central
//! differences of the tangent, since the fibre law has no closed-form Hessian), and its
//! internal forces by optimized cubature (An, Kim and James 2008,
//! [`crate::reduction::cubature`]) trained over the whole activation range, so that the
//! activation is a run-time input.
//!
//! Palpation is local: a finger pressed on the relaxed belly dents it over about its
//! radius, which no handful of global modes spans (the modes-only basis came out 4.5x too
//! stiff under the palpation load). So the basis also holds load-dependent vectors, after
//! the Ritz vectors of Wilson, Yuan and Dickens 1982 but nonlinear: the full static
//! responses of the muscle to loads pressed on the belly's surface at
//! [`MuscleBasisOptions::palpation_sites`], at the (activation, load) pairs of
//! [`MuscleBasisOptions::snapshot_loads`], with its contracted shapes, mass-orthonormalized
//! against the PCA of the modes and derivatives.
//!
//! Why the muscle's own tangent and not an StVK proxy: the muscle is nearly
//! incompressible (kappa / mu = 10^4); modes of a compressible proxy change volume, and
//! the bulk modulus then locks them, so the reduced muscle would be far stiffer than the
//! full one.

use nalgebra::{DMatrix, DVector};

use crate::muscle::solve_static;

use super::MuscleError;
use crate::fem::blemker::MuscleMaterial;
use crate::fem::{
    model::FemModel, model::MassKind, model::MaterialLaw, BlockSparseMatrix, FreeDofSolver,
    TetKernel, TetMaterial,
};
use crate::mesh::volume::VolumeMesh;
use crate::muscle::StaticOptions;
use crate::progress::NoProgress;
use crate::reduction::basis::mass_orthonormalize_column;
use crate::reduction::cubature::{
    exact_equilibria, train_cubature, CubatureForces, CubatureOptions, CubatureReport,
    StiffnessProbe,
};
use crate::reduction::modes::ModesOptions;
use crate::reduction::pipeline::{
    modal_derivative_basis, BasisSizes, ModalDerivativeBasis, ModalDerivatives, PipelineError,
    RestSystem,
};

/// Settings of [`muscle_basis`].
#[derive(Debug, Clone)]
pub struct MuscleBasisOptions {
    /// Linear modes k.
    pub linear_modes: usize,
    /// Basis size r: the mass-PCA of the modes and their derivatives fills what the
    /// palpation responses leave.
    pub r: usize,
    /// Where static palpation responses join the basis: (axial fraction of the length,
    /// angle around the axis from +z in radians); each loads the surface vertex nearest
    /// that point along the inward normal.
    pub palpation_sites: Vec<(f64, f64)>,
    /// (activation, total load in N) of the nonlinear palpation snapshots per site.
    pub snapshot_loads: Vec<(f64, f64)>,
}

impl Default for MuscleBasisOptions {
    fn default() -> Self {
        let third = std::f64::consts::FRAC_PI_3;
        let sites = vec![
            (0.4, 0.0),
            (0.5, 0.0),
            (0.6, 0.0),
            (0.5, -third),
            (0.5, third),
        ];
        MuscleBasisOptions {
            linear_modes: 10,
            r: 20,
            palpation_sites: sites,
            snapshot_loads: vec![(0.0, 0.02), (1.0, 0.5)],
        }
    }
}

/// A reduced muscle basis with its mass matrix.
pub struct MuscleBasis {
    /// Mass-orthonormal basis U (3n x r), zero on fixed dofs.
    pub u: DMatrix<f64>,
    /// Natural frequencies of the linear modes (Hz), passive.
    pub frequencies_hz: Vec<f64>,
    /// Mass-weighted variance kept by the PCA.
    pub variance_kept: f64,
    /// Full-space states the muscle is known to visit, with their activation: its
    /// contracted equilibria and the palpation snapshots. [`muscle_cubature`] adds them
    /// to its training poses.
    pub training_states: Vec<(Vec<f64>, f64)>,
    /// The unloaded full-space equilibria at activations 0, 0.25, ..., 1 (ascending):
    /// the states the palpation snapshots press from ([`muscle_cubature`] takes the
    /// palpation directions from them).
    pub equilibria: Vec<(Vec<f64>, f64)>,
}

/// Linear modes of the passive muscle's rest tangent and their modal derivatives, by
/// mass-PCA to r columns, with the contracted shapes and the palpation snapshots
/// mass-orthonormalized after them.
pub fn muscle_basis(
    mesh: &VolumeMesh,
    kernel: &TetKernel,
    material: &MuscleMaterial,
    fixed: &[bool],
    opts: &MuscleBasisOptions,
) -> Result<MuscleBasis, MuscleError> {
    let n = kernel.num_dofs();
    let fem = FemModel::new(mesh, MaterialLaw::Linear)?;
    let m = fem.mass_matrix(MassKind::Consistent);
    let size = {
        let b = crate::mesh::Aabb::from_points(&kernel.rest);
        (b.max - b.min).norm()
    };
    let mut eq = activated_equilibria(kernel, material, fixed, opts, size)?;
    // Each site adds one nonlinear snapshot per (activation, load).
    let per = opts.snapshot_loads.len();
    let extra = eq.contracted.len();
    let sites = opts
        .palpation_sites
        .len()
        .min(opts.r.saturating_sub(2 + extra) / per.max(1));
    let r = opts.r - per * sites - extra;
    let passive = passive_basis(kernel, material, fixed, &m, opts.linear_modes, r, size)?;
    let pca = &passive.u;
    // Palpation responses and contracted shapes, mass-orthonormalized against the PCA
    // columns and each other (two Gram-Schmidt passes).
    let mut u = DMatrix::zeros(n, pca.ncols() + per * sites + extra);
    u.columns_mut(0, pca.ncols()).copy_from(pca);
    let mut mu = vec![0.0; n];
    let belly = Belly::of(&kernel.rest);
    for (c, &site) in opts.palpation_sites[..sites].iter().enumerate() {
        let f = palpation_load(kernel, fixed, &belly, site);
        let snaps = palpation_snapshots(
            kernel,
            material,
            fixed,
            opts,
            &eq.unloaded,
            &f,
            &mut eq.states,
        )?;
        for (k, vec) in snaps.into_iter().enumerate() {
            append_orthonormal(&mut u, pca.ncols() + per * c + k, vec, &m, &mut mu);
        }
    }
    for (i, vec) in eq.contracted.into_iter().enumerate() {
        append_orthonormal(&mut u, pca.ncols() + per * sites + i, vec, &m, &mut mu);
    }
    eq.table.sort_by(|a, b| a.1.total_cmp(&b.1));
    Ok(MuscleBasis {
        equilibria: eq.table,
        training_states: eq.states,
        u,
        frequencies_hz: passive.modes.frequencies_hz(),
        variance_kept: passive.retained,
    })
}

/// The mass-PCA to `r` columns of the `k` lowest linear modes of the passive muscle's
/// rest tangent and their modal derivatives ([`TangentDerivatives`], steps scaled to the
/// mesh size `size`).
fn passive_basis(
    kernel: &TetKernel,
    material: &MuscleMaterial,
    fixed: &[bool],
    m: &BlockSparseMatrix,
    k: usize,
    r: usize,
    size: f64,
) -> Result<ModalDerivativeBasis, MuscleError> {
    let mut passive = material.clone();
    passive.set_activation(0.0);
    let mut k0 = kernel.new_matrix();
    kernel.tangent_stiffness(&passive, &vec![0.0; kernel.num_dofs()], &mut k0);
    let system = RestSystem {
        k0: &k0,
        mass: m,
        fixed,
        rest: &kernel.rest,
    };
    let sizes = BasisSizes {
        modes: ModesOptions {
            count: k,
            unconstrained: false,
            tolerance: 1e-10,
        },
        derivative_modes: k,
        basis: r,
    };
    let derivatives = TangentDerivatives {
        kernel,
        passive: &passive,
        k0: &k0,
        fixed,
        size,
    };
    modal_derivative_basis(&system, &sizes, &derivatives, &NoProgress).map_err(|e| match e {
        PipelineError::Modes(e) => MuscleError::Geometry(format!("linear modes: {e}")),
        PipelineError::Derivatives(e) => e,
        PipelineError::Pca(e) => MuscleError::Geometry(format!("mass-PCA: {e}")),
        PipelineError::Cancelled => MuscleError::Cancelled,
    })
}

/// The modal derivatives of the muscle's passive tangent, K0 Phi_ij = -(dK/du . phi_j)
/// phi_i (packed, i <= j), the directional derivative of the tangent by central
/// differences, since the fibre law has no closed-form Hessian. The step is scaled so that
/// the largest nodal displacement is 1e-6 of the mesh size `size` (truncation ~1e-12
/// relative, round-off ~eps / 1e-6 = 2e-10).
struct TangentDerivatives<'a> {
    kernel: &'a TetKernel,
    /// The muscle material at zero activation.
    passive: &'a MuscleMaterial,
    /// Its tangent stiffness at rest.
    k0: &'a BlockSparseMatrix,
    fixed: &'a [bool],
    size: f64,
}

impl ModalDerivatives for TangentDerivatives<'_> {
    type Error = MuscleError;

    fn symmetric(&self) -> bool {
        true
    }

    fn compute(
        &self,
        phi: &DMatrix<f64>,
        _eigenvalues: &[f64],
        done: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<DVector<f64>>, MuscleError> {
        let TangentDerivatives {
            kernel,
            passive,
            k0,
            fixed,
            size,
        } = *self;
        let n = kernel.num_dofs();
        let k = phi.ncols();
        let mut solver = FreeDofSolver::new(k0, fixed).map_err(|source| MuscleError::Solve {
            case: "muscle basis".into(),
            source,
        })?;
        solver.factor(k0).map_err(|source| MuscleError::Solve {
            case: "muscle basis".into(),
            source,
        })?;
        let mut derivatives = vec![DVector::zeros(n); k * (k + 1) / 2];
        let (mut kp, mut km) = (kernel.new_matrix(), kernel.new_matrix());
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        for j in 0..k {
            let col = phi.column(j);
            let amax = col
                .iter()
                .fold(0.0f64, |s, v| s.max(v.abs()))
                .max(f64::MIN_POSITIVE);
            let h = 1e-6 * size / amax;
            let up: Vec<f64> = col.iter().map(|v| h * v).collect();
            let um: Vec<f64> = col.iter().map(|v| -h * v).collect();
            kernel.tangent_stiffness(passive, &up, &mut kp);
            kernel.tangent_stiffness(passive, &um, &mut km);
            for i in 0..=j {
                kp.mul_vec(phi.column(i).as_slice(), &mut a);
                km.mul_vec(phi.column(i).as_slice(), &mut b);
                let rhs: Vec<f64> = a
                    .iter()
                    .zip(&b)
                    .map(|(p, q)| -(p - q) / (2.0 * h))
                    .collect();
                let mut x = vec![0.0; n];
                solver.solve(&rhs, &mut x);
                // Packed (i <= j) order: row i, column j.
                let idx = i * k - i * (i + 1) / 2 + j;
                derivatives[idx] = DVector::from_vec(x);
                done(1);
            }
        }
        Ok(derivatives)
    }
}

/// The muscle's unloaded equilibria under activation.
struct ActivatedEquilibria {
    /// The equilibrium at each snapshot load's activation: the states the palpation
    /// snapshots press from.
    unloaded: Vec<Vec<f64>>,
    /// The contracted shapes at half and full activation, which join the basis.
    contracted: Vec<Vec<f64>>,
    /// Every state visited, with its activation (training poses).
    states: Vec<(Vec<f64>, f64)>,
    /// The distinct equilibria by activation, from rest: the equilibrium correction's
    /// table.
    table: Vec<(Vec<f64>, f64)>,
}

/// The unloaded equilibria at the snapshot loads' activations, by continuation in
/// activation (quarter steps: Newton from rest straight to full activation stalls).
fn activated_equilibria(
    kernel: &TetKernel,
    material: &MuscleMaterial,
    fixed: &[bool],
    opts: &MuscleBasisOptions,
    size: f64,
) -> Result<ActivatedEquilibria, MuscleError> {
    let n = kernel.num_dofs();
    let mut eq = ActivatedEquilibria {
        unloaded: Vec::new(),
        contracted: Vec::new(),
        states: Vec::new(),
        table: vec![(vec![0.0; n], 0.0)],
    };
    for &(alpha, _) in &opts.snapshot_loads {
        let mut state = vec![0.0; n];
        let steps = (alpha / 0.25).ceil().max(1.0) as usize;
        for s in 1..=steps {
            let mut mat = material.clone();
            mat.set_activation(alpha * s as f64 / steps as f64);
            let scale = mat.groups[0].sigma_max.max(mat.groups[0].mu) * size * size;
            state = solve_static(
                kernel,
                &mat,
                fixed,
                state,
                None,
                StaticOptions {
                    max_iterations: 60,
                    tolerance: 1e-10 * scale,
                },
                "activated equilibrium",
            )?
            .u;
            // The contracted shapes themselves join the basis (at half and full
            // activation): without them the reduced muscle cannot reach its activated
            // equilibrium, an 8 mm contraction.
            let a = alpha * s as f64 / steps as f64;
            if (a - 0.5).abs() < 1e-9 || (a - 1.0).abs() < 1e-9 {
                eq.contracted.push(state.clone());
            }
            eq.states.push((state.clone(), a));
            if !eq.table.iter().any(|(_, b)| (b - a).abs() < 1e-12) {
                eq.table.push((state.clone(), a));
            }
        }
        eq.unloaded.push(state);
    }
    Ok(eq)
}

/// The belly's axial extent and radius (the mesh's x range and largest distance from
/// the x axis), where palpation sites are placed.
struct Belly {
    x0: f64,
    x1: f64,
    radius: f64,
}

impl Belly {
    fn of(rest: &[nalgebra::Point3<f64>]) -> Belly {
        Belly {
            x0: rest.iter().map(|p| p.x).fold(f64::INFINITY, f64::min),
            x1: rest.iter().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max),
            radius: rest.iter().map(|p| p.y.hypot(p.z)).fold(0.0, f64::max),
        }
    }
}

/// A unit palpation load at `site` (axial fraction, angle from +z): the surface patch
/// within a quarter of the belly radius of the nearest free vertex, loaded inward (a
/// fingertip, as [`super::FusiformModel::palpation_vertices`] presses).
fn palpation_load(
    kernel: &TetKernel,
    fixed: &[bool],
    belly: &Belly,
    (s, angle): (f64, f64),
) -> Vec<f64> {
    let rmax = belly.radius;
    let target = nalgebra::Point3::new(
        belly.x0 + s * (belly.x1 - belly.x0),
        -rmax * angle.sin(),
        rmax * angle.cos(),
    );
    let v0 = (0..kernel.rest.len())
        .filter(|&v| !fixed[3 * v])
        .min_by(|&a, &b| {
            (kernel.rest[a] - target)
                .norm()
                .total_cmp(&(kernel.rest[b] - target).norm())
        })
        .unwrap_or(0);
    let centre = kernel.rest[v0];
    let patch: Vec<usize> = (0..kernel.rest.len())
        .filter(|&v| !fixed[3 * v] && (kernel.rest[v] - centre).norm() <= 0.25 * rmax)
        .collect();
    let inward = -nalgebra::Vector3::new(0.0, centre.y, centre.z)
        .try_normalize(1e-12)
        .unwrap_or(nalgebra::Vector3::z());
    let mut f = vec![0.0; kernel.num_dofs()];
    for &v in &patch {
        for k in 0..3 {
            f[3 * v + k] = inward[k] / patch.len() as f64;
        }
    }
    f
}

/// Nonlinear snapshots at one site: the full static response to the palpation load `f`
/// scaled by each of `opts.snapshot_loads`, of the muscle at that load's activation,
/// from its unloaded equilibrium. The fibre law has a kink at the rest stretch (the
/// passive curve starts at x = 1), so even small presses respond unlike K0^-1 f. The
/// loaded states join `states`.
fn palpation_snapshots(
    kernel: &TetKernel,
    material: &MuscleMaterial,
    fixed: &[bool],
    opts: &MuscleBasisOptions,
    unloaded: &[Vec<f64>],
    f: &[f64],
    states: &mut Vec<(Vec<f64>, f64)>,
) -> Result<Vec<Vec<f64>>, MuscleError> {
    let mut snaps = Vec::new();
    for (state, &(alpha, load)) in unloaded.iter().zip(&opts.snapshot_loads) {
        let mut mat = material.clone();
        mat.set_activation(alpha);
        let fl: Vec<f64> = f.iter().map(|v| v * load).collect();
        let sol = solve_static(
            kernel,
            &mat,
            fixed,
            state.clone(),
            Some(&fl),
            StaticOptions {
                max_iterations: 60,
                tolerance: 1e-9 * load,
            },
            "palpation snapshot",
        )?;
        states.push((sol.u.clone(), alpha));
        snaps.push(
            sol.u
                .iter()
                .zip(state)
                .map(|(a, b)| a - b)
                .collect::<Vec<f64>>(),
        );
    }
    Ok(snaps)
}

/// Sets column `col` of `u` to `vec`, mass-orthonormalized against the columns before it.
fn append_orthonormal(
    u: &mut DMatrix<f64>,
    col: usize,
    vec: Vec<f64>,
    m: &crate::fem::BlockSparseMatrix,
    mu: &mut [f64],
) {
    u.set_column(col, &DVector::from_vec(vec));
    mass_orthonormalize_column(m, u, col, mu);
}

/// The cubature settings of [`muscle_cubature`] (without its extra poses and probes):
/// training over activations [0, 1], a 4% tolerance. Scenes key their cache with it.
pub fn muscle_cubature_options(seed: u64) -> CubatureOptions {
    CubatureOptions {
        activation: Some((0.0, 1.0)),
        seed,
        // 4% of the force norm: what palpation feels is held by the stiffness probes and
        // the equilibrium correction, and the force rows' tolerance mostly sets the
        // error in the stiff bulk directions, where it moves the belly least. At 2% the
        // default muscle needs 579 points instead of 432, for the same palpation
        // accuracy (tests/muscle.rs: 3.3% against 2.9% fully activated).
        tolerance: 0.04,
        ..Default::default()
    }
}

/// Trains the muscle's cubature on `basis.u` over activations [0, 1]: random poses
/// around rest plus the basis's training states (projected, q = (U^T U)^-1 U^T u).
pub fn muscle_cubature(
    kernel: &TetKernel,
    material: &MuscleMaterial,
    basis: &MuscleBasis,
    seed: u64,
) -> Result<(CubatureForces<MuscleMaterial>, CubatureReport), MuscleError> {
    let u = &basis.u;
    let gram = (u.transpose() * u)
        .cholesky()
        .ok_or_else(|| MuscleError::Geometry("cubature: the basis columns are dependent".into()))?;
    let extra_poses = training_poses(u, &gram, basis);
    // The reduced muscle's unloaded equilibria along the contraction (exact
    // integration, each the stable state continued from the last): the states it sits
    // in, where its small stiffnesses must be right.
    let equilibria = exact_equilibria(kernel, u, material, &CORRECTION_ACTIVATIONS)
        .map_err(|e| MuscleError::Geometry(format!("cubature: {e}")))?;
    let directions = palpation_directions(u, &gram, basis);
    let stiffness_probes = stiffness_probes(kernel, material, u, &equilibria, &directions)?;
    let opts = CubatureOptions {
        extra_poses,
        stiffness_probes,
        ..muscle_cubature_options(seed)
    };
    let (mut cub, report) = train_cubature(kernel, material.clone(), u, &opts)
        .map_err(|e| MuscleError::Geometry(format!("cubature: {e}")))?;
    cub.correct_equilibria(&equilibria)
        .map_err(|e| MuscleError::Geometry(format!("cubature: {e}")))?;
    Ok((cub, report))
}

/// The reduced coordinates of a full displacement: q = (U^T U)^-1 U^T v.
fn project_state(
    u: &DMatrix<f64>,
    gram: &nalgebra::Cholesky<f64, nalgebra::Dyn>,
    v: &[f64],
) -> DVector<f64> {
    gram.solve(&(u.transpose() * DVector::from_column_slice(v)))
}

/// The extra training poses: each training state, projected, scaled by 0.7 and 1.3.
fn training_poses(
    u: &DMatrix<f64>,
    gram: &nalgebra::Cholesky<f64, nalgebra::Dyn>,
    basis: &MuscleBasis,
) -> Vec<(Vec<f64>, Option<f64>)> {
    // Each state scaled by 0.7 and 1.3: the states themselves are equilibria whose
    // internal force is (near) zero or the palpation load, so their rows would be
    // normalized by a tiny norm; their neighbourhood is what the fit needs.
    basis
        .training_states
        .iter()
        .flat_map(|(state, a)| {
            let q = project_state(u, gram, state);
            [0.7, 1.3].map(|s| ((&q * s).as_slice().to_vec(), Some(*a)))
        })
        .collect()
}

/// The projected palpation directions: each training state minus the unloaded
/// equilibrium it was pressed from (zero differences left out).
fn palpation_directions(
    u: &DMatrix<f64>,
    gram: &nalgebra::Cholesky<f64, nalgebra::Dyn>,
    basis: &MuscleBasis,
) -> Vec<Vec<f64>> {
    basis
        .training_states
        .iter()
        .filter_map(|(state, a)| {
            let (eq, _) = basis
                .equilibria
                .iter()
                .find(|(_, b)| (a - b).abs() < 1e-12)?;
            let d: Vec<f64> = state.iter().zip(eq).map(|(s, e)| s - e).collect();
            let size = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            (size > 0.0).then(|| project_state(u, gram, &d).as_slice().to_vec())
        })
        .collect()
}

/// The stiffness probes of the muscle's cubature at its activated exact equilibria.
fn stiffness_probes(
    kernel: &TetKernel,
    material: &MuscleMaterial,
    u: &DMatrix<f64>,
    equilibria: &[(f64, Vec<f64>)],
    directions: &[Vec<f64>],
) -> Result<Vec<StiffnessProbe>, MuscleError> {
    // Stiffness probes (CubatureOptions::stiffness_probes). Activated, the bulk and fibre
    // stiffnesses are orders of magnitude above the stiffness felt when palpating, and
    // a fit of forces alone misplaced it (73% off; docs/muscle.md):
    // - the palpation directions (each snapshot minus the unloaded equilibrium it was
    //   pressed from) at the activated equilibria and along the press;
    // - the softest directions of the exact tangent at every equilibrium of the table:
    //   there a force error of a few percent is most of the stiffness, and a fit
    //   without them turned the softest one negative near 0.8 activation (a spurious
    //   buckling of the contracting belly).
    let mut stiffness_probes = Vec::new();
    let mut exact = CubatureForces::all_elements(kernel, u, material.clone())
        .map_err(|e| MuscleError::Geometry(format!("cubature: {e}")))?;
    let r = u.ncols();
    let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
    let mut scratch = exact.scratch();
    for (alpha, q) in equilibria.iter().filter(|(a, _)| *a > 0.0) {
        if PALPATION_PROBE_ACTIVATIONS.contains(alpha) {
            push_palpation_probes(&mut stiffness_probes, *alpha, q, directions);
        }
        exact.set_activation(*alpha);
        exact.evaluate(q, &mut f, &mut k, &mut scratch);
        let eig = DMatrix::from_column_slice(r, r, &k).symmetric_eigen();
        let mut order: Vec<usize> = (0..r).collect();
        order.sort_by(|&a, &b| eig.eigenvalues[a].total_cmp(&eig.eigenvalues[b]));
        for &m in order.iter().take(SOFT_DIRECTIONS) {
            stiffness_probes.push(StiffnessProbe {
                q: q.clone(),
                activation: Some(*alpha),
                direction: eig.eigenvectors.column(m).as_slice().to_vec(),
            });
        }
    }
    Ok(stiffness_probes)
}

/// Pushes the probes along each palpation direction at the equilibrium `q` and along
/// the press (0, half and all of the direction).
fn push_palpation_probes(
    probes: &mut Vec<StiffnessProbe>,
    alpha: f64,
    q: &[f64],
    directions: &[Vec<f64>],
) {
    for d in directions {
        for s in [0.0, 0.5, 1.0] {
            probes.push(StiffnessProbe {
                q: q.iter().zip(d).map(|(q, d)| q + s * d).collect(),
                activation: Some(alpha),
                direction: d.clone(),
            });
        }
    }
}

/// The activations of the muscle's exact equilibria: its equilibrium correction table
/// and the states of its stiffness probes.
pub const CORRECTION_ACTIVATIONS: [f64; 17] = [
    0.0, 0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.5625, 0.625, 0.6875, 0.75,
    0.8125, 0.875, 0.9375, 1.0,
];

/// The activations whose equilibria get the palpation-direction probes.
const PALPATION_PROBE_ACTIVATIONS: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

/// Softest directions of the exact tangent probed at each equilibrium.
const SOFT_DIRECTIONS: usize = 3;

/// Applies [`CubatureForces::correct_equilibria`] at the exact equilibria of
/// [`CORRECTION_ACTIVATIONS`] (for a cubature loaded from its points): the reduced
/// muscle's unloaded (contracted) equilibria become those of exact integration.
pub fn correct_muscle_equilibria(
    cub: &mut CubatureForces<MuscleMaterial>,
    kernel: &TetKernel,
    basis: &DMatrix<f64>,
) -> Result<(), MuscleError> {
    let equilibria = exact_equilibria(kernel, basis, cub.material(), &CORRECTION_ACTIVATIONS)
        .and_then(|eq| cub.correct_equilibria(&eq));
    equilibria.map_err(|e| MuscleError::Geometry(format!("cubature: {e}")))
}
