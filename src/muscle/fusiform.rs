//! A fusiform (spindle-shaped) skeletal muscle as a trivariate NURBS solid, meshed with
//! tetrahedra, with a fibre direction per element and tendon material at both ends.
//!
//! What it computes. A solid X(u, v, w) on `[0, 1]^3` whose cross-sections `w = const`
//! are exact circles of radius r(w) centred on the x axis at `x = L w`:
//!
//! ```text
//! X(u, v, w) = (L w, r(w) d_x(u, v), r(w) d_y(u, v))
//! ```
//!
//! - The unit disc d(u, v) is the standard rational biquadratic disc (knots
//!   `{0,0,0,1,1,1}` in u and v): a 3 x 3 control net `d_ij = (s_i c_j, c_i s_j)` with
//!   `s = (-1, 0, 1)` and `c = (1/sqrt 2, sqrt 2, 1/sqrt 2)`, so the patch corners lie on
//!   the unit circle at 225, 315, 45 and 135 degrees, the edge-middle points at distance
//!   sqrt 2 on the axes, the centre at the origin, and weights `w_ij = w_i w_j` with
//!   `w = (1, 1/sqrt 2, 1)` (corners 1, edge middles 1/sqrt 2, centre 1/2). Each boundary
//!   edge is then the rational quadratic 90-degree arc (The NURBS Book, section 7.5), so
//!   the boundary is the circle exactly. Because the weights are a tensor product, the
//!   disc is `d = (sqrt 2 sin a(u) cos a(v), sqrt 2 cos a(u) sin a(v))` with
//!   `a(t) in [-pi/4, pi/4]` the angle along one arc; its Jacobian determinant is
//!   proportional to `cos(a(u) + a(v)) cos(a(u) - a(v)) >= 0`, zero only at the four
//!   patch corners (where two arcs meet at 180 degrees).
//! - Along the axis, a clamped cubic B-spline in w with [`AXIAL_CONTROL_LAYERS`] control
//!   layers on uniform knots. Layer k is the disc net scaled by a control radius `r_k`
//!   and placed at `x_k = L g_k`, with `g_k` the Greville abscissae; by the linear
//!   precision of B-splines `x(w) = L w` exactly, so the axial parameter is the fraction
//!   of the length. The control radii sample the spindle
//!   `rho(s) = r_t + (r_b - r_t) beta(s)`, `beta = sin^2(pi (s - f) / (1 - 2 f))` on the
//!   belly `f < s < 1 - f` and 0 on the tendons, rescaled so that the spline radius is
//!   `r_b` at mid-length; `r(0) = r(1) = r_t` because the knots are clamped. The weights
//!   do not vary along w, so every cross-section is an exact circle of radius
//!   `r(w) = sum_k N_k,3(w) r_k`.
//!
//! Meshing: a structured `n x n x m` grid in parameter space (u and v uniform; w with
//! `round(f m)` uniform cells on each tendon and the rest uniform on the belly, so the
//! tendon boundaries are grid layers) mapped through X; vertices numbered
//! `(i (n+1) + j)(m+1) + k`, k (along w) fastest, as in
//! [`crate::mesh::box_hex_mesh`]; each cell split into six tets by
//! [`hex_to_tets`] (Kuhn subdivision, conforming on such a grid). The end-face vertices
//! get x set to exactly 0 and L (the rational evaluation leaves the far face a few ulps
//! off). The map is
//! right-handed here ((u, v, w) go to (y, z, x)); if a solid were left-handed at the
//! centre of its domain every tet would be flipped the same way. Every tet must then
//! pass [`VolumeMesh::element_defects`].
//!
//! Fibres (Teran et al., "Finite volume methods for the simulation of skeletal muscle",
//! SCA 2003: fibre directions from the parametric direction of a B-spline solid along
//! the belly): per tet, `a = (dX/dw) / |dX/dw|` at the mean of its vertices' parameters,
//! oriented to +x. On the axis `a = e_x`; off the axis the fibres follow the lines
//! `u, v = const`, which keep the fraction of the radius `|d(u,v)|`, so they spread out
//! over the belly and converge toward the axis into the tendons. Materials: an element
//! whose centroid's axial parameter lies within `f` of either end is tendon (material 1),
//! the rest muscle (material 0). The tendon end faces (`w = 0` at `x = 0`, `w = 1` at
//! `x = L`) are the vertices to fix.
//!
//! Sources: Piegl and Tiller, *The NURBS Book* (2nd ed., 1997), the circle and the
//! evaluation algorithms ([`crate::geometry::nurbs`]); Zhou and Lu, "NURBS-based Galerkin
//! method and application to skeletal muscle modeling" (ACM SPM 2005), the muscle as a
//! trivariate NURBS solid; Teran et al. 2003 (above), the fibre field. The file layout is
//! in docs/muscle-geometry.md.

use std::path::{Path, PathBuf};

use nalgebra::{Point3, Vector3};

use crate::geometry::nurbs::{
    basis_functions, clamped_uniform_knots, find_span, greville_abscissae, NurbsError, NurbsSolid,
};
use crate::mesh::bou::write_bou;
use crate::mesh::error::{ElementDefectKind, MeshError};
use crate::mesh::fibres::{fibres_path, write_fibres};
use crate::mesh::veg::write_veg;
use crate::mesh::volume::{ElementKind, Material, VolumeMesh, HEX_CORNERS};
use crate::mesh::voxelize::hex_to_tets;

/// Control layers of the cubic B-spline along the muscle's axis (10 knot spans).
pub const AXIAL_CONTROL_LAYERS: usize = 13;

/// Degree of the B-spline along the axis.
pub const AXIAL_DEGREE: usize = 3;

/// The most tetrahedra [`fusiform_muscle`] builds (6 per grid cell).
pub const MAX_FUSIFORM_TETS: usize = 6_000_000;

/// Index of the muscle material in [`FusiformMuscle::mesh`]'s materials.
pub const MUSCLE_MATERIAL: usize = 0;

/// Index of the tendon material in [`FusiformMuscle::mesh`]'s materials.
pub const TENDON_MATERIAL: usize = 1;

/// The shape and discretization of a fusiform muscle (SI units).
#[derive(Debug, Clone, PartialEq)]
pub struct FusiformSpec {
    /// Length from tendon end to tendon end along x, m.
    pub length: f64,
    /// Radius at mid-length, m.
    pub belly_radius: f64,
    /// Radius at the two ends, m (at most the belly radius).
    pub tendon_radius: f64,
    /// Fraction of the length at each end that is tendon, in (0, 0.5).
    pub tendon_fraction: f64,
    /// Cells across the cross-section in each of u and v.
    pub cells_radial: usize,
    /// Cells along the axis (w).
    pub cells_axial: usize,
    /// Material of the belly (written to the .veg under its name; the muscle law reads it
    /// by name).
    pub muscle: Material,
    /// Material of the tendon and aponeurosis ends.
    pub tendon: Material,
}

impl Default for FusiformSpec {
    /// An 8 cm muscle, belly radius 12 mm, tendon radius 4 mm, 15 % tendon at each end,
    /// 6 x 6 x 24 cells; "muscle" with density 1060 kg/m^3, E = 3 kPa, nu = 0.45 and
    /// "tendon" with density 1060 kg/m^3, E = 1 MPa, nu = 0.45 (the E and nu are what the
    /// .veg format needs; the active muscle law lives elsewhere).
    fn default() -> Self {
        FusiformSpec {
            length: 0.08,
            belly_radius: 0.012,
            tendon_radius: 0.004,
            tendon_fraction: 0.15,
            cells_radial: 6,
            cells_axial: 24,
            muscle: Material::new("muscle", 1060.0, 3e3, 0.45),
            tendon: Material::new("tendon", 1060.0, 1e6, 0.45),
        }
    }
}

/// Why a fusiform muscle cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FusiformError {
    /// A field of [`FusiformSpec`] out of range.
    #[error("fusiform muscle: {field} = {value}: {reason}")]
    InvalidSpec {
        /// The field's name.
        field: &'static str,
        /// Its value, printed.
        value: String,
        /// What it must be.
        reason: String,
    },
    /// A material outside its physical range.
    #[error("fusiform muscle: invalid {role} material '{name}': {reason}")]
    InvalidMaterial {
        /// `"muscle"` or `"tendon"` (the field of the spec).
        role: &'static str,
        /// The material's name.
        name: String,
        /// From [`Material::validate`].
        reason: String,
    },
    /// The muscle and tendon materials share a name, so the .veg could not tell them
    /// apart.
    #[error("fusiform muscle: the muscle and tendon materials are both named '{0}'; they need distinct names")]
    SameMaterialName(String),
    /// More tets than [`MAX_FUSIFORM_TETS`].
    #[error("fusiform muscle: {cells_radial} x {cells_radial} x {cells_axial} cells make more than {limit} tetrahedra; use fewer cells")]
    TooLarge {
        /// Cells across.
        cells_radial: usize,
        /// Cells along.
        cells_axial: usize,
        /// [`MAX_FUSIFORM_TETS`].
        limit: usize,
    },
    /// The NURBS solid could not be built (a bug of this module if the spec is valid).
    #[error("fusiform muscle: {0}")]
    Nurbs(#[from] NurbsError),
    /// A tet with non-positive or negligible volume.
    #[error("fusiform muscle: tet {element} (0-based) is {kind}: signed volume {volume:e} m^3; use more or fewer radial cells")]
    BadElement {
        /// 0-based index of the first bad tet.
        element: usize,
        /// Degenerate or inverted.
        kind: ElementDefectKind,
        /// Its signed volume, m^3.
        volume: f64,
    },
    /// dX/dw vanishes or is not finite at a tet's centroid parameters.
    #[error("fusiform muscle: the fibre of tet {element} (0-based) is undefined: dX/dw = {derivative:?}")]
    DegenerateFibre {
        /// 0-based index of the tet.
        element: usize,
        /// The derivative found.
        derivative: [f64; 3],
    },
}

fn invalid(field: &'static str, value: impl ToString, reason: &str) -> FusiformError {
    FusiformError::InvalidSpec {
        field,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

impl FusiformSpec {
    /// Checks the ranges: positive finite lengths, `0 < tendon_radius <= belly_radius`,
    /// `0 < tendon_fraction < 0.5`, at least one radial cell, enough axial cells for a
    /// tendon cell at each end and a belly cell between, valid and distinct materials, and
    /// at most [`MAX_FUSIFORM_TETS`] tets.
    pub fn validate(&self) -> Result<(), FusiformError> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(self.length) {
            return Err(invalid(
                "length",
                self.length,
                "must be positive and finite",
            ));
        }
        if !positive(self.belly_radius) {
            return Err(invalid(
                "belly_radius",
                self.belly_radius,
                "must be positive and finite",
            ));
        }
        if !positive(self.tendon_radius) || self.tendon_radius > self.belly_radius {
            return Err(invalid(
                "tendon_radius",
                self.tendon_radius,
                &format!(
                    "must be positive and at most the belly radius {}",
                    self.belly_radius
                ),
            ));
        }
        if !(self.tendon_fraction > 0.0 && self.tendon_fraction < 0.5) {
            return Err(invalid(
                "tendon_fraction",
                self.tendon_fraction,
                "must lie in (0, 0.5): the fraction of the length at each end",
            ));
        }
        if self.cells_radial == 0 {
            return Err(invalid("cells_radial", 0, "must be at least 1"));
        }
        let nt = tendon_cells(self.cells_axial, self.tendon_fraction);
        if self.cells_axial < 2 * nt + 1 {
            return Err(invalid(
                "cells_axial",
                self.cells_axial,
                &format!(
                    "must be at least {} (one or more tendon cells at each end and a belly cell between)",
                    2 * nt + 1
                ),
            ));
        }
        let tets = self
            .cells_radial
            .checked_mul(self.cells_radial)
            .and_then(|c| c.checked_mul(self.cells_axial))
            .and_then(|c| c.checked_mul(6));
        if tets.is_none_or(|t| t > MAX_FUSIFORM_TETS) {
            return Err(FusiformError::TooLarge {
                cells_radial: self.cells_radial,
                cells_axial: self.cells_axial,
                limit: MAX_FUSIFORM_TETS,
            });
        }
        for (role, m) in [("muscle", &self.muscle), ("tendon", &self.tendon)] {
            m.validate()
                .map_err(|reason| FusiformError::InvalidMaterial {
                    role,
                    name: m.name.clone(),
                    reason,
                })?;
        }
        if self.muscle.name == self.tendon.name {
            return Err(FusiformError::SameMaterialName(self.muscle.name.clone()));
        }
        Ok(())
    }
}

/// The unit-disc control net: points `d_ij` (index `3 i + j`, i along u, j along v) and
/// weights `w_i w_j` (see the module documentation).
pub(crate) fn disc_control_net() -> ([[f64; 2]; 9], [f64; 9]) {
    let r = std::f64::consts::SQRT_2;
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let s = [-1.0, 0.0, 1.0];
    let c = [h, r, h];
    let points = std::array::from_fn(|n| {
        let (i, j) = (n / 3, n % 3);
        [s[i] * c[j], c[i] * s[j]]
    });
    // w_i w_j with w = (1, 1/sqrt 2, 1), the centre written as exactly 1/2 (the rounded
    // product (1/sqrt 2)^2 is one ulp above).
    let weights = [1.0, h, 1.0, h, 0.5, h, 1.0, h, 1.0];
    (points, weights)
}

/// The spindle shape `beta(s)` in [0, 1] at the axial fraction `s`: 0 on the tendons
/// (`s <= f` or `s >= 1 - f`), `sin^2(pi (s - f) / (1 - 2 f))` on the belly (1 at
/// mid-length, with zero slope where it meets the tendons).
pub(crate) fn spindle_shape(s: f64, tendon_fraction: f64) -> f64 {
    let f = tendon_fraction;
    if s <= f || s >= 1.0 - f {
        return 0.0;
    }
    let t = (std::f64::consts::PI * (s - f) / (1.0 - 2.0 * f)).sin();
    t * t
}

/// The control radii of the axial layers at the Greville abscissae `greville` (of the
/// knots `knots`): the spindle `r_t + (r_b - r_t) beta` with beta rescaled so that the
/// spline radius at mid-length is exactly the belly radius.
fn control_radii(spec: &FusiformSpec, knots: &[f64], greville: &[f64]) -> Vec<f64> {
    let beta: Vec<f64> = greville
        .iter()
        .map(|&g| spindle_shape(g, spec.tendon_fraction))
        .collect();
    let span = find_span(AXIAL_DEGREE, knots, 0.5);
    let n = basis_functions(span, 0.5, AXIAL_DEGREE, knots);
    let mid: f64 = (0..=AXIAL_DEGREE)
        .map(|a| n[a] * beta[span - AXIAL_DEGREE + a])
        .sum();
    // mid > 0: the layer at g = 1/2 has beta = 1 and a positive basis weight there.
    let (rt, rb) = (spec.tendon_radius, spec.belly_radius);
    beta.iter().map(|b| rt + (rb - rt) * b / mid).collect()
}

/// The NURBS solid of the muscle (module documentation): degrees (2, 2, 3), 3 x 3 x
/// [`AXIAL_CONTROL_LAYERS`] control points, u and v across, w along the x axis from
/// `x = 0` (w = 0) to `x = length` (w = 1).
pub fn fusiform_solid(spec: &FusiformSpec) -> Result<NurbsSolid, FusiformError> {
    spec.validate()?;
    let (disc, disc_w) = disc_control_net();
    let m = AXIAL_CONTROL_LAYERS;
    let kw = clamped_uniform_knots(AXIAL_DEGREE, m);
    let g = greville_abscissae(AXIAL_DEGREE, &kw);
    let radii = control_radii(spec, &kw, &g);
    let mut points = Vec::with_capacity(9 * m);
    let mut weights = Vec::with_capacity(9 * m);
    for (d, &w) in disc.iter().zip(&disc_w) {
        for (&gk, &rk) in g.iter().zip(&radii) {
            points.push(Point3::new(spec.length * gk, rk * d[0], rk * d[1]));
            weights.push(w);
        }
    }
    let quad = vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
    Ok(NurbsSolid::new(
        [2, 2, AXIAL_DEGREE],
        [3, 3, m],
        [quad.clone(), quad, kw],
        &points,
        &weights,
    )?)
}

/// Axial cells on each tendon: `round(f m)`, at least 1.
fn tendon_cells(cells_axial: usize, tendon_fraction: f64) -> usize {
    let nt = (tendon_fraction * cells_axial as f64).round();
    if nt.is_finite() && nt >= 1.0 {
        nt as usize
    } else {
        1
    }
}

/// The axial grid layers in w: `nt` uniform cells on each tendon `[0, f]`, `[1 - f, 1]`
/// and the rest uniform on the belly. Requires `cells >= 2 nt + 1`.
fn axial_layers(cells: usize, f: f64) -> Vec<f64> {
    let nt = tendon_cells(cells, f);
    let belly = cells - 2 * nt;
    (0..=cells)
        .map(|k| {
            if k <= nt {
                f * k as f64 / nt as f64
            } else if k < nt + belly {
                f + (1.0 - 2.0 * f) * (k - nt) as f64 / belly as f64
            } else {
                1.0 - f * (cells - k) as f64 / nt as f64
            }
        })
        .collect()
}

/// `n` uniform cells on [0, 1] (the last layer exactly 1).
fn uniform_layers(n: usize) -> Vec<f64> {
    (0..=n).map(|i| i as f64 / n as f64).collect()
}

/// A tet mesh of a NURBS solid on the grid `layers[0] x layers[1] x layers[2]` of
/// parameters: the mesh (one placeholder material, index 0 everywhere) and each vertex's
/// parameters. Tets are flipped if the solid is left-handed at the centre of the grid
/// (check them with [`check_tets`]).
fn mesh_solid(
    solid: &NurbsSolid,
    layers: &[Vec<f64>; 3],
    material: Material,
) -> Result<(VolumeMesh, Vec<[f64; 3]>), FusiformError> {
    let [a, b, c] = [layers[0].len(), layers[1].len(), layers[2].len()];
    let mut params = Vec::with_capacity(a * b * c);
    for &u in &layers[0] {
        for &v in &layers[1] {
            for &w in &layers[2] {
                params.push([u, v, w]);
            }
        }
    }
    let vertices = params
        .iter()
        .map(|&[u, v, w]| solid.evaluate(u, v, w))
        .collect();
    let (nu, nv, nw) = (a - 1, b - 1, c - 1);
    let mut connectivity = Vec::with_capacity(8 * nu * nv * nw);
    for i in 0..nu {
        for j in 0..nv {
            for k in 0..nw {
                for corner in HEX_CORNERS {
                    let (x, y, z) = (
                        i + corner[0] as usize,
                        j + corner[1] as usize,
                        k + corner[2] as usize,
                    );
                    connectivity.push((x * b + y) * c + z);
                }
            }
        }
    }
    let hex = VolumeMesh {
        vertices,
        kind: ElementKind::Hex,
        connectivity,
        materials: vec![material],
        element_material: vec![0; nu * nv * nw],
    };
    let mut mesh = hex_to_tets(&hex);
    let mid = |l: &Vec<f64>| 0.5 * (l[0] + l[l.len() - 1]);
    let centre = [mid(&layers[0]), mid(&layers[1]), mid(&layers[2])];
    if solid
        .jacobian(centre[0], centre[1], centre[2])
        .determinant()
        < 0.0
    {
        for tet in mesh.connectivity.chunks_exact_mut(4) {
            tet.swap(1, 2);
        }
    }
    Ok((mesh, params))
}

/// The first inverted or degenerate tet ([`VolumeMesh::element_defects`]) as an error.
fn check_tets(mesh: &VolumeMesh) -> Result<(), FusiformError> {
    match mesh.element_defects().first() {
        Some(d) => Err(FusiformError::BadElement {
            element: d.element,
            kind: d.kind,
            volume: d.measure,
        }),
        None => Ok(()),
    }
}

/// The mean of the parameters of a tet's vertices.
fn centroid_parameters(tet: &[usize], params: &[[f64; 3]]) -> [f64; 3] {
    std::array::from_fn(|d| tet.iter().map(|&v| params[v][d]).sum::<f64>() / tet.len() as f64)
}

/// The unit fibre direction `dX/dw / |dX/dw|` of `solid` at `(u, v, w)`, oriented so that
/// its x component is not negative; `None` where dX/dw vanishes or is not finite.
pub(crate) fn fibre_direction(solid: &NurbsSolid, u: f64, v: f64, w: f64) -> Option<Vector3<f64>> {
    let (_, d) = solid.derivatives(u, v, w);
    let n = d[2].norm();
    if !(n.is_finite() && n > 0.0) {
        return None;
    }
    let a = d[2] / n;
    Some(if a.x < 0.0 { -a } else { a })
}

/// A meshed fusiform muscle: see [`fusiform_muscle`].
#[derive(Debug, Clone, PartialEq)]
pub struct FusiformMuscle {
    /// Linear tets, materials `[muscle, tendon]` ([`MUSCLE_MATERIAL`],
    /// [`TENDON_MATERIAL`]), positively oriented.
    pub mesh: VolumeMesh,
    /// One unit fibre direction per tet, in element order, pointing +x (rest
    /// configuration).
    pub fibres: Vec<Vector3<f64>>,
    /// The parameters (u, v, w) of every vertex: `mesh.vertices[i] = solid.evaluate(..)`
    /// (on the end faces with x set to exactly 0 and the length).
    pub parameters: Vec<[f64; 3]>,
    /// The vertices of the tendon end faces, ascending: (at w = 0, x = 0; at w = 1,
    /// x = length).
    pub end_faces: (Vec<usize>, Vec<usize>),
    /// The NURBS solid the mesh samples.
    pub solid: NurbsSolid,
}

/// The files [`FusiformMuscle::write`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuscleFiles {
    /// The mesh (`NAME.veg`).
    pub veg: PathBuf,
    /// The fibre field (`NAME.fibres`, docs/muscle-geometry.md).
    pub fibres: PathBuf,
    /// Both tendon end faces as fixed vertices (`NAME.bou`).
    pub bou: PathBuf,
}

/// Builds the fusiform muscle of `spec`: its NURBS solid ([`fusiform_solid`]), a tet
/// mesh of it, the fibre field, the tendon material at both ends and the end faces (see
/// the module documentation).
pub fn fusiform_muscle(spec: &FusiformSpec) -> Result<FusiformMuscle, FusiformError> {
    let solid = fusiform_solid(spec)?;
    let f = spec.tendon_fraction;
    let layers = [
        uniform_layers(spec.cells_radial),
        uniform_layers(spec.cells_radial),
        axial_layers(spec.cells_axial, f),
    ];
    let (mut mesh, parameters) = mesh_solid(&solid, &layers, spec.muscle.clone())?;
    // The end faces exactly at x = 0 and x = length: the rational evaluation leaves the
    // far one a few ulps off (sum of N w L over sum of N w).
    for (p, x) in parameters.iter().zip(mesh.vertices.iter_mut()) {
        if p[2] == 0.0 {
            x.x = 0.0;
        } else if p[2] == 1.0 {
            x.x = spec.length;
        }
    }
    check_tets(&mesh)?;
    mesh.materials = vec![spec.muscle.clone(), spec.tendon.clone()];
    let mut fibres = Vec::with_capacity(mesh.num_elements());
    for (e, tet) in mesh.connectivity.chunks_exact(4).enumerate() {
        let [u, v, w] = centroid_parameters(tet, &parameters);
        mesh.element_material[e] = if w < f || w > 1.0 - f {
            TENDON_MATERIAL
        } else {
            MUSCLE_MATERIAL
        };
        let a = fibre_direction(&solid, u, v, w).ok_or_else(|| {
            let (_, d) = solid.derivatives(u, v, w);
            FusiformError::DegenerateFibre {
                element: e,
                derivative: [d[2].x, d[2].y, d[2].z],
            }
        })?;
        fibres.push(a);
    }
    let end = |w: f64| -> Vec<usize> {
        (0..parameters.len())
            .filter(|&i| parameters[i][2] == w)
            .collect()
    };
    let end_faces = (end(0.0), end(1.0));
    Ok(FusiformMuscle {
        mesh,
        fibres,
        parameters,
        end_faces,
        solid,
    })
}

impl FusiformMuscle {
    /// The vertices of both end faces, ascending (the tendon ends to fix).
    pub fn fixed_vertices(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .end_faces
            .0
            .iter()
            .chain(&self.end_faces.1)
            .copied()
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Writes the mesh to `veg_path` (which must end in `.veg`) with
    /// [`write_veg`], the fibres beside it (same stem, `.fibres`, see
    /// [`crate::mesh::fibres`]) and the fixed end vertices (same stem, `.bou`), each
    /// atomically.
    pub fn write(&self, veg_path: &Path) -> Result<MuscleFiles, MeshError> {
        if !veg_path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("veg"))
        {
            return Err(MeshError::Unsupported {
                path: veg_path.to_path_buf(),
                what: "a muscle mesh path without the .veg extension (the .fibres and .bou files beside it take its stem)".into(),
            });
        }
        let files = MuscleFiles {
            veg: veg_path.to_path_buf(),
            fibres: fibres_path(veg_path),
            bou: veg_path.with_extension("bou"),
        };
        write_veg(&files.veg, &self.mesh)?;
        write_fibres(&files.fibres, &self.fibres)?;
        write_bou(&files.bou, &self.fixed_vertices())?;
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::nurbs::Direction;
    use crate::mesh::fibres::read_fibres;
    use crate::mesh::{bou::read_bou, veg::read_veg};

    /// 4-point Gauss-Legendre nodes on [0, 1] and weights (exact for degree 7).
    fn gauss4() -> [(f64, f64); 4] {
        let a = (3.0 / 7.0 - 2.0 / 7.0 * (6.0f64 / 5.0).sqrt()).sqrt();
        let b = (3.0 / 7.0 + 2.0 / 7.0 * (6.0f64 / 5.0).sqrt()).sqrt();
        let wa = (18.0 + 30f64.sqrt()) / 36.0;
        let wb = (18.0 - 30f64.sqrt()) / 36.0;
        [
            (0.5 - 0.5 * b, 0.5 * wb),
            (0.5 - 0.5 * a, 0.5 * wa),
            (0.5 + 0.5 * a, 0.5 * wa),
            (0.5 + 0.5 * b, 0.5 * wb),
        ]
    }

    /// The unit disc extruded to z in [0, 1] (degree 1 along w).
    fn disc_solid() -> NurbsSolid {
        let (d, w) = disc_control_net();
        let mut pts = Vec::new();
        let mut ws = Vec::new();
        for n in 0..9 {
            for z in [0.0, 1.0] {
                pts.push(Point3::new(d[n][0], d[n][1], z));
                ws.push(w[n]);
            }
        }
        let q = vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        NurbsSolid::new(
            [2, 2, 1],
            [3, 3, 2],
            [q.clone(), q, vec![0.0, 0.0, 1.0, 1.0]],
            &pts,
            &ws,
        )
        .unwrap()
    }

    #[test]
    fn disc_net_is_the_standard_one() {
        let (d, w) = disc_control_net();
        let h = std::f64::consts::FRAC_1_SQRT_2;
        // Corners on the unit circle at 225, 315, 135, 45 degrees.
        for n in [0, 2, 6, 8] {
            assert!(((d[n][0].powi(2) + d[n][1].powi(2)).sqrt() - 1.0).abs() < 1e-15);
            assert!((d[n][0].abs() - h).abs() < 1e-16 && (d[n][1].abs() - h).abs() < 1e-16);
            assert_eq!(w[n], 1.0);
        }
        assert_eq!(d[0], [-h, -h]);
        assert_eq!(d[8], [h, h]);
        // Edge middles at distance sqrt 2 on the axes, weight 1/sqrt 2; centre weight 1/2.
        for n in [1, 3, 5, 7] {
            assert!(((d[n][0].abs() + d[n][1].abs()) - 2f64.sqrt()).abs() < 1e-15);
            assert!(d[n][0] == 0.0 || d[n][1] == 0.0);
            assert!((w[n] - h).abs() < 1e-16);
        }
        assert_eq!(d[4], [0.0, 0.0]);
        assert_eq!(w[4], 0.5);
        // Tensor-product weights w_i w_j, w = (1, 1/sqrt 2, 1).
        let wi = [1.0, h, 1.0];
        for n in 0..9 {
            assert!((w[n] - wi[n / 3] * wi[n % 3]).abs() <= f64::EPSILON);
        }
    }

    #[test]
    fn disc_boundary_is_the_unit_circle_and_its_area_is_pi() {
        let s = disc_solid();
        for t in 0..=200 {
            let a = t as f64 / 200.0;
            for (u, v) in [(a, 0.0), (a, 1.0), (0.0, a), (1.0, a)] {
                let p = s.evaluate(u, v, 0.5);
                assert!(
                    ((p.x * p.x + p.y * p.y).sqrt() - 1.0).abs() < 1e-12,
                    "({u},{v})"
                );
            }
        }
        // The edges cover the four quadrants: the middle of the edge v = 0 is (0, -1).
        let p = s.evaluate(0.5, 0.0, 0.0);
        assert!((p - Point3::new(0.0, -1.0, 0.0)).norm() < 1e-15);
        // Area by Gauss quadrature of the Jacobian (exact circle: pi), and the Jacobian
        // is positive inside.
        let mut area = 0.0;
        let n = 16;
        for i in 0..n {
            for j in 0..n {
                for (a, wa) in gauss4() {
                    for (b, wb) in gauss4() {
                        let (u, v) = ((i as f64 + a) / n as f64, (j as f64 + b) / n as f64);
                        let det = s.jacobian(u, v, 0.5).determinant();
                        assert!(det > 0.0);
                        area += wa * wb * det / (n * n) as f64;
                    }
                }
            }
        }
        assert!((area - std::f64::consts::PI).abs() < 1e-9, "area {area}");
    }

    #[test]
    fn axis_radius_and_cross_sections() {
        let spec = FusiformSpec::default();
        let s = fusiform_solid(&spec).unwrap();
        let radius = |w: f64| {
            let p = s.evaluate(0.5, 0.0, w);
            (p.y * p.y + p.z * p.z).sqrt()
        };
        for t in 0..=100 {
            let w = t as f64 / 100.0;
            // Linear precision: x = L w; the axis u = v = 1/2 is the x axis.
            let c = s.evaluate(0.5, 0.5, w);
            assert!((c.x - spec.length * w).abs() < 1e-16, "w {w}");
            // Zero up to rounding of the cancelling terms (~eps times the radius).
            let tiny = 1e-15 * spec.belly_radius;
            assert!(c.y.abs() < tiny && c.z.abs() < tiny, "{c}");
            // Every cross-section is a circle of radius r(w).
            let r = radius(w);
            for q in 0..=20 {
                let a = q as f64 / 20.0;
                for (u, v) in [(a, 0.0), (a, 1.0), (0.0, a), (1.0, a)] {
                    let p = s.evaluate(u, v, w);
                    assert!((p.x - c.x).abs() < 1e-16);
                    assert!(((p.y * p.y + p.z * p.z).sqrt() - r).abs() < 1e-12 * r);
                }
            }
            // Symmetric about mid-length, increasing toward it.
            assert!((radius(1.0 - w) - r).abs() < 1e-15);
            if w < 0.5 {
                assert!(radius(w + 0.01) >= r - 1e-15);
            }
        }
        assert!((radius(0.0) - spec.tendon_radius).abs() < 1e-15);
        assert!((radius(1.0) - spec.tendon_radius).abs() < 1e-15);
        assert!((radius(0.5) - spec.belly_radius).abs() < 1e-14);
        // Thin over the tendons: within 25 % of the tendon radius on the outer half.
        assert!(radius(0.5 * spec.tendon_fraction) < 1.25 * spec.tendon_radius);
    }

    #[test]
    fn default_mesh_is_valid_with_positive_tets() {
        let spec = FusiformSpec::default();
        let m = fusiform_muscle(&spec).unwrap();
        let (n, a) = (spec.cells_radial, spec.cells_axial);
        assert_eq!(m.mesh.kind, ElementKind::Tet);
        assert_eq!(m.mesh.vertices.len(), (n + 1) * (n + 1) * (a + 1));
        assert_eq!(m.mesh.num_elements(), 6 * n * n * a);
        assert_eq!(m.parameters.len(), m.mesh.vertices.len());
        assert_eq!(m.fibres.len(), m.mesh.num_elements());
        assert_eq!(m.mesh.unused_vertices(), 0);
        assert!(m.mesh.element_defects().is_empty());
        for e in 0..m.mesh.num_elements() {
            assert!(m.mesh.element_volume(e) > 0.0, "tet {e}");
        }
        assert_eq!(m.mesh.materials[MUSCLE_MATERIAL].name, "muscle");
        assert_eq!(m.mesh.materials[TENDON_MATERIAL].name, "tendon");
        for (p, x) in m.parameters.iter().zip(&m.mesh.vertices) {
            // Equal, but for the end faces' x set exactly (a few ulps).
            assert!(
                (x - m.solid.evaluate(p[0], p[1], p[2])).norm() <= 4.0 * f64::EPSILON * spec.length
            );
        }
        // Conforming: the boundary is a closed surface enclosing the mesh's volume.
        let surf = crate::mesh::SurfaceMesh {
            vertices: m.mesh.vertices.clone(),
            triangles: m.mesh.boundary_triangles(),
        };
        let vol = m.mesh.volume_stats().total_volume;
        assert!((surf.signed_volume() - vol).abs() < 1e-12 * vol);
        // Boundary: 4 n quads around times a cells along, times 2, plus both ends.
        assert_eq!(surf.triangles.len(), 2 * (4 * n * a + 2 * n * n));
    }

    #[test]
    fn mesh_volume_is_within_two_percent_of_the_solid() {
        let spec = FusiformSpec::default();
        let m = fusiform_muscle(&spec).unwrap();
        let s = &m.solid;
        // (1) The solid's volume by Gauss quadrature of det dX/d(u,v,w) on a 12 x 12 x 40
        // grid (the 40 axial cells align with the 10 knot spans).
        let (nr, na) = (12, 40);
        let mut jac_volume = 0.0;
        for i in 0..nr {
            for j in 0..nr {
                for k in 0..na {
                    for (a, wa) in gauss4() {
                        for (b, wb) in gauss4() {
                            for (c, wc) in gauss4() {
                                let u = (i as f64 + a) / nr as f64;
                                let v = (j as f64 + b) / nr as f64;
                                let w = (k as f64 + c) / na as f64;
                                let det = s.jacobian(u, v, w).determinant();
                                jac_volume += wa * wb * wc * det;
                            }
                        }
                    }
                }
            }
        }
        jac_volume /= (nr * nr * na) as f64;
        // (2) The integral of pi r(x)^2 dx: r^2 is a polynomial of degree 6 on each knot
        // span, so 4-point Gauss per span is exact.
        let mut disc_volume = 0.0;
        for k in 0..na {
            for (c, wc) in gauss4() {
                let w = (k as f64 + c) / na as f64;
                let p = s.evaluate(0.5, 0.0, w);
                disc_volume += wc * std::f64::consts::PI * (p.y * p.y + p.z * p.z);
            }
        }
        disc_volume *= spec.length / na as f64;
        assert!(
            (jac_volume - disc_volume).abs() < 1e-9 * disc_volume,
            "{jac_volume} vs {disc_volume}"
        );
        // The tets are inscribed (chords of the circles): slightly smaller.
        let tet_volume = m.mesh.volume_stats().total_volume;
        let rel = (disc_volume - tet_volume) / disc_volume;
        assert!(
            rel > 0.0 && rel < 0.02,
            "tets {tet_volume} solid {disc_volume} ({rel})"
        );
    }

    #[test]
    fn fibres_are_unit_point_along_x_and_converge_into_the_tendons() {
        let spec = FusiformSpec::default();
        let m = fusiform_muscle(&spec).unwrap();
        let s = &m.solid;
        // On the axis: along x.
        for t in 0..=50 {
            let a = fibre_direction(s, 0.5, 0.5, t as f64 / 50.0).unwrap();
            assert!((a - Vector3::x()).norm() < 1e-14);
        }
        let radius = |w: f64| {
            let p = s.evaluate(0.5, 0.0, w);
            (p.y * p.y + p.z * p.z).sqrt()
        };
        let (mut toward_0, mut toward_1, mut max_tilt) = (0, 0, 0.0f64);
        for (e, a) in m.fibres.iter().enumerate() {
            assert!((a.norm() - 1.0).abs() < 1e-14);
            assert!(a.x > 0.0);
            let tet = m.mesh.element(e);
            let [u, v, w] = centroid_parameters(tet, &m.parameters);
            let p = s.evaluate(u, v, w);
            let radial = Vector3::new(0.0, p.y, p.z);
            let rho = radial.norm();
            if rho < 1e-12 {
                continue;
            }
            let er = radial / rho;
            // The fibre lies in the plane of the axis and the point (no twist).
            assert!(a.dot(&Vector3::x().cross(&er)).abs() < 1e-12);
            // Its tilt is the slope of the line u, v = const, which keeps rho / r(x):
            // tan = rho r'(x) / r(x), r' by a central difference (h = 1e-6 in w;
            // truncation ~h^2 r''' and rounding ~eps r / h are both below 1e-9 of r').
            let h = 1e-6;
            let drdx = (radius(w + h) - radius(w - h)) / (2.0 * h * spec.length);
            let tan = a.dot(&er) / a.x;
            assert!((tan - rho * drdx / radius(w)).abs() < 1e-7, "tet {e}");
            // Toward each end the fibres run inward: they converge toward the axis.
            if w < 0.45 {
                assert!(a.dot(&er) >= -1e-15, "tet {e} at w {w}");
                toward_0 += usize::from(a.dot(&er) > 1e-3);
            } else if w > 0.55 {
                assert!(a.dot(&er) <= 1e-15, "tet {e} at w {w}");
                toward_1 += usize::from(a.dot(&er) < -1e-3);
            }
            max_tilt = max_tilt.max(a.dot(&er).abs().asin().to_degrees());
        }
        assert!(toward_0 > 0 && toward_1 > 0 && toward_0 == toward_1);
        // Off-axis fibres in the taper are visibly oblique (about 20 degrees at the
        // surface for this spindle).
        assert!(
            max_tilt > 10.0 && max_tilt < 45.0,
            "max tilt {max_tilt} degrees"
        );
    }

    #[test]
    fn tendon_elements_only_near_the_ends() {
        let spec = FusiformSpec::default();
        let m = fusiform_muscle(&spec).unwrap();
        let (l, f) = (spec.length, spec.tendon_fraction);
        let tol = 1e-15;
        let (mut tendon, mut muscle) = (0, 0);
        for (e, tet) in m.mesh.elements().enumerate() {
            let xs: Vec<f64> = tet.iter().map(|&v| m.mesh.vertices[v].x).collect();
            let (lo, hi) = xs
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            if m.mesh.element_material[e] == TENDON_MATERIAL {
                tendon += 1;
                assert!(hi <= f * l + tol || lo >= (1.0 - f) * l - tol, "tet {e}");
            } else {
                muscle += 1;
                assert!(lo >= f * l - tol && hi <= (1.0 - f) * l + tol, "tet {e}");
            }
        }
        let n = spec.cells_radial;
        let nt = tendon_cells(spec.cells_axial, f);
        assert_eq!(tendon, 2 * 6 * n * n * nt);
        assert_eq!(muscle, m.mesh.num_elements() - tendon);
    }

    #[test]
    fn end_faces_are_planar_at_both_ends() {
        let spec = FusiformSpec::default();
        let m = fusiform_muscle(&spec).unwrap();
        let face = (spec.cells_radial + 1).pow(2);
        let (a, b) = &m.end_faces;
        assert_eq!((a.len(), b.len()), (face, face));
        for &v in a {
            assert_eq!(m.mesh.vertices[v].x, 0.0);
        }
        for &v in b {
            assert_eq!(m.mesh.vertices[v].x, spec.length);
        }
        // They are exactly the vertices at the extreme x.
        let near = |x: f64, t: f64| (x - t).abs() < 1e-3 * spec.length;
        let ends = m
            .mesh
            .vertices
            .iter()
            .filter(|p| near(p.x, 0.0) || near(p.x, spec.length))
            .count();
        assert_eq!(ends, 2 * face);
        assert_eq!(m.fixed_vertices().len(), 2 * face);
    }

    #[test]
    fn a_left_handed_solid_is_meshed_with_flipped_tets() {
        // The disc solid mirrored in x: left-handed.
        let s = disc_solid();
        let [a, b, c] = s.counts();
        let mut pts = Vec::new();
        let mut ws = Vec::new();
        for i in 0..a {
            for j in 0..b {
                for k in 0..c {
                    let (p, w) = s.control_point(i, j, k).unwrap();
                    pts.push(Point3::new(-p.x, p.y, p.z));
                    ws.push(w);
                }
            }
        }
        let knots = Direction::ALL.map(|d| s.knots(d).to_vec());
        let mirrored = NurbsSolid::new(s.degrees(), s.counts(), knots, &pts, &ws).unwrap();
        assert!(mirrored.jacobian(0.5, 0.5, 0.5).determinant() < 0.0);
        let layers = [uniform_layers(4), uniform_layers(4), uniform_layers(2)];
        let mat = Material::new("m", 1000.0, 1e5, 0.3);
        let (mesh, _) = mesh_solid(&mirrored, &layers, mat).unwrap();
        assert_eq!(check_tets(&mesh), Ok(()));
        let vol = mesh.volume_stats().total_volume;
        assert!(vol > 0.9 * std::f64::consts::PI && vol < std::f64::consts::PI);
    }

    #[test]
    fn a_flat_solid_is_a_typed_error() {
        // The disc solid with every z set to 0: all tets are flat.
        let s = disc_solid();
        let [a, b, c] = s.counts();
        let mut pts = Vec::new();
        let mut ws = Vec::new();
        for i in 0..a {
            for j in 0..b {
                for k in 0..c {
                    let (p, w) = s.control_point(i, j, k).unwrap();
                    pts.push(Point3::new(p.x, p.y, 0.0));
                    ws.push(w);
                }
            }
        }
        let knots = Direction::ALL.map(|d| s.knots(d).to_vec());
        let flat = NurbsSolid::new(s.degrees(), s.counts(), knots, &pts, &ws).unwrap();
        let layers = [uniform_layers(2), uniform_layers(2), uniform_layers(1)];
        let (mesh, _) = mesh_solid(&flat, &layers, Material::new("m", 1.0, 1.0, 0.3)).unwrap();
        let e = check_tets(&mesh).unwrap_err();
        assert!(
            matches!(
                e,
                FusiformError::BadElement {
                    element: 0,
                    kind: ElementDefectKind::Degenerate,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("tet 0 (0-based) is degenerate"),
            "{e}"
        );
    }

    #[test]
    fn spec_errors_are_typed() {
        let ok = FusiformSpec::default();
        assert_eq!(ok.validate(), Ok(()));
        let check = |s: FusiformSpec, field: &str| {
            let e = fusiform_muscle(&s).unwrap_err();
            assert!(
                matches!(&e, FusiformError::InvalidSpec { field: f, .. } if *f == field),
                "{e}"
            );
            assert!(e.to_string().contains(field), "{e}");
        };
        check(
            FusiformSpec {
                length: -1.0,
                ..ok.clone()
            },
            "length",
        );
        check(
            FusiformSpec {
                belly_radius: f64::NAN,
                ..ok.clone()
            },
            "belly_radius",
        );
        check(
            FusiformSpec {
                tendon_radius: 0.02,
                ..ok.clone()
            },
            "tendon_radius",
        );
        check(
            FusiformSpec {
                tendon_fraction: 0.5,
                ..ok.clone()
            },
            "tendon_fraction",
        );
        check(
            FusiformSpec {
                cells_radial: 0,
                ..ok.clone()
            },
            "cells_radial",
        );
        check(
            FusiformSpec {
                cells_axial: 2,
                ..ok.clone()
            },
            "cells_axial",
        );
        let e = fusiform_muscle(&FusiformSpec {
            cells_radial: usize::MAX,
            ..ok.clone()
        })
        .unwrap_err();
        assert!(matches!(e, FusiformError::TooLarge { .. }), "{e}");
        let e = fusiform_muscle(&FusiformSpec {
            tendon: Material::new("tendon", 1060.0, -1.0, 0.45),
            ..ok.clone()
        })
        .unwrap_err();
        assert!(
            matches!(&e, FusiformError::InvalidMaterial { role: "tendon", .. }),
            "{e}"
        );
        let e = fusiform_muscle(&FusiformSpec {
            tendon: Material::new("muscle", 1060.0, 1e6, 0.45),
            ..ok
        })
        .unwrap_err();
        assert!(matches!(e, FusiformError::SameMaterialName(_)), "{e}");
    }

    #[test]
    fn small_grids_work() {
        for (radial, axial) in [(1, 3), (2, 5), (3, 7)] {
            let spec = FusiformSpec {
                cells_radial: radial,
                cells_axial: axial,
                ..FusiformSpec::default()
            };
            let m = fusiform_muscle(&spec).unwrap();
            assert!(m.mesh.element_defects().is_empty());
            assert!(m.mesh.element_material.contains(&TENDON_MATERIAL));
            assert!(m.mesh.element_material.contains(&MUSCLE_MATERIAL));
        }
    }

    #[test]
    fn write_produces_veg_fibres_and_bou() {
        let spec = FusiformSpec {
            cells_radial: 3,
            cells_axial: 10,
            ..FusiformSpec::default()
        };
        let m = fusiform_muscle(&spec).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let files = m.write(&dir.path().join("biceps.veg")).unwrap();
        assert_eq!(files.fibres, dir.path().join("biceps.fibres"));
        assert_eq!(files.bou, dir.path().join("biceps.bou"));
        let mesh = read_veg(&files.veg).unwrap();
        assert_eq!(mesh, m.mesh);
        let fibres = read_fibres(&files.fibres, Some(mesh.num_elements())).unwrap();
        assert_eq!(fibres, m.fibres);
        let fixed = read_bou(&files.bou, Some(mesh.vertices.len())).unwrap();
        assert_eq!(fixed, m.fixed_vertices());
        // Only the three files (no temporaries).
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        let e = m.write(&dir.path().join("biceps.bou")).unwrap_err();
        assert!(matches!(e, MeshError::Unsupported { .. }), "{e}");
    }
}
