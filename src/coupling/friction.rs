//! Coulomb friction rendered through the virtual coupling: a stick/slip proxy for the
//! whole held object (in the spirit of the friction cone of Salisbury et al.'s god-object
//! and Ruspini's proxy, applied to the 6-DOF coupling of thesis Chapter 4).
//!
//! While the held object touches the environment, it is tied to an anchor pose (its grasp
//! point `a` and orientation `R_a` when it last stuck) by springs of the contact's own
//! normal stiffness, acting at the contact patch: the material point at the patch's
//! centre of pressure `c` is held in the tangent plane, and the twist about the normal is
//! held too (a soft-finger contact: Howe and Cutkosky 1996, Kao and Cutkosky 1992):
//!
//! ```text
//! n   = F_C / |F_C|                    (net contact normal, out of the environment)
//! N   = |F_C|                          (normal load)
//! k_t = -n^T (dF_C/dx) n               (normal contact stiffness, used tangentially)
//! c, rho, rho2                         (centre of pressure, force-weighted mean and mean
//!                                       square distance of the contact points from it
//!                                       in the tangent plane)
//! r   = c - x                          (lever from the grasp point x to the patch)
//! dth = rotvec(R R_a^-1),  d = (x - a) + dth x r     (the patch point's displacement)
//! F_f = -k_t P d,          P = I - n n^T
//! T_f = r x F_f - k_r (n . dth) n,     k_r = k_t rho2
//! ```
//!
//! with the gradients of the spring `J^T K J`, `J = [I, -[r]x]` the patch point's motion
//! (symmetric: a conservative spring), the patch fixed in the world during the step:
//! `dF/dx = -k_t P`, `dF/dw = k_t P [r]x`, `dT/dx = [F_f]x - k_t [r]x P` (the lever
//! shortens as the grasp point moves, as in the contact's own gradient,
//! [`crate::contact::model::point_contact`]), `dT/dw = k_t [r]x P [r]x - k_r n n^T`. With no lever
//! and no patch (one point at the grasp) this is a spring on the grasp point alone.
//!
//! The friction wrench joins the contact wrench in the coupling's 6x6 equilibrium, so it
//! is felt exactly like contact: through the coupling spring on the device. After each step
//! the anchor obeys Coulomb's law on what friction must supply: the tangential part `f` of
//! the coupling's pull, and the normal part `tau` of its torque about the patch centre. The
//! two share one limit surface, the soft-finger ellipse `e = sqrt(|f|^2 + (tau / rho)^2)`
//! (`rho` the patch's torsional lever: the torsional friction of a sliding patch is
//! `mu N rho` exactly, for any pressure distribution, when it turns about `c`): the contact
//! sticks while `e <= mu_s N`; beyond, the object breaks away and the anchor trails it so
//! that friction supplies `min(mu_d N, e) / e` of the pull (slip), a kinetic wrench without
//! stiffness; slipping stops when `e` falls below `0.9 mu_d N` (a margin against chatter,
//! [`RESTICK`]). The drop from `mu_s N` to `mu_d N` at break-away is the stick-slip the
//! hand feels, in translation and in twist.
//!
//! **Why one proxy for the object rather than a cone per contact point.** A cone per
//! point needs a tangential anchor per point that persists across cycles; the pointshell
//! points in contact change with the level of detail the budget allows (thesis 3.10), so
//! per-point anchors would be created and dropped as the traversal deepens or coarsens,
//! and the friction felt would depend on the node budget (a replay at another budget
//! would slide differently). The coupling already reduces all contacts to one wrench on
//! one rigid pose; one anchor on that pose is independent of the point set, costs a
//! handful of flops, and is passive (a spring whose rest point only moves to release
//! energy). Its limits: one patch (the centre of pressure of all contacts), so two
//! separate contacts (a part touching two walls) share one anchor and one torsional lever,
//! and the normal is the net one, so a part pinched between two opposite walls (net
//! contact force near zero) feels little friction. Both are stated in docs/contact.md.

use crate::contact::model::PointContact;
use crate::contact::ContactPoint;
use nalgebra::{Matrix3, Point3, UnitQuaternion, Vector3};

use crate::contact::model::Friction;

/// The net contact normal `n`, normal load `N` and normal stiffness `k_t` of a contact,
/// and its patch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactFrame {
    /// Unit net contact normal (out of the environment).
    pub normal: Vector3<f64>,
    /// Normal load `N = |F_C|` (N).
    pub load: f64,
    /// Normal contact stiffness `k_t = -n^T (dF_C/dx) n` (N/m).
    pub stiffness: f64,
    /// The patch the friction acts on ([`Patch::point`] where none is known).
    pub patch: Patch,
}

/// Where friction acts: the contact's centre of pressure and the spread of the contact
/// points about it in the tangent plane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Patch {
    /// The centre of pressure (world): the contact points weighted by their force.
    pub centre: Point3<f64>,
    /// Force-weighted mean distance of the points from the centre in the tangent plane:
    /// the torsional lever (a sliding patch turning about its centre resists with
    /// `mu N rho`).
    pub radius: f64,
    /// Force-weighted mean square of that distance: the torsional stiffness is
    /// `k_t rho2` (each point's tangential spring, of its share of `k_t`, times its
    /// distance squared).
    pub radius_sq: f64,
}

impl Patch {
    /// A patch of one point at `centre` (no lever, no torsion).
    pub fn point(centre: Point3<f64>) -> Self {
        Patch {
            centre,
            radius: 0.0,
            radius_sq: 0.0,
        }
    }

    /// The patch of `points` (with the scale applied to their forces, [`crate::contact::ContactOutput::scale`])
    /// in the tangent plane of the unit normal `n`; `None` if they carry no force.
    /// Allocation-free (two passes over the points).
    pub fn of_contacts<'a, I>(points: I, n: &Vector3<f64>) -> Option<Patch>
    where
        I: Iterator<Item = (&'a ContactPoint, f64)> + Clone,
    {
        let (mut weight, mut sum) = (0.0, Vector3::zeros());
        for (c, scale) in points.clone() {
            let w = c.force.norm() * scale;
            weight += w;
            sum += c.position.coords * w;
        }
        if !(weight > 0.0 && weight.is_finite()) {
            return None;
        }
        let centre = Point3::from(sum / weight);
        let (mut radius, mut radius_sq) = (0.0, 0.0);
        for (c, scale) in points {
            let w = c.force.norm() * scale / weight;
            let d = c.position - centre;
            let t = (d - n * n.dot(&d)).norm();
            radius += w * t;
            radius_sq += w * t * t;
        }
        Some(Patch {
            centre,
            radius,
            radius_sq,
        })
    }
}

impl ContactFrame {
    /// The tangential part `(I - n n^T) v` of `v`.
    pub fn tangential(&self, v: &Vector3<f64>) -> Vector3<f64> {
        v - self.normal * self.normal.dot(v)
    }
}

/// The contact frame of a contact wrench, if it presses (`|F_C| > 0` and a positive
/// normal stiffness), with `patch(n)` the patch for the net normal `n` (`None`: a point at
/// `fallback`, the grasp point).
pub(crate) fn contact_frame(
    contact: &PointContact,
    fallback: &Point3<f64>,
    patch: impl FnOnce(&Vector3<f64>) -> Option<Patch>,
) -> Option<ContactFrame> {
    let load = contact.force.norm();
    if !(load > 0.0 && load.is_finite()) {
        return None;
    }
    let normal = contact.force / load;
    let stiffness = -(normal.transpose() * contact.dforce_dx * normal)[0];
    if !(stiffness > 0.0 && stiffness.is_finite()) {
        return None;
    }
    let patch = patch(&normal)
        .filter(|p| {
            p.centre.coords.iter().all(|v| v.is_finite())
                && p.radius.is_finite()
                && p.radius_sq.is_finite()
        })
        .unwrap_or_else(|| Patch::point(*fallback));
    Some(ContactFrame {
        normal,
        load,
        stiffness,
        patch,
    })
}

/// The friction wrench of the stick springs (module docs) on the held object with grasp
/// point `x` and orientation `rotation`, anchored at `anchor`; and its gradients, as a
/// [`PointContact`] (force, torque about the grasp point, derivatives in a world
/// translation and rotation vector).
pub(crate) fn stick_wrench(
    frame: &ContactFrame,
    x: &Vector3<f64>,
    rotation: &UnitQuaternion<f64>,
    anchor: &(Vector3<f64>, UnitQuaternion<f64>),
) -> PointContact {
    let n = frame.normal;
    let k_t = frame.stiffness;
    let k_r = k_t * frame.patch.radius_sq;
    let p = Matrix3::identity() - n * n.transpose();
    let r = frame.patch.centre.coords - x;
    let rx = r.cross_matrix();
    let dth = (rotation * anchor.1.inverse()).scaled_axis();
    let d = (x - anchor.0) + dth.cross(&r);
    let force = -(p * d) * k_t;
    let twist = -n * (k_r * n.dot(&dth));
    PointContact {
        force,
        torque: r.cross(&force) + twist,
        dforce_dx: -p * k_t,
        dforce_dw: p * rx * k_t,
        dtorque_dx: force.cross_matrix() - rx * p * k_t,
        dtorque_dw: rx * p * rx * k_t - n * n.transpose() * k_r,
    }
}

/// A sliding contact sticks again once the pull falls below this fraction of the
/// kinetic force `mu_d N`: the margin keeps the normal load's small fluctuations (points
/// entering and leaving the contact as the object slides) from re-sticking a steady
/// slide, which would then need `mu_s N` again and chatter.
pub const RESTICK: f64 = 0.9;

/// Coulomb's law on the anchor pose after a step, over the soft-finger limit surface
/// (module docs): `x`, `rotation` the object's grasp point and orientation after the step,
/// `pull` and `pull_torque` the coupling's force and torque (about the grasp point) on the
/// object. Friction must supply the pull's tangential part `f` at the patch and the normal
/// part `tau` of its torque about the patch centre. Returns the new anchor and whether the
/// contact slides; sticking again or sliding, the anchor is placed where the springs give
/// exactly what friction supplies (no jump in force).
///
/// - Sticking: it holds while `e <= mu_s N`; beyond, it breaks away.
/// - Sliding: the anchor trails the object so that the springs give `min(mu_d N, e) / e`
///   of the pull (kinetic friction never reverses the motion); once `e < 0.9 mu_d N`
///   ([`RESTICK`]) it sticks, with the anchor where the springs balance the pull.
///
/// The kinetic wrench follows the pull's direction, not the motion's: along the motion,
/// a small sideways wobble would turn the friction sideways and feed the wobble, an
/// instability of the quasi-static step; along the pull the object slides toward the
/// hand, which damps any wobble.
pub(crate) fn coulomb_update(
    friction: &Friction,
    frame: &ContactFrame,
    (x, rotation): (&Vector3<f64>, &UnitQuaternion<f64>),
    anchor: &(Vector3<f64>, UnitQuaternion<f64>),
    (pull, pull_torque): (&Vector3<f64>, &Vector3<f64>),
    slipping: bool,
) -> ((Vector3<f64>, UnitQuaternion<f64>), bool) {
    let (mu_s, mu_d) = (
        friction.static_coefficient,
        friction
            .dynamic_coefficient
            .min(friction.static_coefficient),
    );
    let n = frame.normal;
    let (load, k_t) = (frame.load, frame.stiffness);
    let k_r = k_t * frame.patch.radius_sq;
    let rho = frame.patch.radius;
    let r = frame.patch.centre.coords - x;
    // What friction must supply: the tangential pull at the patch, the twist about it.
    let f = frame.tangential(pull);
    let torsion = rho > 0.0 && k_r > 0.0;
    let tau = if torsion {
        n.dot(&(pull_torque - r.cross(pull)))
    } else {
        0.0
    };
    let need = if torsion {
        (f.norm_squared() + (tau / rho).powi(2)).sqrt()
    } else {
        f.norm()
    };
    let kinetic = mu_d * load;
    if !slipping && need <= mu_s * load {
        return (*anchor, false);
    }
    // Sticking again (the springs then balance the pull), or sliding at the kinetic
    // limit (never more than the pull).
    let slides = !(slipping && need < RESTICK * kinetic);
    let scale = match (slides, need > 0.0) {
        (false, _) => 1.0,
        (true, true) => kinetic.min(need) / need,
        (true, false) => 0.0,
    };
    // The anchor where the springs give -scale (f, tau): a twist about n of
    // scale tau / k_r, and the grasp point placed so that the patch point's tangential
    // displacement is scale f / k_t.
    let dth = if torsion {
        n * (scale * tau / k_r)
    } else {
        Vector3::zeros()
    };
    let dx = f * (scale / k_t) - dth.cross(&r);
    let anchored = (x - dx, UnitQuaternion::from_scaled_axis(-dth) * rotation);
    (anchored, slides)
}

/// The stick/slip state of the held object.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrictionProxy {
    /// The anchor pose (grasp point, world, and orientation), while in contact.
    anchor: Option<(Vector3<f64>, UnitQuaternion<f64>)>,
    /// Whether the contact is sliding.
    slipping: bool,
}

impl FrictionProxy {
    /// The anchor of the grasp point, while in contact.
    pub fn anchor(&self) -> Option<Vector3<f64>> {
        self.anchor.map(|a| a.0)
    }

    /// The anchor's orientation, while in contact.
    #[cfg(test)]
    pub(crate) fn anchor_rotation(&self) -> Option<UnitQuaternion<f64>> {
        self.anchor.map(|a| a.1)
    }

    /// Forgets the anchor (after a teleport or a reset).
    pub fn reset(&mut self) {
        *self = FrictionProxy::default();
    }

    /// Adds the friction wrench on the object at grasp point `x` and orientation
    /// `rotation` (before the step) to `contact` (force, torque and, while sticking,
    /// their gradients), acting at the patch `patch(n)` gives for the net normal `n`
    /// (`None`: at the grasp point); starts an anchor at the current pose when contact
    /// begins, and forgets it when contact ends. Returns the friction force and torque
    /// (about the grasp point). While sticking the springs' stiffness enters the step's
    /// equilibrium; while sliding the wrench is kinetic, `mu_d N` whatever the motion, so
    /// it enters without a gradient (with it, the stiff springs would hold the sliding
    /// object back and the hand would feel far more than `mu_d N`).
    pub fn add_to(
        &mut self,
        (x, rotation): (&Vector3<f64>, &UnitQuaternion<f64>),
        patch: impl FnOnce(&Vector3<f64>) -> Option<Patch>,
        contact: &mut PointContact,
    ) -> (Vector3<f64>, Vector3<f64>) {
        let Some(frame) = contact_frame(contact, &Point3::from(*x), patch) else {
            self.reset();
            return (Vector3::zeros(), Vector3::zeros());
        };
        let anchor = *self.anchor.get_or_insert((*x, *rotation));
        let w = stick_wrench(&frame, x, rotation, &anchor);
        if self.slipping {
            contact.force += w.force;
            contact.torque += w.torque;
        } else {
            contact.add(&w);
        }
        (w.force, w.torque)
    }

    /// Coulomb's law after the step: `x`, `rotation` the grasp point and orientation
    /// after it, `contact` the contact wrench the step was solved with (without friction),
    /// `patch` as in [`Self::add_to`], `pull` and `pull_torque` the coupling's force and
    /// torque on the object after the step.
    pub fn update(
        &mut self,
        friction: &Friction,
        (x, rotation): (&Vector3<f64>, &UnitQuaternion<f64>),
        contact: &PointContact,
        patch: impl FnOnce(&Vector3<f64>) -> Option<Patch>,
        (pull, pull_torque): (&Vector3<f64>, &Vector3<f64>),
    ) {
        let Some(anchor) = self.anchor else {
            return;
        };
        let Some(frame) = contact_frame(contact, &Point3::from(*x), patch) else {
            return;
        };
        let (a, slipping) = coulomb_update(
            friction,
            &frame,
            (x, rotation),
            &anchor,
            (pull, pull_torque),
            self.slipping,
        );
        self.anchor = Some(a);
        self.slipping = slipping;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor_contact(load: f64, k: f64) -> PointContact {
        PointContact {
            force: Vector3::new(0.0, 0.0, load),
            dforce_dx: Matrix3::from_diagonal(&Vector3::new(0.0, 0.0, -k)),
            ..PointContact::zero()
        }
    }

    /// A point patch at the grasp point (no lever, no torsion): the spring on the grasp
    /// point alone, `F_f = -k_t (I - n n^T)(x - a)`, without torque, its gradient in `x`
    /// against central differences (it is linear in x, so the difference is exact up to
    /// rounding: tolerance 1e-9 k), and the force in the tangent plane.
    #[test]
    fn point_patch_is_the_tangential_spring() {
        let n = Vector3::new(0.3, -0.2, 0.9).normalize();
        let a = Vector3::new(0.1, 0.2, -0.3);
        let x = Vector3::new(0.15, 0.1, -0.2);
        let k = 750.0;
        let rot = UnitQuaternion::from_scaled_axis(Vector3::new(0.2, 0.1, -0.3));
        let frame = |x: &Vector3<f64>| ContactFrame {
            normal: n,
            load: 1.0,
            stiffness: k,
            patch: Patch::point(Point3::from(*x)),
        };
        let spring = |x: &Vector3<f64>| stick_wrench(&frame(x), x, &rot, &(a, rot));
        let w = spring(&x);
        let p = Matrix3::identity() - n * n.transpose();
        assert!((w.force + p * (x - a) * k).norm() < 1e-12);
        assert_eq!(w.torque, Vector3::zeros());
        let h = 1e-6;
        for i in 0..3 {
            let e = Vector3::ith(i, h);
            let fd = (spring(&(x + e)).force - spring(&(x - e)).force) / (2.0 * h);
            assert!((fd - w.dforce_dx.column(i)).norm() < 1e-9 * k, "column {i}");
        }
        assert!(w.force.dot(&n).abs() < 1e-12);
    }

    /// Stick below mu_s N; break away above it to exactly mu_d N against the pull; keep
    /// sliding while the pull exceeds 0.9 mu_d N (never more friction than pull); stick
    /// again below, with the spring balancing the pull.
    #[test]
    fn coulomb_law_sticks_breaks_away_and_resticks() {
        let f = Friction {
            static_coefficient: 0.6,
            dynamic_coefficient: 0.4,
        };
        let frame = ContactFrame {
            normal: Vector3::z(),
            load: 2.0,
            stiffness: 1000.0,
            patch: Patch::point(Point3::origin()),
        };
        // A point patch: the translational law alone.
        let rot = UnitQuaternion::identity();
        let spring = |x: &Vector3<f64>, a: &(Vector3<f64>, UnitQuaternion<f64>)| {
            stick_wrench(&frame, x, &rot, a).force
        };
        let update = |x: &Vector3<f64>, a, pull: &Vector3<f64>, slipping| {
            coulomb_update(
                &f,
                &frame,
                (x, &rot),
                a,
                (pull, &Vector3::zeros()),
                slipping,
            )
        };
        let a = (Vector3::zeros(), rot);
        let x = Vector3::new(0.0011, 0.0, 0.0);
        // A pull of 1.1 N < mu_s N = 1.2 N holds (its normal part does not count).
        let pull = Vector3::new(1.1, 0.0, -5.0);
        assert_eq!(update(&x, &a, &pull, false), (a, false));
        // 1.3 N > 1.2 N: slips; the spring gives 0.8 N against the pull.
        let pull = Vector3::new(1.3, 0.0, 0.0);
        let (a2, slip) = update(&x, &a, &pull, false);
        assert!(slip);
        assert!((spring(&x, &a2) - Vector3::new(-0.8, 0.0, 0.0)).norm() < 1e-12);
        // Sliding, pulled by 1.0 N along y: 0.8 N against it.
        let pull = Vector3::new(0.0, 1.0, 0.0);
        let (a3, slip) = update(&x, &a2, &pull, true);
        assert!(slip);
        assert!((spring(&x, &a3) - Vector3::new(0.0, -0.8, 0.0)).norm() < 1e-12);
        // Pulled by 0.75 N (between 0.9 mu_d N and mu_d N): slides on, friction 0.75 N.
        let pull = Vector3::new(0.0, 0.75, 0.0);
        let (a4, slip) = update(&x, &a3, &pull, true);
        assert!(slip);
        assert!((spring(&x, &a4) + pull).norm() < 1e-12);
        // Pulled by 0.5 N: sticks, the spring balancing the pull.
        let pull = Vector3::new(0.0, 0.5, 0.0);
        let (a5, slip) = update(&x, &a4, &pull, true);
        assert!(!slip);
        assert!((spring(&x, &a5) + pull).norm() < 1e-12);
    }

    /// The proxy starts an anchor at first contact, adds the spring and its gradient, and
    /// forgets the anchor when contact ends; acting at the grasp point (no patch) it is
    /// the tangential spring alone, without torque.
    #[test]
    fn proxy_anchors_at_contact_and_forgets_it_after() {
        let mut p = FrictionProxy::default();
        let rot = UnitQuaternion::from_scaled_axis(Vector3::new(0.1, 0.2, 0.3));
        let mut c = floor_contact(2.0, 1000.0);
        let x0 = Vector3::new(0.5, 0.0, 0.0);
        assert_eq!(p.add_to((&x0, &rot), |_| None, &mut c).0, Vector3::zeros());
        assert_eq!(p.anchor(), Some(x0));
        assert_eq!(p.anchor_rotation(), Some(rot));
        let mut c = floor_contact(2.0, 1000.0);
        let x1 = x0 + Vector3::new(0.001, 0.0, 0.0);
        let (f, t) = p.add_to((&x1, &rot), |_| None, &mut c);
        assert!((f - Vector3::new(-1.0, 0.0, 0.0)).norm() < 1e-12);
        assert_eq!(t, Vector3::zeros());
        assert!((c.dforce_dx[(0, 0)] + 1000.0).abs() < 1e-12);
        let spring =
            -(Matrix3::identity() - Vector3::z() * Vector3::z().transpose()) * (x1 - x0) * 1000.0;
        assert!((f - spring).norm() < 1e-15);
        let mut free = PointContact::zero();
        p.add_to((&x0, &rot), |_| None, &mut free);
        assert_eq!(p.anchor(), None);
        assert_eq!(free, PointContact::zero());
    }

    fn patch_frame() -> ContactFrame {
        ContactFrame {
            normal: Vector3::new(0.2, 1.0, -0.1).normalize(),
            load: 2.0,
            stiffness: 1000.0,
            patch: Patch {
                centre: Point3::new(0.03, -0.02, 0.01),
                radius: 0.012,
                radius_sq: 1.8e-4,
            },
        }
    }

    /// The stick wrench's gradients against central differences in a world translation
    /// and a world rotation vector (the patch fixed in the world, as in the coupling's
    /// solve): exact at the anchor pose (the spring is linear there up to the rotation
    /// vector's own curvature, tolerance 1e-6 of the largest entry), and within 1e-3 at a
    /// pose turned 1e-4 rad and moved 1 mm from it (the rotation vector's Jacobian differs
    /// from the identity by the order of the angle).
    #[test]
    fn stick_wrench_gradients_match_differences() {
        let frame = patch_frame();
        let rot = UnitQuaternion::from_scaled_axis(Vector3::new(0.3, -0.2, 0.5));
        let x = Vector3::new(0.01, 0.02, -0.01);
        let anchored = (x, rot);
        let offset = (
            x - Vector3::new(1e-3, -5e-4, 2e-4),
            UnitQuaternion::from_scaled_axis(Vector3::new(0.0, 1e-4, 5e-5)) * rot,
        );
        for (anchor, tol) in [(anchored, 1e-6), (offset, 1e-3)] {
            let w = stick_wrench(&frame, &x, &rot, &anchor);
            let h = 1e-7;
            let scale = w.dforce_dx.abs().max().max(w.dtorque_dw.abs().max() / 1e-4);
            for i in 0..3 {
                let e = Vector3::ith(i, h);
                let dx = |s: f64| stick_wrench(&frame, &(x + e * s), &rot, &anchor);
                let dw = |s: f64| {
                    let r = UnitQuaternion::from_scaled_axis(e * s) * rot;
                    stick_wrench(&frame, &x, &r, &anchor)
                };
                let (px, mx, pw, mw) = (dx(1.0), dx(-1.0), dw(1.0), dw(-1.0));
                let cols = [
                    (
                        (px.force - mx.force) / (2.0 * h),
                        w.dforce_dx.column(i).into_owned(),
                        1.0,
                    ),
                    (
                        (pw.force - mw.force) / (2.0 * h),
                        w.dforce_dw.column(i).into_owned(),
                        1e-2,
                    ),
                    (
                        (px.torque - mx.torque) / (2.0 * h),
                        w.dtorque_dx.column(i).into_owned(),
                        1e-2,
                    ),
                    (
                        (pw.torque - mw.torque) / (2.0 * h),
                        w.dtorque_dw.column(i).into_owned(),
                        1e-4,
                    ),
                ];
                for (k, (fd, analytic, unit)) in cols.iter().enumerate() {
                    // Each block in its own units (N/m, N/rad, N m/m, N m/rad: the lever is
                    // about 4 cm).
                    assert!(
                        (fd - analytic).norm() <= tol * scale * unit + 1e-6 * scale * unit,
                        "block {k}, column {i}: {fd} vs {analytic}"
                    );
                }
            }
            // At the anchor (no force yet) the stiffness is a spring's: symmetric in
            // (x, w).
            if w.force == Vector3::zeros() {
                assert!((w.dforce_dw.transpose() - w.dtorque_dx).norm() < 1e-9 * scale);
            }
        }
    }

    /// Twist alone: the patch holds below `mu_s N rho`, breaks away above it, and the
    /// anchor then trails so that the torsional spring gives `mu_d N rho` against the
    /// pull's twist; a tangential pull and a twist together stick inside the ellipse
    /// `|f|^2 + (tau / rho)^2 <= (mu_s N)^2` and slide outside it.
    #[test]
    fn twist_sticks_then_slides_on_the_soft_finger_ellipse() {
        let f = Friction {
            static_coefficient: 0.6,
            dynamic_coefficient: 0.4,
        };
        let mut frame = patch_frame();
        let x = Vector3::new(0.01, 0.02, -0.01);
        frame.patch.centre = Point3::from(x);
        let n = frame.normal;
        let rot = UnitQuaternion::identity();
        let anchor = (x, rot);
        let (load, rho) = (frame.load, frame.patch.radius);
        let limit = 0.6 * load * rho;
        let zero = Vector3::zeros();
        let update = |pull: &Vector3<f64>, torque: &Vector3<f64>| {
            coulomb_update(&f, &frame, (&x, &rot), &anchor, (pull, torque), false)
        };
        // Below the static limit (its normal part counts; a tipping torque does not).
        let tipping = n.cross(&Vector3::x()).normalize();
        let (a, slip) = update(&zero, &(n * (0.95 * limit) + tipping * 5.0));
        assert!(!slip);
        assert_eq!(a, anchor);
        // Above it: slides, the spring gives mu_d N rho against the twist.
        let (a, slip) = update(&zero, &(n * (1.05 * limit)));
        assert!(slip);
        let w = stick_wrench(&frame, &x, &rot, &a);
        let kinetic = 0.4 * load * rho;
        assert!(
            (w.torque.dot(&n) + kinetic).abs() < 1e-9 * kinetic,
            "{}",
            w.torque.dot(&n)
        );
        assert!(w.force.norm() < 1e-12);
        // Force and twist together: inside the ellipse sticks, outside slides.
        let t = Vector3::x() - n * n.x;
        let t = t.normalize();
        for (share, sticks) in [(0.69, true), (0.72, false)] {
            // |f| = tau / rho = share mu_s N: e = sqrt(2) share mu_s N.
            let pull = t * (share * 0.6 * load);
            let pull_torque = n * (share * 0.6 * load * rho);
            let (_, slip) = update(&pull, &pull_torque);
            assert_eq!(!slip, sticks, "share {share}");
        }
    }

    /// The patch of four equal forces at the corners of a square of half-side `a` about
    /// its centre: the centre, mean distance `a sqrt 2`, mean square `2 a^2`; weighted by
    /// force and scale; `None` without force.
    #[test]
    fn patch_of_contacts_is_the_centre_of_pressure() {
        let a = 0.02;
        let point = |x: f64, z: f64, f: f64| ContactPoint {
            point: 0,
            depth: -1e-3,
            position: Point3::new(0.1 + x, 0.0, 0.2 + z),
            normal: Vector3::y(),
            force: Vector3::new(0.0, f, 0.0),
        };
        let pts = [
            point(a, a, 1.0),
            point(-a, a, 1.0),
            point(a, -a, 1.0),
            point(-a, -a, 1.0),
        ];
        let p = Patch::of_contacts(pts.iter().map(|c| (c, 0.5)), &Vector3::y()).unwrap();
        assert!((p.centre - Point3::new(0.1, 0.0, 0.2)).norm() < 1e-15);
        assert!((p.radius - a * 2f64.sqrt()).abs() < 1e-15);
        assert!((p.radius_sq - 2.0 * a * a).abs() < 1e-15);
        // A heavier corner pulls the centre towards it.
        let heavy = [point(a, a, 3.0), point(-a, -a, 1.0)];
        let p = Patch::of_contacts(heavy.iter().map(|c| (c, 1.0)), &Vector3::y()).unwrap();
        assert!((p.centre - Point3::new(0.1 + a / 2.0, 0.0, 0.2 + a / 2.0)).norm() < 1e-15);
        let none = [point(a, a, 0.0)];
        assert!(Patch::of_contacts(none.iter().map(|c| (c, 1.0)), &Vector3::y()).is_none());
    }
}
