//! The accuracy experiment of thesis Fig. 2.3: the same short impulse simulated
//! full-space and in r-dimensional reduced bases, comparing the trajectory of one
//! vertex.
//!
//! Bases: the first r linear modes; mass-PCA of k linear modes and their modal
//! derivatives; mass-PCA of the full-space motion itself ("basis from full motion",
//! thesis 2.8.2, the best any r-dimensional linear subspace can do for this motion).
//! Reduced external forces are U^T f(t); the vertex displacement is U_v q. Errors are
//! measured on the vertex's dominant axis after the impulse: the period (from mean
//! crossings), the peak-to-peak amplitude, and the RMS difference to the full-space
//! trajectory relative to the full-space amplitude.

use nalgebra::{DMatrix, DVector, Vector3};

use super::full::{FullSimParams, FullSimulator, Load, SimError};
use crate::dynamics::NewmarkParams;
use crate::dynamics::ReducedNewmark;
use crate::dynamics::ReducedParams;
use crate::dynamics::StepEvent;
use crate::fem::{model::FemError, model::FemModel, model::MassKind, model::MaterialLaw};
use crate::mesh::volume::VolumeMesh;
use crate::plot::{line_plot, PlotError, Series};
use crate::progress::NoProgress;
use crate::reduction::basis::{mass_pca, BasisError};
use crate::reduction::evaluator::ReducedForces;
use crate::reduction::modes::{ModesError, ModesOptions};
use crate::reduction::pipeline::{
    modal_derivative_basis, BasisSizes, PipelineError, RestSystem, StvkDerivatives,
};
use crate::reduction::precompute::{reduced_polynomial, PrecomputeError};

/// The experiment's set-up.
#[derive(Debug, Clone)]
pub struct AccuracyConfig {
    /// The volume mesh (m).
    pub mesh: VolumeMesh,
    /// 0-based vertices held at zero displacement.
    pub fixed_vertices: Vec<usize>,
    /// Vertices sharing the impulse force equally.
    pub load_vertices: Vec<usize>,
    /// Total force (N) applied during [0, load_duration).
    pub force: Vector3<f64>,
    /// Duration of the impulse (s).
    pub load_duration: f64,
    /// Time step (s) of every simulation.
    pub dt: f64,
    /// Number of time steps (at least 10).
    pub steps: usize,
    /// 0-based vertex whose trajectory is compared.
    pub observed_vertex: usize,
    /// Linear modes k used with their derivatives.
    pub linear_modes: usize,
    /// Basis size r of every reduced model.
    pub r: usize,
    /// Rayleigh stiffness damping beta (s) of every simulation (mass damping is zero).
    pub damping_stiffness: f64,
}

/// One simulated trajectory of the observed vertex.
#[derive(Debug, Clone)]
pub struct Trajectory {
    /// Label: "full space" or a description of the reduced basis.
    pub name: String,
    /// Displacement (m) of the observed vertex after each step (entry i at time (i + 1) dt).
    pub displacement: Vec<Vector3<f64>>,
}

/// Errors of one reduced model against the full-space reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrajectoryErrors {
    /// |T_reduced - T_full| / T_full of the dominant oscillation after the impulse.
    pub period: f64,
    /// |A_reduced - A_full| / A_full, A the peak-to-peak amplitude after the impulse.
    pub amplitude: f64,
    /// RMS of the difference over the whole run, relative to A_full.
    pub rms: f64,
    /// |t_peak,reduced - t_peak,full| / t_peak,full, t_peak the time of the largest
    /// excursion: a frequency measure for runs shorter than one period.
    pub peak_time: f64,
}

/// The experiment's result.
#[derive(Debug, Clone)]
pub struct AccuracyReport {
    /// Time step (s).
    pub dt: f64,
    /// Dominant axis (0 = x, 1 = y, 2 = z): the largest full-space excursion of the vertex.
    pub axis: usize,
    /// The full-space reference trajectory.
    pub full: Trajectory,
    /// Period (s) of the full-space oscillation after the impulse (NaN if too short).
    pub full_period: f64,
    /// Peak-to-peak amplitude (m) of the full-space motion after the impulse.
    pub full_amplitude: f64,
    /// Time (s) of the largest full-space excursion.
    pub full_peak_time: f64,
    /// Each reduced model's trajectory and errors: linear modes, modal derivatives and
    /// PCA of the full motion, in that order.
    pub reduced: Vec<(Trajectory, TrajectoryErrors)>,
}

/// Errors of the experiment.
#[derive(Debug, thiserror::Error)]
pub enum AccuracyError {
    /// Building the finite element model failed.
    #[error(transparent)]
    Fem(#[from] FemError),
    /// The full-space simulation failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// Computing the linear modes failed.
    #[error(transparent)]
    Modes(#[from] ModesError),
    /// Computing modal derivatives or a mass-PCA basis failed.
    #[error(transparent)]
    Basis(#[from] BasisError),
    /// Computing a reduced internal-force polynomial failed.
    #[error(transparent)]
    Precompute(#[from] PrecomputeError),
    /// Writing the plot failed.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// An invalid set-up, or a reduced simulation diverged (the message says which).
    #[error("{0}")]
    Setup(String),
}

/// Mean period of the oscillation of `x` (upward crossings of its mean) and its
/// peak-to-peak amplitude, over samples `from..`.
pub(crate) fn period_and_amplitude(x: &[f64], dt: f64, from: usize) -> (f64, f64) {
    let w = &x[from.min(x.len())..];
    if w.len() < 3 {
        return (f64::NAN, 0.0);
    }
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let mut crossings = Vec::new();
    for i in 1..w.len() {
        let (a, b) = (w[i - 1] - mean, w[i] - mean);
        if a < 0.0 && b >= 0.0 {
            crossings.push((i as f64 - b / (b - a)) * dt);
        }
    }
    let period = if crossings.len() >= 2 {
        (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64
    } else {
        f64::NAN
    };
    let (lo, hi) = w
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    (period, hi - lo)
}

/// Time of the largest |x|.
fn peak_time(x: &[f64], dt: f64) -> f64 {
    let i = (0..x.len())
        .max_by(|&a, &b| x[a].abs().total_cmp(&x[b].abs()))
        .unwrap_or(0);
    (i + 1) as f64 * dt
}

/// Runs the experiment.
pub fn run_accuracy_experiment(cfg: &AccuracyConfig) -> Result<AccuracyReport, AccuracyError> {
    if cfg.load_vertices.is_empty() || cfg.steps < 10 {
        return Err(AccuracyError::Setup(
            "need load vertices and at least 10 steps".into(),
        ));
    }
    let model = FemModel::new(&cfg.mesh, MaterialLaw::StVK)?;
    let loads = impulse_loads(cfg);
    // Full-space reference, with snapshots for the PCA basis.
    let full = simulate_full(&model, cfg, &loads)?;
    // Bases.
    let [u_linear, u_md, u_pca] = reduced_bases(&model, cfg, &full.snapshots)?;
    let reference = Reference::new(&full.trajectory, cfg);

    let mut reduced = Vec::new();
    for (name, u) in [
        (format!("{} linear modes", cfg.r), &u_linear),
        (
            format!(
                "modal derivatives (k = {}, r = {})",
                cfg.linear_modes, cfg.r
            ),
            &u_md,
        ),
        (format!("PCA of the full motion (r = {})", cfg.r), &u_pca),
    ] {
        let traj = reduced_trajectory(&model, cfg, &name, u, &full.forces)?;
        let errors = reference.errors(&traj, cfg.dt);
        reduced.push((
            Trajectory {
                name,
                displacement: traj,
            },
            errors,
        ));
    }
    Ok(AccuracyReport {
        dt: cfg.dt,
        axis: reference.axis,
        full: Trajectory {
            name: "full space".into(),
            displacement: full.trajectory,
        },
        full_period: reference.period,
        full_amplitude: reference.amplitude,
        full_peak_time: reference.peak_time,
        reduced,
    })
}

/// The impulse: the total force shared equally by the load vertices during
/// [0, load_duration).
fn impulse_loads(cfg: &AccuracyConfig) -> Vec<Load> {
    let per_vertex = cfg.force / cfg.load_vertices.len() as f64;
    cfg.load_vertices
        .iter()
        .map(|&v| Load::Vertex {
            vertex: v,
            force: per_vertex,
            start: 0.0,
            end: cfg.load_duration,
        })
        .collect()
}

/// The full-space run: the observed vertex's trajectory, snapshots of the displacement,
/// and the external forces of every step.
struct FullRun {
    /// Displacement of the observed vertex after each step.
    trajectory: Vec<Vector3<f64>>,
    /// The whole displacement every `steps / 200` steps (at least every step).
    snapshots: Vec<DVector<f64>>,
    /// The external force vector of each step.
    forces: Vec<Vec<f64>>,
}

/// Simulates the full-space model under `loads` for `cfg.steps` steps.
fn simulate_full(
    model: &FemModel,
    cfg: &AccuracyConfig,
    loads: &[Load],
) -> Result<FullRun, AccuracyError> {
    let params = FullSimParams {
        newmark: NewmarkParams::average_acceleration(cfg.dt),
        damping_stiffness: cfg.damping_stiffness,
        tolerance: 1e-8,
        max_newton_iterations: 30,
        ..FullSimParams::default()
    };
    let mut full = FullSimulator::new(model.clone(), &cfg.fixed_vertices, params)?;
    let ov = cfg.observed_vertex;
    let mut full_traj = Vec::with_capacity(cfg.steps);
    let snapshot_every = (cfg.steps / 200).max(1);
    let mut snapshots: Vec<DVector<f64>> = Vec::new();
    let mut forces_t: Vec<Vec<f64>> = Vec::with_capacity(cfg.steps);
    for s in 1..=cfg.steps {
        let f = full.loads_at(loads, s as f64 * cfg.dt);
        full.step(&f)?;
        full_traj.push(Vector3::new(
            full.u[3 * ov],
            full.u[3 * ov + 1],
            full.u[3 * ov + 2],
        ));
        if s % snapshot_every == 0 {
            snapshots.push(DVector::from_column_slice(&full.u));
        }
        forces_t.push(f);
    }
    Ok(FullRun {
        trajectory: full_traj,
        snapshots,
        forces: forces_t,
    })
}

/// The r-dimensional bases: the first r linear modes, mass-PCA of k linear modes and
/// their modal derivatives, and mass-PCA of the full-space snapshots.
fn reduced_bases(
    model: &FemModel,
    cfg: &AccuracyConfig,
    snapshots: &[DVector<f64>],
) -> Result<[DMatrix<f64>; 3], AccuracyError> {
    let n = model.num_dofs();
    let mut fixed = vec![false; n];
    for &v in &cfg.fixed_vertices {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k0 = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; n], &mut k0);
    let mass = model.mass_matrix(MassKind::Consistent);
    let system = RestSystem {
        k0: &k0,
        mass: &mass,
        fixed: &fixed,
        rest: &model.rest_positions,
    };
    // max(r, k) modes: the first r are a basis of their own, the first k take derivatives.
    let sizes = BasisSizes {
        modes: ModesOptions {
            count: cfg.r.max(cfg.linear_modes),
            unconstrained: cfg.fixed_vertices.is_empty(),
            tolerance: 1e-10,
        },
        derivative_modes: cfg.linear_modes,
        basis: cfg.r,
    };
    // The symmetric derivatives K Phi_ij = -(H : psi_i) psi_j on the free dofs.
    let derivatives = StvkDerivatives {
        model,
        system,
        unconstrained: false,
    };
    let md = modal_derivative_basis(&system, &sizes, &derivatives, &NoProgress)
        .map_err(pipeline_error)?;
    let u_linear = md.modes.vectors.columns(0, cfg.r).into_owned();
    let snap = DMatrix::from_columns(snapshots);
    let (u_pca, _) = mass_pca(&mass, &snap, cfg.r)?;
    Ok([u_linear, md.u, u_pca])
}

/// The experiment's error for a failed step of the modal-derivative basis.
fn pipeline_error(e: PipelineError<BasisError>) -> AccuracyError {
    match e {
        PipelineError::Modes(e) => e.into(),
        PipelineError::Derivatives(e) | PipelineError::Pca(e) => e.into(),
        // The basis is built without a progress that could cancel it.
        PipelineError::Cancelled => AccuracyError::Setup("the basis was cancelled".into()),
    }
}

/// The observed vertex's trajectory in the reduced model of basis `u` under the full
/// run's external forces `forces` (`name` labels a divergence).
fn reduced_trajectory(
    model: &FemModel,
    cfg: &AccuracyConfig,
    name: &str,
    u: &DMatrix<f64>,
    forces: &[Vec<f64>],
) -> Result<Vec<Vector3<f64>>, AccuracyError> {
    let (poly, _) = reduced_polynomial(model, u, faer::Par::rayon(0))?;
    let reduced_forces = ReducedForces::new(&poly, cfg.r).map_err(AccuracyError::Setup)?;
    let mut sim = ReducedNewmark::new(
        reduced_forces,
        ReducedParams {
            newmark: NewmarkParams::average_acceleration(cfg.dt),
            damping_stiffness: cfg.damping_stiffness,
            newton_iterations: 5,
            ..ReducedParams::default()
        },
    );
    let ut = u.transpose();
    let uv = u.rows(3 * cfg.observed_vertex, 3).into_owned();
    let mut traj = Vec::with_capacity(cfg.steps);
    for f in forces {
        let fr = &ut * DVector::from_column_slice(f);
        if sim.step(fr.as_slice()) == StepEvent::DivergedAndReset {
            return Err(AccuracyError::Setup(format!(
                "{name}: the reduced simulation diverged"
            )));
        }
        let d = &uv * DVector::from_column_slice(&sim.q);
        traj.push(Vector3::new(d[0], d[1], d[2]));
    }
    Ok(traj)
}

/// The full-space motion on its dominant axis, which the reduced runs are measured
/// against.
struct Reference {
    /// Dominant axis: the largest full-space excursion of the vertex.
    axis: usize,
    /// The first step after the impulse.
    after: usize,
    /// The full-space displacement on the axis.
    x: Vec<f64>,
    /// Period (s) after the impulse.
    period: f64,
    /// Peak-to-peak amplitude (m) after the impulse.
    amplitude: f64,
    /// Time (s) of the largest excursion.
    peak_time: f64,
}

impl Reference {
    /// The reference of the full-space trajectory `full_traj`.
    fn new(full_traj: &[Vector3<f64>], cfg: &AccuracyConfig) -> Self {
        let axis = (0..3)
            .max_by(|&a, &b| {
                let ma = full_traj.iter().map(|d| d[a].abs()).fold(0.0, f64::max);
                let mb = full_traj.iter().map(|d| d[b].abs()).fold(0.0, f64::max);
                ma.total_cmp(&mb)
            })
            .unwrap_or(0);
        let after = (cfg.load_duration / cfg.dt).ceil() as usize;
        let xf: Vec<f64> = full_traj.iter().map(|d| d[axis]).collect();
        let (tf, af) = period_and_amplitude(&xf, cfg.dt, after);
        let pf = peak_time(&xf, cfg.dt);
        Reference {
            axis,
            after,
            x: xf,
            period: tf,
            amplitude: af,
            peak_time: pf,
        }
    }

    /// The errors of the trajectory `traj` (time step `dt`) against the reference.
    fn errors(&self, traj: &[Vector3<f64>], dt: f64) -> TrajectoryErrors {
        let (tf, af, pf) = (self.period, self.amplitude, self.peak_time);
        let x: Vec<f64> = traj.iter().map(|d| d[self.axis]).collect();
        let (t, a) = period_and_amplitude(&x, dt, self.after);
        let rms = (x
            .iter()
            .zip(&self.x)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            / x.len() as f64)
            .sqrt()
            / af;
        TrajectoryErrors {
            period: (t - tf).abs() / tf,
            amplitude: (a - af).abs() / af,
            rms,
            peak_time: (peak_time(&x, dt) - pf).abs() / pf,
        }
    }
}

impl AccuracyReport {
    /// Plots the observed vertex's dominant displacement component over time.
    pub fn plot(&self, path: &std::path::Path, title: &str) -> Result<(), PlotError> {
        let axis_name = ["x", "y", "z"][self.axis];
        let to_series = |t: &Trajectory| Series {
            name: t.name.clone(),
            points: t
                .displacement
                .iter()
                .enumerate()
                .map(|(i, d)| ((i + 1) as f64 * self.dt, d[self.axis]))
                .collect(),
        };
        let mut series = vec![to_series(&self.full)];
        series.extend(self.reduced.iter().map(|(t, _)| to_series(t)));
        line_plot(
            path,
            title,
            "time (s)",
            &format!("displacement {axis_name} (m)"),
            &series,
        )
    }

    /// A plain-text table of the errors.
    pub fn table(&self) -> String {
        let mut s = format!(
            "full space: period {:.4} s, peak-to-peak {:.4} m, largest excursion at {:.3} s\n{:<44} {:>10} {:>10} {:>10} {:>10}\n",
            self.full_period, self.full_amplitude, self.full_peak_time, "basis", "period", "amplitude", "RMS", "peak time"
        );
        for (t, e) in &self.reduced {
            s += &format!(
                "{:<44} {:>9.2}% {:>9.2}% {:>9.2}% {:>9.2}%\n",
                t.name,
                100.0 * e.period,
                100.0 * e.amplitude,
                100.0 * e.rms,
                100.0 * e.peak_time
            );
        }
        s
    }
}
