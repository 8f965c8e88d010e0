//! `haptics devices` driven as a user runs it: with no hardware attached it lists the
//! known profiles, says whether devices were found, and exits 0; `--help` explains;
//! `--check` validates a profile file and names the line of an error.

#[path = "common/cli.rs"]
mod cli;

use cli::{haptics, stdout};

#[test]
fn devices_lists_profiles_and_succeeds_without_hardware() {
    let o = haptics(&["devices"]);
    let out = stdout(&o);
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("Known device profiles:"), "{out}");
    for name in ["spacemouse-split", "spacemouse-combined", "generic-ffb"] {
        assert!(out.contains(name), "{name} missing from:\n{out}");
    }
    // Either there are no devices (CI) and it says so, or it lists them.
    assert!(
        out.contains("No HID devices found") || out.contains("Connected HID devices"),
        "{out}"
    );
}

#[test]
fn devices_help_explains() {
    let o = haptics(&["devices", "--help"]);
    let out = stdout(&o);
    assert!(o.status.success());
    assert!(out.contains("profile"), "{out}");
    assert!(out.contains("--check"), "{out}");
    assert!(out.contains("exits successfully"), "{out}");
    let o = haptics(&["--help"]);
    assert!(stdout(&o).contains("devices"));
}

#[test]
fn check_validates_a_profile_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../devices/profiles/generic-ffb.toml");
    let o = haptics(&["devices", "--check", &good.to_string_lossy()]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("name: generic-ffb"));

    let text = std::fs::read_to_string(&good).expect("read profile");
    let bad = text.replacen("type = \"i32le\"", "type = \"int32\"", 1);
    let line = 1 + bad[..bad.find("int32").expect("edit applied")]
        .matches('\n')
        .count();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, bad).expect("write profile");
    let o = haptics(&["devices", "--check", &path.to_string_lossy()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    assert!(err.contains("int32"), "{err}");
}
