//! The guides of the samples: a rough path recorded by hand, or the widest corridor of
//! the robot's centre through the world ([`super::corridor`]), which the sampler draws
//! about (Gaussian tubes, ahead of how far each tree has come).

use std::time::Instant;

use nalgebra::{Point3, UnitQuaternion, Vector3};

use super::*;
use crate::proximity::rigid::State;

/// The share of samples drawn about a rough path (`--guide`).
pub(super) const GUIDE_SHARE: f64 = 0.5;

/// The share of samples drawn about the widest corridor (chosen by measurement on
/// OMPL.app's problems, docs/plan.md).
pub(super) const CORRIDOR_SHARE: f64 = 0.7;

/// Guide samples are drawn about one of the next this many guide states (a quarter of a
/// base step apart) past how far the growing tree has come.
pub(super) const GUIDE_LOOKAHEAD: usize = 8;

/// A rough path that biases the samples.
#[derive(Debug, Clone, Default)]
pub(super) struct Guide {
    /// Its states, the start's end first.
    pub(super) states: Vec<State>,
    /// For a corridor: the robot point (robot frame) its positions are of; its
    /// orientations are free.
    pub(super) point: Option<Vector3<f64>>,
}

/// The widest corridor ([`corridor::widest`]) of the robot's centre (its bounding
/// box's) as a guide, and what its search did.
pub(super) fn corridor_guide(problem: &Problem) -> (Guide, CorridorReport) {
    let t = Instant::now();
    let mut report = CorridorReport::default();
    let ball = corridor::Ball::of(problem.robot);
    let centre = |s: &State| Point3::from(s.position + s.orientation * ball.centre);
    let reach = Vector3::repeat(ball.centre.norm());
    let mut search = corridor::Search::new(
        CORRIDOR_SIDE * ball.radius,
        CORRIDOR_CELLS,
        CORRIDOR_QUERIES,
    );
    let world = problem.world;
    // Widths beyond the robot's diameter all let it pass: distances are capped there.
    let cap = 2.0 * ball.radius;
    let mut distance = |q: &Point3<f64>| world.bvh.point_distance_below(q, cap);
    let found = corridor::widest(
        &mut distance,
        &mut |a: &Point3<f64>, b: &Point3<f64>| !world.bvh.crosses(a, b),
        &(problem.space.min - reach),
        &(problem.space.max + reach),
        &centre(&problem.start),
        &centre(&problem.goal),
        &mut search,
    );
    let straight = (centre(&problem.goal) - centre(&problem.start)).norm();
    let mut guide = Guide::default();
    if let Some(c) = found {
        report.found = true;
        report.width = c.width;
        report.length = c.length();
        if report.length > CORRIDOR_DETOUR * straight + 4.0 * search.side {
            report.guided = true;
            let points = corridor::shorten(&mut distance, &c.points, c.width, &mut search.queries);
            guide = Guide {
                states: points
                    .iter()
                    .map(|p| State::new(p.coords, UnitQuaternion::identity()))
                    .collect(),
                point: Some(ball.centre),
            };
        }
    }
    report.queries = search.queries;
    report.expanded = search.expanded;
    report.side = search.side;
    report.seconds = t.elapsed().as_secs_f64();
    (guide, report)
}

/// A corridor guides the samples only when it is this many times longer than the
/// straight segment between the ends, plus four cells (the ends' links may wander two
/// cells each): a straight corridor tells the trees nothing that RRT-Connect's greedy
/// connection does not already try, and guiding along one slows the search.
pub(super) const CORRIDOR_DETOUR: f64 = 1.5;

/// The corridor grid's side, as a fraction of the radius of the robot's bounding ball:
/// a finer grid finds the same ways at several times the queries, a coarser one misses
/// the narrow ways that the trees can follow.
pub(super) const CORRIDOR_SIDE: f64 = 0.75;

/// The most cells of the corridor's grid.
pub(super) const CORRIDOR_CELLS: usize = 1 << 15;

/// The most point distance queries of the corridor's search.
pub(super) const CORRIDOR_QUERIES: usize = 1 << 15;
