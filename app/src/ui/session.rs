//! A running scene: the haptic thread with its device (the simulated hand, a HID or
//! vendor device, or a replay), the channels the window talks to it over, and the
//! recordings it writes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};
use haptics_devices::hid::{backend::list_devices, backend::HidDevice, profile::builtin_profile};
use haptics_devices::trajectory::TrajectoryWriter;
use haptics_devices::{
    safety::SafeDevice, simulated::HandTarget, simulated::SimConfig, simulated::SimulatedDevice,
    simulated::TargetSource, trajectory::ReplayDevice, trajectory::TrajectorySample, Device, Pose,
    SafetySettings, TapControl, TapDevice, Wrench,
};

use super::frame::DebugContact;
use super::guide::GuideRecorder;
use super::AppError;
use haptics::haptic::{device_fit::DeviceFit, HapticSimulation, HapticThread};
use haptics::scene::Scene;

/// Where the device comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceChoice {
    /// A SpaceMouse if one is connected, else the simulated hand driven by the mouse.
    Auto,
    /// The simulated hand driven by the mouse and keyboard.
    Simulated,
    /// A HID device with this built-in profile (`haptics devices` lists them).
    Hid(String),
    /// A vendor SDK device (OpenHaptics, Force Dimension), with its enable button.
    Vendor {
        vendor: haptics_devices::vendor::Vendor,
        deadman: Option<u32>,
    },
}

/// A running scene: the haptic thread, its device's input channels, and the render
/// side's copies of the scene.
pub(super) struct Session {
    /// The scene as loaded (restarts start from it; the debug views and the renderer
    /// read its meshes and shells).
    pub(super) scene: Scene,
    pub(super) haptic: HapticThread,
    pub(super) debug: DebugContact,
    /// The mouse-driven target of the simulated hand (None for other devices).
    target_tx: Option<Sender<HandTarget>>,
    pub(super) target: HandTarget,
    pub(super) tap: Arc<TapControl>,
    pub(super) tap_rx: Receiver<(TrajectorySample, Wrench)>,
    pub(super) recorded: Option<Vec<(TrajectorySample, Wrench)>>,
    /// The guide path being recorded (the held object's poses, one per frame it moved).
    pub(super) guide: Option<GuideRecorder>,
    pub(super) device_name: String,
    pub(super) replaying: Option<PathBuf>,
    pub(super) workspace_scale: f64,
    /// The device's bounds on the scene (live devices with force output).
    fit: Option<DeviceFit>,
    /// The device renders force but no torque: the torque is plotted, not sent.
    pub(super) torque_not_sent: bool,
    /// The device's clutch button as a mask of its buttons (the simulated hand presses it
    /// while the clutch key is held).
    pub(super) clutch_mask: u32,
}

impl Session {
    /// Starts the haptic thread on `scene` with the chosen device (or a replay).
    pub(super) fn start(
        mut scene: Scene,
        choice: &DeviceChoice,
        replay: Option<&Path>,
    ) -> Result<Session, AppError> {
        let rate = scene.rate_hz;
        let target = HandTarget::new(Pose::default());
        let ((device, device_name, clutch), target_tx) = open_device(choice, replay, rate, target)?;
        // A real device with force output: the scene is fitted to its capabilities (the
        // simulated hand is the device scenes are tuned for, and a replay replays).
        let fit = if target_tx.is_none() && replay.is_none() {
            crate::live::fit_and_report(&mut scene, device.info())
        } else {
            None
        };
        let torque_not_sent = fit.is_some() && device.info().dof_actuated < 6;
        // 8 s of samples at 1 kHz: the window drains the tap every frame.
        let (tap, tap_rx, control) = TapDevice::new(device, 8192);
        let debug = DebugContact::new(&scene);
        let workspace_scale = scene.workspace_scale;
        let mut sim = HapticSimulation::new(scene.clone());
        sim.set_clutch_button(clutch);
        if let Some(f) = &fit {
            sim.set_caps(f.caps);
        }
        let haptic = HapticThread::spawn(sim, Box::new(tap), rate);
        Ok(Session {
            scene,
            haptic,
            debug,
            target_tx,
            target,
            tap: control,
            tap_rx,
            recorded: None,
            guide: None,
            device_name,
            replaying: replay.map(Path::to_path_buf),
            workspace_scale,
            fit,
            torque_not_sent,
            clutch_mask: haptics_devices::safety::clutch_mask(clutch),
        })
    }

    /// The comment lines of a recording of this session (device, fitted values).
    pub(super) fn header(&self) -> String {
        crate::live::recording_header(&self.device_name, self.fit.as_ref(), &self.scene)
    }

    /// Sends the simulated hand its target (nothing for other devices).
    pub(super) fn send_target(&self) {
        if let Some(tx) = &self.target_tx {
            // A full channel means the haptic thread has not read the last 64 targets;
            // dropping this one is fine (the next move sends a newer one).
            let _ = tx.try_send(self.target);
        }
    }
}

/// An opened device, the name shown for it and its clutch button.
type NamedDevice = (Box<dyn Device + Send>, String, Option<u32>);

/// The device for `choice`, or the replay of `replay`, with its name and clutch button;
/// and for the simulated hand (driven at `rate` Hz from `target`), the sender of its
/// target poses.
fn open_device(
    choice: &DeviceChoice,
    replay: Option<&Path>,
    rate: f64,
    target: HandTarget,
) -> Result<(NamedDevice, Option<Sender<HandTarget>>), AppError> {
    let default_clutch = SafetySettings::default().clutch_button;
    if let Some(path) = replay {
        let device = ReplayDevice::open(path).map_err(anyhow::Error::from)?;
        let name = format!("replay of {}", path.display());
        return Ok(((Box::new(device), name, default_clutch), None));
    }
    if let Some(named) = open_hid(choice)? {
        return Ok((named, None));
    }
    let (tx, rx) = crossbeam_channel::bounded(64);
    let config = SimConfig {
        period_s: 1.0 / rate,
        ..SimConfig::default()
    };
    let initial = target;
    let device = SimulatedDevice::new(config, TargetSource::Live { rx, initial })
        .map_err(anyhow::Error::from)?;
    let name = "simulated hand (mouse and keyboard)".to_string();
    Ok(((Box::new(device), name, default_clutch), Some(tx)))
}

/// A HID device for `choice`, if it names one or `Auto` finds a SpaceMouse.
fn open_hid(choice: &DeviceChoice) -> Result<Option<NamedDevice>, AppError> {
    let open = |name: &str, path: Option<&str>| -> Result<NamedDevice, AppError> {
        let profile = builtin_profile(name).map_err(anyhow::Error::from)?;
        let settings = profile.safety.clone();
        let clutch = settings.clutch_button;
        let hid = match path {
            Some(p) => HidDevice::open_path(profile, p),
            None => HidDevice::open(profile),
        }
        .map_err(anyhow::Error::from)?;
        let device = SafeDevice::new(hid, settings).map_err(anyhow::Error::from)?;
        Ok((Box::new(device), format!("HID device ({name})"), clutch))
    };
    match choice {
        DeviceChoice::Simulated => Ok(None),
        DeviceChoice::Vendor { vendor, deadman } => {
            let (device, name) = crate::live::open_vendor(*vendor, *deadman)?;
            if let Some(b) = deadman {
                println!("{name}: hold button {b} to enable force");
            }
            let clutch = device.settings().clutch_button;
            Ok(Some((Box::new(device), name, clutch)))
        }
        DeviceChoice::Hid(name) => open(name, None).map(Some),
        DeviceChoice::Auto => {
            let found = list_devices().ok().and_then(|list| {
                list.into_iter().find(|d| {
                    d.profile
                        .as_deref()
                        .is_some_and(|p| p.starts_with("spacemouse"))
                })
            });
            match found {
                Some(d) => {
                    let name = d.profile.clone().unwrap_or_default();
                    match open(&name, Some(&d.path)) {
                        Ok(dev) => Ok(Some(dev)),
                        Err(e) => {
                            eprintln!("a SpaceMouse is connected but could not be opened ({e}); using the mouse");
                            Ok(None)
                        }
                    }
                }
                None => Ok(None),
            }
        }
    }
}

/// The error that ends a session whose device failed: stops the haptic thread (the
/// device is closed: zero force, scheduler stopped), saves a recording in progress, and
/// names the device and the fault.
pub(super) fn device_failed(
    s: &mut Session,
    fault: &haptics_devices::vendor::VendorFault,
) -> anyhow::Error {
    s.tap.set_recording(false);
    let saved = match s.recorded.take() {
        Some(mut samples) => {
            samples.extend(s.tap_rx.try_iter());
            let path = PathBuf::from("target/recordings/session-before-fault.csv");
            match write_recording(&path, &samples, &s.header()) {
                Ok(()) => format!(
                    "; the recording so far ({} samples) is in {}",
                    samples.len(),
                    path.display()
                ),
                Err(e) => format!("; the recording could not be saved: {e:#}"),
            }
        }
        None => String::new(),
    };
    anyhow::anyhow!(
        "{} failed: {fault}. Force output was switched off{saved}",
        s.device_name
    )
}

/// Writes a recorded session as a trajectory CSV with the rendered wrench columns
/// (atomically: a half-written file never replaces a good one),
/// after `header`'s comment lines (see [`crate::live::recording_header`]).
pub(super) fn write_recording(
    path: &Path,
    samples: &[(TrajectorySample, Wrench)],
    header: &str,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    haptics::io::write_atomic(path, |file| {
        use std::io::Write as _;
        file.write_all(header.as_bytes())?;
        let mut w = TrajectoryWriter::new(file, true)?;
        for (s, f) in samples {
            w.write(s, Some(f))?;
        }
        w.finish()?;
        Ok(())
    })
    .with_context(|| format!("writing {}", path.display()))
}
