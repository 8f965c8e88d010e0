//! Vega FEM's binary interchange formats, read and written so that bases and reduced
//! polynomials move between this project and Vega:
//! - matrixIO (`.U`, `.URendering.float`): int32 rows, int32 cols, then the entries in
//!   column-major order as f64 (or f32 for `.float` files), little-endian;
//! - `.cub`, the cubic reduced-force polynomial: int32 r, r, r(r+1)/2, r(r+1)(r+2)/6, then
//!   the linear (r x r), quadratic (r x r(r+1)/2) and cubic (r x r(r+1)(r+2)/6) coefficient
//!   blocks as f64, each output-index-major: the coefficient of output l and monomial m
//!   at `l * n_monomials + m` (checked against Vega's beam3 fixture). Monomials are ordered i <= j (j fastest) and i <= j <= k
//!   (k fastest); each coefficient already sums all index orders.
//!
//! Every reader returns a [`VegaError`] naming the file, the byte offset and what was
//! expected. Writers replace their file atomically.

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use super::polynomial::{num_cubic, num_quadratic, CubicPolynomial};
use crate::io::{write_bytes_atomic, ByteReader, Truncated};

/// Errors reading or writing Vega binary files.
#[derive(Debug, thiserror::Error)]
pub enum VegaError {
    /// The file could not be read or written.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid file of the format.
    #[error("{path}: byte offset {offset}: expected {expected}, found {found}")]
    Format {
        /// The file.
        path: PathBuf,
        /// Where the problem starts.
        offset: u64,
        /// What the format has there.
        expected: String,
        /// What the file has there.
        found: String,
    },
}

/// Scalar type of a matrixIO file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// 8-byte floats (`.U`).
    F64,
    /// 4-byte floats (`.float`).
    F32,
}

impl Precision {
    fn size(self) -> usize {
        match self {
            Precision::F64 => 8,
            Precision::F32 => 4,
        }
    }
}

/// A [`ByteReader`] over one file, whose errors are [`VegaError`]s naming it.
struct Reader<'a> {
    path: &'a Path,
    bytes: ByteReader<'a>,
}

impl<'a> Reader<'a> {
    fn new(path: &'a Path, bytes: &'a [u8]) -> Self {
        Reader {
            path,
            bytes: ByteReader::new(bytes),
        }
    }

    fn format(&self, offset: usize, expected: String, found: String) -> VegaError {
        VegaError::Format {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            expected,
            found,
        }
    }

    fn truncated(&self, t: Truncated) -> VegaError {
        VegaError::Format {
            path: self.path.to_path_buf(),
            offset: t.offset,
            expected: format!("{} more bytes for {}", t.needed, t.what),
            found: format!("{} bytes (file truncated)", t.available),
        }
    }

    /// A non-negative int32 size.
    fn dim(&mut self, what: &str) -> Result<usize, VegaError> {
        let at = self.bytes.offset();
        let v = self.bytes.i32(what).map_err(|t| self.truncated(t))?;
        if v < 0 {
            return Err(self.format(at, format!("a non-negative {what}"), v.to_string()));
        }
        Ok(v as usize)
    }

    /// `n` finite floats of `precision`, as f64.
    fn values(
        &mut self,
        n: usize,
        precision: Precision,
        what: &str,
    ) -> Result<Vec<f64>, VegaError> {
        let size = precision.size();
        let start = self.bytes.offset();
        let bytes = n.checked_mul(size).ok_or_else(|| {
            self.format(
                start,
                format!("a plausible size for {what}"),
                format!("{n} entries"),
            )
        })?;
        let chunk = self
            .bytes
            .take(bytes, what)
            .map_err(|t| self.truncated(t))?;
        let out: Vec<f64> = match precision {
            Precision::F64 => chunk
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            Precision::F32 => chunk
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as f64)
                .collect(),
        };
        if let Some(i) = out.iter().position(|v| !v.is_finite()) {
            return Err(self.format(
                start + i * size,
                format!("a finite number in {what}"),
                out[i].to_string(),
            ));
        }
        Ok(out)
    }

    fn finish(&self) -> Result<(), VegaError> {
        match self.bytes.remaining() {
            0 => Ok(()),
            extra => Err(self.format(
                self.bytes.offset(),
                "end of file".into(),
                format!("{extra} trailing bytes"),
            )),
        }
    }
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, VegaError> {
    std::fs::read(path).map_err(|source| VegaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `bytes` to `path` atomically.
fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), VegaError> {
    write_bytes_atomic(path, bytes).map_err(|source| VegaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a Vega matrixIO file (`.U` as f64; `.float` files as f32).
pub fn read_matrix(path: &Path, precision: Precision) -> Result<DMatrix<f64>, VegaError> {
    parse_matrix(&read_bytes(path)?, path, precision)
}

/// Parses the bytes of a Vega matrixIO file (`path` names it in errors).
pub fn parse_matrix(
    bytes: &[u8],
    path: &Path,
    precision: Precision,
) -> Result<DMatrix<f64>, VegaError> {
    let mut r = Reader::new(path, bytes);
    let rows = r.dim("row count")?;
    let cols = r.dim("column count")?;
    let data = r.values(rows.saturating_mul(cols), precision, "matrix entries")?;
    r.finish()?;
    Ok(DMatrix::from_vec(rows, cols, data))
}

/// Writes a Vega matrixIO file.
pub fn write_matrix(path: &Path, m: &DMatrix<f64>, precision: Precision) -> Result<(), VegaError> {
    let mut out = Vec::with_capacity(8 + m.len() * 8);
    out.extend_from_slice(&(m.nrows() as i32).to_le_bytes());
    out.extend_from_slice(&(m.ncols() as i32).to_le_bytes());
    for v in m.as_slice() {
        match precision {
            Precision::F64 => out.extend_from_slice(&v.to_le_bytes()),
            Precision::F32 => out.extend_from_slice(&(*v as f32).to_le_bytes()),
        }
    }
    write_bytes(path, &out)
}

/// Reads a Vega `.cub` file.
pub fn read_cub(path: &Path) -> Result<CubicPolynomial, VegaError> {
    parse_cub(&read_bytes(path)?, path)
}

/// Parses the bytes of a Vega `.cub` file (`path` names it in errors).
pub fn parse_cub(bytes: &[u8], path: &Path) -> Result<CubicPolynomial, VegaError> {
    let mut rd = Reader::new(path, bytes);
    let r = rd.dim("r")?;
    // Before any size arithmetic (r(r+1)(r+2) overflows for large r): the coefficients
    // of r take 8 r (r + r(r+1)/2 + r(r+1)(r+2)/6) bytes, which the file must hold.
    let needed = cub_coefficient_bytes(r);
    let available = rd.bytes.remaining().saturating_sub(12) as u128;
    if needed > available {
        return Err(rd.format(
            0,
            format!("{needed} bytes of coefficients for r = {r}"),
            format!("{available} bytes"),
        ));
    }
    for (what, expected) in [
        ("r (repeated)", r),
        ("r(r+1)/2", num_quadratic(r)),
        ("r(r+1)(r+2)/6", num_cubic(r)),
    ] {
        let at = rd.bytes.offset();
        let v = rd.dim(what)?;
        if v != expected {
            return Err(rd.format(at, format!("{what} = {expected}"), v.to_string()));
        }
    }
    let linear = rd.values(r * r, Precision::F64, "linear coefficients")?;
    let quadratic = rd.values(
        r * num_quadratic(r),
        Precision::F64,
        "quadratic coefficients",
    )?;
    let cubic = rd.values(r * num_cubic(r), Precision::F64, "cubic coefficients")?;
    rd.finish()?;
    Ok(CubicPolynomial {
        r,
        linear,
        quadratic,
        cubic,
    })
}

/// The size of the coefficients of a `.cub` file of basis size `r`, in bytes (exact,
/// without overflow for any `r` up to `i32::MAX`).
fn cub_coefficient_bytes(r: usize) -> u128 {
    let r = r as u128;
    8 * r * (r + r * (r + 1) / 2 + r * (r + 1) * (r + 2) / 6)
}

/// Writes a Vega `.cub` file.
pub fn write_cub(path: &Path, cub: &CubicPolynomial) -> Result<(), VegaError> {
    let r = cub.r;
    let mut out = Vec::new();
    for v in [r, r, num_quadratic(r), num_cubic(r)] {
        out.extend_from_slice(&(v as i32).to_le_bytes());
    }
    for v in cub.linear.iter().chain(&cub.quadratic).chain(&cub.cubic) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    write_bytes(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_r_is_an_error_not_an_overflow() {
        for r in [i32::MAX, 1 << 20, 3] {
            let mut bytes = Vec::new();
            for v in [r, r, 0, 0] {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            let e = parse_cub(&bytes, Path::new("big.cub")).unwrap_err();
            let (offset, expected, found) = format_error(e);
            assert_eq!(offset, 0);
            assert!(expected.contains(&format!("for r = {r}")), "{expected}");
            assert_eq!(found, "0 bytes");
        }
        assert_eq!(cub_coefficient_bytes(2), 8 * 2 * (2 + 3 + 4));
    }

    fn format_error(e: VegaError) -> (u64, String, String) {
        match e {
            VegaError::Format {
                offset,
                expected,
                found,
                ..
            } => (offset, expected, found),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn matrix_round_trip_and_typed_errors_with_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.U");
        let m = DMatrix::from_fn(3, 2, |i, j| (i + 10 * j) as f64 + 0.25);
        write_matrix(&path, &m, Precision::F64).unwrap();
        assert_eq!(read_matrix(&path, Precision::F64).unwrap(), m);
        let bytes = std::fs::read(&path).unwrap();

        // Truncated inside the entries: the offset is where they start.
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let (offset, expected, found) =
            format_error(read_matrix(&path, Precision::F64).unwrap_err());
        assert_eq!(offset, 8);
        assert_eq!(expected, "48 more bytes for matrix entries");
        assert_eq!(found, "45 bytes (file truncated)");

        // Truncated in the header.
        std::fs::write(&path, &bytes[..6]).unwrap();
        let (offset, expected, _) = format_error(read_matrix(&path, Precision::F64).unwrap_err());
        assert_eq!(
            (offset, expected.as_str()),
            (4, "4 more bytes for column count")
        );

        // Trailing bytes, a negative size and a non-finite entry.
        let mut extra = bytes.clone();
        extra.push(0);
        std::fs::write(&path, &extra).unwrap();
        let (offset, _, found) = format_error(read_matrix(&path, Precision::F64).unwrap_err());
        assert_eq!((offset, found.as_str()), (56, "1 trailing bytes"));
        let mut negative = bytes.clone();
        negative[4..8].copy_from_slice(&(-2i32).to_le_bytes());
        std::fs::write(&path, &negative).unwrap();
        let (offset, expected, _) = format_error(read_matrix(&path, Precision::F64).unwrap_err());
        assert_eq!(
            (offset, expected.as_str()),
            (4, "a non-negative column count")
        );
        let mut nan = bytes;
        nan[16..24].copy_from_slice(&f64::NAN.to_le_bytes());
        std::fs::write(&path, &nan).unwrap();
        let (offset, expected, _) = format_error(read_matrix(&path, Precision::F64).unwrap_err());
        assert_eq!(
            (offset, expected.as_str()),
            (16, "a finite number in matrix entries")
        );
    }

    #[test]
    fn cub_round_trip_and_header_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.cub");
        let r = 2;
        let cub = CubicPolynomial {
            r,
            linear: (0..r * r).map(|i| i as f64).collect(),
            quadratic: (0..r * num_quadratic(r)).map(|i| 0.5 * i as f64).collect(),
            cubic: (0..r * num_cubic(r)).map(|i| -(i as f64)).collect(),
        };
        write_cub(&path, &cub).unwrap();
        assert_eq!(read_cub(&path).unwrap(), cub);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8..12].copy_from_slice(&7i32.to_le_bytes());
        std::fs::write(&path, &bytes).unwrap();
        let (offset, expected, found) = format_error(read_cub(&path).unwrap_err());
        assert_eq!(
            (offset, expected.as_str(), found.as_str()),
            (8, "r(r+1)/2 = 3", "7")
        );
    }
}
