//! Device profiles: TOML files that describe a HID device's reports, so supporting a new
//! device is a data file, not code.
//!
//! The format is documented in `devices/README.md` ("Profiles"). Every check runs while
//! the TOML is deserialized (through `try_from` types), so every error carries the span of
//! the offending table or value and is reported as [`ProfileError`] with the file, the
//! 1-based line and column, and what was expected.

use std::path::{Path, PathBuf};

use nalgebra::Vector3;
use serde::Deserialize;
use toml::Spanned;

use crate::DeviceInfo;

use crate::safety::SafetySettings;
use crate::Workspace;

/// Largest report length handled, bytes (USB high-speed interrupt reports can be longer,
/// but no supported device needs it).
pub const MAX_REPORT_LEN: usize = 256;

/// An error in a profile file: where, and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), location(*line, *column))]
pub struct ProfileError {
    /// The profile file (or `<builtin>/NAME.toml` for profiles compiled in).
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column (characters), when known.
    pub column: Option<usize>,
    /// What is wrong and what was expected.
    pub message: String,
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// The 1-based line and column of byte offset `at` in `text`.
pub fn line_column(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let mut start = at;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = 1 + before.matches('\n').count();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, 1 + before[line_start..].chars().count())
}

/// What a decoded field means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputAxis {
    /// Translation along x (m in position mode, m/s in rate mode).
    X,
    /// Translation along y.
    Y,
    /// Translation along z.
    Z,
    /// Rotation-vector x component (rad in position mode, rad/s in rate mode).
    Rx,
    /// Rotation-vector y component.
    Ry,
    /// Rotation-vector z component.
    Rz,
    /// Quaternion scalar part (position mode only).
    Qw,
    /// Quaternion x.
    Qx,
    /// Quaternion y.
    Qy,
    /// Quaternion z.
    Qz,
    /// Button bits.
    Buttons,
}

/// What an output field carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputAxis {
    /// Force x, N.
    Fx,
    /// Force y, N.
    Fy,
    /// Force z, N.
    Fz,
    /// Torque x, N·m.
    Tx,
    /// Torque y, N·m.
    Ty,
    /// Torque z, N·m.
    Tz,
}

/// Binary type of a field. Multi-byte types are little-endian (`le`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    U8,
    I8,
    U16le,
    I16le,
    U32le,
    I32le,
    F32le,
}

impl FieldType {
    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 | FieldType::I8 => 1,
            FieldType::U16le | FieldType::I16le => 2,
            FieldType::U32le | FieldType::I32le | FieldType::F32le => 4,
        }
    }

    /// True for the integer types.
    pub fn is_integer(self) -> bool {
        self != FieldType::F32le
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInputField {
    axis: InputAxis,
    offset: usize,
    #[serde(rename = "type")]
    ty: FieldType,
    #[serde(default = "one")]
    scale: f64,
    #[serde(default)]
    deadband: f64,
    #[serde(default)]
    bit_offset: u32,
    bit_count: Option<u32>,
    #[serde(default)]
    button_base: u32,
}

/// The profile's spelling of an input axis (`x`, `qw`, `buttons`...).
fn input_axis_name(a: InputAxis) -> String {
    format!("{a:?}").to_lowercase()
}

fn one() -> f64 {
    1.0
}

/// One field of an input report.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawInputField")]
pub struct InputField {
    /// What the value means.
    pub axis: InputAxis,
    /// Byte offset from the start of the buffer hidapi returns (byte 0 is the report id for
    /// numbered reports).
    pub offset: usize,
    /// Binary type.
    pub ty: FieldType,
    /// SI units per count (sign flips the axis). Ignored for buttons.
    pub scale: f64,
    /// Raw values with magnitude at or below this read as zero (counts).
    pub deadband: f64,
    /// Buttons: first source bit within the value.
    pub bit_offset: u32,
    /// Buttons: number of bits taken.
    pub bit_count: u32,
    /// Buttons: the bit of the device's button mask that the first source bit becomes.
    pub button_base: u32,
}

impl TryFrom<RawInputField> for InputField {
    type Error = String;
    fn try_from(r: RawInputField) -> Result<Self, String> {
        if !r.scale.is_finite() || r.scale == 0.0 {
            return Err(format!(
                "expected `scale` to be a finite non-zero number, found {}",
                r.scale
            ));
        }
        if !r.deadband.is_finite() || r.deadband < 0.0 {
            return Err(format!("expected `deadband` >= 0, found {}", r.deadband));
        }
        let width = 8 * r.ty.size() as u32;
        let bit_count = r.bit_count.unwrap_or(width);
        if r.axis == InputAxis::Buttons {
            if !r.ty.is_integer() {
                return Err("expected an integer `type` for a buttons field".to_string());
            }
            if bit_count == 0 || r.bit_offset + bit_count > width {
                return Err(format!(
                    "expected bit_offset + bit_count <= {width} (the width of {:?}), found {} + {}",
                    r.ty, r.bit_offset, bit_count
                ));
            }
            if r.button_base + bit_count > 32 {
                return Err(format!(
                    "expected button_base + bit_count <= 32, found {} + {}",
                    r.button_base, bit_count
                ));
            }
        } else if r.bit_offset != 0 || r.bit_count.is_some() || r.button_base != 0 {
            return Err(
                "expected bit_offset, bit_count and button_base only on a buttons field"
                    .to_string(),
            );
        }
        Ok(Self {
            axis: r.axis,
            offset: r.offset,
            ty: r.ty,
            scale: r.scale,
            deadband: r.deadband,
            bit_offset: r.bit_offset,
            bit_count,
            button_base: r.button_base,
        })
    }
}

fn check_report_len(report_id: u8, length: usize) -> Result<(), String> {
    let min = if report_id == 0 { 1 } else { 2 };
    if length < min || length > MAX_REPORT_LEN {
        return Err(format!(
            "expected `length` in {min}..={MAX_REPORT_LEN} bytes, found {length}"
        ));
    }
    Ok(())
}

fn check_extent(report_id: u8, length: usize, offset: usize, size: usize) -> Result<(), String> {
    let first = if report_id == 0 { 0 } else { 1 };
    if offset < first || offset + size > length {
        return Err(format!(
            "expected a field inside bytes {first}..{length} of report {report_id}, found bytes {offset}..{}",
            offset + size
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInputReport {
    report_id: u8,
    length: usize,
    fields: Vec<InputField>,
}

/// One input report layout.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawInputReport")]
pub struct InputReport {
    /// Report id (0 = the device does not number its reports).
    pub report_id: u8,
    /// Length in bytes, including the report id byte when numbered. Shorter reports are
    /// protocol errors; longer ones are accepted (padding).
    pub length: usize,
    /// The decoded fields.
    pub fields: Vec<InputField>,
}

impl TryFrom<RawInputReport> for InputReport {
    type Error = String;
    fn try_from(r: RawInputReport) -> Result<Self, String> {
        check_report_len(r.report_id, r.length)?;
        if r.fields.is_empty() {
            return Err("expected at least one field".to_string());
        }
        for (i, f) in r.fields.iter().enumerate() {
            check_extent(r.report_id, r.length, f.offset, f.ty.size())?;
            // Buttons may be split over several fields (bit ranges, button_base).
            if f.axis != InputAxis::Buttons {
                if let Some(first) = r.fields[..i].iter().find(|g| g.axis == f.axis) {
                    return Err(format!(
                        "expected each axis mapped once, axis `{}` is mapped by the fields at offsets {} and {}",
                        input_axis_name(f.axis),
                        first.offset,
                        f.offset
                    ));
                }
            }
        }
        Ok(Self {
            report_id: r.report_id,
            length: r.length,
            fields: r.fields,
        })
    }
}

/// One field of the output report: value = round(component / scale), saturated to the
/// type's range.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputField {
    /// Which component.
    pub axis: OutputAxis,
    /// Byte offset (byte 0 is the report id when numbered).
    pub offset: usize,
    /// Binary type.
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// SI units per count.
    pub scale: f64,
}

/// A fixed byte in the output report (e.g. a motor-enable flag).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConstant {
    /// Byte offset.
    pub offset: usize,
    /// The byte.
    pub value: u8,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOutputReport {
    report_id: u8,
    length: usize,
    fields: Vec<OutputField>,
    #[serde(default)]
    constants: Vec<OutputConstant>,
}

/// The output (force/torque) report layout.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawOutputReport")]
pub struct OutputReport {
    /// Report id (0 = unnumbered; hidapi still needs a leading 0 byte, which is added).
    pub report_id: u8,
    /// Length in bytes, including the report id byte.
    pub length: usize,
    /// Encoded components.
    pub fields: Vec<OutputField>,
    /// Fixed bytes.
    pub constants: Vec<OutputConstant>,
}

impl TryFrom<RawOutputReport> for OutputReport {
    type Error = String;
    fn try_from(r: RawOutputReport) -> Result<Self, String> {
        // Output buffers always start with the report id byte (0 when unnumbered).
        check_report_len(1, r.length)?;
        if r.fields.is_empty() {
            return Err("expected at least one field".to_string());
        }
        let mut used = vec![false; r.length];
        let mut claim = |offset: usize, size: usize| -> Result<(), String> {
            check_extent(1, r.length, offset, size)?;
            for b in &mut used[offset..offset + size] {
                if *b {
                    return Err(format!(
                        "expected non-overlapping fields, byte {offset} is used twice"
                    ));
                }
                *b = true;
            }
            Ok(())
        };
        for (i, f) in r.fields.iter().enumerate() {
            if let Some(first) = r.fields[..i].iter().find(|g| g.axis == f.axis) {
                let name = format!("{:?}", f.axis).to_lowercase();
                return Err(format!(
                    "expected each axis mapped once, axis `{name}` is mapped by the fields at offsets {} and {}",
                    first.offset,
                    f.offset
                ));
            }
            if !f.scale.is_finite() || f.scale == 0.0 {
                return Err(format!(
                    "expected `scale` to be a finite non-zero number, found {}",
                    f.scale
                ));
            }
            claim(f.offset, f.ty.size())?;
        }
        for c in &r.constants {
            claim(c.offset, 1)?;
        }
        Ok(Self {
            report_id: r.report_id,
            length: r.length,
            fields: r.fields,
            constants: r.constants,
        })
    }
}

/// How the device's match is decided.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchRule {
    /// USB vendor id.
    pub vendor_id: u16,
    /// USB product ids.
    pub product_ids: Vec<u16>,
    /// HID usage page of the interface, when the device has several.
    pub usage_page: Option<u16>,
    /// HID usage within the page.
    pub usage: Option<u16>,
}

impl MatchRule {
    /// True when a device with these ids and usages matches. A usage of 0 (unknown to the
    /// backend) does not rule a device out.
    pub fn matches(&self, vendor_id: u16, product_id: u16, usage_page: u16, usage: u16) -> bool {
        vendor_id == self.vendor_id
            && self.product_ids.contains(&product_id)
            && self
                .usage_page
                .is_none_or(|p| usage_page == 0 || usage_page == p)
            && self.usage.is_none_or(|u| usage == 0 || usage == u)
    }
}

/// Pose mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlMode {
    /// The fields are the pose.
    Position,
    /// The fields are translational and angular velocities; the backend integrates them
    /// into a pose kept inside the workspace.
    Rate,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceSection {
    name: String,
    dof_sensed: u8,
    dof_actuated: u8,
    #[serde(default)]
    max_force_n: f64,
    /// Default: `max_force_n`.
    max_continuous_force_n: Option<f64>,
    #[serde(default)]
    max_torque_nm: f64,
    #[serde(default)]
    max_stiffness_n_per_m: f64,
    workspace_radius_m: Option<f64>,
    workspace_half_extents_m: Option<[f64; 3]>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlSection {
    mode: ControlMode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    description: String,
    #[serde(rename = "match")]
    matching: MatchRule,
    device: Spanned<DeviceSection>,
    control: Spanned<ControlSection>,
    input: Vec<Spanned<InputReport>>,
    output: Option<Spanned<OutputReport>>,
    #[serde(default)]
    safety: Option<Spanned<SafetySettings>>,
}

/// A parsed, checked profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Short name (`haptics devices` lists it; `--profile NAME` selects it).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Which devices it applies to.
    pub matching: MatchRule,
    /// Capabilities reported through [`crate::Device::info`].
    pub info: DeviceInfo,
    /// Position or rate control.
    pub mode: ControlMode,
    /// Input report layouts.
    pub inputs: Vec<InputReport>,
    /// Output report layout, none for input-only devices.
    pub output: Option<OutputReport>,
    /// Safety settings for [`crate::safety::SafeDevice`].
    pub safety: SafetySettings,
}

impl Profile {
    /// Parses profile TOML; `path` names the source in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let err = ErrorContext { text, path };
        let raw: RawProfile =
            toml::from_str(text).map_err(|e| err.at(e.span(), e.message().trim().to_string()))?;
        let dev_span = raw.device.span();
        let dev = raw.device.into_inner();
        let workspace = check_device(&dev, &dev_span, &err)?;
        let ctl_span = raw.control.span();
        let mode = raw.control.into_inner().mode;
        if raw.input.is_empty() {
            return Err(err.at(None, "expected at least one [[input]] report".into()));
        }
        let input_spans: Vec<std::ops::Range<usize>> = raw.input.iter().map(|r| r.span()).collect();
        let inputs: Vec<InputReport> = raw.input.into_iter().map(|r| r.into_inner()).collect();
        check_axes_across_reports(&inputs, &input_spans, &err)?;
        check_report_ids(&inputs, &err)?;
        check_quaternion_axes(&inputs, mode, ctl_span, &err)?;
        let output = checked_output(raw.output, dev.dof_actuated, &dev_span, &err)?;
        let safety = checked_safety(raw.safety, &err)?;
        Ok(Profile {
            name: raw.name,
            description: raw.description,
            matching: raw.matching,
            info: device_info(dev, workspace),
            mode,
            inputs,
            output,
            safety,
        })
    }

    /// Reads and parses a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let bytes = std::fs::read(path).map_err(|e| ProfileError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: format!("cannot read: {e}"),
        })?;
        Self::from_bytes(&bytes, path)
    }

    /// Parses the bytes of a profile file: UTF-8 text (an invalid byte is named with its
    /// line, column and offset), then as [`Profile::from_toml_str`].
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Profile, ProfileError> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let at = e.valid_up_to();
            // The prefix before the first invalid byte is valid UTF-8.
            let before = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            ProfileError {
                path: path.to_path_buf(),
                line: Some(line),
                column: Some(column),
                message: format!(
                    "expected UTF-8 text, found the invalid byte 0x{:02x} at byte offset {at}",
                    bytes[at]
                ),
            }
        })?;
        Self::from_toml_str(text, path)
    }

    /// The input report layout for a report id (the single layout for unnumbered reports).
    pub fn input_report(&self, report_id: u8) -> Option<&InputReport> {
        self.inputs
            .iter()
            .find(|r| r.report_id == report_id || r.report_id == 0)
    }
}

/// Builds [`ProfileError`]s located in one profile's text.
struct ErrorContext<'a> {
    /// The profile's TOML.
    text: &'a str,
    /// The profile file named in errors.
    path: &'a Path,
}

impl ErrorContext<'_> {
    /// An error at the start of `span` (no line and column without one).
    fn at(&self, span: Option<std::ops::Range<usize>>, message: String) -> ProfileError {
        let (line, column) = match span {
            Some(s) => {
                let (l, c) = line_column(self.text, s.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ProfileError {
            path: self.path.to_path_buf(),
            line,
            column,
            message,
        }
    }
}

/// Checks the `[device]` table's degrees of freedom and limits, and returns its workspace.
fn check_device(
    dev: &DeviceSection,
    dev_span: &std::ops::Range<usize>,
    err: &ErrorContext,
) -> Result<Workspace, ProfileError> {
    let dspan = || Some(dev_span.clone());
    if dev.dof_sensed > 6 || dev.dof_actuated > 6 {
        return Err(err.at(
            dspan(),
            "expected dof_sensed and dof_actuated in 0..=6".into(),
        ));
    }
    for (n, v) in [
        ("max_force_n", dev.max_force_n),
        ("max_torque_nm", dev.max_torque_nm),
        ("max_stiffness_n_per_m", dev.max_stiffness_n_per_m),
        (
            "max_continuous_force_n",
            dev.max_continuous_force_n.unwrap_or(0.0),
        ),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(err.at(dspan(), format!("expected {n} >= 0, found {v}")));
        }
    }
    match (dev.workspace_radius_m, dev.workspace_half_extents_m) {
        (Some(r), None) if r.is_finite() && r > 0.0 => Ok(Workspace::Sphere { radius_m: r }),
        (None, Some(h)) if h.iter().all(|v| v.is_finite() && *v > 0.0) => Ok(Workspace::Box {
            half_extents_m: Vector3::from(h),
        }),
        _ => Err(err.at(
            dspan(),
            "expected exactly one of workspace_radius_m (> 0) or workspace_half_extents_m ([x, y, z], each > 0)".into(),
        )),
    }
}

/// Checks that no axis is mapped by two `[[input]]` reports (`spans`: the reports' spans).
fn check_axes_across_reports(
    inputs: &[InputReport],
    spans: &[std::ops::Range<usize>],
    err: &ErrorContext,
) -> Result<(), ProfileError> {
    // One axis mapped in two reports (within one report, the report itself says so).
    for (j, report) in inputs.iter().enumerate() {
        for f in report
            .fields
            .iter()
            .filter(|f| f.axis != InputAxis::Buttons)
        {
            if let Some(first) = inputs[..j]
                .iter()
                .find(|r| r.fields.iter().any(|g| g.axis == f.axis))
            {
                return Err(err.at(
                    Some(spans[j].clone()),
                    format!(
                        "expected each axis mapped once, axis `{}` is mapped by the [[input]] reports with ids {} and {}",
                        input_axis_name(f.axis),
                        first.report_id,
                        report.report_id
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks that several `[[input]]` reports have distinct non-zero ids.
fn check_report_ids(inputs: &[InputReport], err: &ErrorContext) -> Result<(), ProfileError> {
    let mut ids: Vec<u8> = inputs.iter().map(|r| r.report_id).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) || (ids.len() > 1 && ids[0] == 0) {
        return Err(err.at(
            None,
            "expected distinct non-zero report ids when there are several [[input]] reports".into(),
        ));
    }
    Ok(())
}

/// Checks that a reported quaternion is complete, alone, and read in position mode.
fn check_quaternion_axes(
    inputs: &[InputReport],
    mode: ControlMode,
    ctl_span: std::ops::Range<usize>,
    err: &ErrorContext,
) -> Result<(), ProfileError> {
    let axes: Vec<InputAxis> = inputs
        .iter()
        .flat_map(|r| r.fields.iter().map(|f| f.axis))
        .collect();
    let has = |a: InputAxis| axes.contains(&a);
    let quat = [InputAxis::Qw, InputAxis::Qx, InputAxis::Qy, InputAxis::Qz];
    let rvec = [InputAxis::Rx, InputAxis::Ry, InputAxis::Rz];
    if quat.iter().any(|a| has(*a)) {
        if mode == ControlMode::Rate {
            return Err(err.at(
                Some(ctl_span),
                "expected mode = \"position\" for a device that reports a quaternion (rate mode integrates rx, ry, rz)".into(),
            ));
        }
        if !quat.iter().all(|a| has(*a)) || rvec.iter().any(|a| has(*a)) {
            return Err(err.at(
                None,
                "expected all of qw, qx, qy, qz and none of rx, ry, rz when a quaternion is reported".into(),
            ));
        }
    }
    Ok(())
}

/// The `[output]` report, present exactly when the device has actuated degrees of freedom.
fn checked_output(
    output: Option<Spanned<OutputReport>>,
    dof_actuated: u8,
    dev_span: &std::ops::Range<usize>,
    err: &ErrorContext,
) -> Result<Option<OutputReport>, ProfileError> {
    match output {
        Some(o) => {
            let span = o.span();
            if dof_actuated == 0 {
                return Err(err.at(
                    Some(span),
                    "expected no [output] for a device with dof_actuated = 0".into(),
                ));
            }
            Ok(Some(o.into_inner()))
        }
        None if dof_actuated > 0 => Err(err.at(
            Some(dev_span.clone()),
            "expected an [output] report for a device with dof_actuated > 0".into(),
        )),
        None => Ok(None),
    }
}

/// The validated `[safety]` table, or the default settings without one.
fn checked_safety(
    safety: Option<Spanned<SafetySettings>>,
    err: &ErrorContext,
) -> Result<SafetySettings, ProfileError> {
    match safety {
        Some(s) => {
            let span = s.span();
            let s = s.into_inner();
            s.validate()
                .map_err(|m| err.at(Some(span), format!("[safety]: {m}")))?;
            Ok(s)
        }
        None => Ok(SafetySettings::default()),
    }
}

/// The device capabilities from the checked `[device]` table.
fn device_info(dev: DeviceSection, workspace: Workspace) -> DeviceInfo {
    DeviceInfo {
        name: dev.name,
        dof_sensed: dev.dof_sensed,
        dof_actuated: dev.dof_actuated,
        max_force_n: dev.max_force_n,
        max_continuous_force_n: dev
            .max_continuous_force_n
            .unwrap_or(dev.max_force_n)
            .min(dev.max_force_n),
        max_torque_nm: dev.max_torque_nm,
        max_stiffness_n_per_m: dev.max_stiffness_n_per_m,
        // HID profiles rate no torque spring.
        max_angular_stiffness_nm_per_rad: 0.0,
        workspace,
    }
}

/// The profiles shipped in `devices/profiles/`, compiled in: (file name stem, TOML).
pub const BUILTIN: [(&str, &str); 3] = [
    (
        "spacemouse-split",
        include_str!("../../profiles/spacemouse-split.toml"),
    ),
    (
        "spacemouse-combined",
        include_str!("../../profiles/spacemouse-combined.toml"),
    ),
    (
        "generic-ffb",
        include_str!("../../profiles/generic-ffb.toml"),
    ),
];

/// Names of the built-in profiles.
pub fn builtin_names() -> Vec<String> {
    BUILTIN.iter().map(|(n, _)| n.to_string()).collect()
}

/// Parses every built-in profile.
pub fn builtin_profiles() -> Result<Vec<Profile>, ProfileError> {
    BUILTIN
        .iter()
        .map(|(name, text)| {
            Profile::from_toml_str(text, &Path::new("<builtin>").join(format!("{name}.toml")))
        })
        .collect()
}

/// A built-in profile by name; an unknown name is an error listing the known ones.
pub fn builtin_profile(name: &str) -> Result<Profile, crate::DeviceError> {
    for p in builtin_profiles()? {
        if p.name == name {
            return Ok(p);
        }
    }
    Err(crate::DeviceError::UnknownProfile {
        name: name.to_string(),
        known: builtin_names(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn parse(text: &str) -> Result<Profile, ProfileError> {
        Profile::from_toml_str(text, Path::new("test.toml"))
    }

    fn generic() -> &'static str {
        BUILTIN[2].1
    }

    /// The 1-based line of the first occurrence of `needle` in `text`.
    fn line_of(text: &str, needle: &str) -> usize {
        line_column(text, text.find(needle).expect("needle in text")).0
    }

    #[test]
    fn builtin_profiles_parse_and_match_their_files() {
        let ps = builtin_profiles().unwrap();
        assert_eq!(ps.len(), BUILTIN.len());
        for (p, (stem, _)) in ps.iter().zip(BUILTIN.iter()) {
            assert_eq!(&p.name, stem, "a profile's name is its file name");
        }
        // Every file in devices/profiles is compiled in (and identical).
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .collect();
        files.sort();
        assert_eq!(files.len(), BUILTIN.len());
        for f in files {
            let loaded = Profile::load(&f).unwrap();
            assert!(ps.contains(&loaded), "{}", f.display());
        }
        let sm = &ps[0];
        assert_eq!(sm.mode, ControlMode::Rate);
        assert!(sm.output.is_none() && sm.info.dof_actuated == 0);
        assert_eq!(
            sm.inputs.iter().map(|r| r.report_id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        let g = &ps[2];
        assert_eq!(g.mode, ControlMode::Position);
        assert_eq!(g.output.as_ref().map(|o| o.length), Some(14));
        assert_eq!(g.safety.enable_button, Some(0));
        assert_eq!(g.info.max_force_n, 8.0);
    }

    #[test]
    fn unknown_profile_lists_the_known_ones() {
        let e = builtin_profile("phantom").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("'phantom'"), "{msg}");
        for (n, _) in BUILTIN {
            assert!(msg.contains(n), "{msg}");
        }
        assert_eq!(builtin_profile("generic-ffb").unwrap().name, "generic-ffb");
    }

    #[test]
    fn match_rule() {
        let p = builtin_profile("spacemouse-split").unwrap();
        assert!(p.matching.matches(0x046d, 0xc626, 1, 8));
        assert!(
            p.matching.matches(0x046d, 0xc626, 0, 0),
            "unknown usage does not exclude"
        );
        assert!(
            !p.matching.matches(0x046d, 0xc626, 0xff00, 1),
            "other interface"
        );
        assert!(!p.matching.matches(0x256f, 0xc626, 1, 8));
        assert!(!p.matching.matches(0x046d, 0xc52b, 1, 8));
    }

    #[test]
    fn bad_type_names_line_and_expectation() {
        let text = generic().replacen(
            "type = \"i16le\", scale = 3.05",
            "type = \"i17le\", scale = 3.05",
            1,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "i17le")), "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with("test.toml:"), "{msg}");
        assert!(msg.contains("i17le") && msg.contains("expected"), "{msg}");
    }

    #[test]
    fn field_outside_report_is_an_error_at_the_report() {
        let text = generic().replacen("length = 22", "length = 20", 1);
        let e = parse(&text).unwrap_err();
        let l = e.line.unwrap();
        // Points into the [[input]] table.
        assert!(
            l >= line_of(&text, "[[input]]") && l <= line_of(&text, "[output]"),
            "{e}"
        );
        assert!(e.message.contains("bytes 19..21"), "{e}");
    }

    #[test]
    fn overlapping_output_fields_are_an_error() {
        let text = generic().replacen("offset = 13, value = 1", "offset = 12, value = 1", 1);
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("byte 12 is used twice"), "{e}");
        assert!(e.line.unwrap() >= line_of(&text, "[output]"), "{e}");
    }

    #[test]
    fn missing_and_unknown_keys() {
        let text = generic().replacen("vendor_id = 0x1209\n", "", 1);
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("missing field `vendor_id`"), "{e}");
        assert!(e.line.is_some());
        let text = generic().replacen("dof_sensed = 6", "dof_sensed = 6\ncolour = \"red\"", 1);
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "colour")), "{e}");
    }

    #[test]
    fn semantic_errors_point_at_their_section() {
        // An output on an input-only device.
        let text = generic().replacen("dof_actuated = 6", "dof_actuated = 0", 1);
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "[output]")), "{e}");
        // Bad safety settings.
        let text = generic().replacen("ramp_time_s = 0.5", "ramp_time_s = -0.5", 1);
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "[safety]")), "{e}");
        assert!(e.message.contains("ramp_time_s"), "{e}");
        // A quaternion in rate mode.
        let text = generic().replacen("mode = \"position\"", "mode = \"rate\"", 1);
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "[control]")), "{e}");
        // Both workspace forms.
        let text = generic().replacen(
            "workspace_half",
            "workspace_radius_m = 0.1\nworkspace_half",
            1,
        );
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "[device]")), "{e}");
    }

    #[test]
    fn an_axis_mapped_twice_is_an_error_at_its_report() {
        // Twice in one input report.
        let text = generic().replacen(
            "{ axis = \"y\", offset = 5,",
            "{ axis = \"x\", offset = 5,",
            1,
        );
        assert_ne!(text, generic());
        let e = parse(&text).unwrap_err();
        assert!(
            e.message
                .contains("axis `x` is mapped by the fields at offsets 1 and 5"),
            "{e}"
        );
        let l = e.line.unwrap();
        assert!(
            l >= line_of(&text, "[[input]]") && l < line_of(&text, "[output]"),
            "{e}"
        );
        // Twice in the output report.
        let text = generic().replacen(
            "{ axis = \"fy\", offset = 3,",
            "{ axis = \"fx\", offset = 3,",
            1,
        );
        assert_ne!(text, generic());
        let e = parse(&text).unwrap_err();
        assert!(
            e.message
                .contains("axis `fx` is mapped by the fields at offsets 1 and 3"),
            "{e}"
        );
        assert!(e.line.unwrap() >= line_of(&text, "[output]"), "{e}");
        // In two input reports of a split device.
        let split = include_str!("../../profiles/spacemouse-split.toml");
        let text = split.replacen(
            "{ axis = \"rx\", offset = 1,",
            "{ axis = \"x\", offset = 1,",
            1,
        );
        assert_ne!(text, split);
        let e = parse(&text).unwrap_err();
        assert!(
            e.message
                .contains("axis `x` is mapped by the [[input]] reports"),
            "{e}"
        );
        let l = e.line.unwrap();
        let second_report = text[..text.find("axis = \"rz\"").unwrap()]
            .rfind("[[input]]")
            .unwrap();
        assert!(l >= line_column(&text, second_report).0, "{e}");
        // Several buttons fields stay allowed (split bit ranges).
        parse(split).unwrap();
    }

    #[test]
    fn toml_syntax_error_has_a_line() {
        let text = generic().replacen("[control]", "[control", 1);
        let e = parse(&text).unwrap_err();
        assert_eq!(e.line, Some(line_of(&text, "[control")), "{e}");
    }

    #[test]
    fn missing_file_names_it() {
        let e = Profile::load(Path::new("/nonexistent/p.toml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/nonexistent/p.toml: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn line_column_counts_characters() {
        let t = "ab\ncdé\nf";
        assert_eq!(line_column(t, 0), (1, 1));
        assert_eq!(line_column(t, 3), (2, 1));
        assert_eq!(line_column(t, 8), (3, 1)); // after the two-byte é
        assert_eq!(line_column(t, 6), (2, 3)); // inside é: its start
        assert_eq!(line_column(t, 999), (3, 2));
    }

    #[test]
    fn fuzzed_profiles_never_panic() {
        let mut rng = SplitMix64::new(77);
        let alphabet = b"0123456789xabcdef=[]{}\",.# \n-_";
        for i in 0..600 {
            let base = BUILTIN[i % BUILTIN.len()].1.as_bytes();
            let mut b = base.to_vec();
            for _ in 0..1 + rng.below(3) {
                let k = rng.below(b.len() as u64) as usize;
                let c = alphabet[rng.below(alphabet.len() as u64) as usize];
                if rng.below(2) == 0 {
                    b[k] = c;
                } else {
                    b.remove(k);
                }
            }
            let text = String::from_utf8_lossy(&b);
            if let Err(e) = parse(&text) {
                assert!(e.to_string().starts_with("test.toml"));
            }
        }
    }
}
