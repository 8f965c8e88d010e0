//! Model reduction: reduced bases and the cubic reduced StVK force polynomials (thesis
//! Ch. 2), and Vega FEM interoperability for bases and polynomials.

pub mod bake;
pub mod basis;
pub mod evaluator;
pub mod modes;
pub mod polynomial;
pub mod precompute;
pub mod vega;

pub use polynomial::CubicPolynomial;
pub use precompute::{reduced_polynomial, MaterialGroupPolynomials, PrecomputeTimings};
