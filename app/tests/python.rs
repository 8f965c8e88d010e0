//! The Python package's tests (`python/tests`, pytest), run from `cargo test` so that the
//! README's test command runs them: the package is built from `python/` into a virtual
//! environment and compared there with this crate's `haptics` binary.
//!
//! The environment is `$HAPTICS_PYTHON` (an interpreter whose environment has
//! `python/requirements-test.txt`; `.ci/run` makes one), else a virtual environment this
//! test creates under the target directory with `python3 -m venv` and fills from PyPI.
//! Either way the package itself is rebuilt from the working tree (`pip install
//! ./python`), so the tests never run an old build. A missing interpreter, a failed build
//! or a skipped Python test fails this test.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the app crate sits in the repository")
        .to_path_buf()
}

/// Runs `cmd`, panicking with its output when it fails.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}",
        out.status
    );
    text
}

/// The interpreter of the test environment, created (once per requirements file) when
/// `$HAPTICS_PYTHON` is not set.
fn python(tmp: &Path, requirements: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("HAPTICS_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = tmp.join("python-venv");
    let python = venv.join("bin").join("python");
    let wanted = std::fs::read(requirements).expect("python/requirements-test.txt");
    let marker = venv.join("requirements-test.txt");
    if std::fs::read(&marker).ok().as_deref() != Some(&wanted[..]) {
        let _ = std::fs::remove_dir_all(&venv);
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "creating the virtual environment (python3 -m venv)",
        );
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q", "-r"])
                .arg(requirements),
            "installing python/requirements-test.txt",
        );
        std::fs::write(&marker, &wanted).expect("writing the requirements marker");
    }
    python
}

#[test]
fn python_package_tests_pass() {
    let root = repo_root();
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let python = python(&tmp, &root.join("python/requirements-test.txt"));
    // maturin (found on the environment's PATH) builds the extension in the dev profile,
    // which the test profile equals, into this build's target directory, so that it
    // reuses the core and the crates that `cargo test --workspace` compiled
    // (python/Cargo.toml turns on the features that keep the two builds' units equal).
    let target_dir = tmp
        .parent()
        .expect("CARGO_TARGET_TMPDIR lies in the target directory");
    let bin = python.parent().expect("the interpreter's directory");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--no-build-isolation",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(root.join("python"))
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", target_dir)
            .env("MATURIN_PEP517_ARGS", "--profile dev"),
        "building the package (pip install ./python)",
    );
    let out = run(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
            .arg(root.join("python/tests"))
            .current_dir(&root)
            .env("PATH", &path)
            .env("HAPTICS_BIN", env!("CARGO_BIN_EXE_haptics"))
            // The bake cache the Rust tests share: the scenes are baked once per run.
            .env("HAPTICS_TEST_CACHE", tmp.join("haptics-cache"))
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        "the Python tests (pytest python/tests)",
    );
    println!("{out}");
    let summary = out
        .lines()
        .rev()
        .find(|l| l.contains(" passed"))
        .unwrap_or_else(|| panic!("no pytest summary in:\n{out}"));
    assert!(
        !summary.contains("skipped") && !summary.contains("xfail"),
        "Python tests were skipped: {summary}"
    );
}
