//! `haptics beam` and `haptics fullsim`: the full-space reference
//! simulator driven from the command line.
//!
//! The demo loads the bundled beam (assets/models/beam3: 75 hexes, clamped at its y = 1 end by
//! beam3.bou), lets it fall under gravity across its 12 cm width with a little Rayleigh
//! damping, and prints the tip displacement over time and the cost per step.

use super::range;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::Vector3;

use haptics::dynamics::{full::FullSimParams, full::FullSimulator, full::Load, NewmarkParams};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{bou::read_bou, read::read_volume, volume::VolumeMesh};

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Number of time steps (1 to 10^8).
    #[arg(long, default_value_t = 500, value_parser = super::simulate::parse_steps)]
    pub steps: usize,
    /// Time step (s), > 0 and at most 1.
    #[arg(long, default_value_t = 1e-3, value_parser = super::simulate::parse_dt)]
    pub dt: f64,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            steps: 500,
            dt: 1e-3,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct FullsimArgs {
    /// Volumetric mesh (.veg, or TetGen .node/.ele).
    pub mesh: PathBuf,
    /// Fixed vertices (Vega .bou, 1-indexed).
    #[arg(long)]
    pub fixed: Option<PathBuf>,
    /// Time step (s), > 0 and at most 1.
    #[arg(long, default_value_t = 1e-3, value_parser = super::simulate::parse_dt)]
    pub dt: f64,
    /// Number of time steps (1 to 10^8).
    #[arg(long, default_value_t = 1000, value_parser = super::simulate::parse_steps)]
    pub steps: usize,
    /// Gravity as x,y,z in m/s^2.
    #[arg(long, value_parser = super::parse_vec3, default_value = "0,0,0", allow_hyphen_values = true)]
    pub gravity: Vector3<f64>,
    /// Mass-proportional Rayleigh damping (1/s, >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = super::simulate::parse_damping)]
    pub damping_mass: f64,
    /// Stiffness-proportional Rayleigh damping (s, >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = super::simulate::parse_damping)]
    pub damping_stiffness: f64,
    /// Use the linear (small-strain) material instead of StVK.
    #[arg(long)]
    pub linear: bool,
    /// Use the lumped mass matrix instead of the consistent one.
    #[arg(long)]
    pub lumped: bool,
    /// Newton tolerance (relative residual), > 0 and at most 1.
    #[arg(long, default_value_t = 1e-8, value_parser = range::positive(1.0))]
    pub tolerance: f64,
    /// Vertex (0-based) whose displacement is reported; default: the vertex farthest
    /// from the fixed vertices (the tip of a cantilever).
    #[arg(long)]
    pub report_vertex: Option<usize>,
    /// Write `step,t,ux,uy,uz` of the reported vertex for every step to this CSV.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs the bundled demo.
pub fn run_demo(args: &DemoArgs) -> anyhow::Result<()> {
    let dir = haptics::assets::model("beam3");
    println!(
        "Demo: full-space StVK beam under gravity; the interactive application is `haptics run`."
    );
    run_fullsim(&FullsimArgs {
        mesh: dir.join("beam3.veg"),
        fixed: Some(dir.join("beam3.bou")),
        dt: args.dt,
        steps: args.steps,
        gravity: Vector3::new(-9.81, 0.0, 0.0),
        damping_mass: 0.0,
        damping_stiffness: 0.01,
        linear: false,
        lumped: false,
        tolerance: 1e-8,
        report_vertex: None,
        out: None,
    })
}

/// Runs a full-space simulation and prints a summary.
pub fn run_fullsim(args: &FullsimArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.dt > 0.0 && args.dt.is_finite(),
        "--dt must be positive, got {}",
        args.dt
    );
    let mesh = read_volume(&args.mesh)?;
    let fixed = match &args.fixed {
        Some(p) => read_bou(p, Some(mesh.vertices.len()))?,
        None => Vec::new(),
    };
    let model = build_model(args, &mesh)?;
    let params = sim_params(args);
    print_setup(args, &mesh, &fixed);
    let mut sim = FullSimulator::new(model, &fixed, params)?;
    let v = report_vertex(args, &mesh, &fixed)?;
    let history = simulate(args, &mut sim, v)?;
    print_history(args, &mesh, v, &history);
    print_timing(&history);
    if let Some(out) = &args.out {
        write_csv(out, args.dt, &history.displacements)?;
    }
    Ok(())
}

/// The finite element model of `mesh` with the material law `args` asks for.
fn build_model(args: &FullsimArgs, mesh: &VolumeMesh) -> anyhow::Result<FemModel> {
    let law = if args.linear {
        MaterialLaw::Linear
    } else {
        MaterialLaw::StVK
    };
    FemModel::new(mesh, law).with_context(|| {
        format!(
            "{}: cannot build the finite element model",
            args.mesh.display()
        )
    })
}

/// The integrator, damping, mass and Newton settings of `args`.
fn sim_params(args: &FullsimArgs) -> FullSimParams {
    FullSimParams {
        newmark: NewmarkParams::average_acceleration(args.dt),
        damping_mass: args.damping_mass,
        damping_stiffness: args.damping_stiffness,
        mass: if args.lumped {
            MassKind::Lumped
        } else {
            MassKind::Consistent
        },
        tolerance: args.tolerance,
        max_newton_iterations: 30,
    }
}

/// Prints the mesh's size and the simulation's settings.
fn print_setup(args: &FullsimArgs, mesh: &VolumeMesh, fixed: &[usize]) {
    println!(
        "{}: {} vertices, {} elements ({}), {} fixed vertices, {} free dofs; dt = {} s, {} steps, gravity {:?} m/s^2",
        args.mesh.display(),
        mesh.vertices.len(),
        mesh.num_elements(),
        mesh.kind.name(),
        fixed.len(),
        mesh.num_dofs() - 3 * fixed.len(),
        args.dt,
        args.steps,
        args.gravity.as_slice()
    );
}

/// The reported vertex: `--report-vertex`, checked, or the farthest from the fixed ones.
fn report_vertex(args: &FullsimArgs, mesh: &VolumeMesh, fixed: &[usize]) -> anyhow::Result<usize> {
    Ok(match args.report_vertex {
        Some(v) if v >= mesh.vertices.len() => {
            anyhow::bail!(
                "--report-vertex {v} is out of range (the mesh has {} vertices)",
                mesh.vertices.len()
            )
        }
        Some(v) => v,
        None => farthest_from(&mesh.vertices, fixed),
    })
}

/// The reported vertex's displacements, the step times and the total Newton iterations.
struct History {
    displacements: Vec<Vector3<f64>>,
    step_times: Vec<f64>,
    newton: usize,
}

/// Steps `sim` under gravity behind a progress bar, recording vertex `v`'s displacement.
fn simulate(args: &FullsimArgs, sim: &mut FullSimulator, v: usize) -> anyhow::Result<History> {
    let loads = vec![Load::Gravity(args.gravity)];
    let bar = ProgressBar::new(args.steps as u64).with_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} steps, ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("simulating");
    // Displacement history of the reported vertex only (full histories of large meshes
    // would not fit in memory).
    let mut history: Vec<Vector3<f64>> = Vec::with_capacity(args.steps);
    let mut step_times = Vec::with_capacity(args.steps);
    let mut newton = 0usize;
    let mut f = vec![0.0; sim.num_dofs()];
    for _ in 0..args.steps {
        let t = sim.time + args.dt;
        haptics::dynamics::full::assemble_loads(&loads, sim.vertex_masses(), t, &mut f);
        let start = Instant::now();
        let rep = sim.step(&f)?;
        step_times.push(start.elapsed().as_secs_f64());
        newton += rep.newton_iterations;
        history.push(Vector3::new(
            sim.u[3 * v],
            sim.u[3 * v + 1],
            sim.u[3 * v + 2],
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(History {
        displacements: history,
        step_times,
        newton,
    })
}

/// Prints the reported vertex and a table of its displacement at ten times.
fn print_history(args: &FullsimArgs, mesh: &VolumeMesh, v: usize, history: &History) {
    let history = &history.displacements;
    println!(
        "tip = vertex {v} (0-based) at rest position {:?}",
        mesh.vertices[v].coords.as_slice()
    );
    println!(
        "{:>10} {:>12} {:>12} {:>12} {:>12}",
        "t (s)", "ux (m)", "uy (m)", "uz (m)", "|u| (m)"
    );
    let every = (args.steps / 10).max(1);
    for (i, d) in history.iter().enumerate() {
        if (i + 1) % every == 0 || i + 1 == history.len() {
            println!(
                "{:>10.4} {:>12.6} {:>12.6} {:>12.6} {:>12.6}",
                (i + 1) as f64 * args.dt,
                d.x,
                d.y,
                d.z,
                d.norm()
            );
        }
    }
}

/// Prints the median, mean and longest step time and the Newton iterations per step.
fn print_timing(history: &History) {
    let step_times = &history.step_times;
    if !step_times.is_empty() {
        let mut sorted = step_times.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let mean = step_times.iter().sum::<f64>() / step_times.len() as f64;
        println!(
            "time per step: median {:.1} us, mean {:.1} us, max {:.1} us; {:.2} Newton iterations per step",
            median * 1e6,
            mean * 1e6,
            sorted[sorted.len() - 1] * 1e6,
            history.newton as f64 / step_times.len() as f64
        );
    }
}

/// Writes `step,t,ux,uy,uz` of every step to the CSV `out`.
fn write_csv(out: &Path, dt: f64, history: &[Vector3<f64>]) -> anyhow::Result<()> {
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("cannot create {}", out.display()))?,
    );
    writeln!(w, "step,t,ux,uy,uz")?;
    for (i, d) in history.iter().enumerate() {
        writeln!(
            w,
            "{},{},{},{},{}",
            i + 1,
            (i + 1) as f64 * dt,
            d.x,
            d.y,
            d.z
        )?;
    }
    w.flush()?;
    println!("wrote {}", out.display());
    Ok(())
}

/// The free vertex farthest from the centroid of `fixed` (or from the mesh centroid when
/// nothing is fixed).
fn farthest_from(vertices: &[nalgebra::Point3<f64>], fixed: &[usize]) -> usize {
    let is_fixed = |v: usize| fixed.binary_search(&v).is_ok();
    let pts: Vec<&nalgebra::Point3<f64>> = if fixed.is_empty() {
        vertices.iter().collect()
    } else {
        fixed.iter().map(|&i| &vertices[i]).collect()
    };
    let c = pts.iter().fold(Vector3::zeros(), |a, p| a + p.coords) / pts.len().max(1) as f64;
    (0..vertices.len())
        .filter(|&v| !is_fixed(v))
        .max_by(|&a, &b| {
            (vertices[a].coords - c)
                .norm()
                .total_cmp(&(vertices[b].coords - c).norm())
        })
        .unwrap_or(0)
}
