//! Errors of scene parsing and loading. Every error names the scene file; syntax errors
//! add the line and column, missing files the key that named them and the resolved path,
//! and failures of the underlying builders (meshes, fields, pointshells, bakes, contact)
//! the object and the step that failed, so a user can fix the scene without a debugger.

use std::path::PathBuf;

/// An underlying error of one of the builders, kept as its source.
pub type BoxedError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a scene could not be parsed or loaded.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The scene file could not be read.
    #[error("{path}: cannot read the scene file: {source}")]
    Read {
        /// The scene file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// TOML syntax, a value of the wrong type, a missing required key or an unknown key.
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        /// The scene file.
        path: PathBuf,
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column (in characters) of the offending text.
        column: usize,
        /// The parser's description of the problem.
        message: String,
    },
    /// A value outside its valid range, or an inconsistent combination of keys.
    #[error("{path}: {key}: {message}")]
    Invalid {
        /// The scene file.
        path: PathBuf,
        /// The key, as a TOML path (`environment[0].points`).
        key: String,
        /// What was found and what was expected.
        message: String,
    },
    /// A file named by the scene does not exist.
    #[error(
        "{path}: {key}: file {resolved} does not exist (paths are relative to the scene file)"
    )]
    MissingFile {
        /// The scene file.
        path: PathBuf,
        /// The key that names the file, as a TOML path (`haptic.mesh`).
        key: String,
        /// The path after resolving it against the scene file's directory.
        resolved: PathBuf,
    },
    /// Building one of the runtime pieces failed.
    #[error("{path}: {object}: {step}: {source}")]
    Build {
        /// The scene file.
        path: PathBuf,
        /// The object (`haptic 'probe'`, `environment 'bridge'`).
        object: String,
        /// The step that failed (`reading environment[0].mesh`, `pointshell`).
        step: String,
        /// The builder's error.
        #[source]
        source: BoxedError,
    },
    /// The cache directory could not be created or written.
    #[error("cache {path}: {message}")]
    Cache {
        /// The cache directory or file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    // Back off to a character boundary (spans are on boundaries; this is defensive).
    let mut end = offset;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn line_and_column_of_offsets() {
        let t = "a = 1\nbé = 2\n";
        assert_eq!(line_column(t, 0), (1, 1));
        assert_eq!(line_column(t, 4), (1, 5));
        assert_eq!(line_column(t, 6), (2, 1));
        // After the two-byte 'é': the third character of line 2.
        assert_eq!(line_column(t, 9), (2, 3));
        assert_eq!(line_column(t, 1000), (3, 1));
    }
}
