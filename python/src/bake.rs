//! `haptics.bake`: a reduced model baked from a mesh, as `haptics bake` bakes it.

use std::path::PathBuf;

use haptics::fem::model::MassKind;
use haptics::progress::{Cancel, Cancellable};
use haptics::reduction::bake::{bake as bake_model, BakeInput, BakeOutcome, BakeParams, BasisKind};
use pyo3::prelude::*;

use crate::errors::Failure;
use crate::run::interruptible;

/// The bake's inputs and parameters, one dict from Python (`haptics.bake`'s keywords).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct BakeArgs {
    mesh: PathBuf,
    out: PathBuf,
    fixed: Option<PathBuf>,
    linear_modes: usize,
    basis: usize,
    basis_kind: String,
    basis_file: Option<PathBuf>,
    snapshots: Option<PathBuf>,
    render_interp: Option<PathBuf>,
    material_groups: bool,
    resolution: Option<usize>,
    lumped: bool,
    unconstrained: bool,
}

/// The core's input from the arguments, with the command line's ranges and rules.
fn bake_input(a: BakeArgs) -> Result<(BakeInput, PathBuf), Failure> {
    if a.linear_modes > 500 {
        return Err(Failure::input(format!(
            "linear_modes: expected 0 to 500, found {}",
            a.linear_modes
        )));
    }
    if !(1..=200).contains(&a.basis) {
        return Err(Failure::input(format!(
            "basis: expected 1 to 200, found {}",
            a.basis
        )));
    }
    if let Some(r) = a.resolution.filter(|r| !(1..=512).contains(r)) {
        return Err(Failure::input(format!(
            "resolution: expected 1 to 512 voxels, found {r}"
        )));
    }
    if a.basis_file.is_some() && a.snapshots.is_some() {
        return Err(Failure::input("basis_file and snapshots: give at most one"));
    }
    let basis_kind = match (&a.basis_file, &a.snapshots, a.basis_kind.as_str()) {
        (Some(_), _, _) => BasisKind::File,
        (None, Some(_), _) => BasisKind::Snapshots,
        (None, None, "modal-derivatives") => BasisKind::ModalDerivatives,
        (None, None, "linear-modes") => BasisKind::LinearModes,
        (None, None, other) => {
            return Err(Failure::input(format!(
                "basis_kind: expected 'modal-derivatives' or 'linear-modes', found '{other}'"
            )))
        }
    };
    let input = BakeInput {
        mesh: a.mesh,
        fixed: a.fixed,
        basis_file: a.basis_file.or(a.snapshots),
        render_interp: a.render_interp,
        params: BakeParams {
            linear_modes: a.linear_modes,
            basis: a.basis,
            basis_kind,
            mass_matrix: if a.lumped {
                MassKind::Lumped
            } else {
                MassKind::Consistent
            },
            unconstrained: a.unconstrained,
            voxel_resolution: a.resolution,
            material_groups: a.material_groups,
        },
    };
    Ok((input, a.out))
}

/// Bakes; returns whether a new bake was written (false: `out` was up to date) and the
/// manifest as JSON.
#[pyfunction]
pub(crate) fn bake(py: Python<'_>, args: BakeArgs) -> PyResult<(bool, String)> {
    let (input, out) = bake_input(args)?;
    let cancel = Cancel::new();
    let progress = Cancellable(cancel.clone());
    let (baked, manifest) = interruptible(py, &cancel, || {
        match bake_model(&input, &out, &progress).map_err(Failure::from)? {
            BakeOutcome::Baked(m) => Ok((true, m)),
            BakeOutcome::UpToDate(m) => Ok((false, m)),
        }
    })?;
    let json = serde_json::to_string(&manifest)
        .map_err(|e| Failure::new(crate::errors::Kind::Internal, e.to_string()))?;
    Ok((baked, json))
}
