//! Shared helpers of the hand-written text readers and writers: read (or atomically
//! write) a whole file as bytes, check that it is UTF-8 (reporting the line of the first
//! bad byte), and parse numbers into typed [`MeshError`]s that carry the file and the
//! 1-based line.

use std::path::Path;

use super::error::{excerpt, Location, MeshError};

/// The largest mesh file the readers accept (1 GiB): a bound on what a reader
/// allocates, so a runaway file (or a device such as `/dev/zero` named in a
/// `*INCLUDE`) is an error instead of an unbounded read.
pub const MAX_MESH_FILE_BYTES: u64 = 1 << 30;

/// Reads the whole file at once (the readers then iterate over lines in memory).
/// Refuses anything that is not a regular file (devices, FIFOs, directories: they may
/// never end) and files above [`MAX_MESH_FILE_BYTES`].
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, MeshError> {
    read_bytes_limited(path, MAX_MESH_FILE_BYTES)
}

/// [`read_bytes`] with an explicit size limit in bytes.
pub(crate) fn read_bytes_limited(path: &Path, limit: u64) -> Result<Vec<u8>, MeshError> {
    use std::io::Read;
    // Checked before opening too: opening a FIFO blocks until a writer appears.
    let before = std::fs::metadata(path).map_err(|e| MeshError::io(path, e))?;
    if !before.is_file() {
        return Err(MeshError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    let file = std::fs::File::open(path).map_err(|e| MeshError::io(path, e))?;
    let meta = file.metadata().map_err(|e| MeshError::io(path, e))?;
    if !meta.is_file() {
        return Err(MeshError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > limit {
        return Err(MeshError::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    // The length may change while reading: read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| MeshError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(MeshError::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

/// Writes the whole file atomically (a temporary sibling renamed into place), so a
/// failed write leaves the old file.
pub(crate) fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), MeshError> {
    crate::io::write_bytes_atomic(path, bytes).map_err(|e| MeshError::io(path, e))
}

/// The bytes as text; a file that is not UTF-8 is a `Syntax` error at the line of the
/// first invalid byte.
pub(crate) fn as_utf8<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, MeshError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = bytes.get(..e.valid_up_to()).unwrap_or(&[]);
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        MeshError::syntax(
            path,
            Location::Line(line),
            "UTF-8 text",
            format!("invalid byte at byte offset {}", e.valid_up_to()),
        )
    })
}

/// Iterates `(1-based line number, line)` with `\r\n` and `\n` line ends removed.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    // A final line end does not start another (empty) line.
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}

/// The line without a `#` comment, trimmed.
pub(crate) fn strip_comment(line: &str) -> &str {
    match line.find('#') {
        Some(i) => line.get(..i).unwrap_or(line).trim(),
        None => line.trim(),
    }
}

/// A finite `f64`: a token that is not a number is `Syntax`; NaN or infinity is `NonFinite`.
pub(crate) fn parse_f64(tok: &str, path: &Path, line: usize, what: &str) -> Result<f64, MeshError> {
    let x: f64 = tok
        .parse()
        .map_err(|_| MeshError::syntax(path, Location::Line(line), what, excerpt(tok)))?;
    if !x.is_finite() {
        return Err(MeshError::NonFinite {
            path: path.to_path_buf(),
            location: Location::Line(line),
            value: tok.to_string(),
        });
    }
    Ok(x)
}

/// A non-negative integer.
pub(crate) fn parse_usize(
    tok: &str,
    path: &Path,
    line: usize,
    what: &str,
) -> Result<usize, MeshError> {
    tok.parse()
        .map_err(|_| MeshError::syntax(path, Location::Line(line), what, excerpt(tok)))
}

/// A signed integer.
pub(crate) fn parse_i64(tok: &str, path: &Path, line: usize, what: &str) -> Result<i64, MeshError> {
    tok.parse()
        .map_err(|_| MeshError::syntax(path, Location::Line(line), what, excerpt(tok)))
}

/// A 1-based index (as written in the file) checked against `count`, returned 0-based
/// after subtracting `base` (0 or 1).
pub(crate) fn parse_index(
    tok: &str,
    base: usize,
    count: usize,
    path: &Path,
    line: usize,
    what: &str,
) -> Result<usize, MeshError> {
    let i = parse_i64(tok, path, line, what)?;
    let zero_based = i.checked_sub(base as i64).unwrap_or(-1);
    if zero_based < 0 || zero_based as u64 >= count as u64 {
        return Err(MeshError::IndexOutOfRange {
            path: path.to_path_buf(),
            location: Location::Line(line),
            index: i,
            count,
        });
    }
    Ok(zero_based as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("m.obj");
        std::fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_bytes_limited(&f, 10).unwrap().len(), 10);
        let e = read_bytes_limited(&f, 9).unwrap_err();
        assert!(matches!(e, MeshError::FileTooLarge { limit: 9, .. }), "{e}");
        assert!(e.to_string().contains("m.obj"), "{e}");
        let e = read_bytes(dir.path()).unwrap_err();
        assert!(matches!(e, MeshError::NotRegularFile { .. }), "{e}");
    }
}
