//! Scenes: what a haptic session simulates, loaded from a TOML file and its baked caches.
//!
//! A scene has one **haptic object**, held through the device by static virtual coupling
//! and represented by its signed distance field (rigid, or deformable through the deformed
//! distance field of thesis 3.12), and any number of **environment objects**, represented
//! by pointshells (rigid, or reduced-deformable with their own implicit Newmark
//! integrator). This module defines the loaded form; [`format`](mod@format) defines the TOML scene
//! file, [`load`] builds the loaded form from it (with the expensive pieces cached on
//! disk by [`cache`]), and [`error`] the typed errors of both.

pub mod cache;
pub mod error;
pub mod format;
pub mod load;

pub use error::SceneError;
pub use format::{parse_scene, SceneFile};
pub use load::{load_scene, load_scene_with_report, LoadReport, NoProgress, SceneProgress};

use nalgebra::{Isometry3, Point3};

use crate::contact::{ContactParams, ContactShell, DeformedDistanceField};
use crate::coupling::CouplingParams;
use crate::dynamics::ReducedNewmark;
use crate::geometry::SignedDistanceField;
use crate::mesh::SurfaceMesh;

/// The distance field of the haptic object.
#[derive(Debug, Clone)]
pub enum HapticField {
    Rigid(SignedDistanceField),
    /// A reduced-deformable haptic object: its deformed field and its dynamics.
    Deformable {
        field: Box<DeformedDistanceField>,
        dynamics: Box<ReducedNewmark>,
    },
}

/// The object held through the device.
#[derive(Debug, Clone)]
pub struct HapticObject {
    pub name: String,
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
}

/// An object of the environment, sampled by a pointshell.
#[derive(Debug, Clone)]
pub struct EnvironmentObject {
    pub name: String,
    pub shell: ContactShell,
    /// World pose of the body frame (fixed).
    pub pose: Isometry3<f64>,
    /// Reduced dynamics of a deformable object (its `r` equals `shell.r()`).
    pub dynamics: Option<ReducedNewmark>,
    /// The surface, for display.
    pub surface: SurfaceMesh,
    /// Per surface vertex, the 3 x r rows of the render basis (row-major, f32), for
    /// u = U q on the render thread; empty for rigid objects.
    pub render_basis: Vec<f32>,
}

/// A loaded scene, ready for the haptic loop.
#[derive(Debug, Clone)]
pub struct Scene {
    pub name: String,
    pub description: String,
    pub haptic: HapticObject,
    pub environment: Vec<EnvironmentObject>,
    pub contact: ContactParams,
    pub coupling: CouplingParams,
    /// Device metres per simulation unit (thesis 4.5).
    pub workspace_scale: f64,
    /// Haptic rate (Hz).
    pub rate_hz: f64,
}
