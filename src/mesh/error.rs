//! Typed errors for every mesh reader.
//!
//! Each error names the file, the line (text formats) or byte offset (binary formats),
//! and what the reader expected, so a user can open the file and fix it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// 1-based line number in a text file.
    Line(usize),
    /// 0-based byte offset in a binary file.
    Offset(u64),
    /// The whole file (for example an empty file, or a problem found after parsing).
    File,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Offset(o) => write!(f, "byte offset {o}"),
            Location::File => write!(f, "file"),
        }
    }
}

/// An error while reading or validating a mesh.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The operating system failed to read the file (the writers report a failed write
    /// here too, under the same "cannot read" message).
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The text or bytes at `location` are not what the format requires.
    #[error("{path}:{location}: expected {expected}, found {found}")]
    Syntax {
        /// The file being read.
        path: PathBuf,
        /// The line (text) or byte offset (binary) of the bad token.
        location: Location,
        /// What the format requires there, in words.
        expected: String,
        /// What the file holds instead (a quoted, shortened excerpt).
        found: String,
    },
    /// The file ended before the format was complete.
    #[error("{path}:{location}: file ends early: expected {expected}")]
    Truncated {
        /// The file being read.
        path: PathBuf,
        /// Where the data stopped: the line past the last one (or a section line that came
        /// too early), or the file's length in bytes.
        location: Location,
        /// What was still to come, in words.
        expected: String,
    },
    /// A vertex index outside the vertex list.
    #[error(
        "{path}:{location}: vertex index {index} is out of range (the mesh has {count} vertices)"
    )]
    IndexOutOfRange {
        /// The file being read or written.
        path: PathBuf,
        /// The line holding the index (`File` for a mesh rejected by a writer).
        location: Location,
        /// The index in the format's own numbering (1-based in OBJ, where negative indices
        /// count back from the last vertex); 0-based for a mesh rejected by a writer.
        index: i64,
        /// Number of vertices the index must fall within.
        count: usize,
    },
    /// A coordinate or parameter that is NaN or infinite.
    #[error("{path}:{location}: non-finite number '{value}'")]
    NonFinite {
        /// The file being read.
        path: PathBuf,
        /// The line or byte offset of the number.
        location: Location,
        /// The number as written (or printed, for binary files).
        value: String,
    },
    /// A region refers to a material (or a set) that the file does not define.
    #[error("{path}:{location}: {what} '{name}' is not defined in the file")]
    Undefined {
        /// The file being read.
        path: PathBuf,
        /// The line of the `*REGION` that refers to it.
        location: Location,
        /// The kind of thing referred to: `"material"` or `"set"`.
        what: &'static str,
        /// The name the file uses for it.
        name: String,
    },
    /// A material parameter outside its physical range.
    #[error("{path}:{location}: invalid material '{name}': {reason}")]
    InvalidMaterial {
        /// The file being read.
        path: PathBuf,
        /// The line of the material's definition.
        location: Location,
        /// The material's name in the file.
        name: String,
        /// Which parameter is out of range, and its value (from [`Material::validate`]).
        ///
        /// [`Material::validate`]: super::volume::Material::validate
        reason: String,
    },
    /// An element with zero or negative volume (0-based index, and the 1-based index used
    /// by Vega and TetGen files).
    #[error("{path}: element {index} (1-based {one_based}) is {kind}: signed volume {volume:e}")]
    BadElement {
        /// The file the mesh was read from.
        path: PathBuf,
        /// 0-based index of the first bad element.
        index: usize,
        /// The same element, 1-based (as in Vega and TetGen files).
        one_based: usize,
        /// Whether it is degenerate or inverted.
        kind: ElementDefectKind,
        /// The offending measure, m^3: the signed volume of a tet, or the smallest corner
        /// Jacobian determinant of a hex (see [`ElementDefect::measure`]).
        ///
        /// [`ElementDefect::measure`]: super::volume::ElementDefect::measure
        volume: f64,
    },
    /// Elements that no region assigns a material to.
    #[error("{path}: {count} elements have no material (first: element {first}, 1-based {first_one_based}); add a *REGION that covers them")]
    MissingMaterial {
        /// The file being read.
        path: PathBuf,
        /// Number of elements without a material.
        count: usize,
        /// 0-based index of the first of them.
        first: usize,
        /// The same element, 1-based (as in the file).
        first_one_based: usize,
    },
    /// A path that is not a regular file (a device, FIFO or directory), which a reader
    /// refuses: it may never end.
    #[error("{path}: not a regular file (devices, pipes and directories are not read)")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// A file larger than the readers accept.
    #[error("{path}: file is larger than the limit of {limit} bytes for mesh files")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes ([`MAX_MESH_FILE_BYTES`](super::MAX_MESH_FILE_BYTES)).
        limit: u64,
    },
    /// An interpolation weight whose magnitude is beyond any barycentric or trilinear
    /// weight of a render vertex near its element.
    #[error("{path}:{location}, column {column}: interpolation weight {value} is outside [-{limit}, {limit}]")]
    WeightOutOfRange {
        /// The file being read.
        path: PathBuf,
        /// The line of the weight.
        location: Location,
        /// 1-based column (in characters) where the weight starts.
        column: usize,
        /// The weight as written.
        value: String,
        /// The largest magnitude accepted.
        limit: f64,
    },
    /// A format or feature the reader does not support.
    #[error("{path}: unsupported: {what}")]
    Unsupported {
        /// The file being read or written.
        path: PathBuf,
        /// The format or feature that is not supported.
        what: String,
    },
}

/// Why an element is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementDefectKind {
    /// Zero (up to a relative tolerance) or non-finite volume: a flat or collapsed element.
    Degenerate,
    /// Negative volume (tets) or a negative corner Jacobian (hexes): the nodes are in the
    /// wrong order or the element folds over itself.
    Inverted,
}

impl fmt::Display for ElementDefectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementDefectKind::Degenerate => write!(f, "degenerate"),
            ElementDefectKind::Inverted => write!(f, "inverted"),
        }
    }
}

impl MeshError {
    /// An [`Io`](MeshError::Io) error for `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        MeshError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A [`Syntax`](MeshError::Syntax) error: `expected` is what the format requires at
    /// `location`, `found` what the file holds there (see [`excerpt`]).
    pub fn syntax(
        path: &Path,
        location: Location,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        MeshError::Syntax {
            path: path.to_path_buf(),
            location,
            expected: expected.into(),
            found: found.into(),
        }
    }

    /// A [`Truncated`](MeshError::Truncated) error: the file ends at `location` where
    /// `expected` should follow.
    pub fn truncated(path: &Path, location: Location, expected: impl Into<String>) -> Self {
        MeshError::Truncated {
            path: path.to_path_buf(),
            location,
            expected: expected.into(),
        }
    }

    /// The location the error points at, if any.
    pub fn location(&self) -> Option<&Location> {
        match self {
            MeshError::Syntax { location, .. }
            | MeshError::Truncated { location, .. }
            | MeshError::IndexOutOfRange { location, .. }
            | MeshError::NonFinite { location, .. }
            | MeshError::Undefined { location, .. }
            | MeshError::InvalidMaterial { location, .. }
            | MeshError::WeightOutOfRange { location, .. } => Some(location),
            _ => None,
        }
    }
}

/// Shortens a token for an error message so a garbled binary line does not flood the terminal.
pub fn excerpt(s: &str) -> String {
    const MAX: usize = 40;
    let s = s.trim();
    if s.is_empty() {
        return "nothing".to_string();
    }
    let mut out: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        out.push_str("...");
    }
    format!("'{}'", out.escape_debug())
}

/// Test helper: asserts that `err` points at 1-based line `line` of a text file; a failure
/// shows the error (file, location and reason) next to the expected line.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_at_line(err: &MeshError, line: usize) {
    assert_location(err, Location::Line(line));
}

/// Test helper: asserts that `err` points at 0-based byte `offset` of a binary file; a
/// failure shows the error next to the expected offset.
#[cfg(test)]
#[track_caller]
pub(crate) fn assert_at_offset(err: &MeshError, offset: u64) {
    assert_location(err, Location::Offset(offset));
}

#[cfg(test)]
#[track_caller]
fn assert_location(err: &MeshError, expected: Location) {
    assert_eq!(
        err.location(),
        Some(&expected),
        "expected an error at {expected}, got: {err}"
    );
}
