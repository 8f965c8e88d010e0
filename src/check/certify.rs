//! Certification of the minimum clearance: the intervals between samples pass on
//! their samples' bounds or on a directional sweep of the robot, else they are split.

use nalgebra::Vector3;

use super::*;
use crate::proximity::bvh::{self, Slack};
use crate::proximity::rigid::turn_of;

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
/// Lipschitz bound `(l_k + l_{k+1} - B h) / 2` clears `m - tol`, else by a sweep of
/// the robot over it ([`Bvh::clear_over`], which counts only the motion towards the
/// world), else it is split at its middle. `m` only falls as samples are added, so
/// what passed stays passed.
pub(super) fn certify_minimum(
    per_segment: &mut [Vec<Sample>],
    path: &[State],
    bounds: &[f64],
    tol: f64,
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

/// One segment's certification (see [`certify_minimum`]).
pub(super) struct Certify<'a> {
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
        let mid = PathPos {
            segment: s0.at.segment,
            t: 0.5 * (s0.at.t + s1.at.t),
        };
        let motion = bvh::Motion {
            pose: self.a.interpolate(self.b, mid.t).isometry(),
            half_dp: (self.b.position - self.a.position) * (0.5 * h),
            half_turn: self.turn * (0.5 * h),
        };
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
