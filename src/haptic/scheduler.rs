//! A fixed-period scheduler for the haptic thread: sleep until shortly before the next
//! deadline (the OS timer is coarse and late by tens of microseconds), then spin on the
//! monotonic clock to the deadline. Deadlines advance by whole periods from the start, so
//! the rate does not drift; after an overrun the schedule skips the missed deadlines
//! instead of bursting to catch up, and reports how many were missed.

use std::time::{Duration, Instant};

/// Hybrid sleep/spin periodic scheduler.
#[derive(Debug, Clone)]
pub struct PeriodicScheduler {
    period: Duration,
    /// How long before a deadline sleeping stops and spinning starts.
    spin: Duration,
    next: Instant,
}

/// The most a haptic loop may run at (10 kHz).
pub const MAX_RATE_HZ: f64 = 10_000.0;

impl PeriodicScheduler {
    /// A scheduler at `rate_hz` (clamped to 1 Hz..=10 kHz), first deadline one period
    /// from now. `spin` is the spin margin (200 us is safe on Linux).
    pub fn new(rate_hz: f64, spin: Duration) -> Self {
        let rate = rate_hz.clamp(1.0, MAX_RATE_HZ);
        let period = Duration::from_secs_f64(1.0 / rate);
        PeriodicScheduler {
            period,
            spin,
            next: Instant::now() + period,
        }
    }

    /// The time between deadlines: 1 / rate, after clamping the rate.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Waits for the next deadline. Returns the number of deadlines missed before it (0
    /// normally).
    pub fn wait(&mut self) -> u64 {
        let now = Instant::now();
        let mut missed = 0;
        if now > self.next + self.period {
            // Overran by more than a period: skip the missed deadlines.
            let behind = (now - self.next).as_nanos() / self.period.as_nanos().max(1);
            missed = behind as u64;
            self.next += self.period * behind as u32;
        }
        let deadline = self.next;
        if let Some(sleep) = deadline.checked_duration_since(Instant::now()) {
            if sleep > self.spin {
                std::thread::sleep(sleep - self.spin);
            }
        }
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
        self.next = deadline + self.period;
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wake-ups are never early: cycle k ends at or after start + k periods (the
    /// deadlines are multiples of the period, so there is no drift). The upper bound is
    /// loose because the test machines are shared.
    #[test]
    fn never_wakes_early_and_does_not_drift() {
        let start = Instant::now();
        let mut s = PeriodicScheduler::new(1000.0, Duration::from_micros(200));
        let mut k = 0u64;
        for _ in 0..200 {
            k += 1 + s.wait();
            let due = Duration::from_micros(1000 * k);
            assert!(start.elapsed() >= due, "cycle {k} woke early");
        }
        assert!(start.elapsed() < Duration::from_millis(200 + 500));
    }

    /// After a 5 ms stall at 1 kHz at least 3 deadlines were missed and are skipped, not
    /// replayed in a burst: the next deadline is on the schedule's grid after the stall
    /// ended (a burst would leave it among the missed ones, in the past), and the wait
    /// that follows is not early. Asserted on the deadlines, not on wall-clock gaps,
    /// which a loaded machine stretches either way.
    #[test]
    fn skips_missed_deadlines_after_an_overrun() {
        let mut s = PeriodicScheduler::new(1000.0, Duration::from_micros(200));
        s.wait();
        let grid = s.next;
        std::thread::sleep(Duration::from_millis(5));
        let stalled_until = Instant::now();
        let missed = s.wait();
        assert!(missed >= 3, "{missed}");
        assert!(s.next > stalled_until, "a missed deadline is still due");
        let on_grid = (s.next - grid).as_nanos() % s.period.as_nanos();
        assert_eq!(on_grid, 0, "the schedule drifted");
        let due = s.next;
        s.wait();
        assert!(Instant::now() >= due, "woke before the deadline");
    }
}
