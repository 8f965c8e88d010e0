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
//! `reconnect_interval_s` on later reads.
//!
//! Time is the device clock (the timestamp of the latest sample), so simulated and replayed
//! runs are deterministic. `read` and `write` neither allocate nor lock: events go to a
//! fixed-capacity ring ([`EventLog`]) with per-kind counters that the caller drains.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use nalgebra::Vector3;
use serde::Deserialize;

use crate::device::{Device, DeviceError, DeviceInfo, DeviceSample, Wrench};

/// Safety settings, loaded from the `[safety]` table of a device profile. Every field has a
/// default, so a profile lists only what differs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SafetySettings {
    /// Duration of the linear force ramp after enabling, s (0 = no ramp). Default 0.5.
    pub ramp_time_s: f64,
    /// Extra force cap below the device maximum, N. Default: none (device maximum).
    pub max_force_n: Option<f64>,
    /// Extra torque cap below the device maximum, N·m. Default: none.
    pub max_torque_nm: Option<f64>,
    /// Wait-for-small-force threshold on the commanded force, N. Default 0.5.
    pub small_force_n: f64,
    /// Wait-for-small-force threshold on the commanded torque, N·m. Default 0.02.
    pub small_torque_nm: f64,
    /// 0-based index of the enable (deadman) button; none = always enabled. Default none.
    pub enable_button: Option<u32>,
    /// Translational speed above which output is cut, m/s. Default 1.5; none disables.
    pub max_velocity_m_s: Option<f64>,
    /// Angular speed above which output is cut, rad/s. Default 20; none disables.
    pub max_angular_velocity_rad_s: Option<f64>,
    /// Time constant of the leaky impulse integral, s. Default 0.1.
    pub impulse_window_s: f64,
    /// Largest leaky impulse integral of |F|, N·s. A sustained force F settles at
    /// F·window, so this also caps sustained force at max_impulse/window. Default none
    /// (off): set it per device.
    pub max_impulse_n_s: Option<f64>,
    /// Longest allowed time between two writes while output is enabled, s. Default 0.005.
    pub stall_timeout_s: f64,
    /// Time between reconnect attempts after a disconnect, s (wall clock). Default 0.5.
    pub reconnect_interval_s: f64,
}

impl Default for SafetySettings {
    fn default() -> Self {
        Self {
            ramp_time_s: 0.5,
            max_force_n: None,
            max_torque_nm: None,
            small_force_n: 0.5,
            small_torque_nm: 0.02,
            enable_button: None,
            max_velocity_m_s: Some(1.5),
            max_angular_velocity_rad_s: Some(20.0),
            impulse_window_s: 0.1,
            max_impulse_n_s: None,
            stall_timeout_s: 0.005,
            reconnect_interval_s: 0.5,
        }
    }
}

impl SafetySettings {
    /// Checks that every number is finite and in range; returns what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        fn nonneg(name: &str, v: f64) -> Result<(), String> {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite number >= 0, got {v}"))
            }
        }
        fn pos(name: &str, v: f64) -> Result<(), String> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a finite number > 0, got {v}"))
            }
        }
        nonneg("ramp_time_s", self.ramp_time_s)?;
        nonneg("small_force_n", self.small_force_n)?;
        nonneg("small_torque_nm", self.small_torque_nm)?;
        pos("impulse_window_s", self.impulse_window_s)?;
        pos("stall_timeout_s", self.stall_timeout_s)?;
        nonneg("reconnect_interval_s", self.reconnect_interval_s)?;
        for (name, v) in [
            ("max_force_n", self.max_force_n),
            ("max_torque_nm", self.max_torque_nm),
            ("max_impulse_n_s", self.max_impulse_n_s),
        ] {
            if let Some(v) = v {
                nonneg(name, v)?;
            }
        }
        for (name, v) in [
            ("max_velocity_m_s", self.max_velocity_m_s),
            (
                "max_angular_velocity_rad_s",
                self.max_angular_velocity_rad_s,
            ),
        ] {
            if let Some(v) = v {
                pos(name, v)?;
            }
        }
        if let Some(b) = self.enable_button {
            if b >= 32 {
                return Err(format!("enable_button must be 0..=31, got {b}"));
            }
        }
        Ok(())
    }
}

/// A named safety event. [`SafetyEvent::code`] gives a stable name for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SafetyEvent {
    /// Output enabled (deadman pressed, or start without a deadman): waiting for small force.
    Enabled = 0,
    /// The deadman button was released: output cut to zero at once.
    DeadmanReleased,
    /// The small-force gate opened: the ramp started.
    RampStarted,
    /// The ramp reached full scale.
    RampComplete,
    /// The commanded force magnitude exceeded the maximum and was scaled down.
    ForceClamped,
    /// The commanded torque magnitude exceeded the maximum and was scaled down.
    TorqueClamped,
    /// The commanded force or torque was NaN or infinite: zero sent.
    NonFiniteForce,
    /// The device reported a NaN or infinite pose: the sample was rejected.
    NonFinitePose,
    /// The stylus moved faster than the velocity limit: output cut.
    VelocityLimit,
    /// The impulse integral reached its limit: output scaled down.
    ImpulseLimit,
    /// `write` was not called within the stall timeout: zero written.
    Stall,
    /// The device disconnected: output zero, reconnect attempts follow.
    Disconnected,
    /// A reconnect attempt succeeded.
    Reconnected,
    /// A reconnect attempt failed (recorded once per outage; counted per attempt).
    ReconnectFailed,
}

impl SafetyEvent {
    /// Number of event kinds.
    pub const COUNT: usize = 14;

    /// Every kind, in declaration order.
    pub const ALL: [SafetyEvent; Self::COUNT] = [
        SafetyEvent::Enabled,
        SafetyEvent::DeadmanReleased,
        SafetyEvent::RampStarted,
        SafetyEvent::RampComplete,
        SafetyEvent::ForceClamped,
        SafetyEvent::TorqueClamped,
        SafetyEvent::NonFiniteForce,
        SafetyEvent::NonFinitePose,
        SafetyEvent::VelocityLimit,
        SafetyEvent::ImpulseLimit,
        SafetyEvent::Stall,
        SafetyEvent::Disconnected,
        SafetyEvent::Reconnected,
        SafetyEvent::ReconnectFailed,
    ];

    /// A stable upper-case code for logs (e.g. `E_VELOCITY_LIMIT`).
    pub fn code(self) -> &'static str {
        match self {
            SafetyEvent::Enabled => "I_ENABLED",
            SafetyEvent::DeadmanReleased => "I_DEADMAN_RELEASED",
            SafetyEvent::RampStarted => "I_RAMP_STARTED",
            SafetyEvent::RampComplete => "I_RAMP_COMPLETE",
            SafetyEvent::ForceClamped => "W_FORCE_CLAMPED",
            SafetyEvent::TorqueClamped => "W_TORQUE_CLAMPED",
            SafetyEvent::NonFiniteForce => "E_NON_FINITE_FORCE",
            SafetyEvent::NonFinitePose => "E_NON_FINITE_POSE",
            SafetyEvent::VelocityLimit => "E_VELOCITY_LIMIT",
            SafetyEvent::ImpulseLimit => "E_IMPULSE_LIMIT",
            SafetyEvent::Stall => "E_STALL",
            SafetyEvent::Disconnected => "E_DISCONNECTED",
            SafetyEvent::Reconnected => "I_RECONNECTED",
            SafetyEvent::ReconnectFailed => "E_RECONNECT_FAILED",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Condition events are recorded in the ring on their rising edge only (the counters
    /// still count every cycle), so a sustained clamp cannot flush rarer events out.
    fn is_condition(self) -> bool {
        matches!(
            self,
            SafetyEvent::ForceClamped
                | SafetyEvent::TorqueClamped
                | SafetyEvent::NonFiniteForce
                | SafetyEvent::NonFinitePose
                | SafetyEvent::VelocityLimit
                | SafetyEvent::ImpulseLimit
                | SafetyEvent::ReconnectFailed
        )
    }
}

impl std::fmt::Display for SafetyEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// One recorded event with the device time it happened at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventRecord {
    /// Device time, s (the latest sample's timestamp; NaN before the first sample).
    pub time_s: f64,
    /// What happened.
    pub event: SafetyEvent,
}

/// Capacity of the event ring.
pub const EVENT_CAPACITY: usize = 64;

/// A fixed-capacity ring of recent events plus per-kind counters. Pushing never allocates;
/// when full, the oldest record is overwritten and counted in [`EventLog::overwritten`].
#[derive(Debug, Clone)]
pub struct EventLog {
    ring: [EventRecord; EVENT_CAPACITY],
    head: usize,
    len: usize,
    overwritten: u64,
    counts: [u64; SafetyEvent::COUNT],
    active: u32,
}

impl Default for EventLog {
    fn default() -> Self {
        Self {
            ring: [EventRecord {
                time_s: f64::NAN,
                event: SafetyEvent::Enabled,
            }; EVENT_CAPACITY],
            head: 0,
            len: 0,
            overwritten: 0,
            counts: [0; SafetyEvent::COUNT],
            active: 0,
        }
    }
}

impl EventLog {
    fn push_record(&mut self, rec: EventRecord) {
        let slot = (self.head + self.len) % EVENT_CAPACITY;
        self.ring[slot] = rec;
        if self.len < EVENT_CAPACITY {
            self.len += 1;
        } else {
            self.head = (self.head + 1) % EVENT_CAPACITY;
            self.overwritten += 1;
        }
    }

    /// Records a one-off event.
    pub fn record(&mut self, time_s: f64, event: SafetyEvent) {
        self.counts[event.index()] += 1;
        self.push_record(EventRecord { time_s, event });
    }

    /// Records whether a condition event holds this cycle: counted every cycle it holds,
    /// put in the ring only when it starts holding.
    pub fn condition(&mut self, time_s: f64, event: SafetyEvent, holds: bool) {
        debug_assert!(event.is_condition());
        let bit = 1u32 << event.index();
        if holds {
            self.counts[event.index()] += 1;
            if self.active & bit == 0 {
                self.push_record(EventRecord { time_s, event });
            }
            self.active |= bit;
        } else {
            self.active &= !bit;
        }
    }

    /// How many times `event` was recorded (conditions: cycles in which it held).
    pub fn count(&self, event: SafetyEvent) -> u64 {
        self.counts[event.index()]
    }

    /// Records lost because the ring was full.
    pub fn overwritten(&self) -> u64 {
        self.overwritten
    }

    /// Number of records waiting to be drained.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no record waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes and yields the waiting records, oldest first. Counters are kept.
    pub fn drain(&mut self) -> impl Iterator<Item = EventRecord> + '_ {
        std::iter::from_fn(move || {
            if self.len == 0 {
                return None;
            }
            let rec = self.ring[self.head];
            self.head = (self.head + 1) % EVENT_CAPACITY;
            self.len -= 1;
            Some(rec)
        })
    }
}

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

#[derive(Debug)]
struct WatchdogShared {
    base: Instant,
    /// Nanoseconds since `base` of the latest write; u64::MAX = nothing to watch.
    last_write_ns: AtomicU64,
    timeout_ns: u64,
    stalled: AtomicBool,
}

/// A handle a supervising thread uses to watch a [`SafeDevice`] that another thread
/// drives. Cheap to clone; lock-free.
///
/// The supervisor calls [`StallWatchdog::check_stall`] periodically; when the haptic
/// thread has not written for longer than the stall timeout it raises a flag, and the next
/// `write` or `read` of the device outputs zero, records [`SafetyEvent::Stall`] and
/// re-arms through the small-force gate and the ramp. (Zeroing the motors while the haptic
/// thread itself is stuck needs the device's own watchdog or exclusive access:
/// [`SafeDevice::check_stall`].)
#[derive(Debug, Clone)]
pub struct StallWatchdog {
    shared: Arc<WatchdogShared>,
}

impl StallWatchdog {
    fn new(timeout_s: f64) -> Self {
        Self {
            shared: Arc::new(WatchdogShared {
                base: Instant::now(),
                last_write_ns: AtomicU64::new(u64::MAX),
                timeout_ns: (timeout_s * 1e9) as u64,
                stalled: AtomicBool::new(false),
            }),
        }
    }

    fn elapsed_ns(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.shared.base).as_nanos() as u64
    }

    fn note_write(&self, armed: bool) {
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

    fn take_stall(&self) -> bool {
        self.shared.stalled.swap(false, Ordering::AcqRel)
    }
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
    last_device_s: Option<f64>,
    /// After a glitch: (layer time, device time) at the latest glitch.
    base: Option<(f64, f64)>,
    /// The latest layer time.
    now_s: f64,
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

impl<D: Device> Device for SafeDevice<D> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Pose;

    /// A scripted device: each read advances 1 ms and returns `pose`/`buttons`; writes are
    /// recorded. `connected` false makes reads and writes fail with Disconnected.
    struct Mock {
        info: DeviceInfo,
        t: f64,
        pose: Pose,
        buttons: u32,
        writes: Vec<Wrench>,
        connected: bool,
        reconnect_ok: bool,
        reconnects: usize,
    }

    impl Mock {
        fn new() -> Self {
            Self {
                info: DeviceInfo::phantom_premium_6dof(),
                t: 0.0,
                pose: Pose::identity(),
                buttons: 0,
                writes: Vec::new(),
                connected: true,
                reconnect_ok: true,
                reconnects: 0,
            }
        }
    }

    impl Device for Mock {
        fn info(&self) -> &DeviceInfo {
            &self.info
        }
        fn read(&mut self) -> Result<DeviceSample, DeviceError> {
            if !self.connected {
                return Err(DeviceError::Disconnected("unplugged".into()));
            }
            self.t += 0.001;
            Ok(DeviceSample {
                time_s: self.t,
                pose: self.pose,
                buttons: self.buttons,
            })
        }
        fn write(&mut self, w: &Wrench) -> Result<(), DeviceError> {
            if !self.connected {
                return Err(DeviceError::Disconnected("unplugged".into()));
            }
            self.writes.push(*w);
            Ok(())
        }
        fn reconnect(&mut self) -> Result<(), DeviceError> {
            self.reconnects += 1;
            if self.reconnect_ok {
                self.connected = true;
                Ok(())
            } else {
                Err(DeviceError::NotFound("still gone".into()))
            }
        }
    }

    fn fx(x: f64) -> Wrench {
        Wrench::from_force(Vector3::new(x, 0.0, 0.0))
    }

    fn cycle(d: &mut SafeDevice<Mock>, w: Wrench) -> Wrench {
        d.read().expect("mock read");
        d.write(&w).expect("mock write");
        d.last_output()
    }

    fn no_ramp() -> SafetySettings {
        SafetySettings {
            ramp_time_s: 0.0,
            ..SafetySettings::default()
        }
    }

    fn drained(d: &mut SafeDevice<Mock>) -> Vec<SafetyEvent> {
        d.events().drain().map(|r| r.event).collect()
    }

    #[test]
    fn ramp_is_linear_over_ramp_time() {
        let mut d = SafeDevice::new(Mock::new(), SafetySettings::default()).unwrap();
        // The gate opens on the first cycle (0.2 N < 0.5 N): ramp starts at t = 1 ms.
        assert_eq!(cycle(&mut d, fx(0.2)).force.x, 0.0);
        for k in 1..=600 {
            let out = cycle(&mut d, fx(0.2)).force.x;
            let expected = 0.2 * (k as f64 * 0.001 / 0.5).min(1.0);
            // Mock times are sums of 0.001, exact to ~1e-15 s.
            assert!(
                (out - expected).abs() < 1e-12,
                "cycle {k}: {out} vs {expected}"
            );
        }
        assert_eq!(d.state(), OutputState::Active);
        let ev = drained(&mut d);
        assert_eq!(
            ev,
            vec![
                SafetyEvent::Enabled,
                SafetyEvent::RampStarted,
                SafetyEvent::RampComplete
            ]
        );
    }

    #[test]
    fn output_waits_for_small_force() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        for _ in 0..100 {
            assert_eq!(cycle(&mut d, fx(3.0)), Wrench::zero());
        }
        assert_eq!(d.state(), OutputState::WaitSmall);
        // Below the threshold the gate opens (no ramp: full scale at once), and a larger
        // force afterwards goes through.
        assert_eq!(cycle(&mut d, fx(0.4)).force.x, 0.4);
        assert_eq!(cycle(&mut d, fx(3.0)).force.x, 3.0);
        // Torque too must be small to open the gate.
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        let w = Wrench::new(Vector3::zeros(), Vector3::new(0.0, 0.1, 0.0));
        assert_eq!(cycle(&mut d, w), Wrench::zero());
        assert_eq!(d.state(), OutputState::WaitSmall);
    }

    #[test]
    fn force_and_torque_are_clamped_keeping_direction() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        cycle(&mut d, Wrench::zero());
        let cmd = Wrench::new(Vector3::new(30.0, 40.0, 0.0), Vector3::new(0.0, 0.0, -1.0));
        for _ in 0..10 {
            let out = cycle(&mut d, cmd);
            assert!((out.force.norm() - 8.5).abs() < 1e-12);
            assert!((out.force.normalize() - Vector3::new(0.6, 0.8, 0.0)).norm() < 1e-12);
            assert!((out.torque - Vector3::new(0.0, 0.0, -0.188)).norm() < 1e-12);
        }
        // Hardware never saw more than the maximum.
        assert!(d
            .inner()
            .writes
            .iter()
            .all(|w| w.force.norm() <= 8.5 + 1e-12));
        assert_eq!(d.events().count(SafetyEvent::ForceClamped), 10);
        let ev = drained(&mut d);
        // Edge-triggered: one ring record each for the sustained clamps.
        assert_eq!(
            ev.iter()
                .filter(|e| **e == SafetyEvent::ForceClamped)
                .count(),
            1
        );
        assert_eq!(
            ev.iter()
                .filter(|e| **e == SafetyEvent::TorqueClamped)
                .count(),
            1
        );

        // A settings cap below the device maximum wins.
        let s = SafetySettings {
            max_force_n: Some(2.0),
            ..no_ramp()
        };
        let mut d = SafeDevice::new(Mock::new(), s).unwrap();
        cycle(&mut d, Wrench::zero());
        assert!((cycle(&mut d, fx(-5.0)).force.x + 2.0).abs() < 1e-12);
    }

    #[test]
    fn non_finite_force_gives_zero_and_rearms() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        cycle(&mut d, fx(0.1));
        assert_eq!(d.state(), OutputState::Active);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let w = Wrench::new(Vector3::new(1.0, bad, 0.0), Vector3::zeros());
            assert_eq!(cycle(&mut d, w), Wrench::zero());
            let w = Wrench::new(Vector3::zeros(), Vector3::new(bad, 0.0, 0.0));
            assert_eq!(cycle(&mut d, w), Wrench::zero());
        }
        assert_eq!(d.state(), OutputState::WaitSmall);
        assert!(d.inner().writes.iter().all(|w| w.is_finite()));
        assert!(drained(&mut d).contains(&SafetyEvent::NonFiniteForce));
        // A large finite force right after stays zero (gate), a small one re-enables.
        assert_eq!(cycle(&mut d, fx(4.0)), Wrench::zero());
        assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
    }

    #[test]
    fn deadman_release_cuts_at_once_and_press_ramps_again() {
        let s = SafetySettings {
            enable_button: Some(1),
            ..SafetySettings::default()
        };
        let mut d = SafeDevice::new(Mock::new(), s).unwrap();
        for _ in 0..10 {
            assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
        }
        assert_eq!(d.state(), OutputState::Disabled);
        d.inner_mut().buttons = 0b10;
        for _ in 0..600 {
            cycle(&mut d, fx(0.1));
        }
        assert!((d.last_output().force.x - 0.1).abs() < 1e-12);
        // Release: the read itself writes zero, before the caller's write.
        d.inner_mut().buttons = 0;
        let n = d.inner().writes.len();
        d.read().unwrap();
        assert_eq!(d.inner().writes.len(), n + 1);
        assert_eq!(d.inner().writes[n], Wrench::zero());
        d.write(&fx(0.1)).unwrap();
        assert_eq!(d.last_output(), Wrench::zero());
        // Press again: ramp from zero.
        d.inner_mut().buttons = 0b10;
        cycle(&mut d, fx(0.1));
        let out = cycle(&mut d, fx(0.1)).force.x;
        assert!(out > 0.0 && out < 0.001, "ramping from zero: {out}");
        let ev = drained(&mut d);
        assert_eq!(
            ev.iter()
                .filter(|e| **e == SafetyEvent::DeadmanReleased)
                .count(),
            1
        );
    }

    #[test]
    fn velocity_limit_cuts_output_until_slow() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        cycle(&mut d, fx(0.1));
        assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
        // 5 mm in 1 ms = 5 m/s > 1.5 m/s.
        d.inner_mut().pose.position.x += 0.005;
        assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
        assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
        // Standing still again: gate and (zero-length) ramp re-enable.
        assert_eq!(cycle(&mut d, fx(0.1)).force.x, 0.1);
        // Angular: 0.05 rad in 1 ms = 50 rad/s > 20 rad/s.
        d.inner_mut().pose.orientation =
            nalgebra::UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.05);
        assert_eq!(cycle(&mut d, fx(0.1)), Wrench::zero());
        assert_eq!(d.events().count(SafetyEvent::VelocityLimit), 2);
    }

    #[test]
    fn impulse_limit_bounds_the_leaky_integral() {
        let s = SafetySettings {
            max_impulse_n_s: Some(0.05),
            impulse_window_s: 0.1,
            ..no_ramp()
        };
        let mut d = SafeDevice::new(Mock::new(), s).unwrap();
        cycle(&mut d, Wrench::zero());
        let mut first_limited = None;
        let mut integral = 0.0;
        for k in 0..1000 {
            let out = cycle(&mut d, fx(2.0)).force.x;
            integral = integral * (-0.001f64 / 0.1).exp() + out * 0.001;
            assert!(integral <= 0.05 + 1e-12);
            if out < 2.0 && first_limited.is_none() {
                first_limited = Some(k);
            }
        }
        // 2 N bursts for about 0.05 / 2 s = 25 ms (a little more as the integral leaks),
        // then the sustained force settles at max/window = 0.5 N.
        let k = first_limited.expect("the limit must engage");
        assert!((24..=30).contains(&k), "limited from cycle {k}");
        assert!((d.last_output().force.x - 0.5).abs() < 0.01);
        assert!(d.events().count(SafetyEvent::ImpulseLimit) > 900);
    }

    #[test]
    fn stall_on_read_zeroes_and_rearms() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        cycle(&mut d, fx(0.2));
        assert_eq!(d.state(), OutputState::Active);
        // Six reads without a write: the sixth is 6 ms after the last write > 5 ms.
        for _ in 0..6 {
            d.read().unwrap();
        }
        assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
        assert_eq!(d.state(), OutputState::WaitSmall);
        assert_eq!(d.events().count(SafetyEvent::Stall), 1);
        // Explicit check by a supervisor that owns the device.
        cycle(&mut d, fx(0.2));
        assert!(!d.check_stall(d.now_s + 0.004));
        assert!(d.check_stall(d.now_s + 0.0051));
        assert_eq!(d.events().count(SafetyEvent::Stall), 2);
        // Not armed: nothing to report.
        assert!(!d.check_stall(d.now_s + 1.0));
    }

    #[test]
    fn watchdog_handle_flags_a_stall_for_the_next_cycle() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        let wd = d.watchdog();
        assert!(!wd.check_stall(Instant::now() + std::time::Duration::from_secs(1)));
        cycle(&mut d, fx(0.2));
        assert!(!wd.check_stall(Instant::now()));
        let later = Instant::now() + std::time::Duration::from_millis(50);
        assert!(std::thread::spawn(move || wd.check_stall(later))
            .join()
            .unwrap());
        d.read().unwrap();
        assert_eq!(d.events().count(SafetyEvent::Stall), 1);
        assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
        assert_eq!(d.state(), OutputState::WaitSmall);
    }

    #[test]
    fn disconnect_zeroes_then_reconnects_and_ramps() {
        let s = SafetySettings {
            reconnect_interval_s: 0.0,
            ..no_ramp()
        };
        let mut d = SafeDevice::new(Mock::new(), s).unwrap();
        cycle(&mut d, fx(0.3));
        assert_eq!(d.last_output().force.x, 0.3);
        d.inner_mut().connected = false;
        d.inner_mut().reconnect_ok = false;
        assert!(matches!(d.read(), Err(DeviceError::Disconnected(_))));
        assert_eq!(d.state(), OutputState::Disconnected);
        assert_eq!(d.last_output(), Wrench::zero());
        assert!(matches!(
            d.write(&fx(0.3)),
            Err(DeviceError::Disconnected(_))
        ));
        for _ in 0..3 {
            assert!(d.read().is_err());
        }
        assert_eq!(d.inner().reconnects, 3);
        d.inner_mut().reconnect_ok = true;
        d.read().expect("reconnected");
        // Re-armed through the gate: a large force stays zero, a small one passes.
        d.write(&fx(3.0)).unwrap();
        assert_eq!(d.last_output(), Wrench::zero());
        assert_eq!(cycle(&mut d, fx(0.3)).force.x, 0.3);
        let ev = drained(&mut d);
        let pos = |e| ev.iter().position(|x| *x == e).unwrap();
        assert!(pos(SafetyEvent::Disconnected) < pos(SafetyEvent::ReconnectFailed));
        assert!(pos(SafetyEvent::ReconnectFailed) < pos(SafetyEvent::Reconnected));
        assert_eq!(d.events().count(SafetyEvent::ReconnectFailed), 3);
    }

    #[test]
    fn reconnect_attempts_are_paced() {
        let s = SafetySettings {
            reconnect_interval_s: 60.0,
            ..no_ramp()
        };
        let mut d = SafeDevice::new(Mock::new(), s).unwrap();
        cycle(&mut d, Wrench::zero());
        d.inner_mut().connected = false;
        d.inner_mut().reconnect_ok = false;
        for _ in 0..100 {
            assert!(d.read().is_err());
        }
        // The disconnect itself starts the interval: no attempt within a minute.
        assert_eq!(d.inner().reconnects, 0);
    }

    #[test]
    fn non_finite_pose_is_rejected() {
        let mut d = SafeDevice::new(Mock::new(), no_ramp()).unwrap();
        cycle(&mut d, fx(0.1));
        d.inner_mut().pose.position.y = f64::NAN;
        assert!(matches!(d.read(), Err(DeviceError::NonFiniteSample)));
        assert_eq!(d.inner().writes.last(), Some(&Wrench::zero()));
        assert_eq!(d.events().count(SafetyEvent::NonFinitePose), 1);
    }

    #[test]
    fn the_layer_clock_follows_a_good_device_clock_exactly_and_survives_a_bad_one() {
        let mut c = LayerClock::default();
        for t in [5.0, 5.001, 5.0015, 5.9] {
            assert_eq!(c.advance(t), t);
        }
        // Backwards counts as zero, then the clock runs on by the device's steps.
        assert_eq!(c.advance(1.0), 5.9);
        assert!((c.advance(1.25) - 6.15).abs() < 1e-12);
        // A jump far ahead counts as MAX_CLOCK_STEP_S; the way back as zero.
        let before = c.advance(1.25);
        assert!((c.advance(1e300) - (before + MAX_CLOCK_STEP_S)).abs() < 1e-12);
        let after = c.advance(1.5);
        assert!((after - (before + MAX_CLOCK_STEP_S)).abs() < 1e-12);
        assert!((c.advance(1.6) - (after + 0.1)).abs() < 1e-12);
    }

    #[test]
    fn a_device_clock_that_jumps_ahead_and_back_stalls_then_recovers() {
        let mut d = SafeDevice::new(Mock::new(), SafetySettings::default()).unwrap();
        for _ in 0..600 {
            cycle(&mut d, fx(0.2));
        }
        assert_eq!(d.state(), OutputState::Active);
        // The device clock leaps to 1e300 s: a stall (zero at once), then back to normal
        // times: the ramp restarts from the layer's clock, not from 1e300 s.
        let t = d.inner().t;
        d.inner_mut().t = 1e300;
        assert_eq!(cycle(&mut d, fx(0.2)).force.x, 0.0);
        d.inner_mut().t = t;
        let mut out = 0.0;
        for _ in 0..700 {
            out = cycle(&mut d, fx(0.2)).force.x;
        }
        assert_eq!(out, 0.2, "output must recover after the ramp");
        assert_eq!(d.state(), OutputState::Active);
        assert!(d.events().count(SafetyEvent::Stall) >= 1);
    }

    #[test]
    fn settings_are_validated() {
        let bad = [
            SafetySettings {
                ramp_time_s: -1.0,
                ..SafetySettings::default()
            },
            SafetySettings {
                stall_timeout_s: 0.0,
                ..SafetySettings::default()
            },
            SafetySettings {
                max_velocity_m_s: Some(f64::NAN),
                ..SafetySettings::default()
            },
            SafetySettings {
                enable_button: Some(32),
                ..SafetySettings::default()
            },
        ];
        for s in bad {
            assert!(matches!(
                SafeDevice::new(Mock::new(), s),
                Err(DeviceError::InvalidSettings(_))
            ));
        }
    }

    #[test]
    fn event_ring_overwrites_oldest_and_counts() {
        let mut log = EventLog::default();
        for k in 0..100 {
            log.record(k as f64, SafetyEvent::Stall);
        }
        assert_eq!(log.len(), EVENT_CAPACITY);
        assert_eq!(log.overwritten(), 100 - EVENT_CAPACITY as u64);
        assert_eq!(log.count(SafetyEvent::Stall), 100);
        let times: Vec<f64> = log.drain().map(|r| r.time_s).collect();
        assert_eq!(times.first(), Some(&36.0));
        assert_eq!(times.last(), Some(&99.0));
        assert!(log.is_empty());
        assert_eq!(SafetyEvent::ALL.len(), SafetyEvent::COUNT);
        for (i, e) in SafetyEvent::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
        }
    }

    #[test]
    fn pure_helpers() {
        let (v, c) = clamp_magnitude(Vector3::new(3.0, 4.0, 0.0), 1.0);
        assert!(c && (v - Vector3::new(0.6, 0.8, 0.0)).norm() < 1e-15);
        let (v, c) = clamp_magnitude(Vector3::new(0.3, 0.4, 0.0), 1.0);
        assert!(!c && v == Vector3::new(0.3, 0.4, 0.0));
        assert_eq!(clamp_magnitude(Vector3::x(), 0.0), (Vector3::zeros(), true));
        assert_eq!(ramp_scale(0.25, 0.5), 0.5);
        assert_eq!(ramp_scale(-1.0, 0.5), 0.0);
        assert_eq!(ramp_scale(2.0, 0.5), 1.0);
        assert_eq!(ramp_scale(0.0, 0.0), 1.0);
    }
}
