//! The penalty contact model of one pointshell point and its force/torque gradients
//! (thesis 3.5, 4.3; docs/equations.md "Contact model").
//!
//! A pointshell point at signed depth `d < 0` inside the distance-field object, with the
//! pointshell's inward unit normal `N` (world frame), pushes the distance-field object
//! with `F = k d N` (the pointshell point feels `-F`). The torque about the
//! distance-field object's grasp point `g` is `T = r x F`, `r = x - g`.
//!
//! Gradients with respect to a displacement `(dx, dw)` of the distance-field object
//! (translation, world-frame rotation vector), approximating `dd/dp ~ N` (4.11-4.12):
//!
//! ```text
//! dF/dx = -k N N^T                 dF/dw = k N N^T [r]x + k d [N]x
//! dT/dx = [F]x - k [r]x N N^T      dT/dw = -[F]x [r]x + k [r]x N N^T [r]x + k d [r]x [N]x
//! ```
//!
//! These are the exact derivatives of the thesis's "mirror" model, in which moving the
//! distance-field object by `(dx, dw)` is modelled as moving the point by `(-dx, -dw x r)`
//! and rotating its normal by `-dw`, with `dd/dp = N` (docs/equations.md; verified by finite
//! differences in `tests/contact.rs`). They differ from the true derivative of `F` (whose
//! normal does not turn when the field object moves) by the `k d [N]x` terms, and by
//! `k N (grad d - N)^T`-type terms where the field gradient differs from the normal.

use nalgebra::{Matrix3, Vector3};

/// Coulomb coefficients (`[contact] friction = { static = 0.6, dynamic = 0.4 }`), rendered
/// by [`crate::coupling::friction`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Friction {
    /// Static coefficient `mu_s`: the tangential force a sticking contact holds, per
    /// newton of normal load.
    pub static_coefficient: f64,
    /// Dynamic coefficient `mu_d <= mu_s`: the tangential force while sliding, per newton
    /// of normal load.
    pub dynamic_coefficient: f64,
}

/// Force, torque and gradients of one contact point (distance-field object side).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointContact {
    /// Force `F` on the distance-field object (N, world frame).
    pub force: Vector3<f64>,
    /// Torque `T = r x F` about the grasp point (N m, world frame).
    pub torque: Vector3<f64>,
    /// `dF/dx`: gradient of the force w.r.t. a translation of the distance-field object (N/m).
    pub dforce_dx: Matrix3<f64>,
    /// `dF/dw`: gradient of the force w.r.t. a rotation vector of the distance-field object
    /// (N/rad).
    pub dforce_dw: Matrix3<f64>,
    /// `dT/dx`: gradient of the torque w.r.t. a translation (N m/m).
    pub dtorque_dx: Matrix3<f64>,
    /// `dT/dw`: gradient of the torque w.r.t. a rotation vector (N m/rad).
    pub dtorque_dw: Matrix3<f64>,
}

impl PointContact {
    /// No contact: every force, torque and gradient zero.
    pub fn zero() -> Self {
        PointContact {
            force: Vector3::zeros(),
            torque: Vector3::zeros(),
            dforce_dx: Matrix3::zeros(),
            dforce_dw: Matrix3::zeros(),
            dtorque_dx: Matrix3::zeros(),
            dtorque_dw: Matrix3::zeros(),
        }
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &PointContact) {
        self.force += other.force;
        self.torque += other.torque;
        self.dforce_dx += other.dforce_dx;
        self.dforce_dw += other.dforce_dw;
        self.dtorque_dx += other.dtorque_dx;
        self.dtorque_dw += other.dtorque_dw;
    }

    /// The same contact with the rotational gradients taken in the world frame (the force
    /// does not turn with the distance-field object): `dF/dw - [F]x`, `dT/dw - [T]x`. The
    /// thesis's gradients (4.11-4.12) are those of the force read in the field object's
    /// frame; the two differ by the rotation of that frame (tests/contact.rs).
    pub fn world_frame(&self) -> PointContact {
        PointContact {
            dforce_dw: self.dforce_dw - self.force.cross_matrix(),
            dtorque_dw: self.dtorque_dw - self.torque.cross_matrix(),
            ..*self
        }
    }

    /// Multiplies every part by `s` (the L/l scaling of thesis 3.5).
    pub fn scale(&mut self, s: f64) {
        self.force *= s;
        self.torque *= s;
        self.dforce_dx *= s;
        self.dforce_dw *= s;
        self.dtorque_dx *= s;
        self.dtorque_dw *= s;
    }
}

/// The contact of one point: stiffness `k`, depth `d` (negative in contact), the
/// pointshell's unit inward normal `n` and the lever arm `r` from the grasp point, all in
/// world coordinates.
#[inline]
pub fn point_contact(k: f64, d: f64, n: &Vector3<f64>, r: &Vector3<f64>) -> PointContact {
    let force = n * (k * d);
    let torque = r.cross(&force);
    let nnt = n * n.transpose();
    let rx = r.cross_matrix();
    let nx = n.cross_matrix();
    let fx = force.cross_matrix();
    PointContact {
        force,
        torque,
        dforce_dx: -k * nnt,
        dforce_dw: k * nnt * rx + (k * d) * nx,
        dtorque_dx: fx - k * rx * nnt,
        dtorque_dw: -fx * rx + k * rx * nnt * rx + (k * d) * rx * nx,
    }
}

/// Sums contacts point by point through a few per-point products and forms the
/// gradient matrices once at the end: with `m = N x r`, the terms of [`point_contact`]
/// are `N N^T [r]x = N m^T`, `[r]x N N^T = -m N^T`, `[r]x N N^T [r]x = -m m^T`,
/// `[F]x [r]x = r F^T - (F . r) I` and `[r]x [N]x = N r^T - (r . N) I`. About a quarter
/// of the work of summing full matrices per point; equal to that sum up to rounding
/// (tested).
#[derive(Debug, Clone, Copy)]
pub struct ContactAccumulator {
    k: f64,
    force: Vector3<f64>,
    torque: Vector3<f64>,
    nn: Matrix3<f64>,
    nm: Matrix3<f64>,
    mm: Matrix3<f64>,
    rf: Matrix3<f64>,
    fr: f64,
    dn: Vector3<f64>,
    dnr: Matrix3<f64>,
    drn: f64,
}

impl ContactAccumulator {
    /// An empty sum for stiffness `k`.
    pub fn new(k: f64) -> Self {
        ContactAccumulator {
            k,
            force: Vector3::zeros(),
            torque: Vector3::zeros(),
            nn: Matrix3::zeros(),
            nm: Matrix3::zeros(),
            mm: Matrix3::zeros(),
            rf: Matrix3::zeros(),
            fr: 0.0,
            dn: Vector3::zeros(),
            dnr: Matrix3::zeros(),
            drn: 0.0,
        }
    }

    /// Adds the contact of a point at depth `d` with inward normal `n` and lever arm `r`
    /// (the arguments of [`point_contact`]); returns its force.
    #[inline]
    pub fn add(&mut self, d: f64, n: &Vector3<f64>, r: &Vector3<f64>) -> Vector3<f64> {
        let f = n * (self.k * d);
        let m = n.cross(r);
        self.force += f;
        self.torque += r.cross(&f);
        self.nn += n * n.transpose();
        self.nm += n * m.transpose();
        self.mm += m * m.transpose();
        self.rf += r * f.transpose();
        self.fr += f.dot(r);
        self.dn += n * d;
        self.dnr += (n * d) * r.transpose();
        self.drn += d * r.dot(n);
        f
    }

    /// The summed force, torque and gradients.
    pub fn finish(&self) -> PointContact {
        let k = self.k;
        let id = Matrix3::identity();
        let fx = self.force.cross_matrix();
        PointContact {
            force: self.force,
            torque: self.torque,
            dforce_dx: -k * self.nn,
            dforce_dw: k * self.nm + k * self.dn.cross_matrix(),
            dtorque_dx: fx + k * self.nm.transpose(),
            dtorque_dw: -(self.rf - id * self.fr) - k * self.mm + k * (self.dnr - id * self.drn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Rotation3, Unit};

    /// The accumulator equals the sum of per-point contacts.
    #[test]
    fn accumulator_equals_the_sum_of_point_contacts() {
        let k = 700.0;
        let mut acc = ContactAccumulator::new(k);
        let mut sum = PointContact::zero();
        for i in 0..25 {
            let t = i as f64;
            let n = Unit::new_normalize(Vector3::new(t.sin(), (1.7 * t).cos(), 0.3 + 0.1 * t))
                .into_inner();
            let r = Vector3::new(0.1 * t.cos(), -0.2 + 0.01 * t, 0.3 * (0.5 * t).sin());
            let d = -0.001 * (1.0 + (t * 0.37).sin().abs());
            acc.add(d, &n, &r);
            sum.add(&point_contact(k, d, &n, &r));
        }
        let a = acc.finish();
        let close = |x: &Matrix3<f64>, y: &Matrix3<f64>| (x - y).norm() < 1e-12 * (1.0 + y.norm());
        assert!((a.force - sum.force).norm() < 1e-12);
        assert!((a.torque - sum.torque).norm() < 1e-12);
        assert!(close(&a.dforce_dx, &sum.dforce_dx));
        assert!(close(&a.dforce_dw, &sum.dforce_dw));
        assert!(close(&a.dtorque_dx, &sum.dtorque_dx));
        assert!(
            close(&a.dtorque_dw, &sum.dtorque_dw),
            "{} vs {}",
            a.dtorque_dw,
            sum.dtorque_dw
        );
    }

    /// The mirror model of a point on a plane field d(p) = N . p - c: finite differences
    /// of (F, T) under (dx, dw) equal the analytic gradients. With k = 2500, |r| ~ 0.4
    /// and |d| ~ 0.06, the smallest term (k |d| ~ 150) is far above the tolerance
    /// 1e-6 k = 2.5e-3, which is far above the central-difference error (rounding about
    /// 1e-16 k / h = 2.5e-7; truncation about h^2 k = 2.5e-9).
    #[test]
    fn gradients_are_exact_for_the_mirror_model_on_a_plane() {
        let k = 2500.0;
        let n = Unit::new_normalize(Vector3::new(0.2, -0.3, 0.9)).into_inner();
        let c = 0.05;
        let x = nalgebra::Point3::new(0.1, 0.2, -0.01);
        let g = nalgebra::Point3::new(-0.2, 0.05, 0.3);
        let plane = |p: &nalgebra::Point3<f64>| n.dot(&p.coords) - c;
        // Mirror model: the field object moves by (dx, dw) about g; the point moves by the
        // inverse motion, its normal turns by -dw.
        let eval = |dx: Vector3<f64>, dw: Vector3<f64>| {
            let rinv = Rotation3::new(-dw);
            let xp = g + rinv * (x - g) - rinv * dx;
            let np = rinv * n;
            let d = plane(&xp);
            point_contact(k, d, &np, &(xp - g))
        };
        let base = eval(Vector3::zeros(), Vector3::zeros());
        assert!(plane(&x) < 0.0);
        let h = 1e-6;
        for a in 0..3 {
            let e = Vector3::ith(a, h);
            let (fp, fm) = (eval(e, Vector3::zeros()), eval(-e, Vector3::zeros()));
            let (wp, wm) = (eval(Vector3::zeros(), e), eval(Vector3::zeros(), -e));
            let cols = [
                (
                    (fp.force - fm.force) / (2.0 * h),
                    base.dforce_dx.column(a).into_owned(),
                ),
                (
                    (fp.torque - fm.torque) / (2.0 * h),
                    base.dtorque_dx.column(a).into_owned(),
                ),
                (
                    (wp.force - wm.force) / (2.0 * h),
                    base.dforce_dw.column(a).into_owned(),
                ),
                (
                    (wp.torque - wm.torque) / (2.0 * h),
                    base.dtorque_dw.column(a).into_owned(),
                ),
            ];
            for (fd, an) in cols {
                assert!(
                    (fd - an).norm() < 1e-6 * k,
                    "column {a}: fd {fd:?} vs analytic {an:?}"
                );
            }
        }
    }
}
