//! Headless, deterministic replay of a recorded stylus trajectory: a fresh simulation of
//! the scene runs one haptic cycle per sample, as the haptic thread would, and each cycle
//! becomes a row of the haptic log ([`super::log`]). The cycles' budgets are node counts,
//! not wall time, so a replay gives the same log on every machine (the `cycle_us` column,
//! the cycle's wall time, excepted).

use std::time::Instant;

use haptics_devices::trajectory::Trajectory;

use super::log::{row, Log};
use super::HapticSimulation;
use crate::scene::{params::Param, Scene};

/// What a replay did beyond its log's columns.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayStats {
    /// The deepest contact of the run (m).
    pub deepest: f64,
    /// Cycles whose motion the continuous contact cut short.
    pub cut: usize,
    /// Cycles that began by pushing the held object out of a surface that deformed
    /// into it beyond the penetration limit.
    pub pushed: usize,
    /// Cycles in which a deformable object's Newmark step diverged (or lost
    /// definiteness) and was reset to rest.
    pub resets: usize,
}

/// Replays `trajectory` on a fresh simulation of `scene`; returns the log.
pub fn replay_log(scene: Scene, trajectory: &Trajectory) -> (Log, ReplayStats) {
    let mut sim = HapticSimulation::new(scene);
    let mut log = Log {
        rows: Vec::with_capacity(trajectory.samples.len()),
    };
    let mut stats = ReplayStats::default();
    let mut activation = f64::NAN;
    for (i, s) in trajectory.samples.iter().enumerate() {
        // A recorded control input: the muscle's activation at this sample.
        if let Some(&a) = trajectory.activation.get(i) {
            if a != activation {
                sim.set(Param::Activation, a);
                activation = a;
            }
        }
        let t0 = Instant::now();
        let r = sim.device_cycle(&s.pose, s.buttons);
        let us = t0.elapsed().as_secs_f64() * 1e6;
        log.rows
            .push(row(s.time_s, &s.pose.isometry(), s.buttons, &r, us));
        stats.deepest = stats.deepest.max(r.depth);
        stats.cut += usize::from(r.swept < 1.0);
        stats.pushed += usize::from(r.pushed_out > 0.0);
        stats.resets += usize::from(r.reset);
    }
    (log, stats)
}
