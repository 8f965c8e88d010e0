//! The haptic loop (thesis Fig. 4.2): a fixed-period thread that reads the device, runs
//! contact, virtual coupling and reduced dynamics, and renders force; with timing
//! statistics and a precise scheduler.

pub mod device_fit;
pub mod log;
pub mod replay;
pub mod scheduler;
mod simulation;
#[cfg(feature = "testbed")]
pub mod stability;
mod thread;
mod timing;
pub use simulation::{CycleReport, HapticSimulation};

pub use thread::{
    haptic_cycle, Command, ContactSample, CycleOutcome, HapticThread, Snapshot, SNAPSHOT_CONTACTS,
};

pub use timing::{CycleStats, TimingSummary};
