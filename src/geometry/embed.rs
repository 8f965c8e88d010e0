//! Embedding of render-mesh vertices in a volumetric simulation mesh: for every point,
//! the element that contains it and the interpolation weights that move it with the
//! element (Vega's `.interp` files; Barbic 2007, thesis section 2.5.2, where the render
//! mesh is embedded in the voxel mesh it was voxelized into).
//!
//! Method:
//! - Element bounding boxes are binned in a uniform grid (cell about the size of an
//!   element); a point is tested against the elements of its cell, then of rings of cells
//!   around it until no unseen element can be nearer than the best one found.
//! - Tets: barycentric coordinates from the 3x3 edge system. Hexes: the trilinear map is
//!   inverted by Newton's method from the centre of the reference cube, to `1e-12` in
//!   reference coordinates (one step is exact for parallelepipeds such as voxels; a few
//!   steps for general trilinear hexes).
//! - A point is inside an element when its reference coordinates are inside up to
//!   `1e-10`. A point inside no element (render meshes poke slightly out of voxel meshes)
//!   goes to the nearest element, by the distance from the point to the image of its
//!   clamped reference coordinates (the exact distance for tets and axis-aligned hexes, an
//!   upper bound for other hexes), and keeps its unclamped, extrapolated weights as Vega
//!   does: they still sum to one and still reproduce the point. The largest such distance
//!   is reported.

use nalgebra::{Matrix3, Point3, Vector3};
use rayon::prelude::*;

use crate::mesh::interp::Interpolation;
use crate::mesh::volume::{hex_jacobian, hex_shape, ElementKind, VolumeMesh};
use crate::mesh::Aabb;
use crate::proximity::triangle;

/// Render vertices embedded in a volumetric mesh.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The element of every point.
    pub elements: Vec<usize>,
    /// The weights of the element's vertices for every point.
    pub interpolation: Interpolation,
    /// The largest distance from a point to its element (0 when every point is inside).
    pub max_outside_distance: f64,
}

/// Why [`embed`] failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The volumetric mesh has no elements to embed in.
    #[error("the volumetric mesh has no elements")]
    EmptyMesh,
    /// A point to embed has a NaN or infinite coordinate.
    #[error("point {index} (0-based) is not finite: {position:?}")]
    NonFinitePoint {
        /// 0-based index of the first such point.
        index: usize,
        /// Its coordinates.
        position: [f64; 3],
    },
    /// A vertex of the volumetric mesh has a NaN or infinite coordinate.
    #[error("volumetric mesh vertex {index} (0-based) is not finite: {position:?}")]
    NonFiniteVertex {
        /// 0-based index of the first such vertex.
        index: usize,
        /// Its coordinates.
        position: [f64; 3],
    },
    /// An element of the volumetric mesh names a vertex the mesh does not have.
    #[error(
        "element {element} (0-based) refers to vertex {index}, but the mesh has {count} vertices"
    )]
    IndexOutOfRange {
        /// 0-based index of the first such element.
        element: usize,
        /// The 0-based vertex index it holds.
        index: usize,
        /// Number of vertices of the mesh.
        count: usize,
    },
}

/// Tolerance on reference coordinates for "inside an element".
const INSIDE_TOL: f64 = 1e-10;

/// Embeds `points` in `mesh`; see the module documentation.
pub fn embed(points: &[Point3<f64>], mesh: &VolumeMesh) -> Result<Embedding, EmbedError> {
    let n_el = mesh.num_elements();
    if n_el == 0 {
        return Err(EmbedError::EmptyMesh);
    }
    let count = mesh.vertices.len();
    if let Some((index, p)) = mesh
        .vertices
        .iter()
        .enumerate()
        .find(|(_, p)| !p.coords.iter().all(|c| c.is_finite()))
    {
        return Err(EmbedError::NonFiniteVertex {
            index,
            position: [p.x, p.y, p.z],
        });
    }
    if let Some(pos) = mesh.connectivity.iter().position(|&v| v >= count) {
        return Err(EmbedError::IndexOutOfRange {
            element: pos / mesh.kind.nodes(),
            index: mesh.connectivity[pos],
            count,
        });
    }
    if let Some((index, p)) = points
        .iter()
        .enumerate()
        .find(|(_, p)| !p.coords.iter().all(|c| c.is_finite()))
    {
        return Err(EmbedError::NonFinitePoint {
            index,
            position: [p.x, p.y, p.z],
        });
    }

    let grid = ElementGrid::new(mesh);
    let located: Vec<Located> = points.par_iter().map(|p| grid.locate(mesh, p)).collect();

    let n = mesh.kind.nodes();
    let mut elements = Vec::with_capacity(points.len());
    let mut indices = Vec::with_capacity(n * points.len());
    let mut weights = Vec::with_capacity(n * points.len());
    let mut max_outside_distance: f64 = 0.0;
    for l in located {
        elements.push(l.element);
        indices.extend_from_slice(mesh.element(l.element));
        weights.extend_from_slice(&l.weights[..n]);
        max_outside_distance = max_outside_distance.max(l.distance);
    }
    Ok(Embedding {
        elements,
        interpolation: Interpolation {
            nodes_per_vertex: n,
            indices,
            weights,
        },
        max_outside_distance,
    })
}

/// Where a point lies relative to one element.
#[derive(Debug, Clone, Copy)]
struct Located {
    element: usize,
    /// Shape function values (first 4 for tets), unclamped.
    weights: [f64; 8],
    /// 0 inside (up to the tolerance), else the distance to the element.
    distance: f64,
}

/// Reference coordinates and distance of `p` relative to element `e`.
fn locate_in(mesh: &VolumeMesh, e: usize, p: &Point3<f64>) -> Located {
    let el = mesh.element(e);
    match mesh.kind {
        ElementKind::Tet => {
            let x: [Point3<f64>; 4] = std::array::from_fn(|a| mesh.vertices[el[a]]);
            let m = Matrix3::from_columns(&[x[1] - x[0], x[2] - x[0], x[3] - x[0]]);
            let Some(l) = m.try_inverse().map(|inv| inv * (p - x[0])) else {
                return far(e);
            };
            let b = [1.0 - l.x - l.y - l.z, l.x, l.y, l.z];
            let mut weights = [0.0; 8];
            weights[..4].copy_from_slice(&b);
            let distance = if b.iter().all(|&w| w >= -INSIDE_TOL) {
                0.0
            } else {
                point_tet_distance(p, &x)
            };
            Located {
                element: e,
                weights,
                distance,
            }
        }
        ElementKind::Hex => {
            let x: [Point3<f64>; 8] = std::array::from_fn(|a| mesh.vertices[el[a]]);
            let xi = invert_trilinear(&x, p);
            let inside = xi
                .iter()
                .all(|&c| (-INSIDE_TOL..=1.0 + INSIDE_TOL).contains(&c));
            let distance = if inside {
                0.0
            } else {
                let c = xi.map(|c| c.clamp(0.0, 1.0));
                (trilinear(&x, c) - p).norm()
            };
            Located {
                element: e,
                weights: hex_shape(xi),
                distance,
            }
        }
    }
}

fn far(e: usize) -> Located {
    Located {
        element: e,
        weights: [0.0; 8],
        distance: f64::INFINITY,
    }
}

fn trilinear(x: &[Point3<f64>; 8], xi: [f64; 3]) -> Point3<f64> {
    let n = hex_shape(xi);
    Point3::from((0..8).map(|a| x[a].coords * n[a]).sum::<Vector3<f64>>())
}

/// Reference coordinates (in `[0,1]^3` inside) of `p` in the hex `x` by Newton's method, from the centre.
/// Stops when the step is below `1e-12`; if the Jacobian becomes singular or the iterate
/// runs away (far outside a distorted hex), the last iterate is returned.
pub fn invert_trilinear(x: &[Point3<f64>; 8], p: &Point3<f64>) -> [f64; 3] {
    let mut xi = Vector3::repeat(0.5);
    for _ in 0..50 {
        let a: [f64; 3] = xi.into();
        let r = trilinear(x, a) - p;
        let Some(inv) = hex_jacobian(x, a).try_inverse() else {
            break;
        };
        let step = inv * r;
        xi -= step;
        if step.amax() <= 1e-12 || xi.amax() > 1e6 {
            break;
        }
    }
    xi.into()
}

/// Distance from `p` to the (closed) tet `x`, for `p` outside it: the nearest of its faces.
fn point_tet_distance(p: &Point3<f64>, x: &[Point3<f64>; 4]) -> f64 {
    [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]
        .iter()
        .map(|f| (triangle::closest_point(p, &x[f[0]], &x[f[1]], &x[f[2]]).0 - p).norm())
        .fold(f64::INFINITY, f64::min)
}

/// A uniform grid over the mesh bounding box; every cell lists the elements whose
/// bounding boxes overlap it (compressed rows).
struct ElementGrid {
    origin: Point3<f64>,
    cell: Vector3<f64>,
    dims: [usize; 3],
    start: Vec<usize>,
    items: Vec<usize>,
    /// The smallest cell size along an axis with more than one cell (a lower bound on the
    /// distance gained per ring).
    min_step: f64,
}

impl ElementGrid {
    fn new(mesh: &VolumeMesh) -> Self {
        let n_el = mesh.num_elements();
        let boxes: Vec<Aabb> = mesh
            .elements()
            .map(|el| Aabb::from_points(el.iter().map(|&v| &mesh.vertices[v])))
            .collect();
        let bb = Aabb::from_points(mesh.elements().flatten().map(|&v| &mesh.vertices[v]));
        let ext = bb.extent();
        // Cell edge: the mean largest extent of an element, grown if that would give
        // more than about 4 cells per element.
        let mut h = boxes.iter().map(|b| b.extent().max()).sum::<f64>() / n_el as f64;
        if h.is_nan() || h <= 0.0 || h.is_infinite() {
            h = ext.max().max(1.0);
        }
        let dims_for = |h: f64| ext.map(|e| ((e / h).ceil() as usize).clamp(1, 1 << 20));
        let mut d = dims_for(h);
        let budget = 4.0 * n_el as f64 + 64.0;
        let cells = d.x as f64 * d.y as f64 * d.z as f64;
        if cells > budget {
            h *= (cells / budget).cbrt() * 1.01;
            d = dims_for(h);
        }
        let dims = [d.x, d.y, d.z];
        let cell = Vector3::from_fn(|k, _| {
            if ext[k] > 0.0 {
                ext[k] / dims[k] as f64
            } else {
                1.0
            }
        });
        let min_step = (0..3)
            .filter(|&k| dims[k] > 1)
            .map(|k| cell[k])
            .fold(f64::INFINITY, f64::min);
        let mut grid = ElementGrid {
            origin: bb.min,
            cell,
            dims,
            start: Vec::new(),
            items: Vec::new(),
            min_step,
        };
        let n_cells = dims[0] * dims[1] * dims[2];
        let ranges: Vec<([usize; 3], [usize; 3])> = boxes
            .iter()
            .map(|b| (grid.cell_of(&b.min), grid.cell_of(&b.max)))
            .collect();
        let mut count = vec![0usize; n_cells + 1];
        for (lo, hi) in &ranges {
            grid.for_cells(lo, hi, |c| count[c + 1] += 1);
        }
        for c in 0..n_cells {
            count[c + 1] += count[c];
        }
        let mut fill = count.clone();
        let mut items = vec![0usize; count[n_cells]];
        for (e, (lo, hi)) in ranges.iter().enumerate() {
            grid.for_cells(lo, hi, |c| {
                items[fill[c]] = e;
                fill[c] += 1;
            });
        }
        grid.start = count;
        grid.items = items;
        grid
    }

    /// The cell containing `p`, clamped to the grid.
    fn cell_of(&self, p: &Point3<f64>) -> [usize; 3] {
        std::array::from_fn(|k| {
            let c = ((p[k] - self.origin[k]) / self.cell[k]).floor();
            c.clamp(0.0, (self.dims[k] - 1) as f64) as usize
        })
    }

    fn for_cells(&self, lo: &[usize; 3], hi: &[usize; 3], mut f: impl FnMut(usize)) {
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for k in lo[2]..=hi[2] {
                    f((i * self.dims[1] + j) * self.dims[2] + k);
                }
            }
        }
    }

    fn cell_items(&self, c: usize) -> &[usize] {
        &self.items[self.start[c]..self.start[c + 1]]
    }

    /// The containing element of `p` (the lowest-numbered one on shared faces), else the
    /// nearest (ties to the lowest number).
    fn locate(&self, mesh: &VolumeMesh, p: &Point3<f64>) -> Located {
        let c = self.cell_of(p);
        let mut best: Option<Located> = None;
        let mut seen = std::collections::HashSet::new();
        let max_r = self.dims.iter().max().copied().unwrap_or(1);
        for r in 0..=max_r {
            let lo: [usize; 3] = std::array::from_fn(|k| c[k].saturating_sub(r));
            let hi: [usize; 3] = std::array::from_fn(|k| (c[k] + r).min(self.dims[k] - 1));
            for i in lo[0]..=hi[0] {
                for j in lo[1]..=hi[1] {
                    for k in lo[2]..=hi[2] {
                        // Only the cells on the ring of Chebyshev radius r.
                        let d = (i.abs_diff(c[0]))
                            .max(j.abs_diff(c[1]))
                            .max(k.abs_diff(c[2]));
                        if d != r {
                            continue;
                        }
                        let cell = (i * self.dims[1] + j) * self.dims[2] + k;
                        for &e in self.cell_items(cell) {
                            // Elements of the first cell may come again in the first
                            // ring: evaluating them twice is harmless.
                            if r > 0 && !seen.insert(e) {
                                continue;
                            }
                            let l = locate_in(mesh, e, p);
                            let better = match &best {
                                None => true,
                                Some(b) => {
                                    l.distance < b.distance
                                        || (l.distance == b.distance && e < b.element)
                                }
                            };
                            if better {
                                best = Some(l);
                            }
                        }
                    }
                }
            }
            // Every element not seen yet lies in cells at ring r+1 or beyond, at least
            // r cells away from p (or from its projection onto the grid).
            if let Some(b) = &best {
                if b.distance <= r as f64 * self.min_step {
                    break;
                }
            }
        }
        // `embed` refuses empty meshes and non-finite points, so some element was seen;
        // should that ever fail, the point is reported infinitely far from element 0
        // (an "outside" error downstream) rather than a panic.
        best.unwrap_or_else(|| far(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::box_hex_mesh;
    use crate::mesh::box_tet_mesh;
    use crate::mesh::volume::Material;
    use haptics_devices::rng::SplitMix64;

    fn mat() -> Material {
        Material::new("m", 1000.0, 1e6, 0.45)
    }

    fn check_reproduces(points: &[Point3<f64>], mesh: &VolumeMesh, emb: &Embedding) {
        let n = emb.interpolation.nodes_per_vertex;
        let back = emb.interpolation.interpolate_points(&mesh.vertices);
        let scale = mesh.bounding_box().extent().norm();
        for (i, (p, q)) in points.iter().zip(&back).enumerate() {
            let w = &emb.interpolation.weights[i * n..(i + 1) * n];
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!((p - q).norm() <= 1e-10 * scale, "point {i}: {p} vs {q}");
        }
    }

    #[test]
    fn axis_aligned_hex_exact_in_one_step() {
        let m = box_hex_mesh(
            Vector3::new(2.0, 1.0, 1.0),
            [1, 1, 1],
            Point3::origin(),
            mat(),
        );
        let x: [Point3<f64>; 8] = std::array::from_fn(|a| m.vertices[m.element(0)[a]]);
        let xi = invert_trilinear(&x, &Point3::new(0.5, 0.25, 0.9));
        // One Newton step from the centre lands on the answer up to rounding.
        let expect = [0.25, 0.25, 0.9];
        assert!((0..3).all(|k| (xi[k] - expect[k]).abs() < 1e-15), "{xi:?}");
    }

    #[test]
    fn grid_points_and_outside_points() {
        let m = box_hex_mesh(
            Vector3::new(3.0, 2.0, 1.0),
            [6, 4, 2],
            Point3::origin(),
            mat(),
        );
        let pts = vec![
            Point3::new(0.1, 0.1, 0.1),
            Point3::new(2.9, 1.9, 0.9),
            Point3::new(1.5, 1.0, 0.5), // a shared vertex
            Point3::new(3.2, 1.0, 0.25),
            Point3::new(-1.0, -1.0, -1.0),
        ];
        let emb = embed(&pts, &m).unwrap();
        check_reproduces(&pts, &m, &emb);
        assert_eq!(emb.elements[0], 0);
        assert_eq!(emb.elements[1], m.num_elements() - 1);
        assert_eq!(emb.elements[4], 0);
        assert!((emb.max_outside_distance - 3f64.sqrt()).abs() < 1e-12);
        // The point beyond x = 3 goes to the last layer of hexes at y in [0.5, 1]
        // (ties broken to the lowest element).
        let e = emb.elements[3];
        let c = m.vertices[m.element(e)[0]];
        assert_eq!((c.x, c.y, c.z), (2.5, 0.5, 0.0));
    }

    #[test]
    fn tet_mesh_random_points() {
        let m = box_tet_mesh(
            Vector3::new(1.0, 1.0, 2.0),
            [2, 2, 3],
            Point3::origin(),
            mat(),
        );
        let mut rng = SplitMix64::new(7);
        let mut rnd = || rng.next_f64();
        let pts: Vec<Point3<f64>> = (0..500)
            .map(|_| Point3::new(rnd() * 1.2 - 0.1, rnd() * 1.2 - 0.1, rnd() * 2.4 - 0.2))
            .collect();
        let emb = embed(&pts, &m).unwrap();
        check_reproduces(&pts, &m, &emb);
        assert!(emb.max_outside_distance > 0.0);
    }

    #[test]
    fn errors() {
        let m = box_hex_mesh(Vector3::repeat(1.0), [1, 1, 1], Point3::origin(), mat());
        let nan = [Point3::new(0.0, f64::NAN, 0.0)];
        assert!(matches!(
            embed(&nan, &m),
            Err(EmbedError::NonFinitePoint { index: 0, .. })
        ));
        let mut empty = m.clone();
        empty.connectivity.clear();
        empty.element_material.clear();
        assert_eq!(embed(&[], &empty), Err(EmbedError::EmptyMesh));
        let mut bad = m.clone();
        bad.connectivity[5] = 100;
        assert!(matches!(
            embed(&[], &bad),
            Err(EmbedError::IndexOutOfRange {
                element: 0,
                index: 100,
                ..
            })
        ));
    }
}
