//! Atomic file writes: write a hidden temporary file in the target's directory, flush and
//! sync it, then rename it over the target (a rename within one directory is atomic on
//! POSIX file systems). On any error the temporary file is removed and the target is
//! left as it was. A process killed mid-write cannot remove its temporary file; the next
//! write into that directory does ([`sweep_stale`]).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::fault::{self, FaultyFile};

static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The tags of the temporary names of this crate: atomic writes and cache entries
/// (`tmp`), bakes in progress (`partial`) and bakes being replaced (`old`).
const TEMP_TAGS: [&str; 3] = ["tmp", "partial", "old"];

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

/// The process id in a temporary name of [`temp_sibling`]'s form, if it is one.
fn temp_owner(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let (head, n) = name.rsplit_once('-')?;
    let (head, pid) = head.rsplit_once('-')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let tag = head.rsplit_once('.')?.1;
    if !TEMP_TAGS.contains(&tag) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` is running. Known on Linux (`/proc`); elsewhere every process
/// counts as running, so nothing is swept.
fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    pid == std::process::id() || proc_root.join(pid.to_string()).exists()
}

/// Removes the temporary files and directories that processes which no longer run left
/// in `dir` (killed mid-write: their atomic-write temporaries, cache entries and bakes in
/// progress). A temporary of a running process, this one included, is never touched.
/// Best effort: returns how many were removed.
pub fn sweep_stale(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        if process_alive(pid) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path).is_ok(),
            Ok(_) => std::fs::remove_file(&path).is_ok(),
            Err(_) => false,
        };
        removed += usize::from(gone);
    }
    removed
}

/// The directory of `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `path` atomically: `write` fills a buffered temporary file beside it, which is
/// then flushed, synced and renamed over `path`. The parent directory must exist. Stale
/// temporaries of killed writers in that directory are swept first.
pub fn write_atomic<F>(path: &Path, write: F) -> std::io::Result<()>
where
    F: FnOnce(&mut BufWriter<FaultyFile>) -> std::io::Result<()>,
{
    sweep_stale(parent_dir(path));
    let tmp = temp_sibling(path, "tmp");
    let result = (|| {
        let mut w = BufWriter::new(FaultyFile::new(fault::create_file(&tmp)?));
        write(&mut w)?;
        w.flush()?;
        w.get_ref().get_ref().sync_all()?;
        drop(w);
        fault::rename(&tmp, path)
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
    fn stale_temporaries_of_dead_processes_are_swept_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A pid above Linux's pid_max (2^22) belongs to no process.
        let dead = 4_194_999u32;
        let me = std::process::id();
        let names = [
            format!(".field.dist.tmp-{dead}-0"),
            format!("..a.dist.tmp-{dead}-3.tmp-{dead}-4"),
            format!(".bake.partial-{dead}-1"),
            format!(".field.dist.tmp-{me}-0"),
            format!("field.dist.tmp-{dead}-0"),
            format!(".notes.txt-{dead}-0"),
            "field.dist".to_string(),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join(format!(".bake.old-{dead}-2"))).unwrap();
        assert_eq!(sweep_stale(dir.path()), 4);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = vec![
            format!(".field.dist.tmp-{me}-0"),
            format!(".notes.txt-{dead}-0"),
            "field.dist".to_string(),
            format!("field.dist.tmp-{dead}-0"),
        ];
        expected.sort();
        assert_eq!(left, expected);
    }

    #[test]
    fn injected_faults_leave_the_old_file_and_no_temporary() {
        use crate::io::fault::{inject, WriteFault};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.bin");
        write_bytes_atomic(&path, b"old contents").unwrap();
        for fault in [
            WriteFault::NoSpaceAfter(0),
            WriteFault::NoSpaceAfter(3),
            WriteFault::ReadOnly,
            WriteFault::RenameFails,
        ] {
            let _g = inject(fault);
            let e = write_bytes_atomic(&path, &[7u8; 100_000]).unwrap_err();
            assert!(e.raw_os_error().is_some(), "{fault:?}: {e}");
            assert_eq!(std::fs::read(&path).unwrap(), b"old contents", "{fault:?}");
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                1,
                "{fault:?}"
            );
        }
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
