//! Signed distance fields of closed triangle meshes (thesis 3.11): exact point-triangle
//! distances through an AABB tree, the sign from the angle-weighted pseudonormal of the
//! closest feature (Baerentzen and Aanaes 2005), sampled on a regular grid over a cubic
//! box enlarged 1.5x (the thesis's setting), and looked up trilinearly inside the box
//! and by the conservative bound d(p) >= d_box(p) + min(field on the box surface)
//! outside it.
//!
//! The grid is filled in parallel by z-slices; along each row the previous node's
//! distance plus the node spacing bounds the next one (distance is 1-Lipschitz), which
//! prunes the tree search to a few leaves.

use std::collections::HashMap;

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::triangle::{closest_point, normal_and_angles, Feature};
use crate::mesh::{Aabb, SurfaceMesh};

/// Errors building distance fields.
#[derive(Debug, thiserror::Error)]
pub enum SdfError {
    #[error("the mesh is not closed ({boundary} boundary edges, {nonmanifold} non-manifold edges): a signed field needs a closed surface; use the polygon-soup path (unsigned field, offset surface, then signed)")]
    NotClosed { boundary: usize, nonmanifold: usize },
    #[error("the mesh has no triangles")]
    Empty,
    #[error("resolution {resolution} needs about {bytes} bytes, above the limit of {limit} bytes on this machine")]
    TooLarge {
        resolution: usize,
        bytes: u64,
        limit: u64,
    },
    #[error("resolution must be at least 1")]
    ZeroResolution,
}

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
}

/// Memory above which a field is refused before allocation (16 GiB; the machines have 24).
pub const MAX_SDF_BYTES: u64 = 16 << 30;

impl SignedDistanceField {
    /// Samples `distance` on a cubic box around the mesh bounding box, enlarged by
    /// `enlarge` about its centre, with `resolution` cells per side. `progress` is called
    /// with the number of finished z-slices.
    pub fn compute(
        distance: &MeshDistance,
        resolution: usize,
        enlarge: f64,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Self, SdfError> {
        if resolution == 0 {
            return Err(SdfError::ZeroResolution);
        }
        let n = resolution + 1;
        let bytes = (n as u64).pow(3) * 4;
        if bytes > MAX_SDF_BYTES {
            return Err(SdfError::TooLarge {
                resolution,
                bytes,
                limit: MAX_SDF_BYTES,
            });
        }
        let b = distance.bounding_box();
        let side = b.extent().max() * enlarge;
        let origin = b.center() - Vector3::repeat(side / 2.0);
        let h = side / resolution as f64;
        let done = std::sync::atomic::AtomicUsize::new(0);
        let slices: Vec<Vec<f32>> = (0..n)
            .into_par_iter()
            .map(|k| {
                let mut out = Vec::with_capacity(n * n);
                for j in 0..n {
                    let mut prev: Option<f64> = None;
                    for i in 0..n {
                        let p = origin + Vector3::new(i as f64, j as f64, k as f64) * h;
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
                progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                out
            })
            .collect();
        let values: Vec<f32> = slices.into_iter().flatten().collect();
        let idx = |i: usize, j: usize, k: usize| (k * n + j) * n + i;
        let mut boundary_min = f32::INFINITY;
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    if i == 0 || j == 0 || k == 0 || i == n - 1 || j == n - 1 || k == n - 1 {
                        boundary_min = boundary_min.min(values[idx(i, j, k)]);
                    }
                }
            }
        }
        Ok(SignedDistanceField {
            origin,
            spacing: h,
            cells: [resolution; 3],
            values,
            boundary_min: (boundary_min as f64 - h * std::f64::consts::FRAC_1_SQRT_2) as f32,
        })
    }

    fn node(&self, i: usize, j: usize, k: usize) -> f32 {
        let (nx, ny) = (self.cells[0] + 1, self.cells[1] + 1);
        self.values[(k * ny + j) * nx + i]
    }

    /// The field at p: trilinear inside the box; outside, the conservative lower bound
    /// distance-to-box + smallest boundary value (thesis 3.11).
    pub fn lookup(&self, p: &Point3<f64>) -> f64 {
        let rel = (p - self.origin) / self.spacing;
        let max = Vector3::new(
            self.cells[0] as f64,
            self.cells[1] as f64,
            self.cells[2] as f64,
        );
        let inside = (0..3).all(|a| rel[a] >= 0.0 && rel[a] <= max[a]);
        if !inside {
            let clamped = Vector3::from_fn(|a, _| rel[a].clamp(0.0, max[a]));
            let d_box = (rel - clamped).norm() * self.spacing;
            return d_box + self.boundary_min as f64;
        }
        let cell = |a: usize| (rel[a].floor() as usize).min(self.cells[a] - 1);
        let (i, j, k) = (cell(0), cell(1), cell(2));
        let (fx, fy, fz) = (rel.x - i as f64, rel.y - j as f64, rel.z - k as f64);
        let v = |di: usize, dj: usize, dk: usize| self.node(i + di, j + dj, k + dk) as f64;
        let c00 = v(0, 0, 0) * (1.0 - fx) + v(1, 0, 0) * fx;
        let c10 = v(0, 1, 0) * (1.0 - fx) + v(1, 1, 0) * fx;
        let c01 = v(0, 0, 1) * (1.0 - fx) + v(1, 0, 1) * fx;
        let c11 = v(0, 1, 1) * (1.0 - fx) + v(1, 1, 1) * fx;
        let c0 = c00 * (1.0 - fy) + c10 * fy;
        let c1 = c01 * (1.0 - fy) + c11 * fy;
        c0 * (1.0 - fz) + c1 * fz
    }
}
