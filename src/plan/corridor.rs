//! The widest corridor: before any sampling, the way through the world with the widest
//! passages for a point of the robot (its bounding box's centre), searched on a grid of
//! the world's distance field. In a building of rooms and doors (OMPL.app's cubicles)
//! it is the way round that a sampling planner otherwise finds by trial, its trees
//! stopping at every wall; the planner's samples then follow it as they would a rough
//! path drawn by hand ([`super`]'s guide).
//!
//! **The width.** The distance `d` to the world is 1-Lipschitz, so every point of a
//! segment of length `l` between two cell centres is farther from the world than
//! `min(d_a, d_b) - l / 2` (each point is within `l / 2` of an end). A path's width is
//! the least of these bounds over its segments: a lower bound of its narrowest passage,
//! short of the true one by at most half a cell's diagonal.
//!
//! **The search.** A bottleneck Dijkstra (the maximin path: the greatest width first)
//! over cells of side `h` and their 26 neighbours, its widths quantized to a quarter
//! cell so that among paths about as wide the shortest wins, by A* on length plus the
//! straight distance left. The ends link to the cells within two of theirs that they
//! see across free space, and those links do not count towards the width: a start in
//! a pocket does not make every way equally narrow. Distances are queried only where
//! they decide: a cell at distance `d` proves its neighbours at `l` farther than
//! `d - l`, and an edge needs its cells' distances only when those bounds do not
//! already prove it as wide as the path so far. A path must explore every way wider
//! than its own, so the search's cost grows with the free volume wider than the answer;
//! the planner bounds it by a query budget (a count, so that runs stay reproducible).
//!
//! **Shortening.** The cell path is cut greedily: from each kept waypoint to the last of
//! the following ones that it sees, by sphere tracing (advance by the distance in excess
//! of the width, one point query a step).
//!
//! The idea of guiding a configuration-space planner with a workspace path follows
//! workspace decomposition (Brock and Kavraki 2001, "Decomposition-based motion planning:
//! a framework for real-time motion planning in high-dimensional configuration spaces")
//! and the widest way with maximin paths (Pollack 1960, "The maximum capacity through a
//! network"); here the exact distance field gives the widths.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use nalgebra::{Point3, Vector3};

use crate::check::Robot;

/// A ball that holds the robot in every orientation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ball {
    /// The centre, in the robot's frame.
    pub centre: Vector3<f64>,
    /// The radius.
    pub radius: f64,
}

impl Ball {
    /// The ball about the middle of the robot's bounding box through its farthest
    /// vertex.
    pub fn of(robot: &Robot) -> Ball {
        let centre = robot.bvh.aabb().center().coords;
        let radius = robot
            .vertices
            .iter()
            .map(|v| (v.coords - centre).norm())
            .fold(0.0, f64::max);
        Ball { centre, radius }
    }
}

/// The grid search's settings and work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// The grid's side asked for; on return, the side used.
    pub side: f64,
    /// The most cells the grid may have (its side grows to keep within).
    pub max_cells: usize,
    /// The search gives up past this many distance queries (a count, not a time, so
    /// that a run is reproducible).
    pub max_queries: usize,
    /// Distance queries made.
    pub queries: usize,
    /// Cells expanded by A*.
    pub expanded: usize,
}

impl Search {
    /// A search on cells of side `side` (at most `max_cells` of them) that gives up
    /// past `max_queries` distance queries.
    pub fn new(side: f64, max_cells: usize, max_queries: usize) -> Search {
        Search {
            side,
            max_cells,
            max_queries,
            queries: 0,
            expanded: 0,
        }
    }
}

/// A distance that is 1-Lipschitz in the point (the world's distance to a point; the
/// robot's distance to the world as it translates at a fixed orientation): lower bounds
/// are enough.
pub type Distance<'d> = dyn FnMut(&Point3<f64>) -> f64 + 'd;

/// Whether one point sees another: the segment between them crosses no surface of the
/// world.
pub type Sees<'s> = dyn FnMut(&Point3<f64>, &Point3<f64>) -> bool + 's;

/// Whether every point of the segment `a`-`b` is farther than `clear` by `distance`:
/// sphere tracing (each step advances by the distance in excess of `clear`, which the
/// 1-Lipschitz distance proves free). A point within `margin` of `clear`, or more than
/// 256 steps, counts as blocked, so the answer may be a false "blocked", never a false
/// "clear".
pub fn segment_clear(
    distance: &mut Distance,
    a: &Point3<f64>,
    b: &Point3<f64>,
    clear: f64,
    margin: f64,
    queries: &mut usize,
) -> bool {
    let length = (b - a).norm();
    let mut t = 0.0f64;
    for _ in 0..256 {
        let p = a + (b - a) * t.min(1.0);
        *queries += 1;
        let excess = distance(&p) - clear;
        if excess <= margin {
            return false;
        }
        if t >= 1.0 || length <= excess {
            return true;
        }
        t += excess / length;
    }
    false
}

/// The grid of the search: cell `i` is `(x, y, z)` with `i = x + nx (y + ny z)`.
struct Grid {
    lo: Vector3<f64>,
    side: f64,
    dims: [usize; 3],
    /// A lower bound of the distance at each cell's centre (0 until known).
    lower: Vec<f64>,
    /// Whether `lower` is the queried distance.
    queried: Vec<bool>,
}

impl Grid {
    fn cell_of(&self, p: &Point3<f64>) -> Option<usize> {
        let mut idx = [0i64; 3];
        for k in 0..3 {
            let u = (p[k] - self.lo[k]) / self.side;
            if !(u >= 0.0 && u <= self.dims[k] as f64) {
                return None;
            }
            idx[k] = (u as i64).min(self.dims[k] as i64 - 1);
        }
        self.index(idx[0], idx[1], idx[2])
    }

    fn index(&self, x: i64, y: i64, z: i64) -> Option<usize> {
        let [nx, ny, nz] = self.dims.map(|n| n as i64);
        (x >= 0 && y >= 0 && z >= 0 && x < nx && y < ny && z < nz)
            .then(|| (x + nx * (y + ny * z)) as usize)
    }

    fn coords(&self, i: usize) -> (i64, i64, i64) {
        let [nx, ny, _] = self.dims;
        (
            (i % nx) as i64,
            ((i / nx) % ny) as i64,
            (i / (nx * ny)) as i64,
        )
    }

    fn centre(&self, i: usize) -> Point3<f64> {
        let (x, y, z) = self.coords(i);
        Point3::from(
            self.lo + Vector3::new(x as f64 + 0.5, y as f64 + 0.5, z as f64 + 0.5) * self.side,
        )
    }

    /// The distance at cell `i`'s centre, queried once.
    fn exact(&mut self, i: usize, distance: &mut Distance, search: &mut Search) -> f64 {
        if !self.queried[i] {
            self.queried[i] = true;
            search.queries += 1;
            self.lower[i] = distance(&self.centre(i));
        }
        self.lower[i]
    }

    /// The cells within two of `end`'s that `end` sees, so that a link does not pass
    /// through a wall: a cell closer to `end` than the distance at either is seen (the
    /// ball about that point is free), others only when `sees` says so. `None` when `end`
    /// is outside the grid.
    fn links(
        &mut self,
        end: &Point3<f64>,
        distance: &mut Distance,
        sees: &mut Sees,
        search: &mut Search,
    ) -> Option<Vec<usize>> {
        let (x, y, z) = self.coords(self.cell_of(end)?);
        search.queries += 1;
        let free = distance(end);
        let mut out = Vec::new();
        for dz in -2..=2 {
            for dy in -2..=2 {
                for dx in -2..=2 {
                    let Some(j) = self.index(x + dx, y + dy, z + dz) else {
                        continue;
                    };
                    let centre = self.centre(j);
                    let l = (centre - end).norm();
                    if l < free || l < self.exact(j, distance, search) || sees(end, &centre) {
                        out.push(j);
                    }
                }
            }
        }
        Some(out)
    }

    /// A lower bound of the distance along the segment between cells `i` and `j`
    /// (`l` apart): every point of it is within `l / 2` of an end. The cells' bounds
    /// are used while they prove at least `enough`, their queried distances otherwise.
    fn edge(
        &mut self,
        i: usize,
        j: usize,
        l: f64,
        enough: f64,
        distance: &mut Distance,
        search: &mut Search,
    ) -> f64 {
        for k in [i, j] {
            if self.lower[k] - 0.5 * l < enough {
                self.exact(k, distance, search);
            }
        }
        self.lower[i].min(self.lower[j]) - 0.5 * l
    }
}

/// A corridor: its waypoints and the least distance along it.
#[derive(Debug, Clone, PartialEq)]
pub struct Corridor {
    /// The waypoints, `from` first and `to` last.
    pub points: Vec<Point3<f64>>,
    /// A lower bound of the distance along the path between the cells next to its ends
    /// (the widest passage it takes).
    pub width: f64,
}

impl Corridor {
    /// The length of its polyline.
    pub fn length(&self) -> f64 {
        self.points.windows(2).map(|w| (w[1] - w[0]).norm()).sum()
    }
}

/// The widest corridor from `from` to `to` on a grid over the box `lo`..`hi`: the path
/// of cells whose least distance (its narrowest passage) is greatest, and among those
/// (to a tolerance of a quarter cell) the shortest (see the module docs). The ends link
/// to the cells within two cells of theirs that they see across free space, and those
/// links do not count towards the width: the ends' own pockets do not decide which way
/// is widest. `None` when an end
/// is outside the box, the ends are in separate cells' components, or the search runs
/// out of its query budget.
pub fn widest(
    distance: &mut Distance,
    sees: &mut Sees,
    lo: &Vector3<f64>,
    hi: &Vector3<f64>,
    from: &Point3<f64>,
    to: &Point3<f64>,
    search: &mut Search,
) -> Option<Corridor> {
    let mut grid = Grid::over(lo, hi, search)?;
    let starts = grid.links(from, distance, sees, search)?;
    let mut is_goal = vec![false; grid.lower.len()];
    for g in grid.links(to, distance, sees, search)? {
        is_goal[g] = true;
    }
    let mut labels = Labels::new(grid.lower.len(), 0.25 * grid.side, *to);
    for &i in &starts {
        let d = grid.exact(i, distance, search);
        labels.set(i, d, (grid.centre(i) - from).norm(), u32::MAX, &grid);
    }
    let mut reached = None;
    while let Some((_, _, Reverse(i))) = labels.open.pop() {
        if labels.closed[i] {
            continue;
        }
        labels.closed[i] = true;
        search.expanded += 1;
        if is_goal[i] {
            reached = Some(i);
            break;
        }
        if search.queries > search.max_queries {
            return None;
        }
        labels.expand(i, &mut grid, distance, search);
    }
    let last = reached?;
    let mut points = vec![*to];
    points.extend(labels.path_to(last).into_iter().map(|i| grid.centre(i)));
    points.push(*from);
    points.reverse();
    Some(Corridor {
        points,
        width: labels.width[last],
    })
}

impl Grid {
    /// The grid over the box `lo`..`hi` at the search's side, coarser when the box needs
    /// more cells than allowed (the side used is written back); `None` for an empty box.
    fn over(lo: &Vector3<f64>, hi: &Vector3<f64>, search: &mut Search) -> Option<Grid> {
        let extent = hi - lo;
        if !(extent.min() > 0.0 && search.side > 0.0) {
            return None;
        }
        let volume = extent.x * extent.y * extent.z;
        let side = search.side.max((volume / search.max_cells as f64).cbrt());
        search.side = side;
        let dims = [0, 1, 2].map(|k| ((extent[k] / side).ceil() as usize).max(1));
        let cells = dims[0] * dims[1] * dims[2];
        Some(Grid {
            lo: *lo,
            side,
            dims,
            lower: vec![0.0; cells],
            queried: vec![false; cells],
        })
    }
}

/// The labels of [`widest`]'s search. A cell's label: the width of the best path to it
/// so far (greatest first) and its length. The heap orders by width, quantized to a
/// quarter cell so that paths about as wide compete on length plus the distance left
/// (A*), then by cell index, which keeps the search deterministic.
struct Labels {
    width: Vec<f64>,
    cost: Vec<f64>,
    parent: Vec<u32>,
    closed: Vec<bool>,
    open: BinaryHeap<(i64, Reverse<u64>, Reverse<usize>)>,
    quantum: f64,
    /// The goal, for the distance left.
    to: Point3<f64>,
}

impl Labels {
    fn new(cells: usize, quantum: f64, to: Point3<f64>) -> Labels {
        Labels {
            width: vec![f64::NEG_INFINITY; cells],
            cost: vec![f64::INFINITY; cells],
            parent: vec![u32::MAX; cells],
            closed: vec![false; cells],
            open: BinaryHeap::new(),
            quantum,
            to,
        }
    }

    /// Labels cell `j` with width `w`, length `c` and `parent`, and queues it.
    fn set(&mut self, j: usize, w: f64, c: f64, parent: u32, grid: &Grid) {
        self.width[j] = w;
        self.cost[j] = c;
        self.parent[j] = parent;
        let level = (w / self.quantum).floor().clamp(-1e15, 1e15) as i64;
        let f = c + (grid.centre(j) - self.to).norm();
        self.open.push((level, Reverse(f.to_bits()), Reverse(j)));
    }

    /// Relabels the open neighbours of cell `i` that a path through it makes wider (to
    /// the quantum) or, as wide, shorter; raises their lower bounds of the distance on
    /// the way (the grid's, from cell `i`'s).
    fn expand(&mut self, i: usize, grid: &mut Grid, distance: &mut Distance, search: &mut Search) {
        let (x, y, z) = grid.coords(i);
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let Some(j) = grid.index(x + dx, y + dy, z + dz) else {
                        continue;
                    };
                    if self.closed[j] {
                        continue;
                    }
                    let l = grid.side * ((dx * dx + dy * dy + dz * dz) as f64).sqrt();
                    grid.lower[j] = grid.lower[j].max(grid.lower[i] - l);
                    // The edge decides only where it is narrower than the path so far.
                    let wi = self.width[i];
                    let w = wi.min(grid.edge(i, j, l, wi, distance, search));
                    let c = self.cost[i] + l;
                    let q = self.quantum;
                    let better = (w / q).floor() > (self.width[j] / q).floor()
                        || ((w / q).floor() == (self.width[j] / q).floor() && c < self.cost[j]);
                    // A width of zero may touch the world (a segment through a surface
                    // that lies half-way between two centres); a thousandth of a cell
                    // keeps rounding from passing it.
                    if w <= 1e-3 * grid.side || !better {
                        continue;
                    }
                    self.set(j, w, c, i as u32, grid);
                }
            }
        }
    }

    /// The cells from `last` back to a start.
    fn path_to(&self, last: usize) -> Vec<usize> {
        let mut cells = vec![last];
        while let Some(&i) = cells.last() {
            if self.parent[i] == u32::MAX {
                break;
            }
            cells.push(self.parent[i] as usize);
        }
        cells
    }
}

/// `path` (every segment clear by `clear`) cut greedily: from each kept waypoint to the
/// last of the following ones that it sees by [`segment_clear`] (the next one always
/// qualifies: its segment is clear).
pub fn shorten(
    distance: &mut Distance,
    path: &[Point3<f64>],
    clear: f64,
    queries: &mut usize,
) -> Vec<Point3<f64>> {
    let Some(&first) = path.first() else {
        return Vec::new();
    };
    let mut out = vec![first];
    let mut i = 0;
    while i + 1 < path.len() {
        // Forward from the next waypoint while the segment stays clear: each trace is
        // short, where searching down from the far end would trace the long, blocked
        // segments first. A small margin keeps traces off the tangent cases that take
        // many steps.
        let mut j = i + 1;
        while j + 1 < path.len()
            && segment_clear(
                distance,
                &path[i],
                &path[j + 1],
                clear,
                1e-3 * clear,
                queries,
            )
        {
            j += 1;
        }
        out.push(path[j]);
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::World;
    use crate::mesh::shapes::{box_surface, union};

    /// A wall across x = 0 (0.1 thick, spanning the box's z) with two slots through it
    /// along z: a narrow one (0.2 wide) on the straight line y = 0 and a wide one
    /// (0.6 wide) at y = 1.0 .. 1.6.
    fn slotted_wall() -> World {
        let piece = |y0: f64, y1: f64| {
            box_surface(
                Point3::new(0.0, 0.5 * (y0 + y1), 0.0),
                Vector3::new(0.05, 0.5 * (y1 - y0), 1.0),
                1,
            )
        };
        World::new(&union(&[
            piece(-2.0, -0.1),
            piece(0.1, 1.0),
            piece(1.6, 2.0),
        ]))
    }

    /// The widest corridor from `from` to `to` through `world` over the box
    /// -1..1 x -2..2 x -1..1, on cells of `side`, and its search.
    fn slot_corridor(world: &World, from: [f64; 3], to: [f64; 3], side: f64) -> (Corridor, Search) {
        let mut search = Search::new(side, 1 << 16, 1 << 16);
        let c = widest(
            &mut |p: &Point3<f64>| world.bvh.point_distance(p),
            &mut |a: &Point3<f64>, b: &Point3<f64>| !world.bvh.crosses(a, b),
            &Vector3::new(-1.0, -2.0, -1.0),
            &Vector3::new(1.0, 2.0, 1.0),
            &Point3::from(from),
            &Point3::from(to),
            &mut search,
        )
        .expect("a corridor");
        (c, search)
    }

    /// Where the corridor crosses the wall's plane x = 0 (the middle of the segment
    /// that crosses it).
    fn crossing_y(c: &Corridor) -> f64 {
        let w = c
            .points
            .windows(2)
            .find(|w| w[0].x < 0.0 && w[1].x >= 0.0)
            .expect("the corridor crosses the wall");
        0.5 * (w[0].y + w[1].y)
    }

    /// The exact distance at `n + 1` points of the segment `a`-`b`.
    fn samples(world: &World, a: &Point3<f64>, b: &Point3<f64>, n: usize) -> Vec<f64> {
        (0..=n)
            .map(|k| {
                world
                    .bvh
                    .point_distance(&(a + (b - a) * (k as f64 / n as f64)))
            })
            .collect()
    }

    /// Sphere tracing never passes a segment that comes within `clear` of the world:
    /// 400 random segments about the wall, each sampled at 2,000 points (a step of at
    /// most 2e-3, so a dip deeper than that below `clear` cannot hide between samples;
    /// a "clear" answer must keep every sample above `clear`). Both answers must occur.
    #[test]
    fn sphere_tracing_never_passes_a_segment_that_comes_close() {
        use rand::{Rng, SeedableRng};
        let world = slotted_wall();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let point = |rng: &mut rand_chacha::ChaCha8Rng| {
            Point3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-2.0..2.0),
                rng.random_range(-1.0..1.0),
            )
        };
        let (mut passed, mut blocked, mut queries) = (0, 0, 0);
        for _ in 0..400 {
            let (a, b) = (point(&mut rng), point(&mut rng));
            let clear = rng.random_range(0.01..0.2);
            let mut distance = |p: &Point3<f64>| world.bvh.point_distance(p);
            if segment_clear(&mut distance, &a, &b, clear, 0.0, &mut queries) {
                passed += 1;
                let least = samples(&world, &a, &b, 2000)
                    .into_iter()
                    .fold(f64::MAX, f64::min);
                assert!(least > clear, "{a:?} {b:?}: {least} <= {clear}");
            } else {
                blocked += 1;
            }
        }
        assert!(
            passed > 20 && blocked > 20,
            "{passed} passed, {blocked} blocked"
        );
    }

    /// The widest corridor goes through the wide slot, not through the narrow one on the
    /// straight line. Its width is a lower bound: at most the wide slot's half-width
    /// (0.3), and above the narrow one's (0.1), which is what makes the choice; the
    /// grid's inflation (half a cell diagonal, 0.087 at a side of 0.1) is what it may
    /// lose. Every point of the polyline between its end links (sampled every 1e-3)
    /// keeps the width, and so does the shortened corridor.
    #[test]
    fn the_widest_corridor_takes_the_wide_slot() {
        let world = slotted_wall();
        let mut distance = |p: &Point3<f64>| world.bvh.point_distance(p);
        let (c, mut search) = slot_corridor(&world, [-0.5, 0.0, 0.0], [0.5, 0.0, 0.0], 0.1);
        assert!(c.width > 0.1 && c.width <= 0.3, "width {}", c.width);
        let y = crossing_y(&c);
        assert!(y > 1.0 && y < 1.6, "crosses at y = {y}");
        let inner = &c.points[1..c.points.len() - 1];
        for w in inner.windows(2) {
            let n = ((w[1] - w[0]).norm() / 1e-3).ceil() as usize;
            for d in samples(&world, &w[0], &w[1], n.max(1)) {
                assert!(d >= c.width - 1e-12, "{d} < {}", c.width);
            }
        }
        let short = shorten(&mut distance, inner, c.width, &mut search.queries);
        assert!(
            short.len() < inner.len(),
            "{} of {}",
            short.len(),
            inner.len()
        );
        assert_eq!(
            (short[0], short[short.len() - 1]),
            (inner[0], inner[inner.len() - 1])
        );
        for w in short.windows(2) {
            let n = ((w[1] - w[0]).norm() / 1e-3).ceil() as usize;
            for d in samples(&world, &w[0], &w[1], n.max(1)) {
                assert!(d >= c.width - 2e-3, "{d} < {}", c.width);
            }
        }
        assert!(
            Corridor {
                points: short.clone(),
                width: c.width
            }
            .length()
                < c.length()
        );
    }

    /// Ends 0.03 from either face of the wall (0.1 thick), on a line through it, on a
    /// grid of 0.2: the cells within two of theirs include cells beyond the wall, 0.25
    /// clear of it, wider than the wide slot's way (at most 0.3 less the grid's
    /// inflation, 0.17), so a link through the wall would win (it does when links are
    /// not checked). The ends must not link to them: the corridor goes round through the
    /// wide slot.
    #[test]
    fn an_end_does_not_link_through_a_wall() {
        let world = slotted_wall();
        let (c, _) = slot_corridor(&world, [-0.08, -0.5, 0.0], [0.08, -0.5, 0.0], 0.2);
        for w in c.points.windows(2) {
            let n = ((w[1] - w[0]).norm() / 1e-3).ceil() as usize;
            let least = samples(&world, &w[0], &w[1], n.max(1))
                .into_iter()
                .fold(f64::MAX, f64::min);
            assert!(least > 0.0, "{:?} -> {:?} touches the wall", w[0], w[1]);
        }
        let y = crossing_y(&c);
        assert!(y > 1.0 && y < 1.6, "crosses at y = {y}");
    }

    /// A start walled in has no corridor: the search ends when the cells it can reach
    /// run out.
    #[test]
    fn a_closed_room_has_no_corridor() {
        let world = World::new(&box_surface(Point3::origin(), Vector3::repeat(0.5), 2));
        let mut distance = |p: &Point3<f64>| world.bvh.point_distance(p);
        let mut search = Search::new(0.1, 1 << 16, 1 << 16);
        let c = widest(
            &mut distance,
            &mut |a: &Point3<f64>, b: &Point3<f64>| !world.bvh.crosses(a, b),
            &Vector3::repeat(-1.0),
            &Vector3::repeat(1.0),
            &Point3::origin(),
            &Point3::new(0.8, 0.8, 0.8),
            &mut search,
        );
        assert!(c.is_none());
        assert!(search.expanded > 0 && search.queries < search.max_queries);
    }

    /// The ball holds every vertex of the robot.
    #[test]
    fn the_ball_holds_the_robot() {
        let robot = Robot::new(&box_surface(
            Point3::new(0.3, -0.2, 0.1),
            Vector3::new(0.1, 0.2, 0.3),
            2,
        ));
        let ball = Ball::of(&robot);
        assert!((ball.centre - Vector3::new(0.3, -0.2, 0.1)).norm() < 1e-12);
        for v in &robot.vertices {
            assert!((v.coords - ball.centre).norm() <= ball.radius + 1e-12);
        }
        let half: Vector3<f64> = Vector3::new(0.1, 0.2, 0.3);
        assert!((ball.radius - half.norm()).abs() < 1e-12);
    }
}
