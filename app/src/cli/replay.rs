//! `haptics record` and `haptics replay`: run a scene's haptic loop on a device, recording
//! the device trajectory, and replay a trajectory headless and deterministically into a
//! haptic log, optionally compared against a golden log (regression tests) and plotted.

use super::range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use haptics_devices::hid::{backend::HidDevice, profile::builtin_profile};
use haptics_devices::trajectory::{read_trajectory, TrajectoryWriter};
use haptics_devices::{
    safety::SafeDevice, simulated::SimConfig, simulated::SimulatedDevice, simulated::TargetSource,
    trajectory::TrajectorySample, vendor::Vendor, Device, Wrench,
};
use indicatif::ProgressBar;

use haptics::haptic::log::{
    column, compare_logs, diff_summary, force_magnitude, read_log, Log, Row,
};
use haptics::haptic::replay::{replay_log, ReplayStats};
use haptics::haptic::{scheduler::PeriodicScheduler, CycleReport, HapticSimulation};
use haptics::plot::{line_plot, Series};
use haptics::progress::Progress as _;
use haptics::scene::{load_scene, Scene};

use super::progress::Bars;

/// Arguments of `haptics replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The scene file (TOML, see docs/scenes.md).
    pub scene: PathBuf,
    /// The recorded trajectory (CSV: time_s,px,py,pz,qw,qx,qy,qz,buttons[,fx..tz]).
    pub trajectory: PathBuf,
    /// Where to write the haptic log (CSV, one row per cycle; see docs/file-formats.md).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// A golden log to compare with: exits non-zero with a summary of the differing
    /// columns when any differs by more than --tol (cycle_us is not compared).
    #[arg(long)]
    pub compare: Option<PathBuf>,
    /// Largest absolute difference accepted per value by --compare (finite, >= 0).
    #[arg(long, default_value_t = 1e-6, value_parser = parse_tolerance)]
    pub tol: f64,
    /// Also plot force magnitude, contacts and traversed nodes over time to this PNG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Cache directory for the scene's baked fields, pointshells and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
    #[command(flatten)]
    pub params: super::ParamOverrides,
}

/// Parses `--tol`: a finite number >= 0 (NaN would accept every difference, since no
/// comparison with NaN is true).
pub fn parse_tolerance(s: &str) -> Result<f64, String> {
    let v = super::parse_finite(s).map_err(|e| format!("{e}: give a tolerance >= 0"))?;
    if v < 0.0 {
        return Err(format!("'{s}' is negative: give a tolerance >= 0"));
    }
    Ok(v)
}

/// Arguments of `haptics record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The scene file (TOML).
    pub scene: PathBuf,
    /// `simulated` (the closed-loop simulated hand, headless and deterministic; its
    /// target follows --targets), `openhaptics` (a 3D Systems Touch / Touch X / PHANTOM
    /// through libHD.so), `forcedimension` (an omega / sigma / delta through libdhd.so),
    /// `haply` (an Inverse3 through Haply's Inverse Service), or `hid:PROFILE` (a
    /// connected HID device, for example hid:generic-ffb). Real
    /// devices run in real time; `haptics devices` lists what is connected.
    #[arg(long, default_value = "simulated")]
    pub device: String,
    /// The enable (deadman) button of a vendor device (a Haply's are its Verse Grip's):
    /// force is sent only while it is held (a button index 0..=31, or `off`).
    #[arg(long, default_value = "0", value_parser = crate::live::parse_deadman)]
    pub deadman: crate::live::Deadman,
    /// Keyframes of the simulated hand's target pose (trajectory CSV, device metres).
    #[arg(long)]
    pub targets: Option<PathBuf>,
    /// Seconds to record, > 0 and at most a day (default: the last keyframe's time plus
    /// 0.5 s, or 10 s).
    #[arg(long, value_parser = range::positive(86_400.0))]
    pub duration: Option<f64>,
    /// Seed of the simulated device's servo jitter and stalls.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the trajectory (CSV with the rendered wrench columns).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Cache directory for the scene's baked fields, pointshells and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
    #[command(flatten)]
    pub params: super::ParamOverrides,
}

/// Loads a scene with progress bars (one per stage, cleared when it ends).
pub fn load_with_progress(path: &Path, cache: &Path) -> anyhow::Result<Scene> {
    std::fs::create_dir_all(cache)
        .with_context(|| format!("creating the cache directory {}", cache.display()))?;
    let bars = Bars::transient().with_template("{spinner} {wide_msg} {bar:30} {pos}/{len}");
    let scene = load_scene(path, cache, &bars);
    bars.finish();
    Ok(scene?)
}

fn wrench(r: &CycleReport) -> Wrench {
    Wrench {
        force: r.force,
        torque: r.torque,
    }
}

pub fn run_replay(a: &ReplayArgs) -> anyhow::Result<()> {
    let trajectory = read_trajectory(&a.trajectory)?;
    if trajectory.samples.is_empty() {
        bail!("{}: the trajectory has no samples", a.trajectory.display());
    }
    let mut scene = load_with_progress(&a.scene, &a.cache)?;
    // A recording made on a real device carries the values the scene was fitted to.
    let text = String::from_utf8_lossy(
        &std::fs::read(&a.trajectory)
            .with_context(|| format!("reading {}", a.trajectory.display()))?,
    )
    .into_owned();
    let fitted = crate::live::apply_recorded_fit(&text, &a.trajectory, &mut scene)?;
    if fitted > 0 {
        println!(
            "applied {fitted} device-fitted settings recorded in {}",
            a.trajectory.display()
        );
    }
    a.params.apply(&mut scene);
    let start = Instant::now();
    let (log, stats) = replay_log(scene, &trajectory);
    let elapsed = start.elapsed().as_secs_f64();
    haptics::io::write_bytes_atomic(&a.out, log.to_csv().as_bytes())
        .with_context(|| format!("writing {}", a.out.display()))?;
    println!(
        "replayed {} cycles ({:.2} s of motion) in {elapsed:.2} s -> {}",
        log.rows.len(),
        trajectory.samples.last().map_or(0.0, |s| s.time_s) - trajectory.samples[0].time_s,
        a.out.display()
    );
    summarize(&log, &stats);
    if let Some(png) = &a.plot {
        plot_log(&log, png)?;
        println!("plot -> {}", png.display());
    }
    if let Some(golden) = &a.compare {
        // Checked again here for callers that build the arguments without clap.
        if !(a.tol.is_finite() && a.tol >= 0.0) {
            bail!("--tol must be a finite number >= 0, got {}", a.tol);
        }
        let expected = read_log(golden)?;
        let diffs = compare_logs(&log, &expected, a.tol);
        if !diffs.is_empty() {
            bail!(
                "the replay differs from {}\n{}",
                golden.display(),
                diff_summary(&diffs, a.tol)
            );
        }
        println!("matches {} within {:e}", golden.display(), a.tol);
    }
    Ok(())
}

/// The index of a column that [`haptics::haptic::log::COLUMNS`] is known to hold.
fn col(name: &str) -> usize {
    column(name).expect("a haptic log column")
}

fn summarize(log: &Log, stats: &ReplayStats) {
    let peak = log.rows.iter().map(force_magnitude).fold(0.0, f64::max);
    let max_of = |k: usize| log.rows.iter().map(|r| r[k]).fold(0.0, f64::max);
    let faults = log.rows.iter().filter(|r| r[col("fault")] != 0.0).count();
    println!(
        "peak force {peak:.3} N, up to {} contacts and {} nodes, deepest level {}, {faults} faults",
        max_of(col("contacts")),
        max_of(col("traversed")),
        max_of(col("lod"))
    );
    println!(
        "deepest contact {:.3} mm, continuous contact cut {} of {} cycles and pushed out of a \
         deforming surface in {}, {} dynamics resets",
        stats.deepest * 1e3,
        stats.cut,
        log.rows.len(),
        stats.pushed,
        stats.resets
    );
}

fn plot_log(log: &Log, png: &Path) -> anyhow::Result<()> {
    let series = |name: &str, f: &dyn Fn(&Row) -> f64| Series {
        name: name.into(),
        points: log.rows.iter().map(|r| (r[0], f(r))).collect(),
    };
    let (contacts, nodes) = (col("contacts"), col("traversed"));
    let force = series("|force| (N)", &force_magnitude);
    let contacts = series("contacts / 100", &|r| r[contacts] / 100.0);
    let nodes = series("nodes / 1000", &|r| r[nodes] / 1000.0);
    line_plot(
        png,
        "Haptic replay",
        "time (s)",
        "",
        &[force, contacts, nodes],
    )?;
    Ok(())
}

pub fn run_record(a: &RecordArgs) -> anyhow::Result<()> {
    if let Some(vendor) = Vendor::from_device_name(&a.device) {
        // A missing library or device fails before any work; the device is opened once the
        // scene is loaded, so that the recording starts with the device's first cycles
        // (a fault's timing, too, counts from there).
        crate::live::require_vendor(vendor)?;
        let mut scene = load_with_progress(&a.scene, &a.cache)?;
        a.params.apply(&mut scene);
        let rate = scene.rate_hz;
        let (device, name) = crate::live::open_vendor(vendor, a.deadman.0)?;
        let fit = crate::live::fit_and_report(&mut scene, device.info());
        let header = crate::live::recording_header(&name, fit.as_ref(), &scene);
        let mut sim = HapticSimulation::new(scene);
        if let Some(f) = &fit {
            sim.set_caps(f.caps);
        }
        if let Some(b) = a.deadman.0 {
            println!("{name}: hold button {b} to enable force");
        }
        let duration = a.duration.unwrap_or(10.0);
        return record_loop(sim, device, duration, Some(rate), &a.out, &name, &header);
    }
    let mut scene = load_with_progress(&a.scene, &a.cache)?;
    a.params.apply(&mut scene);
    let rate = scene.rate_hz;
    let sim = HapticSimulation::new(scene);
    if a.device == "simulated" {
        let targets = match &a.targets {
            Some(p) => read_trajectory(p)?.samples,
            None => {
                bail!("--device simulated needs --targets KEYFRAMES.csv (the hand's target poses)")
            }
        };
        let duration = a
            .duration
            .unwrap_or_else(|| targets.last().map_or(10.0, |s| s.time_s + 0.5));
        let config = SimConfig {
            seed: a.seed,
            period_s: 1.0 / rate,
            ..SimConfig::default()
        };
        let device = SimulatedDevice::new(config, TargetSource::Keyframes(targets))?;
        record_loop(sim, device, duration, None, &a.out, "simulated hand", "")
    } else if let Some(name) = a.device.strip_prefix("hid:") {
        let profile = builtin_profile(name)?;
        let settings = profile.safety.clone();
        let mut sim = sim;
        sim.set_clutch_button(settings.clutch_button);
        let device = SafeDevice::new(HidDevice::open(profile)?, settings)?;
        let duration = a.duration.unwrap_or(10.0);
        let label = format!("HID device ({name})");
        let header = format!("# device: {label}\n");
        record_loop(sim, device, duration, Some(rate), &a.out, &label, &header)
    } else {
        bail!(
            "unknown --device '{}': expected simulated, openhaptics, forcedimension, haply or hid:PROFILE",
            a.device
        )
    }
}

/// Runs the loop for `duration` seconds of device time (in real time at `realtime` Hz
/// when given), keeping the samples in memory (no I/O inside the loop), then writes them
/// after the `header` comment lines. A device error ends the loop at once: zero is
/// written, the samples recorded so far are saved, and the error names the device.
fn record_loop(
    mut sim: HapticSimulation,
    mut device: impl Device,
    duration: f64,
    realtime: Option<f64>,
    out: &Path,
    label: &str,
    header: &str,
) -> anyhow::Result<()> {
    let capacity = (duration * realtime.unwrap_or(1000.0) * 1.2) as usize + 16;
    let mut samples: Vec<(TrajectorySample, Wrench)> = Vec::with_capacity(capacity);
    let mut scheduler = realtime.map(|hz| PeriodicScheduler::new(hz, Duration::from_micros(200)));
    let start = Instant::now();
    let mut t0: Option<f64> = None;
    let mut failure = None;
    let bar = ProgressBar::new((duration * 1000.0) as u64);
    loop {
        if let Some(s) = &mut scheduler {
            s.wait();
        }
        let s = match device.read() {
            Ok(s) => s,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let first = *t0.get_or_insert(s.time_s);
        if s.time_s - first > duration {
            break;
        }
        let r = sim.device_cycle(&s.pose, s.buttons);
        // A faulted cycle (non-finite or absurd pose) renders zero, as in the thread.
        let w = if r.fault { Wrench::zero() } else { wrench(&r) };
        if let Err(e) = device.write(&w) {
            failure = Some(e);
            break;
        }
        if samples.len() < samples.capacity() {
            samples.push((s.into(), w));
        }
        if samples.len().is_multiple_of(100) {
            bar.set_position(((s.time_s - first) * 1000.0) as u64);
        }
    }
    // Best effort after a failure (the safety layer has zeroed the output already).
    let zeroed = device.write(&Wrench::zero());
    bar.finish_and_clear();
    // Whole or not at all: a full disk or a kill never leaves half a recording.
    haptics::io::write_atomic(out, |file| {
        use std::io::Write as _;
        file.write_all(header.as_bytes())?;
        let mut w = TrajectoryWriter::new(file, true)?;
        for (s, f) in &samples {
            w.write(s, Some(f))?;
        }
        w.finish()?;
        Ok(())
    })
    .with_context(|| format!("writing {}", out.display()))?;
    println!(
        "recorded {} samples ({:.2} s) in {:.2} s -> {}",
        samples.len(),
        samples.last().map_or(0.0, |s| s.0.time_s) - samples.first().map_or(0.0, |s| s.0.time_s),
        start.elapsed().as_secs_f64(),
        out.display()
    );
    // Release the device (zero, scheduler stopped, closed) before reporting.
    drop(device);
    if let Some(e) = failure {
        bail!(
            "{label} failed after {} samples: {e}. Force output was switched off; the samples recorded until then are in {}",
            samples.len(),
            out.display()
        );
    }
    zeroed.with_context(|| format!("{label}: writing zero force at the end"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics::haptic::log::COLUMNS;

    #[test]
    fn tolerance_must_be_finite_and_not_negative() {
        assert_eq!(parse_tolerance("1e-6"), Ok(1e-6));
        assert_eq!(parse_tolerance("0"), Ok(0.0));
        for bad in ["nan", "NaN", "inf", "-inf", "-1e-6", "abc", ""] {
            assert!(parse_tolerance(bad).is_err(), "{bad} accepted");
        }
        assert!(parse_tolerance("nan").unwrap_err().contains("not finite"));
        assert!(parse_tolerance("-1").unwrap_err().contains("negative"));
    }

    #[test]
    fn nan_differences_are_differences() {
        let zero: Row = [0.0; COLUMNS.len()];
        let mut nan = zero;
        nan[col("contacts")] = f64::NAN;
        let a = Log { rows: vec![nan] };
        let e = Log { rows: vec![zero] };
        let diffs = compare_logs(&a, &e, 1e-6);
        assert!(!diffs.is_empty(), "a NaN value matched 0");
        let diffs = compare_logs(&e, &a, 1e-6);
        assert!(!diffs.is_empty(), "0 matched a NaN value");
    }
}
