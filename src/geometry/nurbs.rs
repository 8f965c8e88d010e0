//! Trivariate NURBS solids: a map X(u, v, w) from a parameter box to R^3, evaluated with
//! its exact first partial derivatives.
//!
//! What it computes. A solid of degrees (p, q, r) with clamped knot vectors U, V, W and a
//! control net P_ijk with weights w_ijk > 0 is
//!
//! ```text
//! X(u, v, w) = sum_ijk R_ijk(u, v, w) P_ijk,
//! R_ijk      = N_i,p(u) N_j,q(v) N_k,r(w) w_ijk / sum_abc N_a,p(u) N_b,q(v) N_c,r(w) w_abc
//! ```
//!
//! with the B-spline basis N of the Cox-de Boor recursion
//! `N_i,0 = [U_i <= u < U_i+1]`,
//! `N_i,p = (u - U_i)/(U_i+p - U_i) N_i,p-1 + (U_i+p+1 - u)/(U_i+p+1 - U_i+1) N_i+1,p-1`.
//! It is evaluated in homogeneous coordinates: with `Pw_ijk = (w P, w)` (a 4-vector),
//! `A(u,v,w) = sum N_i N_j N_k Pw_ijk = (a, W)` and `X = a / W`. The partial derivatives
//! follow from the quotient rule, `dX/ds = (da/ds - X dW/ds) / W` for s in {u, v, w},
//! where `dA/ds` uses the derivative of the one basis that depends on s.
//!
//! Method (Piegl and Tiller, *The NURBS Book*, 2nd ed., 1997): the knot span by binary
//! search (algorithm A2.1, [`find_span`]), the p + 1 non-zero basis functions by the
//! triangular Cox-de Boor scheme (A2.2, [`basis_functions`]), their derivatives (A2.3,
//! [`basis_function_derivatives`]), and the rational derivatives by the quotient rule
//! (section 4.5, eq. 4.8 for one direction; the tensor-product case is the same per
//! direction because the weights enter only through W). Only the p + 1 (q + 1, r + 1)
//! basis functions that are non-zero on the span are computed.
//!
//! Knot vectors are validated at construction ([`validate_knots`]): finite,
//! non-decreasing, `count + degree + 1` long, clamped (the first and the last knot
//! repeated exactly `degree + 1` times, so the solid interpolates its corner control
//! points and the parameter domain is `[U_p, U_n+1]`), and no interior knot repeated more
//! than `degree` times (which would make the solid discontinuous). A failure is a typed
//! [`NurbsError`] naming the direction and the count or knot that is wrong.
//!
//! Use in this crate: the fusiform muscle ([`crate::muscle::fusiform`]) is such a solid, in
//! the spirit of Zhou and Lu ("NURBS-based Galerkin method and application to skeletal
//! muscle modeling", ACM SPM 2005), who model a muscle as a trivariate NURBS solid, and
//! of Teran et al. ("Finite volume methods for the simulation of skeletal muscle", SCA
//! 2003), whose fibre directions follow a parametric direction of a B-spline solid.

use std::fmt;

use nalgebra::{Matrix3, Point3, Vector3, Vector4};

/// A parametric direction of a solid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The first parameter, u (control index i, degree p).
    U,
    /// The second parameter, v (control index j, degree q).
    V,
    /// The third parameter, w (control index k, degree r).
    W,
}

impl Direction {
    /// The three directions in order.
    pub const ALL: [Direction; 3] = [Direction::U, Direction::V, Direction::W];
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::U => "u",
            Direction::V => "v",
            Direction::W => "w",
        })
    }
}

/// Why a NURBS solid cannot be built from the given degrees, knots and control net.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NurbsError {
    /// A degree of 0 (piecewise constant): the solid would not be continuous.
    #[error("{direction} direction: the degree must be at least 1, got 0")]
    ZeroDegree {
        /// The direction.
        direction: Direction,
    },
    /// Fewer control points than degree + 1 in a direction.
    #[error("{direction} direction: {count} control points are too few for degree {degree} (at least {} are needed)", degree.saturating_add(1))]
    TooFewControlPoints {
        /// The direction.
        direction: Direction,
        /// Control points in that direction.
        count: usize,
        /// Degree in that direction.
        degree: usize,
    },
    /// A knot vector whose length is not count + degree + 1.
    #[error("{direction} knot vector has {found} knots, expected {expected} ({count} control points + degree {degree} + 1)")]
    KnotCount {
        /// The direction.
        direction: Direction,
        /// Its length.
        found: usize,
        /// count + degree + 1.
        expected: usize,
        /// Control points in that direction.
        count: usize,
        /// Degree in that direction.
        degree: usize,
    },
    /// A NaN or infinite knot.
    #[error("{direction} knot vector: knot {index} (0-based) is not finite: {value}")]
    NonFiniteKnot {
        /// The direction.
        direction: Direction,
        /// 0-based index of the knot.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// A knot smaller than the one before it.
    #[error("{direction} knot vector decreases at knot {index} (0-based): {value} after {previous}; knots must be non-decreasing")]
    Decreasing {
        /// The direction.
        direction: Direction,
        /// 0-based index of the smaller knot.
        index: usize,
        /// Its value.
        value: f64,
        /// The knot before it.
        previous: f64,
    },
    /// The first or last knot is not repeated exactly degree + 1 times.
    #[error("{direction} knot vector is not clamped: its {end} knot is repeated {multiplicity} times, expected exactly {expected} (degree + 1)")]
    NotClamped {
        /// The direction.
        direction: Direction,
        /// `"first"` or `"last"`.
        end: &'static str,
        /// How many times the end knot is repeated.
        multiplicity: usize,
        /// degree + 1.
        expected: usize,
    },
    /// An interior knot repeated more than degree times.
    #[error("{direction} knot vector: interior knot {value} is repeated {multiplicity} times, more than the degree {degree} (the solid would be discontinuous)")]
    InteriorMultiplicity {
        /// The direction.
        direction: Direction,
        /// The knot value.
        value: f64,
        /// How many times it is repeated.
        multiplicity: usize,
        /// Degree in that direction.
        degree: usize,
    },
    /// A control net whose size is not the product of the three counts.
    #[error("the control net has {found} points, expected {expected} = {} x {} x {}", counts[0], counts[1], counts[2])]
    ControlPointCount {
        /// Number of control points given.
        found: usize,
        /// The product of the counts.
        expected: usize,
        /// Control points per direction.
        counts: [usize; 3],
    },
    /// A number of weights different from the number of control points.
    #[error("{found} weights for {expected} control points")]
    WeightCount {
        /// Number of weights given.
        found: usize,
        /// Number of control points.
        expected: usize,
    },
    /// A weight that is not positive and finite.
    #[error("weight {index} (0-based) must be positive and finite, got {value}")]
    BadWeight {
        /// 0-based index into the control net.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// A control point with a NaN or infinite coordinate.
    #[error("control point {index} (0-based) is not finite: {point:?}")]
    NonFiniteControlPoint {
        /// 0-based index into the control net.
        index: usize,
        /// Its coordinates.
        point: [f64; 3],
    },
    /// Control counts whose product overflows.
    #[error("the control net of {} x {} x {} points is too large", counts[0], counts[1], counts[2])]
    TooLarge {
        /// Control points per direction.
        counts: [usize; 3],
    },
}

/// Checks one knot vector for a direction with `count` control points of degree
/// `degree`: length `count + degree + 1`, finite, non-decreasing, clamped (first and last
/// knot repeated exactly `degree + 1` times, which also makes the domain non-empty), and
/// interior multiplicities at most `degree`.
pub fn validate_knots(
    direction: Direction,
    degree: usize,
    count: usize,
    knots: &[f64],
) -> Result<(), NurbsError> {
    if degree == 0 {
        return Err(NurbsError::ZeroDegree { direction });
    }
    if count <= degree {
        return Err(NurbsError::TooFewControlPoints {
            direction,
            count,
            degree,
        });
    }
    // Saturating: an absurd count is simply a length no knot vector has.
    let expected = count.saturating_add(degree).saturating_add(1);
    if knots.len() != expected {
        return Err(NurbsError::KnotCount {
            direction,
            found: knots.len(),
            expected,
            count,
            degree,
        });
    }
    if let Some((index, &value)) = knots.iter().enumerate().find(|(_, k)| !k.is_finite()) {
        return Err(NurbsError::NonFiniteKnot {
            direction,
            index,
            value,
        });
    }
    if let Some(index) = (1..knots.len()).find(|&i| knots[i] < knots[i - 1]) {
        return Err(NurbsError::Decreasing {
            direction,
            index,
            value: knots[index],
            previous: knots[index - 1],
        });
    }
    // Runs of equal knots: (value, multiplicity), in order.
    let mut runs: Vec<(f64, usize)> = Vec::new();
    for &k in knots {
        match runs.last_mut() {
            Some((v, m)) if *v == k => *m += 1,
            _ => runs.push((k, 1)),
        }
    }
    let clamped = degree + 1;
    let (first, last) = (runs[0].1, runs[runs.len() - 1].1);
    if runs.len() < 2 || first != clamped {
        return Err(NurbsError::NotClamped {
            direction,
            end: "first",
            multiplicity: first,
            expected: clamped,
        });
    }
    if last != clamped {
        return Err(NurbsError::NotClamped {
            direction,
            end: "last",
            multiplicity: last,
            expected: clamped,
        });
    }
    if let Some(&(value, multiplicity)) = runs[1..runs.len() - 1].iter().find(|r| r.1 > degree) {
        return Err(NurbsError::InteriorMultiplicity {
            direction,
            value,
            multiplicity,
            degree,
        });
    }
    Ok(())
}

/// The clamped knot vector of `count` control points of degree `degree` with uniformly
/// spaced interior knots on `[0, 1]`: `degree + 1` zeros, `count - degree - 1` interior
/// knots `i / (count - degree)`, `degree + 1` ones. Empty when `count <= degree`.
pub fn clamped_uniform_knots(degree: usize, count: usize) -> Vec<f64> {
    if count <= degree {
        return Vec::new();
    }
    let spans = count - degree;
    let mut k = vec![0.0; degree + 1];
    k.extend((1..spans).map(|i| i as f64 / spans as f64));
    k.extend(std::iter::repeat_n(1.0, degree + 1));
    k
}

/// The Greville abscissae `(U_i+1 + ... + U_i+p) / p` of a knot vector of degree `degree`
/// (one per control point): control points placed at `f(greville_i)` reproduce any
/// linear function f exactly (linear precision of B-splines).
pub fn greville_abscissae(degree: usize, knots: &[f64]) -> Vec<f64> {
    let count = knots.len().saturating_sub(degree + 1);
    (0..count)
        .map(|i| knots[i + 1..=i + degree].iter().sum::<f64>() / degree.max(1) as f64)
        .collect()
}

/// The knot span index i with `U_i <= u < U_i+1` (algorithm A2.1 of The NURBS Book), for
/// a clamped knot vector of degree `degree` with `n + 1 = knots.len() - degree - 1`
/// control points. `u` at or beyond the end of the domain gives the last non-empty span
/// `n`, at or before its start the first one `degree`; NaN gives some span (the basis
/// is then NaN).
///
/// Precondition: `knots` passes [`validate_knots`] (at least `2 (degree + 1)` knots).
pub fn find_span(degree: usize, knots: &[f64], u: f64) -> usize {
    let n = knots.len() - degree - 2;
    if u >= knots[n + 1] {
        return n;
    }
    if u <= knots[degree] {
        return degree;
    }
    let (mut low, mut high) = (degree, n + 1);
    let mut mid = (low + high) / 2;
    // Invariant: knots[low] <= u < knots[high]; NaN fails both tests and stops at once.
    while u < knots[mid] || u >= knots[mid + 1] {
        if u < knots[mid] {
            high = mid;
        } else {
            low = mid;
        }
        mid = (low + high) / 2;
    }
    mid
}

/// The `degree + 1` basis functions `N_span-p,p(u) .. N_span,p(u)` that are non-zero on
/// knot span `span` (algorithm A2.2 of The NURBS Book: the triangular Cox-de Boor
/// scheme, without divisions by zero because the span is non-empty).
pub fn basis_functions(span: usize, u: f64, degree: usize, knots: &[f64]) -> Vec<f64> {
    let p = degree;
    let mut n = vec![0.0; p + 1];
    let mut left = vec![0.0; p + 1];
    let mut right = vec![0.0; p + 1];
    n[0] = 1.0;
    for j in 1..=p {
        left[j] = u - knots[span + 1 - j];
        right[j] = knots[span + j] - u;
        let mut saved = 0.0;
        for r in 0..j {
            let temp = n[r] / (right[r + 1] + left[j - r]);
            n[r] = saved + right[r + 1] * temp;
            saved = left[j - r] * temp;
        }
        n[j] = saved;
    }
    n
}

/// The non-zero basis functions on span `span` and their derivatives up to order
/// `order` (algorithm A2.3 of The NURBS Book): `ders[k][j]` is the k-th derivative of
/// `N_span-p+j,p` at `u`. Derivatives of order above the degree are zero.
pub fn basis_function_derivatives(
    span: usize,
    u: f64,
    degree: usize,
    knots: &[f64],
    order: usize,
) -> Vec<Vec<f64>> {
    let p = degree;
    // ndu: basis functions (upper triangle and diagonal) and knot differences (lower).
    let mut ndu = vec![vec![0.0; p + 1]; p + 1];
    let mut left = vec![0.0; p + 1];
    let mut right = vec![0.0; p + 1];
    ndu[0][0] = 1.0;
    for j in 1..=p {
        left[j] = u - knots[span + 1 - j];
        right[j] = knots[span + j] - u;
        let mut saved = 0.0;
        for r in 0..j {
            ndu[j][r] = right[r + 1] + left[j - r];
            let temp = ndu[r][j - 1] / ndu[j][r];
            ndu[r][j] = saved + right[r + 1] * temp;
            saved = left[j - r] * temp;
        }
        ndu[j][j] = saved;
    }
    let mut ders = vec![vec![0.0; p + 1]; order + 1];
    for j in 0..=p {
        ders[0][j] = ndu[j][p];
    }
    let top = order.min(p);
    // a: two rows of the coefficients a_k,j of the derivative recurrence (eq. 2.10).
    let mut a = [vec![0.0; p + 1], vec![0.0; p + 1]];
    for r in 0..=p {
        let (mut s1, mut s2) = (0usize, 1usize);
        a[0][0] = 1.0;
        for k in 1..=top {
            let mut d = 0.0;
            let rk = r as isize - k as isize;
            let pk = p - k;
            if rk >= 0 {
                let rk = rk as usize;
                a[s2][0] = a[s1][0] / ndu[pk + 1][rk];
                d = a[s2][0] * ndu[rk][pk];
            }
            let j1: usize = if rk >= -1 { 1 } else { (-rk) as usize };
            let j2: usize = if r <= pk + 1 { k - 1 } else { p - r };
            for j in j1..=j2 {
                let idx = (rk + j as isize) as usize;
                a[s2][j] = (a[s1][j] - a[s1][j - 1]) / ndu[pk + 1][idx];
                d += a[s2][j] * ndu[idx][pk];
            }
            if r <= pk {
                a[s2][k] = -a[s1][k - 1] / ndu[pk + 1][r];
                d += a[s2][k] * ndu[r][pk];
            }
            ders[k][r] = d;
            std::mem::swap(&mut s1, &mut s2);
        }
    }
    // Multiply by p (p - 1) ... (p - k + 1).
    let mut factor = p as f64;
    for (k, row) in ders.iter_mut().enumerate().take(top + 1).skip(1) {
        for d in row.iter_mut() {
            *d *= factor;
        }
        factor *= (p - k) as f64;
    }
    ders
}

/// A trivariate NURBS solid with clamped knot vectors (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct NurbsSolid {
    degrees: [usize; 3],
    counts: [usize; 3],
    knots: [Vec<f64>; 3],
    /// Homogeneous control points `(w x, w y, w z, w)`, index `(i * n_v + j) * n_w + k`.
    control: Vec<Vector4<f64>>,
}

impl NurbsSolid {
    /// A solid of `degrees` (p, q, r) with `counts` control points per direction, the
    /// knot vectors `knots` (u, v, w) and the control net `points` with `weights`, both
    /// indexed `(i * counts[1] + j) * counts[2] + k` (k fastest). Everything is validated
    /// (see [`validate_knots`]; weights positive and finite, points finite).
    pub fn new(
        degrees: [usize; 3],
        counts: [usize; 3],
        knots: [Vec<f64>; 3],
        points: &[Point3<f64>],
        weights: &[f64],
    ) -> Result<Self, NurbsError> {
        for (d, dir) in Direction::ALL.into_iter().enumerate() {
            validate_knots(dir, degrees[d], counts[d], &knots[d])?;
        }
        let expected = counts[0]
            .checked_mul(counts[1])
            .and_then(|c| c.checked_mul(counts[2]))
            .ok_or(NurbsError::TooLarge { counts })?;
        if points.len() != expected {
            return Err(NurbsError::ControlPointCount {
                found: points.len(),
                expected,
                counts,
            });
        }
        if weights.len() != expected {
            return Err(NurbsError::WeightCount {
                found: weights.len(),
                expected,
            });
        }
        if let Some((index, &value)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w > 0.0))
        {
            return Err(NurbsError::BadWeight { index, value });
        }
        if let Some((index, p)) = points
            .iter()
            .enumerate()
            .find(|(_, p)| !p.coords.iter().all(|c| c.is_finite()))
        {
            return Err(NurbsError::NonFiniteControlPoint {
                index,
                point: [p.x, p.y, p.z],
            });
        }
        let control = points
            .iter()
            .zip(weights)
            .map(|(p, &w)| Vector4::new(w * p.x, w * p.y, w * p.z, w))
            .collect();
        Ok(NurbsSolid {
            degrees,
            counts,
            knots,
            control,
        })
    }

    /// The degrees (p, q, r).
    pub fn degrees(&self) -> [usize; 3] {
        self.degrees
    }

    /// Control points per direction.
    pub fn counts(&self) -> [usize; 3] {
        self.counts
    }

    /// The knot vector of a direction.
    pub fn knots(&self, direction: Direction) -> &[f64] {
        &self.knots[direction as usize]
    }

    /// The parameter domain `[U_p, U_n+1]` of each direction.
    pub fn domain(&self) -> [(f64, f64); 3] {
        std::array::from_fn(|d| {
            let (k, p) = (&self.knots[d], self.degrees[d]);
            (k[p], k[k.len() - 1 - p])
        })
    }

    /// Control point `(i, j, k)` and its weight; `None` outside the net.
    pub fn control_point(&self, i: usize, j: usize, k: usize) -> Option<(Point3<f64>, f64)> {
        let [a, b, c] = self.counts;
        if i >= a || j >= b || k >= c {
            return None;
        }
        let h = self.control[(i * b + j) * c + k];
        Some((Point3::new(h.x / h.w, h.y / h.w, h.z / h.w), h.w))
    }

    /// The parameters clamped into the domain (NaN stays NaN), and the knot spans.
    fn spans(&self, s: [f64; 3]) -> ([f64; 3], [usize; 3]) {
        let dom = self.domain();
        let s: [f64; 3] = std::array::from_fn(|d| s[d].clamp(dom[d].0, dom[d].1));
        let spans = std::array::from_fn(|d| find_span(self.degrees[d], &self.knots[d], s[d]));
        (s, spans)
    }

    /// The point X(u, v, w). Parameters outside the domain are clamped into it; a NaN
    /// parameter gives a NaN point.
    pub fn evaluate(&self, u: f64, v: f64, w: f64) -> Point3<f64> {
        let (s, spans) = self.spans([u, v, w]);
        let b: [Vec<f64>; 3] = std::array::from_fn(|d| {
            basis_functions(spans[d], s[d], self.degrees[d], &self.knots[d])
        });
        let mut a = Vector4::zeros();
        self.for_each_nonzero(spans, |idx, [i, j, k]| {
            a += self.control[idx] * (b[0][i] * b[1][j] * b[2][k]);
        });
        Point3::new(a.x / a.w, a.y / a.w, a.z / a.w)
    }

    /// The point X(u, v, w) and its exact partial derivatives `[dX/du, dX/dv, dX/dw]`
    /// (quotient rule on the homogeneous form, see the module documentation).
    /// Parameters are clamped into the domain as in [`NurbsSolid::evaluate`]; on an
    /// interior knot of multiplicity equal to the degree the derivative is the one of the
    /// span to the right.
    pub fn derivatives(&self, u: f64, v: f64, w: f64) -> (Point3<f64>, [Vector3<f64>; 3]) {
        let (s, spans) = self.spans([u, v, w]);
        let b: [Vec<Vec<f64>>; 3] = std::array::from_fn(|d| {
            basis_function_derivatives(spans[d], s[d], self.degrees[d], &self.knots[d], 1)
        });
        let mut a = Vector4::zeros();
        let mut da = [Vector4::zeros(); 3];
        self.for_each_nonzero(spans, |idx, [i, j, k]| {
            let c = self.control[idx];
            let (nu, nv, nw) = (b[0][0][i], b[1][0][j], b[2][0][k]);
            a += c * (nu * nv * nw);
            da[0] += c * (b[0][1][i] * nv * nw);
            da[1] += c * (nu * b[1][1][j] * nw);
            da[2] += c * (nu * nv * b[2][1][k]);
        });
        let x = Vector3::new(a.x, a.y, a.z) / a.w;
        let d = da.map(|g| (Vector3::new(g.x, g.y, g.z) - x * g.w) / a.w);
        (Point3::from(x), d)
    }

    /// The Jacobian matrix `dX/d(u, v, w)` (columns: the three partial derivatives).
    pub fn jacobian(&self, u: f64, v: f64, w: f64) -> Matrix3<f64> {
        let (_, d) = self.derivatives(u, v, w);
        Matrix3::from_columns(&d)
    }

    /// Calls `f(control index, [a, b, c])` for the control points whose basis functions
    /// are non-zero on `spans`, where a, b, c index the local basis arrays.
    fn for_each_nonzero(&self, spans: [usize; 3], mut f: impl FnMut(usize, [usize; 3])) {
        let [p, q, r] = self.degrees;
        let [_, nv, nw] = self.counts;
        for a in 0..=p {
            let i = spans[0] - p + a;
            for b in 0..=q {
                let j = spans[1] - q + b;
                for c in 0..=r {
                    let k = spans[2] - r + c;
                    f((i * nv + j) * nw + k, [a, b, c]);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A non-uniform clamped knot vector with a double interior knot, for degree 3.
    fn cubic_knots() -> Vec<f64> {
        vec![0.0, 0.0, 0.0, 0.0, 0.7, 1.5, 1.5, 2.2, 3.0, 3.0, 3.0, 3.0]
    }

    #[test]
    fn find_span_matches_the_definition() {
        let k = cubic_knots();
        assert_eq!(find_span(3, &k, 0.0), 3);
        assert_eq!(find_span(3, &k, 0.69), 3);
        assert_eq!(find_span(3, &k, 0.7), 4);
        // The double knot 1.5: the empty span 5 is skipped.
        assert_eq!(find_span(3, &k, 1.5), 6);
        assert_eq!(find_span(3, &k, 2.9), 7);
        assert_eq!(find_span(3, &k, 3.0), 7);
        assert_eq!(find_span(3, &k, 7.0), 7);
        assert_eq!(find_span(3, &k, -1.0), 3);
        for u in [0.0, 0.3, 0.7, 1.0, 1.5, 2.0, 2.2, 2.99] {
            let s = find_span(3, &k, u);
            assert!(k[s] <= u && u < k[s + 1], "u {u} span {s}");
        }
    }

    #[test]
    fn partition_of_unity() {
        for (p, k) in [
            (1, vec![0.0, 0.0, 0.5, 1.0, 1.0]),
            (2, vec![0.0, 0.0, 0.0, 0.2, 0.2, 0.9, 1.0, 1.0, 1.0]),
            (3, cubic_knots()),
        ] {
            let (a, b) = (k[p], k[k.len() - 1 - p]);
            for t in 0..=200 {
                let u = a + (b - a) * t as f64 / 200.0;
                let s = find_span(p, &k, u);
                let n = basis_functions(s, u, p, &k);
                assert_eq!(n.len(), p + 1);
                assert!((n.iter().sum::<f64>() - 1.0).abs() < 1e-14, "p {p} u {u}");
                assert!(n.iter().all(|&x| x >= -1e-15));
                let d = basis_function_derivatives(s, u, p, &k, 2);
                // A2.2 and A2.3 agree; derivatives of a partition of unity sum to zero.
                for j in 0..=p {
                    assert!((d[0][j] - n[j]).abs() < 1e-15);
                }
                assert!(d[1].iter().sum::<f64>().abs() < 1e-12, "p {p} u {u}");
                assert!(d[2].iter().sum::<f64>().abs() < 1e-10, "p {p} u {u}");
            }
        }
    }

    #[test]
    fn known_quadratic_and_cubic_values() {
        // The NURBS Book, example 2.3: U = {0,0,0,1,2,3,4,4,5,5,5}, p = 2, u = 5/2:
        // N_2,2 = 1/8, N_3,2 = 6/8, N_4,2 = 1/8 (span 4).
        let k = [0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0];
        let s = find_span(2, &k, 2.5);
        assert_eq!(s, 4);
        let n = basis_functions(s, 2.5, 2, &k);
        let expect = [0.125, 0.75, 0.125];
        for j in 0..3 {
            assert!((n[j] - expect[j]).abs() < 1e-15);
        }
        // Uniform cubic B-spline at a knot: 1/6, 2/3, 1/6, 0; derivatives -1/2, 0, 1/2, 0
        // and second derivatives 1, -2, 1, 0 (the spline basis on knots 0, 1, 2, ...).
        let k: Vec<f64> = (0..12).map(f64::from).collect();
        let d = basis_function_derivatives(5, 5.0, 3, &k, 3);
        let expect = [
            [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0, 0.0],
            [-0.5, 0.0, 0.5, 0.0],
            [1.0, -2.0, 1.0, 0.0],
        ];
        for (row, e) in d.iter().zip(expect) {
            for j in 0..4 {
                assert!((row[j] - e[j]).abs() < 1e-14, "{d:?}");
            }
        }
        // The third derivative of each cubic piece is constant: -1, 3, -3, 1 for the
        // pieces on [5, 6) of N_2 .. N_5.
        for (j, e) in [-1.0, 3.0, -3.0, 1.0].iter().enumerate() {
            assert!((d[3][j] - e).abs() < 1e-12);
        }
        // Orders above the degree are zero.
        let d = basis_function_derivatives(5, 5.3, 3, &k, 5);
        assert!(d[4].iter().chain(&d[5]).all(|&x| x == 0.0));
    }

    #[test]
    fn basis_derivatives_match_central_differences() {
        // Central differences with h = 1e-6 on knot spans of length >= 0.7: the
        // truncation error h^2/6 |N'''| is below 1e-11 for these cubics (|N'''| < 50),
        // the rounding error about eps / h = 2e-10; 1e-8 leaves a margin of 50 for both.
        // Points stay more than h away from knots so both samples lie on one polynomial
        // piece.
        let h = 1e-6;
        for (p, k) in [
            (1, vec![0.0, 0.0, 0.5, 1.0, 1.0]),
            (2, vec![0.0, 0.0, 0.0, 0.2, 0.2, 0.9, 1.0, 1.0, 1.0]),
            (3, cubic_knots()),
        ] {
            let (a, b) = (k[p], k[k.len() - 1 - p]);
            for t in 1..100 {
                let u = a + (b - a) * (t as f64 + 0.37) / 100.5;
                if k.iter().any(|&x| (x - u).abs() < 10.0 * h) {
                    continue;
                }
                let s = find_span(p, &k, u);
                let d = basis_function_derivatives(s, u, p, &k, 2);
                let (np, nm) = (
                    basis_functions(s, u + h, p, &k),
                    basis_functions(s, u - h, p, &k),
                );
                let d1p = &basis_function_derivatives(s, u + h, p, &k, 1)[1];
                let d1m = &basis_function_derivatives(s, u - h, p, &k, 1)[1];
                for j in 0..=p {
                    let fd = (np[j] - nm[j]) / (2.0 * h);
                    assert!((fd - d[1][j]).abs() < 1e-8, "p {p} u {u} j {j}");
                    let fd2 = (d1p[j] - d1m[j]) / (2.0 * h);
                    assert!((fd2 - d[2][j]).abs() < 1e-6, "p {p} u {u} j {j}");
                }
            }
        }
    }

    #[test]
    fn knot_validation_names_the_direction_and_the_problem() {
        let d = Direction::V;
        assert_eq!(
            validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0]),
            Ok(())
        );
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap_err();
        assert!(matches!(
            e,
            NurbsError::KnotCount {
                direction: Direction::V,
                found: 6,
                expected: 7,
                ..
            }
        ));
        assert!(e
            .to_string()
            .starts_with("v knot vector has 6 knots, expected 7"));
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, 0.5, 0.4, 1.0, 1.0]).unwrap_err();
        assert!(matches!(e, NurbsError::Decreasing { index: 4, .. }), "{e}");
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.1, 0.5, 1.0, 1.0, 1.0]).unwrap_err();
        assert!(
            matches!(
                e,
                NurbsError::NotClamped {
                    end: "first",
                    multiplicity: 2,
                    expected: 3,
                    ..
                }
            ),
            "{e}"
        );
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, 0.5, 0.9, 1.0, 1.0]).unwrap_err();
        assert!(
            matches!(e, NurbsError::NotClamped { end: "last", .. }),
            "{e}"
        );
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]).unwrap_err();
        assert!(
            matches!(
                e,
                NurbsError::NotClamped {
                    end: "first",
                    multiplicity: 4,
                    ..
                }
            ),
            "{e}"
        );
        let e = validate_knots(d, 2, 6, &[0., 0., 0., 0.5, 0.5, 0.5, 1., 1., 1.]).unwrap_err();
        assert!(
            matches!(
                e,
                NurbsError::InteriorMultiplicity {
                    multiplicity: 3,
                    ..
                }
            ),
            "{e}"
        );
        let e = validate_knots(d, 2, 4, &[0.0, 0.0, 0.0, f64::NAN, 1.0, 1.0, 1.0]).unwrap_err();
        assert!(
            matches!(e, NurbsError::NonFiniteKnot { index: 3, .. }),
            "{e}"
        );
        let e = validate_knots(d, 1, 2, &[0.0, 0.0, 0.0, 0.0]).unwrap_err();
        assert!(matches!(e, NurbsError::NotClamped { .. }), "{e}");
        assert!(matches!(
            validate_knots(d, 0, 2, &[0.0, 0.5, 1.0]),
            Err(NurbsError::ZeroDegree { .. })
        ));
        assert!(matches!(
            validate_knots(d, 3, 3, &[0.0; 7]),
            Err(NurbsError::TooFewControlPoints { count: 3, .. })
        ));
    }

    /// Degrees, counts, knots, control points and weights of a solid.
    type SolidParts = (
        [usize; 3],
        [usize; 3],
        [Vec<f64>; 3],
        Vec<Point3<f64>>,
        Vec<f64>,
    );

    /// The unit cube as a trilinear solid (degree 1, 2 x 2 x 2 control points), the base
    /// for the construction errors.
    fn unit_box() -> SolidParts {
        let k = vec![0.0, 0.0, 1.0, 1.0];
        let mut pts = Vec::new();
        for i in 0..2 {
            for j in 0..2 {
                for l in 0..2 {
                    pts.push(Point3::new(i as f64, j as f64, l as f64));
                }
            }
        }
        (
            [1, 1, 1],
            [2, 2, 2],
            [k.clone(), k.clone(), k],
            pts,
            vec![1.0; 8],
        )
    }

    #[test]
    fn construction_errors() {
        let (d, c, k, p, w) = unit_box();
        let s = NurbsSolid::new(d, c, k.clone(), &p, &w).unwrap();
        assert_eq!(s.evaluate(0.25, 0.5, 1.0), Point3::new(0.25, 0.5, 1.0));
        assert_eq!(
            s.control_point(1, 0, 1),
            Some((Point3::new(1.0, 0.0, 1.0), 1.0))
        );
        assert_eq!(s.control_point(2, 0, 0), None);
        assert!(matches!(
            NurbsSolid::new(d, c, k.clone(), &p[..7], &w),
            Err(NurbsError::ControlPointCount {
                found: 7,
                expected: 8,
                ..
            })
        ));
        assert!(matches!(
            NurbsSolid::new(d, c, k.clone(), &p, &w[..5]),
            Err(NurbsError::WeightCount { found: 5, .. })
        ));
        let mut bad = w.clone();
        bad[3] = 0.0;
        assert!(matches!(
            NurbsSolid::new(d, c, k.clone(), &p, &bad),
            Err(NurbsError::BadWeight { index: 3, .. })
        ));
        let mut badp = p.clone();
        badp[6].y = f64::INFINITY;
        assert!(matches!(
            NurbsSolid::new(d, c, k.clone(), &badp, &w),
            Err(NurbsError::NonFiniteControlPoint { index: 6, .. })
        ));
        let mut kw = k.clone();
        kw[2] = vec![0.0, 0.0, 1.0];
        let e = NurbsSolid::new(d, c, kw, &p, &w).unwrap_err();
        assert!(matches!(
            e,
            NurbsError::KnotCount {
                direction: Direction::W,
                ..
            }
        ));
        assert!(matches!(
            NurbsSolid::new(d, [usize::MAX, 2, 2], k, &p, &w),
            Err(NurbsError::KnotCount { .. }) | Err(NurbsError::TooLarge { .. })
        ));
    }

    /// A quarter annulus extruded along z: u runs along the rational quadratic 90-degree
    /// arc (control points (1,0), (1,1), (0,1), weights 1, 1/sqrt 2, 1), v scales the
    /// radius from 1 to 2, w is the height.
    fn quarter_annulus() -> NurbsSolid {
        let arc = [(1.0, 0.0), (1.0, 1.0), (0.0, 1.0)];
        let wa = [1.0, std::f64::consts::FRAC_1_SQRT_2, 1.0];
        let mut pts = Vec::new();
        let mut ws = Vec::new();
        for i in 0..3 {
            for j in 0..2 {
                for l in 0..2 {
                    let r = 1.0 + j as f64;
                    pts.push(Point3::new(r * arc[i].0, r * arc[i].1, l as f64));
                    ws.push(wa[i]);
                }
            }
        }
        let k1 = vec![0.0, 0.0, 1.0, 1.0];
        NurbsSolid::new(
            [2, 1, 1],
            [3, 2, 2],
            [vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0], k1.clone(), k1],
            &pts,
            &ws,
        )
        .unwrap()
    }

    #[test]
    fn rational_quadratic_arc_is_an_exact_circle() {
        let s = quarter_annulus();
        for t in 0..=100 {
            let u = t as f64 / 100.0;
            for (v, w) in [(0.0, 0.0), (0.3, 0.5), (1.0, 1.0)] {
                let x = s.evaluate(u, v, w);
                let r = 1.0 + v;
                assert!(((x.x * x.x + x.y * x.y).sqrt() - r).abs() < 1e-14, "u {u}");
                assert!((x.z - w).abs() < 1e-15);
                assert!(x.x >= 0.0 && x.y >= 0.0);
                // The arc's tangent is perpendicular to the radius.
                let (_, d) = s.derivatives(u, v, w);
                assert!(d[0].dot(&x.coords.xy().push(0.0)).abs() < 1e-13 * d[0].norm());
            }
        }
        // The midpoint of the arc is at 45 degrees.
        let m = s.evaluate(0.5, 0.0, 0.0);
        assert!((m.x - m.y).abs() < 1e-15);
        // Out-of-domain parameters are clamped; NaN gives NaN.
        assert_eq!(s.evaluate(-3.0, 0.0, 0.0), s.evaluate(0.0, 0.0, 0.0));
        assert!(s.evaluate(f64::NAN, 0.0, 0.0).x.is_nan());
    }

    #[test]
    fn rational_derivatives_match_central_differences() {
        // A solid with uneven weights and degrees (2, 3, 1) on non-uniform knots, so that
        // the quotient rule matters in every direction.
        let ku = vec![0.0, 0.0, 0.0, 0.4, 1.0, 1.0, 1.0];
        let kv = cubic_knots();
        let kw = vec![0.0, 0.0, 0.5, 1.0, 1.0];
        let counts = [4, 8, 3];
        let mut pts = Vec::new();
        let mut ws = Vec::new();
        for i in 0..4 {
            for j in 0..8 {
                for l in 0..3 {
                    let (a, b, c) = (i as f64, j as f64, l as f64);
                    pts.push(Point3::new(
                        a + 0.3 * (b * 0.7).sin(),
                        0.5 * b + 0.2 * (a * c).cos(),
                        c + 0.1 * a * b,
                    ));
                    ws.push(0.5 + 0.4 * ((a + 2.0 * b + 3.0 * c) * 0.9).sin().abs());
                }
            }
        }
        let s = NurbsSolid::new([2, 3, 1], counts, [ku, kv, kw], &pts, &ws).unwrap();
        // Central differences, h = 1e-6 in parameters of unit order on coordinates of
        // order 10: truncation h^2/6 |X'''| ~ 1e-11, rounding ~ 10 eps / h ~ 2e-9; the
        // tolerance 1e-7 relative to |dX| + 1 covers both.
        let h = 1e-6;
        for &(u, v, w) in &[
            (0.13, 0.41, 0.27),
            (0.61, 1.93, 0.74),
            (0.87, 2.71, 0.11),
            (0.33, 1.21, 0.93),
        ] {
            let (x, d) = s.derivatives(u, v, w);
            assert!((x - s.evaluate(u, v, w)).norm() < 1e-13);
            let p = [u, v, w];
            for (k, dk) in d.iter().enumerate() {
                let (mut a, mut b) = (p, p);
                a[k] += h;
                b[k] -= h;
                let fd = (s.evaluate(a[0], a[1], a[2]) - s.evaluate(b[0], b[1], b[2])) / (2.0 * h);
                assert!(
                    (fd - dk).norm() < 1e-7 * (dk.norm() + 1.0),
                    "direction {k} at {p:?}: {fd} vs {dk}"
                );
            }
            let j = s.jacobian(u, v, w);
            assert_eq!(j.column(2).into_owned(), d[2]);
        }
    }

    #[test]
    fn helpers() {
        assert_eq!(
            clamped_uniform_knots(2, 5),
            vec![0.0, 0.0, 0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0, 1.0, 1.0]
        );
        assert!(clamped_uniform_knots(3, 3).is_empty());
        assert_eq!(
            validate_knots(Direction::W, 3, 7, &clamped_uniform_knots(3, 7)),
            Ok(())
        );
        let g = greville_abscissae(2, &clamped_uniform_knots(2, 5));
        let expect = [0.0, 1.0 / 6.0, 0.5, 5.0 / 6.0, 1.0];
        assert_eq!(g.len(), 5);
        for (a, b) in g.iter().zip(expect) {
            assert!((a - b).abs() < 1e-15);
        }
    }
}
