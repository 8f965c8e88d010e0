//! State and motion validity for the planner, from exact mesh distances: a state is
//! valid when the robot's distance to the world exceeds the clearance `c`, a motion
//! (position lerp and slerp, as [`State::interpolate`]) when the distance stays above
//! the floor `3c / 4` over all of it, certified continuously, never sampled at a
//! resolution.
//!
//! **The cover test.** A state whose distance is at least `l` keeps the robot clear for
//! any motion of its points shorter than `l`; along a motion of bound `B` (every robot
//! point moves at most `B`, [`crate::proximity::rigid::motion_bound`]) the distance between two
//! states at distances `l0` and `l1` is at least `(l0 + l1 - B) / 2` everywhere in
//! between. In open space one distance query per new state certifies the motion to it
//! (a sampled checker at resolution 1% of the space makes about twenty collision queries
//! for the same step).
//!
//! **Near the world** the cover test fails, and the interval is swept
//! ([`crate::proximity::bvh::Bvh::sweep_from`]: bounds that count only the motion towards
//! the world, so that sliding along a wall passes in one sweep). A sweep that fails
//! leaves a *front*: the pairs of nodes it could not clear (and, past a few failed
//! pairs of leaves, those it had not opened yet). Every other pair is clear over the
//! interval, so over both its halves, which are swept from the front alone: the work of
//! a failed sweep is kept, not redone from the roots. On OMPL.app's problems this halved
//! the cost of a motion (docs/plan.md). A short interval with no front yet decides its
//! middle instead ([`Checker::lower`]). Every split halves the motion, and two triangles
//! closer than the floor at a middle end the check: the recursion ends.
//!
//! **Probes.** Where many motions near the world are refused (a narrow passage, where
//! nearly every step of the trees crosses a wall), a motion is first decided at its
//! middle and quarters: one state inside the world refuses it at a fraction of the
//! sweeps' cost. The checker counts the motions it refuses and probes only while they
//! are at least one in eight; the verdict is the same either way.

use nalgebra::{Point3, Vector3};

use crate::check::{Robot, World};
use crate::proximity::bvh::{Bounded, PairScratch, Slack};
use crate::proximity::rigid::State;
use crate::proximity::rigid::{motion_bound, part_motion, turn_of};

/// A state's distance to the world, as the planner keeps it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clearance {
    /// A lower bound of the distance (within a quarter of it).
    pub lower: f64,
    /// The closest points, world frame (on the world, on the robot), when the query met
    /// a pair of triangles.
    pub closest: Option<(Point3<f64>, Point3<f64>)>,
}

impl Clearance {
    /// The unit direction that moves the robot away from the world fastest (the
    /// distance's gradient in translation), when known.
    pub fn normal(&self) -> Option<Vector3<f64>> {
        let (w, r) = self.closest?;
        (r - w).try_normalize(1e-300)
    }
}

/// Counters of the validity checker's work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Distance queries (one per state checked, plus splits).
    pub queries: usize,
    /// Interval sweeps.
    pub sweeps: usize,
    /// Motions checked.
    pub motions: usize,
    /// Motions the cover test did not pass: those near the world.
    pub near: usize,
    /// Motions refused.
    pub refused: usize,
}

/// The validity checker of one planner (each thread has its own scratch).
pub struct Checker<'a> {
    /// The moving part.
    pub robot: &'a Robot,
    /// The fixed world.
    pub world: &'a World,
    /// The clearance a state needs (problem units).
    pub clearance: f64,
    scratch: PairScratch,
    sweep_scratch: PairScratch,
    /// The work done so far.
    pub work: Work,
    /// The largest distance worth knowing: queries stop once their lower bound reaches
    /// it (the planner's step; a state that far from the world covers any step).
    pub enough: f64,
    /// The intervals [`Checker::motion`] has still to certify.
    intervals: Vec<Interval>,
    /// The fronts of those intervals' sweeps.
    front: Vec<(u32, u32)>,
}

impl<'a> Checker<'a> {
    /// A checker for `robot` in `world` with states valid above `clearance`.
    pub fn new(robot: &'a Robot, world: &'a World, clearance: f64) -> Checker<'a> {
        Checker {
            robot,
            world,
            clearance,
            scratch: PairScratch::default(),
            sweep_scratch: PairScratch::default(),
            work: Work::default(),
            enough: f64::INFINITY,
            intervals: Vec::new(),
            front: Vec::new(),
        }
    }

    /// The floor a motion's distance must stay above between its states: three
    /// quarters of the clearance.
    pub fn floor(&self) -> f64 {
        0.75 * self.clearance
    }

    /// The distance at `state` within a quarter (exact where that decides validity).
    pub fn clearance_at(&mut self, state: &State) -> Clearance {
        self.query(state, 0.25, self.enough)
    }

    /// Whether `state` is valid: `Some` of a lower bound of its distance (at least
    /// [`Checker::enough`] when it is that far, else the clearance), `None` when it is
    /// within the clearance.
    pub fn valid(&mut self, state: &State) -> Option<f64> {
        self.lower(state, self.enough.max(self.clearance), self.clearance)
    }

    /// A lower bound of the distance at `state` from two decisions: at least `want`
    /// (`Some(want)`), else at least `need` (`Some(need)`), else `None`. A decision is a
    /// depth-first sweep with no motion ([`crate::proximity::bvh::Bvh::clear_over`]), which
    /// stops at the first pair of triangles closer than its floor: much cheaper than a
    /// distance, both far from the world (everything is pruned high in the trees) and in
    /// collision (the first close pair ends it).
    ///
    /// `need` is decided first: most states the planner asks about are in collision (on
    /// OMPL.app's cubicles, seed 1, 64% of 17,843 decisions; 35% lie between the
    /// clearance and a step, 0.4% beyond a step), and one decision settles those. The
    /// answer is the same in either order.
    pub fn lower(&mut self, state: &State, want: f64, need: f64) -> Option<f64> {
        let pose = state.isometry();
        self.work.queries += 1;
        if !self
            .world
            .bvh
            .separated(&self.robot.bvh, &pose, need, &mut self.sweep_scratch)
            .clear
        {
            return None;
        }
        if want <= need {
            return Some(need);
        }
        self.work.queries += 1;
        let far = self
            .world
            .bvh
            .separated(&self.robot.bvh, &pose, want, &mut self.sweep_scratch);
        Some(if far.clear { want } else { need })
    }

    fn query(&mut self, state: &State, relative: f64, enough: f64) -> Clearance {
        self.work.queries += 1;
        let pose = state.isometry();
        let slack = Slack {
            absolute: 0.05 * self.clearance,
            relative,
            enough,
        };
        let mut found = self.world.bvh.distance_with(
            &self.robot.bvh,
            &pose,
            f64::INFINITY,
            slack,
            &mut self.scratch,
        );
        if matches!(found, Some(b) if b.lower <= self.clearance && b.upper() > self.clearance) {
            // The slack straddles the clearance: decide exactly.
            found = self.world.bvh.distance_with(
                &self.robot.bvh,
                &pose,
                f64::INFINITY,
                Slack::EXACT,
                &mut self.scratch,
            );
        }
        match found {
            Some(Bounded { closest, lower }) => Clearance {
                lower: lower.min(closest.distance),
                closest: Some((closest.on_a, closest.on_b)),
            },
            None => Clearance {
                lower: f64::INFINITY,
                closest: None,
            },
        }
    }

    /// Whether the motion from `a` (distance at least `la`) to `b` (at least `lb`) keeps
    /// the distance above [`Checker::floor`] (see the module docs).
    pub fn motion(&mut self, a: &State, la: f64, b: &State, lb: f64) -> bool {
        self.work.motions += 1;
        let bound = motion_bound(a, b, self.robot.radius);
        if 0.5 * (la + lb - bound) > self.floor() {
            // The cover test.
            return true;
        }
        let probe = self.crossings_likely();
        self.work.near += 1;
        let free = (!probe || self.probes_clear(a, b)) && self.swept(a, la, b, lb, bound);
        if !free {
            self.work.refused += 1;
        }
        free
    }

    /// Whether refusals are common among the motions near the world so far: at least
    /// one in [`PROBE_ODDS`] (and before the first).
    fn crossings_likely(&self) -> bool {
        self.work.refused * PROBE_ODDS >= self.work.near
    }

    /// Whether every state of [`PROBES`] along the motion from `a` to `b` is decided
    /// farther than the floor (a motion where one is not is refused: it comes nearer).
    fn probes_clear(&mut self, a: &State, b: &State) -> bool {
        let floor = self.floor();
        PROBES
            .iter()
            .all(|&t| self.lower(&a.interpolate(b, t), floor, floor).is_some())
    }

    /// The continuous certificate of a motion (bound `bound`) that the cover test did not
    /// pass: its intervals swept, from their fronts, or split at decided middles.
    fn swept(&mut self, a: &State, la: f64, b: &State, lb: f64, bound: f64) -> bool {
        // The checker's own stacks, reused from motion to motion.
        let mut stack = std::mem::take(&mut self.intervals);
        let mut front = std::mem::take(&mut self.front);
        stack.clear();
        front.clear();
        stack.push(Interval {
            t0: 0.0,
            l0: la,
            t1: 1.0,
            l1: lb,
            front: 0..0,
            arena: 0,
        });
        let free = self.certify(a, b, bound, &mut stack, &mut front);
        self.intervals = stack;
        self.front = front;
        free
    }

    /// The loop of [`Checker::motion`] over the intervals still to certify. `front` is
    /// the arena of the intervals' fronts, a stack in step with theirs: an interval's
    /// front, and those of the intervals pushed after it, lie below its `arena`.
    fn certify(
        &mut self,
        a: &State,
        b: &State,
        bound: f64,
        stack: &mut Vec<Interval>,
        front: &mut Vec<(u32, u32)>,
    ) -> bool {
        let turn = turn_of(a, b);
        let floor = self.floor();
        while let Some(interval) = stack.pop() {
            // Above the arena lie the fronts of intervals already certified.
            front.truncate(interval.arena);
            let h = interval.t1 - interval.t0;
            if 0.5 * (interval.l0 + interval.l1 - bound * h) > floor {
                continue;
            }
            if h < 1e-9 {
                // Unreachable with finite bounds; a guard against a degenerate motion.
                return false;
            }
            let tm = 0.5 * (interval.t0 + interval.t1);
            if interval.front.is_empty() && bound * h <= 0.25 * floor {
                // Short, and nothing swept yet: decide the middle, with enough for both
                // halves to pass on their ends if the distance is there.
                let want = floor + 0.5 * bound * h + 0.05 * self.clearance;
                let Some(lm) = self.lower(&a.interpolate(b, tm), want, floor) else {
                    return false;
                };
                stack.extend(interval.halves(tm, lm, 0..0, front.len()));
                continue;
            }
            match self.sweep_part(a, b, &turn, &interval, floor, front) {
                PartSweep::Clear => {}
                PartSweep::Fails => return false,
                // The halves sweep the front alone; nothing is known at the middle yet.
                PartSweep::Front(halves) => {
                    stack.extend(interval.halves(tm, 0.0, halves, front.len()));
                }
            }
        }
        true
    }

    /// Sweeps `interval` of the motion from `a` to `b` (rotation `turn`) at `floor`,
    /// from its front (from the roots' pair when it has none yet), appending to `front`
    /// the pairs it cannot clear.
    fn sweep_part(
        &mut self,
        a: &State,
        b: &State,
        turn: &Vector3<f64>,
        interval: &Interval,
        floor: f64,
        front: &mut Vec<(u32, u32)>,
    ) -> PartSweep {
        self.work.sweeps += 1;
        let motion = part_motion(a, b, turn, interval.t0, interval.t1);
        let roots = if interval.front.is_empty() {
            front.push((0, 0));
            front.len() - 1..front.len()
        } else {
            interval.front.clone()
        };
        let start = front.len();
        let sweep = self.world.bvh.sweep_from(
            &self.robot.bvh,
            &motion,
            floor,
            &mut self.sweep_scratch,
            front,
            roots,
            FRONT_CAP,
        );
        if sweep.clear {
            PartSweep::Clear
        } else if sweep.upper < floor {
            // A pair of triangles closer than the floor at the middle.
            PartSweep::Fails
        } else {
            PartSweep::Front(start..front.len())
        }
    }
}

/// The states (fractions of a motion) decided before a motion near the world is swept,
/// while [`Checker`] finds such motions often refused. A refused motion of the planner
/// is typically a step whose two valid ends lie on either side of a wall, or of a turn
/// that swings the robot through one: a decision at its middle refuses it in about a
/// fifth of the time of one sweep, where the sweeps' bisection needs about seven before a
/// middle lands in the wall (OMPL.app's spirelli, seed 5: 53,350 motions, 99% refused).
/// The answer is the same either way: a state nearer than the floor refuses the motion.
const PROBES: [f64; 3] = [0.5, 0.25, 0.75];

/// The probes run while at least one motion near the world in this many has been
/// refused: where most pass (OMPL.app's Twistycooler, 5% refused), they cost 8% of the
/// search and save nothing.
const PROBE_ODDS: usize = 8;

/// What the sweep of a part of a motion found.
enum PartSweep {
    /// The part is clear.
    Clear,
    /// Two triangles are closer than the floor at its middle.
    Fails,
    /// Neither: the pairs of nodes left (a range of the fronts' arena).
    Front(std::ops::Range<usize>),
}

/// An interval of a motion still to certify: its ends `t0 < t1` with lower bounds of
/// their distances (0: unknown), the front of pairs of nodes left by the sweep of the
/// interval that contains it (empty: none yet), and the length of the fronts' arena
/// when it was pushed.
#[derive(Debug, Clone)]
struct Interval {
    t0: f64,
    l0: f64,
    t1: f64,
    l1: f64,
    front: std::ops::Range<usize>,
    arena: usize,
}

impl Interval {
    /// The halves at `tm`, where `lm` bounds the distance (0: unknown), with the front
    /// `front` and the arena's length `arena`: the upper one first, so that the lower one
    /// is certified first off the stack.
    fn halves(
        &self,
        tm: f64,
        lm: f64,
        front: std::ops::Range<usize>,
        arena: usize,
    ) -> [Interval; 2] {
        [
            Interval {
                t0: tm,
                l0: lm,
                t1: self.t1,
                l1: self.l1,
                front: front.clone(),
                arena,
            },
            Interval {
                t0: self.t0,
                l0: self.l0,
                t1: tm,
                l1: lm,
                front,
                arena,
            },
        ]
    }
}

/// The pairs of leaves a sweep lets fail before it stops and hands the pairs it has not
/// visited to the halves of its interval, unopened. A sweep that opened every pair of a
/// long interval would open thousands near the world (30 times slower on OMPL.app's
/// alpha-1.5); the halves' shorter motions clear most of them higher in the trees.
/// From 8 to 32 gave the same times on OMPL.app's alpha-1.5 and cubicles.
const FRONT_CAP: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::box_surface;
    use nalgebra::{Point3, UnitQuaternion};

    /// A 0.2 cube and a wall 0.01 thick (x in [-0.005, 0.005]), 4 x 4.
    fn cube_and_wall() -> (Robot, World) {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let wall = box_surface(Point3::origin(), Vector3::new(0.005, 2.0, 2.0), 1);
        (robot, World::new(&wall))
    }

    fn at(x: f64, y: f64) -> State {
        State::new(Vector3::new(x, y, 0.0), UnitQuaternion::identity())
    }

    /// A state at a uniform position in `|x| < x_half`, `|y| < y_half` (z = 0), turned
    /// uniformly.
    fn turned(rng: &mut rand_chacha::ChaCha8Rng, x_half: f64, y_half: f64) -> State {
        use rand::Rng;
        let x = rng.random_range(-x_half..x_half);
        let y = rng.random_range(-y_half..y_half);
        State::new(
            Vector3::new(x, y, 0.0),
            crate::plan::space::uniform_rotation(rng),
        )
    }

    /// Both ends are far from the wall, the straight motion between them crosses it: a
    /// sampled check with a step longer than the wall's thickness plus the cube could
    /// step over it; the continuous one may not.
    #[test]
    fn a_motion_through_a_thin_wall_is_refused_though_both_ends_are_free() {
        let (robot, world) = cube_and_wall();
        let mut c = Checker::new(&robot, &world, 1e-3);
        let (a, b) = (at(-1.0, 0.0), at(1.0, 0.0));
        let la = c.valid(&a).expect("free");
        let lb = c.valid(&b).expect("free");
        assert!(!c.motion(&a, la, &b, lb));
        // Sliding along the wall, 0.1 from it (the cube's face at x = -0.105, the wall's
        // at -0.005), passes.
        let (a, b) = (at(-0.205, -1.0), at(-0.205, 1.0));
        let (la, lb) = (c.valid(&a).unwrap(), c.valid(&b).unwrap());
        assert!(c.motion(&a, la, &b, lb));
        // A state in the wall is not valid, nor one closer than the clearance.
        assert!(c.valid(&at(0.0, 0.0)).is_none());
        assert!(c.valid(&at(-0.1055, 0.0)).is_none());
        assert!(c.valid(&at(-0.107, 0.0)).is_some());
    }

    /// In open space, two states whose distances cover the motion pass without a sweep.
    #[test]
    fn the_cover_test_passes_open_space_on_the_two_distances() {
        let (robot, world) = cube_and_wall();
        let mut c = Checker::new(&robot, &world, 1e-3);
        c.enough = 1.0;
        let (a, b) = (at(-1.5, -0.2), at(-1.5, 0.2));
        let (la, lb) = (c.valid(&a).unwrap(), c.valid(&b).unwrap());
        // The cube's faces are 1.395 from the wall: "at least a step (1.0) away".
        assert_eq!((la, lb), (1.0, 1.0));
        let before = c.work;
        assert!(c.motion(&a, la, &b, lb));
        assert_eq!(c.work.sweeps, before.sweeps);
        assert_eq!(c.work.queries, before.queries);
    }

    /// A certified motion is free: on random motions about the wall, turning as they
    /// go, every motion the checker passes keeps the exact distance above the floor at
    /// 300 instants (the sampling can only miss a dip, never invent one), and every
    /// motion whose sampled distance dips below it is refused.
    #[test]
    fn a_certified_motion_keeps_the_floor() {
        use rand::SeedableRng;
        let (robot, world) = cube_and_wall();
        let mut c = Checker::new(&robot, &world, 1e-2);
        c.enough = 0.3;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (mut passed, mut refused) = (0, 0);
        while passed + refused < 200 {
            let (a, b) = (turned(&mut rng, 0.5, 0.5), turned(&mut rng, 0.5, 0.5));
            let (Some(la), Some(lb)) = (c.valid(&a), c.valid(&b)) else {
                continue;
            };
            let sampled = (0..=300)
                .map(|i| {
                    crate::check::clearance(&robot, &world, &a.interpolate(&b, i as f64 / 300.0))
                })
                .fold(f64::INFINITY, f64::min);
            if c.motion(&a, la, &b, lb) {
                assert!(sampled >= c.floor(), "{sampled} < {}", c.floor());
                passed += 1;
            } else {
                refused += 1;
            }
            if sampled < c.floor() {
                assert!(!c.motion(&a, la, &b, lb));
            }
        }
        // Deterministic: 103 passed and 97 refused, with 918 sweeps for 297 motions (the
        // halves of split intervals swept from their fronts).
        assert!(
            passed >= 20 && refused >= 20,
            "{passed} passed, {refused} refused"
        );
        assert!(c.work.sweeps > 2 * c.work.motions, "{:?}", c.work);
    }

    /// The probes change no verdict: on random motions about the wall, turning as they
    /// go, a motion's verdict with probes is its sweeps' alone. Motions often refused
    /// keep the probes on; a run of motions that slide along the wall, near it but free,
    /// turns them off.
    #[test]
    fn the_probes_change_no_verdict_and_stop_where_motions_pass() {
        use rand::SeedableRng;
        let (robot, world) = cube_and_wall();
        let mut c = Checker::new(&robot, &world, 1e-2);
        c.enough = 0.3;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let mut probed_refusals = 0;
        for _ in 0..400 {
            let (a, b) = (turned(&mut rng, 0.4, 0.5), turned(&mut rng, 0.4, 0.5));
            let (Some(la), Some(lb)) = (c.valid(&a), c.valid(&b)) else {
                continue;
            };
            let probing = c.crossings_likely();
            let sweeps = c.work.sweeps;
            let verdict = c.motion(&a, la, &b, lb);
            if probing && !verdict && c.work.sweeps == sweeps {
                probed_refusals += 1;
            }
            assert_eq!(
                verdict,
                c.swept(&a, la, &b, lb, motion_bound(&a, &b, robot.radius))
            );
        }
        // Most of these motions cross the wall, and most refusals came from the probes.
        assert!(c.crossings_likely(), "{:?}", c.work);
        assert!(
            probed_refusals * 2 > c.work.refused,
            "{probed_refusals} of {:?}",
            c.work
        );
        // Sliding along the wall at 0.02 from it, turning a little: free, and near.
        let beside_wall = |y: f64, angle: f64| {
            State::new(
                Vector3::new(-0.125, y, 0.0),
                UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 0.0, angle)),
            )
        };
        for k in 0..(8 * c.work.refused) {
            let (a, b) = (
                beside_wall(-0.5, 0.0),
                beside_wall(0.5, 0.02 * (k % 3) as f64),
            );
            let (la, lb) = (c.valid(&a).unwrap(), c.valid(&b).unwrap());
            let near = c.work.near;
            assert!(c.motion(&a, la, &b, lb));
            assert_eq!(c.work.near, near + 1, "the cover test passed it");
        }
        assert!(!c.crossings_likely(), "{:?}", c.work);
    }

    /// Where a motion grazes the world at its middle, about the floor, the probed
    /// verdict is still the sweeps': a bump 0.045 out of the wall at y = 0, passed by
    /// the cube at gaps about the floor (each motion on a new checker, which probes).
    #[test]
    fn a_motion_grazing_the_floor_at_a_probe_gets_the_sweeps_verdict() {
        let robot = Robot::new(&box_surface(Point3::origin(), Vector3::repeat(0.1), 1));
        let world = World::new(&crate::mesh::shapes::union(&[
            box_surface(Point3::origin(), Vector3::new(0.005, 2.0, 2.0), 1),
            box_surface(
                Point3::new(-0.025, 0.0, 0.0),
                Vector3::new(0.025, 0.05, 0.05),
                1,
            ),
        ]));
        let (mut passed, mut refused) = (0, 0);
        for k in 0..=40 {
            let mut c = Checker::new(&robot, &world, 1e-2);
            // The bump's face at x = -0.05; the cube's at x + 0.1.
            let gap = c.floor() * (0.5 + 0.05 * k as f64);
            let x = -0.05 - gap - 0.1;
            let (a, b) = (at(x, -0.5), at(x, 0.5));
            let (la, lb) = (c.valid(&a).unwrap(), c.valid(&b).unwrap());
            assert!(c.crossings_likely());
            let verdict = c.motion(&a, la, &b, lb);
            assert_eq!(verdict, gap > c.floor(), "gap {gap}");
            assert_eq!(
                verdict,
                c.swept(&a, la, &b, lb, motion_bound(&a, &b, robot.radius)),
                "gap {gap}"
            );
            if verdict {
                passed += 1;
            } else {
                refused += 1;
            }
        }
        assert!(
            passed > 10 && refused > 10,
            "{passed} passed, {refused} refused"
        );
    }

    /// The decisions' bounds are true lower bounds of the exact distance, on random poses
    /// about the wall.
    #[test]
    fn lower_bounds_never_exceed_the_exact_distance() {
        use rand::{Rng, SeedableRng};
        let (robot, world) = cube_and_wall();
        let mut c = Checker::new(&robot, &world, 1e-3);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        for _ in 0..300 {
            let s = turned(&mut rng, 0.5, 1.0);
            let exact = crate::check::clearance(&robot, &world, &s);
            let want = rng.random_range(0.0..0.4);
            match c.lower(&s, want, 1e-3) {
                Some(l) => assert!(l <= exact + 1e-12, "{l} > {exact}"),
                None => assert!(exact < want.max(1e-3) + 1e-12),
            }
            let q = c.clearance_at(&s);
            assert!(q.lower <= exact.max(0.0) + 1e-12);
        }
    }
}
