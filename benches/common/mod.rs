//! Fixtures shared by the contact and haptic benchmarks: the hoses' and the bridge's
//! fields, pointshells and bakes, built on first use and cached in `target/bench-cache`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Instant;

use haptics::contact::{ContactShell, ShellModes};
use haptics::fem::model::MassKind;
use haptics::geometry::dist::{read_dist, write_dist};
use haptics::geometry::pointshell::{sample_pointshell, Pointshell, PointshellParams};
use haptics::geometry::soup::{soup_signed_field, SoupOptions};
use haptics::geometry::{MeshDistance, SignedDistanceField};
use haptics::mesh::{
    read_obj, veg::read_veg, voxelize::voxelize, voxelize::VoxelizeOptions, SurfaceMesh,
};
use haptics::progress::NoProgress;
use haptics::reduction::bake::{bake, load_baked, BakeInput, BakeParams, BakedModel, BasisKind};
use nalgebra::{DMatrix, Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

pub fn cache_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = target.join("bench-cache");
    std::fs::create_dir_all(&dir).expect("create the benchmark cache");
    dir
}

pub fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    eprintln!("  {what}: {:.1} s", t.elapsed().as_secs_f64());
    v
}

/// The signed field of the hoses (closed mesh), 256^3.
pub fn tube_field() -> SignedDistanceField {
    let path = cache_dir().join("tube-256.dist");
    if let Ok(f) = read_dist(&path) {
        return f;
    }
    let mesh = read_obj(&haptics::assets::model("tube/tube.veg.obj")).unwrap();
    let f = timed("tube SDF 256^3", || {
        SignedDistanceField::compute(&MeshDistance::new(&mesh).unwrap(), 256, 1.5, &NoProgress)
            .unwrap()
    });
    write_dist(&path, &f).unwrap();
    f
}

/// The bridge soup's offset surface (closed) and its signed field, 256^3.
pub fn bridge_field_and_surface() -> (SignedDistanceField, SurfaceMesh) {
    let dist = cache_dir().join("bridge-256.dist");
    let surf = cache_dir().join("bridge-256-offset.obj");
    if let (Ok(f), Ok(s)) = (read_dist(&dist), read_obj(&surf)) {
        return (f, s);
    }
    let soup = read_obj(&haptics::assets::model("simpleBridge/simpleBridge.obj")).unwrap();
    let opts = SoupOptions {
        resolution: 256,
        offset: 1.0,
        ..SoupOptions::default()
    };
    let sf = timed("bridge soup SDF 256^3", || {
        soup_signed_field(&soup, &opts, &NoProgress).unwrap()
    });
    write_dist(&dist, &sf.field).unwrap();
    haptics::mesh::write_obj(&surf, &sf.surface).unwrap();
    (sf.field, sf.surface)
}

pub fn pointshell(name: &str, mesh: &SurfaceMesh, first: usize, levels: usize) -> Pointshell {
    let path = cache_dir().join(format!("{name}.pointshell"));
    if let Ok(p) = Pointshell::read(&path) {
        return p;
    }
    let params = PointshellParams {
        first_level_points: first,
        levels,
        ..PointshellParams::default()
    };
    let md = MeshDistance::new(mesh).unwrap();
    let ps = timed(&format!("pointshell {name}"), || {
        sample_pointshell(&md, mesh, &params, &NoProgress).unwrap()
    });
    ps.write(&path).unwrap();
    ps
}

/// The r = 20 bridge (10 linear modes and their derivatives), baked once: its
/// simulation mesh and the baked model (basis and cubic polynomial).
pub fn bridge_model() -> (haptics::mesh::volume::VolumeMesh, BakedModel) {
    let veg = haptics::assets::model("simpleBridge/simpleBridge_resol92-b1.155_enlarged.veg");
    let input = BakeInput {
        mesh: veg.clone(),
        fixed: Some(haptics::assets::model(
            "simpleBridge/simpleBridge_resol92-b1.155_enlarged.bou",
        )),
        basis_file: None,
        render_interp: None,
        params: BakeParams {
            linear_modes: 10,
            basis: 20,
            basis_kind: BasisKind::ModalDerivatives,
            mass_matrix: MassKind::Consistent,
            unconstrained: false,
            voxel_resolution: None,
            material_groups: false,
        },
    };
    let dir = cache_dir().join("bridge-r20");
    bake(&input, &dir, &NoProgress).unwrap();
    (read_veg(&veg).unwrap(), load_baked(&dir).unwrap())
}

/// The voxelized hoses with 10 free-free linear modes, baked once.
pub fn tube_basis() -> (haptics::mesh::volume::VolumeMesh, DMatrix<f64>) {
    let (mesh, model) = tube_model();
    (mesh, model.basis)
}

/// The voxelized hoses with 10 free-free linear modes, baked once: the simulation mesh
/// and the baked model (basis and cubic polynomial).
pub fn tube_model() -> (haptics::mesh::volume::VolumeMesh, BakedModel) {
    let dir = cache_dir().join("tube-r10");
    let veg = cache_dir().join("tube-24.veg");
    if !veg.exists() {
        let mesh = read_obj(&haptics::assets::model("tube/tube.veg.obj")).unwrap();
        let vox = voxelize(
            &mesh,
            &VoxelizeOptions {
                resolution: 24,
                ..VoxelizeOptions::default()
            },
            &NoProgress,
        )
        .unwrap();
        haptics::mesh::veg::write_veg(&veg, &vox.mesh).unwrap();
    }
    let input = BakeInput {
        mesh: veg.clone(),
        fixed: None,
        basis_file: None,
        render_interp: None,
        params: BakeParams {
            linear_modes: 10,
            basis: 10,
            basis_kind: BasisKind::LinearModes,
            mass_matrix: MassKind::Consistent,
            unconstrained: true,
            voxel_resolution: None,
            material_groups: false,
        },
    };
    bake(&input, &dir, &NoProgress).unwrap();
    (read_veg(&veg).unwrap(), load_baked(&dir).unwrap())
}

/// The height of the deck's top at x = z = 0: the first sign change from above.
/// The hoses lying across the bridge (their axis, body y, along world z; their lowest
/// point, body z = 1.5, down), their centre line at height `y` above x = 0, z = -5 + 5.
pub fn hoses_lying(y: f64) -> Isometry3<f64> {
    Isometry3::from_parts(Translation3::new(0.0, y, -5.0), hoses_rotation())
}

/// The orientation of the hoses lying across the bridge: a quarter turn about x.
pub fn hoses_rotation() -> UnitQuaternion<f64> {
    UnitQuaternion::from_scaled_axis(Vector3::x() * std::f64::consts::FRAC_PI_2)
}

/// The height of the hoses' centre line ([`hoses_lying`]) at which they rest on the
/// bridge: the least distance from the bridge's points to the hoses' field is zero.
///
/// The deck under the hoses is not the highest part beneath them: the bridge's arches
/// cross their footprint at z = +-0.8, 0.6 m above the deck at x = 0 and rising away from
/// it, so hoses placed by the deck's height alone start 0.56 m below their resting height,
/// their deepest points 0.29 m inside their wall.
pub fn hoses_resting_height(tube: &SignedDistanceField, bridge_points: &[Point3<f64>]) -> f64 {
    let clearance = |y: f64| {
        let to_body = hoses_lying(y).inverse();
        bridge_points
            .iter()
            .map(|p| tube.lookup(&(to_body * p)))
            .fold(f64::INFINITY, f64::min)
    };
    // From above every bridge point, lowering the hoses by the least clearance d lowers
    // no clearance below zero (the field is 1-Lipschitz): conservative advancement down
    // to the contact.
    let top = bridge_points.iter().map(|p| p.y).fold(f64::MIN, f64::max);
    let mut y = top + 1.5 + 0.1;
    for _ in 0..200 {
        let d = clearance(y);
        if d.abs() < 1e-5 {
            break;
        }
        y -= d;
    }
    y
}

pub fn shell_from(ps: &Pointshell, modes: Option<ShellModes>) -> ContactShell {
    ContactShell::new(
        ps.points.clone(),
        ps.normals.clone(),
        ps.level_offsets.clone(),
        modes,
    )
    .unwrap()
}
