//! A recording tap: wraps any device and, while recording is switched on, passes every
//! cycle's sample and the wrench sent for it to another thread through a bounded channel.
//!
//! This is how an interactive session records a trajectory without doing I/O in the
//! haptic loop: `try_send` on a bounded crossbeam channel never blocks and never
//! allocates; the receiving thread drains it and writes the file. If the receiver falls
//! more than the channel's capacity behind, samples are dropped and counted (a recording
//! with drops is not a faithful replay input, and the count says so).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use crate::{trajectory::TrajectorySample, Device, DeviceError, DeviceInfo, DeviceSample, Wrench};

/// The switch and drop counter shared between a [`TapDevice`] and its owner.
#[derive(Debug, Default)]
pub struct TapControl {
    recording: AtomicBool,
    dropped: AtomicU64,
}

impl TapControl {
    /// Starts or stops passing samples on.
    pub fn set_recording(&self, on: bool) {
        if on {
            self.dropped.store(0, Ordering::Relaxed);
        }
        self.recording.store(on, Ordering::Release);
    }

    pub fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// Samples lost since recording started because the channel was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A device that forwards every (sample, wrench) pair while recording is on.
pub struct TapDevice<D> {
    inner: D,
    last: Option<TrajectorySample>,
    tx: Sender<(TrajectorySample, Wrench)>,
    control: Arc<TapControl>,
}

impl<D: Device> TapDevice<D> {
    /// Wraps `inner`; the returned receiver gets the pairs (at most `capacity` queued).
    pub fn new(
        inner: D,
        capacity: usize,
    ) -> (Self, Receiver<(TrajectorySample, Wrench)>, Arc<TapControl>) {
        let (tx, rx) = crossbeam_channel::bounded(capacity.max(1));
        let control = Arc::new(TapControl::default());
        (
            TapDevice {
                inner,
                last: None,
                tx,
                control: control.clone(),
            },
            rx,
            control,
        )
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: Device> Device for TapDevice<D> {
    fn rearm(&mut self) {
        self.inner.rearm()
    }

    fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        let s = self.inner.read();
        self.last = s.as_ref().ok().map(|s| (*s).into());
        s
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        let result = self.inner.write(wrench);
        if self.control.is_recording() {
            if let Some(s) = self.last.take() {
                if self.tx.try_send((s, *wrench)).is_err() {
                    self.control.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        result
    }

    fn reconnect(&mut self) -> Result<(), DeviceError> {
        self.inner.reconnect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        simulated::HandTarget, simulated::SimConfig, simulated::SimulatedDevice,
        simulated::TargetSource, Pose,
    };
    use nalgebra::Vector3;

    fn device() -> SimulatedDevice {
        let target = HandTarget::new(Pose {
            position: Vector3::new(0.01, 0.0, 0.0),
            ..Pose::default()
        });
        SimulatedDevice::new(SimConfig::ideal(), TargetSource::Fixed(target)).unwrap()
    }

    #[test]
    fn forwards_only_while_recording_and_counts_drops() {
        let (mut tap, rx, control) = TapDevice::new(device(), 3);
        let cycle = |tap: &mut TapDevice<SimulatedDevice>, f: f64| {
            tap.read().unwrap();
            tap.write(&Wrench {
                force: Vector3::new(f, 0.0, 0.0),
                torque: Vector3::zeros(),
            })
            .unwrap();
        };
        cycle(&mut tap, 1.0);
        assert!(rx.try_recv().is_err(), "nothing is sent before recording");
        control.set_recording(true);
        for i in 0..5 {
            cycle(&mut tap, i as f64);
        }
        let got: Vec<_> = rx.try_iter().collect();
        assert_eq!(got.len(), 3);
        assert_eq!(control.dropped(), 2);
        assert_eq!(got[1].1.force.x, 1.0);
        assert!(got[0].0.time_s < got[1].0.time_s);
        control.set_recording(false);
        cycle(&mut tap, 9.0);
        assert!(rx.try_recv().is_err());
    }
}
