//! The TOML scene file: what a scene is made of, as written by a person. Parsing
//! ([`parse_scene`]) checks syntax, types, unknown keys (every table denies them, so a
//! typo is an error rather than a silently ignored setting), value ranges and that every
//! referenced file exists, without building anything; [`crate::scene::load`] then builds
//! the runtime objects.
//!
//! Units are SI (metres, seconds, newtons) in simulation space; rotations are rotation
//! vectors (axis times angle, radians); paths are relative to the scene file. See the
//! README section "Scenes" for a complete example.

use std::path::{Path, PathBuf};

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};
use serde::Deserialize;

use super::error::{line_column, SceneError};
use crate::contact::ContactParams;
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
    pub name: String,
    /// Sides of a box centred at the body origin (exclusive with `mesh`).
    #[serde(rename = "box")]
    pub box_size: Option<[f64; 3]>,
    /// A closed surface mesh (`.obj`, `.stl`), or a polygon soup with `soup = true`.
    pub mesh: Option<String>,
    /// The mesh is a polygon soup: the field of its closed offset surface.
    #[serde(default)]
    pub soup: bool,
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
}

/// One box of a union of disjoint boxes.
#[derive(Debug, Clone, Deserialize)]
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
    pub name: String,
    /// A closed surface mesh, or a polygon soup with `soup = true` (exclusive with
    /// `boxes`).
    pub mesh: Option<String>,
    /// A union of disjoint boxes (exclusive with `mesh`).
    pub boxes: Option<Vec<BoxSpec>>,
    /// The mesh is a polygon soup: sample its closed offset surface.
    #[serde(default)]
    pub soup: bool,
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
    pub volume: Option<String>,
    /// Voxelize the object (a box: a regular hex grid) with this many voxels along the
    /// longest side (exclusive with `volume`).
    pub voxel_resolution: Option<usize>,
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
    /// Rayleigh damping: mass and stiffness coefficients (default 0).
    #[serde(default)]
    pub damping_mass: f64,
    #[serde(default)]
    pub damping_stiffness: f64,
    /// Environment only: how far pointshell points may lie outside the simulation mesh
    /// (default 5% of its bounding-box diagonal).
    pub max_outside: Option<f64>,
    /// Haptic only: proxies of the deformed distance field (default 40).
    pub proxies: Option<usize>,
    /// Haptic only: nearest proxies blended per query (default 5).
    pub neighbours: Option<usize>,
}

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

/// `[contact]`: overrides of [`ContactParams`] (defaults: `ContactParams::default()`, or
/// `ContactParams::deformed_field()` for a deformable haptic object).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContactSpec {
    pub stiffness: Option<f64>,
    pub warm_budget: Option<usize>,
    pub cold_fraction: Option<f64>,
    pub max_unscaled_contacts: Option<usize>,
    pub temporal_coherence: Option<bool>,
}

/// `[coupling]`: overrides of [`CouplingParams`] (`dt` comes from `rate_hz`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CouplingSpec {
    pub stiffness: Option<f64>,
    pub torque_stiffness: Option<f64>,
    /// Saturation plateau (N); 0 for a linear spring.
    pub saturation_force: Option<f64>,
    pub static_damping: Option<f64>,
    pub max_velocity: Option<f64>,
    pub max_angular_velocity: Option<f64>,
    pub degenerate_ratio: Option<f64>,
    pub device_max_force: Option<f64>,
    pub device_max_torque: Option<f64>,
}

/// Reads, parses and validates a scene file (nothing is built or baked).
pub fn parse_scene(path: &Path) -> Result<SceneFile, SceneError> {
    let text = std::fs::read_to_string(path).map_err(|source| SceneError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_scene_str(&text, path)
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
        self.positive("rate_hz", self.rate_hz)?;
        self.positive("workspace_scale", self.workspace_scale)?;
        let h = &self.haptic;
        let shape = match (&h.box_size, &h.mesh) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    "haptic",
                    "both `box` and `mesh` are given; expected exactly one of them",
                ))
            }
            (None, None) => {
                return Err(self.invalid(
                    "haptic",
                    "neither `box` nor `mesh` is given; expected exactly one of them",
                ))
            }
            (Some(b), None) => {
                self.sides("haptic.box", b)?;
                None
            }
            (None, Some(m)) => Some(self.existing("haptic.mesh", m)?),
        };
        if h.soup && shape.is_none() {
            return Err(self.invalid("haptic.soup", "`soup = true` needs `mesh`"));
        }
        self.resolution("haptic.sdf_resolution", h.sdf_resolution)?;
        if let Some(o) = h.soup_offset {
            self.positive("haptic.soup_offset", o)?;
        }
        self.finite3("haptic.grasp", &h.grasp)?;
        self.finite3("haptic.position", &h.position)?;
        self.finite3("haptic.rotation", &h.rotation)?;
        if let Some(d) = &h.deformable {
            self.deformable("haptic.deformable", d, true)?;
        }
        for (i, e) in self.environment.iter().enumerate() {
            let key = |k: &str| format!("environment[{i}].{k}");
            match (&e.mesh, &e.boxes) {
                (Some(_), Some(_)) => {
                    return Err(self.invalid(
                        &format!("environment[{i}]"),
                        "both `mesh` and `boxes` are given; expected exactly one of them",
                    ))
                }
                (None, None) => {
                    return Err(self.invalid(
                        &format!("environment[{i}]"),
                        "neither `mesh` nor `boxes` is given; expected exactly one of them",
                    ))
                }
                (Some(m), None) => {
                    self.existing(&key("mesh"), m)?;
                }
                (None, Some(boxes)) => {
                    if boxes.is_empty() {
                        return Err(self.invalid(&key("boxes"), "expected at least one box"));
                    }
                    for (j, b) in boxes.iter().enumerate() {
                        self.sides(&key(&format!("boxes[{j}].size")), &b.size)?;
                        self.finite3(&key(&format!("boxes[{j}].position")), &b.position)?;
                    }
                }
            }
            if e.soup && e.mesh.is_none() {
                return Err(self.invalid(&key("soup"), "`soup = true` needs `mesh`"));
            }
            self.resolution(&key("soup_resolution"), e.soup_resolution)?;
            if let Some(o) = e.soup_offset {
                self.positive(&key("soup_offset"), o)?;
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
            self.finite3(&key("position"), &e.position)?;
            self.finite3(&key("rotation"), &e.rotation)?;
            if let Some(d) = &e.deformable {
                self.deformable(&key("deformable"), d, false)?;
            }
        }
        let c = &self.contact;
        if let Some(k) = c.stiffness {
            self.positive("contact.stiffness", k)?;
        }
        if c.warm_budget == Some(0) {
            return Err(self.invalid("contact.warm_budget", "0; expected a positive budget"));
        }
        if let Some(f) = c.cold_fraction {
            if !(f > 0.0 && f <= 1.0) {
                return Err(self.invalid("contact.cold_fraction", format!("{f}; expected (0, 1]")));
            }
        }
        if c.max_unscaled_contacts == Some(0) {
            return Err(self.invalid(
                "contact.max_unscaled_contacts",
                "0; expected a positive count",
            ));
        }
        let k = &self.coupling;
        for (name, v) in [
            ("stiffness", k.stiffness),
            ("torque_stiffness", k.torque_stiffness),
            ("max_velocity", k.max_velocity),
            ("max_angular_velocity", k.max_angular_velocity),
            ("degenerate_ratio", k.degenerate_ratio),
            ("device_max_force", k.device_max_force),
            ("device_max_torque", k.device_max_torque),
        ] {
            if let Some(v) = v {
                self.positive(&format!("coupling.{name}"), v)?;
            }
        }
        if let Some(f) = k.saturation_force {
            if !(f.is_finite() && f >= 0.0) {
                return Err(self.invalid(
                    "coupling.saturation_force",
                    format!("{f}; expected a force >= 0 (0: no saturation)"),
                ));
            }
        }
        if let Some(a) = k.static_damping {
            if !(0.0..1.0).contains(&a) {
                return Err(
                    self.invalid("coupling.static_damping", format!("{a}; expected [0, 1)"))
                );
            }
        }
        Ok(())
    }

    fn positive(&self, key: &str, v: f64) -> Result<(), SceneError> {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(self.invalid(key, format!("{v}; expected a positive, finite number")))
        }
    }

    fn resolution(&self, key: &str, n: usize) -> Result<(), SceneError> {
        if (4..=1024).contains(&n) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("{n}; expected a resolution from 4 to 1024")))
        }
    }

    fn finite3(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        if v.iter().all(|x| x.is_finite()) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("{v:?}; expected finite numbers")))
        }
    }

    fn sides(&self, key: &str, v: &[f64; 3]) -> Result<(), SceneError> {
        if v.iter().all(|x| x.is_finite() && *x > 0.0) {
            Ok(())
        } else {
            Err(self.invalid(key, format!("{v:?}; expected three positive sides")))
        }
    }

    fn deformable(&self, key: &str, d: &DeformableSpec, haptic: bool) -> Result<(), SceneError> {
        let k = |s: &str| format!("{key}.{s}");
        match (&d.volume, d.voxel_resolution) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    key,
                    "both `volume` and `voxel_resolution` are given; expected exactly one",
                ))
            }
            (None, None) => {
                return Err(self.invalid(
                    key,
                    "neither `volume` nor `voxel_resolution` is given; expected exactly one",
                ))
            }
            (Some(v), None) => {
                self.existing(&k("volume"), v)?;
            }
            (None, Some(n)) => self.resolution(&k("voxel_resolution"), n)?,
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
        if !matches!(
            d.kind(),
            BasisKind::ModalDerivatives | BasisKind::LinearModes
        ) {
            return Err(self.invalid(
                &k("basis_kind"),
                "expected `modal-derivatives` or `linear-modes`",
            ));
        }
        if d.linear_modes == 0 {
            return Err(self.invalid(&k("linear_modes"), "0; expected at least 1"));
        }
        if d.r() == 0 {
            return Err(self.invalid(&k("basis"), "0; expected at least 1"));
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
        if haptic {
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
        } else {
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
        }
        Ok(())
    }

    /// The contact parameters: the defaults (for a deformed field when the haptic object
    /// is deformable) with this file's overrides.
    pub fn contact_params(&self) -> ContactParams {
        let mut p = if self.haptic.deformable.is_some() {
            ContactParams::deformed_field()
        } else {
            ContactParams::default()
        };
        let c = &self.contact;
        if let Some(v) = c.stiffness {
            p.stiffness = v;
        }
        if let Some(v) = c.warm_budget {
            p.warm_budget = v;
        }
        if let Some(v) = c.cold_fraction {
            p.cold_fraction = v;
        }
        if let Some(v) = c.max_unscaled_contacts {
            p.max_unscaled_contacts = v;
        }
        if let Some(v) = c.temporal_coherence {
            p.temporal_coherence = v;
        }
        p
    }

    /// The coupling parameters: the defaults with this file's overrides, `dt` from
    /// `rate_hz`.
    pub fn coupling_params(&self) -> CouplingParams {
        let mut p = CouplingParams {
            dt: 1.0 / self.rate_hz,
            ..CouplingParams::default()
        };
        let c = &self.coupling;
        let set = |dst: &mut f64, v: Option<f64>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut p.stiffness, c.stiffness);
        set(&mut p.torque_stiffness, c.torque_stiffness);
        set(&mut p.static_damping, c.static_damping);
        set(&mut p.max_velocity, c.max_velocity);
        set(&mut p.max_angular_velocity, c.max_angular_velocity);
        set(&mut p.degenerate_ratio, c.degenerate_ratio);
        set(&mut p.device_max_force, c.device_max_force);
        set(&mut p.device_max_torque, c.device_max_torque);
        if let Some(f) = c.saturation_force {
            p.saturation_force = (f > 0.0).then_some(f);
        }
        p
    }
}

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
