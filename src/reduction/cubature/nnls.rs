//! Non-negative least squares: An et al.'s greedy point selection and the active-set
//! solver (Lawson and Hanson 1974) on the normal equations.

use nalgebra::{DMatrix, DVector};

/// Solves the least-squares problem on the passive set: G_PP s = c_P (Cholesky, with a
/// growing ridge if G_PP is numerically singular).
pub(super) fn solve_passive(g: &DMatrix<f64>, c: &DVector<f64>, passive: &[usize]) -> DVector<f64> {
    let gp = g.select_rows(passive).select_columns(passive);
    let cp = c.select_rows(passive);
    let scale = gp
        .diagonal()
        .iter()
        .cloned()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let mut ridge = 0.0;
    for _ in 0..8 {
        let mut m = gp.clone();
        for i in 0..m.nrows() {
            m[(i, i)] += ridge;
        }
        if let Some(ch) = m.cholesky() {
            return ch.solve(&cp);
        }
        ridge = if ridge == 0.0 {
            1e-14 * scale
        } else {
            ridge * 100.0
        };
    }
    // Last resort: least squares by SVD.
    gp.svd(true, true)
        .solve(&cp, 1e-12 * scale)
        .unwrap_or_else(|_| DVector::zeros(passive.len()))
}

/// Non-negative least squares min |A x - b| subject to x >= 0, given the Gram matrix
/// G = A^T A and c = A^T b (Lawson and Hanson 1974, Ch. 23, in the normal-equation form
/// of Bro and De Jong 1997). `x` is the warm start on entry (clipped to x >= 0; its
/// positive entries start as the passive set) and the solution on return.
///
/// Hand-written rather than the `nnls` crate (a port of Lawson-Hanson over ndarray): the
/// greedy cubature calls it once per added point on a growing set of columns with T r
/// rows (10^4 at r = 100); that crate copies and Householder-factors the full m x n
/// matrix at every call, O(m n^2), while this form works on the n x n Gram matrix that
/// the greedy loop extends by one row per point, O(n^3) per call, and starts from the
/// previous solution; it also keeps ndarray out of a crate built on nalgebra and faer.
pub fn nnls_gram(g: &DMatrix<f64>, c: &DVector<f64>, x: &mut DVector<f64>) {
    let n = c.len();
    assert!(g.nrows() == n && g.ncols() == n && x.len() == n);
    if n == 0 {
        return;
    }
    let gmax = g.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let cmax = c.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    x.iter_mut().for_each(|v| *v = v.max(0.0));
    let mut passive: Vec<bool> = x.iter().map(|&v| v > 0.0).collect();
    let max_outer = 3 * n + 10;
    let mut first = true;
    for _ in 0..max_outer {
        if !first {
            // w = c - G x = A^T (b - A x), minus the gradient of 1/2 |A x - b|^2.
            let w = c - g * &*x;
            let tol = 10.0 * n as f64 * f64::EPSILON * (cmax + gmax * x.amax());
            let mut best: Option<(usize, f64)> = None;
            for j in 0..n {
                if !passive[j] && w[j] > tol && best.is_none_or(|(_, v)| w[j] > v) {
                    best = Some((j, w[j]));
                }
            }
            let Some((j, _)) = best else {
                break;
            };
            passive[j] = true;
        }
        first = false;
        // Inner loop: least squares on the passive set, stepping back along x -> s to
        // the first constraint hit while s is infeasible (each pass frees at least one).
        for _ in 0..=n {
            let idx: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
            if idx.is_empty() {
                break;
            }
            let s = solve_passive(g, c, &idx);
            if s.iter().all(|&v| v > 0.0) {
                for (k, &j) in idx.iter().enumerate() {
                    x[j] = s[k];
                }
                break;
            }
            let (mut alpha, mut hit) = (1.0f64, idx[0]);
            for (k, &j) in idx.iter().enumerate() {
                if s[k] <= 0.0 {
                    let d = x[j] - s[k];
                    let a = if d > 0.0 { x[j] / d } else { 0.0 };
                    if a <= alpha {
                        alpha = a;
                        hit = j;
                    }
                }
            }
            let xmax = x.amax();
            for (k, &j) in idx.iter().enumerate() {
                x[j] += alpha * (s[k] - x[j]);
            }
            x[hit] = 0.0;
            for &j in &idx {
                if x[j] <= 1e-14 * xmax {
                    x[j] = 0.0;
                    passive[j] = false;
                }
            }
        }
    }
}

/// Non-negative least squares min |A x - b|, x >= 0 (Lawson-Hanson, [`nnls_gram`]).
pub fn nnls(a: &DMatrix<f64>, b: &DVector<f64>) -> DVector<f64> {
    let g = a.transpose() * a;
    let c = a.transpose() * b;
    let mut x = DVector::zeros(a.ncols());
    nnls_gram(&g, &c, &mut x);
    x
}
