//! The bake: volumetric (or voxelized surface) mesh -> FEM -> linear modes -> modal
//! derivatives -> mass-PCA basis -> cubic reduced-force polynomial, written as one baked
//! directory with a manifest, so a changed input re-bakes and an unchanged one loads
//! instantly (docs/architecture.md, "Two stages: bake, then run"; the directory's layout
//! is in docs/file-formats.md, "Baked directory").
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

use super::basis::{mass_pca, render_basis, BasisError};
use super::modes::{LinearModes, ModesError, ModesOptions};
use super::pipeline::{
    linear_modes_stage, modal_derivative_basis, BasisSizes, PipelineError, RestSystem,
    StvkDerivatives,
};
use super::polynomial::CubicPolynomial;
use super::precompute::{reduced_polynomial, MaterialGroupPolynomials, PrecomputeError};
use super::vega::{read_cub, read_matrix, write_cub, write_matrix, Precision, VegaError};
use crate::fem::{
    model::FemError, model::FemModel, model::MassKind, model::MaterialLaw, BlockSparseMatrix,
};
use crate::io::fault;
use crate::io::{file_sha256, temp_sibling};
use crate::mesh::voxelize::{voxelize, VoxelizeError, VoxelizeOptions};
use crate::mesh::{
    bou::read_bou, error::MeshError, interp::read_interp, read::read_surface, read::read_volume,
    volume::VolumeMesh,
};
use crate::progress::{NoProgress, Progress};

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
    /// Number k of linear modes (kinds `modal-derivatives` and `linear-modes`).
    pub linear_modes: usize,
    /// Basis size r.
    pub basis: usize,
    /// How the basis is built.
    pub basis_kind: BasisKind,
    /// The mass matrix of the modes, the PCA and the orthonormality check
    /// (`"consistent"` or `"lumped"` in the manifest).
    pub mass_matrix: MassKind,
    /// The object has no fixed vertices (its six rigid modes are skipped).
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
    /// Volumetric mesh (`.veg`, TetGen) or surface mesh (`.obj`, `.stl`: voxelized).
    pub mesh: PathBuf,
    /// Fixed vertices (Vega `.bou`).
    pub fixed: Option<PathBuf>,
    /// The basis (kind `file`) or the snapshots (kind `snapshots`), Vega matrixIO.
    pub basis_file: Option<PathBuf>,
    /// Render-mesh embedding (Vega .interp): writes the render basis too.
    pub render_interp: Option<PathBuf>,
    /// The parameters.
    pub params: BakeParams,
}

/// A hashed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HashedFile {
    /// `mesh`, `fixed`, `basis`, `render-interp` (inputs) or `output`.
    pub role: String,
    /// The path (inputs) or the file name in the baked directory (outputs).
    pub path: String,
    /// SHA-256 of the contents, lowercase hex.
    pub sha256: String,
}

/// Seconds spent in each stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimings {
    /// Reading (or voxelizing) the mesh and assembling stiffness and mass.
    pub load_and_fem: f64,
    /// The linear modes.
    pub linear_modes: f64,
    /// The modal derivatives.
    pub modal_derivatives: f64,
    /// The mass-PCA.
    pub pca: f64,
    /// The cubic polynomial.
    pub polynomial: f64,
    /// Writing and hashing the outputs.
    pub write: f64,
    /// The whole bake, up to the manifest.
    pub total: f64,
}

/// The manifest of a baked directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The mass matrix the basis is orthonormal in (`"consistent"` or `"lumped"`).
    pub mass_matrix: MassKind,
    /// The k lowest non-rigid linear frequencies (Hz).
    pub linear_frequencies_hz: Vec<f64>,
    /// Basis size.
    pub r: usize,
    /// Vertices of the simulation mesh.
    pub num_vertices: usize,
    /// Elements of the simulation mesh.
    pub num_elements: usize,
    /// Their type (`tetrahedra` or `hexahedra`).
    pub element_type: String,
    /// Fraction of the mass-weighted variance the PCA basis keeps (modal derivatives).
    pub pca_retained_variance: Option<f64>,
    /// The parameters of the bake.
    pub parameters: BakeParams,
    /// The input files and their hashes.
    pub inputs: Vec<HashedFile>,
    /// The output files and their hashes.
    pub outputs: Vec<HashedFile>,
    /// Seconds spent in each stage.
    pub timings_s: StageTimings,
}

/// Errors of the bake and of loading baked directories.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// Reading a mesh, `.bou` or `.interp` file.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// The finite element model of the mesh.
    #[error("{path}: {source}")]
    Fem {
        /// The mesh file.
        path: PathBuf,
        /// What is wrong with the model.
        source: FemError,
    },
    /// Voxelizing a surface mesh.
    #[error(transparent)]
    Voxelize(#[from] VoxelizeError),
    /// The eigensolver.
    #[error(transparent)]
    Modes(#[from] ModesError),
    /// Modal derivatives or mass-PCA.
    #[error(transparent)]
    Basis(#[from] BasisError),
    /// The cubic polynomial.
    #[error(transparent)]
    Precompute(#[from] PrecomputeError),
    /// Reading or writing a Vega binary file.
    #[error(transparent)]
    Vega(#[from] VegaError),
    /// Reading, writing, renaming or removing a file or directory.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A manifest that does not parse or has another format version.
    #[error("{path}: invalid manifest: {message}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A basis file whose basis is not mass-orthonormal.
    #[error("{path}: the basis is not mass-orthonormal: max |U^T M U - I| = {error:.3e} (tolerance 1e-6)")]
    NotMassOrthonormal {
        /// The basis file.
        path: PathBuf,
        /// Max |U^T M U - I|.
        error: f64,
    },
    /// A file that does not match the mesh or the manifest.
    #[error("{path}: {message}")]
    Mismatch {
        /// The file (or baked directory).
        path: PathBuf,
        /// What does not match.
        message: String,
    },
    /// Parameters no bake can use.
    #[error("invalid parameters: {0}")]
    Parameters(String),
    /// The caller asked the bake to stop ([`Progress::cancelled`]); nothing was written.
    #[error("the bake was cancelled; nothing was written")]
    Cancelled,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BakeError + '_ {
    move |source| BakeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// SHA-256 of a file, hex.
pub(crate) fn hash_file(path: &Path) -> Result<String, BakeError> {
    file_sha256(path).map_err(io_err(path))
}

/// Whether a bake ran or the cache was current.
#[derive(Debug, Clone, PartialEq)]
pub enum BakeOutcome {
    /// `out` already held a bake of the same inputs and parameters.
    UpToDate(Manifest),
    /// A new bake was written.
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
pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest, BakeError> {
    let path = dir.join("manifest.toml");
    let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
    parse_manifest(&text, &path)
}

/// Parses and checks the text of a manifest (`path` names it in errors).
pub fn parse_manifest(text: &str, path: &Path) -> Result<Manifest, BakeError> {
    let path = path.to_path_buf();
    let m: Manifest = toml::from_str(text).map_err(|e| BakeError::Manifest {
        path: path.clone(),
        message: manifest_syntax_message(text, &e),
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

/// A manifest parse error as "line L, column C: what", without the offending line
/// itself (toml's own message quotes it, and a damaged manifest may hold a line of
/// hundreds of kilobytes).
fn manifest_syntax_message(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let before = &text.as_bytes()[..span.start.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            format!("line {line}, column {column}: {}", e.message().trim())
        }
        None => e.message().trim().to_string(),
    }
}

/// Max |U^T M U - I|.
pub fn mass_orthonormality_error(m: &BlockSparseMatrix, u: &DMatrix<f64>) -> f64 {
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
/// parameters. The steps (each a `progress` stage, timed in the manifest):
/// 1. check the parameters and hash the inputs; stop if `out` is up to date;
/// 2. read the volumetric mesh (or voxelize a surface mesh) and assemble the finite
///    element model, its fixed degrees of freedom, rest stiffness and mass matrix;
/// 3. build the basis: from a file, by mass-PCA of snapshots, or from linear modes (and
///    their modal derivatives, condensed by mass-PCA);
/// 4. the cubic polynomial of the reduced internal forces;
/// 5. write the outputs, their hashes and the manifest into a temporary directory and
///    swap it into place.
pub fn bake(
    input: &BakeInput,
    out: &Path,
    progress: &dyn Progress,
) -> Result<BakeOutcome, BakeError> {
    let p = &input.params;
    check_params(p)?;
    // Before hours of work: a file (or foreign directory) at `out` is never replaced.
    check_replaceable(out)?;
    let inputs = input_hashes(input)?;
    if let Some(m) = current_bake(out, &inputs, p) {
        return Ok(BakeOutcome::UpToDate(m));
    }
    let start = Instant::now();
    let mut timings = StageTimings::default();
    let fem = timed_stage(
        progress,
        "load mesh and build the finite element model",
        &mut timings.load_and_fem,
        || assemble(input, load_mesh(input)?),
    )?;
    let basis = build_basis(input, &fem, progress, &mut timings)?;
    let poly = timed_stage(
        progress,
        "cubic polynomial",
        &mut timings.polynomial,
        || Ok(reduced_polynomial(&fem.model, &basis.u, faer::Par::rayon(0))?.0),
    )?;

    stop_if_cancelled(progress)?;
    progress.stage("write", 1);
    let t0 = Instant::now();
    let manifest = in_staging_dir(out, |staging| {
        let outputs = write_outputs(staging, input, &fem, &basis, &poly)?;
        timings.write = t0.elapsed().as_secs_f64();
        timings.total = start.elapsed().as_secs_f64();
        let manifest = new_manifest(p, &fem, &basis, inputs, outputs, timings);
        write_manifest(staging, &manifest)?;
        Ok(manifest)
    })?;
    progress.advance(1);
    progress.finish();
    Ok(BakeOutcome::Baked(manifest))
}

/// Runs `work` as a progress stage of one unit, storing its duration in `seconds`.
fn timed_stage<T>(
    progress: &dyn Progress,
    name: &str,
    seconds: &mut f64,
    work: impl FnOnce() -> Result<T, BakeError>,
) -> Result<T, BakeError> {
    let (value, s) = crate::progress::timed_stage(
        progress,
        name,
        1,
        || BakeError::Cancelled,
        || {
            let value = work()?;
            progress.advance(1);
            Ok(value)
        },
    )?;
    *seconds = s;
    Ok(value)
}

/// [`BakeError::Cancelled`] when the caller asked to stop: checked before each stage.
fn stop_if_cancelled(progress: &dyn Progress) -> Result<(), BakeError> {
    if progress.cancelled() {
        return Err(BakeError::Cancelled);
    }
    Ok(())
}

/// Rejects parameters no bake can use (an empty basis, or no linear modes for a
/// basis built from them).
fn check_params(p: &BakeParams) -> Result<(), BakeError> {
    let needs_modes = matches!(
        p.basis_kind,
        BasisKind::ModalDerivatives | BasisKind::LinearModes
    );
    if p.basis == 0 || (needs_modes && p.linear_modes == 0) {
        return Err(BakeError::Parameters(
            "--linear-modes and --basis must be positive".into(),
        ));
    }
    Ok(())
}

/// The manifest of `out` when it already holds a complete, unmodified bake of
/// these inputs (by hash) and parameters.
fn current_bake(out: &Path, inputs: &[HashedFile], p: &BakeParams) -> Option<Manifest> {
    let m = read_manifest(out).ok()?;
    (m.inputs == inputs && &m.parameters == p && load_baked(out).is_ok()).then_some(m)
}

/// The volumetric mesh: read, or voxelized from a surface mesh (`.obj`, `.stl`)
/// at the `voxel_resolution` parameter.
fn load_mesh(input: &BakeInput) -> Result<VolumeMesh, BakeError> {
    let extension = input
        .mesh
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("obj") | Some("stl") => {
            let res = input.params.voxel_resolution.ok_or_else(|| {
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
            Ok(voxelize(&surface, &opts, &NoProgress)?.mesh)
        }
        _ => Ok(read_volume(&input.mesh)?),
    }
}

/// The finite element model of the mesh and what the later steps need from it.
struct Fem {
    mesh: VolumeMesh,
    model: FemModel,
    /// Per degree of freedom: whether it is fixed.
    fixed: Vec<bool>,
    /// The tangent stiffness at rest.
    k0: BlockSparseMatrix,
    mass: BlockSparseMatrix,
}

impl Fem {
    fn num_dofs(&self) -> usize {
        self.model.num_dofs()
    }

    /// The stiffness, mass, fixed degrees of freedom and positions at rest.
    fn rest_system(&self) -> RestSystem<'_> {
        RestSystem {
            k0: &self.k0,
            mass: &self.mass,
            fixed: &self.fixed,
            rest: &self.model.rest_positions,
        }
    }
}

/// The StVK model of `mesh`, its fixed degrees of freedom (a free object must be
/// asked for with `unconstrained`), the rest stiffness and the mass matrix.
fn assemble(input: &BakeInput, mesh: VolumeMesh) -> Result<Fem, BakeError> {
    let p = &input.params;
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
    let mass = model.mass_matrix(p.mass_matrix);
    Ok(Fem {
        mesh,
        model,
        fixed,
        k0,
        mass,
    })
}

/// The reduced basis, with the linear modes and the retained PCA variance it came from
/// (for the manifest).
struct Basis {
    u: DMatrix<f64>,
    modes: Option<LinearModes>,
    retained: Option<f64>,
}

/// The basis of the `basis_kind` parameter.
fn build_basis(
    input: &BakeInput,
    fem: &Fem,
    progress: &dyn Progress,
    timings: &mut StageTimings,
) -> Result<Basis, BakeError> {
    let p = &input.params;
    match p.basis_kind {
        BasisKind::File => Ok(Basis {
            u: file_basis(input, fem)?,
            modes: None,
            retained: None,
        }),
        BasisKind::Snapshots => snapshot_basis(input, fem, progress, timings),
        BasisKind::LinearModes => {
            let (lm, seconds) = linear_modes_stage(&fem.rest_system(), &modes_options(p), progress)
                .map_err(|e| pipeline_error(e, p.linear_modes))?;
            timings.linear_modes = seconds;
            Ok(Basis {
                u: first_linear_modes(p, &lm)?,
                modes: Some(lm),
                retained: None,
            })
        }
        BasisKind::ModalDerivatives => derivative_basis(p, fem, progress, timings),
    }
}

/// A `Mismatch` unless `rows` is the number of degrees of freedom (`what` says "the basis
/// has" or "the snapshots have").
fn check_rows(path: &Path, what: &str, rows: usize, n: usize) -> Result<(), BakeError> {
    if rows != n {
        return Err(BakeError::Mismatch {
            path: path.to_path_buf(),
            message: format!("{what} {rows} rows but the mesh has {n} degrees of freedom"),
        });
    }
    Ok(())
}

/// Basis kind `file`: the first r columns of the basis file, which must be
/// mass-orthonormal.
fn file_basis(input: &BakeInput, fem: &Fem) -> Result<DMatrix<f64>, BakeError> {
    let p = &input.params;
    let path = input
        .basis_file
        .as_ref()
        .ok_or_else(|| BakeError::Parameters("basis kind 'file' needs --basis-file".into()))?;
    let u = read_matrix(path, Precision::F64)?;
    check_rows(path, "the basis has", u.nrows(), fem.num_dofs())?;
    if p.basis > u.ncols() {
        return Err(BakeError::Parameters(format!(
            "--basis {} but {} has {} columns",
            p.basis,
            path.display(),
            u.ncols()
        )));
    }
    let u = u.columns(0, p.basis).into_owned();
    let err = mass_orthonormality_error(&fem.mass, &u);
    if err > 1e-6 {
        return Err(BakeError::NotMassOrthonormal {
            path: path.clone(),
            error: err,
        });
    }
    Ok(u)
}

/// Basis kind `snapshots`: mass-PCA of the displacement snapshots in the basis file.
fn snapshot_basis(
    input: &BakeInput,
    fem: &Fem,
    progress: &dyn Progress,
    timings: &mut StageTimings,
) -> Result<Basis, BakeError> {
    let path = input.basis_file.as_ref().ok_or_else(|| {
        BakeError::Parameters("basis kind 'snapshots' needs --snapshots FILE.U".into())
    })?;
    let y = read_matrix(path, Precision::F64)?;
    check_rows(path, "the snapshots have", y.nrows(), fem.num_dofs())?;
    let (u, kept) = timed_stage(
        progress,
        "mass-PCA of the snapshots",
        &mut timings.pca,
        || Ok(mass_pca(&fem.mass, &y, input.params.basis)?),
    )?;
    Ok(Basis {
        u,
        modes: None,
        retained: Some(kept),
    })
}

/// The k lowest linear modes (rigid modes skipped when unconstrained).
fn modes_options(p: &BakeParams) -> ModesOptions {
    ModesOptions {
        count: p.linear_modes,
        unconstrained: p.unconstrained,
        tolerance: 1e-10,
    }
}

/// Basis kind `linear-modes`: the first r linear modes.
fn first_linear_modes(p: &BakeParams, lm: &LinearModes) -> Result<DMatrix<f64>, BakeError> {
    if p.basis > p.linear_modes {
        return Err(BakeError::Parameters(format!(
            "a linear-mode basis of {} vectors needs --linear-modes >= {}",
            p.basis, p.basis
        )));
    }
    Ok(lm.vectors.columns(0, p.basis).into_owned())
}

/// Basis kind `modal-derivatives`: mass-PCA of the scaled linear modes and their analytic
/// modal derivatives (thesis 2.8.3), k(k+1)/2 of a constrained object, k^2 of a free one,
/// by [`modal_derivative_basis`].
fn derivative_basis(
    p: &BakeParams,
    fem: &Fem,
    progress: &dyn Progress,
    timings: &mut StageTimings,
) -> Result<Basis, BakeError> {
    let system = fem.rest_system();
    let sizes = BasisSizes {
        modes: modes_options(p),
        derivative_modes: p.linear_modes,
        basis: p.basis,
    };
    let derivatives = StvkDerivatives {
        model: &fem.model,
        system,
        unconstrained: p.unconstrained,
    };
    let basis = modal_derivative_basis(&system, &sizes, &derivatives, progress)
        .map_err(|e| pipeline_error(e, p.linear_modes))?;
    timings.linear_modes = basis.seconds.linear_modes;
    timings.modal_derivatives = basis.seconds.modal_derivatives;
    timings.pca = basis.seconds.pca;
    Ok(Basis {
        u: basis.u,
        modes: Some(basis.modes),
        retained: Some(basis.retained),
    })
}

/// The bake's error for a failed step of the basis pipeline of `k` linear modes: a basis
/// larger than the modes and derivatives span is a parameter error.
fn pipeline_error(e: PipelineError<BasisError>, k: usize) -> BakeError {
    match e {
        PipelineError::Cancelled => BakeError::Cancelled,
        PipelineError::Modes(e) => e.into(),
        PipelineError::Derivatives(e) => e.into(),
        PipelineError::Pca(BasisError::RankTooLow { asked, rank }) => {
            BakeError::Parameters(format!(
                "--basis {asked} exceeds the {rank} independent modes and derivatives of k = {k}"
            ))
        }
        PipelineError::Pca(e) => e.into(),
    }
}

/// Runs `work` on a fresh temporary directory beside `out`, then
/// swaps it into place as `out` (replacing an older bake). On an error the temporary
/// directory is removed and `out` is left as it was. An `out` that exists and is not a
/// baked directory (see [`check_replaceable`]) is refused before `work` runs.
fn in_staging_dir<T>(
    out: &Path,
    work: impl FnOnce(&Path) -> Result<T, BakeError>,
) -> Result<T, BakeError> {
    check_replaceable(out)?;
    let parent = crate::io::parent_dir(out);
    fault::create_dir_all(parent).map_err(io_err(parent))?;
    // Bakes killed mid-way left their staging directories here: remove them.
    crate::io::sweep_stale(parent);
    let staging = temp_sibling(out, "partial");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
    }
    fault::create_dir_all(&staging).map_err(io_err(&staging))?;
    let result = work(&staging).and_then(|value| {
        swap_into_place(&staging, out)?;
        Ok(value)
    });
    if result.is_err() {
        // Best effort: the error is what matters.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

/// Whether a bake may replace `out`: it does not exist, or it is a baked directory (one
/// holding a `manifest.toml`, even a stale or damaged bake) or an empty directory. A
/// regular file, a symbolic link or a directory of other files is refused: a bake never
/// moves or deletes a user's files.
fn check_replaceable(out: &Path) -> Result<(), BakeError> {
    let refuse = |what: &str| BakeError::Mismatch {
        path: out.to_path_buf(),
        message: format!(
            "the output path exists and is {what}, not a baked directory; refusing to \
             replace it (choose another output path, or remove it first)"
        ),
    };
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(out)(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse("a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(refuse("a file"));
    }
    if out.join("manifest.toml").is_file() {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(out).map_err(io_err(out))?;
    if entries.next().is_none() {
        return Ok(());
    }
    Err(refuse("a directory without a manifest.toml"))
}

/// Renames the finished directory `staging` to `out`, moving an older bake at `out`
/// aside first and deleting it after. When another bake to the same `out` wins the race
/// (its rename lands first), this one fails with a message and leaves nothing behind:
/// the older bake it moved aside is put back or, when the winner's bake already took its
/// place, deleted (the caller removes `staging`).
fn swap_into_place(staging: &Path, out: &Path) -> Result<(), BakeError> {
    check_replaceable(out)?;
    let old = temp_sibling(out, "old");
    let moved_aside = match fault::rename(out, &old) {
        Ok(()) => true,
        // Nothing there (or a concurrent bake just moved it aside itself).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io_err(out)(e)),
    };
    #[cfg(test)]
    if let Some(hook) = tests::BETWEEN_RENAMES.with(|h| h.borrow_mut().take()) {
        hook(out);
    }
    if let Err(e) = fault::rename(staging, out) {
        let replaced = out.exists();
        if moved_aside && std::fs::rename(&old, out).is_err() {
            // `out` is taken by another bake: the older one we moved aside is obsolete.
            let _ = std::fs::remove_dir_all(&old);
        }
        return Err(if replaced {
            BakeError::Mismatch {
                path: out.to_path_buf(),
                message: format!(
                    "another bake wrote this output at the same time and its result was \
                     kept; this bake's result was discarded ({e})"
                ),
            }
        } else {
            io_err(out)(e)
        });
    }
    if moved_aside {
        std::fs::remove_dir_all(&old).map_err(io_err(&old))?;
    }
    Ok(())
}

/// Writes the basis, the polynomial, the linear modes, the render basis and the material
/// group polynomials (those that apply) into `dir`; returns their hashes.
fn write_outputs(
    dir: &Path,
    input: &BakeInput,
    fem: &Fem,
    basis: &Basis,
    poly: &CubicPolynomial,
) -> Result<Vec<HashedFile>, BakeError> {
    write_matrix(&dir.join("basis.U"), &basis.u, Precision::F64)?;
    write_cub(&dir.join("reduced.cub"), poly)?;
    let mut files = vec!["basis.U".to_string(), "reduced.cub".to_string()];
    if let Some(lm) = &basis.modes {
        write_matrix(&dir.join("linear_modes.U"), &lm.vectors, Precision::F64)?;
        files.push("linear_modes.U".into());
    }
    if let Some(interp) = &input.render_interp {
        files.push(write_render_basis(dir, interp, fem, basis)?);
    }
    if input.params.material_groups {
        files.extend(write_material_groups(dir, fem, basis)?);
    }
    files
        .into_iter()
        .map(|f| {
            Ok(HashedFile {
                role: "output".into(),
                sha256: hash_file(&dir.join(&f))?,
                path: f,
            })
        })
        .collect()
}

/// The render basis (f32 matrixIO) of the render mesh embedded by `interp`; returns the
/// file name.
fn write_render_basis(
    dir: &Path,
    interp: &Path,
    fem: &Fem,
    basis: &Basis,
) -> Result<String, BakeError> {
    let interp = read_interp(interp, None, Some(fem.mesh.vertices.len()))?;
    let ur = render_basis(&interp, &basis.u);
    let name = "render.URendering.float";
    write_matrix(&dir.join(name), &ur, Precision::F32)?;
    Ok(name.into())
}

/// The lambda and mu polynomials of every material group
/// (`material_{g}_{name}_{lambda|mu}.cub`, the name made file-safe); returns the file
/// names.
fn write_material_groups(dir: &Path, fem: &Fem, basis: &Basis) -> Result<Vec<String>, BakeError> {
    let groups = MaterialGroupPolynomials::compute(&fem.model, &basis.u, faer::Par::rayon(0))?;
    let mut files = Vec::new();
    for (g, name) in groups.names.iter().enumerate() {
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        for (part, poly) in [("lambda", &groups.lambda[g]), ("mu", &groups.mu[g])] {
            let f = format!("material_{g}_{safe}_{part}.cub");
            write_cub(&dir.join(&f), poly)?;
            files.push(f);
        }
    }
    Ok(files)
}

/// The manifest of a finished bake.
fn new_manifest(
    p: &BakeParams,
    fem: &Fem,
    basis: &Basis,
    inputs: Vec<HashedFile>,
    outputs: Vec<HashedFile>,
    timings: StageTimings,
) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        mass_matrix: p.mass_matrix,
        linear_frequencies_hz: basis
            .modes
            .as_ref()
            .map(|m| m.frequencies_hz())
            .unwrap_or_default(),
        r: basis.u.ncols(),
        num_vertices: fem.mesh.vertices.len(),
        num_elements: fem.mesh.num_elements(),
        element_type: fem.mesh.kind.name().to_string(),
        pca_retained_variance: basis.retained,
        parameters: p.clone(),
        inputs,
        outputs,
        timings_s: timings,
    }
}

/// Writes `manifest.toml` into `dir`.
fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), BakeError> {
    let path = dir.join("manifest.toml");
    let text = toml::to_string_pretty(manifest).map_err(|e| BakeError::Manifest {
        path: path.clone(),
        message: e.to_string(),
    })?;
    crate::io::write_bytes_atomic(&path, text.as_bytes()).map_err(io_err(&path))
}

/// A baked reduced model.
#[derive(Debug, Clone)]
pub struct BakedModel {
    /// Its manifest.
    pub manifest: Manifest,
    /// The mass-orthonormal basis U (3n x r).
    pub basis: DMatrix<f64>,
    /// The cubic polynomial of the reduced internal forces.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_manifest_line_is_named_not_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(400_000);
        std::fs::write(
            dir.path().join("manifest.toml"),
            format!("format_version = 1\nr = {long}\n"),
        )
        .unwrap();
        let e = read_manifest(dir.path()).unwrap_err().to_string();
        assert!(
            e.len() < 1000,
            "{} bytes: {}",
            e.len(),
            &e[..200.min(e.len())]
        );
        assert!(
            e.contains("manifest.toml") && e.contains("line 2, column 5"),
            "{e}"
        );
    }

    type Hook = Box<dyn FnOnce(&Path)>;

    thread_local! {
        /// Runs inside [`swap_into_place`] between moving the older bake aside and
        /// renaming the new one into place: where a concurrent bake can win the race.
        pub(super) static BETWEEN_RENAMES: std::cell::RefCell<Option<Hook>> =
            const { std::cell::RefCell::new(None) };
    }

    #[test]
    fn the_loser_of_a_rename_race_fails_and_removes_its_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("baked");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("manifest.toml"), "older").unwrap();
        // Another bake's rename lands after ours moved the older bake aside.
        BETWEEN_RENAMES.with(|h| {
            *h.borrow_mut() = Some(Box::new(|out: &Path| {
                std::fs::create_dir(out).unwrap();
                std::fs::write(out.join("manifest.toml"), "winner").unwrap();
            }))
        });
        let e = in_staging_dir(&out, |d| {
            std::fs::write(d.join("manifest.toml"), "loser").map_err(io_err(d))
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("another bake wrote this output"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(out.join("manifest.toml")).unwrap(),
            "winner"
        );
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["baked".to_string()], "leftovers: {names:?}");
    }

    fn params(mass_matrix: MassKind) -> BakeParams {
        BakeParams {
            linear_modes: 4,
            basis: 6,
            basis_kind: BasisKind::ModalDerivatives,
            mass_matrix,
            unconstrained: false,
            voxel_resolution: None,
            material_groups: false,
        }
    }

    #[test]
    fn the_mass_matrix_is_written_and_read_as_text() {
        let text = toml::to_string(&params(MassKind::Lumped)).unwrap();
        assert!(text.contains("mass_matrix = \"lumped\""), "{text}");
        // A manifest's parameters as older builds wrote them (a string) still read.
        let old = text.replace("\"lumped\"", "\"consistent\"");
        let p: BakeParams = toml::from_str(&old).unwrap();
        assert_eq!(p, params(MassKind::Consistent));
        let bad = text.replace("\"lumped\"", "\"diagonal\"");
        assert!(toml::from_str::<BakeParams>(&bad).is_err());
        // Scene files and the command line parse the same names.
        assert_eq!("lumped".parse(), Ok(MassKind::Lumped));
        let e = "Lumped".parse::<MassKind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "mass matrix 'Lumped': expected 'consistent' or 'lumped'"
        );
        assert_eq!(MassKind::Consistent.to_string(), "consistent");
    }

    #[test]
    fn a_failed_write_leaves_no_staging_directory_and_the_old_bake() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("baked");
        in_staging_dir(&out, |d| {
            std::fs::write(d.join("manifest.toml"), "").map_err(io_err(d))?;
            std::fs::write(d.join("a"), "old").map_err(io_err(d))
        })
        .unwrap();
        let err = in_staging_dir(&out, |d| -> Result<(), BakeError> {
            std::fs::write(d.join("a"), "new").map_err(io_err(d))?;
            Err(BakeError::Parameters("stop".into()))
        })
        .unwrap_err();
        assert!(matches!(err, BakeError::Parameters(_)));
        assert_eq!(std::fs::read_to_string(out.join("a")).unwrap(), "old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        in_staging_dir(&out, |d| {
            std::fs::write(d.join("manifest.toml"), "").map_err(io_err(d))?;
            std::fs::write(d.join("b"), "new").map_err(io_err(d))
        })
        .unwrap();
        assert!(!out.join("a").exists() && out.join("b").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_swap_puts_the_older_bake_back_and_leaves_no_old_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("baked");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("manifest.toml"), "older").unwrap();
        // The staging directory is gone (as when the swap fails midway): the older bake
        // is moved aside, the rename fails, and the older bake is put back.
        let gone = dir.path().join(".baked.partial-gone");
        let e = swap_into_place(&gone, &out).unwrap_err();
        assert!(matches!(e, BakeError::Io { .. }), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join("manifest.toml")).unwrap(),
            "older"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_or_foreign_directory_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "mine").unwrap();
        let e = in_staging_dir(&file, |d| {
            std::fs::write(d.join("manifest.toml"), "").map_err(io_err(d))
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("is a file, not a baked directory"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
        let foreign = dir.path().join("photos");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("a.jpg"), "x").unwrap();
        let e = in_staging_dir(&foreign, |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("without a manifest.toml"), "{e}");
        assert!(foreign.join("a.jpg").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
