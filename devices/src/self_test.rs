//! The device self-test of `haptics devices --test`: a few seconds of a soft spring to the
//! centre of the workspace, through the safety layer, measuring what a user needs to know
//! before trusting a device with a simulation.
//!
//! The loop runs at the requested rate on absolute deadlines (a late cycle does not push
//! the next ones back). Each cycle reads the device, renders `F = -k p` (p the stylus
//! position, k low: at most a tenth of the device's stable stiffness) and writes it through
//! [`SafeDevice`], so the ramp, the clamps and the enable button apply as in a session.
//! The report gives the achieved loop rate and its jitter, the position range covered and
//! the largest force sent.

use std::time::{Duration, Instant};

use nalgebra::Vector3;

use crate::Device;

use crate::DeviceError;

use crate::safety::SafeDevice;
use crate::Wrench;

/// Self-test settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelfTestConfig {
    /// Length of the test, s.
    pub duration_s: f64,
    /// Loop rate, Hz.
    pub rate_hz: f64,
    /// Spring stiffness, N/m (capped at a tenth of the device's stable stiffness).
    pub stiffness_n_per_m: f64,
}

impl Default for SelfTestConfig {
    fn default() -> Self {
        Self {
            duration_s: 5.0,
            rate_hz: 1000.0,
            stiffness_n_per_m: 100.0,
        }
    }
}

/// What the self-test measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SelfTestReport {
    /// Cycles run.
    pub cycles: u64,
    /// Wall time, s.
    pub elapsed_s: f64,
    /// Achieved loop rate, Hz.
    pub rate_hz: f64,
    /// Mean loop period, µs.
    pub period_mean_us: f64,
    /// Standard deviation of the loop period, µs.
    pub jitter_sd_us: f64,
    /// 99th percentile of |period - nominal|, µs.
    pub jitter_p99_us: f64,
    /// Smallest and largest stylus position per axis, m.
    pub position_min: Vector3<f64>,
    pub position_max: Vector3<f64>,
    /// Largest force magnitude sent (after the safety layer), N.
    pub max_force_n: f64,
    /// The stiffness used, N/m.
    pub stiffness_n_per_m: f64,
    /// Failed reads or writes.
    pub errors: u64,
    /// The fatal error that ended the test early, if any.
    pub fault: Option<DeviceError>,
    /// Whether the safety layer's start ramp reached full scale.
    pub ramp_completed: bool,
    /// Stalls (no write within the layer's timeout) and velocity cuts during the test:
    /// each sent zero and re-armed the ramp, so the spring may not have reached full
    /// scale on a loaded machine.
    pub stalls: u64,
    pub velocity_cuts: u64,
}

/// Runs the self-test on `device` (see the module docs); zero is written at the end.
pub fn run<D: Device>(device: &mut SafeDevice<D>, config: &SelfTestConfig) -> SelfTestReport {
    let k = spring_stiffness(device.info().max_stiffness_n_per_m, config);
    let period = Duration::from_secs_f64(1.0 / config.rate_hz.max(1.0));
    let capacity = (config.duration_s * config.rate_hz * 1.1) as usize + 16;
    let mut m = Measurements::new(capacity);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(config.duration_s.max(0.0));
    let mut next = start;
    while Instant::now() < end {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += period;
        if !m.cycle(device, k) {
            break;
        }
    }
    let _ = device.write(&Wrench::zero());
    let elapsed = start.elapsed().as_secs_f64();
    let (mean, sd, p99) = period_stats(&m.stamps, period);
    if !m.pmin.x.is_finite() {
        m.pmin = Vector3::zeros();
        m.pmax = Vector3::zeros();
    }
    let events = device.events();
    let (ramp_completed, stalls, velocity_cuts) = (
        events.count(crate::safety::SafetyEvent::RampComplete) > 0,
        events.count(crate::safety::SafetyEvent::Stall),
        events.count(crate::safety::SafetyEvent::VelocityLimit),
    );
    SelfTestReport {
        cycles: m.stamps.len() as u64,
        elapsed_s: elapsed,
        rate_hz: m.stamps.len() as f64 / elapsed.max(1e-9),
        period_mean_us: mean,
        jitter_sd_us: sd,
        jitter_p99_us: p99,
        position_min: m.pmin,
        position_max: m.pmax,
        max_force_n: m.max_force,
        stiffness_n_per_m: k,
        errors: m.errors,
        fault: m.fault,
        ramp_completed,
        stalls,
        velocity_cuts,
    }
}

/// The spring stiffness: the requested one, capped at a tenth of a known stable stiffness.
fn spring_stiffness(stable: f64, config: &SelfTestConfig) -> f64 {
    if stable > 0.0 {
        config.stiffness_n_per_m.min(0.1 * stable)
    } else {
        config.stiffness_n_per_m
    }
}

/// What the test loop records cycle by cycle.
struct Measurements {
    stamps: Vec<Instant>,
    pmin: Vector3<f64>,
    pmax: Vector3<f64>,
    max_force: f64,
    errors: u64,
    fault: Option<DeviceError>,
}

impl Measurements {
    /// Empty measurements with room for `capacity` time stamps.
    fn new(capacity: usize) -> Self {
        Self {
            stamps: Vec::with_capacity(capacity),
            pmin: Vector3::repeat(f64::INFINITY),
            pmax: Vector3::repeat(f64::NEG_INFINITY),
            max_force: 0.0,
            errors: 0,
            fault: None,
        }
    }

    /// Runs one cycle (stamp, read, spring, write); false after a fatal error.
    fn cycle<D: Device>(&mut self, device: &mut SafeDevice<D>, k: f64) -> bool {
        if self.stamps.len() < self.stamps.capacity() {
            self.stamps.push(Instant::now());
        }
        let w = match device.read() {
            Ok(s) => {
                let p = s.pose.position;
                self.pmin = self.pmin.inf(&p);
                self.pmax = self.pmax.sup(&p);
                Wrench::from_force(-k * p)
            }
            Err(e) => {
                if !self.record_error(e) {
                    return false;
                }
                Wrench::zero()
            }
        };
        match device.write(&w) {
            Ok(()) => self.max_force = self.max_force.max(device.last_output().force.norm()),
            Err(e) => return self.record_error(e),
        }
        true
    }

    /// Counts an error and keeps it when fatal; false when it is.
    fn record_error(&mut self, e: DeviceError) -> bool {
        self.errors += 1;
        if e.fatal().is_some() {
            self.fault = Some(e);
            return false;
        }
        true
    }
}

/// The mean, standard deviation and 99th-percentile deviation from `period` of the
/// intervals between `stamps`, µs.
fn period_stats(stamps: &[Instant], period: Duration) -> (f64, f64, f64) {
    let periods: Vec<f64> = stamps
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e6)
        .collect();
    let n = periods.len().max(1) as f64;
    let mean = periods.iter().sum::<f64>() / n;
    let sd = (periods.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / n).sqrt();
    let nominal = period.as_secs_f64() * 1e6;
    let mut dev: Vec<f64> = periods.iter().map(|p| (p - nominal).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let p99 = dev
        .get(((dev.len() as f64 * 0.99) as usize).min(dev.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0.0);
    (mean, sd, p99)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::SafetySettings;
    use crate::simulated::{HandTarget, SimConfig, SimulatedDevice, TargetSource};
    use crate::Pose;

    /// The simulated hand held 3 cm off centre: the spring pulls at k * 0.03 (within the
    /// ramp and the clamps), the position range covers the hand, the loop keeps its rate
    /// within 20% (a loaded CI machine misses some deadlines; the deadline schedule
    /// catches up, so the mean stays close).
    #[test]
    fn a_spring_to_the_centre_on_the_simulated_hand() {
        let target = Pose::from_position(Vector3::new(0.03, 0.0, 0.0));
        let sim = SimulatedDevice::new(
            SimConfig::default(),
            TargetSource::Fixed(HandTarget::new(target)),
        )
        .unwrap();
        let mut dev = SafeDevice::new(
            sim,
            SafetySettings {
                ramp_time_s: 0.05,
                small_force_n: 10.0,
                ..SafetySettings::default()
            },
        )
        .unwrap();
        let config = SelfTestConfig {
            duration_s: 0.4,
            ..SelfTestConfig::default()
        };
        let r = run(&mut dev, &config);
        assert_eq!(r.errors, 0);
        assert!(r.fault.is_none());
        assert!(r.rate_hz > 800.0 && r.rate_hz < 1200.0, "{r:?}");
        assert!(r.cycles > 300, "{r:?}");
        // The hand sits near x = 0.03 (the spring moves it a little toward the centre).
        assert!(r.position_max.x > 0.02 && r.position_max.x < 0.035, "{r:?}");
        // 100 N/m at most 3.5 cm: at most 3.5 N, and some force was sent.
        assert!(r.max_force_n > 0.5 && r.max_force_n <= 3.5, "{r:?}");
        assert_eq!(dev.last_output(), Wrench::zero(), "zero at the end");
    }
}
