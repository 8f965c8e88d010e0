//! Hyperelastic linear tetrahedra for any material given by its first Piola-Kirchhoff
//! stress: the Total Lagrangian node forces, the tangent stiffness, the strain energy,
//! and Teran's finite volume forces, all generic over a [`TetMaterial`].
//!
//! With the barycentric gradients g_a of a tet of rest volume V (rows of Dm^-1, g_0 =
//! -(g_1 + g_2 + g_3)) the deformation gradient is F = sum_a x_a g_a^T, and
//! - internal force (Total Lagrangian, thesis 2.2): R_a = V P(F) g_a = dE/dx_a;
//! - tangent blocks: K_ab = dR_a/dx_b, with (K_ab)_ij = V (dP[e_j g_b^T] g_a)_i;
//! - FVM (Teran et al. 2003, Sec. 4): G = P(F) Bm with Bm = -V Dm^-T, node forces g_1..3
//!   the columns of G and g_0 = -(g_1 + g_2 + g_3); R = -g (docs/equations.md has the
//!   sign erratum).
//!
//! The two force kernels are algebraically identical (Bm's columns are -V g_a); the test
//! `fvm_equals_total_lagrangian` proves it to round-off. The StVK kernel of
//! [`crate::fem::model::FemModel`] stays the fast path for StVK; this module serves materials that
//! are not polynomial in F (the muscle of [`super::blemker`]) and the cubature of
//! [`crate::reduction`].

use nalgebra::{Matrix3, Point3, Vector3};

use super::model::{tet_gradients, FemError};
use super::stvk;
use crate::fem::BlockSparseMatrix;
use crate::mesh::{volume::ElementKind, volume::VolumeMesh};

/// A hyperelastic material evaluated per element (materials may vary by element: tendon
/// and muscle, fibre directions).
pub trait TetMaterial: Send + Sync {
    /// Strain energy density W(F) (J / m^3) of element `e`.
    fn energy_density(&self, e: usize, f: &Matrix3<f64>) -> f64;
    /// First Piola-Kirchhoff stress P = dW/dF (Pa) of element `e`.
    fn first_pk(&self, e: usize, f: &Matrix3<f64>) -> Matrix3<f64>;
    /// Directional derivative dP\[dF\] at F.
    fn first_pk_differential(&self, e: usize, f: &Matrix3<f64>, df: &Matrix3<f64>) -> Matrix3<f64>;
    /// Sets the run-time activation in [0, 1] (active muscle, [`super::blemker`]);
    /// passive materials ignore it.
    fn set_activation(&mut self, _alpha: f64) {}
    /// The run-time activation in force (0 for passive materials).
    fn activation(&self) -> f64 {
        0.0
    }
    /// The 9x9 tangent dP/dF at F: column `3 j + i` is dP\[E_ij\] (E_ij the unit matrix
    /// with a 1 at row i, column j), both sides column-major (`vec`). Materials with a
    /// cheaper closed form override it.
    fn first_pk_tangent(&self, e: usize, f: &Matrix3<f64>) -> nalgebra::SMatrix<f64, 9, 9> {
        let mut t = nalgebra::SMatrix::<f64, 9, 9>::zeros();
        for j in 0..3 {
            for i in 0..3 {
                let mut d = Matrix3::zeros();
                d[(i, j)] = 1.0;
                let dp = self.first_pk_differential(e, f, &d);
                t.column_mut(3 * j + i).copy_from_slice(dp.as_slice());
            }
        }
        t
    }
    /// P(F) and dP/dF together, for callers that need both at the same F (the cubature's
    /// haptic-rate loop): materials whose stress and tangent share their invariants
    /// override it to compute them once.
    fn first_pk_and_tangent(
        &self,
        e: usize,
        f: &Matrix3<f64>,
    ) -> (Matrix3<f64>, nalgebra::SMatrix<f64, 9, 9>) {
        (self.first_pk(e, f), self.first_pk_tangent(e, f))
    }
}

/// StVK with per-element Lame parameters, as a [`TetMaterial`] (thesis 2.2).
#[derive(Debug, Clone)]
pub struct StvkMaterial {
    /// (lambda, mu) per element (Pa).
    pub lame: Vec<(f64, f64)>,
}

impl StvkMaterial {
    /// Lame parameters of every element of `mesh` from its materials.
    pub fn from_mesh(mesh: &VolumeMesh) -> Self {
        StvkMaterial {
            lame: (0..mesh.num_elements())
                .map(|e| {
                    let m = mesh.material_of(e);
                    (m.lambda(), m.mu())
                })
                .collect(),
        }
    }
}

impl TetMaterial for StvkMaterial {
    fn energy_density(&self, e: usize, f: &Matrix3<f64>) -> f64 {
        let (l, m) = self.lame[e];
        stvk::energy_density(f, l, m)
    }
    fn first_pk(&self, e: usize, f: &Matrix3<f64>) -> Matrix3<f64> {
        let (l, m) = self.lame[e];
        stvk::first_pk(f, l, m)
    }
    fn first_pk_differential(&self, e: usize, f: &Matrix3<f64>, df: &Matrix3<f64>) -> Matrix3<f64> {
        let (l, m) = self.lame[e];
        stvk::first_pk_differential(f, df, l, m)
    }
    /// Closed form (about 5x cheaper than nine differentials; the cubature of
    /// [`crate::reduction::cubature`] calls it per point and step): with S the second PK
    /// stress and B = F F^T, `T[3J+i, 3L+k] = delta_ik S_LJ + lambda F_iJ F_kL
    /// + mu F_iL F_kJ + mu delta_JL B_ik`.
    fn first_pk_tangent(&self, e: usize, f: &Matrix3<f64>) -> nalgebra::SMatrix<f64, 9, 9> {
        let (l, m) = self.lame[e];
        let s = stvk::second_pk(&stvk::green_strain(f), l, m);
        let b = f * f.transpose();
        let mut t = nalgebra::SMatrix::<f64, 9, 9>::zeros();
        for cl in 0..3 {
            for k in 0..3 {
                for cj in 0..3 {
                    for i in 0..3 {
                        let mut v = l * f[(i, cj)] * f[(k, cl)] + m * f[(i, cl)] * f[(k, cj)];
                        if i == k {
                            v += s[(cl, cj)];
                        }
                        if cj == cl {
                            v += m * b[(i, k)];
                        }
                        t[(3 * cj + i, 3 * cl + k)] = v;
                    }
                }
            }
        }
        t
    }
}

/// Rest-state data of a linear tet mesh for the generic kernels.
#[derive(Debug, Clone)]
pub struct TetKernel {
    /// Rest positions X (m).
    pub rest: Vec<Point3<f64>>,
    /// Vertex indices of every tet.
    pub tets: Vec<[usize; 4]>,
    /// Barycentric gradients g_a of every tet.
    pub grads: Vec<[Vector3<f64>; 4]>,
    /// Rest volume of every tet (m^3).
    pub volume: Vec<f64>,
    /// Teran's Bm = -V Dm^-T of every tet.
    bm: Vec<Matrix3<f64>>,
    /// Dm^-1 of every tet.
    dm_inv: Vec<Matrix3<f64>>,
    block_map: Vec<usize>,
    pattern: BlockSparseMatrix,
}

impl TetKernel {
    /// Precomputes the rest data. Fails on a hex mesh, an empty mesh, or a degenerate or
    /// inverted tet.
    pub fn new(mesh: &VolumeMesh) -> Result<Self, FemError> {
        if mesh.kind != ElementKind::Tet {
            return Err(FemError::NotTets);
        }
        if mesh.num_elements() == 0 {
            return Err(FemError::Empty);
        }
        FemError::check_elements(mesh)?;
        let mut tets = Vec::with_capacity(mesh.num_elements());
        let mut grads = Vec::with_capacity(mesh.num_elements());
        let mut volume = Vec::with_capacity(mesh.num_elements());
        let mut bm = Vec::with_capacity(mesh.num_elements());
        let mut dm_inv = Vec::with_capacity(mesh.num_elements());
        for el in mesh.connectivity.chunks_exact(4) {
            let t = [el[0], el[1], el[2], el[3]];
            let x: [Point3<f64>; 4] = std::array::from_fn(|a| mesh.vertices[t[a]]);
            let (g, v) = tet_gradients(&x);
            let dm = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let inv = dm.try_inverse().ok_or(FemError::Empty)?;
            tets.push(t);
            grads.push(g);
            volume.push(v);
            bm.push(-inv.transpose() * v);
            dm_inv.push(inv);
        }
        let pattern = BlockSparseMatrix::from_elements(mesh.vertices.len(), &mesh.connectivity, 4);
        let block_map = pattern.element_block_map(&mesh.connectivity, 4);
        Ok(TetKernel {
            rest: mesh.vertices.clone(),
            tets,
            grads,
            volume,
            bm,
            dm_inv,
            block_map,
            pattern,
        })
    }

    /// Number of degrees of freedom, 3 per vertex.
    pub fn num_dofs(&self) -> usize {
        3 * self.rest.len()
    }

    /// Number of tets.
    pub fn num_elements(&self) -> usize {
        self.tets.len()
    }

    /// An empty stiffness matrix with this mesh's pattern.
    pub fn new_matrix(&self) -> BlockSparseMatrix {
        self.pattern.clone()
    }

    /// Deformation gradient F = I + sum_a u_a g_a^T of tet `e` under displacements `u`.
    #[inline]
    pub fn deformation_gradient(&self, e: usize, u: &[f64]) -> Matrix3<f64> {
        let mut f = Matrix3::identity();
        for (a, &v) in self.tets[e].iter().enumerate() {
            let ua = Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2]);
            f += ua * self.grads[e][a].transpose();
        }
        f
    }

    /// Element internal forces R_a = V P(F) g_a of tet `e` at F.
    #[inline]
    pub(crate) fn element_forces<M: TetMaterial + ?Sized>(
        &self,
        material: &M,
        e: usize,
        f: &Matrix3<f64>,
    ) -> [Vector3<f64>; 4] {
        let p = material.first_pk(e, f) * self.volume[e];
        std::array::from_fn(|a| p * self.grads[e][a])
    }

    /// Element stiffness blocks K_ab = dR_a/dx_b of tet `e` at F.
    pub(crate) fn element_stiffness<M: TetMaterial + ?Sized>(
        &self,
        material: &M,
        e: usize,
        f: &Matrix3<f64>,
    ) -> [[Matrix3<f64>; 4]; 4] {
        let g = &self.grads[e];
        let v = self.volume[e];
        let t = material.first_pk_tangent(e, f);
        let mut k = [[Matrix3::zeros(); 4]; 4];
        for b in 0..4 {
            for j in 0..3 {
                // dF for a unit displacement of node b along j: e_j g_b^T.
                let mut df = nalgebra::SVector::<f64, 9>::zeros();
                for c in 0..3 {
                    df[3 * c + j] = g[b][c];
                }
                let dp = Matrix3::from_column_slice((t * df).as_slice()) * v;
                for a in 0..4 {
                    let col = dp * g[a];
                    k[a][b].set_column(j, &col);
                }
            }
        }
        k
    }

    /// Internal forces R(u) by the Total Lagrangian kernel (overwrites `f`).
    pub fn internal_forces<M: TetMaterial + ?Sized>(&self, material: &M, u: &[f64], f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for e in 0..self.tets.len() {
            let def = self.deformation_gradient(e, u);
            let r = self.element_forces(material, e, &def);
            for (a, &v) in self.tets[e].iter().enumerate() {
                for k in 0..3 {
                    f[3 * v + k] += r[a][k];
                }
            }
        }
    }

    /// Internal forces R(u) = -g by Teran's finite volume kernel (overwrites `f`).
    pub fn internal_forces_fvm<M: TetMaterial + ?Sized>(
        &self,
        material: &M,
        u: &[f64],
        f: &mut [f64],
    ) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for (e, t) in self.tets.iter().enumerate() {
            let x: [Vector3<f64>; 4] = std::array::from_fn(|a| {
                let v = t[a];
                self.rest[v].coords + Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2])
            });
            let ds = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let def = ds * self.dm_inv[e];
            let g = material.first_pk(e, &def) * self.bm[e];
            let g0 = -(g.column(0) + g.column(1) + g.column(2));
            for k in 0..3 {
                f[3 * t[0] + k] -= g0[k];
                for a in 1..4 {
                    f[3 * t[a] + k] -= g[(k, a - 1)];
                }
            }
        }
    }

    /// Tangent stiffness K(u) = dR/du (overwrites `k`, which has this kernel's pattern).
    pub fn tangent_stiffness<M: TetMaterial + ?Sized>(
        &self,
        material: &M,
        u: &[f64],
        k: &mut BlockSparseMatrix,
    ) {
        k.fill_zero();
        for (e, t) in self.tets.iter().enumerate() {
            let def = self.deformation_gradient(e, u);
            let ke = self.element_stiffness(material, e, &def);
            let map = &self.block_map[16 * e..16 * (e + 1)];
            for b in 0..4 {
                let stride = k.column_stride(t[b]);
                for a in 0..4 {
                    k.add_block(map[b * 4 + a], stride, &ke[a][b]);
                }
            }
        }
    }

    /// Strain energy E(u) = sum_e V_e W(F_e).
    pub fn strain_energy<M: TetMaterial + ?Sized>(&self, material: &M, u: &[f64]) -> f64 {
        (0..self.tets.len())
            .map(|e| self.volume[e] * material.energy_density(e, &self.deformation_gradient(e, u)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::{model::FemModel, model::MaterialLaw};
    use crate::mesh::{box_tet_mesh, volume::Material};

    fn block() -> VolumeMesh {
        box_tet_mesh(
            Vector3::new(0.04, 0.01, 0.012),
            [3, 2, 2],
            Point3::origin(),
            Material::new("m", 1000.0, 1.0e5, 0.4),
        )
    }

    fn wobble(n: usize, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|i| scale * ((i as f64 * 1.37).sin() + 0.5 * (i as f64 * 0.71).cos()))
            .collect()
    }

    #[test]
    fn stvk_forces_and_stiffness_match_the_fem_model() {
        // The generic kernel with the StVK material must reproduce the hand-written StVK
        // kernel (same equations, different summation order: 1e-12 relative).
        let mesh = block();
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let kernel = TetKernel::new(&mesh).unwrap();
        let mat = StvkMaterial::from_mesh(&mesh);
        let u = wobble(model.num_dofs(), 2e-3);
        let (mut f1, mut f2) = (vec![0.0; u.len()], vec![0.0; u.len()]);
        model.internal_forces(&u, &mut f1);
        kernel.internal_forces(&mat, &u, &mut f2);
        let scale = f1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in f1.iter().zip(&f2) {
            assert!((a - b).abs() <= 1e-12 * scale, "{a} vs {b}");
        }
        let mut k1 = model.new_matrix();
        let mut k2 = kernel.new_matrix();
        model.tangent_stiffness(&u, &mut k1);
        kernel.tangent_stiffness(&mat, &u, &mut k2);
        let ks = k1.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in k1.values.iter().zip(&k2.values) {
            assert!((a - b).abs() <= 1e-11 * ks, "{a} vs {b}");
        }
    }

    #[test]
    fn stvk_closed_form_tangent_equals_the_differentials() {
        // The closed form against the trait's default (nine directional derivatives).
        struct ByDifferentials(StvkMaterial);
        impl TetMaterial for ByDifferentials {
            fn energy_density(&self, e: usize, f: &Matrix3<f64>) -> f64 {
                self.0.energy_density(e, f)
            }
            fn first_pk(&self, e: usize, f: &Matrix3<f64>) -> Matrix3<f64> {
                self.0.first_pk(e, f)
            }
            fn first_pk_differential(
                &self,
                e: usize,
                f: &Matrix3<f64>,
                df: &Matrix3<f64>,
            ) -> Matrix3<f64> {
                self.0.first_pk_differential(e, f, df)
            }
        }
        let mat = StvkMaterial::from_mesh(&block());
        let reference = ByDifferentials(mat.clone());
        let w = wobble(9, 0.3);
        let f = Matrix3::identity() + Matrix3::from_column_slice(&w);
        let a = mat.first_pk_tangent(0, &f);
        let b = reference.first_pk_tangent(0, &f);
        assert!((a - b).amax() <= 1e-12 * b.amax(), "{a} vs {b}");
        assert!((a - a.transpose()).amax() <= 1e-12 * a.amax());
    }

    #[test]
    fn fvm_equals_total_lagrangian() {
        let mesh = block();
        let kernel = TetKernel::new(&mesh).unwrap();
        let mat = StvkMaterial::from_mesh(&mesh);
        let u = wobble(kernel.num_dofs(), 3e-3);
        let (mut f1, mut f2) = (vec![0.0; u.len()], vec![0.0; u.len()]);
        kernel.internal_forces(&mat, &u, &mut f1);
        kernel.internal_forces_fvm(&mat, &u, &mut f2);
        let scale = f1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in f1.iter().zip(&f2) {
            assert!((a - b).abs() <= 1e-12 * scale, "{a} vs {b}");
        }
    }

    #[test]
    fn forces_are_the_energy_gradient() {
        // Central differences of E(u): error O(h^2) ~ 1e-10 relative at h = 1e-7 m on
        // displacements of 1e-3 m; 1e-6 leaves room for round-off.
        let mesh = block();
        let kernel = TetKernel::new(&mesh).unwrap();
        let mat = StvkMaterial::from_mesh(&mesh);
        let mut u = wobble(kernel.num_dofs(), 2e-3);
        let mut f = vec![0.0; u.len()];
        kernel.internal_forces(&mat, &u, &mut f);
        let scale = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let h = 1e-7;
        for d in (0..u.len()).step_by(7) {
            let u0 = u[d];
            u[d] = u0 + h;
            let ep = kernel.strain_energy(&mat, &u);
            u[d] = u0 - h;
            let em = kernel.strain_energy(&mat, &u);
            u[d] = u0;
            let fd = (ep - em) / (2.0 * h);
            assert!(
                (fd - f[d]).abs() <= 1e-6 * scale,
                "dof {d}: {fd} vs {}",
                f[d]
            );
        }
    }
}
