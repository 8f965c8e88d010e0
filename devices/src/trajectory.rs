//! Recorded device input as CSV: writer, reader with typed errors, and [`ReplayDevice`].
//!
//! Why: regression tests and offline experiments replay exactly what a user did with the
//! stylus, sample by sample, without hardware and without a wall clock, so a run is
//! reproducible bit for bit. CSV keeps the recordings readable and diffable.
//!
//! # Format
//!
//! UTF-8 text, one sample per line, fields separated by commas (spaces around fields are
//! ignored). Lines that are empty or start with `#` are comments. The first other line is
//! the header, exactly
//!
//! ```text
//! time_s,px,py,pz,qw,qx,qy,qz,buttons
//! ```
//!
//! optionally followed by the six columns `fx,fy,fz,tx,ty,tz` (the force in N and torque in
//! N·m that was sent to the device after that sample; written by recorders that log the
//! rendered output, ignored on replay), and optionally, last, the column `activation`: a
//! scalar control input in [0, 1] that the user set alongside the stylus (a slider or a
//! pedal; the muscle scenes read it as the muscle's activation, so a recorded palpation
//! with an activation ramp replays as one). Columns:
//!
//! | column | unit | meaning |
//! |---|---|---|
//! | `time_s` | s | device timestamp; strictly increasing |
//! | `px, py, pz` | m | stylus position |
//! | `qw, qx, qy, qz` | 1 | orientation quaternion (scalar first); norm within 1e-3 of 1, renormalized on reading |
//! | `buttons` | bitmask | unsigned decimal integer, bit i = button i |
//! | `fx, fy, fz` | N | optional: force sent |
//! | `tx, ty, tz` | N·m | optional: torque sent |
//! | `activation` | 1 | optional, last: control input in [0, 1] |
//!
//! Every number must be finite. The writer prints the shortest decimal that reads back to
//! the same `f64`, so a write/read round trip is exact.
//!
//! Errors ([`TrajectoryError`]) name the file, the 1-based line, the 1-based column and its
//! name, and what was expected. No input makes the reader panic.

use std::io::Write;
use std::path::{Path, PathBuf};

use nalgebra::{Quaternion, UnitQuaternion, Vector3};

use crate::Device;

use crate::DeviceError;

use crate::DeviceInfo;

use crate::DeviceSample;

use crate::Pose;

use crate::Wrench;

/// The required header columns, in order.
pub const COLUMNS: [&str; 9] = [
    "time_s", "px", "py", "pz", "qw", "qx", "qy", "qz", "buttons",
];
/// The optional wrench columns, in order, after [`COLUMNS`].
pub const WRENCH_COLUMNS: [&str; 6] = ["fx", "fy", "fz", "tx", "ty", "tz"];
/// The optional control-input column, last when present.
pub const ACTIVATION_COLUMN: &str = "activation";
/// Largest accepted |‖q‖ − 1| for a stored quaternion.
pub const QUATERNION_NORM_TOLERANCE: f64 = 1e-3;

/// One recorded sample (also used as a keyframe by the simulated device).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrajectorySample {
    /// Timestamp, s.
    pub time_s: f64,
    /// Stylus pose.
    pub pose: Pose,
    /// Button bitmask.
    pub buttons: u32,
}

impl TrajectorySample {
    /// A sample from its parts.
    pub fn new(time_s: f64, pose: Pose, buttons: u32) -> Self {
        Self {
            time_s,
            pose,
            buttons,
        }
    }
}

impl From<DeviceSample> for TrajectorySample {
    fn from(s: DeviceSample) -> Self {
        Self::new(s.time_s, s.pose, s.buttons)
    }
}

/// A recording: samples, the wrenches sent after each one when the file has them, and
/// the control input (activation) per sample when the file has it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trajectory {
    /// Samples in time order.
    pub samples: Vec<TrajectorySample>,
    /// One wrench per sample, or empty when not recorded.
    pub wrenches: Vec<Wrench>,
    /// One control input in [0, 1] per sample (column `activation`), or empty.
    pub activation: Vec<f64>,
}

/// Why a trajectory could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not UTF-8.
    #[error("{path}:{line}: expected UTF-8 text, found the invalid byte 0x{byte:02x} at byte offset {offset}")]
    Encoding {
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// Byte offset of the first invalid byte from the start of the file.
        offset: usize,
        /// The first invalid byte.
        byte: u8,
    },
    /// No header line.
    #[error("{path}: empty file: expected the header line '{}'", COLUMNS.join(","))]
    MissingHeader { path: PathBuf },
    /// The header is not one of the two accepted forms.
    #[error("{path}:{line}: column {column}: expected header '{expected}', found '{found}'")]
    Header {
        path: PathBuf,
        line: usize,
        column: usize,
        expected: String,
        found: String,
    },
    /// A data line with the wrong number of fields.
    #[error("{path}:{line}: expected {expected} comma-separated fields (as in the header), found {found}")]
    ColumnCount {
        path: PathBuf,
        line: usize,
        expected: usize,
        found: usize,
    },
    /// A field that does not parse as what its column holds.
    #[error("{path}:{line}: column {column} ({name}): expected {expected}, found '{found}'")]
    Value {
        path: PathBuf,
        line: usize,
        column: usize,
        name: &'static str,
        expected: &'static str,
        found: String,
    },
    /// A NaN or infinite number.
    #[error("{path}:{line}: column {column} ({name}): expected a finite number, found '{found}'")]
    NonFinite {
        path: PathBuf,
        line: usize,
        column: usize,
        name: &'static str,
        found: String,
    },
    /// A timestamp not after the previous one.
    #[error(
        "{path}:{line}: column 1 (time_s): expected a time after {previous} s, found {found} s"
    )]
    NonMonotonicTime {
        path: PathBuf,
        line: usize,
        previous: f64,
        found: f64,
    },
    /// A quaternion too far from unit length.
    #[error("{path}:{line}: columns 5-8 (qw,qx,qy,qz): expected a unit quaternion (norm within {tolerance} of 1), found norm {norm}")]
    NonUnitQuaternion {
        path: PathBuf,
        line: usize,
        norm: f64,
        tolerance: f64,
    },
}

impl TrajectoryError {
    /// The 1-based line the error points at, if any.
    pub fn line(&self) -> Option<usize> {
        match self {
            TrajectoryError::Encoding { line, .. }
            | TrajectoryError::Header { line, .. }
            | TrajectoryError::ColumnCount { line, .. }
            | TrajectoryError::Value { line, .. }
            | TrajectoryError::NonFinite { line, .. }
            | TrajectoryError::NonMonotonicTime { line, .. }
            | TrajectoryError::NonUnitQuaternion { line, .. } => Some(*line),
            _ => None,
        }
    }
}

/// Shortens a field for an error message.
fn excerpt(s: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = s.chars().take(MAX).collect();
    if s.chars().count() > MAX {
        out.push_str("...");
    }
    out.escape_debug().to_string()
}

/// Reads a trajectory file.
pub fn read_trajectory(path: &Path) -> Result<Trajectory, TrajectoryError> {
    let bytes = std::fs::read(path).map_err(|source| TrajectoryError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_trajectory(&bytes, path)
}

/// Parses trajectory CSV bytes; `path` names the source in errors.
pub fn parse_trajectory(bytes: &[u8], path: &Path) -> Result<Trajectory, TrajectoryError> {
    let text = decode_utf8(bytes, path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((hline, header)) = lines.next() else {
        return Err(TrajectoryError::MissingHeader {
            path: path.to_path_buf(),
        });
    };
    let layout = read_header(header, hline, path)?;
    let mut out = Trajectory::default();
    let mut prev_time: Option<f64> = None;
    let mut fields = [0.0f64; 16];
    for (line, text) in lines {
        let buttons = parse_row(text, line, &layout, path, &mut fields)?;
        let t = fields[0];
        check_time(prev_time, t, line, path)?;
        prev_time = Some(t);
        let q = unit_quaternion(&fields, line, path)?;
        let pose = Pose::new(
            Vector3::new(fields[1], fields[2], fields[3]),
            UnitQuaternion::new_normalize(q),
        );
        out.samples.push(TrajectorySample::new(t, pose, buttons));
        if layout.with_wrench {
            out.wrenches.push(Wrench::new(
                Vector3::new(fields[9], fields[10], fields[11]),
                Vector3::new(fields[12], fields[13], fields[14]),
            ));
        }
        if layout.with_activation {
            out.activation.push(fields[layout.ncol - 1]);
        }
    }
    Ok(out)
}

/// Checks that the bytes are UTF-8 text (an invalid byte is named with its line).
fn decode_utf8<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, TrajectoryError> {
    std::str::from_utf8(bytes).map_err(|e| TrajectoryError::Encoding {
        path: path.to_path_buf(),
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        offset: e.valid_up_to(),
        byte: bytes[e.valid_up_to()],
    })
}

/// The column layout a header declares.
struct Layout {
    /// The six wrench columns follow the required ones.
    with_wrench: bool,
    /// The activation column comes last.
    with_activation: bool,
    /// Number of columns.
    ncol: usize,
}

/// Reads the header line `header` (line `hline`) into the column layout it declares.
fn read_header(header: &str, hline: usize, path: &Path) -> Result<Layout, TrajectoryError> {
    let (with_wrench, with_activation) =
        parse_header(header).map_err(|(column, found)| TrajectoryError::Header {
            path: path.to_path_buf(),
            line: hline,
            column,
            expected: format!(
                "{} (optionally followed by ,{}; optionally ending with ,{ACTIVATION_COLUMN})",
                COLUMNS.join(","),
                WRENCH_COLUMNS.join(",")
            ),
            found,
        })?;
    let ncol = COLUMNS.len()
        + if with_wrench { WRENCH_COLUMNS.len() } else { 0 }
        + usize::from(with_activation);
    Ok(Layout {
        with_wrench,
        with_activation,
        ncol,
    })
}

/// Parses a data line's numbers into `fields` (by column index) and returns its buttons.
fn parse_row(
    text: &str,
    line: usize,
    layout: &Layout,
    path: &Path,
    fields: &mut [f64; 16],
) -> Result<u32, TrajectoryError> {
    let ncol = layout.ncol;
    let found = text.split(',').count();
    if found != ncol {
        return Err(TrajectoryError::ColumnCount {
            path: path.to_path_buf(),
            line,
            expected: ncol,
            found,
        });
    }
    let mut buttons = 0u32;
    for (i, raw) in text.split(',').enumerate() {
        let raw = raw.trim();
        let name = if layout.with_activation && i + 1 == ncol {
            ACTIVATION_COLUMN
        } else {
            column_name(i)
        };
        if i == 8 {
            buttons = raw.parse::<u32>().map_err(|_| TrajectoryError::Value {
                path: path.to_path_buf(),
                line,
                column: i + 1,
                name,
                expected: "an unsigned integer bitmask (0 to 4294967295)",
                found: excerpt(raw),
            })?;
            continue;
        }
        fields[i] = parse_number(raw, line, i + 1, name, path)?;
    }
    Ok(buttons)
}

/// Parses the finite number in column `column` (named `name`; activation in [0, 1]).
fn parse_number(
    raw: &str,
    line: usize,
    column: usize,
    name: &'static str,
    path: &Path,
) -> Result<f64, TrajectoryError> {
    let v = raw.parse::<f64>().map_err(|_| TrajectoryError::Value {
        path: path.to_path_buf(),
        line,
        column,
        name,
        expected: "a number",
        found: excerpt(raw),
    })?;
    if !v.is_finite() {
        return Err(TrajectoryError::NonFinite {
            path: path.to_path_buf(),
            line,
            column,
            name,
            found: excerpt(raw),
        });
    }
    if name == ACTIVATION_COLUMN && !(0.0..=1.0).contains(&v) {
        return Err(TrajectoryError::Value {
            path: path.to_path_buf(),
            line,
            column,
            name,
            expected: "a control input in [0, 1]",
            found: excerpt(raw),
        });
    }
    Ok(v)
}

/// Checks that time `t` comes after the previous sample's time, if any.
fn check_time(
    prev_time: Option<f64>,
    t: f64,
    line: usize,
    path: &Path,
) -> Result<(), TrajectoryError> {
    if let Some(p) = prev_time {
        if t <= p {
            return Err(TrajectoryError::NonMonotonicTime {
                path: path.to_path_buf(),
                line,
                previous: p,
                found: t,
            });
        }
    }
    Ok(())
}

/// The quaternion of columns qw, qx, qy, qz, checked to be unit within the tolerance.
fn unit_quaternion(
    fields: &[f64; 16],
    line: usize,
    path: &Path,
) -> Result<Quaternion<f64>, TrajectoryError> {
    let q = Quaternion::new(fields[4], fields[5], fields[6], fields[7]);
    let norm = q.norm();
    if (norm - 1.0).abs() > QUATERNION_NORM_TOLERANCE {
        return Err(TrajectoryError::NonUnitQuaternion {
            path: path.to_path_buf(),
            line,
            norm,
            tolerance: QUATERNION_NORM_TOLERANCE,
        });
    }
    Ok(q)
}

fn column_name(i: usize) -> &'static str {
    COLUMNS
        .iter()
        .chain(WRENCH_COLUMNS.iter())
        .nth(i)
        .copied()
        .unwrap_or("?")
}

/// Checks a header line; Ok((wrench columns, activation column)). On error: the 1-based
/// column and what was found there.
fn parse_header(line: &str) -> Result<(bool, bool), (usize, String)> {
    let mut names: Vec<&str> = line.split(',').map(str::trim).collect();
    let with_activation = names.last() == Some(&ACTIVATION_COLUMN);
    if with_activation {
        names.pop();
    }
    let all: Vec<&str> = COLUMNS
        .iter()
        .chain(WRENCH_COLUMNS.iter())
        .copied()
        .collect();
    for (i, n) in names.iter().enumerate() {
        if all.get(i) != Some(n) {
            return Err((i + 1, excerpt(n)));
        }
    }
    match names.len() {
        9 => Ok((false, with_activation)),
        15 => Ok((true, with_activation)),
        n => Err((n + 1, "end of line".to_string())),
    }
}

/// Writes trajectory CSV to any writer.
pub struct TrajectoryWriter<W: Write> {
    w: W,
    with_wrench: bool,
    with_activation: bool,
    prev_time: Option<f64>,
}

impl<W: Write> TrajectoryWriter<W> {
    /// Starts a file: writes the header (with the wrench columns when `with_wrench`).
    pub fn new(w: W, with_wrench: bool) -> std::io::Result<Self> {
        Self::with_columns(w, with_wrench, false)
    }

    /// Starts a file with the wrench columns and/or the activation column.
    pub fn with_columns(
        mut w: W,
        with_wrench: bool,
        with_activation: bool,
    ) -> std::io::Result<Self> {
        write!(w, "{}", COLUMNS.join(","))?;
        if with_wrench {
            write!(w, ",{}", WRENCH_COLUMNS.join(","))?;
        }
        if with_activation {
            write!(w, ",{ACTIVATION_COLUMN}")?;
        }
        writeln!(w)?;
        Ok(Self {
            w,
            with_wrench,
            with_activation,
            prev_time: None,
        })
    }

    /// [`Self::write`] with the activation column's value (`None` writes 0; ignored when
    /// the file has no activation column).
    pub fn write_with_activation(
        &mut self,
        s: &TrajectorySample,
        wrench: Option<&Wrench>,
        activation: Option<f64>,
    ) -> std::io::Result<()> {
        let a = activation.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&a) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "trajectory activation outside [0, 1]",
            ));
        }
        self.write_row(s, wrench)?;
        if self.with_activation {
            write!(self.w, ",{a}")?;
        }
        writeln!(self.w)
    }

    /// Appends one sample (and its wrench when the file has wrench columns; `None` writes
    /// zeros). Refuses non-finite numbers and non-increasing times, so every file written
    /// reads back.
    pub fn write(&mut self, s: &TrajectorySample, wrench: Option<&Wrench>) -> std::io::Result<()> {
        self.write_with_activation(s, wrench, None)
    }

    fn write_row(&mut self, s: &TrajectorySample, wrench: Option<&Wrench>) -> std::io::Result<()> {
        let invalid =
            |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
        if !s.time_s.is_finite() || !s.pose.is_finite() || !wrench.is_none_or(|w| w.is_finite()) {
            return Err(invalid("trajectory sample with a non-finite number"));
        }
        if self.prev_time.is_some_and(|p| s.time_s <= p) {
            return Err(invalid("trajectory times must increase"));
        }
        self.prev_time = Some(s.time_s);
        let p = &s.pose.position;
        let q = s.pose.orientation.quaternion();
        write!(
            self.w,
            "{},{},{},{},{},{},{},{},{}",
            s.time_s, p.x, p.y, p.z, q.w, q.i, q.j, q.k, s.buttons
        )?;
        if self.with_wrench {
            let w = wrench.copied().unwrap_or_default();
            write!(
                self.w,
                ",{},{},{},{},{},{}",
                w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z
            )?;
        }
        Ok(())
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

/// Writes a whole trajectory to a file (with wrench columns when it has wrenches).
pub fn write_trajectory(path: &Path, t: &Trajectory) -> Result<(), TrajectoryError> {
    let io = |source| TrajectoryError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let with_wrench = !t.wrenches.is_empty();
    let with_activation = !t.activation.is_empty();
    let mut w =
        TrajectoryWriter::with_columns(std::io::BufWriter::new(file), with_wrench, with_activation)
            .map_err(io)?;
    for (i, s) in t.samples.iter().enumerate() {
        w.write_with_activation(s, t.wrenches.get(i), t.activation.get(i).copied())
            .map_err(io)?;
    }
    w.finish().map_err(io)?;
    Ok(())
}

/// Plays a trajectory back sample by sample: each `read` returns the next recorded sample
/// (no wall clock, so replays are deterministic); `write` records the wrench sent after the
/// latest sample. After the last sample `read` returns [`DeviceError::EndOfStream`].
#[derive(Debug, Clone)]
pub struct ReplayDevice {
    info: DeviceInfo,
    samples: Vec<TrajectorySample>,
    next: usize,
    recorded: Vec<Wrench>,
}

impl ReplayDevice {
    /// A replay of `trajectory` reporting `info` (which sets the force limits the safety
    /// layer applies to the recorded output).
    pub fn new(trajectory: Trajectory, info: DeviceInfo) -> Self {
        let n = trajectory.samples.len();
        Self {
            info,
            samples: trajectory.samples,
            next: 0,
            recorded: vec![Wrench::zero(); n],
        }
    }

    /// Reads a trajectory file for replay, reporting the thesis PHANTOM's capabilities.
    pub fn open(path: &Path) -> Result<Self, TrajectoryError> {
        let t = read_trajectory(path)?;
        let mut info = DeviceInfo::phantom_premium_6dof();
        info.name = format!("Replay of {}", path.display());
        Ok(Self::new(t, info))
    }

    /// Samples still to be read.
    pub fn remaining(&self) -> usize {
        self.samples.len() - self.next
    }

    /// Starts again from the first sample (recorded wrenches are kept until overwritten).
    pub fn rewind(&mut self) {
        self.next = 0;
    }

    /// The wrench written after each sample (zero where none was written).
    pub fn recorded_wrenches(&self) -> &[Wrench] {
        &self.recorded
    }

    /// The replayed samples with the recorded wrenches, ready to write back to CSV.
    pub fn to_trajectory(&self) -> Trajectory {
        Trajectory {
            samples: self.samples.clone(),
            wrenches: self.recorded.clone(),
            activation: Vec::new(),
        }
    }
}

impl Device for ReplayDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn read(&mut self) -> Result<DeviceSample, DeviceError> {
        let s = self
            .samples
            .get(self.next)
            .ok_or(DeviceError::EndOfStream)?;
        self.next += 1;
        Ok(DeviceSample {
            time_s: s.time_s,
            pose: s.pose,
            buttons: s.buttons,
        })
    }

    fn write(&mut self, wrench: &Wrench) -> Result<(), DeviceError> {
        if let Some(slot) = self
            .next
            .checked_sub(1)
            .and_then(|i| self.recorded.get_mut(i))
        {
            *slot = *wrench;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    const GOOD: &str = "# recorded by a test\n\
time_s,px,py,pz,qw,qx,qy,qz,buttons\n\
0,0,0,0,1,0,0,0,0\n\
0.001, 0.0001,-0.0002,0.0003, 0.7071067811865476,0,0.7071067811865476,0, 1\n\
\n\
0.002,0.0002,-0.0004,0.0006,1,0,0,0,3\n";

    fn parse(s: &str) -> Result<Trajectory, TrajectoryError> {
        parse_trajectory(s.as_bytes(), Path::new("rec.csv"))
    }

    fn replace_line(line: usize, with: &str) -> String {
        GOOD.lines()
            .enumerate()
            .map(|(i, l)| if i + 1 == line { with } else { l })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn reads_a_good_file() {
        let t = parse(GOOD).unwrap();
        assert_eq!(t.samples.len(), 3);
        assert!(t.wrenches.is_empty());
        assert_eq!(t.samples[1].time_s, 0.001);
        assert_eq!(
            t.samples[1].pose.position,
            Vector3::new(0.0001, -0.0002, 0.0003)
        );
        assert!(
            (t.samples[1].pose.orientation.angle() - std::f64::consts::FRAC_PI_2).abs() < 1e-12
        );
        assert_eq!(t.samples[2].buttons, 3);
    }

    #[test]
    fn round_trip_is_exact_with_and_without_wrenches() {
        let mut rng = SplitMix64::new(5);
        let mut t = Trajectory::default();
        for i in 0..200 {
            let q = UnitQuaternion::from_scaled_axis(Vector3::new(
                rng.next_gaussian(),
                rng.next_gaussian(),
                rng.next_gaussian(),
            ));
            let p = Vector3::new(
                rng.next_gaussian(),
                rng.next_gaussian(),
                rng.next_gaussian(),
            ) * 0.05;
            t.samples.push(TrajectorySample::new(
                i as f64 * 1e-3 + 1e-7 * rng.next_f64(),
                Pose::new(p, q),
                rng.below(16) as u32,
            ));
            t.wrenches.push(Wrench::new(p * 100.0, p * 0.1));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        write_trajectory(&path, &t).unwrap();
        let back = read_trajectory(&path).unwrap();
        assert_eq!(back.wrenches, t.wrenches);
        for (a, b) in back.samples.iter().zip(&t.samples) {
            assert_eq!(a.time_s, b.time_s);
            assert_eq!(a.pose.position, b.pose.position);
            assert_eq!(a.buttons, b.buttons);
            // Renormalizing an already unit quaternion changes it by at most an ulp or so.
            assert!((a.pose.orientation.coords - b.pose.orientation.coords).norm() < 1e-15);
        }
        t.wrenches.clear();
        write_trajectory(&path, &t).unwrap();
        let back = read_trajectory(&path).unwrap();
        assert!(back.wrenches.is_empty());
        assert_eq!(back.samples.len(), 200);
    }

    #[test]
    fn writer_refuses_what_the_reader_would_reject() {
        let mut w = TrajectoryWriter::new(Vec::new(), false).unwrap();
        let s = TrajectorySample::new(1.0, Pose::identity(), 0);
        w.write(&s, None).unwrap();
        assert!(w.write(&s, None).is_err());
        let mut bad = TrajectorySample::new(2.0, Pose::identity(), 0);
        bad.pose.position.x = f64::NAN;
        assert!(w.write(&bad, None).is_err());
        let out = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(
            out,
            "time_s,px,py,pz,qw,qx,qy,qz,buttons\n1,0,0,0,1,0,0,0,0\n"
        );
    }

    #[test]
    fn header_errors_name_the_column() {
        let e = parse(&replace_line(2, "time_s,px,py,pz,qw,qx,qy,qz")).unwrap_err();
        assert!(
            matches!(
                e,
                TrajectoryError::Header {
                    line: 2,
                    column: 9,
                    ..
                }
            ),
            "{e}"
        );
        let e = parse(&replace_line(2, "time,px,py,pz,qw,qx,qy,qz,buttons")).unwrap_err();
        assert!(matches!(
            e,
            TrajectoryError::Header {
                line: 2,
                column: 1,
                ..
            }
        ));
        let msg = e.to_string();
        assert!(
            msg.starts_with("rec.csv:2: column 1: expected header 'time_s,px"),
            "{msg}"
        );
        let e = parse(&replace_line(2, "time_s,px,py,pz,qw,qx,qy,qz,buttons,fx")).unwrap_err();
        assert!(
            matches!(e, TrajectoryError::Header { column: 11, .. }),
            "{e}"
        );
        assert!(matches!(
            parse("# only comments\n\n"),
            Err(TrajectoryError::MissingHeader { .. })
        ));
    }

    #[test]
    fn column_count_error() {
        let e = parse(&replace_line(4, "0.001,0,0,0,1,0,0,0")).unwrap_err();
        assert!(matches!(
            e,
            TrajectoryError::ColumnCount {
                line: 4,
                expected: 9,
                found: 8,
                ..
            }
        ));
    }

    #[test]
    fn value_errors_name_line_and_column() {
        let e = parse(&replace_line(4, "0.001,0,abc,0,1,0,0,0,0")).unwrap_err();
        assert!(matches!(
            e,
            TrajectoryError::Value {
                line: 4,
                column: 3,
                name: "py",
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            "rec.csv:4: column 3 (py): expected a number, found 'abc'"
        );
        let e = parse(&replace_line(4, "0.001,0,0,0,1,0,0,0,-1")).unwrap_err();
        assert!(matches!(
            e,
            TrajectoryError::Value {
                column: 9,
                name: "buttons",
                ..
            }
        ));
        let e = parse(&replace_line(4, "0.001,0,0,0,1,0,0,0,")).unwrap_err();
        assert!(matches!(e, TrajectoryError::Value { column: 9, .. }));
    }

    #[test]
    fn non_finite_values_are_rejected() {
        for bad in ["NaN", "inf", "-inf", "1e999"] {
            let e = parse(&replace_line(4, &format!("0.001,0,0,{bad},1,0,0,0,0"))).unwrap_err();
            assert!(
                matches!(
                    e,
                    TrajectoryError::NonFinite {
                        line: 4,
                        column: 4,
                        name: "pz",
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn time_must_increase() {
        let e = parse(&replace_line(6, "0.001,0,0,0,1,0,0,0,0")).unwrap_err();
        assert!(
            matches!(e, TrajectoryError::NonMonotonicTime { line: 6, .. }),
            "{e}"
        );
        let e = parse(&replace_line(6, "0.0005,0,0,0,1,0,0,0,0")).unwrap_err();
        assert!(e
            .to_string()
            .contains("expected a time after 0.001 s, found 0.0005 s"));
    }

    #[test]
    fn quaternion_must_be_unit_within_tolerance() {
        let e = parse(&replace_line(3, "0,0,0,0,1,0.1,0,0,0")).unwrap_err();
        assert!(
            matches!(e, TrajectoryError::NonUnitQuaternion { line: 3, .. }),
            "{e}"
        );
        assert!(parse(&replace_line(3, "0,0,0,0,0,0,0,0,0")).is_err());
        // Six printed digits are enough.
        let t = parse(&replace_line(3, "0,0,0,0,0.707107,0,0.707107,0,0")).unwrap();
        assert!((t.samples[0].pose.orientation.coords.norm() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let mut b = GOOD.as_bytes().to_vec();
        let at = GOOD.find("0.002").unwrap();
        b[at] = 0xff;
        let e = parse_trajectory(&b, Path::new("x.csv")).unwrap_err();
        assert!(
            matches!(e, TrajectoryError::Encoding { line: 6, offset, byte: 0xff, .. } if offset == at),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.starts_with("x.csv:6:"), "{msg}");
        assert!(msg.contains(&format!("byte offset {at}")), "{msg}");
        // Read from a file the same way.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.csv");
        std::fs::write(&p, &b).unwrap();
        let e = read_trajectory(&p).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                ":6: expected UTF-8 text, found the invalid byte 0xff at byte offset {at}"
            )),
            "{e}"
        );
    }

    #[test]
    fn missing_file_is_an_io_error_naming_it() {
        let e = read_trajectory(Path::new("/nonexistent/rec.csv")).unwrap_err();
        assert!(matches!(e, TrajectoryError::Io { .. }));
        assert!(e.to_string().starts_with("/nonexistent/rec.csv:"));
    }

    #[test]
    fn fuzzed_input_never_panics_and_accepted_output_is_valid() {
        let mut rng = SplitMix64::new(2024);
        let base = format!(
            "{GOOD}0.003,1e-3,2E-3,-0.5,0.5,0.5,0.5,0.5,7\n0.004,0,0,0,1,0,0,0,4294967295\n"
        );
        let alphabet = b"0123456789.,-+eE naNiIf#\n\r\t\xc3\xa9\xff";
        let (mut ok, mut err) = (0, 0);
        for _ in 0..3000 {
            let mut b = base.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let n = b.len().max(1) as u64;
                let i = rng.below(n) as usize;
                match rng.below(4) {
                    0 if !b.is_empty() => {
                        let c = alphabet[rng.below(alphabet.len() as u64) as usize];
                        let k = i.min(b.len() - 1);
                        b[k] = c;
                    }
                    1 if !b.is_empty() => {
                        let j = (i + rng.below(8) as usize).min(b.len());
                        b.drain(i.min(j)..j);
                    }
                    2 => {
                        let c = alphabet[rng.below(alphabet.len() as u64) as usize];
                        let k = i.min(b.len());
                        b.insert(k, c);
                    }
                    _ => {
                        let j = rng.below(n) as usize;
                        let (a, c) = (i.min(j), i.max(j).min(b.len()));
                        b[a..c].reverse();
                    }
                }
            }
            match parse_trajectory(&b, Path::new("fuzz.csv")) {
                Ok(t) => {
                    ok += 1;
                    for w in t.samples.windows(2) {
                        assert!(w[1].time_s > w[0].time_s);
                    }
                    for s in &t.samples {
                        assert!(s.pose.is_finite() && s.time_s.is_finite());
                        assert!((s.pose.orientation.coords.norm() - 1.0).abs() < 1e-12);
                    }
                }
                Err(e) => {
                    err += 1;
                    // Every error names the file.
                    assert!(e.to_string().starts_with("fuzz.csv"), "{e}");
                }
            }
        }
        // Both outcomes occur, so the loop exercised the parser's paths.
        assert!(ok > 50 && err > 500, "ok {ok}, err {err}");
    }

    #[test]
    fn replay_is_sample_by_sample_and_records_wrenches() {
        let t = parse(GOOD).unwrap();
        let mut d = ReplayDevice::new(t.clone(), DeviceInfo::phantom_premium_6dof());
        d.write(&Wrench::from_force(Vector3::x())).unwrap(); // before any read: ignored
        for (i, s) in t.samples.iter().enumerate() {
            let r = d.read().unwrap();
            assert_eq!(TrajectorySample::from(r), *s);
            d.write(&Wrench::from_force(Vector3::new(i as f64, 0.0, 0.0)))
                .unwrap();
        }
        assert_eq!(d.read(), Err(DeviceError::EndOfStream));
        assert_eq!(d.remaining(), 0);
        let f: Vec<f64> = d.recorded_wrenches().iter().map(|w| w.force.x).collect();
        assert_eq!(f, vec![0.0, 1.0, 2.0]);
        d.rewind();
        assert_eq!(d.read().unwrap().time_s, 0.0);
        assert_eq!(d.to_trajectory().wrenches.len(), 3);
    }

    #[test]
    fn activation_column_round_trips_and_is_checked() {
        let text = "time_s,px,py,pz,qw,qx,qy,qz,buttons,activation\n0,0,0,0,1,0,0,0,0,0\n0.001,0,0,0,1,0,0,0,1,0.25\n";
        let t = parse_trajectory(text.as_bytes(), Path::new("a.csv")).unwrap();
        assert_eq!(t.activation, vec![0.0, 0.25]);
        assert!(t.wrenches.is_empty());
        let with_wrench = "time_s,px,py,pz,qw,qx,qy,qz,buttons,fx,fy,fz,tx,ty,tz,activation\n0,0,0,0,1,0,0,0,0,1,2,3,4,5,6,1\n";
        let t2 = parse_trajectory(with_wrench.as_bytes(), Path::new("b.csv")).unwrap();
        assert_eq!((t2.activation.clone(), t2.wrenches.len()), (vec![1.0], 1));
        let dir = std::env::temp_dir().join(format!("traj-act-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        write_trajectory(&p, &t).unwrap();
        assert_eq!(read_trajectory(&p).unwrap(), t);
        std::fs::remove_dir_all(&dir).ok();
        let bad = "time_s,px,py,pz,qw,qx,qy,qz,buttons,activation\n0,0,0,0,1,0,0,0,0,1.5\n";
        let e = parse_trajectory(bad.as_bytes(), Path::new("c.csv"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("c.csv:2") && e.contains("column 10 (activation)") && e.contains("[0, 1]"),
            "{e}"
        );
    }
}
