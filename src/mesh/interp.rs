//! Interpolation of render-mesh vertices from volumetric-mesh vertices: Vega's `.interp`.
//!
//! Each render vertex `i` is a weighted sum of `nodes_per_vertex` simulation vertices:
//! `u_render(i) = sum_k weights[i*n + k] * u[indices[i*n + k]]`. The weights are the
//! trilinear (hex) or barycentric (tet) shape functions of the element that contains the
//! vertex, so they sum to one.
//!
//! [`read_interp`] is hand-written because the project requires typed errors with the
//! file and the 1-based line. Grammar (one line per render vertex; blank lines and `#`
//! comments are skipped):
//!
//! ```text
//! line := renderIndex (simIndex weight){n}
//! ```
//!
//! `renderIndex` is 0-based and must count 0, 1, 2, ... in order; `simIndex` is 0-based;
//! every line has the same number `n` of pairs (8 for hexes, 4 for tets); weights must be
//! finite and at most [`MAX_INTERP_WEIGHT`] in magnitude. The format has no count: pass `num_render_vertices` to detect truncation.

use nalgebra::{Point3, Vector3};

/// Render vertex -> simulation vertex weights (the content of a Vega `.interp` file).
#[derive(Debug, Clone, PartialEq)]
pub struct Interpolation {
    /// 8 for hexes, 4 for tets.
    pub nodes_per_vertex: usize,
    /// Flat, `nodes_per_vertex` 0-based simulation-vertex indices per render vertex.
    pub indices: Vec<usize>,
    /// Flat, the matching weights.
    pub weights: Vec<f64>,
}

impl Interpolation {
    /// Number of render vertices (lines of the `.interp` file).
    pub fn num_vertices(&self) -> usize {
        self.indices.len() / self.nodes_per_vertex.max(1)
    }

    /// Interpolates per-vertex vectors (for example displacements) to the render vertices.
    pub fn interpolate(&self, values: &[Vector3<f64>]) -> Vec<Vector3<f64>> {
        let n = self.nodes_per_vertex;
        (0..self.num_vertices())
            .map(|i| {
                (0..n)
                    .map(|k| values[self.indices[i * n + k]] * self.weights[i * n + k])
                    .sum()
            })
            .collect()
    }

    /// Interpolates positions.
    pub fn interpolate_points(&self, points: &[Point3<f64>]) -> Vec<Point3<f64>> {
        let coords: Vec<Vector3<f64>> = points.iter().map(|p| p.coords).collect();
        self.interpolate(&coords)
            .into_iter()
            .map(Point3::from)
            .collect()
    }
}

// Reading and writing Vega `.interp` files (grammar in the module documentation).

use std::fmt::Write as _;
use std::path::Path;

use super::error::{excerpt, Location, MeshError};
use super::text::{
    as_utf8, numbered_lines, parse_f64, parse_usize, read_bytes, strip_comment, write_bytes,
};

/// The largest |weight| accepted in an `.interp` file. The weights are the barycentric
/// (tet) or trilinear (hex) coordinates of a render vertex in its element: within
/// [0, 1] inside the element, and for a vertex outside the simulation mesh (extrapolated
/// from the nearest element) they grow like 1 + (distance to the element) / (element
/// size). A render vertex a thousand element sizes away from its element is not an
/// embedding but a broken file, and weights this large already amplify the element's
/// displacements a thousandfold; anything beyond (up to 1e308, whose products overflow)
/// is refused.
pub const MAX_INTERP_WEIGHT: f64 = 1e3;

/// Reads a Vega `.interp` file. With `num_render_vertices`, the file must have exactly
/// that many lines (so a truncated file is an error); with `num_sim_vertices`, every
/// simulation index must be below it.
pub fn read_interp(
    path: &Path,
    num_render_vertices: Option<usize>,
    num_sim_vertices: Option<usize>,
) -> Result<Interpolation, MeshError> {
    let bytes = read_bytes(path)?;
    parse_interp(
        as_utf8(&bytes, path)?,
        path,
        num_render_vertices,
        num_sim_vertices,
    )
}

/// Parses `.interp` text; `path` is only used in error messages.
pub fn parse_interp(
    text: &str,
    path: &Path,
    num_render_vertices: Option<usize>,
    num_sim_vertices: Option<usize>,
) -> Result<Interpolation, MeshError> {
    let mut nodes: Option<usize> = None;
    let mut indices = Vec::new();
    let mut weights = Vec::new();
    let mut count = 0usize;
    let mut last = 0;
    for (ln, line) in numbered_lines(text) {
        last = ln;
        let body = strip_comment(line);
        if body.is_empty() {
            continue;
        }
        let toks: Vec<&str> = body.split_ascii_whitespace().collect();
        let (first, pairs) = toks.split_first().unwrap_or((&"", &[]));
        let r = parse_usize(first, path, ln, "a 0-based render vertex index")?;
        if r != count {
            return Err(MeshError::syntax(
                path,
                Location::Line(ln),
                format!("render vertex index {count} (indices count 0, 1, 2, ...)"),
                excerpt(first),
            ));
        }
        check_pair_count(pairs, &mut nodes, path, ln)?;
        for pair in pairs.chunks_exact(2) {
            let (si, weight) = parse_pair(pair[0], pair[1], line, path, ln, num_sim_vertices)?;
            indices.push(si);
            weights.push(weight);
        }
        count += 1;
    }
    check_render_count(count, num_render_vertices, path, last)?;
    let Some(nodes_per_vertex) = nodes else {
        return Err(MeshError::truncated(
            path,
            Location::Line(last + 1),
            "at least one render vertex line",
        ));
    };
    Ok(Interpolation {
        nodes_per_vertex,
        indices,
        weights,
    })
}

/// Checks that line `ln` holds whole (index, weight) pairs, as many as the first line
/// (whose count `nodes` records).
fn check_pair_count(
    pairs: &[&str],
    nodes: &mut Option<usize>,
    path: &Path,
    ln: usize,
) -> Result<(), MeshError> {
    let n = pairs.len() / 2;
    if !pairs.len().is_multiple_of(2) || n == 0 {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            "pairs 'simVertexIndex weight' after the render vertex index",
            format!("{} numbers", pairs.len()),
        ));
    }
    match *nodes {
        None => *nodes = Some(n),
        Some(m) if m != n => {
            return Err(MeshError::syntax(
                path,
                Location::Line(ln),
                format!("{m} (index, weight) pairs as on the first line"),
                format!("{n} pairs"),
            ))
        }
        _ => {}
    }
    Ok(())
}

/// Parses one (simulation index `s`, weight `w`) pair of `line` (line number `ln`),
/// checking the index against `num_sim_vertices` and the weight's magnitude.
fn parse_pair(
    s: &str,
    w: &str,
    line: &str,
    path: &Path,
    ln: usize,
    num_sim_vertices: Option<usize>,
) -> Result<(usize, f64), MeshError> {
    let si = parse_usize(s, path, ln, "a 0-based simulation vertex index")?;
    if let Some(ns) = num_sim_vertices {
        if si >= ns {
            return Err(MeshError::IndexOutOfRange {
                path: path.to_path_buf(),
                location: Location::Line(ln),
                index: si as i64,
                count: ns,
            });
        }
    }
    let weight = parse_f64(w, path, ln, "an interpolation weight")?;
    if weight.abs() > MAX_INTERP_WEIGHT {
        // `w` is a slice of `line`: its byte offset gives the column.
        let at = (w.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
        let column = line.get(..at).map_or(at, |p| p.chars().count()) + 1;
        return Err(MeshError::WeightOutOfRange {
            path: path.to_path_buf(),
            location: Location::Line(ln),
            column,
            value: w.to_string(),
            limit: MAX_INTERP_WEIGHT,
        });
    }
    Ok((si, weight))
}

/// Checks the `count` render vertex lines against `num_render_vertices` (`last`: the
/// last line number).
fn check_render_count(
    count: usize,
    num_render_vertices: Option<usize>,
    path: &Path,
    last: usize,
) -> Result<(), MeshError> {
    if let Some(nr) = num_render_vertices {
        if count < nr {
            return Err(MeshError::truncated(
                path,
                Location::Line(last + 1),
                format!("{nr} render vertices (found {count})"),
            ));
        }
        if count > nr {
            return Err(MeshError::syntax(
                path,
                Location::File,
                format!("{nr} render vertices"),
                format!("{count}"),
            ));
        }
    }
    Ok(())
}

/// Writes `interp` as a Vega `.interp` file (weights with shortest round-trip formatting).
pub fn write_interp(path: &Path, interp: &Interpolation) -> Result<(), MeshError> {
    let n = interp.nodes_per_vertex;
    if n == 0
        || interp.indices.len() != interp.weights.len()
        || !interp.indices.len().is_multiple_of(n)
    {
        return Err(MeshError::Unsupported {
            path: path.to_path_buf(),
            what: "an interpolation whose index and weight arrays do not match nodes_per_vertex"
                .into(),
        });
    }
    let mut s = String::with_capacity(interp.indices.len() * 16);
    for (r, (idx, w)) in interp
        .indices
        .chunks(n)
        .zip(interp.weights.chunks(n))
        .enumerate()
    {
        let _ = write!(s, "{r}");
        for (i, w) in idx.iter().zip(w) {
            let _ = write!(s, " {i} {w}");
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
    fn parse_and_interpolate() {
        let p = Path::new("t.interp");
        let it = parse_interp("0 0 0.25 1 0.75\n1 1 1 0 0\n", p, Some(2), Some(2)).unwrap();
        assert_eq!(it.nodes_per_vertex, 2);
        assert_eq!(it.num_vertices(), 2);
        let x = it.interpolate_points(&[Point3::new(0.0, 0.0, 0.0), Point3::new(4.0, 0.0, 0.0)]);
        assert_eq!(x[0].x, 3.0);
        assert_eq!(x[1].x, 4.0);
    }

    #[test]
    fn errors() {
        let p = Path::new("t.interp");
        let cases: &[(&str, usize)] = &[
            ("0 0 0.5 1 0.5\n2 0 0.5 1 0.5\n", 2),
            ("0 0 0.5 1 0.5\n1 0 0.5\n", 2),
            ("0 0 0.5 1 0.5\n1 0 0.5 1\n", 2),
            ("0 0 0.5 1 nan\n", 1),
            ("0 0 0.5 x 0.5\n", 1),
            ("0 0 0.5 7 0.5\n", 1),
        ];
        for (t, line) in cases {
            let e = parse_interp(t, p, None, Some(3)).unwrap_err();
            assert_at_line(&e, *line);
        }
        let e = parse_interp("0 0 0.5 1 0.5\n", p, Some(2), None).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }));
        assert_at_line(&e, 2);
    }

    #[test]
    fn absurd_weights_are_errors_naming_line_and_column() {
        let p = Path::new("w.interp");
        let e = parse_interp("0 0 0.5 1 0.5\n1 0 1e308 1 0.5\n", p, None, None).unwrap_err();
        match &e {
            MeshError::WeightOutOfRange { column, .. } => {
                assert_at_line(&e, 2);
                assert_eq!(*column, 5);
            }
            other => panic!("{other}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("w.interp:line 2, column 5"), "{msg}");
        assert!(msg.contains("1e308"), "{msg}");
        // Extrapolated weights of moderate size are kept.
        let it = parse_interp("0 0 -2.5 1 3.5\n", p, None, None).unwrap();
        assert_eq!(it.weights, [-2.5, 3.5]);
        assert!(parse_interp("0 0 -1001 1 1\n", p, None, None).is_err());
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.interp");
        let it = Interpolation {
            nodes_per_vertex: 4,
            indices: vec![0, 1, 2, 3, 3, 2, 1, 0],
            weights: vec![0.1, 0.2, 0.3, 0.4, 1.0 / 3.0, 0.0, 2.0 / 3.0, 0.0],
        };
        write_interp(&path, &it).unwrap();
        assert_eq!(read_interp(&path, Some(2), Some(4)).unwrap(), it);
    }
}
