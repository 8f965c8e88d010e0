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

/// The tests of this file start one Xvfb each; two starting at once could pick the same
/// free display number (the second server then fails, and its test would draw on the
/// first's, which goes away under it). One at a time.
static DISPLAY_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// An Xvfb server on a free display number, killed on drop.
struct VirtualDisplay {
    child: Child,
    display: String,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl VirtualDisplay {
    fn start() -> VirtualDisplay {
        let serial = DISPLAY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
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
        VirtualDisplay {
            child,
            display,
            _serial: serial,
        }
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

/// `haptics run --device openhaptics` in the window, on the fake libHD.so: the session
/// runs on the device's servo loop and, when the library reports a communication error
/// mid run, the window closes within 5 s with the device and the error named, the device
/// released (zero force, scheduler stopped, disabled) and no force after the fault.
#[test]
fn the_window_runs_an_openhaptics_device_and_ends_cleanly_on_its_fault() {
    use haptics_devices::vendor::fakes;
    let x = VirtualDisplay::start();
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    let lib = fakes::build(haptics_devices::vendor::Vendor::OpenHaptics).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |frames: &str, fault_ms: Option<&str>| {
        let log = dir.path().join(format!("hd-{frames}.log"));
        let mut c = Command::new(env!("CARGO_BIN_EXE_haptics"));
        c.args([
            "run",
            "--device",
            "openhaptics",
            "--frames",
            frames,
            "--cache",
        ])
        .arg(&cache)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .env("HAPTICS_OPENHAPTICS_LIB", &lib)
        .env("FAKE_HD_LOG", &log)
        .env("FAKE_HD_BUTTONS", "1");
        if let Some(ms) = fault_ms {
            c.env("FAKE_HD_FAULT_AFTER_MS", ms);
        }
        (c.output().unwrap(), log)
    };
    let (o, log) = run("30", None);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("window open on"), "{out}");
    assert!(out.contains("device PHANTOM Premium 1.5 6DOF"), "{out}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("# violations 0\n") && text.contains("# disabled\n"),
        "{text:.300}"
    );

    let (o, log) = run("1000000", Some("3000"));
    let err = stderr(&o);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("PHANTOM Premium 1.5 6DOF (OpenHaptics (HDAPI)) failed: OpenHaptics (HDAPI): error 0x0302 HD_COMM_ERROR"),
        "{err}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let disabled_at: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("# disabled_at "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        disabled_at > 3.0 && disabled_at < 3.0 + 5.0,
        "{disabled_at}"
    );
    let last_t: f64 = text
        .lines()
        .rfind(|l| !l.starts_with('#'))
        .and_then(|l| l.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(last_t < 3.0 + 0.05, "frames after the fault: {last_t}");
}
