//! The cubic reduced StVK force polynomial (thesis 2.4):
//! R~(q) = sum_i P_i q_i + sum_{i<=j} Q_ij q_i q_j + sum_{i<=j<=k} S_ijk q_i q_j q_k, each
//! coefficient in R^r, stored in Vega's `.cub` layout (output-index-major, monomials
//! i <= j with j fastest and i <= j <= k with k fastest, every coefficient summing all
//! index orders).

/// Number of monomials q_i q_j with i <= j.
pub fn num_quadratic(r: usize) -> usize {
    r * (r + 1) / 2
}

/// Number of monomials q_i q_j q_k with i <= j <= k.
pub fn num_cubic(r: usize) -> usize {
    r * (r + 1) * (r + 2) / 6
}

/// The coefficients of a cubic reduced-force polynomial, in Vega's `.cub` layout.
#[derive(Debug, Clone, PartialEq)]
pub struct CubicPolynomial {
    /// Number of reduced coordinates q (the basis size r).
    pub r: usize,
    /// r x r, output-major (output l, variable i at `l * r + i`).
    pub linear: Vec<f64>,
    /// r x r(r+1)/2, output-major.
    pub quadratic: Vec<f64>,
    /// r x r(r+1)(r+2)/6, output-major.
    pub cubic: Vec<f64>,
}

impl CubicPolynomial {
    /// Direct term-by-term evaluation of R~(q) = sum_i P_i q_i + sum_{i<=j} Q_ij q_i q_j
    /// + sum_{i<=j<=k} S_ijk q_i q_j q_k (a reference for faster evaluators).
    pub fn evaluate_direct(&self, q: &[f64]) -> Vec<f64> {
        let r = self.r;
        let (nq, nc) = (num_quadratic(r), num_cubic(r));
        let mut out = vec![0.0; r];
        for (i, qi) in q.iter().enumerate().take(r) {
            for l in 0..r {
                out[l] += self.linear[l * r + i] * qi;
            }
        }
        let mut m = 0;
        for i in 0..r {
            for j in i..r {
                for l in 0..r {
                    out[l] += self.quadratic[l * nq + m] * q[i] * q[j];
                }
                m += 1;
            }
        }
        let mut m = 0;
        for i in 0..r {
            for j in i..r {
                for k in j..r {
                    for l in 0..r {
                        out[l] += self.cubic[l * nc + m] * q[i] * q[j] * q[k];
                    }
                    m += 1;
                }
            }
        }
        out
    }
}
