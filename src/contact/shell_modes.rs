//! Per-point modes of a deformable pointshell (thesis 3.6): the displacement rows `U_s`
//! (3 x r) and the normal-correction rows `dN_s` (3 x r), so that
//!
//! ```text
//! p_s(q) = P_s + U_s q                          (3.6)
//! n_s(q) = normalize(N_s + dN_s q),  dN_s e_j = F_{s,j} N_s     (3.7, 3.6.2)
//! ```
//!
//! `U_s` interpolates the basis rows of the element containing `P_s` with its shape
//! functions; `F_{s,j} = sum_a U_{a,j} (grad N_a(P_s))^T` is the displacement gradient of
//! mode `j` at the point (trilinear hexes: `grad_X N_a = J^-T grad_xi N_a`; linear tets:
//! constant gradients). Transforming the normal by the deformation gradient `F = I +
//! sum_j F_{s,j} q_j` is exact for rotations and accurate for large rotation with small
//! strain, the regime of reduced StVK (thesis 3.6.2).
//!
//! Both are stored in f32 (docs/architecture.md: pointshell data may be f32), point-major, each a
//! row-major 3 x r block.

use nalgebra::{DMatrix, Matrix3, Point3, Vector3};

use crate::fem::model::tet_gradients;
use crate::geometry::embed::{embed, invert_trilinear, EmbedError};
use crate::mesh::volume::{hex_jacobian, hex_shape_gradients};
use crate::mesh::{volume::ElementKind, volume::VolumeMesh};

/// Why per-point modes could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShellModesError {
    /// The basis does not have one row per degree of freedom of the mesh.
    #[error("the basis has {rows} rows; the volumetric mesh has {dofs} degrees of freedom")]
    BasisRows {
        /// Rows of the basis.
        rows: usize,
        /// Degrees of freedom of the mesh (3 per vertex).
        dofs: usize,
    },
    /// The normals and points differ in number.
    #[error("{normals} normals for {points} points")]
    NormalCount {
        /// Number of normals given.
        normals: usize,
        /// Number of points given.
        points: usize,
    },
    /// Locating the points in the mesh's elements failed.
    #[error("embedding the pointshell in the volumetric mesh: {0}")]
    Embed(#[from] EmbedError),
    /// A point lies farther outside the mesh than the allowed tolerance.
    #[error("pointshell point {point} lies {distance:.3e} outside the volumetric mesh (limit {limit:.3e}); the pointshell must be embedded in the simulation mesh")]
    Outside {
        /// 0-based index of the point.
        point: usize,
        /// Its distance outside the nearest element (m).
        distance: f64,
        /// The allowed distance (m).
        limit: f64,
    },
}

/// `U_s` and `dN_s` of every pointshell point.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellModes {
    /// Reduced dimension.
    pub r: usize,
    /// `3 r` values per point: row-major `U_s`.
    pub u: Vec<f32>,
    /// `3 r` values per point: row-major `dN_s`.
    pub dn: Vec<f32>,
}

impl ShellModes {
    /// Number of points.
    pub fn num_points(&self) -> usize {
        if self.r == 0 {
            0
        } else {
            self.u.len() / (3 * self.r)
        }
    }

    /// Row-major `U_s`.
    #[inline]
    pub fn u_row(&self, s: usize) -> &[f32] {
        &self.u[3 * self.r * s..3 * self.r * (s + 1)]
    }

    /// Row-major `dN_s`.
    #[inline]
    pub(crate) fn dn_row(&self, s: usize) -> &[f32] {
        &self.dn[3 * self.r * s..3 * self.r * (s + 1)]
    }

    /// `U_s q`.
    #[inline]
    pub fn displacement(&self, s: usize, q: &[f64]) -> Vector3<f64> {
        mul_3xr(self.u_row(s), q)
    }

    /// `dN_s q`.
    #[inline]
    pub fn normal_correction(&self, s: usize, q: &[f64]) -> Vector3<f64> {
        mul_3xr(self.dn_row(s), q)
    }

    /// Adds `U_s^T f` to `out` (the reduced force of a point force `f`, thesis 3.6).
    #[inline]
    pub fn add_transpose(&self, s: usize, f: &Vector3<f64>, out: &mut [f64]) {
        let r = self.r;
        let u = self.u_row(s);
        for (j, o) in out.iter_mut().enumerate().take(r) {
            *o += u[j] as f64 * f.x + u[r + j] as f64 * f.y + u[2 * r + j] as f64 * f.z;
        }
    }
}

#[inline]
fn mul_3xr(m: &[f32], q: &[f64]) -> Vector3<f64> {
    let r = q.len();
    let (mut x, mut y, mut z) = (0.0, 0.0, 0.0);
    for j in 0..r {
        x += m[j] as f64 * q[j];
        y += m[r + j] as f64 * q[j];
        z += m[2 * r + j] as f64 * q[j];
    }
    Vector3::new(x, y, z)
}

/// Computes `U_s` and `dN_s` for pointshell points embedded in `mesh`, whose reduced
/// basis is `basis` (3n x r, rows x, y, z per vertex). `points` may lie outside the mesh
/// by at most `max_outside` (extrapolated with the nearest element's shape functions).
pub fn shell_modes(
    points: &[Point3<f64>],
    normals: &[Vector3<f64>],
    mesh: &VolumeMesh,
    basis: &DMatrix<f64>,
    max_outside: f64,
) -> Result<ShellModes, ShellModesError> {
    if normals.len() != points.len() {
        return Err(ShellModesError::NormalCount {
            normals: normals.len(),
            points: points.len(),
        });
    }
    let r = basis.ncols();
    let mut u = vec![0f32; points.len() * 3 * r];
    let mut dn = vec![0f32; points.len() * 3 * r];
    for_each_embedded(points, mesh, basis, max_outside, |s, disp, grad| {
        let us = &mut u[s * 3 * r..(s + 1) * 3 * r];
        let dns = &mut dn[s * 3 * r..(s + 1) * 3 * r];
        for j in 0..r {
            let dnj = grad[j] * normals[s];
            for i in 0..3 {
                us[i * r + j] = disp[j][i] as f32;
                dns[i * r + j] = dnj[i] as f32;
            }
        }
    })?;
    Ok(ShellModes { r, u, dn })
}

/// Calls `f(s, U_s columns, F_{s,j})` for every point embedded in `mesh`: the
/// interpolated displacement of every mode and its displacement gradient at the point.
pub(crate) fn for_each_embedded(
    points: &[Point3<f64>],
    mesh: &VolumeMesh,
    basis: &DMatrix<f64>,
    max_outside: f64,
    mut f: impl FnMut(usize, &[Vector3<f64>], &[Matrix3<f64>]),
) -> Result<(), ShellModesError> {
    if basis.nrows() != mesh.num_dofs() {
        return Err(ShellModesError::BasisRows {
            rows: basis.nrows(),
            dofs: mesh.num_dofs(),
        });
    }
    let emb = embed(points, mesh)?;
    let r = basis.ncols();
    let mut disp = vec![Vector3::zeros(); r];
    let mut grad = vec![Matrix3::zeros(); r];
    let mode = |v: usize, j: usize| {
        Vector3::new(
            basis[(3 * v, j)],
            basis[(3 * v + 1, j)],
            basis[(3 * v + 2, j)],
        )
    };
    for (s, p) in points.iter().enumerate() {
        let e = emb.elements[s];
        let verts = mesh.element(e);
        let x: Vec<Point3<f64>> = verts.iter().map(|&v| mesh.vertices[v]).collect();
        let dist = outside_distance(mesh.kind, &x, p);
        if dist > max_outside {
            return Err(ShellModesError::Outside {
                point: s,
                distance: dist,
                limit: max_outside,
            });
        }
        let grads = shape_gradients(mesh.kind, &x, p);
        let n = emb.interpolation.nodes_per_vertex;
        let w = &emb.interpolation.weights[s * n..(s + 1) * n];
        let idx = &emb.interpolation.indices[s * n..(s + 1) * n];
        for j in 0..r {
            disp[j] = w.iter().zip(idx).map(|(wa, &v)| mode(v, j) * *wa).sum();
            // F_{s,j} = sum_a U_{a,j} grad N_a^T.
            grad[j] = verts
                .iter()
                .zip(&grads)
                .map(|(&v, g)| mode(v, j) * g.transpose())
                .sum();
        }
        f(s, &disp, &grad);
    }
    Ok(())
}

/// Gradients (in the rest configuration) of the element's shape functions at `p`.
fn shape_gradients(kind: ElementKind, x: &[Point3<f64>], p: &Point3<f64>) -> Vec<Vector3<f64>> {
    match kind {
        ElementKind::Tet => tet_gradients(x).0.to_vec(),
        ElementKind::Hex => {
            let corners: [Point3<f64>; 8] = std::array::from_fn(|a| x[a]);
            let xi = invert_trilinear(&corners, p);
            let g = hex_shape_gradients(xi);
            let jinv_t = hex_jacobian(x, xi)
                .try_inverse()
                .unwrap_or_else(Matrix3::zeros)
                .transpose();
            g.iter().map(|ga| jinv_t * ga).collect()
        }
    }
}

/// How far `p` lies outside the element (0 inside), in reference-coordinate terms scaled
/// by the element size: a cheap check that the embedding is not wildly extrapolated.
fn outside_distance(kind: ElementKind, x: &[Point3<f64>], p: &Point3<f64>) -> f64 {
    let size = (x[1] - x[0]).norm().max((x[2] - x[0]).norm());
    let excess = match kind {
        ElementKind::Tet => {
            // Barycentric coordinates: lambda_a(p) = lambda_a(x_0) + g_a . (p - x_0).
            let (g, _) = tet_gradients(x);
            (0..4)
                .map(|a| {
                    let at_x0 = if a == 0 { 1.0 } else { 0.0 };
                    (-(at_x0 + g[a].dot(&(p - x[0])))).max(0.0)
                })
                .fold(0.0, f64::max)
        }
        ElementKind::Hex => {
            let corners: [Point3<f64>; 8] = std::array::from_fn(|a| x[a]);
            let xi = invert_trilinear(&corners, p);
            xi.iter()
                .map(|&c| (-c).max(c - 1.0).max(0.0))
                .fold(0.0, f64::max)
        }
    };
    excess * size
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{box_hex_mesh, box_tet_mesh, volume::Material};

    fn linear_basis(mesh: &VolumeMesh, a: &[Matrix3<f64>]) -> DMatrix<f64> {
        DMatrix::from_fn(mesh.num_dofs(), a.len(), |row, j| {
            let v = row / 3;
            (a[j] * mesh.vertices[v].coords)[row % 3]
        })
    }

    /// Linear displacement fields u = A X are reproduced exactly by trilinear hexes and
    /// linear tets, so U_s q = (sum_j A_j q_j) P_s and F_{s,j} = A_j up to rounding
    /// (f32 storage: 1e-6 relative).
    #[test]
    fn linear_fields_are_reproduced_exactly() {
        let mat = Material::new("m", 1000.0, 1e6, 0.3);
        let a = [
            Matrix3::new(0.1, 0.2, 0.0, -0.3, 0.05, 0.1, 0.0, 0.4, -0.2),
            Matrix3::new(0.0, -0.1, 0.3, 0.1, 0.0, -0.2, -0.3, 0.2, 0.0),
        ];
        for mesh in [
            box_hex_mesh(
                Vector3::new(0.3, 0.2, 0.2),
                [3, 2, 2],
                Point3::origin(),
                mat.clone(),
            ),
            box_tet_mesh(
                Vector3::new(0.3, 0.2, 0.2),
                [3, 2, 2],
                Point3::origin(),
                mat.clone(),
            ),
        ] {
            let basis = linear_basis(&mesh, &a);
            let points = vec![
                Point3::new(0.05, 0.07, 0.11),
                Point3::new(0.29, 0.01, 0.19),
                Point3::new(0.15, 0.1, 0.1),
            ];
            let normals = vec![
                Vector3::z(),
                Vector3::new(0.6, 0.0, 0.8),
                Vector3::new(0.0, 1.0, 0.0),
            ];
            let m = shell_modes(&points, &normals, &mesh, &basis, 1e-9).unwrap();
            let q = [0.7, -1.3];
            let amix = a[0] * q[0] + a[1] * q[1];
            for s in 0..points.len() {
                let exact = amix * points[s].coords;
                assert!((m.displacement(s, &q) - exact).norm() < 1e-6);
                let exact_dn = amix * normals[s];
                assert!((m.normal_correction(s, &q) - exact_dn).norm() < 1e-6);
                let mut red = [0.0; 2];
                let f = Vector3::new(1.0, -2.0, 0.5);
                m.add_transpose(s, &f, &mut red);
                for j in 0..2 {
                    let ej = a[j] * points[s].coords;
                    assert!((red[j] - ej.dot(&f)).abs() < 1e-6);
                }
            }
        }
    }

    #[test]
    fn errors() {
        let mat = Material::new("m", 1000.0, 1e6, 0.3);
        let mesh = box_hex_mesh(Vector3::repeat(1.0), [1, 1, 1], Point3::origin(), mat);
        let basis = DMatrix::zeros(5, 2);
        let p = [Point3::new(0.5, 0.5, 0.5)];
        let n = [Vector3::z()];
        assert!(matches!(
            shell_modes(&p, &n, &mesh, &basis, 0.0),
            Err(ShellModesError::BasisRows { .. })
        ));
        let basis = DMatrix::zeros(24, 2);
        assert!(matches!(
            shell_modes(&[Point3::new(3.0, 0.5, 0.5)], &n, &mesh, &basis, 0.1),
            Err(ShellModesError::Outside { .. })
        ));
    }
}
