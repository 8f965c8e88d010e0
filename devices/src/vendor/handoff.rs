//! The lock-free exchange between the haptic thread and a vendor's servo thread.
//!
//! OpenHaptics runs its own 1 kHz servo thread and calls our callback in it; the haptic
//! thread runs the simulation on its own clock. They share state through two
//! single-writer slots: the servo callback publishes the latest stylus sample, the haptic
//! thread publishes the latest wrench. Each slot is a sequence lock over `f64`s stored in
//! atomics (so a torn read is detected and retried, never undefined behaviour): no lock,
//! no allocation, and a reader never waits on the writer. A reader that keeps meeting a
//! write in progress gives up after [`MAX_RETRIES`] tries: a write takes tens of
//! nanoseconds, but a writer preempted in the middle of one leaves the slot torn for its
//! whole time slice, so readers keep their previous consistent values then (the servo
//! side sends zero; the haptic side reuses the previous frame).
//!
//! Why not run the simulation inside the callback: the haptic thread already owns the
//! cycle, the safety layer, recording and the renderer's snapshots for every other device;
//! a hand-off keeps them identical for vendor devices, at the cost of up to one servo
//! period of extra age on the pose (bounded: the servo side zeroes a wrench older than
//! [`crate::vendor::openhaptics::STALE_FRAMES`] frames).

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Tries before [`SeqSlot::load`] reports contention.
pub const MAX_RETRIES: usize = 64;

/// `N` `f64`s written by one thread and read by others, without locks.
pub struct SeqSlot<const N: usize> {
    /// Even: stable; odd: a write is in progress.
    seq: AtomicU64,
    data: [AtomicU64; N],
}

impl<const N: usize> Default for SeqSlot<N> {
    fn default() -> Self {
        Self::new([0.0; N])
    }
}

impl<const N: usize> SeqSlot<N> {
    /// A slot holding `values`.
    pub fn new(values: [f64; N]) -> Self {
        Self {
            seq: AtomicU64::new(0),
            data: values.map(|v| AtomicU64::new(v.to_bits())),
        }
    }

    /// Publishes `values`. Only one thread may write a given slot.
    pub fn store(&self, values: &[f64; N]) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (slot, v) in self.data.iter().zip(values) {
            slot.store(v.to_bits(), Ordering::Relaxed);
        }
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The latest published values, or `None` after [`MAX_RETRIES`] torn reads.
    pub fn load(&self) -> Option<[f64; N]> {
        for _ in 0..MAX_RETRIES {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let mut out = [0.0; N];
            for (o, slot) in out.iter_mut().zip(&self.data) {
                *o = f64::from_bits(slot.load(Ordering::Relaxed));
            }
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == s1 {
                return Some(out);
            }
            std::hint::spin_loop();
        }
        None
    }

    /// How many times the slot was written.
    pub fn version(&self) -> u64 {
        self.seq.load(Ordering::Acquire) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn stores_and_loads() {
        let s = SeqSlot::<3>::new([1.0, 2.0, 3.0]);
        assert_eq!(s.load(), Some([1.0, 2.0, 3.0]));
        s.store(&[4.0, f64::NAN, -0.0]);
        let v = s.load().unwrap();
        assert_eq!(v[0], 4.0);
        assert!(v[1].is_nan());
        assert_eq!(v[2].to_bits(), (-0.0f64).to_bits());
        assert_eq!(s.version(), 1);
    }

    /// A writer stores [k; 8] for k = 1, 2, ...; concurrent readers must only ever see
    /// eight equal values (never a mix of two writes) and never go backwards.
    #[test]
    fn readers_never_see_a_torn_write() {
        let slot = Arc::new(SeqSlot::<8>::default());
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (slot, stop) = (slot.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut k = 0.0;
                while !stop.load(Ordering::Relaxed) {
                    k += 1.0;
                    slot.store(&[k; 8]);
                }
                k
            })
        };
        let mut seen = 0usize;
        let mut last = 0.0;
        let start = std::time::Instant::now();
        while start.elapsed().as_millis() < 300 {
            if let Some(v) = slot.load() {
                assert!(v.iter().all(|x| *x == v[0]), "torn read {v:?}");
                assert!(v[0] >= last, "went backwards: {} after {last}", v[0]);
                last = v[0];
                seen += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().unwrap();
        assert!(seen > 1000, "only {seen} consistent reads");
        assert!(written >= last);
    }
}
