//! The finite element model of one volumetric mesh: internal forces R(u), tangent
//! stiffness K(u) = dR/du, the stiffness Hessian contraction (H:v)w = d2R[v, w], and the
//! consistent and lumped mass matrices.
//!
//! Total Lagrangian formulation (thesis 2.2-2.4): for every element and quadrature point
//! with weight w (reference volume) and shape-function gradients g_a = dN_a/dX,
//! F = I + sum_a u_a g_a^T, and the node forces are f_a = sum_q w P(F) g_a. The tangent
//! block is K_ab = sum_q w [ (g_a . S g_b) I + lambda (F g_a)(F g_b)^T
//! + mu ((F g_b)(F g_a)^T + (g_a . g_b) F F^T) ].
//!
//! Quadrature: linear tets use one point (all integrands are constant); trilinear hexes use
//! 3x3x3 Gauss for forces and stiffness, exact for StVK on parallelepipeds (docs/equations.md:
//! 2x2x2 is not), and 2x2x2 for the mass matrix, which is exact there.
//!
//! Sign convention (as Vega): R is the internal elastic force in M u'' + D u' + R(u) = f.

use nalgebra::{Matrix3, Point3, Vector3};

use super::quadrature::gauss_cube;
use super::stvk;
use crate::fem::BlockSparseMatrix;
use crate::mesh::error::ElementDefectKind;
use crate::mesh::volume::{hex_jacobian, hex_shape, hex_shape_gradients};
use crate::mesh::{volume::ElementKind, volume::VolumeMesh};

/// The constitutive law of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaterialLaw {
    /// Saint Venant-Kirchhoff: geometrically nonlinear, R cubic in u.
    StVK,
    /// Linear small-strain elasticity: R = K0 u.
    Linear,
}

/// How hexes are integrated for forces and stiffness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HexQuadrature {
    /// 3x3x3 Gauss (exact for StVK on voxels; the default).
    Gauss3,
    /// 2x2x2 Gauss (exact only for the linear law on parallelepipeds).
    Gauss2,
}

/// Errors building a finite element model.
#[derive(Debug, thiserror::Error)]
pub enum FemError {
    /// An element is degenerate or inverted in the rest shape.
    #[error("element {one_based} (0-based {index}) is {kind}: its {measure_name} is {measure:e}; fix the mesh before simulating")]
    BadElement {
        /// 0-based index of the first bad element.
        index: usize,
        /// The same element, 1-based (as in mesh files).
        one_based: usize,
        /// Whether it is degenerate or inverted.
        kind: ElementDefectKind,
        /// What `measure` is: "signed volume" (tets) or "smallest corner Jacobian
        /// determinant" (hexes).
        measure_name: &'static str,
        /// The offending value of that measure.
        measure: f64,
    },
    /// An element's material has invalid parameters.
    #[error("material '{name}' of element {element}: {reason}")]
    InvalidMaterial {
        /// Name of the material.
        name: String,
        /// 0-based index of the first element using it.
        element: usize,
        /// What is wrong with the parameters.
        reason: String,
    },
    /// The mesh has no elements.
    #[error("the mesh has no elements")]
    Empty,
    /// The kernel needs linear tetrahedra and the mesh has hexahedra.
    #[error("this model needs a tetrahedral mesh; the mesh has hexahedra")]
    NotTets,
}

impl FemError {
    /// The first degenerate or inverted element of `mesh`, as [`FemError::BadElement`].
    pub fn check_elements(mesh: &VolumeMesh) -> Result<(), FemError> {
        match mesh.element_defects().first() {
            None => Ok(()),
            Some(d) => Err(FemError::BadElement {
                index: d.element,
                one_based: d.element + 1,
                kind: d.kind,
                measure_name: match mesh.kind {
                    ElementKind::Tet => "signed volume",
                    ElementKind::Hex => "smallest corner Jacobian determinant",
                },
                measure: d.measure,
            }),
        }
    }
}

/// Mass matrix type. Files (bake manifests, scene files) name it `"consistent"` or
/// `"lumped"`: that is its serde form, its [`Display`](std::fmt::Display) and what
/// [`FromStr`](std::str::FromStr) accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MassKind {
    /// Exact integrals of rho N_a N_b.
    Consistent,
    /// The row sums of the consistent matrix on the diagonal.
    Lumped,
}

impl MassKind {
    /// The name in files: `"consistent"` or `"lumped"`.
    pub fn name(self) -> &'static str {
        match self {
            MassKind::Consistent => "consistent",
            MassKind::Lumped => "lumped",
        }
    }
}

impl std::fmt::Display for MassKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mass matrix name other than `consistent` or `lumped`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mass matrix '{0}': expected 'consistent' or 'lumped'")]
pub struct UnknownMassKind(pub String);

impl std::str::FromStr for MassKind {
    type Err = UnknownMassKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "consistent" => Ok(MassKind::Consistent),
            "lumped" => Ok(MassKind::Lumped),
            other => Err(UnknownMassKind(other.to_string())),
        }
    }
}

/// Finite element model of a tet or hex mesh.
#[derive(Debug, Clone)]
pub struct FemModel {
    /// Element type of the mesh: linear tets or trilinear hexes.
    pub kind: ElementKind,
    /// Constitutive law: StVK or linear elasticity.
    pub law: MaterialLaw,
    /// Rest positions X of the vertices (m).
    pub rest_positions: Vec<Point3<f64>>,
    connectivity: Vec<usize>,
    nodes: usize,
    /// Per element Lame parameters and density.
    lambda: Vec<f64>,
    mu: Vec<f64>,
    density: Vec<f64>,
    /// Material (group) index of every element, as in the mesh.
    material: Vec<usize>,
    material_names: Vec<String>,
    /// Quadrature points per element.
    nq: usize,
    /// Per (element, point): weight times |det J|.
    qw: Vec<f64>,
    /// Per (element, point, node): dN/dX.
    qg: Vec<Vector3<f64>>,
    /// Per element, `nodes * nodes` block offsets into the stiffness pattern.
    block_map: Vec<usize>,
    pattern: BlockSparseMatrix,
}

/// Scratch buffers for one element (stack-sized for the largest element, the hex).
struct ElementScratch {
    u: [Vector3<f64>; 8],
    f: [Vector3<f64>; 8],
    /// Local stiffness blocks, `[a][b]` = d f_a / d u_b.
    k: [[Matrix3<f64>; 8]; 8],
}

impl ElementScratch {
    fn new() -> Self {
        ElementScratch {
            u: [Vector3::zeros(); 8],
            f: [Vector3::zeros(); 8],
            k: [[Matrix3::zeros(); 8]; 8],
        }
    }
}

impl FemModel {
    /// Builds the model with the default quadrature (3x3x3 for hexes).
    pub fn new(mesh: &VolumeMesh, law: MaterialLaw) -> Result<Self, FemError> {
        Self::with_quadrature(mesh, law, HexQuadrature::Gauss3)
    }

    /// Builds the model, choosing the hex quadrature rule for forces and stiffness
    /// (tets always use one point). Fails on an empty mesh, a degenerate or inverted
    /// element, or an invalid material.
    pub fn with_quadrature(
        mesh: &VolumeMesh,
        law: MaterialLaw,
        hex_rule: HexQuadrature,
    ) -> Result<Self, FemError> {
        let ne = mesh.num_elements();
        if ne == 0 {
            return Err(FemError::Empty);
        }
        FemError::check_elements(mesh)?;
        let nodes = mesh.kind.nodes();
        let mut lambda = Vec::with_capacity(ne);
        let mut mu = Vec::with_capacity(ne);
        let mut density = Vec::with_capacity(ne);
        for e in 0..ne {
            let m = mesh.material_of(e);
            m.validate().map_err(|reason| FemError::InvalidMaterial {
                name: m.name.clone(),
                element: e,
                reason,
            })?;
            lambda.push(m.lambda());
            mu.push(m.mu());
            density.push(m.density);
        }
        let rule: Vec<([f64; 3], f64)> = match (mesh.kind, hex_rule) {
            (ElementKind::Tet, _) => vec![([0.25; 3], 1.0)],
            (ElementKind::Hex, HexQuadrature::Gauss3) => gauss_cube(3),
            (ElementKind::Hex, HexQuadrature::Gauss2) => gauss_cube(2),
        };
        let nq = rule.len();
        let mut qw = Vec::with_capacity(ne * nq);
        let mut qg = Vec::with_capacity(ne * nq * nodes);
        for el in mesh.elements() {
            let x: Vec<Point3<f64>> = el.iter().map(|&v| mesh.vertices[v]).collect();
            match mesh.kind {
                ElementKind::Tet => {
                    let (grads, vol) = tet_gradients(&x);
                    qw.push(vol);
                    qg.extend_from_slice(&grads);
                }
                ElementKind::Hex => {
                    for (xi, w) in &rule {
                        let j = hex_jacobian(&x, *xi);
                        let jinv_t = j
                            .try_inverse()
                            .expect("element validated to have positive Jacobian")
                            .transpose();
                        qw.push(w * j.determinant());
                        for g in hex_shape_gradients(*xi) {
                            qg.push(jinv_t * g);
                        }
                    }
                }
            }
        }
        let pattern =
            BlockSparseMatrix::from_elements(mesh.vertices.len(), &mesh.connectivity, nodes);
        let block_map = pattern.element_block_map(&mesh.connectivity, nodes);
        Ok(FemModel {
            kind: mesh.kind,
            law,
            rest_positions: mesh.vertices.clone(),
            connectivity: mesh.connectivity.clone(),
            nodes,
            lambda,
            mu,
            density,
            nq,
            qw,
            qg,
            block_map,
            pattern,
            material: mesh.element_material.clone(),
            material_names: mesh.materials.iter().map(|m| m.name.clone()).collect(),
        })
    }

    /// Number of vertices.
    pub fn num_vertices(&self) -> usize {
        self.rest_positions.len()
    }

    /// Number of degrees of freedom, 3 per vertex (x, y, z interleaved).
    pub fn num_dofs(&self) -> usize {
        3 * self.rest_positions.len()
    }

    /// Number of elements.
    pub fn num_elements(&self) -> usize {
        self.connectivity.len() / self.nodes
    }

    /// Vertices per element: 4 for tets, 8 for hexes.
    pub fn nodes_per_element(&self) -> usize {
        self.nodes
    }

    /// Flat connectivity: `nodes_per_element()` 0-based vertex indices per element.
    pub fn connectivity(&self) -> &[usize] {
        &self.connectivity
    }

    /// The 0-based vertex indices of element `e`.
    pub fn element(&self, e: usize) -> &[usize] {
        &self.connectivity[e * self.nodes..(e + 1) * self.nodes]
    }

    /// Lame parameters (lambda, mu) of element e.
    pub fn lame(&self, e: usize) -> (f64, f64) {
        (self.lambda[e], self.mu[e])
    }

    /// Material group of element e: an index into [`Self::material_names`].
    pub fn material_group(&self, e: usize) -> usize {
        self.material[e]
    }

    /// Names of the material groups, indexed by [`Self::material_group`].
    pub fn material_names(&self) -> &[String] {
        &self.material_names
    }

    /// A copy whose Lame parameters are `lame(e)` for every element e (for example one
    /// group's lambda set to 1 and everything else to 0, to split the reduced
    /// polynomial into per-group lambda and mu parts).
    pub fn with_lame(&self, lame: impl Fn(usize) -> (f64, f64)) -> FemModel {
        let mut m = self.clone();
        for e in 0..m.num_elements() {
            let (l, mu) = lame(e);
            m.lambda[e] = l;
            m.mu[e] = mu;
        }
        m
    }

    /// An all-zero matrix with the model's stiffness pattern.
    pub fn new_matrix(&self) -> BlockSparseMatrix {
        let mut m = self.pattern.clone();
        m.fill_zero();
        m
    }

    /// Quadrature weights (times |det J|) and shape-function gradients dN_a/dX of element
    /// e: `weights[q]` and `gradients[q * nodes + a]`.
    pub fn quadrature(&self, e: usize) -> (&[f64], &[Vector3<f64>]) {
        let (nq, nn) = (self.nq, self.nodes);
        (
            &self.qw[e * nq..(e + 1) * nq],
            &self.qg[e * nq * nn..(e + 1) * nq * nn],
        )
    }

    fn gather(&self, e: usize, u: &[f64], out: &mut [Vector3<f64>; 8]) {
        for (a, &v) in self.element(e).iter().enumerate() {
            out[a] = Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2]);
        }
    }

    /// Element forces and (optionally) the local stiffness blocks.
    fn element_kernel(&self, e: usize, s: &mut ElementScratch, want_k: bool) {
        let nn = self.nodes;
        let (l, m) = (self.lambda[e], self.mu[e]);
        let (qw, qg) = self.quadrature(e);
        for a in 0..nn {
            s.f[a] = Vector3::zeros();
            if want_k {
                for b in 0..nn {
                    s.k[a][b] = Matrix3::zeros();
                }
            }
        }
        for (q, &w) in qw.iter().enumerate() {
            let g = &qg[q * nn..(q + 1) * nn];
            let mut grad_u = Matrix3::zeros();
            for a in 0..nn {
                grad_u += s.u[a] * g[a].transpose();
            }
            match self.law {
                MaterialLaw::StVK => {
                    let f = Matrix3::identity() + grad_u;
                    let sp = stvk::second_pk(&stvk::green_strain(&f), l, m);
                    let p = f * sp;
                    let mut fg = [Vector3::zeros(); 8];
                    for a in 0..nn {
                        s.f[a] += (p * g[a]) * w;
                        fg[a] = f * g[a];
                    }
                    if want_k {
                        let fft = f * f.transpose() * (w * m);
                        for a in 0..nn {
                            let sga = sp * g[a] * w;
                            for b in a..nn {
                                let geo = sga.dot(&g[b]);
                                let gg = g[a].dot(&g[b]);
                                let mut blk = fg[a] * fg[b].transpose() * (w * l)
                                    + fg[b] * fg[a].transpose() * (w * m)
                                    + fft * gg;
                                blk[(0, 0)] += geo;
                                blk[(1, 1)] += geo;
                                blk[(2, 2)] += geo;
                                s.k[a][b] += blk;
                            }
                        }
                    }
                }
                MaterialLaw::Linear => {
                    let p = stvk::linear_stress(&grad_u, l, m);
                    for a in 0..nn {
                        s.f[a] += (p * g[a]) * w;
                    }
                    if want_k {
                        for a in 0..nn {
                            for b in a..nn {
                                let gg = g[a].dot(&g[b]);
                                let mut blk = g[a] * g[b].transpose() * (w * l)
                                    + g[b] * g[a].transpose() * (w * m);
                                let d = gg * w * m;
                                blk[(0, 0)] += d;
                                blk[(1, 1)] += d;
                                blk[(2, 2)] += d;
                                s.k[a][b] += blk;
                            }
                        }
                    }
                }
            }
        }
        if want_k {
            for a in 0..nn {
                for b in 0..a {
                    s.k[a][b] = s.k[b][a].transpose();
                }
            }
        }
    }

    fn scatter_forces(&self, e: usize, s: &ElementScratch, f: &mut [f64]) {
        for (a, &v) in self.element(e).iter().enumerate() {
            f[3 * v] += s.f[a].x;
            f[3 * v + 1] += s.f[a].y;
            f[3 * v + 2] += s.f[a].z;
        }
    }

    fn scatter_stiffness(&self, e: usize, s: &ElementScratch, k: &mut BlockSparseMatrix) {
        let nn = self.nodes;
        let el = self.element(e);
        let map = &self.block_map[e * nn * nn..(e + 1) * nn * nn];
        for b in 0..nn {
            // Column vertex el[b]: the displacement the force responds to.
            let stride = k.column_stride(el[b]);
            for a in 0..nn {
                k.add_block(map[b * nn + a], stride, &s.k[a][b]);
            }
        }
    }

    /// Internal forces R(u) (overwrites `f`).
    pub fn internal_forces(&self, u: &[f64], f: &mut [f64]) {
        f.iter_mut().for_each(|v| *v = 0.0);
        let mut s = ElementScratch::new();
        for e in 0..self.num_elements() {
            self.gather(e, u, &mut s.u);
            self.element_kernel(e, &mut s, false);
            self.scatter_forces(e, &s, f);
        }
    }

    /// Internal forces R(u) and tangent stiffness K(u) in one pass (overwrites both).
    pub fn forces_and_stiffness(&self, u: &[f64], f: &mut [f64], k: &mut BlockSparseMatrix) {
        f.iter_mut().for_each(|v| *v = 0.0);
        k.fill_zero();
        let mut s = ElementScratch::new();
        for e in 0..self.num_elements() {
            self.gather(e, u, &mut s.u);
            self.element_kernel(e, &mut s, true);
            self.scatter_forces(e, &s, f);
            self.scatter_stiffness(e, &s, k);
        }
    }

    /// Tangent stiffness K(u) (overwrites `k`).
    pub fn tangent_stiffness(&self, u: &[f64], k: &mut BlockSparseMatrix) {
        let mut f = vec![0.0; self.num_dofs()];
        self.forces_and_stiffness(u, &mut f, k);
    }

    /// The stiffness Hessian contraction (H(u):v) w = d2R(u)[v, w], the derivative of
    /// K(u) w in direction v (symmetric in v and w). At u = 0 it is the right-hand side of
    /// the modal derivative equations, K Phi_ij = -(H:psi_i) psi_j (thesis 2.8.3).
    pub fn hessian_contraction(&self, u: &[f64], v: &[f64], w: &[f64], out: &mut [f64]) {
        out.iter_mut().for_each(|x| *x = 0.0);
        if self.law == MaterialLaw::Linear {
            return;
        }
        let nn = self.nodes;
        let (mut ue, mut ve, mut we) = (
            [Vector3::zeros(); 8],
            [Vector3::zeros(); 8],
            [Vector3::zeros(); 8],
        );
        for e in 0..self.num_elements() {
            self.gather(e, u, &mut ue);
            self.gather(e, v, &mut ve);
            self.gather(e, w, &mut we);
            let (l, m) = (self.lambda[e], self.mu[e]);
            let (qw, qg) = self.quadrature(e);
            let mut fe = [Vector3::zeros(); 8];
            for (q, &wq) in qw.iter().enumerate() {
                let g = &qg[q * nn..(q + 1) * nn];
                let (mut gu, mut gv, mut gw) =
                    (Matrix3::zeros(), Matrix3::zeros(), Matrix3::zeros());
                for a in 0..nn {
                    gu += ue[a] * g[a].transpose();
                    gv += ve[a] * g[a].transpose();
                    gw += we[a] * g[a].transpose();
                }
                let f = Matrix3::identity() + gu;
                let d2p = stvk::first_pk_second_differential(&f, &gv, &gw, l, m);
                for a in 0..nn {
                    fe[a] += d2p * g[a] * wq;
                }
            }
            for (a, &vtx) in self.element(e).iter().enumerate() {
                for i in 0..3 {
                    out[3 * vtx + i] += fe[a][i];
                }
            }
        }
    }

    /// Elastic energy of u (the integral of the StVK energy density, or of the linear
    /// strain energy), for finite-difference checks of R and energy monitors.
    pub fn strain_energy(&self, u: &[f64]) -> f64 {
        let nn = self.nodes;
        let mut ue = [Vector3::zeros(); 8];
        let mut total = 0.0;
        for e in 0..self.num_elements() {
            self.gather(e, u, &mut ue);
            let (l, m) = (self.lambda[e], self.mu[e]);
            let (qw, qg) = self.quadrature(e);
            for (q, &w) in qw.iter().enumerate() {
                let g = &qg[q * nn..(q + 1) * nn];
                let mut gu = Matrix3::zeros();
                for a in 0..nn {
                    gu += ue[a] * g[a].transpose();
                }
                total += w * match self.law {
                    MaterialLaw::StVK => stvk::energy_density(&(Matrix3::identity() + gu), l, m),
                    MaterialLaw::Linear => {
                        let eps = stvk::sym(&gu);
                        0.5 * l * eps.trace().powi(2) + m * (eps.transpose() * eps).trace()
                    }
                };
            }
        }
        total
    }

    /// The mass matrix: consistent (exact integrals of rho N_a N_b) or lumped (its row
    /// sums on the diagonal). Same pattern as the stiffness, so system matrices are
    /// formed by combining value arrays.
    pub fn mass_matrix(&self, kind: MassKind) -> BlockSparseMatrix {
        let mut mm = self.new_matrix();
        let nn = self.nodes;
        let lumped = kind == MassKind::Lumped;
        for e in 0..self.num_elements() {
            let local = self.element_mass(e);
            let el = self.element(e);
            let map = &self.block_map[e * nn * nn..(e + 1) * nn * nn];
            for b in 0..nn {
                let stride = mm.column_stride(el[b]);
                for a in 0..nn {
                    let (mab, off) = if lumped {
                        if a != b {
                            continue;
                        }
                        (
                            (0..nn).map(|c| local[a * nn + c]).sum::<f64>(),
                            map[b * nn + a],
                        )
                    } else {
                        (local[a * nn + b], map[b * nn + a])
                    };
                    for j in 0..3 {
                        mm.values[off + j * stride + j] += mab;
                    }
                }
            }
        }
        mm
    }

    /// Lumped mass per vertex (row sums of the consistent mass matrix).
    pub fn lumped_vertex_masses(&self) -> Vec<f64> {
        let nn = self.nodes;
        let mut out = vec![0.0; self.num_vertices()];
        for e in 0..self.num_elements() {
            let local = self.element_mass(e);
            for (a, &v) in self.element(e).iter().enumerate() {
                out[v] += (0..nn).map(|b| local[a * nn + b]).sum::<f64>();
            }
        }
        out
    }

    /// Scalar consistent element mass matrix rho int N_a N_b (row-major nodes x nodes).
    fn element_mass(&self, e: usize) -> Vec<f64> {
        let nn = self.nodes;
        let rho = self.density[e];
        let x: Vec<Point3<f64>> = self
            .element(e)
            .iter()
            .map(|&v| self.rest_positions[v])
            .collect();
        let mut m = vec![0.0; nn * nn];
        match self.kind {
            ElementKind::Tet => {
                let vol = tet_gradients(&x).1;
                for a in 0..4 {
                    for b in 0..4 {
                        m[a * 4 + b] = rho * vol / 20.0 * if a == b { 2.0 } else { 1.0 };
                    }
                }
            }
            ElementKind::Hex => {
                for (xi, w) in gauss_cube(2) {
                    let n = hex_shape(xi);
                    let dv = w * hex_jacobian(&x, xi).determinant() * rho;
                    for a in 0..8 {
                        for b in 0..8 {
                            m[a * 8 + b] += dv * n[a] * n[b];
                        }
                    }
                }
            }
        }
        m
    }

    /// Total rest volume (sum of the quadrature weights).
    pub fn rest_volume(&self) -> f64 {
        self.qw.iter().sum()
    }
}

/// Gradients of the barycentric coordinates of a linear tet, and its volume.
pub fn tet_gradients(x: &[Point3<f64>]) -> ([Vector3<f64>; 4], f64) {
    let dm = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
    let vol = dm.determinant() / 6.0;
    let inv = dm.try_inverse().unwrap_or_else(Matrix3::zeros);
    // Rows of Dm^-1 are the gradients of barycentric coordinates 1..3.
    let g1 = inv.row(0).transpose();
    let g2 = inv.row(1).transpose();
    let g3 = inv.row(2).transpose();
    ([-(g1 + g2 + g3), g1, g2, g3], vol)
}
