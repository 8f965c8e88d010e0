//! The reduced force model of a scene object: the cubic StVK polynomial (Barbic 2007,
//! 2.4) or, for an active muscle, optimized cubature of the fibre material (An, Kim and
//! James 2008; [`crate::muscle::reduced`]). One enum, so that every scene object steps
//! through one [`ReducedNewmark`](super::ReducedNewmark) type and the haptic loop needs no
//! generics or virtual calls.

use crate::fem::blemker::MuscleMaterial;
use crate::reduction::cubature::{CubatureForces, CubatureScratch};
use crate::reduction::evaluator::{EvalScratch, ReducedForces, ReducedInternalForces};

/// The internal force model of a reduced scene object.
#[derive(Debug, Clone)]
pub enum ObjectForces {
    /// StVK's cubic reduced-force polynomial.
    Polynomial(ReducedForces),
    /// Optimized cubature of the active muscle material; the activation is a run-time
    /// input.
    Muscle(Box<CubatureForces<MuscleMaterial>>),
}

/// Scratch buffers of [`ObjectForces`].
#[derive(Debug, Clone)]
pub enum ObjectScratch {
    /// For the polynomial.
    Polynomial(EvalScratch),
    /// For the cubature.
    Muscle(CubatureScratch),
}

impl From<ReducedForces> for ObjectForces {
    fn from(f: ReducedForces) -> Self {
        ObjectForces::Polynomial(f)
    }
}

impl ReducedInternalForces for ObjectForces {
    type Scratch = ObjectScratch;
    fn r(&self) -> usize {
        match self {
            ObjectForces::Polynomial(p) => p.r(),
            ObjectForces::Muscle(c) => c.r(),
        }
    }
    fn scratch(&self) -> ObjectScratch {
        match self {
            ObjectForces::Polynomial(p) => ObjectScratch::Polynomial(p.scratch()),
            ObjectForces::Muscle(c) => ObjectScratch::Muscle(c.scratch()),
        }
    }
    fn evaluate(&self, q: &[f64], force: &mut [f64], stiffness: &mut [f64], s: &mut ObjectScratch) {
        match (self, s) {
            (ObjectForces::Polynomial(p), ObjectScratch::Polynomial(s)) => {
                p.evaluate(q, force, stiffness, s)
            }
            (ObjectForces::Muscle(c), ObjectScratch::Muscle(s)) => {
                c.evaluate(q, force, stiffness, s)
            }
            // Scratch comes from `scratch()` of the same model; a mismatch is a bug.
            _ => unreachable!("scratch buffers of another force model"),
        }
    }
    fn evaluate_step(
        &self,
        q: &[f64],
        force: &mut [f64],
        stiffness: &mut [f64],
        s: &mut ObjectScratch,
    ) {
        match (self, s) {
            (ObjectForces::Polynomial(p), ObjectScratch::Polynomial(s)) => {
                p.evaluate(q, force, stiffness, s)
            }
            (ObjectForces::Muscle(c), ObjectScratch::Muscle(s)) => {
                c.evaluate_step(q, force, stiffness, s)
            }
            _ => unreachable!("scratch buffers of another force model"),
        }
    }
    fn restart(&self, s: &mut ObjectScratch) {
        if let ObjectScratch::Muscle(s) = s {
            s.restart();
        }
    }
    fn energy(&self, q: &[f64]) -> Option<f64> {
        match self {
            ObjectForces::Polynomial(_) => None,
            ObjectForces::Muscle(c) => Some(c.strain_energy(q)),
        }
    }
    fn set_activation(&mut self, alpha: f64) {
        if let ObjectForces::Muscle(c) = self {
            c.set_activation(alpha);
        }
    }
}

/// The reduced integrator of a scene object.
pub type ObjectDynamics = super::ReducedNewmark<ObjectForces>;
