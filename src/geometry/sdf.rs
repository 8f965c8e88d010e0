//! Signed distance fields of closed triangle meshes (thesis 3.11).
//!
//! [`MeshDistance`] answers exact queries: the closest point over all triangles through
//! an AABB tree, and the sign from the angle-weighted pseudonormal of the closest feature
//! (face, edge or vertex; Baerentzen and Aanaes 2005): d(p) = -|p - q| when
//! (p - q) . n(q) < 0, else |p - q|.
//!
//! [`SignedDistanceField`] samples d on a regular grid over a cubic box enlarged 1.5x
//! about the mesh's bounding box (the thesis's setting) and looks it up trilinearly
//! inside the box; outside it returns the conservative bound
//! d(p) >= d_box(p) + min over the box surface of d (thesis 3.11), which never exceeds
//! the true distance (distance is 1-Lipschitz), so culling with it is safe.
//!
//! Two ways to fill the grid ([`SdfMethod`]):
//! - `BandAndPropagate` (default, `band.rs`): exact distances in a narrow band around
//!   every triangle, Bridson's closest-triangle propagation outside it, the band's
//!   pseudonormal signs flood-filled outward. Band nodes are exact; far nodes hold the
//!   exact distance to a nearby triangle (an upper bound, exact in almost all nodes).
//! - `Exact`: one tree query per node (slower; every node exact).
//!
//! Polygon soups (meshes that are not closed) go through [`super::soup`]: an unsigned
//! field, an offset surface, then the signed field of that closed surface.

mod band;

use std::collections::HashMap;
use std::fmt;

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::triangle::{closest_point, normal_and_angles, Feature};
use crate::mesh::{Aabb, SurfaceMesh};

pub(crate) use band::Grid;

/// Errors building distance fields.
#[derive(Debug, thiserror::Error)]
pub enum SdfError {
    #[error("the mesh is not closed ({boundary} boundary edges, {nonmanifold} non-manifold edges): a signed field needs a closed surface; for a polygon soup use the polygon-soup path (`haptics sdf --soup`: unsigned field, offset surface, then signed field)")]
    NotClosed { boundary: usize, nonmanifold: usize },
    #[error("the mesh's {components} closed components {how} (triangles {first} and {second}): its inside is ambiguous, so it is a polygon soup; use the polygon-soup path (`haptics sdf --soup`: unsigned field, offset surface, then signed field)")]
    NotSolid {
        components: usize,
        first: usize,
        second: usize,
        how: &'static str,
    },
    #[error("the mesh has no triangles")]
    Empty,
    #[error("the mesh's bounding box is degenerate or not finite (largest side {side}): no grid fits it")]
    DegenerateBox { side: f64 },
    #[error("resolution {resolution} needs about {:.1} GiB ({bytes} bytes), above the limit of {:.1} GiB ({limit} bytes); choose a smaller resolution", *bytes as f64 / GIB, *limit as f64 / GIB)]
    TooLarge {
        resolution: usize,
        bytes: u64,
        limit: u64,
    },
    #[error("resolution must be at least 1")]
    ZeroResolution,
    #[error("invalid option: {what}")]
    InvalidOption { what: String },
}

const GIB: f64 = (1u64 << 30) as f64;

#[derive(Debug, Clone)]
struct Node {
    bounds: Aabb,
    /// Leaf: triangle range [start, start + count); inner: children at `start` and `start+1`.
    start: u32,
    count: u32,
}

/// Exact signed distance to a closed triangle mesh.
#[derive(Debug, Clone)]
pub struct MeshDistance {
    vertices: Vec<Point3<f64>>,
    triangles: Vec<[usize; 3]>,
    face_normals: Vec<Vector3<f64>>,
    vertex_normals: Vec<Vector3<f64>>,
    edge_normals: HashMap<(usize, usize), Vector3<f64>>,
    nodes: Vec<Node>,
    /// Triangle indices in tree order.
    order: Vec<u32>,
}

fn aabb_distance_squared(b: &Aabb, p: &Point3<f64>) -> f64 {
    let mut d = 0.0;
    for k in 0..3 {
        let v = if p[k] < b.min[k] {
            b.min[k] - p[k]
        } else if p[k] > b.max[k] {
            p[k] - b.max[k]
        } else {
            0.0
        };
        d += v * v;
    }
    d
}

impl MeshDistance {
    /// Builds the distance structure; the mesh must be closed (every edge shared by two
    /// triangles).
    pub fn new(mesh: &SurfaceMesh) -> Result<Self, SdfError> {
        if mesh.triangles.is_empty() {
            return Err(SdfError::Empty);
        }
        let (boundary, nonmanifold) = mesh.boundary_and_nonmanifold_edges();
        if boundary > 0 || nonmanifold > 0 {
            return Err(SdfError::NotClosed {
                boundary,
                nonmanifold,
            });
        }
        let nv = mesh.vertices.len();
        let mut face_normals = Vec::with_capacity(mesh.triangles.len());
        let mut vertex_normals = vec![Vector3::zeros(); nv];
        let mut edge_normals: HashMap<(usize, usize), Vector3<f64>> = HashMap::new();
        for t in &mesh.triangles {
            let [a, b, c] = t.map(|v| mesh.vertices[v]);
            let (n, angles) = normal_and_angles(&a, &b, &c);
            face_normals.push(n);
            for k in 0..3 {
                vertex_normals[t[k]] += n * angles[k];
                let (u, v) = (t[k], t[(k + 1) % 3]);
                *edge_normals
                    .entry((u.min(v), u.max(v)))
                    .or_insert_with(Vector3::zeros) += n;
            }
        }
        let mut md = MeshDistance {
            vertices: mesh.vertices.clone(),
            triangles: mesh.triangles.clone(),
            face_normals,
            vertex_normals,
            edge_normals,
            nodes: Vec::new(),
            order: (0..mesh.triangles.len() as u32).collect(),
        };
        md.build_tree();
        Ok(md)
    }

    fn tri_bounds(&self, t: u32) -> Aabb {
        Aabb::from_points(
            self.triangles[t as usize]
                .iter()
                .map(|&v| &self.vertices[v]),
        )
    }

    fn build_tree(&mut self) {
        let centroids: Vec<Point3<f64>> = self
            .triangles
            .iter()
            .map(|t| {
                Point3::from(
                    (self.vertices[t[0]].coords
                        + self.vertices[t[1]].coords
                        + self.vertices[t[2]].coords)
                        / 3.0,
                )
            })
            .collect();
        self.nodes.push(Node {
            bounds: Aabb::empty(),
            start: 0,
            count: self.order.len() as u32,
        });
        let mut stack = vec![0usize];
        while let Some(ni) = stack.pop() {
            let (start, count) = (self.nodes[ni].start as usize, self.nodes[ni].count as usize);
            let mut b = Aabb::empty();
            for &t in &self.order[start..start + count] {
                let tb = self.tri_bounds(t);
                b.grow(&tb.min);
                b.grow(&tb.max);
            }
            self.nodes[ni].bounds = b;
            if count <= 4 {
                continue;
            }
            let ext = b.extent();
            let axis = if ext.x >= ext.y && ext.x >= ext.z {
                0
            } else if ext.y >= ext.z {
                1
            } else {
                2
            };
            let slice = &mut self.order[start..start + count];
            let mid = count / 2;
            slice.select_nth_unstable_by(mid, |&a, &b| {
                centroids[a as usize][axis].total_cmp(&centroids[b as usize][axis])
            });
            let left = self.nodes.len();
            self.nodes.push(Node {
                bounds: Aabb::empty(),
                start: start as u32,
                count: mid as u32,
            });
            self.nodes.push(Node {
                bounds: Aabb::empty(),
                start: (start + mid) as u32,
                count: (count - mid) as u32,
            });
            self.nodes[ni].start = left as u32;
            self.nodes[ni].count = 0;
            stack.push(left);
            stack.push(left + 1);
        }
    }

    /// The closest triangle to p with squared distance below `bound2` (or none).
    fn closest(&self, p: &Point3<f64>, bound2: f64) -> Option<(f64, usize, Point3<f64>, Feature)> {
        let mut best: Option<(f64, usize, Point3<f64>, Feature)> = None;
        let mut best_d2 = bound2;
        let mut stack: Vec<u32> = Vec::with_capacity(64);
        stack.push(0);
        while let Some(ni) = stack.pop() {
            let node = &self.nodes[ni as usize];
            if aabb_distance_squared(&node.bounds, p) >= best_d2 {
                continue;
            }
            if node.count > 0 {
                for &t in &self.order[node.start as usize..(node.start + node.count) as usize] {
                    let [a, b, c] = self.triangles[t as usize].map(|v| self.vertices[v]);
                    let (q, f) = closest_point(p, &a, &b, &c);
                    let d2 = (q - p).norm_squared();
                    if d2 < best_d2 {
                        best_d2 = d2;
                        best = Some((d2, t as usize, q, f));
                    }
                }
            } else {
                // Visit the nearer child first.
                let (l, r) = (node.start, node.start + 1);
                let dl = aabb_distance_squared(&self.nodes[l as usize].bounds, p);
                let dr = aabb_distance_squared(&self.nodes[r as usize].bounds, p);
                if dl < dr {
                    stack.push(r);
                    stack.push(l);
                } else {
                    stack.push(l);
                    stack.push(r);
                }
            }
        }
        best
    }

    /// The pseudonormal of a triangle's feature.
    fn pseudonormal(&self, t: usize, f: Feature) -> Vector3<f64> {
        let tri = self.triangles[t];
        match f {
            Feature::Face => self.face_normals[t],
            Feature::Vertex(k) => self.vertex_normals[tri[k as usize]],
            Feature::Edge(a, b) => {
                let (u, v) = (tri[a as usize], tri[b as usize]);
                self.edge_normals[&(u.min(v), u.max(v))]
            }
        }
    }

    /// Signed distance (negative inside), searching only below |d| < `bound`.
    pub fn signed_distance_bounded(&self, p: &Point3<f64>, bound: f64) -> Option<f64> {
        let (d2, t, q, f) = self.closest(p, bound * bound)?;
        let d = d2.sqrt();
        let n = self.pseudonormal(t, f);
        Some(if (p - q).dot(&n) < 0.0 { -d } else { d })
    }

    /// The closest point of the mesh to p, with the signed distance (negative inside)
    /// and the unit outward angle-weighted pseudonormal of the closest feature.
    pub fn closest_point(&self, p: &Point3<f64>) -> ClosestPoint {
        let (d2, t, q, f) = self
            .closest(p, f64::INFINITY)
            .expect("a mesh with triangles has a closest triangle");
        let n = self.pseudonormal(t, f);
        let d = d2.sqrt();
        ClosestPoint {
            point: q,
            distance: if (p - q).dot(&n) < 0.0 { -d } else { d },
            normal: n.normalize(),
            triangle: t,
        }
    }

    /// Exact signed distance (negative inside).
    pub fn signed_distance(&self, p: &Point3<f64>) -> f64 {
        self.signed_distance_bounded(p, f64::INFINITY)
            .expect("a mesh with triangles has a closest triangle")
    }

    pub fn bounding_box(&self) -> Aabb {
        self.nodes[0].bounds
    }

    /// Calls `f` on every triangle whose bounding box overlaps `b`, until it returns true;
    /// returns whether it did.
    fn any_overlapping(&self, b: &Aabb, mut f: impl FnMut(usize) -> bool) -> bool {
        let mut stack = vec![0u32];
        while let Some(ni) = stack.pop() {
            let node = &self.nodes[ni as usize];
            let nb = &node.bounds;
            if (0..3).any(|a| nb.min[a] > b.max[a] || nb.max[a] < b.min[a]) {
                continue;
            }
            if node.count > 0 {
                for &t in &self.order[node.start as usize..(node.start + node.count) as usize] {
                    if f(t as usize) {
                        return true;
                    }
                }
            } else {
                stack.push(node.start);
                stack.push(node.start + 1);
            }
        }
        false
    }

    /// Checks that the closed surface bounds one well-defined solid: its connected
    /// components neither cross each other (an edge of one passing through a triangle of
    /// another) nor nest (a vertex of one inside another, by the winding number). Meshes
    /// like simpleBridge.obj (39 closed pieces pushed into each other) fail: the
    /// pseudonormal sign is wrong inside the overlaps, so they need the polygon-soup path.
    pub fn check_solid(&self) -> Result<(), SdfError> {
        let comp = triangle_components(&self.triangles, self.vertices.len());
        let count = comp.iter().copied().max().map_or(0, |m| m + 1);
        if count < 2 {
            return Ok(());
        }
        let crossing = (0..self.triangles.len()).into_par_iter().find_map_any(|t| {
            let tri = self.triangles[t];
            (0..3).find_map(|e| {
                let (p, q) = (self.vertices[tri[e]], self.vertices[tri[(e + 1) % 3]]);
                let b = Aabb::from_points([&p, &q]);
                let mut hit = None;
                self.any_overlapping(&b, |u| {
                    if comp[u] == comp[t] {
                        return false;
                    }
                    let [a, bb, c] = self.triangles[u].map(|v| self.vertices[v]);
                    let crosses = segment_crosses_triangle(&p, &q, &a, &bb, &c);
                    if crosses {
                        hit = Some((t, u));
                    }
                    crosses
                });
                hit
            })
        });
        if let Some((first, second)) = crossing {
            return Err(SdfError::NotSolid {
                components: count,
                first,
                second,
                how: "cross",
            });
        }
        // Nesting: one vertex of each component against the others' winding numbers.
        let mut per_comp: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (t, &c) in comp.iter().enumerate() {
            per_comp[c].push(t);
        }
        let boxes: Vec<Aabb> = per_comp
            .iter()
            .map(|ts| {
                Aabb::from_points(
                    ts.iter()
                        .flat_map(|&t| self.triangles[t].map(|v| &self.vertices[v])),
                )
            })
            .collect();
        for (c, ts) in per_comp.iter().enumerate() {
            let v = self.vertices[self.triangles[ts[0]][0]];
            for (d, other) in per_comp.iter().enumerate() {
                let bd = &boxes[d];
                if d == c || (0..3).any(|a| v[a] < bd.min[a] || v[a] > bd.max[a]) {
                    continue;
                }
                let w: f64 = other
                    .iter()
                    .map(|&t| solid_angle(&v, &self.triangles[t].map(|i| self.vertices[i])))
                    .sum::<f64>()
                    / (4.0 * std::f64::consts::PI);
                if w.abs() > 0.5 {
                    return Err(SdfError::NotSolid {
                        components: count,
                        first: ts[0],
                        second: other[0],
                        how: "nest",
                    });
                }
            }
        }
        Ok(())
    }
}

/// The connected component (through shared vertices) of every triangle, numbered from 0.
fn triangle_components(triangles: &[[usize; 3]], vertices: usize) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..vertices).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for t in triangles {
        for k in 1..3 {
            let (a, b) = (find(&mut parent, t[0]), find(&mut parent, t[k]));
            if a != b {
                parent[a] = b;
            }
        }
    }
    let mut number = HashMap::new();
    triangles
        .iter()
        .map(|t| {
            let r = find(&mut parent, t[0]);
            let next = number.len();
            *number.entry(r).or_insert(next)
        })
        .collect()
}

/// Whether segment pq passes through the interior of triangle abc (strictly: touching
/// and coplanar contact do not count).
fn segment_crosses_triangle(
    p: &Point3<f64>,
    q: &Point3<f64>,
    a: &Point3<f64>,
    b: &Point3<f64>,
    c: &Point3<f64>,
) -> bool {
    let n = (b - a).cross(&(c - a));
    let (dp, dq) = (n.dot(&(p - a)), n.dot(&(q - a)));
    if dp * dq >= 0.0 {
        return false;
    }
    let x = p + (q - p) * (dp / (dp - dq));
    (b - a).cross(&(x - a)).dot(&n) > 0.0
        && (c - b).cross(&(x - b)).dot(&n) > 0.0
        && (a - c).cross(&(x - c)).dot(&n) > 0.0
}

/// The solid angle of triangle t seen from p (signed; Van Oosterom and Strackee 1983).
fn solid_angle(p: &Point3<f64>, t: &[Point3<f64>; 3]) -> f64 {
    let [a, b, c] = t.map(|v| v - p);
    let (la, lb, lc) = (a.norm(), b.norm(), c.norm());
    let det = a.dot(&b.cross(&c));
    let den = la * lb * lc + a.dot(&b) * lc + a.dot(&c) * lb + b.dot(&c) * la;
    2.0 * det.atan2(den)
}

/// The answer of [`MeshDistance::closest_point`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosestPoint {
    /// The closest point on the mesh.
    pub point: Point3<f64>,
    /// Signed distance from the query to `point` (negative inside).
    pub distance: f64,
    /// Unit outward pseudonormal of the closest feature (face, edge or vertex).
    pub normal: Vector3<f64>,
    /// The closest triangle.
    pub triangle: usize,
}

/// How [`SignedDistanceField::compute_with`] fills the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SdfMethod {
    /// Exact distances in a narrow band, closest-triangle propagation outside it, signs
    /// flood-filled from the band (fast; far nodes are an upper bound, almost always
    /// exact).
    #[default]
    BandAndPropagate,
    /// One exact tree query per node (slow; every node exact).
    Exact,
}

/// The default enlargement of the cubic box about the mesh's bounding box (thesis 3.11,
/// Vega's `computeDistanceField` default).
pub const DEFAULT_ENLARGE: f64 = 1.5;
/// The default half-width of the exact band, in cells.
pub const DEFAULT_BAND: f64 = 3.0;

/// Options of [`SignedDistanceField::compute_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SdfOptions {
    /// Cells per side of the cubic grid (nodes: resolution + 1 per side).
    pub resolution: usize,
    /// Side of the cubic box over the largest side of the mesh's bounding box (>= 1).
    pub enlarge: f64,
    pub method: SdfMethod,
    /// Half-width of the exact band in cells (>= 1: the sign flood fill needs it).
    pub band: f64,
}

impl Default for SdfOptions {
    fn default() -> Self {
        SdfOptions {
            resolution: 128,
            enlarge: DEFAULT_ENLARGE,
            method: SdfMethod::BandAndPropagate,
            band: DEFAULT_BAND,
        }
    }
}

impl SdfOptions {
    pub(crate) fn validate(&self) -> Result<(), SdfError> {
        if self.resolution == 0 {
            return Err(SdfError::ZeroResolution);
        }
        if !(self.enlarge.is_finite() && self.enlarge >= 1.0) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "box enlargement {} must be a finite number >= 1",
                    self.enlarge
                ),
            });
        }
        if !(self.band.is_finite() && self.band >= 1.0) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "band width {} cells must be a finite number >= 1 (the sign flood fill needs a band at least one cell wide)",
                    self.band
                ),
            });
        }
        Ok(())
    }
}

/// A stage of a field computation, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdfStage {
    /// Exact per-node queries ([`SdfMethod::Exact`]); counts z-slices.
    Exact,
    /// The narrow band; counts slabs of z-planes.
    Band,
    /// Closest-triangle propagation; counts sweeps.
    Propagate,
    /// Sign flood fill; counts signed nodes.
    Sign,
    /// Polygon soups: marching tetrahedra of the offset surface; counts z-layers of cells.
    Isosurface,
    /// Polygon soups: dropping enclosed components; counts components.
    Components,
}

impl fmt::Display for SdfStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SdfStage::Exact => "exact queries",
            SdfStage::Band => "narrow band",
            SdfStage::Propagate => "propagation sweeps",
            SdfStage::Sign => "sign flood fill",
            SdfStage::Isosurface => "offset surface",
            SdfStage::Components => "enclosed components",
        })
    }
}

/// A progress report: `done` of `total` units of `stage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdfProgress {
    pub stage: SdfStage,
    pub done: u64,
    pub total: u64,
}

/// A progress callback (called from worker threads).
pub type ProgressFn<'a> = &'a (dyn Fn(SdfProgress) + Sync);

/// Memory above which a field is refused before allocation (16 GiB; the machines have 24).
pub const MAX_SDF_BYTES: u64 = 16 << 30;

/// Nodes of a cubic grid with `resolution` cells per side (saturating).
fn node_count(resolution: usize) -> u64 {
    (resolution as u64).saturating_add(1).saturating_pow(3)
}

/// Peak bytes of [`SignedDistanceField::compute_with`] for a mesh of `triangles`
/// triangles: per node, the 8-byte working slot plus the 4-byte result (band method),
/// or the per-slice rows plus the flattened result (exact); per triangle, its corners
/// (72 bytes) and a few slab-bucket entries.
pub fn estimate_bytes(resolution: usize, method: SdfMethod, triangles: usize) -> u64 {
    let nodes = node_count(resolution);
    match method {
        SdfMethod::Exact => nodes.saturating_mul(8),
        SdfMethod::BandAndPropagate => nodes
            .saturating_mul(band::SLOT_BYTES + 4)
            .saturating_add((triangles as u64).saturating_mul(72 + 16)),
    }
}

/// Refuses `bytes` above [`MAX_SDF_BYTES`].
pub(crate) fn check_memory(resolution: usize, bytes: u64) -> Result<(), SdfError> {
    if bytes > MAX_SDF_BYTES {
        return Err(SdfError::TooLarge {
            resolution,
            bytes,
            limit: MAX_SDF_BYTES,
        });
    }
    Ok(())
}

/// The cubic grid of `resolution` cells per side over `bounds` enlarged by `enlarge`
/// about its centre.
pub(crate) fn cubic_grid(bounds: &Aabb, resolution: usize, enlarge: f64) -> Result<Grid, SdfError> {
    let side = bounds.extent().max() * enlarge;
    if !(side.is_finite() && side > 0.0) {
        return Err(SdfError::DegenerateBox { side });
    }
    Ok(Grid {
        origin: bounds.center() - Vector3::repeat(side / 2.0),
        h: side / resolution as f64,
        nodes: [resolution + 1; 3],
    })
}

/// The unsigned distance to the triangles on `grid` by band and propagation
/// (`band_cells` >= 1).
pub(crate) fn unsigned_values(
    vertices: &[Point3<f64>],
    triangles: &[[usize; 3]],
    grid: &Grid,
    band_cells: f64,
    progress: ProgressFn,
) -> Vec<f32> {
    let (tris, slots, width) = band_and_propagate(vertices, triangles, grid, band_cells, progress);
    let fans = band::Fans::new(triangles, vertices.len());
    band::finish_unsigned(grid, &tris, &fans, &slots, width)
}

/// The exact band and the closest-triangle propagation shared by the unsigned and the
/// signed fields: the triangles' corners, the node slots and the band width.
fn band_and_propagate(
    vertices: &[Point3<f64>],
    triangles: &[[usize; 3]],
    grid: &Grid,
    band_cells: f64,
    progress: ProgressFn,
) -> (Vec<band::Tri>, Vec<band::Slot>, f64) {
    let tris = band::corners(vertices, triangles);
    let width = band_cells * grid.h;
    let mut slots = band::band(grid, &tris, width, &|done, total| {
        progress(SdfProgress {
            stage: SdfStage::Band,
            done,
            total,
        })
    });
    band::propagate(grid, &tris, &mut slots, width, &|done, total| {
        progress(SdfProgress {
            stage: SdfStage::Propagate,
            done,
            total,
        })
    });
    (tris, slots, width)
}

/// The signed distance on `grid` by band, propagation and sign flood fill.
fn band_signed_values(
    distance: &MeshDistance,
    grid: &Grid,
    band_cells: f64,
    progress: ProgressFn,
) -> Vec<f32> {
    let (tris, mut slots, width) = band_and_propagate(
        &distance.vertices,
        &distance.triangles,
        grid,
        band_cells,
        progress,
    );
    let fans = band::Fans::new(&distance.triangles, distance.vertices.len());
    let known = band::sign_band(grid, &tris, &fans, &mut slots, width, &|t, f| {
        distance.pseudonormal(t, f)
    });
    band::flood_sign(grid, &mut slots, known, &|done, total| {
        progress(SdfProgress {
            stage: SdfStage::Sign,
            done,
            total,
        })
    });
    slots.into_par_iter().map(|s| s.v).collect()
}

/// The signed distance on `grid` by one exact query per node, z-slices in parallel;
/// along each row the previous node's distance plus the spacing bounds the next one
/// (distance is 1-Lipschitz), which prunes the tree search to a few leaves.
fn exact_values(distance: &MeshDistance, grid: &Grid, progress: ProgressFn) -> Vec<f32> {
    let [nx, ny, nz] = grid.nodes;
    let h = grid.h;
    let done = std::sync::atomic::AtomicU64::new(0);
    let slices: Vec<Vec<f32>> = (0..nz)
        .into_par_iter()
        .map(|k| {
            let mut out = Vec::with_capacity(nx * ny);
            for j in 0..ny {
                let mut prev: Option<f64> = None;
                for i in 0..nx {
                    let p = grid.point(i, j, k);
                    // 1-Lipschitz: |d(p)| <= |d(prev)| + h (with a little slack).
                    let d = match prev {
                        Some(dp) => distance
                            .signed_distance_bounded(&p, dp.abs() + h * (1.0 + 1e-9))
                            .unwrap_or_else(|| distance.signed_distance(&p)),
                        None => distance.signed_distance(&p),
                    };
                    prev = Some(d);
                    out.push(d as f32);
                }
            }
            progress(SdfProgress {
                stage: SdfStage::Exact,
                done: done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                total: nz as u64,
            });
            out
        })
        .collect();
    slices.into_iter().flatten().collect()
}

/// The smallest node value on the box surface minus h/sqrt(2) (see
/// [`SignedDistanceField::boundary_min`]); infinity for an empty grid.
pub(crate) fn boundary_min(values: &[f32], cells: [usize; 3], spacing: f64) -> f32 {
    let [nx, ny, nz] = cells.map(|c| c + 1);
    let mut m = f32::INFINITY;
    for k in 0..nz {
        for j in 0..ny {
            let row = &values[(k * ny + j) * nx..][..nx];
            if k == 0 || j == 0 || k == nz - 1 || j == ny - 1 {
                m = row.iter().fold(m, |a, &b| a.min(b));
            } else {
                m = m.min(row[0]).min(row[nx - 1]);
            }
        }
    }
    (m as f64 - spacing * std::f64::consts::FRAC_1_SQRT_2) as f32
}

/// The largest absolute difference between adjacent node values (x fastest layout).
fn max_edge_difference(values: &[f32], cells: [usize; 3]) -> f32 {
    let [nx, ny, nz] = cells.map(|c| c + 1);
    let mut m = 0f32;
    for k in 0..nz {
        for j in 0..ny {
            let row = &values[(k * ny + j) * nx..][..nx];
            for w in row.windows(2) {
                m = m.max((w[1] - w[0]).abs());
            }
            if j + 1 < ny {
                let next = &values[(k * ny + j + 1) * nx..][..nx];
                m = row
                    .iter()
                    .zip(next)
                    .fold(m, |m, (a, b)| m.max((b - a).abs()));
            }
            if k + 1 < nz {
                let next = &values[((k + 1) * ny + j) * nx..][..nx];
                m = row
                    .iter()
                    .zip(next)
                    .fold(m, |m, (a, b)| m.max((b - a).abs()));
            }
        }
    }
    m
}

/// A signed distance field on a regular grid.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedDistanceField {
    /// Grid node (0, 0, 0).
    pub origin: Point3<f64>,
    /// Node spacing (cubic cells).
    pub spacing: f64,
    /// Cells per axis; nodes per axis are `cells + 1`.
    pub cells: [usize; 3],
    /// Node values, x fastest.
    pub values: Vec<f32>,
    /// A lower bound of the distance over the box surface: the smallest boundary node
    /// value minus h/sqrt(2), the farthest a surface point lies from its nearest node
    /// on the same face (distance is 1-Lipschitz), so the outside bound stays
    /// conservative between nodes.
    pub boundary_min: f32,
    /// The largest |difference| of adjacent node values over the spacing (1 for exact
    /// distances, up to rounding): with it, [`SignedDistanceField::lipschitz_bound`].
    pub max_slope: f32,
    /// `1 / spacing`, so lookups multiply instead of dividing.
    inv_spacing: f64,
}

/// Splits a grid coordinate into its cell (clamped to the last one) and the fraction.
#[inline(always)]
fn cell_and_fraction(x: f64, cells: usize) -> (usize, f64) {
    // x >= 0 here, so the cast truncates towards the floor.
    let i = (x as usize).min(cells.saturating_sub(1));
    (i, x - i as f64)
}

impl SignedDistanceField {
    /// Samples the signed distance of `distance` on a cubic box around the mesh bounding
    /// box, enlarged by `enlarge` about its centre, with `resolution` cells per side, by
    /// the default method ([`SdfMethod::BandAndPropagate`], band [`DEFAULT_BAND`] cells).
    /// `progress` is called with the units done in the current stage.
    pub fn compute(
        distance: &MeshDistance,
        resolution: usize,
        enlarge: f64,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Self, SdfError> {
        let opts = SdfOptions {
            resolution,
            enlarge,
            ..SdfOptions::default()
        };
        Self::compute_with(distance, &opts, &|p| progress(p.done as usize))
    }

    /// Samples the signed distance of `distance` on the cubic grid of `opts`. Refuses
    /// grids whose working memory ([`estimate_bytes`]) exceeds [`MAX_SDF_BYTES`] before
    /// allocating anything, and meshes whose components cross or nest
    /// ([`MeshDistance::check_solid`]).
    pub fn compute_with(
        distance: &MeshDistance,
        opts: &SdfOptions,
        progress: ProgressFn,
    ) -> Result<Self, SdfError> {
        opts.validate()?;
        check_memory(
            opts.resolution,
            estimate_bytes(opts.resolution, opts.method, distance.triangles.len()),
        )?;
        distance.check_solid()?;
        let grid = cubic_grid(&distance.bounding_box(), opts.resolution, opts.enlarge)?;
        Self::compute_on_grid(distance, &grid, opts, progress)
    }

    /// The field on a given grid (`opts.resolution` and `enlarge` are not used).
    pub(crate) fn compute_on_grid(
        distance: &MeshDistance,
        grid: &Grid,
        opts: &SdfOptions,
        progress: ProgressFn,
    ) -> Result<Self, SdfError> {
        opts.validate()?;
        let values = match opts.method {
            SdfMethod::Exact => exact_values(distance, grid, progress),
            SdfMethod::BandAndPropagate => band_signed_values(distance, grid, opts.band, progress),
        };
        let cells = grid.nodes.map(|n| n - 1);
        Self::from_values(grid.origin, grid.h, cells, values)
    }

    /// A field from its node values (x fastest, (cells + 1) per axis); computes
    /// `boundary_min`.
    pub fn from_values(
        origin: Point3<f64>,
        spacing: f64,
        cells: [usize; 3],
        values: Vec<f32>,
    ) -> Result<Self, SdfError> {
        if cells.contains(&0) {
            return Err(SdfError::ZeroResolution);
        }
        let nodes = cells
            .iter()
            .try_fold(1usize, |acc, &c| acc.checked_mul(c.checked_add(1)?));
        if nodes != Some(values.len()) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "{} values do not fill a grid of {cells:?} cells",
                    values.len()
                ),
            });
        }
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(SdfError::InvalidOption {
                what: format!("spacing {spacing} must be positive and finite"),
            });
        }
        let boundary_min = boundary_min(&values, cells, spacing);
        let max_slope = (max_edge_difference(&values, cells) as f64 / spacing) as f32;
        Ok(SignedDistanceField {
            origin,
            spacing,
            cells,
            values,
            boundary_min,
            max_slope,
            inv_spacing: 1.0 / spacing,
        })
    }

    /// The value of node (i, j, k).
    pub fn node(&self, i: usize, j: usize, k: usize) -> f32 {
        let (nx, ny) = (self.cells[0] + 1, self.cells[1] + 1);
        self.values[(k * ny + j) * nx + i]
    }

    /// The position of node (i, j, k).
    pub fn node_point(&self, i: usize, j: usize, k: usize) -> Point3<f64> {
        self.origin + Vector3::new(i as f64, j as f64, k as f64) * self.spacing
    }

    /// Grid coordinates of p (node units) and whether p lies in the box.
    #[inline(always)]
    fn grid_coordinates(&self, p: &Point3<f64>) -> ([f64; 3], bool) {
        let inv = self.inv_spacing;
        let x = (p.x - self.origin.x) * inv;
        let y = (p.y - self.origin.y) * inv;
        let z = (p.z - self.origin.z) * inv;
        let [cx, cy, cz] = self.cells;
        let inside =
            x >= 0.0 && y >= 0.0 && z >= 0.0 && x <= cx as f64 && y <= cy as f64 && z <= cz as f64;
        ([x, y, z], inside)
    }

    /// The eight node values of the cell with lowest corner (i, j, k), in the order
    /// v000, v100, v010, v110, v001, v101, v011, v111.
    #[inline(always)]
    fn cell_values(&self, i: usize, j: usize, k: usize) -> [f64; 8] {
        let nx = self.cells[0] + 1;
        let nxy = nx * (self.cells[1] + 1);
        let base = i + nx * j + nxy * k;
        let lo = &self.values[base..base + nx + 2];
        let hi = &self.values[base + nxy..base + nxy + nx + 2];
        [
            lo[0],
            lo[1],
            lo[nx],
            lo[nx + 1],
            hi[0],
            hi[1],
            hi[nx],
            hi[nx + 1],
        ]
        .map(f64::from)
    }

    /// The offset of grid coordinates outside the box from the nearest box point, in
    /// node units.
    #[inline(always)]
    fn outside_offset(&self, g: [f64; 3]) -> Vector3<f64> {
        let [cx, cy, cz] = self.cells.map(|c| c as f64);
        Vector3::new(
            g[0] - g[0].clamp(0.0, cx),
            g[1] - g[1].clamp(0.0, cy),
            g[2] - g[2].clamp(0.0, cz),
        )
    }

    /// Outside the box, the larger of two lower bounds of the distance: the thesis's
    /// `d_box + boundary_min` (3.11: any path to the surface first crosses the box), and
    /// `field(nearest box point) - d_box` (distance is 1-Lipschitz). The second makes the
    /// value continuous across the box faces, which temporal coherence relies on.
    #[cold]
    #[inline(never)]
    fn lookup_outside(&self, g: [f64; 3]) -> f64 {
        let off = self.outside_offset(g);
        let d_box = off.norm() * self.spacing;
        let on_box = self.trilinear([g[0] - off.x, g[1] - off.y, g[2] - off.z]);
        (d_box + self.boundary_min as f64).max(on_box - d_box)
    }

    /// A Lipschitz constant of [`SignedDistanceField::lookup`]: inside, each partial
    /// derivative of the trilinear interpolant is a blend of edge slopes, so the gradient
    /// is at most `sqrt(3) max_slope`; the outside bound adds at most 1.
    pub fn lipschitz_bound(&self) -> f64 {
        3f64.sqrt() * self.max_slope as f64 + 1.0
    }

    /// The field at p: trilinear inside the box; outside, the conservative lower bound of
    /// thesis 3.11 (see `lookup_outside`).
    #[inline]
    pub fn lookup(&self, p: &Point3<f64>) -> f64 {
        let (g, inside) = self.grid_coordinates(p);
        if !inside {
            return self.lookup_outside(g);
        }
        self.trilinear(g)
    }

    /// Trilinear interpolation at grid coordinates inside the box.
    #[inline(always)]
    fn trilinear(&self, g: [f64; 3]) -> f64 {
        let (i, fx) = cell_and_fraction(g[0], self.cells[0]);
        let (j, fy) = cell_and_fraction(g[1], self.cells[1]);
        let (k, fz) = cell_and_fraction(g[2], self.cells[2]);
        let v = self.cell_values(i, j, k);
        let c00 = v[0] + (v[1] - v[0]) * fx;
        let c10 = v[2] + (v[3] - v[2]) * fx;
        let c01 = v[4] + (v[5] - v[4]) * fx;
        let c11 = v[6] + (v[7] - v[6]) * fx;
        let c0 = c00 + (c10 - c00) * fy;
        let c1 = c01 + (c11 - c01) * fy;
        c0 + (c1 - c0) * fz
    }

    /// The gradient of [`lookup`](Self::lookup): of the trilinear interpolant inside the
    /// box (discontinuous across cell faces, like the interpolant's derivative), and of
    /// the outside bound (the unit vector from the nearest box point) outside it.
    pub fn gradient(&self, p: &Point3<f64>) -> Vector3<f64> {
        let (g, inside) = self.grid_coordinates(p);
        if !inside {
            let off = self.outside_offset(g);
            let len = off.norm();
            return if len > 0.0 { off / len } else { off };
        }
        let (i, fx) = cell_and_fraction(g[0], self.cells[0]);
        let (j, fy) = cell_and_fraction(g[1], self.cells[1]);
        let (k, fz) = cell_and_fraction(g[2], self.cells[2]);
        let v = self.cell_values(i, j, k);
        let lerp = |a: f64, b: f64, t: f64| a + (b - a) * t;
        // d/dx: x-differences interpolated in y and z; likewise for y and z.
        let dx = lerp(
            lerp(v[1] - v[0], v[3] - v[2], fy),
            lerp(v[5] - v[4], v[7] - v[6], fy),
            fz,
        );
        let dy = lerp(
            lerp(v[2] - v[0], v[3] - v[1], fx),
            lerp(v[6] - v[4], v[7] - v[5], fx),
            fz,
        );
        let dz = lerp(
            lerp(v[4] - v[0], v[5] - v[1], fx),
            lerp(v[6] - v[2], v[7] - v[3], fx),
            fy,
        );
        Vector3::new(dx, dy, dz) / self.spacing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field holding an affine function a + g . x: trilinear interpolation reproduces
    /// it exactly, so lookups and gradients can be checked to rounding.
    fn affine_field() -> (SignedDistanceField, f64, Vector3<f64>) {
        let (a, g) = (0.3, Vector3::new(0.5, -0.25, 0.8));
        let cells = [6, 5, 4];
        let (origin, h) = (Point3::new(-1.0, 0.5, 2.0), 0.25);
        let mut values = Vec::new();
        for k in 0..=cells[2] {
            for j in 0..=cells[1] {
                for i in 0..=cells[0] {
                    let p = origin + Vector3::new(i as f64, j as f64, k as f64) * h;
                    values.push((a + g.dot(&p.coords)) as f32);
                }
            }
        }
        let f = SignedDistanceField::from_values(origin, h, cells, values).unwrap();
        (f, a, g)
    }

    #[test]
    fn lookup_reproduces_affine_functions_and_bounds_outside() {
        let (f, a, g) = affine_field();
        // f32 node storage: values of order 3 round at ~2e-7.
        for p in [
            Point3::new(-0.9, 0.6, 2.1),
            Point3::new(0.49, 1.7, 2.99),
            Point3::new(0.5, 1.75, 3.0), // the far corner (last cell, fraction 1)
            Point3::new(-1.0, 0.5, 2.0),
        ] {
            assert!((f.lookup(&p) - (a + g.dot(&p.coords))).abs() < 1e-6, "{p}");
        }
        // Outside: the larger of distance-to-box + boundary_min and the value at the
        // nearest box point minus distance-to-box.
        for (p, q, d) in [
            (
                Point3::new(-2.0, 0.6, 2.1),
                Point3::new(-1.0, 0.6, 2.1),
                1.0f64,
            ),
            (
                Point3::new(1.5, 2.75, 3.0),
                Point3::new(0.5, 1.75, 3.0),
                2f64.sqrt(),
            ),
        ] {
            let expected = (d + f.boundary_min as f64).max(f.lookup(&q) - d);
            assert!((f.lookup(&p) - expected).abs() < 1e-12);
            assert!(f.lookup(&p) >= d + f.boundary_min as f64);
        }
        // Edge slopes of the affine field are |g_i| <= 0.8 (f32 rounding aside).
        assert!((f.max_slope - 0.8).abs() < 1e-5);
        assert!((f.lipschitz_bound() - (3f64.sqrt() * 0.8 + 1.0)).abs() < 1e-4);
        // Continuous across the box face.
        let inside = f.lookup(&Point3::new(-1.0 + 1e-12, 0.6, 2.1));
        let outside = f.lookup(&Point3::new(-1.0 - 1e-12, 0.6, 2.1));
        assert!((inside - outside).abs() < 1e-9);
    }

    /// Central differences of the lookup along each axis, step `e`.
    fn central_difference(f: &SignedDistanceField, p: &Point3<f64>, e: f64) -> Vector3<f64> {
        Vector3::from_fn(|a, _| {
            let mut q = *p;
            q[a] += e;
            let mut r = *p;
            r[a] -= e;
            (f.lookup(&q) - f.lookup(&r)) / (2.0 * e)
        })
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (f, _, g) = affine_field();
        let e = 1e-6;
        for p in [
            Point3::new(-0.83, 0.61, 2.13),
            Point3::new(0.11, 1.37, 2.71),
        ] {
            let grad = f.gradient(&p);
            // Affine field: the gradient is g up to the f32 rounding of node values
            // over one cell (2e-7 / 0.25).
            assert!((grad - g).norm() < 1e-5, "{grad} vs {g}");
            let fd = central_difference(&f, &p, e);
            // Central differences of a trilinear function inside one cell: exact up to
            // rounding (1e-16 / 1e-6).
            assert!((grad - fd).norm() < 1e-8, "{grad} vs {fd}");
        }
        // A non-affine cell: random node values, gradient against central differences.
        let mut s = 3u64;
        let values: Vec<f32> = (0..27)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                (s >> 40) as f32 / (1u64 << 24) as f32
            })
            .collect();
        let f = SignedDistanceField::from_values(Point3::origin(), 0.5, [2, 2, 2], values).unwrap();
        for p in [Point3::new(0.2, 0.3, 0.4), Point3::new(0.7, 0.9, 0.6)] {
            let grad = f.gradient(&p);
            let fd = central_difference(&f, &p, e);
            // Trilinear: quadratic error terms vanish in central differences up to e^2.
            assert!((grad - fd).norm() < 1e-7, "{grad} vs {fd}");
        }
        // Outside, the unit direction away from the box.
        let grad = f.gradient(&Point3::new(3.0, 0.5, 0.5));
        assert!((grad - Vector3::x()).norm() < 1e-15);
    }

    #[test]
    fn boundary_min_takes_only_boundary_nodes() {
        let mut values = vec![5.0f32; 27];
        values[13] = -10.0; // the centre node (1, 1, 1) is interior
        values[9 + 3] = 2.0; // node (0, 1, 1) is on the x = 0 face
        let m = boundary_min(&values, [2, 2, 2], 1.0);
        assert!((m as f64 - (2.0 - std::f64::consts::FRAC_1_SQRT_2)).abs() < 1e-6);
    }

    #[test]
    fn from_values_rejects_mismatched_grids() {
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 1.0, [1, 1, 1], vec![0.0; 7])
                .is_err()
        );
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 1.0, [0, 1, 1], vec![]).is_err()
        );
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 0.0, [1, 1, 1], vec![0.0; 8])
                .is_err()
        );
    }
}
