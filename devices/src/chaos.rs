//! An adversarial device for soak tests: [`ChaosDevice`] wraps any [`Device`] and, at
//! seeded random cycles, corrupts what it reports and how it behaves, the way failing
//! hardware, drivers and cables do:
//! - non-finite readings (NaN or ±inf in a pose coordinate, the orientation or the time);
//! - absurd readings (a coordinate of ±1e308 or ±f64::MAX);
//! - teleports (the pose jumps up to a metre away for a few samples, then comes back);
//! - bad orientations (a zero, non-unit or NaN quaternion);
//! - clock glitches (the sample time jumps back, or 1e300 s ahead, for one sample);
//! - stalls (the device time skips ahead by tens of milliseconds, as when the haptic loop
//!   was not scheduled);
//! - disconnects (reads and writes fail, and reconnecting fails, for a number of reads
//!   or reconnect attempts);
//! - write errors (a write times out);
//! - button chatter (random buttons flip on a sample).
//!
//! It also watches what reaches it through `write`, which is what would reach the
//! hardware: [`ChaosStats`] keeps the largest force and torque written and counts
//! non-finite writes. Everything is allocation-free and deterministic for a seed.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use crate::Device;

use crate::DeviceError;

use crate::DeviceInfo;

use crate::DeviceSample;

use crate::rng::SplitMix64;
use crate::Wrench;

/// The kinds of fault a [`ChaosDevice`] injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// NaN or ±inf in a pose coordinate, the orientation or the time.
    NonFinite,
    /// A coordinate of ±1e308 or ±f64::MAX.
    Absurd,
    /// The pose jumps up to [`ChaosConfig::teleport_m`] away for a few samples.
    Teleport,
    /// A zero, non-unit or NaN orientation quaternion.
    BadOrientation,
    /// The sample time jumps back, or 1e300 s ahead, for one sample.
    ClockGlitch,
    /// The device time skips [`ChaosConfig::stall_s`] ahead (the loop was not scheduled).
    Stall,
    /// Unplugged for [`ChaosConfig::disconnect_cycles`] reads or reconnect attempts.
    Disconnect,
    /// A write fails with a timeout.
    WriteError,
    /// Random buttons flip.
    ButtonChatter,
}

impl Fault {
    /// Every kind, in the order of [`ChaosStats::injected`].
    pub const ALL: [Fault; 9] = [
        Fault::NonFinite,
        Fault::Absurd,
        Fault::Teleport,
        Fault::BadOrientation,
        Fault::ClockGlitch,
        Fault::Stall,
        Fault::Disconnect,
        Fault::WriteError,
        Fault::ButtonChatter,
    ];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Fault::NonFinite => "non-finite reading",
            Fault::Absurd => "absurd reading",
            Fault::Teleport => "teleport",
            Fault::BadOrientation => "bad orientation",
            Fault::ClockGlitch => "clock glitch",
            Fault::Stall => "stall",
            Fault::Disconnect => "disconnect",
            Fault::WriteError => "write error",
            Fault::ButtonChatter => "button chatter",
        }
    }

    fn index(self) -> usize {
        Fault::ALL.iter().position(|&f| f == self).unwrap_or(0)
    }
}

/// How often and how hard a [`ChaosDevice`] misbehaves. Probabilities are per read (per
/// write for [`Fault::WriteError`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosConfig {
    /// Seed of the fault schedule.
    pub seed: u64,
    /// Probability per read of each kind, in the order of [`Fault::ALL`].
    pub probability: [f64; 9],
    /// Largest teleport distance, m.
    pub teleport_m: f64,
    /// Reads a teleport lasts, at most.
    pub teleport_cycles: u32,
    /// Device time skipped by a stall, s.
    pub stall_s: f64,
    /// Reads (or reconnect attempts) a disconnect lasts.
    pub disconnect_cycles: u32,
    /// Buttons that chatter (a mask).
    pub chatter_mask: u32,
}

impl Default for ChaosConfig {
    /// About one fault every 50 cycles, spread over every kind.
    fn default() -> Self {
        Self {
            seed: 1,
            probability: [4e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3, 5e-4, 2e-3, 4e-3],
            teleport_m: 1.0,
            teleport_cycles: 20,
            stall_s: 0.03,
            disconnect_cycles: 200,
            chatter_mask: 0b11,
        }
    }
}

/// What a [`ChaosDevice`] injected and what was written to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChaosStats {
    /// Reads asked for.
    pub reads: u64,
    /// Writes asked for (failed ones included).
    pub writes: u64,
    /// Faults injected, by kind, in the order of [`Fault::ALL`].
    pub injected: [u64; 9],
    /// Largest force magnitude written, N.
    pub max_force_n: f64,
    /// Largest torque magnitude written, N·m.
    pub max_torque_nm: f64,
    /// Writes with a non-finite component.
    pub non_finite_writes: u64,
    /// Writes with a non-zero force.
    pub nonzero_writes: u64,
}

impl ChaosStats {
    /// Faults injected of one kind.
    pub fn count(&self, fault: Fault) -> u64 {
        self.injected[fault.index()]
    }

    /// Faults injected in all.
    pub fn total(&self) -> u64 {
        self.injected.iter().sum()
    }
}

/// A device that injects faults into another (see the module documentation).
pub struct ChaosDevice<D: Device> {
    inner: D,
    config: ChaosConfig,
    rng: SplitMix64,
    stats: ChaosStats,
    /// Seconds added to every inner time (stalls accumulate).
    time_shift: f64,
    /// Reads left of the current disconnect.
    unplugged: u32,
    /// The current teleport offset and reads left.
    teleport: (Vector3<f64>, u32),
}

impl<D: Device> ChaosDevice<D> {
    /// Wraps `inner`.
    pub fn new(inner: D, config: ChaosConfig) -> Self {
        let rng = SplitMix64::new(config.seed);
        Self {
            inner,
            config,
            rng,
            stats: ChaosStats::default(),
            time_shift: 0.0,
            unplugged: 0,
            teleport: (Vector3::zeros(), 0),
        }
    }

    /// What was injected and written so far.
    pub fn stats(&self) -> &ChaosStats {
        &self.stats
    }

    /// Whether the device is currently unplugged.
    pub fn is_unplugged(&self) -> bool {
        self.unplugged > 0
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Stops injecting faults (a clean tail to check recovery).
    pub fn calm(&mut self) {
        self.config.probability = [0.0; 9];
    }

    fn roll(&mut self, fault: Fault) -> bool {
        let hit = self.rng.next_f64() < self.config.probability[fault.index()];
        if hit {
            self.stats.injected[fault.index()] += 1;
        }
        hit
    }

    /// A non-finite number: NaN, inf or -inf.
    fn non_finite(&mut self) -> f64 {
        [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][self.rng.below(3) as usize]
    }

    fn absurd(&mut self) -> f64 {
        [1e308, -1e308, f64::MAX, f64::MIN][self.rng.below(4) as usize]
    }

    fn corrupt(&mut self, s: &mut DeviceSample) {
        if self.roll(Fault::NonFinite) {
            let v = self.non_finite();
            match self.rng.below(3) {
                0 => s.pose.position[self.rng.below(3) as usize] = v,
                1 => {
                    let mut q = *s.pose.orientation.quaternion();
                    q.coords[self.rng.below(4) as usize] = v;
                    s.pose.orientation = UnitQuaternion::new_unchecked(q);
                }
                _ => s.time_s = v,
            }
        }
        if self.roll(Fault::Absurd) {
            let v = self.absurd();
            s.pose.position[self.rng.below(3) as usize] = v;
        }
        if self.roll(Fault::Teleport) {
            let dir = Vector3::new(
                self.rng.next_gaussian(),
                self.rng.next_gaussian(),
                self.rng.next_gaussian(),
            );
            let len = self.config.teleport_m * self.rng.next_f64();
            let n = dir.norm();
            let offset = if n > 0.0 { dir * (len / n) } else { dir };
            let cycles = 1 + self
                .rng
                .below(u64::from(self.config.teleport_cycles.max(1)))
                as u32;
            self.teleport = (offset, cycles);
        }
        if self.teleport.1 > 0 {
            s.pose.position += self.teleport.0;
            self.teleport.1 -= 1;
        }
        if self.roll(Fault::BadOrientation) {
            let q = match self.rng.below(3) {
                0 => Quaternion::new(0.0, 0.0, 0.0, 0.0),
                1 => *s.pose.orientation.quaternion() * 3.0,
                _ => Quaternion::new(f64::NAN, 0.0, 0.0, 0.0),
            };
            s.pose.orientation = UnitQuaternion::new_unchecked(q);
        }
        if self.roll(Fault::ClockGlitch) {
            s.time_s = if self.rng.below(2) == 0 {
                s.time_s - 1.0 - 10.0 * self.rng.next_f64()
            } else {
                1e300
            };
        }
        if self.roll(Fault::ButtonChatter) {
            s.buttons ^= (self.rng.next_u64() as u32) & self.config.chatter_mask;
        }
    }
}

impl<D: Device> Device for ChaosDevice<D> {
    fn rearm(&mut self) {
        self.inner.rearm()
    }

    fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        self.stats.reads += 1;
        if self.unplugged > 0 {
            self.unplugged -= 1;
            return Err(DeviceError::Disconnected(String::new()));
        }
        if self.roll(Fault::Disconnect) {
            self.unplugged = self.config.disconnect_cycles;
            return Err(DeviceError::Disconnected(String::new()));
        }
        if self.roll(Fault::Stall) {
            self.time_shift += self.config.stall_s;
        }
        let mut s = self.inner.read()?;
        s.time_s += self.time_shift;
        self.corrupt(&mut s);
        Ok(s)
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        self.stats.writes += 1;
        if !wrench.is_finite() {
            self.stats.non_finite_writes += 1;
        }
        let (f, t) = (wrench.force.norm(), wrench.torque.norm());
        // `max` ignores NaN; non-finite writes are counted above.
        self.stats.max_force_n = self.stats.max_force_n.max(f);
        self.stats.max_torque_nm = self.stats.max_torque_nm.max(t);
        if f > 0.0 {
            self.stats.nonzero_writes += 1;
        }
        if self.unplugged > 0 {
            return Err(DeviceError::Disconnected(String::new()));
        }
        if self.rng.next_f64() < self.config.probability[Fault::WriteError.index()] {
            self.stats.injected[Fault::WriteError.index()] += 1;
            return Err(DeviceError::Timeout { timeout_ms: 1 });
        }
        // The wrapped device only ever sees finite values, as real hardware must.
        if wrench.is_finite() {
            self.inner.write(wrench)
        } else {
            self.inner.write(&Wrench::zero())
        }
    }

    fn reconnect(&mut self) -> Result<(), DeviceError> {
        // A safety layer stops reading while disconnected and only tries to reconnect:
        // attempts count down the disconnect as reads do.
        if self.unplugged > 0 {
            self.unplugged -= 1;
            Err(DeviceError::Disconnected(String::new()))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pose;

    /// A steady device: 1 ms samples at the origin.
    struct Steady {
        info: DeviceInfo,
        t: f64,
    }

    impl Device for Steady {
        fn info(&self) -> &DeviceInfo {
            &self.info
        }
        fn read(&mut self) -> Result<DeviceSample, DeviceError> {
            self.t += 1e-3;
            Ok(DeviceSample {
                time_s: self.t,
                pose: Pose::identity(),
                buttons: 0,
            })
        }
        fn write(&mut self, _: &Wrench) -> Result<(), DeviceError> {
            Ok(())
        }
    }

    fn steady() -> Steady {
        Steady {
            info: DeviceInfo::phantom_premium_6dof(),
            t: 0.0,
        }
    }

    #[test]
    fn every_fault_kind_is_injected_and_deterministic_for_a_seed() {
        let config = ChaosConfig {
            probability: [0.02; 9],
            ..ChaosConfig::default()
        };
        let run = || {
            let mut d = ChaosDevice::new(steady(), config.clone());
            let mut bad = 0;
            for _ in 0..20_000 {
                match d.read() {
                    Ok(s) if !(s.pose.is_finite() && s.time_s.is_finite()) => bad += 1,
                    _ => {}
                }
                let _ = d.write(&Wrench::from_force(Vector3::new(1.0, 0.0, 0.0)));
            }
            (d.stats().clone(), bad)
        };
        let (a, bad) = run();
        assert_eq!((a.clone(), bad), run());
        for f in Fault::ALL {
            assert!(a.count(f) > 10, "{}: {}", f.name(), a.count(f));
        }
        assert!(bad > 100, "{bad} non-finite samples");
        assert_eq!(a.reads, 20_000);
        assert_eq!(a.max_force_n, 1.0);
    }

    #[test]
    fn writes_are_watched_and_non_finite_ones_never_pass_through() {
        let mut d = ChaosDevice::new(steady(), ChaosConfig::default());
        d.calm();
        d.write(&Wrench::from_force(Vector3::new(f64::NAN, 0.0, 0.0)))
            .unwrap();
        d.write(&Wrench::new(Vector3::new(3.0, 4.0, 0.0), Vector3::zeros()))
            .unwrap();
        assert_eq!(d.stats().non_finite_writes, 1);
        assert_eq!(d.stats().max_force_n, 5.0);
        assert_eq!(d.stats().total(), 0);
    }

    #[test]
    fn a_disconnect_lasts_its_cycles_and_then_reconnects() {
        let config = ChaosConfig {
            probability: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            disconnect_cycles: 3,
            ..ChaosConfig::default()
        };
        let mut d = ChaosDevice::new(steady(), config);
        assert!(d.read().is_err());
        d.calm();
        assert!(d.reconnect().is_err());
        for _ in 0..2 {
            assert!(d.read().is_err());
        }
        assert!(d.reconnect().is_ok());
        assert!(d.read().is_ok());
    }
}
