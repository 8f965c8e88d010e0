//! Run-time evaluation of the reduced internal force R~(q) and its stiffness
//! K~(q) = dR~/dq from the cubic polynomial, in one pass over the coefficients.
//!
//! The coefficients are stored monomial-major (each monomial's r outputs contiguous), so
//! every operation is an axpy of length r. For the cubic terms, with (i <= j) fixed and
//! s_ijk the coefficient column of q_i q_j q_k (k >= j):
//!   t_ij = sum_k s_ijk q_k,   K[:, k] += (q_i q_j) s_ijk,
//!   R += (q_i q_j) t_ij,      K[:, i] += q_j t_ij,   K[:, j] += q_i t_ij,
//! which is exactly d/dq of sum s_ijk q_i q_j q_k (a repeated index collects one term per
//! slot). This reads each coefficient once for both R~ and K~ (ANCHORS.md: the step is
//! memory-bound, and Vega reads a separate stiffness polynomial). The quadratic terms
//! are handled the same way. Only the first r' <= r modes may be used.
//!
//! The inner axpy is compiled twice, for the baseline x86-64 target and with AVX2+FMA,
//! and picked at run time by CPU feature detection (no `target-cpu=native` builds).

use super::polynomial::{num_cubic, num_quadratic, CubicPolynomial};

/// Monomial-major copy of a cubic polynomial, truncated to the first `r` modes.
#[derive(Debug, Clone)]
pub struct ReducedForces {
    r: usize,
    /// r x r column-major: column i = d R / d q_i of the linear term.
    linear: Vec<f64>,
    /// Per monomial (i <= j), r outputs.
    quadratic: Vec<f64>,
    /// Per monomial (i <= j <= k), r outputs.
    cubic: Vec<f64>,
    avx2: bool,
}

impl ReducedForces {
    /// Uses the first `r` modes of `poly` (r <= poly.r): the monomials of the first r
    /// variables and the first r outputs.
    pub fn new(poly: &CubicPolynomial, r: usize) -> Result<Self, String> {
        if r == 0 || r > poly.r || r > MAX_R {
            return Err(format!(
                "cannot use {r} modes of a {}-mode polynomial (at most {MAX_R} are supported)",
                poly.r
            ));
        }
        let (pr, pq, pc) = (poly.r, num_quadratic(poly.r), num_cubic(poly.r));
        let mut linear = vec![0.0; r * r];
        for i in 0..r {
            for l in 0..r {
                linear[i * r + l] = poly.linear[l * pr + i];
            }
        }
        // Packed monomial index in the full polynomial of (i <= j) and (i <= j <= k).
        let q_index = |i: usize, j: usize| i * pr - i * (i + 1) / 2 + j;
        let c_index = |i: usize, j: usize, k: usize| {
            // Monomials before i: sum over i' < i of (pr - i')(pr - i' + 1)/2.
            let before_i: usize = (0..i).map(|a| (pr - a) * (pr - a + 1) / 2).sum();
            let before_j: usize = (i..j).map(|b| pr - b).sum();
            before_i + before_j + (k - j)
        };
        let mut quadratic = Vec::with_capacity(num_quadratic(r) * r);
        for i in 0..r {
            for j in i..r {
                let m = q_index(i, j);
                quadratic.extend((0..r).map(|l| poly.quadratic[l * pq + m]));
            }
        }
        let mut cubic = Vec::with_capacity(num_cubic(r) * r);
        for i in 0..r {
            for j in i..r {
                let m0 = c_index(i, j, j);
                for k in j..r {
                    let m = m0 + (k - j);
                    cubic.extend((0..r).map(|l| poly.cubic[l * pc + m]));
                }
            }
        }
        Ok(ReducedForces {
            r,
            linear,
            quadratic,
            cubic,
            avx2: detect_avx2(),
        })
    }

    pub fn r(&self) -> usize {
        self.r
    }

    /// Bytes of coefficient data read per evaluation.
    pub fn coefficient_bytes(&self) -> usize {
        8 * (self.linear.len() + self.quadratic.len() + self.cubic.len())
    }

    /// R~(q) into `force` (length r) and K~(q) into `stiffness` (r x r, column-major).
    /// Allocates nothing.
    pub fn evaluate(&self, q: &[f64], force: &mut [f64], stiffness: &mut [f64]) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 and FMA were detected on this CPU at construction.
            unsafe { self.evaluate_avx2(q, force, stiffness) };
            return;
        }
        self.evaluate_generic(q, force, stiffness);
    }

    /// R~(q) only (same cost order: the cubic pass dominates).
    pub fn force(&self, q: &[f64], force: &mut [f64], scratch_stiffness: &mut [f64]) {
        self.evaluate(q, force, scratch_stiffness);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn evaluate_avx2(&self, q: &[f64], force: &mut [f64], stiffness: &mut [f64]) {
        self.evaluate_generic(q, force, stiffness);
    }

    #[inline(always)]
    fn evaluate_generic(&self, q: &[f64], force: &mut [f64], stiffness: &mut [f64]) {
        let r = self.r;
        let q = &q[..r];
        let force = &mut force[..r];
        let stiffness = &mut stiffness[..r * r];
        // Linear: K = P, R = P q.
        stiffness.copy_from_slice(&self.linear);
        force.iter_mut().for_each(|f| *f = 0.0);
        for i in 0..r {
            axpy(q[i], &self.linear[i * r..(i + 1) * r], force);
        }
        // Quadratic: for monomial (i, j): R += q_i q_j s, K[:,i] += q_j s, K[:,j] += q_i s.
        let mut off = 0;
        for i in 0..r {
            for j in i..r {
                let s = &self.quadratic[off..off + r];
                off += r;
                axpy(q[i] * q[j], s, force);
                axpy(q[j], s, &mut stiffness[i * r..(i + 1) * r]);
                axpy(q[i], s, &mut stiffness[j * r..(j + 1) * r]);
            }
        }
        // Cubic.
        let mut t = [0.0f64; MAX_R];
        let mut off = 0;
        for i in 0..r {
            for j in i..r {
                let qij = q[i] * q[j];
                let t = &mut t[..r];
                t.iter_mut().for_each(|x| *x = 0.0);
                for k in j..r {
                    let s = &self.cubic[off..off + r];
                    off += r;
                    axpy(q[k], s, t);
                    axpy(qij, s, &mut stiffness[k * r..(k + 1) * r]);
                }
                axpy(qij, t, force);
                axpy(q[j], t, &mut stiffness[i * r..(i + 1) * r]);
                axpy(q[i], t, &mut stiffness[j * r..(j + 1) * r]);
            }
        }
    }
}

/// The largest supported basis size (a stack buffer in the evaluator).
pub const MAX_R: usize = 256;

#[inline(always)]
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

fn detect_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_poly(r: usize) -> CubicPolynomial {
        let mut s = 3u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        CubicPolynomial {
            r,
            linear: (0..r * r).map(|_| rnd()).collect(),
            quadratic: (0..r * num_quadratic(r)).map(|_| rnd()).collect(),
            cubic: (0..r * num_cubic(r)).map(|_| rnd()).collect(),
        }
    }

    #[test]
    fn force_matches_direct_evaluation_and_stiffness_matches_finite_differences() {
        let r = 7;
        let poly = random_poly(r);
        let ev = ReducedForces::new(&poly, r).unwrap();
        let q: Vec<f64> = (0..r).map(|i| 0.3 * (i as f64 + 1.0).sin()).collect();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        ev.evaluate(&q, &mut f, &mut k);
        let direct = poly.evaluate_direct(&q);
        for l in 0..r {
            // Same sums in a different order: rounding only.
            assert!((f[l] - direct[l]).abs() < 1e-13, "{l}: {} vs {}", f[l], direct[l]);
        }
        let h = 1e-6;
        for m in 0..r {
            let mut qp = q.clone();
            let mut qm = q.clone();
            qp[m] += h;
            qm[m] -= h;
            let (fp, fm) = (poly.evaluate_direct(&qp), poly.evaluate_direct(&qm));
            for l in 0..r {
                let fd = (fp[l] - fm[l]) / (2.0 * h);
                // Cubic: central-difference truncation h^2 |R'''| / 6 ~ 1e-12; rounding 1e-10.
                assert!((fd - k[m * r + l]).abs() < 1e-8, "K[{l},{m}] {} vs fd {fd}", k[m * r + l]);
            }
        }
    }

    #[test]
    fn truncation_to_fewer_modes_equals_zero_padding() {
        let r = 6;
        let poly = random_poly(r);
        let small = ReducedForces::new(&poly, 4).unwrap();
        assert!(ReducedForces::new(&poly, 7).is_err());
        let q4 = [0.2, -0.1, 0.3, 0.05];
        let mut q6 = q4.to_vec();
        q6.extend([0.0, 0.0]);
        let direct = poly.evaluate_direct(&q6);
        let (mut f, mut k) = (vec![0.0; 4], vec![0.0; 16]);
        small.evaluate(&q4, &mut f, &mut k);
        for l in 0..4 {
            assert!((f[l] - direct[l]).abs() < 1e-14);
        }
    }
}
