//! `haptics.muscle.isometric`: the isometric tension-length experiment, as `haptics
//! muscle isometric` runs it.

use std::path::PathBuf;

use haptics::muscle::{read_material, run_isometric, IsometricPoint, IsometricSetup, MaterialFile};
use haptics::progress::{Cancel, Cancellable};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::Failure;
use crate::float_bytes;
use crate::run::interruptible;

/// The curve for Python: (columns, rows, the rows' float64 bytes, nodes, tets).
type CurveParts<'py> = (Vec<String>, usize, Bound<'py, PyBytes>, usize, usize);

/// Runs the experiment.
#[pyfunction]
#[pyo3(signature = (stretch, activation, material, resolution))]
pub(crate) fn isometric<'py>(
    py: Python<'py>,
    stretch: Vec<f64>,
    activation: Vec<f64>,
    material: Option<PathBuf>,
    resolution: usize,
) -> PyResult<CurveParts<'py>> {
    if !(1..=16).contains(&resolution) {
        return Err(Failure::input(format!(
            "resolution: expected 1 to 16 cells across the section, found {resolution}"
        ))
        .into());
    }
    let cancel = Cancel::new();
    let progress = Cancellable(cancel.clone());
    let curve = interruptible(py, &cancel, || {
        let mat = match &material {
            Some(p) => read_material(p).map_err(Failure::from)?,
            None => MaterialFile::default(),
        };
        let setup = IsometricSetup {
            resolution,
            ..Default::default()
        };
        run_isometric(&mat.muscle, &setup, &stretch, &activation, &progress).map_err(Failure::from)
    })?;
    let rows = curve.points.iter().flat_map(|p| p.row());
    Ok((
        IsometricPoint::COLUMNS
            .iter()
            .map(|c| c.to_string())
            .collect(),
        curve.points.len(),
        float_bytes(py, rows),
        curve.nodes,
        curve.elements,
    ))
}
