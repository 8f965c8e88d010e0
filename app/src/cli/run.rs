//! `haptics` with no arguments, or `haptics run [SCENE]`: the interactive application on
//! a scene (the deformable bridge and a rigid probe by default) with the simulated
//! device, a SpaceMouse or a HID device; without a display or GPU adapter, the headless
//! demo instead (a replay of the scene's bundled trajectory, a PNG frame and a summary).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use haptics_devices::trajectory::read_trajectory;

use super::assets_dir;
use super::replay::load_with_progress;
use crate::ui::window::{self, WindowConfig};
use crate::ui::{run_demo, DemoSummary};
use crate::ui::{AppError, DeviceChoice};

/// Arguments of `haptics run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The scene file (default: assets/scenes/bridge-probe.toml).
    pub scene: Option<PathBuf>,
    /// The device: `auto` (a connected SpaceMouse, else the simulated hand driven by
    /// the mouse), `simulated`, `openhaptics` (a 3D Systems Touch / Touch X / PHANTOM
    /// through libHD.so), `forcedimension` (an omega / sigma / delta through libdhd.so),
    /// `haply` (an Inverse3 through Haply's Inverse Service), or `hid:PROFILE` (see
    /// `haptics devices`). Vendor libraries are found through HAPTICS_OPENHAPTICS_LIB /
    /// HAPTICS_DHD_LIB or the dynamic loader; the Inverse Service at
    /// HAPTICS_HAPLY_SERVICE or ws://localhost:10001.
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// The enable (deadman) button of a vendor device (a Haply's are its Verse Grip's):
    /// force is sent only while it is held (a button index 0..=31, or `off`).
    #[arg(long, default_value = "0", value_parser = crate::live::parse_deadman)]
    pub deadman: crate::live::Deadman,
    /// Run the headless demo even if a window could open.
    #[arg(long)]
    pub headless: bool,
    /// The trajectory the headless demo replays (default: the scene's bundled
    /// assets/trajectories/SCENE-poke.csv, or the first SCENE-*.csv).
    #[arg(long)]
    pub trajectory: Option<PathBuf>,
    /// Where the headless demo writes frame.png and summary.txt.
    #[arg(long, default_value = "target/haptics-demo")]
    pub out: PathBuf,
    /// Cache directory for the scene's baked fields, pointshells and models.
    #[arg(long, default_value = "target/haptics-cache")]
    pub cache: PathBuf,
    /// Close the window after N frames (for smoke tests; default: run until closed).
    #[arg(long)]
    pub frames: Option<u64>,
    #[command(flatten)]
    pub params: super::ParamOverrides,
}

impl RunArgs {
    /// `haptics run` with every default, as clap fills them in.
    pub fn defaults() -> RunArgs {
        /// A command line holding only `run`'s arguments.
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            run: RunArgs,
        }
        <Defaults as clap::Parser>::parse_from(["haptics"]).run
    }
}

/// The default scene file.
pub fn default_scene() -> PathBuf {
    assets_dir().join("scenes/bridge-probe.toml")
}

/// The bundled scene files, sorted.
pub fn bundled_scenes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(assets_dir().join("scenes"))
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The bundled trajectory of a scene file: `SCENE-poke.csv`, else the first `SCENE-*.csv`.
pub fn default_trajectory(scene: &Path) -> anyhow::Result<PathBuf> {
    let stem = scene
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = assets_dir().join("trajectories");
    let poke = dir.join(format!("{stem}-poke.csv"));
    if poke.is_file() {
        return Ok(poke);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{stem}-")))
        })
        .collect();
    found.sort();
    match found.into_iter().next() {
        Some(p) => Ok(p),
        None => bail!(
            "no bundled trajectory for scene '{stem}' in {}; pass --trajectory FILE",
            dir.display()
        ),
    }
}

fn device_choice(s: &str, deadman: Option<u32>) -> anyhow::Result<DeviceChoice> {
    if let Some(v) = haptics_devices::vendor::Vendor::from_device_name(s) {
        return Ok(DeviceChoice::Vendor { vendor: v, deadman });
    }
    Ok(match s {
        "auto" => DeviceChoice::Auto,
        "simulated" => DeviceChoice::Simulated,
        _ => match s.strip_prefix("hid:") {
            Some(p) if !p.is_empty() => DeviceChoice::Hid(p.to_string()),
            _ => bail!(
                "unknown --device '{s}': expected auto, simulated, openhaptics, forcedimension, haply or hid:PROFILE"
            ),
        },
    })
}

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    let scene_path = a.scene.clone().unwrap_or_else(default_scene);
    let device = device_choice(&a.device, a.deadman.0)?;
    // The headless demo replays a trajectory: it cannot use a real device. Say so rather
    // than ignore the device the user asked for.
    let live = matches!(device, DeviceChoice::Vendor { .. } | DeviceChoice::Hid(_));
    let headless_refused = |why: String| {
        anyhow::anyhow!(
            "--device {} needs the window, and {why}; `haptics record SCENE --device {} --duration S --out traj.csv` runs the haptic loop on it without one",
            a.device,
            a.device
        )
    };
    let event_loop = if a.headless {
        if live {
            return Err(headless_refused("--headless was given".into()));
        }
        None
    } else {
        match window::open_event_loop() {
            Ok(el) => Some(el),
            Err(e) if live => return Err(headless_refused(format!("none can open ({e})"))),
            Err(e) => {
                println!("{e}\nrunning the demo headless instead");
                None
            }
        }
    };
    let mut scene = load_with_progress(&scene_path, &a.cache)?;
    a.params.apply(&mut scene);
    if let Some(el) = event_loop {
        let cache = a.cache.clone();
        let overrides = a.params.clone();
        let config = WindowConfig {
            scenes: bundled_scenes(),
            scene_path: scene_path.clone(),
            device,
            loader: Box::new(move |p: &Path| {
                let mut scene = load_with_progress(p, &cache)?;
                overrides.apply(&mut scene);
                Ok(scene)
            }),
            max_frames: a.frames,
        };
        match window::run(el, config, scene.clone()) {
            Ok(()) => return Ok(()),
            Err(e @ (AppError::NoDisplay(_) | AppError::Render(_))) if !live => {
                println!("cannot show the window ({e}): running the demo headless instead");
            }
            Err(e) => return Err(e.into()),
        }
    }
    let trajectory_path = match &a.trajectory {
        Some(p) => p.clone(),
        None => default_trajectory(&scene_path)?,
    };
    let trajectory = read_trajectory(&trajectory_path)?;
    let summary: DemoSummary = run_demo(scene, &trajectory, &trajectory_path, &a.out, (1280, 720))?;
    print!("{summary}");
    println!("summary          {}", a.out.join("summary.txt").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_means_run_with_clap_defaults() {
        let a = RunArgs::defaults();
        assert_eq!(a.device, "auto");
        assert_eq!(a.out, PathBuf::from("target/haptics-demo"));
        assert_eq!(a.cache, PathBuf::from("target/haptics-cache"));
        assert!(a.scene.is_none() && a.trajectory.is_none() && a.frames.is_none());
        assert!(!a.headless);
    }
}
