//! The window's event loop: winit events on the main (render) thread, while the haptic
//! thread runs the session. It opens the window's GPU side (the `surface` module: the
//! wgpu surface, the scene renderer and egui) when the loop resumes, hands mouse and
//! keyboard events to [`super::input`], applies what the panels ask for (parameters,
//! recordings, replays, another scene: a new `session`), and draws a frame whenever
//! the loop is idle.
//!
//! Surface problems are part of normal life and never end the program: a zero-sized
//! (minimized) window skips frames; `Outdated` and `Suboptimal` reconfigure the surface;
//! `Lost` recreates it; `Timeout` and `Occluded` skip the frame. A window that cannot be
//! created, an adapter that cannot present to it, or a surface offering no colour format
//! the renderer supports end with a typed [`AppError`] naming the cause, and the caller
//! falls back to the headless demo.

use std::path::{Path, PathBuf};
use std::time::Instant;

use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::WindowId;

use super::frame::{fill_frame, DebugViews};
use super::guide::GuideRecorder;
use super::headless::default_camera;
use super::input::InputState;
use super::panels::{Action, Parameters, Plots, Status, UiState};
use super::session::{device_failed, write_recording, DeviceChoice, Session};
use super::surface::{acquire_surface, draw_and_present, run_panels, Gfx};
use super::AppError;
use crate::render::{FrameState, SceneRenderer};
use haptics::haptic::Command;
use haptics::scene::{params::Param, Scene};

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
                session.guide = Some(GuideRecorder::default());
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

    /// Passes a mouse or keyboard event to the input state (once the window is open).
    fn handle_input(&mut self, event: &WindowEvent) {
        if let (Some(g), Some(s)) = (&mut self.gfx, &mut self.session) {
            self.input.handle(event, g, s);
        }
    }

    /// One frame: read the haptic snapshot, update the panels' status and plots, run
    /// the egui pass, then draw the scene and the panels into the window's surface.
    /// Returns whether a frame was presented (minimized windows and unavailable
    /// surfaces skip frames).
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
