//! Loading an OMPL.app rigid-body problem as OMPL.app places it: the `.cfg`
//! ([`super::ompl::read_problem`]), its robot and world meshes, and the robot moved to
//! OMPL.app's origin (the mean of the vertices assimp imports, see
//! [`crate::mesh::collada`]), so that a state means the same pose to both programs.
//!
//! Every front end (the command line, the Python package) loads problems through here, so
//! they see the same geometry.

use std::path::{Path, PathBuf};

use nalgebra::Point3;

use super::ompl::{read_problem, OmplError, Problem};
use super::robot_origin;
use crate::mesh::collada::{distinct_vertex_sum, read_collada};
use crate::mesh::{error::MeshError, read::read_surface, SurfaceMesh};

/// Why a problem or one of its meshes could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProblemError {
    /// The `.cfg` or `.path` file.
    #[error(transparent)]
    Ompl(#[from] OmplError),
    /// A mesh file; `role` says which (`the robot of x.cfg`).
    #[error("{role}: {source}")]
    Mesh {
        /// Which mesh, in words.
        role: String,
        /// The reader's error (file, line or offset, what was expected).
        #[source]
        source: MeshError,
    },
    /// A mesh whose format is not read.
    #[error("{path}: {reason}")]
    Format {
        /// The mesh file.
        path: PathBuf,
        /// What is wrong and what is read instead.
        reason: String,
    },
    /// A `.cfg` value of the wrong kind.
    #[error("{path}: {key}: expected {expected}, found '{found}'")]
    Value {
        /// The `.cfg` file.
        path: PathBuf,
        /// The `section.key`.
        key: String,
        /// What the key requires.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
}

/// A problem with its meshes: the robot in its own frame about OMPL.app's origin, the
/// world in world coordinates.
#[derive(Debug, Clone)]
pub struct LoadedProblem {
    /// The `.cfg`'s contents.
    pub problem: Problem,
    /// The robot's surface, about `origin`.
    pub robot_mesh: SurfaceMesh,
    /// The world's surface.
    pub world_mesh: SurfaceMesh,
    /// OMPL.app's robot origin in the robot file's coordinates.
    pub origin: Point3<f64>,
    /// `solver.time_limit` or `benchmark.time_limit` (s), when the `.cfg` gives one.
    pub time_limit: Option<f64>,
}

/// Reads `cfg` and its meshes, the robot moved to OMPL.app's origin.
pub fn load_problem(cfg: &Path) -> Result<LoadedProblem, ProblemError> {
    let problem = read_problem(cfg)?;
    let role = |what: &str| format!("the {what} of {}", cfg.display());
    let (robot_mesh, origin) = read_mesh(&problem.robot).map_err(|e| e.in_role(role("robot")))?;
    let (world_mesh, _) = read_mesh(&problem.world).map_err(|e| e.in_role(role("world")))?;
    let time_limit = time_limit(&problem)?;
    Ok(LoadedProblem {
        robot_mesh: robot_origin(&robot_mesh, &origin),
        world_mesh,
        origin,
        time_limit,
        problem,
    })
}

impl ProblemError {
    /// A mesh error with the mesh's role in its message.
    fn in_role(self, role: String) -> ProblemError {
        match self {
            ProblemError::Mesh { source, .. } => ProblemError::Mesh { role, source },
            other => other,
        }
    }
}

/// The `.cfg`'s time limit: `solver.time_limit`, else `benchmark.time_limit`.
fn time_limit(problem: &Problem) -> Result<Option<f64>, ProblemError> {
    let Some((key, v)) = ["solver.time_limit", "benchmark.time_limit"]
        .iter()
        .find_map(|k| problem.extra.get(*k).map(|v| (*k, v)))
    else {
        return Ok(None);
    };
    match v.trim().parse::<f64>() {
        Ok(t) if t > 0.0 && t.is_finite() => Ok(Some(t)),
        _ => Err(ProblemError::Value {
            path: problem.path.clone(),
            key: key.to_string(),
            expected: "a positive number of seconds",
            found: v.clone(),
        }),
    }
}

/// A mesh and its OMPL.app origin (the mean of the vertices assimp imports).
pub fn read_mesh(path: &Path) -> Result<(SurfaceMesh, Point3<f64>), ProblemError> {
    let mesh_error = |source| ProblemError::Mesh {
        role: "mesh".into(),
        source,
    };
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "dae" => {
            let c = read_collada(path).map_err(mesh_error)?;
            let origin = c.vertex_mean();
            Ok((c.mesh, origin))
        }
        "obj" | "stl" | "gltf" | "glb" => {
            let m = read_surface(path).map_err(mesh_error)?;
            // assimp joins identical vertices: the mean of the distinct positions.
            let (sum, count) = distinct_vertex_sum(m.vertices.iter().copied());
            let origin = Point3::from(sum / count.max(1) as f64);
            Ok((m, origin))
        }
        "3ds" => Err(ProblemError::Format {
            path: path.to_path_buf(),
            reason: "3D Studio (.3ds) meshes are not supported; convert it to .dae, .obj, .stl or .gltf (for example with assimp export or Blender)".into(),
        }),
        _ => Err(ProblemError::Format {
            path: path.to_path_buf(),
            reason: format!("unknown mesh format '.{ext}': expected .dae, .obj, .stl, .gltf or .glb"),
        }),
    }
}
