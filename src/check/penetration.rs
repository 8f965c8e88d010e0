//! Translational penetration depth: the shortest translation that separates two
//! intersecting triangle meshes, `PD = min over unit u of s(u)`, where `s(u)` is the
//! least `t >= 0` at which the robot translated by `t u` no longer meets the world.
//!
//! **One direction, exactly.** Two triangles `A` (the robot's, placed) and `B` (the
//! world's) meet under the translation `t u` for `t` in one closed interval: the set
//! `{t : A + t u meets B}` is the line `t u` through the convex Minkowski difference
//! `B - A`. It is found by the separating-axis theorem with `t` as the unknown: along
//! each candidate axis `n` the projections overlap while `t (u . n)` lies in an
//! interval, and the pair meets where every axis overlaps ([`translation_interval`]).
//! The 23 candidate axes are the two normals, the nine edge-edge cross products, and each
//! triangle's edges crossed with both normals (a superset of the complete set for two flat
//! convex polygons, which also covers coplanar and degenerate pairs). The meshes meet at
//! `t` iff some pair's interval holds `t`; `s(u)` is the end of the union's component
//! that holds 0 ([`separation_along`]). It is found by jumps: at the least `t` not yet
//! known to meet, a decision that stops at its first meeting pair of triangles (the
//! planner's state query), then a jump past the end of that pair's interval, until a
//! `t` where no pair meets; the work is that of a few dozen decisions, not of every pair
//! the swept robot passes. Where the jumps run long (many short intervals in a row),
//! the candidate pairs are gathered instead: the pairs of leaves whose boxes meet over
//! the swept range, with the range grown until the component ends inside it.
//!
//! **Over directions: an upper bound.** `PD <= s(u)` for every `u` tried; the search
//! tries a hint (the direction found at a nearby state) and the six axes together, out
//! to a reach that grows fourfold until one of them separates within it (so a direction
//! along which the parts stay crossed through the whole world costs no more than the
//! best one), then a spherical Fibonacci set, and refines the best by a pattern search
//! on the sphere ([`penetration_depth`]). Where the overlapping parts are convex (the Minkowski
//! difference is convex near the origin), a direction `theta` from the optimum gives at
//! most `PD / cos(theta)`; the refinement brings `theta` below 0.1 degrees there, so the
//! bound is then within 1e-6 relative. For non-convex overlaps it is an upper bound, and
//! never 0 at an intersecting state (the state itself is in the union).
//!
//! Sources: the separating-axis theorem for polyhedra (Gottschalk, Lin and Manocha
//! 1996, OBBTree); translational penetration depth as the distance to the boundary of
//! the Minkowski difference (Cameron and Culley 1986; Kim, Lin and Manocha 2002).

use nalgebra::{Isometry3, Vector3};

use crate::proximity::bvh::Bvh;
use crate::proximity::exact::translation_interval;

/// Reused buffers of the separation queries, and their budget.
#[derive(Debug)]
pub struct Scratch {
    pairs: Vec<(usize, usize)>,
    /// The scratch of the meeting decisions of the jumps.
    decisions: crate::proximity::bvh::PairScratch,
    intervals: Vec<(f64, f64)>,
    /// The work that may still be done, in pairs: of nodes bounded and of triangles
    /// tested by the jumps' decisions, and of triangles gathered (a count, so that a
    /// check's depths are the same on every machine). Once spent, a depth search keeps
    /// the best direction it has (its first directions, the hint and the axes, always
    /// complete).
    pub budget: usize,
}

/// The default budget of one check's depth searches: a few tenths of a second of
/// pairs (tens of nanoseconds each). A long, deep crossing can spend it all
/// (docs/check.md gives the times).
pub const DEFAULT_BUDGET: usize = 10_000_000;

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            pairs: Vec::new(),
            decisions: Default::default(),
            intervals: Vec::new(),
            budget: DEFAULT_BUDGET,
        }
    }
}

/// `s(u)`: the least translation along `u` (unit, world frame) that separates `robot`
/// placed by `pose` from `world`, when below `cap` (`None` otherwise); 0 when the two do
/// not meet at `pose`. `gap` joins intervals closer than it (rounding).
pub fn separation_along(
    world: &Bvh,
    robot: &Bvh,
    pose: &Isometry3<f64>,
    u: &Vector3<f64>,
    cap: f64,
    gap: f64,
    scratch: &mut Scratch,
) -> Option<f64> {
    separation_from(
        world,
        robot,
        pose,
        u,
        cap,
        gap,
        opening_reach(robot),
        scratch,
    )
}

/// The reach over which a direction's candidate pairs are first gathered: 5% of the
/// robot's box diagonal.
fn opening_reach(robot: &Bvh) -> f64 {
    0.05 * robot.aabb().extent().norm()
}

/// The translation along any direction past which the robot's ball has left the
/// world's box: no pair meets beyond it.
fn escape_reach(world: &Bvh, robot: &Bvh, pose: &Isometry3<f64>) -> f64 {
    let (wb, rb) = (world.aabb(), robot.aabb());
    let r = 0.5 * rb.extent().norm() + (rb.center().coords).norm();
    let c = pose.translation.vector;
    (wb.center().coords - c).norm() + 0.5 * wb.extent().norm() + r
}

/// [`separation_along`] by jumps ([`Along::by_jumps`]), or, where the jumps run out,
/// from the gathered pairs, first over `[0, first_reach]` ([`Along::by_gathering`]).
#[allow(clippy::too_many_arguments)]
fn separation_from(
    world: &Bvh,
    robot: &Bvh,
    pose: &Isometry3<f64>,
    u: &Vector3<f64>,
    cap: f64,
    gap: f64,
    first_reach: f64,
    scratch: &mut Scratch,
) -> Option<f64> {
    let limit = cap.min(escape_reach(world, robot, pose));
    let along = Along {
        world,
        robot,
        pose,
        u,
        cap,
        limit,
        gap,
    };
    along
        .by_jumps(scratch)
        .unwrap_or_else(|| along.by_gathering(first_reach, scratch))
}

/// Most jumps of one direction's [`Along::by_jumps`] before it leaves the direction to
/// the gathered pairs (many short intervals in a row: a finely tessellated crossing).
const MOST_JUMPS: usize = 2000;

/// One direction's separation query: the translation `t u` of `robot` placed by
/// `pose`, up to `limit` (at most `cap`), intervals closer than `gap` joined.
struct Along<'a> {
    world: &'a Bvh,
    robot: &'a Bvh,
    pose: &'a Isometry3<f64>,
    u: &'a Vector3<f64>,
    cap: f64,
    limit: f64,
    gap: f64,
}

impl Along<'_> {
    /// The answer once the component of 0 is known to end at `end`.
    fn answer(&self, end: f64) -> Option<f64> {
        (end < self.cap).then_some(end)
    }

    /// `s(u)` by jumps: at the least `t` not known to meet, a pair of triangles that
    /// meets there is found ([`Bvh::meeting_pair`], a decision that stops at its first
    /// meeting pair), and `t` jumps past the end of that pair's interval
    /// ([`translation_interval`]). Each jump stays within the component of 0 (the pair's
    /// interval holds the `t` it jumps from), so the first `t` where no pair meets ends
    /// it. The decisions' tested pairs are charged to the budget. `None` when the jumps
    /// run out.
    fn by_jumps(&self, scratch: &mut Scratch) -> Option<Option<f64>> {
        let (mut t, mut end) = (0.0f64, 0.0f64);
        for _ in 0..MOST_JUMPS {
            let moved = Isometry3::from_parts(
                (self.pose.translation.vector + self.u * t).into(),
                self.pose.rotation,
            );
            let tested = scratch.decisions.pairs_tested();
            let meeting = self
                .world
                .meeting_pair(self.robot, &moved, &mut scratch.decisions);
            let spent = scratch.decisions.pairs_tested() - tested;
            scratch.budget = scratch.budget.saturating_sub(spent);
            let Some((iw, ir)) = meeting else {
                return Some(if t == 0.0 {
                    Some(0.0)
                } else {
                    self.answer(end)
                });
            };
            let tr = self.robot.triangle(ir);
            let placed = [self.pose * tr[0], self.pose * tr[1], self.pose * tr[2]];
            match translation_interval(&placed, self.world.triangle(iw), self.u) {
                Some((lo, hi)) if lo <= t + self.gap && hi >= t => {
                    end = end.max(hi);
                    t = hi + self.gap;
                }
                // Meeting to rounding only: step past it.
                _ => {
                    end = t;
                    t += self.gap;
                }
            }
            // Past the limit the robot has left the world (or the cap is reached).
            if end >= self.cap || t >= self.limit {
                return Some(self.answer(end));
            }
        }
        None
    }

    /// `s(u)` from the gathered pairs: the pairs of leaves whose boxes meet over the
    /// swept range `[0, reach]` ([`Bvh::pairs_along`]), each pair's interval
    /// ([`translation_interval`]), their union's component that holds 0; the reach,
    /// from `first_reach`, grows fourfold until the component ends inside it. Every
    /// gathered pair is charged to the budget.
    fn by_gathering(&self, first_reach: f64, scratch: &mut Scratch) -> Option<f64> {
        let (world, robot, pose, u, gap) = (self.world, self.robot, self.pose, self.u, self.gap);
        let mut reach = first_reach.min(self.limit).max(gap);
        loop {
            world.pairs_along(robot, pose, u, reach, &mut scratch.pairs);
            scratch.budget = scratch.budget.saturating_sub(scratch.pairs.len());
            scratch.intervals.clear();
            for &(iw, ir) in &scratch.pairs {
                let t = robot.triangle(ir);
                let placed = [pose * t[0], pose * t[1], pose * t[2]];
                if let Some((lo, hi)) = translation_interval(&placed, world.triangle(iw), u) {
                    if hi >= 0.0 && lo <= reach {
                        scratch.intervals.push((lo, hi));
                    }
                }
            }
            scratch.intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
            let Some(e) = component_end(&scratch.intervals, gap) else {
                return Some(0.0);
            };
            if e < reach {
                return self.answer(e);
            }
            if reach >= self.limit {
                return self.answer(e.max(self.limit));
            }
            reach = (reach * 4.0).min(self.limit);
        }
    }
}

/// The end of the component of 0 in the union of `intervals` (sorted by their starts),
/// intervals closer than `gap` joined; `None` when no interval holds 0.
fn component_end(intervals: &[(f64, f64)], gap: f64) -> Option<f64> {
    let mut end: Option<f64> = None;
    for &(lo, hi) in intervals {
        match end {
            None if lo <= 0.0 => end = Some(hi),
            None => break,
            Some(e) if lo <= e + gap => end = Some(e.max(hi)),
            Some(_) => break,
        }
    }
    end
}

/// A translational penetration depth: `depth = s(direction)`, an upper bound of the
/// true depth (see the module docs), and the directions tried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Depth {
    /// The separating translation's length (0: the meshes do not meet).
    pub depth: f64,
    /// Its direction (unit, world frame).
    pub direction: Vector3<f64>,
    /// How many directions were tried.
    pub directions: usize,
    /// Whether the search ran out of its budget ([`Scratch::budget`]) before trying
    /// every direction of its effort.
    pub cut_short: bool,
}

/// How hard [`penetration_depth`] searches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effort {
    /// Points of the spherical Fibonacci set tried besides the six axes.
    pub fibonacci: usize,
    /// Halvings of the pattern search's angle (from the set's spacing).
    pub refinements: usize,
}

impl Effort {
    /// Enough to compare states along a contact interval.
    pub const COARSE: Effort = Effort {
        fibonacci: 8,
        refinements: 2,
    };
    /// The reported depth.
    pub const FINE: Effort = Effort {
        fibonacci: 32,
        refinements: 12,
    };
}

/// The translational penetration depth of `robot` placed by `pose` in `world` (see the
/// module docs); `hint` is tried first (a direction found at a nearby state).
///
/// The steps: the hint and the six axes out to a growing reach
/// (`DepthSearch::near_first`); unless the parts only touch, the Fibonacci directions;
/// then a pattern search about the best direction (`DepthSearch::refine`).
pub fn penetration_depth(
    world: &Bvh,
    robot: &Bvh,
    pose: &Isometry3<f64>,
    effort: Effort,
    hint: Option<Vector3<f64>>,
    scratch: &mut Scratch,
) -> Depth {
    let mut search = DepthSearch {
        world,
        robot,
        pose,
        gap: 1e-9 * (world.aabb().extent().norm() + robot.aabb().extent().norm()),
        default_reach: opening_reach(robot),
        scratch,
        best: Depth {
            depth: f64::INFINITY,
            direction: Vector3::z(),
            directions: 0,
            cut_short: false,
        },
    };
    search.near_first(hint);
    if search.best.depth == 0.0 {
        return search.best;
    }
    for u in fibonacci_sphere(effort.fibonacci) {
        search.try_direction(u, f64::INFINITY);
    }
    search.refine(effort);
    search.best
}

/// One depth search: the best direction so far and what each direction's search needs.
struct DepthSearch<'a> {
    world: &'a Bvh,
    robot: &'a Bvh,
    pose: &'a Isometry3<f64>,
    /// The separation that counts as apart.
    gap: f64,
    /// The reach of a direction searched first ([`opening_reach`]).
    default_reach: f64,
    scratch: &'a mut Scratch,
    best: Depth,
}

impl DepthSearch<'_> {
    /// Searches direction `u` (any length; none if zero or NaN) out to `cap`, and keeps
    /// it if it separates sooner than the best; nothing once the budget is spent and a
    /// depth is known.
    fn try_direction(&mut self, u: Vector3<f64>, cap: f64) {
        let n = u.norm();
        if n.is_nan() || n <= 0.0 {
            return;
        }
        let u = u / n;
        if self.best.depth.is_finite() && self.scratch.budget == 0 {
            self.best.cut_short = true;
            return;
        }
        self.best.directions += 1;
        // Searched before to a quarter of `cap` (the reach of the first directions
        // grows fourfold): gathered over the whole of it at once.
        let first_reach = if cap.is_finite() {
            cap
        } else {
            self.default_reach
        };
        let cap = cap.min(self.best.depth);
        let (world, robot, pose, gap) = (self.world, self.robot, self.pose, self.gap);
        if let Some(s) =
            separation_from(world, robot, pose, &u, cap, gap, first_reach, self.scratch)
        {
            if s < self.best.depth {
                self.best.depth = s;
                self.best.direction = u;
            }
        }
    }

    /// The hint and the six axes, each searched only as far as a reach that grows
    /// fourfold until one of them separates within it: a direction along which the parts
    /// stay crossed for long (through the world) costs no more than the reach where the
    /// best of them separates. A direction counts once, however often its reach grew.
    fn near_first(&mut self, hint: Option<Vector3<f64>>) {
        let mut first: Vec<Vector3<f64>> = hint.into_iter().filter(|h| h.norm() > 0.0).collect();
        for k in 0..3 {
            let mut e = Vector3::zeros();
            e[k] = 1.0;
            first.extend([e, -e]);
        }
        let mut reach = self.default_reach.max(self.gap);
        let mut retried = 0;
        while self.best.depth.is_infinite() {
            let last = reach.is_infinite();
            for &u in &first {
                self.try_direction(u, reach);
                if self.best.depth == 0.0 {
                    break;
                }
            }
            if last || self.best.depth.is_finite() {
                break;
            }
            retried += first.len();
            reach = if reach > 1e300 {
                f64::INFINITY
            } else {
                4.0 * reach
            };
        }
        self.best.directions = self.best.directions.saturating_sub(retried);
    }

    /// Pattern search about the best direction: four tilts by an angle that halves
    /// `effort.refinements` times, each angle kept while it improves.
    fn refine(&mut self, effort: Effort) {
        let mut angle = (4.0 * std::f64::consts::PI / (effort.fibonacci + 6) as f64).sqrt();
        for _ in 0..effort.refinements {
            angle *= 0.5;
            loop {
                let u = self.best.direction;
                let (t1, t2) = tangents(&u);
                let before = self.best.depth;
                for d in [t1, -t1, t2, -t2] {
                    self.try_direction(u * angle.cos() + d * angle.sin(), f64::INFINITY);
                }
                if self.best.depth >= before {
                    break;
                }
            }
        }
    }
}

/// `n` unit vectors spread evenly over the sphere (the spherical Fibonacci set).
pub(crate) fn fibonacci_sphere(n: usize) -> Vec<Vector3<f64>> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - z * z).max(0.0).sqrt();
            let phi = golden * i as f64;
            Vector3::new(r * phi.cos(), r * phi.sin(), z)
        })
        .collect()
}

/// Two unit vectors completing `u` (unit) to an orthonormal frame.
fn tangents(u: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let a = if u.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let t1 = u.cross(&a).normalize();
    (t1, u.cross(&t1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::{box_surface, union};
    use nalgebra::Point3;
    use nalgebra::{Translation3, UnitQuaternion};

    /// The depth searched finely, with no hint and a fresh scratch.
    fn fine_depth(world: &Bvh, robot: &Bvh, pose: &Isometry3<f64>) -> Depth {
        penetration_depth(
            world,
            robot,
            pose,
            Effort::FINE,
            None,
            &mut Scratch::default(),
        )
    }

    fn bars(rotation: UnitQuaternion<f64>) -> (Bvh, Bvh, Isometry3<f64>) {
        // A bar along x with an edge up, a bar along y with an edge down, their edges
        // crossing 0.1 deep: no vertex of either is inside the other.
        let s = std::f64::consts::FRAC_1_SQRT_2;
        let turn = |m: crate::mesh::SurfaceMesh, q: UnitQuaternion<f64>| crate::mesh::SurfaceMesh {
            vertices: m.vertices.iter().map(|v| q * v).collect(),
            triangles: m.triangles,
        };
        let a = turn(
            box_surface(Point3::origin(), Vector3::new(2.0, 0.5, 0.5), 2),
            UnitQuaternion::from_axis_angle(&Vector3::x_axis(), std::f64::consts::FRAC_PI_4),
        );
        let b = turn(
            box_surface(Point3::origin(), Vector3::new(0.5, 2.0, 0.5), 2),
            UnitQuaternion::from_axis_angle(&Vector3::y_axis(), std::f64::consts::FRAC_PI_4),
        );
        let c = 2.0 * s - 0.1;
        let pose = rotation * Translation3::new(0.0, 0.0, c);
        let world = turn(a, rotation);
        (Bvh::new(&world), Bvh::new(&b), pose)
    }

    /// Two bars crossed edge to edge, 0.1 deep, no vertex inside the other: the depth
    /// is 0.1 (the separating axis is the cross product of the two edges), here found
    /// both with the configuration along the axes and turned arbitrarily.
    #[test]
    fn crossed_edges_have_the_analytic_depth() {
        for (i, q) in [
            UnitQuaternion::identity(),
            UnitQuaternion::from_euler_angles(0.7, -0.4, 1.9),
            UnitQuaternion::from_euler_angles(-2.1, 0.3, 0.25),
        ]
        .into_iter()
        .enumerate()
        {
            let (world, robot, pose) = bars(q);
            let d = fine_depth(&world, &robot, &pose);
            // An upper bound, within 1e-5 relative after refinement (convex overlap).
            assert!(
                d.depth >= 0.1 - 1e-12 && d.depth <= 0.1 * (1.0 + 1e-5),
                "case {i}: {}",
                d.depth
            );
            let expect = q * Vector3::z();
            assert!(
                d.direction.dot(&expect) > 0.999,
                "case {i}: {:?}",
                d.direction
            );
        }
    }

    /// A peg in a square hole through a plate, pushed 2 mm into the hole's wall: the
    /// depth is 2 mm sideways, not the length of pulling it out of the hole.
    #[test]
    fn a_peg_two_millimetres_into_the_wall_of_its_hole() {
        // Plate |z| < 0.01 with a hole |x|, |y| < 0.01 (four boxes around it).
        let (h, w, t) = (0.01, 0.05, 0.01);
        let plate = union(&[
            box_surface(
                Point3::new(0.0, h + w / 2.0, 0.0),
                Vector3::new(h + w, w / 2.0, t),
                2,
            ),
            box_surface(
                Point3::new(0.0, -h - w / 2.0, 0.0),
                Vector3::new(h + w, w / 2.0, t),
                2,
            ),
            box_surface(
                Point3::new(h + w / 2.0, 0.0, 0.0),
                Vector3::new(w / 2.0, h, t),
                2,
            ),
            box_surface(
                Point3::new(-h - w / 2.0, 0.0, 0.0),
                Vector3::new(w / 2.0, h, t),
                2,
            ),
        ]);
        // Peg 8 mm square (2 mm play each side), 10 cm long, its centre at x = 8 mm:
        // its +x face at 12 mm, 2 mm into the wall at x = 10 mm.
        let peg = box_surface(Point3::origin(), Vector3::new(0.004, 0.004, 0.05), 2);
        let (world, robot) = (Bvh::new(&plate), Bvh::new(&peg));
        let pose: Isometry3<f64> = Translation3::new(0.008, 0.0, 0.0).into();
        let d = fine_depth(&world, &robot, &pose);
        assert!((d.depth - 0.002).abs() < 1e-9, "{}", d.depth);
        assert!(d.direction.x < -0.999, "{:?}", d.direction);
    }

    /// The jumps and the gathered pairs are two ways to one `s(u)`: on the alpha puzzle's
    /// robot pushed through its ring (a non-convex crossing, components that end and
    /// start again along most directions), over 48 directions out to a cap of a quarter
    /// of the robot's size (40 separate within it, 8 do not), they agree to the joining
    /// gap, and the jumps answer every direction without falling back.
    #[test]
    fn jumps_find_the_separation_that_the_gathered_pairs_give() {
        let puzzle = crate::check::puzzles::alpha_puzzle();
        let mut robot = puzzle.robot.clone();
        for v in &mut robot.vertices {
            *v -= puzzle.origin.coords;
        }
        let (world, robot) = (Bvh::new(&puzzle.world), Bvh::new(&robot));
        let pose = puzzle.perturbed[puzzle.perturbed.len() / 2].isometry();
        let (cap, gap) = (0.25 * robot.aabb().extent().norm(), 1e-9);
        let mut scratch = Scratch::default();
        let (mut crossing, mut capped) = (0, 0);
        for u in fibonacci_sphere(48) {
            let along = Along {
                world: &world,
                robot: &robot,
                pose: &pose,
                u: &u,
                cap,
                limit: cap.min(escape_reach(&world, &robot, &pose)),
                gap,
            };
            let jumped = along.by_jumps(&mut scratch).expect("the jumps ran out");
            let gathered = along.by_gathering(0.25 * cap, &mut scratch);
            match (jumped, gathered) {
                // Both join intervals closer than the gap, from the same intervals.
                (Some(j), Some(g)) => {
                    assert!((j - g).abs() <= gap, "{u:?}: jumps {j}, gathered {g}");
                    crossing += usize::from(g > 0.0);
                }
                (None, None) => capped += 1,
                other => panic!("{u:?}: jumps and gathering differ: {other:?}"),
            }
        }
        assert!(
            crossing >= 30 && capped >= 1,
            "{crossing} crossing, {capped} capped"
        );
    }

    /// Apart, touching and inside: 0 when the meshes do not meet; positive whenever
    /// they do.
    #[test]
    fn the_depth_is_zero_only_where_the_meshes_do_not_meet() {
        let a = Bvh::new(&box_surface(Point3::origin(), Vector3::repeat(0.5), 1));
        let b = Bvh::new(&box_surface(Point3::origin(), Vector3::repeat(0.5), 1));
        let mut scratch = Scratch::default();
        let at = |x: f64| -> Isometry3<f64> { Translation3::new(x, 0.0, 0.0).into() };
        let d = penetration_depth(&a, &b, &at(1.5), Effort::COARSE, None, &mut scratch);
        assert_eq!(d.depth, 0.0);
        for x in [0.999, 0.9, 0.5, 0.2] {
            let d = penetration_depth(&a, &b, &at(x), Effort::FINE, None, &mut scratch);
            assert!((d.depth - (1.0 - x)).abs() < 1e-9, "{x}: {}", d.depth);
        }
    }
}
