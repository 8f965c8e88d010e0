//! Contact intervals: where the meshes meet along the path, their ends bisected, and
//! the deepest state of each with its penetration depth.

use nalgebra::Vector3;

use super::*;
use crate::progress::{cancelled, Cancel};
use crate::proximity::bvh;
use crate::proximity::rigid::{part_motion, turn_of};

/// The intervals where the meshes meet (runs of samples at clearance 0, their ends
/// bisected between the free and the meeting side), each with its deepest state's
/// depth, which joins the samples; and the path's deepest state, measured finely.
pub(super) fn meeting_intervals(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: &mut Vec<Sample>,
    tol: f64,
    first_only: bool,
    cancel: &Option<Cancel>,
) -> (Vec<Contact>, Option<Deepest>) {
    let mut depth_scratch = penetration::Scratch::default();
    // A quarter of the depth searches' budget is kept for the fine search at the
    // deepest state, whatever the coarse ones along the intervals spend.
    let reserve = depth_scratch.budget / 4;
    depth_scratch.budget -= reserve;
    let (mut contacts, mut directions) = match find_intervals(
        robot,
        world,
        path,
        samples,
        tol,
        first_only,
        cancel,
        &mut depth_scratch,
    ) {
        Found::First(contact) => return (vec![contact], None),
        Found::All(contacts, directions) => (contacts, directions),
    };
    let cut_short = depth_scratch.budget == 0;
    depth_scratch.budget += reserve;
    let cut_short = refine_deepest(
        robot,
        world,
        path,
        &mut contacts,
        &mut directions,
        &mut depth_scratch,
        cancel,
    ) || cut_short;
    let deepest = (0..contacts.len())
        .max_by(|&a, &b| contacts[a].depth.total_cmp(&contacts[b].depth))
        .filter(|&i| contacts[i].depth > 0.0)
        .map(|i| Deepest {
            at: contacts[i].deepest_at,
            depth: contacts[i].depth,
            direction: directions[i],
            cut_short,
        });
    insert_depth_samples(samples, &contacts);
    (contacts, deepest)
}

/// What [`find_intervals`] found: the first contact alone, or every interval with its
/// separating direction.
enum Found {
    First(Contact),
    All(Vec<Contact>, Vec<Vector3<f64>>),
}

/// The runs of meeting samples as contact intervals, their ends bisected, each with its
/// deepest state's depth measured coarsely (and its separating direction); with
/// `first_only`, the first interval's start alone.
#[allow(clippy::too_many_arguments)]
fn find_intervals(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: &[Sample],
    tol: f64,
    first_only: bool,
    cancel: &Option<Cancel>,
    depth_scratch: &mut penetration::Scratch,
) -> Found {
    let mut bracket = Bracket {
        robot,
        world,
        path,
        floor: FINEST_TOLERANCE * robot.diagonal,
        pairs: Vec::new(),
        scratch: bvh::PairScratch::default(),
    };
    let meeting = |s: &Sample| s.clearance <= 0.0;
    let mut contacts = Vec::new();
    // Each interval's separating direction; the last one found is the next one's hint.
    let mut directions: Vec<Vector3<f64>> = Vec::new();
    let mut k = 0;
    while k < samples.len() && !cancelled(cancel) {
        if !meeting(&samples[k]) {
            k += 1;
            continue;
        }
        let begin = if k == 0 || samples[k - 1].at.segment != samples[k].at.segment {
            samples[k].at
        } else {
            bracket.contact_start(samples[k - 1].at, samples[k].at)
        };
        let mut e = k;
        while e + 1 < samples.len() && meeting(&samples[e + 1]) {
            e += 1;
        }
        let state = state_at(path, begin);
        if first_only {
            // Where the first contact starts; the last state known to collide ends it.
            return Found::First(Contact {
                from: begin,
                to: samples[e].at,
                objects: world.objects_near(robot, &state.isometry(), tol),
                depth: 0.0,
                deepest_at: begin,
            });
        }
        let end = if e + 1 < samples.len() && samples[e + 1].at.segment == samples[e].at.segment {
            // The first free parameter after the contact.
            bracket.contact_end(samples[e].at, samples[e + 1].at)
        } else {
            samples[e].at
        };
        let (depth, deepest_at, direction) = deepest_in(
            robot,
            world,
            path,
            &samples[k..=e],
            depth_scratch,
            directions.last().copied(),
        );
        directions.push(direction);
        contacts.push(Contact {
            from: begin,
            to: end,
            objects: world.objects_near(robot, &state.isometry(), tol),
            depth,
            deepest_at,
        });
        k = e + 1;
    }
    Found::All(contacts, directions)
}

/// The deepest interval's depth, measured finely (again while the fine measure drops it
/// below another interval's coarse one). Returns whether a search spent its budget.
fn refine_deepest(
    robot: &Robot,
    world: &World,
    path: &[State],
    contacts: &mut [Contact],
    directions: &mut [Vector3<f64>],
    depth_scratch: &mut penetration::Scratch,
    cancel: &Option<Cancel>,
) -> bool {
    let mut fine = vec![false; contacts.len()];
    let mut cut_short = false;
    while let Some(i) =
        (0..contacts.len()).max_by(|&a, &b| contacts[a].depth.total_cmp(&contacts[b].depth))
    {
        if contacts[i].depth <= 0.0 || fine[i] || cancelled(cancel) {
            break;
        }
        let d = penetration::penetration_depth(
            &world.bvh,
            &robot.bvh,
            &state_at(path, contacts[i].deepest_at).isometry(),
            penetration::Effort::FINE,
            Some(directions[i]),
            depth_scratch,
        );
        fine[i] = true;
        cut_short |= d.cut_short;
        if d.depth < contacts[i].depth {
            contacts[i].depth = d.depth;
            directions[i] = d.direction;
        }
    }
    cut_short
}

/// The intervals' depths join the samples, in path order.
fn insert_depth_samples(samples: &mut Vec<Sample>, contacts: &[Contact]) {
    for c in contacts.iter().filter(|c| c.depth > 0.0) {
        let at = c.deepest_at;
        let i = samples.partition_point(|s| (s.at.segment, s.at.t) < (at.segment, at.t));
        samples.insert(
            i,
            Sample {
                at,
                clearance: -c.depth,
                lower: -c.depth,
            },
        );
    }
}

/// The deepest state of a path that collides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deepest {
    /// Where.
    pub at: PathPos,
    /// The translational penetration depth there (an upper bound, measured finely).
    pub depth: f64,
    /// The direction of the separating translation (unit, world frame).
    pub direction: Vector3<f64>,
    /// Whether the depth searches ran out of their budget (the depth is then the least
    /// separation over fewer directions: still an upper bound).
    pub cut_short: bool,
}

/// States of one contact interval whose depth is measured coarsely: up to this many,
/// evenly spread over its samples, then a local search about the deepest.
pub(super) const DEPTH_PROBES: usize = 5;

/// The deepest state of a contact interval (its samples, in order): the depth (coarse,
/// an upper bound), where, and the separating direction.
pub(super) fn deepest_in(
    robot: &Robot,
    world: &World,
    path: &[State],
    samples: &[Sample],
    scratch: &mut penetration::Scratch,
    mut hint: Option<Vector3<f64>>,
) -> (f64, PathPos, Vector3<f64>) {
    let depth_at = |at: PathPos, hint: Option<Vector3<f64>>, scratch: &mut penetration::Scratch| {
        penetration::penetration_depth(
            &world.bvh,
            &robot.bvh,
            &state_at(path, at).isometry(),
            penetration::Effort::COARSE,
            hint,
            scratch,
        )
    };
    let n = samples.len();
    let probes = n.min(DEPTH_PROBES);
    let mut best = (0.0, samples[0].at, hint.unwrap_or(Vector3::z()));
    for p in 0..probes {
        let i = if probes == 1 {
            0
        } else {
            p * (n - 1) / (probes - 1)
        };
        let d = depth_at(samples[i].at, hint, scratch);
        if d.depth > 0.0 {
            hint = Some(d.direction);
        }
        if d.depth > best.0 {
            best = (d.depth, samples[i].at, d.direction);
        }
    }
    // The probes' spacing on the deepest one's segment, halved about it.
    if probes > 1 {
        let seg: Vec<f64> = samples
            .iter()
            .filter(|s| s.at.segment == best.1.segment)
            .map(|s| s.at.t)
            .collect();
        if let (Some(lo), Some(hi)) = (seg.first(), seg.last()) {
            let (lo, hi) = (*lo, *hi);
            let mut spacing = (hi - lo) / probes as f64;
            for _ in 0..2 {
                spacing *= 0.5;
                for t in [best.1.t - spacing, best.1.t + spacing] {
                    if t < lo || t > hi {
                        continue;
                    }
                    let at = PathPos {
                        segment: best.1.segment,
                        t,
                    };
                    let d = depth_at(at, Some(best.2), scratch);
                    if d.depth > best.0 {
                        best = (d.depth, at, d.direction);
                    }
                }
            }
        }
    }
    best
}

/// The bisection of a contact's end between two samples of one segment, by decisions
/// at [`FINEST_TOLERANCE`] of the robot's diagonal (nearer counts as meeting). The pairs
/// of triangles that can come that near anywhere between the samples are gathered once
/// ([`Bvh::pairs_over`]), and each state's decision tests those alone
/// ([`Bvh::meets_among`]): the same decision as [`Bvh::separated`]'s at that state.
///
/// [`Bvh::pairs_over`]: crate::proximity::bvh::Bvh::pairs_over
/// [`Bvh::meets_among`]: crate::proximity::bvh::Bvh::meets_among
/// [`Bvh::separated`]: crate::proximity::bvh::Bvh::separated
struct Bracket<'a> {
    robot: &'a Robot,
    world: &'a World,
    path: &'a [State],
    floor: f64,
    pairs: Vec<(u32, u32)>,
    scratch: bvh::PairScratch,
}

impl Bracket<'_> {
    /// Where a contact starts between `free` and the later `meeting`.
    fn contact_start(&mut self, free: PathPos, meeting: PathPos) -> PathPos {
        self.gather(free, meeting);
        bisect(free, meeting, &mut |at| self.meets(at))
    }

    /// The first free parameter after a contact, between `meeting` and the later `free`.
    fn contact_end(&mut self, meeting: PathPos, free: PathPos) -> PathPos {
        self.gather(meeting, free);
        bisect(meeting, free, &mut |at| !self.meets(at))
    }

    /// The pairs of triangles that can meet between `from` and `to` (one segment).
    fn gather(&mut self, from: PathPos, to: PathPos) {
        let (a, b) = (&self.path[to.segment], &self.path[to.segment + 1]);
        let motion = part_motion(a, b, &turn_of(a, b), from.t, to.t);
        self.world.bvh.pairs_over(
            &self.robot.bvh,
            &motion,
            self.floor,
            &mut self.scratch,
            &mut self.pairs,
        );
    }

    fn meets(&mut self, at: PathPos) -> bool {
        self.world.bvh.meets_among(
            &self.robot.bvh,
            &state_at(self.path, at).isometry(),
            &self.pairs,
            self.floor,
            &mut self.scratch,
        )
    }
}

/// The resolution of a contact's ends, as a fraction of the segment.
const BISECTION_STEP: f64 = 1e-6;

/// Bisects the parameter between `from` (where `hit` is false) and `to` (where it is
/// true), on one segment, to [`BISECTION_STEP`]; returns the first `hit` side.
pub(super) fn bisect(from: PathPos, to: PathPos, hit: &mut dyn FnMut(PathPos) -> bool) -> PathPos {
    let (mut a, mut b) = (from.t, to.t);
    for _ in 0..40 {
        if (b - a).abs() <= BISECTION_STEP {
            break;
        }
        let m = 0.5 * (a + b);
        if hit(PathPos {
            segment: to.segment,
            t: m,
        }) {
            b = m;
        } else {
            a = m;
        }
    }
    PathPos {
        segment: to.segment,
        t: b,
    }
}
