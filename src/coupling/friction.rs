//! Coulomb friction rendered through the virtual coupling: a stick/slip proxy for the
//! whole held object (in the spirit of the friction cone of Salisbury et al.'s god-object
//! and Ruspini's proxy, applied to the 6-DOF coupling of thesis Chapter 4).
//!
//! While the held object touches the environment, its grasp point is tied in the contact's
//! tangent plane to an anchor by a spring of the contact's own normal stiffness:
//!
//! ```text
//! n   = F_C / |F_C|                    (net contact normal, out of the environment)
//! N   = |F_C|                          (normal load)
//! k_t = -n^T (dF_C/dx) n               (normal contact stiffness, used tangentially)
//! s   = (I - n n^T) (x - a)            (tangential offset from the anchor a)
//! F_f = -k_t s,     dF_f/dx = -k_t (I - n n^T)
//! ```
//!
//! `F_f` joins the contact wrench in the coupling's 6x6 equilibrium, so it is felt
//! exactly like contact: through the coupling spring on the device. After each step the
//! anchor obeys Coulomb's law on the tangential force friction must supply, the
//! coupling's pull `P F_VC`: the contact sticks while `|P F_VC| <= mu_s N`; beyond, the
//! object breaks away and the anchor trails it so that `|F_f| = mu_d N` against the pull
//! (slip), a kinetic force without stiffness; slipping stops when the pull falls below
//! `0.9 mu_d N` (a margin against chatter, [`RESTICK`]). The drop from `mu_s N` to `mu_d N` at break-away is the stick-slip the hand
//! feels.
//!
//! **Why one proxy for the object rather than a cone per contact point.** A cone per
//! point needs a tangential anchor per point that persists across cycles; the pointshell
//! points in contact change with the level of detail the budget allows (thesis 3.10), so
//! per-point anchors would be created and dropped as the traversal deepens or coarsens,
//! and the friction felt would depend on the node budget (a replay at another budget
//! would slide differently). The coupling already reduces all contacts to one wrench on
//! one rigid pose; one anchor on that pose is independent of the point set, costs a
//! handful of flops, and is passive (a spring whose rest point only moves to release
//! energy). Its limits: the friction force acts at the grasp point (no friction torque,
//! torsional or from the lever arm of the contact), and the normal is the net one, so a
//! part pinched between two opposite walls (net contact force near zero) feels little
//! friction. Both are stated in docs/contact.md.

use nalgebra::{Matrix3, Vector3};

pub use crate::contact::model::Friction;
use crate::contact::model::PointContact;

/// The net contact normal `n`, normal load `N` and normal stiffness `k_t` of a contact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactFrame {
    /// Unit net contact normal (out of the environment).
    pub normal: Vector3<f64>,
    /// Normal load `N = |F_C|` (N).
    pub load: f64,
    /// Normal contact stiffness `k_t = -n^T (dF_C/dx) n` (N/m).
    pub stiffness: f64,
}

impl ContactFrame {
    /// The tangential part `(I - n n^T) v` of `v`.
    pub fn tangential(&self, v: &Vector3<f64>) -> Vector3<f64> {
        v - self.normal * self.normal.dot(v)
    }
}

/// The contact frame of a contact wrench, if it presses (`|F_C| > 0` and a positive
/// normal stiffness).
pub fn contact_frame(contact: &PointContact) -> Option<ContactFrame> {
    let load = contact.force.norm();
    if !(load > 0.0 && load.is_finite()) {
        return None;
    }
    let normal = contact.force / load;
    let stiffness = -(normal.transpose() * contact.dforce_dx * normal)[0];
    (stiffness > 0.0 && stiffness.is_finite()).then_some(ContactFrame {
        normal,
        load,
        stiffness,
    })
}

/// The tangential spring `F_f = -k_t (I - n n^T)(x - a)` and its gradient in `x`.
pub fn tangential_spring(
    x: &Vector3<f64>,
    anchor: &Vector3<f64>,
    n: &Vector3<f64>,
    k_t: f64,
) -> (Vector3<f64>, Matrix3<f64>) {
    let p = Matrix3::identity() - n * n.transpose();
    let s = p * (x - anchor);
    (-s * k_t, -p * k_t)
}

/// A sliding contact sticks again once the pull falls below this fraction of the
/// kinetic force `mu_d N`: the margin keeps the normal load's small fluctuations (points
/// entering and leaving the contact as the object slides) from re-sticking a steady
/// slide, which would then need `mu_s N` again and chatter.
pub const RESTICK: f64 = 0.9;

/// Coulomb's law on the anchor after a step: returns the new anchor and whether the
/// contact slides. `x` is the grasp point after the step and `pull` the force the rest of
/// the system (the coupling) exerts on the object; friction must supply its tangential
/// part `P pull` to hold the object.
///
/// - Sticking: it holds while `|P pull| <= mu_s N`; beyond, it breaks away.
/// - Sliding: the anchor trails the object so that the spring gives
///   `min(mu_d N, |P pull|)` against the pull (kinetic friction never reverses the
///   motion); once `|P pull| < 0.9 mu_d N` ([`RESTICK`]) it sticks, with the anchor
///   where the spring balances the pull (no jump in force).
///
/// The kinetic force follows the pull's direction, not the motion's: along the motion,
/// a small sideways wobble would turn the friction sideways and feed the wobble, an
/// instability of the quasi-static step; along the pull the object slides toward the
/// hand, which damps any wobble.
pub fn coulomb_update(
    friction: &Friction,
    frame: &ContactFrame,
    x: &Vector3<f64>,
    anchor: &Vector3<f64>,
    pull: &Vector3<f64>,
    slipping: bool,
) -> (Vector3<f64>, bool) {
    let (mu_s, mu_d) = (
        friction.static_coefficient,
        friction
            .dynamic_coefficient
            .min(friction.static_coefficient),
    );
    let (load, k_t) = (frame.load, frame.stiffness);
    let tangential = frame.tangential(pull);
    let needed = tangential.norm();
    let kinetic = mu_d * load;
    if !slipping && needed <= mu_s * load {
        (*anchor, false)
    } else if slipping && needed < RESTICK * kinetic {
        (x - tangential / k_t, false)
    } else {
        let magnitude = kinetic.min(needed);
        (x - tangential * (magnitude / (needed * k_t)), true)
    }
}

/// The stick/slip state of the held object.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrictionProxy {
    /// The anchor of the grasp point (world), while in contact.
    anchor: Option<Vector3<f64>>,
    /// Whether the contact is sliding.
    slipping: bool,
}

impl FrictionProxy {
    /// Whether the contact is sliding.
    pub fn slipping(&self) -> bool {
        self.slipping
    }

    /// The anchor of the grasp point, while in contact.
    pub fn anchor(&self) -> Option<Vector3<f64>> {
        self.anchor
    }

    /// Forgets the anchor (after a teleport or a reset).
    pub fn reset(&mut self) {
        *self = FrictionProxy::default();
    }

    /// Adds the friction force at grasp point `x` (before the step) to `contact` (force
    /// and `dF/dx`); starts an anchor at `x` when contact begins, and forgets it when
    /// contact ends. Returns the friction force. While sticking the spring's stiffness
    /// enters the step's equilibrium; while sliding the force is kinetic, `mu_d N`
    /// whatever the motion, so it enters without a gradient (with it, the stiff spring
    /// would hold the sliding object back and the hand would feel far more than `mu_d N`).
    pub fn add_to(&mut self, x: &Vector3<f64>, contact: &mut PointContact) -> Vector3<f64> {
        let Some(frame) = contact_frame(contact) else {
            self.reset();
            return Vector3::zeros();
        };
        let anchor = *self.anchor.get_or_insert(*x);
        let (f, grad) = tangential_spring(x, &anchor, &frame.normal, frame.stiffness);
        contact.force += f;
        if !self.slipping {
            contact.dforce_dx += grad;
        }
        f
    }

    /// Coulomb's law after the step: `x` is the grasp point after it, `contact` the
    /// contact wrench the step was solved with (without friction), `pull` the coupling's
    /// force on the object after the step.
    pub fn update(
        &mut self,
        friction: &Friction,
        x: &Vector3<f64>,
        contact: &PointContact,
        pull: &Vector3<f64>,
    ) {
        let (Some(anchor), Some(frame)) = (self.anchor, contact_frame(contact)) else {
            return;
        };
        let (a, slipping) = coulomb_update(friction, &frame, x, &anchor, pull, self.slipping);
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

    /// The gradient of the tangential spring against central differences (it is linear
    /// in x, so the difference is exact up to rounding: tolerance 1e-9 k).
    #[test]
    fn tangential_spring_gradient_matches_differences() {
        let n = Vector3::new(0.3, -0.2, 0.9).normalize();
        let a = Vector3::new(0.1, 0.2, -0.3);
        let x = Vector3::new(0.15, 0.1, -0.2);
        let k = 750.0;
        let (_, grad) = tangential_spring(&x, &a, &n, k);
        let h = 1e-6;
        for i in 0..3 {
            let e = Vector3::ith(i, h);
            let fd = (tangential_spring(&(x + e), &a, &n, k).0
                - tangential_spring(&(x - e), &a, &n, k).0)
                / (2.0 * h);
            assert!((fd - grad.column(i)).norm() < 1e-9 * k, "column {i}");
        }
        // The force lies in the tangent plane.
        assert!(tangential_spring(&x, &a, &n, k).0.dot(&n).abs() < 1e-12);
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
        };
        let spring = |x: &Vector3<f64>, a: &Vector3<f64>| {
            tangential_spring(x, a, &frame.normal, frame.stiffness).0
        };
        let a = Vector3::zeros();
        let x = Vector3::new(0.0011, 0.0, 0.0);
        // A pull of 1.1 N < mu_s N = 1.2 N holds (its normal part does not count).
        let pull = Vector3::new(1.1, 0.0, -5.0);
        assert_eq!(coulomb_update(&f, &frame, &x, &a, &pull, false), (a, false));
        // 1.3 N > 1.2 N: slips; the spring gives 0.8 N against the pull.
        let pull = Vector3::new(1.3, 0.0, 0.0);
        let (a2, slip) = coulomb_update(&f, &frame, &x, &a, &pull, false);
        assert!(slip);
        assert!((spring(&x, &a2) - Vector3::new(-0.8, 0.0, 0.0)).norm() < 1e-12);
        // Sliding, pulled by 1.0 N along y: 0.8 N against it.
        let pull = Vector3::new(0.0, 1.0, 0.0);
        let (a3, slip) = coulomb_update(&f, &frame, &x, &a2, &pull, true);
        assert!(slip);
        assert!((spring(&x, &a3) - Vector3::new(0.0, -0.8, 0.0)).norm() < 1e-12);
        // Pulled by 0.75 N (between 0.9 mu_d N and mu_d N): slides on, friction 0.75 N.
        let pull = Vector3::new(0.0, 0.75, 0.0);
        let (a4, slip) = coulomb_update(&f, &frame, &x, &a3, &pull, true);
        assert!(slip);
        assert!((spring(&x, &a4) + pull).norm() < 1e-12);
        // Pulled by 0.5 N: sticks, the spring balancing the pull.
        let pull = Vector3::new(0.0, 0.5, 0.0);
        let (a5, slip) = coulomb_update(&f, &frame, &x, &a4, &pull, true);
        assert!(!slip);
        assert!((spring(&x, &a5) + pull).norm() < 1e-12);
    }

    /// The proxy starts an anchor at first contact, adds the spring and its gradient, and
    /// forgets the anchor when contact ends.
    #[test]
    fn proxy_anchors_at_contact_and_forgets_it_after() {
        let mut p = FrictionProxy::default();
        let mut c = floor_contact(2.0, 1000.0);
        let x0 = Vector3::new(0.5, 0.0, 0.0);
        assert_eq!(p.add_to(&x0, &mut c), Vector3::zeros());
        assert_eq!(p.anchor(), Some(x0));
        let mut c = floor_contact(2.0, 1000.0);
        let f = p.add_to(&(x0 + Vector3::new(0.001, 0.0, 0.0)), &mut c);
        assert!((f - Vector3::new(-1.0, 0.0, 0.0)).norm() < 1e-12);
        assert!((c.dforce_dx[(0, 0)] + 1000.0).abs() < 1e-12);
        let mut free = PointContact::zero();
        p.add_to(&x0, &mut free);
        assert_eq!(p.anchor(), None);
        assert_eq!(free, PointContact::zero());
    }
}
