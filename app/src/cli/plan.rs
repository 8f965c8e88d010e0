//! `haptics plan`: plan a collision-free path for a rigid part ([`haptics::plan`]) on an
//! OMPL.app problem or one of our scenes, and write it as an OMPL `.path`.
//!
//! Exit status: 0 solved, 1 not solved within the time limit, 2 bad input (the message
//! says which: a file, a start outside the bounds, a goal in collision...).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use haptics::check::ompl::{format_path, read_path};
use haptics::check::{Robot, World};
use haptics::mesh::SurfaceMesh;
use haptics::plan::space::Space;
use haptics::plan::{plan_checked, CheckedPlan, Plan, PlanOptions, Problem, Sampler};
use haptics::proximity::rigid::State;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use super::check::scene_objects;
use super::range;
use haptics::check::problem::{load_problem, LoadedProblem};
use haptics::plan::report::{plan_json, PlanContext};

/// Arguments of `haptics plan`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  haptics plan Twistycool.cfg --out twistycool.path --report r.json --plot clearance.png
  haptics plan assets/scenes/alpha-puzzle.toml --goal 0,0,0.9 --out alpha.path
  haptics plan Twistycool.cfg --guide rough.path --out twistycool.path

The path file lists the robot's states, `x y z qx qy qz qw` per line, start first and goal
last; `haptics check` and OMPL.app read it. Every motion between its states is certified
collision-free (continuous check, not sampled).

Exit status: 0 solved, 1 not solved within the time limit, 2 bad input.")]
pub struct PlanArgs {
    /// The problem: an OMPL.app `.cfg` (robot and world meshes, start, goal and `volume`
    /// bounds), or one of our scenes (`.toml`: the haptic object moves from its pose to
    /// --goal, the environment objects, at rest, are the world).
    pub problem: PathBuf,
    /// Where to write the path (OMPL `.path`).
    #[arg(
        long,
        required_unless_present = "benchmark",
        conflicts_with = "benchmark"
    )]
    pub out: Option<PathBuf>,
    /// Search time limit in seconds (default: the `.cfg`'s `[solver] time_limit`, else
    /// its `[benchmark] time_limit`, else 10).
    #[arg(long, value_parser = range::positive(1e6))]
    pub time_limit: Option<f64>,
    /// Random seed: a single-threaded run with a seed reproduces its path bit for bit.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Parallel restarts (thread k seeded with seed + k); the first solution wins.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub threads: u64,
    /// The start state, `x,y,z` or `x,y,z,qx,qy,qz,qw` (default: the problem's start,
    /// or the scene's haptic object pose).
    #[arg(long, allow_hyphen_values = true)]
    pub start: Option<String>,
    /// The goal state, `x,y,z` or `x,y,z,qx,qy,qz,qw` (for a scene: required, unless
    /// --guide gives it).
    #[arg(long, allow_hyphen_values = true)]
    pub goal: Option<String>,
    /// The box of positions, `xmin,ymin,zmin,xmax,ymax,zmax` (default: the `.cfg`'s
    /// `volume`, else the world's bounding box with the start and goal, grown by the
    /// robot's radius).
    #[arg(long, allow_hyphen_values = true)]
    pub bounds: Option<String>,
    /// A rough path to bias the search around: an OMPL `.path` (the application's
    /// "Guide path" export, the held object's poses dragged through the scene with force
    /// feedback), or for a scene a recorded stylus trajectory (`.csv`), mapped through
    /// its workspace. For a scene, its last state is the default goal.
    #[arg(long)]
    pub guide: Option<PathBuf>,
    /// The clearance a state needs, in the problem's units (default: 0.2% of the robot's
    /// bounding-box diagonal); motions keep three quarters of it.
    #[arg(long, value_parser = range::positive(1e9))]
    pub clearance: Option<f64>,
    /// Halve the clearance every 5,000 samples while no path is found, 8 times at most
    /// (to 1/256 of it): for passages narrower than the clearance, such as the alpha
    /// puzzles'. Off by default: where the default clearance opens the way, a smaller
    /// one slows the search.
    #[arg(long)]
    pub relax_clearance: bool,
    /// The base tree step, in robot-point motion (default: 3% of the space's extent:
    /// the box's diagonal plus half a turn of the robot's radius): the step near
    /// obstacles and after sliding along one.
    #[arg(long, value_parser = range::positive(1e9))]
    pub range: Option<f64>,
    /// The longest tree step (default: the space's extent). A state reached by a free
    /// step tries twice that step next, up to this; a blocked long step falls back to
    /// the base step. Equal to --range, every step is the base step.
    #[arg(long, value_parser = range::positive(1e9))]
    pub max_range: Option<f64>,
    /// The weight of a turn in the trees' metric, as a fraction of the robot's radius R
    /// (steps and nearest neighbours measure |dp| + w R theta). Below 1 the trees turn
    /// more per step and pick neighbours by position; motions are still certified with
    /// the true bound (w = 1), and path lengths reported in it.
    #[arg(long, default_value_t = haptics::plan::DEFAULT_ROTATION_WEIGHT, value_parser = range::positive(1e3))]
    pub rotation_weight: f64,
    /// Shortcut attempts of the path simplification (0: the raw tree path).
    #[arg(long, default_value_t = 100)]
    pub shortcuts: usize,
    /// The samples the trees grow towards: uniform (the fastest on OMPL.app's problems,
    /// with the trees sliding along contacts), obstacle (on the free space's boundary),
    /// bridge (in narrow passages), or mixed.
    #[arg(long, value_enum, default_value = "uniform")]
    pub sampler: SamplerArg,
    /// No corridor. Without --guide, the planner first searches the world's distance
    /// field for the way with the widest passages for the robot's centre; when that way
    /// is a detour (a building's rooms and doors), 70% of the samples follow it as they
    /// would a guide. This turns that off.
    #[arg(long)]
    pub no_corridor: bool,
    /// Write a report as JSON (solved, times, states explored, path length, clearance).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Plot the clearance along the planned path to this PNG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Render the planned path to this PNG: the world and the robot at states along the
    /// path. Needs a GPU adapter (software Vulkan will do).
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Cache directory for a scene's baked fields and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
    /// No progress display.
    #[arg(long)]
    pub quiet: bool,
    /// Run N plans, seeds --seed to --seed + N - 1, each certified by the path check,
    /// and write them as OMPL's benchmark log to --out-log (the input of
    /// ompl_benchmark_statistics.py and Planner Arena).
    #[arg(long, value_name = "N", requires = "out_log", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub benchmark: Option<u64>,
    /// With --benchmark: the benchmark log to write.
    #[arg(long, value_name = "RUNS.log", requires = "benchmark")]
    pub out_log: Option<PathBuf>,
}

/// `--sampler`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SamplerArg {
    /// Uniform in the box and on SO(3).
    Uniform,
    /// On the free space's boundary.
    Obstacle,
    /// Bridge test (narrow passages).
    Bridge,
    /// Half uniform, 30% obstacle, 20% bridge.
    Mixed,
}

/// What a plan runs on.
struct Loaded {
    name: String,
    robot: Robot,
    world: World,
    robot_mesh: SurfaceMesh,
    world_meshes: Vec<(String, SurfaceMesh)>,
    start: Option<State>,
    goal: Option<State>,
    volume: Option<(Vector3<f64>, Vector3<f64>)>,
    time_limit: Option<f64>,
    scene: Option<haptics::scene::Scene>,
}

/// Runs the command: `Ok(true)` solved, `Ok(false)` not solved in time; errors are bad
/// input (exit 2).
pub fn run(a: &PlanArgs) -> anyhow::Result<bool> {
    let loaded = load(a)?;
    let guide = read_guide(a, &loaded)?;
    let (start, goal) = endpoints(a, &loaded, &guide)?;
    let (min, max) = match &a.bounds {
        Some(b) => parse_bounds(b).context("--bounds")?,
        None => loaded.volume.unwrap_or_else(|| {
            let s = Space::around(&loaded.world, &loaded.robot, &start, &goal);
            (s.min, s.max)
        }),
    };
    let problem = Problem {
        robot: &loaded.robot,
        world: &loaded.world,
        space: Space {
            min,
            max,
            radius: loaded.robot.radius,
        },
        start,
        goal,
    };
    let time_limit = a.time_limit.or(loaded.time_limit).unwrap_or(10.0);
    let options = plan_options(a, time_limit, guide);
    if let (Some(n), Some(log)) = (a.benchmark, &a.out_log) {
        return plan_benchmark(a, &loaded.name, &problem, options, n, log);
    }
    let (planned, total) = plan_with_progress(a, &problem, &options, time_limit)?;
    let CheckedPlan {
        plan: result,
        check,
    } = planned;
    print!(
        "{}",
        summary(&loaded.name, &result, check.as_ref(), time_limit, a)
    );
    write_outputs(a, &loaded, &result, check.as_ref(), time_limit, total)?;
    Ok(result.solved)
}

/// The `--guide` states: an OMPL `.path` or a scene's trajectory (`.csv`), else none.
fn read_guide(a: &PlanArgs, loaded: &Loaded) -> anyhow::Result<Vec<State>> {
    Ok(match &a.guide {
        Some(p) if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) => {
            let Some(scene) = &loaded.scene else {
                anyhow::bail!(
                    "{}: a trajectory guide (.csv) needs a scene (.toml) to map it through; for an OMPL problem give an OMPL .path",
                    p.display()
                );
            };
            super::check::trajectory_states(scene, p)?
        }
        Some(p) => read_path(p)?,
        None => Vec::new(),
    })
}

/// The start and goal: the arguments', else the problem's, else the guide's last state.
fn endpoints(a: &PlanArgs, loaded: &Loaded, guide: &[State]) -> anyhow::Result<(State, State)> {
    let start = match &a.start {
        Some(s) => parse_state(s).context("--start")?,
        None => loaded.start.context(
            "no start state: give --start x,y,z[,qx,qy,qz,qw] (the scene has no haptic object pose)",
        )?,
    };
    let goal = match &a.goal {
        Some(s) => parse_state(s).context("--goal")?,
        // A scene's goal: where the guide ends (the user dragged the part there).
        None => match (loaded.goal, guide.last()) {
            (Some(g), _) => g,
            (None, Some(g)) => *g,
            (None, None) => anyhow::bail!(
                "{}: a scene has no goal: give --goal x,y,z[,qx,qy,qz,qw] or a --guide path (its last state)",
                a.problem.display()
            ),
        },
    };
    Ok((start, goal))
}

/// The planner's options from the arguments, `time_limit` and the `guide` states.
fn plan_options(a: &PlanArgs, time_limit: f64, guide: Vec<State>) -> PlanOptions {
    PlanOptions {
        time_limit,
        seed: a.seed,
        threads: a.threads as usize,
        clearance: a.clearance,
        relax_clearance: a.relax_clearance,
        range: a.range,
        max_range: a.max_range,
        rotation_weight: a.rotation_weight,
        guide,
        shortcuts: a.shortcuts,
        sampler: match a.sampler {
            SamplerArg::Uniform => Sampler::Uniform,
            SamplerArg::Obstacle => Sampler::Obstacle,
            SamplerArg::Bridge => Sampler::Bridge,
            SamplerArg::Mixed => Sampler::Mixed,
        },
        corridor: !a.no_corridor,
        cancel: None,
    }
}

/// Plans and checks the path behind a spinner; returns it and the seconds it took.
fn plan_with_progress(
    a: &PlanArgs,
    problem: &Problem,
    options: &PlanOptions,
    time_limit: f64,
) -> anyhow::Result<(CheckedPlan, f64)> {
    let bar = (!a.quiet).then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} planning {msg} {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b
    });
    let progress = |p: haptics::plan::Progress| {
        if let Some(b) = &bar {
            b.set_message(format!(
                "{} states, {:.1} of {:.0} s",
                p.states, p.seconds, time_limit
            ));
            b.tick();
        }
    };
    let t0 = Instant::now();
    // The planned path is certified by the path check: the report's clearance, and a
    // guard (a path it finds colliding is an error).
    let planned = plan_checked(problem, options, &progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let planned = planned.map_err(|e| anyhow::anyhow!("{}: {e}", a.problem.display()))?;
    let total = t0.elapsed().as_secs_f64();
    Ok((planned, total))
}

/// Writes the path, the report, the clearance plot and the screenshot asked for.
fn write_outputs(
    a: &PlanArgs,
    loaded: &Loaded,
    result: &Plan,
    check: Option<&haptics::check::Report>,
    time_limit: f64,
    total: f64,
) -> anyhow::Result<()> {
    if let (true, Some(out)) = (result.solved, &a.out) {
        haptics::io::write_bytes_atomic(out, format_path(&result.path).as_bytes())
            .with_context(|| format!("writing {}", out.display()))?;
        println!("path -> {}", out.display());
    }
    if let Some(p) = &a.report {
        let context = PlanContext {
            name: &loaded.name,
            time_limit,
            total_s: total,
            seed: a.seed,
            threads: a.threads as usize,
            guided: a.guide.is_some(),
        };
        let json = plan_json(result, check, &context);
        haptics::io::write_bytes_atomic(p, json.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
        println!("report -> {}", p.display());
    }
    if let (Some(p), Some(c)) = (&a.plot, check) {
        super::check::plot(p, c)?;
        println!("plot -> {}", p.display());
    }
    if let Some(p) = &a.screenshot {
        if result.solved {
            screenshot(p, loaded, &result.path)?;
            println!("planned path -> {}", p.display());
        }
    }
    Ok(())
}

/// `--benchmark N`: N seeded plans, each checked, written as OMPL's benchmark log.
/// `Ok(true)` when every run solved.
fn plan_benchmark(
    a: &PlanArgs,
    name: &str,
    problem: &Problem,
    options: PlanOptions,
    runs: u64,
    log: &Path,
) -> anyhow::Result<bool> {
    let bar = (!a.quiet).then(|| {
        let b = indicatif::ProgressBar::new(runs);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "benchmark {bar:40} {pos}/{len} runs {msg} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let setup = format!("haptics plan {}", a.problem.display());
    let benchmark = haptics::plan::benchmark::run_benchmark(
        name,
        &setup,
        problem,
        &options,
        runs,
        &mut |done| {
            if let Some(b) = &bar {
                let solved = done.iter().filter(|r| r.solved).count();
                b.set_message(format!("{solved} solved"));
                b.inc(1);
            }
        },
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", a.problem.display()))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    haptics::io::write_bytes_atomic(log, benchmark.log().as_bytes())
        .with_context(|| format!("writing {}", log.display()))?;
    print!("{}", benchmark.summary());
    println!("benchmark log -> {}", log.display());
    Ok(benchmark.runs.iter().all(|r| r.solved))
}

fn load(a: &PlanArgs) -> anyhow::Result<Loaded> {
    if a.problem.extension().is_some_and(|e| e == "toml") {
        let scene = super::replay::load_with_progress(&a.problem, &a.cache)?;
        let objects = scene_objects(&scene, false);
        let pose = scene.haptic.pose;
        return Ok(Loaded {
            name: scene.name.clone(),
            robot: Robot::new(&scene.haptic.surface),
            world: World::from_objects(&objects),
            robot_mesh: scene.haptic.surface.clone(),
            world_meshes: objects,
            start: Some(State::new(pose.translation.vector, pose.rotation)),
            goal: None,
            volume: None,
            time_limit: None,
            scene: Some(scene),
        });
    }
    let LoadedProblem {
        problem,
        robot_mesh,
        world_mesh,
        time_limit,
        ..
    } = load_problem(&a.problem)?;
    Ok(Loaded {
        name: problem.name.clone(),
        robot: Robot::new(&robot_mesh),
        world: World::new(&world_mesh),
        robot_mesh,
        world_meshes: vec![("world".into(), world_mesh)],
        start: Some(problem.start),
        goal: Some(problem.goal),
        volume: problem.volume,
        time_limit,
        scene: None,
    })
}

/// `x,y,z` (identity orientation) or `x,y,z,qx,qy,qz,qw` (normalized; OMPL's order).
pub fn parse_state(s: &str) -> anyhow::Result<State> {
    let v = numbers(s)?;
    let q = match v.len() {
        3 => UnitQuaternion::identity(),
        7 => {
            let q = Quaternion::new(v[6], v[3], v[4], v[5]);
            if q.norm() < 1e-9 {
                anyhow::bail!("'{s}': the quaternion (qx,qy,qz,qw) is zero");
            }
            UnitQuaternion::from_quaternion(q)
        }
        n => anyhow::bail!("'{s}': expected 3 numbers (x,y,z) or 7 (x,y,z,qx,qy,qz,qw), found {n}"),
    };
    Ok(State::new(Vector3::new(v[0], v[1], v[2]), q))
}

/// `xmin,ymin,zmin,xmax,ymax,zmax`.
pub fn parse_bounds(s: &str) -> anyhow::Result<(Vector3<f64>, Vector3<f64>)> {
    let v = numbers(s)?;
    if v.len() != 6 {
        anyhow::bail!(
            "'{s}': expected 6 numbers (xmin,ymin,zmin,xmax,ymax,zmax), found {}",
            v.len()
        );
    }
    let (min, max) = (
        Vector3::new(v[0], v[1], v[2]),
        Vector3::new(v[3], v[4], v[5]),
    );
    if (0..3).any(|k| min[k] > max[k]) {
        anyhow::bail!("'{s}': a lower bound exceeds its upper bound");
    }
    Ok((min, max))
}

fn numbers(s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .with_context(|| format!("'{s}': '{}' is not a finite number", x.trim()))
        })
        .collect()
}

fn summary(
    name: &str,
    r: &Plan,
    check: Option<&haptics::check::Report>,
    time_limit: f64,
    a: &PlanArgs,
) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{name}: {}\n",
        if r.solved {
            "SOLVED".to_string()
        } else {
            format!("NOT SOLVED within {time_limit} s")
        }
    ));
    s.push_str(&format!(
        "  search          {:.3} s, {} states, {} samples (seed {}, {} thread{})\n",
        r.solve_seconds,
        r.states,
        r.samples,
        a.seed,
        a.threads,
        if a.threads == 1 { "" } else { "s" }
    ));
    let relaxed = if r.clearance < r.initial_clearance {
        format!(" (relaxed from {:.4})", r.initial_clearance)
    } else {
        String::new()
    };
    s.push_str(&format!(
        "  validity        {} distance queries, {} motions ({} refused), {} sweeps; clearance {:.4}{relaxed}, step {:.4} to {:.4}, turns weighed {} R\n",
        r.work.queries, r.work.motions, r.work.refused, r.work.sweeps, r.clearance, r.range, r.max_range, r.rotation_weight
    ));
    if !r.solved && a.clearance.is_none() && !a.relax_clearance {
        // The default clearance closes every passage narrower than about twice its
        // value (OMPL.app's alpha-1.2 is solved at a three-hundredth of it, not at it).
        s.push_str(&format!(
            "  hint            states keep the default clearance {:.4} from the world; a narrow passage may need --relax-clearance or a smaller --clearance (try {:.4})\n",
            r.clearance,
            0.01 * r.clearance
        ));
    }
    if let Some(c) = &r.corridor {
        s.push_str(&format!(
            "  corridor        {}: {} cells of side {:.4} expanded, {} point queries, {:.3} s\n",
            if c.found {
                format!(
                    "width {:.4}, length {:.4}, {}",
                    c.width,
                    c.length,
                    if c.guided {
                        "guided the samples"
                    } else {
                        "about straight, not used"
                    }
                )
            } else {
                "none".to_string()
            },
            c.expanded,
            c.side,
            c.queries,
            c.seconds
        ));
    }
    if r.solved {
        s.push_str(&format!(
            "  path            {} states, length {:.4} ({} states, {:.4} before {:.3} s of shortcuts)\n",
            r.path.len(),
            r.length,
            r.raw_states,
            r.raw_length,
            r.simplify_seconds
        ));
    }
    if let Some(c) = check {
        s.push_str(&format!(
            "  check           collision-free, min clearance {:.6} (continuous, tolerance {:.2e})\n",
            c.min_clearance, c.tolerance
        ));
    }
    s
}

/// Renders the world and the robot at four states along `path` (equally spaced in
/// length, the start and the goal included).
fn screenshot(png: &Path, l: &Loaded, path: &[State]) -> anyhow::Result<()> {
    use crate::render::renderer::objects_bounds;
    use crate::render::{
        FrameState, GpuContext, OrbitCamera, Overlays, RenderObject, SceneRenderer,
        OFFSCREEN_FORMAT,
    };
    let space_len: Vec<f64> = path
        .windows(2)
        .map(|w| haptics::proximity::rigid::motion_bound(&w[0], &w[1], l.robot.radius))
        .collect();
    let total: f64 = space_len.iter().sum();
    let copies = 4;
    let mut poses = Vec::new();
    for k in 0..copies {
        let mut at = total * k as f64 / (copies - 1) as f64;
        let mut state = *path.last().unwrap_or(&path[0]);
        for (i, len) in space_len.iter().enumerate() {
            if at <= *len || i + 1 == space_len.len() {
                state = path[i].interpolate(&path[i + 1], (at / len.max(1e-300)).min(1.0));
                break;
            }
            at -= len;
        }
        poses.push(state.isometry());
    }
    let ctx = GpuContext::headless()?;
    let mut environment = super::check::rigid_objects(&l.world_meshes);
    let copy_names: Vec<String> = (0..poses.len()).map(|k| format!("robot {k}")).collect();
    for (pose, name) in poses.iter().zip(&copy_names).skip(1) {
        environment.push(RenderObject {
            name,
            mesh: &l.robot_mesh,
            basis: &[],
            r: 0,
            pose: *pose,
        });
    }
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
    let (lo, hi) = objects_bounds(environment.iter());
    let camera = OrbitCamera::framing(lo, hi);
    let frame = FrameState {
        haptic_pose: poses[0].cast(),
        ..FrameState::default()
    };
    let overlays = Overlays {
        ghost: false,
        ..Overlays::default()
    };
    super::check::render_png(png, &ctx, &mut renderer, &frame, &camera, &overlays)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_bounds_parse_or_say_why_not() {
        let s = parse_state("1, 2, 3").unwrap();
        assert_eq!(s.position, Vector3::new(1.0, 2.0, 3.0));
        let s = parse_state("0,0,0,0,0,1,1").unwrap();
        assert!((s.orientation.angle() - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let e = format!("{:#}", parse_state("1,2").unwrap_err());
        assert!(e.contains("expected 3 numbers"), "{e}");
        let e = format!("{:#}", parse_state("1,x,3").unwrap_err());
        assert!(e.contains("'x' is not a finite number"), "{e}");
        let e = format!("{:#}", parse_state("1,2,3,0,0,0,0").unwrap_err());
        assert!(e.contains("quaternion"), "{e}");
        let (lo, hi) = parse_bounds("-1,-2,-3,1,2,3").unwrap();
        assert_eq!((lo.x, hi.z), (-1.0, 3.0));
        let e = format!("{:#}", parse_bounds("1,0,0,0,1,1").unwrap_err());
        assert!(e.contains("exceeds"), "{e}");
    }
}
