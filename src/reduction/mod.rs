//! Model reduction: reduced bases and the cubic reduced StVK force polynomials (thesis
//! Ch. 2), and Vega FEM interoperability for bases and polynomials.

pub mod vega;
