//! Where the bundled assets live: models, scenes, trajectories, golden logs and fonts
//! under `assets/` at the repository root. Tests, benchmarks and the command line find
//! every file they read through [`asset`], so the repository stands alone.

use std::path::{Path, PathBuf};

/// The repository's `assets/` folder: `./assets` when the working directory is the
/// repository root (or holds a copy of it), else the one this crate was built from.
pub fn assets_dir() -> PathBuf {
    let local = Path::new("assets");
    if local.join("scenes").is_dir() && local.join("models").is_dir() {
        local.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
    }
}

/// A bundled file or folder, by its path relative to `assets/`, e.g.
/// `asset("models/beam3/beam3.veg")`.
pub fn asset(relative: impl AsRef<Path>) -> PathBuf {
    assets_dir().join(relative)
}

/// A bundled model file, by its path relative to `assets/models/`, e.g.
/// `model("simpleBridge/simpleBridge.obj")`.
pub fn model(relative: impl AsRef<Path>) -> PathBuf {
    assets_dir().join("models").join(relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_models_are_found() {
        for rel in [
            "beam3/beam3.veg",
            "simpleBridge/simpleBridge_resol92-b1.155_enlarged.veg",
            "tube/tube.veg.obj",
            "vega-beam3-fixture/beam3_lin10.cub",
            "vega-realtime-bridge/simpleBridge.cub",
        ] {
            assert!(model(rel).is_file(), "{} is missing", model(rel).display());
        }
        assert!(asset("scenes/bridge-probe.toml").is_file());
    }
}
