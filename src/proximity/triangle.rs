//! Closest points on triangles, with the feature (face, edge or vertex) they lie on:
//! the exact point-triangle distance of every point query, and the key for the signed
//! distance's angle-weighted pseudonormal sign test (Baerentzen and Aanaes 2005).
//!
//! Method: Voronoi regions of the triangle's vertices, edges and face, as in Ericson,
//! "Real-Time Collision Detection", 5.1.5.

use nalgebra::{Point3, Vector3};

/// The part of a triangle a closest point lies on (local indices 0, 1, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// The vertex with this local index.
    Vertex(u8),
    /// The edge from vertex `a` to vertex `b` (a < b).
    Edge(u8, u8),
    /// The interior of the face.
    Face,
}

/// Closest point of triangle (a, b, c) to p, and its feature.
pub fn closest_point(
    p: &Point3<f64>,
    a: &Point3<f64>,
    b: &Point3<f64>,
    c: &Point3<f64>,
) -> (Point3<f64>, Feature) {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(&ap);
    let d2 = ac.dot(&ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return (*a, Feature::Vertex(0));
    }
    let bp = p - b;
    let d3 = ab.dot(&bp);
    let d4 = ac.dot(&bp);
    if d3 >= 0.0 && d4 <= d3 {
        return (*b, Feature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, Feature::Edge(0, 1));
    }
    let cp = p - c;
    let d5 = ab.dot(&cp);
    let d6 = ac.dot(&cp);
    if d6 >= 0.0 && d5 <= d6 {
        return (*c, Feature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, Feature::Edge(0, 2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, Feature::Edge(1, 2));
    }
    let denom = 1.0 / (va + vb + vc);
    let v = vb * denom;
    let w = vc * denom;
    (a + ab * v + ac * w, Feature::Face)
}

/// Squared distance from p to the triangle.
pub fn distance_squared(p: &Point3<f64>, a: &Point3<f64>, b: &Point3<f64>, c: &Point3<f64>) -> f64 {
    (closest_point(p, a, b, c).0 - p).norm_squared()
}

/// Unit normal (counter-clockwise orientation) and the interior angle at each vertex.
pub fn normal_and_angles(
    a: &Point3<f64>,
    b: &Point3<f64>,
    c: &Point3<f64>,
) -> (Vector3<f64>, [f64; 3]) {
    let n = (b - a).cross(&(c - a));
    let len = n.norm();
    let n = if len > 0.0 { n / len } else { Vector3::zeros() };
    let angle = |p: &Point3<f64>, q: &Point3<f64>, r: &Point3<f64>| {
        let (u, v) = (q - p, r - p);
        let (nu, nv) = (u.norm(), v.norm());
        if nu == 0.0 || nv == 0.0 {
            0.0
        } else {
            (u.dot(&v) / (nu * nv)).clamp(-1.0, 1.0).acos()
        }
    };
    (n, [angle(a, b, c), angle(b, c, a), angle(c, a, b)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    #[test]
    fn closest_point_matches_dense_sampling() {
        let (a, b, c) = (
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(1.0, 0.2, 0.0),
            Point3::new(0.3, 0.9, 0.4),
        );
        let mut rng = SplitMix64::new(9);
        let mut rnd = || rng.next_f64() * 3.0 - 1.0;
        for _ in 0..200 {
            let p = Point3::new(rnd(), rnd(), rnd());
            let (q, _) = closest_point(&p, &a, &b, &c);
            let d = (q - p).norm();
            // Dense barycentric sampling is an upper bound that approaches the minimum:
            // the exact distance is never above it and within the sampling step of it.
            let n = 200;
            let mut best = f64::INFINITY;
            for i in 0..=n {
                for j in 0..=(n - i) {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    let x = a + (b - a) * u + (c - a) * v;
                    best = best.min((x - p).norm());
                }
            }
            assert!(d <= best + 1e-12, "exact {d} above sampled {best}");
            assert!(best - d < 0.01, "exact {d} far below sampled {best}");
        }
    }

    #[test]
    fn features_are_reported() {
        let (a, b, c) = (
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(0.0, 1.0, 0.0),
        );
        assert_eq!(
            closest_point(&Point3::new(-1.0, -1.0, 0.5), &a, &b, &c).1,
            Feature::Vertex(0)
        );
        assert_eq!(
            closest_point(&Point3::new(0.5, -1.0, 0.5), &a, &b, &c).1,
            Feature::Edge(0, 1)
        );
        assert_eq!(
            closest_point(&Point3::new(0.6, 0.6, 0.5), &a, &b, &c).1,
            Feature::Edge(1, 2)
        );
        assert_eq!(
            closest_point(&Point3::new(0.2, 0.2, 0.5), &a, &b, &c).1,
            Feature::Face
        );
        let (n, ang) = normal_and_angles(&a, &b, &c);
        assert!((n - Vector3::z()).norm() < 1e-15);
        assert!((ang.iter().sum::<f64>() - std::f64::consts::PI).abs() < 1e-12);
    }

    #[test]
    fn closest_point_on_triangle_regions() {
        let a = Point3::new(0.0, 0.0, 0.0);
        let b = Point3::new(1.0, 0.0, 0.0);
        let c = Point3::new(0.0, 1.0, 0.0);
        let q = |p: Point3<f64>, expect: Point3<f64>| {
            let got = closest_point(&p, &a, &b, &c).0;
            assert!((got - expect).norm() < 1e-15, "{p}: {got} vs {expect}");
        };
        q(Point3::new(-1.0, -1.0, 1.0), a);
        q(Point3::new(2.0, -0.5, 0.0), b);
        q(Point3::new(-0.5, 2.0, 0.0), c);
        q(Point3::new(0.2, 0.2, 3.0), Point3::new(0.2, 0.2, 0.0));
        q(Point3::new(1.0, 1.0, 0.0), Point3::new(0.5, 0.5, 0.0));
        q(Point3::new(0.5, -1.0, 0.0), Point3::new(0.5, 0.0, 0.0));
        q(Point3::new(-1.0, 0.5, 0.0), Point3::new(0.0, 0.5, 0.0));
    }
}
