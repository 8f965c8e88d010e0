//! The render path on the default scene (the deformable bridge and the rigid probe),
//! offscreen on whatever adapter exists (software Vulkan in CI):
//! - a frame has the requested size, is not blank, and its silhouette follows q;
//! - the GPU's deformed bridge lies where the CPU's u = U q puts it (every projected
//!   CPU vertex lands on a drawn pixel);
//! - `haptics screenshot` and the headless demo (`haptics run` without a display) write
//!   their PNG and summary and exit 0; bad input gets a message, not a crash;
//! - the haptic thread's cycle times with a render loop running beside it and without.

#[path = "common/cli.rs"]
mod cli;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cli::{haptics, stderr, stdout};
use haptics::haptic::{HapticSimulation, HapticThread, Snapshot};
use haptics::progress::NoProgress;
use haptics::scene::{load_scene, Scene};
use haptics_app::render::offscreen::background_srgb;
use haptics_app::render::{
    deform_cpu, render_image, FrameState, GpuContext, Image, Overlays, SceneRenderer,
    OFFSCREEN_FORMAT,
};
use haptics_app::ui::{fill_frame, render_snapshot, DebugViews};
use haptics_devices::trajectory::read_trajectory;
use haptics_devices::{simulated::SimConfig, simulated::SimulatedDevice, simulated::TargetSource};
use nalgebra::Point3;

/// Tests in this file run one at a time, so the timing test measures the haptic
/// thread beside its own render loop only, not beside the other tests' renders.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The repository root (the application crate lives in `app/`).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The cache the other scene tests share (the bridge bakes once per target directory).
fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache")
}

fn bridge_scene() -> Scene {
    let cache = cache();
    std::fs::create_dir_all(&cache).unwrap();
    load_scene(
        &root().join("assets/scenes/bridge-probe.toml"),
        &cache,
        &NoProgress,
    )
    .unwrap()
}

fn context() -> GpuContext {
    GpuContext::headless().expect("a wgpu adapter (CI installs mesa lavapipe)")
}

/// A q on the bridge's first mode that moves some render vertex by `amplitude`.
fn first_mode_q(scene: &Scene, amplitude: f64) -> Vec<f64> {
    let e = &scene.environment[0];
    let r = e.dynamics.as_ref().unwrap().r();
    let largest = e
        .render_basis
        .chunks_exact(3 * r)
        .map(|rows| {
            let c = [rows[0], rows[r], rows[2 * r]];
            f64::from((c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt())
        })
        .fold(0.0, f64::max);
    let mut q = vec![0.0; r];
    q[0] = amplitude / largest;
    q
}

fn coverage(img: &Image) -> (usize, Vec<bool>) {
    let mask = img.mask(background_srgb(), 6);
    (mask.iter().filter(|&&m| m).count(), mask)
}

#[test]
fn a_frame_of_the_default_scene_is_sized_drawn_and_follows_q() {
    let _serial = serial();
    let scene = bridge_scene();
    let ctx = context();
    let sim = HapticSimulation::new(scene.clone());
    let rest = Snapshot::capture(&sim);
    let size = (1280, 720);
    let img = render_snapshot(&ctx, &scene, &rest, DebugViews::default(), size).unwrap();
    assert_eq!((img.width, img.height), size);
    assert_eq!(img.rgba.len(), 1280 * 720 * 4);
    let (drawn, mask) = coverage(&img);
    let fraction = drawn as f64 / mask.len() as f64;
    // The framed bridge, probe and floor grid cover a part of the frame, not all of it
    // (measured: 11%).
    assert!(
        (0.05..0.95).contains(&fraction),
        "drawn fraction {fraction}"
    );
    // Lit shading: many distinct colours, not a flat fill.
    let mut colours: Vec<[u8; 4]> = (0..720)
        .step_by(7)
        .flat_map(|y| (0..1280).step_by(7).map(move |x| (x, y)))
        .map(|(x, y)| img.pixel(x, y))
        .collect();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "{} distinct colours", colours.len());

    // Deform the bridge along its first mode by 0.6 units (the bridge is 20 long).
    let mut bent = rest.clone();
    bent.q[0] = first_mode_q(&scene, 0.6);
    let img2 = render_snapshot(&ctx, &scene, &bent, DebugViews::default(), size).unwrap();
    let (_, mask2) = coverage(&img2);
    let changed = mask.iter().zip(&mask2).filter(|(a, b)| a != b).count();
    // A 0.6-unit motion is ~10 pixels at this framing, along a silhouette thousands of
    // pixels long: thousands of pixels change (a frame that ignored q changes none).
    assert!(changed > 1000, "{changed} silhouette pixels changed");
    println!("drawn {fraction:.3} of the frame, {changed} silhouette pixels changed with q");
}

#[test]
fn the_gpu_deformed_bridge_lies_where_the_cpu_puts_it() {
    let _serial = serial();
    let scene = bridge_scene();
    let ctx = context();
    let mut renderer =
        SceneRenderer::new(&ctx.device, &ctx.queue, &scene, OFFSCREEN_FORMAT).unwrap();
    let camera = haptics_app::ui::headless::default_camera(&renderer);
    let sim = HapticSimulation::new(scene.clone());
    let mut snap = Snapshot::capture(&sim);
    let q = first_mode_q(&scene, 1.0);
    snap.q[0] = q.clone();
    let mut frame = FrameState::default();
    fill_frame(&snap, &scene, &mut frame);
    // Objects only: the grid would cover pixels around every vertex.
    let overlays = Overlays {
        grid: false,
        ghost: false,
        contacts: false,
        ..Overlays::default()
    };
    let (w, h) = (1280u32, 720u32);
    let img = render_image(&ctx, &mut renderer, &frame, &camera, &overlays, (w, h)).unwrap();
    let (_, mask) = coverage(&img);

    // The CPU reference: X + U q, projected with the same camera.
    let e = &scene.environment[0];
    let r = q.len();
    let rest: Vec<[f32; 3]> = e
        .surface
        .vertices
        .iter()
        .map(|p| [p.x as f32, p.y as f32, p.z as f32])
        .collect();
    let qf: Vec<f32> = q.iter().map(|&x| x as f32).collect();
    let deformed = deform_cpu(&e.render_basis, r, &qf, Some(&rest));
    let projected_hits = |points: &[[f32; 3]]| {
        let m = camera.view_projection(w as f32 / h as f32);
        let (mut inside, mut hit) = (0usize, 0usize);
        for p in points {
            let world = e.pose.cast::<f32>() * Point3::from(*p);
            let c = m * world.to_homogeneous();
            let (x, y) = (c.x / c.w, c.y / c.w);
            if c.w <= 0.0 || x.abs() > 0.98 || y.abs() > 0.98 {
                continue;
            }
            let px = ((x + 1.0) * 0.5 * w as f32) as i64;
            let py = ((1.0 - y) * 0.5 * h as f32) as i64;
            inside += 1;
            // Within one pixel of a drawn pixel (rasterization rules at edges).
            let near = (-1..=1).any(|dy| {
                (-1..=1).any(|dx| {
                    let (xx, yy) = (px + dx, py + dy);
                    xx >= 0
                        && yy >= 0
                        && xx < w as i64
                        && yy < h as i64
                        && mask[(yy * w as i64 + xx) as usize]
                })
            });
            hit += usize::from(near);
        }
        (inside, hit)
    };
    let (inside, hit) = projected_hits(&deformed);
    assert!(inside > 10_000, "{inside} vertices on screen");
    // Every vertex lies on the drawn surface; allow 0.5% for sub-pixel slivers.
    assert!(
        hit as f64 >= 0.995 * inside as f64,
        "{hit} of {inside} projected vertices drawn"
    );
    // The check has teeth: the rest positions (q ignored) miss many drawn pixels.
    let (inside_rest, hit_rest) = projected_hits(&rest);
    let miss_rest = inside_rest - hit_rest;
    assert!(
        miss_rest as f64 > 0.02 * inside_rest as f64,
        "rest positions miss only {miss_rest} of {inside_rest}"
    );
    println!("deformed: {hit}/{inside} vertices drawn; rest: {hit_rest}/{inside_rest}");
}

#[test]
fn screenshot_renders_a_replayed_moment_and_rejects_bad_input() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("poke.png");
    let cache = cache();
    let o = haptics(&[
        "screenshot",
        "--trajectory",
        "assets/trajectories/bridge-probe-poke.csv",
        "--at",
        "1.5",
        "--out",
        out.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let reader = decoder.read_info().unwrap();
    assert_eq!((reader.info().width, reader.info().height), (1280, 720));
    // One cycle per recorded sample up to 1.5 s (the recording runs at about 1 kHz).
    let cycles: usize = stdout(&o)
        .split("after ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((1400..=1600).contains(&cycles), "{}", stdout(&o));

    // A moment past the end of the trajectory.
    let o = haptics(&[
        "screenshot",
        "--trajectory",
        "assets/trajectories/bridge-probe-poke.csv",
        "--at",
        "99",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("outside the trajectory"),
        "{}",
        stderr(&o)
    );
    // A missing scene names the file.
    let o = haptics(&[
        "screenshot",
        "no/such/scene.toml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no/such/scene.toml"), "{}", stderr(&o));
    // A corrupt trajectory names the file and line.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "time_s,px,py,pz,qw,qx,qy,qz,buttons\n0,0,0,0,1,0,0,0,0\n0.001,zero,0,0,1,0,0,0,0\n",
    )
    .unwrap();
    let o = haptics(&[
        "screenshot",
        "--trajectory",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("bad.csv") && e.contains('3'), "{e}");
}

#[test]
fn without_a_display_the_application_runs_the_headless_demo() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_haptics"))
        .args([
            "run",
            "--out",
            dir.path().to_str().unwrap(),
            "--cache",
            cache.to_str().unwrap(),
        ])
        .current_dir(root())
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .unwrap();
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("no display") && out.contains("headless"),
        "{out}"
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    assert!(
        summary.contains("bridge-probe") && summary.contains("p99.9"),
        "{summary}"
    );
    assert!(dir.path().join("frame.png").is_file(), "{summary}");
    // The poke presses the deck: contact happened.
    let contacts: usize = summary
        .lines()
        .find(|l| l.starts_with("contact"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(contacts > 0, "{summary}");
}

/// Rendering never delays the haptic thread: the thread never waits on the renderer
/// (it publishes through a triple buffer), so the only coupling is CPU contention. The
/// loop runs 3 s of the bridge scene against the simulated hand following the bundled
/// poke keyframes, without and then with a render loop drawing frames as fast as it can
/// beside it (software Vulkan in CI, which takes CPU cores a GPU would not).
#[test]
fn haptic_timing_with_and_without_rendering() {
    let _serial = serial();
    let scene = bridge_scene();
    let targets =
        read_trajectory(&root().join("assets/trajectories/targets/bridge-probe-poke.csv"))
            .unwrap()
            .samples;
    let run = |render: bool| {
        let device = SimulatedDevice::new(
            SimConfig {
                period_s: 1e-3,
                ..SimConfig::ideal()
            },
            TargetSource::Keyframes(targets.clone()),
        )
        .unwrap();
        let mut thread = HapticThread::spawn(
            HapticSimulation::new(scene.clone()),
            Box::new(device),
            1000.0,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let frames = std::sync::Mutex::new(0usize);
        std::thread::scope(|s| {
            if render {
                let stop = stop.clone();
                let scene = &scene;
                let frames = &frames;
                s.spawn(move || {
                    let ctx = context();
                    let mut renderer =
                        SceneRenderer::new(&ctx.device, &ctx.queue, scene, OFFSCREEN_FORMAT)
                            .unwrap();
                    let camera = haptics_app::ui::headless::default_camera(&renderer);
                    let sim = HapticSimulation::new(scene.clone());
                    let mut snap = Snapshot::capture(&sim);
                    let mut frame = FrameState::default();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        snap.q[0][0] = (n as f64 * 0.1).sin() * 0.5;
                        fill_frame(&snap, scene, &mut frame);
                        render_image(
                            &ctx,
                            &mut renderer,
                            &frame,
                            &camera,
                            &Overlays::default(),
                            (1280, 720),
                        )
                        .unwrap();
                        n += 1;
                    }
                    *frames.lock().unwrap() = n;
                });
            }
            std::thread::sleep(std::time::Duration::from_secs(3));
            stop.store(true, Ordering::Relaxed);
        });
        let last = thread.snapshot().clone();
        let (_, stats) = thread.stop();
        let frames = *frames.lock().unwrap();
        (stats.summary(), last, frames)
    };
    let (alone, snap_alone, _) = run(false);
    let (beside, snap_beside, frames) = run(true);
    println!("haptic thread real-time priority: {}", snap_alone.realtime);
    println!(
        "haptic p50/p99/p99.9/max us: alone {:.0}/{:.0}/{:.0}/{:.0} ({} cycles, {} overruns); \
         with rendering {:.0}/{:.0}/{:.0}/{:.0} ({} cycles, {} overruns, {frames} frames)",
        alone.p50_us,
        alone.p99_us,
        alone.p999_us,
        alone.max_us,
        alone.cycles,
        alone.overruns,
        beside.p50_us,
        beside.p99_us,
        beside.p999_us,
        beside.max_us,
        beside.cycles,
        beside.overruns,
    );
    assert!(frames > 0, "the render loop drew frames");
    for (s, snap) in [(&alone, &snap_alone), (&beside, &snap_beside)] {
        // About 3000 cycles ran in 3 s (scheduler jitter on a shared machine: 80%).
        assert!(s.cycles > 2400, "{} cycles", s.cycles);
        assert!(snap
            .report
            .is_some_and(|r| r.force.iter().all(|f| f.is_finite())));
    }
    // The work of a cycle does not depend on the renderer; its median must not move
    // by more than contention noise (2x, on a 2-core machine running software Vulkan).
    assert!(
        beside.p50_us < 2.0 * alone.p50_us + 20.0,
        "{beside:?} vs {alone:?}"
    );
}

/// Hides every GPU adapter from a child process: wgpu on Vulkan only, with a Vulkan
/// loader that finds no driver.
fn without_adapter(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd.env("WGPU_BACKEND", "vulkan")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .current_dir(root())
}

#[test]
fn without_an_adapter_the_demo_says_so_and_screenshot_fails_cleanly() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let cache = cache();
    let o = without_adapter(&mut std::process::Command::new(env!(
        "CARGO_BIN_EXE_haptics"
    )))
    .args(["run", "--headless", "--out", dir.path().to_str().unwrap()])
    .args(["--cache", cache.to_str().unwrap()])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let summary = std::fs::read_to_string(dir.path().join("summary.txt")).unwrap();
    assert!(
        summary.contains("not rendered: no GPU adapter"),
        "{summary}"
    );
    assert!(!dir.path().join("frame.png").exists());
    let out = dir.path().join("s.png");
    let o = without_adapter(&mut std::process::Command::new(env!(
        "CARGO_BIN_EXE_haptics"
    )))
    .args(["screenshot", "--out", out.to_str().unwrap()])
    .args(["--cache", cache.to_str().unwrap()])
    .output()
    .unwrap();
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("no GPU adapter") && e.contains("mesa-vulkan-drivers"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
}
