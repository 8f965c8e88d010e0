//! Signed distance fields of polygon soups (thesis 3.11): meshes that are not closed
//! (holes, overlapping or disconnected pieces, like simpleBridge.obj) have no inside, so
//! the thesis computes an unsigned distance field, extracts an offset surface
//! {u = offset} around the soup, drops its enclosed components, and takes the signed
//! field of that closed surface.
//!
//! - Unsigned field: the same narrow band and closest-triangle propagation as closed
//!   meshes (`sdf/band.rs`), without the sign.
//! - Offset surface: marching tetrahedra on the Kuhn (Freudenthal) split of every cube
//!   into six tetrahedra around its main diagonal. The split is the same in every cube,
//!   so shared faces are cut along the same diagonal and the tetrahedra form a
//!   conforming mesh; each tetrahedron's piece of the isosurface is one triangle or one
//!   quad with no ambiguous cases, and pieces meet along tetrahedron faces. Vertices are
//!   shared through a map keyed by grid edge, so the surface is closed and every edge has
//!   exactly two triangles. Node values equal to the iso value count as above it (a
//!   symbolic perturbation), and crossings are kept 1e-4 of an edge away from the nodes,
//!   so no two vertices coincide. Triangles face increasing distance (outward).
//! - Enclosed components: a closed soup (or one with closed pockets) also yields inner
//!   shells facing into the cavities; they have negative signed volume and are dropped,
//!   so the cavity becomes part of the solid.
//!
//! The default offset is 1.5 cells: the piecewise-linear interpolant of the distance on
//! a tetrahedron is at most sum_i lambda_i |v_i - s| at a point s of the soup, which is
//! below 1 cell on the Kuhn tetrahedron (see the unit test), so with 1.5 cells every soup
//! point lies strictly inside the extracted surface and thin parts (sheets, rods) stay
//! closed, with a margin for f32 rounding.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use nalgebra::Vector3;
use rayon::prelude::*;

use super::sdf::{
    check_memory, cubic_grid, estimate_bytes, stage, unsigned_values, Grid, MeshDistance, SdfError,
    SdfMethod, SdfOptions, SignedDistanceField, DEFAULT_BAND, DEFAULT_ENLARGE, MAX_SDF_BYTES,
};
use crate::mesh::SurfaceMesh;
use crate::progress::Progress;

/// The default offset of the soup's enclosing surface, in cells.
pub const DEFAULT_OFFSET: f64 = 1.5;

/// Crossings are kept this fraction of an edge away from its nodes.
const CROSSING_MARGIN: f64 = 1e-4;

/// Options of the polygon-soup path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoupOptions {
    /// Cells per side of the cubic grid (the unsigned and the signed field share it).
    pub resolution: usize,
    /// Side of the cubic box over the largest side of the soup's bounding box.
    pub enlarge: f64,
    /// Offset of the enclosing surface from the soup, in cells.
    pub offset: f64,
    /// Half-width of the exact band, in cells.
    pub band: f64,
    /// How the signed field of the offset surface is filled.
    pub method: SdfMethod,
    /// Working memory allowed ([`soup_estimate_bytes`]), in bytes; larger grids are
    /// refused before anything is allocated. Default [`MAX_SDF_BYTES`].
    pub memory_budget_bytes: u64,
}

impl Default for SoupOptions {
    fn default() -> Self {
        SoupOptions {
            resolution: 128,
            enlarge: DEFAULT_ENLARGE,
            offset: DEFAULT_OFFSET,
            band: DEFAULT_BAND,
            method: SdfMethod::BandAndPropagate,
            memory_budget_bytes: MAX_SDF_BYTES,
        }
    }
}

impl SoupOptions {
    fn signed(&self) -> SdfOptions {
        SdfOptions {
            resolution: self.resolution,
            enlarge: self.enlarge,
            method: self.method,
            band: self.band,
            memory_budget_bytes: self.memory_budget_bytes,
        }
    }

    fn validate(&self) -> Result<(), SdfError> {
        // Resolution, enlargement and band as for closed meshes.
        self.signed().validate()?;
        // The offset surface must stay inside the grid, one cell clear of its faces.
        let margin = self.resolution as f64 * (self.enlarge - 1.0) / (2.0 * self.enlarge);
        if !(self.offset.is_finite() && self.offset > 0.0 && self.offset + 1.0 < margin) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "offset {} cells must be positive and fit in the box margin of {margin:.1} cells less one (raise the resolution or the box enlargement, or lower the offset)",
                    self.offset
                ),
            });
        }
        Ok(())
    }
}

/// Peak bytes of [`soup_signed_field`]: the grid buffers of the unsigned and the signed
/// field (one at a time) and the offset surface, estimated from the soup's area: about
/// twice the area (both sides), at most ~8 triangles per square cell, ~300 bytes per
/// triangle in the mesh and the distance structure.
pub fn soup_estimate_bytes(mesh: &SurfaceMesh, opts: &SoupOptions) -> u64 {
    let side = mesh.bounding_box().extent().max() * opts.enlarge;
    let h = side / opts.resolution.max(1) as f64;
    let surface_tris = (16.0 * mesh.area() / (h * h)).min(u64::MAX as f64 / 1024.0) as u64;
    estimate_bytes(
        opts.resolution,
        SdfMethod::BandAndPropagate,
        mesh.triangles.len(),
    )
    .max(estimate_bytes(opts.resolution, opts.method, 0))
    .saturating_add(surface_tris.saturating_mul(300))
}

/// The closed offset surface {u = offset cells} of a polygon soup at the default
/// options and `resolution` (see the module docs).
pub fn soup_offset_surface(
    mesh: &SurfaceMesh,
    resolution: usize,
    offset: f64,
    progress: &dyn Progress,
) -> Result<SurfaceMesh, SdfError> {
    let opts = SoupOptions {
        resolution,
        offset,
        ..SoupOptions::default()
    };
    Ok(offset_surface_on_grid(mesh, &opts, progress)?.0)
}

/// A polygon soup's signed field and the closed surface it is the field of.
#[derive(Debug, Clone)]
pub struct SoupField {
    /// The signed field of `surface`.
    pub field: SignedDistanceField,
    /// The offset surface, enclosed components dropped.
    pub surface: SurfaceMesh,
}

/// The signed distance field of a polygon soup: unsigned field, offset surface,
/// enclosed components dropped, then the signed field of that closed surface on the
/// same grid (the soup's cubic box). Refuses too-large grids before allocating. Each
/// stage is reported to `progress` under its [`stage`] name.
pub fn soup_signed_field(
    mesh: &SurfaceMesh,
    opts: &SoupOptions,
    progress: &dyn Progress,
) -> Result<SoupField, SdfError> {
    let (surface, grid) = offset_surface_on_grid(mesh, opts, progress)?;
    let distance = MeshDistance::new(&surface)?;
    let field = SignedDistanceField::compute_on_grid(&distance, &grid, &opts.signed(), progress)?;
    Ok(SoupField { field, surface })
}

fn offset_surface_on_grid(
    mesh: &SurfaceMesh,
    opts: &SoupOptions,
    progress: &dyn Progress,
) -> Result<(SurfaceMesh, Grid), SdfError> {
    if mesh.triangles.is_empty() {
        return Err(SdfError::Empty);
    }
    opts.validate()?;
    // The grid first: a box that is not finite would make the estimate meaningless.
    let grid = cubic_grid(&mesh.bounding_box(), opts.resolution, opts.enlarge)?;
    check_memory(
        opts.resolution,
        soup_estimate_bytes(mesh, opts),
        opts.memory_budget_bytes,
    )?;
    let values = unsigned_values(&mesh.vertices, &mesh.triangles, &grid, opts.band, progress);
    let surface = marching_tetrahedra(&grid, &values, opts.offset * grid.h, progress);
    drop(values);
    Ok((drop_enclosed_components(&surface, progress), grid))
}

/// The six tetrahedra of the Kuhn split of a cube, as corner numbers (bit 0: +x, bit 1:
/// +y, bit 2: +z): each walks from corner 0 to corner 7 along the axes in one of the six
/// orders.
const KUHN: [[usize; 4]; 6] = [
    [0, 1, 3, 7],
    [0, 1, 5, 7],
    [0, 2, 3, 7],
    [0, 2, 6, 7],
    [0, 4, 5, 7],
    [0, 4, 6, 7],
];

/// A multiplicative hasher for the u64 edge keys (std's SipHash is slower and the keys
/// are not attacker-controlled).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (k ^ (k >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        self.0 ^= self.0 >> 32;
    }
}

/// The grid edge between nodes a and b, as a key independent of the order.
fn edge_key(a: usize, b: usize, nodes: u64) -> u64 {
    a.min(b) as u64 * nodes + a.max(b) as u64
}

/// The isosurface pieces of one tetrahedron with corner positions `pos` (integer grid
/// coordinates) and node indices `node`, `inside[c]` when the value is below the iso
/// value; pushes triangles as edge-key triples, facing from inside to outside.
fn tetrahedron(
    pos: &[[i64; 3]; 4],
    node: &[usize; 4],
    inside: &[bool; 4],
    nodes: u64,
    out: &mut Vec<[u64; 3]>,
) {
    let count = inside.iter().filter(|&&b| b).count();
    if count == 0 || count == 4 {
        return;
    }
    let key = |a: usize, b: usize| edge_key(node[a], node[b], nodes);
    // Twice the midpoint of edge (a, b): exact integers, so the orientation test below is
    // exact, and the midpoint polygon never degenerates (the tetrahedron does not).
    let mid = |a: usize, b: usize| Vector3::from_fn(|x, _| pos[a][x] + pos[b][x]);
    // True when the triangle over edges e0, e1, e2 must be flipped to face `dir`.
    let flip = |e: [(usize, usize); 3], dir: Vector3<i64>| {
        let (m0, m1, m2) = (
            mid(e[0].0, e[0].1),
            mid(e[1].0, e[1].1),
            mid(e[2].0, e[2].1),
        );
        (m1 - m0).cross(&(m2 - m0)).dot(&dir) < 0
    };
    let d = |from: usize, to: usize| Vector3::from_fn(|x, _| pos[to][x] - pos[from][x]);
    if count == 2 {
        let (ins, outs): (Vec<usize>, Vec<usize>) = (0..4).partition(|&c| inside[c]);
        let (a, b, c, e) = (ins[0], ins[1], outs[0], outs[1]);
        let mut quad = [(a, c), (a, e), (b, e), (b, c)];
        if flip([quad[0], quad[1], quad[2]], d(a, c)) {
            quad.reverse();
        }
        let k = quad.map(|(u, v)| key(u, v));
        out.push([k[0], k[1], k[2]]);
        out.push([k[0], k[2], k[3]]);
    } else {
        // One corner on its own side.
        let lone_inside = count == 1;
        let a = (0..4)
            .find(|&c| inside[c] == lone_inside)
            .expect("one corner differs from the other three");
        let others: Vec<usize> = (0..4).filter(|&c| c != a).collect();
        let mut tri = [(a, others[0]), (a, others[1]), (a, others[2])];
        let dir = if lone_inside {
            d(a, others[0])
        } else {
            d(others[0], a)
        };
        if flip(tri, dir) {
            tri.swap(1, 2);
        }
        out.push(tri.map(|(u, v)| key(u, v)));
    }
}

/// Marching tetrahedra of {value = iso} on `grid` (see the module docs). Layers of cells
/// run in parallel; vertices are then shared through the edge-keyed map.
pub(crate) fn marching_tetrahedra(
    grid: &Grid,
    values: &[f32],
    iso: f64,
    progress: &dyn Progress,
) -> SurfaceMesh {
    let [nx, ny, nz] = grid.nodes;
    let nodes = grid.len() as u64;
    let iso32 = iso as f32;
    let idx = |i: usize, j: usize, k: usize| (k * ny + j) * nx + i;
    let layers = nz.saturating_sub(1) as u64;
    progress.stage(stage::ISOSURFACE, layers);
    let keyed: Vec<Vec<[u64; 3]>> = (0..nz.saturating_sub(1))
        .into_par_iter()
        .map(|k| {
            let mut out = Vec::new();
            for j in 0..ny - 1 {
                for i in 0..nx - 1 {
                    let node: [usize; 8] =
                        std::array::from_fn(|c| idx(i + (c & 1), j + ((c >> 1) & 1), k + (c >> 2)));
                    // Values equal to iso count as above it (symbolic perturbation).
                    let inside = node.map(|n| values[n] < iso32);
                    if inside.iter().all(|&b| b) || inside.iter().all(|&b| !b) {
                        continue;
                    }
                    let pos: [[i64; 3]; 8] = std::array::from_fn(|c| {
                        [
                            (i + (c & 1)) as i64,
                            (j + ((c >> 1) & 1)) as i64,
                            (k + (c >> 2)) as i64,
                        ]
                    });
                    for tet in &KUHN {
                        tetrahedron(
                            &tet.map(|c| pos[c]),
                            &tet.map(|c| node[c]),
                            &tet.map(|c| inside[c]),
                            nodes,
                            &mut out,
                        );
                    }
                }
            }
            progress.advance(1);
            out
        })
        .collect();
    progress.finish();
    let mut ids: HashMap<u64, usize, BuildHasherDefault<KeyHasher>> = HashMap::default();
    let mut mesh = SurfaceMesh::default();
    let node_of = |n: usize| (n % nx, (n / nx) % ny, n / (nx * ny));
    for t in keyed.iter().flatten() {
        let tri = t.map(|key| {
            *ids.entry(key).or_insert_with(|| {
                let (a, b) = ((key / nodes) as usize, (key % nodes) as usize);
                let (fa, fb) = (values[a] as f64, values[b] as f64);
                // fa and fb lie on opposite sides of iso, so fb != fa.
                let s = ((iso - fa) / (fb - fa)).clamp(CROSSING_MARGIN, 1.0 - CROSSING_MARGIN);
                let (pa, pb) = (node_of(a), node_of(b));
                let (pa, pb) = (grid.point(pa.0, pa.1, pa.2), grid.point(pb.0, pb.1, pb.2));
                mesh.vertices.push(pa + (pb - pa) * s);
                mesh.vertices.len() - 1
            })
        });
        mesh.triangles.push(tri);
    }
    mesh
}

/// Keeps the connected components (through shared vertices) of a closed, outward-facing
/// surface whose signed volume is positive: inner shells around cavities face into the
/// cavity and have negative volume. Unused vertices are removed.
pub(crate) fn drop_enclosed_components(mesh: &SurfaceMesh, progress: &dyn Progress) -> SurfaceMesh {
    let nv = mesh.vertices.len();
    let mut parent: Vec<usize> = (0..nv).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for t in &mesh.triangles {
        for k in 1..3 {
            let (a, b) = (find(&mut parent, t[0]), find(&mut parent, t[k]));
            if a != b {
                parent[a] = b;
            }
        }
    }
    // Volumes about the bounding-box centre (less cancellation than about the origin).
    let c = mesh.bounding_box().center();
    let mut volume: HashMap<usize, f64> = HashMap::new();
    for t in &mesh.triangles {
        let [a, b, d] = t.map(|v| mesh.vertices[v] - c);
        *volume.entry(find(&mut parent, t[0])).or_insert(0.0) += a.dot(&b.cross(&d)) / 6.0;
    }
    progress.stage(stage::COMPONENTS, volume.len() as u64);
    progress.set(volume.len() as u64);
    progress.finish();
    let mut new_id = vec![usize::MAX; nv];
    let mut out = SurfaceMesh::default();
    for t in &mesh.triangles {
        if volume[&find(&mut parent, t[0])] <= 0.0 {
            continue;
        }
        let tri = t.map(|v| {
            if new_id[v] == usize::MAX {
                new_id[v] = out.vertices.len();
                out.vertices.push(mesh.vertices[v]);
            }
            new_id[v]
        });
        out.triangles.push(tri);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NoProgress;
    use nalgebra::Point3;

    #[test]
    fn kuhn_tetrahedra_fill_the_cube_with_positive_volume() {
        let corner =
            |c: usize| Vector3::new((c & 1) as f64, ((c >> 1) & 1) as f64, (c >> 2) as f64);
        let mut total = 0.0;
        for t in &KUHN {
            let [a, b, c, d] = t.map(corner);
            let v = (b - a).cross(&(c - a)).dot(&(d - a)).abs() / 6.0;
            assert!((v - 1.0 / 6.0).abs() < 1e-15);
            total += v;
        }
        assert!((total - 1.0).abs() < 1e-15);
    }

    /// The default offset's justification: on a Kuhn tetrahedron (unit cells), the
    /// interpolated distance at a point s of the soup is at most
    /// sum_i lambda_i |v_i - s|; its maximum over the tetrahedron is below 1 cell, so
    /// an offset of 1.5 cells puts every soup point strictly inside the offset surface.
    #[test]
    fn interpolated_distance_bound_is_below_one_cell() {
        let v = [
            Vector3::new(0.0, 0.0, 0.0),
            Vector3::new(1.0, 0.0, 0.0),
            Vector3::new(1.0, 1.0, 0.0),
            Vector3::new(1.0, 1.0, 1.0),
        ];
        let n = 40;
        let mut worst: f64 = 0.0;
        for a in 0..=n {
            for b in 0..=(n - a) {
                for c in 0..=(n - a - b) {
                    let l = [a, b, c, n - a - b - c].map(|x| x as f64 / n as f64);
                    let s: Vector3<f64> = (0..4).map(|i| v[i] * l[i]).sum();
                    worst = worst.max((0..4).map(|i| l[i] * (v[i] - s).norm()).sum());
                }
            }
        }
        // Sampling step 1/40 changes the sum by under 0.05.
        assert!(worst < 0.95, "{worst}");
        assert!(worst > 0.5);
    }

    /// A sphere's distance sampled on a grid: marching tetrahedra give a closed,
    /// outward-facing surface whose volume approaches the sphere's.
    #[test]
    fn marching_tetrahedra_of_a_sphere_is_closed_and_outward() {
        let n = 25;
        let grid = Grid {
            origin: Point3::new(-1.2, -1.2, -1.2),
            h: 2.4 / (n - 1) as f64,
            nodes: [n; 3],
        };
        let mut values = Vec::new();
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    values.push(grid.point(i, j, k).coords.norm() as f32);
                }
            }
        }
        let m = marching_tetrahedra(&grid, &values, 0.8, &NoProgress);
        assert_eq!(m.boundary_and_nonmanifold_edges(), (0, 0));
        assert_eq!(m.connected_components(), 1);
        let exact = 4.0 / 3.0 * std::f64::consts::PI * 0.8f64.powi(3);
        // Linear interpolation inscribes the sphere: the volume is a little low, by
        // O(h^2 / r) relative (h = 0.1, r = 0.8: a few percent).
        let v = m.signed_volume();
        assert!(v > 0.9 * exact && v < exact, "{v} vs {exact}");
    }

    #[test]
    fn inner_shells_are_dropped() {
        // Distance to a spherical shell of radius 0.8: iso 0.2 gives an outer sphere
        // (r = 1.0) and an inner one (r = 0.6) facing the centre.
        let n = 31;
        let grid = Grid {
            origin: Point3::new(-1.5, -1.5, -1.5),
            h: 3.0 / (n - 1) as f64,
            nodes: [n; 3],
        };
        let mut values = Vec::new();
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    values.push((grid.point(i, j, k).coords.norm() - 0.8).abs() as f32);
                }
            }
        }
        let m = marching_tetrahedra(&grid, &values, 0.2, &NoProgress);
        assert_eq!(m.connected_components(), 2);
        let kept = drop_enclosed_components(&m, &NoProgress);
        assert_eq!(kept.connected_components(), 1);
        assert_eq!(kept.boundary_and_nonmanifold_edges(), (0, 0));
        let outer = 4.0 / 3.0 * std::f64::consts::PI;
        assert!((kept.signed_volume() - outer).abs() < 0.1 * outer);
    }
}
