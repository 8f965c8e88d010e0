//! The regression suite: every recorded trajectory in `assets/trajectories` is replayed
//! through the `haptics replay` command on its scene (`NAME-*.csv` belongs to
//! `assets/scenes/NAME.toml`) and compared with its golden log in `assets/golden`.
//!
//! Tolerance 1e-6 (N, m, counts): a replay on the same build is bit-identical (checked
//! separately below with tolerance 0); the margin absorbs the last-bit differences of the
//! reduced-force SIMD kernels on a CPU with a different instruction set, while any change
//! of behaviour (a different contact set or step) moves values by far more.

#[path = "common/cli.rs"]
mod cli;

use cli::haptics;

use std::path::{Path, PathBuf};

/// The repository root (the application crate lives in `app/`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache")
}

/// The scene of a trajectory: the longest scene name that prefixes the file name.
fn scene_of(trajectory: &Path) -> PathBuf {
    let stem = trajectory
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mut best: Option<PathBuf> = None;
    for e in std::fs::read_dir(root().join("assets/scenes")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if stem.starts_with(&format!("{name}-"))
            && best
                .as_ref()
                .is_none_or(|b| b.file_stem().unwrap().len() < name.len())
        {
            best = Some(p);
        }
    }
    best.unwrap_or_else(|| panic!("no scene for trajectory {}", trajectory.display()))
}

#[test]
fn every_recorded_trajectory_replays_to_its_golden_log() {
    let mut trajectories: Vec<PathBuf> = std::fs::read_dir(root().join("assets/trajectories"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    trajectories.sort();
    assert!(trajectories.len() >= 4, "{trajectories:?}");
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("regression");
    std::fs::create_dir_all(&out_dir).unwrap();
    let cache = cache();
    for t in &trajectories {
        let scene = scene_of(t);
        let name = t.file_stem().unwrap().to_string_lossy().to_string();
        let golden = root().join("assets/golden").join(format!("{name}.log.csv"));
        assert!(golden.exists(), "no golden log for {name}");
        let out = out_dir.join(format!("{name}.log.csv"));
        let o = haptics(&[
            "replay",
            scene.to_str().unwrap(),
            t.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--compare",
            golden.to_str().unwrap(),
            "--tol",
            "1e-6",
            "--cache",
            cache.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{name}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("matches"));
        // Continuous contact's rule: the held object's surface never goes more than
        // 1 mm (every shipped scene's `max_penetration`) past the surface it hits, rigid
        // or deforming into it (the bulging muscle: the push out of docs/contact.md).
        // The replay prints the deepest contact to the micrometre, so "1.000" may be up
        // to 0.5 um over: the push leaves at most a millionth of the limit (1 nm).
        {
            let depth: f64 = stdout
                .split("deepest contact ")
                .nth(1)
                .and_then(|s| s.split(" mm").next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{name}: no deepest contact in\n{stdout}"));
            assert!(depth <= 1.0, "{name}: {depth} mm past the surface");
        }
    }
}

/// Two replays of the same trajectory on the same build are bit-identical, and a changed
/// parameter is caught with a readable summary and a non-zero exit.
#[test]
fn replays_are_bit_identical_and_differences_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    let cache = cache();
    for out in [&a, &b] {
        let o = haptics(&[
            "replay",
            "assets/scenes/peg-shaft.toml",
            "assets/trajectories/peg-shaft-insert.csv",
            "--out",
            out.to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = haptics(&[
        "replay",
        "assets/scenes/peg-shaft.toml",
        "assets/trajectories/peg-shaft-insert.csv",
        "--out",
        b.to_str().unwrap(),
        "--compare",
        a.to_str().unwrap(),
        "--tol",
        "0",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A scene with a stiffer coupling differs from the golden log.
    let scene = std::fs::read_to_string(root().join("assets/scenes/peg-shaft.toml")).unwrap();
    let stiffer = scene.replace("stiffness = 40.0", "stiffness = 60.0");
    assert_ne!(scene, stiffer);
    let changed = root()
        .join("assets/scenes")
        .join(".peg-shaft-stiffer-test.toml");
    std::fs::write(&changed, stiffer).unwrap();
    let o = haptics(&[
        "replay",
        changed.to_str().unwrap(),
        "assets/trajectories/peg-shaft-insert.csv",
        "--out",
        b.to_str().unwrap(),
        "--compare",
        a.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    std::fs::remove_file(&changed).unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("differs") && err.contains("max |diff|"),
        "{err}"
    );
    // The same edit through `--set` (one parameter definition for the scene file and
    // the command line) gives the edited scene's log bit for bit.
    let c = dir.path().join("c.csv");
    let o = haptics(&[
        "replay",
        "assets/scenes/peg-shaft.toml",
        "assets/trajectories/peg-shaft-insert.csv",
        "--set",
        "coupling.stiffness=60",
        "--out",
        c.to_str().unwrap(),
        "--compare",
        b.to_str().unwrap(),
        "--tol",
        "0",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Values outside a parameter's range, and unknown keys, are refused by name.
    for (set, expected) in [
        (
            "coupling.static_damping=1",
            "coupling.static_damping = 1: expected a finite number in [0, 0.95]",
        ),
        (
            "coupling.stifness=60",
            "unknown parameter 'coupling.stifness'",
        ),
        ("contact.warm_budget=nan", "contact.warm_budget = NaN"),
    ] {
        let o = haptics(&[
            "replay",
            "assets/scenes/peg-shaft.toml",
            "assets/trajectories/peg-shaft-insert.csv",
            "--set",
            set,
            "--out",
            c.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{set} was accepted");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(expected), "{set}: {err}");
    }
}

/// Malformed trajectories and unknown devices are readable errors, never panics.
#[test]
fn bad_trajectories_and_devices_are_readable_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read_to_string(root().join("assets/trajectories/peg-shaft-insert.csv")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.truncate(20);
    let header_line = lines.iter().position(|l| l.starts_with("time_s")).unwrap();
    let edit = |f: &dyn Fn(&mut Vec<String>)| {
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        f(&mut v);
        v.join("\n")
    };
    let first = header_line + 1;
    let cases = [
        // Wrong columns: the header names the file and line.
        (
            "columns",
            edit(&|v| v[header_line] = v[header_line].replacen(',', ";", 1)),
            format!(":{}:", header_line + 1),
        ),
        // Time going backwards between two samples.
        (
            "time",
            edit(&|v| v.swap(first + 4, first + 5)),
            format!(":{}:", first + 6),
        ),
        // A NaN position.
        (
            "nan",
            edit(&|v| {
                let mut f: Vec<String> = v[first + 2].split(',').map(String::from).collect();
                f[1] = "NaN".into();
                v[first + 2] = f.join(",");
            }),
            format!(":{}:", first + 3),
        ),
    ];
    for (what, text, expect) in cases {
        let p = dir.path().join(format!("{what}.csv"));
        std::fs::write(&p, text).unwrap();
        let o = haptics(&[
            "replay",
            "assets/scenes/peg-shaft.toml",
            p.to_str().unwrap(),
            "--out",
            dir.path().join("x.csv").to_str().unwrap(),
            "--cache",
            cache().to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{what}: accepted");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert!(
            err.contains(p.file_name().unwrap().to_str().unwrap()) && err.contains(&expect),
            "{what}: expected {expect} in {err}"
        );
    }
    let o = haptics(&[
        "record",
        "assets/scenes/peg-shaft.toml",
        "--device",
        "hid:no-such-profile",
        "--out",
        dir.path().join("t.csv").to_str().unwrap(),
        "--cache",
        cache().to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no-such-profile") && err.contains("generic-ffb"),
        "{err}"
    );
}
