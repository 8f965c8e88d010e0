//! Precomputation of the cubic reduced StVK force polynomial for any element type, by
//! dense matrix products over vertex pairs (a generalization of Kikuuwe's edge-based
//! formulation, docs/equations.md "Element kernels and muscle", to hexes and tets alike).
//!
//! At a quadrature point with shape gradients g_a and weight w, the displacement
//! gradient is G = sum_a u_a g_a^T, and the Green strain splits into a part linear in u,
//! E1 = sym(G), and a part linear in the Gram entries P_ab = u_a . u_b:
//! E2 = 1/2 G^T G = 1/2 sum_{a<=b} P_ab m_ab, with m_aa = g_a g_a^T and
//! m_ab = g_a g_b^T + g_b g_a^T. The StVK energy W = 1/2 E:C:E (C:X = lambda tr(X) I +
//! 2 mu X) then has
//! - a quadratic part 1/2 E1:C:E1 (linear elasticity, K0),
//! - a cubic part E1:C:E2 = sum_ab P_ab (c_ab . u), c_ab gathered from
//!   1/2 w [lambda tr(m_ab) g_c + 2 mu m_ab g_c] for every node c,
//! - a quartic part 1/2 E2:C:E2 = 1/2 sum_{ab,cd} L_{ab,cd} P_ab P_cd with
//!   L_{ab,cd} = 1/4 w [lambda tr(m_ab) tr(m_cd) + 2 mu m_ab : m_cd].
//!
//! Summed over elements, pairs become global vertex pairs alpha. In a basis u = U q,
//! P_alpha = q^T B_alpha q with B_alpha = sym(U_a^T U_b), and a_alpha = U^T c_alpha, so
//! - linear coefficients: U^T K0 U;
//! - quadratic: Q~_lij = sum_alpha 2 B_alpha,li a_alpha,j + a_alpha,l B_alpha,ij, one GEMM
//!   X = Bmat^T Amat;
//! - cubic: R3_l = 2 sum_ijk T[(l,i),(j,k)] q_i q_j q_k with T = Bmat^T L Bmat, one sparse
//!   product and one GEMM over packed symmetric columns (r(r+1)/2 of them).
//!
//! This replaces Vega's per-element rank-1 updates into an r^4 accumulator by large matrix
//! products, which run near the machine's peak (measured against Vega in
//! docs/performance.md, "Side by side with Vega FEM").

use std::collections::HashMap;
use std::time::Instant;

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use nalgebra::{DMatrix, Matrix3, Vector3};
use rayon::prelude::*;

use super::polynomial::{num_cubic, num_quadratic, CubicPolynomial};
use crate::fem::{model::FemModel, model::MaterialLaw};

/// Index of the packed symmetric entry (i, j) of an r x r matrix (i <= j, row-major
/// upper triangle, the order of Vega's quadratic monomials).
#[inline]
pub(crate) fn packed_index(r: usize, i: usize, j: usize) -> usize {
    let (i, j) = if i <= j { (i, j) } else { (j, i) };
    i * r - i * (i + 1) / 2 + j
}

/// Wall-clock time of each precomputation stage (s).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrecomputeTimings {
    /// Gathering the vertex pairs, the quartic coupling matrix L and the forms c_alpha.
    pub pairs_and_quartic_matrix: f64,
    /// The linear coefficients U^T K0 U.
    pub linear: f64,
    /// The pair matrices B_alpha (packed) and a_alpha = U^T c_alpha.
    pub pair_matrices: f64,
    /// The quadratic coefficients (one GEMM).
    pub quadratic: f64,
    /// The cubic coefficients (T = B L B^T in chunks of pairs).
    pub cubic: f64,
    /// The whole of [`reduced_polynomial`].
    pub total: f64,
}

/// Errors of the precomputation.
#[derive(Debug, thiserror::Error)]
pub enum PrecomputeError {
    /// The basis U does not have one row per degree of freedom of the model.
    #[error("the basis has {rows} rows but the model has {dofs} degrees of freedom")]
    BasisShape {
        /// Rows of U.
        rows: usize,
        /// Degrees of freedom of the model (3 per vertex).
        dofs: usize,
    },
    /// The model uses another material law; only StVK forces are cubic polynomials.
    #[error("reduced StVK polynomials need the StVK material law")]
    NotStvk,
    /// The basis U has no columns (r = 0).
    #[error("the basis has no columns")]
    EmptyBasis,
}

/// Global vertex pairs (a <= b) that share an element, with their index.
struct Pairs {
    list: Vec<(u32, u32)>,
    index: HashMap<(u32, u32), u32>,
}

impl Pairs {
    fn id(&mut self, a: usize, b: usize) -> u32 {
        let key = (a.min(b) as u32, a.max(b) as u32);
        let list = &mut self.list;
        *self.index.entry(key).or_insert_with(|| {
            list.push(key);
            (list.len() - 1) as u32
        })
    }
}

/// The quartic coupling matrix L (sparse, CSR over pairs) and the cubic linear forms
/// c_alpha (per pair and vertex: 3-vectors), in the full displacement space.
struct PairData {
    pairs: Vec<(u32, u32)>,
    l_ptr: Vec<usize>,
    l_col: Vec<u32>,
    l_val: Vec<f64>,
    /// (pair, vertex) -> 3-vector, as sorted triplets.
    c_forms: Vec<(u32, u32, [f64; 3])>,
}

fn pair_data(model: &FemModel) -> PairData {
    let nn = model.nodes_per_element();
    let mut pairs = Pairs {
        list: Vec::new(),
        index: HashMap::new(),
    };
    let local_pairs: Vec<(usize, usize)> =
        (0..nn).flat_map(|a| (a..nn).map(move |b| (a, b))).collect();
    let np = local_pairs.len();
    let mut triplets: Vec<(u32, u32, f64)> = Vec::with_capacity(model.num_elements() * np * np);
    let mut c_forms: Vec<(u32, u32, [f64; 3])> = Vec::with_capacity(model.num_elements() * np * nn);
    let mut l_local = vec![0.0; np * np];
    let mut c_local = vec![[0.0; 3]; np * nn];
    for e in 0..model.num_elements() {
        let el = model.element(e);
        let (lambda, mu) = model.lame(e);
        let (qw, qg) = model.quadrature(e);
        l_local.iter_mut().for_each(|x| *x = 0.0);
        c_local.iter_mut().for_each(|x| *x = [0.0; 3]);
        for (q, &w) in qw.iter().enumerate() {
            let g = &qg[q * nn..(q + 1) * nn];
            let forms = (&mut l_local[..], &mut c_local[..]);
            add_point_forms(&local_pairs, g, w, (lambda, mu), forms);
        }
        let ids: Vec<u32> = local_pairs
            .iter()
            .map(|&(a, b)| pairs.id(el[a], el[b]))
            .collect();
        for p in 0..np {
            for p2 in 0..np {
                triplets.push((ids[p], ids[p2], l_local[p * np + p2]));
            }
            for c in 0..nn {
                c_forms.push((ids[p], el[c] as u32, c_local[p * nn + c]));
            }
        }
    }
    let (l_ptr, l_col, l_val) = compressed_rows(triplets, pairs.list.len());
    c_forms.par_sort_unstable_by_key(|t| (t.0, t.1));
    PairData {
        pairs: pairs.list,
        l_ptr,
        l_col,
        l_val,
        c_forms,
    }
}

/// Adds one quadrature point's share (weight `w`, shape-function gradients `g`, Lamé
/// parameters `lame`) to an element's pair forms: `forms.0` the pair-pair matrix
/// (`np x np`, `np` the element's node pairs `local_pairs`), `forms.1` the pair-node
/// vectors (`np x nn`).
fn add_point_forms(
    local_pairs: &[(usize, usize)],
    g: &[Vector3<f64>],
    w: f64,
    lame: (f64, f64),
    forms: (&mut [f64], &mut [[f64; 3]]),
) {
    let (lambda, mu) = lame;
    let (l_local, c_local) = forms;
    let (np, nn) = (local_pairs.len(), g.len());
    let m: Vec<Matrix3<f64>> = local_pairs
        .iter()
        .map(|&(a, b)| {
            if a == b {
                g[a] * g[a].transpose()
            } else {
                g[a] * g[b].transpose() + g[b] * g[a].transpose()
            }
        })
        .collect();
    let tr: Vec<f64> = m.iter().map(|x| x.trace()).collect();
    for p in 0..np {
        for p2 in p..np {
            let v = 0.25 * w * (lambda * tr[p] * tr[p2] + 2.0 * mu * m[p].dot(&m[p2]));
            l_local[p * np + p2] += v;
            if p2 != p {
                l_local[p2 * np + p] += v;
            }
        }
        for c in 0..nn {
            let v = (g[c] * (lambda * tr[p]) + m[p] * g[c] * (2.0 * mu)) * (0.5 * w);
            let slot = &mut c_local[p * nn + c];
            slot[0] += v.x;
            slot[1] += v.y;
            slot[2] += v.z;
        }
    }
}

/// The compressed rows (`ptr`, `col`, `val`) of an `n`-row matrix given as triplets,
/// duplicates summed in their sorted order.
fn compressed_rows(
    mut triplets: Vec<(u32, u32, f64)>,
    n: usize,
) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    triplets.par_sort_unstable_by_key(|t| (t.0, t.1));
    let mut ptr = vec![0usize; n + 1];
    let mut col = Vec::new();
    let mut val = Vec::new();
    let mut last: Option<(u32, u32)> = None;
    for (r, c, v) in triplets {
        if last == Some((r, c)) {
            *val.last_mut().expect("a previous entry") += v;
        } else {
            col.push(c);
            val.push(v);
            ptr[r as usize + 1] = col.len();
            last = Some((r, c));
        }
    }
    for i in 1..=n {
        ptr[i] = ptr[i].max(ptr[i - 1]);
    }
    (ptr, col, val)
}

/// Computes the cubic reduced-force polynomial of `model` in the basis `u` (one column
/// per mode, full degrees of freedom). `par` sets the parallelism of the matrix products.
pub fn reduced_polynomial(
    model: &FemModel,
    u: &DMatrix<f64>,
    par: Par,
) -> Result<(CubicPolynomial, PrecomputeTimings), PrecomputeError> {
    if model.law != MaterialLaw::StVK {
        return Err(PrecomputeError::NotStvk);
    }
    if u.nrows() != model.num_dofs() {
        return Err(PrecomputeError::BasisShape {
            rows: u.nrows(),
            dofs: model.num_dofs(),
        });
    }
    let r = u.ncols();
    if r == 0 {
        return Err(PrecomputeError::EmptyBasis);
    }
    let start = Instant::now();
    let mut timings = PrecomputeTimings::default();
    let t0 = Instant::now();
    let pd = pair_data(model);
    timings.pairs_and_quartic_matrix = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let linear = linear_coefficients(model, u);
    timings.linear = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let (bmat, amat) = pair_matrices(&pd, u);
    timings.pair_matrices = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let quadratic = quadratic_coefficients(&bmat, &amat, r, par);
    timings.quadratic = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let cubic = cubic_coefficients(&pd, &bmat, r, par);
    timings.cubic = t0.elapsed().as_secs_f64();
    timings.total = start.elapsed().as_secs_f64();
    Ok((
        CubicPolynomial {
            r,
            linear,
            quadratic,
            cubic,
        },
        timings,
    ))
}

/// The linear coefficients U^T K0 U, row-major (r x r).
fn linear_coefficients(model: &FemModel, u: &DMatrix<f64>) -> Vec<f64> {
    let r = u.ncols();
    let mut k0 = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k0);
    let mut k0u = DMatrix::zeros(model.num_dofs(), r);
    for j in 0..r {
        let mut col = vec![0.0; model.num_dofs()];
        k0.mul_vec(u.column(j).as_slice(), &mut col);
        k0u.column_mut(j).copy_from_slice(&col);
    }
    let linear_m = u.transpose() * k0u;
    let mut linear = vec![0.0; r * r];
    for l in 0..r {
        for i in 0..r {
            linear[l * r + i] = linear_m[(l, i)];
        }
    }
    linear
}

/// The pair matrices: column alpha of `bmat` holds the packed upper triangle of
/// B_alpha = sym(U_a^T U_b); row alpha of `amat` holds a_alpha = U^T c_alpha.
fn pair_matrices(pd: &PairData, u: &DMatrix<f64>) -> (Mat<f64>, Mat<f64>) {
    let (r, npairs) = (u.ncols(), pd.pairs.len());
    let npk = num_quadratic(r);
    let mut bmat = Mat::<f64>::zeros(npk, npairs);
    let urow = |v: usize, k: usize, i: usize| u[(3 * v + k, i)];
    {
        let cols: Vec<Vec<f64>> = pd
            .pairs
            .par_iter()
            .map(|&(a, b)| {
                let (a, b) = (a as usize, b as usize);
                let mut col = vec![0.0; npk];
                let mut idx = 0;
                for i in 0..r {
                    for j in i..r {
                        let mut s = 0.0;
                        for k in 0..3 {
                            s += urow(a, k, i) * urow(b, k, j) + urow(a, k, j) * urow(b, k, i);
                        }
                        col[idx] = 0.5 * s;
                        idx += 1;
                    }
                }
                col
            })
            .collect();
        for (alpha, col) in cols.into_iter().enumerate() {
            for (i, v) in col.into_iter().enumerate() {
                bmat[(i, alpha)] = v;
            }
        }
    }
    let mut amat = Mat::<f64>::zeros(npairs, r);
    for &(alpha, v, c) in &pd.c_forms {
        let v = v as usize;
        for i in 0..r {
            amat[(alpha as usize, i)] +=
                c[0] * urow(v, 0, i) + c[1] * urow(v, 1, i) + c[2] * urow(v, 2, i);
        }
    }
    (bmat, amat)
}

/// The quadratic coefficients: X = Bmat^T-contracted with Amat, X[(l,i) packed, j],
/// summed over the orderings of each (i, j).
fn quadratic_coefficients(bmat: &Mat<f64>, amat: &Mat<f64>, r: usize, par: Par) -> Vec<f64> {
    let npk = num_quadratic(r);
    let mut x = Mat::<f64>::zeros(npk, r);
    matmul(&mut x, Accum::Replace, bmat, amat, 1.0, par);
    let nq = num_quadratic(r);
    let mut quadratic = vec![0.0; r * nq];
    let qt = |l: usize, i: usize, j: usize| {
        2.0 * x[(packed_index(r, l, i), j)] + x[(packed_index(r, i, j), l)]
    };
    for l in 0..r {
        let mut m = 0;
        for i in 0..r {
            for j in i..r {
                quadratic[l * nq + m] = if i == j {
                    qt(l, i, i)
                } else {
                    qt(l, i, j) + qt(l, j, i)
                };
                m += 1;
            }
        }
    }
    quadratic
}

/// The cubic coefficients: T = Bmat L Bmat^T over pairs, in chunks of pairs to bound
/// memory, summed over the distinct orderings of each (i, j, k).
fn cubic_coefficients(pd: &PairData, bmat: &Mat<f64>, r: usize, par: Par) -> Vec<f64> {
    let (npk, npairs) = (num_quadratic(r), pd.pairs.len());
    let mut t = Mat::<f64>::zeros(npk, npk);
    const CHUNK: usize = 2048;
    let mut start_pair = 0;
    while start_pair < npairs {
        let end = (start_pair + CHUNK).min(npairs);
        // Y[:, alpha] = sum_beta L[alpha, beta] B[:, beta] for alpha in the chunk.
        let cols: Vec<Vec<f64>> = (start_pair..end)
            .into_par_iter()
            .map(|alpha| {
                let mut col = vec![0.0; npk];
                for k in pd.l_ptr[alpha]..pd.l_ptr[alpha + 1] {
                    let (beta, l) = (pd.l_col[k] as usize, pd.l_val[k]);
                    let b = bmat.col(beta);
                    for (c, bv) in col.iter_mut().zip(b.iter()) {
                        *c += l * bv;
                    }
                }
                col
            })
            .collect();
        let mut y = Mat::<f64>::zeros(npk, end - start_pair);
        for (j, col) in cols.into_iter().enumerate() {
            for (i, v) in col.into_iter().enumerate() {
                y[(i, j)] = v;
            }
        }
        matmul(
            &mut t,
            Accum::Add,
            bmat.subcols(start_pair, end - start_pair),
            y.transpose(),
            1.0,
            par,
        );
        start_pair = end;
    }
    let nc = num_cubic(r);
    let mut cubic = vec![0.0; r * nc];
    let tt = |l: usize, i: usize, j: usize, k: usize| {
        2.0 * t[(packed_index(r, l, i), packed_index(r, j, k))]
    };
    for l in 0..r {
        let mut m = 0;
        for i in 0..r {
            for j in i..r {
                for k in j..r {
                    // Sum over the distinct orderings of (i, j, k).
                    let v = if i == j && j == k {
                        tt(l, i, i, i)
                    } else if i == j {
                        tt(l, i, i, k) + tt(l, i, k, i) + tt(l, k, i, i)
                    } else if j == k {
                        tt(l, i, j, j) + tt(l, j, i, j) + tt(l, j, j, i)
                    } else {
                        tt(l, i, j, k)
                            + tt(l, i, k, j)
                            + tt(l, j, i, k)
                            + tt(l, j, k, i)
                            + tt(l, k, i, j)
                            + tt(l, k, j, i)
                    };
                    cubic[l * nc + m] = v;
                    m += 1;
                }
            }
        }
    }
    cubic
}

/// The reduced polynomial split by material group into lambda and mu parts, for exact
/// run-time material edits (thesis 2.11): the StVK energy is linear in (lambda, mu) per
/// element, so R~ = sum_g (lambda_g R~_g^lambda + mu_g R~_g^mu), where R~_g^lambda is the
/// polynomial with lambda = 1, mu = 0 on group g's elements and zero elsewhere.
#[derive(Debug, Clone)]
pub struct MaterialGroupPolynomials {
    /// The material name of each group, in the model's group order.
    pub names: Vec<String>,
    /// R~_g^lambda per group: lambda = 1 Pa, mu = 0 on the group's elements.
    pub lambda: Vec<CubicPolynomial>,
    /// R~_g^mu per group: lambda = 0, mu = 1 Pa on the group's elements.
    pub mu: Vec<CubicPolynomial>,
}

impl MaterialGroupPolynomials {
    /// Computes the 2 x (number of groups) unit polynomials.
    pub fn compute(model: &FemModel, u: &DMatrix<f64>, par: Par) -> Result<Self, PrecomputeError> {
        let names = model.material_names().to_vec();
        let mut lambda = Vec::with_capacity(names.len());
        let mut mu = Vec::with_capacity(names.len());
        for g in 0..names.len() {
            let in_group = |e: usize| model.material_group(e) == g;
            let ml = model.with_lame(|e| if in_group(e) { (1.0, 0.0) } else { (0.0, 0.0) });
            let mm = model.with_lame(|e| if in_group(e) { (0.0, 1.0) } else { (0.0, 0.0) });
            lambda.push(reduced_polynomial(&ml, u, par)?.0);
            mu.push(reduced_polynomial(&mm, u, par)?.0);
        }
        Ok(MaterialGroupPolynomials { names, lambda, mu })
    }

    /// The polynomial for Lame parameters (lambda_g, mu_g) of every group.
    pub fn combine(&self, lame: &[(f64, f64)]) -> CubicPolynomial {
        let mut out = self.lambda[0].clone();
        for v in out
            .linear
            .iter_mut()
            .chain(&mut out.quadratic)
            .chain(&mut out.cubic)
        {
            *v = 0.0;
        }
        for (g, &(l, m)) in lame.iter().enumerate() {
            for (dst, (a, b)) in out
                .linear
                .iter_mut()
                .chain(&mut out.quadratic)
                .chain(&mut out.cubic)
                .zip(
                    self.lambda[g]
                        .linear
                        .iter()
                        .chain(&self.lambda[g].quadratic)
                        .chain(&self.lambda[g].cubic)
                        .zip(
                            self.mu[g]
                                .linear
                                .iter()
                                .chain(&self.mu[g].quadratic)
                                .chain(&self.mu[g].cubic),
                        ),
                )
            {
                *dst += l * a + m * b;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_index_enumerates_the_upper_triangle_in_order() {
        let r = 5;
        let mut m = 0;
        for i in 0..r {
            for j in i..r {
                assert_eq!(packed_index(r, i, j), m);
                assert_eq!(packed_index(r, j, i), m);
                m += 1;
            }
        }
        assert_eq!(m, num_quadratic(r));
    }
}
