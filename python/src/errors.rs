//! The core's typed errors as Python exceptions of `haptics.errors`, each carrying the
//! file, the line or byte offset and what was expected, where the core's error says.
//!
//! The exception classes are Python classes (`haptics/errors.py`) so that they subclass
//! both `haptics.Error` and the builtin a user would catch (`ValueError`,
//! `FileNotFoundError`); this module builds their arguments.

use std::path::{Path, PathBuf};

use haptics::check::ompl::OmplError;
use haptics::check::problem::ProblemError;
use haptics::mesh::{error::Location, error::MeshError};
use haptics::muscle::MuscleError;
use haptics::reduction::bake::BakeError;
use haptics::reduction::vega::VegaError;
use haptics::scene::error::SceneError;
use haptics_devices::trajectory::TrajectoryError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The exception class, by its name in `haptics.errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file that is not what its format requires (`FormatError`, a `ValueError`).
    Format,
    /// A file that does not exist (`MissingFileError`, a `FileNotFoundError`).
    MissingFile,
    /// Another operating-system error while reading (`ReadError`, an `OSError`).
    Read,
    /// An argument of the wrong shape or value (`InputError`, a `ValueError`).
    Input,
    /// A Rust panic: a bug (`InternalError`).
    Internal,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Format => "FormatError",
            Kind::MissingFile => "MissingFileError",
            Kind::Read => "ReadError",
            Kind::Input => "InputError",
            Kind::Internal => "InternalError",
        }
    }
}

/// An error on its way to Python: the class, the message and where it is.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub kind: Kind,
    pub message: String,
    pub path: Option<PathBuf>,
    pub line: Option<usize>,
    pub offset: Option<u64>,
    pub expected: Option<String>,
}

impl Failure {
    pub fn new(kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
            path: None,
            line: None,
            offset: None,
            expected: None,
        }
    }

    pub fn input(message: impl Into<String>) -> Failure {
        Failure::new(Kind::Input, message)
    }

    fn at(mut self, path: &Path) -> Failure {
        self.path = Some(path.to_path_buf());
        self
    }

    fn on_line(mut self, line: usize) -> Failure {
        self.line = Some(line);
        self
    }

    fn located(mut self, location: &Location) -> Failure {
        match location {
            Location::Line(l) => self.line = Some(*l),
            Location::Offset(o) => self.offset = Some(*o),
            Location::File => {}
        }
        self
    }

    fn expecting(mut self, expected: &str) -> Failure {
        self.expected = Some(expected.to_string());
        self
    }

    /// An operating-system error reading `path`.
    fn io(message: String, path: &Path, source: &std::io::Error) -> Failure {
        let kind = if source.kind() == std::io::ErrorKind::NotFound {
            Kind::MissingFile
        } else {
            Kind::Read
        };
        Failure::new(kind, message).at(path)
    }

    /// The Python exception.
    pub fn into_pyerr(self) -> PyErr {
        Python::attach(|py| self.build(py).unwrap_or_else(|e| e))
    }

    fn build(self, py: Python<'_>) -> Result<PyErr, PyErr> {
        let class = py.import("haptics.errors")?.getattr(self.kind.class())?;
        let kw = PyDict::new(py);
        kw.set_item("path", self.path.as_ref().map(|p| p.display().to_string()))?;
        kw.set_item("line", self.line)?;
        kw.set_item("offset", self.offset)?;
        kw.set_item("expected", self.expected)?;
        let value = class.call((self.message,), Some(&kw))?;
        Ok(PyErr::from_value(value))
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        f.into_pyerr()
    }
}

impl From<&MeshError> for Failure {
    fn from(e: &MeshError) -> Failure {
        let message = e.to_string();
        match e {
            MeshError::Io { path, source } => Failure::io(message, path, source),
            MeshError::Syntax {
                path,
                location,
                expected,
                ..
            }
            | MeshError::Truncated {
                path,
                location,
                expected,
            } => Failure::new(Kind::Format, message)
                .at(path)
                .located(location)
                .expecting(expected),
            MeshError::IndexOutOfRange { path, location, .. }
            | MeshError::NonFinite { path, location, .. } => Failure::new(Kind::Format, message)
                .at(path)
                .located(location),
            _ => Failure::new(Kind::Format, message),
        }
    }
}

impl From<&OmplError> for Failure {
    fn from(e: &OmplError) -> Failure {
        let message = e.to_string();
        match e {
            OmplError::Io { path, source } => Failure::io(message, path, source),
            OmplError::Syntax {
                path,
                line,
                expected,
                ..
            } => Failure::new(Kind::Format, message)
                .at(path)
                .on_line(*line)
                .expecting(expected),
            OmplError::Missing { path, line, key } => Failure::new(Kind::Format, message)
                .at(path)
                .on_line(*line)
                .expecting(&format!("the key '{key}'")),
        }
    }
}

impl From<ProblemError> for Failure {
    fn from(e: ProblemError) -> Failure {
        let message = e.to_string();
        match &e {
            ProblemError::Ompl(o) => o.into(),
            ProblemError::Mesh { source, .. } => Failure {
                message,
                ..source.into()
            },
            ProblemError::Format { path, .. } => Failure::new(Kind::Format, message).at(path),
            ProblemError::Value { path, expected, .. } => Failure::new(Kind::Format, message)
                .at(path)
                .expecting(expected),
        }
    }
}

impl From<SceneError> for Failure {
    fn from(e: SceneError) -> Failure {
        let message = e.to_string();
        match &e {
            SceneError::Read { path, source } => Failure::io(message, path, source),
            SceneError::Syntax { path, line, .. } => {
                Failure::new(Kind::Format, message).at(path).on_line(*line)
            }
            SceneError::Invalid { path, .. } => Failure::new(Kind::Format, message).at(path),
            SceneError::MissingFile { resolved, .. } => {
                Failure::new(Kind::MissingFile, message).at(resolved)
            }
            SceneError::Build { path, source, .. } => {
                // The builder's own error, where it is a mesh's, names the mesh file.
                match source.downcast_ref::<MeshError>() {
                    Some(m) => Failure {
                        message,
                        ..m.into()
                    },
                    None => Failure::new(Kind::Format, message).at(path),
                }
            }
            SceneError::Cache { path, .. } => Failure::new(Kind::Read, message).at(path),
        }
    }
}

impl From<TrajectoryError> for Failure {
    fn from(e: TrajectoryError) -> Failure {
        use TrajectoryError as T;
        let message = e.to_string();
        let format = |path: &Path| Failure::new(Kind::Format, message.clone()).at(path);
        match &e {
            T::Io { path, source } => Failure::io(message, path, source),
            T::MissingHeader { path } => format(path),
            T::Header {
                path,
                line,
                expected,
                ..
            } => format(path).on_line(*line).expecting(expected),
            T::Value {
                path,
                line,
                expected,
                ..
            } => format(path).on_line(*line).expecting(expected),
            T::Encoding { path, line, .. }
            | T::ColumnCount { path, line, .. }
            | T::NonFinite { path, line, .. }
            | T::NonMonotonicTime { path, line, .. }
            | T::NonUnitQuaternion { path, line, .. } => format(path).on_line(*line),
            #[allow(unreachable_patterns)]
            _ => Failure::new(Kind::Format, message),
        }
    }
}

impl From<BakeError> for Failure {
    fn from(e: BakeError) -> Failure {
        let message = e.to_string();
        match &e {
            BakeError::Mesh(m) => m.into(),
            BakeError::Io { path, source } => Failure::io(message, path, source),
            BakeError::Vega(VegaError::Io { path, source }) => Failure::io(message, path, source),
            BakeError::Vega(VegaError::Format {
                path,
                offset,
                expected,
                ..
            }) => {
                let mut f = Failure::new(Kind::Format, message)
                    .at(path)
                    .expecting(expected);
                f.offset = Some(*offset);
                f
            }
            BakeError::Parameters(_) => Failure::input(message),
            BakeError::Fem { path, .. }
            | BakeError::Manifest { path, .. }
            | BakeError::NotMassOrthonormal { path, .. }
            | BakeError::Mismatch { path, .. } => Failure::new(Kind::Format, message).at(path),
            _ => Failure::input(message),
        }
    }
}

impl From<MuscleError> for Failure {
    fn from(e: MuscleError) -> Failure {
        let message = e.to_string();
        match &e {
            MuscleError::Io { path, source } => Failure::io(message, path, source),
            MuscleError::Syntax { path, line, .. } | MuscleError::Param { path, line, .. } => {
                Failure::new(Kind::Format, message).at(path).on_line(*line)
            }
            _ => Failure::input(message),
        }
    }
}
