//! The nearest node of a tree in the trees' metric `d(a, b) = |p_b - p_a| + r theta(a, b)`
//! ([`super::space`]), over a tree that grows one node at a time.
//!
//! The positions' distance alone is a lower bound of the metric, so the nodes are kept in
//! a uniform grid of positions (cells of about the planner's base step) and the search
//! visits rings of cells outwards from the target's, stopping once a ring's distance
//! exceeds the best found: on OMPL.app's Twistycooler (30,000 nodes a tree) a scan of
//! every node took a third of the search. Within a cell, a node is skipped on its
//! position, then on a lower bound of its turn (`theta >= sqrt(8 (1 - |<q_a, q_b>|))`),
//! before the exact angle's `atan2`. The answer is the scan's: the least distance, the
//! first node of equals.
//!
//! Written here rather than taken from a k-d tree crate: the metric's rotation part
//! makes the position distance only a lower bound, and the search must stop on that
//! bound, which the crates' fixed metrics do not offer.

use nalgebra::{UnitQuaternion, Vector3};

use crate::proximity::rigid::State;

/// The most cells of a tree's grid (the side grows to keep within).
const MAX_CELLS: usize = 1 << 15;

/// Below this many nodes a scan of all of them is as quick as the grid.
const SCAN_BELOW: usize = 64;

/// The nodes' states, indexed by a uniform grid of their positions.
#[derive(Debug, Clone)]
pub(super) struct Nearest {
    origin: Vector3<f64>,
    side: f64,
    dims: [usize; 3],
    /// The nodes of each cell (index, position), in the order they were added.
    cells: Vec<Vec<(u32, Vector3<f64>)>>,
    positions: Vec<Vector3<f64>>,
    orientations: Vec<UnitQuaternion<f64>>,
    /// The least and greatest cell coordinates that hold a node.
    occupied: [[usize; 3]; 2],
}

impl Nearest {
    /// An empty index over positions in the box `min`..`max`, with cells of about `side`
    /// (positions outside the box are kept in its border cells; the search stays exact).
    pub(super) fn new(min: Vector3<f64>, max: Vector3<f64>, side: f64) -> Nearest {
        let extent = (max - min).sup(&Vector3::zeros());
        let mut side = if side.is_finite() && side > 0.0 {
            side
        } else {
            extent.max().max(1.0)
        };
        let dims_for = |side: f64| extent.map(|e| (e / side).floor().clamp(0.0, 1e6) as usize + 1);
        let mut dims = dims_for(side);
        while dims.iter().product::<usize>() > MAX_CELLS {
            side *= 1.25;
            dims = dims_for(side);
        }
        Nearest {
            origin: min,
            side,
            dims: [dims.x, dims.y, dims.z],
            cells: vec![Vec::new(); dims.iter().product()],
            positions: Vec::new(),
            orientations: Vec::new(),
            occupied: [[usize::MAX; 3], [0; 3]],
        }
    }

    /// The number of states.
    pub(super) fn len(&self) -> usize {
        self.positions.len()
    }

    /// Adds `state` as the next index.
    pub(super) fn push(&mut self, state: &State) {
        let i = self.positions.len() as u32;
        let c = self.cell_of(&state.position);
        for k in 0..3 {
            self.occupied[0][k] = self.occupied[0][k].min(c[k]);
            self.occupied[1][k] = self.occupied[1][k].max(c[k]);
        }
        let cell = self.cell_index(c);
        self.cells[cell].push((i, state.position));
        self.positions.push(state.position);
        self.orientations.push(state.orientation);
    }

    /// The index of the state nearest to `target` in the metric with rotation weight
    /// `radius` (the first of equals; 0 when empty).
    pub(super) fn nearest(&self, target: &State, radius: f64) -> usize {
        let mut best = Best::new(target, radius);
        if self.len() < SCAN_BELOW || !self.rings(&mut best) {
            best = Best::new(target, radius);
            for (i, p) in self.positions.iter().enumerate() {
                best.consider(i as u32, p, &self.orientations);
            }
        }
        best.index as usize
    }

    /// The ring search: `false` when it gave up, having visited more cells than there
    /// are nodes (a sparse tree spread over the grid; a scan is then quicker).
    fn rings(&self, best: &mut Best) -> bool {
        let c = self.cell_of(&best.target.position).map(|v| v as isize);
        let [lo, hi] = self.occupied.map(|a| a.map(|v| v as isize));
        let max_ring = (0..3)
            .map(|k| (c[k] - lo[k]).max(hi[k] - c[k]))
            .max()
            .unwrap_or(0);
        let mut visited = 0;
        for r in 0..=max_ring {
            let (z0, z1) = ((c[2] - r).max(lo[2]), (c[2] + r).min(hi[2]));
            let (y0, y1) = ((c[1] - r).max(lo[1]), (c[1] + r).min(hi[1]));
            let (x0, x1) = ((c[0] - r).max(lo[0]), (c[0] + r).min(hi[0]));
            for z in z0..=z1 {
                for y in y0..=y1 {
                    let shell = (z - c[2]).abs() == r || (y - c[1]).abs() == r;
                    let mut visit = |x: isize| {
                        let cell = self.cell_index([x as usize, y as usize, z as usize]);
                        for (i, p) in &self.cells[cell] {
                            best.consider(*i, p, &self.orientations);
                        }
                    };
                    if shell {
                        // An empty row where the target lies beyond the occupied cells.
                        if x0 <= x1 {
                            (x0..=x1).for_each(&mut visit);
                            visited += (x1 - x0 + 1) as usize;
                        }
                    } else {
                        for x in [c[0] - r, c[0] + r] {
                            if x >= x0 && x <= x1 {
                                visit(x);
                                visited += 1;
                            }
                        }
                    }
                }
            }
            // Every node of a farther ring is at least `r * side` away in position alone.
            if best.distance < r as f64 * self.side {
                return true;
            }
            if visited > self.len() {
                return false;
            }
        }
        true
    }

    /// A position's cell, clamped to the grid (clamping only brings cells closer, so a
    /// ring's distance stays a lower bound).
    fn cell_of(&self, p: &Vector3<f64>) -> [usize; 3] {
        let mut c = [0; 3];
        for k in 0..3 {
            let v = ((p[k] - self.origin[k]) / self.side).floor();
            c[k] = if v.is_nan() {
                0
            } else {
                v.clamp(0.0, (self.dims[k] - 1) as f64) as usize
            };
        }
        c
    }

    fn cell_index(&self, c: [usize; 3]) -> usize {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }
}

/// The best node found so far by a search.
struct Best<'a> {
    target: &'a State,
    radius: f64,
    distance: f64,
    /// The distance squared, a little enlarged, for a skip without a square root that
    /// never skips a node the exact comparison would take.
    distance2: f64,
    index: u32,
}

impl<'a> Best<'a> {
    fn new(target: &'a State, radius: f64) -> Best<'a> {
        Best {
            target,
            radius,
            distance: f64::INFINITY,
            distance2: f64::INFINITY,
            index: 0,
        }
    }

    /// Takes node `i` at position `p` when it is nearer, or as near and earlier.
    fn consider(&mut self, i: u32, p: &Vector3<f64>, orientations: &[UnitQuaternion<f64>]) {
        let dp2 = (p - self.target.position).norm_squared();
        if dp2 > self.distance2 {
            return;
        }
        let dp = dp2.sqrt();
        if dp > self.distance {
            return;
        }
        let q = &orientations[i as usize];
        let dot = q.coords.dot(&self.target.orientation.coords);
        if turn_exceeds(dot, (self.distance - dp) / self.radius) {
            return;
        }
        let d = dp + self.radius * q.angle_to(&self.target.orientation);
        if d < self.distance || (d == self.distance && i < self.index) {
            self.distance = d;
            self.distance2 = d * d * (1.0 + 1e-12);
            self.index = i;
        }
    }
}

/// Whether the angle between two orientations whose quaternions' dot product is `dot`
/// surely exceeds `angle` (a quick rejection before the exact angle's `atan2`): the
/// angle is `2 acos |dot|`, and `acos x >= sqrt(2 (1 - x))` (from `cos y >= 1 - y^2 / 2`),
/// so it exceeds `angle` when `8 (1 - |dot|) > angle^2`. The margin covers the rounding
/// of `dot` near 1, where the square root magnifies it (`1e-7` rad against
/// `sqrt(8 * 2e-16)`).
fn turn_exceeds(dot: f64, angle: f64) -> bool {
    let angle = angle + 1e-7;
    8.0 * (1.0 - dot.abs()) > angle * angle
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The grid's answer is the scan's on random trees (dense, sparse, clustered, some
    /// positions outside the box, repeated states), random targets inside and outside
    /// the box, and rotation weights from small to large.
    #[test]
    fn the_grid_finds_the_scans_nearest() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (min, max) = (Vector3::new(-1.0, -2.0, 0.0), Vector3::new(3.0, 2.0, 0.5));
        let state = |rng: &mut rand_chacha::ChaCha8Rng, spread: f64| {
            let p = Vector3::new(
                rng.random_range(-1.0..3.0),
                rng.random_range(-2.0..2.0),
                rng.random_range(0.0..0.5),
            );
            State::new(
                (p - Vector3::new(1.0, 0.0, 0.25)) * spread + Vector3::new(1.0, 0.0, 0.25),
                crate::plan::space::uniform_rotation(rng),
            )
        };
        let mut ringed = 0;
        for (n, spread, side, radius) in [
            (500, 1.0, 0.1, 0.3),
            (2000, 1.0, 0.05, 0.01),
            (2000, 0.1, 0.05, 1.0),
            (300, 1.3, 0.2, 0.3),
            (100, 1.0, 0.01, 0.3),
        ] {
            let mut index = Nearest::new(min, max, side);
            let mut states = Vec::new();
            for k in 0..n {
                let s = if k % 50 == 7 {
                    states[k / 2]
                } else {
                    state(&mut rng, spread)
                };
                index.push(&s);
                states.push(s);
            }
            for _ in 0..400 {
                let target = if rng.random_bool(0.1) {
                    states[rng.random_range(0..n)]
                } else {
                    state(&mut rng, 1.5)
                };
                let scan = states
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let d = (s.position - target.position).norm()
                            + radius * s.orientation.angle_to(&target.orientation);
                        (d, i)
                    })
                    .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a });
                let mut best = Best::new(&target, radius);
                if index.rings(&mut best) {
                    ringed += 1;
                    assert_eq!(best.index as usize, scan.1, "{n} nodes, side {side}");
                }
                assert_eq!(index.nearest(&target, radius), scan.1);
            }
        }
        // The rings decided most queries (not the scan they fall back to).
        assert!(ringed > 1000, "{ringed}");
    }

    /// An empty index answers 0; one in a degenerate box still answers.
    #[test]
    fn degenerate_indices_answer() {
        let s = State::new(Vector3::new(1.0, 1.0, 1.0), UnitQuaternion::identity());
        let index = Nearest::new(Vector3::zeros(), Vector3::zeros(), 0.0);
        assert_eq!(index.nearest(&s, 1.0), 0);
        let mut index = Nearest::new(Vector3::zeros(), Vector3::zeros(), f64::NAN);
        for k in 0..100 {
            index.push(&State::new(
                Vector3::repeat(k as f64),
                UnitQuaternion::identity(),
            ));
        }
        assert_eq!(index.nearest(&s, 1.0), 1);
    }

    #[test]
    fn the_turn_bound_is_below_the_angle() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for _ in 0..10_000 {
            let a = crate::plan::space::uniform_rotation(&mut rng);
            let b = if rng.random_bool(0.5) {
                a * UnitQuaternion::from_scaled_axis(
                    Vector3::new(1.0, 2.0, 3.0).normalize() * rng.random_range(0.0..1e-6),
                )
            } else {
                crate::plan::space::uniform_rotation(&mut rng)
            };
            let angle = a.angle_to(&b);
            // A bound just below the exact angle never rejects.
            assert!(!turn_exceeds(
                a.coords.dot(&b.coords),
                angle * (1.0 - 1e-12)
            ));
            // Far below, it does once the angle is not tiny.
            if angle > 1e-3 {
                assert!(turn_exceeds(a.coords.dot(&b.coords), 0.5 * angle));
            }
        }
    }
}
