//! Pointwise Saint Venant-Kirchhoff and linear (small-strain) constitutive laws in the
//! Total Lagrangian form, with their first and second derivatives.
//!
//! With the deformation gradient F = I + G (G the displacement gradient), the Green strain
//! E = (F^T F - I) / 2 and Lame parameters lambda, mu (thesis 2.2, docs/equations.md):
//! - energy density   W = lambda/2 tr(E)^2 + mu tr(E^2);
//! - second PK stress S = lambda tr(E) I + 2 mu E;
//! - first PK stress  P = F S = dW/dF;
//! - `dP[dF] = dF S + F (lambda tr(dE) I + 2 mu dE)`, `dE = sym(F^T dF)`;
//! - `d2P[A, B] = A dS[B] + B dS[A] + F (lambda tr(E2) I + 2 mu E2)`, `E2 = sym(A^T B)`.
//!
//! The linear law is the same expansion truncated at first order about F = I:
//! P = lambda tr(G) I + mu (G + G^T).

use nalgebra::Matrix3;

/// Symmetric part (A + A^T) / 2.
#[inline]
pub fn sym(a: &Matrix3<f64>) -> Matrix3<f64> {
    (a + a.transpose()) * 0.5
}

/// Green strain E = (F^T F - I) / 2.
#[inline]
pub fn green_strain(f: &Matrix3<f64>) -> Matrix3<f64> {
    (f.transpose() * f - Matrix3::identity()) * 0.5
}

/// Second Piola-Kirchhoff stress of StVK.
#[inline]
pub fn second_pk(e: &Matrix3<f64>, lambda: f64, mu: f64) -> Matrix3<f64> {
    Matrix3::identity() * (lambda * e.trace()) + e * (2.0 * mu)
}

/// StVK energy density W(F).
pub fn energy_density(f: &Matrix3<f64>, lambda: f64, mu: f64) -> f64 {
    let e = green_strain(f);
    0.5 * lambda * e.trace().powi(2) + mu * (e.transpose() * e).trace()
}

/// First Piola-Kirchhoff stress P = F S.
#[inline]
pub fn first_pk(f: &Matrix3<f64>, lambda: f64, mu: f64) -> Matrix3<f64> {
    f * second_pk(&green_strain(f), lambda, mu)
}

/// Directional derivative `dP[dF]` at F.
pub fn first_pk_differential(
    f: &Matrix3<f64>,
    df: &Matrix3<f64>,
    lambda: f64,
    mu: f64,
) -> Matrix3<f64> {
    let s = second_pk(&green_strain(f), lambda, mu);
    let de = sym(&(f.transpose() * df));
    df * s + f * second_pk(&de, lambda, mu)
}

/// Second directional derivative d2P[A, B] at F (symmetric in A and B).
pub fn first_pk_second_differential(
    f: &Matrix3<f64>,
    a: &Matrix3<f64>,
    b: &Matrix3<f64>,
    lambda: f64,
    mu: f64,
) -> Matrix3<f64> {
    let ds_a = second_pk(&sym(&(f.transpose() * a)), lambda, mu);
    let ds_b = second_pk(&sym(&(f.transpose() * b)), lambda, mu);
    let e2 = sym(&(a.transpose() * b));
    a * ds_b + b * ds_a + f * second_pk(&e2, lambda, mu)
}

/// Linear elastic stress lambda tr(G) I + mu (G + G^T) for displacement gradient G.
#[inline]
pub fn linear_stress(g: &Matrix3<f64>, lambda: f64, mu: f64) -> Matrix3<f64> {
    Matrix3::identity() * (lambda * g.trace()) + (g + g.transpose()) * mu
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_f() -> Matrix3<f64> {
        Matrix3::new(1.1, 0.2, -0.3, 0.05, 0.9, 0.4, -0.1, 0.3, 1.3)
    }

    #[test]
    fn first_pk_is_energy_gradient() {
        let (l, m) = (2.3, 1.7);
        let f = sample_f();
        let p = first_pk(&f, l, m);
        let h = 1e-6;
        for i in 0..3 {
            for j in 0..3 {
                let mut fp = f;
                let mut fm = f;
                fp[(i, j)] += h;
                fm[(i, j)] -= h;
                let fd = (energy_density(&fp, l, m) - energy_density(&fm, l, m)) / (2.0 * h);
                // Central difference error O(h^2 W''') ~ 1e-12, rounding eps W / h ~ 1e-10.
                assert!(
                    (fd - p[(i, j)]).abs() < 1e-8,
                    "({i},{j}) {fd} vs {}",
                    p[(i, j)]
                );
            }
        }
    }

    #[test]
    fn differentials_match_finite_differences() {
        let (l, m) = (2.3, 1.7);
        let f = sample_f();
        let a = Matrix3::new(0.3, -0.1, 0.2, 0.7, 0.1, -0.4, 0.2, 0.5, -0.6);
        let b = Matrix3::new(-0.2, 0.4, 0.1, 0.3, -0.5, 0.2, 0.6, 0.1, 0.3);
        let h = 1e-5;
        let fd1 = (first_pk(&(f + a * h), l, m) - first_pk(&(f - a * h), l, m)) / (2.0 * h);
        let d1 = first_pk_differential(&f, &a, l, m);
        // P is cubic in F: the central difference error is h^2/6 P''' ~ 1e-10.
        assert!((fd1 - d1).norm() < 1e-8 * d1.norm());
        let fd2 = (first_pk_differential(&(f + b * h), &a, l, m)
            - first_pk_differential(&(f - b * h), &a, l, m))
            / (2.0 * h);
        let d2 = first_pk_second_differential(&f, &a, &b, l, m);
        // dP[A] is quadratic in F: central differences are exact up to rounding.
        assert!((fd2 - d2).norm() < 1e-8 * d2.norm());
        let d2t = first_pk_second_differential(&f, &b, &a, l, m);
        assert!((d2 - d2t).norm() < 1e-13 * d2.norm());
    }

    #[test]
    fn linear_law_is_first_order_stvk() {
        let (l, m) = (2.3, 1.7);
        let g = Matrix3::new(0.3, -0.1, 0.2, 0.7, 0.1, -0.4, 0.2, 0.5, -0.6);
        let d = first_pk_differential(&Matrix3::identity(), &g, l, m);
        assert!((d - linear_stress(&g, l, m)).norm() < 1e-14);
    }
}
