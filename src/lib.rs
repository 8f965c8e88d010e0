//! A real-time 6-DOF haptic renderer for reduced deformable contact, after Barbic's
//! 2007 thesis. One module per stage of the data flow (DESIGN.md):
//! mesh -> fem -> reduction -> dynamics, and the command line in cli.

// Numerical loops index several parallel arrays by the same dof or node index; iterator
// chains over zipped slices would obscure the formulas they implement.
#![allow(clippy::needless_range_loop)]

pub mod app;
pub mod cli;
pub mod contact;
pub mod coupling;
pub mod dynamics;
pub mod fem;
pub mod geometry;
pub mod haptic;
pub mod mesh;
pub mod plot;
pub mod reduction;
pub mod render;
pub mod scene;
