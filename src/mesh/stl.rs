//! STL surface meshes, binary and ASCII (reader and writers).
//!
//! Hand-written rather than taken from `stl_io` because the project requires typed
//! [`MeshError`]s with the 1-based line (ASCII) or byte offset (binary) of a problem,
//! which `stl_io` does not provide.
//!
//! Binary layout (little endian):
//!
//! ```text
//! header    80 bytes (ignored; may start with "solid")
//! count     u32
//! triangle  count times: normal f32x3 (ignored), vertices f32x3 x3, attribute u16
//! ```
//!
//! The file size must be exactly `84 + 50 * count`: a shorter file is `Truncated`, a
//! longer one `Syntax`, both at a byte `Offset`.
//!
//! ASCII grammar (keywords separated by whitespace, one statement per line):
//!
//! ```text
//! file   := solid+
//! solid  := "solid" [name] facet* "endsolid" [name]
//! facet  := "facet" "normal" nx ny nz "outer" "loop" vertex vertex vertex "endloop" "endfacet"
//! vertex := "vertex" x y z
//! ```
//!
//! Detection: a file that starts with `solid` is read as ASCII; if that fails and the
//! size matches the binary layout exactly, it is read as binary (some binary writers put
//! `solid` in the header); otherwise the ASCII error is returned.
//!
//! STL stores each triangle's corners separately; the reader welds corners with bitwise
//! identical coordinates (after mapping `-0.0` to `0.0`) through a hash map, so the result
//! is an indexed mesh. NaN or infinite coordinates are `NonFinite`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use nalgebra::Point3;

use super::error::{excerpt, Location, MeshError};
use super::text::{as_utf8, numbered_lines, parse_f64, read_bytes, write_bytes};
use crate::mesh::SurfaceMesh;

/// Reads a binary or ASCII STL file (see the module documentation).
pub fn read_stl(path: &Path) -> Result<SurfaceMesh, MeshError> {
    let bytes = read_bytes(path)?;
    parse_stl(&bytes, path)
}

/// Parses STL bytes; `path` is only used in error messages.
pub fn parse_stl(bytes: &[u8], path: &Path) -> Result<SurfaceMesh, MeshError> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.starts_with(b"solid") {
        let ascii = as_utf8(bytes, path).and_then(|t| parse_stl_ascii(t, path));
        match ascii {
            Ok(m) => Ok(m),
            Err(e) => {
                if binary_size_matches(bytes) {
                    parse_stl_binary(bytes, path)
                } else {
                    Err(e)
                }
            }
        }
    } else {
        parse_stl_binary(bytes, path)
    }
}

fn binary_size_matches(bytes: &[u8]) -> bool {
    match bytes.get(80..84) {
        Some(c) => {
            let n = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64;
            84 + 50 * n == bytes.len() as u64
        }
        None => false,
    }
}

/// Welds corners with identical coordinates into shared vertices.
struct Welder {
    map: HashMap<[u64; 3], usize>,
    vertices: Vec<Point3<f64>>,
}

impl Welder {
    fn new(capacity: usize) -> Self {
        Welder {
            map: HashMap::with_capacity(capacity),
            vertices: Vec::with_capacity(capacity),
        }
    }

    fn add(&mut self, p: [f64; 3]) -> usize {
        // + 0.0 maps -0.0 to 0.0, so the two zeros weld.
        let key = [
            (p[0] + 0.0).to_bits(),
            (p[1] + 0.0).to_bits(),
            (p[2] + 0.0).to_bits(),
        ];
        let next = self.vertices.len();
        let i = *self.map.entry(key).or_insert(next);
        if i == next {
            self.vertices
                .push(Point3::new(p[0] + 0.0, p[1] + 0.0, p[2] + 0.0));
        }
        i
    }
}

fn no_triangles(path: &Path) -> MeshError {
    MeshError::syntax(path, Location::File, "at least one triangle", "none")
}

/// Parses binary STL.
pub(crate) fn parse_stl_binary(bytes: &[u8], path: &Path) -> Result<SurfaceMesh, MeshError> {
    let len = bytes.len() as u64;
    let Some(c) = bytes.get(80..84) else {
        return Err(MeshError::truncated(
            path,
            Location::Offset(len),
            "an 80-byte header and a u32 triangle count (84 bytes)",
        ));
    };
    let n = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as u64;
    let expected = 84 + 50 * n;
    if len < expected {
        return Err(MeshError::truncated(
            path,
            Location::Offset(len),
            format!("{n} triangles of 50 bytes, {expected} bytes in all (file has {len})"),
        ));
    }
    if len > expected {
        return Err(MeshError::syntax(
            path,
            Location::Offset(expected),
            format!("the end of the file after {n} triangles"),
            format!("{} more bytes", len - expected),
        ));
    }
    if n == 0 {
        return Err(no_triangles(path));
    }
    let n = n as usize;
    let mut weld = Welder::new(n / 2 + 3);
    let mut triangles = Vec::with_capacity(n);
    for (t, rec) in bytes.get(84..).unwrap_or(&[]).chunks_exact(50).enumerate() {
        let mut tri = [0usize; 3];
        for (k, corner) in tri.iter_mut().enumerate() {
            let mut p = [0.0f64; 3];
            for (d, pd) in p.iter_mut().enumerate() {
                let o = 12 + 12 * k + 4 * d;
                let b = rec.get(o..o + 4).unwrap_or(&[0, 0, 0, 0]);
                let x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                if !x.is_finite() {
                    return Err(MeshError::NonFinite {
                        path: path.to_path_buf(),
                        location: Location::Offset((84 + 50 * t + o) as u64),
                        value: x.to_string(),
                    });
                }
                *pd = x as f64;
            }
            *corner = weld.add(p);
        }
        triangles.push(tri);
    }
    Ok(SurfaceMesh {
        vertices: weld.vertices,
        triangles,
    })
}

/// Parses ASCII STL text.
pub(crate) fn parse_stl_ascii(text: &str, path: &Path) -> Result<SurfaceMesh, MeshError> {
    #[derive(PartialEq, Clone, Copy)]
    enum S {
        Outside,
        InSolid,
        Facet,
        Loop(usize),
        EndLoop,
    }
    let mut state = S::Outside;
    let mut weld = Welder::new(1024);
    let mut triangles = Vec::new();
    let mut tri = [0usize; 3];
    let mut last = 0;
    let mut solids = 0;
    for (ln, line) in numbered_lines(text) {
        last = ln;
        let mut toks = line.split_ascii_whitespace();
        let Some(key) = toks.next() else { continue };
        let bad =
            |expected: &str| MeshError::syntax(path, Location::Line(ln), expected, excerpt(line));
        state = match (state, key) {
            (S::Outside, "solid") => {
                solids += 1;
                S::InSolid
            }
            (S::Outside, _) => return Err(bad("'solid'")),
            (S::InSolid, "facet") => {
                if toks.next() != Some("normal") {
                    return Err(bad("'facet normal nx ny nz'"));
                }
                for _ in 0..3 {
                    let tok = toks.next().ok_or_else(|| bad("'facet normal nx ny nz'"))?;
                    parse_f64(tok, path, ln, "a normal component")?;
                }
                S::Facet
            }
            (S::InSolid, "endsolid") => S::Outside,
            (S::InSolid, _) => return Err(bad("'facet normal' or 'endsolid'")),
            (S::Facet, "outer") if toks.next() == Some("loop") => S::Loop(0),
            (S::Facet, _) => return Err(bad("'outer loop'")),
            (S::Loop(k), "vertex") if k < 3 => {
                let mut p = [0.0; 3];
                for pd in &mut p {
                    let tok = toks.next().ok_or_else(|| bad("'vertex x y z'"))?;
                    *pd = parse_f64(tok, path, ln, "a vertex coordinate")?;
                }
                if let Some(slot) = tri.get_mut(k) {
                    *slot = weld.add(p);
                }
                if k == 2 {
                    triangles.push(tri);
                    S::EndLoop
                } else {
                    S::Loop(k + 1)
                }
            }
            (S::Loop(_), _) => return Err(bad("'vertex x y z' (three per facet)")),
            (S::EndLoop, "endloop") => S::EndLoop,
            (S::EndLoop, "endfacet") => S::InSolid,
            (S::EndLoop, _) => return Err(bad("'endloop' then 'endfacet'")),
        };
    }
    if state != S::Outside || solids == 0 {
        return Err(MeshError::truncated(
            path,
            Location::Line(last + 1),
            "the rest of the facet and 'endsolid'",
        ));
    }
    if triangles.is_empty() {
        return Err(no_triangles(path));
    }
    Ok(SurfaceMesh {
        vertices: weld.vertices,
        triangles,
    })
}

fn unit_normal(mesh: &SurfaceMesh, t: [usize; 3]) -> [f32; 3] {
    let get = |i: usize| mesh.vertices.get(i).copied().unwrap_or_else(Point3::origin);
    let (a, b, c) = (get(t[0]), get(t[1]), get(t[2]));
    let n = (b - a).cross(&(c - a));
    let n = n.try_normalize(0.0).unwrap_or(n);
    [n.x as f32, n.y as f32, n.z as f32]
}

fn check_indices(path: &Path, mesh: &SurfaceMesh) -> Result<(), MeshError> {
    let n = mesh.vertices.len();
    if let Some(&bad) = mesh.triangles.iter().flatten().find(|&&i| i >= n) {
        return Err(MeshError::IndexOutOfRange {
            path: path.to_path_buf(),
            location: Location::File,
            index: bad as i64,
            count: n,
        });
    }
    Ok(())
}

/// Writes binary STL (coordinates rounded to `f32`, as the format requires).
pub fn write_stl_binary(path: &Path, mesh: &SurfaceMesh) -> Result<(), MeshError> {
    check_indices(path, mesh)?;
    let n = u32::try_from(mesh.triangles.len()).map_err(|_| MeshError::Unsupported {
        path: path.to_path_buf(),
        what: "more than 2^32 - 1 triangles in binary STL".into(),
    })?;
    let mut out = Vec::with_capacity(84 + 50 * mesh.triangles.len());
    let mut header = [b' '; 80];
    let msg = b"binary STL written by haptics";
    header[..msg.len()].copy_from_slice(msg);
    out.extend_from_slice(&header);
    out.extend_from_slice(&n.to_le_bytes());
    for &t in &mesh.triangles {
        for x in unit_normal(mesh, t) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        for i in t {
            let p = mesh.vertices[i];
            for x in [p.x, p.y, p.z] {
                out.extend_from_slice(&(x as f32).to_le_bytes());
            }
        }
        out.extend_from_slice(&0u16.to_le_bytes());
    }
    write_bytes(path, &out)
}

/// Writes ASCII STL (full `f64` precision, shortest round-trip formatting).
pub fn write_stl_ascii(path: &Path, mesh: &SurfaceMesh) -> Result<(), MeshError> {
    check_indices(path, mesh)?;
    let mut s = String::from("solid haptics\n");
    for &t in &mesh.triangles {
        let n = unit_normal(mesh, t);
        let _ = writeln!(
            s,
            "  facet normal {} {} {}\n    outer loop",
            n[0], n[1], n[2]
        );
        for i in t {
            let p = mesh.vertices[i];
            let _ = writeln!(s, "      vertex {} {} {}", p.x, p.y, p.z);
        }
        s.push_str("    endloop\n  endfacet\n");
    }
    s.push_str("endsolid haptics\n");
    write_bytes(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::{assert_at_line, assert_at_offset};

    fn square() -> SurfaceMesh {
        SurfaceMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(1.0, 0.0, 0.0),
                Point3::new(1.0, 1.0, 0.0),
                Point3::new(0.0, 1.0, 0.0),
            ],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        }
    }

    #[test]
    fn binary_and_ascii_round_trip_weld() {
        let dir = tempfile::tempdir().unwrap();
        for (name, ascii) in [("a.stl", true), ("b.stl", false)] {
            let path = dir.path().join(name);
            if ascii {
                write_stl_ascii(&path, &square()).unwrap();
            } else {
                write_stl_binary(&path, &square()).unwrap();
            }
            let m = read_stl(&path).unwrap();
            assert_eq!(m, square(), "{name}");
        }
    }

    #[test]
    fn binary_header_starting_with_solid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.stl");
        write_stl_binary(&path, &square()).unwrap();
        let mut b = std::fs::read(&path).unwrap();
        b[..5].copy_from_slice(b"solid");
        assert_eq!(parse_stl(&b, &path).unwrap(), square());
    }

    #[test]
    fn binary_errors_have_offsets() {
        let p = Path::new("x.stl");
        let e = parse_stl_binary(&[0u8; 50], p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }));
        assert_at_offset(&e, 50);
        let mut b = vec![0u8; 84 + 100];
        b[80] = 2;
        let e = parse_stl_binary(&b[..150], p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }));
        assert_at_offset(&e, 150);
        b.push(0);
        let e = parse_stl_binary(&b, p).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }));
        assert_at_offset(&e, 184);
        b.pop();
        b[84 + 50 + 12 + 4..84 + 50 + 12 + 8].copy_from_slice(&f32::NAN.to_le_bytes());
        let e = parse_stl_binary(&b, p).unwrap_err();
        assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
        assert_at_offset(&e, 150);
    }

    #[test]
    fn ascii_errors_have_lines() {
        let p = Path::new("x.stl");
        let t = "solid a\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 abc 0\n";
        let e = parse_stl_ascii(t, p).unwrap_err();
        assert_at_line(&e, 5);
        let t = "solid a\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\n";
        let e = parse_stl(t.as_bytes(), p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 5);
    }
}
