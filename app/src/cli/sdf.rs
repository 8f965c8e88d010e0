//! `haptics sdf MESH --resolution N --out FILE.dist`: the signed distance field of a
//! triangle mesh (thesis 3.11) in Vega's `.dist` format; `--soup` for meshes that are
//! not closed (unsigned field, offset surface, signed field of that surface).

use super::range;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use super::progress::Bars;
use haptics::geometry::dist::write_dist;
use haptics::geometry::sdf::{
    estimate_bytes, MeshDistance, SdfMethod, SdfOptions, SignedDistanceField, DEFAULT_BAND,
    DEFAULT_ENLARGE, MAX_SDF_BYTES,
};
use haptics::geometry::soup::{
    soup_estimate_bytes, soup_signed_field, SoupOptions, DEFAULT_OFFSET,
};
use haptics::mesh::read::read_surface;

#[derive(Debug, Clone, Args)]
pub struct SdfArgs {
    /// Triangle mesh (.obj or .stl). It must be closed (every edge shared by exactly two
    /// triangles) unless --soup is given.
    pub mesh: PathBuf,
    /// Cells along each side of the cubic grid (the field has N+1 nodes per side).
    /// 2 to 4096; the memory budget (--max-memory) refuses large grids first.
    #[arg(long, short = 'r', default_value_t = 128, value_parser = range::count(2, 4096))]
    pub resolution: usize,
    /// Output file, Vega's .dist format (int32 resolutions, f64 box corners, f32 values).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Treat the mesh as a polygon soup (holes, overlaps, open pieces): compute its
    /// unsigned field, extract the closed surface at distance --offset around it, drop
    /// enclosed shells, and write the signed field of that surface.
    #[arg(long)]
    pub soup: bool,
    /// With --soup: distance of the enclosing surface from the soup, in grid cells.
    /// 1.5 keeps thin parts (sheets, rods) closed; larger values fatten the object.
    /// > 0 and at most 64.
    #[arg(long, default_value_t = DEFAULT_OFFSET, requires = "soup", value_parser = range::positive(64.0))]
    pub offset: f64,
    /// Compute every node with an exact closest-triangle query instead of the narrow
    /// band plus closest-triangle propagation (several times slower; for checking).
    #[arg(long)]
    pub exact: bool,
    /// Half-width of the band of exactly computed nodes around the surface, in cells
    /// (at least 1). Outside it, distances come from propagation.
    /// 1 to 64.
    #[arg(long, default_value_t = DEFAULT_BAND, value_parser = range::real(1.0, 64.0))]
    pub band: f64,
    /// Side of the cubic box over the largest side of the mesh's bounding box, 1 to 100.
    #[arg(long, default_value_t = DEFAULT_ENLARGE, value_parser = range::real(1.0, 100.0))]
    pub box_enlarge: f64,
    /// Memory budget in GiB: a grid whose estimated working memory exceeds it is refused
    /// before anything is allocated (default 2; resolution 512 needs about 1.5).
    #[arg(long = "max-memory", value_name = "GB", default_value_t = MAX_SDF_BYTES as f64 / GIB)]
    pub max_memory: f64,
}

const GIB: f64 = (1u64 << 30) as f64;

/// The `--max-memory` budget in bytes; refuses values that are not positive and finite.
fn budget_bytes(gb: f64) -> anyhow::Result<u64> {
    if !(gb.is_finite() && gb > 0.0) {
        anyhow::bail!("--max-memory {gb}: the memory budget must be a positive number of GiB");
    }
    // Saturates at u64::MAX for absurdly large budgets.
    Ok((gb * GIB).min(u64::MAX as f64) as u64)
}

pub fn run(args: &SdfArgs) -> anyhow::Result<()> {
    let memory_budget_bytes = budget_bytes(args.max_memory)?;
    let surface = read_surface(&args.mesh)?;
    let method = if args.exact {
        SdfMethod::Exact
    } else {
        SdfMethod::BandAndPropagate
    };
    let name = args.mesh.display();
    // One bar per stage (narrow band, propagation, sign, ...), cleared when it ends.
    let bars = Bars::transient().with_template("{msg:>20} [{bar:40}] {pos}/{len}, ETA {eta}");
    let start = Instant::now();
    let (field, estimate, soup_triangles) = if args.soup {
        let opts = SoupOptions {
            resolution: args.resolution,
            enlarge: args.box_enlarge,
            offset: args.offset,
            band: args.band,
            method,
            memory_budget_bytes,
        };
        let estimate = soup_estimate_bytes(&surface, &opts);
        let soup = soup_signed_field(&surface, &opts, &bars)
            .with_context(|| format!("{name}: cannot build the polygon-soup distance field"))?;
        (soup.field, estimate, Some(soup.surface.triangles.len()))
    } else {
        let opts = SdfOptions {
            resolution: args.resolution,
            enlarge: args.box_enlarge,
            method,
            band: args.band,
            memory_budget_bytes,
        };
        let estimate = estimate_bytes(args.resolution, method, surface.triangles.len());
        let distance = MeshDistance::new(&surface)
            .with_context(|| format!("{name}: cannot build a signed distance field"))?;
        let field = SignedDistanceField::compute_with(&distance, &opts, &bars)
            .with_context(|| format!("{name}: cannot build a signed distance field"))?;
        (field, estimate, None)
    };
    let elapsed = start.elapsed();
    write_dist(&args.out, &field)?;
    let size = std::fs::metadata(&args.out)
        .with_context(|| format!("{}: cannot stat the written file", args.out.display()))?
        .len();
    let bmax = field.node_point(field.cells[0], field.cells[1], field.cells[2]);
    println!(
        "{name}: {} triangles{}",
        surface.triangles.len(),
        match soup_triangles {
            Some(t) => format!(" (polygon soup; offset surface {t} triangles)"),
            None => String::new(),
        }
    );
    println!(
        "resolution {}^3 ({} nodes), spacing {:.6e}, {}",
        field.cells[0],
        field.values.len(),
        field.spacing,
        if args.exact {
            "exact per-node queries".to_string()
        } else {
            format!("band {} cells + propagation", args.band)
        }
    );
    println!(
        "box [{:.6}, {:.6}, {:.6}] - [{:.6}, {:.6}, {:.6}]",
        field.origin.x, field.origin.y, field.origin.z, bmax.x, bmax.y, bmax.z
    );
    println!(
        "computed in {:.2} s (memory estimate {:.1} MiB); wrote {} ({} bytes, {:.1} MiB)",
        elapsed.as_secs_f64(),
        estimate as f64 / (1u64 << 20) as f64,
        args.out.display(),
        size,
        size as f64 / (1u64 << 20) as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_memory_is_positive_gib() {
        assert_eq!(budget_bytes(2.0).unwrap(), MAX_SDF_BYTES);
        assert_eq!(budget_bytes(0.5).unwrap(), 1 << 29);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = budget_bytes(bad).unwrap_err().to_string();
            assert!(e.contains("--max-memory"), "{e}");
        }
    }
}
