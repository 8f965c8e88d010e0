//! The egui panels of the window: scene picker, parameters, overlays, live plots,
//! status, and record/replay controls. Drawing a panel returns the [`Action`]s the user
//! asked for; the window applies them (commands to the haptic thread, a new session).

use std::collections::VecDeque;
use std::path::PathBuf;

use egui_plot::{Legend, Line, Plot, PlotPoints};

use crate::haptic::Command;
use crate::render::Overlays;
use crate::scene::Scene;

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
    pub contact_stiffness: f64,
    pub coupling_force: f64,
    pub coupling_torque: f64,
    pub saturation: Option<f64>,
    pub static_damping: f64,
    pub max_velocity: f64,
    pub max_angular_velocity: f64,
    pub node_budget: usize,
    pub modes_used: usize,
    pub max_modes: usize,
    pub material_scale: f64,
}

impl Parameters {
    /// The scene's settings as loaded.
    pub fn of(scene: &Scene) -> Self {
        let c = &scene.coupling;
        let max_modes = scene
            .environment
            .iter()
            .filter_map(|e| e.dynamics.as_ref().map(|d| d.r()))
            .chain(match &scene.haptic.field {
                crate::scene::HapticField::Deformable { dynamics, .. } => Some(dynamics.r()),
                crate::scene::HapticField::Rigid(_) => None,
            })
            .max()
            .unwrap_or(0);
        Parameters {
            contact_stiffness: scene.contact.stiffness,
            coupling_force: c.stiffness,
            coupling_torque: c.torque_stiffness,
            saturation: c.saturation_force,
            static_damping: c.static_damping,
            max_velocity: c.max_velocity,
            max_angular_velocity: c.max_angular_velocity,
            node_budget: scene.contact.warm_budget,
            modes_used: max_modes,
            max_modes,
            material_scale: 1.0,
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
    pub replay_path: String,
    pub plots: Plots,
    pub status: Status,
}

fn log_slider(
    ui: &mut egui::Ui,
    v: &mut f64,
    range: std::ops::RangeInclusive<f64>,
    text: &str,
) -> bool {
    ui.add(egui::Slider::new(v, range).logarithmic(true).text(text))
        .changed()
}

fn slider(
    ui: &mut egui::Ui,
    v: &mut f64,
    range: std::ops::RangeInclusive<f64>,
    text: &str,
) -> bool {
    ui.add(egui::Slider::new(v, range).text(text)).changed()
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
            if log_slider(
                ui,
                &mut p.contact_stiffness,
                1.0..=1e6,
                "contact stiffness (N/m)",
            ) {
                actions.push(Action::Command(Command::ContactStiffness(
                    p.contact_stiffness,
                )));
            }
            let a = log_slider(
                ui,
                &mut p.coupling_force,
                0.1..=1e4,
                "coupling stiffness (N/m)",
            );
            let b = log_slider(
                ui,
                &mut p.coupling_torque,
                1e-3..=100.0,
                "coupling torque (N m/rad)",
            );
            if a || b {
                actions.push(Action::Command(Command::CouplingStiffness {
                    force: p.coupling_force,
                    torque: p.coupling_torque,
                }));
            }
            let mut on = p.saturation.is_some();
            let mut force = p.saturation.unwrap_or(5.0);
            let mut changed = ui.checkbox(&mut on, "saturate the coupling").changed();
            if on {
                changed |= log_slider(ui, &mut force, 0.01..=100.0, "saturation force (N)");
                ui.label(format!(
                    "saturation depth {:.4} (scene units)",
                    force / p.coupling_force.max(1e-12)
                ));
            }
            if changed {
                p.saturation = on.then_some(force);
                actions.push(Action::Command(Command::Saturation(p.saturation)));
            }
            if slider(ui, &mut p.static_damping, 0.0..=0.95, "static damping α") {
                actions.push(Action::Command(Command::StaticDamping(p.static_damping)));
            }
            let a = log_slider(
                ui,
                &mut p.max_velocity,
                0.01..=100.0,
                "max velocity (units/s)",
            );
            let b = log_slider(
                ui,
                &mut p.max_angular_velocity,
                0.1..=100.0,
                "max angular velocity (rad/s)",
            );
            if a || b {
                actions.push(Action::Command(Command::VelocityLimits {
                    linear: p.max_velocity,
                    angular: p.max_angular_velocity,
                }));
            }
            if ui
                .add(
                    egui::Slider::new(&mut p.node_budget, 16..=20000)
                        .logarithmic(true)
                        .text("node budget"),
                )
                .changed()
            {
                actions.push(Action::Command(Command::NodeBudget(p.node_budget)));
            }
            if p.max_modes > 0 {
                if ui
                    .add(egui::Slider::new(&mut p.modes_used, 1..=p.max_modes).text("modes used"))
                    .changed()
                {
                    actions.push(Action::Command(Command::ModesUsed(p.modes_used)));
                }
                if log_slider(
                    ui,
                    &mut p.material_scale,
                    0.05..=20.0,
                    "material stiffness ×",
                ) {
                    actions.push(Action::Command(Command::MaterialScale(p.material_scale)));
                }
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
