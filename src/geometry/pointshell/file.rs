//! The binary pointshell file (`.pshell`), little endian throughout:
//!
//! ```text
//! offset       size  field
//! 0            8     magic "HPSHELL1"
//! 8            4     u32 version = 1
//! 12           4     u32 level count L
//! 16           8     u64 point count N
//! 24           8     f64 level-set offset
//! 32           8 L   u64 level end offsets level_offsets[1..=L] (the last = N)
//! 32 + 8 L     8 L   f64 radii[0..L]
//! 32 + 16 L    48 N  per point, in level order: f64 x y z, then f64 nx ny nz (unit,
//!                    inward)
//! ```
//!
//! so a file holds exactly 32 + 16 L + 48 N bytes. Files are written atomically
//! ([`crate::io::write_bytes_atomic`]) and read through [`crate::io::ByteReader`];
//! reading checks every invariant of [`Pointshell::validate`] and names the file and the
//! byte offset of what is wrong.

use std::path::{Path, PathBuf};

use nalgebra::{Point3, Vector3};

use super::{is_unit, Pointshell};
use crate::io::{write_bytes_atomic, ByteReader, Truncated};

/// Errors reading or writing a pointshell file, naming the file and the byte offset.
#[derive(Debug, thiserror::Error)]
pub enum PointshellFileError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file does not start with "HPSHELL1".
    #[error("{path}: not a pointshell file (bad magic bytes at offset 0)")]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// A format version this reader does not know.
    #[error("{path}: byte offset 8: unsupported version {version} (this reader knows 1)")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: u32,
    },
    /// The file ends before its header says it should.
    #[error("{path}: byte offset {offset}: file ends early: expected {expected}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where the missing value starts (or the file's length).
        offset: u64,
        /// What was expected there.
        expected: String,
    },
    /// A value that breaks an invariant.
    #[error("{path}: byte offset {offset}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where the value starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
}

const MAGIC: &[u8; 8] = b"HPSHELL1";

impl Pointshell {
    /// Writes the binary pointshell format (see the module documentation), atomically:
    /// a reader never sees a half-written file.
    pub fn write(&self, path: &Path) -> Result<(), PointshellFileError> {
        write_bytes_atomic(path, &self.encode()).map_err(|source| PointshellFileError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The bytes of the binary pointshell format.
    fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(32 + 16 * self.num_levels() + 48 * self.len());
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&1u32.to_le_bytes());
        buf.extend_from_slice(&(self.num_levels() as u32).to_le_bytes());
        buf.extend_from_slice(&(self.len() as u64).to_le_bytes());
        buf.extend_from_slice(&self.offset.to_le_bytes());
        for &o in self.level_offsets.iter().skip(1) {
            buf.extend_from_slice(&(o as u64).to_le_bytes());
        }
        for &r in &self.radii {
            buf.extend_from_slice(&r.to_le_bytes());
        }
        for (p, n) in self.points.iter().zip(&self.normals) {
            for v in p.iter().chain(n.iter()) {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        buf
    }

    /// Reads a file written by [`Pointshell::write`], checking every invariant of
    /// [`Pointshell::validate`]; errors name the file and the byte offset.
    pub fn read(path: &Path) -> Result<Pointshell, PointshellFileError> {
        let bytes = std::fs::read(path).map_err(|source| PointshellFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&bytes, path)
    }

    /// Parses the bytes of a pointshell file (`path` names it in errors), with the
    /// checks of [`Pointshell::read`].
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Pointshell, PointshellFileError> {
        parse_pointshell(bytes, path)
    }
}

fn parse_pointshell(bytes: &[u8], path: &Path) -> Result<Pointshell, PointshellFileError> {
    let mut c = ByteReader::new(bytes);
    let header = read_header(&mut c, path)?;
    check_header(&header, bytes.len(), path)?;
    let (levels, count) = (header.levels, header.count as usize);
    let level_offsets = read_level_offsets(&mut c, path, levels, count)?;
    let radii = read_radii(&mut c, path, levels)?;
    let (points, normals) = read_points(&mut c, path, count)?;
    Ok(Pointshell {
        points,
        normals,
        level_offsets,
        radii,
        offset: header.offset,
    })
}

/// The error for a value the file ends before.
fn truncated_error(path: &Path, t: Truncated) -> PointshellFileError {
    PointshellFileError::Truncated {
        path: path.to_path_buf(),
        offset: t.offset,
        expected: t.what,
    }
}

/// The error for a value at byte `offset` that breaks an invariant.
fn invalid_error(path: &Path, offset: usize, reason: String) -> PointshellFileError {
    PointshellFileError::Invalid {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    }
}

/// The fixed-size header of a pointshell file and where its checked fields start.
struct Header {
    /// The level count L.
    levels: usize,
    /// The point count N.
    count: u64,
    /// The byte offset of the point count.
    count_at: usize,
    /// The level-set offset.
    offset: f64,
    /// The byte offset of the level-set offset.
    offset_at: usize,
}

/// Reads the magic bytes, the version, the counts and the offset.
fn read_header(c: &mut ByteReader, path: &Path) -> Result<Header, PointshellFileError> {
    let truncated = |t: Truncated| truncated_error(path, t);
    if c.take(8, "the magic bytes").map_err(truncated)? != MAGIC {
        return Err(PointshellFileError::BadMagic {
            path: path.to_path_buf(),
        });
    }
    let version = c.u32("the version").map_err(truncated)?;
    if version != 1 {
        return Err(PointshellFileError::Version {
            path: path.to_path_buf(),
            version,
        });
    }
    let levels = c.u32("the level count").map_err(truncated)? as usize;
    let count_at = c.offset();
    let count = c.u64("the point count").map_err(truncated)?;
    let offset_at = c.offset();
    let offset = c.f64("the offset").map_err(truncated)?;
    Ok(Header {
        levels,
        count,
        count_at,
        offset,
        offset_at,
    })
}

/// Checks the header's level count and offset, and that the file's `len` bytes are
/// exactly what its counts need.
fn check_header(h: &Header, len: usize, path: &Path) -> Result<(), PointshellFileError> {
    let (levels, count, offset) = (h.levels, h.count, h.offset);
    if levels == 0 {
        return Err(invalid_error(path, 12, "zero levels".into()));
    }
    let expected = 32u64
        .checked_add(16 * levels as u64)
        .and_then(|h| count.checked_mul(48).and_then(|b| b.checked_add(h)));
    match expected {
        Some(e) if e == len as u64 => {}
        Some(e) if e > len as u64 => {
            return Err(PointshellFileError::Truncated {
                path: path.to_path_buf(),
                offset: len as u64,
                expected: format!("{e} bytes for {levels} levels and {count} points, found {len}"),
            })
        }
        _ => {
            return Err(invalid_error(
                path,
                h.count_at,
                format!("{len} bytes do not match {levels} levels and {count} points"),
            ))
        }
    }
    if !(offset.is_finite() && offset >= 0.0) {
        return Err(invalid_error(
            path,
            h.offset_at,
            format!("offset {offset} is not >= 0 and finite"),
        ));
    }
    Ok(())
}

/// Reads the level end offsets (with the leading 0), which must increase to `count`.
fn read_level_offsets(
    c: &mut ByteReader,
    path: &Path,
    levels: usize,
    count: usize,
) -> Result<Vec<usize>, PointshellFileError> {
    let mut level_offsets = vec![0usize];
    for i in 0..levels {
        let at = c.offset();
        let o = c
            .u64("a level offset")
            .map_err(|t| truncated_error(path, t))? as usize;
        if o <= level_offsets[i] || o > count || (i + 1 == levels && o != count) {
            return Err(invalid_error(
                path,
                at,
                format!(
                    "level {i} ends at {o}: level ends must increase to the point count {count}"
                ),
            ));
        }
        level_offsets.push(o);
    }
    Ok(level_offsets)
}

/// Reads the levels' radii, each finite and >= 0.
fn read_radii(
    c: &mut ByteReader,
    path: &Path,
    levels: usize,
) -> Result<Vec<f64>, PointshellFileError> {
    let mut radii = Vec::with_capacity(levels);
    for i in 0..levels {
        let at = c.offset();
        let r = c.f64("a radius").map_err(|t| truncated_error(path, t))?;
        if !(r.is_finite() && r >= 0.0) {
            return Err(invalid_error(
                path,
                at,
                format!("radius {r} of level {i} is not >= 0 and finite"),
            ));
        }
        radii.push(r);
    }
    Ok(radii)
}

/// A pointshell's points and their inward unit normals.
type PointsAndNormals = (Vec<Point3<f64>>, Vec<Vector3<f64>>);

/// Reads the `count` points and their unit normals.
fn read_points(
    c: &mut ByteReader,
    path: &Path,
    count: usize,
) -> Result<PointsAndNormals, PointshellFileError> {
    let mut points = Vec::with_capacity(count);
    let mut normals = Vec::with_capacity(count);
    for i in 0..count {
        let at = c.offset();
        let mut v = [0.0; 6];
        for x in &mut v {
            *x = c.f64("a point").map_err(|t| truncated_error(path, t))?;
        }
        let p = Point3::new(v[0], v[1], v[2]);
        let n = Vector3::new(v[3], v[4], v[5]);
        if !v.iter().all(|x| x.is_finite()) || !is_unit(&n) {
            return Err(invalid_error(
                path,
                at,
                format!("point {i} is not finite or its normal is not a unit vector"),
            ));
        }
        points.push(p);
        normals.push(n);
    }
    Ok((points, normals))
}
