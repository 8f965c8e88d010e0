//! Fault injection for every file the engine writes (caches, bakes, distance fields,
//! pointshells, meshes, plots): a failure chosen on purpose, to test that a full disk, a
//! read-only directory or a failed rename never leaves a corrupt file in use or a partial
//! file behind, and that the message says what happened and where.
//!
//! The writers go through [`create_file`], [`create_dir_all`], [`rename`] and the
//! [`FaultyFile`] writer of [`super::write_atomic`]; each consults the fault injected on
//! the calling thread with [`inject`] (tests), or, for the `haptics` binary, the
//! `HAPTICS_INJECT_FAULT` environment variable read once by [`inject_from_env`]:
//! `nospace:BYTES` (the disk fills after BYTES more bytes), `readonly`, `rename`.
//! With no fault injected, each is the plain `std::fs` call.

use std::cell::Cell;
use std::fs::File;
use std::io::{Error, Write};
use std::path::Path;

/// A failure to inject into this thread's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// The disk fills after this many more bytes are written: writes then fail with
    /// ENOSPC ("No space left on device").
    NoSpaceAfter(u64),
    /// Creating files and directories fails with EROFS ("Read-only file system").
    ReadOnly,
    /// Renames fail with EIO ("Input/output error").
    RenameFails,
}

const ENOSPC: i32 = 28;
const EROFS: i32 = 30;
const EIO: i32 = 5;

thread_local! {
    static FAULT: Cell<Option<WriteFault>> = const { Cell::new(None) };
}

/// Injects `fault` into this thread's writes until the guard is dropped.
pub fn inject(fault: WriteFault) -> FaultGuard {
    let previous = FAULT.with(|f| f.replace(Some(fault)));
    FaultGuard { previous }
}

/// Restores the previously injected fault (usually none) when dropped.
#[must_use = "the fault is cleared when the guard is dropped"]
pub struct FaultGuard {
    previous: Option<WriteFault>,
}

impl Drop for FaultGuard {
    fn drop(&mut self) {
        FAULT.with(|f| f.set(self.previous));
    }
}

/// Parses a fault as written in `HAPTICS_INJECT_FAULT`.
pub(crate) fn parse_fault(text: &str) -> Result<WriteFault, String> {
    let expected = "expected nospace:BYTES, readonly or rename";
    match text.trim() {
        "readonly" => Ok(WriteFault::ReadOnly),
        "rename" => Ok(WriteFault::RenameFails),
        other => match other.strip_prefix("nospace:") {
            Some(n) => n
                .parse()
                .map(WriteFault::NoSpaceAfter)
                .map_err(|_| format!("'{other}': {expected}")),
            None => Err(format!("'{other}': {expected}")),
        },
    }
}

/// Injects the fault named by the `HAPTICS_INJECT_FAULT` environment variable, if set,
/// into the calling thread for the rest of its life (the binary's main thread, which
/// writes every output). For fault-injection tests of the command line.
pub fn inject_from_env() -> Result<(), String> {
    match std::env::var("HAPTICS_INJECT_FAULT") {
        Ok(v) => {
            let fault = parse_fault(&v).map_err(|e| format!("HAPTICS_INJECT_FAULT: {e}"))?;
            std::mem::forget(inject(fault));
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

fn current() -> Option<WriteFault> {
    FAULT.with(|f| f.get())
}

/// `File::create`, failing with EROFS under [`WriteFault::ReadOnly`].
pub fn create_file(path: &Path) -> std::io::Result<File> {
    if current() == Some(WriteFault::ReadOnly) {
        return Err(Error::from_raw_os_error(EROFS));
    }
    File::create(path)
}

/// `std::fs::create_dir_all`, failing with EROFS under [`WriteFault::ReadOnly`] when a
/// directory would have to be created.
pub fn create_dir_all(path: &Path) -> std::io::Result<()> {
    if current() == Some(WriteFault::ReadOnly) && !path.is_dir() {
        return Err(Error::from_raw_os_error(EROFS));
    }
    std::fs::create_dir_all(path)
}

/// `std::fs::rename`, failing with EIO under [`WriteFault::RenameFails`].
pub fn rename(from: &Path, to: &Path) -> std::io::Result<()> {
    if current() == Some(WriteFault::RenameFails) {
        return Err(Error::from_raw_os_error(EIO));
    }
    std::fs::rename(from, to)
}

/// A file whose writes fail with ENOSPC once the injected
/// [`WriteFault::NoSpaceAfter`] budget is spent (the budget is the thread's, shared by
/// every file it writes, as a disk's free space is).
pub struct FaultyFile {
    file: File,
}

impl FaultyFile {
    /// Wraps `file`.
    pub fn new(file: File) -> Self {
        Self { file }
    }

    /// The file.
    pub fn get_ref(&self) -> &File {
        &self.file
    }
}

impl Write for FaultyFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let allowed = match current() {
            Some(WriteFault::NoSpaceAfter(left)) => {
                if left == 0 && !buf.is_empty() {
                    return Err(Error::from_raw_os_error(ENOSPC));
                }
                buf.len().min(usize::try_from(left).unwrap_or(usize::MAX))
            }
            _ => buf.len(),
        };
        let n = self.file.write(&buf[..allowed])?;
        if let Some(WriteFault::NoSpaceAfter(left)) = current() {
            FAULT.with(|f| f.set(Some(WriteFault::NoSpaceAfter(left - n as u64))));
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_apply_to_this_thread_only_while_guarded() {
        assert_eq!(parse_fault("nospace:12"), Ok(WriteFault::NoSpaceAfter(12)));
        assert_eq!(parse_fault("readonly"), Ok(WriteFault::ReadOnly));
        assert_eq!(parse_fault("rename"), Ok(WriteFault::RenameFails));
        assert!(parse_fault("nospace:x").unwrap_err().contains("expected"));
        assert!(parse_fault("full").is_err());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        {
            let _g = inject(WriteFault::ReadOnly);
            let e = create_file(&p).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(EROFS));
            std::thread::scope(|s| {
                s.spawn(|| create_file(&dir.path().join("b")).unwrap());
            });
        }
        create_file(&p).unwrap();
    }

    #[test]
    fn the_disk_fills_after_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let _g = inject(WriteFault::NoSpaceAfter(5));
        let mut f = FaultyFile::new(File::create(dir.path().join("a")).unwrap());
        let e = f.write_all(b"0123456789").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(ENOSPC));
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"01234");
    }
}
