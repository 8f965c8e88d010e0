//! Kikuuwe's edge-based StVK formulation for linear tetrahedra (Kikuuwe, Tabuchi,
//! Yamamoto, "An edge-based computationally efficient formulation of Saint
//! Venant-Kirchhoff tetrahedral finite elements", ACM TOG 2009; docs/equations.md).
//!
//! For a linear tet with barycentric gradients alpha_i, G_ij = alpha_i . alpha_j and the
//! identity sum_i alpha_i = 0, the Green strain is a combination of squared edge
//! lengths: E = -1/4 sum_{edges e=(i,j)} zeta_e (alpha_i alpha_j^T + alpha_j alpha_i^T),
//! zeta_e = |x_i - x_j|^2 - |X_i - X_j|^2. The StVK energy of the whole mesh is therefore a
//! quadratic form in the edge variables: W = 1/2 sum_{E,F} L(E,F) zeta_E zeta_F, where
//! L(E,F) = sum over the tets containing both edges of
//! V0/4 [lambda G_ij G_kl + mu (G_ik G_jl + G_il G_jk)] (E = (i,j), F = (k,l); the paper's
//! L_T(a,b) is twice this, and its eq. 30 reads t(E,V) for t(V,E)). L(E,F) is non-zero only
//! for E = F and for tetrahedron-sharing edge pairs (TSEPs).
//!
//! - Forces: g_E = sum_F L(E,F) zeta_F, and with d_E = x_i - x_j,
//!   R_i += 2 g_E d_E, R_j -= 2 g_E d_E.
//! - Stiffness, for an edge (a, b): K_ab = sum_{E ∋ a} sum_{F ∋ b} 4 L(E,F) s_E(a) s_F(b)
//!   d_E d_F^T - 2 g_ab I, with s_E(v) = +1 at E's first vertex and -1 at its second. The
//!   diagonal blocks follow from translation invariance: K_aa = -sum_{b != a} K_ab.
//!
//! Unlike the Total Lagrangian kernel in [`super::model`], nothing is computed per tet at
//! run time: edge quantities are computed once per edge, TSEP terms once per pair, and
//! every 3x3 block of the global matrix is formed once and written once, in the order of
//! the matrix storage. That is where the paper's savings come from (it counts 2.6x fewer
//! flops); the tests prove the result equal to the Total Lagrangian one.

use std::collections::HashMap;

use nalgebra::{Point3, Vector3};

use super::model::{tet_gradients, FemModel};
use crate::fem::BlockSparseMatrix;
use crate::mesh::volume::ElementKind;

/// The six edges of a tet as (first, second) local vertex pairs.
pub const TET_EDGES: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// Precomputed edge-based StVK data of a tet mesh.
#[derive(Debug, Clone)]
pub struct EdgeStvk {
    num_vertices: usize,
    /// Unique edges (a < b).
    edges: Vec<[u32; 2]>,
    rest_sq: Vec<f64>,
    /// L(E,E).
    l_diag: Vec<f64>,
    /// TSEPs (E < F) with L(E,F).
    tseps: Vec<(u32, u32, f64)>,
    /// For edge block k (row a, column b of edge k): its groups `group_ptr[k]..group_ptr[k+1]`.
    group_ptr: Vec<u32>,
    /// Group: the row-side edge E, and its terms `term_ptr[g]..term_ptr[g+1]`.
    group_edge: Vec<u32>,
    term_ptr: Vec<u32>,
    /// Term: column-side edge F and coefficient 4 L(E,F) s_E(a) s_F(b).
    term_edge: Vec<u32>,
    term_coef: Vec<f64>,
    /// Matrix offsets of block (row a, col b) and (row b, col a) for every edge, and of the
    /// diagonal block of every vertex.
    offsets_ab: Vec<[usize; 3]>,
    offsets_ba: Vec<[usize; 3]>,
    offsets_diag: Vec<[usize; 3]>,
    pattern: BlockSparseMatrix,
}

/// Scratch of one assembly: edge vectors, strains and force coefficients.
#[derive(Debug, Clone, Default)]
pub struct EdgeScratch {
    d: Vec<Vector3<f64>>,
    zeta: Vec<f64>,
    g: Vec<f64>,
    diag: Vec<[f64; 9]>,
}

impl EdgeStvk {
    /// Builds the edge-based kernel from a tet model (same materials and pattern).
    /// Returns `None` for hex models.
    pub fn new(model: &FemModel) -> Option<Self> {
        if model.kind != ElementKind::Tet {
            return None;
        }
        let nv = model.num_vertices();
        let couplings = edge_couplings(model);
        let ne = couplings.edges.len();
        let rest_sq: Vec<f64> = couplings
            .edges
            .iter()
            .map(|&[a, b]| {
                (model.rest_positions[a as usize] - model.rest_positions[b as usize]).norm_squared()
            })
            .collect();
        let (l_diag, tseps) = diagonal_and_tseps(&couplings.pairs, ne);
        let recipes = RecipeTable::new(stiffness_recipes(&couplings));
        let pattern = model.new_matrix();
        let offsets = BlockOffsets::new(&pattern, &couplings.edges, nv);
        Some(EdgeStvk {
            num_vertices: nv,
            edges: couplings.edges,
            rest_sq,
            l_diag,
            tseps,
            group_ptr: recipes.group_ptr,
            group_edge: recipes.group_edge,
            term_ptr: recipes.term_ptr,
            term_edge: recipes.term_edge,
            term_coef: recipes.term_coef,
            offsets_ab: offsets.ab,
            offsets_ba: offsets.ba,
            offsets_diag: offsets.diag,
            pattern,
        })
    }

    /// Number of unique mesh edges.
    pub fn num_edges(&self) -> usize {
        self.edges.len()
    }

    /// Number of tetrahedron-sharing edge pairs (TSEPs): pairs of distinct edges in a common tet.
    pub fn num_tseps(&self) -> usize {
        self.tseps.len()
    }

    /// An all-zero matrix with the model's stiffness pattern.
    pub fn new_matrix(&self) -> BlockSparseMatrix {
        let mut m = self.pattern.clone();
        m.fill_zero();
        m
    }

    /// Buffers for [`Self::forces_and_stiffness_with`] (allocated once, reused).
    pub fn scratch(&self) -> EdgeScratch {
        EdgeScratch {
            d: vec![Vector3::zeros(); self.edges.len()],
            zeta: vec![0.0; self.edges.len()],
            g: vec![0.0; self.edges.len()],
            diag: vec![[0.0; 9]; self.num_vertices],
        }
    }

    /// Edge vectors, strains zeta and force coefficients g of every edge.
    fn edge_state(&self, rest: &[Point3<f64>], u: &[f64], s: &mut EdgeScratch) {
        for (k, &[a, b]) in self.edges.iter().enumerate() {
            let (a, b) = (a as usize, b as usize);
            let d = rest[a] - rest[b]
                + Vector3::new(
                    u[3 * a] - u[3 * b],
                    u[3 * a + 1] - u[3 * b + 1],
                    u[3 * a + 2] - u[3 * b + 2],
                );
            s.d[k] = d;
            s.zeta[k] = d.norm_squared() - self.rest_sq[k];
        }
        for k in 0..self.edges.len() {
            s.g[k] = self.l_diag[k] * s.zeta[k];
        }
        for &(e, f, l) in &self.tseps {
            let (e, f) = (e as usize, f as usize);
            s.g[e] += l * s.zeta[f];
            s.g[f] += l * s.zeta[e];
        }
    }

    fn scatter_forces(&self, s: &EdgeScratch, f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for (k, &[a, b]) in self.edges.iter().enumerate() {
            let fe = s.d[k] * (2.0 * s.g[k]);
            let (a, b) = (a as usize, b as usize);
            for i in 0..3 {
                f[3 * a + i] += fe[i];
                f[3 * b + i] -= fe[i];
            }
        }
    }

    /// Internal forces R(u) (overwrites `f`). `rest` are the rest positions of the model.
    pub fn internal_forces(&self, rest: &[Point3<f64>], u: &[f64], f: &mut [f64]) {
        let mut s = self.scratch();
        self.edge_state(rest, u, &mut s);
        self.scatter_forces(&s, f);
    }

    /// Internal forces and tangent stiffness in one pass (overwrites both).
    pub fn forces_and_stiffness(
        &self,
        rest: &[Point3<f64>],
        u: &[f64],
        f: &mut [f64],
        k: &mut BlockSparseMatrix,
    ) {
        let mut s = self.scratch();
        self.forces_and_stiffness_with(rest, u, f, k, &mut s);
    }

    /// As [`Self::forces_and_stiffness`], with caller-owned scratch (no allocation).
    pub fn forces_and_stiffness_with(
        &self,
        rest: &[Point3<f64>],
        u: &[f64],
        f: &mut [f64],
        k: &mut BlockSparseMatrix,
        s: &mut EdgeScratch,
    ) {
        self.edge_state(rest, u, s);
        self.scatter_forces(s, f);
        s.diag.iter_mut().for_each(|d| *d = [0.0; 9]);
        let vals = &mut k.values;
        for (e0, &[a, b]) in self.edges.iter().enumerate() {
            // K_ab = sum_groups d_E (sum_terms c d_F)^T - 2 g_ab I, row-major m[3i + j].
            let mut m = [0.0; 9];
            let geo = -2.0 * s.g[e0];
            m[0] = geo;
            m[4] = geo;
            m[8] = geo;
            for gi in self.group_ptr[e0] as usize..self.group_ptr[e0 + 1] as usize {
                let mut w = Vector3::zeros();
                for t in self.term_ptr[gi] as usize..self.term_ptr[gi + 1] as usize {
                    w += s.d[self.term_edge[t] as usize] * self.term_coef[t];
                }
                let de = &s.d[self.group_edge[gi] as usize];
                for i in 0..3 {
                    for j in 0..3 {
                        m[3 * i + j] += de[i] * w[j];
                    }
                }
            }
            // Block (row a, col b): column j of it at offsets_ab[j].
            let oab = &self.offsets_ab[e0];
            let oba = &self.offsets_ba[e0];
            for j in 0..3 {
                for i in 0..3 {
                    vals[oab[j] + i] = m[3 * i + j];
                    // Block (row b, col a) = K_ab^T.
                    vals[oba[j] + i] = m[3 * j + i];
                }
            }
            let (a, b) = (a as usize, b as usize);
            for i in 0..3 {
                for j in 0..3 {
                    s.diag[a][3 * i + j] -= m[3 * i + j];
                    s.diag[b][3 * i + j] -= m[3 * j + i];
                }
            }
        }
        for (v, d) in s.diag.iter().enumerate() {
            let o = &self.offsets_diag[v];
            for j in 0..3 {
                for i in 0..3 {
                    vals[o[j] + i] = d[3 * i + j];
                }
            }
        }
    }
}

/// The unique edges of a tet mesh and the couplings L(E,F) of its edge pairs.
struct EdgeCouplings {
    /// The id of every unique edge (a < b).
    edge_index: HashMap<[u32; 2], u32>,
    /// Unique edges (a < b), by id.
    edges: Vec<[u32; 2]>,
    /// L(E,F) of every pair E <= F of edges in a common tet, summed over those tets and
    /// sorted by (E, F).
    pairs: Vec<((u32, u32), f64)>,
}

/// The unique edges of the tets of `model` and L(E,F) of every pair of edges in a tet.
fn edge_couplings(model: &FemModel) -> EdgeCouplings {
    let mut edge_index: HashMap<[u32; 2], u32> = HashMap::new();
    let mut edges: Vec<[u32; 2]> = Vec::new();
    let mut pair_l: HashMap<(u32, u32), f64> = HashMap::new();
    for e in 0..model.num_elements() {
        let el = model.element(e);
        let x: Vec<Point3<f64>> = el.iter().map(|&v| model.rest_positions[v]).collect();
        let (alpha, vol) = tet_gradients(&x);
        let (lam, mu) = model.lame(e);
        let g = |i: usize, j: usize| alpha[i].dot(&alpha[j]);
        // Global edge ids of the tet's edges, and the sign flip when the global edge
        // runs the other way (d_E = x_first - x_second, so a flip negates d, leaving
        // zeta unchanged and L(E,F) invariant; signs enter only through s_E(v)).
        let ids: [u32; 6] = TET_EDGES.map(|(i, j)| {
            let (a, b) = (el[i].min(el[j]) as u32, el[i].max(el[j]) as u32);
            *edge_index.entry([a, b]).or_insert_with(|| {
                edges.push([a, b]);
                (edges.len() - 1) as u32
            })
        });
        for (p, &(i, j)) in TET_EDGES.iter().enumerate() {
            for (q, &(k, m)) in TET_EDGES.iter().enumerate().skip(p) {
                let l = vol / 4.0
                    * (lam * g(i, j) * g(k, m) + mu * (g(i, k) * g(j, m) + g(i, m) * g(j, k)));
                let key = (ids[p].min(ids[q]), ids[p].max(ids[q]));
                *pair_l.entry(key).or_insert(0.0) += l;
            }
        }
    }
    let mut pairs: Vec<((u32, u32), f64)> = pair_l.into_iter().collect();
    pairs.sort_unstable_by_key(|p| p.0);
    EdgeCouplings {
        edge_index,
        edges,
        pairs,
    }
}

/// L(E,E) of each of the `ne` edges, and the TSEPs (E < F) with L(E,F), from the sorted
/// pairs.
fn diagonal_and_tseps(pairs: &[((u32, u32), f64)], ne: usize) -> (Vec<f64>, Vec<(u32, u32, f64)>) {
    let mut l_diag = vec![0.0; ne];
    let mut tseps = Vec::new();
    for &((e, f), l) in pairs {
        if e == f {
            l_diag[e as usize] = l;
        } else {
            tseps.push((e, f, l));
        }
    }
    (l_diag, tseps)
}

/// Per edge block (a, b), its stiffness terms (F, 4 L(E,F) s_E(a) s_F(b)) grouped by the
/// row-side edge E.
fn stiffness_recipes(couplings: &EdgeCouplings) -> Vec<HashMap<u32, Vec<(u32, f64)>>> {
    let (edges, edge_index) = (&couplings.edges, &couplings.edge_index);
    // Stiffness recipes: every ordered pair (E, F) with L(E,F) != 0 adds
    // 4 L s_E(a) s_F(b) d_E d_F^T to block (a, b) for a in E, b in F, a < b.
    let sign = |edge: [u32; 2], v: u32| if edge[0] == v { 1.0 } else { -1.0 };
    let mut recipes: Vec<HashMap<u32, Vec<(u32, f64)>>> = vec![HashMap::new(); edges.len()];
    let mut add = |e: u32, f: u32, l: f64| {
        let (ee, ff) = (edges[e as usize], edges[f as usize]);
        for a in ee {
            for b in ff {
                if a < b {
                    let k = edge_index[&[a, b]];
                    let c = 4.0 * l * sign(ee, a) * sign(ff, b);
                    recipes[k as usize].entry(e).or_default().push((f, c));
                }
            }
        }
    };
    for &((e, f), l) in &couplings.pairs {
        add(e, f, l);
        if e != f {
            add(f, e, l);
        }
    }
    recipes
}

/// The stiffness recipes as flat arrays ([`EdgeStvk`]'s `group_ptr` to `term_coef`).
struct RecipeTable {
    group_ptr: Vec<u32>,
    group_edge: Vec<u32>,
    term_ptr: Vec<u32>,
    term_edge: Vec<u32>,
    term_coef: Vec<f64>,
}

impl RecipeTable {
    /// The table of `recipes`, groups and terms each sorted by edge.
    fn new(recipes: Vec<HashMap<u32, Vec<(u32, f64)>>>) -> Self {
        let mut group_ptr = vec![0u32];
        let (mut group_edge, mut term_ptr, mut term_edge, mut term_coef) =
            (Vec::new(), vec![0u32], Vec::new(), Vec::new());
        for rec in recipes {
            let mut groups: Vec<(u32, Vec<(u32, f64)>)> = rec.into_iter().collect();
            groups.sort_unstable_by_key(|g| g.0);
            for (e, mut terms) in groups {
                terms.sort_unstable_by_key(|t| t.0);
                group_edge.push(e);
                for (f, c) in terms {
                    term_edge.push(f);
                    term_coef.push(c);
                }
                term_ptr.push(term_edge.len() as u32);
            }
            group_ptr.push(group_edge.len() as u32);
        }
        RecipeTable {
            group_ptr,
            group_edge,
            term_ptr,
            term_edge,
            term_coef,
        }
    }
}

/// Matrix offsets of the blocks an edge-based assembly writes ([`EdgeStvk`]'s
/// `offsets_ab`, `offsets_ba` and `offsets_diag`).
struct BlockOffsets {
    ab: Vec<[usize; 3]>,
    ba: Vec<[usize; 3]>,
    diag: Vec<[usize; 3]>,
}

impl BlockOffsets {
    /// The offsets in `pattern` of both blocks of every edge and the diagonal block of
    /// each of the `nv` vertices.
    fn new(pattern: &BlockSparseMatrix, edges: &[[u32; 2]], nv: usize) -> Self {
        // `block_offsets(a, b)` of two vertices of an edge: every edge is in the pattern.
        let block = |a: u32, b: u32| {
            pattern
                .block_offsets(a as usize, b as usize)
                .expect("edge in pattern")
        };
        let ab = edges.iter().map(|&[a, b]| block(b, a)).collect();
        let ba = edges.iter().map(|&[a, b]| block(a, b)).collect();
        let diag = (0..nv)
            .map(|v| pattern.block_offsets(v, v).expect("diagonal in pattern"))
            .collect();
        BlockOffsets { ab, ba, diag }
    }
}
