//! The fusiform muscle with both tendon ends fixed, activated: its static equilibrium at
//! each activation (continuation from the previous one, full Newton, [`super::statics`]),
//! its volume change (the compressible model swells slightly: the deviatoric split
//! projects part of the fibre stress onto the volume term), and its transverse
//! (palpation) stiffness, the linearized response to a small force pressed on the
//! middle of the belly: k = |f|^2 / (f . K(u)^-1 f).

use nalgebra::Vector3;

use crate::muscle::solve_static;

use super::{MaterialFile, MuscleError};
use crate::fem::blemker::{check_activation, MuscleMaterial};
use crate::fem::{FreeDofSolver, TetKernel};
use crate::muscle::fusiform::{fusiform_muscle, FusiformMuscle, FusiformSpec};
use crate::muscle::StaticOptions;

/// A fusiform muscle ready to solve: mesh, kernel, material groups, fixed tendon ends.
pub struct FusiformModel {
    /// The geometry, fibres and end faces.
    pub muscle: FusiformMuscle,
    /// The tet kernel.
    pub kernel: TetKernel,
    /// Muscle (group 0, active) and tendon (group 1, passive) materials.
    pub material: MuscleMaterial,
    /// Constrained dofs: every vertex of both tendon end faces.
    pub fixed: Vec<bool>,
    /// Length along x (m), from the mesh.
    pub length: f64,
    /// Largest distance of a vertex from the x axis (m).
    pub belly_radius: f64,
}

impl FusiformModel {
    /// Builds the muscle of `spec` with the materials of `file`.
    pub fn new(spec: &FusiformSpec, file: &MaterialFile) -> Result<Self, MuscleError> {
        let muscle = fusiform_muscle(spec).map_err(|e| MuscleError::Geometry(e.to_string()))?;
        Self::from_muscle(muscle, file)
    }

    /// Wraps an existing fusiform geometry.
    pub(crate) fn from_muscle(
        muscle: FusiformMuscle,
        file: &MaterialFile,
    ) -> Result<Self, MuscleError> {
        file.muscle.validate()?;
        file.tendon.validate()?;
        let kernel = TetKernel::new(&muscle.mesh)?;
        let material = MuscleMaterial {
            groups: vec![file.muscle, file.tendon],
            active: vec![true, false],
            element_group: muscle
                .mesh
                .element_material
                .iter()
                .map(|&m| m.min(1))
                .collect(),
            fibres: muscle.fibres.clone(),
            activation: 0.0,
        };
        let mut fixed = vec![false; kernel.num_dofs()];
        for &v in muscle.end_faces.0.iter().chain(&muscle.end_faces.1) {
            fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
        }
        let verts = &muscle.mesh.vertices;
        let length = verts.iter().map(|p| p.x).fold(0.0, f64::max)
            - verts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
        let belly_radius = verts.iter().map(|p| p.y.hypot(p.z)).fold(0.0, f64::max);
        Ok(FusiformModel {
            length,
            belly_radius,
            muscle,
            kernel,
            material,
            fixed,
        })
    }

    /// Current volume sum_e V_e det F_e (m^3).
    pub fn volume(&self, u: &[f64]) -> f64 {
        (0..self.kernel.num_elements())
            .map(|e| self.kernel.volume[e] * self.kernel.deformation_gradient(e, u).determinant())
            .sum()
    }

    /// Rest volume (m^3).
    pub fn rest_volume(&self) -> f64 {
        self.kernel.volume.iter().sum()
    }

    /// Static equilibrium at `activation`, from `u0` (`None`: rest).
    pub fn equilibrium(
        &mut self,
        activation: f64,
        u0: Option<Vec<f64>>,
    ) -> Result<(Vec<f64>, usize), MuscleError> {
        check_activation(activation)?;
        self.material.activation = activation;
        let n = self.kernel.num_dofs();
        let scale = self.material.groups[0]
            .sigma_max
            .max(self.material.groups[0].mu)
            * self.rest_volume().powf(2.0 / 3.0);
        // From rest, continuation in quarter steps of activation: Newton from rest straight
        // to full activation stalls.
        let (mut u, steps) = match u0 {
            Some(u) => (u, 1),
            None => (vec![0.0; n], (activation / 0.25).ceil().max(1.0) as usize),
        };
        let mut iterations = 0;
        for s in 1..=steps {
            let a = if steps == 1 {
                activation
            } else {
                activation * s as f64 / steps as f64
            };
            self.material.activation = a;
            let sol = solve_static(
                &self.kernel,
                &self.material,
                &self.fixed,
                u,
                None,
                StaticOptions {
                    max_iterations: 60,
                    tolerance: 1e-10 * scale,
                },
                &format!("fusiform muscle at activation {a}"),
            )?;
            u = sol.u;
            iterations += sol.iterations;
        }
        Ok((u, iterations))
    }

    /// The vertices pressed by a palpation: the surface vertices within `radius` of the
    /// top of the belly's middle (x = L/2, largest z).
    pub fn palpation_vertices(&self, radius: f64) -> Vec<usize> {
        let verts = &self.muscle.mesh.vertices;
        let x0 = verts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
        let mid = x0 + self.length / 2.0;
        let top = verts
            .iter()
            .filter(|p| (p.x - mid).abs() < radius)
            .map(|p| p.z)
            .fold(f64::NEG_INFINITY, f64::max);
        let centre = nalgebra::Point3::new(mid, 0.0, top);
        let mut v: Vec<usize> = (0..verts.len())
            .filter(|&i| (verts[i] - centre).norm() <= radius)
            .collect();
        if v.is_empty() {
            // The closest vertex at least.
            let best = (0..verts.len())
                .min_by(|&a, &b| {
                    (verts[a] - centre)
                        .norm()
                        .total_cmp(&(verts[b] - centre).norm())
                })
                .unwrap_or(0);
            v.push(best);
        }
        v
    }

    /// Transverse stiffness k = |f|^2 / (f . K(u)^-1 f) (N/m) at state `u` for a total
    /// force pressing down (-z) on `vertices`, shared equally.
    pub fn palpation_stiffness(&self, u: &[f64], vertices: &[usize]) -> Result<f64, MuscleError> {
        let n = self.kernel.num_dofs();
        let mut k = self.kernel.new_matrix();
        self.kernel.tangent_stiffness(&self.material, u, &mut k);
        let solve_err = |source| MuscleError::Solve {
            case: "palpation stiffness".into(),
            source,
        };
        let mut solver = FreeDofSolver::new(&k, &self.fixed).map_err(solve_err)?;
        solver.factor_indefinite(&k).map_err(solve_err)?;
        let mut f = vec![0.0; n];
        let share = 1.0 / vertices.len() as f64;
        for &v in vertices {
            f[3 * v + 2] = -share;
        }
        let mut d = vec![0.0; n];
        solver.solve(&f, &mut d);
        let work: f64 = f.iter().zip(&d).map(|(a, b)| a * b).sum();
        Ok(1.0 / work)
    }
}

/// One activation of [`contract`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contraction {
    /// Activation.
    pub activation: f64,
    /// Relative volume change V / V0 - 1.
    pub volume_change: f64,
    /// Largest vertex displacement (m).
    pub max_displacement: f64,
    /// Transverse stiffness at the middle of the belly (N/m).
    pub palpation_stiffness: f64,
    /// Newton iterations.
    pub iterations: usize,
}

/// Solves the muscle at each activation in turn (continuation) and reports its volume
/// change and palpation stiffness.
pub fn contract(
    model: &mut FusiformModel,
    activations: &[f64],
    progress: &dyn crate::progress::Progress,
) -> Result<Vec<Contraction>, MuscleError> {
    let v0 = model.rest_volume();
    let palp = model.palpation_vertices(0.25 * model.belly_radius);
    let mut u: Option<Vec<f64>> = None;
    let mut out = Vec::with_capacity(activations.len());
    progress.stage("contract: Newton solves", activations.len() as u64);
    for &a in activations {
        let (sol, iterations) = model.equilibrium(a, u.take())?;
        let max_displacement = sol
            .chunks_exact(3)
            .map(|c| Vector3::new(c[0], c[1], c[2]).norm())
            .fold(0.0, f64::max);
        out.push(Contraction {
            activation: a,
            volume_change: model.volume(&sol) / v0 - 1.0,
            max_displacement,
            palpation_stiffness: model.palpation_stiffness(&sol, &palp)?,
            iterations,
        });
        u = Some(sol);
        progress.advance(1);
    }
    progress.finish();
    Ok(out)
}
