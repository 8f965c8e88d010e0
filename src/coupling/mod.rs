//! Static virtual coupling (thesis Chapter 4; Wan and McNeely 2003, with Barbic's large
//! rotation terms, static damping, saturation and degenerate-rank handling).
//!
//! The simulated haptic object is joined to the manipulandum (the device pose mapped into
//! the simulation world) by a quasi-static spring. Each cycle solves the linearized
//! equilibrium of coupling and contact wrenches (4.1-4.2)
//!
//! ```text
//! (dF/dx  dF/dw) (dx)     (F_VC + F_C)
//! (dT/dx  dT/dw) (dw) = - (T_VC + T_C)
//! ```
//!
//! by SVD, treating singular values below `1e-3 sigma_1` as degenerate and moving those
//! directions straight toward the manipulandum (4.10); then limits the step (4.6), keeps
//! `1 - alpha` of it (static damping, 4.8) and renders the unsaturated spring `-k_VC r`,
//! clamped, to the device (4.9).
//!
//! Coupling wrench (docs/equations.md, verified): `F_VC = f(r) e`, `r = |x_m - x_s|`, with the
//! exponential saturation (4.40) `f(r) = k r` for `r <= r_lin = F_max / (2k)`, else
//! `F_max (1 - exp(-2k (r - r_lin) / F_max) / 2)`, gradient (4.41)
//! `-(f/r) I + (f/r - f') e e^T`; `T_VC = k_t vec(posHemisphere(q_m q_s^-1))` (magnitude
//! `k_t sin(theta/2)`), gradient `-(k_t s I + [T_VC]x) / 2` for world-frame rotations
//! `q_s <- exp(dw) q_s` (4.24).

pub mod friction;
pub mod workspace;

use nalgebra::{Isometry3, Matrix3, Matrix6, Translation3, UnitQuaternion, Vector3, Vector6, SVD};

use crate::contact::model::PointContact;

/// Coupling parameters (SI units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CouplingParams {
    /// Translational stiffness `k_VC` (N/m).
    pub stiffness: f64,
    /// Rotational stiffness `k_VC,torque` (N m).
    pub torque_stiffness: f64,
    /// Saturation plateau `F_VC,max` (N); `None` for a linear spring.
    pub saturation_force: Option<f64>,
    /// Static damping `alpha` in `[0, 0.95]` ([`crate::scene::params::Param::StaticDamping`]): the
    /// pose moves by `(1 - alpha)` of the step.
    pub static_damping: f64,
    /// Largest simulation-object speed (m/s); longer steps are shortened (4.6).
    pub max_velocity: f64,
    /// Largest simulation-object angular speed (rad/s).
    pub max_angular_velocity: f64,
    /// Cycle period (s).
    pub dt: f64,
    /// Singular values below `degenerate_ratio * sigma_1` are degenerate (4.10).
    pub degenerate_ratio: f64,
    /// Device limit for the rendered force (N).
    pub device_max_force: f64,
    /// Device limit for the rendered torque (N m).
    pub device_max_torque: f64,
}

impl Default for CouplingParams {
    /// The thesis's settings (0.6 m/s, 360 deg/s, alpha = 0.5, epsilon = 1e-3, 1 kHz, the
    /// PHANToM's 8.5 N) with a 300 N/m coupling spring saturating at 5 N.
    fn default() -> Self {
        CouplingParams {
            stiffness: 300.0,
            torque_stiffness: 1.0,
            saturation_force: Some(5.0),
            static_damping: 0.5,
            max_velocity: 0.6,
            max_angular_velocity: std::f64::consts::TAU,
            dt: 1e-3,
            degenerate_ratio: 1e-3,
            device_max_force: 8.5,
            device_max_torque: 0.5,
        }
    }
}

/// The saturated coupling force magnitude `f(r)` and its derivative (4.40).
pub(crate) fn saturated_magnitude(r: f64, k: f64, fmax: Option<f64>) -> (f64, f64) {
    match fmax {
        Some(fmax) if r > fmax / (2.0 * k) => {
            let r_lin = fmax / (2.0 * k);
            let e = (-2.0 * k * (r - r_lin) / fmax).exp();
            (fmax * (1.0 - 0.5 * e), k * e)
        }
        _ => (k * r, k),
    }
}

/// Coupling force on the simulation object and its gradient with respect to the
/// simulation object's position, for `r_vec = x_m - x_s`.
pub fn coupling_force(
    r_vec: &Vector3<f64>,
    k: f64,
    fmax: Option<f64>,
) -> (Vector3<f64>, Matrix3<f64>) {
    let r = r_vec.norm();
    if fmax.is_none_or(|fm| r <= fm / (2.0 * k)) {
        // Linear region: F = k r_vec, dF/dx_s = -k I.
        return (r_vec * k, Matrix3::identity() * -k);
    }
    let (f, df) = saturated_magnitude(r, k, fmax);
    let e = r_vec / r;
    let grad = Matrix3::identity() * -(f / r) + (e * e.transpose()) * (f / r - df);
    (e * f, grad)
}

/// `q` or `-q`, whichever has a non-negative scalar part (the shorter rotation).
pub(crate) fn positive_hemisphere(q: UnitQuaternion<f64>) -> UnitQuaternion<f64> {
    if q.w < 0.0 {
        UnitQuaternion::new_unchecked(-q.into_inner())
    } else {
        q
    }
}

/// Coupling torque on the simulation object and its gradient with respect to a
/// world-frame rotation `q_s <- exp(dw) q_s` of the simulation object (4.24).
pub fn coupling_torque(
    q_m: &UnitQuaternion<f64>,
    q_s: &UnitQuaternion<f64>,
    kt: f64,
) -> (Vector3<f64>, Matrix3<f64>) {
    let qt = positive_hemisphere(q_m * q_s.inverse());
    let t = qt.imag() * kt;
    let grad = -(Matrix3::identity() * (kt * qt.w) + t.cross_matrix()) * 0.5;
    (t, grad)
}

/// Iteration cap of the 6x6 SVD: LAPACK's `dbdsqr` bound `MAXITR n^2` with `MAXITR = 6`
/// (216 implicit-shift sweeps for n = 6). A well-scaled 6x6 system converges in a few
/// dozen; the cap only bounds the cycle on pathological input.
pub const SVD_MAX_ITERATIONS: usize = 6 * 6 * 6;

/// The step of the 6x6 system `A x = b` by SVD (4.10): Newton on the well-determined
/// singular directions, and on the degenerate ones (singular values below `ratio *
/// sigma_1`) the projection of `toward` (the displacement to the manipulandum).
///
/// The thesis switches each direction hard at the threshold. Here the switch is smooth,
/// with the filter factor `phi = s^2 / (s^2 + (ratio sigma_1)^2)`:
/// `x = sum_i [phi_i (u_i . b) / s_i + (1 - phi_i) (v_i . toward)] v_i`. It equals the
/// thesis's choice far from the threshold, but a singular value crossing it no longer
/// makes the step jump, which otherwise can lock a pivoting contact into a limit cycle
/// (a direction toggling between resisted and free every few cycles). Returns the step
/// and the number of directions above the threshold.
///
/// Returns `None`, without starting the SVD, if any entry of `a`, `b` or `toward` is not
/// finite (an unbounded SVD never converges on such input), and `None` if the SVD does
/// not converge within [`SVD_MAX_ITERATIONS`] or yields a non-finite step. Bounded time,
/// allocation-free.
pub(crate) fn solve_degenerate(
    a: &Matrix6<f64>,
    b: &Vector6<f64>,
    toward: &Vector6<f64>,
    ratio: f64,
) -> Option<(Vector6<f64>, usize)> {
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    if !(finite(a.as_slice()) && finite(b.as_slice()) && finite(toward.as_slice())) {
        return None;
    }
    let svd = SVD::try_new(*a, true, true, f64::EPSILON * 5.0, SVD_MAX_ITERATIONS)?;
    let (Some(u), Some(vt)) = (svd.u, svd.v_t) else {
        return None;
    };
    let s = svd.singular_values;
    let floor = ratio * s.max();
    let mut x = Vector6::zeros();
    let mut rank = 0;
    for i in 0..6 {
        let v = vt.row(i).transpose();
        let phi = if floor > 0.0 {
            s[i] * s[i] / (s[i] * s[i] + floor * floor)
        } else {
            0.0
        };
        if s[i] > floor {
            rank += 1;
        }
        let newton = if s[i] > 0.0 {
            u.column(i).dot(b) / s[i]
        } else {
            0.0
        };
        x += v * (phi * newton + (1.0 - phi) * v.dot(toward));
    }
    finite(x.as_slice()).then_some((x, rank))
}

/// Rotation vector of `q` (angle times axis, the angle in `[0, pi]`).
pub(crate) fn rotation_vector(q: &UnitQuaternion<f64>) -> Vector3<f64> {
    positive_hemisphere(*q).scaled_axis()
}

/// The result of one coupling cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CouplingOutput {
    /// Force to render on the device: the unsaturated spring `-k_VC r` (N, world frame),
    /// clamped to `device_max_force`.
    pub device_force: Vector3<f64>,
    /// Torque to render on the device (N m, world frame), clamped to `device_max_torque`.
    pub device_torque: Vector3<f64>,
    /// Coupling force `F_VC` on the simulation object after the step (N, world frame).
    pub coupling_force: Vector3<f64>,
    /// Coupling torque `T_VC` on the simulation object after the step (N m, world frame).
    pub coupling_torque: Vector3<f64>,
    /// Rank kept by the 6x6 solve (6 = non-degenerate).
    pub rank: usize,
    /// Whether the step was shortened by the velocity limits.
    pub limited: bool,
    /// The input or the solve was not finite (or did not converge): the object did not
    /// move and the wrenches are zero.
    pub fault: bool,
}

impl CouplingOutput {
    /// The output of a faulted cycle: zero wrenches, rank 0, `fault` set.
    pub fn faulted() -> Self {
        CouplingOutput {
            device_force: Vector3::zeros(),
            device_torque: Vector3::zeros(),
            coupling_force: Vector3::zeros(),
            coupling_torque: Vector3::zeros(),
            rank: 0,
            limited: false,
            fault: true,
        }
    }
}

/// The simulation object's grasp frame, coupled to the manipulandum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StaticCoupling {
    /// Coupling settings, read every cycle.
    pub params: CouplingParams,
    /// World pose of the simulation object's grasp frame.
    pub pose: Isometry3<f64>,
}

impl StaticCoupling {
    /// A coupling whose simulation object's grasp frame starts at world pose `pose`.
    pub fn new(params: CouplingParams, pose: Isometry3<f64>) -> Self {
        StaticCoupling { params, pose }
    }

    /// Coupling wrench on the simulation object at its current pose, with gradients.
    pub fn wrench(
        &self,
        manip: &Isometry3<f64>,
    ) -> (Vector3<f64>, Matrix3<f64>, Vector3<f64>, Matrix3<f64>) {
        let p = &self.params;
        let r_vec = manip.translation.vector - self.pose.translation.vector;
        let (f, df) = coupling_force(&r_vec, p.stiffness, p.saturation_force);
        let (t, dt) = coupling_torque(&manip.rotation, &self.pose.rotation, p.torque_stiffness);
        (f, df, t, dt)
    }

    /// One cycle: solves the equilibrium with the contact wrench on the simulation object
    /// (`contact`, about the grasp point, gradients with respect to the object's motion),
    /// moves the object, and returns the device wrench ([`Self::propose`], then
    /// [`Self::commit`] of the whole step).
    ///
    /// Bounded time on any input. If the manipulandum, the 6x6 system or the rendered
    /// spring is not finite (or the solve fails to converge), the object does not move and
    /// the output is [`CouplingOutput::faulted`]: zero wrench, `fault` set.
    pub fn step(&mut self, manip: &Isometry3<f64>, contact: &PointContact) -> CouplingOutput {
        match self.propose(manip, contact) {
            Some(step) => self.commit(manip, &step.pose_after(&self.pose, 1.0), &step),
            None => CouplingOutput::faulted(),
        }
    }

    /// Solves the equilibrium and returns the step the object would take (limited by the
    /// velocity caps, with static damping applied), without moving it: the caller may cut
    /// it short (continuous contact) before [`Self::commit`]. `None` if the manipulandum
    /// or the system is not finite, or the solve does not converge.
    pub fn propose(&self, manip: &Isometry3<f64>, contact: &PointContact) -> Option<Step> {
        let p = self.params;
        if !pose_is_finite(manip) {
            return None;
        }
        let (f, df, t, dt) = self.wrench(manip);
        let mut a = Matrix6::zeros();
        a.fixed_view_mut::<3, 3>(0, 0)
            .copy_from(&(df + contact.dforce_dx));
        a.fixed_view_mut::<3, 3>(0, 3).copy_from(&contact.dforce_dw);
        a.fixed_view_mut::<3, 3>(3, 0)
            .copy_from(&contact.dtorque_dx);
        a.fixed_view_mut::<3, 3>(3, 3)
            .copy_from(&(dt + contact.dtorque_dw));
        let mut b = Vector6::zeros();
        b.fixed_rows_mut::<3>(0).copy_from(&-(f + contact.force));
        b.fixed_rows_mut::<3>(3).copy_from(&-(t + contact.torque));
        let mut toward = Vector6::zeros();
        toward
            .fixed_rows_mut::<3>(0)
            .copy_from(&(manip.translation.vector - self.pose.translation.vector));
        toward.fixed_rows_mut::<3>(3).copy_from(&rotation_vector(
            &(manip.rotation * self.pose.rotation.inverse()),
        ));
        // The rotations in units of the coupling's own length `L = sqrt(k_theta / k_VC)`
        // (x = S y, S = diag(I, I / L); the system S A S y = S b), so that the degenerate
        // test compares like with like: in free space every singular value is k_VC, and
        // which directions are degenerate no longer depends on the units of length.
        let length = (p.torque_stiffness / p.stiffness).sqrt();
        let length = if length.is_finite() && length > 0.0 {
            length
        } else {
            1.0
        };
        let mut scale = Vector6::repeat(1.0);
        scale.fixed_rows_mut::<3>(3).fill(1.0 / length);
        let a = Matrix6::from_fn(|i, j| a[(i, j)] * scale[i] * scale[j]);
        let b = b.component_mul(&scale);
        let toward = toward.component_div(&scale);
        // Non-finite entries never reach the SVD, and the SVD itself is capped.
        let (y, rank) = solve_degenerate(&a, &b, &toward, p.degenerate_ratio)?;
        let x = y.component_mul(&scale);
        let mut dx = x.fixed_rows::<3>(0).into_owned();
        let mut dw = x.fixed_rows::<3>(3).into_owned();
        let mut limited = false;
        let (max_dx, max_dw) = (p.max_velocity * p.dt, p.max_angular_velocity * p.dt);
        if dx.norm() > max_dx {
            dx *= max_dx / dx.norm();
            limited = true;
        }
        if dw.norm() > max_dw {
            dw *= max_dw / dw.norm();
            limited = true;
        }
        let keep = 1.0 - p.static_damping;
        Some(Step {
            dx: dx * keep,
            dw: dw * keep,
            rank,
            limited,
        })
    }

    /// Moves the object to `pose` (the whole proposed step, or part of it) and returns the
    /// device wrench: the unsaturated spring `-k_VC r` (4.9) and the coupling torque,
    /// clamped to the device. A non-finite result is a fault: the object stays.
    pub fn commit(
        &mut self,
        manip: &Isometry3<f64>,
        pose: &Isometry3<f64>,
        step: &Step,
    ) -> CouplingOutput {
        let p = self.params;
        let moved = StaticCoupling {
            params: p,
            pose: *pose,
        };
        let (f, _, t, _) = moved.wrench(manip);
        // Render the unsaturated spring -k r (4.9), clamped to the device.
        let spring = -(manip.translation.vector - moved.pose.translation.vector) * p.stiffness;
        let all_finite = pose_is_finite(manip)
            && pose_is_finite(&moved.pose)
            && spring.norm().is_finite()
            && f.iter().chain(t.iter()).all(|v| v.is_finite());
        if !all_finite {
            // An overflowing spring (a manipulandum absurdly far away) is a fault too: the
            // device must not get a silently zeroed force, nor the object a non-finite pose.
            return CouplingOutput::faulted();
        }
        self.pose = moved.pose;
        CouplingOutput {
            device_force: clamp_norm(spring, p.device_max_force),
            device_torque: clamp_norm(-t, p.device_max_torque),
            coupling_force: f,
            coupling_torque: t,
            rank: step.rank,
            limited: step.limited,
            fault: false,
        }
    }
}

/// The motion the coupling proposes for one cycle (after the velocity limits and the
/// static damping).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// World translation of the grasp point.
    pub dx: Vector3<f64>,
    /// World rotation vector.
    pub dw: Vector3<f64>,
    /// Rank kept by the 6x6 solve.
    pub rank: usize,
    /// Whether the velocity limits shortened it.
    pub limited: bool,
}

impl Step {
    /// The grasp frame after the fraction `t` of the step from `pose`.
    pub fn pose_after(&self, pose: &Isometry3<f64>, t: f64) -> Isometry3<f64> {
        Isometry3::from_parts(
            Translation3::from(pose.translation.vector + self.dx * t),
            UnitQuaternion::from_scaled_axis(self.dw * t) * pose.rotation,
        )
    }
}

/// Whether every coordinate of `pose` (translation and quaternion) is finite.
pub fn pose_is_finite(pose: &Isometry3<f64>) -> bool {
    pose.translation
        .vector
        .iter()
        .chain(pose.rotation.coords.iter())
        .all(|v| v.is_finite())
}

/// `v` shortened to at most `max` (zero if `v` is not finite).
pub(crate) fn clamp_norm(v: Vector3<f64>, max: f64) -> Vector3<f64> {
    let n = v.norm();
    if !n.is_finite() {
        Vector3::zeros()
    } else if n > max {
        v * (max / n)
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_is_c1_and_bounded() {
        let (k, fmax) = (300.0, 5.0);
        let r_lin = fmax / (2.0 * k);
        let (a, da) = saturated_magnitude(r_lin * (1.0 - 1e-9), k, Some(fmax));
        let (b, db) = saturated_magnitude(r_lin * (1.0 + 1e-9), k, Some(fmax));
        // The two samples are 2e-9 r_lin apart: f differs by k r_lin 2e-9 = 5e-9.
        assert!((a - b).abs() < 1e-8 && (da - db).abs() < 1e-3);
        assert!(saturated_magnitude(10.0, k, Some(fmax)).0 <= fmax);
        assert!(saturated_magnitude(3.0 * r_lin, k, Some(fmax)).0 < fmax);
        // f' by central differences in the saturated region.
        let r = 3.0 * r_lin;
        let h = 1e-8;
        let fd = (saturated_magnitude(r + h, k, Some(fmax)).0
            - saturated_magnitude(r - h, k, Some(fmax)).0)
            / (2.0 * h);
        assert!((fd - saturated_magnitude(r, k, Some(fmax)).1).abs() < 1e-5 * k);
    }

    /// Gradients of the coupling force (linear and saturated) and torque against central
    /// differences of the wrench under motions of the simulation object. Step 1e-6 on
    /// smooth functions: truncation ~1e-12 relative; tolerance 1e-6 relative.
    #[test]
    fn coupling_gradients_match_finite_differences() {
        let (k, kt) = (300.0, 2.0);
        let m = Isometry3::from_parts(
            Translation3::new(0.01, -0.02, 0.005),
            UnitQuaternion::from_scaled_axis(Vector3::new(0.4, -1.2, 0.9)),
        );
        for fmax in [None, Some(1.0)] {
            let s = Isometry3::from_parts(
                Translation3::new(0.0, 0.0, 0.0),
                UnitQuaternion::from_scaled_axis(Vector3::new(-0.3, 0.2, 0.1)),
            );
            let mut params = CouplingParams {
                stiffness: k,
                torque_stiffness: kt,
                saturation_force: fmax,
                ..CouplingParams::default()
            };
            params.static_damping = 0.0;
            let c = StaticCoupling::new(params, s);
            let (_, df, _, dt) = c.wrench(&m);
            let h = 1e-6;
            for a in 0..3 {
                let e = Vector3::ith(a, h);
                let moved = |dx: Vector3<f64>, dw: Vector3<f64>| {
                    StaticCoupling::new(
                        params,
                        Isometry3::from_parts(
                            Translation3::from(s.translation.vector + dx),
                            UnitQuaternion::from_scaled_axis(dw) * s.rotation,
                        ),
                    )
                    .wrench(&m)
                };
                let (fp, _, _, _) = moved(e, Vector3::zeros());
                let (fm, _, _, _) = moved(-e, Vector3::zeros());
                let fd = (fp - fm) / (2.0 * h);
                assert!(
                    (fd - df.column(a)).norm() < 1e-6 * k,
                    "{fmax:?} dF/dx col {a}"
                );
                let (_, _, tp, _) = moved(Vector3::zeros(), e);
                let (_, _, tm, _) = moved(Vector3::zeros(), -e);
                let fd = (tp - tm) / (2.0 * h);
                assert!(
                    (fd - dt.column(a)).norm() < 1e-6 * kt,
                    "dT/dw col {a}: {fd:?} vs {:?}",
                    dt.column(a)
                );
            }
        }
    }

    /// Across the 180-degree flip the torque keeps rotating the short way: at 179 and 181
    /// degrees about z the torque points +z and -z respectively, with magnitude
    /// k sin(theta/2) for the shorter angle.
    #[test]
    fn torque_takes_the_short_way_across_the_hemisphere_flip() {
        let kt = 2.0;
        let s = UnitQuaternion::identity();
        for (deg, sign) in [(179.0f64, 1.0), (181.0, -1.0), (90.0, 1.0), (270.0, -1.0)] {
            let m = UnitQuaternion::from_scaled_axis(Vector3::z() * deg.to_radians());
            let (t, _) = coupling_torque(&m, &s, kt);
            let short = if deg > 180.0 { 360.0 - deg } else { deg };
            assert!(
                (t.z * sign - kt * (short.to_radians() / 2.0).sin()).abs() < 1e-12,
                "{deg}: {t:?}"
            );
            assert!(t.x.abs() < 1e-12 && t.y.abs() < 1e-12);
        }
    }

    #[test]
    fn degenerate_directions_move_toward_the_target() {
        // A rank-2 system: only x and y resist.
        let mut a = Matrix6::zeros();
        a[(0, 0)] = -100.0;
        a[(1, 1)] = -50.0;
        let b = Vector6::new(10.0, 5.0, 0.0, 0.0, 0.0, 0.0);
        let toward = Vector6::new(9.0, 9.0, 0.3, 0.1, 0.0, -0.2);
        let (x, rank) = solve_degenerate(&a, &b, &toward, 1e-3).unwrap();
        assert_eq!(rank, 2);
        let expected = Vector6::new(-0.1, -0.1, 0.3, 0.1, 0.0, -0.2);
        // Far from the threshold the smooth filter equals the hard switch up to
        // (1 - phi) |toward - newton| with 1 - phi = (0.1 / 50)^2 = 4e-6: 3.7e-5 here.
        assert!((x - expected).norm() < 1e-4, "{x:?}");
        // A direction at the threshold moves half Newton, half toward the target.
        a[(1, 1)] = -0.1;
        let (x, rank) = solve_degenerate(&a, &b, &toward, 1e-3).unwrap();
        assert_eq!(rank, 1);
        assert!((x[1] - 0.5 * (-50.0 + 9.0)).abs() < 1e-9, "{x:?}");
    }

    /// Free space, the manipulandum 1 m away (deep in saturation, where the coupling
    /// gradient nearly vanishes along the spring): the object snaps toward it at the
    /// velocity limit without exploding, and settles on it.
    #[test]
    fn saturated_free_space_motion_snaps_without_explosion() {
        let params = CouplingParams::default();
        let mut c = StaticCoupling::new(params, Isometry3::identity());
        let m = Isometry3::from_parts(
            Translation3::new(1.0, 0.0, 0.0),
            UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 3.0, 0.0)),
        );
        let none = PointContact::zero();
        let mut prev = 1.0f64;
        for i in 0..4000 {
            let out = c.step(&m, &none);
            let d = (m.translation.vector - c.pose.translation.vector).norm();
            assert!(d <= prev + 1e-12, "cycle {i}: distance grew {prev} -> {d}");
            assert!(out.device_force.norm() <= params.device_max_force + 1e-12);
            assert!(out.device_torque.norm() <= params.device_max_torque + 1e-12);
            prev = d;
        }
        assert!(prev < 1e-9, "did not settle: {prev}");
        let angle = (m.rotation * c.pose.rotation.inverse()).angle();
        assert!(angle < 1e-6, "orientation {angle}");
    }

    /// Theorem 4.7: against a contact of stiffness J (a wall), the rendered stiffness
    /// settles at 1 / (1/J + 1/k_VC) and never exceeds it.
    #[test]
    fn rendered_stiffness_bound_of_theorem_4_7() {
        for (j, kvc) in [(2000.0, 300.0), (300.0, 300.0), (50.0, 600.0)] {
            let params = CouplingParams {
                stiffness: kvc,
                saturation_force: None,
                device_max_force: 1e9,
                ..CouplingParams::default()
            };
            let mut c = StaticCoupling::new(params, Isometry3::identity());
            // Wall at x = 0 (the object's grasp point penetrates for x > 0): F = -J x.
            let depth = 0.01;
            let m = Isometry3::translation(depth, 0.0, 0.0);
            let bound = 1.0 / (1.0 / j + 1.0 / kvc);
            let mut out = None;
            for _ in 0..2000 {
                let x = c.pose.translation.vector.x;
                let contact = PointContact {
                    force: Vector3::new(-j * x.max(0.0), 0.0, 0.0),
                    dforce_dx: if x > 0.0 {
                        Matrix3::from_diagonal(&Vector3::new(-j, 0.0, 0.0))
                    } else {
                        Matrix3::zeros()
                    },
                    ..PointContact::zero()
                };
                out = Some(c.step(&m, &contact));
            }
            let stiffness = out.unwrap().device_force.norm() / depth;
            assert!(
                (stiffness - bound).abs() < 1e-6 * bound,
                "J {j}, k {kvc}: {stiffness} vs {bound}"
            );
        }
    }

    /// Non-finite entries anywhere in the system never reach the SVD: the solve refuses
    /// them at once. Finite but extreme systems (entries near f64::MAX) return in bounded
    /// time, either a finite step or `None`.
    #[test]
    fn non_finite_systems_are_refused_and_extreme_ones_are_bounded() {
        let a = Matrix6::identity() * -100.0;
        let b = Vector6::repeat(1.0);
        let toward = Vector6::repeat(0.1);
        assert!(solve_degenerate(&a, &b, &toward, 1e-3).is_some());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for k in [0, 7, 35] {
                let mut a2 = a;
                a2[k] = bad;
                assert_eq!(
                    solve_degenerate(&a2, &b, &toward, 1e-3),
                    None,
                    "A[{k}] = {bad}"
                );
            }
            let mut b2 = b;
            b2[3] = bad;
            assert_eq!(solve_degenerate(&a, &b2, &toward, 1e-3), None);
            let mut t2 = toward;
            t2[5] = bad;
            assert_eq!(solve_degenerate(&a, &b, &t2, 1e-3), None);
        }
        let mut a3 = a;
        a3[(0, 1)] = 1e308;
        a3[(4, 2)] = -1e308;
        let b3 = Vector6::new(1e308, -1e308, 0.0, 1.0, 0.0, 1e-300);
        let start = std::time::Instant::now();
        if let Some((x, _)) = solve_degenerate(&a3, &b3, &toward, 1e-3) {
            assert!(x.iter().all(|v| v.is_finite()));
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    /// A manipulandum with NaN, infinite or overflowing (1e308) coordinates: the step
    /// reports a fault with zero wrench and leaves the object where it was; finite input
    /// afterwards moves it again.
    #[test]
    fn non_finite_manipulandum_faults_without_moving() {
        let start = Isometry3::from_parts(
            Translation3::new(0.1, 0.2, 0.3),
            UnitQuaternion::from_scaled_axis(Vector3::new(0.1, 0.0, 0.2)),
        );
        let mut c = StaticCoupling::new(CouplingParams::default(), start);
        let none = PointContact::zero();
        let bad = [
            Isometry3::translation(f64::NAN, 0.0, 0.0),
            Isometry3::translation(0.0, f64::INFINITY, 0.0),
            Isometry3::translation(0.0, 0.0, 1e308),
            Isometry3::translation(1e308, -1e308, 1e308),
            Isometry3::from_parts(
                Translation3::new(0.0, 0.0, 0.0),
                UnitQuaternion::new_unchecked(nalgebra::Quaternion::new(f64::NAN, 0.0, 0.0, 0.0)),
            ),
        ];
        for m in bad {
            let out = c.step(&m, &none);
            assert!(out.fault, "{m:?}");
            assert_eq!(out.device_force, Vector3::zeros());
            assert_eq!(out.device_torque, Vector3::zeros());
            assert_eq!(c.pose, start);
        }
        let out = c.step(&Isometry3::translation(0.1, 0.25, 0.3), &none);
        assert!(!out.fault);
        assert!(out.device_force.norm() > 0.0);
        assert!(c.pose != start);
    }
}
