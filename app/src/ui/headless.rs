//! Offscreen frames of a scene, and the headless demo: what `cargo run --release` does
//! when there is no display or no GPU adapter.
//!
//! The demo replays a bundled trajectory through the same [`HapticSimulation`] cycle the
//! live loop runs (deterministic: one cycle per recorded sample), measures every cycle,
//! renders the moment of deepest contact offscreen when an adapter exists (software
//! Vulkan counts), and writes that frame and a summary.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use haptics_devices::trajectory::Trajectory;

use super::frame::{fill_frame, DebugContact, DebugViews};
use crate::render::{
    render_image, FrameState, GpuContext, Image, OrbitCamera, Overlays, RenderError, SceneRenderer,
    OFFSCREEN_FORMAT,
};
use haptics::haptic::{CycleStats, HapticSimulation, Snapshot, TimingSummary};
use haptics::scene::Scene;

/// The default camera of a scene: framing its bounds, looking down a little.
pub fn default_camera(renderer: &SceneRenderer) -> OrbitCamera {
    let (lo, hi) = renderer.bounds();
    let mut camera = OrbitCamera::framing(lo, hi);
    camera.zoom(0.75);
    camera
}

/// Renders `snapshot` of `scene` offscreen at `size` with the default camera.
pub fn render_snapshot(
    ctx: &GpuContext,
    scene: &Scene,
    snapshot: &Snapshot,
    views: DebugViews,
    size: (u32, u32),
) -> Result<Image, RenderError> {
    let mut renderer = SceneRenderer::new(&ctx.device, &ctx.queue, scene, OFFSCREEN_FORMAT)?;
    let camera = default_camera(&renderer);
    let mut frame = FrameState::default();
    fill_frame(snapshot, scene, &mut frame);
    if views != DebugViews::default() {
        DebugContact::new(scene).add_views(scene, snapshot, views, &mut frame);
    }
    render_image(
        ctx,
        &mut renderer,
        &frame,
        &camera,
        &Overlays::for_scene(scene),
        size,
    )
}

/// Replays `trajectory` on `sim` up to `until_s` seconds after its first sample (all of
/// it for `None`); returns the number of cycles run.
pub fn replay_until(
    sim: &mut HapticSimulation,
    trajectory: &Trajectory,
    until_s: Option<f64>,
) -> usize {
    let t0 = trajectory.samples.first().map_or(0.0, |s| s.time_s);
    let mut cycles = 0;
    for s in &trajectory.samples {
        if until_s.is_some_and(|t| s.time_s - t0 > t) {
            break;
        }
        sim.device_cycle(&s.pose, s.buttons);
        cycles += 1;
    }
    cycles
}

/// What the headless demo measured.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    pub scene: String,
    pub trajectory: PathBuf,
    pub duration_s: f64,
    pub timing: TimingSummary,
    pub max_force_n: f64,
    pub max_torque_nm: f64,
    pub max_contacts: usize,
    pub deepest_level: usize,
    /// Seconds into the trajectory of the frame rendered (most points in contact).
    pub frame_time_s: f64,
    /// The PNG written, or why none was.
    pub frame: Result<PathBuf, String>,
}

impl fmt::Display for DemoSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scene            {}", self.scene)?;
        writeln!(
            f,
            "trajectory       {} ({:.2} s, {} cycles)",
            self.trajectory.display(),
            self.duration_s,
            self.timing.cycles
        )?;
        writeln!(
            f,
            "cycle time       median {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us ({} over 1 ms)",
            self.timing.p50_us,
            self.timing.p99_us,
            self.timing.p999_us,
            self.timing.max_us,
            self.timing.overruns
        )?;
        writeln!(
            f,
            "device wrench    max force {:.3} N, max torque {:.4} N m",
            self.max_force_n, self.max_torque_nm
        )?;
        writeln!(
            f,
            "contact          up to {} points, pointshell level {} reached",
            self.max_contacts, self.deepest_level
        )?;
        match &self.frame {
            Ok(p) => writeln!(
                f,
                "frame            {} (t = {:.3} s)",
                p.display(),
                self.frame_time_s
            ),
            Err(why) => writeln!(f, "frame            not rendered: {why}"),
        }
    }
}

/// Runs the headless demo: replays `trajectory` on `scene`, renders the frame with the
/// most contacts to `out_dir/frame.png` (if a GPU adapter opens) and writes
/// `out_dir/summary.txt`.
pub fn run_demo(
    scene: Scene,
    trajectory: &Trajectory,
    trajectory_path: &Path,
    out_dir: &Path,
    size: (u32, u32),
) -> anyhow::Result<DemoSummary> {
    let name = scene.name.clone();
    let mut sim = HapticSimulation::new(scene);
    let mut stats = CycleStats::new(1_000_000);
    let (mut max_force, mut max_torque, mut max_contacts, mut deepest) = (0.0f64, 0.0f64, 0, 0);
    let mut best: Option<(f64, Snapshot)> = None;
    let t0 = trajectory.samples.first().map_or(0.0, |s| s.time_s);
    for s in &trajectory.samples {
        let start = Instant::now();
        let r = sim.device_cycle(&s.pose, s.buttons);
        stats.record(start.elapsed().as_nanos() as u64);
        max_force = max_force.max(r.force.norm());
        max_torque = max_torque.max(r.torque.norm());
        deepest = deepest.max(r.level_of_detail);
        if r.contacts > max_contacts || best.is_none() {
            max_contacts = max_contacts.max(r.contacts);
            best = Some((s.time_s - t0, Snapshot::capture(&sim)));
        }
    }
    std::fs::create_dir_all(out_dir)?;
    let (frame_time_s, frame) = match &best {
        None => (0.0, Err("the trajectory has no samples".to_string())),
        Some((t, snapshot)) => {
            let png = out_dir.join("frame.png");
            let rendered = GpuContext::headless().and_then(|ctx| {
                let views = DebugViews {
                    pointshell_levels: 0,
                    bd_spheres: true,
                };
                // The simulation's own scene: its meshes, bases and shells never change.
                render_snapshot(&ctx, &sim.scene, snapshot, views, size)?.write_png(&png)?;
                Ok(png)
            });
            (*t, rendered.map_err(|e| e.to_string()))
        }
    };
    let summary = DemoSummary {
        scene: name,
        trajectory: trajectory_path.to_path_buf(),
        duration_s: trajectory.samples.last().map_or(0.0, |s| s.time_s) - t0,
        timing: stats.summary(),
        max_force_n: max_force,
        max_torque_nm: max_torque,
        max_contacts,
        deepest_level: deepest,
        frame_time_s,
        frame,
    };
    std::fs::write(out_dir.join("summary.txt"), summary.to_string())?;
    Ok(summary)
}
