//! Sparse matrices of the finite element system: a block pattern built once from the
//! mesh connectivity and refilled every assembly, and a sparse Cholesky solver (faer,
//! with AMD fill-reducing ordering) on the free degrees of freedom.
//!
//! The pattern is stored in compressed sparse columns (CSC) with both triangles, so
//! matrix-vector products need no symmetric special-casing; the factorization reads the
//! lower triangle only. Each vertex pair (a, b) that shares an element owns a dense 3x3
//! block, so an element's contribution is scattered with precomputed offsets and no
//! search.

use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Llt, Lu, SymbolicLlt, SymbolicLu};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMat};
use faer::Side;

/// A symmetric sparse matrix over `3 * num_vertices` degrees of freedom with a 3x3 block
/// for every pair of vertices that share an element.
#[derive(Debug, Clone)]
pub struct BlockSparseMatrix {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    /// Stored entries in CSC order (both triangles), matching [`Self::col_ptr`] and
    /// [`Self::row_idx`]; refilled at every assembly.
    pub values: Vec<f64>,
    /// For vertex v, the sorted vertices adjacent to it (itself included).
    neighbors_ptr: Vec<usize>,
    neighbors: Vec<usize>,
}

impl BlockSparseMatrix {
    /// Builds the pattern from element connectivity (`nodes` vertices per element).
    pub fn from_elements(num_vertices: usize, connectivity: &[usize], nodes: usize) -> Self {
        let mut adj: Vec<Vec<usize>> = (0..num_vertices).map(|v| vec![v]).collect();
        for el in connectivity.chunks_exact(nodes) {
            for &a in el {
                adj[a].extend_from_slice(el);
            }
        }
        let mut neighbors_ptr = Vec::with_capacity(num_vertices + 1);
        let mut neighbors = Vec::new();
        neighbors_ptr.push(0);
        for list in &mut adj {
            list.sort_unstable();
            list.dedup();
            neighbors.extend_from_slice(list);
            neighbors_ptr.push(neighbors.len());
        }
        let n = 3 * num_vertices;
        let mut col_ptr = Vec::with_capacity(n + 1);
        let mut row_idx = Vec::with_capacity(9 * neighbors.len());
        col_ptr.push(0);
        for v in 0..num_vertices {
            let nb = &neighbors[neighbors_ptr[v]..neighbors_ptr[v + 1]];
            for _j in 0..3 {
                for &w in nb {
                    row_idx.extend_from_slice(&[3 * w, 3 * w + 1, 3 * w + 2]);
                }
                col_ptr.push(row_idx.len());
            }
        }
        let values = vec![0.0; row_idx.len()];
        BlockSparseMatrix {
            n,
            col_ptr,
            row_idx,
            values,
            neighbors_ptr,
            neighbors,
        }
    }

    /// Matrix dimension: 3 times the number of vertices.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Number of stored entries (both triangles).
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// CSC column pointers (length `dim() + 1`).
    pub fn col_ptr(&self) -> &[usize] {
        &self.col_ptr
    }

    /// CSC row indices of the stored entries, sorted within each column.
    pub fn row_idx(&self) -> &[usize] {
        &self.row_idx
    }

    /// Position of vertex `b` in the neighbor list of vertex `a` (`None` if they share no
    /// element).
    pub(crate) fn neighbor_slot(&self, a: usize, b: usize) -> Option<usize> {
        let nb = &self.neighbors[self.neighbors_ptr[a]..self.neighbors_ptr[a + 1]];
        nb.binary_search(&b).ok()
    }

    /// Offsets of the three columns of block (row vertex `b`, column vertex `a`): entry
    /// (3b + i, 3a + j) lives at `values[offsets[j] + i]`.
    pub fn block_offsets(&self, a: usize, b: usize) -> Option<[usize; 3]> {
        let slot = self.neighbor_slot(a, b)?;
        Some(std::array::from_fn(|j| self.col_ptr[3 * a + j] + 3 * slot))
    }

    /// For every element, the `nodes * nodes` block offsets (row-node-major: block
    /// (a, b) at `a * nodes + b` holds the column-0 offset of block (row b, column a);
    /// columns j = 1, 2 follow at `col_ptr` strides, see [`Self::column_stride`]).
    pub fn element_block_map(&self, connectivity: &[usize], nodes: usize) -> Vec<usize> {
        let mut map = Vec::with_capacity(connectivity.len() * nodes);
        for el in connectivity.chunks_exact(nodes) {
            for &a in el {
                for &b in el {
                    let slot = self
                        .neighbor_slot(a, b)
                        .expect("element vertices are neighbors by construction");
                    map.push(self.col_ptr[3 * a] + 3 * slot);
                }
            }
        }
        map
    }

    /// Distance in `values` between columns 3a and 3a+1 (and 3a+1 and 3a+2): the
    /// number of rows in the columns of vertex a.
    #[inline]
    pub fn column_stride(&self, a: usize) -> usize {
        self.col_ptr[3 * a + 1] - self.col_ptr[3 * a]
    }

    /// Adds the 3x3 block `k` (k[(i, j)] = d f_{b,i} / d u_{a,j}) at the precomputed
    /// offset `off` of column vertex `a`, whose columns are `stride` values apart
    /// ([`Self::column_stride`]).
    #[inline]
    pub fn add_block(&mut self, off: usize, stride: usize, k: &nalgebra::Matrix3<f64>) {
        for j in 0..3 {
            let col = off + j * stride;
            self.values[col] += k[(0, j)];
            self.values[col + 1] += k[(1, j)];
            self.values[col + 2] += k[(2, j)];
        }
    }

    /// Sets every stored entry to zero, keeping the pattern.
    pub fn fill_zero(&mut self) {
        self.values.iter_mut().for_each(|v| *v = 0.0);
    }

    /// y = A x.
    pub fn mul_vec(&self, x: &[f64], y: &mut [f64]) {
        y.iter_mut().for_each(|v| *v = 0.0);
        for (c, &xc) in x.iter().enumerate().take(self.n) {
            if xc == 0.0 {
                continue;
            }
            for k in self.col_ptr[c]..self.col_ptr[c + 1] {
                y[self.row_idx[k]] += self.values[k] * xc;
            }
        }
    }

    /// Entry (r, c), zero outside the pattern (for tests and small dense conversions).
    pub fn get(&self, r: usize, c: usize) -> f64 {
        let rows = &self.row_idx[self.col_ptr[c]..self.col_ptr[c + 1]];
        match rows.binary_search(&r) {
            Ok(k) => self.values[self.col_ptr[c] + k],
            Err(_) => 0.0,
        }
    }

    /// The dense matrix (for tests on small meshes).
    pub fn to_dense(&self) -> nalgebra::DMatrix<f64> {
        let mut m = nalgebra::DMatrix::zeros(self.n, self.n);
        for c in 0..self.n {
            for k in self.col_ptr[c]..self.col_ptr[c + 1] {
                m[(self.row_idx[k], c)] = self.values[k];
            }
        }
        m
    }
}

/// Errors from the sparse solver.
#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    /// The numeric Cholesky factorization failed: the matrix is not positive definite.
    #[error("the system matrix is not positive definite (is the object unconstrained, or the material or step invalid?): {0}")]
    NotPositiveDefinite(String),
    /// The symbolic analysis (ordering) of the pattern failed.
    #[error("sparse factorization failed: {0}")]
    Factorization(String),
}

/// The submatrix of a [`BlockSparseMatrix`] on the free (unconstrained) degrees of
/// freedom, with a symbolic Cholesky factorization computed once and numeric
/// factorizations refreshed on demand.
pub struct FreeDofSolver {
    /// For every full dof, its index among the free dofs.
    free_index: Vec<Option<usize>>,
    /// Free dof -> full dof.
    free_dofs: Vec<usize>,
    symbolic: SymbolicSparseColMat<usize>,
    /// For each value of the free submatrix, the index of the matching full value.
    gather: Vec<usize>,
    values: Vec<f64>,
    llt_symbolic: SymbolicLlt<usize>,
    llt: Option<Llt<usize, f64>>,
    /// LU with partial pivoting, for indefinite matrices ([`Self::factor_indefinite`]).
    lu_symbolic: Option<SymbolicLu<usize>>,
    lu: Option<Lu<usize, f64>>,
}

impl FreeDofSolver {
    /// `fixed[d]` marks constrained degrees of freedom.
    pub fn new(matrix: &BlockSparseMatrix, fixed: &[bool]) -> Result<Self, SolveError> {
        let n = matrix.dim();
        assert_eq!(fixed.len(), n);
        let mut free_index = vec![None; n];
        let mut free_dofs = Vec::new();
        for d in 0..n {
            if !fixed[d] {
                free_index[d] = Some(free_dofs.len());
                free_dofs.push(d);
            }
        }
        let mut col_ptr = vec![0];
        let mut row_idx = Vec::new();
        let mut gather = Vec::new();
        for &c in &free_dofs {
            for k in matrix.col_ptr[c]..matrix.col_ptr[c + 1] {
                if let Some(r) = free_index[matrix.row_idx[k]] {
                    row_idx.push(r);
                    gather.push(k);
                }
            }
            col_ptr.push(row_idx.len());
        }
        let nf = free_dofs.len();
        let symbolic = SymbolicSparseColMat::new_checked(nf, nf, col_ptr, None, row_idx);
        let llt_symbolic = SymbolicLlt::try_new(symbolic.as_ref(), Side::Lower)
            .map_err(|e| SolveError::Factorization(format!("{e:?}")))?;
        let values = vec![0.0; gather.len()];
        Ok(FreeDofSolver {
            free_index,
            free_dofs,
            symbolic,
            gather,
            values,
            llt_symbolic,
            llt: None,
            lu_symbolic: None,
            lu: None,
        })
    }

    /// Number of free degrees of freedom.
    pub fn num_free(&self) -> usize {
        self.free_dofs.len()
    }

    /// The free degrees of freedom, ascending (free index -> full dof).
    pub fn free_dofs(&self) -> &[usize] {
        &self.free_dofs
    }

    /// Index of full dof `dof` among the free dofs, or `None` if it is fixed.
    pub fn free_index(&self, dof: usize) -> Option<usize> {
        self.free_index[dof]
    }

    /// Numerically factors the free submatrix of `matrix` (same pattern as at `new`).
    pub fn factor(&mut self, matrix: &BlockSparseMatrix) -> Result<(), SolveError> {
        for (v, &k) in self.values.iter_mut().zip(&self.gather) {
            *v = matrix.values[k];
        }
        let mat = SparseColMatRef::new(self.symbolic.as_ref(), &self.values);
        let llt = Llt::try_new_with_symbolic(self.llt_symbolic.clone(), mat, Side::Lower)
            .map_err(|e| SolveError::NotPositiveDefinite(format!("{e:?}")))?;
        self.llt = Some(llt);
        self.lu = None;
        Ok(())
    }

    /// Numerically factors the free submatrix by sparse LU with partial pivoting, which
    /// accepts indefinite matrices (an unstable equilibrium, where a Cholesky fails).
    /// Fails only on a singular matrix.
    pub fn factor_indefinite(&mut self, matrix: &BlockSparseMatrix) -> Result<(), SolveError> {
        for (v, &k) in self.values.iter_mut().zip(&self.gather) {
            *v = matrix.values[k];
        }
        if self.lu_symbolic.is_none() {
            self.lu_symbolic = Some(
                SymbolicLu::try_new(self.symbolic.as_ref())
                    .map_err(|e| SolveError::Factorization(format!("{e:?}")))?,
            );
        }
        let symbolic = self.lu_symbolic.clone().expect("set above");
        let mat = SparseColMatRef::new(self.symbolic.as_ref(), &self.values);
        let lu = Lu::try_new_with_symbolic(symbolic, mat)
            .map_err(|e| SolveError::Factorization(format!("{e:?}")))?;
        self.lu = Some(lu);
        self.llt = None;
        Ok(())
    }

    /// Solves A x = b on the free dofs; `b` and `x` are full-length vectors, the fixed
    /// entries of `x` are set to zero.
    pub fn solve(&self, b: &[f64], x: &mut [f64]) {
        let mut rhs: Vec<f64> = self.free_dofs.iter().map(|&d| b[d]).collect();
        match (&self.llt, &self.lu) {
            (Some(llt), _) => llt.solve_in_place(faer::ColMut::from_slice_mut(&mut rhs)),
            (None, Some(lu)) => lu.solve_in_place(faer::ColMut::from_slice_mut(&mut rhs)),
            (None, None) => panic!("factor() or factor_indefinite() must be called before solve()"),
        }
        x.iter_mut().for_each(|v| *v = 0.0);
        for (i, &d) in self.free_dofs.iter().enumerate() {
            x[d] = rhs[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_blocks_and_solve() {
        // Two tets sharing a face: vertices 0..5.
        let conn = [0, 1, 2, 3, 1, 2, 3, 4];
        let mut m = BlockSparseMatrix::from_elements(5, &conn, 4);
        assert!(m.neighbor_slot(0, 4).is_none());
        assert!(m.neighbor_slot(1, 4).is_some());
        // Fill a symmetric positive definite matrix: graph Laplacian + identity per dof.
        for a in 0..5 {
            for b in 0..5 {
                if let Some(off) = m.block_offsets(a, b) {
                    let v = if a == b { 10.0 } else { -1.0 };
                    for j in 0..3 {
                        m.values[off[j] + j] += v;
                    }
                }
            }
        }
        let dense = m.to_dense();
        assert_eq!(dense, dense.transpose());
        let fixed: Vec<bool> = (0..15).map(|d| d < 3).collect();
        let mut s = FreeDofSolver::new(&m, &fixed).unwrap();
        s.factor(&m).unwrap();
        let b: Vec<f64> = (0..15).map(|i| (i as f64).sin()).collect();
        let mut x = vec![0.0; 15];
        s.solve(&b, &mut x);
        let mut ax = vec![0.0; 15];
        m.mul_vec(&x, &mut ax);
        for d in 3..15 {
            // A direct solve of a well-conditioned 12x12 system: residual at rounding level.
            assert!((ax[d] - b[d]).abs() < 1e-12, "{d}: {} vs {}", ax[d], b[d]);
        }
    }
}
