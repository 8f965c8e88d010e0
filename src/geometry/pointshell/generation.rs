//! Seeding a level and projecting onto the level set (thesis 3.8.1, "Pointshell
//! sampling (3.6)").
//!
//! Seeding. Each level's new points are drawn by stratified area-weighted random
//! sampling of the mesh triangles (thesis: Turk 1992): the k-th of n samples falls at
//! the area fraction (k + u) / n of the triangles laid end to end, and inside its
//! triangle (a, b, c) at
//!
//! ```text
//!     x = (1 - sqrt(r1)) a + sqrt(r1) (1 - r2) b + sqrt(r1) r2 c,      u, r1, r2 ~ U[0, 1),
//! ```
//!
//! which is uniform over the triangle. The random numbers come from [`SplitMix64`], so
//! the same seed gives the same samples on every machine.
//!
//! Projection. A point x goes onto T = { d = offset } as the closest point q of the
//! mesh, plus `offset` along the outward unit direction u = sign(d) (x - q) / |x - q|
//! (the exact projection where the closest point is unique), iterated until
//! |d - offset| < [`PROJECTION_TOLERANCE`] times the mesh diagonal (this replaces the
//! thesis's Newton walk on a sampled field).
//!
//! Normals. For offset 0, the angle-weighted pseudonormal of the mesh feature the
//! projected point lies on: a vertex or an edge within 1e-9 of the mesh's diagonal, else
//! the face (closest-point projection puts points pushed across a convex edge exactly on
//! the edge, where a face normal would be tangent to the neighbouring face). For
//! offset > 0, the gradient of the distance, (x - q) / |x - q|, which is the offset
//! surface's own normal. The pointshell stores minus that (inward).

// The seeded generator of the sampling: the project's one SplitMix64, in the devices
// crate (the lowest), so that every user draws the same sequence from a seed.
use haptics_devices::rng::SplitMix64;
use std::collections::HashMap;

use nalgebra::{Point3, Vector3};

use super::{PointshellError, PROJECTION_TOLERANCE};
use crate::geometry::sdf::{ClosestPoint, MeshDistance};
use crate::mesh::SurfaceMesh;
use crate::proximity::triangle::normal_and_angles;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
