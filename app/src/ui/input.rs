//! Mouse and keyboard as a 6-DOF input device: the simulated device's target pose moves
//! in the plane of the view when dragged, in depth with the wheel, and rotates about the
//! view axes when dragged with Shift; the camera orbits, pans and zooms.
//!
//! The target is a device-frame pose (metres), as a real stylus would report. A motion
//! wanted in the simulation world, `dx_world`, becomes a device motion through the
//! workspace mapping of thesis 4.5 (`x_sim = T_index (x_device / alpha)`):
//!
//! ```text
//! dx_device = alpha R_index^T dx_world
//! R_device' = R_index^T R_world R_index R_device
//! ```
//!
//! so the manipulandum follows the mouse whatever the clutch has done to `T_index`.
//!
//! The window hands its mouse and keyboard events to `InputState::handle`, which keeps
//! the buttons and modifiers between events, moves the camera or the target, and
//! handles the keys: Space (held) is the clutch, R resets the objects, Home recentres
//! the device and F frames the scene.

use haptics_devices::Pose;
use nalgebra::{Isometry3, UnitQuaternion, Vector3};
use winit::event::{ElementState, KeyEvent, MouseButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};

use super::headless::default_camera;
use super::session::Session;
use super::surface::Gfx;
use crate::render::OrbitCamera;
use haptics::haptic::Command;

/// Radians of rotation per pixel of Shift-drag.
pub const ROTATE_RAD_PER_PIXEL: f64 = 0.008;
/// Fraction of the camera distance moved in depth per wheel step.
pub const WHEEL_DEPTH_FRACTION: f64 = 0.02;
/// Camera orbit, radians per pixel of right-drag.
pub const ORBIT_RAD_PER_PIXEL: f32 = 0.006;

/// The world motion of a view-plane drag of `(dx, dy)` pixels (y down) in a viewport
/// `height` pixels high: the point under the cursor at the target depth follows it.
pub fn drag_translation(camera: &OrbitCamera, dx: f64, dy: f64, height: f64) -> Vector3<f64> {
    let px = f64::from(camera.pixel_size(height as f32));
    (camera.right().cast::<f64>() * dx - camera.up().cast::<f64>() * dy) * px
}

/// The world motion of `steps` wheel steps (positive = away from the viewer).
pub fn wheel_translation(camera: &OrbitCamera, steps: f64) -> Vector3<f64> {
    -camera.backward().cast::<f64>() * (steps * WHEEL_DEPTH_FRACTION * f64::from(camera.distance))
}

/// The world rotation of a Shift-drag: horizontal motion turns about the view's up
/// axis, vertical motion about its right axis (a trackball).
pub fn drag_rotation(camera: &OrbitCamera, dx: f64, dy: f64) -> UnitQuaternion<f64> {
    // Renormalized in f64: the camera's f32 axes are unit only to f32 precision.
    let up = camera.up().cast::<f64>().normalize();
    let right = camera.right().cast::<f64>().normalize();
    let axis_angle = up * (dx * ROTATE_RAD_PER_PIXEL) + right * (dy * ROTATE_RAD_PER_PIXEL);
    UnitQuaternion::from_scaled_axis(axis_angle)
}

/// Moves a device-frame target by a world translation and rotation (module doc), for a
/// workspace of scale `alpha` and indexing transform `index`.
pub fn move_target(
    target: &mut Pose,
    world_translation: &Vector3<f64>,
    world_rotation: &UnitQuaternion<f64>,
    alpha: f64,
    index: &Isometry3<f64>,
) {
    let r = index.rotation;
    target.position += alpha * (r.inverse() * world_translation);
    target.orientation = r.inverse() * world_rotation * r * target.orientation;
}

/// Mouse and keyboard state between events.
#[derive(Debug, Default)]
pub(super) struct InputState {
    cursor: Option<(f64, f64)>,
    left: bool,
    right: bool,
    middle: bool,
    modifiers: ModifiersState,
    /// The clutch key is held.
    pub(super) clutch: bool,
}

impl InputState {
    /// Applies a window event: to the modifier and button state, the camera `g.camera`
    /// and the simulated hand's target `s.target`, which is sent to the hand when it
    /// moved.
    pub(super) fn handle(&mut self, event: &WindowEvent, g: &mut Gfx, s: &mut Session) {
        let mover = TargetMover {
            alpha: s.workspace_scale,
            index: s.haptic.snapshot().workspace_index,
        };
        let moved = match event {
            WindowEvent::ModifiersChanged(m) => {
                self.modifiers = m.state();
                false
            }
            WindowEvent::MouseInput { state, button, .. } => {
                self.press(*button, *state == ElementState::Pressed);
                false
            }
            WindowEvent::CursorMoved { position, .. } => {
                cursor_moved(self, g, s, &mover, (position.x, position.y))
            }
            WindowEvent::CursorLeft { .. } => {
                self.cursor = None;
                false
            }
            WindowEvent::MouseWheel { delta, .. } => mouse_wheel(self, g, s, &mover, delta),
            WindowEvent::KeyboardInput { event, .. } => key_input(self, g, s, event),
            _ => false,
        };
        if moved {
            s.send_target();
        }
    }

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
    index: Isometry3<f64>,
}

impl TargetMover {
    /// Translates `pose` by the world translation `t`.
    fn translate(&self, pose: &mut Pose, t: &Vector3<f64>) {
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
        move_target(pose, &Vector3::zeros(), r, self.alpha, &self.index)
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
fn key_input(input: &mut InputState, g: &mut Gfx, s: &mut Session, event: &KeyEvent) -> bool {
    let down = event.state == ElementState::Pressed;
    let PhysicalKey::Code(code) = event.physical_key else {
        return false;
    };
    match code {
        KeyCode::Space => {
            input.clutch = down;
            s.target.buttons = if down { s.clutch_mask } else { 0 };
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

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Point3, Translation3};

    fn camera() -> OrbitCamera {
        let mut c = OrbitCamera::framing(Point3::new(-1.0, 0.0, -1.0), Point3::new(1.0, 2.0, 1.0));
        c.orbit(0.4, 0.2);
        c
    }

    /// The manipulandum of a device pose (the workspace mapping without clutch).
    fn manipulandum(index: &Isometry3<f64>, alpha: f64, p: &Pose) -> Isometry3<f64> {
        index * Isometry3::from_parts(Translation3::from(p.position / alpha), p.orientation)
    }

    #[test]
    fn the_manipulandum_follows_world_motions_through_a_rotated_index() {
        let c = camera();
        let alpha = 0.1;
        let index = Isometry3::new(Vector3::new(0.5, 2.0, -1.0), Vector3::new(0.3, -0.7, 0.2));
        let mut target = Pose {
            position: Vector3::new(0.01, -0.02, 0.03),
            orientation: UnitQuaternion::from_scaled_axis(Vector3::new(0.1, 0.2, -0.1)),
        };
        let before = manipulandum(&index, alpha, &target);
        let dt = drag_translation(&c, 30.0, -12.0, 720.0) + wheel_translation(&c, 2.0);
        let dr = drag_rotation(&c, 15.0, 40.0);
        move_target(&mut target, &dt, &dr, alpha, &index);
        let after = manipulandum(&index, alpha, &target);
        let moved = after.translation.vector - before.translation.vector;
        assert!((moved - dt).norm() < 1e-12, "{moved} vs {dt}");
        let turned = after.rotation * before.rotation.inverse();
        assert!(turned.angle_to(&dr) < 1e-12);
    }

    #[test]
    fn drags_stay_in_the_view_plane_and_follow_the_cursor() {
        let c = camera();
        let d = drag_translation(&c, 100.0, 0.0, 800.0);
        // The camera axes are f32: orthogonal to about 1e-7.
        assert!(d.dot(&c.backward().cast()).abs() < 1e-6 * d.norm());
        // 100 pixels right moves 100 pixel widths along the screen's right axis.
        let px = f64::from(c.pixel_size(800.0));
        assert!((d.norm() - 100.0 * px).abs() < 1e-6 * d.norm());
        assert!(d.dot(&c.right().cast()) > 0.0);
        // Dragging down (positive dy) moves down the screen.
        assert!(drag_translation(&c, 0.0, 50.0, 800.0).dot(&c.up().cast()) < 0.0);
        // A wheel step away moves along the view direction only.
        let w = wheel_translation(&c, 1.0);
        assert!(w.dot(&c.backward().cast()) < 0.0);
        assert!(w.cross(&c.backward().cast()).norm() < 1e-6 * w.norm());
    }

    #[test]
    fn shift_drag_rotates_about_the_view_axes() {
        let c = camera();
        let r = drag_rotation(&c, 50.0, 0.0);
        let axis = r.axis().unwrap();
        assert!((axis.dot(&c.up().cast()) - 1.0).abs() < 1e-6);
        assert!((r.angle() - 50.0 * ROTATE_RAD_PER_PIXEL).abs() < 1e-12);
        assert_eq!(drag_rotation(&c, 0.0, 0.0), UnitQuaternion::identity());
    }
}
