//! Kikuuwe's edge-based StVK formulation for linear tetrahedra (Kikuuwe, Tabuchi,
//! Yamamoto, "An edge-based computationally efficient formulation of Saint
//! Venant-Kirchhoff tetrahedral finite elements", ACM TOG 2009; REFERENCE.md).
//!
//! For a linear tet with barycentric gradients alpha_i, G_ij = alpha_i . alpha_j and the
//! identity sum_i alpha_i = 0, the Green strain is a combination of the squared edge
//! lengths: E = -1/4 sum_{edges e=(i,j)} zeta_e (alpha_i alpha_j^T + alpha_j alpha_i^T),
//! zeta_e = |x_i - x_j|^2 - |X_i - X_j|^2. The StVK energy is therefore a quadratic form
//! in zeta: W = 1/2 sum_{e,f} L_ef zeta_e zeta_f with
//! L_ef = V0/4 [lambda G_ij G_kl + mu (G_ik G_jl + G_il G_jk)] for e = (i,j), f = (k,l)
//! (the paper's L_T(a, b) = 2 L_ef; its eq. 30 reads t(E,V) for t(V,E)).
//! Forces: with g_e = sum_f L_ef zeta_f and d_e = x_i - x_j, R_i = sum_{e ∋ i} 2 s_e(i) d_e g_e
//! (s_e(i) = +1 at the edge's first vertex, -1 at its second).
//! Stiffness: K_pq = sum_{e,f} 4 L_ef s_e(p) s_f(q) d_e d_f^T + sum_e 2 g_e s_e(p) s_e(q) I.
//!
//! No 3x3 deformation gradient, strain or stress is formed, which saves flops over the
//! Total Lagrangian kernel in [`super::model`]; tests prove both equal.

use nalgebra::{Matrix3, Vector3};

use super::model::{tet_gradients, FemModel};
use super::sparse::BlockSparseMatrix;
use crate::mesh::ElementKind;

/// The six edges of a tet as (first, second) local vertex pairs.
pub const TET_EDGES: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// Precomputed edge-based StVK data of a tet mesh.
#[derive(Debug, Clone)]
pub struct EdgeStvk {
    connectivity: Vec<usize>,
    /// Per tet: rest squared edge lengths.
    rest_sq: Vec<[f64; 6]>,
    /// Per tet: the symmetric 6x6 matrix L_ef, row-major.
    l: Vec<[[f64; 6]; 6]>,
    block_map: Vec<usize>,
    pattern: BlockSparseMatrix,
}

impl EdgeStvk {
    /// Builds the edge-based kernel from a tet model (same materials and pattern).
    /// Returns `None` for hex models.
    pub fn new(model: &FemModel) -> Option<Self> {
        if model.kind != ElementKind::Tet {
            return None;
        }
        let ne = model.num_elements();
        let mut rest_sq = Vec::with_capacity(ne);
        let mut l = Vec::with_capacity(ne);
        for e in 0..ne {
            let el = model.element(e);
            let x: Vec<_> = el.iter().map(|&v| model.rest_positions[v]).collect();
            let (alpha, vol) = tet_gradients(&x);
            let (lam, mu) = model.lame(e);
            let g = |i: usize, j: usize| alpha[i].dot(&alpha[j]);
            let mut le = [[0.0; 6]; 6];
            for (a, &(i, j)) in TET_EDGES.iter().enumerate() {
                for (b, &(k, m)) in TET_EDGES.iter().enumerate() {
                    le[a][b] =
                        vol / 4.0 * (lam * g(i, j) * g(k, m) + mu * (g(i, k) * g(j, m) + g(i, m) * g(j, k)));
                }
            }
            l.push(le);
            rest_sq.push(TET_EDGES.map(|(i, j)| (x[i] - x[j]).norm_squared()));
        }
        let pattern = model.new_matrix();
        let block_map = pattern.element_block_map(model.connectivity(), 4);
        Some(EdgeStvk {
            connectivity: model.connectivity().to_vec(),
            rest_sq,
            l,
            block_map,
            pattern,
        })
    }

    pub fn new_matrix(&self) -> BlockSparseMatrix {
        let mut m = self.pattern.clone();
        m.fill_zero();
        m
    }

    /// Edge vectors d_e and coefficients g_e of tet `t` at displacement u.
    #[inline]
    fn edge_state(&self, t: usize, rest: &[nalgebra::Point3<f64>], u: &[f64]) -> ([Vector3<f64>; 6], [f64; 6]) {
        let el = &self.connectivity[4 * t..4 * t + 4];
        let x: [Vector3<f64>; 4] = std::array::from_fn(|a| {
            let v = el[a];
            rest[v].coords + Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2])
        });
        let d: [Vector3<f64>; 6] = std::array::from_fn(|e| {
            let (i, j) = TET_EDGES[e];
            x[i] - x[j]
        });
        let rs = &self.rest_sq[t];
        let zeta: [f64; 6] = std::array::from_fn(|e| d[e].norm_squared() - rs[e]);
        let le = &self.l[t];
        let g: [f64; 6] = std::array::from_fn(|e| (0..6).map(|f| le[e][f] * zeta[f]).sum());
        (d, g)
    }

    /// Internal forces R(u) (overwrites `f`). `rest` are the rest positions of the model.
    pub fn internal_forces(&self, rest: &[nalgebra::Point3<f64>], u: &[f64], f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for t in 0..self.rest_sq.len() {
            let (d, g) = self.edge_state(t, rest, u);
            let el = &self.connectivity[4 * t..4 * t + 4];
            for (e, &(i, j)) in TET_EDGES.iter().enumerate() {
                let fe = d[e] * (2.0 * g[e]);
                for k in 0..3 {
                    f[3 * el[i] + k] += fe[k];
                    f[3 * el[j] + k] -= fe[k];
                }
            }
        }
    }

    /// Internal forces and tangent stiffness in one pass (overwrites both).
    pub fn forces_and_stiffness(
        &self,
        rest: &[nalgebra::Point3<f64>],
        u: &[f64],
        f: &mut [f64],
        k: &mut BlockSparseMatrix,
    ) {
        f.iter_mut().for_each(|v| *v = 0.0);
        k.fill_zero();
        for t in 0..self.rest_sq.len() {
            let (d, g) = self.edge_state(t, rest, u);
            let el = &self.connectivity[4 * t..4 * t + 4];
            let le = &self.l[t];
            // Per node p, the columns c_p[e] = 2 s_e(p) d_e of dzeta/dx_p, then
            // K_pq = sum_{e,f} c_p[e] L_ef c_q[f]^T: first h_q[e] = sum_f L_ef c_q[f].
            let mut blocks = [[Matrix3::zeros(); 4]; 4];
            let mut fl = [Vector3::zeros(); 4];
            for (e, &(i, j)) in TET_EDGES.iter().enumerate() {
                let fe = d[e] * (2.0 * g[e]);
                fl[i] += fe;
                fl[j] -= fe;
                let geo = 2.0 * g[e];
                for (p, q, s) in [(i, i, geo), (j, j, geo), (i, j, -geo)] {
                    blocks[p][q][(0, 0)] += s;
                    blocks[p][q][(1, 1)] += s;
                    blocks[p][q][(2, 2)] += s;
                }
            }
            // h[q][e] = sum_{f ∋ q} L_ef 2 s_f(q) d_f.
            let mut h = [[Vector3::zeros(); 6]; 4];
            for (fi, &(k0, k1)) in TET_EDGES.iter().enumerate() {
                let df2 = d[fi] * 2.0;
                for e in 0..6 {
                    let v = df2 * le[e][fi];
                    h[k0][e] += v;
                    h[k1][e] -= v;
                }
            }
            for (e, &(i, j)) in TET_EDGES.iter().enumerate() {
                let de2 = d[e] * 2.0;
                for q in 0..4 {
                    // Only the upper triangle p <= q is formed; the rest by symmetry.
                    let outer = de2 * h[q][e].transpose();
                    if i <= q {
                        blocks[i][q] += outer;
                    }
                    if j <= q {
                        blocks[j][q] -= outer;
                    }
                }
            }
            for p in 0..4 {
                for q in 0..p {
                    blocks[p][q] = blocks[q][p].transpose();
                }
            }
            for a in 0..4 {
                for kk in 0..3 {
                    f[3 * el[a] + kk] += fl[a][kk];
                }
            }
            let map = &self.block_map[16 * t..16 * t + 16];
            for b in 0..4 {
                let stride = k.column_stride(el[b]);
                for a in 0..4 {
                    let off = map[b * 4 + a];
                    let blk = &blocks[a][b];
                    for j in 0..3 {
                        let col = off + j * stride;
                        k.values[col] += blk[(0, j)];
                        k.values[col + 1] += blk[(1, j)];
                        k.values[col + 2] += blk[(2, j)];
                    }
                }
            }
        }
    }
}
