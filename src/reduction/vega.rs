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
//! expected.

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use super::polynomial::{num_cubic, num_quadratic, CubicPolynomial};

/// Errors reading Vega binary files.
#[derive(Debug, thiserror::Error)]
pub enum VegaError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: byte offset {offset}: expected {expected}, found {found}")]
    Format {
        path: PathBuf,
        offset: u64,
        expected: String,
        found: String,
    },
}

/// Scalar type of a matrixIO file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F64,
    F32,
}

struct Reader<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn need(&self, n: usize, what: &str) -> Result<(), VegaError> {
        if self.bytes.len() - self.pos < n {
            return Err(VegaError::Format {
                path: self.path.to_path_buf(),
                offset: self.pos as u64,
                expected: format!("{n} more bytes for {what}"),
                found: format!("{} bytes (file truncated)", self.bytes.len() - self.pos),
            });
        }
        Ok(())
    }

    fn i32(&mut self, what: &str) -> Result<i32, VegaError> {
        self.need(4, what)?;
        let v = i32::from_le_bytes(
            self.bytes[self.pos..self.pos + 4]
                .try_into()
                .unwrap_or([0; 4]),
        );
        self.pos += 4;
        Ok(v)
    }

    fn dim(&mut self, what: &str) -> Result<usize, VegaError> {
        let at = self.pos;
        let v = self.i32(what)?;
        if v < 0 {
            return Err(VegaError::Format {
                path: self.path.to_path_buf(),
                offset: at as u64,
                expected: format!("a non-negative {what}"),
                found: v.to_string(),
            });
        }
        Ok(v as usize)
    }

    fn values(
        &mut self,
        n: usize,
        precision: Precision,
        what: &str,
    ) -> Result<Vec<f64>, VegaError> {
        let size = match precision {
            Precision::F64 => 8,
            Precision::F32 => 4,
        };
        let bytes = n.checked_mul(size).ok_or_else(|| VegaError::Format {
            path: self.path.to_path_buf(),
            offset: self.pos as u64,
            expected: format!("a plausible size for {what}"),
            found: format!("{n} entries"),
        })?;
        self.need(bytes, what)?;
        let start = self.pos;
        let chunk = &self.bytes[start..start + bytes];
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
            return Err(VegaError::Format {
                path: self.path.to_path_buf(),
                offset: (start + i * size) as u64,
                expected: format!("a finite number in {what}"),
                found: out[i].to_string(),
            });
        }
        self.pos += bytes;
        Ok(out)
    }

    fn finish(&self) -> Result<(), VegaError> {
        if self.pos != self.bytes.len() {
            return Err(VegaError::Format {
                path: self.path.to_path_buf(),
                offset: self.pos as u64,
                expected: "end of file".into(),
                found: format!("{} trailing bytes", self.bytes.len() - self.pos),
            });
        }
        Ok(())
    }
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, VegaError> {
    std::fs::read(path).map_err(|source| VegaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a Vega matrixIO file (`.U` as f64; `.float` files as f32).
pub fn read_matrix(path: &Path, precision: Precision) -> Result<DMatrix<f64>, VegaError> {
    let bytes = read_bytes(path)?;
    let mut r = Reader {
        path,
        bytes: &bytes,
        pos: 0,
    };
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
    std::fs::write(path, out).map_err(|source| VegaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a Vega `.cub` file.
pub fn read_cub(path: &Path) -> Result<CubicPolynomial, VegaError> {
    let bytes = read_bytes(path)?;
    let mut rd = Reader {
        path,
        bytes: &bytes,
        pos: 0,
    };
    let r = rd.dim("r")?;
    for (what, expected) in [
        ("r (repeated)", r),
        ("r(r+1)/2", num_quadratic(r)),
        ("r(r+1)(r+2)/6", num_cubic(r)),
    ] {
        let at = rd.pos;
        let v = rd.dim(what)?;
        if v != expected {
            return Err(VegaError::Format {
                path: path.to_path_buf(),
                offset: at as u64,
                expected: format!("{what} = {expected}"),
                found: v.to_string(),
            });
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
    std::fs::write(path, out).map_err(|source| VegaError::Io {
        path: path.to_path_buf(),
        source,
    })
}
