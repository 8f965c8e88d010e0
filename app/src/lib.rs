//! The `haptics` application on top of the GPU-free physics core ([`haptics`]): the
//! command line ([`cli`]), the wgpu renderer that shows u = U q reconstructed on the GPU
//! ([`render`]), the winit/egui window with its panels, plots and mouse 6-DOF input
//! ([`ui`]), and the opening of a live force-feedback device that both the commands and
//! the window use ([`live`]).

// Numerical loops index several parallel arrays by the same index; iterator chains over
// zipped slices would obscure the formulas they implement.
#![allow(clippy::needless_range_loop)]

pub mod cli;
pub mod live;
pub mod render;
pub mod ui;
