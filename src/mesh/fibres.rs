//! Fibre fields: one unit muscle-fibre direction per element of a volumetric mesh, in a
//! text file beside its `.veg` (`NAME.fibres` for `NAME.veg`, see [`fibres_path`]).
//!
//! Hand-written, like the other text readers, so that every error is a typed
//! [`MeshError`] naming the file and the 1-based line. Grammar:
//!
//! ```text
//! file   := header vector{N}
//! header := 'fibres' N          N: the number of elements of the mesh
//! vector := ax ay az            a unit vector, the fibre direction of one element
//! ```
//!
//! one item a line, in the `.veg`'s element order, in the rest configuration. `#` starts
//! a comment that runs to the end of the line; blank lines and comment lines are
//! skipped. Components are decimal floating-point numbers; the writer uses 17
//! significant digits (`{:.16e}`), which give every `f64` back bit for bit. A vector
//! must be finite and of length 1 within [`UNIT_TOLERANCE`] (it is kept as written, not
//! renormalized). A direction and its negative describe the same fibre; the muscle
//! writer orients them along +x. The format is documented with an example in
//! docs/muscle-geometry.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use nalgebra::Vector3;

use super::error::{excerpt, Location, MeshError};
use super::text::{
    as_utf8, numbered_lines, parse_f64, parse_usize, read_bytes, strip_comment, write_bytes,
};

/// How far from 1 the length of a fibre vector may be, on reading and writing.
pub const UNIT_TOLERANCE: f64 = 1e-6;

/// The fibre file beside a mesh: the same path with the extension `.fibres`.
pub fn fibres_path(veg_path: &Path) -> PathBuf {
    veg_path.with_extension("fibres")
}

/// Whether `a` is finite with length 1 within [`UNIT_TOLERANCE`].
fn is_unit(a: &Vector3<f64>) -> bool {
    (a.norm() - 1.0).abs() <= UNIT_TOLERANCE
}

/// Writes `fibres` (one unit vector per element) atomically, 17 significant digits per
/// component. A vector that is not finite and unit (within [`UNIT_TOLERANCE`]) is refused
/// with an `Unsupported` error naming the element, as the reader would refuse it.
pub fn write_fibres(path: &Path, fibres: &[Vector3<f64>]) -> Result<(), MeshError> {
    if let Some((e, a)) = fibres.iter().enumerate().find(|(_, a)| !is_unit(a)) {
        return Err(MeshError::Unsupported {
            path: path.to_path_buf(),
            what: format!(
                "fibre of element {e} (0-based) is ({}, {}, {}), length {}: not a unit vector (within {UNIT_TOLERANCE:e})",
                a.x,
                a.y,
                a.z,
                a.norm()
            ),
        });
    }
    let mut s = String::with_capacity(80 * fibres.len() + 160);
    s.push_str(
        "# Fibre field: one unit fibre direction per element, in .veg element order,\n\
         # rest configuration (format: docs/muscle-geometry.md).\n",
    );
    let _ = writeln!(s, "fibres {}", fibres.len());
    for a in fibres {
        let _ = writeln!(s, "{:.16e} {:.16e} {:.16e}", a.x, a.y, a.z);
    }
    write_bytes(path, s.as_bytes())
}

/// Reads a fibre file. With `expected_elements`, its count must be that number (the
/// elements of the mesh it belongs to).
pub fn read_fibres(
    path: &Path,
    expected_elements: Option<usize>,
) -> Result<Vec<Vector3<f64>>, MeshError> {
    let bytes = read_bytes(path)?;
    parse_fibres(as_utf8(&bytes, path)?, path, expected_elements)
}

/// Parses fibre-file text (grammar in the module documentation); `path` is only used in
/// error messages.
pub fn parse_fibres(
    text: &str,
    path: &Path,
    expected_elements: Option<usize>,
) -> Result<Vec<Vector3<f64>>, MeshError> {
    let mut count: Option<usize> = None;
    let mut out: Vec<Vector3<f64>> = Vec::new();
    let mut last = 0;
    for (ln, line) in numbered_lines(text) {
        last = ln;
        let body = strip_comment(line);
        if body.is_empty() {
            continue;
        }
        let toks: Vec<&str> = body.split_ascii_whitespace().collect();
        let Some(n) = count else {
            let n = parse_header(&toks, body, path, ln, expected_elements)?;
            // Bounded by the text: a vector line takes at least 6 bytes.
            out.reserve(n.min(text.len() / 6 + 1));
            count = Some(n);
            continue;
        };
        out.push(parse_vector(&toks, body, path, ln, n, out.len())?);
    }
    let Some(n) = count else {
        return Err(MeshError::truncated(
            path,
            Location::Line(last + 1),
            "the header 'fibres N'",
        ));
    };
    if out.len() < n {
        return Err(MeshError::truncated(
            path,
            Location::Line(last + 1),
            format!("{n} fibre vectors (found {})", out.len()),
        ));
    }
    Ok(out)
}

/// Parses the header 'fibres N' (tokens `toks` of line `ln`, comment-free `body`) and
/// checks N against `expected_elements`.
fn parse_header(
    toks: &[&str],
    body: &str,
    path: &Path,
    ln: usize,
    expected_elements: Option<usize>,
) -> Result<usize, MeshError> {
    if toks.len() != 2 || toks[0] != "fibres" {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            "the header 'fibres N' (N: the number of elements)",
            excerpt(body),
        ));
    }
    let n = parse_usize(toks[1], path, ln, "the number of fibres N in 'fibres N'")?;
    if let Some(e) = expected_elements {
        if n != e {
            return Err(MeshError::syntax(
                path,
                Location::Line(ln),
                format!("'fibres {e}' (one fibre per element of the mesh)"),
                format!("'fibres {n}'"),
            ));
        }
    }
    Ok(n)
}

/// Parses the unit fibre of element `index` (0-based) of a file of `n` fibres from the
/// tokens `toks` of line `ln` (comment-free `body`).
fn parse_vector(
    toks: &[&str],
    body: &str,
    path: &Path,
    ln: usize,
    n: usize,
    index: usize,
) -> Result<Vector3<f64>, MeshError> {
    if index == n {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("the end of the file after {n} fibre vectors"),
            excerpt(body),
        ));
    }
    if toks.len() != 3 {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("three numbers 'ax ay az' (the fibre of element {index}, 0-based)"),
            format!("{} fields: {}", toks.len(), excerpt(body)),
        ));
    }
    let mut c = [0.0; 3];
    for (x, tok) in c.iter_mut().zip(toks) {
        *x = parse_f64(tok, path, ln, "a number (a fibre component)")?;
    }
    let a = Vector3::from(c);
    if !is_unit(&a) {
        let len = a.norm();
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("a unit vector (length 1 within {UNIT_TOLERANCE:e})"),
            if len == 0.0 {
                "the zero vector".to_string()
            } else {
                format!("a vector of length {len}")
            },
        ));
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::assert_at_line;

    fn p() -> &'static Path {
        Path::new("m.fibres")
    }

    #[test]
    fn parses_with_comments_and_blank_lines() {
        let t = "# a muscle\n\nfibres 2 # two elements\n1 0 0\n# between\n0 0.6 -0.8\n\n";
        let f = parse_fibres(t, p(), Some(2)).unwrap();
        assert_eq!(f, vec![Vector3::x(), Vector3::new(0.0, 0.6, -0.8)]);
        assert!(parse_fibres("fibres 0\n", p(), None).unwrap().is_empty());
        // CRLF line ends.
        let f = parse_fibres("fibres 1\r\n0 1 0\r\n", p(), None).unwrap();
        assert_eq!(f, vec![Vector3::y()]);
    }

    #[test]
    fn round_trip_is_bit_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.fibres");
        let mut fibres: Vec<Vector3<f64>> = (0..500)
            .map(|i| {
                let t = i as f64 * 0.0123 + 0.1;
                Vector3::new(t.cos() * (2.0 * t).sin(), t.sin(), (3.0 * t).cos() + 0.2).normalize()
            })
            .collect();
        fibres.push(Vector3::new(-0.0, 1.0, 0.0));
        fibres.push(Vector3::new(1.0, 1e-300, -5e-324));
        write_fibres(&path, &fibres).unwrap();
        let back = read_fibres(&path, Some(fibres.len())).unwrap();
        assert_eq!(back.len(), fibres.len());
        for (a, b) in fibres.iter().zip(&back) {
            for k in 0..3 {
                assert_eq!(a[k].to_bits(), b[k].to_bits(), "{a} vs {b}");
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\nfibres 502\n"));
        // Only the file: the temporary was renamed.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn the_writer_refuses_non_unit_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.fibres");
        for bad in [
            Vector3::zeros(),
            Vector3::new(2.0, 0.0, 0.0),
            Vector3::new(f64::NAN, 0.0, 0.0),
        ] {
            let e = write_fibres(&path, &[Vector3::x(), bad]).unwrap_err();
            assert!(matches!(e, MeshError::Unsupported { .. }), "{e}");
            assert!(e.to_string().contains("element 1"), "{e}");
        }
        assert!(!path.exists());
    }

    #[test]
    fn header_errors() {
        let e = parse_fibres("# nothing\n\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 3);
        let e = parse_fibres("1 0 0\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert!(e.to_string().contains("'fibres N'"), "{e}");
        let e = parse_fibres("# c\nfibres x\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 2);
        let e = parse_fibres("fibres -3\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        let e = parse_fibres("fibres 2 3\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    }

    #[test]
    fn wrong_count_names_the_expected_number() {
        let e = parse_fibres("fibres 2\n1 0 0\n0 1 0\n", p(), Some(3)).unwrap_err();
        assert_at_line(&e, 1);
        let s = e.to_string();
        assert!(
            s.contains("expected 'fibres 3'") && s.contains("found 'fibres 2'"),
            "{s}"
        );
        assert!(s.starts_with("m.fibres:line 1:"), "{s}");
    }

    #[test]
    fn too_few_and_too_many_lines() {
        let e = parse_fibres("fibres 3\n1 0 0\n0 1 0\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 4);
        assert!(e.to_string().contains("3 fibre vectors (found 2)"), "{e}");
        let e = parse_fibres("fibres 1\n1 0 0\n0 1 0\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 3);
        assert!(
            e.to_string()
                .contains("end of the file after 1 fibre vectors"),
            "{e}"
        );
    }

    #[test]
    fn bad_vectors() {
        // Not a number.
        let e = parse_fibres("fibres 2\n1 0 0\n0 one 0\n", p(), None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 3);
        assert!(e.to_string().contains("'one'"), "{e}");
        // Wrong number of components.
        let e = parse_fibres("fibres 1\n1 0\n", p(), None).unwrap_err();
        assert!(e.to_string().contains("three numbers"), "{e}");
        assert_at_line(&e, 2);
        let e = parse_fibres("fibres 1\n1 0 0 0\n", p(), None).unwrap_err();
        assert!(e.to_string().contains("4 fields"), "{e}");
        // NaN and infinity.
        for t in [
            "fibres 1\nnan 0 0\n",
            "fibres 1\n1 inf 0\n",
            "fibres 1\n1 0 -Infinity\n",
        ] {
            let e = parse_fibres(t, p(), None).unwrap_err();
            assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
            assert_at_line(&e, 2);
        }
        // Zero and non-unit vectors, saying what was expected.
        let e = parse_fibres("fibres 1\n0 0 0\n", p(), None).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("expected a unit vector (length 1 within 1e-6)"),
            "{s}"
        );
        assert!(s.contains("found the zero vector"), "{s}");
        let e = parse_fibres("fibres 1\n0 0 1.00001\n", p(), None).unwrap_err();
        assert!(e.to_string().contains("length 1.00001"), "{e}");
        assert_at_line(&e, 2);
        // Within the tolerance it is accepted, as written.
        let f = parse_fibres("fibres 1\n0 0 1.0000005\n", p(), None).unwrap();
        assert_eq!(f[0].z, 1.0000005);
    }

    #[test]
    fn read_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.fibres");
        std::fs::write(&path, "fibres 1\n0 0 2\n").unwrap();
        let e = read_fibres(&path, None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{}:line 2:", path.display())),
            "{e}"
        );
        let e = read_fibres(&dir.path().join("missing.fibres"), None).unwrap_err();
        assert!(matches!(e, MeshError::Io { .. }), "{e}");
        assert_eq!(
            fibres_path(Path::new("a/b.veg")),
            PathBuf::from("a/b.fibres")
        );
    }
}
