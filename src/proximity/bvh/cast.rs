//! The first contact of a translation (a linear shape cast): the least `s` in `[0, 1]`
//! at which the moving mesh, placed by a pose and translated by `s d`, meets the fixed
//! one ([`Bvh::first_meeting_along`]).
//!
//! Exact, not sampled: two triangles meet under a translation along `u` over one closed
//! interval of `t` ([`translation_interval`]: the line `t u` through their convex
//! Minkowski difference), so the first contact is the least start of a pair's interval
//! ([`meeting_span`], the interval cut to what can still be earliest).
//!
//! The descent visits the pairs of nodes by the time their boxes first overlap, found by
//! the separating-axis theorem with `t` as the unknown (along each axis the boxes'
//! shadows overlap while `c + t (u . n)` stays within the sum of their half extents):
//! the world node's axis-aligned box against the moving node's (its oriented box's, cut
//! by its sphere's), then both oriented boxes' face axes (Gottschalk, Lin and Manocha
//! 1996). The pairs are visited best first, in the order their boxes first overlap, and
//! the descent ends at the first pair whose boxes overlap only after the earliest
//! contact found, as a ray cast ends at its nearest hit: every pair opened is one
//! whose boxes meet before the contact, which any cast bounded by these boxes opens.
//!
//! [`translation_interval`]: crate::proximity::exact::translation_interval

use nalgebra::{Isometry3, Vector3};

use super::pairs::{
    moved_node, scratch_moved, Entry, Memo, MovedNode, PairFrame, PairScratch, RelativeBoxes,
};
use super::{Bvh, Kind, Node};
use crate::mesh::Aabb;
use crate::proximity::exact::meeting_span;

impl Bvh {
    /// The least `s` in `[0, 1]` at which `other`, placed by `pose` and then translated
    /// by `s d` (this mesh's frame), meets this mesh (touching counts); `None` when it
    /// never does. Exact to rounding: every pair of triangles whose meeting interval
    /// starts before the answer is found, none is sampled.
    pub fn first_meeting_along(
        &self,
        other: &Bvh,
        pose: &Isometry3<f64>,
        d: &Vector3<f64>,
        scratch: &mut PairScratch,
    ) -> Option<f64> {
        if self.is_empty() || other.is_empty() {
            return None;
        }
        let reach = d.norm();
        let u = if reach > 0.0 { d / reach } else { *d };
        scratch.prepare(other);
        let cast = Cast {
            frame: PairFrame::new(pose),
            u,
            reach,
        };
        // The earliest contact found so far, as a translation along `u`.
        let mut best = f64::INFINITY;
        let mut heap = std::mem::take(&mut scratch.heap);
        heap.clear();
        if let Some(t) = cast.node_entry(self, other, &mut scratch.nodes, 0, 0) {
            heap.push(Entry::new(t, 0, 0));
        }
        // Best first: the pairs in the order their boxes first overlap, until that is
        // after the earliest contact found.
        while let Some(entry) = heap.pop() {
            if entry.bound() >= best {
                break;
            }
            let (i, j) = (entry.i as usize, entry.j as usize);
            if let Some(children) = self.split(other, i, j) {
                for (a, b) in children {
                    let t = cast.node_entry(self, other, &mut scratch.nodes, a, b);
                    if let Some(t) = t.filter(|&t| t < best) {
                        heap.push(Entry::new(t, a, b));
                    }
                }
                continue;
            }
            let (Kind::Leaf { start: sa, end: ea }, Kind::Leaf { start: sb, end: eb }) =
                (self.nodes[i].kind, other.nodes[j].kind)
            else {
                continue;
            };
            for ib in sb..eb {
                let (moved, moved_box, _) = *scratch_moved(&mut scratch.triangles, other, pose, ib);
                for ia in sa..ea {
                    let boxes = cast.boxes_span(&self.boxes[ia], &moved_box);
                    if !boxes.is_some_and(|(t, _)| t < best) {
                        continue;
                    }
                    let span = (0.0, best.min(reach));
                    if let Some((lo, _)) = meeting_span(&moved, &self.triangles[ia], &u, span) {
                        best = lo;
                    }
                }
            }
        }
        scratch.heap = heap;
        best.is_finite().then(|| {
            if reach > 0.0 {
                (best / reach).min(1.0)
            } else {
                0.0
            }
        })
    }
}

/// One translation's query: the placement of the moving mesh, the unit direction `u`
/// and the reach (the translation's length).
struct Cast {
    frame: PairFrame,
    u: Vector3<f64>,
    reach: f64,
}

impl Cast {
    /// The least `t` in `[0, reach]` at which the boxes of node `i` of `a` and node `j`
    /// of `b` (moved, then translated by `t u`) overlap; `None` when they never do.
    fn node_entry(
        &self,
        a: &Bvh,
        b: &Bvh,
        nodes: &mut Memo<MovedNode>,
        i: usize,
        j: usize,
    ) -> Option<f64> {
        let (na, nb) = (&a.nodes[i], &b.nodes[j]);
        let mb = *moved_node(nodes, &self.frame, b, j);
        let r = Vector3::repeat(nb.radius);
        let moved_box = Aabb {
            min: mb.aabb.min.sup(&(mb.center - r)),
            max: mb.aabb.max.inf(&(mb.center + r)),
        };
        let span = self.boxes_span(&na.aabb, &moved_box)?;
        let span = self.oriented_span(na, nb, &mb, span)?;
        Some(span.0)
    }

    /// The `t` in `[0, reach]` at which the fixed box `a` and the moving box `b`
    /// (translated by `t u`) overlap: an interval, as the axes' intervals intersect.
    fn boxes_span(&self, a: &Aabb, b: &Aabb) -> Option<(f64, f64)> {
        let mut span = (0.0, self.reach);
        for k in 0..3 {
            let c = 0.5 * (b.min[k] + b.max[k] - a.min[k] - a.max[k]);
            let half = 0.5 * (b.max[k] - b.min[k] + a.max[k] - a.min[k]);
            span = overlap_span(c, half, self.u[k], span)?;
        }
        Some(span)
    }

    /// `span` cut to where the oriented boxes of `a` and of `b` (moved: `mb`) overlap
    /// along both boxes' face axes.
    fn oriented_span(
        &self,
        a: &Node,
        b: &Node,
        mb: &MovedNode,
        mut span: (f64, f64),
    ) -> Option<(f64, f64)> {
        let RelativeBoxes { m, abs_m, t: c } = RelativeBoxes::of(a, mb);
        let v = a.axes.tr_mul(&self.u);
        let half = a.half + abs_m * b.half;
        for k in 0..3 {
            span = overlap_span(c[k], half[k], v[k], span)?;
        }
        let c_b = m.tr_mul(&c);
        let v_b = mb.axes.tr_mul(&self.u);
        let half_b = b.half + abs_m.tr_mul(&a.half);
        for k in 0..3 {
            span = overlap_span(c_b[k], half_b[k], v_b[k], span)?;
        }
        Some(span)
    }
}

/// `span` cut to the `t` at which two shadows on one axis overlap: their centres `c + t
/// v` apart, their half extents summing to `half` (widened by rounding's share, so that
/// a pair touching at a shadow's edge is kept); `None` when nothing is left.
fn overlap_span(c: f64, half: f64, v: f64, span: (f64, f64)) -> Option<(f64, f64)> {
    let half = half + 1e-10 * (half + c.abs());
    let (lo, hi) = if v.abs() <= 1e-15 {
        if c.abs() > half {
            return None;
        }
        span
    } else {
        let (t0, t1) = ((-half - c) / v, (half - c) / v);
        let (t0, t1) = if v > 0.0 { (t0, t1) } else { (t1, t0) };
        (span.0.max(t0), span.1.min(t1))
    };
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::{box_surface, closed_tube};
    use crate::proximity::exact::{translation_interval, uniform_stream};
    use nalgebra::{Point3, UnitQuaternion};

    /// The first contact by every pair of triangles, no tree: the least start of a
    /// meeting interval within the translation.
    fn brute_force(
        world: &Bvh,
        robot: &Bvh,
        pose: &Isometry3<f64>,
        d: &Vector3<f64>,
    ) -> Option<f64> {
        let reach = d.norm();
        let u = d / reach;
        let mut best = f64::INFINITY;
        for tr in &robot.triangles {
            let moved = [pose * tr[0], pose * tr[1], pose * tr[2]];
            for tw in &world.triangles {
                if let Some((lo, hi)) = translation_interval(&moved, tw, &u) {
                    if hi >= 0.0 && lo <= reach {
                        best = best.min(lo.max(0.0));
                    }
                }
            }
        }
        best.is_finite().then_some(best / reach)
    }

    /// A wavy ring tube and a box cast at it from random poses in random directions:
    /// the tree's first contact is the pairs' own, to rounding (1e-12 of the
    /// translation: both take the least of the same intervals; only the pruning
    /// differs), on hits, misses and starts that already meet.
    #[test]
    fn the_cast_equals_the_least_interval_of_every_pair() {
        let ring: Vec<Point3<f64>> = (0..40)
            .map(|i| {
                let t = std::f64::consts::TAU * i as f64 / 40.0;
                Point3::new(t.cos(), t.sin(), 0.15 * (3.0 * t).sin())
            })
            .collect();
        let world = Bvh::new(&closed_tube(&ring, 0.2, 10));
        let robot = Bvh::new(&box_surface(
            Point3::origin(),
            Vector3::new(0.15, 0.1, 0.05),
            3,
        ));
        let mut r = uniform_stream(11);
        let mut scratch = PairScratch::default();
        let (mut hits, mut misses, mut at_start) = (0, 0, 0);
        for _ in 0..300 {
            let p = Vector3::new(1.6 * r(), 1.6 * r(), 0.5 * r());
            let q = UnitQuaternion::from_euler_angles(3.0 * r(), 3.0 * r(), 3.0 * r());
            let pose = Isometry3::from_parts(p.into(), q);
            let d = Vector3::new(r(), r(), 0.3 * r()) * 2.0;
            let tree = world.first_meeting_along(&robot, &pose, &d, &mut scratch);
            let pairs = brute_force(&world, &robot, &pose, &d);
            match (tree, pairs) {
                (Some(a), Some(b)) => {
                    assert!((a - b).abs() <= 1e-12, "tree {a}, pairs {b}");
                    if b == 0.0 {
                        at_start += 1;
                    } else {
                        hits += 1;
                    }
                }
                (None, None) => misses += 1,
                _ => panic!("tree {tree:?}, pairs {pairs:?} from {pose:?} along {d:?}"),
            }
        }
        assert!(
            hits >= 50 && misses >= 30 && at_start >= 5,
            "{hits} {misses} {at_start}"
        );
    }

    /// A unit cube moving along x towards a wall whose face is at x = 2: the leading
    /// face (x = 0.5) meets it after 1.5 of a translation of 3, s = 0.5 exactly; a
    /// translation of 1.4 never reaches it; slanted by 45 degrees about z, the leading
    /// edge (0.5 sqrt 2 from the centre) meets it at 2 - 0.5 sqrt 2.
    #[test]
    fn a_cube_meets_a_wall_where_its_face_arrives() {
        let robot = Bvh::new(&box_surface(Point3::origin(), Vector3::repeat(0.5), 2));
        let world = Bvh::new(&box_surface(
            Point3::new(2.5, 0.0, 0.0),
            Vector3::new(0.5, 3.0, 3.0),
            3,
        ));
        let mut scratch = PairScratch::default();
        let square = Isometry3::identity();
        let s =
            world.first_meeting_along(&robot, &square, &Vector3::new(3.0, 0.0, 0.0), &mut scratch);
        assert!((s.unwrap() - 0.5).abs() < 1e-12, "{s:?}");
        let short =
            world.first_meeting_along(&robot, &square, &Vector3::new(1.4, 0.0, 0.0), &mut scratch);
        assert_eq!(short, None);
        let slanted = Isometry3::from_parts(
            nalgebra::Translation3::identity(),
            UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_4),
        );
        let s =
            world.first_meeting_along(&robot, &slanted, &Vector3::new(4.0, 0.0, 0.0), &mut scratch);
        let expected = (2.0 - 0.5 * std::f64::consts::SQRT_2) / 4.0;
        assert!(
            (s.unwrap() - expected).abs() < 1e-12,
            "{s:?} against {expected}"
        );
        // Moving away from the wall, or along it, it never meets.
        assert_eq!(
            world.first_meeting_along(&robot, &square, &Vector3::new(-3.0, 0.0, 0.0), &mut scratch),
            None
        );
        assert_eq!(
            world.first_meeting_along(&robot, &square, &Vector3::new(0.0, 3.0, 0.0), &mut scratch),
            None
        );
    }
}
