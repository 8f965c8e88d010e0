//! The interactive window, end to end: `haptics run` on a virtual X display (Xvfb)
//! opens its window on a wgpu surface (software Vulkan in CI), draws the scene, egui
//! panels and plots for 30 frames while the haptic thread runs, and closes cleanly.
//! `.ci/run` installs Xvfb; without it this test fails and says so.

#[path = "common/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli::{stderr, stdout};

/// An Xvfb server on a free display number, killed on drop.
struct VirtualDisplay {
    child: Child,
    display: String,
}

impl VirtualDisplay {
    fn start() -> VirtualDisplay {
        let n = (60..160)
            .find(|n| {
                !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
                    && !Path::new(&format!("/tmp/.X{n}-lock")).exists()
            })
            .expect("a free X display number");
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([
                display.as_str(),
                "-screen",
                "0",
                "1600x1000x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb is installed (.ci/run installs the xvfb package)");
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        let start = Instant::now();
        while !socket.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "Xvfb did not start on {display}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        VirtualDisplay { child, display }
    }
}

impl Drop for VirtualDisplay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_window_opens_draws_and_closes_on_a_virtual_display() {
    let x = VirtualDisplay::start();
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let o = Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args(["run", "--device", "simulated", "--frames", "30", "--cache"])
        .arg(&cache)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    // It drew in the window, not the headless fallback.
    assert!(out.contains("window open on"), "{out}");
    assert!(out.contains("closing after 30 frames"), "{out}");
    assert!(!out.contains("headless"), "{out}");
}
