//! Path simplification that keeps every motion valid: random shortcuts (Geraerts and
//! Overmars 2007, "Creating high-quality paths for motion planning"), each new motion
//! certified by the planner's continuous check ([`super::validity::Checker::motion`]).
//!
//! - *Vertex shortcuts*: two states `i < j - 1` of the path; when the direct motion
//!   between them is valid, the states between go.
//! - *Partial shortcuts*: two points on different segments (a position along each); the
//!   states between them are replaced by the two points when the points are valid and the
//!   motion between them is. This removes the detours inside segments that vertex
//!   shortcuts cannot reach, and the needless turning that sampled orientations leave.
//!
//! Only a shorter path (in the metric of [`super::space`]) replaces the current one.

use rand::Rng;

use super::space::Space;
use super::validity::Checker;
use crate::proximity::rigid::State;

/// Shortens `path` (states with a lower bound of their distance to the world) by
/// `attempts` random shortcuts of each kind.
pub fn simplify<R: Rng>(
    mut path: Vec<(State, f64)>,
    space: &Space,
    checker: &mut Checker,
    rng: &mut R,
    attempts: usize,
) -> Vec<(State, f64)> {
    for _ in 0..attempts {
        if path.len() < 3 {
            break;
        }
        let i = rng.random_range(0..path.len() - 2);
        let j = rng.random_range(i + 2..path.len());
        let old: f64 = (i..j)
            .map(|k| space.distance(&path[k].0, &path[k + 1].0))
            .sum();
        if space.distance(&path[i].0, &path[j].0) >= old {
            continue;
        }
        if checker.motion(&path[i].0, path[i].1, &path[j].0, path[j].1) {
            path.drain(i + 1..j);
        }
    }
    for _ in 0..attempts {
        if path.len() < 3 {
            break;
        }
        // Segments a < b, points at fractions ta, tb along them.
        let a = rng.random_range(0..path.len() - 2);
        let b = rng.random_range(a + 1..path.len() - 1);
        let (ta, tb): (f64, f64) = (rng.random(), rng.random());
        let pa = path[a].0.interpolate(&path[a + 1].0, ta);
        let pb = path[b].0.interpolate(&path[b + 1].0, tb);
        if !space.contains(&pa) || !space.contains(&pb) {
            continue;
        }
        let old = space.distance(&pa, &path[a + 1].0)
            + (a + 1..b)
                .map(|k| space.distance(&path[k].0, &path[k + 1].0))
                .sum::<f64>()
            + space.distance(&path[b].0, &pb);
        if space.distance(&pa, &pb) >= old - 1e-12 * old.abs() {
            continue;
        }
        let Some(ca) = checker.valid(&pa) else {
            continue;
        };
        let Some(cb) = checker.valid(&pb) else {
            continue;
        };
        // The pieces of the old segments kept on either side must be valid motions too
        // (they are parts of valid motions, whose floor holds on every part).
        if checker.motion(&pa, ca, &pb, cb) {
            path.splice(a + 1..b + 1, [(pa, ca), (pb, cb)]);
        }
    }
    path
}
