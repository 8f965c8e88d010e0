//! The `haptics` command line: argument parsing (clap) and one module per subcommand.
//!
//! With no subcommand, `haptics` runs the interactive application on the default scene
//! (see [`mod@run`]), or its headless demo where there is no display.

pub mod bake;
pub mod check;
pub mod demo;
pub mod devices;
pub mod inspect;
pub mod muscle;
pub mod plan;
pub mod pointshell;
pub mod progress;
pub mod range;
pub mod replay;
pub mod run;
pub mod scene;
pub mod screenshot;
pub mod sdf;
pub mod simulate;
pub mod stability;
pub mod voxelize;

use clap::{Parser, Subcommand};

/// Real-time 6-DOF haptic rendering of reduced deformable contact.
///
/// Run with no arguments for the interactive application on the bundled bridge scene
/// (or, without a display or GPU, its headless demo).
#[derive(Debug, Parser)]
#[command(name = "haptics", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The interactive application (the default): a window showing a scene while the
    /// haptic thread runs it, with panels, plots and mouse/SpaceMouse/HID input; the
    /// headless demo where there is no display.
    Run(run::RunArgs),
    /// Render one frame of a scene offscreen to PNG, at rest or at a moment of a
    /// replayed trajectory.
    Screenshot(screenshot::ScreenshotArgs),
    /// A small full-space example: StVK simulation of the bundled beam under gravity.
    Beam(demo::DemoArgs),
    /// Full-space implicit Newmark simulation of a volumetric mesh (the reference
    /// simulator), writing vertex displacements over time to CSV.
    Fullsim(demo::FullsimArgs),
    /// Print counts, bounding box, materials, volume, mass and element quality of a mesh
    /// file (.obj, .stl, .gltf/.glb, .dae, .veg, TetGen .node/.ele).
    Inspect(inspect::InspectArgs),
    /// Turn a triangle mesh into a hexahedral voxel mesh (.veg), optionally embedding a
    /// render mesh (.interp).
    Voxelize(voxelize::VoxelizeArgs),
    /// Bake a reduced model: linear modes, modal derivatives, mass-PCA basis and the cubic
    /// reduced-force polynomial, into a directory with a manifest.
    Bake(bake::BakeArgs),
    /// Offline reduced dynamics of a baked model or a Vega .cub, writing q over time.
    Simulate(simulate::SimulateArgs),
    /// Sample a multi-resolution oriented pointshell of a closed triangle mesh by particle
    /// repulsion, printing each level's coverage and uniformity.
    Pointshell(pointshell::PointshellArgs),
    /// Replay a recorded trajectory on a scene, headless and deterministic, into a haptic
    /// log; --compare checks it against a golden log, --plot draws it.
    Replay(replay::ReplayArgs),
    /// Record a device trajectory while running a scene's haptic loop (the simulated hand
    /// following keyframes, or a HID device in real time).
    Record(replay::RecordArgs),
    /// Signed distance field of a triangle mesh (thesis 3.11) in Vega's .dist format;
    /// --soup for meshes that are not closed.
    Sdf(sdf::SdfArgs),
    /// List connected HID haptic/6-DOF devices with their matching profile, and the known
    /// device profiles.
    #[command(long_about = devices::LONG_ABOUT)]
    Devices(devices::DevicesArgs),
    /// Check a rigid part's path for collision, continuously (not sampled): clearance,
    /// first contact, penetration, contact intervals; OMPL.app problems and paths.
    Check(check::CheckArgs),
    /// Plan a collision-free path for a rigid part (RRT-Connect steered by exact
    /// distances, motions certified continuously) on an OMPL.app problem or a scene;
    /// writes an OMPL .path.
    Plan(plan::PlanArgs),
    /// Scenes from a user's meshes: `scene new --held PART --world FIXTURE --out S.toml`
    /// writes one with resolutions, workspace scale and stiffnesses derived from their
    /// sizes.
    Scene(scene::SceneArgs),
    /// Active skeletal muscle: isometric tension-length curves, the NURBS fusiform
    /// muscle mesh with its fibres, and its contraction with fixed tendons.
    Muscle(muscle::MuscleArgs),
    /// The largest coupling and contact stiffness the loop renders stably at each haptic
    /// rate, with the simulated hand and device (latency, quantization, jitter), judged
    /// by a passivity observer; CSV and a plot of the observer's energy.
    Stability(stability::StabilityArgs),
}

/// An exit status without a message (`check`: 1 when the path collides; the summary has
/// said why).
#[derive(Debug)]
pub struct Exit(pub i32);

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Exit {}

/// Parses the command line and runs the chosen subcommand.
pub fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // No subcommand means `haptics run` with its defaults (clap's, declared once).
    let command = match cli.command {
        Some(c) => c,
        None => Command::Run(run::RunArgs::defaults()),
    };
    match command {
        Command::Run(a) => run::run(&a),
        Command::Screenshot(a) => screenshot::run(&a),
        Command::Beam(a) => demo::run_demo(&a),
        Command::Fullsim(a) => demo::run_fullsim(&a),
        Command::Inspect(a) => inspect::run(&a),
        Command::Voxelize(a) => voxelize::run(&a),
        Command::Bake(a) => bake::run(&a),
        Command::Simulate(a) => simulate::run(&a),
        Command::Pointshell(a) => pointshell::run(&a),
        Command::Sdf(a) => sdf::run(&a),
        Command::Replay(a) => replay::run_replay(&a),
        Command::Record(a) => replay::run_record(&a),
        Command::Devices(a) => devices::run(&a),
        Command::Check(a) => match check::run(&a) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Exit(1).into()),
            // Bad input or a failure: exit status 2, not the 1 of a colliding path.
            Err(e) => Err(check::BadInput(e).into()),
        },
        Command::Muscle(a) => muscle::run(&a).map_err(|e| check::BadInput(e).into()),
        Command::Stability(a) => stability::run(&a),
        Command::Scene(a) => scene::run(&a),
        Command::Plan(a) => match plan::run(&a) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Exit(1).into()),
            Err(e) => Err(check::BadInput(e).into()),
        },
    }
}

pub use haptics::assets::assets_dir;

/// The lines `main` prints for a failed command: `error: MESSAGE`, then one
/// `  caused by: CAUSE` per source in the chain, except a cause whose text the line
/// before already contains (errors declared as `#[error("...: {source}")]` show their
/// source in their own message, which would otherwise be printed twice).
pub fn error_lines(err: &anyhow::Error) -> Vec<String> {
    chain_lines(err.chain().map(|e| e.to_string()))
}

/// [`error_lines`] for the messages of an error chain, outermost first.
pub fn chain_lines(messages: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut lines = Vec::new();
    let mut last: Option<String> = None;
    for m in messages {
        match &last {
            None => lines.push(format!("error: {m}")),
            Some(prev) if prev.contains(m.trim()) => continue,
            Some(_) => lines.push(format!("  caused by: {m}")),
        }
        last = Some(m);
    }
    lines
}

/// `--set KEY=VALUE` overrides of a scene's tunable parameters (`run`, `replay`,
/// `record`), validated against each parameter's one definition
/// ([`haptics::scene::params::Param`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ParamOverrides {
    /// Override a tunable parameter of the scene, e.g. `--set coupling.static_damping=0.3`
    /// (repeatable). Keys: contact.stiffness, contact.warm_budget, contact.cold_fraction,
    /// contact.max_unscaled_contacts, contact.max_penetration (0: discrete contact),
    /// contact.sweep_budget, coupling.stiffness, coupling.torque_stiffness,
    /// coupling.saturation_force (0: linear), coupling.static_damping,
    /// coupling.max_velocity, coupling.max_angular_velocity, coupling.degenerate_ratio,
    /// coupling.device_max_force, coupling.device_max_torque, dynamics.material_scale,
    /// dynamics.modes_used, dynamics.activation.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_param)]
    pub set: Vec<(haptics::scene::params::Param, f64)>,
    /// Muscle activation in [0, 1] for scenes with an active muscle (the same as --set
    /// dynamics.activation=A); a trajectory's `activation` column overrides it sample by
    /// sample during a replay.
    #[arg(long, value_name = "A", value_parser = range::real(0.0, 1.0))]
    pub activation: Option<f64>,
}

impl ParamOverrides {
    /// Applies the overrides to a loaded scene.
    pub fn apply(&self, scene: &mut haptics::scene::Scene) {
        for &(p, v) in &self.set {
            scene.set(p, v);
        }
        if let Some(a) = self.activation {
            scene.set(haptics::scene::params::Param::Activation, a);
        }
    }
}

fn parse_param(s: &str) -> Result<(haptics::scene::params::Param, f64), String> {
    haptics::scene::params::Param::parse_assignment(s).map_err(|e| e.to_string())
}

/// Parses a finite number (for flags whose value must be one); the error quotes it.
pub fn parse_finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not finite"));
    }
    Ok(v)
}

/// Parses "x,y,z" into a vector.
pub fn parse_vec3(s: &str) -> Result<nalgebra::Vector3<f64>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 3 {
        return Err(format!(
            "expected three comma-separated numbers like 0,0,-9.81, got '{s}'"
        ));
    }
    let mut v = [0.0; 3];
    for (i, p) in parts.iter().enumerate() {
        v[i] = parse_finite(p)?;
    }
    Ok(nalgebra::Vector3::new(v[0], v[1], v[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading {path}: {source}")]
    struct ReadError {
        path: String,
        source: std::io::Error,
    }

    #[test]
    fn each_message_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let e = anyhow::Error::new(ReadError {
            path: "scene.toml".into(),
            source: io,
        })
        .context("loading the scene");
        assert_eq!(
            error_lines(&e),
            vec![
                "error: loading the scene".to_string(),
                "  caused by: reading scene.toml: No such file or directory".to_string(),
            ]
        );
        // A cause not contained in the line before is kept.
        let e = anyhow::anyhow!("inner problem").context("outer");
        assert_eq!(
            error_lines(&e),
            vec![
                "error: outer".to_string(),
                "  caused by: inner problem".to_string()
            ]
        );
        // A cause contained in the top message is skipped too.
        let lines = chain_lines(["a: b: c".to_string(), "b: c".to_string(), "c".to_string()]);
        assert_eq!(lines, vec!["error: a: b: c".to_string()]);
        // Skipped causes do not hide a later, different one.
        let lines = chain_lines(["a: b".to_string(), "b".to_string(), "d".to_string()]);
        assert_eq!(
            lines,
            vec!["error: a: b".to_string(), "  caused by: d".to_string()]
        );
    }
}
