//! Farthest-point ordering of arbitrary point sets and the nested levels built from it
//! (thesis 3.8.2, last paragraph; docs/equations.md "Nested point tree (3.9)": "for point sets
//! without repulsion levels: farthest-point ordering, branching B = 8").
//!
//! Ordering: p_0 = the start point; p_k = argmax over the unselected points x of
//! D(x) = min_{j<k} |x - p_j|, ties broken by the smaller index. This is the exact greedy
//! order, computed in about O(N log N) for well-spread sets:
//!
//! - a max-heap holds one entry (D^2, index) per unselected point; D only decreases, so an
//!   entry can be stale (its key too large): when the top is stale it is pushed back with
//!   its current D^2, and the first non-stale top is the true maximum (every other key is
//!   at least its own point's current D^2);
//! - after selecting c at distance D, only points closer than D to c can get a smaller D
//!   (every other point already has D(x) <= D(c) = D), so only the points within D of c,
//!   found through a uniform grid ([`PointGrid`]), are updated.
//!
//! Levels: the first B points form level 0, the next B^2 level 1, and so on (level i holds
//! B^(i+1) points, as the thesis's "first B points are level 1 points, the next B^2 points
//! are level 2 points"); the last level takes what remains.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use nalgebra::{Point3, Vector3};

use super::pointshell::{PointGrid, Pointshell, PointshellError, MAX_POINTS};

/// A farthest-point ordering.
#[derive(Debug, Clone, PartialEq)]
pub struct FarthestOrdering {
    /// The point indices in selection order (a permutation of 0..N).
    pub order: Vec<usize>,
    /// `distances[k]`: distance of point `order[k]` to the points `order[..k]` when it was
    /// selected (infinite for k = 0); non-increasing. `distances[k]` is the covering
    /// radius of the first k points.
    pub distances: Vec<f64>,
}

fn check_points(points: &[Point3<f64>], start: usize) -> Result<(), PointshellError> {
    if points.is_empty() {
        return Err(PointshellError::EmptyPointSet);
    }
    if points.len() > MAX_POINTS {
        return Err(PointshellError::TooManyPoints {
            first: points.len(),
            levels: 1,
            limit: MAX_POINTS,
        });
    }
    if start >= points.len() {
        return Err(PointshellError::StartOutOfRange {
            start,
            points: points.len(),
        });
    }
    if let Some(i) = points.iter().position(|p| !p.iter().all(|c| c.is_finite())) {
        return Err(PointshellError::NonFinite {
            what: "point",
            index: i,
        });
    }
    Ok(())
}

/// A grid cell size for the updates: start from (box volume / N)^(1/3) (every flat axis
/// counted as 1e-3 of the largest) and halve while fewer than N/4 cells are occupied (a
/// surface or curve fills few cells of its box), so that occupied cells hold a few points.
fn update_cell_size(points: &[Point3<f64>]) -> f64 {
    let n = points.len().max(1);
    let min = points
        .iter()
        .fold(Point3::from([f64::INFINITY; 3]), |m, p| m.inf(p));
    let max = points
        .iter()
        .fold(Point3::from([f64::NEG_INFINITY; 3]), |m, p| m.sup(p));
    let extent = max - min;
    let largest = extent.max();
    if largest.is_nan() || largest <= 0.0 {
        return 1.0;
    }
    let volume: f64 = extent.iter().map(|e| e.max(1e-3 * largest)).product();
    let mut cell = (volume / n as f64).cbrt();
    for _ in 0..8 {
        let cells: f64 = extent
            .iter()
            .map(|e| (e / cell * 0.5).floor() + 1.0)
            .product();
        if cells > 8.0 * n as f64 {
            break;
        }
        let mut keys: Vec<u64> = points
            .iter()
            .map(|p| {
                let c = (p - min) / cell;
                (c.x as u64) | ((c.y as u64) << 21) | ((c.z as u64) << 42)
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        if keys.len() * 4 >= n {
            break;
        }
        cell *= 0.5;
    }
    cell
}

/// The exact greedy farthest-point ordering of `points` from `start` (see the module
/// documentation), in about O(N log N).
pub fn farthest_point_order(
    points: &[Point3<f64>],
    start: usize,
) -> Result<FarthestOrdering, PointshellError> {
    check_points(points, start)?;
    let n = points.len();
    let grid = PointGrid::new(points, update_cell_size(points));
    // Everything below is in grid order; `dist` holds squared distances.
    let mut dist = vec![f64::INFINITY; n];
    let mut selected = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut distances = Vec::with_capacity(n);
    let first = (0..n).find(|&g| grid.index(g) == start).unwrap_or(0);
    let mut select = |g: usize, dist: &mut [f64], selected: &mut [bool]| {
        selected[g] = true;
        order.push(grid.index(g));
        distances.push(dist[g].sqrt());
        let c = *grid.point(g);
        // Inflate the radius by a relative 1e-12 so that rounding in sqrt cannot drop a
        // point whose squared distance is below dist[g].
        let r = dist[g].sqrt() * (1.0 + 1e-12);
        if r.is_finite() {
            grid.for_each_within(&c, r, |h, d2| {
                if d2 < dist[h] {
                    dist[h] = d2;
                }
            });
        } else {
            for (h, d) in dist.iter_mut().enumerate() {
                let d2 = (grid.point(h) - c).norm_squared();
                if d2 < *d {
                    *d = d2;
                }
            }
        }
    };
    select(first, &mut dist, &mut selected);
    let mut heap: BinaryHeap<(u64, Reverse<u32>, u32)> = (0..n)
        .filter(|&g| !selected[g])
        .map(|g| (dist[g].to_bits(), Reverse(grid.index(g) as u32), g as u32))
        .collect();
    while let Some((key, who, g)) = heap.pop() {
        let g = g as usize;
        if selected[g] {
            continue;
        }
        // Non-negative f64 order like their bit patterns.
        let now = dist[g].to_bits();
        if key != now {
            heap.push((now, who, g as u32));
            continue;
        }
        select(g, &mut dist, &mut selected);
    }
    Ok(FarthestOrdering { order, distances })
}

/// The same ordering by the O(N^2) definition (a reference for tests and tiny sets).
pub fn farthest_point_order_brute_force(
    points: &[Point3<f64>],
    start: usize,
) -> Result<FarthestOrdering, PointshellError> {
    check_points(points, start)?;
    let n = points.len();
    let mut dist = vec![f64::INFINITY; n];
    let mut selected = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut distances = Vec::with_capacity(n);
    let mut c = start;
    loop {
        selected[c] = true;
        order.push(c);
        distances.push(dist[c].sqrt());
        let mut next: Option<usize> = None;
        for i in 0..n {
            let d2 = (points[i] - points[c]).norm_squared();
            if d2 < dist[i] {
                dist[i] = d2;
            }
            if !selected[i] && next.is_none_or(|j| dist[i] > dist[j]) {
                next = Some(i);
            }
        }
        match next {
            Some(j) => c = j,
            None => break,
        }
    }
    Ok(FarthestOrdering { order, distances })
}

/// Level offsets for `n` ordered points with branching `branching` (level i holds
/// branching^(i+1) points, the last level the rest). With `levels = Some(L)` the first
/// L - 1 levels are full and the last holds the rest, which must not be empty.
pub fn branching_level_offsets(
    n: usize,
    branching: usize,
    levels: Option<usize>,
) -> Result<Vec<usize>, PointshellError> {
    if branching < 2 {
        return Err(PointshellError::InvalidParameter {
            name: "branching",
            value: branching as f64,
            reason: "must be at least 2",
        });
    }
    if n == 0 {
        return Err(PointshellError::EmptyPointSet);
    }
    let mut offsets = vec![0usize];
    let mut size = branching;
    match levels {
        Some(0) => return Err(PointshellError::NoLevels),
        Some(l) => {
            for _ in 0..l - 1 {
                let end = offsets[offsets.len() - 1].saturating_add(size);
                if end >= n {
                    let full: usize = (1..l as u32)
                        .map(|i| branching.saturating_pow(i))
                        .fold(0usize, usize::saturating_add);
                    return Err(PointshellError::PointSetTooSmall {
                        points: n,
                        levels: l,
                        branching,
                        needed: full.saturating_add(1),
                    });
                }
                offsets.push(end);
                size = size.saturating_mul(branching);
            }
            offsets.push(n);
        }
        None => loop {
            let end = offsets[offsets.len() - 1].saturating_add(size).min(n);
            offsets.push(end);
            if end == n {
                break;
            }
            size = size.saturating_mul(branching);
        },
    }
    Ok(offsets)
}

/// A pointshell from an arbitrary oriented point set: farthest-point ordering from point
/// 0, then levels with branching `branching` (see [`branching_level_offsets`]).
/// `normals` are the caller's inward normals (normalized here; zero or non-finite ones
/// are errors). `radii[i]` is the covering radius of levels 0..=i (the largest distance of
/// any point to them; 0 for the last level); the offset is 0.
pub fn farthest_point_pointshell(
    points: &[Point3<f64>],
    normals: &[Vector3<f64>],
    branching: usize,
    levels: Option<usize>,
) -> Result<Pointshell, PointshellError> {
    if normals.len() != points.len() {
        return Err(PointshellError::NormalsMismatch {
            points: points.len(),
            normals: normals.len(),
        });
    }
    let level_offsets = branching_level_offsets(points.len(), branching, levels)?;
    let mut unit = Vec::with_capacity(normals.len());
    for (i, n) in normals.iter().enumerate() {
        let len = n.norm();
        if !(len.is_finite() && len > 0.0) {
            return Err(PointshellError::NonFinite {
                what: "normal",
                index: i,
            });
        }
        unit.push(n / len);
    }
    let ordering = farthest_point_order(points, 0)?;
    let radii = level_offsets[1..]
        .iter()
        .map(|&end| ordering.distances.get(end).copied().unwrap_or(0.0))
        .collect();
    Ok(Pointshell {
        points: ordering.order.iter().map(|&i| points[i]).collect(),
        normals: ordering.order.iter().map(|&i| unit[i]).collect(),
        level_offsets,
        radii,
        offset: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    fn cloud(n: usize, seed: u64) -> Vec<Point3<f64>> {
        let mut r = SplitMix64::new(seed);
        (0..n)
            .map(|_| Point3::new(r.next_f64(), 2.0 * r.next_f64(), 0.5 * r.next_f64()))
            .collect()
    }

    #[test]
    fn ordering_matches_brute_force_on_small_sets() {
        for (n, seed) in [(1, 1), (2, 2), (3, 3), (50, 4), (300, 5)] {
            let pts = cloud(n, seed);
            for start in [0, n / 2] {
                assert_eq!(
                    farthest_point_order(&pts, start).unwrap(),
                    farthest_point_order_brute_force(&pts, start).unwrap()
                );
            }
        }
    }

    #[test]
    fn duplicates_and_ties_go_by_index() {
        // A square's corners twice: after 0, the farthest is its opposite corner 3; then
        // 1 and 2 tie (1 first); duplicates come last, at distance 0, by index.
        let sq = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)];
        let pts: Vec<_> = sq
            .iter()
            .chain(sq.iter())
            .map(|&(x, y)| Point3::new(x, y, 0.0))
            .collect();
        let o = farthest_point_order(&pts, 0).unwrap();
        assert_eq!(o.order, vec![0, 3, 1, 2, 4, 5, 6, 7]);
        assert_eq!(o.distances[4..], [0.0; 4]);
        assert_eq!(o, farthest_point_order_brute_force(&pts, 0).unwrap());
    }

    #[test]
    fn levels_grow_by_the_branching_factor() {
        assert_eq!(
            branching_level_offsets(100, 8, None).unwrap(),
            vec![0, 8, 72, 100]
        );
        assert_eq!(
            branching_level_offsets(72, 8, None).unwrap(),
            vec![0, 8, 72]
        );
        assert_eq!(branching_level_offsets(5, 8, None).unwrap(), vec![0, 5]);
        assert_eq!(
            branching_level_offsets(1000, 8, Some(2)).unwrap(),
            vec![0, 8, 1000]
        );
        assert!(matches!(
            branching_level_offsets(72, 8, Some(3)),
            Err(PointshellError::PointSetTooSmall { needed: 73, .. })
        ));
        assert!(matches!(
            branching_level_offsets(10, 1, None),
            Err(PointshellError::InvalidParameter { .. })
        ));
        assert!(matches!(
            branching_level_offsets(0, 8, None),
            Err(PointshellError::EmptyPointSet)
        ));
        assert!(matches!(
            branching_level_offsets(10, 8, Some(0)),
            Err(PointshellError::NoLevels)
        ));
    }

    #[test]
    fn bad_point_sets_are_errors() {
        assert!(matches!(
            farthest_point_order(&[], 0),
            Err(PointshellError::EmptyPointSet)
        ));
        let pts = cloud(5, 1);
        assert!(matches!(
            farthest_point_order(&pts, 5),
            Err(PointshellError::StartOutOfRange { .. })
        ));
        let mut bad = pts.clone();
        bad[2].y = f64::NAN;
        assert!(matches!(
            farthest_point_order(&bad, 0),
            Err(PointshellError::NonFinite { index: 2, .. })
        ));
        let normals = vec![Vector3::z(); 4];
        assert!(matches!(
            farthest_point_pointshell(&pts, &normals, 8, None),
            Err(PointshellError::NormalsMismatch { .. })
        ));
    }
}
