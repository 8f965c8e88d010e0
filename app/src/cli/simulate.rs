//! `haptics simulate MODEL`: offline reduced dynamics (implicit Newmark) of a baked
//! model or of a Vega `.cub` alone (identity reduced mass), for users and tests.
//!
//! Force file (CSV): header `step,f0,...,f{r-1}`, then one row per step that has a
//! reduced external force (steps count from 1, the step ending at t = step * dt); the
//! other steps have none. Output: `step,t,q0,...,q{r-1}`, one row per step.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use nalgebra::DMatrix;

use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams, StepEvent};
use haptics::reduction::bake::load_baked;
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::polynomial::CubicPolynomial;
use haptics::reduction::vega::read_cub;

#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// A baked directory, or a Vega .cub file.
    pub model: PathBuf,
    /// Time step (s): finite, > 0 and at most 1 s.
    #[arg(long, default_value_t = 1e-3, value_parser = parse_dt)]
    pub dt: f64,
    /// Number of steps (1 to 100000000).
    #[arg(long, default_value_t = 1000, value_parser = parse_steps)]
    pub steps: usize,
    /// Output CSV of q over time.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Reduced external forces (CSV `step,f0,...`).
    #[arg(long)]
    pub force: Option<PathBuf>,
    /// Mass-proportional damping alpha (1/s, finite, >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = parse_damping)]
    pub damping_mass: f64,
    /// Stiffness-proportional damping beta (s, finite, >= 0).
    #[arg(long, default_value_t = 0.0, value_parser = parse_damping)]
    pub damping_stiffness: f64,
    /// Newton iterations per step (1 to 100).
    #[arg(long, default_value_t = 1, value_parser = parse_newton_iterations)]
    pub newton_iterations: usize,
    /// Use only the first r' modes (at least 1, at most the model's r).
    #[arg(long, value_parser = parse_modes)]
    pub modes: Option<usize>,
    /// Vertices (0-based, comma-separated) whose displacement u_v = U_v q is written to
    /// --vertex-out (baked models only: a .cub has no basis).
    #[arg(long, value_delimiter = ',')]
    pub vertices: Vec<usize>,
    /// CSV of the chosen vertices' displacements: `step,t,v{i}_x,v{i}_y,v{i}_z,...`.
    #[arg(long, requires = "vertices")]
    pub vertex_out: Option<PathBuf>,
}

/// The longest accepted `--dt`. The reduced models are elastic bodies whose lowest modes
/// vibrate at several Hz and more: a step of a second or longer cannot resolve any of
/// their motion (implicit Newmark then only damps it away), so such a value is almost
/// certainly a unit mistake (milliseconds given as seconds).
pub const MAX_DT_S: f64 = 1.0;

/// The most `--steps` accepted (the step times are kept in memory, 8 bytes each).
pub const MAX_STEPS: usize = 100_000_000;

/// The most `--newton-iterations` accepted.
pub const MAX_NEWTON_ITERATIONS: usize = 100;

fn parse_count(s: &str, what: &str, min: usize, max: usize) -> Result<usize, String> {
    let v: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number of {what}"))?;
    if v < min || v > max {
        return Err(format!("{v} {what} is outside {min}..={max}"));
    }
    Ok(v)
}

/// Parses `--dt`: seconds, finite, > 0 and at most [`MAX_DT_S`].
pub fn parse_dt(s: &str) -> Result<f64, String> {
    let v = super::parse_finite(s)?;
    if v <= 0.0 {
        return Err(format!("the time step must be > 0 s, got {}", s.trim()));
    }
    if v > MAX_DT_S {
        return Err(format!(
            "the time step {} s is longer than {MAX_DT_S} s: it cannot resolve the \
             model's vibration (was it given in milliseconds? --dt is in seconds)",
            s.trim()
        ));
    }
    Ok(v)
}

/// Parses `--steps`: 1 to [`MAX_STEPS`].
pub fn parse_steps(s: &str) -> Result<usize, String> {
    parse_count(s, "steps", 1, MAX_STEPS)
}

/// Parses `--damping-mass` and `--damping-stiffness`: finite, >= 0 (negative damping
/// adds energy and makes the simulation blow up).
pub fn parse_damping(s: &str) -> Result<f64, String> {
    let v = super::parse_finite(s)?;
    if v < 0.0 {
        return Err(format!(
            "damping must be >= 0 (negative damping adds energy), got {}",
            s.trim()
        ));
    }
    Ok(v)
}

/// Parses `--newton-iterations`: 1 to [`MAX_NEWTON_ITERATIONS`].
pub fn parse_newton_iterations(s: &str) -> Result<usize, String> {
    parse_count(s, "iterations", 1, MAX_NEWTON_ITERATIONS)
}

/// Parses `--modes`: at least 1 (the upper bound, the model's r, is checked on loading).
pub fn parse_modes(s: &str) -> Result<usize, String> {
    parse_count(s, "modes", 1, usize::MAX)
}

/// Reads a reduced force file: for each listed step, the force vector.
pub fn read_force_csv(
    path: &Path,
    r: usize,
    steps: usize,
) -> anyhow::Result<Vec<(usize, Vec<f64>)>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines().enumerate();
    check_force_header(path, lines.next().map(|(_, h)| h), r)?;
    let mut rows: Vec<(usize, Vec<f64>)> = Vec::new();
    for (i, line) in lines {
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let last = rows.last().map(|(s, _)| *s);
        rows.push(parse_force_row(path, lineno, line, r, steps, last)?);
    }
    Ok(rows)
}

/// Checks a force file's header: `step,f0,...,f{r-1}`.
fn check_force_header(path: &Path, header: Option<&str>, r: usize) -> anyhow::Result<()> {
    let expected: Vec<String> = std::iter::once("step".to_string())
        .chain((0..r).map(|i| format!("f{i}")))
        .collect();
    match header {
        Some(header) => {
            let got: Vec<&str> = header.split(',').map(str::trim).collect();
            if got != expected {
                bail!(
                    "{}:1: expected the header '{}', found '{}'",
                    path.display(),
                    expected.join(","),
                    header.trim()
                );
            }
        }
        None => bail!(
            "{}: empty file; expected the header '{}'",
            path.display(),
            expected.join(",")
        ),
    }
    Ok(())
}

/// Parses one force row (line `lineno`): its step, after `last` and within 1..=`steps`,
/// and its `r` forces.
fn parse_force_row(
    path: &Path,
    lineno: usize,
    line: &str,
    r: usize,
    steps: usize,
    last: Option<usize>,
) -> anyhow::Result<(usize, Vec<f64>)> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != r + 1 {
        bail!(
            "{}:{lineno}: expected {} comma-separated values, found {}",
            path.display(),
            r + 1,
            fields.len()
        );
    }
    let step: usize = fields[0].parse().with_context(|| {
        format!(
            "{}:{lineno}: expected a step number, found '{}'",
            path.display(),
            fields[0]
        )
    })?;
    if step == 0 || step > steps {
        bail!(
            "{}:{lineno}: step {step} is outside 1..={steps}",
            path.display()
        );
    }
    if let Some(last) = last {
        if step <= last {
            bail!(
                "{}:{lineno}: steps must increase (step {step} after {last})",
                path.display()
            );
        }
    }
    let mut f = Vec::with_capacity(r);
    for (k, v) in fields[1..].iter().enumerate() {
        let x: f64 = v.parse().with_context(|| {
            format!(
                "{}:{lineno}: f{k}: expected a number, found '{v}'",
                path.display()
            )
        })?;
        if !x.is_finite() {
            bail!("{}:{lineno}: f{k} is not finite ('{v}')", path.display());
        }
        f.push(x);
    }
    Ok((step, f))
}

fn load_model(model: &Path) -> anyhow::Result<(CubicPolynomial, Option<nalgebra::DMatrix<f64>>)> {
    if model.is_dir() {
        let b = load_baked(model)?;
        Ok((b.polynomial, Some(b.basis)))
    } else {
        Ok((read_cub(model)?, None))
    }
}

pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    check_args(args)?;
    let (poly, basis) = load_model(&args.model)?;
    let r = chosen_modes(args, &poly)?;
    let vertex_rows = chosen_vertex_rows(args, basis.as_ref(), r)?;
    let mut vertex_writer = match &args.vertex_out {
        Some(p) => Some(create_vertex_csv(p, &args.vertices)?),
        None => None,
    };
    let forces = ReducedForces::new(&poly, r)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.model.display()))?;
    let force_rows = match &args.force {
        Some(p) => read_force_csv(p, r, args.steps)?,
        None => Vec::new(),
    };
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(args.dt),
        damping_mass: args.damping_mass,
        damping_stiffness: args.damping_stiffness,
        newton_iterations: args.newton_iterations.max(1),
        ..ReducedParams::default()
    };
    let mut sim = ReducedNewmark::new(forces, params);
    let mut w = create_q_csv(&args.out, r)?;
    let vertices = vertex_writer.as_mut().zip(vertex_rows.as_ref());
    let (times, resets) = simulate_steps(args, &mut sim, r, &force_rows, &mut w, vertices)?;
    w.flush()?;
    if let Some(mut vw) = vertex_writer {
        vw.flush()?;
    }
    print_summary(args, r, times, resets);
    Ok(())
}

/// Checks the arguments as their parsers do.
fn check_args(args: &SimulateArgs) -> anyhow::Result<()> {
    // The same checks as the parsers, for callers that build the arguments without clap.
    parse_dt(&args.dt.to_string()).map_err(|e| anyhow::anyhow!("--dt: {e}"))?;
    parse_steps(&args.steps.to_string()).map_err(|e| anyhow::anyhow!("--steps: {e}"))?;
    parse_damping(&args.damping_mass.to_string())
        .map_err(|e| anyhow::anyhow!("--damping-mass: {e}"))?;
    parse_damping(&args.damping_stiffness.to_string())
        .map_err(|e| anyhow::anyhow!("--damping-stiffness: {e}"))?;
    parse_newton_iterations(&args.newton_iterations.to_string())
        .map_err(|e| anyhow::anyhow!("--newton-iterations: {e}"))?;
    Ok(())
}

/// The number of modes simulated: `--modes`, checked against the model's r, or r.
fn chosen_modes(args: &SimulateArgs, poly: &CubicPolynomial) -> anyhow::Result<usize> {
    if let Some(m) = args.modes {
        if m == 0 || m > poly.r {
            bail!(
                "--modes: {m} is outside 1..={} (the model {} has r = {})",
                poly.r,
                args.model.display(),
                poly.r
            );
        }
    }
    Ok(args.modes.unwrap_or(poly.r))
}

/// The basis rows of the `--vertices` when `--vertex-out` is given.
fn chosen_vertex_rows(
    args: &SimulateArgs,
    basis: Option<&DMatrix<f64>>,
    r: usize,
) -> anyhow::Result<Option<DMatrix<f64>>> {
    // Rows of the basis for the chosen vertices (3 per vertex, first r columns).
    Ok(match (&args.vertex_out, basis) {
        (None, _) => None,
        (Some(_), None) => bail!(
            "{}: --vertex-out needs a baked model (a .cub file has no basis)",
            args.model.display()
        ),
        (Some(_), Some(u)) => {
            let nv = u.nrows() / 3;
            if let Some(&bad) = args.vertices.iter().find(|&&v| v >= nv) {
                bail!("--vertices: vertex {bad} is out of range (the model has {nv} vertices)");
            }
            let rows: Vec<usize> = args
                .vertices
                .iter()
                .flat_map(|&v| [3 * v, 3 * v + 1, 3 * v + 2])
                .collect();
            Some(u.select_rows(rows.iter()).columns(0, r).into_owned())
        }
    })
}

/// Creates the vertex displacement CSV and writes its header.
fn create_vertex_csv(path: &Path, vertices: &[usize]) -> anyhow::Result<BufWriter<File>> {
    let mut w = BufWriter::new(
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    write!(w, "step,t")?;
    for v in vertices {
        write!(w, ",v{v}_x,v{v}_y,v{v}_z")?;
    }
    writeln!(w)?;
    Ok(w)
}

/// Creates the CSV of q over time and writes its header.
fn create_q_csv(path: &Path, r: usize) -> anyhow::Result<BufWriter<File>> {
    let mut w = BufWriter::new(
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    write!(w, "step,t")?;
    for i in 0..r {
        write!(w, ",q{i}")?;
    }
    writeln!(w)?;
    Ok(w)
}

/// Runs the steps, writing q and vertex displacements; returns step times and resets.
fn simulate_steps(
    args: &SimulateArgs,
    sim: &mut ReducedNewmark,
    r: usize,
    force_rows: &[(usize, Vec<f64>)],
    w: &mut BufWriter<File>,
    mut vertices: Option<(&mut BufWriter<File>, &DMatrix<f64>)>,
) -> anyhow::Result<(Vec<f64>, usize)> {
    let zero = vec![0.0; r];
    let mut next = force_rows.iter().peekable();
    let mut resets = 0;
    let mut times = Vec::with_capacity(args.steps);
    for step in 1..=args.steps {
        let f = match next.peek() {
            Some((s, f)) if *s == step => {
                next.next();
                f.as_slice()
            }
            _ => zero.as_slice(),
        };
        let t0 = Instant::now();
        if sim.step(f) == StepEvent::DivergedAndReset {
            resets += 1;
            eprintln!("step {step}: the state diverged and was reset to rest");
        }
        times.push(t0.elapsed().as_secs_f64());
        write!(w, "{step},{}", step as f64 * args.dt)?;
        for q in &sim.q {
            write!(w, ",{q}")?;
        }
        writeln!(w)?;
        if let Some((vw, rows)) = vertices.as_mut() {
            let d = *rows * nalgebra::DVector::from_column_slice(&sim.q);
            write!(vw, "{step},{}", step as f64 * args.dt)?;
            for x in d.iter() {
                write!(vw, ",{x}")?;
            }
            writeln!(vw)?;
        }
    }
    Ok((times, resets))
}

/// Prints the steps run, the output file, the median step time and the resets.
fn print_summary(args: &SimulateArgs, r: usize, mut times: Vec<f64>, resets: usize) {
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "{} steps of r = {r} written to {}; median step {:.2} us; {resets} divergence resets",
        args.steps,
        args.out.display(),
        median * 1e6
    );
}
