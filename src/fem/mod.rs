//! Finite elements: StVK and linear materials on linear tetrahedra and trilinear
//! hexahedra, sparse stiffness and mass matrices, and two alternative tet kernels proven
//! equal to the Total Lagrangian one (Kikuuwe's edge-based StVK, Teran's FVM forces).
//!
//! Sources: Barbic 2007 thesis, Ch. 2 (StVK, Total Lagrangian); Kikuuwe et al.,
//! "An edge-based computationally efficient formulation of Saint Venant-Kirchhoff
//! tetrahedral finite elements"; Teran et al., "Finite volume methods for the simulation
//! of skeletal muscle". docs/equations.md lists the errata of the printed equations.

pub mod blemker;
pub mod edge;
pub mod fvm;
mod hyperelastic;
pub mod model;
pub mod quadrature;
mod sparse;
pub mod stvk;

pub use hyperelastic::{StvkMaterial, TetKernel, TetMaterial};

pub use sparse::{BlockSparseMatrix, FreeDofSolver, SolveError};
