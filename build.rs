//! Build script of the physics core: a fingerprint of the sources whose code decides what
//! the scene cache stores (distance fields, pointshells, generated meshes, bakes, muscle
//! bases and cubatures), given to the crate as `HAPTICS_BUILDER_FINGERPRINT`.
//!
//! Cache keys hash every input file and parameter, but not the code that turns them into
//! an artifact, so a build whose training or meshing changed would reuse the old build's
//! artifacts. With the fingerprint in every key, a changed builder gets new keys, and the
//! cache is rebuilt instead of trusted.
//!
//! The hash is 64-bit FNV-1a over each file's path, length and bytes, in path order:
//! written here because it only has to notice a change (no adversary), and a
//! build-dependency would compile a second copy of a hashing crate for the build host.

use std::path::{Path, PathBuf};

/// The sources of the builders (directories are walked recursively).
const BUILDERS: [&str; 8] = [
    "src/geometry",
    "src/mesh",
    "src/fem",
    "src/reduction",
    "src/muscle",
    "src/io",
    "src/formats.rs",
    "src/scene/load.rs",
];

fn collect(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            collect(&entry, out);
        }
    } else if path.extension().is_some_and(|x| x == "rs") {
        out.push(path.to_path_buf());
    }
}

fn fnv1a(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

fn main() {
    let mut files = Vec::new();
    for builder in BUILDERS {
        println!("cargo:rerun-if-changed={builder}");
        collect(Path::new(builder), &mut files);
    }
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // Forward slashes, so the fingerprint does not depend on the platform's separator.
        fnv1a(
            &mut hash,
            file.to_string_lossy().replace('\\', "/").as_bytes(),
        );
        fnv1a(&mut hash, &(bytes.len() as u64).to_le_bytes());
        fnv1a(&mut hash, &bytes);
    }
    println!("cargo:rustc-env=HAPTICS_BUILDER_FINGERPRINT={hash:016x}");
}
