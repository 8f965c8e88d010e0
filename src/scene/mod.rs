//! Scenes: what a haptic session simulates, loaded from a TOML file and its baked caches.
//!
//! A scene has one **haptic object**, held through the device by static virtual coupling
//! and represented by its signed distance field (rigid, or deformable through the deformed
//! distance field of thesis 3.12), and any number of **environment objects**, represented
//! by pointshells (rigid, or reduced-deformable with their own implicit Newmark
//! integrator). This module defines the loaded form; [`format`](mod@format) defines the TOML scene
//! file, [`load_scene`] builds the loaded form from it (with the expensive pieces cached on
//! disk by [`cache`]), and [`error`] the typed errors of both.

pub mod cache;
pub mod error;
pub mod format;
mod load;
pub mod params;
pub use load::{load_scene, load_scene_with_report, LoadReport};

use nalgebra::{Isometry3, Point3};

use crate::contact::continuous;
use crate::contact::{
    continuous::CycleMotion, continuous::ShellSweep, continuous::SweepParams,
    continuous::SweepResult, deformed_field::DeformedDistanceField, distance::DistanceQuery,
    distance::ExactField, params::ContactParams, ContactOutput, ContactShell, Poses, Traversal,
};
use crate::coupling::CouplingParams;
use crate::dynamics::object::ObjectDynamics;
use crate::geometry::SignedDistanceField;
use crate::mesh::SurfaceMesh;
use params::{Param, Settings};

/// The distance field of the haptic object.
#[derive(Debug, Clone)]
pub enum HapticField {
    /// A rigid haptic object: its signed distance field in the body frame.
    Rigid(SignedDistanceField),
    /// A rigid haptic object too thin for its grid: queried exactly through its mesh
    /// ([`ExactField`]).
    Exact(Box<ExactField>),
    /// A reduced-deformable haptic object: its deformed field and its dynamics.
    Deformable {
        /// The deformed distance field (thesis 3.12), following `dynamics.q`.
        field: Box<DeformedDistanceField>,
        /// The object's reduced implicit Newmark integrator.
        dynamics: Box<ObjectDynamics>,
    },
}

impl HapticField {
    /// The reduced dynamics of a deformable haptic object.
    pub fn dynamics(&self) -> Option<&ObjectDynamics> {
        match self {
            HapticField::Rigid(_) | HapticField::Exact(_) => None,
            HapticField::Deformable { dynamics, .. } => Some(dynamics),
        }
    }

    /// The reduced dynamics of a deformable haptic object, to step or edit.
    pub fn dynamics_mut(&mut self) -> Option<&mut ObjectDynamics> {
        match self {
            HapticField::Rigid(_) | HapticField::Exact(_) => None,
            HapticField::Deformable { dynamics, .. } => Some(dynamics),
        }
    }

    /// The deformed distance field of a deformable haptic object.
    pub fn deformed(&self) -> Option<&DeformedDistanceField> {
        match self {
            HapticField::Rigid(_) | HapticField::Exact(_) => None,
            HapticField::Deformable { field, .. } => Some(field),
        }
    }

    /// The basis size r (0 for a rigid object).
    pub fn r(&self) -> usize {
        self.dynamics().map_or(0, ObjectDynamics::r)
    }

    /// The reduced coordinates q (empty for a rigid object).
    pub fn q(&self) -> &[f64] {
        self.dynamics().map_or(&[], |d| &d.q)
    }

    /// Brings the deformed field up to the current q (no-op for a rigid object).
    pub fn update_deformation(&mut self) {
        if let HapticField::Deformable { field, dynamics } = self {
            field.update(&dynamics.q);
        }
    }

    /// The signed distance at body-frame point `p` (negative inside).
    pub fn distance(&self, p: &Point3<f64>) -> f64 {
        match self {
            HapticField::Rigid(sdf) => sdf.distance(p),
            HapticField::Exact(f) => f.distance(p),
            HapticField::Deformable { field, .. } => field.distance(p),
        }
    }

    /// The gradient of [`HapticField::distance`] at body-frame point `p`: the rigid
    /// field's own (of its trilinear interpolant), central differences of the deformed
    /// one (a step of 1e-4 of a cell).
    pub fn gradient(&self, p: &Point3<f64>) -> nalgebra::Vector3<f64> {
        match self {
            HapticField::Rigid(sdf) => sdf.gradient(p),
            HapticField::Exact(f) => central_gradient(f.as_ref(), 1e-4 * f.grid.spacing, p),
            HapticField::Deformable { field, .. } => {
                central_gradient(field.as_ref(), 1e-4 * field.rest_field().spacing, p)
            }
        }
    }

    /// The Lipschitz constant the sweep uses for this field (1 where the field gives
    /// none: the deformed field, whose blend is not bounded).
    pub fn lipschitz(&self) -> f64 {
        match self {
            HapticField::Rigid(sdf) => continuous::lipschitz(sdf),
            HapticField::Exact(f) => continuous::lipschitz(f.as_ref()),
            HapticField::Deformable { field, .. } => continuous::lipschitz(field.as_ref()),
        }
    }

    /// The safe fraction of the held object's `motion` against an environment pointshell
    /// ([`crate::contact::continuous`]), statically dispatched like [`Self::traverse`].
    /// `traversal`, if given, is this cycle's traversal of the pair at the motion's start
    /// (its temporal-coherence bounds and lookups prune the search). With `continued`, the
    /// motion continues the last one swept (a slide) and reuses its gathered points
    /// ([`ShellSweep::continue_contact`]).
    #[allow(clippy::too_many_arguments)]
    pub fn sweep(
        &self,
        sweep: &mut ShellSweep,
        shell: &ContactShell,
        shell_pose: &Isometry3<f64>,
        q: &[f64],
        motion: &CycleMotion,
        params: &SweepParams,
        traversal: Option<&Traversal>,
        continued: bool,
    ) -> SweepResult {
        #[allow(clippy::too_many_arguments)]
        fn run<D: DistanceQuery>(
            sweep: &mut ShellSweep,
            shell: &ContactShell,
            field: &D,
            pose: &Isometry3<f64>,
            q: &[f64],
            motion: &CycleMotion,
            params: &SweepParams,
            traversal: Option<&Traversal>,
            continued: bool,
        ) -> SweepResult {
            if continued {
                sweep.continue_contact(shell, field, pose, q, motion, params)
            } else {
                sweep.first_contact(shell, field, pose, q, motion, params, traversal)
            }
        }
        let (s, p, t, c) = (sweep, shell_pose, traversal, continued);
        match self {
            HapticField::Rigid(sdf) => run(s, shell, sdf, p, q, motion, params, t, c),
            HapticField::Exact(f) => run(s, shell, f.as_ref(), p, q, motion, params, t, c),
            HapticField::Deformable { field, .. } => {
                run(s, shell, field.as_ref(), p, q, motion, params, t, c)
            }
        }
    }

    /// A traversal of an environment pointshell against this field (with proxy caches
    /// against a deformed field, [`Traversal::for_field`]).
    pub fn new_traversal(&self, shell: &ContactShell, params: ContactParams) -> Traversal {
        match self {
            HapticField::Deformable { field, .. } => {
                Traversal::for_field(shell, params, field.as_ref())
            }
            _ => Traversal::new(shell, params),
        }
    }

    /// The buffers of sweeps of an environment pointshell against this field (with proxy
    /// caches against a deformed field, [`ShellSweep::for_field`]).
    pub fn new_sweep(&self, shell: &ContactShell) -> ShellSweep {
        match self {
            HapticField::Deformable { field, .. } => ShellSweep::for_field(shell, field.as_ref()),
            _ => ShellSweep::new(shell),
        }
    }

    /// Traverses an environment pointshell against this field (thesis 3.10), statically
    /// dispatched to the rigid or the deformed field.
    pub fn traverse(
        &self,
        traversal: &mut Traversal,
        shell: &ContactShell,
        poses: &Poses,
        q: &[f64],
        out: &mut ContactOutput,
    ) {
        match self {
            HapticField::Rigid(sdf) => traversal.run(shell, sdf, poses, q, out),
            HapticField::Exact(f) => traversal.run(shell, f.as_ref(), poses, q, out),
            HapticField::Deformable { field, .. } => {
                traversal.run(shell, field.as_ref(), poses, q, out)
            }
        }
    }
}

/// Central differences of `field` at `p` with step `h`.
fn central_gradient<D: DistanceQuery>(
    field: &D,
    h: f64,
    p: &Point3<f64>,
) -> nalgebra::Vector3<f64> {
    nalgebra::Vector3::from_fn(|i, _| {
        let e = nalgebra::Vector3::ith(i, h);
        (field.distance(&(p + e)) - field.distance(&(p - e))) / (2.0 * h)
    })
}

/// The object held through the device.
#[derive(Debug, Clone)]
pub struct HapticObject {
    /// Name from the scene file.
    pub name: String,
    /// Its signed distance field: rigid, or deformed with its reduced dynamics.
    pub field: HapticField,
    /// Body-frame grasp point: the virtual coupling acts here, torques are about it.
    pub grasp: Point3<f64>,
    /// Initial world pose of the body frame.
    pub pose: Isometry3<f64>,
    /// The surface, for display.
    pub surface: SurfaceMesh,
    /// Per surface vertex, the 3 x r rows of the render basis (row-major, f32), for
    /// u = U q on the render thread; empty for a rigid haptic object.
    pub render_basis: Vec<f32>,
    /// The thinnest local half-thickness of the solid (scene units), if measured
    /// ([`crate::geometry::thickness`]): it caps the continuous contact's penetration
    /// limit.
    pub min_half_thickness: Option<f64>,
}

/// An object of the environment, sampled by a pointshell.
#[derive(Debug, Clone)]
pub struct EnvironmentObject {
    /// Name from the scene file.
    pub name: String,
    /// Its pointshell (body frame), with the nested tree and, if deformable, its modes.
    pub shell: ContactShell,
    /// World pose of the body frame (fixed).
    pub pose: Isometry3<f64>,
    /// Reduced dynamics of a deformable object (its `r` equals `shell.r()`).
    pub dynamics: Option<ObjectDynamics>,
    /// The surface, for display.
    pub surface: SurfaceMesh,
    /// Per surface vertex, the 3 x r rows of the render basis (row-major, f32), for
    /// u = U q on the render thread; empty for rigid objects.
    pub render_basis: Vec<f32>,
}

impl EnvironmentObject {
    /// The reduced coordinates q (empty for a rigid object).
    pub fn q(&self) -> &[f64] {
        self.dynamics.as_ref().map_or(&[], |d| &d.q)
    }
}

/// A loaded scene, ready for the haptic loop.
#[derive(Debug, Clone)]
pub struct Scene {
    /// Scene name (from the file, or its stem).
    pub name: String,
    /// What the scene shows and what to try in it (may be empty).
    pub description: String,
    /// The object held through the device.
    pub haptic: HapticObject,
    /// The pointshell objects the haptic object touches.
    pub environment: Vec<EnvironmentObject>,
    /// Contact settings, copied into every environment object's traversal.
    pub contact: ContactParams,
    /// Virtual coupling settings (`dt` is 1 / `rate_hz`).
    pub coupling: CouplingParams,
    /// Device metres per simulation unit (thesis 4.5).
    pub workspace_scale: f64,
    /// Haptic rate (Hz).
    pub rate_hz: f64,
}

impl Scene {
    /// The scene's reduced integrators (environment objects, then the haptic object).
    pub fn dynamics_mut(&mut self) -> impl Iterator<Item = &mut ObjectDynamics> {
        self.environment
            .iter_mut()
            .filter_map(|e| e.dynamics.as_mut())
            .chain(self.haptic.field.dynamics_mut())
    }

    /// The tunable settings (the dynamics settings of the first reduced object, since
    /// edits apply to all of them).
    pub fn settings(&self) -> Settings {
        let dynamics = self
            .environment
            .iter()
            .filter_map(|e| e.dynamics.as_ref())
            .chain(self.haptic.field.dynamics())
            .next();
        Settings {
            contact: self.contact,
            coupling: self.coupling,
            material_scale: dynamics.map_or(1.0, |d| d.params.material_scale),
            modes_used: dynamics.map_or(usize::MAX, |d| d.params.active_modes),
            activation: dynamics.map_or(0.0, |d| d.params.activation),
        }
    }

    /// Sets a tunable parameter (clamped into its range), before a session starts; a
    /// running session takes [`crate::haptic::Command::Set`] instead.
    pub fn set(&mut self, param: Param, value: f64) {
        let mut s = self.settings();
        param.set(&mut s, value);
        self.contact = s.contact;
        self.coupling = s.coupling;
        for d in self.dynamics_mut() {
            d.params.material_scale = s.material_scale;
            d.params.active_modes = s.modes_used;
            d.params.activation = s.activation;
        }
    }
}
