//! What the vendor device tests share: a 1 kHz drive loop on absolute deadlines and the
//! overload command that the safety layer must ramp in and clamp.

use std::time::{Duration, Instant};

use haptics_devices::{Device, DeviceError, DeviceSample, Wrench};
use nalgebra::Vector3;

/// Drives `device` for `seconds` at 1 kHz on absolute deadlines: each cycle reads and
/// writes `command(t, sample)`, `t` counted from the first sample read (on a loaded
/// machine the first may come late, and a command that starts at zero must still do so
/// when the safety layer sees it); `command` ends the run early by returning `None`.
/// Stops at the first fatal error and returns it, with the number of cycles and the time
/// of the error (from the start).
pub fn drive_until(
    device: &mut dyn Device,
    seconds: f64,
    mut command: impl FnMut(f64, &DeviceSample) -> Option<Wrench>,
) -> (u64, Option<(DeviceError, f64)>) {
    let start = Instant::now();
    let mut next = start;
    let mut cycles = 0;
    let mut first_sample: Option<Instant> = None;
    while start.elapsed().as_secs_f64() < seconds {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += Duration::from_millis(1);
        let t = start.elapsed().as_secs_f64();
        let w = match device.read() {
            Ok(s) => {
                let t0 = *first_sample.get_or_insert_with(Instant::now);
                match command(t0.elapsed().as_secs_f64(), &s) {
                    Some(w) => w,
                    None => break,
                }
            }
            Err(e) if e.fatal().is_some() => return (cycles, Some((e, t))),
            Err(_) => Wrench::zero(),
        };
        if let Err(e) = device.write(&w) {
            if e.fatal().is_some() {
                return (cycles, Some((e, t)));
            }
        }
        cycles += 1;
    }
    (cycles, None)
}

/// The test command: zero for the first 20 ms (so the safety layer's small-force gate
/// opens), then within 10 ms a request far above any device maximum, with a large
/// torque: the layer must ramp it in and clamp it.
pub fn overload(t: f64) -> Wrench {
    let s = ((t - 0.02) / 0.01).clamp(0.0, 1.0);
    Wrench::new(
        Vector3::new(30.0, -40.0, 0.0) * s,
        Vector3::new(0.0, 0.0, 2.0) * s,
    )
}
