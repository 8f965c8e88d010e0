//! `haptics muscle`: active skeletal muscle experiments and geometry.
//!
//! - `haptics muscle isometric`: the isometric tension-length experiment (Chen 1991) on a
//!   uniaxial block, against the homogeneous solution (`haptics::muscle::isometric`).
//! - `haptics muscle mesh`: the NURBS fusiform muscle, tet-meshed, with its fibre field
//!   ([`haptics::muscle::fusiform`]).
//! - `haptics muscle contract`: the fusiform muscle with fixed tendons activated; its
//!   volume change ([`haptics::muscle::contract()`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use haptics::muscle::{read_material, run_isometric, IsometricPoint, IsometricSetup, MaterialFile};
use haptics::plot::{line_plot, Series};

use super::progress::Bars;
use super::range;

/// Arguments of `haptics muscle`.
#[derive(Debug, Args)]
pub struct MuscleArgs {
    #[command(subcommand)]
    pub command: MuscleCommand,
}

/// The muscle subcommands.
#[derive(Debug, Subcommand)]
pub enum MuscleCommand {
    /// Isometric tension-length curves of a 40 x 10 x 10 mm block along its fibres.
    Isometric(IsometricArgs),
    /// Tet-mesh the NURBS fusiform muscle: writes the .veg, its fibre field (.fibres),
    /// its fixed tendon ends (.bou) and its boundary surface (.obj).
    Mesh(MeshArgs),
    /// Activate the fusiform muscle with both tendons fixed: its volume change and the
    /// stiffness felt when palpating the belly, per activation.
    Contract(ContractArgs),
}

/// The fusiform muscle's shape and mesh resolution.
#[derive(Debug, Clone, Args)]
pub struct ShapeArgs {
    /// Length from tendon end to tendon end (m).
    #[arg(long, default_value_t = 0.08, value_parser = range::positive(10.0))]
    pub length: f64,
    /// Radius of the belly at mid-length (m).
    #[arg(long, default_value_t = 0.012, value_parser = range::positive(10.0))]
    pub belly_radius: f64,
    /// Radius at both tendon ends (m), at most the belly radius.
    #[arg(long, default_value_t = 0.004, value_parser = range::positive(10.0))]
    pub tendon_radius: f64,
    /// Fraction of the length that is tendon at each end, in (0, 0.5).
    #[arg(long, default_value_t = 0.15, value_parser = range::real(0.001, 0.499))]
    pub tendon_fraction: f64,
    /// Cells across the section in each direction, 1 to 64.
    #[arg(long, default_value_t = 6, value_parser = range::count(1, 64))]
    pub cells_radial: usize,
    /// Cells along the axis, 1 to 512.
    #[arg(long, default_value_t = 24, value_parser = range::count(1, 512))]
    pub cells_axial: usize,
}

impl ShapeArgs {
    fn spec(&self) -> haptics::muscle::fusiform::FusiformSpec {
        haptics::muscle::fusiform::FusiformSpec {
            length: self.length,
            belly_radius: self.belly_radius,
            tendon_radius: self.tendon_radius,
            tendon_fraction: self.tendon_fraction,
            cells_radial: self.cells_radial,
            cells_axial: self.cells_axial,
            ..Default::default()
        }
    }
}

/// Arguments of `haptics muscle mesh`.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  haptics muscle mesh --out muscle.veg   # also muscle.fibres, muscle.bou, muscle.obj

The solid is a trivariate NURBS: a rational biquadratic disc across (exact circles),
a cubic B-spline along the axis whose control layers follow a spindle radius profile.
Tets come from a structured grid in parameter space, six per cell; each tet's fibre is
the solid's parametric direction along the belly at its centroid. Elements within
--tendon-fraction of either end get the material \"tendon\", the rest \"muscle\".
docs/muscle-geometry.md documents the .fibres format.")]
pub struct MeshArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Output .veg; the .fibres, .bou and .obj files take its stem.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
}

/// Arguments of `haptics muscle contract`.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  haptics muscle contract --activation 0,0.25,0.5,0.75,1 --out contract.csv

Both tendon end faces are held; each activation is solved by full Newton (sparse LU),
continuing from the previous one. volume_change is V/V0 - 1: the compressible model
swells slightly under activation (the deviatoric split projects part of the fibre
stress onto the volume term). palpation_stiffness_n_per_m is |f|^2 / (f . K^-1 f) for a
small force pressing down on the top of the belly's middle.")]
pub struct ContractArgs {
    #[command(flatten)]
    pub shape: ShapeArgs,
    /// Activations in [0, 1], comma-separated, solved in this order.
    #[arg(long, value_delimiter = ',', default_value = "0,0.25,0.5,0.75,1")]
    pub activation: Vec<f64>,
    /// Material file (TOML: the muscle's keys at the top level, an optional \[tendon\]
    /// table). Default: the built-in muscle and tendon.
    #[arg(long)]
    pub material: Option<PathBuf>,
    /// Output CSV: activation,volume_change,max_displacement_m,
    /// palpation_stiffness_n_per_m,newton_iterations.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

/// Arguments of `haptics muscle isometric`.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  haptics muscle isometric --stretch 0.7,0.85,1.0 --activation 0,0.5,1 --out curve.csv --plot curve.png

The block is 0.040 m along the fibres (x) with a 0.010 x 0.010 m section, linear tets.
The x = 0 face is held in x (plus the fewest constraints that remove rigid motion), the
x = L face is moved uniformly in x to each stretch, free laterally. Each case is solved
by full Newton with a sparse LU, so the descending limb (an unstable uniform
equilibrium) is reported as it is. force_n is the reaction along +x on the moving face,
negative in compression; reference_force_n is the independent homogeneous solution
F = diag(stretch, s, s) with zero lateral stress.")]
pub struct IsometricArgs {
    /// Stretches along the fibres, comma-separated (each > 0).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.5,0.6,0.7,0.8,0.85,0.9,0.95,1.0,1.05,1.1,1.15,1.2,1.3,1.4,1.5,1.6,1.7"
    )]
    pub stretch: Vec<f64>,
    /// Activations in [0, 1], comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1")]
    pub activation: Vec<f64>,
    /// Material file (TOML, top-level keys sigma_max, lambda_opt, mu, kappa, p1, p2,
    /// lambda_star; any subset, the rest default). Default: the built-in muscle.
    #[arg(long)]
    pub material: Option<PathBuf>,
    /// Cells across the 10 mm section (the 40 mm length gets four times as many), 1 to 16.
    #[arg(long, default_value_t = 2, value_parser = range::count(1, 16))]
    pub resolution: usize,
    /// Output CSV: stretch,activation,force_n,reference_force_n,lateral_stretch,
    /// volume_ratio,newton_iterations.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Also draw the tension-length curves to this PNG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

pub fn run(args: &MuscleArgs) -> anyhow::Result<()> {
    match &args.command {
        MuscleCommand::Isometric(a) => run_isometric_cmd(a),
        MuscleCommand::Mesh(a) => run_mesh(a),
        MuscleCommand::Contract(a) => run_contract(a),
    }
}

fn material(path: &Option<PathBuf>) -> anyhow::Result<MaterialFile> {
    Ok(match path {
        Some(p) => read_material(p)?,
        None => MaterialFile::default(),
    })
}

fn run_isometric_cmd(args: &IsometricArgs) -> anyhow::Result<()> {
    let mat = material(&args.material)?;
    let setup = IsometricSetup {
        resolution: args.resolution,
        ..Default::default()
    };
    let start = Instant::now();
    let curve = run_isometric(
        &mat.muscle,
        &setup,
        &args.stretch,
        &args.activation,
        &Bars::new(),
    )?;
    println!(
        "block {} x {} x {} m: {} nodes, {} linear tets; {} load cases in {:.2} s",
        setup.length,
        setup.width,
        setup.height,
        curve.nodes,
        curve.elements,
        curve.points.len(),
        start.elapsed().as_secs_f64()
    );
    let mut csv = IsometricPoint::COLUMNS.join(",") + "\n";
    let mut worst: f64 = 0.0;
    for p in &curve.points {
        csv.push_str(&format!(
            "{},{},{:.12e},{:.12e},{:.12},{:.12},{}\n",
            p.stretch,
            p.activation,
            p.force_n,
            p.reference_force_n,
            p.lateral_stretch,
            p.volume_ratio,
            p.iterations
        ));
        let scale = p
            .reference_force_n
            .abs()
            .max(1e-6 * mat.muscle.sigma_max * 1e-4);
        worst = worst.max((p.force_n - p.reference_force_n).abs() / scale);
    }
    haptics::io::write_bytes_atomic(&args.out, csv.as_bytes())
        .with_context(|| format!("{}: cannot write the curve", args.out.display()))?;
    println!(
        "largest relative difference from the homogeneous solution: {worst:.1e}; wrote {}",
        args.out.display()
    );
    if let Some(png) = &args.plot {
        let mut series = Vec::new();
        for &a in &args.activation {
            let mut points: Vec<(f64, f64)> = curve
                .points
                .iter()
                .filter(|p| p.activation == a)
                .map(|p| (p.stretch, p.force_n))
                .collect();
            points.sort_by(|x, y| x.0.total_cmp(&y.0));
            series.push(Series {
                name: format!("activation {a}"),
                points,
            });
        }
        line_plot(
            png,
            "Isometric tension-length (40 x 10 x 10 mm block)",
            "stretch along the fibres",
            "reaction force (N)",
            &series,
        )?;
        println!("plot: {}", png.display());
    }
    std::io::stdout().flush().ok();
    Ok(())
}

fn run_mesh(args: &MeshArgs) -> anyhow::Result<()> {
    let muscle = haptics::muscle::fusiform::fusiform_muscle(&args.shape.spec())?;
    let files = muscle.write(&args.out)?;
    // The boundary surface (compacted to the vertices it uses), for pointshells,
    // distance fields and rendering.
    let tris = muscle.mesh.boundary_triangles();
    let mut map = vec![usize::MAX; muscle.mesh.vertices.len()];
    let mut surface = haptics::mesh::SurfaceMesh {
        vertices: Vec::new(),
        triangles: Vec::with_capacity(tris.len()),
    };
    for t in &tris {
        let mut tri = [0; 3];
        for (k, &v) in t.iter().enumerate() {
            if map[v] == usize::MAX {
                map[v] = surface.vertices.len();
                surface.vertices.push(muscle.mesh.vertices[v]);
            }
            tri[k] = map[v];
        }
        surface.triangles.push(tri);
    }
    let obj = args.out.with_extension("obj");
    haptics::mesh::write_obj(&obj, &surface)?;
    let tendon = muscle
        .mesh
        .element_material
        .iter()
        .filter(|&&m| m == haptics::muscle::fusiform::TENDON_MATERIAL)
        .count();
    println!(
        "fusiform muscle {} m long, belly radius {} m: {} nodes, {} linear tets ({} tendon)",
        args.shape.length,
        args.shape.belly_radius,
        muscle.mesh.vertices.len(),
        muscle.mesh.num_elements(),
        tendon
    );
    println!(
        "wrote {}, {}, {} ({} fixed end vertices) and the surface {} ({} triangles)",
        files.veg.display(),
        files.fibres.display(),
        files.bou.display(),
        muscle.fixed_vertices().len(),
        obj.display(),
        surface.triangles.len()
    );
    Ok(())
}

fn run_contract(args: &ContractArgs) -> anyhow::Result<()> {
    let mat = material(&args.material)?;
    let mut model = haptics::muscle::FusiformModel::new(&args.shape.spec(), &mat)?;
    println!(
        "fusiform muscle: {} nodes, {} linear tets, rest volume {:.4e} m^3",
        model.muscle.mesh.vertices.len(),
        model.kernel.num_elements(),
        model.rest_volume()
    );
    let steps = haptics::muscle::contract(&mut model, &args.activation, &Bars::new())?;
    let mut csv = String::from(
        "activation,volume_change,max_displacement_m,palpation_stiffness_n_per_m,newton_iterations\n",
    );
    println!("activation  volume change  max displacement  palpation stiffness");
    for s in &steps {
        println!(
            "{:>10}  {:>+12.4}%  {:>13.3} mm  {:>14.1} N/m",
            s.activation,
            100.0 * s.volume_change,
            1e3 * s.max_displacement,
            s.palpation_stiffness
        );
        csv.push_str(&format!(
            "{},{:.9e},{:.9e},{:.9e},{}\n",
            s.activation, s.volume_change, s.max_displacement, s.palpation_stiffness, s.iterations
        ));
    }
    if let Some(out) = &args.out {
        haptics::io::write_bytes_atomic(out, csv.as_bytes())
            .with_context(|| format!("{}: cannot write", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
