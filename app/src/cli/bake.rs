//! `haptics bake`: a reduced model from a volumetric or surface mesh, with a progress bar
//! per stage; an unchanged input is not re-baked.

use super::range;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use haptics::fem::model::MassKind;
use haptics::reduction::bake::{bake, BakeInput, BakeOutcome, BakeParams, BasisKind};

use crate::cli::progress::Bars;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BasisKindArg {
    /// Mass-PCA of linear modes and modal derivatives (thesis 2.8.3).
    ModalDerivatives,
    /// The first r linear modes.
    LinearModes,
}

#[derive(Debug, Clone, Args)]
pub struct BakeArgs {
    /// Volumetric mesh (.veg, TetGen .node/.ele) or surface mesh (.obj, .stl; needs
    /// --resolution).
    pub mesh: PathBuf,
    /// Output directory (written atomically).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Fixed vertices (Vega .bou, 1-indexed).
    #[arg(long)]
    pub fixed: Option<PathBuf>,
    /// Number of linear modes k (at most 500: the modal derivatives are k(k+1)/2 more
    /// static solves).
    #[arg(long, default_value_t = 10, value_parser = range::count(0, 500))]
    pub linear_modes: usize,
    /// Basis size r, 1 to 200 (the cubic polynomial holds about r^4/6 coefficients:
    /// 2.7e8, 2 GB, at r = 200).
    #[arg(long, default_value_t = 20, value_parser = range::count(1, 200))]
    pub basis: usize,
    /// How the basis is built (ignored with --basis-file).
    #[arg(long, value_enum, default_value_t = BasisKindArg::ModalDerivatives)]
    pub basis_kind: BasisKindArg,
    /// Bake with this basis (Vega matrixIO .U, mass-orthonormal) instead of computing one.
    #[arg(long)]
    pub basis_file: Option<PathBuf>,
    /// Mass-PCA of these displacement snapshots (Vega matrixIO, one snapshot per column)
    /// instead of modes and derivatives: the "basis from full motion" of thesis 2.8.2.
    #[arg(long, conflicts_with = "basis_file")]
    pub snapshots: Option<PathBuf>,
    /// Render-mesh embedding (Vega .interp): also write the render basis
    /// (render.URendering.float).
    #[arg(long)]
    pub render_interp: Option<PathBuf>,
    /// Also write per-material-group lambda and mu polynomials for run-time material
    /// edits (2 extra polynomial precomputations per group).
    #[arg(long)]
    pub material_groups: bool,
    /// Voxel resolution for surface-mesh inputs, 1 to 512 (512^3 = 1.3e8 voxels).
    #[arg(long, value_parser = range::count(1, 512))]
    pub resolution: Option<usize>,
    /// Use the lumped mass matrix.
    #[arg(long)]
    pub lumped: bool,
    /// The object has no fixed vertices (its six rigid modes are skipped).
    #[arg(long)]
    pub unconstrained: bool,
}

pub fn run(args: &BakeArgs) -> anyhow::Result<()> {
    let basis_kind = match (&args.basis_file, &args.snapshots, args.basis_kind) {
        (Some(_), _, _) => BasisKind::File,
        (None, Some(_), _) => BasisKind::Snapshots,
        (None, None, BasisKindArg::ModalDerivatives) => BasisKind::ModalDerivatives,
        (None, None, BasisKindArg::LinearModes) => BasisKind::LinearModes,
    };
    let input = BakeInput {
        mesh: args.mesh.clone(),
        fixed: args.fixed.clone(),
        basis_file: args.basis_file.clone().or_else(|| args.snapshots.clone()),
        render_interp: args.render_interp.clone(),
        params: BakeParams {
            linear_modes: args.linear_modes,
            basis: args.basis,
            basis_kind,
            mass_matrix: if args.lumped {
                MassKind::Lumped
            } else {
                MassKind::Consistent
            },
            unconstrained: args.unconstrained,
            voxel_resolution: args.resolution,
            material_groups: args.material_groups,
        },
    };
    let bars =
        Bars::new().with_template("{spinner} {msg:48} [{bar:20}] {elapsed_precise} (ETA {eta})");
    match bake(&input, &args.out, &bars)? {
        BakeOutcome::UpToDate(m) => {
            println!(
                "{} is up to date (r = {}; inputs and parameters unchanged)",
                args.out.display(),
                m.r
            )
        }
        BakeOutcome::Baked(m) => {
            println!(
                "baked {} -> {}: {} vertices, {} {}, r = {}",
                args.mesh.display(),
                args.out.display(),
                m.num_vertices,
                m.num_elements,
                m.element_type,
                m.r
            );
            if !m.linear_frequencies_hz.is_empty() {
                let f: Vec<String> = m
                    .linear_frequencies_hz
                    .iter()
                    .map(|f| format!("{f:.3}"))
                    .collect();
                println!("linear frequencies (Hz): {}", f.join(", "));
            }
            if let Some(v) = m.pca_retained_variance {
                println!("mass-PCA keeps {:.4}% of the variance", 100.0 * v);
            }
            let t = &m.timings_s;
            println!(
                "timings (s): load+FEM {:.2}, modes {:.2}, derivatives {:.2}, PCA {:.2}, polynomial {:.2}, write {:.2}, total {:.2}",
                t.load_and_fem, t.linear_modes, t.modal_derivatives, t.pca, t.polynomial, t.write, t.total
            );
        }
    }
    Ok(())
}
