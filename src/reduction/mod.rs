//! Model reduction: reduced bases and the cubic reduced StVK force polynomials (thesis
//! Ch. 2), optimized cubature for reduced forces of any hyperelastic material (An, Kim
//! and James 2008), and Vega FEM interoperability for bases and polynomials.

pub mod bake;
pub mod basis;
pub mod cubature;
pub mod evaluator;
pub mod modes;
pub(crate) mod pipeline;
pub mod polynomial;
pub mod precompute;
pub mod simd;
pub mod vega;
