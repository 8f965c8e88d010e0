//! The safety layer shared by every device: [`SafeDevice`] wraps any [`Device`] and decides
//! what force actually reaches the hardware.
//!
//! Why a separate layer: a haptic device can hurt its user or itself. A simulation that
//! blows up (NaN), a contact that asks for 50 N, a stylus grabbed while the coupling spring
//! is stretched, a haptic thread that stops writing while the motors hold the last force, a
//! cable pulled mid-run — each must end in zero or bounded force no matter which device or
//! which renderer is behind it. The layer is device-agnostic and configured by
//! [`SafetySettings`] (the `[safety]` table of a device profile).
//!
//! What it does, in the order applied to a commanded wrench on `write`:
//! 1. **non-finite** force or torque → zero output and [`SafetyEvent::NonFiniteForce`]; the
//!    output must then pass the wait-for-small-force gate again;
//! 2. **clamps**: the force and torque magnitudes are limited to the smaller of the device
//!    maximum and the settings maximum, keeping the direction
//!    ([`SafetyEvent::ForceClamped`], [`SafetyEvent::TorqueClamped`]);
//! 3. **velocity limit**: when the last read showed the stylus moving faster than the limit,
//!    output is zero ([`SafetyEvent::VelocityLimit`]) until it slows down, then re-enables
//!    through the gate and the ramp;
//! 4. **enable state**: zero while the deadman (enable) button is released; after enabling,
//!    zero until the commanded force and torque are below the small-force threshold (so the
//!    stylus does not jump), then a linear **ramp** from 0 to full scale over
//!    `ramp_time_s`;
//! 5. **impulse limit**: a leaky integral of |F| over a window (time constant
//!    `impulse_window_s`) may not exceed `max_impulse_n_s`; the output is scaled down to fit
//!    ([`SafetyEvent::ImpulseLimit`]).
//!
//! And around the cycle: a **stall watchdog** (no `write` for `stall_timeout_s` → zero is
//! written at once and [`SafetyEvent::Stall`] recorded; checked on every `read`, by
//! [`SafeDevice::check_stall`], and from another thread through a [`StallWatchdog`]);
//! **disconnect** → zero, [`SafetyEvent::Disconnected`], and reconnect attempts every
//! `reconnect_interval_s` on later reads. On request ([`Device::rearm`], which the haptic
//! thread sends after a simulation reset) output goes back to the gate and the ramp.
//!
//! Time is the device clock (the timestamp of the latest sample), so simulated and replayed
//! runs are deterministic. `read` and `write` neither allocate nor lock: events go to a
//! fixed-capacity ring ([`EventLog`]) with per-kind counters that the caller drains.

use std::time::Instant;

use nalgebra::Vector3;

use crate::Device;

use crate::DeviceError;

use crate::DeviceInfo;

use crate::DeviceSample;

use crate::Wrench;

mod clock;
mod events;
mod settings;
#[cfg(test)]
mod tests;
mod watchdog;

pub use clock::{clamp_magnitude, ramp_scale, LayerClock, MAX_CLOCK_STEP_S};
pub use events::{EventLog, EventRecord, SafetyEvent, EVENT_CAPACITY};
pub use settings::{clutch_mask, SafetySettings, DEFAULT_CLUTCH_BUTTON};
pub use watchdog::StallWatchdog;

/// Where the output stage is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OutputState {
    /// The deadman button is released: zero output.
    Disabled,
    /// Enabled, output zero until the commanded force is small.
    WaitSmall,
    /// Ramping from zero to full scale since `start_s` (device time).
    Ramping { start_s: f64 },
    /// Full scale.
    Active,
    /// The device is gone; reads try to reconnect.
    Disconnected,
}

/// The safety layer around a device. Implements [`Device`] itself, so it composes.
pub struct SafeDevice<D: Device> {
    inner: D,
    settings: SafetySettings,
    max_force: f64,
    max_torque: f64,
    state: OutputState,
    /// The layer's clock at the latest good sample (see [`LayerClock`]).
    now_s: f64,
    clock: LayerClock,
    prev_sample: Option<DeviceSample>,
    /// Sample time current at the latest write (None: nothing written since (re)arming).
    last_write_s: Option<f64>,
    brake: bool,
    impulse: f64,
    last_output: Wrench,
    events: EventLog,
    watchdog: StallWatchdog,
    last_reconnect_attempt: Option<Instant>,
    /// A fatal vendor fault: output stays zero and every call reports it.
    fatal: Option<crate::vendor::VendorFault>,
    /// False for devices with fewer than 6 actuated DOF: torque is never sent.
    torque_out: bool,
}

impl<D: Device> SafeDevice<D> {
    /// Wraps `inner`. Fails when the settings are out of range.
    pub fn new(inner: D, settings: SafetySettings) -> Result<Self, DeviceError> {
        settings.validate().map_err(DeviceError::InvalidSettings)?;
        let info = inner.info();
        let cap = |dev: f64, extra: Option<f64>| {
            let dev = if dev.is_finite() { dev.max(0.0) } else { 0.0 };
            extra.map_or(dev, |e| e.min(dev))
        };
        let max_force = cap(info.max_force_n, settings.max_force_n);
        let max_torque = cap(info.max_torque_nm, settings.max_torque_nm);
        let torque_out = info.dof_actuated >= 6;
        let state = if settings.enable_button.is_some() {
            OutputState::Disabled
        } else {
            OutputState::WaitSmall
        };
        let watchdog = StallWatchdog::new(settings.stall_timeout_s);
        let mut events = EventLog::default();
        if settings.enable_button.is_none() {
            events.record(f64::NAN, SafetyEvent::Enabled);
        }
        Ok(Self {
            inner,
            settings,
            max_force,
            max_torque,
            state,
            now_s: f64::NAN,
            clock: LayerClock::default(),
            prev_sample: None,
            last_write_s: None,
            brake: false,
            impulse: 0.0,
            last_output: Wrench::zero(),
            events,
            watchdog,
            last_reconnect_attempt: None,
            fatal: None,
            torque_out,
        })
    }

    /// The fatal vendor fault that stopped the device, if any.
    pub fn fatal_fault(&self) -> Option<crate::vendor::VendorFault> {
        self.fatal
    }

    /// The settings in force.
    pub fn settings(&self) -> &SafetySettings {
        &self.settings
    }

    /// The effective force cap, N (device maximum and settings cap).
    pub fn max_force_n(&self) -> f64 {
        self.max_force
    }

    /// The effective torque cap, N·m.
    pub fn max_torque_nm(&self) -> f64 {
        self.max_torque
    }

    /// The output stage's state.
    pub fn state(&self) -> OutputState {
        self.state
    }

    /// The wrench last sent to the device.
    pub fn last_output(&self) -> Wrench {
        self.last_output
    }

    /// The event ring and counters (drain it from the haptic thread between cycles or
    /// after the run).
    pub fn events(&mut self) -> &mut EventLog {
        &mut self.events
    }

    /// A lock-free handle for a supervising thread.
    pub fn watchdog(&self) -> StallWatchdog {
        self.watchdog.clone()
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably (bypasses the safety layer: tests and setup only).
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Unwraps the device.
    pub fn into_inner(self) -> D {
        self.inner
    }

    fn is_armed(&self) -> bool {
        matches!(
            self.state,
            OutputState::Ramping { .. } | OutputState::Active
        )
    }

    /// Sends zero now (best effort; a failure here is reported by the next read or write).
    fn zero_now(&mut self) {
        let _ = self.inner.write(&Wrench::zero());
        self.last_output = Wrench::zero();
    }

    /// Drops back to the small-force gate (unless disabled or disconnected).
    fn disarm(&mut self) {
        if self.is_armed() {
            self.state = OutputState::WaitSmall;
        }
        self.last_write_s = None;
        self.watchdog.note_write(false);
    }

    fn stall(&mut self) {
        self.events.record(self.now_s, SafetyEvent::Stall);
        self.zero_now();
        self.disarm();
    }

    /// Stall check on the layer's clock ([`LayerClock`], which follows the device's sample
    /// times): when output is enabled and the latest write is more than the stall timeout
    /// before `now_s`, zero is written at once, [`SafetyEvent::Stall`] recorded, and output
    /// re-arms through the gate and the ramp. Returns true on a stall. Called by every
    /// `read` with the layer's time of the new sample; a supervisor that owns the device
    /// can call it too, with a time on the same clock (the latest sample's time plus the
    /// wall time since; from another thread, use a [`StallWatchdog`] instead).
    pub fn check_stall(&mut self, now_s: f64) -> bool {
        match self.last_write_s {
            Some(t) if self.is_armed() && now_s - t > self.settings.stall_timeout_s => {
                self.stall();
                true
            }
            _ => false,
        }
    }

    fn on_disconnect(&mut self) {
        if self.state != OutputState::Disconnected {
            self.events.record(self.now_s, SafetyEvent::Disconnected);
        }
        self.zero_now();
        self.state = OutputState::Disconnected;
        self.brake = false;
        self.impulse = 0.0;
        self.prev_sample = None;
        self.last_write_s = None;
        self.watchdog.note_write(false);
        self.last_reconnect_attempt = Some(Instant::now());
    }

    /// A fatal vendor fault: zero (best effort), then never output again.
    fn on_fatal(&mut self, f: crate::vendor::VendorFault) {
        self.on_disconnect();
        self.fatal = Some(f);
    }

    fn initial_enable_state(&mut self) -> OutputState {
        if self.settings.enable_button.is_some() {
            OutputState::Disabled
        } else {
            self.events.record(self.now_s, SafetyEvent::Enabled);
            OutputState::WaitSmall
        }
    }

    /// Reconnect attempt when due. Returns true when connected again.
    fn try_reconnect(&mut self) -> bool {
        let due = self
            .last_reconnect_attempt
            .is_none_or(|t| t.elapsed().as_secs_f64() >= self.settings.reconnect_interval_s);
        if !due {
            return false;
        }
        self.last_reconnect_attempt = Some(Instant::now());
        match self.inner.reconnect() {
            Ok(()) => {
                self.events
                    .condition(self.now_s, SafetyEvent::ReconnectFailed, false);
                self.events.record(self.now_s, SafetyEvent::Reconnected);
                self.state = self.initial_enable_state();
                true
            }
            Err(_) => {
                self.events
                    .condition(self.now_s, SafetyEvent::ReconnectFailed, true);
                false
            }
        }
    }

    /// Speed check between two samples `dt` apart on the layer's clock; true when over a
    /// limit.
    fn over_speed(&self, prev: &DeviceSample, s: &DeviceSample, dt: f64) -> bool {
        if dt <= 0.0 || !dt.is_finite() {
            return false;
        }
        let v = (s.pose.position - prev.pose.position).norm() / dt;
        let w = prev.pose.orientation.angle_to(&s.pose.orientation) / dt;
        self.settings.max_velocity_m_s.is_some_and(|m| v > m)
            || self
                .settings
                .max_angular_velocity_rad_s
                .is_some_and(|m| w > m)
    }

    /// The safety pipeline on a commanded wrench at device time `now` (pure apart from the
    /// state and event updates; no I/O).
    fn shape(&mut self, cmd: &Wrench) -> Wrench {
        let now = self.now_s;
        if self.state == OutputState::Disconnected || !now.is_finite() {
            return Wrench::zero();
        }
        // 1. Non-finite.
        let finite = cmd.is_finite();
        self.events
            .condition(now, SafetyEvent::NonFiniteForce, !finite);
        if !finite {
            self.disarm();
            return Wrench::zero();
        }
        // 2. Clamps (a device without torque output gets none, without a clamp event:
        // its torque is shown on screen, not sent).
        let (force, fclamped) = clamp_magnitude(cmd.force, self.max_force);
        let (torque, tclamped) = if self.torque_out {
            clamp_magnitude(cmd.torque, self.max_torque)
        } else {
            (Vector3::zeros(), false)
        };
        self.events
            .condition(now, SafetyEvent::ForceClamped, fclamped);
        self.events
            .condition(now, SafetyEvent::TorqueClamped, tclamped);
        // 3. Velocity brake.
        if self.brake {
            return Wrench::zero();
        }
        // 4. Enable state, gate, ramp.
        let scale = match self.state {
            OutputState::Disabled | OutputState::Disconnected => 0.0,
            OutputState::WaitSmall => {
                if cmd.force.norm() <= self.settings.small_force_n
                    && cmd.torque.norm() <= self.settings.small_torque_nm
                {
                    self.events.record(now, SafetyEvent::RampStarted);
                    if self.settings.ramp_time_s > 0.0 {
                        self.state = OutputState::Ramping { start_s: now };
                        0.0
                    } else {
                        self.events.record(now, SafetyEvent::RampComplete);
                        self.state = OutputState::Active;
                        1.0
                    }
                } else {
                    0.0
                }
            }
            OutputState::Ramping { start_s } => {
                let s = ramp_scale(now - start_s, self.settings.ramp_time_s);
                if s >= 1.0 {
                    self.events.record(now, SafetyEvent::RampComplete);
                    self.state = OutputState::Active;
                }
                s
            }
            OutputState::Active => 1.0,
        };
        let mut out = Wrench::new(force * scale, torque * scale);
        // 5. Impulse limit (leaky integral of |F| with the step since the last write).
        let dt = self.last_write_s.map_or(0.0, |t| {
            (now - t).clamp(0.0, self.settings.impulse_window_s)
        });
        let decayed = self.impulse * (-dt / self.settings.impulse_window_s).exp();
        let mut limited = false;
        if let Some(max_i) = self.settings.max_impulse_n_s {
            let f = out.force.norm();
            if dt > 0.0 && decayed + f * dt > max_i {
                let allowed = ((max_i - decayed) / dt).max(0.0);
                out.force *= if f > 0.0 { allowed / f } else { 0.0 };
                limited = true;
            }
        }
        self.events
            .condition(now, SafetyEvent::ImpulseLimit, limited);
        self.impulse = decayed + out.force.norm() * dt;
        out
    }
}

impl<D: Device> Device for SafeDevice<D> {
    /// Back to the small-force gate and the ramp (unless disabled or disconnected).
    fn rearm(&mut self) {
        self.disarm();
    }

    fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        if self.watchdog.take_stall() && self.is_armed() {
            self.stall();
        }
        if let Some(f) = self.fatal {
            return Err(DeviceError::Vendor(f));
        }
        if self.state == OutputState::Disconnected && !self.try_reconnect() {
            return Err(DeviceError::Disconnected(String::new()));
        }
        let s = match self.inner.read() {
            Ok(s) => s,
            Err(e @ DeviceError::Disconnected(_)) => {
                self.on_disconnect();
                return Err(e);
            }
            Err(DeviceError::Vendor(f)) => {
                self.on_fatal(f);
                return Err(DeviceError::Vendor(f));
            }
            Err(e) => return Err(e),
        };
        let finite = s.pose.is_finite() && s.time_s.is_finite();
        self.events
            .condition(self.now_s, SafetyEvent::NonFinitePose, !finite);
        if !finite {
            self.zero_now();
            self.disarm();
            return Err(DeviceError::NonFiniteSample);
        }
        let prev_now = self.now_s;
        self.now_s = self.clock.advance(s.time_s);
        self.check_stall(self.now_s);

        // Velocity limit: cut at once, release when slow again (then gate and ramp).
        let dt = self.now_s - prev_now;
        let fast = self
            .prev_sample
            .is_some_and(|p| self.over_speed(&p, &s, dt));
        self.events
            .condition(self.now_s, SafetyEvent::VelocityLimit, fast);
        if fast && !self.brake {
            self.zero_now();
            self.disarm();
        }
        self.brake = fast;

        // Deadman.
        if let Some(b) = self.settings.enable_button {
            let pressed = s.button(b);
            match (pressed, self.state) {
                (false, OutputState::Disabled) => {}
                (false, _) => {
                    self.events.record(self.now_s, SafetyEvent::DeadmanReleased);
                    self.zero_now();
                    self.disarm();
                    self.state = OutputState::Disabled;
                }
                (true, OutputState::Disabled) => {
                    self.events.record(self.now_s, SafetyEvent::Enabled);
                    self.state = OutputState::WaitSmall;
                }
                (true, _) => {}
            }
        }
        self.prev_sample = Some(s);
        Ok(s)
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        if self.watchdog.take_stall() && self.is_armed() {
            self.stall();
        }
        if let Some(f) = self.fatal {
            return Err(DeviceError::Vendor(f));
        }
        if self.state == OutputState::Disconnected {
            return Err(DeviceError::Disconnected(String::new()));
        }
        let out = self.shape(wrench);
        match self.inner.write(&out) {
            Ok(()) => {
                self.last_output = out;
                if self.now_s.is_finite() {
                    self.last_write_s = Some(self.now_s);
                }
                self.watchdog.note_write(self.is_armed());
                Ok(())
            }
            Err(e @ DeviceError::Disconnected(_)) => {
                self.on_disconnect();
                Err(e)
            }
            Err(DeviceError::Vendor(f)) => {
                self.on_fatal(f);
                Err(DeviceError::Vendor(f))
            }
            Err(e) => Err(e),
        }
    }

    fn reconnect(&mut self) -> Result<(), DeviceError> {
        self.last_reconnect_attempt = None;
        if self.try_reconnect() {
            Ok(())
        } else {
            Err(DeviceError::Disconnected("reconnect failed".to_string()))
        }
    }
}
