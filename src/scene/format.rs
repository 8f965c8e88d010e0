//! The TOML scene file: what a scene is made of, as written by a person. Parsing
//! ([`parse_scene`]) checks syntax, types, unknown keys (every table denies them, so a
//! typo is an error rather than a silently ignored setting), value ranges and that every
//! referenced file exists, without building anything; [`crate::scene::load_scene`] then builds
//! the runtime objects.
//!
//! Units are SI (metres, seconds, newtons) in simulation space; rotations are rotation
//! vectors (axis times angle, radians); paths are relative to the scene file. See
//! docs/scenes.md for a complete, annotated example.

use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};
use serde::Deserialize;

use super::error::{line_column, SceneError};
use super::params::{Param, ParamError, Settings};
use crate::contact::{model::Friction, params::ContactParams};
use crate::coupling::CouplingParams;
use crate::reduction::bake::BasisKind;

/// A parsed scene file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// The scene file (set by [`parse_scene`]; paths resolve against its directory).
    #[serde(skip)]
    pub path: PathBuf,
    /// Scene name (default: the file stem).
    pub name: Option<String>,
    /// What the scene shows and what to try in it.
    #[serde(default)]
    pub description: String,
    /// Haptic rate (Hz; default 1000).
    #[serde(default = "default_rate")]
    pub rate_hz: f64,
    /// Device metres per simulation unit (thesis 4.5; default 1).
    #[serde(default = "one")]
    pub workspace_scale: f64,
    /// The object held through the device.
    pub haptic: HapticSpec,
    /// The pointshell objects.
    #[serde(default)]
    pub environment: Vec<EnvironmentSpec>,
    /// Overrides of [`ContactParams`].
    #[serde(default)]
    pub contact: ContactSpec,
    /// Overrides of [`CouplingParams`].
    #[serde(default)]
    pub coupling: CouplingSpec,
}

fn default_rate() -> f64 {
    1000.0
}
fn one() -> f64 {
    1.0
}
fn default_sdf_resolution() -> usize {
    64
}
fn default_soup_resolution() -> usize {
    128
}
fn default_levels() -> usize {
    4
}
fn default_iterations() -> usize {
    40
}
fn default_seed() -> u64 {
    1
}
fn default_linear_modes() -> usize {
    10
}
fn default_mass() -> String {
    "consistent".into()
}

/// `[haptic]`: a distance-field object, a primitive box or a mesh.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HapticSpec {
    /// Object name, used in messages and the UI.
    pub name: String,
    /// `box`: sides of a box centred at the body origin (exclusive with `mesh`; read
    /// through [`HapticSpec::shape`]).
    #[serde(rename = "box")]
    box_size: Option<[f64; 3]>,
    /// A closed surface mesh (`.obj`, `.stl`), or a polygon soup with `soup = true`.
    mesh: Option<String>,
    /// The mesh is a polygon soup: the field of its closed offset surface.
    #[serde(default)]
    soup: bool,
    /// Cells per side of the field's cubic grid (default 64).
    #[serde(default = "default_sdf_resolution")]
    pub sdf_resolution: usize,
    /// Soup offset in cells (default [`crate::geometry::soup::DEFAULT_OFFSET`]).
    pub soup_offset: Option<f64>,
    /// Body-frame grasp point.
    #[serde(default)]
    pub grasp: [f64; 3],
    /// Initial world position of the body origin.
    #[serde(default)]
    pub position: [f64; 3],
    /// Initial world rotation (rotation vector, radians).
    #[serde(default)]
    pub rotation: [f64; 3],
    /// A reduced-deformable haptic object (deformed distance field, thesis 3.12).
    pub deformable: Option<DeformableSpec>,
    /// Query the rigid object's exact mesh distance instead of its grid (default: only
    /// where the grid's cells are wider than the object's thinnest half-thickness).
    pub exact_distance: Option<bool>,
}

/// One box of a union of disjoint boxes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    /// Sides.
    pub size: [f64; 3],
    /// Centre, in the object's body frame.
    #[serde(default)]
    pub position: [f64; 3],
}

/// `[[environment]]`: a pointshell object.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentSpec {
    /// Object name, used in messages and the UI.
    pub name: String,
    /// A closed surface mesh, or a polygon soup with `soup = true` (exclusive with
    /// `boxes`).
    mesh: Option<String>,
    /// A union of disjoint boxes (exclusive with `mesh`).
    boxes: Option<Vec<BoxSpec>>,
    /// The mesh is a polygon soup: sample its closed offset surface.
    #[serde(default)]
    soup: bool,
    /// Grid resolution of the soup's offset surface (default 128).
    #[serde(default = "default_soup_resolution")]
    pub soup_resolution: usize,
    /// Soup offset in cells (default [`crate::geometry::soup::DEFAULT_OFFSET`]).
    pub soup_offset: Option<f64>,
    /// First-level points N1 (at least 4).
    pub points: usize,
    /// Levels (levels 0..=i hold N1 * 4^i points; default 4).
    #[serde(default = "default_levels")]
    pub levels: usize,
    /// Level-set offset of the sampled surface (default 0: the surface itself).
    #[serde(default)]
    pub offset: f64,
    /// Repulsion iterations per level (default 40).
    #[serde(default = "default_iterations")]
    pub iterations: usize,
    /// Sampling seed (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// World position of the body origin.
    #[serde(default)]
    pub position: [f64; 3],
    /// World rotation (rotation vector, radians).
    #[serde(default)]
    pub rotation: [f64; 3],
    /// A reduced-deformable environment object.
    pub deformable: Option<DeformableSpec>,
}

/// `[haptic.deformable]` / `[environment.deformable]`: the reduced model, baked on load.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeformableSpec {
    /// The simulation mesh (`.veg`, TetGen `.node`/`.ele`; exclusive with
    /// `voxel_resolution`).
    volume: Option<String>,
    /// Voxelize the object (a box: a regular hex grid) with this many voxels along the
    /// longest side (exclusive with `volume`).
    voxel_resolution: Option<usize>,
    /// Fixed vertices (`.bou`); required for environment objects, absent for a free
    /// haptic object.
    pub fixed: Option<String>,
    /// Linear modes k (default 10).
    #[serde(default = "default_linear_modes")]
    pub linear_modes: usize,
    /// Basis size r (default: 2k for modal derivatives, k for linear modes).
    pub basis: Option<usize>,
    /// `modal-derivatives` (default) or `linear-modes`.
    pub basis_kind: Option<BasisKind>,
    /// `consistent` (default) or `lumped`.
    #[serde(default = "default_mass")]
    pub mass_matrix: String,
    /// Rayleigh mass damping alpha (1/s; default 0).
    #[serde(default)]
    pub damping_mass: f64,
    /// Rayleigh stiffness damping beta (s; default 0).
    #[serde(default)]
    pub damping_stiffness: f64,
    /// Environment only: how far pointshell points may lie outside the simulation mesh
    /// (default 5% of its bounding-box diagonal).
    pub max_outside: Option<f64>,
    /// Haptic only: proxies of the deformed distance field (default 40).
    pub proxies: Option<usize>,
    /// Haptic only: nearest proxies blended per query (default 5).
    pub neighbours: Option<usize>,
    /// Environment only: the fibre field of an active muscle (`.fibres` beside a tet
    /// `.veg`, docs/muscle-geometry.md). With it the object is the muscle material of
    /// [`crate::fem::blemker`] (elements of the `.veg` material named "tendon" passive, the
    /// rest active), reduced by its own basis and optimized cubature
    /// ([`crate::muscle::reduced`]), with the activation a run-time input
    /// (`dynamics.activation`).
    pub fibres: Option<String>,
    /// With `fibres`: the muscle material file (TOML, docs/muscle.md); default the
    /// built-in muscle and tendon.
    pub muscle_material: Option<String>,
    /// With `fibres`: the slices of the cubature points whose stiffness the haptic
    /// step refreshes in turn, one per step (1 to 64, default
    /// [`DEFAULT_STIFFNESS_SLICES`]; 1 refreshes all of it every step). The force is
    /// exact either way; the Newton matrix's nonlinear part lags by at most
    /// `stiffness_slices - 1` steps ([`crate::reduction::cubature::CubatureForces::evaluate_step`]).
    pub stiffness_slices: Option<usize>,
}

/// The muscle's default stiffness slices (docs/muscle.md: at r = 20 and 432 points,
/// the step's cost is the force plus an eighth of the stiffness).
pub const DEFAULT_STIFFNESS_SLICES: usize = 8;

impl DeformableSpec {
    /// The basis kind (default modal derivatives).
    pub fn kind(&self) -> BasisKind {
        self.basis_kind.unwrap_or(BasisKind::ModalDerivatives)
    }

    /// The basis size r.
    pub fn r(&self) -> usize {
        self.basis.unwrap_or(match self.kind() {
            BasisKind::LinearModes => self.linear_modes,
            _ => 2 * self.linear_modes,
        })
    }
}

/// The shape of the haptic object: exactly one of `box` and `mesh`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HapticShape<'a> {
    /// A box of these sides, centred at the body origin.
    Box([f64; 3]),
    /// A surface mesh file (relative to the scene file), a polygon soup when `soup`.
    Mesh {
        /// The file, as written in the scene.
        path: &'a str,
        /// The mesh is a polygon soup: its field is that of its closed offset surface.
        soup: bool,
    },
}

/// The shape of an environment object: exactly one of `mesh` and `boxes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EnvironmentShape<'a> {
    /// A surface mesh file (relative to the scene file), a polygon soup when `soup`.
    Mesh {
        /// The file, as written in the scene.
        path: &'a str,
        /// The mesh is a polygon soup: its offset surface is sampled.
        soup: bool,
    },
    /// A union of disjoint boxes.
    Boxes(&'a [BoxSpec]),
}

/// Where a deformable object's simulation mesh comes from: exactly one of `volume` and
/// `voxel_resolution`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VolumeSource<'a> {
    /// A volumetric mesh file (`.veg`, TetGen), relative to the scene file.
    File(&'a str),
    /// Voxelize the object with this many voxels along its longest side.
    Voxels(usize),
}

impl HapticSpec {
    /// The object's shape, or what is wrong with the `box`/`mesh` keys.
    pub fn shape(&self) -> Result<HapticShape<'_>, &'static str> {
        match (&self.box_size, &self.mesh) {
            (Some(b), None) if !self.soup => Ok(HapticShape::Box(*b)),
            (Some(_), None) => Err("`soup = true` needs `mesh`"),
            (None, Some(m)) => Ok(HapticShape::Mesh {
                path: m,
                soup: self.soup,
            }),
            (Some(_), Some(_)) => {
                Err("both `box` and `mesh` are given; expected exactly one of them")
            }
            (None, None) => Err("neither `box` nor `mesh` is given; expected exactly one of them"),
        }
    }
}

impl EnvironmentSpec {
    /// The object's shape, or what is wrong with the `mesh`/`boxes` keys.
    pub fn shape(&self) -> Result<EnvironmentShape<'_>, &'static str> {
        match (&self.mesh, &self.boxes) {
            (Some(m), None) => Ok(EnvironmentShape::Mesh {
                path: m,
                soup: self.soup,
            }),
            (None, Some(_)) if self.soup => Err("`soup = true` needs `mesh`"),
            (None, Some(b)) => Ok(EnvironmentShape::Boxes(b)),
            (Some(_), Some(_)) => {
                Err("both `mesh` and `boxes` are given; expected exactly one of them")
            }
            (None, None) => {
                Err("neither `mesh` nor `boxes` is given; expected exactly one of them")
            }
        }
    }
}

impl DeformableSpec {
    /// Where the simulation mesh comes from, or what is wrong with the
    /// `volume`/`voxel_resolution` keys.
    pub fn volume_source(&self) -> Result<VolumeSource<'_>, &'static str> {
        match (&self.volume, self.voxel_resolution) {
            (Some(v), None) => Ok(VolumeSource::File(v)),
            (None, Some(n)) => Ok(VolumeSource::Voxels(n)),
            (Some(_), Some(_)) => {
                Err("both `volume` and `voxel_resolution` are given; expected exactly one")
            }
            (None, None) => {
                Err("neither `volume` nor `voxel_resolution` is given; expected exactly one")
            }
        }
    }
}

/// `[contact]`: overrides of [`ContactParams`] (defaults: `ContactParams::default()`, or
/// `ContactParams::deformed_field()` for a deformable haptic object).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContactSpec {
    /// Penalty stiffness k_C (N/m).
    pub stiffness: Option<f64>,
    /// Warm node budget V_W (nodes per cycle).
    pub warm_budget: Option<usize>,
    /// Cold budget as a fraction of the warm one, in (0, 1].
    pub cold_fraction: Option<f64>,
    /// Contact count L above which forces are scaled by L / l.
    pub max_unscaled_contacts: Option<usize>,
    /// Skip nodes that provably cannot touch yet.
    pub temporal_coherence: Option<bool>,
    /// Continuous contact: how far the held object may go into what it touches (scene
    /// units, default 0.001); 0 turns the sweep off.
    pub max_penetration: Option<f64>,
    /// Node budget of the continuous sweep's candidate search (default 4000).
    pub sweep_budget: Option<usize>,
    /// Coulomb friction; absent is frictionless.
    pub friction: Option<FrictionSpec>,
}

/// `[contact] friction = { static = 0.6, dynamic = 0.4 }`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrictionSpec {
    /// Static coefficient (0 to 10).
    #[serde(rename = "static")]
    pub static_coefficient: f64,
    /// Dynamic coefficient (0 to the static one).
    pub dynamic: f64,
}

impl ContactSpec {
    /// The numeric overrides, by parameter.
    pub fn values(&self) -> [(Param, Option<f64>); 6] {
        [
            (Param::ContactStiffness, self.stiffness),
            (Param::WarmBudget, self.warm_budget.map(|v| v as f64)),
            (Param::ColdFraction, self.cold_fraction),
            (
                Param::MaxUnscaledContacts,
                self.max_unscaled_contacts.map(|v| v as f64),
            ),
            (Param::MaxPenetration, self.max_penetration),
            (Param::SweepBudget, self.sweep_budget.map(|v| v as f64)),
        ]
    }
}

/// `[coupling]`: overrides of [`CouplingParams`] (`dt` comes from `rate_hz`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CouplingSpec {
    /// Translational coupling stiffness k_VC (N/m).
    pub stiffness: Option<f64>,
    /// Rotational coupling stiffness (N m).
    pub torque_stiffness: Option<f64>,
    /// Saturation plateau (N); 0 for a linear spring.
    pub saturation_force: Option<f64>,
    /// Static damping alpha, in [0, 0.95].
    pub static_damping: Option<f64>,
    /// Largest simulation-object speed (m/s).
    pub max_velocity: Option<f64>,
    /// Largest simulation-object angular speed (rad/s).
    pub max_angular_velocity: Option<f64>,
    /// Singular values below this fraction of the largest are degenerate.
    pub degenerate_ratio: Option<f64>,
    /// Device limit for the rendered force (N).
    pub device_max_force: Option<f64>,
    /// Device limit for the rendered torque (N m).
    pub device_max_torque: Option<f64>,
}

impl CouplingSpec {
    /// The overrides, by parameter.
    pub fn values(&self) -> [(Param, Option<f64>); 9] {
        [
            (Param::CouplingStiffness, self.stiffness),
            (Param::TorqueStiffness, self.torque_stiffness),
            (Param::SaturationForce, self.saturation_force),
            (Param::StaticDamping, self.static_damping),
            (Param::MaxVelocity, self.max_velocity),
            (Param::MaxAngularVelocity, self.max_angular_velocity),
            (Param::DegenerateRatio, self.degenerate_ratio),
            (Param::DeviceMaxForce, self.device_max_force),
            (Param::DeviceMaxTorque, self.device_max_torque),
        ]
    }
}

/// Reads, parses and validates a scene file (nothing is built or baked).
pub fn parse_scene(path: &Path) -> Result<SceneFile, SceneError> {
    let bytes = std::fs::read(path).map_err(|source| SceneError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_scene_bytes(&bytes, path)
}

/// Parses and validates the bytes of a scene file: UTF-8 text (an invalid byte is named
/// with its line, column and offset), then as [`parse_scene_str`].
pub fn parse_scene_bytes(bytes: &[u8], path: &Path) -> Result<SceneFile, SceneError> {
    // Not `read_to_string`: its error says neither where nor which byte.
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        // The prefix before the first invalid byte is valid UTF-8.
        let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        let (line, column) = line_column(valid, at);
        SceneError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: format!(
                "expected UTF-8 text, found the invalid byte 0x{:02x} at byte offset {at}",
                bytes[at]
            ),
        }
    })?;
    parse_scene_str(text, path)
}

/// Parses and validates scene text; `path` names the file in errors and is the base of
/// relative paths.
pub fn parse_scene_str(text: &str, path: &Path) -> Result<SceneFile, SceneError> {
    let mut scene: SceneFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map_or((1, 1), |span| line_column(text, span.start));
        SceneError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    scene.path = path.to_path_buf();
    scene.validate()?;
    Ok(scene)
}

impl SceneFile {
    /// The scene name: `name`, or the file stem.
    pub fn scene_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            self.path
                .file_stem()
                .map_or_else(|| "scene".into(), |s| s.to_string_lossy().into_owned())
        })
    }

    /// `rel` resolved against the scene file's directory.
    pub fn resolve(&self, rel: &str) -> PathBuf {
        self.path
            .parent()
            .unwrap_or_else(|| Path::new("."))
            .join(rel)
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> SceneError {
        SceneError::Invalid {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn existing(&self, key: &str, rel: &str) -> Result<PathBuf, SceneError> {
        let resolved = self.resolve(rel);
        if resolved.is_file() {
            Ok(resolved)
        } else {
            Err(SceneError::MissingFile {
                path: self.path.clone(),
                key: key.to_string(),
                resolved,
            })
        }
    }

    /// Checks value ranges, exclusive keys and referenced files.
    pub fn validate(&self) -> Result<(), SceneError> {
        // The haptic thread runs from 100 Hz (below, contact is no longer felt as stiff)
        // to 10 kHz (its scheduler's limit).
        self.within("rate_hz", self.rate_hz, 100.0, 10_000.0)?;
        // Beyond these, a device's millimetres map to absurd scene distances (or none).
        self.within("workspace_scale", self.workspace_scale, 1e-6, 1e6)?;
        self.validate_haptic()?;
        for (i, e) in self.environment.iter().enumerate() {
            self.validate_environment(i, e)?;
        }
        self.validate_overrides()
    }

    /// Checks the `[haptic]` table.
    fn validate_haptic(&self) -> Result<(), SceneError> {
        let h = &self.haptic;
        let soup_key = |m: &str| {
            if m.contains("soup") {
                "haptic.soup"
            } else {
                "haptic"
            }
        };
        match h.shape().map_err(|m| self.invalid(soup_key(m), m))? {
            HapticShape::Box(b) => self.sides("haptic.box", &b)?,
            HapticShape::Mesh { path, .. } => {
                self.existing("haptic.mesh", path)?;
            }
        }
        self.resolution("haptic.sdf_resolution", h.sdf_resolution)?;
        if let Some(o) = h.soup_offset {
            self.within("haptic.soup_offset", o, f64::MIN_POSITIVE, MAX_SOUP_OFFSET)?;
        }
        self.position3("haptic.grasp", &h.grasp)?;
        self.position3("haptic.position", &h.position)?;
        self.rotation3("haptic.rotation", &h.rotation)?;
        if let Some(d) = &h.deformable {
            self.deformable("haptic.deformable", d, true)?;
        }
        Ok(())
    }

    /// Checks the `[[environment]]` table `i`.
    fn validate_environment(&self, i: usize, e: &EnvironmentSpec) -> Result<(), SceneError> {
        let key = |k: &str| format!("environment[{i}].{k}");
        let shape = e.shape().map_err(|m| {
            let k = if m.contains("soup") {
                key("soup")
            } else {
                format!("environment[{i}]")
            };
            self.invalid(&k, m)
        })?;
        match shape {
            EnvironmentShape::Mesh { path, .. } => {
                self.existing(&key("mesh"), path)?;
            }
            EnvironmentShape::Boxes(boxes) => {
                if boxes.is_empty() {
                    return Err(self.invalid(&key("boxes"), "expected at least one box"));
                }
                for (j, b) in boxes.iter().enumerate() {
                    self.sides(&key(&format!("boxes[{j}].size")), &b.size)?;
                    self.position3(&key(&format!("boxes[{j}].position")), &b.position)?;
                }
            }
        }
        self.resolution(&key("soup_resolution"), e.soup_resolution)?;
        if let Some(o) = e.soup_offset {
            self.within(&key("soup_offset"), o, f64::MIN_POSITIVE, MAX_SOUP_OFFSET)?;
        }
        self.validate_pointshell(i, e)?;
        self.position3(&key("position"), &e.position)?;
        self.rotation3(&key("rotation"), &e.rotation)?;
        if let Some(d) = &e.deformable {
            self.deformable(&key("deformable"), d, false)?;
        }
        Ok(())
    }

    /// Checks the pointshell parameters of environment object `i`: points, iterations,
    /// levels and offset.
    fn validate_pointshell(&self, i: usize, e: &EnvironmentSpec) -> Result<(), SceneError> {
        let key = |k: &str| format!("environment[{i}].{k}");
        if e.points > MAX_POINTS {
            return Err(self.invalid(
                &key("points"),
                format!(
                    "{}; expected at most {MAX_POINTS} first-level points",
                    e.points
                ),
            ));
        }
        if e.iterations > MAX_ITERATIONS {
            return Err(self.invalid(
                &key("iterations"),
                format!("{}; expected at most {MAX_ITERATIONS}", e.iterations),
            ));
        }
        if e.points < 4 {
            return Err(self.invalid(
                &key("points"),
                format!(
                    "{} first-level points; expected at least 4 (a tetrahedron's worth)",
                    e.points
                ),
            ));
        }
        if e.levels == 0 || e.levels > 12 {
            return Err(self.invalid(
                &key("levels"),
                format!("{} levels; expected 1 to 12", e.levels),
            ));
        }
        if !(e.offset.is_finite() && e.offset >= 0.0) {
            return Err(self.invalid(
                &key("offset"),
                format!("{}; expected a finite offset >= 0", e.offset),
            ));
        }
        Ok(())
    }

    /// Checks the `[contact]` and `[coupling]` overrides.
    fn validate_overrides(&self) -> Result<(), SceneError> {
        for (param, value) in self
            .contact
            .values()
            .into_iter()
            .chain(self.coupling.values())
        {
            if let Some(v) = value {
                param.validate(v).map_err(|e| {
                    let ParamError::OutOfRange { expected, .. } = e else {
                        return self.invalid(param.spec().key, e.to_string());
                    };
                    self.invalid(param.spec().key, format!("{v}; expected {expected}"))
                })?;
            }
        }
        if let Some(f) = &self.contact.friction {
            self.within("contact.friction.static", f.static_coefficient, 0.0, 10.0)?;
            self.within(
                "contact.friction.dynamic",
                f.dynamic,
                0.0,
                f.static_coefficient,
            )?;
        }
        Ok(())
    }

    /// A finite number in `lo..=hi`.
    fn within(&self, key: &str, v: f64, lo: f64, hi: f64) -> Result<(), SceneError> {
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("{v}; expected a finite number from {lo:e} to {hi:e}"),
            ))
        }
    }

    fn resolution(&self, key: &str, n: usize) -> Result<(), SceneError> {
        // 512 is the largest distance field the default 2 GiB memory budget allows.
        if (4..=512).contains(&n) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("{n}; expected a resolution from 4 to 512")))
        }
    }

    /// A position or grasp point: finite, each coordinate within [`MAX_POSITION`].
    fn position3(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        self.bounded3(key, v, MAX_POSITION, "scene units")
    }

    /// A rotation vector: finite, each coordinate within [`MAX_ROTATION`].
    fn rotation3(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        self.bounded3(key, v, MAX_ROTATION, "rad")
    }

    fn bounded3(&self, key: &str, v: &[f64; 3], max: f64, unit: &str) -> Result<(), SceneError> {
        if v.iter().all(|x| x.is_finite() && x.abs() <= max) {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("{v:?}; expected finite numbers of magnitude at most {max:e} {unit}"),
            ))
        }
    }

    fn sides(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        if v.iter()
            .all(|x| x.is_finite() && *x > 0.0 && *x <= MAX_POSITION)
        {
            Ok(())
        } else {
            Err(self.invalid(
                key,
                format!("{v:?}; expected three positive sides of at most {MAX_POSITION:e}"),
            ))
        }
    }

    fn deformable(&self, key: &str, d: &DeformableSpec, haptic: bool) -> Result<(), SceneError> {
        let k = |s: &str| format!("{key}.{s}");
        match d.volume_source().map_err(|m| self.invalid(key, m))? {
            VolumeSource::File(v) => {
                self.existing(&k("volume"), v)?;
            }
            VolumeSource::Voxels(n) => self.resolution(&k("voxel_resolution"), n)?,
        }
        match &d.fixed {
            Some(f) => {
                self.existing(&k("fixed"), f)?;
            }
            None if !haptic => {
                return Err(self.invalid(
                    &k("fixed"),
                    "missing; an environment object must be anchored by fixed vertices (.bou)",
                ))
            }
            None => {}
        }
        self.deformable_model(key, d)?;
        if haptic {
            self.haptic_deformable(key, d)
        } else {
            self.environment_deformable(key, d)
        }
    }

    /// Checks a deformable object's basis, mass matrix and damping.
    fn deformable_model(&self, key: &str, d: &DeformableSpec) -> Result<(), SceneError> {
        let k = |s: &str| format!("{key}.{s}");
        if !matches!(
            d.kind(),
            BasisKind::ModalDerivatives | BasisKind::LinearModes
        ) {
            return Err(self.invalid(
                &k("basis_kind"),
                "expected `modal-derivatives` or `linear-modes`",
            ));
        }
        // The bounds of `haptics bake`: k(k+1)/2 modal derivatives, about r^4/6 cubic
        // coefficients.
        if d.linear_modes == 0 || d.linear_modes > 500 {
            return Err(self.invalid(
                &k("linear_modes"),
                format!("{}; expected 1 to 500", d.linear_modes),
            ));
        }
        if d.r() == 0 || d.r() > 200 {
            return Err(self.invalid(&k("basis"), format!("{}; expected 1 to 200", d.r())));
        }
        if d.kind() == BasisKind::LinearModes && d.r() > d.linear_modes {
            return Err(self.invalid(
                &k("basis"),
                format!(
                    "{} > linear_modes = {}; a linear-modes basis has at most k columns",
                    d.r(),
                    d.linear_modes
                ),
            ));
        }
        if d.mass_matrix != "consistent" && d.mass_matrix != "lumped" {
            return Err(self.invalid(
                &k("mass_matrix"),
                format!("'{}'; expected 'consistent' or 'lumped'", d.mass_matrix),
            ));
        }
        for (name, v) in [
            ("damping_mass", d.damping_mass),
            ("damping_stiffness", d.damping_stiffness),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(self.invalid(&k(name), format!("{v}; expected a finite number >= 0")));
            }
        }
        Ok(())
    }

    /// Checks the keys of a deformable haptic object: proxies and neighbours, and none of
    /// the environment's.
    fn haptic_deformable(&self, key: &str, d: &DeformableSpec) -> Result<(), SceneError> {
        let k = |s: &str| format!("{key}.{s}");
        if d.max_outside.is_some() {
            return Err(self.invalid(
                &k("max_outside"),
                "only environment objects (pointshells) take `max_outside`",
            ));
        }
        if let Some(p) = d.proxies {
            if p == 0 {
                return Err(self.invalid(&k("proxies"), "0; expected at least 1"));
            }
        }
        if let Some(n) = d.neighbours {
            if !(2..=8).contains(&n) {
                return Err(self.invalid(&k("neighbours"), format!("{n}; expected 2 to 8")));
            }
        }
        if d.fibres.is_some() || d.muscle_material.is_some() {
            return Err(self.invalid(
                &k("fibres"),
                "a muscle (`fibres`, `muscle_material`) must be an environment object",
            ));
        }
        Ok(())
    }

    /// Checks the keys of a deformable environment object: `max_outside` and the muscle's,
    /// and none of the haptic object's.
    fn environment_deformable(&self, key: &str, d: &DeformableSpec) -> Result<(), SceneError> {
        let k = |s: &str| format!("{key}.{s}");
        if d.proxies.is_some() || d.neighbours.is_some() {
            return Err(self.invalid(
                key,
                "`proxies` and `neighbours` belong to a deformable haptic object",
            ));
        }
        if let Some(m) = d.max_outside {
            if !(m.is_finite() && m >= 0.0) {
                return Err(self.invalid(&k("max_outside"), format!("{m}; expected >= 0")));
            }
        }
        if d.muscle_material.is_some() && d.fibres.is_none() {
            return Err(self.invalid(
                &k("muscle_material"),
                "`muscle_material` needs `fibres` (the muscle's fibre field)",
            ));
        }
        if let Some(n) = d.stiffness_slices {
            if d.fibres.is_none() {
                return Err(self.invalid(
                    &k("stiffness_slices"),
                    "`stiffness_slices` needs `fibres` (only the muscle's cubature has them)",
                ));
            }
            if !(1..=64).contains(&n) {
                return Err(self.invalid(&k("stiffness_slices"), format!("{n}; expected 1 to 64")));
            }
        }
        Ok(())
    }

    /// The session's tunable settings: the defaults (contact defaults for a deformed
    /// field when the haptic object is deformable; `dt` from `rate_hz`) with this file's
    /// `[contact]` and `[coupling]` overrides (validated by [`SceneFile::validate`]).
    pub fn settings(&self) -> Settings {
        let mut s = Settings {
            contact: if self.haptic.deformable.is_some() {
                ContactParams::deformed_field()
            } else {
                ContactParams::default()
            },
            coupling: CouplingParams {
                dt: 1.0 / self.rate_hz,
                ..CouplingParams::default()
            },
            ..Settings::default()
        };
        if let Some(v) = self.contact.temporal_coherence {
            s.contact.temporal_coherence = v;
        }
        s.contact.friction = self.contact.friction.map(|f| Friction {
            static_coefficient: f.static_coefficient,
            dynamic_coefficient: f.dynamic,
        });
        for (param, value) in self
            .contact
            .values()
            .into_iter()
            .chain(self.coupling.values())
        {
            if let Some(v) = value {
                param.set(&mut s, v);
            }
        }
        s
    }

    /// The contact parameters of [`SceneFile::settings`].
    pub fn contact_params(&self) -> ContactParams {
        self.settings().contact
    }

    /// The coupling parameters of [`SceneFile::settings`].
    pub fn coupling_params(&self) -> CouplingParams {
        self.settings().coupling
    }
}

/// Largest magnitude of a position or grasp coordinate (scene units, i.e. metres): a
/// thousand kilometres, far beyond any haptic scene. Larger finite values are refused
/// because their use overflows or loses all precision: the coupling spring `k r`, squared
/// distances (`r^2` overflows from about 1e154) and poses composed of several such
/// offsets head for infinity, and at 1e6 f64 still resolves 1e-10, enough for contact.
/// The workspace refuses device readings beyond the same bound
/// ([`crate::coupling::workspace::MAX_COORDINATE`]).
pub const MAX_POSITION: f64 = 1e6;

/// Largest magnitude of a rotation-vector coordinate (rad). A rotation vector is taken
/// modulo 2 pi, so large values are merely wasteful, but 1e308 makes
/// `UnitQuaternion::from_scaled_axis` non-finite (its norm overflows) and a huge angle
/// keeps no precision modulo 2 pi; 1e3 rad (about 160 turns) is ample.
pub const MAX_ROTATION: f64 = 1e3;

/// Largest polygon-soup offset, in grid cells (as `haptics sdf --offset`): beyond it the
/// enclosing surface no longer resembles the object.
pub const MAX_SOUP_OFFSET: f64 = 64.0;

/// Most first-level points of an environment pointshell (as `haptics pointshell`): the
/// finest level holds `points * 4^(levels - 1)`.
pub const MAX_POINTS: usize = 10_000_000;

/// Most repulsion iterations per pointshell level (as `haptics pointshell`).
pub const MAX_ITERATIONS: usize = 10_000;

/// The pose of a position and a rotation vector.
pub fn pose(position: &[f64; 3], rotation: &[f64; 3]) -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(position[0], position[1], position[2]),
        UnitQuaternion::from_scaled_axis(Vector3::from(*rotation)),
    )
}

/// A point from three coordinates.
pub fn point(p: &[f64; 3]) -> Point3<f64> {
    Point3::new(p[0], p[1], p[2])
}
