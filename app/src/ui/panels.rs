//! The egui panels of the window: scene picker, parameters, overlays, live plots,
//! status, and record/replay controls. Drawing a panel returns the [`Action`]s the user
//! asked for; the window applies them (commands to the haptic thread, a new session).

use std::collections::VecDeque;
use std::path::PathBuf;

use egui_plot::{Legend, Line, Plot, PlotPoints};

use crate::render::Overlays;
use haptics::haptic::Command;
use haptics::scene::{params::Param, params::Settings, Scene};

use super::frame::DebugViews;

/// Seconds of history in the live plots.
const PLOT_SECONDS: f64 = 10.0;

/// What the user asked for this frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// An edit for the haptic thread.
    Command(Command),
    /// Switch to another scene file.
    OpenScene(PathBuf),
    /// Start recording the device trajectory.
    StartRecording,
    /// Stop recording and write the trajectory to this file.
    StopRecording(PathBuf),
    /// Start recording a guide path (the held object's poses).
    StartGuide,
    /// Stop recording the guide path and export it as an OMPL .path to this file.
    StopGuide(PathBuf),
    /// Restart the scene with a recorded trajectory as the device.
    Replay(PathBuf),
    /// Back to the live (mouse-driven) device, restarting the scene.
    Live,
    /// Put the camera back on the whole scene.
    FrameCamera,
}

/// The tunable parameters, as shown (mirrors what was sent to the haptic thread).
#[derive(Debug, Clone, PartialEq)]
pub struct Parameters {
    /// The settings, as last sent.
    pub settings: Settings,
    /// The largest basis size among the scene's reduced objects (0: all rigid).
    pub max_modes: usize,
    /// Whether the scene has an active muscle (then the activation slider shows).
    pub muscle: bool,
}

impl Parameters {
    /// The scene's settings as loaded.
    pub fn of(scene: &Scene) -> Self {
        let max_modes = scene
            .environment
            .iter()
            .filter_map(|e| e.dynamics.as_ref().map(|d| d.r()))
            .chain(scene.haptic.field.dynamics().map(|d| d.r()))
            .max()
            .unwrap_or(0);
        let muscle = scene
            .environment
            .iter()
            .filter_map(|e| e.dynamics.as_ref())
            .chain(scene.haptic.field.dynamics())
            .any(|d| matches!(d.forces, haptics::dynamics::object::ObjectForces::Muscle(_)));
        Parameters {
            settings: Settings {
                contact: scene.contact,
                coupling: scene.coupling,
                material_scale: 1.0,
                modes_used: max_modes,
                activation: scene.settings().activation,
            },
            max_modes,
            muscle,
        }
    }
}

/// One live plot series: (time, value) over the last [`PLOT_SECONDS`].
#[derive(Debug, Clone, Default)]
pub struct Series(VecDeque<[f64; 2]>);

impl Series {
    pub fn push(&mut self, t: f64, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.0.push_back([t, v]);
        while self.0.front().is_some_and(|p| p[0] < t - PLOT_SECONDS) {
            self.0.pop_front();
        }
    }

    fn points(&self) -> PlotPoints<'static> {
        PlotPoints::from(self.0.iter().copied().collect::<Vec<_>>())
    }
}

/// Live plot data.
#[derive(Debug, Clone, Default)]
pub struct Plots {
    pub force: Series,
    pub torque: Series,
    pub cycle_us: Series,
    pub traversed: Series,
    pub contacts: Series,
}

/// What the status panel shows.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub device: String,
    pub adapter: String,
    pub haptic_rate_hz: f64,
    pub realtime: bool,
    pub render_fps: f64,
    pub overruns: u64,
    pub zero_force_cycles: u64,
    pub p999_us: f64,
    pub contacts: usize,
    pub traversed: usize,
    pub level_of_detail: usize,
    pub clutch: bool,
    pub recording: Option<(usize, u64)>,
    /// Poses kept by the guide recorder, while it runs.
    pub guiding: Option<usize>,
    pub replaying: Option<PathBuf>,
    pub message: Option<String>,
}

/// Everything the panels edit between frames.
#[derive(Debug, Clone)]
pub struct UiState {
    pub scenes: Vec<PathBuf>,
    pub scene: PathBuf,
    pub params: Parameters,
    pub overlays: Overlays,
    pub views: DebugViews,
    pub pointshell_levels_max: usize,
    pub record_path: String,
    pub guide_path: String,
    pub replay_path: String,
    pub plots: Plots,
    pub status: Status,
}

/// A slider over a parameter's interactive range (from its one definition in
/// [`Param::spec`]); returns the new value when the user moved it.
fn param_slider(
    ui: &mut egui::Ui,
    p: Param,
    settings: &mut Settings,
    max: Option<f64>,
) -> Option<f64> {
    let spec = p.spec();
    let (lo, hi) = (spec.slider.0, max.unwrap_or(spec.slider.1));
    let mut v = p.get(settings).clamp(lo, hi);
    let text = if spec.unit.is_empty() {
        spec.label.to_string()
    } else {
        format!("{} ({})", spec.label, spec.unit)
    };
    let mut slider = egui::Slider::new(&mut v, lo..=hi)
        .logarithmic(spec.logarithmic)
        .text(text);
    if spec.integer {
        slider = slider.integer();
    }
    if !ui.add(slider).changed() {
        return None;
    }
    let v = p.validate(v).ok()?;
    p.set(settings, v);
    Some(v)
}

/// Draws the side panel; returns the actions and the rectangle left for the 3D view
/// (in points).
pub fn draw(ui: &mut egui::Ui, state: &mut UiState) -> (Vec<Action>, egui::Rect) {
    let mut actions = Vec::new();
    egui::Panel::left("controls")
        .resizable(true)
        .default_size(330.0)
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                scene_picker(ui, state, &mut actions);
                status(ui, &state.status);
                parameters(ui, &mut state.params, &mut actions);
                overlays(ui, state, &mut actions);
                record_replay(ui, state, &mut actions);
                help(ui);
            });
        });
    egui::Panel::bottom("plots")
        .resizable(true)
        .default_size(190.0)
        .show(ui, |ui| plots(ui, &state.plots));
    (actions, ui.available_rect_before_wrap())
}

fn scene_picker(ui: &mut egui::Ui, state: &mut UiState, actions: &mut Vec<Action>) {
    ui.heading("Scene");
    let name = |p: &PathBuf| {
        p.file_stem().map_or_else(
            || p.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        )
    };
    let mut chosen = state.scene.clone();
    egui::ComboBox::from_id_salt("scene picker")
        .selected_text(name(&state.scene))
        .show_ui(ui, |ui| {
            for s in &state.scenes {
                ui.selectable_value(&mut chosen, s.clone(), name(s));
            }
        });
    if chosen != state.scene {
        actions.push(Action::OpenScene(chosen));
    }
    ui.separator();
}

fn status(ui: &mut egui::Ui, s: &Status) {
    egui::CollapsingHeader::new("Status")
        .default_open(true)
        .show(ui, |ui| {
            egui::Grid::new("status grid")
                .num_columns(2)
                .show(ui, |ui| {
                    let mut row = |k: &str, v: String| {
                        ui.label(k);
                        ui.label(v);
                        ui.end_row();
                    };
                    row("device", s.device.clone());
                    row("GPU", s.adapter.clone());
                    row(
                        "haptic rate",
                        format!(
                            "{:.0} Hz ({} priority)",
                            s.haptic_rate_hz,
                            if s.realtime { "real-time" } else { "normal" }
                        ),
                    );
                    row("cycle p99.9", format!("{:.0} µs", s.p999_us));
                    row(
                        "overruns",
                        format!("{} (zero-force cycles {})", s.overruns, s.zero_force_cycles),
                    );
                    row("render", format!("{:.0} FPS", s.render_fps));
                    row(
                        "contact",
                        format!(
                            "{} points, {} nodes, level {}",
                            s.contacts, s.traversed, s.level_of_detail
                        ),
                    );
                    row("clutch", if s.clutch { "held" } else { "-" }.into());
                    if let Some((n, dropped)) = s.recording {
                        row("recording", format!("{n} samples, {dropped} dropped"));
                    }
                    if let Some(p) = &s.replaying {
                        row("replaying", p.display().to_string());
                    }
                });
            if let Some(m) = &s.message {
                ui.colored_label(egui::Color32::from_rgb(255, 170, 80), m);
            }
        });
}

fn parameters(ui: &mut egui::Ui, p: &mut Parameters, actions: &mut Vec<Action>) {
    egui::CollapsingHeader::new("Parameters")
        .default_open(true)
        .show(ui, |ui| {
            let s = &mut p.settings;
            let set = |ui: &mut egui::Ui,
                       param: Param,
                       s: &mut Settings,
                       max: Option<f64>,
                       actions: &mut Vec<Action>| {
                if let Some(v) = param_slider(ui, param, s, max) {
                    actions.push(Action::Command(Command::Set(param, v)));
                }
            };
            set(ui, Param::ContactStiffness, s, None, actions);
            set(ui, Param::CouplingStiffness, s, None, actions);
            set(ui, Param::TorqueStiffness, s, None, actions);
            let mut on = s.coupling.saturation_force.is_some();
            if ui.checkbox(&mut on, "saturate the coupling").changed() {
                let v = if on { 5.0 } else { 0.0 };
                Param::SaturationForce.set(s, v);
                actions.push(Action::Command(Command::Set(Param::SaturationForce, v)));
            }
            if let Some(force) = s.coupling.saturation_force {
                set(ui, Param::SaturationForce, s, None, actions);
                ui.label(format!(
                    "saturation depth {:.4} (scene units)",
                    force / s.coupling.stiffness.max(1e-12)
                ));
            }
            set(ui, Param::StaticDamping, s, None, actions);
            set(ui, Param::MaxVelocity, s, None, actions);
            set(ui, Param::MaxAngularVelocity, s, None, actions);
            set(ui, Param::WarmBudget, s, None, actions);
            set(ui, Param::MaxPenetration, s, None, actions);
            if p.max_modes > 0 {
                set(ui, Param::ModesUsed, s, Some(p.max_modes as f64), actions);
                set(ui, Param::MaterialScale, s, None, actions);
            }
            if p.muscle {
                // The muscle's activation: the user feels it stiffen as it rises.
                set(ui, Param::Activation, s, None, actions);
            }
            if ui.button("Reset objects (R)").clicked() {
                actions.push(Action::Command(Command::Reset));
            }
        });
}

fn overlays(ui: &mut egui::Ui, state: &mut UiState, actions: &mut Vec<Action>) {
    egui::CollapsingHeader::new("View")
        .default_open(true)
        .show(ui, |ui| {
            let o = &mut state.overlays;
            ui.checkbox(&mut o.grid, "floor grid");
            ui.checkbox(&mut o.ghost, "manipulandum ghost");
            ui.checkbox(&mut o.contacts, "contact points and forces");
            ui.add(
                egui::Slider::new(&mut o.force_scale, 1e-4..=1.0)
                    .logarithmic(true)
                    .text("arrow length per N"),
            );
            ui.add(
                egui::Slider::new(
                    &mut state.views.pointshell_levels,
                    0..=state.pointshell_levels_max,
                )
                .text("pointshell levels shown"),
            );
            ui.checkbox(&mut state.views.bd_spheres, "traversed BD spheres");
            if ui.button("Frame scene (F)").clicked() {
                actions.push(Action::FrameCamera);
            }
        });
}

fn record_replay(ui: &mut egui::Ui, state: &mut UiState, actions: &mut Vec<Action>) {
    egui::CollapsingHeader::new("Record and replay")
        .default_open(false)
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label("record to");
                ui.text_edit_singleline(&mut state.record_path);
            });
            if state.status.recording.is_some() {
                if ui.button("Stop and save").clicked() {
                    actions.push(Action::StopRecording(PathBuf::from(&state.record_path)));
                }
            } else if ui.button("Record").clicked() {
                actions.push(Action::StartRecording);
            }
            ui.separator();
            ui.label("Guide path: drag the object through the scene, feeling the walls; export its poses for haptics plan --guide");
            ui.horizontal(|ui| {
                ui.label("export to");
                ui.text_edit_singleline(&mut state.guide_path);
            });
            if let Some(n) = state.status.guiding {
                if ui.button(format!("Stop and export ({n} poses)")).clicked() {
                    actions.push(Action::StopGuide(PathBuf::from(&state.guide_path)));
                }
            } else if ui.button("Record guide path").clicked() {
                actions.push(Action::StartGuide);
            }
            ui.separator();
            ui.horizontal(|ui| {
                ui.label("replay");
                ui.text_edit_singleline(&mut state.replay_path);
            });
            ui.horizontal(|ui| {
                if ui.button("Replay").clicked() {
                    actions.push(Action::Replay(PathBuf::from(&state.replay_path)));
                }
                if state.status.replaying.is_some() && ui.button("Back to live").clicked() {
                    actions.push(Action::Live);
                }
            });
        });
}

fn help(ui: &mut egui::Ui) {
    egui::CollapsingHeader::new("Controls")
        .default_open(false)
        .show(ui, |ui| {
            ui.label(
                "Left drag: move the object in the view plane\n\
                 Shift + left drag: rotate it\n\
                 Wheel: move it in depth\n\
                 Space (hold): clutch (re-index the workspace)\n\
                 R: reset objects   Home: recentre the device\n\
                 Right drag: orbit   Middle drag or Ctrl + left drag: pan\n\
                 Ctrl + wheel: zoom   F: frame the scene",
            );
        });
}

fn plots(ui: &mut egui::Ui, p: &Plots) {
    ui.columns(3, |cols| {
        let plot = |ui: &mut egui::Ui, id: &str, lines: Vec<(&str, &Series)>| {
            Plot::new(id)
                .legend(Legend::default())
                .allow_scroll(false)
                .show(ui, |plot_ui| {
                    for (name, s) in lines {
                        plot_ui.line(Line::new(name, s.points()));
                    }
                });
        };
        plot(
            &mut cols[0],
            "wrench",
            vec![("|F| (N)", &p.force), ("|T| (N m)", &p.torque)],
        );
        plot(
            &mut cols[1],
            "cycle",
            vec![("cycle time (µs)", &p.cycle_us)],
        );
        plot(
            &mut cols[2],
            "contact",
            vec![("traversed nodes", &p.traversed), ("contacts", &p.contacts)],
        );
    });
}
