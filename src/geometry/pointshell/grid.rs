//! A uniform grid over a fixed point set, the neighbour search of the particle
//! repulsion (thesis 3.8.1: every particle within the repulsion radius R of p, with
//! cells of size R so the search visits the 3 x 3 x 3 cells around p), of the
//! nearest-neighbour queries of the quality figures and of the farthest-point ordering.
//!
//! Points are sorted by cell with a counting sort; cell c holds the grid positions
//! start[c]..start[c + 1], with cells numbered
//!
//! ```text
//!     c(x, y, z) = x + nx (y + ny z),      x = floor((p_x - o_x) / cell) clamped to [0, nx),
//! ```
//!
//! so one row of cells along x is one contiguous slice of the sorted points.

use std::ops::Range;

use nalgebra::{Point3, Vector3};

use crate::mesh::Aabb;

/// A uniform grid over a fixed point set: the points sorted by cell (counting sort), with
/// each cell's run of points found through a dense prefix-sum table, so one row of cells
/// along x is one contiguous slice. Used for the repulsion neighbours, nearest-neighbour
/// queries and the farthest-point updates.
///
/// Points are addressed by their *grid position* (0..len, the sorted order);
/// [`PointGrid::index`] maps a grid position back to the caller's index.
#[derive(Debug, Clone)]
pub struct PointGrid {
    origin: Point3<f64>,
    cell: f64,
    dims: [usize; 3],
    /// Cell c holds grid positions start[c]..start[c + 1].
    start: Vec<u32>,
    index: Vec<u32>,
    points: Vec<Point3<f64>>,
}

impl PointGrid {
    /// Builds the grid with cells of about `cell_size` (enlarged if the grid would have
    /// more than max(8 n, 4096) cells; a non-positive or non-finite size picks one from the
    /// bounding box). Indices are stored as u32: at most
    /// [`MAX_POINTS`](super::MAX_POINTS) points are expected. Non-finite points are kept
    /// (in cell 0) but never match a query.
    pub fn new(points: &[Point3<f64>], cell_size: f64) -> Self {
        let finite = points.iter().filter(|p| p.iter().all(|c| c.is_finite()));
        let bounds = Aabb::from_points(finite);
        let (origin, extent) = if bounds.is_empty() {
            (Point3::origin(), Vector3::zeros())
        } else {
            (bounds.min, bounds.extent())
        };
        let largest = extent.max().max(f64::MIN_POSITIVE);
        let mut cell = if cell_size.is_finite() && cell_size > 0.0 {
            cell_size
        } else {
            largest
        };
        let max_cells = (8 * points.len()).max(4096) as f64;
        let dims_for = |cell: f64| -> [usize; 3] {
            let mut d = [1usize; 3];
            for (k, dk) in d.iter_mut().enumerate() {
                let c = (extent[k] / cell).floor();
                *dk = if c.is_finite() && c >= 0.0 {
                    (c.min(1e9) as usize) + 1
                } else {
                    1
                };
            }
            d
        };
        let mut dims = dims_for(cell);
        while dims.iter().map(|&d| d as f64).product::<f64>() > max_cells {
            cell *= 1.25;
            dims = dims_for(cell);
        }
        let mut grid = PointGrid {
            origin,
            cell,
            dims,
            start: Vec::new(),
            index: Vec::new(),
            points: Vec::new(),
        };
        let ncells = dims[0] * dims[1] * dims[2];
        let cells: Vec<usize> = points.iter().map(|p| grid.cell_of(p)).collect();
        let mut start = vec![0u32; ncells + 1];
        for &c in &cells {
            start[c + 1] += 1;
        }
        for c in 0..ncells {
            start[c + 1] += start[c];
        }
        let mut fill: Vec<u32> = start[..ncells].to_vec();
        let mut index = vec![0u32; points.len()];
        for (i, &c) in cells.iter().enumerate() {
            index[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
        grid.points = index.iter().map(|&i| points[i as usize]).collect();
        grid.start = start;
        grid.index = index;
        grid
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the grid holds no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The point at grid position `g`.
    pub fn point(&self, g: usize) -> &Point3<f64> {
        &self.points[g]
    }

    /// The points in grid order.
    pub fn points(&self) -> &[Point3<f64>] {
        &self.points
    }

    /// The caller's index of the point at grid position `g`.
    pub fn index(&self, g: usize) -> usize {
        self.index[g] as usize
    }

    fn coord(&self, x: f64, k: usize) -> usize {
        let c = ((x - self.origin[k]) / self.cell).floor();
        if c.is_nan() || c <= 0.0 {
            0
        } else if c >= (self.dims[k] - 1) as f64 {
            self.dims[k] - 1
        } else {
            c as usize
        }
    }

    fn coords(&self, p: &Point3<f64>) -> [usize; 3] {
        [self.coord(p.x, 0), self.coord(p.y, 1), self.coord(p.z, 2)]
    }

    fn cell_of(&self, p: &Point3<f64>) -> usize {
        let [x, y, z] = self.coords(p);
        x + self.dims[0] * (y + self.dims[1] * z)
    }

    /// Grid positions of the cells x0..=x1 in row (y, z).
    fn row(&self, x0: usize, x1: usize, y: usize, z: usize) -> Range<usize> {
        let r = self.dims[0] * (y + self.dims[1] * z);
        self.start[r + x0] as usize..self.start[r + x1 + 1] as usize
    }

    /// Calls `f(g, d2)` for every point at grid position g with squared distance
    /// d2 = |point - p|^2 <= r^2.
    pub fn for_each_within(&self, p: &Point3<f64>, r: f64, mut f: impl FnMut(usize, f64)) {
        if self.points.is_empty() || r.is_nan() || r < 0.0 {
            return;
        }
        let r2 = r * r;
        let d = Vector3::repeat(r);
        let lo = self.coords(&(p - d));
        let hi = self.coords(&(p + d));
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for g in self.row(lo[0], hi[0], y, z) {
                    let d2 = (self.points[g] - p).norm_squared();
                    if d2 <= r2 {
                        f(g, d2);
                    }
                }
            }
        }
    }

    /// The nearest point to `p` other than grid position `skip`: (grid position, squared
    /// distance), or None when there is no other point. Searches rings of cells outward
    /// and stops once the ring's distance exceeds the best found.
    pub fn nearest(&self, p: &Point3<f64>, skip: Option<usize>) -> Option<(usize, f64)> {
        let c = self.coords(p).map(|v| v as isize);
        let dims = self.dims.map(|v| v as isize);
        let max_ring = dims.iter().copied().max().unwrap_or(1);
        let mut best: Option<(usize, f64)> = None;
        let consider = |range: Range<usize>, best: &mut Option<(usize, f64)>| {
            for g in range {
                if Some(g) == skip {
                    continue;
                }
                let d2 = (self.points[g] - p).norm_squared();
                if best.is_none_or(|(_, b)| d2 < b) {
                    *best = Some((g, d2));
                }
            }
        };
        for r in 0..=max_ring {
            let (z0, z1) = ((c[2] - r).max(0), (c[2] + r).min(dims[2] - 1));
            let (y0, y1) = ((c[1] - r).max(0), (c[1] + r).min(dims[1] - 1));
            let (x0, x1) = ((c[0] - r).max(0), (c[0] + r).min(dims[0] - 1));
            for z in z0..=z1 {
                for y in y0..=y1 {
                    let shell = (z - c[2]).abs() == r || (y - c[1]).abs() == r;
                    if shell {
                        consider(
                            self.row(x0 as usize, x1 as usize, y as usize, z as usize),
                            &mut best,
                        );
                    } else {
                        for x in [c[0] - r, c[0] + r] {
                            if x >= 0 && x < dims[0] {
                                let x = x as usize;
                                consider(self.row(x, x, y as usize, z as usize), &mut best);
                            }
                        }
                    }
                }
            }
            if let Some((_, d2)) = best {
                let bound = r as f64 * self.cell;
                if d2 <= bound * bound {
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    fn random_points(n: usize, seed: u64) -> Vec<Point3<f64>> {
        let mut r = SplitMix64::new(seed);
        (0..n)
            .map(|_| Point3::new(r.next_f64(), r.next_f64(), 0.3 * r.next_f64()))
            .collect()
    }

    #[test]
    fn grid_range_and_nearest_match_brute_force() {
        let pts = random_points(3000, 3);
        for cell in [0.01, 0.05, 0.3, 5.0] {
            let grid = PointGrid::new(&pts, cell);
            let queries = random_points(50, 11);
            for q in &queries {
                let mut found: Vec<usize> = Vec::new();
                grid.for_each_within(q, 0.08, |g, _| found.push(grid.index(g)));
                found.sort_unstable();
                let brute: Vec<usize> = (0..pts.len())
                    .filter(|&i| (pts[i] - q).norm_squared() <= 0.08 * 0.08)
                    .collect();
                assert_eq!(found, brute);
                let (g, d2) = grid.nearest(q, None).unwrap();
                let best = pts
                    .iter()
                    .map(|p| (p - q).norm_squared())
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(d2, best);
                assert_eq!((pts[grid.index(g)] - q).norm_squared(), best);
            }
            // Nearest other point of a member, and a query far outside the box.
            let g0 = 17;
            let (g, _) = grid.nearest(grid.point(g0), Some(g0)).unwrap();
            assert_ne!(g, g0);
            let far = Point3::new(10.0, -5.0, 3.0);
            let best = pts
                .iter()
                .map(|p| (p - far).norm_squared())
                .fold(f64::INFINITY, f64::min);
            assert_eq!(grid.nearest(&far, None).unwrap().1, best);
        }
    }

    #[test]
    fn grid_handles_empty_single_and_degenerate_sets() {
        let empty = PointGrid::new(&[], 0.1);
        assert!(empty.is_empty());
        assert!(empty.nearest(&Point3::origin(), None).is_none());
        let one = PointGrid::new(&[Point3::new(1.0, 2.0, 3.0)], 0.0);
        assert_eq!(one.nearest(&Point3::origin(), None).unwrap().0, 0);
        assert!(one.nearest(&Point3::origin(), Some(0)).is_none());
        // All points on a line: two flat axes.
        let line: Vec<_> = (0..100).map(|i| Point3::new(i as f64, 0.0, 0.0)).collect();
        let g = PointGrid::new(&line, 1e-9);
        let mut n = 0;
        g.for_each_within(&Point3::new(50.0, 0.0, 0.0), 2.5, |_, _| n += 1);
        assert_eq!(n, 5);
    }
}
