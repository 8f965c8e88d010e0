//! Gauss-Legendre quadrature on the unit interval and its tensor products on the unit
//! cube (the reference hexahedron of Vega's node order).
//!
//! An n-point rule integrates polynomials of degree 2n - 1 exactly. On a trilinear voxel
//! the StVK energy density is a polynomial of degree 4 in each reference coordinate, so
//! forces and stiffness need n = 3 (docs/equations.md, "Hex quadrature"); mass and the rest
//! stiffness need only n = 2.

/// Points and weights of the n-point Gauss-Legendre rule on [0, 1] (n = 1, 2 or 3).
pub(crate) fn gauss_legendre_unit(n: usize) -> (Vec<f64>, Vec<f64>) {
    match n {
        1 => (vec![0.5], vec![1.0]),
        2 => {
            let g = 0.5 / 3f64.sqrt();
            (vec![0.5 - g, 0.5 + g], vec![0.5, 0.5])
        }
        3 => {
            let g = 0.5 * (3.0f64 / 5.0).sqrt();
            (
                vec![0.5 - g, 0.5, 0.5 + g],
                vec![5.0 / 18.0, 8.0 / 18.0, 5.0 / 18.0],
            )
        }
        _ => panic!("Gauss-Legendre rule with {n} points is not tabulated"),
    }
}

/// Tensor-product rule on `[0,1]^3`: (point, weight) pairs.
pub fn gauss_cube(n: usize) -> Vec<([f64; 3], f64)> {
    let (x, w) = gauss_legendre_unit(n);
    let mut out = Vec::with_capacity(n * n * n);
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                out.push(([x[i], x[j], x[k]], w[i] * w[j] * w[k]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_exact_to_degree_2n_minus_1() {
        for n in 1..=3 {
            let (x, w) = gauss_legendre_unit(n);
            for deg in 0..(2 * n) {
                let q: f64 = x.iter().zip(&w).map(|(x, w)| w * x.powi(deg as i32)).sum();
                // Exact integral of x^deg over [0,1] is 1/(deg+1); rounding only.
                assert!(
                    (q - 1.0 / (deg as f64 + 1.0)).abs() < 1e-15,
                    "n={n} deg={deg}"
                );
            }
        }
        let cube: f64 = gauss_cube(3)
            .iter()
            .map(|(p, w)| w * p[0].powi(4) * p[1].powi(5) * p[2].powi(2))
            .sum();
        assert!((cube - 1.0 / (5.0 * 6.0 * 3.0)).abs() < 1e-15);
    }
}
