//! Time integration: the implicit Newmark scheme (thesis 2.7) for the full-space
//! finite element reference simulator, and its static-equilibrium mode.

pub mod full;
pub mod newmark;

pub use full::{FullSimParams, FullSimulator, Load, SimError, StepReport};
pub use newmark::{NewmarkCoefficients, NewmarkParams};
