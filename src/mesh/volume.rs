//! Volumetric meshes of linear tetrahedra or trilinear hexahedra, with per-element
//! materials: the input of the finite element stage.
//!
//! Node orders follow Vega FEM.
//! - Tet `[v0, v1, v2, v3]`: positive when `(v1-v0) . ((v2-v0) x (v3-v0)) > 0`.
//! - Hex `[v0..v7]`: the corners of the reference cube `[0,1]^3` in the order
//!   (0,0,0) (1,0,0) (1,1,0) (0,1,0) (0,0,1) (1,0,1) (1,1,1) (0,1,1).

use nalgebra::{Matrix3, Point3, Vector3};

use super::error::ElementDefectKind;
use crate::mesh::Aabb;

/// The element type of a mesh (one type per mesh, as in Vega).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementKind {
    /// Linear tetrahedra, 4 nodes (Vega's `TET`).
    Tet,
    /// Trilinear hexahedra, 8 nodes (Vega's `CUBIC`; voxels).
    Hex,
}

impl ElementKind {
    /// Nodes per element: 4 for tets, 8 for hexes.
    pub fn nodes(self) -> usize {
        match self {
            ElementKind::Tet => 4,
            ElementKind::Hex => 8,
        }
    }

    /// The plural name for messages and manifests: "tetrahedra" or "hexahedra".
    pub fn name(self) -> &'static str {
        match self {
            ElementKind::Tet => "tetrahedra",
            ElementKind::Hex => "hexahedra",
        }
    }
}

/// Reference-cube corner coordinates of the hex nodes, in Vega's order.
pub const HEX_CORNERS: [[f64; 3]; 8] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 1.0, 0.0],
    [0.0, 0.0, 1.0],
    [1.0, 0.0, 1.0],
    [1.0, 1.0, 1.0],
    [0.0, 1.0, 1.0],
];

/// An isotropic material (Vega's ENU: density, Young's modulus, Poisson's ratio), SI units.
#[derive(Debug, Clone, PartialEq)]
pub struct Material {
    /// Its name: in a `.veg` file, the `*MATERIAL` name that `*REGION`s refer to.
    pub name: String,
    /// kg / m^3
    pub density: f64,
    /// Pa
    pub youngs_modulus: f64,
    /// Poisson's ratio nu (dimensionless, in (-1, 0.5)).
    pub poisson_ratio: f64,
}

impl Material {
    /// A material from density rho (kg/m^3), Young's modulus E (Pa) and Poisson's ratio
    /// nu; not validated (see [`Material::validate`]).
    pub fn new(name: &str, density: f64, youngs_modulus: f64, poisson_ratio: f64) -> Self {
        Material {
            name: name.to_string(),
            density,
            youngs_modulus,
            poisson_ratio,
        }
    }

    /// Checks the physical ranges: rho > 0, E > 0, -1 < nu < 0.5.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(format!("density must be positive, got {}", self.density));
        }
        if !(self.youngs_modulus.is_finite() && self.youngs_modulus > 0.0) {
            return Err(format!(
                "Young's modulus must be positive, got {}",
                self.youngs_modulus
            ));
        }
        if !(self.poisson_ratio > -1.0 && self.poisson_ratio < 0.5) {
            return Err(format!(
                "Poisson's ratio must lie in (-1, 0.5), got {}",
                self.poisson_ratio
            ));
        }
        Ok(())
    }

    /// Lame's first parameter lambda = nu E / ((1 + nu)(1 - 2 nu)).
    pub fn lambda(&self) -> f64 {
        let (e, nu) = (self.youngs_modulus, self.poisson_ratio);
        nu * e / ((1.0 + nu) * (1.0 - 2.0 * nu))
    }

    /// Shear modulus mu = E / (2 (1 + nu)).
    pub fn mu(&self) -> f64 {
        self.youngs_modulus / (2.0 * (1.0 + self.poisson_ratio))
    }
}

/// A volumetric mesh with one element type.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeMesh {
    /// Rest positions of the vertices (m).
    pub vertices: Vec<Point3<f64>>,
    /// The element type of every element.
    pub kind: ElementKind,
    /// Flat connectivity, `kind.nodes()` 0-based vertex indices per element.
    pub connectivity: Vec<usize>,
    /// The materials that `element_material` indexes.
    pub materials: Vec<Material>,
    /// Index into `materials` for every element.
    pub element_material: Vec<usize>,
}

/// An element that cannot be simulated, found by [`VolumeMesh::element_defects`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ElementDefect {
    /// 0-based element index.
    pub element: usize,
    /// Whether it is degenerate or inverted.
    pub kind: ElementDefectKind,
    /// Signed volume (tets) or smallest corner Jacobian determinant times the volume
    /// of the reference cube (hexes).
    pub measure: f64,
}

/// Volume statistics of a mesh, for `haptics inspect`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VolumeStats {
    /// Sum of the signed element volumes (m^3).
    pub total_volume: f64,
    /// Sum of element volume times density (kg).
    pub total_mass: f64,
    /// Smallest signed element volume (m^3); +inf for a mesh without elements.
    pub min_element_volume: f64,
    /// Largest signed element volume (m^3); -inf for a mesh without elements.
    pub max_element_volume: f64,
}

impl VolumeMesh {
    /// Number of elements.
    pub fn num_elements(&self) -> usize {
        self.connectivity.len() / self.kind.nodes()
    }

    /// The 0-based vertex indices of element `e`, in Vega's node order.
    pub fn element(&self, e: usize) -> &[usize] {
        let n = self.kind.nodes();
        &self.connectivity[e * n..(e + 1) * n]
    }

    /// The vertex indices of every element, in element order.
    pub fn elements(&self) -> std::slice::ChunksExact<'_, usize> {
        self.connectivity.chunks_exact(self.kind.nodes())
    }

    /// The material of element `e`.
    pub fn material_of(&self, e: usize) -> &Material {
        &self.materials[self.element_material[e]]
    }

    /// The bounding box of the vertices.
    pub fn bounding_box(&self) -> Aabb {
        Aabb::from_points(&self.vertices)
    }

    /// Number of degrees of freedom, 3 per vertex (the length of a displacement vector u).
    pub fn num_dofs(&self) -> usize {
        3 * self.vertices.len()
    }

    /// Signed volume of element `e` (tets exactly; hexes by 2x2x2 Gauss, exact for
    /// trilinear geometry).
    pub fn element_volume(&self, e: usize) -> f64 {
        let x: Vec<Point3<f64>> = self.element(e).iter().map(|&v| self.vertices[v]).collect();
        match self.kind {
            ElementKind::Tet => tet_signed_volume(&x[0], &x[1], &x[2], &x[3]),
            ElementKind::Hex => {
                let g = 0.5 / 3f64.sqrt();
                let mut vol = 0.0;
                for &a in &[0.5 - g, 0.5 + g] {
                    for &b in &[0.5 - g, 0.5 + g] {
                        for &c in &[0.5 - g, 0.5 + g] {
                            vol += 0.125 * hex_jacobian(&x, [a, b, c]).determinant();
                        }
                    }
                }
                vol
            }
        }
    }

    /// Elements whose volume (tets) or corner Jacobian (hexes) is non-positive or
    /// negligible relative to the mean element size. An inverted element has a negative
    /// measure; a degenerate one a measure below `1e-12` times the mean element volume.
    pub fn element_defects(&self) -> Vec<ElementDefect> {
        let n = self.num_elements();
        let measures: Vec<f64> = (0..n).map(|e| self.element_min_measure(e)).collect();
        let mean = measures.iter().map(|m| m.abs()).sum::<f64>() / n.max(1) as f64;
        let tiny = 1e-12 * mean;
        measures
            .iter()
            .enumerate()
            .filter_map(|(e, &m)| {
                let kind = if !m.is_finite() || m.abs() <= tiny {
                    ElementDefectKind::Degenerate
                } else if m < 0.0 {
                    ElementDefectKind::Inverted
                } else {
                    return None;
                };
                Some(ElementDefect {
                    element: e,
                    kind,
                    measure: m,
                })
            })
            .collect()
    }

    /// Tets: signed volume. Hexes: the smallest of the Jacobian determinants at the eight
    /// corners (a trilinear map is invertible when all are positive), as a volume.
    fn element_min_measure(&self, e: usize) -> f64 {
        match self.kind {
            ElementKind::Tet => self.element_volume(e),
            ElementKind::Hex => {
                let x: Vec<Point3<f64>> =
                    self.element(e).iter().map(|&v| self.vertices[v]).collect();
                HEX_CORNERS
                    .iter()
                    .map(|&c| hex_jacobian(&x, c).determinant())
                    .fold(f64::INFINITY, f64::min)
            }
        }
    }

    /// Total volume and mass, and the element volume range.
    pub fn volume_stats(&self) -> VolumeStats {
        let mut s = VolumeStats {
            total_volume: 0.0,
            total_mass: 0.0,
            min_element_volume: f64::INFINITY,
            max_element_volume: f64::NEG_INFINITY,
        };
        for e in 0..self.num_elements() {
            let v = self.element_volume(e);
            s.total_volume += v;
            s.total_mass += v * self.material_of(e).density;
            s.min_element_volume = s.min_element_volume.min(v);
            s.max_element_volume = s.max_element_volume.max(v);
        }
        s
    }

    /// Vertices referenced by no element.
    pub fn unused_vertices(&self) -> usize {
        let mut used = vec![false; self.vertices.len()];
        for &v in &self.connectivity {
            used[v] = true;
        }
        used.iter().filter(|u| !**u).count()
    }

    /// The boundary faces (triangles for tets; quads split in two for hexes), oriented
    /// outward: the faces used by exactly one element.
    pub fn boundary_triangles(&self) -> Vec<[usize; 3]> {
        // Outward-oriented faces of the reference elements.
        const TET_FACES: [[usize; 3]; 4] = [[0, 2, 1], [0, 1, 3], [1, 2, 3], [0, 3, 2]];
        const HEX_FACES: [[usize; 4]; 6] = [
            [0, 3, 2, 1],
            [4, 5, 6, 7],
            [0, 1, 5, 4],
            [3, 7, 6, 2],
            [0, 4, 7, 3],
            [1, 2, 6, 5],
        ];
        let mut faces: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
        for el in self.elements() {
            match self.kind {
                ElementKind::Tet => {
                    for f in TET_FACES {
                        let face: Vec<usize> = f.iter().map(|&i| el[i]).collect();
                        let mut key = face.clone();
                        key.sort_unstable();
                        faces.push((key, face));
                    }
                }
                ElementKind::Hex => {
                    for f in HEX_FACES {
                        let face: Vec<usize> = f.iter().map(|&i| el[i]).collect();
                        let mut key = face.clone();
                        key.sort_unstable();
                        faces.push((key, face));
                    }
                }
            }
        }
        faces.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        let mut i = 0;
        while i < faces.len() {
            let mut j = i + 1;
            while j < faces.len() && faces[j].0 == faces[i].0 {
                j += 1;
            }
            if j - i == 1 {
                let f = &faces[i].1;
                out.push([f[0], f[1], f[2]]);
                if f.len() == 4 {
                    out.push([f[0], f[2], f[3]]);
                }
            }
            i = j;
        }
        out
    }
}

/// Signed volume of a tetrahedron, positive for Vega's node order.
pub fn tet_signed_volume(
    a: &Point3<f64>,
    b: &Point3<f64>,
    c: &Point3<f64>,
    d: &Point3<f64>,
) -> f64 {
    (b - a).dot(&(c - a).cross(&(d - a))) / 6.0
}

/// Trilinear hex shape functions at reference coordinates `xi` in `[0,1]^3`.
pub fn hex_shape(xi: [f64; 3]) -> [f64; 8] {
    let mut n = [0.0; 8];
    for (a, c) in HEX_CORNERS.iter().enumerate() {
        n[a] = (0..3)
            .map(|k| if c[k] == 1.0 { xi[k] } else { 1.0 - xi[k] })
            .product();
    }
    n
}

/// Gradients of the trilinear hex shape functions with respect to the reference
/// coordinates `xi` in `[0,1]^3`.
pub fn hex_shape_gradients(xi: [f64; 3]) -> [Vector3<f64>; 8] {
    let mut g = [Vector3::zeros(); 8];
    for (a, c) in HEX_CORNERS.iter().enumerate() {
        let f: [f64; 3] = std::array::from_fn(|k| if c[k] == 1.0 { xi[k] } else { 1.0 - xi[k] });
        let s: [f64; 3] = std::array::from_fn(|k| if c[k] == 1.0 { 1.0 } else { -1.0 });
        g[a] = Vector3::new(s[0] * f[1] * f[2], f[0] * s[1] * f[2], f[0] * f[1] * s[2]);
    }
    g
}

/// Jacobian dX/dxi of the trilinear map of hex corners `x` at reference point `xi`.
pub fn hex_jacobian(x: &[Point3<f64>], xi: [f64; 3]) -> Matrix3<f64> {
    let g = hex_shape_gradients(xi);
    let mut j = Matrix3::zeros();
    for a in 0..8 {
        j += x[a].coords * g[a].transpose();
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_shape_partition_of_unity_and_gradient_fd() {
        let xi = [0.3, 0.7, 0.45];
        let n = hex_shape(xi);
        assert!((n.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        let g = hex_shape_gradients(xi);
        let h = 1e-6;
        for k in 0..3 {
            let mut p = xi;
            let mut m = xi;
            p[k] += h;
            m[k] -= h;
            let (np, nm) = (hex_shape(p), hex_shape(m));
            for a in 0..8 {
                // Central differences of a polynomial of degree 1 in xi[k] are exact up to
                // rounding: 1e-9 covers eps / h.
                assert!(((np[a] - nm[a]) / (2.0 * h) - g[a][k]).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn unit_cube_volume_and_boundary() {
        let vertices = HEX_CORNERS
            .iter()
            .map(|c| Point3::new(c[0], c[1], 2.0 * c[2]))
            .collect();
        let m = VolumeMesh {
            vertices,
            kind: ElementKind::Hex,
            connectivity: (0..8).collect(),
            materials: vec![Material::new("m", 1000.0, 1e6, 0.3)],
            element_material: vec![0],
        };
        assert!((m.element_volume(0) - 2.0).abs() < 1e-14);
        assert!(m.element_defects().is_empty());
        let tris = m.boundary_triangles();
        assert_eq!(tris.len(), 12);
        let surf = super::super::surface::SurfaceMesh {
            vertices: m.vertices.clone(),
            triangles: tris,
        };
        // Outward orientation gives a positive enclosed volume.
        assert!((surf.signed_volume() - 2.0).abs() < 1e-14);
    }

    #[test]
    fn inverted_tet_is_reported() {
        let m = VolumeMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(1.0, 0.0, 0.0),
                Point3::new(0.0, 1.0, 0.0),
                Point3::new(0.0, 0.0, 1.0),
            ],
            kind: ElementKind::Tet,
            connectivity: vec![0, 2, 1, 3],
            materials: vec![Material::new("m", 1000.0, 1e6, 0.3)],
            element_material: vec![0],
        };
        let d = m.element_defects();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, ElementDefectKind::Inverted);
    }
}
