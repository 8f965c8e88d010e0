//! The sampled field and its lookup (thesis 3.11). [`SignedDistanceField`] holds the
//! node values of a regular grid (origin o, spacing h, x fastest) and answers
//!
//! ```text
//!     inside the box:  the trilinear interpolant of the 8 nodes of the cell of p,
//!     outside the box: max( d_box(p) + m,  f(b(p)) - d_box(p) ),
//! ```
//!
//! with b(p) the nearest box point, d_box(p) = |p - b(p)| and m = `boundary_min`, a lower
//! bound of the distance over the box surface (the smallest boundary node value minus
//! h/sqrt(2)). Both terms are lower bounds of the true distance (any path to the surface
//! crosses the box; distance is 1-Lipschitz), so the outside value never exceeds the true
//! distance and culling with it is safe, as in the thesis; the second term makes it
//! continuous across the box faces. The gradient is the interpolant's (inside) or the
//! unit direction away from the box (outside).

use nalgebra::{Point3, Vector3};

use super::SdfError;

/// A signed distance field on a regular grid.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedDistanceField {
    /// Grid node (0, 0, 0).
    pub origin: Point3<f64>,
    /// Node spacing (cubic cells).
    pub spacing: f64,
    /// Cells per axis; nodes per axis are `cells + 1`.
    pub cells: [usize; 3],
    /// Node values, x fastest.
    pub values: Vec<f32>,
    /// A lower bound of the distance over the box surface: the smallest boundary node
    /// value minus h/sqrt(2), the farthest a surface point lies from its nearest node
    /// on the same face (distance is 1-Lipschitz), so the outside bound stays
    /// conservative between nodes.
    pub boundary_min: f32,
    /// The largest |difference| of adjacent node values over the spacing (1 for exact
    /// distances, up to rounding): with it, [`SignedDistanceField::lipschitz_bound`].
    pub max_slope: f32,
    /// `1 / spacing`, so lookups multiply instead of dividing.
    inv_spacing: f64,
}

/// Splits a grid coordinate into its cell (clamped to the last one) and the fraction.
#[inline(always)]
fn cell_and_fraction(x: f64, cells: usize) -> (usize, f64) {
    // x >= 0 here, so the cast truncates towards the floor.
    let i = (x as usize).min(cells.saturating_sub(1));
    (i, x - i as f64)
}

impl SignedDistanceField {
    /// A field from its node values (x fastest, (cells + 1) per axis); computes
    /// `boundary_min`.
    pub fn from_values(
        origin: Point3<f64>,
        spacing: f64,
        cells: [usize; 3],
        values: Vec<f32>,
    ) -> Result<Self, SdfError> {
        if cells.contains(&0) {
            return Err(SdfError::ZeroResolution);
        }
        let nodes = cells
            .iter()
            .try_fold(1usize, |acc, &c| acc.checked_mul(c.checked_add(1)?));
        if nodes != Some(values.len()) {
            return Err(SdfError::InvalidOption {
                what: format!(
                    "{} values do not fill a grid of {cells:?} cells",
                    values.len()
                ),
            });
        }
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(SdfError::InvalidOption {
                what: format!("spacing {spacing} must be positive and finite"),
            });
        }
        let boundary_min = boundary_min(&values, cells, spacing);
        let max_slope = (max_edge_difference(&values, cells) as f64 / spacing) as f32;
        Ok(SignedDistanceField {
            origin,
            spacing,
            cells,
            values,
            boundary_min,
            max_slope,
            inv_spacing: 1.0 / spacing,
        })
    }

    /// The value of node (i, j, k).
    pub fn node(&self, i: usize, j: usize, k: usize) -> f32 {
        let (nx, ny) = (self.cells[0] + 1, self.cells[1] + 1);
        self.values[(k * ny + j) * nx + i]
    }

    /// The position of node (i, j, k).
    pub fn node_point(&self, i: usize, j: usize, k: usize) -> Point3<f64> {
        self.origin + Vector3::new(i as f64, j as f64, k as f64) * self.spacing
    }

    /// Grid coordinates of p (node units) and whether p lies in the box.
    #[inline(always)]
    fn grid_coordinates(&self, p: &Point3<f64>) -> ([f64; 3], bool) {
        let inv = self.inv_spacing;
        let x = (p.x - self.origin.x) * inv;
        let y = (p.y - self.origin.y) * inv;
        let z = (p.z - self.origin.z) * inv;
        let [cx, cy, cz] = self.cells;
        let inside =
            x >= 0.0 && y >= 0.0 && z >= 0.0 && x <= cx as f64 && y <= cy as f64 && z <= cz as f64;
        ([x, y, z], inside)
    }

    /// The eight node values of the cell with lowest corner (i, j, k), in the order
    /// v000, v100, v010, v110, v001, v101, v011, v111.
    #[inline(always)]
    fn cell_values(&self, i: usize, j: usize, k: usize) -> [f64; 8] {
        let nx = self.cells[0] + 1;
        let nxy = nx * (self.cells[1] + 1);
        let base = i + nx * j + nxy * k;
        let lo = &self.values[base..base + nx + 2];
        let hi = &self.values[base + nxy..base + nxy + nx + 2];
        [
            lo[0],
            lo[1],
            lo[nx],
            lo[nx + 1],
            hi[0],
            hi[1],
            hi[nx],
            hi[nx + 1],
        ]
        .map(f64::from)
    }

    /// The offset of grid coordinates outside the box from the nearest box point, in
    /// node units.
    #[inline(always)]
    fn outside_offset(&self, g: [f64; 3]) -> Vector3<f64> {
        let [cx, cy, cz] = self.cells.map(|c| c as f64);
        Vector3::new(
            g[0] - g[0].clamp(0.0, cx),
            g[1] - g[1].clamp(0.0, cy),
            g[2] - g[2].clamp(0.0, cz),
        )
    }

    /// Outside the box, the larger of two lower bounds of the distance: the thesis's
    /// `d_box + boundary_min` (3.11: any path to the surface first crosses the box), and
    /// `field(nearest box point) - d_box` (distance is 1-Lipschitz). The second makes the
    /// value continuous across the box faces, which temporal coherence relies on.
    #[cold]
    #[inline(never)]
    fn lookup_outside(&self, g: [f64; 3]) -> f64 {
        let off = self.outside_offset(g);
        let d_box = off.norm() * self.spacing;
        let on_box = self.trilinear([g[0] - off.x, g[1] - off.y, g[2] - off.z]);
        (d_box + self.boundary_min as f64).max(on_box - d_box)
    }

    /// A Lipschitz constant of [`SignedDistanceField::lookup`]: `sqrt(3 s^2 + 1)`, `s` the
    /// largest edge slope. Inside, each partial derivative of the trilinear interpolant is
    /// a blend of edge slopes, so the gradient is at most `L_in = sqrt(3) s`. Outside, the
    /// value is the larger of `d_box + boundary_min` (slope 1) and `f(P x) - d_box`, where
    /// `P` projects onto the box: `P`'s Jacobian projects onto the face plane or edge line
    /// (or is zero at a corner), orthogonally to `grad d_box`, so the two terms of the
    /// gradient are orthogonal and its norm is at most `sqrt(L_in^2 + 1)`. The value is
    /// continuous across the regions, so that bounds it everywhere (tested on random
    /// pairs of points).
    pub fn lipschitz_bound(&self) -> f64 {
        let s = self.max_slope as f64;
        (3.0 * s * s + 1.0).sqrt()
    }

    /// The field at p: trilinear inside the box; outside, the conservative lower bound of
    /// thesis 3.11 (see `lookup_outside`).
    #[inline]
    pub fn lookup(&self, p: &Point3<f64>) -> f64 {
        let (g, inside) = self.grid_coordinates(p);
        if !inside {
            return self.lookup_outside(g);
        }
        self.trilinear(g)
    }

    /// Trilinear interpolation at grid coordinates inside the box.
    #[inline(always)]
    fn trilinear(&self, g: [f64; 3]) -> f64 {
        let (i, fx) = cell_and_fraction(g[0], self.cells[0]);
        let (j, fy) = cell_and_fraction(g[1], self.cells[1]);
        let (k, fz) = cell_and_fraction(g[2], self.cells[2]);
        let v = self.cell_values(i, j, k);
        let c00 = v[0] + (v[1] - v[0]) * fx;
        let c10 = v[2] + (v[3] - v[2]) * fx;
        let c01 = v[4] + (v[5] - v[4]) * fx;
        let c11 = v[6] + (v[7] - v[6]) * fx;
        let c0 = c00 + (c10 - c00) * fy;
        let c1 = c01 + (c11 - c01) * fy;
        c0 + (c1 - c0) * fz
    }

    /// The gradient of [`lookup`](Self::lookup): of the trilinear interpolant inside the
    /// box (discontinuous across cell faces, like the interpolant's derivative), and of
    /// the outside bound (the unit vector from the nearest box point) outside it.
    pub fn gradient(&self, p: &Point3<f64>) -> Vector3<f64> {
        let (g, inside) = self.grid_coordinates(p);
        if !inside {
            let off = self.outside_offset(g);
            let len = off.norm();
            return if len > 0.0 { off / len } else { off };
        }
        let (i, fx) = cell_and_fraction(g[0], self.cells[0]);
        let (j, fy) = cell_and_fraction(g[1], self.cells[1]);
        let (k, fz) = cell_and_fraction(g[2], self.cells[2]);
        let v = self.cell_values(i, j, k);
        let lerp = |a: f64, b: f64, t: f64| a + (b - a) * t;
        // d/dx: x-differences interpolated in y and z; likewise for y and z.
        let dx = lerp(
            lerp(v[1] - v[0], v[3] - v[2], fy),
            lerp(v[5] - v[4], v[7] - v[6], fy),
            fz,
        );
        let dy = lerp(
            lerp(v[2] - v[0], v[3] - v[1], fx),
            lerp(v[6] - v[4], v[7] - v[5], fx),
            fz,
        );
        let dz = lerp(
            lerp(v[4] - v[0], v[5] - v[1], fx),
            lerp(v[6] - v[2], v[7] - v[3], fx),
            fy,
        );
        Vector3::new(dx, dy, dz) / self.spacing
    }
}

/// The smallest node value on the box surface minus h/sqrt(2) (see
/// [`SignedDistanceField::boundary_min`]); infinity for an empty grid.
pub(crate) fn boundary_min(values: &[f32], cells: [usize; 3], spacing: f64) -> f32 {
    let [nx, ny, nz] = cells.map(|c| c + 1);
    let mut m = f32::INFINITY;
    for k in 0..nz {
        for j in 0..ny {
            let row = &values[(k * ny + j) * nx..][..nx];
            if k == 0 || j == 0 || k == nz - 1 || j == ny - 1 {
                m = row.iter().fold(m, |a, &b| a.min(b));
            } else {
                m = m.min(row[0]).min(row[nx - 1]);
            }
        }
    }
    (m as f64 - spacing * std::f64::consts::FRAC_1_SQRT_2) as f32
}

/// The largest absolute difference between adjacent node values (x fastest layout).
fn max_edge_difference(values: &[f32], cells: [usize; 3]) -> f32 {
    let [nx, ny, nz] = cells.map(|c| c + 1);
    let mut m = 0f32;
    for k in 0..nz {
        for j in 0..ny {
            let row = &values[(k * ny + j) * nx..][..nx];
            for w in row.windows(2) {
                m = m.max((w[1] - w[0]).abs());
            }
            if j + 1 < ny {
                let next = &values[(k * ny + j + 1) * nx..][..nx];
                m = row
                    .iter()
                    .zip(next)
                    .fold(m, |m, (a, b)| m.max((b - a).abs()));
            }
            if k + 1 < nz {
                let next = &values[((k + 1) * ny + j) * nx..][..nx];
                m = row
                    .iter()
                    .zip(next)
                    .fold(m, |m, (a, b)| m.max((b - a).abs()));
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics_devices::rng::SplitMix64;

    /// A field holding an affine function a + g . x: trilinear interpolation reproduces
    /// it exactly, so lookups and gradients can be checked to rounding.
    fn affine_field() -> (SignedDistanceField, f64, Vector3<f64>) {
        let (a, g) = (0.3, Vector3::new(0.5, -0.25, 0.8));
        let cells = [6, 5, 4];
        let (origin, h) = (Point3::new(-1.0, 0.5, 2.0), 0.25);
        let mut values = Vec::new();
        for k in 0..=cells[2] {
            for j in 0..=cells[1] {
                for i in 0..=cells[0] {
                    let p = origin + Vector3::new(i as f64, j as f64, k as f64) * h;
                    values.push((a + g.dot(&p.coords)) as f32);
                }
            }
        }
        let f = SignedDistanceField::from_values(origin, h, cells, values).unwrap();
        (f, a, g)
    }

    #[test]
    fn lookup_reproduces_affine_functions_and_bounds_outside() {
        let (f, a, g) = affine_field();
        // f32 node storage: values of order 3 round at ~2e-7.
        for p in [
            Point3::new(-0.9, 0.6, 2.1),
            Point3::new(0.49, 1.7, 2.99),
            Point3::new(0.5, 1.75, 3.0), // the far corner (last cell, fraction 1)
            Point3::new(-1.0, 0.5, 2.0),
        ] {
            assert!((f.lookup(&p) - (a + g.dot(&p.coords))).abs() < 1e-6, "{p}");
        }
        // Outside: the larger of distance-to-box + boundary_min and the value at the
        // nearest box point minus distance-to-box.
        for (p, q, d) in [
            (
                Point3::new(-2.0, 0.6, 2.1),
                Point3::new(-1.0, 0.6, 2.1),
                1.0f64,
            ),
            (
                Point3::new(1.5, 2.75, 3.0),
                Point3::new(0.5, 1.75, 3.0),
                2f64.sqrt(),
            ),
        ] {
            let expected = (d + f.boundary_min as f64).max(f.lookup(&q) - d);
            assert!((f.lookup(&p) - expected).abs() < 1e-12);
            assert!(f.lookup(&p) >= d + f.boundary_min as f64);
        }
        // Edge slopes of the affine field are |g_i| <= 0.8 (f32 rounding aside).
        assert!((f.max_slope - 0.8).abs() < 1e-5);
        assert!((f.lipschitz_bound() - (3.0 * 0.64f64 + 1.0).sqrt()).abs() < 1e-4);
        // Continuous across the box face.
        let inside = f.lookup(&Point3::new(-1.0 + 1e-12, 0.6, 2.1));
        let outside = f.lookup(&Point3::new(-1.0 - 1e-12, 0.6, 2.1));
        assert!((inside - outside).abs() < 1e-9);
    }

    /// No pair of points, inside or outside the box or across its faces, edges and
    /// corners, differs by more than the Lipschitz bound times their distance; and the
    /// bound is not loose by more than a factor 1.3 for the affine field (whose slope
    /// outside a face is `sqrt(|g_t|^2 + 1)`, at most 1.375 here, against the bound's
    /// 1.709 from its largest edge slope 0.8).
    #[test]
    fn lipschitz_bound_holds_on_random_pairs() {
        let (f, _, _) = affine_field();
        let l = f.lipschitz_bound();
        let (lo, hi) = (f.origin, f.node_point(f.cells[0], f.cells[1], f.cells[2]));
        let mut rng = SplitMix64::new(12345);
        let mut next = || rng.next_f64();
        let mut worst: f64 = 0.0;
        for _ in 0..200_000 {
            // Points in the box grown by its size on every side.
            let mut p = Point3::origin();
            for a in 0..3 {
                let w = hi[a] - lo[a];
                p[a] = lo[a] - w + 3.0 * w * next();
            }
            let step = 10f64.powf(-6.0 + 6.0 * next());
            let dir = Vector3::new(next() - 0.5, next() - 0.5, next() - 0.5).normalize();
            let q = p + dir * step;
            let ratio = (f.lookup(&p) - f.lookup(&q)).abs() / step;
            worst = worst.max(ratio);
        }
        // Rounding of f32 grid values and of the interpolation: 1e-6 relative.
        assert!(
            worst <= l * (1.0 + 1e-6) + 1e-6,
            "slope {worst} > bound {l}"
        );
        assert!(worst > l / 1.3, "slope {worst}, bound {l}");
    }

    /// Central differences of the lookup along each axis, step `e`.
    fn central_difference(f: &SignedDistanceField, p: &Point3<f64>, e: f64) -> Vector3<f64> {
        Vector3::from_fn(|a, _| {
            let mut q = *p;
            q[a] += e;
            let mut r = *p;
            r[a] -= e;
            (f.lookup(&q) - f.lookup(&r)) / (2.0 * e)
        })
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (f, _, g) = affine_field();
        let e = 1e-6;
        for p in [
            Point3::new(-0.83, 0.61, 2.13),
            Point3::new(0.11, 1.37, 2.71),
        ] {
            let grad = f.gradient(&p);
            // Affine field: the gradient is g up to the f32 rounding of node values
            // over one cell (2e-7 / 0.25).
            assert!((grad - g).norm() < 1e-5, "{grad} vs {g}");
            let fd = central_difference(&f, &p, e);
            // Central differences of a trilinear function inside one cell: exact up to
            // rounding (1e-16 / 1e-6).
            assert!((grad - fd).norm() < 1e-8, "{grad} vs {fd}");
        }
        // A non-affine cell: random node values, gradient against central differences.
        let mut rng = SplitMix64::new(3);
        let values: Vec<f32> = (0..27).map(|_| rng.next_f64() as f32).collect();
        let f = SignedDistanceField::from_values(Point3::origin(), 0.5, [2, 2, 2], values).unwrap();
        for p in [Point3::new(0.2, 0.3, 0.4), Point3::new(0.7, 0.9, 0.6)] {
            let grad = f.gradient(&p);
            let fd = central_difference(&f, &p, e);
            // Trilinear: quadratic error terms vanish in central differences up to e^2.
            assert!((grad - fd).norm() < 1e-7, "{grad} vs {fd}");
        }
        // Outside, the unit direction away from the box.
        let grad = f.gradient(&Point3::new(3.0, 0.5, 0.5));
        assert!((grad - Vector3::x()).norm() < 1e-15);
    }

    #[test]
    fn boundary_min_takes_only_boundary_nodes() {
        let mut values = vec![5.0f32; 27];
        values[13] = -10.0; // the centre node (1, 1, 1) is interior
        values[9 + 3] = 2.0; // node (0, 1, 1) is on the x = 0 face
        let m = boundary_min(&values, [2, 2, 2], 1.0);
        assert!((m as f64 - (2.0 - std::f64::consts::FRAC_1_SQRT_2)).abs() < 1e-6);
    }

    #[test]
    fn from_values_rejects_mismatched_grids() {
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 1.0, [1, 1, 1], vec![0.0; 7])
                .is_err()
        );
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 1.0, [0, 1, 1], vec![]).is_err()
        );
        assert!(
            SignedDistanceField::from_values(Point3::origin(), 0.0, [1, 1, 1], vec![0.0; 8])
                .is_err()
        );
    }
}
