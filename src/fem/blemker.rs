//! Active skeletal muscle: the transversely isotropic, compressible Blemker material
//! with activation, its first Piola-Kirchhoff stress and tangent, and the inversion-robust
//! evaluation of Irving, Teran and Fedkiw.
//!
//! # The material (SI units)
//! With J = det F, C = F^T F, I1 = tr C, the rest fibre direction a (unit), the deviatoric
//! invariant I~1 = J^(-2/3) I1 and the deviatoric fibre stretch l = J^(-1/3) |F a|:
//!
//! W = mu/2 (I~1 - 3) + W_f(l; alpha) + kappa/2 (ln J)^2,
//!
//! where the fibre term is defined by its stress (Blemker, Pinsky and Delp 2005, "A 3D
//! model of muscle reveals the causes of nonuniform strains in the biceps brachii", as in
//! FEBio and ArtiSynth): with x = l / l_opt,
//! l dW_f/dl = sigma_max (alpha f_L(x) + f_P(x)) x, so dW_f/dl = sigma_max / l_opt
//! (alpha f_L(x) + f_P(x)), and W_f is its integral from x = 0 ([`active_integral`],
//! [`passive_integral`]). f_L is the active tension-length curve (Blemker's piecewise
//! quadratics, zero outside [0.4, 1.6]), f_P the passive exponential P1 (e^{P2 (x - 1)} - 1)
//! for 1 < x < x* = lambda*/l_opt, continued linearly (value and slope) beyond x*.
//!
//! # Stress and tangent (chain rule through the three invariants)
//! P = mu/2 dI~1/dF + W_f'(l) dl/dF + kappa ln J F^-T, with
//! - dI~1/dF = J^(-2/3) 2F - 2/3 I~1 F^-T,
//! - dl/dF = J^(-1/3) (F a) a^T / |F a| - l/3 F^-T,
//! - d(ln J)/dF = F^-T, d(F^-T)\[dF\] = -F^-T dF^T F^-T.
//!
//! So the fibre stress is projected by the deviatoric split (an activated fibre also
//! pulls on the volume term slightly): this is the compressible model, not an
//! incompressible approximation. The unit tests check W, P and dP against finite
//! differences of W and P.
//!
//! # Inverted elements (Irving, Teran, Fedkiw 2004, "Invertible finite elements for
//! robust simulation of large deformation")
//! ln J is undefined for J <= 0, and palpation can invert tets. When the smallest
//! singular value of F falls below [`INVERSION_THRESHOLD`], F is diagonalized as
//! F = U F^ V^T with rotations U, V (the smallest singular value carries the sign of
//! det F), the singular values are clamped at the threshold, and the stress is
//! P = U P(F^_clamped; V^T a) V^T: the material is rotation invariant on the left, and the
//! fibre direction turns with V on the right. The forces then push an inverted element
//! back. Above the threshold (every uninverted state of normal use) the exact formulas
//! run and no SVD is computed: the test `J / |cof F| >= threshold` proves the smallest
//! singular value is above it, since sigma_min = J / (sigma_1 sigma_2) and the Frobenius
//! norm of the cofactor matrix cof F = J F^-T is at least sigma_1 sigma_2 (it is
//! sqrt(s1^2 s2^2 + s1^2 s3^2 + s2^2 s3^2)); the cofactor is needed anyway for F^-T. The
//! tangent of a clamped element holds U and V fixed (Irving et al. Sec. 5 do the same
//! for their stiffness): it is an approximation used only by the Newton matrix, computed
//! from one SVD as U (dP^/dF^) V^T applied to the rotated unit differentials.
//!
//! # Cost
//! The cubature evaluates the stress and the tangent of a few hundred tets per haptic
//! cycle ([`TetMaterial::first_pk_and_tangent`]): both come from one set of invariants
//! (one logarithm, with J^(-1/3) = exp(-ln J / 3), and the passive curve's exponential),
//! the tangent is a
//! fixed number of rank-one updates plus the F^-T dF^T F^-T operator, and nothing is
//! allocated.

use nalgebra::{Matrix3, Vector3};

use crate::fem::TetMaterial;

/// Singular values of F below this are clamped (Irving et al. 2004). Palpation in normal
/// use compresses far less than this; it only matters once a tet degenerates or inverts.
pub const INVERSION_THRESHOLD: f64 = 0.1;

/// Parameters of the fibre material (SI units). [`FibreParams::default`] holds the
/// defaults of the muscle scenes and experiments (docs/muscle.md lists them).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FibreParams {
    /// Peak isometric fibre stress sigma_max (Pa).
    pub sigma_max: f64,
    /// Optimal fibre stretch l_opt (file key `lambda_opt`).
    pub lambda_opt: f64,
    /// Shear modulus of the isotropic matrix mu (Pa).
    pub mu: f64,
    /// Bulk modulus kappa (Pa).
    pub kappa: f64,
    /// Passive exponential scale P1 (dimensionless, times sigma_max).
    pub p1: f64,
    /// Passive exponential rate P2.
    pub p2: f64,
    /// Stretch lambda* at which the passive curve turns linear (a stretch, not a
    /// normalized one).
    pub lambda_star: f64,
}

impl Default for FibreParams {
    fn default() -> Self {
        FibreParams {
            sigma_max: 3.0e5,
            lambda_opt: 1.0,
            mu: 1.0e3,
            kappa: 1.0e7,
            p1: 0.05,
            p2: 6.6,
            lambda_star: 1.4,
        }
    }
}

impl FibreParams {
    /// Our tendon and aponeurosis defaults (the literature pins only the muscle here):
    /// a matrix 50x stiffer in shear and a passive fibre curve that stiffens early and
    /// steeply, never activated. Tendon in vivo is far stiffer still (E ~ 1 GPa); these
    /// values keep it nearly inextensible on the scale of a palpation while the reduced
    /// model stays well conditioned at 1 kHz.
    pub fn tendon() -> Self {
        FibreParams {
            sigma_max: 3.0e5,
            lambda_opt: 1.0,
            mu: 5.0e4,
            kappa: 1.0e7,
            p1: 2.0,
            p2: 10.0,
            lambda_star: 1.05,
        }
    }

    /// Checks every parameter: finite, moduli positive (sigma_max, p1 non-negative),
    /// lambda_opt positive, lambda_star > lambda_opt. The error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        let checks: [(&'static str, f64, bool, &'static str); 7] = [
            (
                "sigma_max",
                self.sigma_max,
                self.sigma_max >= 0.0,
                "a stress >= 0 Pa",
            ),
            (
                "lambda_opt",
                self.lambda_opt,
                self.lambda_opt > 0.0,
                "a stretch > 0",
            ),
            ("mu", self.mu, self.mu > 0.0, "a shear modulus > 0 Pa"),
            (
                "kappa",
                self.kappa,
                self.kappa > 0.0,
                "a bulk modulus > 0 Pa",
            ),
            ("p1", self.p1, self.p1 >= 0.0, "a passive scale >= 0"),
            ("p2", self.p2, self.p2 > 0.0, "a passive rate > 0"),
            (
                "lambda_star",
                self.lambda_star,
                self.lambda_star > self.lambda_opt,
                "a stretch greater than lambda_opt",
            ),
        ];
        for (key, value, ok, expected) in checks {
            if !value.is_finite() || !ok {
                return Err(ParamError {
                    key,
                    value,
                    expected,
                });
            }
        }
        Ok(())
    }

    /// x* = lambda* / l_opt, where the passive curve turns linear.
    #[inline(always)]
    pub(crate) fn x_star(&self) -> f64 {
        self.lambda_star / self.lambda_opt
    }

    /// dW_f/dl and d2W_f/dl2 at deviatoric fibre stretch `l` and activation `alpha`.
    #[inline(always)]
    pub(crate) fn fibre_derivatives(&self, l: f64, alpha: f64) -> (f64, f64) {
        let x = l / self.lambda_opt;
        let (fl, dfl) = active_force_length(x);
        let (fp, dfp) = passive_force_length(x, self.p1, self.p2, self.x_star());
        let s = self.sigma_max / self.lambda_opt;
        (
            s * (alpha * fl + fp),
            s / self.lambda_opt * (alpha * dfl + dfp),
        )
    }

    /// Fibre energy W_f(l) = sigma_max (alpha int_0^x f_L + int_0^x f_P).
    pub(crate) fn fibre_energy(&self, l: f64, alpha: f64) -> f64 {
        let x = l / self.lambda_opt;
        self.sigma_max
            * (alpha * active_integral(x) + passive_integral(x, self.p1, self.p2, self.x_star()))
    }

    /// The fibre stress l dW_f/dl = sigma_max (alpha f_L(x) + f_P(x)) x, as docs/muscle.md
    /// defines it.
    pub fn fibre_stress(&self, l: f64, alpha: f64) -> f64 {
        l * self.fibre_derivatives(l, alpha).0
    }
}

/// A material parameter outside its range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{key}` = {value}: expected {expected}")]
pub struct ParamError {
    /// The file key.
    pub key: &'static str,
    /// The offending value.
    pub value: f64,
    /// What was expected.
    pub expected: &'static str,
}

/// Blemker's active force-length curve f_L(x) and its derivative.
#[inline(always)]
pub(crate) fn active_force_length(x: f64) -> (f64, f64) {
    if (0.4..=0.6).contains(&x) {
        (9.0 * (x - 0.4).powi(2), 18.0 * (x - 0.4))
    } else if x > 0.6 && x < 1.4 {
        (1.0 - 4.0 * (1.0 - x).powi(2), 8.0 * (1.0 - x))
    } else if (1.4..=1.6).contains(&x) {
        (9.0 * (x - 1.6).powi(2), 18.0 * (x - 1.6))
    } else {
        (0.0, 0.0)
    }
}

/// int_0^x f_L(s) ds.
pub fn active_integral(x: f64) -> f64 {
    const A: f64 = 0.024; // int over [0.4, 0.6] = 3 (0.2)^3
    let mid = |x: f64| x + 4.0 / 3.0 * (1.0 - x).powi(3) - (0.6 + 4.0 / 3.0 * 0.4f64.powi(3));
    if x < 0.4 {
        0.0
    } else if x <= 0.6 {
        3.0 * (x - 0.4).powi(3)
    } else if x < 1.4 {
        A + mid(x)
    } else if x <= 1.6 {
        A + mid(1.4) + 3.0 * (x - 1.6).powi(3) + A
    } else {
        2.0 * A + mid(1.4)
    }
}

/// Blemker's passive fibre curve f_P(x) and its derivative: zero for x <= 1,
/// P1 (e^{P2 (x - 1)} - 1) up to x*, then linear with value and slope continuous at x*.
#[inline(always)]
pub(crate) fn passive_force_length(x: f64, p1: f64, p2: f64, x_star: f64) -> (f64, f64) {
    if x <= 1.0 {
        (0.0, 0.0)
    } else if x < x_star {
        let e = (p2 * (x - 1.0)).exp();
        (p1 * (e - 1.0), p1 * p2 * e)
    } else {
        let e = (p2 * (x_star - 1.0)).exp();
        let (f, s) = (p1 * (e - 1.0), p1 * p2 * e);
        (f + s * (x - x_star), s)
    }
}

/// int_0^x f_P(s) ds.
pub fn passive_integral(x: f64, p1: f64, p2: f64, x_star: f64) -> f64 {
    let exp_part = |x: f64| p1 * (((p2 * (x - 1.0)).exp() - 1.0) / p2 - (x - 1.0));
    if x <= 1.0 {
        0.0
    } else if x < x_star {
        exp_part(x)
    } else {
        let (f, s) = passive_force_length(x_star, p1, p2, x_star);
        let d = x - x_star;
        exp_part(x_star) + f * d + 0.5 * s * d * d
    }
}

/// The invariants of F that the material needs, with F^-T.
struct Kinematics {
    f_inv_t: Matrix3<f64>,
    ln_j: f64,
    /// J^(-2/3)
    j23: f64,
    /// I~1
    i1_bar: f64,
    /// F a
    fa: Vector3<f64>,
    /// |F a|
    lam: f64,
    /// l = J^(-1/3) |F a|
    l: f64,
}

impl Kinematics {
    /// The invariants of F, with F^-T = cof F / J from the columns' cross products;
    /// `None` when F is not certainly above the inversion threshold (the caller
    /// diagonalizes), i.e. when J <= 0 or J < threshold x |cof F| (module docs).
    #[inline(always)]
    fn new(f: &Matrix3<f64>, a: &Vector3<f64>) -> Option<Self> {
        let cof = cofactor(f);
        let j = f.column(0).dot(&cof.column(0));
        // j >= threshold |cof F|, squared (j > 0 first): no square root.
        let t2 = INVERSION_THRESHOLD * INVERSION_THRESHOLD;
        if !(j > 0.0 && j.is_finite() && j * j >= t2 * cof.norm_squared()) {
            return None;
        }
        Some(Self::with_cofactor(f, a, j, &cof))
    }

    /// The invariants of an F known to have J > 0 (a clamped diagonal one).
    #[inline]
    fn positive(f: &Matrix3<f64>, a: &Vector3<f64>) -> Option<Self> {
        let cof = cofactor(f);
        let j = f.column(0).dot(&cof.column(0));
        (j > 0.0 && j.is_finite()).then(|| Self::with_cofactor(f, a, j, &cof))
    }

    #[inline(always)]
    fn with_cofactor(f: &Matrix3<f64>, a: &Vector3<f64>, j: f64, cof: &Matrix3<f64>) -> Self {
        // J^(-1/3) from ln J, which the volume term needs anyway (one exp instead of a
        // cube root).
        let ln_j = j.ln();
        let j13 = (-ln_j / 3.0).exp();
        let j23 = j13 * j13;
        let fa = f * a;
        let lam = fa.norm();
        Kinematics {
            f_inv_t: cof * (1.0 / j),
            ln_j,
            j23,
            i1_bar: j23 * f.norm_squared(),
            l: j13 * lam,
            fa,
            lam,
        }
    }
}

/// The cofactor matrix cof F = det F F^-T: its columns are the cross products of F's
/// columns (f2 x f3, f3 x f1, f1 x f2), so det F = f1 . (f2 x f3).
#[inline(always)]
fn cofactor(f: &Matrix3<f64>) -> Matrix3<f64> {
    let (c0, c1, c2) = (f.column(0), f.column(1), f.column(2));
    Matrix3::from_columns(&[c1.cross(&c2), c2.cross(&c0), c0.cross(&c1)])
}

/// W(F) for parameters `p`, activation `alpha` and unit fibre `a` (exact path; det F > 0).
pub fn energy_density(p: &FibreParams, alpha: f64, a: &Vector3<f64>, f: &Matrix3<f64>) -> f64 {
    match Kinematics::positive(f, a) {
        Some(k) => {
            0.5 * p.mu * (k.i1_bar - 3.0)
                + p.fibre_energy(k.l, alpha)
                + 0.5 * p.kappa * k.ln_j * k.ln_j
        }
        None => f64::INFINITY,
    }
}

/// P(F) by the exact formulas (det F > 0 required; `None` otherwise): the tests'
/// reference for the clamped branch.
#[cfg(test)]
fn first_pk_exact(
    p: &FibreParams,
    alpha: f64,
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
) -> Option<Matrix3<f64>> {
    let k = Kinematics::positive(f, a)?;
    Some(stress_with(p, &k, p.fibre_derivatives(k.l, alpha).0, a, f))
}

/// P given the kinematics of F and W_f' at its fibre stretch.
#[inline(always)]
fn stress_with(
    p: &FibreParams,
    k: &Kinematics,
    wf: f64,
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
) -> Matrix3<f64> {
    let d_i1 = f * (2.0 * k.j23) - k.f_inv_t * (2.0 / 3.0 * k.i1_bar);
    let d_l = if k.lam > 0.0 {
        k.fa * a.transpose() * (k.l / (k.lam * k.lam)) - k.f_inv_t * (k.l / 3.0)
    } else {
        Matrix3::zeros()
    };
    d_i1 * (0.5 * p.mu) + d_l * wf + k.f_inv_t * (p.kappa * k.ln_j)
}

/// P and the 9x9 tangent dP/dF by the exact formulas, in closed form: four rank-one
/// terms, the operator dF -> F^-T dF^T F^-T and two diagonal-like ones, the same
/// differentials as [`differential_with`] written as matrices (the test
/// `tangent_matrix_equals_the_differentials` holds them equal). Index `3 j + i` is entry
/// (i, j) (column-major `vec`). Plain arrays, no allocation: the cubature calls it for
/// every point at the haptic rate.
#[inline(always)]
fn stress_and_tangent_with(
    p: &FibreParams,
    alpha: f64,
    k: &Kinematics,
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
) -> (Matrix3<f64>, nalgebra::SMatrix<f64, 9, 9>) {
    let h = &k.f_inv_t;
    let vh: [f64; 9] = std::array::from_fn(|i| h.as_slice()[i]);
    let vf: [f64; 9] = std::array::from_fn(|i| f.as_slice()[i]);
    let half_mu = 0.5 * p.mu;
    // D1 = dI~1/dF and the stress without the fibre.
    let d1: [f64; 9] = std::array::from_fn(|i| 2.0 * k.j23 * vf[i] - 2.0 / 3.0 * k.i1_bar * vh[i]);
    let mut pk: [f64; 9] = std::array::from_fn(|i| half_mu * d1[i] + p.kappa * k.ln_j * vh[i]);
    // The rank-one terms, grouped by their left vector (each sum below is the derivation
    // term by term: volumetric kappa vec(H) vec(H)^T; isochoric (mu/2) [-(4/3) j23
    // vec(F) vec(H)^T - (2/3) vec(H) vec(D1)^T]; fibre wff vec(Dl) vec(Dl)^T + wf
    // [-(m/3) vec(L) vec(H)^T - (m/lam) vec(L) vec(L)^T - (1/3) vec(H) vec(Dl)^T], with
    // L = (F a) a^T / lam, Dl = m L - (l/3) H, m = J^(-1/3)):
    // - vec(H) (kappa vec(H) - (mu/3) vec(D1) - (wf/3) vec(Dl))^T,
    // - vec(F) (-(2/3) mu j23 vec(H))^T,
    // - vec(L) (-(wf m/3) vec(H) - (wf m/lam) vec(L))^T,
    // - vec(Dl) (wff vec(Dl))^T.
    let mut y_h: [f64; 9] = std::array::from_fn(|i| p.kappa * vh[i] - p.mu / 3.0 * d1[i]);
    let y_f: [f64; 9] = std::array::from_fn(|i| -2.0 / 3.0 * p.mu * k.j23 * vh[i]);
    // Every multiple of the operator T_inv[(a,b),(d,c)] = H_ac H_db (dF -> H dF^T H, so
    // d(F^-T)[dF] = -T_inv dF), collected: volumetric and isochoric here, fibre below.
    let mut c_inv = -p.kappa * k.ln_j + half_mu * 2.0 / 3.0 * k.i1_bar;
    let diag = half_mu * 2.0 * k.j23;
    let mut fibre = None;
    if k.lam > 0.0 {
        let (wf, wff) = p.fibre_derivatives(k.l, alpha);
        let m = k.l / k.lam;
        let big_l: [f64; 9] = std::array::from_fn(|i| k.fa[i % 3] * a[i / 3] / k.lam);
        let dl: [f64; 9] = std::array::from_fn(|i| m * big_l[i] - k.l / 3.0 * vh[i]);
        for i in 0..9 {
            pk[i] += wf * dl[i];
            y_h[i] -= wf / 3.0 * dl[i];
        }
        let y_l: [f64; 9] = std::array::from_fn(|i| -wf * m * (vh[i] / 3.0 + big_l[i] / k.lam));
        let y_dl: [f64; 9] = std::array::from_fn(|i| wff * dl[i]);
        c_inv += wf * k.l / 3.0;
        // A[dF] = dF a a^T / lam, with weight wf m / lam.
        fibre = Some((big_l, y_l, dl, y_dl, wf * m / k.lam));
    }
    // Column-major: t[col][row].
    let mut t = [[0.0f64; 9]; 9];
    for (col, tc) in t.iter_mut().enumerate() {
        for (row, v) in tc.iter_mut().enumerate() {
            *v = vh[row] * y_h[col] + vf[row] * y_f[col];
        }
    }
    if let Some((big_l, y_l, dl, y_dl, _)) = &fibre {
        for (col, tc) in t.iter_mut().enumerate() {
            for (row, v) in tc.iter_mut().enumerate() {
                *v += big_l[row] * y_l[col] + dl[row] * y_dl[col];
            }
        }
    }
    // T_inv: row (a, b) = 3b + a, column (d, c) = 3c + d: H_ac H_db.
    for c in 0..3 {
        for d in 0..3 {
            let tc = &mut t[3 * c + d];
            for b in 0..3 {
                let hdb = c_inv * h[(d, b)];
                for a2 in 0..3 {
                    tc[3 * b + a2] += h[(a2, c)] * hdb;
                }
            }
            // A[dF]_(r,s) = sum_c dF_rc a_c a_s / lam: for dF = E_dc, row (d, s).
            if let Some((.., fibre_a)) = fibre {
                for s2 in 0..3 {
                    tc[3 * s2 + d] += fibre_a * a[c] * a[s2];
                }
            }
        }
    }
    for (i, tc) in t.iter_mut().enumerate() {
        tc[i] += diag;
    }
    (
        Matrix3::from_column_slice(&pk),
        nalgebra::SMatrix::from_data(nalgebra::ArrayStorage(t)),
    )
}

/// dP[dF] given the kinematics of F and (W_f', W_f'') at its fibre stretch.
#[inline]
fn differential_with(
    p: &FibreParams,
    k: &Kinematics,
    (wf, wff): (f64, f64),
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
    df: &Matrix3<f64>,
) -> Matrix3<f64> {
    let fit = &k.f_inv_t;
    let tr = fit.dot(df); // d ln J = F^-T : dF
    let d_fit = -(fit * df.transpose() * fit);
    // Volumetric.
    let d_vol = (fit * tr + d_fit * k.ln_j) * p.kappa;
    // Isochoric matrix: D1 = 2 j23 F - 2/3 I~1 F^-T.
    let d_i1 = f * (2.0 * k.j23) - fit * (2.0 / 3.0 * k.i1_bar);
    let di1 = d_i1.dot(df);
    let dj23 = -2.0 / 3.0 * k.j23 * tr;
    let d_d1 = f * (2.0 * dj23) + df * (2.0 * k.j23) - (fit * di1 + d_fit * k.i1_bar) * (2.0 / 3.0);
    let d_iso = d_d1 * (0.5 * p.mu);
    // Fibre: Dl = m Lambda - l/3 F^-T, Lambda = (F a) a^T / lam, m = J^(-1/3).
    let d_fib = if k.lam > 0.0 {
        let m = k.l / k.lam;
        let big_l = k.fa * a.transpose() / k.lam;
        let d_l = big_l * m - fit * (k.l / 3.0);
        let dl = d_l.dot(df);
        let dlam = k.fa.dot(&(df * a)) / k.lam;
        let d_big_l = (df * a) * a.transpose() / k.lam - big_l * (dlam / k.lam);
        let dm = -m / 3.0 * tr;
        let d_dl = big_l * dm + d_big_l * m - (fit * dl + d_fit * k.l) / 3.0;
        d_l * (wff * dl) + d_dl * wf
    } else {
        Matrix3::zeros()
    };
    d_iso + d_fib + d_vol
}

/// The signed diagonalization F = U diag(s) V^T with det U = det V = 1 and the sign of
/// det F on the smallest singular value (Irving et al. 2004, Sec. 4).
fn signed_svd(f: &Matrix3<f64>) -> (Matrix3<f64>, Vector3<f64>, Matrix3<f64>) {
    let svd = f.svd(true, true);
    let mut u = svd.u.unwrap_or_else(Matrix3::identity);
    let mut v = svd.v_t.unwrap_or_else(Matrix3::identity).transpose();
    let mut s = svd.singular_values;
    // Order descending (nalgebra sorts, but be explicit about the last one).
    let imin = s.imin();
    if u.determinant() < 0.0 {
        u.column_mut(imin).neg_mut();
        s[imin] = -s[imin];
    }
    if v.determinant() < 0.0 {
        v.column_mut(imin).neg_mut();
        s[imin] = -s[imin];
    }
    (u, s, v)
}

/// Where the material is evaluated for one F: F itself by the exact formulas (F
/// certainly above the inversion threshold, or found so by its SVD), or the clamped
/// diagonal frame F^ = diag(max(s, threshold)) of F = U diag(s) V^T with the fibre
/// turned to V^T a, whose results are rotated back by U (.) V^T.
struct Frame {
    k: Kinematics,
    f: Matrix3<f64>,
    a: Vector3<f64>,
    /// (U, V) of the clamped frame; `None` for the exact formulas.
    rotation: Option<(Matrix3<f64>, Matrix3<f64>)>,
}

impl Frame {
    /// `None` only for a non-finite F.
    #[inline]
    fn new(f: &Matrix3<f64>, a: &Vector3<f64>) -> Option<Self> {
        let exact = |k| Frame {
            k,
            f: *f,
            a: *a,
            rotation: None,
        };
        if let Some(k) = Kinematics::new(f, a) {
            return Some(exact(k));
        }
        if !f.iter().all(|x| x.is_finite()) {
            return None;
        }
        let (u, s, v) = signed_svd(f);
        if s.min() >= INVERSION_THRESHOLD {
            if let Some(k) = Kinematics::positive(f, a) {
                return Some(exact(k));
            }
        }
        let f_hat = Matrix3::from_diagonal(&s.map(|x| x.max(INVERSION_THRESHOLD)));
        let a_hat = v.transpose() * a;
        let k = Kinematics::positive(&f_hat, &a_hat)?;
        Some(Frame {
            k,
            f: f_hat,
            a: a_hat,
            rotation: Some((u, v)),
        })
    }

    /// A differential of F into this frame: U^T dF V.
    #[inline]
    fn rotate_in(&self, df: &Matrix3<f64>) -> Matrix3<f64> {
        match &self.rotation {
            Some((u, v)) => u.transpose() * df * v,
            None => *df,
        }
    }

    /// A stress (or its differential) out of this frame: U P V^T.
    #[inline]
    fn rotate_out(&self, m: Matrix3<f64>) -> Matrix3<f64> {
        match &self.rotation {
            Some((u, v)) => u * m * v.transpose(),
            None => m,
        }
    }
}

/// P(F) robust to inversion: the exact formula above the threshold, the clamped
/// diagonalization of Irving et al. below it.
#[inline(always)]
pub fn first_pk(p: &FibreParams, alpha: f64, a: &Vector3<f64>, f: &Matrix3<f64>) -> Matrix3<f64> {
    // The usual case first, without the frame's copies (the cubature calls this for
    // every point at the haptic rate).
    if let Some(k) = Kinematics::new(f, a) {
        let wf = p.fibre_derivatives(k.l, alpha).0;
        return stress_with(p, &k, wf, a, f);
    }
    match Frame::new(f, a) {
        Some(fr) => {
            let wf = p.fibre_derivatives(fr.k.l, alpha).0;
            fr.rotate_out(stress_with(p, &fr.k, wf, &fr.a, &fr.f))
        }
        None => Matrix3::zeros(),
    }
}

/// dP\[dF\], consistent with [`first_pk`] (exact above the threshold; with U, V held fixed
/// below it).
pub fn first_pk_differential(
    p: &FibreParams,
    alpha: f64,
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
    df: &Matrix3<f64>,
) -> Matrix3<f64> {
    match Frame::new(f, a) {
        Some(fr) => {
            let fib = p.fibre_derivatives(fr.k.l, alpha);
            let d = differential_with(p, &fr.k, fib, &fr.a, &fr.f, &fr.rotate_in(df));
            fr.rotate_out(d)
        }
        None => Matrix3::zeros(),
    }
}

/// P(F) and the 9x9 tangent dP/dF, consistent with [`first_pk`] and
/// [`first_pk_differential`]: in the clamped frame, column E_ij of the tangent is
/// U T^[U^T E_ij V] V^T with T^ the exact tangent at F^.
#[inline(always)]
pub fn first_pk_and_tangent(
    p: &FibreParams,
    alpha: f64,
    a: &Vector3<f64>,
    f: &Matrix3<f64>,
) -> (Matrix3<f64>, nalgebra::SMatrix<f64, 9, 9>) {
    let Some(fr) = Frame::new(f, a) else {
        return (Matrix3::zeros(), nalgebra::SMatrix::zeros());
    };
    let (pk, t_hat) = stress_and_tangent_with(p, alpha, &fr.k, &fr.a, &fr.f);
    if fr.rotation.is_none() {
        return (pk, t_hat);
    }
    let mut t = nalgebra::SMatrix::<f64, 9, 9>::zeros();
    for j in 0..3 {
        for i in 0..3 {
            let mut e_ij = Matrix3::zeros();
            e_ij[(i, j)] = 1.0;
            let df_hat = fr.rotate_in(&e_ij);
            let dp_hat = Matrix3::from_column_slice(
                (t_hat * nalgebra::SVector::<f64, 9>::from_column_slice(df_hat.as_slice()))
                    .as_slice(),
            );
            t.column_mut(3 * j + i)
                .copy_from_slice(fr.rotate_out(dp_hat).as_slice());
        }
    }
    (fr.rotate_out(pk), t)
}

/// The muscle material of a tet mesh: a parameter set per material group (muscle,
/// tendon), a fibre direction per element, and one run-time activation shared by the
/// active groups.
#[derive(Debug, Clone)]
pub struct MuscleMaterial {
    /// Parameters of every group.
    pub groups: Vec<FibreParams>,
    /// Whether a group's fibres contract with the activation (muscle) or stay passive
    /// (tendon).
    pub active: Vec<bool>,
    /// Group of every element.
    pub element_group: Vec<usize>,
    /// Unit rest fibre direction of every element.
    pub fibres: Vec<Vector3<f64>>,
    /// Activation alpha in [0, 1].
    pub activation: f64,
}

impl MuscleMaterial {
    /// One active group with uniform fibres `a` on `num_elements` elements.
    pub fn uniform(params: FibreParams, a: Vector3<f64>, num_elements: usize) -> Self {
        MuscleMaterial {
            groups: vec![params],
            active: vec![true],
            element_group: vec![0; num_elements],
            fibres: vec![a.normalize(); num_elements],
            activation: 0.0,
        }
    }

    #[inline]
    fn params(&self, e: usize) -> (&FibreParams, f64) {
        let g = self.element_group[e];
        let alpha = if self.active[g] { self.activation } else { 0.0 };
        (&self.groups[g], alpha)
    }
}

/// An activation outside [0, 1] (or not a number).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("activation {0} is outside [0, 1]")]
pub struct ActivationError(pub f64);

/// Checks an activation value: finite and in [0, 1].
pub fn check_activation(alpha: f64) -> Result<f64, ActivationError> {
    if alpha.is_finite() && (0.0..=1.0).contains(&alpha) {
        Ok(alpha)
    } else {
        Err(ActivationError(alpha))
    }
}

impl TetMaterial for MuscleMaterial {
    fn energy_density(&self, e: usize, f: &Matrix3<f64>) -> f64 {
        let (p, alpha) = self.params(e);
        energy_density(p, alpha, &self.fibres[e], f)
    }
    #[inline(always)]
    fn first_pk(&self, e: usize, f: &Matrix3<f64>) -> Matrix3<f64> {
        let (p, alpha) = self.params(e);
        first_pk(p, alpha, &self.fibres[e], f)
    }
    fn first_pk_differential(&self, e: usize, f: &Matrix3<f64>, df: &Matrix3<f64>) -> Matrix3<f64> {
        let (p, alpha) = self.params(e);
        first_pk_differential(p, alpha, &self.fibres[e], f, df)
    }
    fn first_pk_tangent(&self, e: usize, f: &Matrix3<f64>) -> nalgebra::SMatrix<f64, 9, 9> {
        self.first_pk_and_tangent(e, f).1
    }
    #[inline(always)]
    fn first_pk_and_tangent(
        &self,
        e: usize,
        f: &Matrix3<f64>,
    ) -> (Matrix3<f64>, nalgebra::SMatrix<f64, 9, 9>) {
        let (p, alpha) = self.params(e);
        first_pk_and_tangent(p, alpha, &self.fibres[e], f)
    }
    /// Clamps to [0, 1] (the caller validates user input with [`check_activation`]).
    fn set_activation(&mut self, alpha: f64) {
        self.activation = if alpha.is_finite() {
            alpha.clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    fn activation(&self) -> f64 {
        self.activation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_f(seed: usize, amp: f64) -> Matrix3<f64> {
        Matrix3::from_fn(|i, j| {
            let t = (seed * 9 + i * 3 + j) as f64;
            (if i == j { 1.0 } else { 0.0 }) + amp * (1.7 * t).sin()
        })
    }

    fn fibre() -> Vector3<f64> {
        Vector3::new(0.8, 0.36, 0.48).normalize()
    }

    #[test]
    fn curves_match_their_definition_and_are_continuous() {
        assert_eq!(active_force_length(1.0).0, 1.0);
        assert!((active_force_length(0.6).0 - 0.36).abs() < 1e-15);
        assert!((active_force_length(0.6 + 1e-12).0 - 0.36).abs() < 1e-10);
        assert!((active_force_length(1.4 + 1e-12).0 - 0.36).abs() < 1e-10);
        assert_eq!(active_force_length(0.3).0, 0.0);
        assert_eq!(active_force_length(1.7).0, 0.0);
        let xs = 1.4;
        let (a, b) = (
            passive_force_length(xs - 1e-9, 0.05, 6.6, xs),
            passive_force_length(xs + 1e-9, 0.05, 6.6, xs),
        );
        assert!((a.0 - b.0).abs() < 1e-7 && (a.1 - b.1).abs() < 1e-6);
        assert_eq!(passive_force_length(0.9, 0.05, 6.6, xs), (0.0, 0.0));
    }

    #[test]
    fn integrals_are_antiderivatives() {
        // Central differences of the integrals give the curves: error O(h^2 f''') with
        // h = 1e-6, below 1e-8 where the curves are smooth (points away from the kinks).
        let h = 1e-6;
        for &x in &[0.3, 0.5, 0.8, 1.0 + 1e-3, 1.2, 1.39, 1.5, 1.7, 2.0] {
            let d = (active_integral(x + h) - active_integral(x - h)) / (2.0 * h);
            assert!((d - active_force_length(x).0).abs() < 1e-8, "f_L at {x}");
            let d = (passive_integral(x + h, 0.05, 6.6, 1.4)
                - passive_integral(x - h, 0.05, 6.6, 1.4))
                / (2.0 * h);
            assert!(
                (d - passive_force_length(x, 0.05, 6.6, 1.4).0).abs() < 1e-8,
                "f_P at {x}"
            );
        }
        // Continuity of the integrals at every breakpoint.
        for &x in &[0.4, 0.6, 1.4, 1.6] {
            assert!((active_integral(x + 1e-12) - active_integral(x - 1e-12)).abs() < 1e-10);
        }
    }

    #[test]
    fn fibre_stress_is_the_documented_formula() {
        let p = FibreParams::default();
        for &l in &[0.7, 0.95, 1.0, 1.2, 1.5] {
            let x = l / p.lambda_opt;
            let expected = p.sigma_max
                * (0.5 * active_force_length(x).0 + passive_force_length(x, p.p1, p.p2, 1.4).0)
                * x;
            assert!((p.fibre_stress(l, 0.5) - expected).abs() < 1e-9 * p.sigma_max);
        }
    }

    /// Relative check of an analytic value against central differences: h = 1e-6 on
    /// O(1) deformation gradients gives truncation ~1e-12 relative times the third
    /// derivative, and round-off ~eps |W| / h ~ 1e-10 relative; 1e-6 leaves margin for the
    /// stiff volumetric term (kappa / mu = 1e4).
    fn close(a: f64, b: f64, scale: f64) -> bool {
        (a - b).abs() <= 1e-6 * scale
    }

    #[test]
    fn stress_is_the_energy_gradient() {
        let a = fibre();
        for (seed, alpha) in [(1, 0.0), (2, 0.5), (3, 1.0), (4, 0.3)] {
            let mut p = FibreParams::default();
            // Exercise the linear passive continuation too.
            if seed == 4 {
                p.lambda_star = 1.05;
            }
            let f = sample_f(seed, 0.15);
            let pk = first_pk(&p, alpha, &a, &f);
            let scale = pk.abs().max().max(1.0);
            let h = 1e-6;
            for i in 0..3 {
                for j in 0..3 {
                    let mut fp = f;
                    fp[(i, j)] += h;
                    let mut fm = f;
                    fm[(i, j)] -= h;
                    let fd = (energy_density(&p, alpha, &a, &fp)
                        - energy_density(&p, alpha, &a, &fm))
                        / (2.0 * h);
                    assert!(
                        close(fd, pk[(i, j)], scale),
                        "seed {seed} ({i},{j}): {fd} vs {}",
                        pk[(i, j)]
                    );
                }
            }
        }
    }

    #[test]
    fn tangent_is_the_stress_derivative() {
        let a = fibre();
        for (seed, alpha) in [(5, 0.0), (6, 0.7), (7, 1.0)] {
            let p = FibreParams::default();
            let f = sample_f(seed, 0.2);
            let h = 1e-6;
            for d in 0..4 {
                let df = sample_f(seed + 10 * d + 100, 1.0) - Matrix3::identity();
                let an = first_pk_differential(&p, alpha, &a, &f, &df);
                let fd = (first_pk(&p, alpha, &a, &(f + df * h))
                    - first_pk(&p, alpha, &a, &(f - df * h)))
                    / (2.0 * h);
                let scale = an.abs().max().max(1.0);
                for k in 0..9 {
                    assert!(
                        close(an[k], fd[k], scale),
                        "seed {seed} dir {d}: {} vs {}",
                        an[k],
                        fd[k]
                    );
                }
            }
        }
    }

    #[test]
    fn rest_state_is_stress_free_when_passive() {
        let p = FibreParams::default();
        let pk = first_pk(&p, 0.0, &fibre(), &Matrix3::identity());
        assert!(pk.abs().max() < 1e-9);
        // Activated at rest, the fibres pull: sigma_max at x = 1, deviatorically projected.
        let pk = first_pk(&p, 1.0, &Vector3::x(), &Matrix3::identity());
        assert!((pk[(0, 0)] - 2.0 / 3.0 * p.sigma_max).abs() < 1e-6);
        assert!((pk[(1, 1)] + 1.0 / 3.0 * p.sigma_max).abs() < 1e-6);
    }

    #[test]
    fn rotation_invariance() {
        // P(R F) = R P(F): frame indifference, which the inversion treatment relies on.
        let p = FibreParams::default();
        let r = nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1).into_inner();
        let f = sample_f(8, 0.2);
        let a = fibre();
        let lhs = first_pk(&p, 0.6, &a, &(r * f));
        let rhs = r * first_pk(&p, 0.6, &a, &f);
        assert!((lhs - rhs).abs().max() < 1e-8 * rhs.abs().max());
    }

    #[test]
    fn clamped_branch_matches_the_exact_one_where_both_apply() {
        // Just above the threshold both formulas are valid: the diagonalized evaluation
        // P = U P(F^; V^T a) V^T reproduces the exact stress to round-off.
        let p = FibreParams::default();
        let a = fibre();
        let r1 = nalgebra::Rotation3::from_euler_angles(0.2, 0.4, -0.3).into_inner();
        let r2 = nalgebra::Rotation3::from_euler_angles(-0.5, 0.1, 0.9).into_inner();
        let f = r1 * Matrix3::from_diagonal(&Vector3::new(1.3, 0.9, 0.15)) * r2.transpose();
        let (u, s, v) = signed_svd(&f);
        let via_svd = u
            * first_pk_exact(&p, 0.8, &(v.transpose() * a), &Matrix3::from_diagonal(&s)).unwrap()
            * v.transpose();
        let exact = first_pk_exact(&p, 0.8, &a, &f).unwrap();
        assert!((via_svd - exact).abs().max() < 1e-7 * exact.abs().max());
    }

    #[test]
    fn inverted_gradients_give_finite_restoring_stress() {
        // A tet flattened through itself: F = diag(1, 1, -0.5). The clamped stress must be
        // finite and push the third axis back toward positive stretch (P_33 < 0 means a
        // compressive stress resisting, as for an over-compressed element).
        let p = FibreParams::default();
        let f = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, -0.5));
        let pk = first_pk(&p, 1.0, &Vector3::x(), &f);
        assert!(pk.iter().all(|v| v.is_finite()));
        // The force along +z on the node above the face is -V P g; with F_33 < 0 the
        // element wants F_33 to grow: dW/dF_33 < 0 in the clamped model's frame.
        let (u, _, v) = signed_svd(&f);
        let p_hat = u.transpose() * pk * v;
        assert!(p_hat[(2, 2)] < 0.0, "{p_hat}");
    }

    #[test]
    fn validation_names_the_key() {
        let with = |f: fn(&mut FibreParams)| {
            let mut p = FibreParams::default();
            f(&mut p);
            p.validate().unwrap_err().key
        };
        assert_eq!(with(|p| p.mu = -1.0), "mu");
        assert_eq!(with(|p| p.kappa = f64::NAN), "kappa");
        assert_eq!(with(|p| p.lambda_star = 0.9), "lambda_star");
        assert_eq!(with(|p| p.sigma_max = -3.0), "sigma_max");
        assert!(FibreParams::default().validate().is_ok());
        assert!(FibreParams::tendon().validate().is_ok());
        assert!(check_activation(1.2).is_err());
        assert!(check_activation(f64::NAN).is_err());
        assert_eq!(check_activation(0.5), Ok(0.5));
    }

    #[test]
    fn an_inverted_tet_is_pushed_back() {
        // One tet with its base held and its apex pushed down through the base: the force
        // on the apex (-R) points back up, with the same clamped magnitude however deep,
        // and is finite at the degenerate flat state.
        use crate::fem::TetKernel;
        use crate::mesh::{volume::ElementKind, volume::Material, volume::VolumeMesh};
        use nalgebra::Point3;
        let mesh = VolumeMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(0.01, 0.0, 0.0),
                Point3::new(0.0, 0.01, 0.0),
                Point3::new(0.0, 0.0, 0.01),
            ],
            kind: ElementKind::Tet,
            connectivity: vec![0, 1, 2, 3],
            materials: vec![Material::new("m", 1000.0, 1e4, 0.4)],
            element_material: vec![0],
        };
        let kernel = TetKernel::new(&mesh).unwrap();
        let mut m = MuscleMaterial::uniform(FibreParams::default(), Vector3::x(), 1);
        m.set_activation(1.0);
        for z in [-0.01, -0.005, 0.0, 0.0005] {
            let mut u = vec![0.0; 12];
            u[11] = z - 0.01;
            let mut r = vec![0.0; 12];
            kernel.internal_forces(&m, &u, &mut r);
            assert!(r.iter().all(|v| v.is_finite()));
            assert!(-r[11] > 100.0, "apex at z = {z}: force {}", -r[11]);
        }
    }

    #[test]
    fn tangent_matrix_equals_the_differentials() {
        // The closed-form tangent (with its stress) against the nine differentials and
        // the stress alone, on both branches: an ordinary F, one whose cheap bound fails
        // but whose SVD finds it above the threshold, and an inverted one (clamped frame,
        // U and V held fixed in both forms). Both forms are the same algebra in another
        // order: 1e-9 relative to the largest entry is round-off.
        let mut m = MuscleMaterial::uniform(FibreParams::default(), fibre(), 1);
        m.set_activation(0.6);
        let r1 = nalgebra::Rotation3::from_euler_angles(0.2, 0.4, -0.3).into_inner();
        let r2 = nalgebra::Rotation3::from_euler_angles(-0.5, 0.1, 0.9).into_inner();
        let stretched = |s: Vector3<f64>| r1 * Matrix3::from_diagonal(&s) * r2.transpose();
        let cases = [
            sample_f(11, 0.2),
            stretched(Vector3::new(0.15, 0.13, 0.12)),
            stretched(Vector3::new(1.1, 0.9, -0.3)),
        ];
        // The middle case is the one the cofactor bound cannot certify.
        let cof_bound = |f: &Matrix3<f64>| f.determinant() / cofactor(f).norm();
        assert!(cof_bound(&cases[1]) < INVERSION_THRESHOLD);
        assert!(cases[1].singular_values().min() > INVERSION_THRESHOLD);
        for f in &cases {
            let (pk, t) = m.first_pk_and_tangent(0, f);
            let p_alone = m.first_pk(0, f);
            assert!((pk - p_alone).abs().max() <= 1e-9 * p_alone.abs().max().max(1.0));
            for j in 0..3 {
                for i in 0..3 {
                    let mut d = Matrix3::zeros();
                    d[(i, j)] = 1.0;
                    let dp = m.first_pk_differential(0, f, &d);
                    for c in 0..9 {
                        assert!(
                            (t[(c, 3 * j + i)] - dp.as_slice()[c]).abs()
                                <= 1e-9 * dp.abs().max().max(1.0),
                            "F = {f}: entry ({c}, {}) {} vs {}",
                            3 * j + i,
                            t[(c, 3 * j + i)],
                            dp.as_slice()[c]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn cofactor_bound_never_certifies_a_tet_below_the_threshold() {
        // J / |cof F| <= sigma_min for every F: sampled over random gradients with
        // singular values across the threshold.
        for seed in 0..200 {
            let f = sample_f(seed, 0.9);
            let j = f.determinant();
            let bound = j / cofactor(&f).norm();
            let smin = f.singular_values().min();
            if j > 0.0 {
                assert!(bound <= smin * (1.0 + 1e-12), "F = {f}: {bound} > {smin}");
            }
            if let Some(inv) = f.try_inverse() {
                let reference = j * inv.transpose();
                assert!((cofactor(&f) - reference).abs().max() <= 1e-9 * reference.abs().max());
            }
        }
    }
}
