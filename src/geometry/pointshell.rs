//! Multi-resolution oriented pointshells by particle repulsion (thesis 3.8.1;
//! REFERENCE.md "Particle repulsion (3.8.1)", "Pointshell sampling (3.6)", "Nested point
//! tree (3.9)").
//!
//! A pointshell samples the level set T = { x : d(x) = offset } of a closed triangle mesh's
//! signed distance d (offset 0: the surface itself; offset > 0: an outward offset surface,
//! for thin parts and for the closed offset surface of a polygon soup). Each point carries
//! the unit *inward* normal of T, the direction of its penalty force (thesis 3.5).
//!
//! Levels. Level 0 holds N1 points; the points of levels 0..=i together number
//! N1 * 4^i, so level i >= 1 injects 3 * N1 * 4^(i-1) new points (the cumulative count
//! quadruples, which is REFERENCE.md's "each level has 4x the points at half the
//! radius": the set of levels 0..=i is the tree level L_(i+1) of 3.9, and it is that set
//! whose spacing halves). Each level's points are drawn by stratified area-weighted
//! random sampling of the mesh triangles (thesis: Turk 1992), projected onto T, then
//! relaxed by particle repulsion while all earlier levels stay frozen.
//!
//! Repulsion. Two particles at distance d < R push each other apart with the force
//! magnitude (the thesis's "gradient" of the radial potential)
//!
//! ```text
//!     f(d) = 2 (d/R)^3 - 3 (d/R)^2 + 1      (d < R),      f(d) = 0 (d >= R),
//! ```
//!
//! which falls smoothly from 1 at d = 0 to 0 with zero slope at d = R. One iteration
//! (Jacobi style: every move is computed from the same snapshot, then all are applied)
//! sums F_i = sum_j f(|p_i - p_j|) (p_i - p_j) / |p_i - p_j| over every particle j of
//! levels 0..=current (frozen ones included) found through a uniform hash grid
//! ([`PointGrid`], cell size R), removes the component along the normal of T, moves the
//! particle by eta * R * F_i (capped at half the target spacing) and projects it back
//! onto T: the closest point q of the mesh, plus `offset` along the outward unit
//! direction (the exact projection where the closest point is unique; iterated until
//! |d - offset| < 1e-10 of the mesh size, which replaces the thesis's Newton walk on a
//! sampled field). A level stops after `iterations` iterations or when the mean move
//! falls below `convergence` * R.
//!
//! Radius. With A the mesh area and N the cumulative count of levels 0..=i, the target
//! spacing is h = sqrt(A / N) and R = c h with c = [`PointshellParams::radius_factor`]
//! (default 2): about pi c^2 = 12.6 neighbours lie within R, so the kernels of a point's
//! first ring of neighbours overlap. R halves exactly from one level to the next, as in
//! the thesis.
//!
//! Normals. For offset 0, the angle-weighted pseudonormal of the mesh feature the
//! projected point lies on: a vertex or an edge within 1e-9 of the mesh's diagonal, else
//! the face (closest-point projection puts points pushed across a convex edge exactly on
//! the edge, where a face normal would be tangent to the neighbouring face). For
//! offset > 0, the gradient of the distance, (x - q) / |x - q|, which is the offset
//! surface's own normal. The stored normal is minus that (inward).
//!
//! The module also holds the deterministic random generator ([`SplitMix64`]), the
//! uniform grid ([`PointGrid`]) reused by the farthest-point ordering, the quality
//! figures ([`PointshellQuality`]) and the binary file format ([`Pointshell::write`]).

use std::ops::Range;
use std::path::{Path, PathBuf};

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use std::collections::HashMap;

use super::sdf::{ClosestPoint, MeshDistance, SdfError};
use super::triangle::normal_and_angles;
use crate::mesh::{Aabb, SurfaceMesh};

/// Largest pointshell this module builds (points of all levels together).
pub const MAX_POINTS: usize = 1 << 28;

/// Projections onto the level set stop when |d - offset| is below this fraction of the
/// mesh's bounding-box diagonal.
pub const PROJECTION_TOLERANCE: f64 = 1e-10;

/// Errors building a pointshell or computing its quality.
#[derive(Debug, thiserror::Error)]
pub enum PointshellError {
    /// The first level needs at least 4 points (a tetrahedron's worth of samples).
    #[error("the first level needs at least {minimum} points, {requested} were requested")]
    TooFewPoints { requested: usize, minimum: usize },
    /// Zero levels requested.
    #[error("at least one level is needed")]
    NoLevels,
    /// The requested levels would exceed [`MAX_POINTS`] (or overflow).
    #[error("{levels} levels from {first} points exceed the limit of {limit} points")]
    TooManyPoints {
        first: usize,
        levels: usize,
        limit: usize,
    },
    /// A parameter outside its valid range.
    #[error("invalid parameter {name} = {value}: {reason}")]
    InvalidParameter {
        name: &'static str,
        value: f64,
        reason: &'static str,
    },
    /// The mesh has no area to sample.
    #[error("the mesh has no triangles with positive area to sample")]
    ZeroArea,
    /// The signed distance of the mesh could not be built (typically: not closed).
    #[error("no signed distance for this mesh: the pointshell samples a closed surface (for a polygon soup, build its closed offset surface first and sample that)")]
    Distance {
        #[from]
        source: SdfError,
    },
    /// A point set too small for the requested levels (farthest-point path).
    #[error("{points} points are too few for {levels} levels with branching {branching}: at least {needed} are needed")]
    PointSetTooSmall {
        points: usize,
        levels: usize,
        branching: usize,
        needed: usize,
    },
    /// An empty point set.
    #[error("the point set is empty")]
    EmptyPointSet,
    /// Points and normals of different lengths.
    #[error("{points} points but {normals} normals")]
    NormalsMismatch { points: usize, normals: usize },
    /// A point or normal that is NaN, infinite or (for a normal) zero.
    #[error("{what} {index} is not finite (or is a zero normal)")]
    NonFinite { what: &'static str, index: usize },
    /// A level index past the last level.
    #[error("level {level} requested but the pointshell has {levels} levels")]
    NoSuchLevel { level: usize, levels: usize },
    /// A start index outside the point set.
    #[error("start index {start} is outside the {points} points")]
    StartOutOfRange { start: usize, points: usize },
    /// An inconsistent pointshell (bad level offsets, lengths or normals).
    #[error("inconsistent pointshell: {0}")]
    Inconsistent(String),
}

/// Errors reading or writing a pointshell file, naming the file and the byte offset.
#[derive(Debug, thiserror::Error)]
pub enum PointshellFileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a pointshell file (bad magic bytes at offset 0)")]
    BadMagic { path: PathBuf },
    #[error("{path}: byte offset 8: unsupported version {version} (this reader knows 1)")]
    Version { path: PathBuf, version: u32 },
    #[error("{path}: byte offset {offset}: file ends early: expected {expected}")]
    Truncated {
        path: PathBuf,
        offset: u64,
        expected: String,
    },
    #[error("{path}: byte offset {offset}: {reason}")]
    Invalid {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
}

/// A deterministic 64-bit generator (SplitMix64, Steele, Lea and Flood 2014): small,
/// fast, and good enough for sampling; the same seed gives the same sequence everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The repulsion force magnitude 2 t^3 - 3 t^2 + 1 at t = d / R (thesis 3.8.1), zero for
/// t >= 1 and 1 for t <= 0.
pub fn repulsion_kernel(t: f64) -> f64 {
    if t >= 1.0 {
        0.0
    } else if t <= 0.0 {
        1.0
    } else {
        (2.0 * t - 3.0) * t * t + 1.0
    }
}

/// Cumulative point counts of levels 0..L: N1, 4 N1, 16 N1, ... (the end offsets of the
/// levels), checked against [`MAX_POINTS`].
pub fn cumulative_counts(first: usize, levels: usize) -> Result<Vec<usize>, PointshellError> {
    if levels == 0 {
        return Err(PointshellError::NoLevels);
    }
    if first < 4 {
        return Err(PointshellError::TooFewPoints {
            requested: first,
            minimum: 4,
        });
    }
    let mut counts = Vec::with_capacity(levels);
    let mut n = first;
    for i in 0..levels {
        if i > 0 {
            n = n.saturating_mul(4);
        }
        if n > MAX_POINTS {
            return Err(PointshellError::TooManyPoints {
                first,
                levels,
                limit: MAX_POINTS,
            });
        }
        counts.push(n);
    }
    Ok(counts)
}

/// A uniform grid over a fixed point set: the points sorted by cell (counting sort), with
/// each cell's run of points found through a dense prefix-sum table, so one row of cells
/// along x is one contiguous slice. Used for the repulsion neighbours, nearest-neighbour
/// queries and the farthest-point updates.
///
/// Points are addressed by their *grid position* (0..len, the sorted order);
/// [`PointGrid::index`] maps a grid position back to the caller's index.
#[derive(Debug, Clone)]
pub struct PointGrid {
    origin: Point3<f64>,
    cell: f64,
    dims: [usize; 3],
    /// Cell c holds grid positions start[c]..start[c + 1].
    start: Vec<u32>,
    index: Vec<u32>,
    points: Vec<Point3<f64>>,
}

impl PointGrid {
    /// Builds the grid with cells of about `cell_size` (enlarged if the grid would have
    /// more than max(8 n, 4096) cells; a non-positive or non-finite size picks one from the
    /// bounding box). Indices are stored as u32: at most [`MAX_POINTS`] points are
    /// expected. Non-finite points are kept (in cell 0) but never match a query.
    pub fn new(points: &[Point3<f64>], cell_size: f64) -> Self {
        let finite = points.iter().filter(|p| p.iter().all(|c| c.is_finite()));
        let bounds = Aabb::from_points(finite);
        let (origin, extent) = if bounds.is_empty() {
            (Point3::origin(), Vector3::zeros())
        } else {
            (bounds.min, bounds.extent())
        };
        let largest = extent.max().max(f64::MIN_POSITIVE);
        let mut cell = if cell_size.is_finite() && cell_size > 0.0 {
            cell_size
        } else {
            largest
        };
        let max_cells = (8 * points.len()).max(4096) as f64;
        let dims_for = |cell: f64| -> [usize; 3] {
            let mut d = [1usize; 3];
            for (k, dk) in d.iter_mut().enumerate() {
                let c = (extent[k] / cell).floor();
                *dk = if c.is_finite() && c >= 0.0 {
                    (c.min(1e9) as usize) + 1
                } else {
                    1
                };
            }
            d
        };
        let mut dims = dims_for(cell);
        while dims.iter().map(|&d| d as f64).product::<f64>() > max_cells {
            cell *= 1.25;
            dims = dims_for(cell);
        }
        let mut grid = PointGrid {
            origin,
            cell,
            dims,
            start: Vec::new(),
            index: Vec::new(),
            points: Vec::new(),
        };
        let ncells = dims[0] * dims[1] * dims[2];
        let cells: Vec<usize> = points.iter().map(|p| grid.cell_of(p)).collect();
        let mut start = vec![0u32; ncells + 1];
        for &c in &cells {
            start[c + 1] += 1;
        }
        for c in 0..ncells {
            start[c + 1] += start[c];
        }
        let mut fill: Vec<u32> = start[..ncells].to_vec();
        let mut index = vec![0u32; points.len()];
        for (i, &c) in cells.iter().enumerate() {
            index[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
        grid.points = index.iter().map(|&i| points[i as usize]).collect();
        grid.start = start;
        grid.index = index;
        grid
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the grid holds no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The cell size actually used.
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// The point at grid position `g`.
    pub fn point(&self, g: usize) -> &Point3<f64> {
        &self.points[g]
    }

    /// The points in grid order.
    pub fn points(&self) -> &[Point3<f64>] {
        &self.points
    }

    /// The caller's index of the point at grid position `g`.
    pub fn index(&self, g: usize) -> usize {
        self.index[g] as usize
    }

    fn coord(&self, x: f64, k: usize) -> usize {
        let c = ((x - self.origin[k]) / self.cell).floor();
        if c.is_nan() || c <= 0.0 {
            0
        } else if c >= (self.dims[k] - 1) as f64 {
            self.dims[k] - 1
        } else {
            c as usize
        }
    }

    fn coords(&self, p: &Point3<f64>) -> [usize; 3] {
        [self.coord(p.x, 0), self.coord(p.y, 1), self.coord(p.z, 2)]
    }

    fn cell_of(&self, p: &Point3<f64>) -> usize {
        let [x, y, z] = self.coords(p);
        x + self.dims[0] * (y + self.dims[1] * z)
    }

    /// Grid positions of the cells x0..=x1 in row (y, z).
    fn row(&self, x0: usize, x1: usize, y: usize, z: usize) -> Range<usize> {
        let r = self.dims[0] * (y + self.dims[1] * z);
        self.start[r + x0] as usize..self.start[r + x1 + 1] as usize
    }

    /// Calls `f(g, d2)` for every point at grid position g with squared distance
    /// d2 = |point - p|^2 <= r^2.
    pub fn for_each_within(&self, p: &Point3<f64>, r: f64, mut f: impl FnMut(usize, f64)) {
        if self.points.is_empty() || r.is_nan() || r < 0.0 {
            return;
        }
        let r2 = r * r;
        let d = Vector3::repeat(r);
        let lo = self.coords(&(p - d));
        let hi = self.coords(&(p + d));
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for g in self.row(lo[0], hi[0], y, z) {
                    let d2 = (self.points[g] - p).norm_squared();
                    if d2 <= r2 {
                        f(g, d2);
                    }
                }
            }
        }
    }

    /// The nearest point to `p` other than grid position `skip`: (grid position, squared
    /// distance), or None when there is no other point. Searches rings of cells outward
    /// and stops once the ring's distance exceeds the best found.
    pub fn nearest(&self, p: &Point3<f64>, skip: Option<usize>) -> Option<(usize, f64)> {
        let c = self.coords(p).map(|v| v as isize);
        let dims = self.dims.map(|v| v as isize);
        let max_ring = dims.iter().copied().max().unwrap_or(1);
        let mut best: Option<(usize, f64)> = None;
        let consider = |range: Range<usize>, best: &mut Option<(usize, f64)>| {
            for g in range {
                if Some(g) == skip {
                    continue;
                }
                let d2 = (self.points[g] - p).norm_squared();
                if best.is_none_or(|(_, b)| d2 < b) {
                    *best = Some((g, d2));
                }
            }
        };
        for r in 0..=max_ring {
            let (z0, z1) = ((c[2] - r).max(0), (c[2] + r).min(dims[2] - 1));
            let (y0, y1) = ((c[1] - r).max(0), (c[1] + r).min(dims[1] - 1));
            let (x0, x1) = ((c[0] - r).max(0), (c[0] + r).min(dims[0] - 1));
            for z in z0..=z1 {
                for y in y0..=y1 {
                    let shell = (z - c[2]).abs() == r || (y - c[1]).abs() == r;
                    if shell {
                        consider(
                            self.row(x0 as usize, x1 as usize, y as usize, z as usize),
                            &mut best,
                        );
                    } else {
                        for x in [c[0] - r, c[0] + r] {
                            if x >= 0 && x < dims[0] {
                                let x = x as usize;
                                consider(self.row(x, x, y as usize, z as usize), &mut best);
                            }
                        }
                    }
                }
            }
            if let Some((_, d2)) = best {
                let bound = r as f64 * self.cell;
                if d2 <= bound * bound {
                    break;
                }
            }
        }
        best
    }
}

/// Stratified area-weighted random sampling of a triangle mesh: the k-th of n samples
/// falls at the area fraction (k + u) / n of the triangles laid end to end, so every
/// triangle receives its area's share of samples up to one, and the position inside the
/// triangle is uniform (Turk 1992's square-root barycentric rule).
#[derive(Debug, Clone)]
pub struct SurfaceSampler {
    triangles: Vec<[Point3<f64>; 3]>,
    /// cumulative[t] = area of triangles 0..=t.
    cumulative: Vec<f64>,
}

impl SurfaceSampler {
    /// The sampler of `mesh`; errors when the mesh has no area.
    pub fn new(mesh: &SurfaceMesh) -> Result<Self, PointshellError> {
        let mut triangles = Vec::with_capacity(mesh.triangles.len());
        let mut cumulative = Vec::with_capacity(mesh.triangles.len());
        let mut total = 0.0;
        for t in &mesh.triangles {
            if t.iter().any(|&v| v >= mesh.vertices.len()) {
                continue;
            }
            let [a, b, c] = t.map(|v| mesh.vertices[v]);
            let area = 0.5 * (b - a).cross(&(c - a)).norm();
            if area.is_finite() && area > 0.0 {
                total += area;
                triangles.push([a, b, c]);
                cumulative.push(total);
            }
        }
        if triangles.is_empty() || total.is_nan() || total <= 0.0 {
            return Err(PointshellError::ZeroArea);
        }
        Ok(SurfaceSampler {
            triangles,
            cumulative,
        })
    }

    /// Total area.
    pub fn area(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    /// The point at area fraction `u` in [0, 1) with in-triangle coordinates (r1, r2).
    fn point_at(&self, u: f64, r1: f64, r2: f64) -> Point3<f64> {
        let target = u * self.area();
        let t = self
            .cumulative
            .partition_point(|&c| c <= target)
            .min(self.triangles.len() - 1);
        let [a, b, c] = self.triangles[t];
        let s = r1.sqrt();
        Point3::from(a.coords * (1.0 - s) + b.coords * (s * (1.0 - r2)) + c.coords * (s * r2))
    }

    /// `n` stratified samples.
    pub fn sample(&self, n: usize, rng: &mut SplitMix64) -> Vec<Point3<f64>> {
        (0..n)
            .map(|k| {
                let u = (k as f64 + rng.next_f64()) / n as f64;
                let (r1, r2) = (rng.next_f64(), rng.next_f64());
                self.point_at(u, r1, r2)
            })
            .collect()
    }
}

/// Angle-weighted pseudonormals of a mesh's faces, edges and vertices (the definitions
/// of [`MeshDistance`]), used to give a point that lies on an edge or a vertex up to
/// rounding that feature's normal: closest-point projection sends every point pushed
/// across a convex edge onto the edge, where the closest-point query may classify it as
/// lying on either face, and a face normal there is tangent to the other face.
#[derive(Debug, Clone)]
struct FeatureNormals {
    face: Vec<Vector3<f64>>,
    edge: HashMap<(usize, usize), Vector3<f64>>,
    vertex: Vec<Vector3<f64>>,
}

impl FeatureNormals {
    fn new(mesh: &SurfaceMesh) -> Self {
        let mut face = Vec::with_capacity(mesh.triangles.len());
        let mut edge: HashMap<(usize, usize), Vector3<f64>> = HashMap::new();
        let mut vertex = vec![Vector3::zeros(); mesh.vertices.len()];
        for t in &mesh.triangles {
            if t.iter().any(|&v| v >= mesh.vertices.len()) {
                face.push(Vector3::zeros());
                continue;
            }
            let [a, b, c] = t.map(|v| mesh.vertices[v]);
            let (n, angles) = normal_and_angles(&a, &b, &c);
            face.push(n);
            for k in 0..3 {
                vertex[t[k]] += n * angles[k];
                let (u, v) = (t[k], t[(k + 1) % 3]);
                *edge
                    .entry((u.min(v), u.max(v)))
                    .or_insert_with(Vector3::zeros) += n;
            }
        }
        FeatureNormals { face, edge, vertex }
    }

    /// The unit outward pseudonormal at p on triangle t: of a vertex within `tol` of p,
    /// else of an edge within `tol`, else of the face; None if t is not a triangle of
    /// the mesh or the normal is degenerate.
    fn at(&self, mesh: &SurfaceMesh, p: &Point3<f64>, t: usize, tol: f64) -> Option<Vector3<f64>> {
        let tri = mesh.triangles.get(t)?;
        let v = [
            *mesh.vertices.get(tri[0])?,
            *mesh.vertices.get(tri[1])?,
            *mesh.vertices.get(tri[2])?,
        ];
        let mut n = *self.face.get(t)?;
        if let Some(k) = (0..3).find(|&k| (p - v[k]).norm() <= tol) {
            n = self.vertex[tri[k]];
        } else if let Some(k) = (0..3).find(|&k| segment_distance(p, &v[k], &v[(k + 1) % 3]) <= tol)
        {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            n = *self.edge.get(&(a.min(b), a.max(b)))?;
        }
        let len = n.norm();
        (len > 0.0 && len.is_finite()).then(|| n / len)
    }
}

/// Distance from p to the segment ab.
fn segment_distance(p: &Point3<f64>, a: &Point3<f64>, b: &Point3<f64>) -> f64 {
    let ab = b - a;
    let len2 = ab.norm_squared();
    let s = if len2 > 0.0 {
        ((p - a).dot(&ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (p - (a + ab * s)).norm()
}

/// The level set d = offset of a closed mesh, with the projection onto it.
#[derive(Debug, Clone)]
pub struct LevelSet<'a> {
    distance: &'a MeshDistance,
    mesh: &'a SurfaceMesh,
    features: FeatureNormals,
    offset: f64,
    tolerance: f64,
}

impl<'a> LevelSet<'a> {
    /// The level set at `offset` (>= 0) of `mesh`, whose distance is `distance`; the
    /// projection tolerance is [`PROJECTION_TOLERANCE`] times the bounding-box diagonal.
    pub fn new(distance: &'a MeshDistance, mesh: &'a SurfaceMesh, offset: f64) -> Self {
        let b = mesh.bounding_box();
        let diag = if b.is_empty() { 1.0 } else { b.extent().norm() };
        LevelSet {
            distance,
            mesh,
            features: FeatureNormals::new(mesh),
            offset,
            tolerance: PROJECTION_TOLERANCE * diag.max(f64::MIN_POSITIVE),
        }
    }

    /// The absolute projection tolerance.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Projects x onto the level set: returns the point and the unit outward normal there.
    /// Offset 0: the closest mesh point and the pseudonormal of its feature (the vertex
    /// or edge it lies on up to 10x the tolerance, else the face; the closest-point
    /// query's own feature if the mesh does not match). Offset > 0: q + offset u with q the
    /// closest point and u = sign(d) (x - q) / |x - q| the distance gradient, repeated
    /// until |d - offset| <= tolerance (at most 16 times); the normal is u.
    pub fn project(&self, x: &Point3<f64>) -> (Point3<f64>, Vector3<f64>) {
        let cp = self.distance.closest_point(x);
        if self.offset <= 0.0 {
            let n = self
                .features
                .at(self.mesh, &cp.point, cp.triangle, 10.0 * self.tolerance)
                .unwrap_or(cp.normal);
            return (cp.point, n);
        }
        let gradient = |x: &Point3<f64>, cp: &ClosestPoint| {
            let away = x - cp.point;
            let len = away.norm();
            if len > self.tolerance {
                away * (cp.distance.signum() / len)
            } else {
                cp.normal
            }
        };
        let mut x = *x;
        let mut cp = cp;
        for _ in 0..16 {
            let u = gradient(&x, &cp);
            if (cp.distance - self.offset).abs() <= self.tolerance {
                return (x, u);
            }
            x = cp.point + u * self.offset;
            cp = self.distance.closest_point(&x);
        }
        let u = gradient(&x, &cp);
        (x, u)
    }
}

/// Parameters of [`sample_pointshell`].
#[derive(Debug, Clone, PartialEq)]
pub struct PointshellParams {
    /// N1: points of level 0 (at least 4).
    pub first_level_points: usize,
    /// Number of levels (at least 1); levels 0..=i hold N1 * 4^i points.
    pub levels: usize,
    /// Level-set value sampled: 0 for the surface, > 0 for the outward offset surface.
    pub offset: f64,
    /// Most repulsion iterations per level (0: the unrelaxed random sampling).
    pub iterations: usize,
    /// Seed of the random initial positions; the same seed gives the same pointshell.
    pub seed: u64,
    /// eta: a particle moves eta * R times its net (tangential) force per iteration.
    pub step: f64,
    /// c in R = c sqrt(area / cumulative count).
    pub radius_factor: f64,
    /// A level stops early when the mean move of its points falls below this times R.
    pub convergence: f64,
}

impl Default for PointshellParams {
    fn default() -> Self {
        PointshellParams {
            first_level_points: 1330,
            levels: 4,
            offset: 0.0,
            iterations: 40,
            seed: 1,
            step: 0.15,
            radius_factor: 2.0,
            convergence: 1e-3,
        }
    }
}

impl PointshellParams {
    /// Checks every parameter; returns the cumulative counts.
    pub fn validate(&self) -> Result<Vec<usize>, PointshellError> {
        let positive = |name, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(PointshellError::InvalidParameter {
                    name,
                    value,
                    reason: "must be positive and finite",
                })
            }
        };
        if !(self.offset.is_finite() && self.offset >= 0.0) {
            return Err(PointshellError::InvalidParameter {
                name: "offset",
                value: self.offset,
                reason: "must be zero or positive (an outward offset)",
            });
        }
        positive("step", self.step)?;
        positive("radius_factor", self.radius_factor)?;
        if !(self.convergence.is_finite() && self.convergence >= 0.0) {
            return Err(PointshellError::InvalidParameter {
                name: "convergence",
                value: self.convergence,
                reason: "must be zero or positive",
            });
        }
        cumulative_counts(self.first_level_points, self.levels)
    }
}

/// Progress of [`sample_pointshell`], reported once a level is initialized (iteration 0)
/// and after each of its iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointshellProgress {
    /// Level being relaxed (0-based).
    pub level: usize,
    /// Number of levels.
    pub levels: usize,
    /// Iterations done in this level.
    pub iteration: usize,
    /// Most iterations this level may take.
    pub max_iterations: usize,
    /// New points of this level.
    pub points: usize,
    /// Mean move of the last iteration divided by R (0 before the first).
    pub mean_move: f64,
    /// Whether the level is finished (converged or out of iterations).
    pub done: bool,
}

/// A multi-resolution oriented pointshell: points ordered by level.
#[derive(Debug, Clone, PartialEq)]
pub struct Pointshell {
    /// Positions; level i occupies `points[level_offsets[i]..level_offsets[i + 1]]`.
    pub points: Vec<Point3<f64>>,
    /// Unit inward normals, one per point.
    pub normals: Vec<Vector3<f64>>,
    /// Level boundaries: `level_offsets[0]` = 0, the last entry = points.len(), one more entry
    /// than levels.
    pub level_offsets: Vec<usize>,
    /// Per level: the repulsion radius R (repulsion shells) or the covering radius of the
    /// levels up to it (farthest-point shells; 0 for the last level).
    pub radii: Vec<f64>,
    /// The level-set value the points sample (0: the surface itself); 0 for shells built
    /// from arbitrary point sets.
    pub offset: f64,
}

/// Quality of the points of levels 0..=level (see [`Pointshell::quality`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointshellQuality {
    /// The deepest level included.
    pub level: usize,
    /// Points of levels 0..=level.
    pub count: usize,
    /// Target spacing h = sqrt(area / count).
    pub target_spacing: f64,
    /// Largest gap over the surface samples (distance to the nearest shell point)
    /// divided by h. A perfect triangular lattice gives 1.075 / sqrt(3) = 0.62.
    pub coverage: f64,
    /// Mean gap over the surface samples divided by h.
    pub mean_gap: f64,
    /// Coefficient of variation (standard deviation / mean) of the nearest-neighbour
    /// distance among the shell points: 0 for a perfect lattice, about 0.52 for
    /// uniform random points on a plane.
    pub uniformity: f64,
    /// Smallest nearest-neighbour distance divided by h.
    pub min_separation: f64,
}

/// Coverage and uniformity figures of a point set against samples of the surface it
/// should cover (the pure core of [`Pointshell::quality`]); `area` gives the target
/// spacing sqrt(area / points.len()).
pub fn point_set_quality(
    points: &[Point3<f64>],
    surface_samples: &[Point3<f64>],
    area: f64,
) -> Result<PointshellQuality, PointshellError> {
    if points.len() < 2 {
        return Err(PointshellError::EmptyPointSet);
    }
    let h = (area / points.len() as f64).sqrt();
    let grid = PointGrid::new(points, h);
    let gaps: Vec<f64> = surface_samples
        .par_iter()
        .map(|s| {
            grid.nearest(s, None)
                .map_or(f64::INFINITY, |(_, d2)| d2.sqrt())
        })
        .collect();
    let nn: Vec<f64> = (0..grid.len())
        .into_par_iter()
        .map(|g| {
            grid.nearest(grid.point(g), Some(g))
                .map_or(0.0, |(_, d2)| d2.sqrt())
        })
        .collect();
    let max_gap = gaps.iter().copied().fold(0.0, f64::max);
    let mean_gap = if gaps.is_empty() {
        0.0
    } else {
        gaps.iter().sum::<f64>() / gaps.len() as f64
    };
    let (_, cv) = mean_and_cv(&nn);
    let min_nn = nn.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(PointshellQuality {
        level: 0,
        count: points.len(),
        target_spacing: h,
        coverage: max_gap / h,
        mean_gap: mean_gap / h,
        uniformity: cv,
        min_separation: min_nn / h,
    })
}

/// Whether n is a unit vector to 1e-6 (false for NaN).
fn is_unit(n: &Vector3<f64>) -> bool {
    (n.norm() - 1.0).abs() <= 1e-6
}

/// Mean and coefficient of variation (population standard deviation / mean) of values.
pub fn mean_and_cv(values: &[f64]) -> (f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, if mean > 0.0 { var.sqrt() / mean } else { 0.0 })
}

impl Pointshell {
    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.level_offsets.len().saturating_sub(1)
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The index range of level `i` (empty past the last level).
    pub fn level(&self, i: usize) -> Range<usize> {
        match (self.level_offsets.get(i), self.level_offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// Checks the invariants: lengths, level offsets from 0 to len and increasing,
    /// one radius per level, finite points and unit normals (to 1e-6).
    pub fn validate(&self) -> Result<(), PointshellError> {
        let bad = |s: String| Err(PointshellError::Inconsistent(s));
        if self.normals.len() != self.points.len() {
            return bad(format!(
                "{} points but {} normals",
                self.points.len(),
                self.normals.len()
            ));
        }
        if self.level_offsets.first() != Some(&0)
            || self.level_offsets.last() != Some(&self.points.len())
        {
            return bad("level offsets must run from 0 to the point count".into());
        }
        if self.level_offsets.windows(2).any(|w| w[0] >= w[1]) {
            return bad("level offsets must increase strictly".into());
        }
        if self.radii.len() != self.num_levels() {
            return bad(format!(
                "{} radii for {} levels",
                self.radii.len(),
                self.num_levels()
            ));
        }
        for (i, (p, n)) in self.points.iter().zip(&self.normals).enumerate() {
            if !p.iter().all(|c| c.is_finite()) {
                return Err(PointshellError::NonFinite {
                    what: "point",
                    index: i,
                });
            }
            if !is_unit(n) {
                return Err(PointshellError::NonFinite {
                    what: "normal",
                    index: i,
                });
            }
        }
        Ok(())
    }

    /// Coverage and uniformity of levels 0..=level on the level set this shell samples
    /// (the surface of `mesh`, or its offset surface at [`Pointshell::offset`]).
    ///
    /// Coverage: `samples` stratified random points are drawn on the mesh (seeded by
    /// `seed`) and projected onto the level set; each one's gap is its distance to the
    /// nearest shell point of levels 0..=level; coverage = max gap / h with the target
    /// spacing h = sqrt(A / count), A the mesh area (for offset > 0 the offset surface
    /// is somewhat larger, so h is slightly small there). Uniformity: coefficient of
    /// variation of the nearest-neighbour distances within levels 0..=level.
    pub fn quality(
        &self,
        mesh: &SurfaceMesh,
        distance: &MeshDistance,
        level: usize,
        samples: usize,
        seed: u64,
    ) -> Result<PointshellQuality, PointshellError> {
        if level >= self.num_levels() {
            return Err(PointshellError::NoSuchLevel {
                level,
                levels: self.num_levels(),
            });
        }
        let sampler = SurfaceSampler::new(mesh)?;
        let set = LevelSet::new(distance, mesh, self.offset);
        let raw = sampler.sample(samples, &mut SplitMix64::new(seed));
        let on_set: Vec<Point3<f64>> = if self.offset > 0.0 {
            raw.par_iter().map(|x| set.project(x).0).collect()
        } else {
            raw
        };
        let end = self.level_offsets[level + 1];
        let mut q = point_set_quality(&self.points[..end], &on_set, sampler.area())?;
        q.level = level;
        Ok(q)
    }

    /// Writes the binary pointshell format (little endian throughout):
    ///
    /// ```text
    /// offset       size  field
    /// 0            8     magic "HPSHELL1"
    /// 8            4     u32 version = 1
    /// 12           4     u32 level count L
    /// 16           8     u64 point count N
    /// 24           8     f64 level-set offset
    /// 32           8 L   u64 level end offsets level_offsets[1..=L] (the last = N)
    /// 32 + 8 L     8 L   f64 radii[0..L]
    /// 32 + 16 L    48 N  per point, in level order: f64 x y z, then f64 nx ny nz (unit,
    ///                    inward)
    /// ```
    pub fn write(&self, path: &Path) -> Result<(), PointshellFileError> {
        let io = |source| PointshellFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut buf = Vec::with_capacity(32 + 16 * self.num_levels() + 48 * self.len());
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&1u32.to_le_bytes());
        buf.extend_from_slice(&(self.num_levels() as u32).to_le_bytes());
        buf.extend_from_slice(&(self.len() as u64).to_le_bytes());
        buf.extend_from_slice(&self.offset.to_le_bytes());
        for &o in self.level_offsets.iter().skip(1) {
            buf.extend_from_slice(&(o as u64).to_le_bytes());
        }
        for &r in &self.radii {
            buf.extend_from_slice(&r.to_le_bytes());
        }
        for (p, n) in self.points.iter().zip(&self.normals) {
            for v in p.iter().chain(n.iter()) {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        std::fs::write(path, buf).map_err(io)
    }

    /// Reads a file written by [`Pointshell::write`], checking every invariant of
    /// [`Pointshell::validate`]; errors name the file and the byte offset.
    pub fn read(path: &Path) -> Result<Pointshell, PointshellFileError> {
        let bytes = std::fs::read(path).map_err(|source| PointshellFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        parse_pointshell(&bytes, path)
    }
}

const MAGIC: &[u8; 8] = b"HPSHELL1";

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    path: &'a Path,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], PointshellFileError> {
        match self.bytes.get(self.at..self.at.saturating_add(n)) {
            Some(s) if self.at.checked_add(n).is_some() => {
                self.at += n;
                Ok(s)
            }
            _ => Err(PointshellFileError::Truncated {
                path: self.path.to_path_buf(),
                offset: self.at as u64,
                expected: what.to_string(),
            }),
        }
    }

    fn u32(&mut self, what: &str) -> Result<u32, PointshellFileError> {
        let s = self.take(4, what)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, PointshellFileError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    fn f64(&mut self, what: &str) -> Result<f64, PointshellFileError> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    fn invalid(&self, offset: usize, reason: String) -> PointshellFileError {
        PointshellFileError::Invalid {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            reason,
        }
    }
}

fn parse_pointshell(bytes: &[u8], path: &Path) -> Result<Pointshell, PointshellFileError> {
    let mut c = Cursor { bytes, at: 0, path };
    if c.take(8, "the magic bytes")? != MAGIC {
        return Err(PointshellFileError::BadMagic {
            path: path.to_path_buf(),
        });
    }
    let version = c.u32("the version")?;
    if version != 1 {
        return Err(PointshellFileError::Version {
            path: path.to_path_buf(),
            version,
        });
    }
    let levels = c.u32("the level count")? as usize;
    let count_at = c.at;
    let count = c.u64("the point count")?;
    let offset_at = c.at;
    let offset = c.f64("the offset")?;
    if levels == 0 {
        return Err(c.invalid(12, "zero levels".into()));
    }
    let expected = 32u64
        .checked_add(16 * levels as u64)
        .and_then(|h| count.checked_mul(48).and_then(|b| b.checked_add(h)));
    match expected {
        Some(e) if e == bytes.len() as u64 => {}
        Some(e) if e > bytes.len() as u64 => {
            return Err(PointshellFileError::Truncated {
                path: path.to_path_buf(),
                offset: bytes.len() as u64,
                expected: format!(
                    "{e} bytes for {levels} levels and {count} points, found {}",
                    bytes.len()
                ),
            })
        }
        _ => {
            return Err(c.invalid(
                count_at,
                format!(
                    "{} bytes do not match {levels} levels and {count} points",
                    bytes.len()
                ),
            ))
        }
    }
    if !(offset.is_finite() && offset >= 0.0) {
        return Err(c.invalid(offset_at, format!("offset {offset} is not >= 0 and finite")));
    }
    let count = count as usize;
    let mut level_offsets = vec![0usize];
    for i in 0..levels {
        let at = c.at;
        let o = c.u64("a level offset")? as usize;
        if o <= level_offsets[i] || o > count || (i + 1 == levels && o != count) {
            return Err(c.invalid(
                at,
                format!(
                    "level {i} ends at {o}: level ends must increase to the point count {count}"
                ),
            ));
        }
        level_offsets.push(o);
    }
    let mut radii = Vec::with_capacity(levels);
    for i in 0..levels {
        let at = c.at;
        let r = c.f64("a radius")?;
        if !(r.is_finite() && r >= 0.0) {
            return Err(c.invalid(
                at,
                format!("radius {r} of level {i} is not >= 0 and finite"),
            ));
        }
        radii.push(r);
    }
    let mut points = Vec::with_capacity(count);
    let mut normals = Vec::with_capacity(count);
    for i in 0..count {
        let at = c.at;
        let mut v = [0.0; 6];
        for x in &mut v {
            *x = c.f64("a point")?;
        }
        let p = Point3::new(v[0], v[1], v[2]);
        let n = Vector3::new(v[3], v[4], v[5]);
        if !v.iter().all(|x| x.is_finite()) || !is_unit(&n) {
            return Err(c.invalid(
                at,
                format!("point {i} is not finite or its normal is not a unit vector"),
            ));
        }
        points.push(p);
        normals.push(n);
    }
    Ok(Pointshell {
        points,
        normals,
        level_offsets,
        radii,
        offset,
    })
}

/// The net repulsion force on the particle at `p` (caller index `me`) from every particle
/// of `grid` within `radius`: sum_j f(d_j / R) (p - p_j) / d_j. Coincident particles
/// (d = 0) have no direction and are skipped.
pub fn repulsion_force(grid: &PointGrid, p: &Point3<f64>, me: usize, radius: f64) -> Vector3<f64> {
    let mut force = Vector3::zeros();
    grid.for_each_within(p, radius, |g, d2| {
        if d2 > 0.0 && grid.index(g) != me {
            let d = d2.sqrt();
            force += (p - grid.point(g)) * (repulsion_kernel(d / radius) / d);
        }
    });
    force
}

/// The force with its component along `normal` removed, then scaled by eta R and capped
/// in length at `cap`.
fn tangent_step(force: &Vector3<f64>, normal: &Vector3<f64>, eta_r: f64, cap: f64) -> Vector3<f64> {
    let tangent = force - normal * force.dot(normal);
    let step = tangent * eta_r;
    let len = step.norm();
    if len > cap && len > 0.0 {
        step * (cap / len)
    } else {
        step
    }
}

/// Samples a multi-resolution pointshell of the level set d = `params.offset` of a closed
/// mesh by particle repulsion (see the module documentation): `distance` must be the
/// [`MeshDistance`] of `mesh`. `progress` is called after each level's initialization and
/// after each iteration. The output is deterministic for a given seed (the Jacobi update
/// makes it independent of the thread count).
pub fn sample_pointshell(
    distance: &MeshDistance,
    mesh: &SurfaceMesh,
    params: &PointshellParams,
    progress: &(dyn Fn(PointshellProgress) + Sync),
) -> Result<Pointshell, PointshellError> {
    let counts = params.validate()?;
    let sampler = SurfaceSampler::new(mesh)?;
    let area = sampler.area();
    let offset = params.offset;
    let set = LevelSet::new(distance, mesh, offset);
    let total = *counts.last().unwrap_or(&0);
    let mut points: Vec<Point3<f64>> = Vec::with_capacity(total);
    let mut outward: Vec<Vector3<f64>> = Vec::with_capacity(total);
    let mut level_offsets = vec![0usize];
    let mut radii = Vec::with_capacity(counts.len());
    let mut rng = SplitMix64::new(params.seed);
    for (level, &cumulative) in counts.iter().enumerate() {
        let begin = points.len();
        let new = cumulative - begin;
        let spacing = (area / cumulative as f64).sqrt();
        let radius = params.radius_factor * spacing;
        let cap = 0.5 * spacing;
        let init: Vec<(Point3<f64>, Vector3<f64>)> = sampler
            .sample(new, &mut rng)
            .par_iter()
            .map(|x| set.project(x))
            .collect();
        for (p, n) in init {
            points.push(p);
            outward.push(n);
        }
        let report = |iteration, mean_move, done| {
            progress(PointshellProgress {
                level,
                levels: counts.len(),
                iteration,
                max_iterations: params.iterations,
                points: new,
                mean_move,
                done,
            })
        };
        report(0, 0.0, params.iterations == 0);
        for iteration in 1..=params.iterations {
            let grid = PointGrid::new(&points, radius);
            let moved: Vec<(Point3<f64>, Vector3<f64>, f64)> = (begin..points.len())
                .into_par_iter()
                .map(|i| {
                    let p = points[i];
                    let force = repulsion_force(&grid, &p, i, radius);
                    let step = tangent_step(&force, &outward[i], params.step * radius, cap);
                    let (q, n) = set.project(&(p + step));
                    (q, n, (q - p).norm())
                })
                .collect();
            let mut sum = 0.0;
            for (k, (q, n, d)) in moved.into_iter().enumerate() {
                points[begin + k] = q;
                outward[begin + k] = n;
                sum += d;
            }
            let mean_move = sum / new.max(1) as f64 / radius;
            let done = mean_move < params.convergence || iteration == params.iterations;
            report(iteration, mean_move, done);
            if done {
                break;
            }
        }
        level_offsets.push(points.len());
        radii.push(radius);
    }
    Ok(Pointshell {
        points,
        normals: outward.into_iter().map(|n| -n).collect(),
        level_offsets,
        radii,
        offset,
    })
}

/// Builds the [`MeshDistance`] of `mesh` and samples its pointshell; a mesh that is not
/// closed gives [`PointshellError::Distance`] with a hint to use the offset surface of
/// the soup.
pub fn sample_pointshell_of_mesh(
    mesh: &SurfaceMesh,
    params: &PointshellParams,
    progress: &(dyn Fn(PointshellProgress) + Sync),
) -> Result<Pointshell, PointshellError> {
    params.validate()?;
    let distance = MeshDistance::new(mesh)?;
    sample_pointshell(&distance, mesh, params, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_points(n: usize, seed: u64) -> Vec<Point3<f64>> {
        let mut r = SplitMix64::new(seed);
        (0..n)
            .map(|_| Point3::new(r.next_f64(), r.next_f64(), 0.3 * r.next_f64()))
            .collect()
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs of the reference C implementation with state 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
        let mut r = SplitMix64::new(7);
        for _ in 0..1000 {
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn kernel_is_one_at_zero_and_flat_zero_at_r() {
        assert_eq!(repulsion_kernel(0.0), 1.0);
        assert_eq!(repulsion_kernel(1.0), 0.0);
        assert_eq!(repulsion_kernel(2.0), 0.0);
        assert!((repulsion_kernel(0.5) - 0.5).abs() < 1e-15);
        // Zero slope at both ends (central differences of a cubic are exact up to
        // rounding, and here the derivative 6t^2 - 6t vanishes).
        let e = 1e-6;
        assert!((repulsion_kernel(e) - 1.0).abs() < 1e-11);
        assert!(repulsion_kernel(1.0 - e) < 1e-11);
        // Decreasing on (0, 1).
        let mut prev = 1.0;
        for k in 1..100 {
            let v = repulsion_kernel(k as f64 / 100.0);
            assert!(v < prev);
            prev = v;
        }
    }

    #[test]
    fn cumulative_counts_quadruple_and_reject_bad_requests() {
        assert_eq!(
            cumulative_counts(1330, 4).unwrap(),
            vec![1330, 5320, 21280, 85120]
        );
        assert!(matches!(
            cumulative_counts(3, 2),
            Err(PointshellError::TooFewPoints { .. })
        ));
        assert!(matches!(
            cumulative_counts(10, 0),
            Err(PointshellError::NoLevels)
        ));
        assert!(matches!(
            cumulative_counts(1000, 40),
            Err(PointshellError::TooManyPoints { .. })
        ));
    }

    #[test]
    fn grid_range_and_nearest_match_brute_force() {
        let pts = random_points(3000, 3);
        for cell in [0.01, 0.05, 0.3, 5.0] {
            let grid = PointGrid::new(&pts, cell);
            let queries = random_points(50, 11);
            for q in &queries {
                let mut found: Vec<usize> = Vec::new();
                grid.for_each_within(q, 0.08, |g, _| found.push(grid.index(g)));
                found.sort_unstable();
                let brute: Vec<usize> = (0..pts.len())
                    .filter(|&i| (pts[i] - q).norm_squared() <= 0.08 * 0.08)
                    .collect();
                assert_eq!(found, brute);
                let (g, d2) = grid.nearest(q, None).unwrap();
                let best = pts
                    .iter()
                    .map(|p| (p - q).norm_squared())
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(d2, best);
                assert_eq!((pts[grid.index(g)] - q).norm_squared(), best);
            }
            // Nearest other point of a member, and a query far outside the box.
            let g0 = 17;
            let (g, _) = grid.nearest(grid.point(g0), Some(g0)).unwrap();
            assert_ne!(g, g0);
            let far = Point3::new(10.0, -5.0, 3.0);
            let best = pts
                .iter()
                .map(|p| (p - far).norm_squared())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(grid.nearest(&far, None).unwrap().1, best);
        }
    }

    #[test]
    fn grid_handles_empty_single_and_degenerate_sets() {
        let empty = PointGrid::new(&[], 0.1);
        assert!(empty.is_empty());
        assert!(empty.nearest(&Point3::origin(), None).is_none());
        let one = PointGrid::new(&[Point3::new(1.0, 2.0, 3.0)], 0.0);
        assert_eq!(one.nearest(&Point3::origin(), None).unwrap().0, 0);
        assert!(one.nearest(&Point3::origin(), Some(0)).is_none());
        // All points on a line: two flat axes.
        let line: Vec<_> = (0..100).map(|i| Point3::new(i as f64, 0.0, 0.0)).collect();
        let g = PointGrid::new(&line, 1e-9);
        let mut n = 0;
        g.for_each_within(&Point3::new(50.0, 0.0, 0.0), 2.5, |_, _| n += 1);
        assert_eq!(n, 5);
    }

    #[test]
    fn tangent_step_drops_the_normal_part_and_caps() {
        let n = Vector3::z();
        let s = tangent_step(&Vector3::new(1.0, 0.0, 5.0), &n, 0.1, 1.0);
        assert!((s - Vector3::new(0.1, 0.0, 0.0)).norm() < 1e-15);
        let s = tangent_step(&Vector3::new(30.0, 40.0, 1.0), &n, 1.0, 2.0);
        assert!((s.norm() - 2.0).abs() < 1e-12 && s.z == 0.0);
    }

    #[test]
    fn repulsion_force_of_a_symmetric_ring_vanishes_and_a_pair_pushes_apart() {
        let mut pts = vec![Point3::origin()];
        for k in 0..6 {
            let a = k as f64 * std::f64::consts::PI / 3.0;
            pts.push(Point3::new(a.cos(), a.sin(), 0.0));
        }
        let grid = PointGrid::new(&pts, 2.0);
        assert!(repulsion_force(&grid, &pts[0], 0, 2.0).norm() < 1e-12);
        let pair = [Point3::origin(), Point3::new(0.5, 0.0, 0.0)];
        let grid = PointGrid::new(&pair, 1.0);
        let f = repulsion_force(&grid, &pair[0], 0, 1.0);
        assert!((f - Vector3::new(-0.5, 0.0, 0.0)).norm() < 1e-15);
    }

    #[test]
    fn stratified_samples_lie_on_the_triangles_with_area_shares() {
        // Two triangles, areas 1 and 3, in the planes z = 0 and z = 1.
        let mesh = SurfaceMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(2.0, 0.0, 0.0),
                Point3::new(0.0, 1.0, 0.0),
                Point3::new(0.0, 0.0, 1.0),
                Point3::new(3.0, 0.0, 1.0),
                Point3::new(0.0, 2.0, 1.0),
            ],
            triangles: vec![[0, 1, 2], [3, 4, 5]],
        };
        let s = SurfaceSampler::new(&mesh).unwrap();
        assert!((s.area() - 4.0).abs() < 1e-12);
        let pts = s.sample(400, &mut SplitMix64::new(5));
        // z is 0 or 1 up to rounding in the barycentric combination.
        let upper = pts.iter().filter(|p| p.z > 0.5).count();
        // Stratification: each triangle gets its share up to one sample.
        assert!((upper as i64 - 300).abs() <= 1, "{upper}");
        for p in &pts {
            assert!(p.z.abs() < 1e-15 || (p.z - 1.0).abs() < 1e-15);
            let inside = if p.z < 0.5 {
                p.x >= 0.0 && p.y >= 0.0 && p.x / 2.0 + p.y <= 1.0 + 1e-12
            } else {
                p.x >= 0.0 && p.y >= 0.0 && p.x / 3.0 + p.y / 2.0 <= 1.0 + 1e-12
            };
            assert!(inside, "{p}");
        }
        let empty = SurfaceMesh::default();
        assert!(matches!(
            SurfaceSampler::new(&empty),
            Err(PointshellError::ZeroArea)
        ));
    }

    #[test]
    fn cv_of_constant_values_is_zero() {
        assert_eq!(mean_and_cv(&[2.0, 2.0, 2.0]), (2.0, 0.0));
        let (m, cv) = mean_and_cv(&[1.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((cv - 0.5).abs() < 1e-15);
    }
}
