//! The interactive application: a window showing the scene while the haptic thread runs
//! it, with panels to tune it and mouse, keyboard or SpaceMouse input driving the
//! simulated device; and its fallbacks without a display (the headless demo) or for
//! single frames (`haptics screenshot`).
//!
//! Threads: the haptic thread ([`haptics::haptic::HapticThread`]) owns the simulation and
//! the device; this module's event loop is the render thread. It reads the latest
//! snapshot through the lock-free triple buffer, sends edits over the command channel
//! and sends the mouse-driven target pose to the simulated device over another channel,
//! so nothing it does (a slow frame, a resize, a blocked present) can delay a haptic
//! cycle.
//!
//! - [`frame`]: snapshot to [`crate::render::FrameState`], and the debug views;
//! - [`input`]: mouse and keyboard to a 6-DOF target pose and camera motion;
//! - [`headless`]: offscreen frames and the headless demo;
//! - [`window`]: the winit event loop of the window;
//! - `session` (private): the haptic thread with its device, and recordings;
//! - `surface` (private): the window's wgpu surface, scene renderer and egui, and a
//!   frame's passes through them.

pub mod frame;
pub mod guide;
pub mod headless;
pub mod input;
mod panels;
mod session;
mod surface;
pub mod window;

pub use frame::{fill_frame, DebugContact, DebugViews};
pub use headless::{render_snapshot, replay_until, run_demo, DemoSummary};
pub use session::DeviceChoice;

use crate::render::RenderError;
use thiserror::Error;

/// Why the window could not run.
#[derive(Debug, Error)]
pub enum AppError {
    /// No display server (or the window could not be created).
    #[error("no display: {0}")]
    NoDisplay(String),
    /// The GPU side failed (no adapter, no usable surface format, ...).
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Anything else (a scene that failed to load, ...).
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}
