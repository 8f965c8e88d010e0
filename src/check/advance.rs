//! The first pass of a check: the walk along the path from state to state.
//!
//! Where the robot is farther than the tolerance `tol`, a distance within the slack
//! ([`advance_slack`]) gives the conservative step `l / B` (the lower bound over the
//! segment's motion bound, Mirtich 1996), and sweeps ([`Stride`]) then try steps many
//! times longer: a sweep that clears an interval at a floor of at least `tol`
//! ([`Bvh::clear_over`], which counts only the motion towards the world) proves that no
//! state in it is near, so no state needs a distance there (the floor, and which states
//! are measured anyway, depend on the [`Level`]). Where the robot is nearer than `tol`,
//! the walk steps by decisions ([`Bvh::separated`]) until it is far again. A check that
//! stops at the first contact measures no distance: its walk decides states and sweeps
//! at `tol` alone ([`Walk::decided_segment`]), and finds a translation's first contact
//! exactly, by a cast ([`Bvh::first_meeting_along`]).
//!
//! [`Bvh::first_meeting_along`]: crate::proximity::bvh::Bvh::first_meeting_along
//! [`Bvh::clear_over`]: crate::proximity::bvh::Bvh::clear_over
//! [`Bvh::separated`]: crate::proximity::bvh::Bvh::separated

use nalgebra::Vector3;

use super::certify::Cleared;
use super::*;
use crate::progress::cancelled;
use crate::proximity::bvh::{self, Slack};
use crate::proximity::rigid::{part_motion, turn_of};

/// The slack of the queries that advance along the path: a quarter of the distance (the
/// step then falls short of the conservative one by at most that much), at least half
/// the tolerance. Exact answers are only needed where the minimum is certified.
pub(super) fn advance_slack(tol: f64) -> Slack {
    Slack {
        absolute: 0.5 * tol,
        relative: 0.25,
        enough: f64::INFINITY,
    }
}

/// Work counters of a check.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) evaluations: usize,
    pub(super) sweeps: usize,
}

/// Which check a walk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// The check of a whole path, whose minimum is certified to the tolerance: a state
    /// of the path that a sweep cleared is left unmeasured, and the sweeps clear the
    /// floor that certifies the least distance measured so far, when that is above the
    /// tolerance (the certification then has nothing left to do where they pass).
    Path,
    /// A near stretch's own check: every state of the path is measured (a planner's
    /// states are where the minimum most often lies; decided, in a check that stops at
    /// the first contact), and the sweeps clear the tolerance alone (the stretch's
    /// certification splits what they leave).
    Stretch,
}

/// What the first pass leaves.
pub(super) struct Advanced {
    /// The samples, in path order.
    pub(super) samples: Vec<Sample>,
    /// The parts of segments that sweeps cleared, each with its floor.
    pub(super) cleared: Cleared,
    /// Whether the evaluation budget ran out (or the check was cancelled).
    pub(super) incomplete: bool,
}

/// The first pass: the walk of the module docs, with steps of `max(tol, 0.1% of the
/// robot's diagonal)` of motion where the robot is nearer than `tol` (each a decision,
/// measured where it fails: 0 where the meshes meet). `bounds` are the segments' motion
/// bounds.
#[allow(clippy::too_many_arguments)]
pub(super) fn advance(
    robot: &Robot,
    world: &World,
    path: &[State],
    bounds: &[f64],
    tol: f64,
    options: &CheckOptions,
    level: Level,
    count: &mut Counts,
    progress: &mut dyn FnMut(usize),
) -> Advanced {
    let mut walk = Walk {
        robot,
        world,
        path,
        tol,
        options,
        level,
        count,
        scratch: bvh::PairScratch::default(),
        decide_scratch: bvh::PairScratch::default(),
        sweep_scratch: bvh::PairScratch::default(),
        samples: Vec::new(),
        cleared: Cleared::default(),
        stride: Stride::new(options.first_contact_only),
        least: f64::INFINITY,
        swept_floor: tol,
    };
    if bounds.is_empty() {
        let s = walk.eval(PathPos { segment: 0, t: 0.0 }, Slack::EXACT);
        walk.push(s);
        return walk.into_advanced(false);
    }
    for (i, &b) in bounds.iter().enumerate() {
        let end = walk.segment(i, b);
        progress(i);
        match end {
            SegmentEnd::Done if !cancelled(&options.cancel) => {}
            SegmentEnd::Done | SegmentEnd::OutOfBudget => return walk.into_advanced(true),
            SegmentEnd::FirstContact => return walk.into_advanced(false),
        }
    }
    walk.into_advanced(false)
}

/// How a segment's walk ended.
enum SegmentEnd {
    /// At the segment's end.
    Done,
    /// At the first contact, in a check that stops there.
    FirstContact,
    /// The evaluation budget ran out, or the check was cancelled.
    OutOfBudget,
}

/// The state of the walk.
struct Walk<'a> {
    robot: &'a Robot,
    world: &'a World,
    path: &'a [State],
    tol: f64,
    options: &'a CheckOptions,
    level: Level,
    count: &'a mut Counts,
    scratch: bvh::PairScratch,
    decide_scratch: bvh::PairScratch,
    sweep_scratch: bvh::PairScratch,
    samples: Vec<Sample>,
    cleared: Cleared,
    stride: Stride,
    /// The least distance measured so far (an upper bound of the minimum).
    least: f64,
    /// The floor of the last sweep.
    swept_floor: f64,
}

impl Walk<'_> {
    fn into_advanced(self, incomplete: bool) -> Advanced {
        Advanced {
            samples: self.samples,
            cleared: self.cleared,
            incomplete,
        }
    }

    /// The sample at `at`, the distance within `slack`; near (at most `tol`) or not is
    /// decided, by a decision where the bounds straddle `tol`.
    fn eval(&mut self, at: PathPos, slack: Slack) -> Sample {
        self.count.evaluations += 1;
        let state = state_at(self.path, at);
        let mut sample = evaluate(self.robot, self.world, &state, slack, &mut self.scratch);
        if sample.lower <= self.tol && sample.clearance > self.tol {
            let d = self.world.bvh.separated(
                &self.robot.bvh,
                &state.isometry(),
                self.tol,
                &mut self.decide_scratch,
            );
            if d.clear {
                sample.lower = self.tol;
            } else {
                sample.clearance = d.upper;
            }
        }
        Sample { at, ..sample }
    }

    /// Keeps a sample, and the least distance measured.
    fn push(&mut self, s: Sample) {
        self.least = self.least.min(s.clearance);
        self.samples.push(s);
    }

    /// Whether the robot stays at least a floor from the world over `[t0, t1]` of
    /// segment `i` (rotation `turn`): `tol` (no state in the part is near) or, in the
    /// check of a whole path, the floor that certifies the least distance measured so
    /// far when that is higher ([`Level`]). A part that is cleared is recorded with its
    /// floor.
    fn sweep(&mut self, i: usize, turn: &Vector3<f64>, t0: f64, t1: f64) -> bool {
        self.count.sweeps += 1;
        let floor = match self.level {
            Level::Path if !self.options.first_contact_only => self.tol.max(self.least - self.tol),
            Level::Path | Level::Stretch => self.tol,
        };
        let motion = part_motion(&self.path[i], &self.path[i + 1], turn, t0, t1);
        let clear = self
            .world
            .bvh
            .clear_over(&self.robot.bvh, &motion, floor, &mut self.sweep_scratch)
            .clear;
        if clear {
            self.cleared.add(i, t0, t1, floor);
            self.swept_floor = floor;
        }
        clear
    }

    fn out_of_budget(&self) -> bool {
        self.count.evaluations >= self.options.max_evaluations || cancelled(&self.options.cancel)
    }

    /// Walks segment `i`, whose motion bound is `b`.
    fn segment(&mut self, i: usize, b: f64) -> SegmentEnd {
        if self.options.first_contact_only {
            return self.decided_segment(i, b);
        }
        let turn = turn_of(&self.path[i], &self.path[i + 1]);
        let mut t = 0.0;
        let mut s = self.start_sample(i);
        loop {
            self.push(s);
            if self.options.first_contact_only && s.clearance <= 0.0 {
                return SegmentEnd::FirstContact;
            }
            if t >= 1.0 || b == 0.0 {
                return SegmentEnd::Done;
            }
            if self.out_of_budget() {
                return SegmentEnd::OutOfBudget;
            }
            if s.clearance > self.tol {
                let mut stride = self.stride;
                let step = stride.next(t, s.lower / b, &mut |t0, t1| self.sweep(i, &turn, t0, t1));
                self.stride = stride;
                s = match step {
                    Step::Swept(next) => {
                        t = next;
                        if next >= 1.0 && self.level == Level::Path {
                            // The segment's end, cleared: measured only when needed (a
                            // sweep of the next segment fails from it).
                            unmeasured(PathPos { segment: i, t }, self.swept_floor)
                        } else {
                            self.eval(PathPos { segment: i, t }, advance_slack(self.tol))
                        }
                    }
                    Step::Conservative(next) if next < 1.0 && s.clearance.is_infinite() => {
                        // From an unmeasured sample (a segment's start, t = 0) no sweep
                        // cleared: it is measured, for a conservative step longer than
                        // the tolerance's.
                        self.samples.pop();
                        self.measure_start(i)
                    }
                    Step::Conservative(next) => {
                        t = next;
                        self.eval(PathPos { segment: i, t }, advance_slack(self.tol))
                    }
                };
                continue;
            }
            match self.near(i, b, t) {
                Near::Far(far) => {
                    t = far.at.t;
                    s = self.eval(far.at, advance_slack(self.tol));
                }
                Near::End(end) => return end,
            }
        }
    }

    /// Walks segment `i` (motion bound `b`) of a check that stops at the first contact,
    /// by decisions and sweeps at `tol` alone: no distance is measured. From a state
    /// decided at least `tol` from the world, a [`Stride`] of sweeps in conservative
    /// steps of `tol` of motion; one step past where the last cleared sweep ended (or
    /// past the state itself, when none cleared) the next state is decided, and no
    /// state between comes nearer than 0. A state nearer than `tol` starts the decided
    /// steps of [`Walk::near`]. A decision costs a tenth of a distance, and a distance's
    /// longer conservative step only pays where the robot is far, which the sweeps
    /// cover. A translation (no turn) is first cast at the world ([`Walk::cast`]):
    /// where it meets the world, that is the first contact, exactly; where it does not,
    /// the walk's decisions are still needed, for the minimum a free path reports.
    fn decided_segment(&mut self, i: usize, b: f64) -> SegmentEnd {
        if is_translation(&self.path[i], &self.path[i + 1]) {
            if let Some(t) = self.cast(i) {
                return self.exact_contact(PathPos { segment: i, t });
            }
        }
        let turn = turn_of(&self.path[i], &self.path[i + 1]);
        let step = self.tol / b;
        let mut s = self.start_decided(i);
        loop {
            self.push(s);
            let t = s.at.t;
            if s.clearance <= 0.0 {
                return SegmentEnd::FirstContact;
            }
            if t >= 1.0 || b == 0.0 {
                return SegmentEnd::Done;
            }
            if self.out_of_budget() {
                return SegmentEnd::OutOfBudget;
            }
            if s.lower < self.tol {
                match self.near(i, b, t) {
                    Near::Far(far) => s = far,
                    Near::End(end) => return end,
                }
                continue;
            }
            let mut stride = self.stride;
            let step_end = stride.next(t, step, &mut |t0, t1| self.sweep(i, &turn, t0, t1));
            self.stride = stride;
            let next = match step_end {
                Step::Conservative(next) => next,
                Step::Swept(end) => {
                    self.push(unmeasured(PathPos { segment: i, t: end }, self.tol));
                    if end >= 1.0 {
                        return SegmentEnd::Done;
                    }
                    (end + step).min(1.0)
                }
            };
            s = self.decide(PathPos {
                segment: i,
                t: next,
            });
        }
    }

    /// Where the robot, translated along segment `i` (no turn) from its start, first
    /// meets the world ([`Bvh::first_meeting_along`]): exact, a parameter of the
    /// segment; `None` when it never does. Counted as a sweep.
    fn cast(&mut self, i: usize) -> Option<f64> {
        self.count.sweeps += 1;
        let (a, b) = (&self.path[i], &self.path[i + 1]);
        self.world.bvh.first_meeting_along(
            &self.robot.bvh,
            &a.isometry(),
            &(b.position - a.position),
            &mut self.sweep_scratch,
        )
    }

    /// Ends a first-contact walk at the exact first contact `at` of a translation
    /// ([`Walk::cast`]): the sample there, meeting. No state of its segment before it
    /// is kept, so the contact's start needs no bisection.
    fn exact_contact(&mut self, at: PathPos) -> SegmentEnd {
        self.push(Sample {
            at,
            clearance: 0.0,
            lower: 0.0,
        });
        SegmentEnd::FirstContact
    }

    /// The decided sample at the start of segment `i`: the previous segment's last
    /// sample when that is at its end (the same state), else a decision.
    fn start_decided(&mut self, i: usize) -> Sample {
        let at = PathPos { segment: i, t: 0.0 };
        match self.samples.last() {
            Some(last) if ends_before(last, i) => Sample { at, ..*last },
            _ => self.decide(at),
        }
    }

    /// The sample at `at` decided at `tol`: at least `tol` from the world (the least
    /// triangle distance met as its upper bound), or nearer ([`Walk::near_sample`]).
    fn decide(&mut self, at: PathPos) -> Sample {
        self.count.evaluations += 1;
        let pose = state_at(self.path, at).isometry();
        let d =
            self.world
                .bvh
                .separated(&self.robot.bvh, &pose, self.tol, &mut self.decide_scratch);
        if d.clear {
            Sample {
                at,
                clearance: d.upper,
                lower: self.tol,
            }
        } else {
            self.near_sample(at, &pose, d.upper)
        }
    }

    /// The start of segment `i`, measured in place of an unmeasured sample; the
    /// previous segment's end, the same state, takes the measurement too.
    fn measure_start(&mut self, i: usize) -> Sample {
        let s = self.eval(PathPos { segment: i, t: 0.0 }, advance_slack(self.tol));
        if let Some(last) = self.samples.last_mut() {
            if ends_before(last, i) {
                last.clearance = s.clearance;
                last.lower = s.lower;
            }
        }
        s
    }

    /// The sample at the start of segment `i`: the previous segment's last sample when
    /// that is at its end (the same state), else a new one.
    fn start_sample(&mut self, i: usize) -> Sample {
        let at = PathPos { segment: i, t: 0.0 };
        match self.samples.last() {
            Some(last) if ends_before(last, i) => Sample { at, ..*last },
            _ => self.eval(at, advance_slack(self.tol)),
        }
    }

    /// The sample at a state nearer than `tol` (pose `pose`), where a pair of triangles
    /// `witness` apart was met: the near stretch is checked again on its own at a finer
    /// tolerance ([`super::path::resolve_near`]), so the distance is not measured here;
    /// only touching or not is decided, at [`FINEST_TOLERANCE`] of the robot's diagonal
    /// (nearer counts as touching).
    fn near_sample(
        &mut self,
        at: PathPos,
        pose: &nalgebra::Isometry3<f64>,
        witness: f64,
    ) -> Sample {
        let touch = FINEST_TOLERANCE * self.robot.diagonal;
        let apart = witness > 0.0
            && self
                .world
                .bvh
                .separated(&self.robot.bvh, pose, touch, &mut self.decide_scratch)
                .clear;
        if apart {
            Sample {
                at,
                clearance: witness,
                lower: touch,
            }
        } else {
            Sample {
                at,
                clearance: 0.0,
                lower: 0.0,
            }
        }
    }

    /// Decided steps from the near sample at `t` until a state is farther than `tol`
    /// (its decided sample returned, not kept), or the segment's walk ends.
    fn near(&mut self, i: usize, b: f64, mut t: f64) -> Near {
        let contact_step = self.tol.max(1e-3 * self.robot.diagonal);
        loop {
            t = (t + contact_step / b).min(1.0);
            let sample = self.decide(PathPos { segment: i, t });
            if sample.lower >= self.tol {
                return Near::Far(sample);
            }
            self.push(sample);
            if self.options.first_contact_only && sample.clearance <= 0.0 {
                return Near::End(SegmentEnd::FirstContact);
            }
            if t >= 1.0 {
                return Near::End(SegmentEnd::Done);
            }
            if self.out_of_budget() {
                return Near::End(SegmentEnd::OutOfBudget);
            }
        }
    }
}

/// Whether the motion from `a` to `b` is a translation: the same orientation at both
/// ends (a quaternion or its negative), which slerp keeps throughout.
fn is_translation(a: &State, b: &State) -> bool {
    let (p, q) = (a.orientation.coords, b.orientation.coords);
    p == q || p == -q
}

/// Whether sample `s` is the end of segment `i - 1`, the state segment `i` starts at.
fn ends_before(s: &Sample, i: usize) -> bool {
    i > 0 && s.at.segment == i - 1 && s.at.t >= 1.0
}

/// A sample that a sweep cleared at `floor` and no distance measured: no pair of
/// triangles found (an infinite upper bound) and the floor as its lower bound.
fn unmeasured(at: PathPos, floor: f64) -> Sample {
    Sample {
        at,
        clearance: f64::INFINITY,
        lower: floor,
    }
}

/// Where a stretch of decided steps ended.
enum Near {
    /// At a state farther than `tol`, decided.
    Far(Sample),
    /// With the segment's walk.
    End(SegmentEnd),
}

/// The steps of the walk where the robot is far: from a sample whose conservative step
/// is `step`, sweeps of `growth` conservative steps, the growth doubling after each
/// sweep that clears and halving after each that fails, the failed one tried again
/// shorter from the same place, until a sweep at the first growth fails. The walk's next
/// sample is where the last cleared sweep ended, or one conservative step on when none
/// did (a stride that reached a segment's end keeps its growth for the next segment,
/// whose first sweep, if it fails, leads to that step). The conservative step bounds the
/// motion of every point of the robot; the sweep counts only the motion towards the
/// world, so a robot sliding past the world goes many conservative steps at once. A
/// failed sweep costs a fraction of a distance, so the walk shortens its stride before it
/// measures again.
///
/// The first growth is one step in a whole check, which spends its time sliding past the
/// world, and four in a check that stops at the first contact, whose robot mostly
/// approaches the world head-on, where a short sweep that clears gains little
/// (docs/check.md has the timings of both on OMPL.app's problems).
#[derive(Debug, Clone, Copy)]
pub(super) struct Stride {
    growth: f64,
    first: f64,
}

impl Stride {
    const MOST: f64 = 1024.0;

    /// The stride of a whole check, or of one that stops at the first contact.
    pub(super) fn new(first_contact_only: bool) -> Stride {
        let first = if first_contact_only { 4.0 } else { 1.0 };
        Stride {
            growth: first,
            first,
        }
    }

    /// The next sample's `t` after a far sample at `t` whose conservative step is
    /// `step`; `clear(t0, t1)` sweeps the part `[t0, t1]` of the segment.
    pub(super) fn next(
        &mut self,
        mut t: f64,
        step: f64,
        clear: &mut dyn FnMut(f64, f64) -> bool,
    ) -> Step {
        let short = (t + step).min(1.0);
        if short >= 1.0 {
            return Step::Conservative(short);
        }
        let mut swept = false;
        loop {
            let long = (t + self.growth * step).min(1.0);
            if !clear(t, long) {
                if swept && self.growth > self.first {
                    self.growth = (0.5 * self.growth).max(self.first);
                    continue;
                }
                self.growth = self.first;
                return if swept {
                    Step::Swept(t)
                } else {
                    Step::Conservative(short)
                };
            }
            swept = true;
            t = long;
            self.growth = (2.0 * self.growth).min(Stride::MOST);
            if t >= 1.0 {
                return Step::Swept(t);
            }
        }
    }
}

/// Where a [`Stride`] ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Step {
    /// Where the last sweep that cleared ended.
    Swept(f64),
    /// One conservative step on: no sweep cleared (or none was needed).
    Conservative(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where each asked sweep ends, rounded to 0.01.
    fn ends_to_the_hundredth(asked: &[(f64, f64)]) -> Vec<f64> {
        asked
            .iter()
            .map(|a| (a.1 * 100.0).round() / 100.0)
            .collect()
    }

    /// The stride sweeps growing parts from the sample, halves after a failure and tries
    /// again from where it is, and the walk goes on from the end of the last one cleared
    /// when a sweep of one step fails.
    #[test]
    fn stride_grows_halves_and_stops_when_one_step_fails() {
        let mut stride = Stride::new(false);
        let mut asked = Vec::new();
        // Everything up to t = 0.505 clears.
        let t = stride.next(0.0, 0.01, &mut |t0, t1| {
            asked.push((t0, t1));
            t1 <= 0.505
        });
        // Sweeps of 1, 2, 4, 8 and 16 steps clear up to 0.31; 32 fails, 16 clears to
        // 0.47; 32, 16, 8 and 4 fail, 2 clears to 0.49; 4 and 2 fail, 1 clears to 0.50;
        // 2 and 1 fail: the walk measures at 0.50.
        let ends = ends_to_the_hundredth(&asked);
        assert_eq!(
            ends,
            [
                0.01, 0.03, 0.07, 0.15, 0.31, 0.63, 0.47, 0.79, 0.63, 0.55, 0.51, 0.49, 0.53, 0.51,
                0.50, 0.52, 0.51
            ],
            "{asked:?}"
        );
        assert!(
            asked
                .windows(2)
                .all(|w| w[1].0 == w[0].0 || w[1].0 == w[0].1),
            "each sweep starts where the last failed one did or the last cleared one ended"
        );
        assert!(
            matches!(t, Step::Swept(t) if (t - 0.50).abs() < 1e-12),
            "{t:?}"
        );
        // The next sample starts again at one step, and one conservative step is taken
        // when even that fails.
        let mut first = None;
        let t = stride.next(0.6, 0.02, &mut |t0, t1| {
            first.get_or_insert((t0, t1));
            false
        });
        assert_eq!(first, Some((0.6, 0.62)));
        assert_eq!(t, Step::Conservative(0.62));
    }

    /// A check that stops at the first contact starts its strides at four steps.
    #[test]
    fn a_first_contact_stride_starts_at_four_steps() {
        let mut stride = Stride::new(true);
        let mut asked = Vec::new();
        let t = stride.next(0.0, 0.01, &mut |t0, t1| {
            asked.push((t0, t1));
            t1 <= 0.1
        });
        let ends = ends_to_the_hundredth(&asked);
        // 4 steps clear, 8 fail, 4 clear, 8 and 4 fail: the walk measures at 0.08.
        assert_eq!(ends, [0.04, 0.12, 0.08, 0.16, 0.12], "{asked:?}");
        assert!(matches!(t, Step::Swept(t) if (t - 0.08).abs() < 1e-12));
        // The next sample starts again at four steps; when that fails, one
        // conservative step.
        let mut first = None;
        let t = stride.next(0.5, 0.01, &mut |t0, t1| {
            first.get_or_insert((t0, t1));
            false
        });
        assert_eq!(first, Some((0.5, 0.54)));
        assert_eq!(t, Step::Conservative(0.51));
    }

    /// No sweep is needed when the conservative step reaches the segment's end.
    #[test]
    fn stride_ends_the_segment_without_a_sweep() {
        let mut stride = Stride::new(false);
        let t = stride.next(0.95, 0.1, &mut |_, _| panic!("no sweep expected"));
        assert_eq!(t, Step::Conservative(1.0));
    }
}
