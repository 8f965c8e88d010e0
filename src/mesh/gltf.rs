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
use crate::mesh::SurfaceMesh;

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
    check_glb_header(bytes, path)?;
    let unchecked = gltf::Gltf::from_slice_without_validation(bytes).map_err(|e| error(path, e))?;
    check_position_accessors(unchecked.document.as_json(), path)?;
    let gltf = gltf::Gltf {
        document: gltf::Document::from_json(unchecked.document.into_json())
            .map_err(|e| error(path, e))?,
        blob: unchecked.blob,
    };
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
        Some(scene) => place_scene(path, &scene, document.nodes().len(), &buffers, &mut mesh)?,
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

/// Appends the meshes of `scene`'s node trees, each with its node's transform composed
/// down from the root. Walked with a stack of its own (a deep tree cannot overflow the
/// call stack), and a node met twice is refused: glTF's nodes form disjoint strict trees
/// (glTF 2.0, section 3.5.2), which the `gltf` crate does not check (a node that is its
/// own child recursed forever; found by fuzzing).
fn place_scene(
    path: &Path,
    scene: &gltf::Scene,
    node_count: usize,
    buffers: &[gltf::buffer::Data],
    out: &mut SurfaceMesh,
) -> Result<(), MeshError> {
    let mut seen = vec![false; node_count];
    let mut stack: Vec<(gltf::Node, Matrix4<f64>)> =
        scene.nodes().map(|n| (n, Matrix4::identity())).collect();
    stack.reverse();
    while let Some((node, parent)) = stack.pop() {
        let i = node.index();
        if seen.get(i).copied().unwrap_or(true) {
            return Err(MeshError::Syntax {
                path: path.to_path_buf(),
                location: Location::File,
                expected: "a node hierarchy of disjoint trees".into(),
                found: format!("node {i} reached twice (a cycle or a shared child)"),
            });
        }
        seen[i] = true;
        let local = node.transform().matrix();
        let local = Matrix4::from_fn(|r, c| f64::from(local[c][r]));
        let world = parent * local;
        if let Some(m) = node.mesh() {
            append_mesh(path, &m, &world, buffers, out)?;
        }
        let first = stack.len();
        stack.extend(node.children().map(|c| (c, world)));
        stack[first..].reverse();
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
        let truncated = |what: String| MeshError::Truncated {
            path: path.to_path_buf(),
            location: Location::File,
            expected: format!("{what} of {}", where_()),
        };
        let positions = primitive
            .get(&gltf::Semantic::Positions)
            .ok_or_else(|| truncated("POSITION data".into()))
            .and_then(|a| read_positions(&a, buffers).map_err(truncated))?;
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
        let indices: Vec<u32> = match primitive.indices() {
            Some(a) => read_indices(&a, buffers).map_err(truncated)?,
            None => (0..positions.len() as u32).collect(),
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

/// The bytes of `accessor`'s elements of `size` bytes each, and their stride, within its
/// buffer view, every bound checked.
///
/// Written by hand rather than through the `gltf` crate's reader (1.4), which panics on
/// malformed accessors (an index accessor of a float type reaches an `unreachable!`, a
/// count of 0 underflows; found by fuzzing).
fn accessor_bytes<'a>(
    accessor: &gltf::Accessor,
    buffers: &'a [gltf::buffer::Data],
    size: usize,
) -> Result<(&'a [u8], usize, usize), String> {
    if accessor.sparse().is_some() {
        return Err("dense accessor data (sparse accessors are not read)".into());
    }
    let view = accessor
        .view()
        .ok_or("a buffer view for the accessor data")?;
    let data = buffers
        .get(view.buffer().index())
        .ok_or("the accessor's buffer")?;
    let view_bytes = view
        .offset()
        .checked_add(view.length())
        .and_then(|end| data.0.get(view.offset()..end))
        .ok_or("a buffer view within its buffer")?;
    let stride = view.stride().unwrap_or(size);
    if stride < size {
        return Err(format!("a byte stride of at least {size}"));
    }
    let count = accessor.count();
    if count == 0 {
        return Ok((&[], stride, 0));
    }
    let bytes = stride
        .checked_mul(count - 1)
        .and_then(|n| n.checked_add(size))
        .and_then(|n| n.checked_add(accessor.offset()))
        .and_then(|end| view_bytes.get(accessor.offset()..end))
        .ok_or("accessor data within its buffer view")?;
    Ok((bytes, stride, count))
}

/// The positions of a `POSITION` accessor (three floats each).
fn read_positions(
    accessor: &gltf::Accessor,
    buffers: &[gltf::buffer::Data],
) -> Result<Vec<[f32; 3]>, String> {
    use gltf::accessor::{DataType, Dimensions};
    if accessor.data_type() != DataType::F32 || accessor.dimensions() != Dimensions::Vec3 {
        return Err("POSITION data as three floats per vertex".into());
    }
    let (bytes, stride, count) = accessor_bytes(accessor, buffers, 12)?;
    let f = |b: &[u8], k: usize| f32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
    Ok((0..count)
        .map(|i| {
            let e = &bytes[i * stride..i * stride + 12];
            [f(e, 0), f(e, 4), f(e, 8)]
        })
        .collect())
}

/// The indices of an index accessor (unsigned bytes, shorts or ints, one each).
fn read_indices(
    accessor: &gltf::Accessor,
    buffers: &[gltf::buffer::Data],
) -> Result<Vec<u32>, String> {
    use gltf::accessor::{DataType, Dimensions};
    let size = match accessor.data_type() {
        DataType::U8 => 1,
        DataType::U16 => 2,
        DataType::U32 => 4,
        _ => return Err("indices as unsigned bytes, shorts or ints".into()),
    };
    if accessor.dimensions() != Dimensions::Scalar {
        return Err("indices as one number each".into());
    }
    let (bytes, stride, count) = accessor_bytes(accessor, buffers, size)?;
    Ok((0..count)
        .map(|i| {
            let e = &bytes[i * stride..];
            match size {
                1 => u32::from(e[0]),
                2 => u32::from(u16::from_le_bytes([e[0], e[1]])),
                _ => u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
            }
        })
        .collect())
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
/// Refuses a binary glTF whose header declares a total length shorter than the header
/// itself: the `gltf` crate (1.4) subtracts the header's 12 bytes from it unchecked,
/// which panics where overflow is checked and wraps where it is not (found by fuzzing).
fn check_glb_header(bytes: &[u8], path: &Path) -> Result<(), MeshError> {
    const HEADER: u32 = 12;
    if bytes.len() < HEADER as usize || &bytes[..4] != b"glTF" {
        return Ok(());
    }
    let length = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if length < HEADER {
        return Err(MeshError::Syntax {
            path: path.to_path_buf(),
            location: Location::Offset(8),
            expected: format!("a GLB length of at least its {HEADER}-byte header"),
            found: format!("{length}"),
        });
    }
    Ok(())
}

/// Refuses a primitive whose `POSITION` accessor index is past the document's accessors:
/// the `gltf` crate's validation (gltf-json 1.4) reads that accessor unchecked and panics
/// (found by fuzzing), so the index is checked before validation runs.
fn check_position_accessors(root: &gltf::json::Root, path: &Path) -> Result<(), MeshError> {
    use gltf::json::validation::Checked;
    let accessors = root.accessors.len();
    for (m, mesh) in root.meshes.iter().enumerate() {
        for (k, primitive) in mesh.primitives.iter().enumerate() {
            let position = primitive
                .attributes
                .get(&Checked::Valid(gltf::json::mesh::Semantic::Positions));
            if let Some(index) = position.filter(|i| i.value() >= accessors) {
                return Err(MeshError::Syntax {
                    path: path.to_path_buf(),
                    location: Location::File,
                    expected: format!(
                        "meshes[{m}].primitives[{k}].attributes.POSITION below the {accessors} accessors"
                    ),
                    found: format!("{}", index.value()),
                });
            }
        }
    }
    Ok(())
}

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
    use crate::mesh::error::{assert_at_line, assert_at_offset};
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
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 3);
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

    /// A `.glb` header declaring a length below its own 12 bytes (the fuzzer's crasher,
    /// kept in `fuzz/regressions/gltf/` and replayed by `tests/fuzz_corpus.rs`) is an
    /// error at the length's offset, not a panic.
    #[test]
    fn a_glb_shorter_than_its_header_is_refused() {
        for length in [0u32, 11] {
            let mut b = b"glTF".to_vec();
            b.extend_from_slice(&2u32.to_le_bytes());
            b.extend_from_slice(&length.to_le_bytes());
            b.extend_from_slice(b"\x34\x00\x00\x00JSON{}");
            let e = parse_gltf(&b, Path::new("short.glb"), None).unwrap_err();
            assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
            assert_at_offset(&e, 8);
            assert!(e.to_string().contains("short.glb"), "{e}");
        }
    }

    /// A POSITION accessor index past the accessors (the fuzzer's second crasher, in
    /// `fuzz/regressions/gltf/`) is an error naming the primitive, not a panic.
    #[test]
    fn a_position_accessor_out_of_range_is_refused() {
        let text = r#"{"asset":{"version":"2.0"},"accessors":[],
            "meshes":[{"primitives":[{"attributes":{"POSITION":2}}]}]}"#;
        let e = parse_gltf(text.as_bytes(), Path::new("far.gltf"), None).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("far.gltf"), "{msg}");
        assert!(
            msg.contains("meshes[0].primitives[0].attributes.POSITION"),
            "{msg}"
        );
    }

    /// A `.glb` of `json` and the binary chunk `bin` (both padded to 4 bytes).
    fn glb(json: &str, bin: &[u8]) -> Vec<u8> {
        let mut j = json.as_bytes().to_vec();
        while !j.len().is_multiple_of(4) {
            j.push(b' ');
        }
        let mut b = bin.to_vec();
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
        let total = 12 + 8 + j.len() + 8 + b.len();
        let mut out = b"glTF".to_vec();
        out.extend_from_slice(&2u32.to_le_bytes());
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(j.len() as u32).to_le_bytes());
        out.extend_from_slice(b"JSON");
        out.extend_from_slice(&j);
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b"BIN\0");
        out.extend_from_slice(&b);
        out
    }

    /// One triangle: three positions (36 bytes, stride 16 to test strides) then
    /// indices of `index_type` (glTF component type) at byte 48.
    fn triangle_glb(index_type: u32, index_count: usize, stride: usize) -> Vec<u8> {
        let mut bin = vec![0u8; 64];
        for (i, p) in [[0.0f32, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
            .iter()
            .enumerate()
        {
            for (k, c) in p.iter().enumerate() {
                bin[i * stride + 4 * k..i * stride + 4 * k + 4].copy_from_slice(&c.to_le_bytes());
            }
        }
        for (i, v) in [0u16, 1, 2].iter().enumerate() {
            bin[48 + 2 * i..50 + 2 * i].copy_from_slice(&v.to_le_bytes());
        }
        let json = format!(
            r#"{{"asset":{{"version":"2.0"}},"scenes":[{{"nodes":[0]}}],"nodes":[{{"mesh":0}}],
            "meshes":[{{"primitives":[{{"attributes":{{"POSITION":0}},"indices":1}}]}}],
            "buffers":[{{"byteLength":64}}],
            "bufferViews":[{{"buffer":0,"byteOffset":0,"byteLength":48,"byteStride":{stride}}},
                           {{"buffer":0,"byteOffset":48,"byteLength":16}}],
            "accessors":[{{"bufferView":0,"componentType":5126,"count":3,"type":"VEC3",
                           "min":[0,0,0],"max":[1,1,0]}},
                         {{"bufferView":1,"componentType":{index_type},"count":{index_count},"type":"SCALAR"}}]}}"#
        );
        glb(&json, &bin)
    }

    /// Accessors are decoded with every bound checked: a strided triangle reads back; an
    /// index accessor of floats, one past its view and one of count 0 are errors or an
    /// empty primitive, never a panic.
    #[test]
    fn accessors_are_read_within_their_bounds() {
        let m = parse_gltf(&triangle_glb(5123, 3, 16), Path::new("t.glb"), None).unwrap();
        assert_eq!(m.triangles, vec![[0, 1, 2]]);
        assert_eq!(m.vertices[2], Point3::new(0.0, 1.0, 0.0));
        let e = parse_gltf(&triangle_glb(5126, 3, 16), Path::new("f.glb"), None).unwrap_err();
        assert!(e.to_string().contains("indices as unsigned"), "{e}");
        let e = parse_gltf(&triangle_glb(5123, 9, 16), Path::new("o.glb"), None).unwrap_err();
        assert!(e.to_string().contains("within its buffer view"), "{e}");
        assert!(parse_gltf(&triangle_glb(5123, 0, 16), Path::new("z.glb"), None).is_err());
        let e = parse_gltf(&triangle_glb(5123, 3, 8), Path::new("s.glb"), None).unwrap_err();
        assert!(e.to_string().contains("s.glb"), "{e}");
    }

    /// A node that is its own child (the fuzzer's crasher, a stack overflow) and a child
    /// shared by two parents are refused; a chain 10,000 nodes deep is read.
    #[test]
    fn node_cycles_are_refused_and_deep_trees_read() {
        let tri = triangle_glb(5123, 3, 16);
        let json_len = u32::from_le_bytes([tri[12], tri[13], tri[14], tri[15]]) as usize;
        let json = std::str::from_utf8(&tri[20..20 + json_len])
            .unwrap()
            .to_string();
        let bin = tri[20 + json_len + 8..].to_vec();
        let with_nodes = |nodes: &str| {
            glb(
                &json.replace(r#""nodes":[{"mesh":0}]"#, &format!(r#""nodes":{nodes}"#)),
                &bin,
            )
        };
        for nodes in [
            r#"[{"mesh":0,"children":[0]}]"#,
            r#"[{"children":[1,2]},{"children":[2]},{"mesh":0}]"#,
        ] {
            let e = parse_gltf(&with_nodes(nodes), Path::new("c.glb"), None).unwrap_err();
            assert!(e.to_string().contains("reached twice"), "{nodes}: {e}");
        }
        let deep: Vec<String> = (0..10_000)
            .map(|i| {
                if i + 1 < 10_000 {
                    format!(r#"{{"children":[{}]}}"#, i + 1)
                } else {
                    r#"{"mesh":0}"#.to_string()
                }
            })
            .collect();
        let m = parse_gltf(
            &with_nodes(&format!("[{}]", deep.join(","))),
            Path::new("d.glb"),
            None,
        )
        .unwrap();
        assert_eq!(m.triangles.len(), 1);
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
