//! Named safety events and the fixed-capacity, allocation-free log of them.

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

    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// Condition events are recorded in the ring on their rising edge only (the counters
    /// still count every cycle), so a sustained clamp cannot flush rarer events out.
    pub(super) fn is_condition(self) -> bool {
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
    pub(super) ring: [EventRecord; EVENT_CAPACITY],
    pub(super) head: usize,
    pub(super) len: usize,
    pub(super) overwritten: u64,
    pub(super) counts: [u64; SafetyEvent::COUNT],
    pub(super) active: u32,
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
    pub(super) fn push_record(&mut self, rec: EventRecord) {
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
