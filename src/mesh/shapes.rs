//! Closed triangle meshes of simple solids, for the analytic test cases and the shipped
//! problems: boxes (with subdivided faces, so that contact is not only at corners),
//! unions of boxes (walls with slots), and swept tubes, closed loops or capped (the
//! generated puzzles of `src/check/puzzles.rs`).

use nalgebra::{Point3, Vector3};

use crate::mesh::SurfaceMesh;

/// A box centred at `center` with half extents `half`, each face split into `n` x `n`
/// quads (two triangles each), counter-clockwise seen from outside.
pub fn box_surface(center: Point3<f64>, half: Vector3<f64>, n: usize) -> SurfaceMesh {
    let n = n.max(1);
    let mut m = SurfaceMesh::default();
    // Each face: its outward axis, sign, and two in-plane axes (u, v) with u x v = normal.
    let faces = [
        (0, 1.0, 1, 2),
        (0, -1.0, 2, 1),
        (1, 1.0, 2, 0),
        (1, -1.0, 0, 2),
        (2, 1.0, 0, 1),
        (2, -1.0, 1, 0),
    ];
    for (axis, sign, u, v) in faces {
        let base = m.vertices.len();
        for i in 0..=n {
            for j in 0..=n {
                let mut p = Vector3::zeros();
                p[axis] = sign * half[axis];
                p[u] = (2.0 * i as f64 / n as f64 - 1.0) * half[u];
                p[v] = (2.0 * j as f64 / n as f64 - 1.0) * half[v];
                m.vertices.push(center + p);
            }
        }
        let id = |i: usize, j: usize| base + i * (n + 1) + j;
        for i in 0..n {
            for j in 0..n {
                m.triangles.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                m.triangles.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
    }
    m
}

/// Several meshes as one (vertex indices offset).
pub fn union(parts: &[SurfaceMesh]) -> SurfaceMesh {
    let mut m = SurfaceMesh::default();
    for p in parts {
        let base = m.vertices.len();
        m.vertices.extend(p.vertices.iter().copied());
        m.triangles.extend(
            p.triangles
                .iter()
                .map(|t| [t[0] + base, t[1] + base, t[2] + base]),
        );
    }
    m
}

/// The rings of a tube of `sides` facets and `radius` swept along `path`, one ring per
/// point, in parallel-transported frames (each frame's normal is the previous one's
/// made perpendicular to the new tangent); the tangent at an end of an open path is the
/// one-sided difference, a closed path's wraps around.
fn tube_rings(path: &[Point3<f64>], radius: f64, sides: usize, closed: bool) -> Vec<Point3<f64>> {
    let k = path.len();
    let tangent = |i: usize| {
        if closed {
            (path[(i + 1) % k] - path[(i + k - 1) % k]).normalize()
        } else {
            (path[(i + 1).min(k - 1)] - path[i.saturating_sub(1)]).normalize()
        }
    };
    let t0 = tangent(0);
    let helper = if t0.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let mut normal = t0.cross(&helper).normalize();
    let mut rings = Vec::with_capacity(k * sides);
    for (i, p) in path.iter().enumerate() {
        let t = tangent(i);
        normal = (normal - t * t.dot(&normal)).normalize();
        let binormal = t.cross(&normal);
        for s in 0..sides {
            let a = std::f64::consts::TAU * s as f64 / sides as f64;
            rings.push(p + (normal * a.cos() + binormal * a.sin()) * radius);
        }
    }
    rings
}

/// Two triangles per quad between ring `i` and ring `next` (`sides` vertices each), the
/// next ring's indices rotated by `shift`.
fn stitch(m: &mut SurfaceMesh, i: usize, next: usize, sides: usize, shift: usize) {
    for s in 0..sides {
        let a = i * sides + s;
        let b = i * sides + (s + 1) % sides;
        let c = next * sides + (s + shift) % sides;
        let d = next * sides + (s + 1 + shift) % sides;
        m.triangles.push([a, d, c]);
        m.triangles.push([a, b, d]);
    }
}

/// A closed tube of circular cross-section `radius` (`sides` facets) swept along the
/// closed polyline `path` (the frames follow the polyline; consecutive points should be
/// close compared with the radius).
pub fn closed_tube(path: &[Point3<f64>], radius: f64, sides: usize) -> SurfaceMesh {
    let k = path.len();
    let sides = sides.max(3);
    let mut m = SurfaceMesh {
        vertices: tube_rings(path, radius, sides, true),
        triangles: Vec::new(),
    };
    // The loop closes with a twist of the frame: match the last ring to the first by the
    // nearest rotation of indices.
    let last = k - 1;
    let shift = (0..sides)
        .min_by(|&x, &y| {
            let d = |o: usize| (m.vertices[last * sides] - m.vertices[o]).norm();
            d(x).total_cmp(&d(y))
        })
        .unwrap_or(0);
    for i in 0..k {
        let next = (i + 1) % k;
        stitch(&mut m, i, next, sides, if next == 0 { shift } else { 0 });
    }
    m
}

/// A tube of circular cross-section `radius` (`sides` facets) swept along the open
/// polyline `path` (parallel-transported frames), closed by flat caps at both ends, so
/// that it bounds a solid.
pub fn open_tube(path: &[Point3<f64>], radius: f64, sides: usize) -> SurfaceMesh {
    let k = path.len();
    let sides = sides.max(3);
    if k < 2 {
        return SurfaceMesh::default();
    }
    let mut m = SurfaceMesh {
        vertices: tube_rings(path, radius, sides, false),
        triangles: Vec::new(),
    };
    for i in 0..k - 1 {
        stitch(&mut m, i, i + 1, sides, 0);
    }
    // The caps: a fan about each end's centre, facing away from the tube.
    let first = m.vertices.len();
    m.vertices.push(path[0]);
    m.vertices.push(path[k - 1]);
    let end = (k - 1) * sides;
    for s in 0..sides {
        let n = (s + 1) % sides;
        m.triangles.push([first, n, s]);
        m.triangles.push([first + 1, end + s, end + n]);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_are_closed_and_outward() {
        let m = box_surface(Point3::new(1.0, 2.0, 3.0), Vector3::new(0.5, 1.0, 2.0), 3);
        assert!(
            (m.signed_volume() - 8.0).abs() < 1e-12,
            "{}",
            m.signed_volume()
        );
        let b = m.bounding_box();
        assert_eq!(b.min, Point3::new(0.5, 1.0, 1.0));
    }

    /// An open tube with caps is a closed solid: its signed volume is the cylinder's
    /// (pi r^2 L, less the facetting), positive (outward facing).
    #[test]
    fn open_tubes_are_closed_solids() {
        let path: Vec<Point3<f64>> = (0..=20)
            .map(|i| Point3::new(0.1 * i as f64, 0.0, 0.0))
            .collect();
        let m = open_tube(&path, 0.1, 32);
        let exact = std::f64::consts::PI * 0.01 * 2.0;
        let v = m.signed_volume();
        // 32 sides keep 99.4% of the circle's area (sin(2 pi / 32) 16 / pi).
        assert!(
            v > 0.0 && (v - exact).abs() / exact < 0.01,
            "{v} vs {exact}"
        );
        // Every edge is shared by exactly two triangles.
        let mut edges = std::collections::HashMap::new();
        for t in &m.triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        assert!(edges.values().all(|&c| c == 2));
    }

    #[test]
    fn tubes_enclose_their_volume() {
        // A circle of radius 1 swept by a tube of radius 0.1: volume 2 pi^2 R r^2.
        let k = 96;
        let path: Vec<Point3<f64>> = (0..k)
            .map(|i| {
                let a = std::f64::consts::TAU * i as f64 / k as f64;
                Point3::new(a.cos(), a.sin(), 0.0)
            })
            .collect();
        let m = closed_tube(&path, 0.1, 24);
        let exact = 2.0 * std::f64::consts::PI.powi(2) * 0.1f64.powi(2);
        let v = m.signed_volume();
        // Facetting (24 sides, 96 segments) loses about 1.5% of the volume.
        assert!(
            v > 0.0 && (v - exact).abs() / exact < 0.03,
            "{v} vs {exact}"
        );
    }
}
