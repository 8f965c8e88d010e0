//! `haptics screenshot [SCENE] [--trajectory T --at S] --out frame.png`: one frame of a
//! scene rendered offscreen (no window needed; software Vulkan works), at rest or at a
//! moment of a replayed trajectory.

use super::range;
use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use haptics_devices::trajectory::read_trajectory;

use super::replay::load_with_progress;
use super::run::default_scene;
use crate::render::GpuContext;
use crate::ui::{render_snapshot, replay_until, DebugViews};
use haptics::haptic::{HapticSimulation, Snapshot};

/// Arguments of `haptics screenshot`.
#[derive(Debug, Clone, Args)]
pub struct ScreenshotArgs {
    /// The scene file (default: assets/scenes/bridge-probe.toml).
    pub scene: Option<PathBuf>,
    /// A recorded trajectory to replay before rendering (CSV, see `haptics replay`).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Seconds into the trajectory at which to render, >= 0 (default: its end).
    #[arg(long, requires = "trajectory", value_parser = range::real(0.0, f64::MAX))]
    pub at: Option<f64>,
    /// The PNG to write.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Frame width in pixels, 1 to 8192.
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub width: u32,
    /// Frame height in pixels, 1 to 8192.
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub height: u32,
    /// Also draw the pointshell's first N levels as points (0 to 16).
    #[arg(long, default_value_t = 0, value_parser = range::count(0, 16))]
    pub pointshell_levels: usize,
    /// Also draw the BD spheres the traversal descends (thesis Fig. 3.11).
    #[arg(long)]
    pub bd_spheres: bool,
    /// Cache directory for the scene's baked fields, pointshells and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
}

pub fn run(a: &ScreenshotArgs) -> anyhow::Result<()> {
    if a.width < 16 || a.height < 16 {
        bail!(
            "--width and --height must be at least 16 pixels, got {}x{}",
            a.width,
            a.height
        );
    }
    let trajectory = a
        .trajectory
        .as_ref()
        .map(|p| read_trajectory(p))
        .transpose()?;
    if let (Some(t), Some(at)) = (&trajectory, a.at) {
        let span = t.samples.last().map_or(0.0, |s| s.time_s)
            - t.samples.first().map_or(0.0, |s| s.time_s);
        if !(0.0..=span).contains(&at) {
            bail!("--at {at} s is outside the trajectory (0 to {span:.3} s)");
        }
    }
    let scene_path = a.scene.clone().unwrap_or_else(default_scene);
    let scene = load_with_progress(&scene_path, &a.cache)?;
    let ctx = GpuContext::headless()?;
    let mut sim = HapticSimulation::new(scene);
    let mut cycles = 0;
    if let Some(t) = &trajectory {
        cycles = replay_until(&mut sim, t, a.at);
    }
    let views = DebugViews {
        pointshell_levels: a.pointshell_levels,
        bd_spheres: a.bd_spheres,
    };
    let image = render_snapshot(
        &ctx,
        &sim.scene,
        &Snapshot::capture(&sim),
        views,
        (a.width, a.height),
    )?;
    image.write_png(&a.out)?;
    println!(
        "{}x{} frame of {} after {cycles} cycles on {} -> {}",
        a.width,
        a.height,
        sim.scene.name,
        ctx.adapter_summary(),
        a.out.display()
    );
    Ok(())
}
