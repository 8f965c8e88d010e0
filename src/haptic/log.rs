//! The haptic log: one CSV row per cycle with a header row (docs/file-formats.md),
//! written by `haptics replay` (and the live loop's recorder), and compared against a
//! golden log for regression tests.
//!
//! Columns: `time_s`, the device pose `px,py,pz,qw,qx,qy,qz` (metres, unit quaternion),
//! `buttons`, the simulated pose of the haptic object's grasp frame
//! `sx,sy,sz,sqw,sqx,sqy,sqz`, the device force and torque `fx,fy,fz,tx,ty,tz` (N, N m),
//! `traversed`, `contacts`, `lod` (deepest pointshell level reached), `rank` (of the
//! 6x6 coupling solve), `fault` (1 if a non-finite value was replaced by zero force),
//! `cycle_us` (wall time of the cycle; not compared, it is the only non-deterministic
//! column).
//!
//! Numbers are written with Rust's shortest round-trip formatting, so a log read back
//! holds exactly the values computed, and two replays on the same build compare equal
//! bit for bit.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::haptic::CycleReport;

/// The header row.
pub const COLUMNS: [&str; 28] = [
    "time_s",
    "px",
    "py",
    "pz",
    "qw",
    "qx",
    "qy",
    "qz",
    "buttons",
    "sx",
    "sy",
    "sz",
    "sqw",
    "sqx",
    "sqy",
    "sqz",
    "fx",
    "fy",
    "fz",
    "tx",
    "ty",
    "tz",
    "traversed",
    "contacts",
    "lod",
    "rank",
    "fault",
    "cycle_us",
];

/// Columns excluded from comparisons (wall-clock time).
pub const NOT_COMPARED: [&str; 1] = ["cycle_us"];

/// Errors reading or comparing logs.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The log file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file being read.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A missing or wrong header, a row with the wrong number of fields, or a field that
    /// is not a number.
    #[error("{path}:line {line}: {message}")]
    Format {
        /// The file being parsed.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One row of a haptic log, in [`COLUMNS`] order.
pub type Row = [f64; 28];

/// The row of one cycle.
pub fn row(
    time_s: f64,
    device: &nalgebra::Isometry3<f64>,
    buttons: u32,
    r: &CycleReport,
    cycle_us: f64,
) -> Row {
    let t = device.translation.vector;
    let q = device.rotation;
    let s = r.simulation.translation.vector;
    let sq = r.simulation.rotation;
    [
        time_s,
        t.x,
        t.y,
        t.z,
        q.w,
        q.i,
        q.j,
        q.k,
        buttons as f64,
        s.x,
        s.y,
        s.z,
        sq.w,
        sq.i,
        sq.j,
        sq.k,
        r.force.x,
        r.force.y,
        r.force.z,
        r.torque.x,
        r.torque.y,
        r.torque.z,
        r.traversed as f64,
        r.contacts as f64,
        r.level_of_detail as f64,
        r.rank as f64,
        if r.fault { 1.0 } else { 0.0 },
        cycle_us,
    ]
}

/// The index of a column by name (`None` for names not in [`COLUMNS`]).
pub fn column(name: &str) -> Option<usize> {
    COLUMNS.iter().position(|c| *c == name)
}

/// The magnitude of a row's device force.
pub fn force_magnitude(row: &Row) -> f64 {
    (row[16] * row[16] + row[17] * row[17] + row[18] * row[18]).sqrt()
}

/// A haptic log: the rows as numbers, in [`COLUMNS`] order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Log {
    /// The data rows, one per cycle, in file order.
    pub rows: Vec<Row>,
}

impl Log {
    /// The CSV text: the header row, then one line per row.
    pub fn to_csv(&self) -> String {
        let mut out = COLUMNS.join(",");
        out.push('\n');
        for row in &self.rows {
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{v}");
            }
            out.push('\n');
        }
        out
    }
}

/// Reads a haptic log, checking the header and every number.
pub fn read_log(path: &Path) -> Result<Log, LogError> {
    let text = std::fs::read_to_string(path).map_err(|source| LogError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_log(&text, path)
}

/// Parses a haptic log (see [`read_log`]).
pub(crate) fn parse_log(text: &str, path: &Path) -> Result<Log, LogError> {
    let err = |line: usize, message: String| LogError::Format {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate();
    let header = lines
        .find(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .ok_or_else(|| err(1, "empty file: expected the header row".into()))?;
    let names: Vec<&str> = header.1.split(',').map(str::trim).collect();
    if names != COLUMNS {
        return Err(err(
            header.0 + 1,
            format!("header {:?}: expected {}", header.1, COLUMNS.join(",")),
        ));
    }
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut row: Row = [0.0; 28];
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != COLUMNS.len() {
            return Err(err(
                i + 1,
                format!("{} fields, expected {}", fields.len(), COLUMNS.len()),
            ));
        }
        for (k, f) in fields.iter().enumerate() {
            row[k] = f.trim().parse::<f64>().map_err(|_| {
                err(
                    i + 1,
                    format!("column {} ({}): '{f}' is not a number", k + 1, COLUMNS[k]),
                )
            })?;
        }
        rows.push(row);
    }
    Ok(Log { rows })
}

/// The largest difference in one column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDiff {
    /// Column name from [`COLUMNS`], or [`ROW_COUNT`].
    pub column: &'static str,
    /// Largest absolute difference (infinite for a NaN or a row-count mismatch).
    pub max_abs: f64,
    /// 1-based data row of the largest difference (for [`ROW_COUNT`], one past the
    /// shorter log).
    pub row: usize,
    /// The actual log's value there (for [`ROW_COUNT`], its number of rows).
    pub actual: f64,
    /// The expected log's value there (for [`ROW_COUNT`], its number of rows).
    pub expected: f64,
}

/// The pseudo-column of a [`ColumnDiff`] reporting different row counts.
pub const ROW_COUNT: &str = "row count";

/// Compares two logs column by column (except [`NOT_COMPARED`]); returns the columns
/// whose largest absolute difference exceeds `tol`, worst first. Different row counts
/// are reported alone, as a [`ROW_COUNT`] difference with the two counts as values.
pub fn compare_logs(actual: &Log, expected: &Log, tol: f64) -> Vec<ColumnDiff> {
    let mut diffs = Vec::new();
    if actual.rows.len() != expected.rows.len() {
        let row = actual.rows.len().min(expected.rows.len());
        diffs.push(ColumnDiff {
            column: ROW_COUNT,
            max_abs: f64::INFINITY,
            row: row + 1,
            actual: actual.rows.len() as f64,
            expected: expected.rows.len() as f64,
        });
        return diffs;
    }
    for (k, name) in COLUMNS.iter().enumerate() {
        if NOT_COMPARED.contains(name) {
            continue;
        }
        let mut worst = ColumnDiff {
            column: name,
            max_abs: 0.0,
            row: 0,
            actual: 0.0,
            expected: 0.0,
        };
        for (i, (a, e)) in actual.rows.iter().zip(&expected.rows).enumerate() {
            let d = (a[k] - e[k]).abs();
            // NaN never compares within tolerance.
            let d = if d.is_nan() { f64::INFINITY } else { d };
            if d > worst.max_abs {
                worst = ColumnDiff {
                    column: name,
                    max_abs: d,
                    row: i + 1,
                    actual: a[k],
                    expected: e[k],
                };
            }
        }
        if worst.max_abs > tol {
            diffs.push(worst);
        }
    }
    diffs.sort_by(|a, b| b.max_abs.total_cmp(&a.max_abs));
    diffs
}

/// A readable summary of [`compare_logs`]'s result.
pub fn diff_summary(diffs: &[ColumnDiff], tol: f64) -> String {
    let mut s = format!("{} column(s) differ by more than {tol:e}:\n", diffs.len());
    for d in diffs {
        if d.column == ROW_COUNT {
            let _ = writeln!(
                s,
                "  row count: {} here, {} in the golden log",
                d.actual, d.expected
            );
        } else {
            let _ = writeln!(
                s,
                "  {:<9} max |diff| {:.3e} at row {} ({} vs golden {})",
                d.column, d.max_abs, d.row, d.actual, d.expected
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Isometry3, Vector3};

    fn report() -> CycleReport {
        CycleReport {
            manipulandum: Isometry3::translation(0.1, 0.2, 0.3),
            simulation: Isometry3::translation(0.1, 0.19, 0.3),
            force: Vector3::new(0.0, 1.0 / 3.0, 0.0),
            torque: Vector3::new(1e-17, 0.0, -2.5),
            traversed: 1234,
            contacts: 12,
            level_of_detail: 3,
            rank: 6,
            fault: false,
            reset: false,
            swept: 1.0,
            friction: Vector3::zeros(),
            friction_torque: Vector3::zeros(),
            depth: 0.0,
            pushed_out: 0.0,
        }
    }

    #[test]
    fn rows_round_trip_exactly_and_compare() {
        let written = Log {
            rows: (0..5)
                .map(|i| row(i as f64 * 1e-3, &Isometry3::identity(), 1, &report(), 17.5))
                .collect(),
        };
        let log = parse_log(&written.to_csv(), Path::new("x.csv")).unwrap();
        assert_eq!(log, written);
        assert_eq!(log.rows.len(), 5);
        assert_eq!(log.rows[2][17], 1.0 / 3.0);
        assert_eq!(log.rows[2][19], 1e-17);
        assert!(compare_logs(&log, &log, 0.0).is_empty());
        let mut other = log.clone();
        other.rows[3][17] += 1e-6;
        other.rows[1][27] = 99.0; // cycle_us is not compared
        let d = compare_logs(&other, &log, 1e-9);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].column, d[0].row), ("fy", 4));
        assert!(diff_summary(&d, 1e-9).contains("fy"));
        other.rows.pop();
        assert!(diff_summary(&compare_logs(&other, &log, 1e-9), 1e-9).contains("row count"));
    }

    #[test]
    fn bad_logs_name_the_line() {
        let p = Path::new("bad.csv");
        assert!(parse_log("", p).unwrap_err().to_string().contains("line 1"));
        assert!(parse_log("a,b\n", p)
            .unwrap_err()
            .to_string()
            .contains("expected time_s"));
        let mut text = Log::default().to_csv();
        text.push_str("1,2\n");
        assert!(parse_log(&text, p)
            .unwrap_err()
            .to_string()
            .contains("line 2: 2 fields"));
        let one = Log {
            rows: vec![row(0.0, &Isometry3::identity(), 0, &report(), 1.0)],
        };
        let text = one.to_csv().replacen(",1234,", ",x,", 1);
        let e = parse_log(&text, p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("traversed"), "{e}");
    }
}
