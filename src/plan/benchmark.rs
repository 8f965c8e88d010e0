//! Seeded planning runs written as OMPL's benchmark log: the text that OMPL's
//! `ompl::tools::Benchmark::saveResultsToFile` writes and `ompl_benchmark_statistics.py`
//! reads into the SQLite database that Planner Arena (plannerarena.org) shows, so that
//! our planner's runs sit beside OMPL's planners in the tools their users already have.
//!
//! The layout, as the statistics script parses it: a header (library and version,
//! experiment name, host, start date, the setup and the CPU between `<<<|` and `|>>>`,
//! the seed, the time and memory limits, runs per planner, total time), the enum types,
//! then per planner its name, its settings (`name = value` lines), its per-run property
//! names with SQL types, one line per run with each value followed by `"; "`, and `.`.
//! Property names follow OMPL's (`time`, `solved`, `graph states`, `simplified solution
//! length`...), so Planner Arena plots them with OMPL's own.

use std::fmt::Write as _;
use std::time::SystemTime;

use super::{plan_checked, Plan, PlanError, PlanOptions, Problem};
use crate::progress::cancelled;

/// The planner's name in the log (OMPL names its planners `geometric_RRTConnect` etc.).
pub const PLANNER_NAME: &str = "haptics_RRTConnectSliding";

/// One run's measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// The run's seed.
    pub seed: u64,
    /// Seconds of search (OMPL's `time`: until the planner returns, without
    /// simplification).
    pub time: f64,
    /// Whether a path was found.
    pub solved: bool,
    /// States in the trees.
    pub graph_states: usize,
    /// Distance queries of the validity checker (OMPL's `collision checks`).
    pub collision_checks: usize,
    /// The path's length before simplification (NaN when unsolved).
    pub solution_length: f64,
    /// Its states before simplification.
    pub solution_segments: usize,
    /// Seconds of simplification.
    pub simplification_time: f64,
    /// The simplified path's length (NaN when unsolved).
    pub simplified_solution_length: f64,
    /// Its segments.
    pub simplified_solution_segments: usize,
    /// The simplified path's minimum clearance by the path check (NaN when unsolved).
    pub simplified_solution_clearance: f64,
}

impl Run {
    /// The measurements of one plan, `clearance` from the path check of its path.
    pub fn of(seed: u64, plan: &Plan, clearance: Option<f64>) -> Run {
        let if_solved = |v: f64| if plan.solved { v } else { f64::NAN };
        Run {
            seed,
            time: plan.solve_seconds,
            solved: plan.solved,
            graph_states: plan.states,
            collision_checks: plan.work.queries,
            solution_length: if_solved(plan.raw_length),
            solution_segments: plan.raw_states.saturating_sub(1),
            simplification_time: plan.simplify_seconds,
            simplified_solution_length: if_solved(plan.length),
            simplified_solution_segments: plan.path.len().saturating_sub(1),
            simplified_solution_clearance: clearance.map_or(f64::NAN, if_solved),
        }
    }
}

/// Plans once with `options` and measures the run ([`super::plan_checked`]: a solved
/// path is certified by the path check, whose minimum clearance the run records).
pub fn measure(problem: &Problem, options: &PlanOptions) -> Result<Run, PlanError> {
    let p = plan_checked(problem, options, &|_| {})?;
    Ok(Run::of(
        options.seed,
        &p.plan,
        p.check.map(|c| c.min_clearance),
    ))
}

/// Seeded runs and the header that describes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Benchmark {
    /// The header.
    pub experiment: Experiment,
    /// The runs, in seed order.
    pub runs: Vec<Run>,
}

impl Benchmark {
    /// OMPL's benchmark log of the runs (the layout of the module docs).
    pub fn log(&self) -> String {
        benchmark_log(&self.experiment, &self.runs)
    }

    /// A few lines on the runs ([`summary`]).
    pub fn summary(&self) -> String {
        summary(
            &self.experiment.name,
            &self.runs,
            self.experiment.time_limit,
        )
    }
}

/// `runs` plans of `problem`, seeds `options.seed` on, each measured ([`measure`]);
/// `after_run` sees the runs so far after each. A cancelled `options.cancel` ends the
/// series after the current run. `name` and `setup` go into the header.
pub fn run_benchmark(
    name: &str,
    setup: &str,
    problem: &Problem,
    options: &PlanOptions,
    runs: u64,
    after_run: &mut dyn FnMut(&[Run]),
) -> Result<Benchmark, PlanError> {
    let started = SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut measured = Vec::with_capacity(runs as usize);
    for k in 0..runs {
        let seeded = PlanOptions {
            seed: options.seed + k,
            ..options.clone()
        };
        measured.push(measure(problem, &seeded)?);
        after_run(&measured);
        if cancelled(&options.cancel) {
            break;
        }
    }
    let experiment = Experiment::new(name, started, options, t0.elapsed().as_secs_f64(), setup);
    Ok(Benchmark {
        experiment,
        runs: measured,
    })
}

/// A few lines on the runs: solved count, median time and length.
pub fn summary(name: &str, runs: &[Run], time_limit: f64) -> String {
    let solved: Vec<&Run> = runs.iter().filter(|r| r.solved).collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => 0.5 * (v[n / 2 - 1] + v[n / 2]),
        }
    };
    // An unsolved run counts as the whole limit, as Planner Arena's time plot shows it.
    let times = runs
        .iter()
        .map(|r| if r.solved { r.time } else { time_limit })
        .collect();
    let lengths = solved
        .iter()
        .map(|r| r.simplified_solution_length)
        .collect();
    format!(
        "{name}: {} of {} runs solved within {time_limit} s\n  median time     {:.3} s (unsolved runs counted at the limit)\n  median length   {:.4} (solved runs)\n",
        solved.len(),
        runs.len(),
        median(times),
        median(lengths),
    )
}

/// The per-run properties: OMPL's name and SQL type, and the value's text.
fn properties(r: &Run) -> [(&'static str, &'static str, String); 11] {
    let real = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else {
            // The script stores "nan" and "inf" as NULL.
            "nan".to_string()
        }
    };
    [
        ("time", "REAL", real(r.time)),
        ("solved", "BOOLEAN", u8::from(r.solved).to_string()),
        ("graph states", "INTEGER", r.graph_states.to_string()),
        (
            "collision checks",
            "INTEGER",
            r.collision_checks.to_string(),
        ),
        ("solution length", "REAL", real(r.solution_length)),
        (
            "solution segments",
            "INTEGER",
            r.solution_segments.to_string(),
        ),
        ("simplification time", "REAL", real(r.simplification_time)),
        (
            "simplified solution length",
            "REAL",
            real(r.simplified_solution_length),
        ),
        (
            "simplified solution segments",
            "INTEGER",
            r.simplified_solution_segments.to_string(),
        ),
        (
            "simplified solution clearance",
            "REAL",
            real(r.simplified_solution_clearance),
        ),
        ("seed", "INTEGER", r.seed.to_string()),
    ]
}

/// What the log's header says about the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// The experiment's name (the problem's).
    pub name: String,
    /// The machine's name.
    pub host: String,
    /// When the runs started, `YYYY-MM-DD HH:MM:SS` (UTC).
    pub date: String,
    /// The problem and settings, in words (any number of lines).
    pub setup: String,
    /// The first run's seed.
    pub seed: u64,
    /// The time limit per run (s).
    pub time_limit: f64,
    /// Wall time of all runs (s).
    pub total_time: f64,
    /// The planner's settings, `name = value` per entry.
    pub settings: Vec<(String, String)>,
}

impl Experiment {
    /// The header of runs of `options` (its seed the first run's) that started at
    /// `started` and took `total_time` seconds; `setup` says how they were made.
    pub fn new(
        name: &str,
        started: SystemTime,
        options: &PlanOptions,
        total_time: f64,
        setup: &str,
    ) -> Experiment {
        let opt = |v: Option<f64>| v.map_or("default".to_string(), |v| v.to_string());
        let settings = vec![
            ("clearance".into(), opt(options.clearance)),
            (
                "relax_clearance".into(),
                u8::from(options.relax_clearance).to_string(),
            ),
            ("corridor".into(), u8::from(options.corridor).to_string()),
            ("max_range".into(), opt(options.max_range)),
            ("range".into(), opt(options.range)),
            (
                "rotation_weight".into(),
                options.rotation_weight.to_string(),
            ),
            (
                "sampler".into(),
                format!("{:?}", options.sampler).to_lowercase(),
            ),
            ("shortcuts".into(), options.shortcuts.to_string()),
            ("threads".into(), options.threads.to_string()),
        ];
        let secs = started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Experiment {
            name: name.to_string(),
            host: host_name(),
            date: utc_date(secs),
            setup: setup.to_string(),
            seed: options.seed,
            time_limit: options.time_limit,
            total_time,
            settings,
        }
    }
}

/// The machine's name (Linux: the kernel's hostname), else `localhost`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// `YYYY-MM-DD HH:MM:SS` of a Unix time, UTC: the proleptic Gregorian calendar's
/// civil date from the day count (the era-based conversion of H. Hinnant,
/// "chrono-Compatible Low-Level Date Algorithms").
pub(crate) fn utc_date(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let rem = unix_seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3_600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The benchmark log of `runs`.
fn benchmark_log(e: &Experiment, runs: &[Run]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "haptics version {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(s, "Experiment {}", one_token(&e.name));
    let _ = writeln!(s, "Running on {}", one_token(&e.host));
    let _ = writeln!(s, "Starting at {}", e.date);
    let _ = writeln!(s, "<<<|\n{}\n|>>>", e.setup.trim_end());
    let _ = writeln!(s, "<<<|\n{}\n|>>>", cpu_info().trim_end());
    let _ = writeln!(s, "{} is the random seed", e.seed);
    let _ = writeln!(s, "{} seconds per run", e.time_limit);
    // No memory limit is enforced; OMPL writes its own default here.
    let _ = writeln!(s, "0 MB per run");
    let _ = writeln!(s, "{} runs per planner", runs.len());
    let _ = writeln!(s, "{} seconds spent to collect the data", e.total_time);
    let _ = writeln!(s, "0 enum types");
    let _ = writeln!(s, "1 planners");
    let _ = writeln!(s, "{PLANNER_NAME}");
    let _ = writeln!(s, "{} common properties", e.settings.len());
    for (k, v) in &e.settings {
        let _ = writeln!(s, "{k} = {v}");
    }
    let names = properties(&Run::of(0, &Plan::default(), None));
    let _ = writeln!(s, "{} properties for each run", names.len());
    for (name, kind, _) in &names {
        let _ = writeln!(s, "{name} {kind}");
    }
    let _ = writeln!(s, "{} runs", runs.len());
    for r in runs {
        for (_, _, v) in properties(r) {
            let _ = write!(s, "{v}; ");
        }
        s.push('\n');
    }
    s.push_str(".\n");
    s
}

/// The first whitespace-separated word (the script reads the last token of these
/// lines); an empty name becomes `unnamed`.
fn one_token(s: &str) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join("_");
    if joined.is_empty() {
        "unnamed".to_string()
    } else {
        joined
    }
}

/// The processor's model name and count, from /proc/cpuinfo where there is one.
fn cpu_info() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = text
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model} ({threads} threads)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, solved: bool) -> Run {
        let p = Plan {
            solved,
            solve_seconds: 0.25 * seed as f64,
            length: 3.5,
            raw_length: 4.0,
            raw_states: 9,
            path: vec![
                crate::proximity::rigid::State::new(
                    nalgebra::Vector3::zeros(),
                    nalgebra::UnitQuaternion::identity(),
                );
                4
            ],
            ..Plan::default()
        };
        Run::of(seed, &p, Some(0.01))
    }

    #[test]
    fn utc_dates_match_known_instants() {
        assert_eq!(utc_date(0), "1970-01-01 00:00:00");
        // A leap day of a century divisible by 400, at 12:34:56.
        assert_eq!(utc_date(951_827_696), "2000-02-29 12:34:56");
        assert_eq!(utc_date(1_796_205_600), "2026-12-02 10:00:00");
        // 2100-03-01: 2100 is not a leap year.
        assert_eq!(utc_date(4_107_542_400), "2100-03-01 00:00:00");
    }

    #[test]
    fn the_log_has_the_layout_the_statistics_script_reads() {
        let e = Experiment {
            name: "slot problem".into(),
            host: "here".into(),
            date: "2026-12-02 10:00:00".into(),
            setup: "a cube through a slot".into(),
            seed: 1,
            time_limit: 5.0,
            total_time: 1.5,
            settings: vec![("range".into(), "0.1".into())],
        };
        let log = benchmark_log(&e, &[run(1, true), run(2, false)]);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(
            lines[0],
            format!("haptics version {}", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(lines[1], "Experiment slot_problem");
        assert!(log.contains(
            "\n1 is the random seed\n5 seconds per run\n0 MB per run\n2 runs per planner\n"
        ));
        assert!(log.contains("\n1 planners\nhaptics_RRTConnectSliding\n1 common properties\nrange = 0.1\n11 properties for each run\ntime REAL\nsolved BOOLEAN\n"));
        let runs = lines.iter().position(|l| *l == "2 runs").unwrap();
        // Each value followed by "; ": 11 fields and an empty remainder.
        let first: Vec<&str> = lines[runs + 1].split("; ").collect();
        assert_eq!(first.len(), 12);
        assert_eq!(&first[..3], &["0.25", "1", "0"]);
        assert_eq!(first[7], "3.5");
        let second: Vec<&str> = lines[runs + 2].split("; ").collect();
        // Unsolved: no lengths or clearance (NULL in the database).
        assert_eq!(
            (second[1], second[4], second[7], second[9]),
            ("0", "nan", "nan", "nan")
        );
        assert_eq!(*lines.last().unwrap(), ".");
    }
}
