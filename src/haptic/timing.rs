//! Per-cycle timing of the haptic loop: a fixed histogram (1 us bins up to 20 ms, so
//! recording never allocates), percentiles, the maximum, and overruns (cycles longer than
//! the period). A missed deadline is counted and reported, never hidden (docs/architecture.md).

/// Bin width in nanoseconds.
const BIN_NS: u64 = 1_000;
/// Number of bins (20 ms); longer cycles land in the last bin and in `max`.
const BINS: usize = 20_000;

/// A histogram of cycle durations.
#[derive(Debug, Clone)]
pub struct CycleStats {
    bins: Box<[u32; BINS]>,
    count: u64,
    max_ns: u64,
    sum_ns: u64,
    overruns: u64,
    period_ns: u64,
}

/// A summary of [`CycleStats`] in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimingSummary {
    /// Cycles recorded.
    pub cycles: u64,
    /// Mean cycle duration (us).
    pub mean_us: f64,
    /// Median cycle duration (us; the upper edge of its 1 us bin).
    pub p50_us: f64,
    /// 99th-percentile cycle duration (us; upper bin edge).
    pub p99_us: f64,
    /// 99.9th-percentile cycle duration (us; upper bin edge).
    pub p999_us: f64,
    /// Longest cycle (us, exact).
    pub max_us: f64,
    /// Cycles longer than the period.
    pub overruns: u64,
}

impl CycleStats {
    /// Statistics for a loop of period `period_ns`.
    pub fn new(period_ns: u64) -> Self {
        CycleStats {
            bins: Box::new([0; BINS]),
            count: 0,
            max_ns: 0,
            sum_ns: 0,
            overruns: 0,
            period_ns,
        }
    }

    /// Records one cycle (allocation-free).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let bin = ((ns / BIN_NS) as usize).min(BINS - 1);
        self.bins[bin] = self.bins[bin].saturating_add(1);
        self.count += 1;
        self.sum_ns += ns;
        self.max_ns = self.max_ns.max(ns);
        if ns > self.period_ns {
            self.overruns += 1;
        }
    }

    /// Forgets everything recorded.
    pub fn clear(&mut self) {
        self.bins.fill(0);
        self.count = 0;
        self.max_ns = 0;
        self.sum_ns = 0;
        self.overruns = 0;
    }

    /// Number of cycles recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Number of recorded cycles longer than the period.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// The duration below which a fraction `p` of cycles fall (upper bin edge, so the
    /// percentile is never understated), in microseconds.
    pub(crate) fn percentile_us(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let target = ((p * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (i, &b) in self.bins.iter().enumerate() {
            seen += b as u64;
            if seen >= target {
                let edge = ((i as u64 + 1) * BIN_NS).min(self.max_ns.max(BIN_NS));
                return edge as f64 / 1000.0;
            }
        }
        self.max_ns as f64 / 1000.0
    }

    /// Count, mean, percentiles, maximum and overruns, in microseconds.
    pub fn summary(&self) -> TimingSummary {
        TimingSummary {
            cycles: self.count,
            mean_us: if self.count == 0 {
                0.0
            } else {
                self.sum_ns as f64 / self.count as f64 / 1000.0
            },
            p50_us: self.percentile_us(0.5),
            p99_us: self.percentile_us(0.99),
            p999_us: self.percentile_us(0.999),
            max_us: self.max_ns as f64 / 1000.0,
            overruns: self.overruns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut s = CycleStats::new(1_000_000);
        // 1000 cycles: 990 of 100 us, 9 of 500 us, 1 of 3 ms (an overrun).
        for _ in 0..990 {
            s.record(100_000);
        }
        for _ in 0..9 {
            s.record(500_000);
        }
        s.record(3_000_000);
        let t = s.summary();
        assert_eq!(t.cycles, 1000);
        assert_eq!(t.overruns, 1);
        assert_eq!(t.p50_us, 101.0);
        assert_eq!(t.p99_us, 101.0);
        assert_eq!(t.p999_us, 501.0);
        assert_eq!(t.max_us, 3000.0);
        // Cycles beyond the histogram land in the last bin and in the maximum.
        s.record(50_000_000);
        assert_eq!(s.summary().max_us, 50_000.0);
        assert_eq!(s.percentile_us(1.0), 20_000.0);
    }
}
