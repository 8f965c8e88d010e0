//! Running the `haptics` binary the way a user does, from the repository root.

#![allow(dead_code)] // each test binary uses the parts it needs

use std::process::{Command, Output};

/// Runs `haptics ARGS` in the repository root and waits for it.
pub fn haptics(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run haptics")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
