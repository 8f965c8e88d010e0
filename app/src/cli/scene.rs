//! `haptics scene new --held PART --world FIXTURE [--deformable] --out S.toml`: a scene
//! from a user's two meshes, with the settings that depend on size derived from their
//! sizes, so that `haptics run S.toml` opens it at once and the user edits from there.
//!
//! What is derived ([`Derived::from_sizes`]), in the meshes' own units (a part in
//! millimetres gets a scene in millimetres):
//! - the workspace scale that maps the reference device's reach (a sphere of
//!   [`REFERENCE_WORKSPACE_RADIUS_M`]) onto the fixture's half-diagonal;
//! - the held part's distance-field resolution: four cells across its thinnest side, 32
//!   to 128 cells along its longest;
//! - the fixture's pointshell: the finest of 4 levels spaced like the part's field cells
//!   (1,000 to 200,000 points);
//! - the coupling stiffness from the device fit (the hand feels half the reference
//!   device's stable stiffness, `k / workspace_scale`), the contact stiffness three times
//!   that, speeds in the device's 0.6 m/s (at most the scene format's 1000 units/s), and
//!   a penetration limit of 1% of the part;
//! - the part's pose: centred over the fixture, a tenth of its size above it, held at its
//!   centre.
//!
//! With `--deformable` the fixture is voxelized (32 voxels along its longest side), the
//! voxel mesh and its lowest layer of vertices (the anchor) are written beside the scene,
//! and it becomes a reduced StVK object with a rubber-like material.

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use haptics::haptic::device_fit::REFERENCE_WORKSPACE_RADIUS_M;
use haptics::mesh::voxelize::{voxelize, VoxelizeOptions};
use haptics::mesh::{
    bou::write_bou, read::read_surface, veg::write_veg, volume::Material, SurfaceMesh,
};
use haptics_devices::DeviceInfo;

use crate::cli::progress::Bars;

/// Arguments of `haptics scene`.
#[derive(Debug, Args)]
pub struct SceneArgs {
    #[command(subcommand)]
    pub command: SceneCommand,
}

/// The scene subcommands.
#[derive(Debug, Subcommand)]
pub enum SceneCommand {
    /// Write a scene from two meshes: a part held through the device and a fixture, with
    /// resolutions, workspace scale, stiffnesses and poses derived from their sizes.
    New(NewArgs),
}

/// Arguments of `haptics scene new`.
#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// The part held through the device: a closed surface mesh (.obj, .stl, .gltf, .glb).
    #[arg(long)]
    pub held: PathBuf,
    /// The fixture it touches: a closed surface mesh.
    #[arg(long)]
    pub world: PathBuf,
    /// Make the fixture deformable: voxelize it, anchor its lowest layer of vertices, and
    /// simulate it with reduced StVK (writes FIXTURE.veg and FIXTURE.bou beside the scene).
    #[arg(long)]
    pub deformable: bool,
    /// The scene file to write (refused if it exists, unless --force).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    /// Overwrite an existing scene file.
    #[arg(long)]
    pub force: bool,
}

/// The settings derived from the two meshes' sizes (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub workspace_scale: f64,
    pub sdf_resolution: usize,
    pub points: usize,
    pub levels: usize,
    pub coupling_stiffness: f64,
    pub contact_stiffness: f64,
    pub max_velocity: f64,
    pub max_penetration: f64,
    pub position: [f64; 3],
    pub grasp: [f64; 3],
}

impl Derived {
    /// The settings for `held` against `world` and the device `device`.
    pub fn from_sizes(held: &SurfaceMesh, world: &SurfaceMesh, device: &DeviceInfo) -> Derived {
        const LEVELS: usize = 4;
        let (hb, wb) = (held.bounding_box(), world.bounding_box());
        let he = hb.extent();
        let held_diag = he.norm();
        let world_diag = wb.extent().norm();
        let longest = he.max();
        let thinnest = he
            .iter()
            .copied()
            .filter(|e| *e > 0.0)
            .fold(longest, f64::min);
        let sdf_resolution = ((4.0 * longest / thinnest).ceil() as usize).clamp(32, 128);
        let cell = longest / sdf_resolution as f64;
        let finest = (world.area() / (cell * cell)).clamp(1_000.0, 200_000.0);
        let points = ((finest / 4f64.powi(LEVELS as i32 - 1)).ceil() as usize).max(8);
        let workspace_scale = REFERENCE_WORKSPACE_RADIUS_M / (0.5 * world_diag);
        let coupling_stiffness = 0.5 * device.max_stiffness_n_per_m * workspace_scale;
        let grasp = hb.center();
        // The part's centre over the fixture's, its lowest point a tenth of its size above.
        let mut target = wb.center();
        target.y = wb.max.y + 0.5 * he.y + 0.1 * held_diag;
        Derived {
            workspace_scale,
            sdf_resolution,
            points,
            levels: LEVELS,
            coupling_stiffness,
            contact_stiffness: 3.0 * coupling_stiffness,
            // The scene format's largest speed is 1000 units/s (1 m/s in a millimetre scene).
            max_velocity: (0.6 / workspace_scale).min(1000.0),
            max_penetration: 0.01 * held_diag,
            position: (target - grasp).into(),
            grasp: grasp.coords.into(),
        }
    }
}

/// `path` relative to `dir` where both are absolute and share a root, else `path` as an
/// absolute path.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let (Ok(p), Ok(d)) = (path.canonicalize(), dir.canonicalize()) else {
        return path.to_path_buf();
    };
    let (pc, dc): (Vec<Component>, Vec<Component>) =
        (p.components().collect(), d.components().collect());
    let common = pc.iter().zip(&dc).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return p;
    }
    let mut r = PathBuf::new();
    for _ in common..dc.len() {
        r.push("..");
    }
    for c in &pc[common..] {
        r.push(c.as_os_str());
    }
    r
}

/// A TOML string literal of a path (forward slashes, quotes escaped).
fn toml_path(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    format!("\"{}\"", s.replace('"', "\\\""))
}

/// The scene file's text.
fn scene_text(
    name: &str,
    held: &str,
    world: &str,
    deformable: Option<(&str, &str)>,
    d: &Derived,
) -> String {
    let f = |v: [f64; 3]| format!("[{}, {}, {}]", v[0], v[1], v[2]);
    let mut s = format!(
        "# Written by `haptics scene new`; every value below is a starting point to edit.\n\
         # Lengths are in the meshes' own units (scene units).\n\
         name = \"{name}\"\n\
         # Device metres per scene unit: the reference device's {r} m reach covers the\n\
         # fixture's half-diagonal.\n\
         workspace_scale = {ws}\n\n\
         [haptic]\n\
         name = \"held\"\n\
         mesh = {held}\n\
         # Four cells across the part's thinnest side.\n\
         sdf_resolution = {res}\n\
         grasp = {grasp}\n\
         position = {pos}\n\n\
         [[environment]]\n\
         name = \"fixture\"\n\
         mesh = {world}\n\
         # The finest of {levels} levels spaced like the part's field cells.\n\
         points = {points}\n\
         levels = {levels}\n",
        r = REFERENCE_WORKSPACE_RADIUS_M,
        ws = d.workspace_scale,
        res = d.sdf_resolution,
        grasp = f(d.grasp),
        pos = f(d.position),
        points = d.points,
        levels = d.levels,
    );
    if let Some((veg, bou)) = deformable {
        s += &format!(
            "\n[environment.deformable]\n\
             volume = {veg}\n\
             # The voxel mesh's lowest layer of vertices.\n\
             fixed = {bou}\n\
             linear_modes = 10\n\
             damping_stiffness = 0.01\n"
        );
    }
    s += &format!(
        "\n[contact]\n\
         # Three times the coupling's stiffness, per point.\n\
         stiffness = {kc}\n\
         # 1% of the part's size.\n\
         max_penetration = {mp}\n\n\
         [coupling]\n\
         # The hand feels half the device's stable stiffness: k / workspace_scale.\n\
         stiffness = {k}\n\
         # The device's 0.6 m/s in scene units (at most 1000 per second).\n\
         max_velocity = {mv}\n",
        kc = d.contact_stiffness,
        mp = d.max_penetration,
        k = d.coupling_stiffness,
        mv = d.max_velocity,
    );
    s
}

/// Voxelizes `world` (32 voxels along its longest side) and writes the voxel mesh and its
/// lowest layer of vertices into `dir`; returns their paths.
fn write_deformable(
    world: &SurfaceMesh,
    world_path: &Path,
    dir: &Path,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let opts = VoxelizeOptions {
        resolution: 32,
        box_enlarge: 1.05,
        fill_interior: true,
        material: Material::new("rubber", 1000.0, 1e6, 0.45),
    };
    let bars = Bars::transient().with_template("{msg} [{bar:40}] {pos}/{len} triangles, ETA {eta}");
    let vox = voxelize(world, &opts, &bars)
        .with_context(|| format!("{}: voxelization failed", world_path.display()))?;
    let lowest = vox
        .mesh
        .vertices
        .iter()
        .map(|v| v.y)
        .fold(f64::INFINITY, f64::min);
    let fixed: Vec<usize> = (0..vox.mesh.vertices.len())
        .filter(|&i| vox.mesh.vertices[i].y <= lowest + 1e-9 * vox.voxel_size)
        .collect();
    let stem = world_path.file_stem().unwrap_or_default().to_string_lossy();
    let (veg, bou) = (
        dir.join(format!("{stem}.veg")),
        dir.join(format!("{stem}.bou")),
    );
    write_veg(&veg, &vox.mesh)?;
    write_bou(&bou, &fixed)?;
    Ok((veg, bou))
}

/// Runs `haptics scene`.
pub fn run(args: &SceneArgs) -> anyhow::Result<()> {
    match &args.command {
        SceneCommand::New(a) => new(a),
    }
}

fn new(a: &NewArgs) -> anyhow::Result<()> {
    if a.out.exists() && !a.force {
        bail!("{} exists; pass --force to overwrite it", a.out.display());
    }
    let held =
        read_surface(&a.held).with_context(|| format!("the held part {}", a.held.display()))?;
    let world =
        read_surface(&a.world).with_context(|| format!("the fixture {}", a.world.display()))?;
    let d = Derived::from_sizes(&held, &world, &DeviceInfo::phantom_premium_6dof());
    let dir = a
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let deformable = if a.deformable {
        Some(write_deformable(&world, &a.world, dir)?)
    } else {
        None
    };
    let rel = |p: &Path| toml_path(&relative_to(p, dir));
    let name = a
        .out
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let def = deformable.as_ref().map(|(v, b)| (rel(v), rel(b)));
    let text = scene_text(
        &name,
        &rel(&a.held),
        &rel(&a.world),
        def.as_ref().map(|(v, b)| (v.as_str(), b.as_str())),
        &d,
    );
    haptics::io::write_atomic(&a.out, |f| {
        use std::io::Write as _;
        f.write_all(text.as_bytes())
    })
    .with_context(|| format!("writing {}", a.out.display()))?;
    println!(
        "{} written: workspace scale {:.4e}, field {} cells, {} points x {} levels, coupling {:.4e}, contact {:.4e}; open it with `haptics run {}`",
        a.out.display(),
        d.workspace_scale,
        d.sdf_resolution,
        d.points,
        d.levels,
        d.coupling_stiffness,
        d.contact_stiffness,
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use haptics::mesh::box_surface_mesh;
    use nalgebra::Vector3;

    fn scaled(m: &SurfaceMesh, s: f64) -> SurfaceMesh {
        let mut m = m.clone();
        m.vertices
            .iter_mut()
            .for_each(|v| *v = (v.coords * s).into());
        m
    }

    /// The same two parts in metres and in millimetres: resolutions and point counts are
    /// equal, lengths scale by 1000, the workspace scale and the stiffnesses (N per scene
    /// unit) by 1/1000; the held part sits above the fixture.
    #[test]
    fn derived_settings_follow_the_meshes_scale() {
        let held = box_surface_mesh(Vector3::new(0.02, 0.1, 0.02), [1, 1, 1]);
        let world = box_surface_mesh(Vector3::new(0.5, 0.1, 0.5), [1, 1, 1]);
        let dev = DeviceInfo::phantom_premium_6dof();
        let m = Derived::from_sizes(&held, &world, &dev);
        let mm = Derived::from_sizes(&scaled(&held, 1e3), &scaled(&world, 1e3), &dev);
        assert_eq!(
            m.sdf_resolution,
            32.max((4.0 * 0.1f64 / 0.02).ceil() as usize)
        );
        assert_eq!(
            (m.sdf_resolution, m.points, m.levels),
            (mm.sdf_resolution, mm.points, mm.levels)
        );
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(rel(m.workspace_scale, mm.workspace_scale * 1e3) < 1e-12);
        assert!(rel(m.coupling_stiffness, mm.coupling_stiffness * 1e3) < 1e-12);
        assert!(rel(m.max_penetration * 1e3, mm.max_penetration) < 1e-12);
        // The device's 0.12 m reach covers the fixture's half-diagonal.
        let half_diag = 0.5 * (0.5f64 * 0.5 + 0.1 * 0.1 + 0.5 * 0.5).sqrt();
        assert!(rel(m.workspace_scale, 0.12 / half_diag) < 1e-12);
        // The felt stiffness is half the device's 600 N/m.
        assert!(rel(m.coupling_stiffness / m.workspace_scale, 300.0) < 1e-12);
        // Above the fixture's top (y = 0.05), not touching it.
        assert!(m.position[1] - 0.05 > 0.05, "{:?}", m.position);
    }

    #[test]
    fn paths_are_written_relative_to_the_scene() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("models")).unwrap();
        std::fs::create_dir_all(dir.path().join("scenes")).unwrap();
        let mesh = dir.path().join("models/a.obj");
        std::fs::write(&mesh, "").unwrap();
        assert_eq!(
            relative_to(&mesh, &dir.path().join("scenes")),
            PathBuf::from("../models/a.obj")
        );
    }
}
