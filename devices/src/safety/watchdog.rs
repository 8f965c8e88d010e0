//! The stall watchdog: zero output when the haptic thread stops writing, checked from
//! another thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug)]
pub(super) struct WatchdogShared {
    pub(super) base: Instant,
    /// Nanoseconds since `base` of the latest write; u64::MAX = nothing to watch.
    pub(super) last_write_ns: AtomicU64,
    pub(super) timeout_ns: u64,
    pub(super) stalled: AtomicBool,
}

/// A handle a supervising thread uses to watch a [`super::SafeDevice`] that another thread
/// drives. Cheap to clone; lock-free.
///
/// The supervisor calls [`StallWatchdog::check_stall`] periodically; when the haptic
/// thread has not written for longer than the stall timeout it raises a flag, and the next
/// `write` or `read` of the device outputs zero, records [`super::SafetyEvent::Stall`] and
/// re-arms through the small-force gate and the ramp. (Zeroing the motors while the haptic
/// thread itself is stuck needs the device's own watchdog or exclusive access:
/// [`super::SafeDevice::check_stall`].)
#[derive(Debug, Clone)]
pub struct StallWatchdog {
    pub(super) shared: Arc<WatchdogShared>,
}

impl StallWatchdog {
    pub(super) fn new(timeout_s: f64) -> Self {
        Self {
            shared: Arc::new(WatchdogShared {
                base: Instant::now(),
                last_write_ns: AtomicU64::new(u64::MAX),
                timeout_ns: (timeout_s * 1e9) as u64,
                stalled: AtomicBool::new(false),
            }),
        }
    }

    pub(super) fn elapsed_ns(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.shared.base).as_nanos() as u64
    }

    pub(super) fn note_write(&self, armed: bool) {
        let v = if armed {
            self.elapsed_ns(Instant::now())
        } else {
            u64::MAX
        };
        self.shared.last_write_ns.store(v, Ordering::Release);
    }

    /// True (and the stall flag raised) when output is enabled and the last write is older
    /// than the stall timeout at `now`.
    pub fn check_stall(&self, now: Instant) -> bool {
        let last = self.shared.last_write_ns.load(Ordering::Acquire);
        if last == u64::MAX {
            return false;
        }
        let stalled = self.elapsed_ns(now).saturating_sub(last) > self.shared.timeout_ns;
        if stalled {
            self.shared.stalled.store(true, Ordering::Release);
        }
        stalled
    }

    pub(super) fn take_stall(&self) -> bool {
        self.shared.stalled.swap(false, Ordering::AcqRel)
    }
}
