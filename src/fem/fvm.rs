//! Teran's finite volume node forces for linear tetrahedra (Teran, Blemker, Ng Thow
//! Hing, Fedkiw, "Finite volume methods for the simulation of skeletal muscle", SCA
//! 2003; docs/equations.md).
//!
//! With Ds = [x1-x0, x2-x0, x3-x0] and the rest matrix Dm, F = Ds Dm^-1; the forces on
//! nodes 1..3 are the columns of G = P(F) Bm with **Bm = -V Dm^-T** (the paper prints +V,
//! which is wrong), and g0 = -(g1 + g2 + g3). These are forces acting on the nodes,
//! i.e. -dW/dx, so the internal force of the Total Lagrangian kernel is R = -g. The
//! tests prove this equals [`super::model::FemModel::internal_forces`].

use nalgebra::{Matrix3, Point3, Vector3};

use super::model::FemModel;
use super::stvk;
use crate::mesh::volume::ElementKind;

/// Precomputed FVM data of a tet mesh.
#[derive(Debug, Clone)]
pub struct FvmTets {
    connectivity: Vec<usize>,
    dm_inv: Vec<Matrix3<f64>>,
    bm: Vec<Matrix3<f64>>,
    lame: Vec<(f64, f64)>,
}

impl FvmTets {
    /// Returns `None` for hex models.
    pub fn new(model: &FemModel) -> Option<Self> {
        if model.kind != ElementKind::Tet {
            return None;
        }
        let ne = model.num_elements();
        let mut dm_inv = Vec::with_capacity(ne);
        let mut bm = Vec::with_capacity(ne);
        let mut lame = Vec::with_capacity(ne);
        for e in 0..ne {
            let el = model.element(e);
            let x: Vec<Point3<f64>> = el.iter().map(|&v| model.rest_positions[v]).collect();
            let dm = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let vol = dm.determinant() / 6.0;
            let inv = dm.try_inverse()?;
            dm_inv.push(inv);
            bm.push(-inv.transpose() * vol);
            lame.push(model.lame(e));
        }
        Some(FvmTets {
            connectivity: model.connectivity().to_vec(),
            dm_inv,
            bm,
            lame,
        })
    }

    /// Internal forces R(u) = -g (overwrites `f`).
    pub fn internal_forces(&self, rest: &[Point3<f64>], u: &[f64], f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        for (t, el) in self.connectivity.chunks_exact(4).enumerate() {
            let x: [Vector3<f64>; 4] = std::array::from_fn(|a| {
                let v = el[a];
                rest[v].coords + Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2])
            });
            let ds = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let def = ds * self.dm_inv[t];
            let (l, m) = self.lame[t];
            let g = stvk::first_pk(&def, l, m) * self.bm[t];
            let g0 = -(g.column(0) + g.column(1) + g.column(2));
            for k in 0..3 {
                f[3 * el[0] + k] -= g0[k];
                for a in 1..4 {
                    f[3 * el[a] + k] -= g[(k, a - 1)];
                }
            }
        }
    }
}
