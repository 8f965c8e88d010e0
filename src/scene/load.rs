//! Building a [`Scene`] from a scene file: the haptic object's signed distance field
//! (closed mesh, polygon soup or primitive box; for a deformable object its deformed
//! distance field and reduced dynamics), every environment object's pointshell and
//! contact shell (for a deformable one its per-point modes, reduced dynamics and render
//! basis), and the contact and coupling parameters.
//!
//! Distance fields, pointshells and generated simulation meshes are cached by content
//! hash in the cache directory ([`super::cache`]); bakes go through
//! [`crate::reduction::bake::bake`] into hashed directories. Everything else (embedding,
//! per-point modes, trees) is cheap and rebuilt on every load, so a second load of an
//! unchanged scene takes seconds. [`LoadReport`] says what was computed and what reused.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use nalgebra::{DMatrix, Point3, Vector3};

use super::cache::{commit, temp_path, verify, CacheKey};
use super::error::{BoxedError, SceneError};
use super::format::{
    parse_scene, point, pose, BoxSpec, DeformableSpec, EnvironmentShape, HapticShape, SceneFile,
    VolumeSource,
};
use super::{EnvironmentObject, HapticField, HapticObject, Scene};
use crate::contact::{
    deformed_field::DeformedDistanceField, distance::ExactField, shell_modes, ContactShell,
    ShellModes,
};
use crate::dynamics::{
    object::ObjectDynamics, object::ObjectForces, NewmarkParams, ReducedNewmark, ReducedParams,
};
use crate::fem::blemker::MuscleMaterial;
use crate::fem::TetKernel;
use crate::geometry::dist::{read_dist, write_dist};
use crate::geometry::embed::embed;
use crate::geometry::pointshell::{sample_pointshell, Pointshell, PointshellParams};
use crate::geometry::soup::{soup_offset_surface, soup_signed_field, SoupOptions, DEFAULT_OFFSET};
use crate::geometry::thickness::min_half_thickness;
use crate::geometry::{MeshDistance, SdfOptions, SignedDistanceField};
use crate::mesh::read::default_material;
use crate::mesh::{
    box_hex_mesh, read::read_surface, read::read_volume, veg::read_veg, veg::write_veg,
    volume::VolumeMesh, voxelize::voxelize, voxelize::VoxelizeOptions, SurfaceMesh,
};
use crate::muscle::reduced::{muscle_basis, muscle_cubature, MuscleBasis, MuscleBasisOptions};
use crate::muscle::{MaterialFile, MuscleError};
use crate::progress::{Prefixed, Progress};
use crate::reduction::bake::{bake, load_baked, BakeInput, BakeOutcome, BakeParams};
use crate::reduction::cubature::CubatureForces;
use crate::reduction::evaluator::ReducedForces;
use crate::reduction::vega::{read_matrix, write_matrix, Precision};

/// What a load computed and what it took from the cache (labels such as
/// `"environment[0] 'bridge': pointshell"`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadReport {
    /// Artifacts computed (and written to the cache).
    pub computed: Vec<String>,
    /// Artifacts read from the cache.
    pub reused: Vec<String>,
    /// Cached artifacts found but not trusted (bad checksum, unreadable), with the
    /// reason; each was then recomputed.
    pub rejected: Vec<String>,
}

/// Loads the scene at `path`, caching expensive pieces in `cache` (created if needed).
pub fn load_scene(path: &Path, cache: &Path, progress: &dyn Progress) -> Result<Scene, SceneError> {
    load_scene_with_report(path, cache, progress).map(|(scene, _)| scene)
}

/// [`load_scene`], also saying what was computed and what reused.
pub fn load_scene_with_report(
    path: &Path,
    cache: &Path,
    progress: &dyn Progress,
) -> Result<(Scene, LoadReport), SceneError> {
    let file = parse_scene(path)?;
    crate::io::fault::create_dir_all(cache).map_err(|e| SceneError::Cache {
        path: cache.to_path_buf(),
        message: format!("cannot create the cache directory: {e}"),
    })?;
    // Loads killed while writing an artifact left temporaries here: remove them.
    crate::io::sweep_stale(cache);
    let loader = Loader {
        file: &file,
        cache: cache.to_path_buf(),
        progress,
        report: RefCell::new(LoadReport::default()),
    };
    let haptic = loader.haptic()?;
    let environment = (0..file.environment.len())
        .map(|i| loader.environment(i))
        .collect::<Result<Vec<_>, _>>()?;
    let scene = Scene {
        name: file.scene_name(),
        description: file.description.clone(),
        haptic,
        environment,
        contact: file.contact_params(),
        coupling: file.coupling_params(),
        workspace_scale: file.workspace_scale,
        rate_hz: file.rate_hz,
    };
    Ok((scene, loader.report.into_inner()))
}

struct Loader<'a> {
    file: &'a SceneFile,
    cache: PathBuf,
    progress: &'a dyn Progress,
    /// Interior mutability: the compute closures borrow the loader while it records.
    report: RefCell<LoadReport>,
}

/// The reduced model of a deformable object.
struct Reduced {
    mesh: VolumeMesh,
    basis: DMatrix<f64>,
    dynamics: ObjectDynamics,
}

impl Loader<'_> {
    /// Wraps an underlying error with the object and step.
    fn build<E: Into<BoxedError>>(&self, object: &str, step: &str, e: E) -> SceneError {
        SceneError::Build {
            path: self.file.path.clone(),
            object: object.to_string(),
            step: step.to_string(),
            source: e.into(),
        }
    }

    /// Reports a step of building `object` that has no finer progress of its own.
    fn stage(&self, object: &str, step: &str) {
        self.progress.stage(&format!("{object}: {step}"), 0);
    }

    /// The progress of a step of building `object`, with its own stages named under it.
    fn nested(&self, object: &str, step: &str) -> Prefixed<'_> {
        Prefixed::new(self.progress, format!("{object}: {step}"))
    }

    /// The cached artifact `name`, or `compute`d and cached.
    fn cached<T>(
        &self,
        label: String,
        name: String,
        read: impl Fn(&Path) -> Result<T, BoxedError>,
        write: impl Fn(&Path, &T) -> Result<(), BoxedError>,
        compute: impl FnOnce() -> Result<T, SceneError>,
    ) -> Result<T, SceneError> {
        let artifact = self.cache.join(&name);
        match verify(&artifact) {
            Ok(true) => match read(&artifact) {
                Ok(v) => {
                    self.report.borrow_mut().reused.push(label);
                    return Ok(v);
                }
                Err(e) => self
                    .report
                    .borrow_mut()
                    .rejected
                    .push(format!("{label}: {name}: {e}")),
            },
            Ok(false) => {}
            Err(why) => self
                .report
                .borrow_mut()
                .rejected
                .push(format!("{label}: {name}: {why}")),
        }
        let value = compute()?;
        let temp = temp_path(&self.cache, &name);
        if let Err(e) = write(&temp, &value) {
            // A partly written temporary is of no use: do not leave it in the cache.
            let _ = std::fs::remove_file(&temp);
            return Err(SceneError::Cache {
                path: temp.clone(),
                message: e.to_string(),
            });
        }
        // `commit` removes the temporary itself when it fails.
        commit(&temp, &artifact)?;
        self.report.borrow_mut().computed.push(label);
        Ok(value)
    }

    fn key_file(&self, key: &mut CacheKey, object: &str, p: &Path) -> Result<(), SceneError> {
        key.file(p)
            .map_err(|e| self.build(object, &format!("hashing {}", p.display()), e))
    }

    fn read_mesh(&self, object: &str, key: &str, rel: &str) -> Result<SurfaceMesh, SceneError> {
        read_surface(&self.file.resolve(rel))
            .map_err(|e| self.build(object, &format!("reading {key}"), e))
    }

    fn haptic(&self) -> Result<HapticObject, SceneError> {
        let file = self.file;
        let h = &file.haptic;
        let object = format!("haptic '{}'", h.name);
        self.stage(&object, "surface");
        let shape = h.shape().map_err(|m| self.build(&object, "shape", m))?;
        let surface = match shape {
            HapticShape::Box(size) => box_union(&[BoxSpec {
                size,
                position: [0.0; 3],
            }]),
            HapticShape::Mesh { path, .. } => self.read_mesh(&object, "haptic.mesh", path)?,
        };

        // The rest signed distance field.
        let (field, soup) = self.haptic_field(&object, shape, &surface)?;

        let pose = pose(&h.position, &h.rotation);
        let grasp = point(&h.grasp);
        // The thinnest part, for the continuous contact's limit and to tell whether the
        // grid resolves the object (a closed mesh only: a soup has no inside).
        self.stage(&object, "thickness");
        let exact = (!soup).then(|| MeshDistance::new(&surface).ok()).flatten();
        let limit = file.contact_params().max_penetration;
        let min_half_thickness = exact
            .as_ref()
            .map(|d| min_half_thickness(&surface, d, 4.0 * field.spacing.max(limit), 2048));
        let (field, render_basis) = match &h.deformable {
            None => {
                let field = rigid_field(field, exact, min_half_thickness, h.exact_distance);
                (field, Vec::new())
            }
            Some(spec) => self.deformed_field(&object, spec, field, &surface)?,
        };
        Ok(HapticObject {
            name: h.name.clone(),
            field,
            grasp,
            pose,
            surface,
            render_basis,
            min_half_thickness,
        })
    }

    /// The haptic object's rest signed distance field (cached), and whether its mesh is a
    /// polygon soup.
    fn haptic_field(
        &self,
        object: &str,
        shape: HapticShape<'_>,
        surface: &SurfaceMesh,
    ) -> Result<(SignedDistanceField, bool), SceneError> {
        let file = self.file;
        let h = &file.haptic;
        let mut key = CacheKey::new("sdf");
        let soup = match shape {
            HapticShape::Box(size) => {
                key.value("box", &size);
                false
            }
            HapticShape::Mesh { path, soup } => {
                self.key_file(&mut key, object, &file.resolve(path))?;
                soup
            }
        };
        let soup_offset = h.soup_offset.unwrap_or(DEFAULT_OFFSET);
        let sdf_opts = SdfOptions {
            resolution: h.sdf_resolution,
            ..SdfOptions::default()
        };
        key.value("soup", &soup);
        key.value("soup_offset", &soup_offset);
        key.value("options", &sdf_opts);
        self.stage(object, "signed distance field");
        let field = {
            let this = self;
            let compute = || -> Result<SignedDistanceField, SceneError> {
                let cb = this.nested(object, "signed distance field");
                if soup {
                    let opts = SoupOptions {
                        resolution: sdf_opts.resolution,
                        offset: soup_offset,
                        ..SoupOptions::default()
                    };
                    soup_signed_field(surface, &opts, &cb)
                        .map(|s| s.field)
                        .map_err(|e| this.build(object, "signed distance field (soup)", e))
                } else {
                    MeshDistance::new(surface)
                        .and_then(|d| SignedDistanceField::compute_with(&d, &sdf_opts, &cb))
                        .map_err(|e| this.build(object, "signed distance field", e))
                }
            };
            self.cached(
                format!("{object}: signed distance field"),
                key.name("dist"),
                |p| read_dist(p).map_err(Into::into),
                |p, f| write_dist(p, f).map_err(Into::into),
                compute,
            )?
        };
        Ok((field, soup))
    }

    /// The deformed distance field and reduced dynamics of a deformable haptic object
    /// with the rest field `field`, and its render basis.
    fn deformed_field(
        &self,
        object: &str,
        spec: &DeformableSpec,
        field: SignedDistanceField,
        surface: &SurfaceMesh,
    ) -> Result<(HapticField, Vec<f32>), SceneError> {
        let h = &self.file.haptic;
        let reduced = self.reduced(object, "haptic.deformable", spec, surface, h)?;
        self.stage(object, "deformed distance field");
        let sites = used_vertices(surface);
        let deformed = DeformedDistanceField::new(
            field,
            &reduced.mesh,
            &reduced.basis,
            &[sites],
            spec.proxies.unwrap_or(40),
            spec.neighbours.unwrap_or(5),
        )
        .map_err(|e| self.build(object, "deformed distance field", e))?;
        let render_basis = render_basis(&surface.vertices, &reduced.mesh, &reduced.basis)
            .map_err(|e| self.build(object, "render basis", e))?;
        let field = HapticField::Deformable {
            field: Box::new(deformed),
            dynamics: Box::new(reduced.dynamics),
        };
        Ok((field, render_basis))
    }

    fn environment(&self, i: usize) -> Result<EnvironmentObject, SceneError> {
        let file = self.file;
        let e = &file.environment[i];
        let object = format!("environment[{i}] '{}'", e.name);
        self.stage(&object, "surface");
        let shape = e.shape().map_err(|m| self.build(&object, "shape", m))?;
        let display = match shape {
            EnvironmentShape::Mesh { path, .. } => {
                self.read_mesh(&object, &format!("environment[{i}].mesh"), path)?
            }
            EnvironmentShape::Boxes(b) => box_union(b),
        };

        let pointshell = self.environment_pointshell(&object, e, shape, &display)?;

        let pose = pose(&e.position, &e.rotation);
        let (modes, dynamics, render_basis) = match &e.deformable {
            None => (None, None, Vec::new()),
            Some(spec) => {
                let key = format!("environment[{i}].deformable");
                let (modes, dynamics, rb) =
                    self.deformable_shell(&object, &key, spec, e, &display, &pointshell)?;
                (Some(modes), Some(dynamics), rb)
            }
        };
        self.stage(&object, "contact shell");
        let shell = ContactShell::new(
            pointshell.points,
            pointshell.normals,
            pointshell.level_offsets,
            modes,
        )
        .map_err(|err| self.build(&object, "contact shell", err))?;
        Ok(EnvironmentObject {
            name: e.name.clone(),
            shell,
            pose,
            dynamics,
            surface: display,
            render_basis,
        })
    }

    /// The pointshell of environment object `e` (cached), sampled on its display surface
    /// or, for a soup, on its closed offset surface.
    fn environment_pointshell(
        &self,
        object: &str,
        e: &super::format::EnvironmentSpec,
        shape: EnvironmentShape<'_>,
        display: &SurfaceMesh,
    ) -> Result<Pointshell, SceneError> {
        let mut key = CacheKey::new("pshell");
        let soup = match shape {
            EnvironmentShape::Mesh { path, soup } => {
                self.key_file(&mut key, object, &self.file.resolve(path))?;
                soup
            }
            EnvironmentShape::Boxes(b) => {
                key.value(
                    "boxes",
                    &b.iter().map(|b| (b.size, b.position)).collect::<Vec<_>>(),
                );
                false
            }
        };
        let soup_offset = e.soup_offset.unwrap_or(DEFAULT_OFFSET);
        let params = PointshellParams {
            first_level_points: e.points,
            levels: e.levels,
            offset: e.offset,
            iterations: e.iterations,
            seed: e.seed,
            ..PointshellParams::default()
        };
        key.value("soup", &soup);
        if soup {
            key.value("soup_resolution", &e.soup_resolution);
            key.value("soup_offset", &soup_offset);
        }
        key.value("params", &params);
        self.stage(object, "pointshell");
        let this = self;
        let compute = || -> Result<Pointshell, SceneError> {
            let sample_surface = if soup {
                let cb = this.nested(object, "soup offset surface");
                soup_offset_surface(display, e.soup_resolution, soup_offset, &cb)
                    .map_err(|err| this.build(object, "soup offset surface", err))?
            } else {
                display.clone()
            };
            let distance = MeshDistance::new(&sample_surface)
                .map_err(|err| this.build(object, "pointshell surface", err))?;
            if !soup {
                distance.check_solid().map_err(|err| {
                    this.build(object, "pointshell surface (boxes must be disjoint)", err)
                })?;
            }
            let cb = this.nested(object, "pointshell");
            sample_pointshell(&distance, &sample_surface, &params, &cb)
                .map_err(|err| this.build(object, "pointshell", err))
        };
        self.cached(
            format!("{object}: pointshell"),
            key.name("pshell"),
            |p| Pointshell::read(p).map_err(Into::into),
            |p, ps| ps.write(p).map_err(Into::into),
            compute,
        )
    }

    /// The per-point modes, reduced dynamics and render basis of the deformable
    /// environment object `e` (`key`: its scene key).
    fn deformable_shell(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        e: &super::format::EnvironmentSpec,
        display: &SurfaceMesh,
        pointshell: &Pointshell,
    ) -> Result<(ShellModes, ObjectDynamics, Vec<f32>), SceneError> {
        let reduced = self.reduced_env(object, key, spec, display, e)?;
        self.stage(object, "pointshell modes");
        let limit = spec
            .max_outside
            .unwrap_or_else(|| 0.05 * reduced.mesh.bounding_box().extent().norm());
        let modes = shell_modes(
            &pointshell.points,
            &pointshell.normals,
            &reduced.mesh,
            &reduced.basis,
            limit,
        )
        .map_err(|err| self.build(object, "pointshell modes", err))?;
        self.stage(object, "render basis");
        let rb = render_basis(&display.vertices, &reduced.mesh, &reduced.basis)
            .map_err(|err| self.build(object, "render basis", err))?;
        Ok((modes, reduced.dynamics, rb))
    }

    fn reduced(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        surface: &SurfaceMesh,
        h: &super::format::HapticSpec,
    ) -> Result<Reduced, SceneError> {
        let source = match h.shape().map_err(|m| self.build(object, "shape", m))? {
            HapticShape::Box(size) => VoxelSource::Box(size),
            HapticShape::Mesh { path, .. } => VoxelSource::Mesh(self.file.resolve(path)),
        };
        self.reduced_model(object, key, spec, surface, source)
    }

    fn reduced_env(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        surface: &SurfaceMesh,
        e: &super::format::EnvironmentSpec,
    ) -> Result<Reduced, SceneError> {
        let source = match e.shape().map_err(|m| self.build(object, "shape", m))? {
            EnvironmentShape::Mesh { path, .. } => VoxelSource::Mesh(self.file.resolve(path)),
            EnvironmentShape::Boxes(b) => {
                VoxelSource::Boxes(b.iter().map(|b| (b.size, b.position)).collect())
            }
        };
        self.reduced_model(object, key, spec, surface, source)
    }

    /// The simulation mesh (read, or voxelized and cached), the bake, and the reduced
    /// dynamics of a deformable object.
    fn reduced_model(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        surface: &SurfaceMesh,
        source: VoxelSource,
    ) -> Result<Reduced, SceneError> {
        let file = self.file;
        let volume = spec
            .volume_source()
            .map_err(|m| self.build(object, "simulation mesh", m))?;
        let (volume_path, mesh) = match volume {
            VolumeSource::File(v) => {
                let p = canonical(file.resolve(v));
                self.stage(object, "simulation mesh");
                let mesh = read_volume(&p)
                    .map_err(|e| self.build(object, &format!("reading {key}.volume"), e))?;
                (p, mesh)
            }
            VolumeSource::Voxels(res) => self.voxel_mesh(object, surface, source, res)?,
        };
        let fixed = spec.fixed.as_ref().map(|f| canonical(file.resolve(f)));
        if let Some(fibres) = &spec.fibres {
            return self.muscle_model(object, key, spec, mesh, &volume_path, fixed, fibres);
        }
        self.baked_model(object, spec, mesh, volume_path, fixed)
    }

    /// The voxelized simulation mesh of an object (cached) and its canonical cache path.
    fn voxel_mesh(
        &self,
        object: &str,
        surface: &SurfaceMesh,
        source: VoxelSource,
        res: usize,
    ) -> Result<(PathBuf, VolumeMesh), SceneError> {
        let mut k = CacheKey::new("veg");
        match &source {
            VoxelSource::Box(size) => k.value("box", size),
            VoxelSource::Boxes(b) => k.value("boxes", b),
            VoxelSource::Mesh(p) => self.key_file(&mut k, object, p)?,
        }
        k.value("voxel_resolution", &res);
        let name = k.name("veg");
        self.stage(object, "voxelize");
        let this = self;
        let compute = || -> Result<VolumeMesh, SceneError> {
            match source {
                VoxelSource::Box(size) => Ok(box_volume(&size, res)),
                _ => voxelize(
                    surface,
                    &VoxelizeOptions {
                        resolution: res,
                        ..VoxelizeOptions::default()
                    },
                    &crate::progress::NoProgress,
                )
                .map(|v| v.mesh)
                .map_err(|e| this.build(object, "voxelize", e)),
            }
        };
        let mesh = self.cached(
            format!("{object}: simulation mesh"),
            name.clone(),
            |p| read_veg(p).map_err(Into::into),
            |p, m| write_veg(p, m).map_err(Into::into),
            compute,
        )?;
        Ok((canonical(self.cache.join(name)), mesh))
    }

    /// A passive deformable object: its bake (cached) and the reduced polynomial dynamics.
    fn baked_model(
        &self,
        object: &str,
        spec: &DeformableSpec,
        mesh: VolumeMesh,
        volume_path: PathBuf,
        fixed: Option<PathBuf>,
    ) -> Result<Reduced, SceneError> {
        let params = BakeParams {
            linear_modes: spec.linear_modes,
            basis: spec.r(),
            basis_kind: spec.kind(),
            mass_matrix: spec
                .mass_matrix
                .parse()
                .map_err(|e| self.build(object, "mass_matrix", e))?,
            unconstrained: fixed.is_none(),
            voxel_resolution: None,
            material_groups: false,
        };
        let mut k = CacheKey::new("bake");
        self.key_file(&mut k, object, &volume_path)?;
        if let Some(f) = &fixed {
            self.key_file(&mut k, object, f)?;
        }
        k.value("params", &params);
        let dir = self.cache.join(k.name(""));
        let input = BakeInput {
            mesh: volume_path,
            fixed,
            basis_file: None,
            render_interp: None,
            params,
        };
        let label = format!("{object}: bake");
        match bake(&input, &dir, &self.nested(object, "bake"))
            .map_err(|e| self.build(object, "bake", e))?
        {
            BakeOutcome::UpToDate(_) => self.report.borrow_mut().reused.push(label),
            BakeOutcome::Baked(_) => self.report.borrow_mut().computed.push(label),
        }
        let baked = load_baked(&dir).map_err(|e| self.build(object, "loading the bake", e))?;
        let r = baked.basis.ncols();
        let forces = ReducedForces::new(&baked.polynomial, r)
            .map_err(|e| self.build(object, "reduced forces", e))?;
        let params = self.reduced_params(spec);
        Ok(Reduced {
            mesh,
            basis: baked.basis,
            dynamics: ReducedNewmark::new(ObjectForces::Polynomial(forces), params),
        })
    }
}

/// The canonical form of a path, or the path itself where it cannot be resolved.
fn canonical(p: PathBuf) -> PathBuf {
    std::fs::canonicalize(&p).unwrap_or(p)
}

impl Loader<'_> {
    /// The integrator settings of a reduced object: the scene's rate and the object's
    /// damping.
    fn reduced_params(&self, spec: &DeformableSpec) -> ReducedParams {
        ReducedParams {
            newmark: NewmarkParams::average_acceleration(1.0 / self.file.rate_hz),
            damping_mass: spec.damping_mass,
            damping_stiffness: spec.damping_stiffness,
            ..ReducedParams::default()
        }
    }

    /// An active muscle: the fibre material on the tet mesh, its basis (modes, modal
    /// derivatives, palpation snapshots, contracted shapes) and its optimized cubature
    /// ([`crate::muscle::reduced`]), both cached.
    #[allow(clippy::too_many_arguments)]
    fn muscle_model(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        mesh: VolumeMesh,
        volume_path: &Path,
        fixed: Option<PathBuf>,
        fibres: &str,
    ) -> Result<Reduced, SceneError> {
        let fixed = fixed.ok_or_else(|| {
            self.build(
                object,
                &format!("{key}.fixed"),
                "a muscle needs its fixed tendon ends (`fixed`)",
            )
        })?;
        let fibres_path = self.file.resolve(fibres);
        let (setup, material_file) =
            self.muscle_setup(object, key, spec, &mesh, &fixed, &fibres_path)?;
        let stem = self.muscle_stem(
            object,
            volume_path,
            &fixed,
            &fibres_path,
            &material_file,
            &setup.opts,
        )?;
        let states = RefCell::new(None);
        self.stage(object, "muscle basis");
        let basis = self.muscle_basis_cached(object, &stem, &mesh, &setup, &states)?;
        self.stage(object, "muscle cubature");
        let points = self.muscle_points_cached(object, &stem, &mesh, &setup, &states)?;
        let (elements, weights): (Vec<usize>, Vec<f64>) = points.into_iter().unzip();
        let MuscleSetup {
            kernel, material, ..
        } = setup;
        let mut cub =
            CubatureForces::from_points(&kernel, &basis, material, &elements, &weights, true)
                .map_err(|e| self.build(object, "muscle cubature", e))?;
        crate::muscle::reduced::correct_muscle_equilibria(&mut cub, &kernel, &basis)
            .map_err(|e| self.build(object, "muscle equilibrium correction", e))?;
        cub.set_stiffness_slices(
            spec.stiffness_slices
                .unwrap_or(super::format::DEFAULT_STIFFNESS_SLICES),
        );
        let params = self.reduced_params(spec);
        Ok(Reduced {
            mesh,
            basis,
            dynamics: ReducedNewmark::new(ObjectForces::Muscle(Box::new(cub)), params),
        })
    }

    /// The muscle material of `mesh` (fibres from `fibres_path`, groups from the material
    /// file), its kernel, fixed degrees of freedom and basis options, and the material file.
    fn muscle_setup(
        &self,
        object: &str,
        key: &str,
        spec: &DeformableSpec,
        mesh: &VolumeMesh,
        fixed: &Path,
        fibres_path: &Path,
    ) -> Result<(MuscleSetup, MaterialFile), SceneError> {
        let file = self.file;
        let fibre_field = crate::mesh::fibres::read_fibres(fibres_path, Some(mesh.num_elements()))
            .map_err(|e| self.build(object, &format!("reading {key}.fibres"), e))?;
        let material_file = match &spec.muscle_material {
            Some(m) => crate::muscle::read_material(&file.resolve(m))
                .map_err(|e| self.build(object, &format!("reading {key}.muscle_material"), e))?,
            None => MaterialFile::default(),
        };
        let material = MuscleMaterial {
            groups: vec![material_file.muscle, material_file.tendon],
            active: vec![true, false],
            element_group: (0..mesh.num_elements())
                .map(|e| usize::from(mesh.material_of(e).name == "tendon"))
                .collect(),
            fibres: fibre_field,
            activation: 0.0,
        };
        let kernel = TetKernel::new(mesh).map_err(|e| self.build(object, "muscle kernel", e))?;
        let fixed_vertices = crate::mesh::bou::read_bou(fixed, Some(mesh.vertices.len()))
            .map_err(|e| self.build(object, &format!("reading {key}.fixed"), e))?;
        let mut fixed_dofs = vec![false; kernel.num_dofs()];
        for v in fixed_vertices {
            fixed_dofs[3 * v..3 * v + 3]
                .iter_mut()
                .for_each(|f| *f = true);
        }
        let opts = MuscleBasisOptions {
            linear_modes: spec.linear_modes,
            r: spec.r(),
            ..MuscleBasisOptions::default()
        };
        let setup = MuscleSetup {
            kernel,
            material,
            fixed_dofs,
            opts,
        };
        Ok((setup, material_file))
    }

    /// The stem of the muscle's cache names: a hash of its files, material, basis
    /// options and cubature training.
    fn muscle_stem(
        &self,
        object: &str,
        volume_path: &Path,
        fixed: &Path,
        fibres_path: &Path,
        material_file: &MaterialFile,
        opts: &MuscleBasisOptions,
    ) -> Result<String, SceneError> {
        let mut k = CacheKey::new("muscle");
        self.key_file(&mut k, object, volume_path)?;
        self.key_file(&mut k, object, fixed)?;
        self.key_file(&mut k, object, fibres_path)?;
        k.value("material", material_file);
        k.value("basis", opts);
        k.value(
            "cubature",
            &crate::muscle::reduced::muscle_cubature_options(1),
        );
        // The training's form beyond its options: the exact linear part follows the
        // activation, and stiffness probes at the contracted equilibria.
        k.value(
            "cubature-training",
            &"affine linear part, stiffness probes, f64 reference",
        );
        Ok(k.name(""))
    }

    /// The muscle's basis U (cached); a computed basis is kept in `states` for the
    /// cubature.
    fn muscle_basis_cached(
        &self,
        object: &str,
        stem: &str,
        mesh: &VolumeMesh,
        setup: &MuscleSetup,
        states: &RefCell<Option<MuscleBasis>>,
    ) -> Result<DMatrix<f64>, SceneError> {
        self.cached(
            format!("{object}: muscle basis"),
            format!("{stem}basis.U"),
            |p| read_matrix(p, Precision::F64).map_err(Into::into),
            |p, u| write_matrix(p, u, Precision::F64).map_err(Into::into),
            || {
                let b = setup
                    .basis(mesh)
                    .map_err(|e| self.build(object, "muscle basis", e))?;
                let u = b.u.clone();
                *states.borrow_mut() = Some(b);
                Ok(u)
            },
        )
    }

    /// The muscle's cubature points and weights (cached), fitted on the basis in `states`
    /// or on one computed anew.
    fn muscle_points_cached(
        &self,
        object: &str,
        stem: &str,
        mesh: &VolumeMesh,
        setup: &MuscleSetup,
        states: &RefCell<Option<MuscleBasis>>,
    ) -> Result<Vec<(usize, f64)>, SceneError> {
        self.cached(
            format!("{object}: muscle cubature"),
            format!("{stem}cubature.txt"),
            |p| read_points(p, mesh.num_elements()),
            |p, pts| write_points(p, pts),
            || {
                let b = match states.borrow_mut().take() {
                    Some(b) => b,
                    None => setup
                        .basis(mesh)
                        .map_err(|e| self.build(object, "muscle basis", e))?,
                };
                let (cub, _) = muscle_cubature(&setup.kernel, &setup.material, &b, 1)
                    .map_err(|e| self.build(object, "muscle cubature", e))?;
                Ok(cub
                    .elements()
                    .iter()
                    .copied()
                    .zip(cub.weights().iter().copied())
                    .collect())
            },
        )
    }
}

/// What an active muscle's basis and cubature are computed from.
struct MuscleSetup {
    /// The tet kernel of the simulation mesh.
    kernel: TetKernel,
    /// The fibre material, at activation 0.
    material: MuscleMaterial,
    /// The degrees of freedom of the fixed vertices.
    fixed_dofs: Vec<bool>,
    /// The basis options.
    opts: MuscleBasisOptions,
}

impl MuscleSetup {
    /// The muscle basis of `mesh` ([`muscle_basis`]).
    fn basis(&self, mesh: &VolumeMesh) -> Result<MuscleBasis, MuscleError> {
        muscle_basis(
            mesh,
            &self.kernel,
            &self.material,
            &self.fixed_dofs,
            &self.opts,
        )
    }
}

/// Writes cubature points, one `element weight` per line (17 significant digits).
fn write_points(path: &Path, points: &[(usize, f64)]) -> Result<(), BoxedError> {
    let mut text = String::from("# cubature points: element weight\n");
    for (e, w) in points {
        text.push_str(&format!("{e} {w:.17e}\n"));
    }
    std::fs::write(path, text).map_err(Into::into)
}

/// Reads [`write_points`]' file; every element below `elements`, every weight finite and
/// positive.
fn read_points(path: &Path, elements: usize) -> Result<Vec<(usize, f64)>, BoxedError> {
    let text = std::fs::read_to_string(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = || format!("{}:{}: expected `element weight`", path.display(), i + 1);
        let mut it = line.split_whitespace();
        let e: usize = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        let w: f64 = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
        if e >= elements || !(w.is_finite() && w > 0.0) || it.next().is_some() {
            return Err(bad().into());
        }
        out.push((e, w));
    }
    if out.is_empty() {
        return Err(format!("{}: no cubature points", path.display()).into());
    }
    Ok(out)
}

/// What a voxelized simulation mesh is made from (for its cache key).
enum VoxelSource {
    /// A primitive box: a regular hex grid.
    Box([f64; 3]),
    /// A union of boxes: voxelized.
    Boxes(Vec<([f64; 3], [f64; 3])>),
    /// A mesh file: voxelized.
    Mesh(PathBuf),
}

/// Cells per axis of a box of `size` with `n` cells along its longest side.
fn box_cells(size: &[f64; 3], n: usize) -> [usize; 3] {
    let longest = size.iter().cloned().fold(0.0, f64::max);
    size.map(|s| ((s / longest * n as f64).round() as usize).clamp(1, n.max(1)))
}

/// The hex grid of a box centred at the origin, `n` cells along its longest side.
fn box_volume(size: &[f64; 3], n: usize) -> VolumeMesh {
    let s = Vector3::from(*size);
    box_hex_mesh(
        s,
        box_cells(size, n),
        Point3::from(-s / 2.0),
        default_material(),
    )
}

/// The closed outward surface of a union of boxes (each the boundary of a hex grid with 8
/// cells along its longest side, so deformable boxes have vertices to embed and proxies
/// to choose), unused vertices dropped.
fn box_union(boxes: &[BoxSpec]) -> SurfaceMesh {
    let mut out = SurfaceMesh::default();
    for b in boxes {
        let s = Vector3::from(b.size);
        let grid = box_hex_mesh(
            s,
            box_cells(&b.size, 8),
            point(&b.position) - s / 2.0,
            default_material(),
        );
        let tris = grid.boundary_triangles();
        let mut map = vec![usize::MAX; grid.vertices.len()];
        let base = out.vertices.len();
        for t in &tris {
            let mut nt = [0; 3];
            for (k, &v) in t.iter().enumerate() {
                if map[v] == usize::MAX {
                    map[v] = out.vertices.len() - base;
                    out.vertices.push(grid.vertices[v]);
                }
                nt[k] = base + map[v];
            }
            out.triangles.push(nt);
        }
    }
    out
}

/// A rigid haptic object's field: its exact mesh distance where `exact_distance` asks
/// for it (by default where the grid is coarser than the thinnest half-thickness), else
/// the grid.
fn rigid_field(
    field: SignedDistanceField,
    exact: Option<MeshDistance>,
    min_half_thickness: Option<f64>,
    exact_distance: Option<bool>,
) -> HapticField {
    let coarse = min_half_thickness.is_some_and(|t| t < field.spacing);
    match (exact, exact_distance.unwrap_or(coarse)) {
        (Some(mesh), true) => HapticField::Exact(Box::new(ExactField { grid: field, mesh })),
        _ => HapticField::Rigid(field),
    }
}

/// The vertices referenced by triangles (files like tube.veg.obj carry unused ones).
fn used_vertices(surface: &SurfaceMesh) -> Vec<Point3<f64>> {
    let mut used = vec![false; surface.vertices.len()];
    for t in &surface.triangles {
        for &v in t {
            if let Some(u) = used.get_mut(v) {
                *u = true;
            }
        }
    }
    surface
        .vertices
        .iter()
        .zip(&used)
        .filter(|(_, &u)| u)
        .map(|(p, _)| *p)
        .collect()
}

/// Per point, the 3 x r rows (row-major, f32) of the basis interpolated at the point's
/// embedding in `mesh` (points outside take the nearest element's extrapolation): the
/// bake's render basis ([`crate::reduction::basis::render_basis`]) in the layout the
/// renderer uploads.
fn render_basis(
    points: &[Point3<f64>],
    mesh: &VolumeMesh,
    basis: &DMatrix<f64>,
) -> Result<Vec<f32>, BoxedError> {
    if basis.nrows() != mesh.num_dofs() {
        return Err(format!(
            "the basis has {} rows; the simulation mesh has {} degrees of freedom",
            basis.nrows(),
            mesh.num_dofs()
        )
        .into());
    }
    let emb = embed(points, mesh)?;
    let u = crate::reduction::basis::render_basis(&emb.interpolation, basis);
    // Column-major (3n x r) -> row-major: the transpose's column-major order.
    Ok(u.transpose().iter().map(|&x| x as f32).collect())
}
