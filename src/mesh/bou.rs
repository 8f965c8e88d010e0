//! Vega `.bou` fixed-vertex lists (reader and writer).
//!
//! Hand-written: the format is trivial and the project requires typed [`MeshError`]s with
//! the file and the 1-based line. Grammar:
//!
//! ```text
//! file  := (index (',' | blank)* | comment | blank-line)*
//! index := 1-based vertex index
//! comment := '#' ... end of line
//! ```
//!
//! The result is 0-based, sorted and without duplicates. An empty file is an empty list
//! (nothing fixed). Note the format has no count, so a file cut at a line end still reads
//! as a shorter list; only cuts that garble a number can be detected.

use std::fmt::Write as _;
use std::path::Path;

use super::error::{excerpt, Location, MeshError};
use super::text::{as_utf8, numbered_lines, parse_i64, read_bytes, strip_comment, write_bytes};

/// Reads a `.bou` file; with `num_vertices`, every index must lie in `1..=num_vertices`.
pub fn read_bou(path: &Path, num_vertices: Option<usize>) -> Result<Vec<usize>, MeshError> {
    let bytes = read_bytes(path)?;
    parse_bou(as_utf8(&bytes, path)?, path, num_vertices)
}

/// Parses `.bou` text; `path` is only used in error messages.
pub fn parse_bou(
    text: &str,
    path: &Path,
    num_vertices: Option<usize>,
) -> Result<Vec<usize>, MeshError> {
    let mut out = Vec::new();
    for (ln, line) in numbered_lines(text) {
        let body = strip_comment(line);
        for tok in body
            .split(|c: char| c == ',' || c.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
        {
            let i = parse_i64(tok, path, ln, "a 1-based vertex index")?;
            let in_range = i >= 1 && num_vertices.is_none_or(|n| (i as u64) <= n as u64);
            if !in_range {
                return Err(match num_vertices {
                    Some(count) => MeshError::IndexOutOfRange {
                        path: path.to_path_buf(),
                        location: Location::Line(ln),
                        index: i,
                        count,
                    },
                    None => MeshError::syntax(
                        path,
                        Location::Line(ln),
                        "a 1-based vertex index (>= 1)",
                        excerpt(tok),
                    ),
                });
            }
            out.push((i - 1) as usize);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Writes 0-based `fixed` vertices as a Vega `.bou` file (1-based, eight per line, each
/// followed by a comma, as Vega writes them).
pub fn write_bou(path: &Path, fixed: &[usize]) -> Result<(), MeshError> {
    let mut s = String::with_capacity(8 * fixed.len() + 8);
    for chunk in fixed.chunks(8) {
        for v in chunk {
            let _ = write!(s, "{},", v + 1);
        }
        s.push('\n');
    }
    write_bytes(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::assert_at_line;

    #[test]
    fn parses_sorts_dedups() {
        let p = Path::new("t.bou");
        let v = parse_bou("# fixed\n5, 3,\n3 1\t2,\n\n", p, Some(5)).unwrap();
        assert_eq!(v, vec![0, 1, 2, 4]);
        assert!(parse_bou("", p, None).unwrap().is_empty());
    }

    #[test]
    fn errors() {
        let p = Path::new("t.bou");
        let e = parse_bou("1,2,\n3,x,\n", p, None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }));
        assert_at_line(&e, 2);
        let e = parse_bou("1,2,\n3,9,\n", p, Some(8)).unwrap_err();
        assert!(matches!(
            e,
            MeshError::IndexOutOfRange {
                index: 9,
                count: 8,
                ..
            }
        ));
        assert_at_line(&e, 2);
        let e = parse_bou("0,\n", p, None).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }));
        assert_at_line(&e, 1);
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bou");
        let v: Vec<usize> = (0..20).map(|i| 3 * i).collect();
        write_bou(&path, &v).unwrap();
        assert_eq!(read_bou(&path, Some(60)).unwrap(), v);
    }
}
