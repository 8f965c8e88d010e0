//! Builds the stand-in vendor libraries used by the tests and the benchmark.
//!
//! The sources (`devices/fakes/openhaptics.rs`, `devices/fakes/dhd.rs`) are std-only Rust
//! exporting the vendors' C symbols; they are compiled here with
//! `rustc --crate-type cdylib` into `libHD.so` / `libdhd.so`, so that tests exercise the
//! real loading path (`dlopen`, symbol lookup, the C ABI) without any vendor SDK. Each
//! build is cached under the system temporary directory by a hash of the source and the
//! compiler, and published with a rename, so concurrent test binaries share one build.
//!
//! Not part of the device layer proper: nothing outside tests and benches calls it.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::Vendor;

/// The fake `libHD.so` source.
pub const OPENHAPTICS_SOURCE: &str = include_str!("../../fakes/openhaptics.rs");
/// The fake `libdhd.so` source.
pub const DHD_SOURCE: &str = include_str!("../../fakes/dhd.rs");

/// The source and file name of `vendor`'s fake (none for Haply, a service: see
/// [`super::fake_inverse`]).
fn source(vendor: Vendor) -> Option<(&'static str, &'static str, &'static str)> {
    match vendor {
        Vendor::OpenHaptics => Some((OPENHAPTICS_SOURCE, "HD", "libHD.so")),
        Vendor::ForceDimension => Some((DHD_SOURCE, "dhd", "libdhd.so")),
        Vendor::Haply => None,
    }
}

/// Builds (or finds the cached build of) `vendor`'s fake library under the system
/// temporary directory; returns its path. The compiler is `$RUSTC`, else `rustc` on the
/// `PATH`.
pub fn build(vendor: Vendor) -> Result<PathBuf, String> {
    build_in(vendor, &std::env::temp_dir())
}

/// [`build`] with its cache under `root`.
///
/// Each call compiles in a directory of its own (rustc writes its intermediate objects
/// beside `-o`, named by the crate, so two builds of one fake in one directory overwrite
/// each other's objects and the link fails), then renames the library into the cache.
pub fn build_in(vendor: Vendor, root: &Path) -> Result<PathBuf, String> {
    let (src, crate_name, file) = source(vendor).ok_or_else(|| {
        format!("{vendor} is a service, not a library: its stand-in is vendor::fake_inverse")
    })?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {rustc}: {e}"))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    src.hash(&mut h);
    version.stdout.hash(&mut h);
    let key = format!("haptics-fake-{}-{:016x}", crate_name, h.finish());
    let dir = root.join(&key);
    let lib = dir.join(file);
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Unique per call, not only per process: the tests of one binary build the same
    // fake from several threads at once.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = root.join(format!("{key}.build-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("creating {}: {e}", work.display()))?;
    let result = compile(&rustc, src, crate_name, file, &work).and_then(|built| {
        std::fs::rename(&built, &lib).map_err(|e| format!("publishing {}: {e}", lib.display()))
    });
    let _ = std::fs::remove_dir_all(&work);
    result.map(|()| lib)
}

/// Compiles a fake's source in `work` (a directory of its own); returns the library.
fn compile(
    rustc: &str,
    src: &str,
    crate_name: &str,
    file: &str,
    work: &Path,
) -> Result<PathBuf, String> {
    let src_path = work.join(format!("{crate_name}.rs"));
    std::fs::write(&src_path, src).map_err(|e| format!("writing {}: {e}", src_path.display()))?;
    let built = work.join(file);
    let out = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "-O",
            "--crate-type",
            "cdylib",
            "--crate-name",
        ])
        .arg(crate_name)
        .arg(&src_path)
        .arg("-o")
        .arg(&built)
        .output()
        .map_err(|e| format!("cannot run {rustc}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "building the fake {file} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(built)
}

/// A directory holding only `vendor`'s fake under its soname, for tests of the
/// `LD_LIBRARY_PATH` search.
pub fn directory(vendor: Vendor) -> Result<PathBuf, String> {
    build(vendor).map(|p| p.parent().map(Path::to_path_buf).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One fake built at once from 8 threads of this process and from a second process
    /// (this test binary, run on this test alone), into one empty cache: every build
    /// succeeds and publishes the same library.
    #[test]
    fn one_fake_builds_from_many_threads_and_two_processes_at_once() {
        const ROOT: &str = "HAPTICS_FAKE_BUILD_ROOT";
        if let Ok(root) = std::env::var(ROOT) {
            // The second process.
            build_in(Vendor::OpenHaptics, Path::new(&root)).unwrap();
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "vendor::fakes::tests::one_fake_builds_from_many_threads_and_two_processes_at_once",
                "--nocapture",
            ])
            .env(ROOT, root.path())
            .spawn()
            .unwrap();
        let built: Vec<Result<PathBuf, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| build_in(Vendor::OpenHaptics, root.path())))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let status = child.wait_with_output().unwrap().status;
        assert!(status.success(), "the second process's build failed");
        let first = built[0].clone().unwrap();
        for b in &built {
            assert_eq!(b.as_ref().unwrap(), &first);
        }
        assert!(std::fs::metadata(&first).unwrap().len() > 0);
        // Nothing left behind but the published library's directory.
        let left: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
