//! glTF 2.0 surface meshes (`.gltf` with its buffers, or a binary `.glb`): every triangle
//! primitive of every mesh that the scene's node tree places, through the node
//! transforms, merged into one [`SurfaceMesh`] in the file's units (glTF's are metres).
//!
//! The scene is the file's default scene, else its first; a file without scenes places
//! each mesh once, untransformed. Triangle strips and fans are split into triangles;
//! points and lines carry no surface and are skipped. A node's transform is its matrix,
//! or translation * rotation * scale (glTF 2.0, section 3.5.3), composed down the tree.
//!
//! Parsing, validation and buffer loading (external `.bin` files next to the `.gltf`,
//! base64 data URIs, a `.glb`'s binary chunk) are the `gltf` crate's, a maintained
//! implementation of the specification.

use std::path::Path;

use nalgebra::{Matrix4, Point3};

use super::error::{Location, MeshError};
use super::surface::SurfaceMesh;

/// Reads the surface of a `.gltf` or `.glb` file (see the module documentation); external
/// buffers are read from beside it.
pub fn read_gltf(path: &Path) -> Result<SurfaceMesh, MeshError> {
    let bytes = std::fs::read(path).map_err(|source| MeshError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_gltf(&bytes, path, Some(path.parent().unwrap_or(Path::new("."))))
}

/// Parses the bytes of a `.gltf` or `.glb` named `path`; external buffers are read from
/// `base` (with none, a file that refers to one is an error).
pub fn parse_gltf(
    bytes: &[u8],
    path: &Path,
    base: Option<&Path>,
) -> Result<SurfaceMesh, MeshError> {
    let gltf = gltf::Gltf::from_slice(bytes).map_err(|e| error(path, e))?;
    let external = gltf
        .document
        .buffers()
        .any(|b| matches!(b.source(), gltf::buffer::Source::Uri(u) if !u.starts_with("data:")));
    if external && base.is_none() {
        return Err(MeshError::Syntax {
            path: path.to_path_buf(),
            location: Location::File,
            expected: "buffers inside the file (data URIs or a .glb chunk)".into(),
            found: "a buffer in an external file".into(),
        });
    }
    let buffers = gltf::import_buffers(&gltf.document, base, gltf.blob.clone())
        .map_err(|e| error(path, e))?;
    let mut mesh = SurfaceMesh::default();
    let document = &gltf.document;
    match document
        .default_scene()
        .or_else(|| document.scenes().next())
    {
        Some(scene) => {
            for node in scene.nodes() {
                place_node(path, &node, &Matrix4::identity(), &buffers, &mut mesh)?;
            }
        }
        None => {
            for m in document.meshes() {
                append_mesh(path, &m, &Matrix4::identity(), &buffers, &mut mesh)?;
            }
        }
    }
    if mesh.triangles.is_empty() {
        return Err(MeshError::Truncated {
            path: path.to_path_buf(),
            location: Location::File,
            expected: "at least one triangle primitive placed by the scene".into(),
        });
    }
    Ok(mesh)
}

/// Appends `node`'s meshes and its children's, with `parent`'s transform composed.
fn place_node(
    path: &Path,
    node: &gltf::Node,
    parent: &Matrix4<f64>,
    buffers: &[gltf::buffer::Data],
    out: &mut SurfaceMesh,
) -> Result<(), MeshError> {
    let local = node.transform().matrix();
    let local = Matrix4::from_fn(|r, c| f64::from(local[c][r]));
    let world = parent * local;
    if let Some(m) = node.mesh() {
        append_mesh(path, &m, &world, buffers, out)?;
    }
    for child in node.children() {
        place_node(path, &child, &world, buffers, out)?;
    }
    Ok(())
}

/// Appends the triangle primitives of `mesh`, placed by `transform`.
fn append_mesh(
    path: &Path,
    mesh: &gltf::Mesh,
    transform: &Matrix4<f64>,
    buffers: &[gltf::buffer::Data],
    out: &mut SurfaceMesh,
) -> Result<(), MeshError> {
    for primitive in mesh.primitives() {
        let mode = primitive.mode();
        if !matches!(
            mode,
            gltf::mesh::Mode::Triangles
                | gltf::mesh::Mode::TriangleStrip
                | gltf::mesh::Mode::TriangleFan
        ) {
            continue;
        }
        let where_ = || format!("mesh {} primitive {}", mesh.index(), primitive.index());
        let reader = primitive.reader(|b| buffers.get(b.index()).map(|d| &d.0[..]));
        let positions: Vec<[f32; 3]> = reader
            .read_positions()
            .ok_or_else(|| MeshError::Truncated {
                path: path.to_path_buf(),
                location: Location::File,
                expected: format!("POSITION data for {}", where_()),
            })?
            .collect();
        let base = out.vertices.len();
        for p in &positions {
            let p = Point3::new(f64::from(p[0]), f64::from(p[1]), f64::from(p[2]));
            let q = transform.transform_point(&p);
            if !(q.x.is_finite() && q.y.is_finite() && q.z.is_finite()) {
                return Err(MeshError::NonFinite {
                    path: path.to_path_buf(),
                    location: Location::File,
                    value: format!("{q:?} (a vertex of {} placed by its node)", where_()),
                });
            }
            out.vertices.push(q);
        }
        let indices: Vec<u32> = match (primitive.indices(), reader.read_indices()) {
            (_, Some(i)) => i.into_u32().collect(),
            (None, None) => (0..positions.len() as u32).collect(),
            (Some(_), None) => {
                return Err(MeshError::Truncated {
                    path: path.to_path_buf(),
                    location: Location::File,
                    expected: format!("the index data of {} within its buffer", where_()),
                })
            }
        };
        if let Some(&bad) = indices.iter().find(|&&i| i as usize >= positions.len()) {
            return Err(MeshError::IndexOutOfRange {
                path: path.to_path_buf(),
                location: Location::File,
                index: i64::from(bad),
                count: positions.len(),
            });
        }
        // A negative determinant (a mirroring node) turns the winding inside out.
        let mirrored = transform.fixed_view::<3, 3>(0, 0).determinant() < 0.0;
        for t in triangles(mode, &indices) {
            let [a, b, c] = t.map(|i| base + i as usize);
            out.triangles
                .push(if mirrored { [a, c, b] } else { [a, b, c] });
        }
    }
    Ok(())
}

/// The triangles of a primitive's index list in `mode` (glTF 2.0, section 3.7.2.1:
/// strips alternate their winding, fans share the first vertex).
fn triangles(mode: gltf::mesh::Mode, idx: &[u32]) -> Vec<[u32; 3]> {
    match mode {
        gltf::mesh::Mode::Triangles => idx.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
        gltf::mesh::Mode::TriangleStrip => (2..idx.len())
            .map(|i| {
                if i % 2 == 0 {
                    [idx[i - 2], idx[i - 1], idx[i]]
                } else {
                    [idx[i - 1], idx[i - 2], idx[i]]
                }
            })
            .collect(),
        gltf::mesh::Mode::TriangleFan => (2..idx.len())
            .map(|i| [idx[0], idx[i - 1], idx[i]])
            .collect(),
        _ => Vec::new(),
    }
}

/// The `gltf` crate's error as a [`MeshError`]: JSON errors at their line, the rest for
/// the whole file.
fn error(path: &Path, e: gltf::Error) -> MeshError {
    match e {
        gltf::Error::Io(source) => MeshError::Io {
            path: path.to_path_buf(),
            source,
        },
        gltf::Error::Deserialize(j) => MeshError::Syntax {
            path: path.to_path_buf(),
            location: Location::Line(j.line()),
            expected: "glTF 2.0 JSON".into(),
            found: j.to_string(),
        },
        other => MeshError::Syntax {
            path: path.to_path_buf(),
            location: Location::File,
            expected: "a valid glTF 2.0 asset".into(),
            found: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    /// The fixture places one unit cube twice: scaled by 0.5 and moved to x = 2; and
    /// scaled by (2, 1, 1), moved to y = 3 and turned 90 degrees about z by its parent
    /// node, which puts it at x in [-3.5, -2.5], y in [-1, 1]. By hand: 16 vertices, 24
    /// triangles, two closed components of volume 0.125 + 2, and the bounds below. The
    /// `.glb` holds the same document with the buffer in its binary chunk.
    #[test]
    fn the_fixture_is_placed_by_its_node_tree() {
        for name in ["two-boxes.gltf", "two-boxes.glb"] {
            let m = read_gltf(&crate::assets::model(format!("gltf/{name}"))).unwrap();
            assert_eq!((m.vertices.len(), m.triangles.len()), (16, 24), "{name}");
            let b = m.bounding_box();
            let (lo, hi) = (Vector3::new(-3.5, -1.0, -0.5), Vector3::new(2.25, 1.0, 0.5));
            assert!((b.min.coords - lo).norm() < 1e-6, "{name}: {:?}", b.min);
            assert!((b.max.coords - hi).norm() < 1e-6, "{name}: {:?}", b.max);
            // Outward winding kept: positive volume, 0.125 + 2 (f32 positions).
            assert!((m.signed_volume() - 2.125).abs() < 1e-6, "{name}");
            assert_eq!(m.connected_components(), 2);
            assert_eq!(m.boundary_and_nonmanifold_edges(), (0, 0));
        }
    }

    /// Bad input names the file: not JSON (at its line), a missing buffer file, and a
    /// document whose scene places no triangles.
    #[test]
    fn bad_files_are_typed_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.gltf");
        std::fs::write(&p, "{\n  \"asset\": {\"version\": \"2.0\"},\n  oops\n}\n").unwrap();
        let e = read_gltf(&p).unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::Syntax {
                    location: Location::Line(3),
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("bad.gltf"), "{e}");
        let p = dir.path().join("nobin.gltf");
        std::fs::write(
            &p,
            r#"{"asset":{"version":"2.0"},"buffers":[{"byteLength":12,"uri":"missing.bin"}]}"#,
        )
        .unwrap();
        let e = read_gltf(&p).unwrap_err();
        assert!(e.to_string().contains("nobin.gltf"), "{e}");
        let p = dir.path().join("empty.gltf");
        std::fs::write(&p, r#"{"asset":{"version":"2.0"},"scenes":[{"nodes":[]}]}"#).unwrap();
        let e = read_gltf(&p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
    }

    #[test]
    fn strips_and_fans_split_into_triangles() {
        use gltf::mesh::Mode;
        assert_eq!(
            triangles(Mode::TriangleStrip, &[0, 1, 2, 3]),
            vec![[0, 1, 2], [2, 1, 3]]
        );
        assert_eq!(
            triangles(Mode::TriangleFan, &[0, 1, 2, 3]),
            vec![[0, 1, 2], [0, 2, 3]]
        );
        assert_eq!(triangles(Mode::Triangles, &[0, 1, 2, 3]), vec![[0, 1, 2]]);
    }
}
