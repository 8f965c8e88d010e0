//! Wavefront OBJ surface meshes (reader and writer).
//!
//! The reader is hand-written rather than taken from `tobj` because the project requires
//! every error to be a typed [`MeshError`] naming the file and the 1-based line, which
//! `tobj` does not provide. It reads the geometry only:
//!
//! ```text
//! file      := line*
//! line      := vertex | face | ignored | comment | blank
//! vertex    := "v" x y z [w]            (w, and any colour after it, is ignored)
//! face      := "f" ref ref ref ref*      (polygons are triangulated as fans)
//! ref       := v | v "/" vt | v "//" vn | v "/" vt "/" vn
//! v         := positive 1-based index | negative index relative to the last vertex
//! ignored   := ("vt" | "vn" | "vp" | "g" | "o" | "s" | "usemtl" | "mtllib" | "l" | "p" ...) ...
//! comment   := "#" ...
//! ```
//!
//! Lines may end in `\n` or `\r\n`. A face may only refer to vertices defined above it.
//! Vega's `ObjMesh` writes header comments `# Number of vertices: N` and
//! `# Number of faces: M`; when they are present the counts are checked, so a truncated
//! file is reported instead of being read as a smaller mesh.
//!
//! Errors: a bad number is `Syntax` at its line, a NaN or infinite coordinate
//! `NonFinite`, index 0 or beyond the vertices defined so far `IndexOutOfRange`, a face
//! with fewer than three vertices `Syntax`, a file without faces `Syntax` at `File`.

use std::fmt::Write as _;
use std::path::Path;

use nalgebra::Point3;

use super::error::{excerpt, Location, MeshError};
use super::text::{
    as_utf8, numbered_lines, parse_f64, parse_i64, parse_usize, read_bytes, write_bytes,
};
use crate::mesh::SurfaceMesh;

/// Statements that carry no geometry the renderer needs.
const IGNORED: &[&str] = &[
    "vt",
    "vn",
    "vp",
    "g",
    "o",
    "s",
    "usemtl",
    "mtllib",
    "l",
    "p",
    "cstype",
    "deg",
    "bmat",
    "step",
    "curv",
    "curv2",
    "surf",
    "parm",
    "trim",
    "hole",
    "scrv",
    "sp",
    "end",
    "con",
    "mg",
    "lod",
    "usemap",
    "maplib",
    "c_interp",
    "d_interp",
    "trace_obj",
    "shadow_obj",
    "ctech",
    "stech",
    "bevel",
    "call",
    "csh",
];

/// Reads an OBJ file (see the module documentation for the accepted grammar).
pub fn read_obj(path: &Path) -> Result<SurfaceMesh, MeshError> {
    let bytes = read_bytes(path)?;
    parse_obj(as_utf8(&bytes, path)?, path)
}

/// Parses OBJ text; `path` is only used in error messages.
pub fn parse_obj(text: &str, path: &Path) -> Result<SurfaceMesh, MeshError> {
    let mut vertices: Vec<Point3<f64>> = Vec::new();
    let mut triangles: Vec<[usize; 3]> = Vec::new();
    let mut num_faces = 0usize;
    let mut declared = DeclaredCounts::default();
    let mut last_line = 0;
    let mut face: Vec<usize> = Vec::with_capacity(8);

    for (ln, line) in numbered_lines(text) {
        last_line = ln;
        let mut toks = line.split_ascii_whitespace();
        let Some(key) = toks.next() else { continue };
        match key {
            "v" => vertices.push(parse_vertex(&mut toks, path, ln)?),
            "f" => {
                parse_face(toks, vertices.len(), path, ln, &mut face)?;
                num_faces += 1;
                for k in 1..face.len() - 1 {
                    triangles.push([face[0], face[k], face[k + 1]]);
                }
            }
            _ if key.starts_with('#') => declared.read_comment(line, path, ln)?,
            _ if IGNORED.contains(&key) => {}
            _ => {
                return Err(MeshError::syntax(
                    path,
                    Location::Line(ln),
                    "an OBJ statement (v, f, vt, vn, g, o, s, usemtl, mtllib, ...)",
                    excerpt(key),
                ))
            }
        }
    }

    declared.check(vertices.len(), num_faces, last_line, path)?;
    if triangles.is_empty() {
        return Err(MeshError::syntax(
            path,
            Location::File,
            "at least one face ('f' line)",
            "none",
        ));
    }
    Ok(SurfaceMesh {
        vertices,
        triangles,
    })
}

/// Parses the three coordinates of a `v` line (any further tokens are ignored).
fn parse_vertex<'a>(
    toks: &mut impl Iterator<Item = &'a str>,
    path: &Path,
    ln: usize,
) -> Result<Point3<f64>, MeshError> {
    let mut c = [0.0; 3];
    for (k, ck) in c.iter_mut().enumerate() {
        let tok = toks.next().ok_or_else(|| {
            MeshError::syntax(
                path,
                Location::Line(ln),
                "three vertex coordinates 'v x y z'",
                format!("{k} coordinates"),
            )
        })?;
        *ck = parse_f64(tok, path, ln, "a vertex coordinate")?;
    }
    Ok(Point3::new(c[0], c[1], c[2]))
}

/// Parses an `f` line's vertex references into `face` as 0-based indices (at least three).
fn parse_face<'a>(
    toks: impl Iterator<Item = &'a str>,
    vertex_count: usize,
    path: &Path,
    ln: usize,
    face: &mut Vec<usize>,
) -> Result<(), MeshError> {
    face.clear();
    for tok in toks {
        let v = tok.split('/').next().unwrap_or(tok);
        let i = parse_i64(
            v,
            path,
            ln,
            "a vertex index 'v', 'v/vt', 'v//vn' or 'v/vt/vn'",
        )?;
        let n = vertex_count as i64;
        let idx = if i > 0 { i - 1 } else { n.saturating_add(i) };
        if i == 0 || idx < 0 || idx >= n {
            return Err(MeshError::IndexOutOfRange {
                path: path.to_path_buf(),
                location: Location::Line(ln),
                index: i,
                count: vertex_count,
            });
        }
        face.push(idx as usize);
    }
    if face.len() < 3 {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            "a face with at least 3 vertices",
            format!("{} vertices", face.len()),
        ));
    }
    Ok(())
}

/// The vertex and face counts declared by Vega-style header comments, each with its line.
#[derive(Default)]
struct DeclaredCounts {
    /// `# Number of vertices: N`: (count, line).
    vertices: Option<(usize, usize)>,
    /// `# Number of faces: M`: (count, line).
    faces: Option<(usize, usize)>,
}

impl DeclaredCounts {
    /// Records the count that a comment line declares, if it declares one.
    fn read_comment(&mut self, line: &str, path: &Path, ln: usize) -> Result<(), MeshError> {
        let body = line.trim_start().trim_start_matches('#').trim();
        if let Some(n) = body.strip_prefix("Number of vertices:") {
            self.vertices = Some((parse_usize(n.trim(), path, ln, "a vertex count")?, ln));
        } else if let Some(n) = body.strip_prefix("Number of faces:") {
            self.faces = Some((parse_usize(n.trim(), path, ln, "a face count")?, ln));
        }
        Ok(())
    }

    /// Checks the counts found against the declared ones (fewer: truncated, more: miscounted).
    fn check(
        &self,
        vertices: usize,
        faces: usize,
        last_line: usize,
        path: &Path,
    ) -> Result<(), MeshError> {
        for (declared, found, what) in [
            (self.vertices, vertices, "vertices"),
            (self.faces, faces, "faces"),
        ] {
            if let Some((n, decl_line)) = declared {
                if found < n {
                    return Err(MeshError::truncated(
                        path,
                        Location::Line(last_line + 1),
                        format!("{n} {what} as declared on line {decl_line} (found {found})"),
                    ));
                }
                if found > n {
                    return Err(MeshError::syntax(
                        path,
                        Location::Line(decl_line),
                        format!("the number of {what} in the file ({found})"),
                        n.to_string(),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Writes `mesh` as OBJ with Vega-style count comments; coordinates use Rust's shortest
/// round-trip formatting, so reading the file back gives identical numbers.
pub fn write_obj(path: &Path, mesh: &SurfaceMesh) -> Result<(), MeshError> {
    let mut s = String::with_capacity(40 * (mesh.vertices.len() + mesh.triangles.len()) + 200);
    s.push_str("# Generated by haptics\n");
    let _ = writeln!(s, "# Number of vertices: {}", mesh.vertices.len());
    let _ = writeln!(s, "# Number of faces: {}", mesh.triangles.len());
    for p in &mesh.vertices {
        let _ = writeln!(s, "v {} {} {}", p.x, p.y, p.z);
    }
    for t in &mesh.triangles {
        let _ = writeln!(s, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    write_bytes(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::assert_at_line;

    fn p() -> &'static Path {
        Path::new("t.obj")
    }

    #[test]
    fn face_forms_negative_indices_and_fans() {
        let text = "# c\r\nv 0 0 0\r\nv 1 0 0 1\nv 1 1 0\nv 0 1 0\nvt 0 0\nvn 0 0 1\ng x\ns off\nusemtl m\n\
                    f 1/1/1 2/1/1 3/1/1 4/1/1\nf -4//1 -3//1 -2//1\nf 1/1 2/1 4/1\n";
        let m = parse_obj(text, p()).unwrap();
        assert_eq!(m.vertices.len(), 4);
        assert_eq!(
            m.triangles,
            vec![[0, 1, 2], [0, 2, 3], [0, 1, 2], [0, 1, 3]]
        );
    }

    #[test]
    fn errors_carry_lines() {
        let cases: &[(&str, usize)] = &[
            ("v 0 0 0\nv 1 abc 0\n", 2),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2\n", 4),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 0\n", 4),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 4\n", 5),
            ("v 0 0 0\nv 1 nan 0\n", 2),
            ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 -4\n", 4),
            ("v 0 0\n", 1),
            ("v 0 0 0\nbogus 1\n", 2),
        ];
        for (text, line) in cases {
            let e = parse_obj(text, p()).unwrap_err();
            assert_at_line(&e, *line);
            assert!(e.to_string().contains("t.obj"));
        }
        assert!(matches!(
            parse_obj("v 0 0 0\nv 1 inf 0\n", p()),
            Err(MeshError::NonFinite { .. })
        ));
        assert!(matches!(
            parse_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 0\n", p()),
            Err(MeshError::IndexOutOfRange { index: 0, .. })
        ));
        assert!(matches!(
            parse_obj("v 0 0 0\n", p()),
            Err(MeshError::Syntax {
                location: Location::File,
                ..
            })
        ));
    }

    #[test]
    fn header_counts_detect_truncation() {
        let text = "# Number of vertices: 4\n# Number of faces: 2\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\n";
        let e = parse_obj(text, p()).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 8);
    }

    #[test]
    fn write_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.obj");
        let m = SurfaceMesh {
            vertices: vec![
                Point3::new(0.1, -2.5e-7, 3.0),
                Point3::new(1.0 / 3.0, 0.0, 0.0),
                Point3::new(0.0, 1.0, 1e300),
            ],
            triangles: vec![[0, 1, 2]],
        };
        write_obj(&path, &m).unwrap();
        assert_eq!(read_obj(&path).unwrap(), m);
    }
}
