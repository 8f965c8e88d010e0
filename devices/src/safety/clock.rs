//! The layer's clock (the device's timestamps, with bounded steps), and the clamp and
//! ramp of the output.

use nalgebra::Vector3;

/// The longest step the layer's clock takes between two samples, s: a device clock that
/// jumps further ahead counts as this long a gap (a stall, so output re-arms through the
/// gate and the ramp), never as years that a ramp or a watchdog would wait out.
pub const MAX_CLOCK_STEP_S: f64 = 1.0;

/// The safety layer's clock, driven by the device's sample times but robust to a faulty
/// device clock. While the device time only moves forward by at most
/// [`MAX_CLOCK_STEP_S`] per sample, the layer's time *is* the device time (bit for bit,
/// so well-behaved runs are unaffected). A step backwards counts as zero and a step
/// further ahead counts as [`MAX_CLOCK_STEP_S`]; from then on the clock runs on from that
/// point by the device's later steps. So a device clock that jumps to 1e300 s and back can
/// neither freeze a ramp forever nor make the stall watchdog wait for it to come back.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LayerClock {
    /// The latest device time, if any.
    pub(super) last_device_s: Option<f64>,
    /// After a glitch: (layer time, device time) at the latest glitch.
    pub(super) base: Option<(f64, f64)>,
    /// The latest layer time.
    pub(super) now_s: f64,
}

impl LayerClock {
    /// Advances to a (finite) device time; returns the layer time.
    pub fn advance(&mut self, device_s: f64) -> f64 {
        let Some(last) = self.last_device_s else {
            self.last_device_s = Some(device_s);
            self.now_s = device_s;
            return device_s;
        };
        let step = device_s - last;
        if !(0.0..=MAX_CLOCK_STEP_S).contains(&step) {
            let clamped = step.clamp(0.0, MAX_CLOCK_STEP_S);
            self.base = Some((self.now_s + clamped, device_s));
        }
        self.last_device_s = Some(device_s);
        // Never backwards, even by rounding after a re-base.
        let now = match self.base {
            None => device_s,
            Some((layer, device)) => layer + (device_s - device),
        };
        self.now_s = now.max(self.now_s);
        self.now_s
    }
}

/// Scales `v` down to magnitude `max` (keeping its direction); returns whether it did.
/// A non-positive `max` gives zero.
pub fn clamp_magnitude(v: Vector3<f64>, max: f64) -> (Vector3<f64>, bool) {
    let n = v.norm();
    if max <= 0.0 {
        return (Vector3::zeros(), n > 0.0);
    }
    if n > max {
        (v * (max / n), true)
    } else {
        (v, false)
    }
}

/// The linear ramp's scale after `elapsed` of `duration` seconds, in [0, 1].
pub fn ramp_scale(elapsed: f64, duration: f64) -> f64 {
    if duration <= 0.0 {
        1.0
    } else {
        (elapsed / duration).clamp(0.0, 1.0)
    }
}
