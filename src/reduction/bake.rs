//! The bake: volumetric (or voxelized surface) mesh -> FEM -> linear modes -> modal
//! derivatives -> mass-PCA basis -> cubic reduced-force polynomial, written as one baked
//! directory with a manifest, so a changed input re-bakes and an unchanged one loads
//! instantly (DESIGN.md, "Two stages").
//!
//! A baked directory holds:
//! - `manifest.toml`: format version, input and output SHA-256 hashes, parameters, mass
//!   matrix type, the lowest linear frequencies in Hz, and the time of each stage;
//! - `basis.U`: the mass-orthonormal basis U (Vega matrixIO, f64, 3n x r);
//! - `reduced.cub`: the cubic polynomial of R~(q) (Vega `.cub`);
//! - `linear_modes.U`: the k linear modes the basis came from (when computed).
//!
//! It is written to a temporary sibling directory and renamed into place, so an
//! interrupted bake never leaves a half-written cache.

use std::path::{Path, PathBuf};
use std::time::Instant;

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::basis::{
    mass_pca, modal_derivatives_unconstrained, modal_derivatives_with_progress,
    scaled_modes_and_all_derivatives, scaled_modes_and_derivatives, BasisError,
};
use super::modes::{linear_modes, LinearModes, ModesError, ModesOptions};
use super::polynomial::CubicPolynomial;
use super::precompute::{reduced_polynomial, PrecomputeError};
use super::vega::{read_cub, read_matrix, write_cub, write_matrix, Precision, VegaError};
use crate::fem::{FemError, FemModel, MassKind, MaterialLaw};
use crate::mesh::voxelize::{voxelize, VoxelizeError, VoxelizeOptions};
use crate::mesh::{read_bou, read_surface, read_volume, MeshError, VolumeMesh};

/// Version of the baked-directory layout; a different version re-bakes.
pub const FORMAT_VERSION: u32 = 1;

/// How the basis is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BasisKind {
    /// Mass-PCA of the scaled linear modes and their modal derivatives (thesis 2.8.3).
    ModalDerivatives,
    /// The first r linear modes.
    LinearModes,
    /// A basis read from a Vega matrixIO file.
    File,
    /// Mass-PCA of displacement snapshots (columns of a matrixIO file), for example from
    /// full-space runs: the "basis from full motion" of thesis 2.8.2.
    Snapshots,
}

/// Bake parameters (recorded in the manifest; a change re-bakes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BakeParams {
    pub linear_modes: usize,
    pub basis: usize,
    pub basis_kind: BasisKind,
    pub mass_matrix: String,
    pub unconstrained: bool,
    /// Voxel resolution, for surface-mesh inputs.
    pub voxel_resolution: Option<usize>,
    /// Also write per-material-group lambda and mu polynomials (run-time material edits).
    #[serde(default)]
    pub material_groups: bool,
}

/// What to bake.
#[derive(Debug, Clone)]
pub struct BakeInput {
    pub mesh: PathBuf,
    pub fixed: Option<PathBuf>,
    /// The basis (kind `file`) or the snapshots (kind `snapshots`), Vega matrixIO.
    pub basis_file: Option<PathBuf>,
    /// Render-mesh embedding (Vega .interp): writes the render basis too.
    pub render_interp: Option<PathBuf>,
    pub params: BakeParams,
}

/// A hashed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HashedFile {
    pub role: String,
    pub path: String,
    pub sha256: String,
}

/// Seconds spent in each stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimings {
    pub load_and_fem: f64,
    pub linear_modes: f64,
    pub modal_derivatives: f64,
    pub pca: f64,
    pub polynomial: f64,
    pub write: f64,
    pub total: f64,
}

/// The manifest of a baked directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub mass_matrix: String,
    /// The k lowest non-rigid linear frequencies (Hz).
    pub linear_frequencies_hz: Vec<f64>,
    pub r: usize,
    pub num_vertices: usize,
    pub num_elements: usize,
    pub element_type: String,
    /// Fraction of the mass-weighted variance the PCA basis keeps (modal derivatives).
    pub pca_retained_variance: Option<f64>,
    pub parameters: BakeParams,
    pub inputs: Vec<HashedFile>,
    pub outputs: Vec<HashedFile>,
    pub timings_s: StageTimings,
}

/// Errors of the bake and of loading baked directories.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    #[error(transparent)]
    Mesh(#[from] MeshError),
    #[error("{path}: {source}")]
    Fem { path: PathBuf, source: FemError },
    #[error(transparent)]
    Voxelize(#[from] VoxelizeError),
    #[error(transparent)]
    Modes(#[from] ModesError),
    #[error(transparent)]
    Basis(#[from] BasisError),
    #[error(transparent)]
    Precompute(#[from] PrecomputeError),
    #[error(transparent)]
    Vega(#[from] VegaError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: invalid manifest: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("{path}: the basis is not mass-orthonormal: max |U^T M U - I| = {error:.3e} (tolerance 1e-6)")]
    NotMassOrthonormal { path: PathBuf, error: f64 },
    #[error("{path}: {message}")]
    Mismatch { path: PathBuf, message: String },
    #[error("invalid parameters: {0}")]
    Parameters(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BakeError + '_ {
    move |source| BakeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// SHA-256 of a file, hex.
pub fn hash_file(path: &Path) -> Result<String, BakeError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Stage reporting for progress bars (the CLI draws them; tests pass [`NoProgress`]).
pub trait BakeProgress: Sync {
    /// A stage starts, with `total` units of work.
    fn stage(&self, name: &str, total: u64);
    /// `n` units are done.
    fn advance(&self, n: u64);
    /// The stage is finished.
    fn finish(&self);
}

/// Reports nothing.
pub struct NoProgress;
impl BakeProgress for NoProgress {
    fn stage(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Whether a bake ran or the cache was current.
#[derive(Debug, Clone, PartialEq)]
pub enum BakeOutcome {
    UpToDate(Manifest),
    Baked(Manifest),
}

fn input_hashes(input: &BakeInput) -> Result<Vec<HashedFile>, BakeError> {
    let mut out = Vec::new();
    let mut add = |role: &str, p: &Path| -> Result<(), BakeError> {
        out.push(HashedFile {
            role: role.to_string(),
            path: p.display().to_string(),
            sha256: hash_file(p)?,
        });
        Ok(())
    };
    add("mesh", &input.mesh)?;
    if let Some(f) = &input.fixed {
        add("fixed", f)?;
    }
    if let Some(b) = &input.basis_file {
        add("basis", b)?;
    }
    if let Some(i) = &input.render_interp {
        add("render-interp", i)?;
    }
    Ok(out)
}

/// Reads and checks a manifest.
pub fn read_manifest(dir: &Path) -> Result<Manifest, BakeError> {
    let path = dir.join("manifest.toml");
    let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
    let m: Manifest = toml::from_str(&text).map_err(|e| BakeError::Manifest {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if m.format_version != FORMAT_VERSION {
        return Err(BakeError::Manifest {
            path,
            message: format!(
                "format_version {} (this build reads {FORMAT_VERSION})",
                m.format_version
            ),
        });
    }
    Ok(m)
}

fn mass_kind(name: &str) -> Result<MassKind, BakeError> {
    match name {
        "consistent" => Ok(MassKind::Consistent),
        "lumped" => Ok(MassKind::Lumped),
        other => Err(BakeError::Parameters(format!(
            "mass matrix '{other}': expected 'consistent' or 'lumped'"
        ))),
    }
}

/// Max |U^T M U - I|.
pub fn mass_orthonormality_error(m: &crate::fem::BlockSparseMatrix, u: &DMatrix<f64>) -> f64 {
    let mut mu = DMatrix::zeros(u.nrows(), u.ncols());
    for c in 0..u.ncols() {
        let mut out = vec![0.0; u.nrows()];
        m.mul_vec(u.column(c).as_slice(), &mut out);
        mu.column_mut(c).copy_from_slice(&out);
    }
    let g = u.transpose() * mu;
    (g - DMatrix::identity(u.ncols(), u.ncols())).abs().max()
}

/// Bakes `input` into `out`, unless `out` already holds a bake of the same inputs and
/// parameters.
pub fn bake(
    input: &BakeInput,
    out: &Path,
    progress: &dyn BakeProgress,
) -> Result<BakeOutcome, BakeError> {
    let p = &input.params;
    let needs_modes = matches!(
        p.basis_kind,
        BasisKind::ModalDerivatives | BasisKind::LinearModes
    );
    if p.basis == 0 || (needs_modes && p.linear_modes == 0) {
        return Err(BakeError::Parameters(
            "--linear-modes and --basis must be positive".into(),
        ));
    }
    let inputs = input_hashes(input)?;
    if let Ok(m) = read_manifest(out) {
        if m.inputs == inputs && &m.parameters == p && load_baked(out).is_ok() {
            return Ok(BakeOutcome::UpToDate(m));
        }
    }
    let start = Instant::now();
    let mut timings = StageTimings::default();

    progress.stage("load mesh and build the finite element model", 1);
    let t0 = Instant::now();
    let mesh: VolumeMesh = match input
        .mesh
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("obj") | Some("stl") => {
            let res = p.voxel_resolution.ok_or_else(|| {
                BakeError::Parameters(format!(
                    "{}: a surface mesh needs --resolution N to be voxelized",
                    input.mesh.display()
                ))
            })?;
            let surface = read_surface(&input.mesh)?;
            let opts = VoxelizeOptions {
                resolution: res,
                ..VoxelizeOptions::default()
            };
            voxelize(&surface, &opts, None)?.mesh
        }
        _ => read_volume(&input.mesh)?,
    };
    let model = FemModel::new(&mesh, MaterialLaw::StVK).map_err(|source| BakeError::Fem {
        path: input.mesh.clone(),
        source,
    })?;
    let n = model.num_dofs();
    let fixed_vertices = match &input.fixed {
        Some(f) => read_bou(f, Some(mesh.vertices.len()))?,
        None => Vec::new(),
    };
    if fixed_vertices.is_empty()
        && !p.unconstrained
        && !matches!(p.basis_kind, BasisKind::File | BasisKind::Snapshots)
    {
        return Err(BakeError::Parameters(
            "no fixed vertices: pass --fixed FILE.bou, or --unconstrained for a free object".into(),
        ));
    }
    let mut fixed = vec![false; n];
    for &v in &fixed_vertices {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k0 = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; n], &mut k0);
    let mass = model.mass_matrix(mass_kind(&p.mass_matrix)?);
    timings.load_and_fem = t0.elapsed().as_secs_f64();
    progress.advance(1);
    progress.finish();

    let mut modes: Option<LinearModes> = None;
    let mut retained = None;
    let basis: DMatrix<f64> = match p.basis_kind {
        BasisKind::File => {
            let path = input.basis_file.as_ref().ok_or_else(|| {
                BakeError::Parameters("basis kind 'file' needs --basis-file".into())
            })?;
            let u = read_matrix(path, Precision::F64)?;
            if u.nrows() != n {
                return Err(BakeError::Mismatch {
                    path: path.clone(),
                    message: format!(
                        "the basis has {} rows but the mesh has {n} degrees of freedom",
                        u.nrows()
                    ),
                });
            }
            if p.basis > u.ncols() {
                return Err(BakeError::Parameters(format!(
                    "--basis {} but {} has {} columns",
                    p.basis,
                    path.display(),
                    u.ncols()
                )));
            }
            let u = u.columns(0, p.basis).into_owned();
            let err = mass_orthonormality_error(&mass, &u);
            if err > 1e-6 {
                return Err(BakeError::NotMassOrthonormal {
                    path: path.clone(),
                    error: err,
                });
            }
            u
        }
        BasisKind::Snapshots => {
            let path = input.basis_file.as_ref().ok_or_else(|| {
                BakeError::Parameters("basis kind 'snapshots' needs --snapshots FILE.U".into())
            })?;
            let y = read_matrix(path, Precision::F64)?;
            if y.nrows() != n {
                return Err(BakeError::Mismatch {
                    path: path.clone(),
                    message: format!(
                        "the snapshots have {} rows but the mesh has {n} degrees of freedom",
                        y.nrows()
                    ),
                });
            }
            progress.stage("mass-PCA of the snapshots", 1);
            let t0 = Instant::now();
            let (u, kept) = mass_pca(&mass, &y, p.basis)?;
            retained = Some(kept);
            timings.pca = t0.elapsed().as_secs_f64();
            progress.advance(1);
            progress.finish();
            u
        }
        kind => {
            progress.stage("linear modes (shift-invert Lanczos)", 1);
            let t0 = Instant::now();
            let lm = linear_modes(
                &k0,
                &mass,
                &fixed,
                &model.rest_positions,
                &ModesOptions {
                    count: p.linear_modes,
                    unconstrained: p.unconstrained,
                    tolerance: 1e-10,
                },
            )?;
            timings.linear_modes = t0.elapsed().as_secs_f64();
            progress.advance(1);
            progress.finish();
            let u = if kind == BasisKind::LinearModes {
                if p.basis > p.linear_modes {
                    return Err(BakeError::Parameters(format!(
                        "a linear-mode basis of {} vectors needs --linear-modes >= {}",
                        p.basis, p.basis
                    )));
                }
                lm.vectors.columns(0, p.basis).into_owned()
            } else {
                let k = p.linear_modes;
                let pairs = if p.unconstrained {
                    k * k
                } else {
                    k * (k + 1) / 2
                };
                progress.stage("modal derivatives", pairs as u64);
                let t0 = Instant::now();
                let y = if p.unconstrained {
                    let phis = modal_derivatives_unconstrained(
                        &model,
                        &k0,
                        &mass,
                        &lm.vectors,
                        &lm.eigenvalues,
                    )?;
                    scaled_modes_and_all_derivatives(&lm.eigenvalues, &lm.vectors, &phis)
                } else {
                    let phis =
                        modal_derivatives_with_progress(&model, &k0, &fixed, &lm.vectors, &|| {
                            progress.advance(1)
                        })?;
                    scaled_modes_and_derivatives(&lm.eigenvalues, &lm.vectors, &phis)
                };
                timings.modal_derivatives = t0.elapsed().as_secs_f64();
                if p.unconstrained {
                    progress.advance(pairs as u64);
                }
                progress.finish();
                progress.stage("mass-PCA", 1);
                let t0 = Instant::now();
                let (u, kept) = mass_pca(&mass, &y, p.basis).map_err(|e| match e {
                    BasisError::RankTooLow { asked, rank } => BakeError::Parameters(format!(
                        "--basis {asked} exceeds the {rank} independent modes and derivatives of k = {k}"
                    )),
                    other => other.into(),
                })?;
                retained = Some(kept);
                timings.pca = t0.elapsed().as_secs_f64();
                progress.advance(1);
                progress.finish();
                u
            };
            modes = Some(lm);
            u
        }
    };

    progress.stage("cubic polynomial", 1);
    let t0 = Instant::now();
    let (poly, _) = reduced_polynomial(&model, &basis, faer::Par::rayon(0))?;
    timings.polynomial = t0.elapsed().as_secs_f64();
    progress.advance(1);
    progress.finish();

    progress.stage("write", 1);
    let t0 = Instant::now();
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "baked".into());
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
    }
    std::fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
    write_matrix(&tmp.join("basis.U"), &basis, Precision::F64)?;
    write_cub(&tmp.join("reduced.cub"), &poly)?;
    let mut output_files = vec!["basis.U", "reduced.cub"];
    if let Some(lm) = &modes {
        write_matrix(&tmp.join("linear_modes.U"), &lm.vectors, Precision::F64)?;
        output_files.push("linear_modes.U");
    }
    if let Some(interp_path) = &input.render_interp {
        let interp = crate::mesh::read_interp(interp_path, None, Some(mesh.vertices.len()))?;
        let ur = super::basis::render_basis(&interp, &basis);
        write_matrix(&tmp.join("render.URendering.float"), &ur, Precision::F32)?;
        output_files.push("render.URendering.float");
    }
    let mut group_files = Vec::new();
    if p.material_groups {
        let groups = super::precompute::MaterialGroupPolynomials::compute(
            &model,
            &basis,
            faer::Par::rayon(0),
        )?;
        for (g, name) in groups.names.iter().enumerate() {
            let safe: String = name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            for (part, poly) in [("lambda", &groups.lambda[g]), ("mu", &groups.mu[g])] {
                let f = format!("material_{g}_{safe}_{part}.cub");
                write_cub(&tmp.join(&f), poly)?;
                group_files.push(f);
            }
        }
    }
    let output_files: Vec<String> = output_files
        .iter()
        .map(|s| s.to_string())
        .chain(group_files)
        .collect();
    let outputs = output_files
        .iter()
        .map(|f| {
            Ok(HashedFile {
                role: "output".into(),
                path: f.clone(),
                sha256: hash_file(&tmp.join(f))?,
            })
        })
        .collect::<Result<Vec<_>, BakeError>>()?;
    timings.write = t0.elapsed().as_secs_f64();
    timings.total = start.elapsed().as_secs_f64();
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        mass_matrix: p.mass_matrix.clone(),
        linear_frequencies_hz: modes
            .as_ref()
            .map(|m| m.frequencies_hz())
            .unwrap_or_default(),
        r: basis.ncols(),
        num_vertices: mesh.vertices.len(),
        num_elements: mesh.num_elements(),
        element_type: mesh.kind.name().to_string(),
        pca_retained_variance: retained,
        parameters: p.clone(),
        inputs,
        outputs,
        timings_s: timings,
    };
    let text = toml::to_string_pretty(&manifest).map_err(|e| BakeError::Manifest {
        path: tmp.join("manifest.toml"),
        message: e.to_string(),
    })?;
    std::fs::write(tmp.join("manifest.toml"), text).map_err(io_err(&tmp))?;
    // Swap the finished directory into place.
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if out.exists() {
        std::fs::rename(out, &old).map_err(io_err(out))?;
    }
    std::fs::rename(&tmp, out).map_err(io_err(out))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(io_err(&old))?;
    }
    progress.advance(1);
    progress.finish();
    Ok(BakeOutcome::Baked(manifest))
}

/// A baked reduced model.
#[derive(Debug, Clone)]
pub struct BakedModel {
    pub manifest: Manifest,
    pub basis: DMatrix<f64>,
    pub polynomial: CubicPolynomial,
}

/// Loads a baked directory, checking the output hashes and the sizes.
pub fn load_baked(dir: &Path) -> Result<BakedModel, BakeError> {
    let manifest = read_manifest(dir)?;
    for f in &manifest.outputs {
        let path = dir.join(&f.path);
        let h = hash_file(&path)?;
        if h != f.sha256 {
            return Err(BakeError::Mismatch {
                path,
                message:
                    "the file changed since the bake (hash differs from manifest.toml); re-bake"
                        .into(),
            });
        }
    }
    let basis = read_matrix(&dir.join("basis.U"), Precision::F64)?;
    let polynomial = read_cub(&dir.join("reduced.cub"))?;
    if basis.ncols() != manifest.r
        || polynomial.r != manifest.r
        || basis.nrows() != 3 * manifest.num_vertices
    {
        return Err(BakeError::Mismatch {
            path: dir.to_path_buf(),
            message: format!(
                "manifest says r = {} and {} vertices, basis.U is {}x{}, reduced.cub has r = {}",
                manifest.r,
                manifest.num_vertices,
                basis.nrows(),
                basis.ncols(),
                polynomial.r
            ),
        });
    }
    Ok(BakedModel {
        manifest,
        basis,
        polynomial,
    })
}
