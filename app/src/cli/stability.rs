//! `haptics stability`: the largest coupling and contact stiffness the closed loop renders
//! stably at each haptic rate, with the simulated hand and device (one sample of latency,
//! encoder quantization, servo jitter), judged by a passivity observer
//! ([`haptics::haptic::stability`]); a CSV of every run and a plot of the observer's
//! energy over time.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use haptics::haptic::stability::{ladder, largest_stable, Floor, Run, Stiffness};
use haptics::plot::{line_plot, Series};

/// Arguments of `haptics stability`.
#[derive(Debug, Args)]
pub struct StabilityArgs {
    /// Haptic rates to try (Hz), comma-separated, 100 to 10,000.
    #[arg(long, value_delimiter = ',', default_value = "1000,2000,4000")]
    pub rates: Vec<f64>,
    /// The lowest stiffness of each ladder (N/m); each step is 1.25 times the last.
    #[arg(long, default_value_t = 200.0)]
    pub from: f64,
    /// The highest stiffness of each ladder (N/m); the contact ladder's is per point.
    #[arg(long, default_value_t = 2e5)]
    pub to: f64,
    /// CSV of every run: rate_hz,ladder,stiffness_n_per_m,stable,hold_force_n,
    /// hold_spread_n,observer_drift_j.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// PNG of the observer energy over time at each rate's largest stable and first
    /// unstable coupling stiffness.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

pub fn run(a: &StabilityArgs) -> anyhow::Result<()> {
    for &r in &a.rates {
        if !(100.0..=10_000.0).contains(&r) {
            anyhow::bail!("--rates: {r} Hz; expected rates from 100 to 10000 Hz");
        }
    }
    if !(a.from > 0.0 && a.to >= a.from && a.to.is_finite()) {
        anyhow::bail!("--from {} --to {}: expected 0 < from <= to", a.from, a.to);
    }
    let floor = Floor::new();
    let steps = ladder(a.from, a.to);
    let mut rows = Vec::new();
    let mut curves = Vec::new();
    println!("rate     ladder    largest stable   first unstable (N/m)");
    for &rate in &a.rates {
        for (which, name) in [
            (Stiffness::Coupling, "coupling"),
            (Stiffness::Contact, "contact"),
        ] {
            let (stable, unstable) = largest_stable(&floor, rate, which, &steps);
            let show = |r: &Option<Run>| {
                r.as_ref()
                    .map_or("-".to_string(), |r| format!("{:.0}", stiffness(r, which)))
            };
            println!(
                "{rate:>5.0} Hz  {name:<8}  {:>14}   {:>14}",
                show(&stable),
                show(&unstable)
            );
            for r in stable.iter().chain(unstable.iter()) {
                rows.push(format!(
                    "{},{name},{},{},{},{},{}",
                    rate,
                    stiffness(r, which),
                    r.stable(),
                    r.hold_force,
                    r.hold_spread,
                    r.drift
                ));
            }
            if which == Stiffness::Coupling {
                for r in stable.iter().chain(unstable.iter()) {
                    curves.push(Series {
                        name: format!(
                            "{:.0} kHz, k_VC {:.0} N/m ({})",
                            rate / 1000.0,
                            r.coupling_k,
                            if r.stable() { "stable" } else { "unstable" }
                        ),
                        points: r.energy.iter().map(|&(t, e)| (t, e * 1e3)).collect(),
                    });
                }
            }
        }
    }
    if let Some(out) = &a.out {
        let mut text = String::from(
            "rate_hz,ladder,stiffness_n_per_m,stable,hold_force_n,hold_spread_n,observer_drift_j\n",
        );
        for r in &rows {
            text.push_str(r);
            text.push('\n');
        }
        haptics::io::write_bytes_atomic(out, text.as_bytes())
            .with_context(|| format!("writing {}", out.display()))?;
        println!("runs -> {}", out.display());
    }
    if let Some(png) = &a.plot {
        line_plot(
            png,
            "Passivity observer: energy into the hand",
            "time (s)",
            "energy (mJ)",
            &curves,
        )?;
        println!("plot -> {}", png.display());
    }
    std::io::stdout().flush().ok();
    Ok(())
}

fn stiffness(r: &Run, which: Stiffness) -> f64 {
    match which {
        Stiffness::Coupling => r.coupling_k,
        Stiffness::Contact => r.contact_k,
    }
}
