//! Atomic file writes: write a hidden temporary file in the target's directory, flush and
//! sync it, then rename it over the target (a rename within one directory is atomic on
//! POSIX file systems). On any error the temporary file is removed and the target is
//! left as it was.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh hidden path beside `path`: `.NAME.TAG-PID-N` in the same directory, unique
/// within this process and tagged with the process id, so concurrent writers (threads or
/// processes) never share a temporary file.
pub fn temp_sibling(path: &Path, tag: &str) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{tag}-{}-{n}", std::process::id()))
}

/// Writes `path` atomically: `write` fills a buffered temporary file beside it, which is
/// then flushed, synced and renamed over `path`. The parent directory must exist.
pub fn write_atomic<F>(path: &Path, write: F) -> std::io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
{
    let tmp = temp_sibling(path, "tmp");
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        write(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all()?;
        drop(w);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // Best effort: the temporary file may never have been created.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` to `path` atomically (see [`write_atomic`]).
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic(path, |w| w.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write_bytes_atomic(&path, b"old").unwrap();
        let err = write_atomic(&path, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left behind");
        write_bytes_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn temporary_names_are_hidden_unique_siblings() {
        let p = Path::new("/some/dir/field.dist");
        let (a, b) = (temp_sibling(p, "tmp"), temp_sibling(p, "tmp"));
        assert_ne!(a, b);
        assert_eq!(a.parent(), p.parent());
        assert!(a
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".field.dist.tmp-"));
    }
}
