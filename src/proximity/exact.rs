//! Exact distances between triangles: the refinement step of the path check.
//!
//! The distance between two triangles that do not intersect is attained at a vertex of
//! one and the other triangle, or at a pair of edges (Ericson, "Real-Time Collision
//! Detection", 5.1.9 and 5.2.x), so it is the least of six point-triangle and nine
//! segment-segment distances. Triangles that intersect (an edge of one crosses the other)
//! are at distance zero.
//!
//! Under a translation along `u`, two triangles meet over one closed interval of `t`
//! ([`translation_interval`]), the separating-axis theorem with `t` as the unknown: the
//! cast of a translation and the translational penetration depth build on it.

use nalgebra::{Point3, Vector3};

use crate::proximity::triangle::closest_point;

/// Whether one of the nine directions across the triangles' edges (`e_a x e_b`, unit)
/// separates their projections by at least `need(n)`: a cheap proof that the triangles
/// are that far apart, before [`triangle_distance`] (projection on a unit direction
/// shortens no distance, so each such gap is a lower bound of the distance).
///
/// With the two face normals (the callers' plane tests) these are the separating axes of
/// two triangles (Ericson, 4.4 and 5.2.1); they bound the distance from below without
/// reaching it where the closest features are a vertex and an edge, so the exact
/// distance stays the refinement. `need` takes the direction, for bounds that count
/// only the motion along it.
pub fn edge_axes_separate(
    a: &[Point3<f64>; 3],
    b: &[Point3<f64>; 3],
    need: impl Fn(&Vector3<f64>) -> f64,
) -> bool {
    for i in 0..3 {
        let ea = a[(i + 1) % 3] - a[i];
        for j in 0..3 {
            let eb = b[(j + 1) % 3] - b[j];
            let n = ea.cross(&eb);
            let len2 = n.norm_squared();
            // Parallel edges: no direction (the face normals and the other pairs cover it).
            // (A NaN falls through to a NaN gap, which proves nothing.)
            if len2 <= 1e-24 * ea.norm_squared() * eb.norm_squared() {
                continue;
            }
            // The gap along `n` unnormalized: `n` is normal to the edges `a[i] a[i+1]` and
            // `b[j] b[j+1]`, so each triangle projects to an interval spanned by two dot
            // products. An axis whose gap is not positive costs no square root.
            let (a0, a2) = (n.dot(&a[i].coords), n.dot(&a[(i + 2) % 3].coords));
            let (b0, b2) = (n.dot(&b[j].coords), n.dot(&b[(j + 2) % 3].coords));
            let gap = (b0.min(b2) - a0.max(a2)).max(a0.min(a2) - b0.max(b2));
            if gap <= 0.0 {
                continue;
            }
            // The same spans on the unit axis: the third vertex of each triangle projects
            // where the first does.
            let inv = 1.0 / len2.sqrt();
            let (n, gap) = (n * inv, gap * inv);
            if gap > 0.0 && gap >= need(&n) {
                return true;
            }
        }
    }
    false
}

/// Closest points of segments `p1 q1` and `p2 q2` (Ericson 5.1.9): `(distance², c1, c2)`.
pub fn segment_segment(
    p1: &Point3<f64>,
    q1: &Point3<f64>,
    p2: &Point3<f64>,
    q2: &Point3<f64>,
) -> (f64, Point3<f64>, Point3<f64>) {
    let d1 = q1 - p1;
    let d2 = q2 - p2;
    let r = p1 - p2;
    let a = d1.norm_squared();
    let e = d2.norm_squared();
    let f = d2.dot(&r);
    let eps = 1e-300;
    let (s, t) = if a <= eps && e <= eps {
        (0.0, 0.0)
    } else if a <= eps {
        (0.0, (f / e).clamp(0.0, 1.0))
    } else {
        let c = d1.dot(&r);
        if e <= eps {
            ((-c / a).clamp(0.0, 1.0), 0.0)
        } else {
            let b = d1.dot(&d2);
            let denom = a * e - b * b;
            let mut s = if denom > 0.0 {
                ((b * f - c * e) / denom).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let mut t = (b * s + f) / e;
            if t < 0.0 {
                t = 0.0;
                s = (-c / a).clamp(0.0, 1.0);
            } else if t > 1.0 {
                t = 1.0;
                s = ((b - c) / a).clamp(0.0, 1.0);
            }
            (s, t)
        }
    };
    let c1 = p1 + d1 * s;
    let c2 = p2 + d2 * t;
    ((c1 - c2).norm_squared(), c1, c2)
}

/// Whether segment `p q` crosses triangle `t` (Möller-Trumbore with the parameter
/// limited to the segment; a segment in the triangle's plane does not count, its
/// crossing shows as an edge-edge contact instead).
pub fn segment_crosses_triangle(p: &Point3<f64>, q: &Point3<f64>, t: &[Point3<f64>; 3]) -> bool {
    segment_triangle_crossing(p, q, t).is_some()
}

/// Whether segment `p q` passes through the interior of triangle `t`, strictly: its ends
/// on either side of the plane and the crossing inside every edge. Touching, an end in
/// the plane and coplanar contact do not count, unlike [`segment_crosses_triangle`]: two
/// closed components that share a face or an edge do not pierce each other
/// ([`crate::geometry::MeshDistance::check_solid`]).
pub fn segment_pierces_triangle(p: &Point3<f64>, q: &Point3<f64>, t: &[Point3<f64>; 3]) -> bool {
    let [a, b, c] = t;
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

/// Where segment `p q` crosses triangle `t`, as the parameter along the segment (see
/// [`segment_crosses_triangle`]).
pub fn segment_triangle_crossing(
    p: &Point3<f64>,
    q: &Point3<f64>,
    t: &[Point3<f64>; 3],
) -> Option<f64> {
    let dir = q - p;
    let e1 = t[1] - t[0];
    let e2 = t[2] - t[0];
    let h = dir.cross(&e2);
    let a = e1.dot(&h);
    let scale = e1.norm() * e2.norm() * dir.norm();
    if a.abs() <= 1e-14 * scale {
        return None;
    }
    let f = 1.0 / a;
    let s = p - t[0];
    let u = f * s.dot(&h);
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let qv = s.cross(&e1);
    let v = f * dir.dot(&qv);
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let tt = f * e2.dot(&qv);
    (0.0..=1.0).contains(&tt).then_some(tt)
}

/// Whether triangle `a` lies strictly on one side of the plane of triangle `b`, by more
/// than a rounding margin (then neither crosses the other).
fn beside_plane(a: &[Point3<f64>; 3], b: &[Point3<f64>; 3]) -> bool {
    let n = (b[1] - b[0]).cross(&(b[2] - b[0]));
    let s = [
        n.dot(&(a[0] - b[0])),
        n.dot(&(a[1] - b[0])),
        n.dot(&(a[2] - b[0])),
    ];
    let reach = (a[0] - b[0])
        .norm()
        .max((a[1] - b[0]).norm())
        .max((a[2] - b[0]).norm());
    let margin = 1e-9 * n.norm() * reach;
    let (lo, hi) = (s[0].min(s[1]).min(s[2]), s[0].max(s[1]).max(s[2]));
    lo > margin || hi < -margin
}

/// The distance between triangles `a` and `b` and a closest pair of points (on `a`, on
/// `b`); zero (with a point of the crossing) when they intersect.
pub fn triangle_distance(
    a: &[Point3<f64>; 3],
    b: &[Point3<f64>; 3],
) -> (f64, Point3<f64>, Point3<f64>) {
    // Triangles that may cross: neither lies wholly on one side of the other's plane
    // (by more than rounding), the pretest of Moller 1997.
    let may_cross = !beside_plane(a, b) && !beside_plane(b, a);
    for i in 0..3 {
        if !may_cross {
            break;
        }
        let (p, q) = (&a[i], &a[(i + 1) % 3]);
        if segment_crosses_triangle(p, q, b) {
            return (0.0, *p, *p);
        }
        let (p, q) = (&b[i], &b[(i + 1) % 3]);
        if segment_crosses_triangle(p, q, a) {
            return (0.0, *p, *p);
        }
    }
    let mut best = (f64::INFINITY, a[0], b[0]);
    for i in 0..3 {
        let (c, _) = closest_point(&a[i], &b[0], &b[1], &b[2]);
        let d = (a[i] - c).norm_squared();
        if d < best.0 {
            best = (d, a[i], c);
        }
        let (c, _) = closest_point(&b[i], &a[0], &a[1], &a[2]);
        let d = (b[i] - c).norm_squared();
        if d < best.0 {
            best = (d, c, b[i]);
        }
        for j in 0..3 {
            let (d, c1, c2) = segment_segment(&a[i], &a[(i + 1) % 3], &b[j], &b[(j + 1) % 3]);
            if d < best.0 {
                best = (d, c1, c2);
            }
        }
    }
    (best.0.sqrt(), best.1, best.2)
}

/// The interval of `t` for which triangle `a` translated by `t u` meets triangle `b`
/// (closed; `None` when they never meet). Both in one frame.
///
/// The set is the line `t u` through the convex Minkowski difference `b - a`, found by
/// the separating-axis theorem with `t` as the unknown: along each candidate axis `n`
/// the projections overlap while `t (u . n)` lies in an interval. The 23 candidate
/// axes are the two normals, the nine edge-edge cross products, and each triangle's
/// edges crossed with both normals (a superset of the complete set for two flat convex
/// polygons, which also covers coplanar and degenerate pairs; Gottschalk, Lin and
/// Manocha 1996).
pub fn translation_interval(
    a: &[Point3<f64>; 3],
    b: &[Point3<f64>; 3],
    u: &Vector3<f64>,
) -> Option<(f64, f64)> {
    meeting_span(a, b, u, (f64::NEG_INFINITY, f64::INFINITY))
}

/// The part of `span` (a closed interval of `t`) in which triangle `a` translated by `t
/// u` meets triangle `b`: [`translation_interval`] cut to `span`, `None` when they do
/// not meet within it. It stops at the first axis that leaves nothing, so a short span
/// (a cast's earliest contact so far) rejects most pairs after the two normals.
pub fn meeting_span(
    a: &[Point3<f64>; 3],
    b: &[Point3<f64>; 3],
    u: &Vector3<f64>,
    span: (f64, f64),
) -> Option<(f64, f64)> {
    // Coordinates about b's first corner (less cancellation far from the origin).
    let o = b[0].coords;
    let pa = [a[0].coords - o, a[1].coords - o, a[2].coords - o];
    let pb = [Vector3::zeros(), b[1].coords - o, b[2].coords - o];
    let ea = [pa[1] - pa[0], pa[2] - pa[1], pa[0] - pa[2]];
    let eb = [pb[1] - pb[0], pb[2] - pb[1], pb[0] - pb[2]];
    let na = ea[0].cross(&ea[1]);
    let nb = eb[0].cross(&eb[1]);
    let (mut lo, mut hi) = span;
    // Each axis's condition only narrows the span (max and min), so the order of the
    // axes changes the work, never the answer.
    let mut axis = |n: Vector3<f64>, scale: f64| -> bool {
        let n2 = n.norm_squared();
        if n2 <= 1e-24 * scale || n2 == 0.0 {
            return true; // degenerate axis: no condition
        }
        let (a0, a1) = extent(&pa, &n);
        let (b0, b1) = extent(&pb, &n);
        let k = u.dot(&n);
        // Overlap: a0 + t k <= b1 and a1 + t k >= b0.
        if k.abs() <= 1e-15 * n2.sqrt() {
            return a0 <= b1 && a1 >= b0;
        }
        let (t0, t1) = if k > 0.0 {
            ((b0 - a1) / k, (b1 - a0) / k)
        } else {
            ((b1 - a0) / k, (b0 - a1) / k)
        };
        lo = lo.max(t0);
        hi = hi.min(t1);
        lo <= hi
    };
    let scale_a = ea.iter().map(|e| e.norm_squared()).fold(0.0, f64::max);
    let scale_b = eb.iter().map(|e| e.norm_squared()).fold(0.0, f64::max);
    if !axis(na, scale_a * scale_a) || !axis(nb, scale_b * scale_b) {
        return None;
    }
    // The triangles meet under some `t u` only if their shadows along `u` overlap: the
    // 2D separating axes of the shadows, `u x e` for each edge, are a necessary
    // condition that does not depend on `t`, and reject most candidate pairs at once
    // (by more than rounding only: the axes below decide the rest).
    for e in ea.iter().chain(eb.iter()) {
        let n = u.cross(e);
        let (a0, a1) = extent(&pa, &n);
        let (b0, b1) = extent(&pb, &n);
        let margin = 1e-9 * (a1 - a0 + b1 - b0 + a0.abs() + b0.abs());
        if a0 > b1 + margin || b0 > a1 + margin {
            return None;
        }
    }
    for e in &ea {
        for f in &eb {
            if !axis(e.cross(f), e.norm_squared() * f.norm_squared()) {
                return None;
            }
        }
    }
    for e in &ea {
        let s = e.norm_squared();
        if !axis(na.cross(e), scale_a * s * s) || !axis(nb.cross(e), scale_b * s * s) {
            return None;
        }
    }
    for f in &eb {
        let s = f.norm_squared();
        if !axis(nb.cross(f), scale_b * s * s) || !axis(na.cross(f), scale_a * s * s) {
            return None;
        }
    }
    (lo <= hi).then_some((lo, hi))
}

/// The projections' extent of three points on `n`.
fn extent(p: &[Vector3<f64>; 3], n: &Vector3<f64>) -> (f64, f64) {
    let (x, y, z) = (p[0].dot(n), p[1].dot(n), p[2].dot(n));
    (x.min(y).min(z), x.max(y).max(z))
}

/// A reproducible stream of numbers uniform in [-1, 1) (a 64-bit LCG's top bits), for
/// the randomized tests of the check's geometry.
#[cfg(test)]
pub(crate) fn uniform_stream(mut seed: u64) -> impl FnMut() -> f64 {
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    fn p(x: f64, y: f64, z: f64) -> Point3<f64> {
        Point3::new(x, y, z)
    }

    /// A triangle of random corners in [-1, 1)^3, drawn corner by corner, x, y, z.
    fn triangle(rnd: &mut impl FnMut() -> f64) -> [Point3<f64>; 3] {
        [
            p(rnd(), rnd(), rnd()),
            p(rnd(), rnd(), rnd()),
            p(rnd(), rnd(), rnd()),
        ]
    }

    #[test]
    fn segments() {
        // Skew perpendicular segments 1 apart.
        let (d, c1, c2) = segment_segment(
            &p(-1., 0., 0.),
            &p(1., 0., 0.),
            &p(0., -1., 1.),
            &p(0., 1., 1.),
        );
        assert!((d - 1.0).abs() < 1e-15 && c1 == p(0., 0., 0.) && c2 == p(0., 0., 1.));
        // Parallel, overlapping.
        let (d, _, _) = segment_segment(
            &p(0., 0., 0.),
            &p(2., 0., 0.),
            &p(1., 0.5, 0.),
            &p(3., 0.5, 0.),
        );
        assert!((d - 0.25).abs() < 1e-15);
        // End to end.
        let (d, _, _) = segment_segment(
            &p(0., 0., 0.),
            &p(1., 0., 0.),
            &p(2., 0., 0.),
            &p(3., 0., 0.),
        );
        assert!((d - 1.0).abs() < 1e-15);
    }

    /// Against brute force: the distance between two triangles is the least distance
    /// between points sampled densely on both (an upper bound converging from above), and
    /// never below the exact value.
    /// Two triangles whose face planes both cut the other (no face normal separates
    /// them) but whose edges cross 0.1 apart: the direction across those edges (z)
    /// proves the exact distance, 0.1, and nothing more.
    #[test]
    fn an_edge_axis_separates_what_the_face_planes_do_not() {
        let h = 0.1;
        let a = [p(-1., 0., 0.), p(1., 0., 0.), p(0., -1., -1.)];
        let b = [p(0., -1., h), p(0., 1., h), p(-1., 0., h + 1.)];
        assert!((triangle_distance(&a, &b).0 - h).abs() < 1e-15);
        assert!(edge_axes_separate(&a, &b, |_| h - 1e-12));
        assert!(!edge_axes_separate(&a, &b, |_| h + 1e-12));
        // The bound may depend on the direction (a motion along it): along z it must
        // cover the gap as well.
        assert!(!edge_axes_separate(&a, &b, |n| if n.z.abs() > 0.99 {
            1.0
        } else {
            0.0
        }));
    }

    /// On random pairs, near and far, the edge axes never claim more than the exact
    /// distance: whenever they prove a floor, the exact distance is at least that floor.
    /// The floor is drawn about the exact distance so that both answers occur.
    #[test]
    fn edge_axes_never_exceed_the_exact_distance() {
        let mut rnd = uniform_stream(11);
        let (mut proved, mut refused) = (0, 0);
        for k in 0..4000 {
            let a = triangle(&mut rnd);
            let off = Vector3::new(rnd(), rnd(), rnd()) * (0.5 + 2.0 * (k % 4) as f64 / 3.0);
            let b = triangle(&mut rnd).map(|v| v + off);
            let exact = triangle_distance(&a, &b).0;
            let floor = exact * (0.5 + rnd().abs());
            if edge_axes_separate(&a, &b, |_| floor) {
                assert!(exact >= floor, "{exact} < {floor}");
                proved += 1;
            } else {
                refused += 1;
            }
        }
        // Both outcomes are exercised.
        assert!(proved > 100 && refused > 100, "{proved} {refused}");
    }

    /// The sign test before the square root skips no axis that separates: on random
    /// pairs the answer equals the plain definition's (every vertex projected on every
    /// unit edge-edge direction), for floors drawn about the pair's best edge-axis gap
    /// and for a floor that depends on the direction.
    #[test]
    fn the_edge_axes_answer_as_their_definition() {
        fn best_gap(
            a: &[Point3<f64>; 3],
            b: &[Point3<f64>; 3],
            need: &dyn Fn(&Vector3<f64>) -> f64,
        ) -> (f64, bool) {
            let (mut best, mut separates) = (f64::NEG_INFINITY, false);
            for i in 0..3 {
                for j in 0..3 {
                    let n = (a[(i + 1) % 3] - a[i]).cross(&(b[(j + 1) % 3] - b[j]));
                    if n.norm() < 1e-9 {
                        continue;
                    }
                    let n = n.normalize();
                    let span = |t: &[Point3<f64>; 3]| {
                        let d = t.map(|v| n.dot(&v.coords));
                        (d[0].min(d[1]).min(d[2]), d[0].max(d[1]).max(d[2]))
                    };
                    let ((a_lo, a_hi), (b_lo, b_hi)) = (span(a), span(b));
                    let gap = (b_lo - a_hi).max(a_lo - b_hi);
                    best = best.max(gap);
                    separates |= gap > 0.0 && gap >= need(&n);
                }
            }
            (best, separates)
        }
        let mut rnd = uniform_stream(12);
        let (mut yes, mut no) = (0, 0);
        for k in 0..4000 {
            let a = triangle(&mut rnd);
            let off = Vector3::new(rnd(), rnd(), rnd()) * (0.25 + (k % 5) as f64 / 2.0);
            let b = triangle(&mut rnd).map(|v| v + off);
            let (best, _) = best_gap(&a, &b, &|_| 0.0);
            let floor = best.abs() * (0.5 + rnd().abs());
            let tilted = move |n: &Vector3<f64>| floor * (1.0 + n.x.abs());
            for need in [
                &(move |_: &Vector3<f64>| floor) as &dyn Fn(&Vector3<f64>) -> f64,
                &tilted,
            ] {
                let expected = best_gap(&a, &b, need).1;
                assert_eq!(edge_axes_separate(&a, &b, need), expected, "pair {k}");
                if expected {
                    yes += 1;
                } else {
                    no += 1;
                }
            }
        }
        // Both answers are exercised.
        assert!(yes > 500 && no > 500, "{yes} {no}");
    }

    /// The plane pretest skips only pairs that no edge of either crosses: on random pairs,
    /// overlapping and apart, and on pairs a hair off each other's plane.
    #[test]
    fn the_plane_pretest_skips_no_crossing() {
        let mut rnd = uniform_stream(11);
        let (mut crossing, mut skipped) = (0, 0);
        for k in 0..20_000 {
            let a = triangle(&mut rnd);
            let mut b = triangle(&mut rnd).map(|v| v * 0.5);
            if k % 2 == 1 {
                // Flattened onto a's plane, then lifted by a hair (or not at all).
                let n = (a[1] - a[0]).cross(&(a[2] - a[0])).normalize();
                let lift = [0.0, 1e-12, 1e-6][k % 3];
                for v in &mut b {
                    *v -= n * n.dot(&(*v - a[0]));
                    *v += n * lift;
                }
            }
            let crosses = (0..3).any(|i| {
                segment_crosses_triangle(&a[i], &a[(i + 1) % 3], &b)
                    || segment_crosses_triangle(&b[i], &b[(i + 1) % 3], &a)
            });
            let skip = beside_plane(&a, &b) || beside_plane(&b, &a);
            assert!(!(crosses && skip), "pair {k}: {a:?} {b:?}");
            crossing += usize::from(crosses);
            skipped += usize::from(skip);
        }
        assert!(crossing > 1000 && skipped > 1000, "{crossing} {skipped}");
    }

    #[test]
    fn triangles_against_dense_sampling() {
        let mut rnd = uniform_stream(7);
        let n = 24;
        for _ in 0..40 {
            let a = triangle(&mut rnd);
            let off = Vector3::new(rnd(), rnd(), rnd()) * 2.5;
            let b = triangle(&mut rnd).map(|v| v + off);
            let (exact, ca, cb) = triangle_distance(&a, &b);
            assert!(((ca - cb).norm() - exact).abs() < 1e-12);
            let sample = |t: &[Point3<f64>; 3], i: usize, j: usize| {
                let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * v
            };
            let mut brute = f64::INFINITY;
            for i in 0..=n {
                for j in 0..=n - i {
                    let pa = sample(&a, i, j);
                    for k in 0..=n {
                        for l in 0..=n - k {
                            brute = brute.min((pa - sample(&b, k, l)).norm());
                        }
                    }
                }
            }
            // Sampling at spacing h misses the minimum by at most the larger triangle's
            // edge length times 1/n (two triangles of edges up to ~3.5 here).
            assert!(
                exact <= brute + 1e-12,
                "exact {exact} above sampled {brute}"
            );
            assert!(
                brute - exact < 2.0 * 3.5 / n as f64,
                "exact {exact}, sampled {brute}"
            );
        }
    }

    #[test]
    fn crossing_triangles_are_at_zero() {
        let a = [p(-1., 0., -1.), p(1., 0., -1.), p(0., 0., 1.)];
        let b = [p(0., -1., 0.), p(0., 1., 0.), p(0.2, 0., 5.)];
        assert_eq!(triangle_distance(&a, &b).0, 0.0);
        // Moved apart along y by 2: distance 1 between the edges.
        let b2 = [p(0., 1., 0.), p(0., 3., 0.), p(0.2, 2., 5.)];
        assert!((triangle_distance(&a, &b2).0 - 1.0).abs() < 1e-12);
    }

    /// The interval against the exact triangle distance at sampled `t`: inside it the
    /// triangles meet (distance 0, to rounding), outside by more than 1e-9 they do not.
    #[test]
    fn the_interval_is_where_the_triangles_meet() {
        let mut r = uniform_stream(7);
        let mut met = 0;
        for _ in 0..2000 {
            let p = |r: &mut dyn FnMut() -> f64| Point3::new(r(), r(), r());
            let a = [p(&mut r), p(&mut r), p(&mut r)];
            let b = [p(&mut r), p(&mut r), p(&mut r)];
            let u = Vector3::new(r(), r(), r()).normalize();
            let interval = translation_interval(&a, &b, &u);
            for k in 0..=40 {
                let t = -3.0 + 6.0 * k as f64 / 40.0;
                let moved = a.map(|q| q + u * t);
                let d = triangle_distance(&moved, &b).0;
                match interval {
                    Some((lo, hi)) if t >= lo && t <= hi => {
                        assert!(d < 1e-9, "inside [{lo}, {hi}] at {t}: {d}");
                        met += 1;
                    }
                    Some((lo, hi)) => {
                        let off = (lo - t).max(t - hi);
                        assert!(d > 0.0 || off < 1e-9, "outside [{lo}, {hi}] at {t}: {d}");
                    }
                    None => assert!(d > 0.0, "no interval, but met at {t}"),
                }
            }
        }
        assert!(met > 1000, "too few meeting samples to test: {met}");
    }

    /// The interval cut to a span is the whole interval intersected with it, bit for
    /// bit (each axis only narrows the span), and `None` exactly where they do not
    /// overlap: on random pairs, with spans before, across and after their intervals.
    #[test]
    fn a_span_cuts_the_interval_and_nothing_else() {
        let mut r = uniform_stream(23);
        let (mut cut, mut missed) = (0, 0);
        for _ in 0..3000 {
            let p = |r: &mut dyn FnMut() -> f64| Point3::new(r(), r(), r());
            let a = [p(&mut r), p(&mut r), p(&mut r)];
            let b = [p(&mut r), p(&mut r), p(&mut r)];
            let u = Vector3::new(r(), r(), r()).normalize();
            let (s0, s1) = (2.0 * r(), 2.0 * r());
            let span = (s0.min(s1), s0.max(s1));
            let whole = translation_interval(&a, &b, &u);
            let expected = whole
                .map(|(lo, hi)| (lo.max(span.0), hi.min(span.1)))
                .filter(|(lo, hi)| lo <= hi);
            assert_eq!(
                meeting_span(&a, &b, &u, span),
                expected,
                "{a:?} {b:?} {u:?} {span:?}"
            );
            match (whole, expected) {
                (Some(_), Some(_)) => cut += 1,
                (Some(_), None) => missed += 1,
                _ => {}
            }
        }
        assert!(
            cut > 100 && missed > 100,
            "{cut} cut, {missed} outside the span"
        );
    }

    /// Coplanar triangles sliding in their plane: the axes in their plane (edges crossed with the normals) decide.
    #[test]
    fn coplanar_triangles_meet_over_their_overlap() {
        let a = [
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(1.0, 0.0, 0.0),
            Point3::new(0.0, 1.0, 0.0),
        ];
        let b = a.map(|p| p + Vector3::new(3.0, 0.0, 0.0));
        let (lo, hi) = translation_interval(&a, &b, &Vector3::x()).unwrap();
        assert!(
            (lo - 2.0).abs() < 1e-12 && (hi - 4.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        assert!(translation_interval(&a, &b, &Vector3::z()).is_none());
    }
}
