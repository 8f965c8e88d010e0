//! The HID backend: real devices over hidapi, described by profile files.
//!
//! Why profiles: HID devices differ only in where their numbers sit in a report and what
//! they mean, so a device is a data file (`devices/profiles/*.toml`, format in
//! `devices/README.md`), parsed by [`profile`], decoded by the pure functions in
//! [`report`] (tested on recorded report bytes) and driven by [`HidDevice`](backend::HidDevice).
//!
//! Supported out of the box: the 3Dconnexion SpaceMouse family as a 6-DOF **rate
//! controller** (older models: translation in report 1, rotation in report 2, buttons in
//! report 3 — `spacemouse-split`; newer models: all six axes in report 1 —
//! `spacemouse-combined`), and this project's **generic raw-HID force-feedback** layout
//! (`generic-ffb`). Without hardware every entry point fails with a clear error instead of
//! panicking: [`list_devices`](backend::list_devices) returns an empty list (or a backend error), opening returns
//! [`crate::DeviceError::NotFound`].

pub mod backend;
pub mod profile;
pub mod report;
