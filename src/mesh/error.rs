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
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The text or bytes at `location` are not what the format requires.
    #[error("{path}:{location}: expected {expected}, found {found}")]
    Syntax {
        path: PathBuf,
        location: Location,
        expected: String,
        found: String,
    },
    /// The file ended before the format was complete.
    #[error("{path}:{location}: file ends early: expected {expected}")]
    Truncated {
        path: PathBuf,
        location: Location,
        expected: String,
    },
    /// A vertex index outside the vertex list.
    #[error(
        "{path}:{location}: vertex index {index} is out of range (the mesh has {count} vertices)"
    )]
    IndexOutOfRange {
        path: PathBuf,
        location: Location,
        index: i64,
        count: usize,
    },
    /// A coordinate or parameter that is NaN or infinite.
    #[error("{path}:{location}: non-finite number '{value}'")]
    NonFinite {
        path: PathBuf,
        location: Location,
        value: String,
    },
    /// A region refers to a material (or a set) that the file does not define.
    #[error("{path}:{location}: {what} '{name}' is not defined in the file")]
    Undefined {
        path: PathBuf,
        location: Location,
        what: &'static str,
        name: String,
    },
    /// A material parameter outside its physical range.
    #[error("{path}:{location}: invalid material '{name}': {reason}")]
    InvalidMaterial {
        path: PathBuf,
        location: Location,
        name: String,
        reason: String,
    },
    /// An element with zero or negative volume (0-based index, and the 1-based index used
    /// by Vega and TetGen files).
    #[error("{path}: element {index} (1-based {one_based}) is {kind}: signed volume {volume:e}")]
    BadElement {
        path: PathBuf,
        index: usize,
        one_based: usize,
        kind: ElementDefectKind,
        volume: f64,
    },
    /// Elements that no region assigns a material to.
    #[error("{path}: {count} elements have no material (first: element {first}, 1-based {first_one_based}); add a *REGION that covers them")]
    MissingMaterial {
        path: PathBuf,
        count: usize,
        first: usize,
        first_one_based: usize,
    },
    /// A format or feature the reader does not support.
    #[error("{path}: unsupported: {what}")]
    Unsupported { path: PathBuf, what: String },
}

/// Why an element is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementDefectKind {
    Degenerate,
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
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        MeshError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

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
            | MeshError::InvalidMaterial { location, .. } => Some(location),
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
