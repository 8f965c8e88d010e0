//! Time integration: the implicit Newmark scheme (thesis 2.7, 2.9) for the full-space
//! finite element reference simulator (and its static mode) and for reduced models.

#[cfg(feature = "testbed")]
pub mod accuracy;
pub mod full;
mod newmark;
pub mod object;
mod reduced;
pub use newmark::{NewmarkCoefficients, NewmarkParams};

pub use reduced::{ReducedNewmark, ReducedParams, StepEvent};
