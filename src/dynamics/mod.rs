//! Time integration: the implicit Newmark scheme (thesis 2.7, 2.9) for the full-space
//! finite element reference simulator (and its static mode) and for reduced models.

#[cfg(feature = "testbed")]
pub mod accuracy;
pub mod full;
pub mod newmark;
pub mod object;
pub mod reduced;

pub use full::{FullSimParams, FullSimulator, Load, SimError, StepReport};
pub use newmark::{NewmarkCoefficients, NewmarkParams};
pub use object::{ObjectDynamics, ObjectForces};
pub use reduced::{ReducedNewmark, ReducedParams, StepEvent};
