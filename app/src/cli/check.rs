//! `haptics check`: can this part move along this path without collision, with how much
//! clearance, where does it first touch, how deep ([`haptics::check`]).
//!
//! Exit status: 0 collision-free (and at least `--min-clearance` when given), 1 collides
//! or violates a limit, 2 bad input or failure.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use haptics::check::ompl::read_path;
pub use haptics::check::problem::read_mesh;
use haptics::check::problem::{load_problem, LoadedProblem};
use haptics::check::report::{num, pos, report_json, ReportContext};
use haptics::check::{check_path, CheckOptions, PathPos, Report, Robot, World};
use haptics::mesh::SurfaceMesh;
use haptics::plot::{shaded_line_plot, Band, Series};
use haptics::proximity::rigid::State;

use super::range;

/// Arguments of `haptics check`.
#[derive(Debug, Args)]
#[command(after_help = "Example (an OMPL.app problem and a planned path):
  haptics check Twistycool.cfg --path twistycool.path --report r.json --plot clearance.png

Exit status: 0 collision-free (and at least --min-clearance), 1 collides or violates
--min-clearance, 2 bad input.")]
pub struct CheckArgs {
    /// The problem: an OMPL.app `.cfg` (its `robot` and `world` meshes: .dae, .obj, .stl),
    /// or one of our scenes (`.toml`: the haptic object moves, the environment objects
    /// are the world, each at rest).
    pub problem: PathBuf,
    /// The path to check: an OMPL `.path` (`x y z qx qy qz qw` per line): the robot's
    /// states, or for a scene the haptic object's body-frame poses. Default for a `.cfg`:
    /// the straight motion from its start to its goal.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// For a scene: a recorded stylus trajectory (CSV, device metres); the haptic object
    /// follows it through the scene's workspace mapping (scale, grasp frame, clutch).
    #[arg(long, conflicts_with = "path")]
    pub trajectory: Option<PathBuf>,
    /// Cache directory for a scene's baked fields and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
    /// Write the report as JSON (verdict, clearance, penetration, first collision,
    /// contacts, sizes, timings).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Plot the clearance along the path to this PNG, the contact intervals shaded.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Render the worst pose (the minimum clearance, or the deepest penetration) to this
    /// PNG, with the contact points marked (the closest points when free, the points
    /// inside the other part when colliding), framed on the robot. Needs a GPU adapter
    /// (software Vulkan will do).
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// The check's tolerance in the problem's units (default: 0.1% of the robot's
    /// bounding-box diagonal): closer than this counts as contact.
    #[arg(long, value_parser = range::positive(1e9))]
    pub tolerance: Option<f64>,
    /// Fail (exit 1) when the minimum clearance is below this, in the problem's units.
    #[arg(long, value_parser = range::real(0.0, 1e9))]
    pub min_clearance: Option<f64>,
    /// Show a progress bar over the path's segments.
    #[arg(long)]
    pub progress: bool,
    /// Stop at the first collision: the verdict and where the first contact starts,
    /// without the contact intervals after it, the minimum beyond it or any penetration
    /// depth (the question "can this part pass?", answered fastest where it cannot; on
    /// a free path far from the world the whole check can be faster).
    #[arg(long)]
    pub first_contact: bool,
    /// For a scene with deformable environment objects (hoses, cables): let them give
    /// way. Each is solved for its quasi-static reduced equilibrium under the part's
    /// contact along the path; the report adds the largest contact force and
    /// displacement. The collision verdict then covers the rigid objects only.
    #[arg(long)]
    pub compliant: bool,
    /// With --compliant: fail (exit 1) when the contact force exceeds this (N).
    #[arg(long, requires = "compliant", value_parser = range::positive(1e12))]
    pub max_force: Option<f64>,
    /// With --compliant: fail (exit 1) when a deformable surface moves more than this
    /// (scene units).
    #[arg(long, requires = "compliant", value_parser = range::positive(1e12))]
    pub max_displacement: Option<f64>,
    /// With --compliant: the motion between equilibrium samples (scene units; default
    /// 1% of the part's bounding-box diagonal).
    #[arg(long, requires = "compliant", value_parser = range::positive(1e12))]
    pub compliant_step: Option<f64>,
}

/// An error that ends `check` with exit status 2 (bad input or a failure), as opposed to
/// 1 (the path collides).
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// The outcome: whether the path passed.
pub fn run(a: &CheckArgs) -> anyhow::Result<bool> {
    let load_start = Instant::now();
    let loaded = load(a)?;
    let (robot, world, path) = (&loaded.robot, &loaded.world, &loaded.path);
    let load_s = load_start.elapsed().as_secs_f64();
    let segments = path.len().saturating_sub(1);
    let bar = segment_bar(a.progress, segments, "checking");
    let options = CheckOptions {
        tolerance: a.tolerance,
        first_contact_only: a.first_contact,
        ..CheckOptions::default()
    };
    let report = check_path(robot, world, path, &options, &mut |i| {
        if let Some(b) = &bar {
            b.set_position(i as u64 + 1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let compliant = if a.compliant {
        Some(run_compliant(a, &loaded, segments)?)
    } else {
        None
    };
    let limits_ok = compliant.as_ref().is_none_or(|(c, _)| {
        c.unconverged == 0
            && a.max_force.is_none_or(|f| c.max_force <= f)
            && a.max_displacement.is_none_or(|d| c.max_displacement <= d)
    });
    let passed = report.passes(a.min_clearance) && limits_ok;
    let outcome = Outcome {
        report: &report,
        compliant: compliant.as_ref(),
        load_s,
        passed,
        segments,
    };
    print_summary(a, &loaded, &outcome);
    write_outputs(a, &loaded, &outcome)?;
    Ok(passed)
}

/// The compliant check's report and its time in seconds.
type CompliantOutcome = (haptics::check::compliant::CompliantReport, f64);

/// What a check found, for the summary and the output files.
struct Outcome<'a> {
    report: &'a Report,
    compliant: Option<&'a CompliantOutcome>,
    load_s: f64,
    passed: bool,
    segments: usize,
}

/// A progress bar over `segments` path segments labelled `label`, when `progress` is set.
fn segment_bar(progress: bool, segments: usize, label: &str) -> Option<indicatif::ProgressBar> {
    progress.then(|| {
        let b = indicatif::ProgressBar::new(segments as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{label} {{bar:40}} {{pos}}/{{len}} segments {{eta}}"
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Runs the compliant check on the loaded scene, or fails when it has no deformable object.
fn run_compliant(
    a: &CheckArgs,
    loaded: &Loaded,
    segments: usize,
) -> anyhow::Result<CompliantOutcome> {
    let Some(scene) = loaded.scene.as_ref() else {
        return Err(BadInput(anyhow::anyhow!(
            "{}: --compliant needs a scene (.toml) with deformable environment objects",
            a.problem.display()
        ))
        .into());
    };
    if scene.environment.iter().all(|e| e.dynamics.is_none()) {
        return Err(BadInput(anyhow::anyhow!(
            "{}: --compliant: the scene has no deformable environment object",
            a.problem.display()
        ))
        .into());
    }
    let step = a.compliant_step.unwrap_or(1e-2 * loaded.robot.diagonal);
    let bar = segment_bar(a.progress, segments, "equilibria");
    let start = Instant::now();
    let c = haptics::check::compliant::check_compliant(scene, &loaded.path, step, &mut |i| {
        if let Some(b) = &bar {
            b.set_position(i as u64 + 1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok((c, start.elapsed().as_secs_f64()))
}

/// Prints the summary, the open-edges note and the compliant summary.
fn print_summary(a: &CheckArgs, loaded: &Loaded, o: &Outcome) {
    let (robot, world) = (&loaded.robot, &loaded.world);
    print!(
        "{}",
        summary(&loaded.name, o.report, a.min_clearance, o.passed)
    );
    if robot.open_edges > 0 || world.open_edges > 0 {
        println!(
            "  note            not closed: robot {} open edges, world {}; crossings, touching and\n                  depths are found, but --screenshot marks points inside closed meshes only",
            robot.open_edges, world.open_edges
        );
    }
    if let Some((c, seconds)) = o.compliant {
        print!("{}", compliant_summary(c, *seconds, a, o.segments));
    }
}

/// Writes the requested report, plot and screenshot.
fn write_outputs(a: &CheckArgs, loaded: &Loaded, o: &Outcome) -> anyhow::Result<()> {
    if let Some(p) = &a.report {
        write_report(p, a, loaded, o)?;
    }
    if let Some(p) = &a.plot {
        match o.compliant {
            Some((c, _)) => compliant_plot(p, c, o.segments)?,
            None => plot(p, o.report)?,
        }
        println!("plot -> {}", p.display());
    }
    if let Some(p) = &a.screenshot {
        let points = match (o.compliant, loaded.scene.as_ref()) {
            (Some((c, _)), Some(scene)) if c.max_force > 0.0 => {
                compliant_screenshot(p, scene, &loaded.path, c)?
            }
            _ => screenshot(p, loaded, o.report)?,
        };
        println!(
            "worst pose ({points} contact points marked) -> {}",
            p.display()
        );
    }
    Ok(())
}

/// Writes the JSON report to `p`.
fn write_report(p: &Path, a: &CheckArgs, loaded: &Loaded, o: &Outcome) -> anyhow::Result<()> {
    let context = ReportContext {
        name: &loaded.name,
        load_s: o.load_s,
        min_clearance: a.min_clearance,
        passed: o.passed,
        open_edges: (loaded.robot.open_edges, loaded.world.open_edges),
    };
    let mut json = report_json(o.report, &context);
    if let Some((c, seconds)) = o.compliant {
        json = add_compliant_json(&json, c, *seconds, a);
    }
    haptics::io::write_bytes_atomic(p, json.as_bytes())
        .with_context(|| format!("writing {}", p.display()))?;
    println!("report -> {}", p.display());
    Ok(())
}

/// The compliant part of the summary.
fn compliant_summary(
    c: &haptics::check::compliant::CompliantReport,
    seconds: f64,
    a: &CheckArgs,
    segments: usize,
) -> String {
    let at = |p: &PathPos| {
        format!(
            "segment {} t = {:.4} ({:.1}% of the path)",
            p.segment,
            p.t,
            100.0 * p.fraction(segments)
        )
    };
    let mut s = format!(
        "  compliant       {} equilibria (every {:.4} of motion), {:.3} s{}\n",
        c.samples.len(),
        c.step,
        seconds,
        if c.unconverged > 0 {
            format!(", {} NOT converged", c.unconverged)
        } else {
            String::new()
        }
    );
    s.push_str(&format!(
        "  max force       {:.4} N at {}\n",
        c.max_force,
        at(&c.max_force_at)
    ));
    s.push_str(&format!(
        "  max displacement {:.4} of {} at {}, at ({:.3}, {:.3}, {:.3})\n",
        c.max_displacement,
        c.max_displacement_object,
        at(&c.max_displacement_at),
        c.max_displacement_point.x,
        c.max_displacement_point.y,
        c.max_displacement_point.z
    ));
    s.push_str(&format!(
        "  max depth       {:.4} (the penalty's compression)\n",
        c.max_depth
    ));
    if let Some(f) = a.max_force {
        s.push_str(&format!(
            "  force limit {f} N: {}\n",
            if c.max_force <= f { "met" } else { "NOT met" }
        ));
    }
    if let Some(d) = a.max_displacement {
        s.push_str(&format!(
            "  displacement limit {d}: {}\n",
            if c.max_displacement <= d {
                "met"
            } else {
                "NOT met"
            }
        ));
    }
    s
}

/// The report with the compliant figures added under `"compliant"`.
fn add_compliant_json(
    json: &str,
    c: &haptics::check::compliant::CompliantReport,
    seconds: f64,
    a: &CheckArgs,
) -> String {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
    let p = c.max_displacement_point;
    v["compliant"] = serde_json::json!({
        "max_force": num(c.max_force),
        "max_force_at": pos(&c.max_force_at),
        "max_displacement": num(c.max_displacement),
        "max_displacement_at": pos(&c.max_displacement_at),
        "max_displacement_object": c.max_displacement_object,
        "max_displacement_point": [num(p.x), num(p.y), num(p.z)],
        "max_depth": num(c.max_depth),
        "equilibria": c.samples.len(),
        "unconverged": c.unconverged,
        "step": num(c.step),
        "max_force_limit": a.max_force.map(num),
        "max_displacement_limit": a.max_displacement.map(num),
        "units": {"force": "N", "length": "the scene's unit"},
        "seconds": num(seconds),
    });
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

/// The compliant plot: contact force and largest displacement along the path.
fn compliant_plot(
    png: &Path,
    c: &haptics::check::compliant::CompliantReport,
    segments: usize,
) -> anyhow::Result<()> {
    let force = Series {
        name: "contact force (N)".into(),
        points: c
            .samples
            .iter()
            .map(|s| (s.at.fraction(segments), s.force))
            .collect(),
    };
    let scale = if c.max_displacement > 0.0 {
        c.max_force.max(1e-300) / c.max_displacement
    } else {
        1.0
    };
    let displacement = Series {
        name: format!("largest displacement x {scale:.4}"),
        points: c
            .samples
            .iter()
            .map(|s| (s.at.fraction(segments), s.displacement * scale))
            .collect(),
    };
    // Shade where the part touches a deformable object.
    let mut bands = Vec::new();
    let mut open: Option<f64> = None;
    for s in &c.samples {
        let x = s.at.fraction(segments);
        match (s.force > 0.0, open) {
            (true, None) => open = Some(x),
            (false, Some(from)) => {
                bands.push(Band { from, to: x });
                open = None;
            }
            _ => {}
        }
    }
    if let Some(from) = open {
        bands.push(Band { from, to: 1.0 });
    }
    shaded_line_plot(
        png,
        "Compliant check: contact force and displacement along the path",
        "path fraction",
        "force (N)",
        &[force, displacement],
        &bands,
        "in contact",
    )?;
    Ok(())
}

/// Renders the compliant check's state of largest force: the scene with its deformable
/// objects deformed, the part there, the points pressed into it marked.
fn compliant_screenshot(
    png: &Path,
    scene: &haptics::scene::Scene,
    path: &[State],
    c: &haptics::check::compliant::CompliantReport,
) -> anyhow::Result<usize> {
    use crate::render::{FrameState, GpuContext, Overlays, SceneRenderer, OFFSCREEN_FORMAT};
    let state = haptics::check::state_at(path, c.max_force_at);
    let ctx = GpuContext::headless()?;
    let mut renderer = SceneRenderer::new(&ctx.device, &ctx.queue, scene, OFFSCREEN_FORMAT)?;
    let camera = crate::ui::headless::default_camera(&renderer);
    let mut environment_q: Vec<Vec<f32>> = scene
        .environment
        .iter()
        .map(|e| vec![0.0; e.dynamics.as_ref().map_or(0, |d| d.r())])
        .collect();
    for (i, q) in &c.worst {
        environment_q[*i] = q.iter().map(|&x| x as f32).collect();
    }
    let frame = FrameState {
        haptic_pose: state.isometry().cast(),
        environment_q,
        contacts: markers(&c.worst_contacts),
        ..FrameState::default()
    };
    let overlays = Overlays {
        ghost: false,
        ..Overlays::for_scene(scene)
    };
    render_png(png, &ctx, &mut renderer, &frame, &camera, &overlays)?;
    Ok(c.worst_contacts.len())
}

/// Contact markers (crosses, no force arrows) at world points.
fn markers(points: &[nalgebra::Point3<f64>]) -> Vec<crate::render::ContactMarker> {
    points
        .iter()
        .map(|p| crate::render::ContactMarker {
            position: p.cast(),
            force: nalgebra::Vector3::zeros(),
        })
        .collect()
}

/// One 1280 x 720 offscreen frame, written to `png`.
pub fn render_png(
    png: &Path,
    ctx: &crate::render::GpuContext,
    renderer: &mut crate::render::SceneRenderer,
    frame: &crate::render::FrameState,
    camera: &crate::render::OrbitCamera,
    overlays: &crate::render::Overlays,
) -> anyhow::Result<()> {
    let image = crate::render::render_image(ctx, renderer, frame, camera, overlays, (1280, 720))?;
    image.write_png(png)?;
    Ok(())
}

/// Rigid render objects of world meshes (world coordinates, no deformation basis).
pub fn rigid_objects(meshes: &[(String, SurfaceMesh)]) -> Vec<crate::render::RenderObject<'_>> {
    meshes
        .iter()
        .map(|(name, mesh)| crate::render::RenderObject {
            name,
            mesh,
            basis: &[],
            r: 0,
            pose: nalgebra::Isometry3::identity(),
        })
        .collect()
}

/// Renders the worst pose of `report` to `png`; returns the number of points marked.
fn screenshot(png: &Path, l: &Loaded, report: &Report) -> anyhow::Result<usize> {
    use crate::render::renderer::objects_bounds;
    use crate::render::{
        FrameState, GpuContext, OrbitCamera, Overlays, RenderObject, SceneRenderer,
        OFFSCREEN_FORMAT,
    };
    let state = haptics::check::state_at(&l.path, report.min_clearance_at);
    let pose = state.isometry();
    let points = haptics::check::contact_points(&l.robot, &l.world, &pose, 500);
    let ctx = GpuContext::headless()?;
    let environment = rigid_objects(&l.world_meshes);
    let robot = RenderObject {
        name: "robot",
        mesh: &l.robot_mesh,
        basis: &[],
        r: 0,
        pose: nalgebra::Isometry3::identity(),
    };
    let mut renderer = SceneRenderer::from_objects(
        &ctx.device,
        &ctx.queue,
        &environment,
        &robot,
        OFFSCREEN_FORMAT,
    )?;
    // Framed on the robot where it is worst, with a robot's size of margin around it.
    let placed = RenderObject { pose, ..robot };
    let (lo, hi) = objects_bounds(std::iter::once(&placed));
    let margin = nalgebra::Vector3::repeat(0.5 * (hi - lo).norm());
    let camera = OrbitCamera::framing(lo - margin, hi + margin);
    let frame = FrameState {
        haptic_pose: pose.cast(),
        contacts: markers(&points),
        ..FrameState::default()
    };
    let overlays = Overlays {
        ghost: false,
        ..Overlays::default()
    };
    render_png(png, &ctx, &mut renderer, &frame, &camera, &overlays)?;
    Ok(points.len())
}

/// What a check runs on.
struct Loaded {
    robot: Robot,
    world: World,
    path: Vec<State>,
    name: String,
    /// The robot's surface in its own frame, and the world's objects in world
    /// coordinates (for the screenshot).
    robot_mesh: SurfaceMesh,
    world_meshes: Vec<(String, SurfaceMesh)>,
    /// The scene, for a scene's check (the compliant check needs its models).
    scene: Option<haptics::scene::Scene>,
}

fn load(a: &CheckArgs) -> anyhow::Result<Loaded> {
    if a.problem.extension().is_some_and(|e| e == "toml") {
        return load_scene(a);
    }
    if a.trajectory.is_some() {
        anyhow::bail!(
            "--trajectory needs a scene (.toml); for an OMPL problem ({}) give --path",
            a.problem.display()
        );
    }
    let LoadedProblem {
        problem,
        robot_mesh,
        world_mesh,
        ..
    } = load_problem(&a.problem)?;
    let robot = Robot::new(&robot_mesh);
    let world = World::new(&world_mesh);
    let path = match &a.path {
        Some(p) => read_path(p)?,
        None => vec![problem.start, problem.goal],
    };
    Ok(Loaded {
        robot,
        world,
        path,
        name: problem.name,
        robot_mesh,
        world_meshes: vec![("world".into(), world_mesh)],
        scene: None,
    })
}

/// A scene's environment objects placed at their poses (world coordinates), the
/// deformable ones left out when `rigid_only`.
pub fn scene_objects(
    scene: &haptics::scene::Scene,
    rigid_only: bool,
) -> Vec<(String, SurfaceMesh)> {
    scene
        .environment
        .iter()
        .filter(|e| !(rigid_only && e.dynamics.is_some()))
        .map(|e| {
            let mesh = SurfaceMesh {
                vertices: e.surface.vertices.iter().map(|v| e.pose * v).collect(),
                triangles: e.surface.triangles.clone(),
            };
            (e.name.clone(), mesh)
        })
        .collect()
}

/// A scene: the haptic object (its surface, body frame) moves along the trajectory
/// mapped through the workspace, or along `--path` body poses; the environment objects'
/// surfaces, placed at their poses, are the world (deformable ones at rest).
fn load_scene(a: &CheckArgs) -> anyhow::Result<Loaded> {
    let scene = super::replay::load_with_progress(&a.problem, &a.cache)?;
    let robot = Robot::new(&scene.haptic.surface);
    // Compliant: the deformable objects give way, the rigid ones are checked.
    let objects = scene_objects(&scene, a.compliant);
    let world = World::from_objects(&objects);
    let path = match (&a.trajectory, &a.path) {
        (Some(t), _) => trajectory_states(&scene, t)?,
        (None, Some(p)) => read_path(p)?,
        (None, None) => anyhow::bail!(
            "{}: a scene needs --trajectory TRAJ.csv or --path P.path to check",
            a.problem.display()
        ),
    };
    Ok(Loaded {
        robot,
        world,
        path,
        name: scene.name.clone(),
        robot_mesh: scene.haptic.surface.clone(),
        world_meshes: objects,
        scene: Some(scene),
    })
}

/// The haptic object's body-frame poses along a recorded stylus trajectory (CSV, device
/// metres), mapped through the scene's workspace (scale, grasp frame, clutch).
pub fn trajectory_states(scene: &haptics::scene::Scene, t: &Path) -> anyhow::Result<Vec<State>> {
    let traj = haptics_devices::trajectory::read_trajectory(t)?;
    let grasp = nalgebra::Translation3::from(scene.haptic.grasp.coords);
    let mut workspace = haptics::coupling::workspace::Workspace::new(
        scene.workspace_scale,
        scene.haptic.pose * grasp,
    );
    let mut states = Vec::with_capacity(traj.samples.len());
    let clutch_mask = haptics_devices::SafetySettings::default().clutch_mask();
    for (i, s) in traj.samples.iter().enumerate() {
        let clutch = s.buttons & clutch_mask != 0;
        let m = workspace
            .try_manipulandum(&s.pose.isometry(), clutch)
            .with_context(|| format!("{}: sample {} maps outside the scene", t.display(), i + 1))?;
        let body = m * grasp.inverse();
        states.push(State::new(body.translation.vector, body.rotation));
    }
    if states.is_empty() {
        anyhow::bail!("{}: the trajectory has no samples", t.display());
    }
    Ok(states)
}

/// The one-screen summary.
pub fn summary(name: &str, r: &Report, min_clearance: Option<f64>, passed: bool) -> String {
    let segments = r.states.saturating_sub(1);
    let mut s = format!(
        "{name}: {} ({} states, {} distance evaluations, {} interval sweeps, {:.3} s)\n",
        if r.collision_free {
            "collision-free"
        } else {
            "COLLIDES"
        },
        r.states,
        r.evaluations,
        r.sweeps,
        r.seconds
    );
    if !r.min_clearance.is_finite() {
        s.push_str("  min clearance   none: no rigid object in the world\n");
    } else {
        s.push_str(&format!(
        "  min clearance   {:.6} at segment {} t = {:.4} ({:.1}% of the path); tolerance {:.3e}\n",
        r.min_clearance + 0.0, // no "-0.000000" when touching
        r.min_clearance_at.segment,
        r.min_clearance_at.t,
        100.0 * r.min_clearance_at.fraction(segments),
        r.tolerance
    ));
    }
    if let Some(f) = &r.first_collision {
        s.push_str(&format!(
            "  first contact   segment {} t = {:.6} ({:.2}% of the path)\n  max penetration {:.6} (translational depth{})\n  contacts        {} interval(s)\n",
            f.segment,
            f.t,
            100.0 * f.fraction(segments),
            r.max_penetration,
            r.deepest.map_or(String::new(), |d| format!(
                " at segment {} t = {:.4}, to separate along ({:.3}, {:.3}, {:.3})",
                d.at.segment, d.at.t, d.direction.x, d.direction.y, d.direction.z
            )),
            r.contacts.len()
        ));
    }
    if let Some(m) = min_clearance {
        s.push_str(&format!(
            "  required clearance {m}: {}\n",
            if passed { "met" } else { "NOT met" }
        ));
    }
    if r.incomplete {
        s.push_str("  INCOMPLETE: the evaluation budget ran out before the end of the path\n");
    }
    s.push_str(&format!(
        "  robot radius {:.4}, bounding-box diagonal {:.4}\n",
        r.robot_radius, r.robot_diagonal
    ));
    s
}

pub fn plot(png: &Path, r: &Report) -> anyhow::Result<()> {
    let segments = r.states.saturating_sub(1);
    let clearance = Series {
        name: "clearance (minus penetration)".into(),
        points: r
            .samples
            .iter()
            .filter(|s| s.clearance.is_finite())
            .map(|s| (s.at.fraction(segments), s.clearance))
            .collect(),
    };
    let tol = Series {
        name: "tolerance".into(),
        points: vec![(0.0, r.tolerance), (1.0, r.tolerance)],
    };
    let contacts: Vec<Band> = r
        .contacts
        .iter()
        .map(|c| Band {
            from: c.from.fraction(segments),
            to: c.to.fraction(segments),
        })
        .collect();
    shaded_line_plot(
        png,
        "Clearance along the path",
        "path fraction",
        "clearance",
        &[clearance, tol],
        &contacts,
        "in contact",
    )?;
    Ok(())
}
