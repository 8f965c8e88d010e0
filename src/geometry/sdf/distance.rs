//! Exact signed distance to a closed triangle mesh (thesis 3.11; Baerentzen and Aanaes
//! 2005 for the sign).
//!
//! [`MeshDistance`] finds the closest point q over all triangles through a balanced
//! bounding-volume hierarchy of the mesh ([`crate::proximity::bvh::Bvh`], median splits;
//! its point query visits the nearer child first, prunes subtrees farther than the best
//! distance so far and does not allocate) and signs the distance with the angle-weighted
//! pseudonormal n(q) of the closest feature (face, edge or vertex):
//!
//! ```text
//!     d(p) = -|p - q|   if (p - q) . n(q) < 0,      d(p) = |p - q|   otherwise,
//!
//!     n(vertex v) = sum over faces f at v of alpha_f(v) n_f   (alpha: the corner angle)
//!     n(edge e)   = n_f1 + n_f2                             (the two faces of e)
//! ```
//!
//! which is the correct sign for any closed, consistently oriented surface. The module
//! also checks that a closed mesh bounds one well-defined solid
//! ([`MeshDistance::check_solid`]: components neither cross nor nest, the latter by the
//! winding number from solid angles, Van Oosterom and Strackee 1983).

use std::collections::HashMap;

use nalgebra::{Point3, Vector3};
use rayon::prelude::*;

use super::SdfError;
use crate::mesh::{Aabb, SurfaceMesh};
use crate::proximity::bvh::{Bvh, NearestTriangle};
use crate::proximity::exact::segment_pierces_triangle;
use crate::proximity::triangle::{normal_and_angles, Feature};

/// Exact signed distance to a closed triangle mesh.
#[derive(Debug, Clone)]
pub struct MeshDistance {
    pub(super) vertices: Vec<Point3<f64>>,
    pub(super) triangles: Vec<[usize; 3]>,
    face_normals: Vec<Vector3<f64>>,
    vertex_normals: Vec<Vector3<f64>>,
    edge_normals: HashMap<(usize, usize), Vector3<f64>>,
    tree: Bvh,
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
        Ok(MeshDistance {
            vertices: mesh.vertices.clone(),
            triangles: mesh.triangles.clone(),
            face_normals,
            vertex_normals,
            edge_normals,
            tree: Bvh::for_point_queries(mesh),
        })
    }

    /// The pseudonormal of a triangle's feature.
    pub(super) fn pseudonormal(&self, t: usize, f: Feature) -> Vector3<f64> {
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

    /// The distance to the closest triangle `near`, negative where `p` lies behind the
    /// pseudonormal of its closest feature.
    fn signed(&self, p: &Point3<f64>, near: &NearestTriangle) -> f64 {
        let d = near.distance_squared.sqrt();
        let n = self.pseudonormal(near.triangle, near.feature);
        if (p - near.point).dot(&n) < 0.0 {
            -d
        } else {
            d
        }
    }

    /// Signed distance (negative inside), searching only below |d| < `bound`; none when
    /// no triangle is that close, or when p is not finite or its distance overflows.
    pub fn signed_distance_bounded(&self, p: &Point3<f64>, bound: f64) -> Option<f64> {
        if !p.iter().all(|c| c.is_finite()) {
            return None;
        }
        let near = self.tree.nearest_triangle(p, bound * bound)?;
        Some(self.signed(p, &near))
    }

    /// The closest point of the mesh to p, with the signed distance (negative inside)
    /// and the unit outward angle-weighted pseudonormal of the closest feature; an error
    /// ([`SdfError::BadQuery`]) when p is not finite or so far away that its squared
    /// distance overflows.
    pub fn try_closest_point(&self, p: &Point3<f64>) -> Result<ClosestPoint, SdfError> {
        let bad = |reason| SdfError::BadQuery {
            point: [p.x, p.y, p.z],
            reason,
        };
        if !p.iter().all(|c| c.is_finite()) {
            return Err(bad("the query point is not finite"));
        }
        let near = self
            .tree
            .nearest_triangle(p, f64::INFINITY)
            .ok_or_else(|| {
                bad("the query point is so far from the mesh that its distance overflows")
            })?;
        Ok(ClosestPoint {
            point: near.point,
            distance: self.signed(p, &near),
            normal: self.pseudonormal(near.triangle, near.feature).normalize(),
            triangle: near.triangle,
        })
    }

    /// [`MeshDistance::try_closest_point`] for queries known to be finite and within
    /// range; otherwise (no panic) a point, distance and normal of NaN and triangle 0.
    pub fn closest_point(&self, p: &Point3<f64>) -> ClosestPoint {
        self.try_closest_point(p).unwrap_or(ClosestPoint {
            point: Point3::new(f64::NAN, f64::NAN, f64::NAN),
            distance: f64::NAN,
            normal: Vector3::new(f64::NAN, f64::NAN, f64::NAN),
            triangle: 0,
        })
    }

    /// Exact signed distance (negative inside); an error ([`SdfError::BadQuery`]) when p
    /// is not finite or its distance overflows.
    pub fn try_signed_distance(&self, p: &Point3<f64>) -> Result<f64, SdfError> {
        self.try_closest_point(p).map(|c| c.distance)
    }

    /// Exact signed distance (negative inside); NaN (no panic) where
    /// [`MeshDistance::try_signed_distance`] is an error.
    pub fn signed_distance(&self, p: &Point3<f64>) -> f64 {
        self.signed_distance_bounded(p, f64::INFINITY)
            .unwrap_or(f64::NAN)
    }

    /// The bounding box of the mesh (the root of the tree).
    pub fn bounding_box(&self) -> Aabb {
        self.tree.aabb()
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
                self.tree.any_triangle_near(&b, |u| {
                    if comp[u] == comp[t] {
                        return false;
                    }
                    let [a, bb, c] = self.triangles[u].map(|v| self.vertices[v]);
                    let crosses = segment_pierces_triangle(&p, &q, &[a, bb, c]);
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
