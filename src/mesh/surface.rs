//! Triangle surface meshes: the geometry that is rendered, voxelized, sampled into a
//! pointshell and turned into a signed distance field.

use nalgebra::{Point3, Vector3};

/// An axis-aligned bounding box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aabb {
    /// The corner with the smallest coordinates (m).
    pub min: Point3<f64>,
    /// The corner with the largest coordinates (m).
    pub max: Point3<f64>,
}

impl Aabb {
    /// The empty box (min = +inf, max = -inf); growing it by a point gives that point.
    pub fn empty() -> Self {
        Aabb {
            min: Point3::new(f64::INFINITY, f64::INFINITY, f64::INFINITY),
            max: Point3::new(f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY),
        }
    }

    /// The smallest box holding `points` ([`Aabb::empty`] when there are none).
    pub fn from_points<'a>(points: impl IntoIterator<Item = &'a Point3<f64>>) -> Self {
        let mut b = Aabb::empty();
        for p in points {
            b.grow(p);
        }
        b
    }

    /// Grows the box to hold `p`.
    pub fn grow(&mut self, p: &Point3<f64>) {
        self.min = self.min.inf(p);
        self.max = self.max.sup(p);
    }

    /// Whether the box holds no point (min above max on some axis, as for [`Aabb::empty`]).
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    /// The edge lengths `max - min` (m); negative infinity for the empty box.
    pub fn extent(&self) -> Vector3<f64> {
        self.max - self.min
    }

    /// The midpoint of `min` and `max`.
    pub fn center(&self) -> Point3<f64> {
        nalgebra::center(&self.min, &self.max)
    }

    /// Whether the two boxes meet: no axis separates them (a box with a NaN bound is never
    /// shown apart, so a query that culls by boxes keeps it).
    pub fn overlaps(&self, other: &Aabb) -> bool {
        !(0..3).any(|k| self.min[k] > other.max[k] || self.max[k] < other.min[k])
    }

    /// The squared distance from `p` to the box (0 inside): the lower bound of every
    /// point-mesh distance query that culls by boxes.
    pub fn distance_squared(&self, p: &Point3<f64>) -> f64 {
        let mut d = 0.0;
        for k in 0..3 {
            let v = if p[k] < self.min[k] {
                self.min[k] - p[k]
            } else if p[k] > self.max[k] {
                p[k] - self.max[k]
            } else {
                0.0
            };
            d += v * v;
        }
        d
    }
}

/// A triangle mesh (polygons are triangulated by the readers as fans).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SurfaceMesh {
    /// Vertex positions (m).
    pub vertices: Vec<Point3<f64>>,
    /// Counter-clockwise seen from outside for closed, consistently oriented meshes.
    pub triangles: Vec<[usize; 3]>,
}

impl SurfaceMesh {
    /// The bounding box of the vertices (including any no triangle uses).
    pub fn bounding_box(&self) -> Aabb {
        Aabb::from_points(&self.vertices)
    }

    /// The three corner positions of triangle `t`, in its index order.
    pub fn triangle(&self, t: usize) -> [Point3<f64>; 3] {
        let [a, b, c] = self.triangles[t];
        [self.vertices[a], self.vertices[b], self.vertices[c]]
    }

    /// Total area.
    pub fn area(&self) -> f64 {
        (0..self.triangles.len())
            .map(|t| {
                let [a, b, c] = self.triangle(t);
                0.5 * (b - a).cross(&(c - a)).norm()
            })
            .sum()
    }

    /// Enclosed volume by the divergence theorem; meaningful only for closed, consistently
    /// oriented meshes (positive when the triangles face outward).
    pub fn signed_volume(&self) -> f64 {
        (0..self.triangles.len())
            .map(|t| {
                let [a, b, c] = self.triangle(t);
                a.coords.dot(&b.coords.cross(&c.coords)) / 6.0
            })
            .sum()
    }

    /// Number of edges used by exactly one triangle (0 for a closed mesh) and by more than
    /// two (non-manifold).
    pub fn boundary_and_nonmanifold_edges(&self) -> (usize, usize) {
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(3 * self.triangles.len());
        for t in &self.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                edges.push((a.min(b), a.max(b)));
            }
        }
        edges.sort_unstable();
        let (mut boundary, mut nonmanifold) = (0, 0);
        let mut i = 0;
        while i < edges.len() {
            let mut j = i + 1;
            while j < edges.len() && edges[j] == edges[i] {
                j += 1;
            }
            match j - i {
                1 => boundary += 1,
                2 => {}
                _ => nonmanifold += 1,
            }
            i = j;
        }
        (boundary, nonmanifold)
    }

    /// Number of connected components (triangles linked through shared vertices).
    pub fn connected_components(&self) -> usize {
        let mut parent: Vec<usize> = (0..self.vertices.len()).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        for t in &self.triangles {
            for k in 1..3 {
                let (a, b) = (find(&mut parent, t[0]), find(&mut parent, t[k]));
                if a != b {
                    parent[a] = b;
                }
            }
        }
        let mut used = vec![false; self.vertices.len()];
        for t in &self.triangles {
            for &v in t {
                used[v] = true;
            }
        }
        (0..self.vertices.len())
            .filter(|&v| used[v] && find(&mut parent, v) == v)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boxes that share a face meet; a gap along any one axis parts them; a NaN bound
    /// never shows a box apart.
    #[test]
    fn boxes_overlap_unless_an_axis_separates_them() {
        let unit = Aabb {
            min: Point3::new(0.0, 0.0, 0.0),
            max: Point3::new(1.0, 1.0, 1.0),
        };
        let moved = |x: f64, y: f64, z: f64| Aabb {
            min: unit.min + Vector3::new(x, y, z),
            max: unit.max + Vector3::new(x, y, z),
        };
        assert!(unit.overlaps(&moved(0.5, 0.5, 0.5)));
        assert!(unit.overlaps(&moved(1.0, 0.0, 0.0)), "touching faces");
        for gap in [
            moved(1.5, 0.0, 0.0),
            moved(0.0, -1.5, 0.0),
            moved(0.0, 0.0, 1.5),
        ] {
            assert!(!unit.overlaps(&gap) && !gap.overlaps(&unit), "{gap:?}");
        }
        assert!(unit.overlaps(&moved(f64::NAN, 0.0, 0.0)));
    }
}
