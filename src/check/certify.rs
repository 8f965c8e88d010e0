//! Certification of the minimum clearance: the intervals between samples pass on
//! their samples' bounds or on a directional sweep of the robot, else they are split.

use nalgebra::Vector3;

use super::*;
use crate::proximity::bvh::{self, Slack};
use crate::proximity::rigid::{part_motion, turn_of};

/// The slack of the queries that certify the minimum: a quarter of the tolerance.
pub(super) fn certify_slack(tol: f64) -> Slack {
    Slack {
        absolute: 0.25 * tol,
        relative: 0.0,
        enough: f64::INFINITY,
    }
}

/// Refines samples until the minimum clearance `m` (the smallest upper bound) is
/// certified to `tol`: the distance over every interval between samples, ends included,
/// is at least `m - tol` (a segment's lone sample is re-evaluated with
/// [`certify_slack`] if its own bound falls short). An interval passes on its samples alone when their
/// Lipschitz bound `(l_k + l_{k+1} - B h) / 2` clears `m - tol`, or when it lies in a
/// part that the first pass's sweeps cleared at a floor at least `m - tol` (`cleared`),
/// else by a sweep of the robot over it ([`Bvh::clear_over`], which counts only the
/// motion towards the world), else it is split at its middle. `m` only falls as samples are added, so
/// what passed stays passed.
pub(super) fn certify_minimum(
    per_segment: &mut [Vec<Sample>],
    path: &[State],
    bounds: &[f64],
    tol: f64,
    cleared: &Cleared,
    sweep: &mut dyn FnMut(&bvh::Motion, f64) -> bvh::Sweep,
    eval: &mut dyn FnMut(PathPos, Slack) -> Sample,
) {
    let tight = certify_slack(tol);
    let mut m = per_segment
        .iter()
        .flatten()
        .map(|s| s.clearance)
        .fold(f64::INFINITY, f64::min);
    // The segments nearest the world first: the minimum falls early, and everything
    // else is judged against a lower floor.
    let mut order: Vec<usize> = (0..per_segment.len()).collect();
    let seg_min = |s: &Vec<Sample>| s.iter().map(|s| s.clearance).fold(f64::INFINITY, f64::min);
    order.sort_by(|&a, &b| seg_min(&per_segment[a]).total_cmp(&seg_min(&per_segment[b])));
    for i in order {
        let samples = std::mem::take(&mut per_segment[i]);
        let mut ctx = Certify {
            cleared,
            a: &path[i],
            b: &path[i + 1],
            turn: turn_of(&path[i], &path[i + 1]),
            bound: bounds[i],
            tol,
            tight,
            m: &mut m,
            sweep: &mut *sweep,
            eval: &mut *eval,
        };
        let mut out = Vec::with_capacity(samples.len());
        let alone = samples.len() == 1;
        for s in samples {
            // A sample between two intervals is covered by their certification (both
            // bounds hold at the ends); only a sample alone needs its own.
            let s = if alone { ctx.tighten(s) } else { s };
            if let Some(&prev) = out.last() {
                ctx.between(prev, s, &mut out, 0);
            }
            out.push(s);
        }
        per_segment[i] = out;
    }
}

/// The parts of segments that sweeps cleared, each at its floor: an interval inside
/// parts cleared at floors at least the certification's needs no more.
#[derive(Debug, Default)]
pub(super) struct Cleared {
    /// (segment, t0, t1, floor), in path order; adjacent parts at one floor merged.
    parts: Vec<(usize, f64, f64, f64)>,
}

impl Cleared {
    /// Records `[t0, t1]` of `segment` as cleared at `floor` (after every part before
    /// it).
    pub(super) fn add(&mut self, segment: usize, t0: f64, t1: f64, floor: f64) {
        match self.parts.last_mut() {
            Some(last) if last.0 == segment && last.2 == t0 && last.3 == floor => last.2 = t1,
            _ => self.parts.push((segment, t0, t1, floor)),
        }
    }

    /// Whether `[t0, t1]` of `segment` lies in adjacent parts cleared at `floor` or
    /// above.
    pub(super) fn covers(&self, segment: usize, t0: f64, t1: f64, floor: f64) -> bool {
        // The first part that ends after t0.
        let k = self
            .parts
            .partition_point(|&(s, _, end, _)| (s, end) <= (segment, t0));
        let mut reached = t0;
        for &(s, start, end, f) in &self.parts[k..] {
            if s != segment || start > reached || f < floor {
                return false;
            }
            reached = end;
            if reached >= t1 {
                return true;
            }
        }
        false
    }
}

/// One segment's certification (see [`certify_minimum`]).
pub(super) struct Certify<'a> {
    pub(super) cleared: &'a Cleared,
    pub(super) a: &'a State,
    pub(super) b: &'a State,
    /// The segment's rotation, axis (world frame) times angle ([`turn_of`]).
    pub(super) turn: Vector3<f64>,
    pub(super) bound: f64,
    pub(super) tol: f64,
    pub(super) tight: Slack,
    pub(super) m: &'a mut f64,
    pub(super) sweep: &'a mut dyn FnMut(&bvh::Motion, f64) -> bvh::Sweep,
    pub(super) eval: &'a mut dyn FnMut(PathPos, Slack) -> Sample,
}

impl Certify<'_> {
    pub(super) fn floor(&self) -> f64 {
        *self.m - self.tol
    }

    /// The sample, re-evaluated tightly if its lower bound is below the floor.
    pub(super) fn tighten(&mut self, s: Sample) -> Sample {
        let s = if s.lower < self.floor() && s.clearance - s.lower > self.tight.absolute {
            (self.eval)(s.at, self.tight)
        } else {
            s
        };
        *self.m = self.m.min(s.clearance);
        s
    }

    /// Certifies the interval between `s0` and `s1`, pushing the samples it adds (in
    /// order, `s0` and `s1` excluded) onto `out`.
    pub(super) fn between(&mut self, s0: Sample, s1: Sample, out: &mut Vec<Sample>, depth: usize) {
        let h = s1.at.t - s0.at.t;
        if 0.5 * (s0.lower + s1.lower - self.bound * h) >= self.floor() || h <= 1e-12 || depth > 60
        {
            return;
        }
        if self
            .cleared
            .covers(s0.at.segment, s0.at.t, s1.at.t, self.floor())
        {
            return;
        }
        let mid = PathPos {
            segment: s0.at.segment,
            t: 0.5 * (s0.at.t + s1.at.t),
        };
        let motion = part_motion(self.a, self.b, &self.turn, s0.at.t, s1.at.t);
        let floor = self.floor();
        let sweep = (self.sweep)(&motion, floor);
        if sweep.clear {
            return;
        }
        let s = if self.bound * h > self.tol && depth < 30 && sweep.upper.is_finite() {
            // Split without a distance query: the sweep met a pair of triangles at the
            // middle, whose distance is a witness for the minimum (an upper bound there).
            *self.m = self.m.min(sweep.upper);
            Sample {
                at: mid,
                clearance: sweep.upper,
                lower: f64::NEG_INFINITY,
            }
        } else {
            // Enough for both halves to pass on their samples, if the distance is there.
            let s = (self.eval)(
                mid,
                Slack {
                    enough: floor + 0.5 * self.bound * h,
                    ..self.tight
                },
            );
            self.tighten(s)
        };
        self.between(s0, s, out, depth + 1);
        out.push(s);
        self.between(s, s1, out, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::Cleared;

    /// Adjacent parts merge; an interval is covered only inside one part of its own
    /// segment, and only against a floor at most the parts'.
    #[test]
    fn cleared_parts_cover_what_lies_inside_them() {
        let mut c = Cleared::default();
        c.add(0, 0.0, 0.25, 0.01);
        c.add(0, 0.25, 0.5, 0.01);
        c.add(0, 0.5, 0.6, 0.02);
        c.add(0, 0.75, 1.0, 0.01);
        c.add(2, 0.0, 1.0, 0.01);
        assert!(c.covers(0, 0.1, 0.5, 0.01), "merged across 0.25");
        assert!(c.covers(0, 0.1, 0.6, 0.01), "adjacent at a higher floor");
        assert!(!c.covers(0, 0.1, 0.6, 0.015), "partly below the floor");
        assert!(c.covers(0, 0.5, 0.6, 0.015));
        assert!(c.covers(0, 0.0, 0.25, -1.0));
        assert!(
            !c.covers(0, 0.1, 0.5, 0.0100001),
            "a floor above the parts'"
        );
        assert!(!c.covers(0, 0.4, 0.8, 0.0), "across the gap (0.6, 0.75)");
        assert!(c.covers(0, 0.75, 1.0, 0.0));
        assert!(!c.covers(1, 0.0, 0.1, 0.0), "segment 1 was not cleared");
        assert!(c.covers(2, 0.3, 0.6, 0.0));
        assert!(!c.covers(3, 0.0, 0.1, 0.0));
    }
}
