//! Vega `.dist` files (DistanceFieldBase's binary format), little-endian:
//!
//! | bytes | content |
//! |---|---|
//! | 4 | int32 resolutionX (negative: the values that follow are f64, else f32) |
//! | 4 | int32 resolutionY (negative: a closest-point field, which is not supported) |
//! | 4 | int32 resolutionZ |
//! | 48 | f64 bmin x, y, z, then bmax x, y, z (box corners; spacing (bmax - bmin) / res) |
//! | rest | (resX + 1)(resY + 1)(resZ + 1) values, x fastest |
//!
//! We write f32 values (positive resolutionX), to a temporary file in the target's
//! directory renamed into place, so a reader never sees a half-written field. Reading
//! checks everything and reports the file, the byte offset and what was expected;
//! `boundary_min` (not stored) is recomputed.

use std::path::{Path, PathBuf};

use nalgebra::Point3;

use super::sdf::SignedDistanceField;
use crate::io::{write_bytes_atomic, ByteReader, Truncated};

/// Largest resolution per axis we accept (a 65536^3 grid would be a petabyte).
pub const MAX_DIST_RESOLUTION: i64 = 1 << 16;

const HEADER_BYTES: usize = 12 + 48;

/// Errors reading or writing `.dist` files.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before its header says it should.
    #[error("{path}: byte offset {offset}: file ends early: expected {expected}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The file's length.
        offset: u64,
        /// What was expected, and at which byte offset.
        expected: String,
    },
    /// A resolution outside 1..=[`MAX_DIST_RESOLUTION`].
    #[error("{path}: byte offset {offset}: expected a {axis} resolution between 1 and {MAX_DIST_RESOLUTION}, found {found}")]
    BadResolution {
        /// The file.
        path: PathBuf,
        /// Where the resolution is stored.
        offset: u64,
        /// Its axis.
        axis: char,
        /// The value found.
        found: i64,
    },
    /// A closest-point field (negative y resolution), which is not supported.
    #[error("{path}: byte offset 4: negative y resolution {found} marks a closest-point field; only distance fields are supported")]
    ClosestPointField {
        /// The file.
        path: PathBuf,
        /// The y resolution found.
        found: i64,
    },
    /// A box corner coordinate that is NaN or infinite.
    #[error("{path}: byte offset {offset}: expected a finite box coordinate, found {found}")]
    NonFiniteBox {
        /// The file.
        path: PathBuf,
        /// Where the coordinate is stored.
        offset: u64,
        /// The value found.
        found: f64,
    },
    /// A box whose maximum does not exceed its minimum along an axis.
    #[error("{path}: byte offset {offset}: expected the box maximum along {axis} above the minimum {min}, found {max}")]
    EmptyBox {
        /// The file.
        path: PathBuf,
        /// Where the maximum is stored.
        offset: u64,
        /// The axis.
        axis: char,
        /// The box minimum along it.
        min: f64,
        /// The box maximum along it.
        max: f64,
    },
    /// Different spacings along the axes.
    #[error(
        "{path}: expected cubic cells (equal spacing on every axis), found spacings {spacing:?}"
    )]
    NonCubic {
        /// The file.
        path: PathBuf,
        /// The spacing along x, y and z.
        spacing: [f64; 3],
    },
    /// A distance value that is NaN, infinite or outside the f32 range.
    #[error("{path}: byte offset {offset}: expected a finite distance value, found {found}")]
    NonFiniteValue {
        /// The file.
        path: PathBuf,
        /// Where the value is stored.
        offset: u64,
        /// The value found.
        found: f64,
    },
    /// Bytes after the last value.
    #[error("{path}: byte offset {offset}: expected the end of the file after {nodes} values, found {extra} more bytes")]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// Where the values end.
        offset: u64,
        /// Number of grid nodes.
        nodes: u64,
        /// Bytes past the last value.
        extra: u64,
    },
    /// A field with a non-finite box corner or node value, which the writer refuses.
    #[error("{path}: cannot write a non-finite {what} {found} (index {index})")]
    NonFiniteField {
        /// The file.
        path: PathBuf,
        /// "node value" or "box coordinate".
        what: &'static str,
        /// The node index (x fastest) or the coordinate index (bmin x, y, z, bmax x, y, z).
        index: usize,
        /// The value found.
        found: f64,
    },
    /// A field the format cannot hold, or a path with no file name.
    #[error("{path}: cannot write this field: {reason}")]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

const AXES: [char; 3] = ['x', 'y', 'z'];

/// Reads a `.dist` file.
pub fn read_dist(path: &Path) -> Result<SignedDistanceField, DistError> {
    let bytes = std::fs::read(path).map_err(|source| DistError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_dist(&bytes, path)
}

/// Parses the bytes of a `.dist` file (`path` names it in errors).
pub fn parse_dist(bytes: &[u8], path: &Path) -> Result<SignedDistanceField, DistError> {
    let mut c = ByteReader::new(bytes);
    let header = read_header(&mut c, path)?;
    check_value_bytes(bytes.len(), &header, path)?;
    let values = read_values(&mut c, &header, path)?;
    SignedDistanceField::from_values(
        Point3::from(header.bmin),
        header.spacing[0],
        header.res,
        values,
    )
    .map_err(|e| DistError::Unwritable {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// The error for a read past the end of the file.
fn truncated(path: &Path, t: Truncated) -> DistError {
    // A value past the end: the offset is the file's length, the value's own offset
    // goes into the expectation.
    DistError::Truncated {
        path: path.to_path_buf(),
        offset: t.offset + t.available as u64,
        expected: format!(
            "{} ({} bytes at byte offset {})",
            t.what, t.needed, t.offset
        ),
    }
}

/// The checked header of a `.dist` file.
struct DistHeader {
    /// True when the values are f64 (negative x resolution), else they are f32.
    double: bool,
    /// Cells per axis.
    res: [usize; 3],
    /// The box minimum corner.
    bmin: [f64; 3],
    /// Cell spacing per axis (equal up to rounding).
    spacing: [f64; 3],
}

impl DistHeader {
    /// Number of grid nodes.
    fn nodes(&self) -> u64 {
        self.res.iter().map(|&r| r as u64 + 1).product()
    }

    /// Bytes per stored value.
    fn value_size(&self) -> u64 {
        if self.double {
            8
        } else {
            4
        }
    }
}

/// Reads and checks the header: resolutions, box corners and cell spacing.
fn read_header(c: &mut ByteReader, path: &Path) -> Result<DistHeader, DistError> {
    let (double, res) = read_resolutions(c, path)?;
    let [bmin, bmax] = read_box(c, path)?;
    let spacing = cubic_spacing(&bmin, &bmax, &res, path)?;
    Ok(DistHeader {
        double,
        res,
        bmin,
        spacing,
    })
}

/// Reads the three resolutions: whether the values are f64, and the cells per axis.
fn read_resolutions(c: &mut ByteReader, path: &Path) -> Result<(bool, [usize; 3]), DistError> {
    let mut resolution = |what| c.i32(what).map(i64::from).map_err(|t| truncated(path, t));
    let raw = [
        resolution("the x resolution (int32)")?,
        resolution("the y resolution (int32)")?,
        resolution("the z resolution (int32)")?,
    ];
    if raw[1] < 0 {
        return Err(DistError::ClosestPointField {
            path: path.to_path_buf(),
            found: raw[1],
        });
    }
    let double = raw[0] < 0;
    let mut res = [0usize; 3];
    for a in 0..3 {
        let r = if a == 0 { raw[0].abs() } else { raw[a] };
        if !(1..=MAX_DIST_RESOLUTION).contains(&r) {
            return Err(DistError::BadResolution {
                path: path.to_path_buf(),
                offset: 4 * a as u64,
                axis: AXES[a],
                found: raw[a],
            });
        }
        res[a] = r as usize;
    }
    Ok((double, res))
}

/// Reads the box corners `[bmin, bmax]`, each finite, with the maximum above the minimum.
fn read_box(c: &mut ByteReader, path: &Path) -> Result<[[f64; 3]; 2], DistError> {
    let mut corner = [[0.0; 3]; 2];
    for (m, name) in ["bmin", "bmax"].iter().enumerate() {
        for a in 0..3 {
            let offset = c.offset() as u64;
            let v = c
                .f64(&format!("{name} {} (f64)", AXES[a]))
                .map_err(|t| truncated(path, t))?;
            if !v.is_finite() {
                return Err(DistError::NonFiniteBox {
                    path: path.to_path_buf(),
                    offset,
                    found: v,
                });
            }
            corner[m][a] = v;
        }
    }
    let [bmin, bmax] = corner;
    for a in 0..3 {
        if bmax[a] <= bmin[a] {
            return Err(DistError::EmptyBox {
                path: path.to_path_buf(),
                offset: 36 + 8 * a as u64,
                axis: AXES[a],
                min: bmin[a],
                max: bmax[a],
            });
        }
    }
    Ok(corner)
}

/// The cell spacing per axis, which must be the same on every axis.
fn cubic_spacing(
    bmin: &[f64; 3],
    bmax: &[f64; 3],
    res: &[usize; 3],
    path: &Path,
) -> Result<[f64; 3], DistError> {
    let spacing: [f64; 3] = std::array::from_fn(|a| (bmax[a] - bmin[a]) / res[a] as f64);
    // Vega's cubic boxes give equal spacings up to rounding of the corners.
    if spacing
        .iter()
        .any(|s| (s - spacing[0]).abs() > 1e-6 * spacing[0])
    {
        return Err(DistError::NonCubic {
            path: path.to_path_buf(),
            spacing,
        });
    }
    Ok(spacing)
}

/// Checks that the `len` bytes of the file hold exactly the header's values after it.
fn check_value_bytes(len: usize, header: &DistHeader, path: &Path) -> Result<(), DistError> {
    let nodes = header.nodes();
    let need = nodes * header.value_size();
    let have = (len - HEADER_BYTES) as u64;
    if have < need {
        return Err(DistError::Truncated {
            path: path.to_path_buf(),
            offset: len as u64,
            expected: format!(
                "{nodes} {} values ({need} bytes from byte offset {HEADER_BYTES}), found {have} bytes",
                if header.double { "f64" } else { "f32" }
            ),
        });
    }
    if have > need {
        return Err(DistError::TrailingBytes {
            path: path.to_path_buf(),
            offset: HEADER_BYTES as u64 + need,
            nodes,
            extra: have - need,
        });
    }
    Ok(())
}

/// Reads the node values, each finite and within the f32 range.
fn read_values(
    c: &mut ByteReader,
    header: &DistHeader,
    path: &Path,
) -> Result<Vec<f32>, DistError> {
    let nodes = header.nodes();
    let size = header.value_size();
    let double = header.double;
    let mut values = Vec::with_capacity(nodes as usize);
    for i in 0..nodes as usize {
        // The size check in `check_value_bytes` guarantees every value is there.
        let v = if double {
            c.f64("a distance value (f64)")
        } else {
            c.f32("a distance value (f32)").map(f64::from)
        }
        .map_err(|t| truncated(path, t))?;
        if !v.is_finite() || (double && v.abs() > f32::MAX as f64) {
            return Err(DistError::NonFiniteValue {
                path: path.to_path_buf(),
                offset: HEADER_BYTES as u64 + i as u64 * size,
                found: v,
            });
        }
        values.push(v as f32);
    }
    Ok(values)
}

/// The first non-finite box coordinate (bmin x, y, z, bmax x, y, z) or node value of
/// `field`: what, index and value.
fn first_non_finite(field: &SignedDistanceField) -> Option<(&'static str, usize, f64)> {
    let bmax = field.node_point(field.cells[0], field.cells[1], field.cells[2]);
    if let Some((i, c)) = field
        .origin
        .iter()
        .chain(bmax.iter())
        .enumerate()
        .find(|(_, c)| !c.is_finite())
    {
        return Some(("box coordinate", i, *c));
    }
    field
        .values
        .iter()
        .position(|v| !v.is_finite())
        .map(|i| ("node value", i, field.values[i] as f64))
}

/// The bytes of `field` as a `.dist` file with f32 values; refuses non-finite box
/// corners and node values (naming the index).
pub(crate) fn encode_dist(field: &SignedDistanceField) -> Result<Vec<u8>, String> {
    if let Some((what, index, found)) = first_non_finite(field) {
        return Err(format!("non-finite {what} {found} (index {index})"));
    }
    let mut out = Vec::with_capacity(HEADER_BYTES + 4 * field.values.len());
    for &c in &field.cells {
        let c = i32::try_from(c)
            .ok()
            .filter(|&c| c >= 1 && (c as i64) <= MAX_DIST_RESOLUTION)
            .ok_or_else(|| format!("resolution {c} does not fit the format"))?;
        out.extend_from_slice(&c.to_le_bytes());
    }
    let bmax = field.node_point(field.cells[0], field.cells[1], field.cells[2]);
    for v in field.origin.iter().chain(bmax.iter()) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let nodes: usize = field.cells.iter().map(|c| c + 1).product();
    if field.values.len() != nodes {
        return Err(format!(
            "{} values for {nodes} grid nodes",
            field.values.len()
        ));
    }
    for v in &field.values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(out)
}

/// Writes `field` to `path` (f32 values), atomically: to a temporary file in the same
/// directory, then renamed over `path`. A field with a non-finite box corner or node
/// value is refused ([`DistError::NonFiniteField`], naming the index) and nothing is
/// written.
pub fn write_dist(path: &Path, field: &SignedDistanceField) -> Result<(), DistError> {
    if let Some((what, index, found)) = first_non_finite(field) {
        return Err(DistError::NonFiniteField {
            path: path.to_path_buf(),
            what,
            index,
            found,
        });
    }
    let bytes = encode_dist(field).map_err(|reason| DistError::Unwritable {
        path: path.to_path_buf(),
        reason,
    })?;
    if path.file_name().is_none() {
        return Err(DistError::Unwritable {
            path: path.to_path_buf(),
            reason: "the path has no file name".to_string(),
        });
    }
    write_bytes_atomic(path, &bytes).map_err(|source| DistError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_field() -> SignedDistanceField {
        let cells = [2, 3, 4];
        let values: Vec<f32> = (0..3 * 4 * 5).map(|i| i as f32 * 0.25 - 3.0).collect();
        SignedDistanceField::from_values(Point3::new(-1.0, 0.5, 2.0), 0.5, cells, values).unwrap()
    }

    #[test]
    fn round_trip_keeps_everything() {
        let f = small_field();
        let bytes = encode_dist(&f).unwrap();
        assert_eq!(bytes.len(), HEADER_BYTES + 4 * 60);
        let g = parse_dist(&bytes, Path::new("x.dist")).unwrap();
        assert_eq!(g.cells, f.cells);
        assert_eq!(g.values, f.values);
        assert_eq!(g.boundary_min, f.boundary_min);
        assert!((g.origin - f.origin).norm() < 1e-15);
        // bmax - bmin over the resolution: exact here (binary fractions).
        assert_eq!(g.spacing, f.spacing);
    }

    #[test]
    fn every_truncation_is_an_error_naming_an_offset() {
        let bytes = encode_dist(&small_field()).unwrap();
        for len in 0..bytes.len() {
            let e = parse_dist(&bytes[..len], Path::new("cut.dist")).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("cut.dist: byte offset"), "{len}: {msg}");
            assert!(matches!(e, DistError::Truncated { .. }), "{len}: {msg}");
        }
        let mut long = bytes.clone();
        long.push(0);
        let e = parse_dist(&long, Path::new("long.dist")).unwrap_err();
        assert!(
            matches!(e, DistError::TrailingBytes { extra: 1, .. }),
            "{e}"
        );
    }

    #[test]
    fn bad_headers_are_refused() {
        let good = encode_dist(&small_field()).unwrap();
        let with = |at: usize, b: &[u8]| {
            let mut v = good.clone();
            v[at..at + b.len()].copy_from_slice(b);
            parse_dist(&v, Path::new("bad.dist")).unwrap_err()
        };
        assert!(matches!(
            with(4, &(-3i32).to_le_bytes()),
            DistError::ClosestPointField { .. }
        ));
        assert!(matches!(
            with(8, &0i32.to_le_bytes()),
            DistError::BadResolution { axis: 'z', .. }
        ));
        assert!(matches!(
            with(0, &i32::MAX.to_le_bytes()),
            DistError::BadResolution { axis: 'x', .. }
        ));
        assert!(matches!(
            with(20, &f64::NAN.to_le_bytes()),
            DistError::NonFiniteBox { offset: 20, .. }
        ));
        // bmax z (offset 52) below bmin z.
        assert!(matches!(
            with(52, &0.0f64.to_le_bytes()),
            DistError::EmptyBox { axis: 'z', .. }
        ));
        assert!(matches!(
            with(60 + 4 * 7, &f32::NAN.to_le_bytes()),
            DistError::NonFiniteValue { offset: 88, .. }
        ));
        // bmax x moved: spacings differ.
        assert!(matches!(
            with(36, &1.0f64.to_le_bytes()),
            DistError::NonCubic { .. }
        ));
    }

    #[test]
    fn f64_fields_are_read() {
        let f = small_field();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(-2i32).to_le_bytes());
        bytes.extend_from_slice(&3i32.to_le_bytes());
        bytes.extend_from_slice(&4i32.to_le_bytes());
        let bmax = f.node_point(2, 3, 4);
        for v in f.origin.iter().chain(bmax.iter()) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for v in &f.values {
            bytes.extend_from_slice(&(*v as f64).to_le_bytes());
        }
        let g = parse_dist(&bytes, Path::new("d.dist")).unwrap();
        assert_eq!(g.values, f.values);
        assert_eq!(g.cells, [2, 3, 4]);
        // And truncated f64 data is reported as such.
        let e = parse_dist(&bytes[..bytes.len() - 3], Path::new("d.dist")).unwrap_err();
        assert!(e.to_string().contains("f64 values"), "{e}");
    }

    #[test]
    fn non_finite_values_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.dist");
        let mut f = small_field();
        // The public fields can be set after construction.
        f.values[17] = f32::INFINITY;
        let e = write_dist(&path, &f).unwrap_err();
        assert!(
            matches!(
                e,
                DistError::NonFiniteField {
                    what: "node value",
                    index: 17,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("index 17"), "{e}");
        assert!(!path.exists());
        assert!(encode_dist(&f).unwrap_err().contains("index 17"));
        let mut f = small_field();
        f.values[0] = f32::NAN;
        assert!(matches!(
            write_dist(&path, &f).unwrap_err(),
            DistError::NonFiniteField { index: 0, .. }
        ));
        let mut f = small_field();
        f.origin.y = f64::NAN;
        assert!(matches!(
            write_dist(&path, &f).unwrap_err(),
            DistError::NonFiniteField {
                what: "box coordinate",
                index: 1,
                ..
            }
        ));
        assert!(!path.exists());
    }

    #[test]
    fn write_is_atomic_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.dist");
        write_dist(&path, &small_field()).unwrap();
        assert_eq!(read_dist(&path).unwrap(), small_field());
        // Only the target remains (the temporary file was renamed).
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let e = read_dist(&dir.path().join("missing.dist")).unwrap_err();
        assert!(e.to_string().contains("missing.dist"), "{e}");
    }
}
