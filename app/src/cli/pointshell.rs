//! `haptics pointshell MESH --points N1 --levels L [--offset X] --out FILE`: a
//! multi-resolution oriented pointshell of a closed triangle mesh by particle repulsion
//! (thesis 3.8.1), written in the binary format of [`Pointshell::write`], with the
//! coverage and uniformity of every level printed as a table.

use super::range;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;

use super::progress::Bars;
use haptics::geometry::pointshell::{sample_pointshell_with_stats, LevelStats, PointshellParams};
use haptics::geometry::{pointshell::Pointshell, pointshell::PointshellError, MeshDistance};
use haptics::mesh::read::read_surface;

#[derive(Debug, Clone, Args)]
pub struct PointshellArgs {
    /// Closed triangle mesh (.obj or .stl). For a polygon soup, sample its closed offset
    /// surface.
    pub mesh: PathBuf,
    /// Points of the first (coarsest) level, N1; levels 0..=i hold N1 * 4^i points.
    /// 1 to 10^7.
    #[arg(long, short = 'n', default_value_t = 1330, value_parser = range::count(1, 10_000_000))]
    pub points: usize,
    /// Number of levels, 1 to 12 (the finest holds N1 * 4^(levels-1) points).
    #[arg(long, short = 'l', default_value_t = 4, value_parser = range::count(1, 12))]
    pub levels: usize,
    /// Sample the level set at this outward distance instead of the surface itself.
    /// Finite and >= 0 (at most 1000 bounding-box diagonals, checked against the mesh).
    #[arg(long, default_value_t = 0.0, value_parser = range::real(0.0, f64::MAX))]
    pub offset: f64,
    /// Output file (binary pointshell format, see docs/file-formats.md).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Most repulsion iterations per level (0 to 10^4).
    #[arg(long, default_value_t = 40, value_parser = range::count(0, 10_000))]
    pub iterations: usize,
    /// Random seed of the initial positions.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Descent step eta (a move is eta * R times the net force), > 0 and at most 1.
    #[arg(long, default_value_t = 0.15, value_parser = range::positive(1.0))]
    pub step: f64,
    /// Repulsion radius factor c in R = c sqrt(area / points), > 0 and at most 100.
    #[arg(long, default_value_t = 2.0, value_parser = range::positive(100.0))]
    pub radius_factor: f64,
    /// Surface samples for the coverage figure (0 skips the quality table); default
    /// max(200000, 4 x points); at most 10^8.
    #[arg(long, value_parser = range::count(0, 100_000_000))]
    pub quality_samples: Option<usize>,
}

pub fn run(args: &PointshellArgs) -> anyhow::Result<()> {
    let mesh = read_surface(&args.mesh)?;
    let distance = MeshDistance::new(&mesh)
        .map_err(PointshellError::from)
        .with_context(|| format!("{}: cannot build the signed distance", args.mesh.display()))?;
    let params = PointshellParams {
        first_level_points: args.points,
        levels: args.levels,
        offset: args.offset,
        iterations: args.iterations,
        seed: args.seed,
        step: args.step,
        radius_factor: args.radius_factor,
        ..PointshellParams::default()
    };
    // One bar per level ("level 2/4 (180 new points)"), cleared before the table.
    let bars = Bars::transient()
        .with_template("{spinner} {msg} [{bar:30}] {pos}/{len} iterations {elapsed_precise}");
    let started = Instant::now();
    let (shell, stats) = sample_pointshell_with_stats(&distance, &mesh, &params, &bars)?;
    let elapsed = started.elapsed().as_secs_f64();
    shell.write(&args.out)?;
    println!(
        "{} points in {} levels sampled in {:.2} s (offset {}), written to {}",
        shell.len(),
        shell.num_levels(),
        elapsed,
        shell.offset,
        args.out.display()
    );
    let samples = args
        .quality_samples
        .unwrap_or_else(|| (4 * shell.len()).clamp(200_000, 2_000_000));
    print!("{}", table(&shell, &mesh, &distance, &stats, samples)?);
    Ok(())
}

fn table(
    shell: &Pointshell,
    mesh: &haptics::mesh::SurfaceMesh,
    distance: &MeshDistance,
    stats: &[LevelStats],
    samples: usize,
) -> anyhow::Result<String> {
    let mut s = String::from(
        "level  new points  cumulative  radius R    iters  last move/R  time (s)  spacing h   coverage  mean gap  uniformity  min sep\n",
    );
    for level in 0..shell.num_levels() {
        let range = shell.level(level);
        let (iterations, mean_move, seconds) = stats.get(level).map_or((0, 0.0, 0.0), |st| {
            (st.iterations, st.mean_move, st.seconds)
        });
        s += &format!(
            "{:5}  {:10}  {:10}  {:10.4e}  {:5}  {:11.2e}  {:8.2}",
            level,
            range.len(),
            range.end,
            shell.radii[level],
            iterations,
            mean_move,
            seconds
        );
        if samples > 0 {
            let q = shell.quality(mesh, distance, level, samples, 0x5eed + level as u64)?;
            s += &format!(
                "  {:10.4e}  {:8.3}  {:8.3}  {:10.3}  {:7.3}\n",
                q.target_spacing, q.coverage, q.mean_gap, q.uniformity, q.min_separation
            );
        } else {
            s += "\n";
        }
    }
    if samples > 0 {
        s += &format!(
            "coverage: largest distance from {samples} random surface samples to the points of levels 0..=level, over h = sqrt(area / cumulative); mean gap likewise; uniformity: coefficient of variation of nearest-neighbour distances (0 = perfect lattice, ~0.52 = uniform random); min sep: smallest nearest-neighbour distance over h\n"
        );
    }
    Ok(s)
}
