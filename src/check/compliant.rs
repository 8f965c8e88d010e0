//! Compliant parts: a rigid part (the robot, a scene's haptic object with its distance
//! field) moves along a path while reduced-deformable environment objects (hoses,
//! cables) give way. At each sampled state the deformable object is in quasi-static
//! equilibrium,
//!
//! ```text
//! R~(q) = f~_c(q, pose),    f~_c = sum_s U_s^T R^T f_s    (thesis 2.5, 3.6)
//! ```
//!
//! the reduced internal force of the cubic polynomials against the reduced penalty
//! contact force of the object's pointshell points `s` inside the part's distance field
//! (penalty contact, thesis 3.5; every level of the pointshell, no `L / l`
//! scaling: a check wants the force, not a stable display). The force on a point is
//! along the part's field gradient, `f_s = -k_C d_s grad d_s`, where the 1 kHz loop uses
//! the pointshell's normal (smoother to feel): so the contact force is conservative,
//! the equilibrium minimises `W(q) + k_C/2 sum_s d_s^2` (W the reduced strain energy),
//! and Newton's method can descend on that energy with a line search, robustly through
//! every change of the contact set, warm-started from the previous state's `q`.
//!
//! The report: the largest contact force on the part (N), the largest displacement of a
//! surface vertex of the deformable objects (scene units) and where, and the deepest
//! point of an object inside the part (the penalty's compression `f / k_C`).

use crate::reduction::evaluator::ReducedInternalForces;
use nalgebra::{DMatrix, DVector, Isometry3, Point3, Vector3};

use super::PathPos;
use crate::contact::params::ContactParams;
use crate::contact::ContactOutput;
use crate::contact::Poses;
use crate::contact::Traversal;
use crate::proximity::rigid::State;
use crate::scene::Scene;

/// The equilibrium at one state.
#[derive(Debug, Clone, PartialEq)]
pub struct Equilibrium {
    /// The reduced coordinates.
    pub q: Vec<f64>,
    /// The contact force on the part (world, N).
    pub force: Vector3<f64>,
    /// Points of the object inside the part.
    pub contacts: usize,
    /// The deepest of them (scene units, positive).
    pub depth: f64,
    /// Newton iterations.
    pub iterations: usize,
    /// The residual (the energy's gradient, `R~(q) - f~_c`) met [`TOL`].
    pub converged: bool,
}

/// Newton's method on one deformable environment object.
pub struct CompliantSolver<'a> {
    scene: &'a Scene,
    object: usize,
    traversal: Traversal,
    out: ContactOutput,
}

/// Relative tolerance of the equilibrium: the residual `|R~ - f~_c|` (the energy's
/// gradient) at most `TOL * max(|R~|, |f~_c|)`, or absolutely tiny. The modes are stored
/// in single precision (about 1e-7 relative): 1e-6 is what the data supports.
pub const TOL: f64 = 1e-6;

impl<'a> CompliantSolver<'a> {
    /// A solver for environment object `object` of `scene`; `None` if it is rigid.
    pub fn new(scene: &'a Scene, object: usize) -> Option<CompliantSolver<'a>> {
        let env = scene.environment.get(object)?;
        env.dynamics.as_ref()?;
        let params = ContactParams {
            max_unscaled_contacts: usize::MAX,
            warm_budget: usize::MAX / 4,
            cold_fraction: 1.0,
            temporal_coherence: false,
            ..scene.contact
        };
        Some(CompliantSolver {
            scene,
            object,
            traversal: Traversal::new(&env.shell, params),
            out: Traversal::output(&env.shell, scene.haptic.field.r()),
        })
    }

    /// The contact at `q` with the part at `pose`: fills `self.out`.
    fn contact(&mut self, pose: &Isometry3<f64>, q: &[f64]) {
        let env = &self.scene.environment[self.object];
        let poses = Poses {
            shell: env.pose,
            field: *pose,
            grasp: Point3::from(pose.translation.vector),
        };
        self.traversal.reset();
        self.scene
            .haptic
            .field
            .traverse(&mut self.traversal, &env.shell, &poses, q, &mut self.out);
    }

    /// The energy `W(q) + k/2 sum_s d_s^2` (points inside the part), its gradient
    /// `R~(q) + k sum_s d_s b_s` (`b_s = U_s^T R^T grad d_s`, how `d_s` changes with q)
    /// and, if asked, its Gauss-Newton Hessian `K~(q) + k sum_s b_s b_s^T`; plus the
    /// contact force on the part (world) and the deepest point.
    pub fn energy(
        &mut self,
        pose: &Isometry3<f64>,
        q: &[f64],
        hessian: Option<&mut DMatrix<f64>>,
    ) -> Energy {
        self.contact(pose, q);
        let env = &self.scene.environment[self.object];
        let r = q.len();
        let mut e = Energy {
            value: 0.0,
            gradient: DVector::zeros(r),
            size: 0.0,
            force: Vector3::zeros(),
            depth: 0.0,
        };
        let (Some(dynamics), Some(modes)) = (env.dynamics.as_ref(), env.shell.modes.as_ref())
        else {
            return e;
        };
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        let mut scratch = dynamics.forces.scratch();
        dynamics.forces.evaluate(q, &mut f, &mut k, &mut scratch);
        let scale = dynamics.params.material_scale;
        e.value = scale * dynamics.potential_energy(q);
        e.gradient = DVector::from_iterator(r, f.iter().map(|x| scale * x));
        e.size = e.gradient.norm();
        let mut h = hessian;
        if let Some(h) = h.as_deref_mut() {
            *h = DMatrix::from_column_slice(r, r, &k) * scale;
        }
        let k_c = self.traversal.params.stiffness;
        let field = &self.scene.haptic.field;
        let to_body = pose.inverse();
        let to_shell = env.pose.rotation.inverse();
        let mut b = vec![0.0; r];
        let mut contact = DVector::zeros(r);
        for c in &self.out.contacts {
            let p = to_body * c.position;
            let d = c.depth;
            let grad = pose.rotation * field.gradient(&p);
            b.fill(0.0);
            modes.add_transpose(c.point as usize, &(to_shell * grad), &mut b);
            let bv = DVector::from_column_slice(&b);
            e.value += 0.5 * k_c * d * d;
            contact.axpy(k_c * d, &bv, 1.0);
            if let Some(h) = h.as_deref_mut() {
                *h += (&bv * bv.transpose()) * k_c;
            }
            // The object pushes the part back along the field's gradient.
            e.force += grad * (k_c * d);
            e.depth = e.depth.max(-d);
        }
        e.size = e.size.max(contact.norm());
        e.gradient += contact;
        e
    }

    /// Solves for the equilibrium with the part at `pose`, starting from `q`: Newton's
    /// method on the energy, its Gauss-Newton Hessian positive definite (the reduced
    /// stiffness is, near rest), an Armijo line search on the energy itself, which is
    /// continuously differentiable (the penalty energy grows from zero at the surface),
    /// so every step descends however the contact set changes.
    pub fn solve(&mut self, pose: &Isometry3<f64>, q: &[f64]) -> Equilibrium {
        let r = q.len();
        let mut q = DVector::from_column_slice(q);
        let mut hess = DMatrix::zeros(r, r);
        let mut iterations = 0;
        let mut converged = false;
        let mut e = self.energy(pose, q.as_slice(), Some(&mut hess));
        for _ in 0..200 {
            let norm = e.gradient.norm();
            if norm <= TOL * e.size.max(1e-300) || norm < 1e-14 {
                converged = true;
                break;
            }
            iterations += 1;
            let mut a = hess.clone();
            let dq = loop {
                if let Some(c) = a.clone().cholesky() {
                    break c.solve(&(-&e.gradient));
                }
                // Not positive definite (a buckled state): shift it until it is.
                let shift = 1e-6 * hess.diagonal().abs().max().max(1e-300);
                for i in 0..r {
                    a[(i, i)] += shift * (1.0 + a[(i, i)].abs() / shift).min(1e6);
                }
            };
            let slope = e.gradient.dot(&dq);
            let mut alpha = 1.0;
            let mut accepted = false;
            for _ in 0..30 {
                let trial = &q + &dq * alpha;
                let et = self.energy(pose, trial.as_slice(), None);
                if et.value <= e.value + 1e-4 * alpha * slope {
                    q = trial;
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            e = self.energy(pose, q.as_slice(), Some(&mut hess));
        }
        Equilibrium {
            q: q.as_slice().to_vec(),
            force: e.force,
            contacts: self.out.contacts.len(),
            depth: e.depth,
            iterations,
            converged,
        }
    }
}

/// The energy of [`CompliantSolver::energy`] and what comes with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Energy {
    /// `W(q) + k/2 sum_s d_s^2`.
    pub value: f64,
    /// Its gradient with respect to q: the residual of the equilibrium.
    pub gradient: DVector<f64>,
    /// The larger of the internal and the contact force's norms (the residual's scale).
    pub size: f64,
    /// Contact force on the part (world).
    pub force: Vector3<f64>,
    /// The deepest point inside the part.
    pub depth: f64,
}

/// The largest displacement of a surface vertex of environment object `object` under
/// `q`, and that vertex's deformed world position.
pub fn max_displacement(scene: &Scene, object: usize, q: &[f64]) -> (f64, Point3<f64>) {
    let env = &scene.environment[object];
    let r = q.len();
    let mut best = (
        0.0,
        env.pose * env.surface.vertices.first().copied().unwrap_or_default(),
    );
    if r == 0 {
        return best;
    }
    for (v, rows) in env
        .surface
        .vertices
        .iter()
        .zip(env.render_basis.chunks(3 * r))
    {
        let u = Vector3::new(
            (0..r).map(|j| rows[j] as f64 * q[j]).sum::<f64>(),
            (0..r).map(|j| rows[r + j] as f64 * q[j]).sum::<f64>(),
            (0..r).map(|j| rows[2 * r + j] as f64 * q[j]).sum::<f64>(),
        );
        let d = u.norm();
        if d > best.0 {
            best = (d, env.pose * (v + u));
        }
    }
    best
}

/// One sampled state of a compliant check.
#[derive(Debug, Clone, PartialEq)]
pub struct CompliantSample {
    /// Where on the path.
    pub at: PathPos,
    /// The largest contact force between the part and one deformable object (N): what
    /// one hose pushes with (the objects' forces on the part may cancel).
    pub force: f64,
    /// The largest displacement of any deformable object's surface (scene units).
    pub displacement: f64,
    /// Every object's equilibrium converged.
    pub converged: bool,
}

/// What a compliant check found.
#[derive(Debug, Clone, PartialEq)]
pub struct CompliantReport {
    /// Every sampled state, in path order.
    pub samples: Vec<CompliantSample>,
    /// The largest contact force between the part and one deformable object (N).
    pub max_force: f64,
    /// Where it is.
    pub max_force_at: PathPos,
    /// The largest displacement of a deformable surface (scene units).
    pub max_displacement: f64,
    /// Where on the path.
    pub max_displacement_at: PathPos,
    /// On which object.
    pub max_displacement_object: String,
    /// The displaced vertex's world position.
    pub max_displacement_point: Point3<f64>,
    /// The deepest point of a deformable object inside the part (scene units).
    pub max_depth: f64,
    /// States whose equilibrium did not converge.
    pub unconverged: usize,
    /// The motion between samples (scene units).
    pub step: f64,
    /// The state of largest force: each deformable object's index and reduced
    /// coordinates there, and the points of the objects inside the part (world).
    pub worst: Vec<(usize, Vec<f64>)>,
    /// The contact points at that state.
    pub worst_contacts: Vec<Point3<f64>>,
}

/// Samples `path` (body poses of the scene's haptic object) every `step` of motion
/// (at most: `|dp| + |dtheta| R` per segment, R the part's radius) and solves every
/// deformable environment object's equilibrium there, warm-started along the path.
pub fn check_compliant(
    scene: &Scene,
    path: &[State],
    step: f64,
    progress: &mut dyn FnMut(usize),
) -> CompliantReport {
    let radius = scene
        .haptic
        .surface
        .vertices
        .iter()
        .map(|v| v.coords.norm())
        .fold(0.0, f64::max);
    let mut solvers: Vec<ObjectSolver> = (0..scene.environment.len())
        .filter_map(|i| {
            let r = scene.environment[i].shell.r();
            CompliantSolver::new(scene, i).map(|s| (i, s, vec![0.0; r]))
        })
        .collect();
    let mut report = empty_report(step);
    let segments = path.len().saturating_sub(1);
    if segments == 0 {
        if let Some(s) = path.first() {
            visit_sample(
                scene,
                &mut solvers,
                PathPos { segment: 0, t: 0.0 },
                s,
                &mut report,
            );
        }
    }
    for i in 0..segments {
        let b = crate::proximity::rigid::motion_bound(&path[i], &path[i + 1], radius);
        let n = ((b / step.max(f64::MIN_POSITIVE)).ceil() as usize).max(1);
        let last = if i + 1 == segments { n } else { n - 1 };
        for k in 0..=last {
            let t = k as f64 / n as f64;
            let s = path[i].interpolate(&path[i + 1], t);
            visit_sample(
                scene,
                &mut solvers,
                PathPos { segment: i, t },
                &s,
                &mut report,
            );
        }
        progress(i);
    }
    report
}

/// A deformable object's index, its solver and its warm-started reduced coordinates.
type ObjectSolver<'a> = (usize, CompliantSolver<'a>, Vec<f64>);

/// The report of a check with no samples yet, sampled every `step`.
fn empty_report(step: f64) -> CompliantReport {
    CompliantReport {
        samples: Vec::new(),
        max_force: 0.0,
        max_force_at: PathPos { segment: 0, t: 0.0 },
        max_displacement: 0.0,
        max_displacement_at: PathPos { segment: 0, t: 0.0 },
        max_displacement_object: String::new(),
        max_displacement_point: Point3::origin(),
        max_depth: 0.0,
        unconverged: 0,
        step,
        worst: Vec::new(),
        worst_contacts: Vec::new(),
    }
}

/// Solves every object's equilibrium at the part's `state` and records the sample and
/// its maxima in `report`.
fn visit_sample(
    scene: &Scene,
    solvers: &mut [ObjectSolver<'_>],
    at: PathPos,
    state: &State,
    report: &mut CompliantReport,
) {
    let pose = state.isometry();
    let (mut force, mut displacement, mut converged) = (0.0f64, 0.0f64, true);
    let mut contacts = Vec::new();
    for (object, solver, q) in solvers.iter_mut() {
        let e = solver.solve(&pose, q);
        *q = e.q;
        force = force.max(e.force.norm());
        contacts.extend(solver.out.contacts.iter().map(|c| c.position));
        converged &= e.converged;
        report.max_depth = report.max_depth.max(e.depth);
        let (d, point) = max_displacement(scene, *object, q);
        displacement = displacement.max(d);
        if d > report.max_displacement {
            report.max_displacement = d;
            report.max_displacement_at = at;
            report.max_displacement_object = scene.environment[*object].name.clone();
            report.max_displacement_point = point;
        }
    }
    if force > report.max_force {
        report.max_force = force;
        report.max_force_at = at;
        report.worst = solvers.iter().map(|(i, _, q)| (*i, q.clone())).collect();
        report.worst_contacts = contacts;
    }
    report.unconverged += usize::from(!converged);
    report.samples.push(CompliantSample {
        at,
        force,
        displacement,
        converged,
    });
}
