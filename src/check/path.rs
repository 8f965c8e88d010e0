//! The orchestration of the whole check ([`check_path`]): the walk along the path
//! ([`super::advance`]), the resolution of the stretches that come within the tolerance,
//! and the certification of the minimum.

use std::time::Instant;

use super::advance::{advance, Advanced, Counts, Level};
use super::certify::certify_minimum;
use super::intervals::meeting_intervals;
use super::*;
use crate::progress::cancelled;
use crate::proximity::bvh;
use crate::proximity::rigid::motion_bound;

/// Checks `path` (at least one state) for `robot` against `world`; `progress` is called
/// with each finished segment.
///
/// The steps: advance along the path (`advance`); resolve the stretches that came
/// within the tolerance without the meshes meeting, each by a check of its own at a finer
/// tolerance (`resolve_near`); certify the minimum clearance when the path is free
/// (`certify_minimum`); collect the intervals where the meshes meet, their ends
/// bisected; measure the deepest state of each (`deepest_in`). With
/// [`CheckOptions::first_contact_only`] the first two steps stop at the first contact
/// and no depth is measured; a path found free and farther than twice the tolerance from
/// the world is then walked again as the whole check walks it (`stays_far`).
pub fn check_path(
    robot: &Robot,
    world: &World,
    path: &[State],
    options: &CheckOptions,
    progress: &mut dyn FnMut(usize),
) -> Report {
    let start = Instant::now();
    let tol = options
        .tolerance
        .unwrap_or(1e-3 * robot.diagonal)
        .max(f64::MIN_POSITIVE);
    let mut count = Counts::default();
    let (mut samples, incomplete) = resolved_samples(
        robot,
        world,
        path,
        tol,
        options,
        Level::Path,
        &mut count,
        progress,
    );
    let (contacts, deepest) = meeting_intervals(
        robot,
        world,
        path,
        &mut samples,
        tol,
        options.first_contact_only,
        &options.cancel,
    );
    let incomplete = incomplete || cancelled(&options.cancel);
    let min_s = samples
        .iter()
        .copied()
        .min_by(|a, b| a.clearance.total_cmp(&b.clearance))
        .unwrap_or(Sample {
            at: PathPos { segment: 0, t: 0.0 },
            clearance: f64::INFINITY,
            lower: f64::INFINITY,
        });
    Report {
        collision_free: contacts.is_empty(),
        min_clearance: min_s.clearance,
        min_clearance_at: min_s.at,
        max_penetration: deepest.map_or(0.0, |d| d.depth),
        deepest,
        first_collision: contacts.first().map(|c| c.from),
        contacts,
        samples,
        tolerance: tol,
        robot_radius: robot.radius,
        robot_diagonal: robot.diagonal,
        states: path.len(),
        evaluations: count.evaluations,
        sweeps: count.sweeps,
        incomplete,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The samples of a path with its near stretches resolved and, when the meshes never
/// meet, its minimum certified: the part of [`check_path`] that a near stretch's own check
/// repeats ([`resolve_near`]). Returns them in path order, and whether the evaluation
/// budget ran out.
#[allow(clippy::too_many_arguments)]
pub(super) fn resolved_samples(
    robot: &Robot,
    world: &World,
    path: &[State],
    tol: f64,
    options: &CheckOptions,
    level: Level,
    count: &mut Counts,
    progress: &mut dyn FnMut(usize),
) -> (Vec<Sample>, bool) {
    let bounds: Vec<f64> = path
        .windows(2)
        .map(|w| motion_bound(&w[0], &w[1], robot.radius))
        .collect();
    let Advanced {
        samples,
        cleared,
        incomplete,
    } = advance(
        robot, world, path, &bounds, tol, options, level, count, progress,
    );
    let samples = resolve_near(robot, world, path, samples, tol, options, count);
    let meets = samples.iter().any(|s| s.clearance <= 0.0);
    if meets || incomplete || bounds.is_empty() {
        return (samples, incomplete);
    }
    if level == Level::Path && options.first_contact_only && stays_far(&samples, tol) {
        let whole = CheckOptions {
            first_contact_only: false,
            ..options.clone()
        };
        return resolved_samples(robot, world, path, tol, &whole, level, count, progress);
    }
    let mut per_segment = by_segment(samples, bounds.len());
    let mut scratch = bvh::PairScratch::default();
    let mut eval_scratch = bvh::PairScratch::default();
    let (mut sweeps, mut evaluations) = (0, 0);
    certify_minimum(
        &mut per_segment,
        path,
        &bounds,
        tol,
        &cleared,
        &mut |motion, floor| {
            sweeps += 1;
            world
                .bvh
                .clear_over(&robot.bvh, motion, floor, &mut scratch)
        },
        &mut |at, slack| {
            evaluations += 1;
            let s = evaluate(robot, world, &state_at(path, at), slack, &mut eval_scratch);
            Sample { at, ..s }
        },
    );
    count.sweeps += sweeps;
    count.evaluations += evaluations;
    (per_segment.into_iter().flatten().collect(), false)
}

/// Whether a walk that found no contact stayed more than twice `tol` from the world
/// (its samples' upper bounds). A check that stops at the first contact then walks the
/// path again as the whole check does: its decided states bound the distance from below
/// by `tol` alone, and its sweeps cleared `tol` alone, so certifying a minimum above
/// `2 tol` from them would split the path into many short sweeps, where the whole
/// check's measured states and sweeps at the minimum's floor pass it at once. Nearer,
/// the sweeps at `tol` already clear the certification's floor (`m - tol`).
fn stays_far(samples: &[Sample], tol: f64) -> bool {
    samples.iter().all(|s| s.clearance > 2.0 * tol)
}

/// Samples grouped by segment (in path order).
pub(super) fn by_segment(samples: Vec<Sample>, segments: usize) -> Vec<Vec<Sample>> {
    let mut out: Vec<Vec<Sample>> = vec![Vec::new(); segments.max(1)];
    for s in samples {
        out[s.at.segment.min(segments.max(1) - 1)].push(s);
    }
    out
}

/// Resolves each stretch of samples nearer than `tol` in which the meshes never meet
/// (every sample's exact distance positive): the stretch, from the sample before it to
/// the sample after it, is checked on its own at a tolerance of a quarter of its least
/// distance, whose samples then replace it. So the verdict does not depend on the
/// tolerance: a path that passes 0.004 from the world at a tolerance of 0.3 is free,
/// with its clearance certified to the finer tolerance there.
pub(super) fn resolve_near(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: Vec<Sample>,
    tol: f64,
    options: &CheckOptions,
    count: &mut Counts,
) -> Vec<Sample> {
    let near = |s: &Sample| s.clearance <= tol;
    let mut out: Vec<Sample> = Vec::with_capacity(samples.len());
    let mut k = 0;
    while k < samples.len() {
        if options.first_contact_only && out.iter().any(|s| s.clearance <= 0.0) {
            // The first contact is found: nothing after it is needed.
            break;
        }
        if !near(&samples[k]) {
            out.push(samples[k]);
            k += 1;
            continue;
        }
        let mut e = k;
        while e + 1 < samples.len() && near(&samples[e + 1]) {
            e += 1;
        }
        let stretch = &samples[k..=e];
        let least = stretch
            .iter()
            .map(|s| s.clearance)
            .fold(f64::INFINITY, f64::min);
        let finer = 0.25 * least;
        if least <= 0.0 || finer < FINEST_TOLERANCE * robot.diagonal {
            out.extend_from_slice(stretch);
            k = e + 1;
            continue;
        }
        let from = if k > 0 {
            samples[k - 1].at
        } else {
            samples[k].at
        };
        let to = if e + 1 < samples.len() {
            samples[e + 1].at
        } else {
            samples[e].at
        };
        let (sub_path, map) = sub_path(path, from, to);
        // The counts are shared, so the budget is the whole check's.
        let sub_options = CheckOptions {
            tolerance: Some(finer),
            ..options.clone()
        };
        let (sub_samples, _) = resolved_samples(
            robot,
            world,
            &sub_path,
            finer,
            &sub_options,
            Level::Stretch,
            count,
            &mut |_| {},
        );
        // The sub-check's samples strictly inside the stretch's span.
        for s in &sub_samples {
            let at = map(s.at);
            if (at.segment, at.t) > (from.segment, from.t)
                && (at.segment, at.t) < (to.segment, to.t)
            {
                out.push(Sample { at, ..*s });
            }
        }
        k = e + 1;
    }
    out
}

/// The part of `path` from `from` to `to` as a path of its own, and the map of its
/// positions back to `path`'s (lerp and slerp restricted to part of a segment are the
/// lerp and slerp between the part's ends).
pub(super) fn sub_path(
    path: &[State],
    from: PathPos,
    to: PathPos,
) -> (Vec<State>, impl Fn(PathPos) -> PathPos) {
    let mut states = vec![state_at(path, from)];
    // (segment of `path`, its t at the sub-segment's start and end)
    let mut spans: Vec<(usize, f64, f64)> = Vec::new();
    let mut at = from;
    while at.segment < to.segment {
        states.push(path[at.segment + 1]);
        spans.push((at.segment, at.t, 1.0));
        at = PathPos {
            segment: at.segment + 1,
            t: 0.0,
        };
    }
    if to.t > at.t || spans.is_empty() {
        states.push(state_at(path, to));
        spans.push((at.segment, at.t, to.t));
    }
    let map = move |p: PathPos| {
        let (segment, t0, t1) = spans[p.segment.min(spans.len() - 1)];
        PathPos {
            segment,
            t: t0 + p.t * (t1 - t0),
        }
    };
    (states, map)
}
