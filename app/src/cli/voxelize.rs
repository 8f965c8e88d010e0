//! `haptics voxelize MESH --resolution N --out OUT.veg`: a hexahedral voxel mesh from a
//! triangle mesh (thesis 2.5.2), with an optional render-mesh embedding (.interp).

use super::range;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use haptics::geometry::embed::embed;
use haptics::mesh::voxelize::{voxelize, VoxelizeOptions};
use haptics::mesh::{interp::write_interp, read::read_surface, veg::write_veg, volume::Material};

use crate::cli::progress::Bars;

#[derive(Debug, Clone, Args)]
pub struct VoxelizeArgs {
    /// Triangle mesh (.obj or .stl); closed meshes and polygon soups both work.
    pub mesh: PathBuf,
    /// Voxels along each side of the cubic grid, 1 to 1024.
    #[arg(long, short = 'r', default_value_t = 32, value_parser = range::count(1, 1024))]
    pub resolution: usize,
    /// Output volumetric mesh (.veg).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Keep only the voxels that intersect the surface (no interior flood fill).
    #[arg(long)]
    pub no_fill: bool,
    /// Enlargement of the cubic box around the mesh, 1 to 100.
    #[arg(long, default_value_t = 1.2, value_parser = range::real(1.0, 100.0))]
    pub box_enlarge: f64,
    /// Density (kg/m^3), > 0 and at most 10^6.
    #[arg(long, default_value_t = 1000.0, value_parser = range::positive(1e6))]
    pub density: f64,
    /// Young's modulus (Pa), > 0 and at most 10^13.
    #[arg(long, default_value_t = 1e6, value_parser = range::positive(1e13))]
    pub youngs_modulus: f64,
    /// Poisson's ratio, -1 < nu < 0.5 (at 0.5 the material is incompressible and the
    /// StVK stiffness is singular).
    #[arg(long, default_value_t = 0.45, value_parser = range::poisson_ratio)]
    pub poisson_ratio: f64,
    /// Also embed the input mesh's vertices in the voxels and write the weights here
    /// (Vega .interp).
    #[arg(long)]
    pub interp: Option<PathBuf>,
}

pub fn run(args: &VoxelizeArgs) -> anyhow::Result<()> {
    let surface = read_surface(&args.mesh)?;
    let material = Material::new(
        "voxels",
        args.density,
        args.youngs_modulus,
        args.poisson_ratio,
    );
    material
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid material: {e}"))?;
    let opts = VoxelizeOptions {
        resolution: args.resolution,
        box_enlarge: args.box_enlarge,
        fill_interior: !args.no_fill,
        material,
    };
    let bars = Bars::transient().with_template("{msg} [{bar:40}] {pos}/{len} triangles, ETA {eta}");
    let vox = voxelize(&surface, &opts, &bars)
        .with_context(|| format!("{}: voxelization failed", args.mesh.display()))?;
    write_veg(&args.out, &vox.mesh)?;
    println!(
        "{} voxels of size {:.6} ({} vertices) written to {}",
        vox.mesh.num_elements(),
        vox.voxel_size,
        vox.mesh.vertices.len(),
        args.out.display()
    );
    if let Some(interp) = &args.interp {
        let e = embed(&surface.vertices, &vox.mesh).context("embedding the render mesh")?;
        write_interp(interp, &e.interpolation)?;
        println!(
            "{} render vertices embedded (largest distance outside the voxels {:.3e}) in {}",
            surface.vertices.len(),
            e.max_outside_distance,
            interp.display()
        );
    }
    Ok(())
}
