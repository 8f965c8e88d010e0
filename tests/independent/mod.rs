//! An exact continuous collision test of a rigid part along a path that shares no code
//! with the engine: its own triangle distances, its own spatial grid (no BVH), its own
//! motion bound and nalgebra's slerp for the motion. Used to check what the planner
//! writes, so that the planner's validity checker and the engine's path check are not
//! the only judges of their own output.
//!
//! The test is conservative advancement on exact distances: at a state where the part is
//! `d` from the world, no point of it can reach the world before its motion bound (the
//! translation plus the turn times the distance of the farthest vertex from the origin;
//! a chord is no longer than its arc) has covered `d`. So the next state is at 0.9 of that
//! step; a stretch is free when the steps reach its end without the distance falling to
//! `touch`. Distances are between triangle surfaces, so the start must be free (a closed
//! part cannot pass into a closed world without its surface crossing the world's).

use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};

/// A triangle by its corners.
type Tri = [Point3<f64>; 3];

/// Closest distance between segments `p0 p1` and `q0 q1` (clamped parameters, by the
/// normal equations of the two-parameter problem, with the degenerate cases handled).
fn segment_segment(p0: Point3<f64>, p1: Point3<f64>, q0: Point3<f64>, q1: Point3<f64>) -> f64 {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = d1.dot(&d1);
    let e = d2.dot(&d2);
    let f = d2.dot(&r);
    let (s, t);
    if a <= 1e-300 && e <= 1e-300 {
        return r.norm();
    }
    if a <= 1e-300 {
        s = 0.0;
        t = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(&r);
        if e <= 1e-300 {
            t = 0.0;
            s = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(&d2);
            let denom = a * e - b * b;
            let mut s0 = if denom > 1e-300 {
                ((b * f - c * e) / denom).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let mut t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t0 = 0.0;
                s0 = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t0 = 1.0;
                s0 = ((b - c) / a).clamp(0.0, 1.0);
            }
            s = s0;
            t = t0;
        }
    }
    ((p0 + d1 * s) - (q0 + d2 * t)).norm()
}

/// Distance from `p` to triangle `t`: to its plane where the foot falls inside, else to
/// the nearest edge.
fn point_triangle(p: Point3<f64>, t: &Tri) -> f64 {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let nn = n.norm_squared();
    if nn > 1e-300 {
        let h = (p - t[0]).dot(&n) / nn;
        let foot = p - n * h;
        let inside = (0..3).all(|i| {
            let (a, b) = (t[i], t[(i + 1) % 3]);
            (b - a).cross(&(foot - a)).dot(&n) >= 0.0
        });
        if inside {
            return (h * nn.sqrt()).abs();
        }
    }
    (0..3)
        .map(|i| segment_segment(p, p, t[i], t[(i + 1) % 3]))
        .fold(f64::INFINITY, f64::min)
}

/// Whether segment `a b` crosses triangle `t` (the segment's ends on opposite sides of
/// the plane, or on it, and the crossing inside the triangle).
fn segment_crosses(a: Point3<f64>, b: Point3<f64>, t: &Tri) -> bool {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let (da, db) = ((a - t[0]).dot(&n), (b - t[0]).dot(&n));
    if da * db > 0.0 || (da == 0.0 && db == 0.0) {
        return false;
    }
    let x = a + (b - a) * (da / (da - db));
    (0..3).all(|i| {
        let (p, q) = (t[i], t[(i + 1) % 3]);
        (q - p).cross(&(x - p)).dot(&n) >= 0.0
    })
}

/// Distance between two triangles: 0 where they intersect, else the least of the six
/// vertex-triangle and nine edge-edge distances (where two triangles do not intersect,
/// their closest points lie on a vertex-face or an edge-edge pair).
pub fn triangle_distance(a: &Tri, b: &Tri) -> f64 {
    let edges = |t: &Tri| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])];
    if edges(a).iter().any(|&(p, q)| segment_crosses(p, q, b))
        || edges(b).iter().any(|&(p, q)| segment_crosses(p, q, a))
    {
        return 0.0;
    }
    let mut d = f64::INFINITY;
    for i in 0..3 {
        d = d.min(point_triangle(a[i], b)).min(point_triangle(b[i], a));
    }
    for (p0, p1) in edges(a) {
        for (q0, q1) in edges(b) {
            d = d.min(segment_segment(p0, p1, q0, q1));
        }
    }
    d
}

/// The world's triangles bucketed in a uniform grid of cubic cells.
pub struct Grid {
    tris: Vec<Tri>,
    cell: f64,
    min: Point3<f64>,
    cells: std::collections::HashMap<[i64; 3], Vec<u32>>,
}

impl Grid {
    /// Buckets `tris` in cells of edge `cell`.
    pub fn new(tris: Vec<Tri>, cell: f64) -> Grid {
        let min = tris
            .iter()
            .flatten()
            .fold(Point3::from(Vector3::repeat(f64::MAX)), |m, p| m.inf(p));
        let mut g = Grid {
            tris: Vec::new(),
            cell,
            min,
            cells: Default::default(),
        };
        for (i, t) in tris.iter().enumerate() {
            let (lo, hi) = g.key_range(&bounds(t), 0.0);
            for x in lo[0]..=hi[0] {
                for y in lo[1]..=hi[1] {
                    for z in lo[2]..=hi[2] {
                        g.cells.entry([x, y, z]).or_default().push(i as u32);
                    }
                }
            }
        }
        g.tris = tris;
        g
    }

    fn key_range(&self, (lo, hi): &(Point3<f64>, Point3<f64>), grow: f64) -> ([i64; 3], [i64; 3]) {
        let k = |p: &Point3<f64>, s: f64| {
            let v = (p.coords + Vector3::repeat(s) - self.min.coords) / self.cell;
            [v.x.floor() as i64, v.y.floor() as i64, v.z.floor() as i64]
        };
        (k(lo, -grow), k(hi, grow))
    }

    /// Whether any world triangle is bucketed in a cell overlapping `b` grown by `grow`.
    fn any_near(&self, b: &(Point3<f64>, Point3<f64>), grow: f64) -> bool {
        let (lo, hi) = self.key_range(b, grow);
        if (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1) > 4096 {
            return true;
        }
        (lo[0]..=hi[0]).any(|x| {
            (lo[1]..=hi[1]).any(|y| (lo[2]..=hi[2]).any(|z| self.cells.contains_key(&[x, y, z])))
        })
    }

    /// The least distance from the triangles `part` to the world, or `cap` when every
    /// pair is farther than `cap`. The part's triangles are taken in runs of `CHUNK` (in
    /// file order); a run whose bounding box, grown by the best distance so far, meets no
    /// occupied cell is skipped whole.
    pub fn distance(
        &self,
        part: &[Tri],
        cap: f64,
        stamp: &mut Vec<usize>,
        round: &mut usize,
    ) -> f64 {
        const CHUNK: usize = 32;
        stamp.resize(self.tris.len(), usize::MAX);
        let mut best = cap;
        for run in part.chunks(CHUNK) {
            let b = run.iter().map(bounds).fold(
                (
                    Point3::from(Vector3::repeat(f64::MAX)),
                    Point3::from(Vector3::repeat(f64::MIN)),
                ),
                |(lo, hi), (l, h)| (lo.inf(&l), hi.sup(&h)),
            );
            if !self.any_near(&b, best) {
                continue;
            }
            for t in run {
                self.nearest_to(t, &mut best, stamp, round);
            }
        }
        best
    }

    /// Lowers `best` to the distance from `t` to any world triangle nearer than it.
    fn nearest_to(&self, t: &Tri, best: &mut f64, stamp: &mut [usize], round: &mut usize) {
        *round += 1;
        let (lo, hi) = self.key_range(&bounds(t), *best);
        // A triangle larger than the cells allow walking: against every triangle.
        if (hi[0] - lo[0] + 1) * (hi[1] - lo[1] + 1) * (hi[2] - lo[2] + 1) > 4096 {
            for w in &self.tris {
                *best = best.min(triangle_distance(t, w));
            }
            return;
        }
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    let Some(list) = self.cells.get(&[x, y, z]) else {
                        continue;
                    };
                    for &j in list {
                        let j = j as usize;
                        if stamp[j] == *round {
                            continue;
                        }
                        stamp[j] = *round;
                        *best = best.min(triangle_distance(t, &self.tris[j]));
                    }
                }
            }
        }
    }
}

fn bounds(t: &Tri) -> (Point3<f64>, Point3<f64>) {
    (t[0].inf(&t[1]).inf(&t[2]), t[0].sup(&t[1]).sup(&t[2]))
}

/// One state of a path: position and orientation.
pub type Pose = (Vector3<f64>, UnitQuaternion<f64>);

/// Why a path is not certified free: where the part came within the touching distance.
#[derive(Debug)]
pub struct Touch {
    pub segment: usize,
    pub t: f64,
    pub distance: f64,
}

impl std::fmt::Display for Touch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} from the world at segment {} t = {}",
            self.distance, self.segment, self.t
        )
    }
}

/// Certifies that the part (triangles `part` in its own frame) moves along `path`
/// (position lerp, orientation slerp on the shorter arc, per segment) without coming
/// within `touch` of the world; returns the least distance seen at the steps.
pub fn certify_free(part: &[Tri], world: &Grid, path: &[Pose], touch: f64) -> Result<f64, Touch> {
    let radius = part
        .iter()
        .flatten()
        .map(|p| p.coords.norm())
        .fold(0.0, f64::max);
    let cap = world.cell;
    let (mut stamp, mut round) = (Vec::new(), 0usize);
    let mut placed = vec![[Point3::origin(); 3]; part.len()];
    let mut least = f64::INFINITY;
    for (k, w) in path.windows(2).enumerate() {
        let ((p0, q0), (p1, q1)) = (w[0], w[1]);
        let turn = q0.angle_to(&q1);
        let motion = (p1 - p0).norm() + turn * radius;
        let mut t = 0.0;
        loop {
            let q = q0.try_slerp(&q1, t, 1e-12).unwrap_or(q0);
            let pose = Isometry3::from_parts((p0 + (p1 - p0) * t).into(), q);
            for (dst, src) in placed.iter_mut().zip(part) {
                *dst = [pose * src[0], pose * src[1], pose * src[2]];
            }
            let d = world.distance(&placed, cap, &mut stamp, &mut round);
            least = least.min(d);
            if d <= touch {
                return Err(Touch {
                    segment: k,
                    t,
                    distance: d,
                });
            }
            if t >= 1.0 || motion == 0.0 {
                break;
            }
            t = (t + 0.9 * d / motion).min(1.0);
        }
    }
    Ok(least)
}

/// A mesh's triangles as corner triples.
pub fn triangles(vertices: &[Point3<f64>], faces: &[[usize; 3]]) -> Vec<Tri> {
    faces
        .iter()
        .map(|f| [vertices[f[0]], vertices[f[1]], vertices[f[2]]])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two triangles in parallel planes 0.5 apart, one above the other's interior; two
    /// crossing ones; and two edge-to-edge ones at a known gap.
    #[test]
    fn triangle_distances_by_hand() {
        let a = [
            Point3::new(0.0, 0.0, 0.0),
            Point3::new(2.0, 0.0, 0.0),
            Point3::new(0.0, 2.0, 0.0),
        ];
        let up = |t: &Tri, z: f64| t.map(|p| p + Vector3::new(0.2, 0.2, z));
        assert!((triangle_distance(&a, &up(&a, 0.5)) - 0.5).abs() < 1e-15);
        let cross = [
            Point3::new(0.5, 0.5, -1.0),
            Point3::new(0.5, 0.5, 1.0),
            Point3::new(0.6, 0.4, 1.0),
        ];
        assert_eq!(triangle_distance(&a, &cross), 0.0);
        // An edge along y at x = -0.3, z = 0.4: 0.5 from the edge x = 0 of `a`.
        let e = [
            Point3::new(-0.3, 0.5, 0.4),
            Point3::new(-0.3, 1.5, 0.4),
            Point3::new(-1.0, 1.0, 2.0),
        ];
        assert!((triangle_distance(&a, &e) - 0.5).abs() < 1e-12);
    }
}
