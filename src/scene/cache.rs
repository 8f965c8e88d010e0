//! The scene cache: expensive pieces (distance fields, pointshells, generated simulation
//! meshes) stored as files named by a SHA-256 of everything they depend on, so a second
//! load of an unchanged scene reads them instead of recomputing them, and a changed
//! input (file bytes or parameter) gets a new name instead of a stale answer.
//!
//! Layout of the cache directory:
//! - `KIND-KEY.EXT`: the artifact (`sdf-*.dist`, `pshell-*.pshell`, `veg-*.veg`), KEY the
//!   first 32 hex digits of SHA-256 over [`FORMAT_VERSION`], [`BUILDER_FINGERPRINT`], the
//!   kind, the bytes of every input file and the `Debug` form of every parameter;
//! - `KIND-KEY.EXT.sha256`: the SHA-256 of the artifact's bytes, written after it;
//! - `bake-KEY/`: a baked directory ([`crate::reduction::bake::bake`], which validates
//!   its own manifest and output hashes).
//!
//! Writes go to a temporary file in the cache directory, renamed into place, and the
//! checksum is written (also atomically) only after the artifact: a reader never sees a
//! half-written artifact, and an artifact whose checksum is missing or differs (an
//! interrupted write, a corrupted disk, a hand edit) is recomputed, never trusted.

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::SceneError;
use crate::io::{file_sha256, hex, temp_sibling, write_bytes_atomic};

/// Version of the cached artifacts' meaning; bump it when a builder changes its output,
/// so old caches are not reused.
pub const FORMAT_VERSION: u32 = 1;

/// A fingerprint of the source code that builds the cached artifacts (the geometry,
/// mesh, FEM, reduction and muscle modules and the scene loader; `build.rs`): a build
/// whose builders changed gets new keys and rebuilds its cache instead of reusing the
/// artifacts of another build.
pub const BUILDER_FINGERPRINT: &str = env!("HAPTICS_BUILDER_FINGERPRINT");

/// A cache key under construction.
pub struct CacheKey {
    hasher: Sha256,
    kind: &'static str,
}

impl CacheKey {
    /// A key for artifacts of `kind` (`sdf`, `pshell`, `veg`, `bake`).
    pub fn new(kind: &'static str) -> Self {
        Self::of_build(kind, BUILDER_FINGERPRINT)
    }

    /// A key for artifacts of `kind` built by the code of `fingerprint`.
    fn of_build(kind: &'static str, fingerprint: &str) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(
            format!("haptics scene cache v{FORMAT_VERSION}\0{fingerprint}\0{kind}\0").as_bytes(),
        );
        CacheKey { hasher, kind }
    }

    /// Adds the bytes of a file (and their length, so concatenations cannot collide).
    pub fn file(&mut self, path: &Path) -> Result<(), std::io::Error> {
        let bytes = std::fs::read(path)?;
        self.hasher.update((bytes.len() as u64).to_le_bytes());
        self.hasher.update(&bytes);
        Ok(())
    }

    /// Adds a parameter (by its `Debug` form, which is exact for floats).
    pub fn value(&mut self, name: &str, v: &impl Debug) {
        let s = format!("{name}={v:?}\0");
        self.hasher.update(s.as_bytes());
    }

    /// The file or directory name: `KIND-KEY` plus `.ext` when `ext` is not empty.
    pub fn name(self, ext: &str) -> String {
        let hex = hex(&self.hasher.finalize());
        let key = &hex[..32];
        if ext.is_empty() {
            format!("{}-{key}", self.kind)
        } else {
            format!("{}-{key}.{ext}", self.kind)
        }
    }
}

/// The checksum file beside `artifact`.
pub(crate) fn checksum_path(artifact: &Path) -> PathBuf {
    let mut s = artifact.as_os_str().to_owned();
    s.push(".sha256");
    PathBuf::from(s)
}

/// A fresh temporary path in `dir` for the artifact `name` (hidden, unique in this
/// process, tagged with the pid).
pub fn temp_path(dir: &Path, name: &str) -> PathBuf {
    temp_sibling(&dir.join(name), "tmp")
}

/// Whether `artifact` exists with a checksum file matching its bytes; `Err` says why
/// not (for the load report) when the artifact exists but cannot be trusted.
pub fn verify(artifact: &Path) -> Result<bool, String> {
    if !artifact.exists() {
        return Ok(false);
    }
    let expected = std::fs::read_to_string(checksum_path(artifact))
        .map_err(|e| format!("no readable checksum ({e})"))?;
    let actual = file_sha256(artifact).map_err(|e| format!("unreadable ({e})"))?;
    if expected.trim() == actual {
        Ok(true)
    } else {
        Err("checksum mismatch (corrupt or half-written)".into())
    }
}

/// Moves `temp` (fully written) to `artifact` and records its checksum, both atomically.
/// When the move fails (`artifact` is a directory, the disk is full...), `temp` is
/// removed: a failed commit leaves no temporary file behind.
pub fn commit(temp: &Path, artifact: &Path) -> Result<(), SceneError> {
    let result = commit_inner(temp, artifact);
    if result.is_err() {
        // Best effort: after a successful rename `temp` no longer exists (NotFound).
        let _ = std::fs::remove_file(temp);
    }
    result
}

fn commit_inner(temp: &Path, artifact: &Path) -> Result<(), SceneError> {
    let err = |path: &Path, e: std::io::Error| SceneError::Cache {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let sum = file_sha256(temp).map_err(|e| err(temp, e))?;
    // Remove a stale checksum first, so no window pairs it with the new artifact.
    let sum_path = checksum_path(artifact);
    match std::fs::remove_file(&sum_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(&sum_path, e)),
    }
    crate::io::fault::rename(temp, artifact).map_err(|e| err(artifact, e))?;
    write_bytes_atomic(&sum_path, format!("{sum}\n").as_bytes()).map_err(|e| err(&sum_path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_the_builders_code() {
        let name = |fingerprint: &str| {
            let mut k = CacheKey::of_build("bake", fingerprint);
            k.value("basis", &20);
            k.name("")
        };
        assert_eq!(name("0123456789abcdef"), name("0123456789abcdef"));
        assert_ne!(name("0123456789abcdef"), name("0123456789abcdee"));
        // The build's own fingerprint: 16 hex digits from build.rs, in every new key.
        assert_eq!(BUILDER_FINGERPRINT.len(), 16);
        assert!(BUILDER_FINGERPRINT.bytes().all(|b| b.is_ascii_hexdigit()));
        let mut k = CacheKey::new("bake");
        k.value("basis", &20);
        assert_eq!(k.name(""), name(BUILDER_FINGERPRINT));
    }

    #[test]
    fn a_failed_commit_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        // The artifact's path is a (non-empty) directory: the rename must fail.
        let artifact = dir.path().join("sdf-0123.dist");
        std::fs::create_dir(&artifact).unwrap();
        std::fs::write(artifact.join("inside"), b"x").unwrap();
        let temp = temp_path(dir.path(), "sdf-0123.dist");
        std::fs::write(&temp, vec![7u8; 1 << 20]).unwrap();
        let e = commit(&temp, &artifact).unwrap_err();
        assert!(e.to_string().contains("sdf-0123.dist"), "{e}");
        assert!(!temp.exists(), "the temporary file was left behind");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["sdf-0123.dist".to_string()], "{names:?}");
        // A good commit still works and leaves no temporary either.
        let good = dir.path().join("sdf-4567.dist");
        let temp = temp_path(dir.path(), "sdf-4567.dist");
        std::fs::write(&temp, b"data").unwrap();
        commit(&temp, &good).unwrap();
        assert!(!temp.exists());
        assert_eq!(verify(&good), Ok(true));
    }
}
