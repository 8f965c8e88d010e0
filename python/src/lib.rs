//! `haptics._haptics`: the Rust half of the Python package. The public API, its
//! docstrings and its NumPy conversions live in `haptics/__init__.py`; this module takes
//! and returns plain values (bytes of little-endian float64 for arrays, JSON text for
//! reports) and calls the core exactly as the command line does, so that both give the
//! same reports and paths.

mod bake;
mod errors;
mod muscle;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use haptics::check::problem::{load_problem, read_mesh, LoadedProblem};
use haptics::check::report::{report_json, ReportContext};
use haptics::check::{check_path, open_edges, CheckOptions, Robot, World};
use haptics::mesh::SurfaceMesh;
use haptics::plan::report::{plan_json, PlanContext};
use haptics::plan::space::Space;
use haptics::plan::{plan_checked, CheckedPlan, PlanError, PlanOptions, Sampler};
use haptics::progress::{Cancel, NoProgress};
use haptics::proximity::rigid::{State, QUATERNION_NORM_TOLERANCE};
use nalgebra::{Point3, Vector3};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use errors::{Failure, Kind};
use run::interruptible;

/// A problem: the robot (in its own frame), the world, the start and goal, the bounds.
#[pyclass(frozen, module = "haptics._haptics")]
struct Problem {
    name: String,
    robot: Arc<Robot>,
    world: Arc<World>,
    start: Option<State>,
    goal: Option<State>,
    bounds: Option<(Vector3<f64>, Vector3<f64>)>,
    time_limit: Option<f64>,
    origin: Point3<f64>,
    load_s: f64,
}

/// A state from `x y z qx qy qz qw`, checked as a `.path` file's line is
/// ([`State::from_ompl`]).
fn state_from(v: &[f64], what: &str) -> Result<State, Failure> {
    let v: &[f64; 7] = v.try_into().map_err(|_| {
        Failure::input(format!(
            "{what}: expected 7 numbers x, y, z, qx, qy, qz, qw, found {}",
            v.len()
        ))
    })?;
    if let Some(k) = v.iter().position(|x| !x.is_finite()) {
        return Err(Failure::input(format!(
            "{what}: expected finite numbers, found {} at index {k}",
            v[k]
        )));
    }
    State::from_ompl(v).map_err(|n| {
        Failure::input(format!(
            "{what}: expected a unit quaternion (norm within {QUATERNION_NORM_TOLERANCE} of 1), found norm {n}"
        ))
    })
}

/// Little-endian float64s from bytes.
fn floats(bytes: &[u8], what: &str) -> Result<Vec<f64>, Failure> {
    if !bytes.len().is_multiple_of(8) {
        return Err(Failure::input(format!(
            "{what}: {} bytes is not a whole number of float64 values",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

/// States from the bytes of an N x 7 float64 array.
fn states_from(bytes: &[u8], what: &str) -> Result<Vec<State>, Failure> {
    let v = floats(bytes, what)?;
    if v.is_empty() || v.len() % 7 != 0 {
        return Err(Failure::input(format!(
            "{what}: expected an N x 7 array of states (x, y, z, qx, qy, qz, qw), N >= 1, found {} numbers",
            v.len()
        )));
    }
    v.chunks_exact(7)
        .enumerate()
        .map(|(i, s)| state_from(s, &format!("{what}[{i}]")))
        .collect()
}

/// The bytes of an array of float64s.
pub(crate) fn float_bytes<'py>(
    py: Python<'py>,
    values: impl IntoIterator<Item = f64>,
) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.into_iter().flat_map(f64::to_le_bytes).collect();
    PyBytes::new(py, &bytes)
}

/// A surface from float64 vertex bytes (N x 3) and int64 triangle bytes (M x 3).
fn surface_from(vertices: &[u8], triangles: &[u8], what: &str) -> Result<SurfaceMesh, Failure> {
    let v = floats(vertices, &format!("{what} vertices"))?;
    if v.len() % 3 != 0 || v.is_empty() {
        return Err(Failure::input(format!(
            "{what} vertices: expected an N x 3 array, N >= 3, found {} numbers",
            v.len()
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(Failure::input(format!(
            "{what} vertices: expected finite coordinates"
        )));
    }
    if !triangles.len().is_multiple_of(24) || triangles.is_empty() {
        return Err(Failure::input(format!(
            "{what} triangles: expected an M x 3 array of int64 indices, M >= 1, found {} bytes",
            triangles.len()
        )));
    }
    let count = v.len() / 3;
    let mut tris = Vec::with_capacity(triangles.len() / 24);
    for (k, t) in triangles.chunks_exact(24).enumerate() {
        let mut tri = [0usize; 3];
        for (j, c) in t.chunks_exact(8).enumerate() {
            let i = i64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            if i < 0 || i as usize >= count {
                return Err(Failure::input(format!(
                    "{what} triangles[{k}]: vertex index {i} is out of range (the mesh has {count} vertices)"
                )));
            }
            tri[j] = i as usize;
        }
        tris.push(tri);
    }
    Ok(SurfaceMesh {
        vertices: v
            .chunks_exact(3)
            .map(|p| Point3::new(p[0], p[1], p[2]))
            .collect(),
        triangles: tris,
    })
}

/// A mesh argument: a file (read as the command line reads it, with OMPL.app's
/// origin) or arrays (taken as given, origin zero).
fn mesh_arg(
    path: Option<PathBuf>,
    arrays: Option<(Vec<u8>, Vec<u8>)>,
    what: &str,
) -> Result<(SurfaceMesh, Point3<f64>), Failure> {
    match (path, arrays) {
        (Some(p), _) => read_mesh(&p).map_err(Failure::from),
        (None, Some((v, t))) => Ok((surface_from(&v, &t, what)?, Point3::origin())),
        (None, None) => Err(Failure::input(format!(
            "{what}: give a mesh file or arrays"
        ))),
    }
}

#[pymethods]
impl Problem {
    /// Reads an OMPL.app `.cfg` and its meshes (see `haptics.Problem.from_cfg`).
    #[staticmethod]
    fn from_cfg(py: Python<'_>, path: PathBuf) -> PyResult<Problem> {
        let cancel = Cancel::new();
        interruptible(py, &cancel, || {
            let t0 = Instant::now();
            let LoadedProblem {
                problem,
                robot_mesh,
                world_mesh,
                origin,
                time_limit,
            } = load_problem(&path)?;
            Ok(Problem {
                name: problem.name,
                robot: Arc::new(Robot::new(&robot_mesh)),
                world: Arc::new(World::new(&world_mesh)),
                start: Some(problem.start),
                goal: Some(problem.goal),
                bounds: problem.volume,
                time_limit,
                origin,
                load_s: t0.elapsed().as_secs_f64(),
            })
        })
    }

    /// A problem from meshes (files or arrays); see `haptics.Problem`.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (name, robot_path, robot_arrays, world_path, world_arrays, start, goal, bounds))]
    fn from_parts(
        py: Python<'_>,
        name: String,
        robot_path: Option<PathBuf>,
        robot_arrays: Option<(Vec<u8>, Vec<u8>)>,
        world_path: Option<PathBuf>,
        world_arrays: Option<(Vec<u8>, Vec<u8>)>,
        start: Option<Vec<f64>>,
        goal: Option<Vec<f64>>,
        bounds: Option<([f64; 3], [f64; 3])>,
    ) -> PyResult<Problem> {
        let cancel = Cancel::new();
        interruptible(py, &cancel, || {
            let t0 = Instant::now();
            let (robot_mesh, origin) = mesh_arg(robot_path, robot_arrays, "robot")?;
            let (world_mesh, _) = mesh_arg(world_path, world_arrays, "world")?;
            let bounds = match bounds {
                Some((lo, hi)) => {
                    let (lo, hi) = (Vector3::from(lo), Vector3::from(hi));
                    if (0..3).any(|k| lo[k].partial_cmp(&hi[k]) != Some(std::cmp::Ordering::Less)) {
                        return Err(Failure::input(format!(
                            "bounds: expected min < max on every axis, found {lo:?} .. {hi:?}"
                        )));
                    }
                    Some((lo, hi))
                }
                None => None,
            };
            Ok(Problem {
                name,
                robot: Arc::new(Robot::new(&haptics::check::robot_origin(
                    &robot_mesh,
                    &origin,
                ))),
                world: Arc::new(World::new(&world_mesh)),
                start: start.map(|s| state_from(&s, "start")).transpose()?,
                goal: goal.map(|s| state_from(&s, "goal")).transpose()?,
                bounds,
                time_limit: None,
                origin,
                load_s: t0.elapsed().as_secs_f64(),
            })
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }
    #[getter]
    fn start(&self) -> Option<[f64; 7]> {
        self.start.as_ref().map(State::to_ompl)
    }
    #[getter]
    fn goal(&self) -> Option<[f64; 7]> {
        self.goal.as_ref().map(State::to_ompl)
    }
    #[getter]
    fn bounds(&self) -> Option<([f64; 3], [f64; 3])> {
        self.bounds.map(|(a, b)| (a.into(), b.into()))
    }
    #[getter]
    fn time_limit(&self) -> Option<f64> {
        self.time_limit
    }
    #[getter]
    fn robot_origin(&self) -> [f64; 3] {
        self.origin.coords.into()
    }
    #[getter]
    fn robot_radius(&self) -> f64 {
        self.robot.radius
    }
    #[getter]
    fn robot_diagonal(&self) -> f64 {
        self.robot.diagonal
    }
    #[getter]
    fn load_seconds(&self) -> f64 {
        self.load_s
    }
    /// The distance from the robot at `state` to the world (minus the penetration depth
    /// when they intersect).
    fn clearance(&self, state: Vec<f64>) -> PyResult<f64> {
        let s = state_from(&state, "state")?;
        Ok(haptics::check::clearance(&self.robot, &self.world, &s))
    }
}

/// Checks a path; returns the JSON report (as `haptics check --report` writes it) and
/// the samples (segment, t, clearance, lower bound per row).
#[pyfunction]
#[pyo3(signature = (problem, states, tolerance=None, first_contact=false, min_clearance=None, max_evaluations=None))]
fn check<'py>(
    py: Python<'py>,
    problem: &Problem,
    states: Vec<u8>,
    tolerance: Option<f64>,
    first_contact: bool,
    min_clearance: Option<f64>,
    max_evaluations: Option<usize>,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let path = states_from(&states, "path")?;
    if let Some(t) = tolerance.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(
            Failure::input(format!("tolerance: expected a positive number, found {t}")).into(),
        );
    }
    if let Some(m) = min_clearance.filter(|m| !(m.is_finite() && *m >= 0.0)) {
        return Err(
            Failure::input(format!("min_clearance: expected a number >= 0, found {m}")).into(),
        );
    }
    let cancel = Cancel::new();
    let options = CheckOptions {
        tolerance,
        first_contact_only: first_contact,
        max_evaluations: max_evaluations.unwrap_or(CheckOptions::default().max_evaluations),
        cancel: Some(cancel.clone()),
    };
    let (robot, world) = (problem.robot.clone(), problem.world.clone());
    let report = interruptible(py, &cancel, || {
        Ok(check_path(&robot, &world, &path, &options, &mut |_| {}))
    })?;
    let clearance_ok =
        min_clearance.is_none_or(|m| report.collision_free && report.min_clearance >= m);
    let passed = report.collision_free && clearance_ok && !report.incomplete;
    let context = ReportContext {
        name: &problem.name,
        load_s: problem.load_s,
        min_clearance,
        passed,
        open_edges: (robot.open_edges, world.open_edges),
    };
    let samples = float_bytes(
        py,
        report
            .samples
            .iter()
            .flat_map(|s| [s.at.segment as f64, s.at.t, s.clearance, s.lower]),
    );
    Ok((report_json(&report, &context), samples))
}

/// The planner's arguments, one dict from Python (`haptics._plan_args`), named as
/// `haptics.plan`'s keywords.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct PlanArgs {
    start: Option<Vec<f64>>,
    goal: Option<Vec<f64>>,
    time_limit: Option<f64>,
    seed: u64,
    threads: usize,
    clearance: Option<f64>,
    relax_clearance: bool,
    range: Option<f64>,
    max_range: Option<f64>,
    rotation_weight: Option<f64>,
    shortcuts: usize,
    sampler: String,
    corridor: bool,
    guide: Option<Vec<u8>>,
}

/// A plan's inputs, checked and completed with the command line's defaults.
struct PlanSetup {
    space: Space,
    start: State,
    goal: State,
    options: PlanOptions,
}

/// Checks the plan arguments and fills in the defaults as `haptics plan` does: the
/// problem's start and goal, its bounds (else the world's box with the start and goal,
/// grown by the robot's radius), its time limit (else 10 s). The options carry a fresh
/// cancel token.
fn plan_setup(problem: &Problem, a: PlanArgs) -> Result<PlanSetup, Failure> {
    let start = match a.start {
        Some(s) => state_from(&s, "start")?,
        None => problem
            .start
            .ok_or_else(|| Failure::input("the problem has no start: give start="))?,
    };
    let goal = match a.goal {
        Some(s) => state_from(&s, "goal")?,
        None => problem
            .goal
            .ok_or_else(|| Failure::input("the problem has no goal: give goal="))?,
    };
    let guide = a
        .guide
        .map(|g| states_from(&g, "guide"))
        .transpose()?
        .unwrap_or_default();
    let sampler = match a.sampler.as_str() {
        "uniform" => Sampler::Uniform,
        "obstacle" => Sampler::Obstacle,
        "bridge" => Sampler::Bridge,
        "mixed" => Sampler::Mixed,
        other => {
            return Err(Failure::input(format!(
                "sampler: expected 'uniform', 'obstacle', 'bridge' or 'mixed', found '{other}'"
            )))
        }
    };
    if let Some(t) = a.time_limit.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(Failure::input(format!(
            "time_limit: expected a positive number of seconds, found {t}"
        )));
    }
    if a.threads == 0 {
        return Err(Failure::input("threads: expected at least 1"));
    }
    let (min, max) = problem.bounds.unwrap_or_else(|| {
        let s = Space::around(&problem.world, &problem.robot, &start, &goal);
        (s.min, s.max)
    });
    let options = PlanOptions {
        time_limit: a.time_limit.or(problem.time_limit).unwrap_or(10.0),
        seed: a.seed,
        threads: a.threads,
        clearance: a.clearance,
        relax_clearance: a.relax_clearance,
        range: a.range,
        max_range: a.max_range,
        rotation_weight: a
            .rotation_weight
            .unwrap_or(haptics::plan::DEFAULT_ROTATION_WEIGHT),
        guide,
        shortcuts: a.shortcuts,
        sampler,
        corridor: a.corridor,
        cancel: Some(Cancel::new()),
    };
    let space = Space {
        min,
        max,
        radius: problem.robot.radius,
    };
    Ok(PlanSetup {
        space,
        start,
        goal,
        options,
    })
}

impl Problem {
    fn plan_problem<'a>(&'a self, setup: &PlanSetup) -> haptics::plan::Problem<'a> {
        haptics::plan::Problem {
            robot: &self.robot,
            world: &self.world,
            space: setup.space,
            start: setup.start,
            goal: setup.goal,
        }
    }
}

/// Plans a path; returns (solved, path bytes N x 7, report JSON), as `haptics plan` does.
#[pyfunction]
fn plan_path<'py>(
    py: Python<'py>,
    problem: &Problem,
    args: PlanArgs,
) -> PyResult<(bool, Bound<'py, PyBytes>, String)> {
    let setup = plan_setup(problem, args)?;
    let cancel = setup.options.cancel.clone().unwrap_or_default();
    let (solved, path, json) = interruptible(py, &cancel, || {
        let t0 = Instant::now();
        let CheckedPlan { plan, check } =
            plan_checked(&problem.plan_problem(&setup), &setup.options, &|_| {})
                .map_err(plan_failure)?;
        let context = PlanContext {
            name: &problem.name,
            time_limit: setup.options.time_limit,
            total_s: t0.elapsed().as_secs_f64(),
            seed: setup.options.seed,
            threads: setup.options.threads,
            guided: !setup.options.guide.is_empty(),
        };
        let json = plan_json(&plan, check.as_ref(), &context);
        Ok((plan.solved, plan.path, json))
    })?;
    Ok((
        solved,
        float_bytes(py, path.iter().flat_map(|s| s.to_ompl())),
        json,
    ))
}

/// Runs `runs` seeded plans (seeds `args["seed"]` on) as `haptics plan --benchmark`
/// does; returns OMPL's benchmark log and a summary.
#[pyfunction]
fn benchmark(
    py: Python<'_>,
    problem: &Problem,
    runs: u64,
    args: PlanArgs,
) -> PyResult<(String, String)> {
    if runs == 0 {
        return Err(Failure::input("runs: expected at least 1").into());
    }
    let setup = plan_setup(problem, args)?;
    let cancel = setup.options.cancel.clone().unwrap_or_default();
    interruptible(py, &cancel, || {
        let b = haptics::plan::benchmark::run_benchmark(
            &problem.name,
            &format!("haptics.benchmark {}", problem.name),
            &problem.plan_problem(&setup),
            &setup.options,
            runs,
            &mut |_| {},
        )
        .map_err(plan_failure)?;
        Ok((b.log(), b.summary()))
    })
}

/// A planner's refusal: bad input, except a planned path the check rejects (a bug).
fn plan_failure(e: PlanError) -> Failure {
    match e {
        PlanError::FailsCheck { .. } => Failure::new(Kind::Internal, e.to_string()),
        _ => Failure::input(e.to_string()),
    }
}

/// A loaded scene (see `haptics.Scene`).
#[pyclass(frozen, module = "haptics._haptics")]
struct Scene {
    scene: haptics::scene::Scene,
}

#[pymethods]
impl Scene {
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf, cache: PathBuf) -> PyResult<Scene> {
        let cancel = Cancel::new();
        interruptible(py, &cancel, || {
            std::fs::create_dir_all(&cache).map_err(|e| {
                Failure::new(
                    Kind::Read,
                    format!("creating the cache directory {}: {e}", cache.display()),
                )
            })?;
            let scene = haptics::scene::load_scene(&path, &cache, &NoProgress)?;
            Ok(Scene { scene })
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.scene.name
    }

    /// Replays a trajectory, a file or the bytes of an N x C float64 array in the file's
    /// columns (C = 9; 15 with the wrench; 10 or 16 with `activation` last); returns
    /// (column names, rows, rows bytes).
    #[pyo3(signature = (trajectory, array=None))]
    fn replay<'py>(
        &self,
        py: Python<'py>,
        trajectory: Option<PathBuf>,
        array: Option<(Vec<u8>, usize)>,
    ) -> PyResult<(Vec<String>, usize, Bound<'py, PyBytes>)> {
        let cancel = Cancel::new();
        let scene = self.scene.clone();
        let log = interruptible(py, &cancel, move || {
            let t = match (trajectory, array) {
                (Some(path), _) => haptics_devices::trajectory::read_trajectory(&path)?,
                (None, Some((bytes, columns))) => trajectory_from_array(&bytes, columns)?,
                (None, None) => return Err(Failure::input("trajectory: give a file or an array")),
            };
            if t.samples.is_empty() {
                return Err(Failure::input("trajectory: it has no samples"));
            }
            Ok(haptics::haptic::replay::replay_log(scene, &t).0)
        })?;
        let columns: Vec<String> = haptics::haptic::log::COLUMNS
            .iter()
            .map(|c| c.to_string())
            .collect();
        let rows = log.rows.len();
        Ok((
            columns,
            rows,
            float_bytes(py, log.rows.iter().flat_map(|r| r.iter().copied())),
        ))
    }
}

/// What an array's errors name as their source: its line k + 2 is row k (line 1 is the
/// header the array stands for).
const ARRAY_SOURCE: &str = "trajectory array";

/// A trajectory from the rows of an N x `columns` float64 array in the CSV file's column
/// order (the wrench columns, when there, are read and ignored as the file's are). The
/// rows go through the file reader, printed as the shortest decimals that read back to
/// the same numbers, so an array is checked exactly as a file is (finite numbers,
/// increasing times, unit quaternions, integer button masks) and replays bit for bit as
/// the file it was read from; errors name the row.
fn trajectory_from_array(
    bytes: &[u8],
    columns: usize,
) -> Result<haptics_devices::trajectory::Trajectory, Failure> {
    use haptics_devices::trajectory::{
        parse_trajectory, ACTIVATION_COLUMN, COLUMNS, WRENCH_COLUMNS,
    };
    let (with_wrench, with_activation) = match columns {
        9 => (false, false),
        10 => (false, true),
        15 => (true, false),
        16 => (true, true),
        _ => {
            return Err(Failure::input(format!(
                "trajectory: expected an N x 9 array ({}), then optionally the 6 wrench columns and {ACTIVATION_COLUMN} (10, 15 or 16 columns), found {columns} columns",
                COLUMNS.join(", ")
            )))
        }
    };
    let values = floats(bytes, "trajectory")?;
    let mut text = COLUMNS.join(",");
    if with_wrench {
        text.push(',');
        text.push_str(&WRENCH_COLUMNS.join(","));
    }
    if with_activation {
        text.push(',');
        text.push_str(ACTIVATION_COLUMN);
    }
    text.push('\n');
    for row in values.chunks_exact(columns) {
        let fields: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, v)| {
                // The button mask: an integer in the file; a fraction is printed as it is
                // and refused by the reader.
                if i == 8 && v.fract() == 0.0 && *v >= 0.0 && *v <= f64::from(u32::MAX) {
                    format!("{}", *v as u32)
                } else {
                    format!("{v:?}")
                }
            })
            .collect();
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    parse_trajectory(text.as_bytes(), Path::new(ARRAY_SOURCE)).map_err(|e| {
        let row = e.line().map(|l| l.saturating_sub(2));
        let mut f = Failure::from(e);
        if let Some(row) = row {
            let prefix = format!("{ARRAY_SOURCE}:{}:", row + 2);
            f.message = f
                .message
                .replacen(&prefix, &format!("{ARRAY_SOURCE} row {row}:"), 1);
            f.line = None;
            f.path = None;
            f.kind = Kind::Input;
        }
        f
    })
}

/// A distance field for Python: its float32 values' bytes, cells, origin and spacing.
type FieldParts<'py> = (Bound<'py, PyBytes>, [usize; 3], [f64; 3], f64);

/// The signed distance field of a closed mesh: (values bytes as float32, cells, origin,
/// spacing).
#[pyfunction]
#[pyo3(signature = (path, arrays, resolution, exact, band, box_enlarge))]
fn sdf<'py>(
    py: Python<'py>,
    path: Option<PathBuf>,
    arrays: Option<(Vec<u8>, Vec<u8>)>,
    resolution: usize,
    exact: bool,
    band: f64,
    box_enlarge: f64,
) -> PyResult<FieldParts<'py>> {
    use haptics::geometry::sdf::{
        MeshDistance, SdfMethod, SdfOptions, SignedDistanceField, MAX_SDF_BYTES,
    };
    if !(2..=4096).contains(&resolution) {
        return Err(Failure::input(format!(
            "resolution: expected 2 to 4096 cells, found {resolution}"
        ))
        .into());
    }
    if !(band.is_finite() && (1.0..=64.0).contains(&band)) {
        return Err(Failure::input(format!("band: expected 1 to 64 cells, found {band}")).into());
    }
    if !(box_enlarge.is_finite() && (1.0..=100.0).contains(&box_enlarge)) {
        return Err(Failure::input(format!(
            "box_enlarge: expected 1 to 100, found {box_enlarge}"
        ))
        .into());
    }
    let cancel = Cancel::new();
    let field = interruptible(py, &cancel, || {
        let surface = match (path.as_ref(), arrays) {
            (Some(p), _) => haptics::mesh::read::read_surface(p).map_err(|e| Failure::from(&e))?,
            (None, Some((v, t))) => surface_from(&v, &t, "mesh")?,
            (None, None) => return Err(Failure::input("mesh: give a file or arrays")),
        };
        let name = path
            .as_deref()
            .map_or("mesh".into(), |p: &Path| p.display().to_string());
        let distance = MeshDistance::new(&surface).map_err(|e| {
            Failure::input(format!("{name}: cannot build a signed distance field: {e}"))
        })?;
        let options = SdfOptions {
            resolution,
            enlarge: box_enlarge,
            method: if exact {
                SdfMethod::Exact
            } else {
                SdfMethod::BandAndPropagate
            },
            band,
            memory_budget_bytes: MAX_SDF_BYTES,
        };
        SignedDistanceField::compute_with(&distance, &options, &NoProgress).map_err(|e| {
            Failure::input(format!("{name}: cannot build a signed distance field: {e}"))
        })
    })?;
    let bytes: Vec<u8> = field.values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok((
        PyBytes::new(py, &bytes),
        field.cells,
        field.origin.coords.into(),
        field.spacing,
    ))
}

/// Reads an OMPL `.path` file: its states' bytes (N x 7).
#[pyfunction]
fn read_path<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyBytes>> {
    let states = haptics::check::ompl::read_path(&path).map_err(|e| Failure::from(&e))?;
    Ok(float_bytes(py, states.iter().flat_map(|s| s.to_ompl())))
}

/// Writes states (bytes, N x 7) as an OMPL `.path` file, atomically.
#[pyfunction]
fn write_path(path: PathBuf, states: Vec<u8>) -> PyResult<()> {
    let states = states_from(&states, "states")?;
    let text = haptics::check::ompl::format_path(&states);
    haptics::io::write_bytes_atomic(&path, text.as_bytes()).map_err(|e| {
        Failure::new(Kind::Read, format!("{}: cannot write: {e}", path.display())).into()
    })
}

/// Open (boundary) edges of a mesh file, for the docs' examples and the tests.
#[pyfunction]
fn mesh_open_edges(path: PathBuf) -> PyResult<usize> {
    let (mesh, _) = read_mesh(&path).map_err(Failure::from)?;
    Ok(open_edges(&mesh))
}

/// Raises a Rust panic inside the worker, so the tests can show the interpreter survives.
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    let cancel = Cancel::new();
    interruptible(py, &cancel, || -> Result<(), Failure> {
        panic!("a deliberate test panic")
    })
}

/// Sleeps in slices, polling the cancel token, so the tests can interrupt a long call.
#[pyfunction]
fn _sleep_for_test(py: Python<'_>, seconds: f64) -> PyResult<bool> {
    let cancel = Cancel::new();
    let token = cancel.clone();
    interruptible(py, &cancel, move || {
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < seconds {
            if token.is_cancelled() {
                return Ok(false);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(true)
    })
}

#[pymodule]
fn _haptics(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Problem>()?;
    m.add_class::<Scene>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(plan_path, m)?)?;
    m.add_function(wrap_pyfunction!(benchmark, m)?)?;
    m.add_function(wrap_pyfunction!(sdf, m)?)?;
    m.add_function(wrap_pyfunction!(bake::bake, m)?)?;
    m.add_function(wrap_pyfunction!(muscle::isometric, m)?)?;
    m.add_function(wrap_pyfunction!(mesh_open_edges, m)?)?;
    m.add_function(wrap_pyfunction!(read_path, m)?)?;
    m.add_function(wrap_pyfunction!(write_path, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(_sleep_for_test, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
