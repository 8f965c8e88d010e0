//! Pure encoding and decoding of HID reports by a [`Profile`]: no I/O, no allocation on
//! success, so it is tested on recorded report bytes without hardware.

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use super::profile::{FieldType, InputAxis, OutputAxis, OutputReport, Profile};
use crate::DeviceError;
use crate::Pose;
use crate::Workspace;
use crate::Wrench;

/// The latest decoded values of every input axis (reports may carry only some axes: the
/// split SpaceMouse reports translation and rotation separately).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputState {
    /// x, y, z (m, or m/s in rate mode).
    pub translation: Vector3<f64>,
    /// rx, ry, rz (rad, or rad/s in rate mode).
    pub rotation: Vector3<f64>,
    /// qw, qx, qy, qz as decoded (not yet normalized).
    pub quaternion: [f64; 4],
    /// Button mask.
    pub buttons: u32,
}

impl Default for InputState {
    fn default() -> Self {
        Self {
            translation: Vector3::zeros(),
            rotation: Vector3::zeros(),
            quaternion: [1.0, 0.0, 0.0, 0.0],
            buttons: 0,
        }
    }
}

/// Reads a raw value of type `ty` at `offset` (None when the bytes are too short).
pub fn read_raw(bytes: &[u8], offset: usize, ty: FieldType) -> Option<f64> {
    let b = bytes.get(offset..offset.checked_add(ty.size())?)?;
    Some(match ty {
        FieldType::U8 => f64::from(b[0]),
        FieldType::I8 => f64::from(b[0] as i8),
        FieldType::U16le => f64::from(u16::from_le_bytes([b[0], b[1]])),
        FieldType::I16le => f64::from(i16::from_le_bytes([b[0], b[1]])),
        FieldType::U32le => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        FieldType::I32le => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        FieldType::F32le => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    })
}

/// Decodes one input report into `state`. Returns Ok(false) for a report id the profile
/// does not describe (ignored), Ok(true) when decoded, and a protocol error for an empty
/// or short report or a non-finite float.
pub fn apply_input_report(
    profile: &Profile,
    bytes: &[u8],
    state: &mut InputState,
) -> Result<bool, DeviceError> {
    let Some(&first) = bytes.first() else {
        return Err(DeviceError::Protocol {
            report_id: 0,
            detail: "empty report".to_string(),
        });
    };
    let numbered = profile.inputs.first().is_some_and(|r| r.report_id != 0);
    let id = if numbered { first } else { 0 };
    let Some(rep) = profile.input_report(id) else {
        return Ok(false);
    };
    if bytes.len() < rep.length {
        return Err(DeviceError::Protocol {
            report_id: id,
            detail: format!("expected {} bytes, got {}", rep.length, bytes.len()),
        });
    }
    let mut next = *state;
    for f in &rep.fields {
        let raw = read_raw(bytes, f.offset, f.ty).ok_or_else(|| DeviceError::Protocol {
            report_id: id,
            detail: format!("field at byte {} past the end", f.offset),
        })?;
        if !raw.is_finite() {
            return Err(DeviceError::Protocol {
                report_id: id,
                detail: format!("non-finite value at byte {}", f.offset),
            });
        }
        if f.axis == InputAxis::Buttons {
            // Integer types only (checked when the profile was loaded); the value fits u32.
            let v = raw as i64 as u32;
            let mask = if f.bit_count >= 32 {
                u32::MAX
            } else {
                (1u32 << f.bit_count) - 1
            };
            let bits = (v >> f.bit_offset) & mask;
            let dest = mask.checked_shl(f.button_base).unwrap_or(0);
            next.buttons = (next.buttons & !dest) | (bits << f.button_base);
            continue;
        }
        let v = if raw.abs() <= f.deadband {
            0.0
        } else {
            raw * f.scale
        };
        match f.axis {
            InputAxis::X => next.translation.x = v,
            InputAxis::Y => next.translation.y = v,
            InputAxis::Z => next.translation.z = v,
            InputAxis::Rx => next.rotation.x = v,
            InputAxis::Ry => next.rotation.y = v,
            InputAxis::Rz => next.rotation.z = v,
            InputAxis::Qw => next.quaternion[0] = v,
            InputAxis::Qx => next.quaternion[1] = v,
            InputAxis::Qy => next.quaternion[2] = v,
            InputAxis::Qz => next.quaternion[3] = v,
            InputAxis::Buttons => {}
        }
    }
    *state = next;
    Ok(true)
}

/// True when the profile reports a quaternion (else orientation is a rotation vector).
pub fn reports_quaternion(profile: &Profile) -> bool {
    profile
        .inputs
        .iter()
        .flat_map(|r| r.fields.iter())
        .any(|f| f.axis == InputAxis::Qw)
}

/// The pose of a position-mode device from its decoded state. A quaternion far from unit
/// length (norm outside [0.5, 2]) is a protocol error.
pub fn position_mode_pose(profile: &Profile, state: &InputState) -> Result<Pose, DeviceError> {
    let orientation = if reports_quaternion(profile) {
        let [w, x, y, z] = state.quaternion;
        let q = Quaternion::new(w, x, y, z);
        let n = q.norm();
        if !(0.5..=2.0).contains(&n) {
            return Err(DeviceError::Protocol {
                report_id: 0,
                detail: format!("orientation quaternion has norm {n}"),
            });
        }
        UnitQuaternion::new_normalize(q)
    } else {
        UnitQuaternion::from_scaled_axis(state.rotation)
    };
    Ok(Pose::new(state.translation, orientation))
}

/// Integrates rate-control input into a pose kept inside the workspace (starts at the
/// identity pose).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateIntegrator {
    /// The integrated pose.
    pub pose: Pose,
}

impl RateIntegrator {
    /// Advances by `dt` seconds with velocity `v` (m/s) and world-frame angular velocity
    /// `w` (rad/s); the position is clamped into `workspace`. Non-positive or non-finite
    /// `dt` does nothing.
    pub fn step(&mut self, v: &Vector3<f64>, w: &Vector3<f64>, dt: f64, workspace: &Workspace) {
        if !(dt.is_finite() && dt > 0.0) {
            return;
        }
        let p = self.pose.position + v * dt;
        self.pose.position = clamp_to_workspace(p, workspace);
        self.pose.orientation = UnitQuaternion::from_scaled_axis(w * dt) * self.pose.orientation;
    }
}

/// The closest point of the workspace to `p`.
pub fn clamp_to_workspace(p: Vector3<f64>, workspace: &Workspace) -> Vector3<f64> {
    match workspace {
        Workspace::Sphere { radius_m } => {
            let n = p.norm();
            if n > *radius_m {
                p * (*radius_m / n)
            } else {
                p
            }
        }
        Workspace::Box { half_extents_m: h } => Vector3::new(
            p.x.clamp(-h.x, h.x),
            p.y.clamp(-h.y, h.y),
            p.z.clamp(-h.z, h.z),
        ),
    }
}

/// Encodes a wrench into `buf` by the output layout: zeroes the report, writes the id,
/// the constants and each component as round(value / scale) saturated to the type's
/// range (non-finite values encode as 0). Returns the report length, or None when `buf`
/// is shorter than the report.
pub fn encode_output(rep: &OutputReport, wrench: &Wrench, buf: &mut [u8]) -> Option<usize> {
    let out = buf.get_mut(..rep.length)?;
    out.fill(0);
    out[0] = rep.report_id;
    for c in &rep.constants {
        *out.get_mut(c.offset)? = c.value;
    }
    for f in &rep.fields {
        let v = match f.axis {
            OutputAxis::Fx => wrench.force.x,
            OutputAxis::Fy => wrench.force.y,
            OutputAxis::Fz => wrench.force.z,
            OutputAxis::Tx => wrench.torque.x,
            OutputAxis::Ty => wrench.torque.y,
            OutputAxis::Tz => wrench.torque.z,
        };
        let counts = if v.is_finite() { v / f.scale } else { 0.0 };
        let dst = out.get_mut(f.offset..f.offset + f.ty.size())?;
        // `as` from f64 to an integer saturates (and maps NaN to 0) by definition.
        match f.ty {
            FieldType::U8 => dst.copy_from_slice(&[counts.round() as u8]),
            FieldType::I8 => dst.copy_from_slice(&(counts.round() as i8).to_le_bytes()),
            FieldType::U16le => dst.copy_from_slice(&(counts.round() as u16).to_le_bytes()),
            FieldType::I16le => dst.copy_from_slice(&(counts.round() as i16).to_le_bytes()),
            FieldType::U32le => dst.copy_from_slice(&(counts.round() as u32).to_le_bytes()),
            FieldType::I32le => dst.copy_from_slice(&(counts.round() as i32).to_le_bytes()),
            FieldType::F32le => dst.copy_from_slice(&(counts as f32).to_le_bytes()),
        }
    }
    Some(rep.length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hid::profile::builtin_profile;
    use crate::rng::SplitMix64;

    const T: f64 = 2.857e-4;
    const R: f64 = 2.857e-3;

    fn decode(p: &Profile, reports: &[&[u8]]) -> InputState {
        let mut s = InputState::default();
        for r in reports {
            apply_input_report(p, r, &mut s).unwrap();
        }
        s
    }

    #[test]
    fn spacenavigator_recorded_reports() {
        let p = builtin_profile("spacemouse-split").unwrap();
        // Captured SpaceNavigator traffic (usbmon): at rest, a rotation about the second
        // HID axis, then button 1 pressed, both pressed, released.
        let s = decode(
            &p,
            &[
                &[0x01, 0, 0, 0, 0, 0, 0],
                &[0x02, 0x00, 0x00, 0xe2, 0xff, 0x00, 0x00],
            ],
        );
        assert_eq!(s.translation, Vector3::zeros());
        // hid ry = -30 counts -> world rz.
        assert!((s.rotation - Vector3::new(0.0, 0.0, -30.0 * R)).norm() < 1e-15);
        let mut s2 = s;
        apply_input_report(&p, &[0x03, 0x01, 0x00], &mut s2).unwrap();
        assert_eq!(s2.buttons, 1);
        apply_input_report(&p, &[0x03, 0x03, 0x00], &mut s2).unwrap();
        assert_eq!(s2.buttons, 3);
        apply_input_report(&p, &[0x03, 0x00, 0x00], &mut s2).unwrap();
        assert_eq!(s2.buttons, 0);
        // Rotation is kept while only translation reports arrive.
        assert_eq!(s2.rotation, s.rotation);
    }

    #[test]
    fn spacemouse_axis_mapping_scale_and_deadband() {
        let p = builtin_profile("spacemouse-split").unwrap();
        // Full push right (+350), slight pull toward the user (hid y = -10 -> under the
        // deadband? no: 10 > 8), lift (hid z = -300 -> world y = +300 counts).
        let s = decode(&p, &[&[0x01, 0x5e, 0x01, 0xf6, 0xff, 0xd4, 0xfe]]);
        assert!((s.translation.x - 350.0 * T).abs() < 1e-15);
        assert!((s.translation.y - 300.0 * T).abs() < 1e-15);
        assert!((s.translation.z + 10.0 * T).abs() < 1e-15);
        // Rest noise of +-5 counts reads as zero.
        let s = decode(&p, &[&[0x01, 0x05, 0x00, 0xfb, 0xff, 0x08, 0x00]]);
        assert_eq!(s.translation, Vector3::zeros());
    }

    #[test]
    fn spacemouse_combined_report() {
        let p = builtin_profile("spacemouse-combined").unwrap();
        let r: [u8; 13] = [
            0x01, 0x64, 0x00, 0x00, 0x00, 0x9c, 0xff, // tx 100, ty 0, tz -100
            0x00, 0x00, 0xc8, 0x00, 0x00, 0x00, // rx 0, ry 200, rz 0
        ];
        let s = decode(&p, &[&r, &[0x03, 0x02, 0x00]]);
        assert!((s.translation - Vector3::new(100.0 * T, 100.0 * T, 0.0)).norm() < 1e-15);
        assert!((s.rotation - Vector3::new(0.0, 0.0, 200.0 * R)).norm() < 1e-15);
        assert_eq!(s.buttons, 2);
        // A battery/status report (id 0x17) is ignored.
        let mut s2 = s;
        assert!(!apply_input_report(&p, &[0x17, 0x64, 0x00], &mut s2).unwrap());
        assert_eq!(s2, s);
    }

    #[test]
    fn short_or_empty_reports_are_protocol_errors() {
        let p = builtin_profile("spacemouse-combined").unwrap();
        let mut s = InputState::default();
        // An old-style 7-byte report 1 is too short for this profile: clear error, state kept.
        let e = apply_input_report(&p, &[0x01, 1, 0, 2, 0, 3, 0], &mut s).unwrap_err();
        assert_eq!(
            e,
            DeviceError::Protocol {
                report_id: 1,
                detail: "expected 13 bytes, got 7".to_string()
            }
        );
        assert_eq!(s, InputState::default());
        assert!(matches!(
            apply_input_report(&p, &[], &mut s),
            Err(DeviceError::Protocol { .. })
        ));
    }

    fn ffb_report(p_um: [i32; 3], q: [i16; 4], buttons: u8) -> Vec<u8> {
        let mut r = vec![0x01];
        for v in p_um {
            r.extend_from_slice(&v.to_le_bytes());
        }
        for v in q {
            r.extend_from_slice(&v.to_le_bytes());
        }
        r.push(buttons);
        r
    }

    #[test]
    fn generic_ffb_input_decodes_pose_and_buttons() {
        let p = builtin_profile("generic-ffb").unwrap();
        // 30 degrees about z: (cos 15°, 0, 0, sin 15°) * 32767 = (31651, 0, 0, 8481).
        let r = ffb_report([12_345, -500, 100_000], [31651, 0, 0, 8481], 0b101);
        assert_eq!(r.len(), 22);
        let s = decode(&p, &[&r]);
        let pose = position_mode_pose(&p, &s).unwrap();
        assert!((pose.position - Vector3::new(0.012345, -0.0005, 0.1)).norm() < 1e-12);
        // 16-bit quantization: about 3e-5 per component -> about 1e-4 rad.
        assert!((pose.orientation.angle() - 30f64.to_radians()).abs() < 1e-4);
        assert_eq!(s.buttons, 0b101);
        // A zero quaternion is a protocol error, not a NaN pose.
        let s = decode(&p, &[&ffb_report([0; 3], [0; 4], 0)]);
        assert!(matches!(
            position_mode_pose(&p, &s),
            Err(DeviceError::Protocol { .. })
        ));
    }

    #[test]
    fn generic_ffb_output_encodes_and_saturates() {
        let p = builtin_profile("generic-ffb").unwrap();
        let rep = p.output.as_ref().unwrap();
        let mut buf = [0xaau8; 32];
        let w = Wrench::new(
            Vector3::new(1.5, -0.25, 0.0),
            Vector3::new(0.01, 0.0, -0.0001),
        );
        assert_eq!(encode_output(rep, &w, &mut buf), Some(14));
        assert_eq!(
            buf[..14],
            [0x02, 0xdc, 0x05, 0x06, 0xff, 0, 0, 0x64, 0x00, 0, 0, 0xff, 0xff, 0x01]
        );
        let w = Wrench::new(Vector3::new(100.0, -100.0, f64::NAN), Vector3::zeros());
        encode_output(rep, &w, &mut buf).unwrap();
        assert_eq!(buf[1..7], [0xff, 0x7f, 0x00, 0x80, 0x00, 0x00]);
        assert_eq!(encode_output(rep, &w, &mut [0u8; 4]), None);
    }

    #[test]
    fn rate_integration_and_workspace_clamp() {
        let ws = Workspace::Sphere { radius_m: 0.15 };
        let mut r = RateIntegrator::default();
        let v = Vector3::new(0.1, 0.0, 0.0);
        let w = Vector3::new(0.0, 1.0, 0.0);
        for _ in 0..500 {
            r.step(&v, &w, 1e-3, &ws);
        }
        assert!((r.pose.position.x - 0.05).abs() < 1e-12);
        assert!((r.pose.orientation.angle() - 0.5).abs() < 1e-12);
        for _ in 0..5000 {
            r.step(&v, &Vector3::zeros(), 1e-3, &ws);
        }
        assert!((r.pose.position.norm() - 0.15).abs() < 1e-12);
        r.step(&v, &w, f64::NAN, &ws);
        r.step(&v, &w, -1.0, &ws);
        assert!((r.pose.position.norm() - 0.15).abs() < 1e-12);
        let b = Workspace::Box {
            half_extents_m: Vector3::new(0.1, 0.2, 0.3),
        };
        assert_eq!(
            clamp_to_workspace(Vector3::new(1.0, -1.0, 0.1), &b),
            Vector3::new(0.1, -0.2, 0.1)
        );
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = SplitMix64::new(3);
        for name in ["spacemouse-split", "spacemouse-combined", "generic-ffb"] {
            let p = builtin_profile(name).unwrap();
            let mut s = InputState::default();
            for _ in 0..2000 {
                let n = rng.below(30) as usize;
                let mut b: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
                if let Some(x) = b.first_mut() {
                    *x = rng.below(4) as u8; // mostly known report ids
                }
                let _ = apply_input_report(&p, &b, &mut s);
                if p.mode == crate::hid::profile::ControlMode::Position {
                    if let Ok(pose) = position_mode_pose(&p, &s) {
                        assert!(pose.is_finite());
                    }
                }
                assert!(s.translation.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn read_raw_types() {
        let b = [0xff, 0xfe, 0x00, 0x80, 0x3f];
        assert_eq!(read_raw(&b, 0, FieldType::U8), Some(255.0));
        assert_eq!(read_raw(&b, 0, FieldType::I8), Some(-1.0));
        assert_eq!(read_raw(&b, 0, FieldType::I16le), Some(-257.0));
        assert_eq!(read_raw(&b, 0, FieldType::U16le), Some(65279.0));
        assert_eq!(
            read_raw(&b, 1, FieldType::F32le),
            Some(f64::from(f32::from_le_bytes([0xfe, 0x00, 0x80, 0x3f])))
        );
        assert_eq!(read_raw(&b, 2, FieldType::I32le), None);
        assert_eq!(read_raw(&b, usize::MAX, FieldType::I32le), None);
    }
}
