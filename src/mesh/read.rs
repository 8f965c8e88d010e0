//! Format dispatch: read a surface or volumetric mesh by file extension
//! (case-insensitive). Surfaces: `.obj` ([`super::read_obj`]), `.stl` ([`super::stl`]),
//! `.gltf` / `.glb` ([`super::gltf`]).
//! Volumes: `.veg` ([`super::veg`]), `.node` / `.ele` ([`super::tetgen`], with the sibling
//! file of the same stem and the default material of [`default_material`]).
//!
//! The OBJ and STL readers are hand-written (rather than `tobj` / `stl_io`) because every
//! error must be a typed [`MeshError`] naming the file and the line or byte offset; glTF,
//! a JSON document with binary buffers, is read by the `gltf` crate.

use std::path::Path;

use super::error::MeshError;
use super::volume::{Material, VolumeMesh};
use crate::mesh::SurfaceMesh;

/// A surface or a volumetric mesh, as read by [`read_any`].
#[derive(Debug, Clone, PartialEq)]
pub enum AnyMesh {
    /// A triangle surface, from `.obj`, `.stl`, `.gltf` or `.glb`.
    Surface(SurfaceMesh),
    /// A tet or hex mesh, from `.veg` or a TetGen `.node` / `.ele` pair.
    Volume(VolumeMesh),
}

const SUPPORTED: &str =
    "supported: .obj, .stl, .gltf and .glb (surfaces); .veg and TetGen .node/.ele (volumes)";

/// The material given to TetGen meshes, which carry none: rubber-like, 1000 kg/m^3,
/// E = 1 MPa, nu = 0.45.
pub fn default_material() -> Material {
    Material::new("default", 1000.0, 1e6, 0.45)
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn unsupported(path: &Path, kind: &str) -> MeshError {
    let ext = extension(path);
    let shown = if ext.is_empty() {
        "no extension".to_string()
    } else {
        format!("extension '.{ext}'")
    };
    MeshError::Unsupported {
        path: path.to_path_buf(),
        what: format!("{shown} for a {kind} ({SUPPORTED})"),
    }
}

/// Reads a triangle surface mesh (`.obj`, `.stl`, `.gltf`, `.glb`).
pub fn read_surface(path: &Path) -> Result<SurfaceMesh, MeshError> {
    match extension(path).as_str() {
        "obj" => crate::mesh::read_obj(path),
        "stl" => super::stl::read_stl(path),
        "gltf" | "glb" => super::gltf::read_gltf(path),
        _ => Err(unsupported(path, "surface mesh")),
    }
}

/// Reads a volumetric mesh (`.veg`, or a TetGen pair given by either its `.node` or its
/// `.ele` file).
pub fn read_volume(path: &Path) -> Result<VolumeMesh, MeshError> {
    match extension(path).as_str() {
        "veg" => super::veg::read_veg(path),
        "node" => {
            super::tetgen::read_tetgen(path, &path.with_extension("ele"), &default_material())
        }
        "ele" => {
            super::tetgen::read_tetgen(&path.with_extension("node"), path, &default_material())
        }
        _ => Err(unsupported(path, "volumetric mesh")),
    }
}

/// Reads any supported mesh, surface or volumetric, by extension.
pub fn read_any(path: &Path) -> Result<AnyMesh, MeshError> {
    match extension(path).as_str() {
        "obj" | "stl" | "gltf" | "glb" => read_surface(path).map(AnyMesh::Surface),
        "veg" | "node" | "ele" => read_volume(path).map(AnyMesh::Volume),
        _ => Err(unsupported(path, "mesh")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_extension_names_supported_ones() {
        let e = read_any(Path::new("x.ply")).unwrap_err();
        assert!(matches!(e, MeshError::Unsupported { .. }));
        let s = e.to_string();
        assert!(
            s.contains(".ply") && s.contains(".obj") && s.contains(".veg"),
            "{s}"
        );
        assert!(matches!(
            read_surface(Path::new("x.veg")),
            Err(MeshError::Unsupported { .. })
        ));
    }

    #[test]
    fn dispatch_is_case_insensitive() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("T.OBJ");
        std::fs::write(&p, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
        assert!(matches!(read_any(&p), Ok(AnyMesh::Surface(_))));
        let node = dir.path().join("t.node");
        std::fs::write(&node, "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n").unwrap();
        std::fs::write(dir.path().join("t.ele"), "1 4 0\n1 1 2 3 4\n").unwrap();
        for p in [node.clone(), dir.path().join("t.ele")] {
            match read_any(&p) {
                Ok(AnyMesh::Volume(v)) => assert_eq!(v.materials[0], default_material()),
                other => panic!("{other:?}"),
            }
        }
    }
}
