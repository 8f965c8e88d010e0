//! Time-critical contact between a pointshell object and a distance-field object
//! (Barbic 2007, thesis Chapter 3).
//!
//! - [`distance`]: the distance fields a pointshell is tested against (the grid SDF of
//!   thesis 3.11, an analytic half-space, the deformed field of 3.12).
//! - `point_tree`: the nested point tree ([`ContactShell`], [`NestedPointTree`]) (3.9) with BD-tree radii `R(q) = R0 + sum_j
//!   a_j |q_j|` (3.12 of docs/equations.md).
//! - `shell_modes`: per-point displacement rows `U_s` and normal-correction rows
//!   `dN_s` of a deformable pointshell (3.6), from the reduced basis and the embedding.
//! - [`model`]: the penalty contact model and its force/torque gradients (3.5, 4.11-4.12).
//! - `traversal`: the breadth-first ([`Traversal`]), budgeted, temporally coherent traversal (3.10)
//!   that turns all of the above into contact force, torque, gradients and reduced
//!   forces once per haptic cycle, without allocating.
//! - [`deformed_field`]: the distance field of a reduced deformable object (3.12).
//! - [`params`]: the contact settings shared by the traversal and the sweep.
//! - [`continuous`]: the first time of contact of the held object's motion over a cycle
//!   (conservative advancement), so that no motion carries it through a thin wall.

pub mod continuous;
pub mod deformed_field;
pub mod distance;
pub mod model;
pub mod params;
mod point_tree;
mod shell_modes;
mod traversal;
pub use point_tree::{ContactShell, NestedPointTree, PointTreeError};

pub use shell_modes::{shell_modes, ShellModes, ShellModesError};

pub use traversal::{ContactOutput, ContactPoint, Lookups, Poses, Traversal};
