//! The window: winit events, a wgpu surface, the scene renderer and egui, on the main
//! (render) thread, while the haptic thread runs the session.
//!
//! Surface problems are part of normal life and never end the program: a zero-sized
//! (minimized) window skips frames; `Outdated` and `Suboptimal` reconfigure the surface;
//! `Lost` recreates it; `Timeout` and `Occluded` skip the frame. A window that cannot be
//! created, an adapter that cannot present to it, or a surface offering no colour format
//! the renderer supports end with a typed [`AppError`] naming the cause, and the caller
//! falls back to the headless demo.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use haptics_devices::hid::{builtin_profile, list_devices, HidDevice};
use haptics_devices::trajectory::TrajectoryWriter;
use haptics_devices::{
    Device, HandTarget, Pose, ReplayDevice, SafeDevice, SafetySettings, SimConfig, SimulatedDevice,
    TapControl, TapDevice, TargetSource, TrajectorySample, Wrench,
};
use nalgebra::UnitQuaternion;
use thiserror::Error;
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};
use winit::window::{Window, WindowId};

use super::frame::{fill_frame, DebugContact, DebugViews};
use super::headless::default_camera;
use super::input::{
    drag_rotation, drag_translation, move_target, wheel_translation, ORBIT_RAD_PER_PIXEL,
};
use super::panels::{self, Action, Parameters, Plots, Status, UiState};
use crate::render::{FrameState, OrbitCamera, RenderError, SceneRenderer};
use haptics::haptic::{Command, HapticSimulation, HapticThread};
use haptics::scene::{Param, Scene};

/// Why the window could not run.
#[derive(Debug, Error)]
pub enum AppError {
    /// No display server (or the window could not be created).
    #[error("no display: {0}")]
    NoDisplay(String),
    /// The GPU side failed (no adapter, no usable surface format, ...).
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Anything else (a scene that failed to load, ...).
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

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
        vendor: haptics_devices::Vendor,
        deadman: Option<u32>,
    },
}

/// Loads a scene file (with progress on the terminal).
pub type SceneLoader = Box<dyn Fn(&Path) -> anyhow::Result<Scene>>;

/// What the window starts with.
pub struct WindowConfig {
    /// Scene files offered by the picker.
    pub scenes: Vec<PathBuf>,
    /// The scene file of `scene`.
    pub scene_path: PathBuf,
    pub device: DeviceChoice,
    pub loader: SceneLoader,
    /// Close after this many presented frames (smoke tests); `None` runs until closed.
    pub max_frames: Option<u64>,
}

/// Opens the event loop: the first thing that fails without a display.
pub fn open_event_loop() -> Result<EventLoop<()>, AppError> {
    EventLoop::new().map_err(|e| AppError::NoDisplay(e.to_string()))
}

/// Runs the window until it is closed.
pub fn run(event_loop: EventLoop<()>, config: WindowConfig, scene: Scene) -> Result<(), AppError> {
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App {
        display: event_loop.owned_display_handle(),
        session: Some(Session::start(scene, &config.device, None)?),
        config,
        gfx: None,
        error: None,
        input: InputState::default(),
        frame: FrameState::default(),
        ui: None,
        last_frame: Instant::now(),
        last_rate: (Instant::now(), 0),
        frames: 0,
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| AppError::NoDisplay(e.to_string()))?;
    match app.error.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A running scene: the haptic thread, its device's input channels, and the render
/// side's copies of the scene.
struct Session {
    /// The scene as loaded (restarts start from it; the debug views and the renderer
    /// read its meshes and shells).
    scene: Scene,
    haptic: HapticThread,
    debug: DebugContact,
    /// The mouse-driven target of the simulated hand (None for other devices).
    target_tx: Option<Sender<HandTarget>>,
    target: HandTarget,
    tap: Arc<TapControl>,
    tap_rx: Receiver<(TrajectorySample, Wrench)>,
    recorded: Option<Vec<(TrajectorySample, Wrench)>>,
    /// The guide path being recorded (the held object's poses, one per frame it moved).
    guide: Option<super::guide::GuideRecorder>,
    device_name: String,
    replaying: Option<PathBuf>,
    workspace_scale: f64,
    /// The device's bounds on the scene (live devices with force output).
    fit: Option<haptics::haptic::DeviceFit>,
    /// The device renders force but no torque: the torque is plotted, not sent.
    torque_not_sent: bool,
}

impl Session {
    /// Starts the haptic thread on `scene` with the chosen device (or a replay).
    fn start(
        mut scene: Scene,
        choice: &DeviceChoice,
        replay: Option<&Path>,
    ) -> Result<Session, AppError> {
        let rate = scene.rate_hz;
        let target = HandTarget::new(Pose::default());
        let mut target_tx = None;
        let default_clutch = SafetySettings::default().clutch_button;
        let (device, device_name, clutch): NamedDevice = if let Some(path) = replay {
            (
                Box::new(ReplayDevice::open(path).map_err(anyhow::Error::from)?),
                format!("replay of {}", path.display()),
                default_clutch,
            )
        } else {
            match open_hid(choice)? {
                Some(named) => named,
                None => {
                    let (tx, rx) = crossbeam_channel::bounded(64);
                    target_tx = Some(tx);
                    let config = SimConfig {
                        period_s: 1.0 / rate,
                        ..SimConfig::default()
                    };
                    let d = SimulatedDevice::new(
                        config,
                        TargetSource::Live {
                            rx,
                            initial: target,
                        },
                    )
                    .map_err(anyhow::Error::from)?;
                    (
                        Box::new(d),
                        "simulated hand (mouse and keyboard)".to_string(),
                        default_clutch,
                    )
                }
            }
        };
        // A real device with force output: the scene is fitted to its capabilities (the
        // simulated hand is the device scenes are tuned for, and a replay replays).
        let fit = if target_tx.is_none() && replay.is_none() {
            crate::cli::live::fit_and_report(&mut scene, device.info())
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
        })
    }

    /// The comment lines of a recording of this session (device, fitted values).
    fn header(&self) -> String {
        crate::cli::live::recording_header(&self.device_name, self.fit.as_ref(), &self.scene)
    }

    fn send_target(&self) {
        if let Some(tx) = &self.target_tx {
            // A full channel means the haptic thread has not read the last 64 targets;
            // dropping this one is fine (the next move sends a newer one).
            let _ = tx.try_send(self.target);
        }
    }
}

/// An opened device, the name shown for it and its clutch button.
type NamedDevice = (Box<dyn Device + Send>, String, Option<u32>);

/// The buttons of the simulated hand while the clutch key is held: the default clutch
/// button ([`SafetySettings::clutch_button`]).
const SIMULATED_CLUTCH: u32 = 1 << haptics_devices::safety::DEFAULT_CLUTCH_BUTTON;

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
            let (device, name) = crate::cli::live::open_vendor(*vendor, *deadman)?;
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

/// The GPU side of the window.
struct Gfx {
    window: Arc<Window>,
    instance: wgpu::Instance,
    surface: wgpu::Surface<'static>,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    config: wgpu::SurfaceConfiguration,
    renderer: SceneRenderer,
    camera: OrbitCamera,
    egui: egui::Context,
    egui_state: egui_winit::State,
    egui_renderer: egui_wgpu::Renderer,
    adapter_name: String,
}

/// Surface formats the renderer accepts, best first (sRGB so that shading is linear).
const FORMATS: [wgpu::TextureFormat; 4] = [
    wgpu::TextureFormat::Bgra8UnormSrgb,
    wgpu::TextureFormat::Rgba8UnormSrgb,
    wgpu::TextureFormat::Bgra8Unorm,
    wgpu::TextureFormat::Rgba8Unorm,
];

/// Picks the surface format: the first the surface offers of `Bgra8UnormSrgb`,
/// `Rgba8UnormSrgb`, `Bgra8Unorm`, `Rgba8Unorm`.
pub fn choose_format(offered: &[wgpu::TextureFormat]) -> Result<wgpu::TextureFormat, RenderError> {
    FORMATS
        .iter()
        .find(|f| offered.contains(f))
        .copied()
        .ok_or_else(|| {
            RenderError::UnsupportedFormat(format!(
                "the window surface offers {offered:?}; the renderer needs one of {FORMATS:?}"
            ))
        })
}

impl Gfx {
    fn new(
        event_loop: &ActiveEventLoop,
        display: &winit::event_loop::OwnedDisplayHandle,
        scene: &Scene,
    ) -> Result<Gfx, AppError> {
        let attributes = Window::default_attributes()
            .with_title(format!("haptics — {}", scene.name))
            .with_inner_size(winit::dpi::LogicalSize::new(1440.0, 900.0));
        let window = Arc::new(
            event_loop
                .create_window(attributes)
                .map_err(|e| AppError::NoDisplay(e.to_string()))?,
        );
        let instance = wgpu::Instance::new(
            wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(display.clone())),
        );
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| RenderError::NoAdapter(format!("cannot create a window surface: {e}")))?;
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            compatible_surface: Some(&surface),
            ..Default::default()
        }))
        .map_err(|e| RenderError::NoAdapter(format!("none can present to this window: {e}")))?;
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("haptics window device"),
            required_limits: crate::render::required_limits(&adapter),
            ..Default::default()
        }))
        .map_err(RenderError::from)?;
        let caps = surface.get_capabilities(&adapter);
        let format = choose_format(&caps.formats)?;
        let size = window.inner_size();
        let config = wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 2,
            alpha_mode: caps
                .alpha_modes
                .first()
                .copied()
                .unwrap_or(wgpu::CompositeAlphaMode::Auto),
            view_formats: vec![],
        };
        surface.configure(&device, &config);
        let renderer = SceneRenderer::new(&device, &queue, scene, format)?;
        let camera = default_camera(&renderer);
        let egui = egui::Context::default();
        let egui_state = egui_winit::State::new(
            egui.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(device.limits().max_texture_dimension_2d as usize),
        );
        let egui_renderer = egui_wgpu::Renderer::new(&device, format, Default::default());
        let info = adapter.get_info();
        Ok(Gfx {
            adapter_name: format!("{} ({:?})", info.name, info.backend),
            window,
            instance,
            surface,
            adapter,
            device,
            queue,
            config,
            renderer,
            camera,
            egui,
            egui_state,
            egui_renderer,
        })
    }

    fn resize(&mut self, width: u32, height: u32) {
        if width > 0 && height > 0 {
            self.config.width = width;
            self.config.height = height;
            self.surface.configure(&self.device, &self.config);
        }
    }

    /// Recreates a lost surface.
    fn recreate_surface(&mut self) -> Result<(), RenderError> {
        self.surface = self
            .instance
            .create_surface(self.window.clone())
            .map_err(|e| {
                RenderError::NoAdapter(format!("cannot recreate the window surface: {e}"))
            })?;
        let caps = self.surface.get_capabilities(&self.adapter);
        self.config.format = choose_format(&caps.formats)?;
        self.surface.configure(&self.device, &self.config);
        Ok(())
    }
}

/// Mouse and keyboard state between events.
#[derive(Debug, Default)]
struct InputState {
    cursor: Option<(f64, f64)>,
    left: bool,
    right: bool,
    middle: bool,
    modifiers: ModifiersState,
    clutch: bool,
}

impl InputState {
    /// Records a mouse button going down or up.
    fn press(&mut self, button: MouseButton, down: bool) {
        match button {
            MouseButton::Left => self.left = down,
            MouseButton::Right => self.right = down,
            MouseButton::Middle => self.middle = down,
            _ => {}
        }
    }
}

/// Moves the simulated hand's target by world motions, through the workspace mapping.
struct TargetMover {
    alpha: f64,
    index: nalgebra::Isometry3<f64>,
}

impl TargetMover {
    /// Translates `pose` by the world translation `t`.
    fn translate(&self, pose: &mut Pose, t: &nalgebra::Vector3<f64>) {
        move_target(
            pose,
            t,
            &UnitQuaternion::identity(),
            self.alpha,
            &self.index,
        )
    }

    /// Rotates `pose` by the world rotation `r`.
    fn rotate(&self, pose: &mut Pose, r: &UnitQuaternion<f64>) {
        move_target(
            pose,
            &nalgebra::Vector3::zeros(),
            r,
            self.alpha,
            &self.index,
        )
    }
}

/// Orbits, pans or drags the target by a cursor move to `(x, y)`; returns whether the
/// target moved.
fn cursor_moved(
    input: &mut InputState,
    g: &mut Gfx,
    s: &mut Session,
    mover: &TargetMover,
    (x, y): (f64, f64),
) -> bool {
    let height = f64::from(g.config.height);
    let mut moved = false;
    if let Some((x0, y0)) = input.cursor {
        let (dx, dy) = (x - x0, y - y0);
        let ctrl = input.modifiers.control_key();
        let shift = input.modifiers.shift_key();
        if input.right {
            g.camera.orbit(
                -dx as f32 * ORBIT_RAD_PER_PIXEL,
                dy as f32 * ORBIT_RAD_PER_PIXEL,
            );
        } else if input.middle || (input.left && ctrl) {
            let k = g.camera.pixel_size(height as f32) / g.camera.distance;
            g.camera.pan(-dx as f32 * k, dy as f32 * k);
        } else if input.left && shift {
            let r = drag_rotation(&g.camera, dx, dy);
            mover.rotate(&mut s.target.pose, &r);
            moved = true;
        } else if input.left {
            let t = drag_translation(&g.camera, dx, dy, height);
            mover.translate(&mut s.target.pose, &t);
            moved = true;
        }
    }
    input.cursor = Some((x, y));
    moved
}

/// Zooms (with Ctrl) or pushes the target along the view by a wheel turn; returns
/// whether the target moved.
fn mouse_wheel(
    input: &InputState,
    g: &mut Gfx,
    s: &mut Session,
    mover: &TargetMover,
    delta: &MouseScrollDelta,
) -> bool {
    let steps = match delta {
        MouseScrollDelta::LineDelta(_, y) => f64::from(*y),
        MouseScrollDelta::PixelDelta(p) => p.y / 40.0,
    };
    if input.modifiers.control_key() {
        g.camera.zoom(0.9f32.powf(steps as f32));
        false
    } else {
        let t = wheel_translation(&g.camera, steps);
        mover.translate(&mut s.target.pose, &t);
        true
    }
}

/// Handles the clutch, reset, home and camera-reset keys; returns whether the target
/// moved.
fn key_input(
    input: &mut InputState,
    g: &mut Gfx,
    s: &mut Session,
    event: &winit::event::KeyEvent,
) -> bool {
    let down = event.state == ElementState::Pressed;
    let PhysicalKey::Code(code) = event.physical_key else {
        return false;
    };
    match code {
        KeyCode::Space => {
            input.clutch = down;
            s.target.buttons = if down { SIMULATED_CLUTCH } else { 0 };
            true
        }
        KeyCode::KeyR if down && !event.repeat => {
            s.haptic.send(Command::Reset);
            false
        }
        KeyCode::Home if down => {
            s.target.pose = Pose::default();
            true
        }
        KeyCode::KeyF if down => {
            g.camera = default_camera(&g.renderer);
            false
        }
        _ => false,
    }
}

struct App {
    display: winit::event_loop::OwnedDisplayHandle,
    config: WindowConfig,
    session: Option<Session>,
    gfx: Option<Gfx>,
    error: Option<AppError>,
    input: InputState,
    frame: FrameState,
    ui: Option<UiState>,
    last_frame: Instant,
    last_rate: (Instant, u64),
    /// Frames presented.
    frames: u64,
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: AppError) {
        self.error = Some(e);
        event_loop.exit();
    }

    /// Replaces the session (a new scene, a replay, or back to live).
    fn restart(&mut self, scene: Scene, replay: Option<&Path>) -> Result<(), AppError> {
        // Stop the old haptic thread first: the device is released before a new one opens.
        if let Some(old) = self.session.take() {
            drop(old.haptic.stop());
        }
        let session = Session::start(scene, &self.config.device, replay)?;
        if let Some(g) = &mut self.gfx {
            g.renderer = SceneRenderer::new(&g.device, &g.queue, &session.scene, g.config.format)?;
            g.camera = default_camera(&g.renderer);
            g.window
                .set_title(&format!("haptics — {}", session.scene.name));
        }
        self.session = Some(session);
        Ok(())
    }

    fn apply(&mut self, action: Action) {
        let message = match self.apply_inner(action) {
            Ok(m) => m,
            Err(e) => Some(format!("{e:#}")),
        };
        if let (Some(ui), Some(m)) = (&mut self.ui, message) {
            ui.status.message = Some(m);
        }
    }

    fn apply_inner(&mut self, action: Action) -> anyhow::Result<Option<String>> {
        let Some(session) = &mut self.session else {
            return Ok(None);
        };
        match action {
            Action::Command(c) => {
                if let Command::Set(Param::WarmBudget, b) = c {
                    session.debug.set_budget(b as usize);
                }
                if !session.haptic.send(c) {
                    return Ok(Some("the haptic thread's command queue is full".into()));
                }
            }
            Action::FrameCamera => {
                if let Some(g) = &mut self.gfx {
                    g.camera = default_camera(&g.renderer);
                }
            }
            Action::StartRecording => {
                while session.tap_rx.try_recv().is_ok() {}
                session.recorded = Some(Vec::new());
                session.tap.set_recording(true);
            }
            Action::StopRecording(path) => {
                session.tap.set_recording(false);
                let mut samples = session.recorded.take().unwrap_or_default();
                samples.extend(session.tap_rx.try_iter());
                write_recording(&path, &samples, &session.header())?;
                return Ok(Some(format!(
                    "wrote {} samples ({} dropped) to {}",
                    samples.len(),
                    session.tap.dropped(),
                    path.display()
                )));
            }
            Action::StartGuide => {
                session.guide = Some(super::guide::GuideRecorder::default());
            }
            Action::StopGuide(path) => {
                let guide = session.guide.take().unwrap_or_default();
                guide.export(&path)?;
                return Ok(Some(format!(
                    "exported {} poses to {}; plan with: haptics plan {} --guide {} --out planned.path",
                    guide.len(),
                    path.display(),
                    self.config.scene_path.display(),
                    path.display()
                )));
            }
            Action::Replay(path) => {
                let scene = session.scene.clone();
                self.restart(scene, Some(&path))?;
                return Ok(Some(format!("replaying {}", path.display())));
            }
            Action::Live => {
                let scene = session.scene.clone();
                self.restart(scene, None)?;
            }
            Action::OpenScene(path) => {
                let scene = (self.config.loader)(&path)?;
                self.restart(scene, None)?;
                self.config.scene_path = path;
                // Fresh panels for the new scene (built on the next frame).
                self.ui = None;
            }
        }
        Ok(None)
    }

    fn handle_input(&mut self, event: &WindowEvent) {
        let (Some(g), Some(s)) = (&mut self.gfx, &mut self.session) else {
            return;
        };
        let mover = TargetMover {
            alpha: s.workspace_scale,
            index: s.haptic.snapshot().workspace_index,
        };
        let input = &mut self.input;
        let moved = match event {
            WindowEvent::ModifiersChanged(m) => {
                input.modifiers = m.state();
                false
            }
            WindowEvent::MouseInput { state, button, .. } => {
                input.press(*button, *state == ElementState::Pressed);
                false
            }
            WindowEvent::CursorMoved { position, .. } => {
                cursor_moved(input, g, s, &mover, (position.x, position.y))
            }
            WindowEvent::CursorLeft { .. } => {
                input.cursor = None;
                false
            }
            WindowEvent::MouseWheel { delta, .. } => mouse_wheel(input, g, s, &mover, delta),
            WindowEvent::KeyboardInput { event, .. } => key_input(input, g, s, event),
            _ => false,
        };
        if moved {
            s.send_target();
        }
    }

    /// Draws a frame; returns whether one was presented (minimized windows and
    /// unavailable surfaces skip frames).
    /// One frame: read the haptic snapshot, update the panels' status and plots, run
    /// the egui pass, then draw the scene and the panels into the window's surface.
    /// Returns whether a frame was presented.
    fn redraw(&mut self) -> Result<bool, AppError> {
        let (Some(g), Some(s)) = (&mut self.gfx, &mut self.session) else {
            return Ok(false);
        };
        if g.config.width == 0 || g.config.height == 0 || g.window.is_minimized() == Some(true) {
            return Ok(false);
        }
        let now = Instant::now();
        let dt = now.duration_since(self.last_frame).as_secs_f64();
        self.last_frame = now;
        let config = &self.config;
        let ui = self
            .ui
            .get_or_insert_with(|| ui_state(config, &s.scene, &g.adapter_name));

        // The haptic state: copied out of the triple buffer, never waited for.
        let snapshot = s.haptic.snapshot();
        if let Some(fault) = snapshot.device_fault {
            return Err(AppError::Other(device_failed(s, &fault)));
        }
        fill_frame(snapshot, &s.scene, &mut self.frame);
        if ui.views != DebugViews::default() {
            s.debug
                .add_views(&s.scene, snapshot, ui.views, &mut self.frame);
        }
        update_status(ui, snapshot, dt);
        let st = &mut ui.status;
        st.device = if s.torque_not_sent {
            format!("{} (3-DOF output: torque plotted, not sent)", s.device_name)
        } else {
            s.device_name.clone()
        };
        st.clutch = self.input.clutch;
        st.replaying = s.replaying.clone();
        if let Some(g) = &mut s.guide {
            // A thousandth of the scene's object size, or a tenth of a degree.
            let size = s.scene.haptic.surface.bounding_box().extent().norm();
            g.push(
                &snapshot.haptic_pose,
                1e-3 * size,
                1e-3 * std::f64::consts::PI,
            );
        }
        st.guiding = s.guide.as_ref().map(|g| g.len());
        st.recording = s.recorded.as_mut().map(|rec| {
            rec.extend(s.tap_rx.try_iter());
            (rec.len(), s.tap.dropped())
        });
        let since = now.duration_since(self.last_rate.0).as_secs_f64();
        if since >= 0.5 {
            ui.status.haptic_rate_hz =
                (snapshot.cycle.saturating_sub(self.last_rate.1)) as f64 / since;
            self.last_rate = (now, snapshot.cycle);
        }

        let panels = run_panels(g, ui);
        let drawn = match acquire_surface(g)? {
            Some(texture) => {
                draw_and_present(g, &self.frame, ui, &panels, texture)?;
                true
            }
            None => false,
        };
        for id in &panels.freed {
            g.egui_renderer.free_texture(id);
        }
        self.pending(panels.actions);
        Ok(drawn)
    }

    fn pending(&mut self, actions: Vec<Action>) {
        for a in actions {
            self.apply(a);
        }
    }
}

/// The panels' state for a freshly started scene.
fn ui_state(config: &WindowConfig, scene: &Scene, adapter: &str) -> UiState {
    let levels = scene
        .environment
        .iter()
        .map(|e| e.shell.level_offsets.len().saturating_sub(1))
        .max()
        .unwrap_or(0);
    UiState {
        scenes: config.scenes.clone(),
        scene: config.scene_path.clone(),
        params: Parameters::of(scene),
        overlays: crate::render::Overlays::for_scene(scene),
        views: DebugViews::default(),
        pointshell_levels_max: levels,
        record_path: "target/recordings/session.csv".into(),
        guide_path: "target/recordings/guide.path".into(),
        replay_path: "assets/trajectories/bridge-probe-poke.csv".into(),
        plots: Plots::default(),
        status: Status {
            adapter: adapter.to_string(),
            ..Status::default()
        },
    }
}

/// The error that ends a session whose device failed: stops the haptic thread (the
/// device is closed: zero force, scheduler stopped), saves a recording in progress, and
/// names the device and the fault.
fn device_failed(s: &mut Session, fault: &haptics_devices::VendorFault) -> anyhow::Error {
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
/// after `header`'s comment lines (see [`crate::cli::live::recording_header`]).
fn write_recording(
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

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        let Some(s) = &self.session else {
            return;
        };
        match Gfx::new(event_loop, &self.display, &s.scene) {
            Ok(g) => {
                println!("window open on {}", g.adapter_name);
                self.gfx = Some(g);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let consumed = match &mut self.gfx {
            Some(g) => {
                let r = g.egui_state.on_window_event(&g.window, &event);
                r.consumed || (g.egui.egui_wants_pointer_input() && is_pointer(&event))
            }
            None => return,
        };
        match &event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(g) = &mut self.gfx {
                    g.resize(size.width, size.height);
                }
            }
            WindowEvent::RedrawRequested => match self.redraw() {
                Ok(true) => {
                    self.frames += 1;
                    if self.config.max_frames.is_some_and(|n| self.frames >= n) {
                        println!("closing after {} frames", self.frames);
                        event_loop.exit();
                    }
                }
                Ok(false) => {}
                Err(e) => self.fail(event_loop, e),
            },
            _ => {}
        }
        // Releases and cursor motion always reach the input state (a drag that ends over
        // a panel must still end); presses and wheel only outside egui.
        let release = matches!(
            &event,
            WindowEvent::MouseInput {
                state: ElementState::Released,
                ..
            } | WindowEvent::CursorMoved { .. }
                | WindowEvent::ModifiersChanged(_)
                | WindowEvent::CursorLeft { .. }
        );
        let typing = self
            .gfx
            .as_ref()
            .is_some_and(|g| g.egui.egui_wants_keyboard_input());
        let key = matches!(&event, WindowEvent::KeyboardInput { .. });
        if release || !(consumed || key && typing) {
            self.handle_input(&event);
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(g) = &self.gfx {
            g.window.request_redraw();
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(s) = self.session.take() {
            drop(s.haptic.stop());
        }
    }
}

fn is_pointer(event: &WindowEvent) -> bool {
    matches!(
        event,
        WindowEvent::MouseInput { .. } | WindowEvent::MouseWheel { .. }
    )
}

/// Copies what the status panel and the live plots show out of a haptic snapshot, and
/// the render rate (smoothed over about ten frames).
fn update_status(ui: &mut UiState, snapshot: &haptics::haptic::Snapshot, dt: f64) {
    let t = snapshot.time_s;
    let st = &mut ui.status;
    if let Some(r) = &snapshot.report {
        ui.plots.force.push(t, r.force.norm());
        ui.plots.torque.push(t, r.torque.norm());
        ui.plots.traversed.push(t, r.traversed as f64);
        ui.plots.contacts.push(t, r.contacts as f64);
        st.traversed = r.traversed;
        st.level_of_detail = r.level_of_detail;
    }
    ui.plots.cycle_us.push(t, snapshot.cycle_us);
    st.contacts = snapshot.contacts_total;
    st.overruns = snapshot.timing.overruns;
    st.zero_force_cycles = snapshot.zero_force_cycles;
    st.p999_us = snapshot.timing.p999_us;
    st.realtime = snapshot.realtime;
    st.render_fps = if st.render_fps == 0.0 {
        1.0 / dt.max(1e-6)
    } else {
        0.9 * st.render_fps + 0.1 / dt.max(1e-6)
    };
}

/// The egui pass of one frame, tessellated, with its texture uploads applied.
struct PanelFrame {
    /// What the user asked for.
    actions: Vec<Action>,
    /// The rectangle left for the 3D view (points).
    view_rect: egui::Rect,
    /// Pixels per point.
    ppp: f32,
    /// The tessellated panels.
    jobs: Vec<egui::ClippedPrimitive>,
    /// Textures egui no longer uses, to free after the frame.
    freed: Vec<egui::TextureId>,
}

/// Runs the panels and applies egui's font and image uploads (they must be applied even
/// when the frame is then skipped).
fn run_panels(g: &mut Gfx, ui: &mut UiState) -> PanelFrame {
    let raw = g.egui_state.take_egui_input(&g.window);
    let mut actions = Vec::new();
    let mut view_rect = egui::Rect::NOTHING;
    let output = g.egui.run_ui(raw, |root| {
        let (a, rect) = panels::draw(root, ui);
        actions = a;
        view_rect = rect;
    });
    g.egui_state
        .handle_platform_output(&g.window, output.platform_output);
    let ppp = output.pixels_per_point;
    let jobs = g.egui.tessellate(output.shapes, ppp);
    let mut textures = output.textures_delta;
    for (id, deltas) in textures.set.drain() {
        for delta in &deltas {
            g.egui_renderer
                .update_texture(&g.device, &g.queue, id, delta);
        }
    }
    PanelFrame {
        actions,
        view_rect,
        ppp,
        jobs,
        freed: textures.free.drain().collect(),
    }
}

/// The window surface's next texture, or `None` when this frame must be skipped (the
/// surface timed out, is occluded, outdated or lost: it is reconfigured or recreated
/// for the next frame).
fn acquire_surface(g: &mut Gfx) -> Result<Option<wgpu::SurfaceTexture>, AppError> {
    Ok(match g.surface.get_current_texture() {
        wgpu::CurrentSurfaceTexture::Success(t) => Some(t),
        wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
            // Draw this one; reconfigure for the next.
            g.surface.configure(&g.device, &g.config);
            Some(t)
        }
        wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => None,
        wgpu::CurrentSurfaceTexture::Outdated => {
            let size = g.window.inner_size();
            g.resize(size.width, size.height);
            None
        }
        wgpu::CurrentSurfaceTexture::Lost => {
            g.recreate_surface()?;
            None
        }
        wgpu::CurrentSurfaceTexture::Validation => {
            return Err(AppError::Render(RenderError::Map(
                "the window surface reported a validation error".into(),
            )))
        }
    })
}

/// Draws the scene into the part of the window the panels leave, then the panels over
/// it, and presents.
fn draw_and_present(
    g: &mut Gfx,
    frame: &FrameState,
    ui: &UiState,
    panels: &PanelFrame,
    texture: wgpu::SurfaceTexture,
) -> Result<(), AppError> {
    let view = texture.texture.create_view(&Default::default());
    let size = (g.config.width, g.config.height);
    let ppp = panels.ppp;
    let r = panels.view_rect;
    let viewport = r.is_positive().then(|| {
        [
            r.min.x * ppp,
            r.min.y * ppp,
            r.width() * ppp,
            r.height() * ppp,
        ]
    });
    g.renderer
        .prepare(frame, &g.camera, size, viewport, &ui.overlays)?;
    let screen = egui_wgpu::ScreenDescriptor {
        size_in_pixels: [size.0, size.1],
        pixels_per_point: ppp,
    };
    let mut encoder = g
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("frame"),
        });
    g.renderer.draw(&mut encoder, &view);
    let extra =
        g.egui_renderer
            .update_buffers(&g.device, &g.queue, &mut encoder, &panels.jobs, &screen);
    {
        let pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("egui"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        g.egui_renderer
            .render(&mut pass.forget_lifetime(), &panels.jobs, &screen);
    }
    g.queue
        .submit(extra.into_iter().chain(std::iter::once(encoder.finish())));
    g.window.pre_present_notify();
    g.queue.present(texture);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_format_prefers_srgb_and_rejects_unsupported_ones() {
        use wgpu::TextureFormat as F;
        assert_eq!(
            choose_format(&[F::Rgba8Unorm, F::Bgra8UnormSrgb]).unwrap(),
            F::Bgra8UnormSrgb
        );
        assert_eq!(choose_format(&[F::Rgba8Unorm]).unwrap(), F::Rgba8Unorm);
        let e = choose_format(&[F::Rgba16Float, F::Rgb10a2Unorm]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("unsupported texture format") && msg.contains("Rgba16Float"),
            "{msg}"
        );
    }
}
