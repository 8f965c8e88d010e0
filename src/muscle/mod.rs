//! Active skeletal muscle as a system to run: the material file, the isometric
//! tension-length experiment of Chen (1991) on a uniaxial block (with the `testbed`
//! feature), and the static contraction of a fusiform muscle with fixed tendons.
//!
//! The material itself (the Blemker fibre law with activation, its tangent, the
//! inversion-robust evaluation) lives in [`crate::fem::blemker`]; the NURBS fusiform
//! geometry in [`crate::muscle::fusiform`]; the reduced real-time muscle uses the optimized
//! cubature of [`crate::reduction::cubature`]. docs/muscle.md is the user's guide.

mod contract;
pub mod fusiform;
#[cfg(feature = "testbed")]
mod isometric;
mod material_file;
pub mod reduced;
mod statics;

pub use contract::{contract, Contraction, FusiformModel};
#[cfg(feature = "testbed")]
pub use isometric::{
    homogeneous_uniaxial, isometric_block, run_isometric, IsometricCurve, IsometricPoint,
    IsometricSetup,
};
pub use material_file::{read_material, MaterialFile};
pub use statics::{solve_static, StaticOptions, StaticSolution};

use std::path::PathBuf;

use crate::fem::blemker::{ActivationError, ParamError};
use crate::fem::{model::FemError, SolveError};

/// Errors of the muscle experiments and files. Each names the file and line, or the
/// load case, and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum MuscleError {
    /// A file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// A material file is not valid TOML, or has an unknown key or a non-number.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What the parser expected.
        message: String,
    },
    /// A material parameter is out of range.
    #[error("{path}:{line}: {source}")]
    Param {
        /// The file.
        path: PathBuf,
        /// 1-based line of the key (0 if the key came from a default).
        line: usize,
        /// The key, its value and what was expected.
        source: ParamError,
    },
    /// A parameter given on the command line or in code is out of range.
    #[error("{0}")]
    BadParam(#[from] ParamError),
    /// An activation outside [0, 1].
    #[error("{0}")]
    Activation(#[from] ActivationError),
    /// The caller asked the experiment to stop ([`crate::progress::Progress::cancelled`]).
    #[error("the muscle experiment was cancelled")]
    Cancelled,
    /// A stretch that is not a positive finite number.
    #[error("stretch {0} is not a positive number")]
    Stretch(f64),
    /// The muscle geometry could not be built.
    #[error("fusiform muscle: {0}")]
    Geometry(String),
    /// The mesh cannot be simulated.
    #[error("{0}")]
    Fem(#[from] FemError),
    /// The linear solver failed (a singular tangent).
    #[error("{case}: {source}")]
    Solve {
        /// The load case.
        case: String,
        /// The solver's error.
        source: SolveError,
    },
    /// Newton's method did not reach the tolerance.
    #[error("{case}: Newton did not converge in {iterations} iterations (residual {residual:e} N, tolerance {tolerance:e} N)")]
    NotConverged {
        /// The load case.
        case: String,
        /// Iterations run.
        iterations: usize,
        /// Final residual norm on the free dofs (N).
        residual: f64,
        /// The tolerance (N).
        tolerance: f64,
    },
}
