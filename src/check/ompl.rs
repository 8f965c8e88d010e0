//! OMPL.app's rigid-body planning files: problem definitions (`.cfg`) and geometric paths
//! (`.path`), with OMPL.app's conventions.
//!
//! **Problems** (`.cfg`, INI): section `[problem]` holds `robot` and `world` (mesh files,
//! relative to the `.cfg`), the start and goal states as a position and an axis-angle
//! rotation (`start.x`, `start.y`, `start.z`, `start.axis.x`, `start.axis.y`,
//! `start.axis.z`, `start.theta`, likewise `goal.*`), and the sampling bounds
//! `volume.min.x` ... `volume.max.z`. Other keys of `[problem]` and every key of
//! `[solver]`, `[benchmark]` and other sections are accepted and kept (`extra`). Lines are
//! `key=value` (spaces around either side ignored), `[section]`, or comments starting with
//! `#` or `;`.
//!
//! **Paths** (`.path`): one SE(3) state per line, `x y z qx qy qz qw`, as OMPL's
//! `PathGeometric::printAsMatrix` prints an `SE3StateSpace` state (position, then the
//! `SO3StateSpace` quaternion components x, y, z, w). Blank lines are skipped.
//!
//! A state maps a robot point `p` (in the robot mesh's frame, already shifted by its
//! centre, see [`crate::check::robot_origin`]) to `R(q) p + (x, y, z)`.
//!
//! Why a hand-written INI reader: rust-ini and configparser do not report the line of a
//! key, and every error here must name the file and the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nalgebra::{Unit, UnitQuaternion, Vector3};

use crate::proximity::rigid::{State, QUATERNION_NORM_TOLERANCE};

/// The lower and upper corners of a box.
type Corners = (Vector3<f64>, Vector3<f64>);

/// Why an OMPL file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OmplError {
    /// The operating system failed to read or write the file.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not what the format requires.
    #[error("{path}:{line}: expected {expected}, found {found}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
        /// What the format requires, in words.
        expected: String,
        /// What the file holds instead.
        found: String,
    },
    /// A required key is absent.
    #[error("{path}:{line}: [problem] has no key '{key}' (required: robot, world, start.x/y/z, start.axis.x/y/z, start.theta and the same for goal)")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The line of the `[problem]` header (1 when the section is absent).
        line: usize,
        /// The missing key.
        key: &'static str,
    },
}

impl OmplError {
    fn syntax(path: &Path, line: usize, expected: impl Into<String>, found: &str) -> OmplError {
        let mut f: String = found.chars().take(60).collect();
        if found.chars().count() > 60 {
            f.push('…');
        }
        OmplError::Syntax {
            path: path.to_path_buf(),
            line,
            expected: expected.into(),
            found: format!("'{f}'"),
        }
    }
}

/// An OMPL.app rigid-body problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The `.cfg` file.
    pub path: PathBuf,
    /// `[problem] name`, else the file stem.
    pub name: String,
    /// The robot and world mesh files, resolved against the `.cfg`'s directory.
    pub robot: PathBuf,
    /// The world mesh file, resolved likewise.
    pub world: PathBuf,
    /// The start state.
    pub start: State,
    /// The goal state.
    pub goal: State,
    /// `volume.min.*` and `volume.max.*`, when all six are given.
    pub volume: Option<(Vector3<f64>, Vector3<f64>)>,
    /// Every other key, as `section.key` -> value (e.g. `solver.planner`,
    /// `benchmark.time_limit`).
    pub extra: BTreeMap<String, String>,
}

/// Key → (value, line) of one section.
type Section = BTreeMap<String, (String, usize)>;

/// Parses INI text into sections (section → (header line, keys)).
fn parse_ini(text: &str, path: &Path) -> Result<BTreeMap<String, (usize, Section)>, OmplError> {
    let mut sections: BTreeMap<String, (usize, Section)> = BTreeMap::new();
    let mut current = String::new();
    sections.insert(String::new(), (1, Section::new()));
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .ok_or_else(|| OmplError::syntax(path, line, "a section header '[name]'", l))?;
            current = name.trim().to_string();
            sections
                .entry(current.clone())
                .or_insert((line, Section::new()));
            continue;
        }
        let (k, v) = l.split_once('=').ok_or_else(|| {
            OmplError::syntax(path, line, "'key=value', '[section]' or a comment", l)
        })?;
        let key = k.trim();
        if key.is_empty() {
            return Err(OmplError::syntax(path, line, "a key before '='", l));
        }
        if let Some((_, s)) = sections.get_mut(&current) {
            s.insert(key.to_string(), (v.trim().to_string(), line));
        }
    }
    Ok(sections)
}

/// Reads and parses a `.cfg` problem.
pub fn read_problem(path: &Path) -> Result<Problem, OmplError> {
    let bytes = std::fs::read(path).map_err(|source| OmplError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_problem(&bytes, path)
}

/// Parses the bytes of a `.cfg` problem (see the module docs).
pub fn parse_problem(bytes: &[u8], path: &Path) -> Result<Problem, OmplError> {
    let text = utf8(bytes, path)?;
    let sections = parse_ini(text, path)?;
    let empty = (1, Section::new());
    let (header, keys) = sections.get("problem").unwrap_or(&empty);
    let problem = ProblemSection {
        path,
        header: *header,
        keys,
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let volume = problem.volume()?;
    let extra = extra_keys(&sections);
    Ok(Problem {
        path: path.to_path_buf(),
        name: problem.name(),
        robot: problem.file(dir, "robot")?,
        world: problem.file(dir, "world")?,
        start: problem.state("start")?,
        goal: problem.state("goal")?,
        volume,
        extra,
    })
}

/// The keys of the sampling volume, min x, y, z then max x, y, z.
const VOLUME_KEYS: [&str; 6] = [
    "volume.min.x",
    "volume.min.y",
    "volume.min.z",
    "volume.max.x",
    "volume.max.y",
    "volume.max.z",
];

/// The `[problem]` section of a `.cfg`, with what its errors name.
struct ProblemSection<'a> {
    /// The `.cfg` file.
    path: &'a Path,
    /// The line of the `[problem]` header (1 when the section is absent).
    header: usize,
    /// The section's keys.
    keys: &'a Section,
}

impl ProblemSection<'_> {
    /// The value and line of a required key.
    fn get(&self, key: &'static str) -> Result<&(String, usize), OmplError> {
        self.keys.get(key).ok_or(OmplError::Missing {
            path: self.path.to_path_buf(),
            line: self.header,
            key,
        })
    }

    /// A required key's value as a finite number.
    fn num(&self, key: &'static str) -> Result<f64, OmplError> {
        let (v, line) = self.get(key)?;
        number(v, *line, self.path, key)
    }

    /// The state whose keys start with `prefix` (`start` or `goal`).
    fn state(&self, prefix: &'static str) -> Result<State, OmplError> {
        let k = |s: &'static str| state_key(prefix, s);
        let p = Vector3::new(self.num(k("x"))?, self.num(k("y"))?, self.num(k("z"))?);
        let axis = Vector3::new(self.num(k("ax"))?, self.num(k("ay"))?, self.num(k("az"))?);
        let theta = self.num(k("theta"))?;
        let q = if theta == 0.0 {
            UnitQuaternion::identity()
        } else if axis.norm() > 0.0 {
            UnitQuaternion::from_axis_angle(&Unit::new_normalize(axis), theta)
        } else {
            let line = self.get(k("ax"))?.1;
            return Err(OmplError::syntax(
                self.path,
                line,
                format!("a nonzero {prefix}.axis for a nonzero {prefix}.theta"),
                "0 0 0",
            ));
        };
        Ok(State::new(p, q))
    }

    /// A required mesh file, resolved against `dir`.
    fn file(&self, dir: &Path, key: &'static str) -> Result<PathBuf, OmplError> {
        let (v, line) = self.get(key)?;
        if v.is_empty() {
            return Err(OmplError::syntax(
                self.path,
                *line,
                format!("a mesh file for {key}"),
                v,
            ));
        }
        Ok(dir.join(v))
    }

    /// The sampling volume (its lower and upper corners), when all six of its keys are
    /// given.
    fn volume(&self) -> Result<Option<Corners>, OmplError> {
        if !VOLUME_KEYS.iter().all(|k| self.keys.contains_key(*k)) {
            return Ok(None);
        }
        let v: Vec<f64> = VOLUME_KEYS
            .iter()
            .map(|k| self.num(k))
            .collect::<Result<_, _>>()?;
        Ok(Some((
            Vector3::new(v[0], v[1], v[2]),
            Vector3::new(v[3], v[4], v[5]),
        )))
    }

    /// The `name` key, else the file stem.
    fn name(&self) -> String {
        self.keys.get("name").map_or_else(
            || {
                self.path
                    .file_stem()
                    .map_or("problem".into(), |s| s.to_string_lossy().into_owned())
            },
            |(v, _)| v.clone(),
        )
    }
}

/// The full key of a state component (`x`, `y`, `z`, `ax`, `ay`, `az`, else theta).
fn state_key(prefix: &'static str, s: &'static str) -> &'static str {
    match (prefix, s) {
        ("start", "x") => "start.x",
        ("start", "y") => "start.y",
        ("start", "z") => "start.z",
        ("start", "ax") => "start.axis.x",
        ("start", "ay") => "start.axis.y",
        ("start", "az") => "start.axis.z",
        ("start", _) => "start.theta",
        (_, "x") => "goal.x",
        (_, "y") => "goal.y",
        (_, "z") => "goal.z",
        (_, "ax") => "goal.axis.x",
        (_, "ay") => "goal.axis.y",
        (_, "az") => "goal.axis.z",
        (_, _) => "goal.theta",
    }
}

/// Every key that [`Problem`] does not interpret, as `section.key` -> value.
fn extra_keys(sections: &BTreeMap<String, (usize, Section)>) -> BTreeMap<String, String> {
    let known = |k: &str| {
        matches!(k, "name" | "robot" | "world")
            || k.starts_with("start.")
            || k.starts_with("goal.")
            || VOLUME_KEYS.contains(&k)
    };
    let mut extra = BTreeMap::new();
    for (section, (_, keys)) in sections {
        for (k, (v, _)) in keys {
            if section == "problem" && known(k) {
                continue;
            }
            let name = if section.is_empty() {
                k.clone()
            } else {
                format!("{section}.{k}")
            };
            extra.insert(name, v.clone());
        }
    }
    extra
}

fn utf8<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a str, OmplError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
        OmplError::syntax(
            path,
            line,
            "UTF-8 text",
            &format!("an invalid byte at offset {at}"),
        )
    })
}

fn number(v: &str, line: usize, path: &Path, what: &str) -> Result<f64, OmplError> {
    match v.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(OmplError::syntax(
            path,
            line,
            format!("a finite number for {what}"),
            v,
        )),
    }
}

/// Reads an OMPL `.path` file.
pub fn read_path(path: &Path) -> Result<Vec<State>, OmplError> {
    let bytes = std::fs::read(path).map_err(|source| OmplError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_path(&bytes, path)
}

/// Parses the bytes of a `.path` file: `x y z qx qy qz qw` per line (see the module docs).
pub fn parse_path(bytes: &[u8], path: &Path) -> Result<Vec<State>, OmplError> {
    let text = utf8(bytes, path)?;
    let mut states = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        let fields: Vec<&str> = l.split_whitespace().collect();
        if fields.len() != 7 {
            return Err(OmplError::syntax(
                path,
                line,
                format!(
                    "7 numbers 'x y z qx qy qz qw' (an SE(3) state), got {}",
                    fields.len()
                ),
                l,
            ));
        }
        let mut v = [0.0; 7];
        for (k, f) in fields.iter().enumerate() {
            let name = ["x", "y", "z", "qx", "qy", "qz", "qw"][k];
            v[k] = number(f, line, path, name)?;
        }
        let state = State::from_ompl(&v).map_err(|n| {
            OmplError::syntax(
                path,
                line,
                format!(
                    "a unit quaternion (norm within {QUATERNION_NORM_TOLERANCE} of 1), norm {n}"
                ),
                l,
            )
        })?;
        states.push(state);
    }
    if states.is_empty() {
        return Err(OmplError::syntax(path, 1, "at least one state", "no state"));
    }
    Ok(states)
}

/// The text of a `.path` file for `states` (shortest round-trip decimals).
pub fn format_path(states: &[State]) -> String {
    let mut s = String::new();
    for st in states {
        let [x, y, z, qx, qy, qz, qw] = st.to_ompl();
        s.push_str(&format!("{x} {y} {z} {qx} {qy} {qz} {qw}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = "\
[problem]
name=Slot
robot=robot.dae
world=world.dae
start.x=1
start.y=2
start.z=3
start.axis.x=0
start.axis.y=0
start.axis.z=1
start.theta=1.5707963267948966
goal.x=-1
goal.y=0
goal.z=0
goal.axis.x=0
goal.axis.y=0
goal.axis.z=0
goal.theta=0
volume.min.x=-5
volume.min.y=-5
volume.min.z=-5
volume.max.x=5
volume.max.y=5
volume.max.z=5
objective=length

[solver]
planner=rrtconnect
longest_valid_segment_fraction=0.01

[benchmark]
time_limit=10
";

    #[test]
    fn problems_parse_with_their_conventions() {
        let p = parse_problem(CFG.as_bytes(), Path::new("dir/slot.cfg")).unwrap();
        assert_eq!(p.name, "Slot");
        assert_eq!(p.robot, Path::new("dir/robot.dae"));
        assert_eq!(p.start.position, Vector3::new(1.0, 2.0, 3.0));
        let rotated = p.start.orientation * Vector3::x();
        assert!((rotated - Vector3::y()).norm() < 1e-12, "{rotated}");
        assert_eq!(p.goal.orientation, UnitQuaternion::identity());
        assert_eq!(p.volume.unwrap().1, Vector3::repeat(5.0));
        assert_eq!(p.extra["solver.planner"], "rrtconnect");
        assert_eq!(p.extra["benchmark.time_limit"], "10");
        assert_eq!(p.extra["problem.objective"], "length");
    }

    #[test]
    fn problem_errors_name_the_file_and_line() {
        let missing = CFG.replace("goal.y=0\n", "");
        let e = parse_problem(missing.as_bytes(), Path::new("slot.cfg"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("slot.cfg:1: [problem] has no key 'goal.y'"),
            "{e}"
        );
        let bad = CFG.replace("start.z=3", "start.z=three");
        let e = parse_problem(bad.as_bytes(), Path::new("slot.cfg"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "slot.cfg:7: expected a finite number for start.z, found 'three'"
        );
        let e = parse_problem(b"[problem\n", Path::new("x.cfg"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.cfg:1: expected a section header"), "{e}");
        let e = parse_problem(b"\xff", Path::new("x.cfg"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn paths_round_trip_and_errors_name_the_line() {
        let states = vec![
            State::new(Vector3::new(0.1, -2.0, 3e-7), UnitQuaternion::identity()),
            State::new(
                Vector3::new(1.0, 2.0, 3.0),
                UnitQuaternion::from_euler_angles(0.3, -0.2, 1.1),
            ),
        ];
        let text = format_path(&states);
        let back = parse_path(text.as_bytes(), Path::new("p.path")).unwrap();
        assert_eq!(back.len(), 2);
        for (a, b) in states.iter().zip(&back) {
            assert_eq!(a.position, b.position);
            assert!(a.orientation.angle_to(&b.orientation) < 1e-15);
        }
        for (text, expect) in [
            ("0 0 0 0 0 0 1\n1 2 3\n", "p.path:2: expected 7 numbers"),
            (
                "0 0 nan 0 0 0 1\n",
                "p.path:1: expected a finite number for z",
            ),
            ("0 0 0 0 0 0 0\n", "p.path:1: expected a unit quaternion"),
            ("\n\n", "p.path:1: expected at least one state"),
        ] {
            let e = parse_path(text.as_bytes(), Path::new("p.path"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(expect), "{e}");
        }
    }

    #[test]
    fn interpolation_takes_the_shorter_arc() {
        let a = State::new(Vector3::zeros(), UnitQuaternion::identity());
        let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.5);
        // The same rotation written with the opposite sign.
        let b = State::new(
            Vector3::new(2.0, 0.0, 0.0),
            UnitQuaternion::new_unchecked(-q.into_inner()),
        );
        let m = a.interpolate(&b, 0.5);
        assert_eq!(m.position, Vector3::new(1.0, 0.0, 0.0));
        assert!((m.orientation.angle() - 0.25).abs() < 1e-12);
    }
}
