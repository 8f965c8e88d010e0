//! The device layer of the haptic renderer: everything between the user's hand and the
//! haptic thread, and nothing of the physics.
//!
//! A haptic cycle reads a [`DeviceSample`] (pose, buttons, timestamp) from a [`Device`] and
//! writes back a [`Wrench`] (force and torque). This crate provides
//!
//! - `device`: the [`Device`] trait, poses, capability info ([`DeviceInfo`]) and typed
//!   errors ([`DeviceError`]);
//! - [`safety`]: [`SafeDevice`](safety::SafeDevice), the safety layer every device is wrapped in (force ramp,
//!   clamps, wait-for-small-force, deadman button, velocity and impulse limits, stall
//!   watchdog, disconnect handling) with named [`SafetyEvent`]s;
//! - [`simulated`]: [`SimulatedDevice`](simulated::SimulatedDevice), a closed-loop stand-in (a mass-spring-damper hand
//!   pulled toward a scripted, recorded or live target, with encoder quantization, one
//!   sample of output latency and servo jitter from a seeded RNG);
//! - [`hid`]: a hidapi backend driven by profile files (`devices/profiles/*.toml`);
//! - `chaos`: [`ChaosDevice`], an adversarial wrapper that injects the faults of failing
//!   hardware (non-finite and absurd readings, teleports, clock glitches, stalls,
//!   disconnects, write errors, button chatter) for soak tests;
//! - [`trajectory`]: the CSV trajectory format (writer, reader with typed errors) and
//!   [`ReplayDevice`](trajectory::ReplayDevice), which plays a recording back sample by sample;
//! - [`vendor`]: OpenHaptics and Force Dimension devices through their SDKs, loaded at
//!   run time ([`OpenHapticsDevice`](vendor::openhaptics::OpenHapticsDevice),
//!   [`ForceDimensionDevice`](vendor::dhd::ForceDimensionDevice)), the Haply Inverse3
//!   through Haply's Inverse Service ([`HaplyDevice`](vendor::haply::HaplyDevice)), and the fake SDK libraries and
//!   fake service the tests drive them with;
//! - [`self_test`]: the low-stiffness self-test of `haptics devices --test`.
//!
//! Why a separate crate: the device layer must be usable (and testable) without the
//! simulation, and the simulation must not grow hidden dependencies on one device. The
//! dependency points one way: the renderer depends on this crate, never the reverse.

mod chaos;
mod device;
pub mod hid;
pub mod rng;
pub mod safety;
pub mod self_test;
pub mod simulated;
mod tap;
pub mod trajectory;
pub mod vendor;

pub use chaos::{ChaosConfig, ChaosDevice, ChaosStats, Fault};

pub use device::{Device, DeviceError, DeviceInfo, DeviceSample, Pose, Workspace, Wrench};

pub use safety::{EventLog, EventRecord, SafetyEvent, SafetySettings, StallWatchdog};
pub use tap::{TapControl, TapDevice};
