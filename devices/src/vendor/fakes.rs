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

/// The source and file name of `vendor`'s fake.
fn source(vendor: Vendor) -> (&'static str, &'static str, &'static str) {
    match vendor {
        Vendor::OpenHaptics => (OPENHAPTICS_SOURCE, "HD", "libHD.so"),
        Vendor::ForceDimension => (DHD_SOURCE, "dhd", "libdhd.so"),
    }
}

/// Builds (or finds the cached build of) `vendor`'s fake library; returns its path.
/// The compiler is `$RUSTC`, else `rustc` on the `PATH`.
pub fn build(vendor: Vendor) -> Result<PathBuf, String> {
    let (src, crate_name, file) = source(vendor);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {rustc}: {e}"))?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    src.hash(&mut h);
    version.stdout.hash(&mut h);
    let dir = std::env::temp_dir().join(format!("haptics-fake-{}-{:016x}", crate_name, h.finish()));
    let lib = dir.join(file);
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Unique per call, not only per process: the tests of one binary build the same
    // fake from several threads at once, and with the process id alone one thread's
    // rename took the other's staged file away.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tag = format!("{}-{call}", std::process::id());
    let staging = dir.join(format!("{file}.{tag}.tmp"));
    let src_path = dir.join(format!("{crate_name}.{tag}.rs"));
    std::fs::write(&src_path, src).map_err(|e| format!("writing {}: {e}", src_path.display()))?;
    let out = Command::new(&rustc)
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
        .arg(&staging)
        .output()
        .map_err(|e| format!("cannot run {rustc}: {e}"))?;
    let _ = std::fs::remove_file(&src_path);
    if !out.status.success() {
        return Err(format!(
            "building the fake {file} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&staging, &lib).map_err(|e| format!("publishing {}: {e}", lib.display()))?;
    Ok(lib)
}

/// A directory holding only `vendor`'s fake under its soname, for tests of the
/// `LD_LIBRARY_PATH` search.
pub fn directory(vendor: Vendor) -> Result<PathBuf, String> {
    build(vendor).map(|p| p.parent().map(Path::to_path_buf).unwrap_or_default())
}
