//! Internal force plus stiffness assembly (criterion, single thread).
//!
//! - The bridge hex mesh (assets/models/simpleBridge, 1736 voxels, 3x3x3 Gauss).
//! - A tet mesh of at least 20,000 elements (the bridge surface voxelized and split into
//!   six tets per voxel): Total Lagrangian against Kikuuwe's edge-based kernel, in one
//!   run, so their ratio is measured under the same machine load.

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::fem::edge::EdgeStvk;
use haptics::fem::{model::FemModel, model::MaterialLaw};
use haptics::mesh::voxelize::{hex_to_tets, voxelize, VoxelizeOptions};
use haptics::mesh::{read::read_surface, veg::read_veg, volume::Material};
use haptics::progress::NoProgress;

/// A deterministic, moderately large deformation.
fn displacement(n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|i| scale * ((i as f64) * 0.37).sin()).collect()
}

fn bench_bridge_hex(c: &mut Criterion) {
    let mesh = read_veg(&haptics::assets::model(
        "simpleBridge/simpleBridge_resol92-b1.155_enlarged.veg",
    ))
    .expect("bridge mesh");
    let model = FemModel::new(&mesh, MaterialLaw::StVK).expect("bridge model");
    let u = displacement(model.num_dofs(), 0.01);
    let mut f = vec![0.0; model.num_dofs()];
    let mut k = model.new_matrix();
    let mut g = c.benchmark_group("assembly/bridge_hex_1736");
    g.bench_function("force+stiffness (TL, 27 pts)", |b| {
        b.iter(|| model.forces_and_stiffness(&u, &mut f, &mut k))
    });
    g.bench_function("force only (TL, 27 pts)", |b| {
        b.iter(|| model.internal_forces(&u, &mut f))
    });
    g.finish();
}

/// The bridge surface voxelized at resolution 160 and split into tets.
pub fn bridge_tets() -> haptics::mesh::volume::VolumeMesh {
    let surface = read_surface(&haptics::assets::model("simpleBridge/simpleBridge.obj"))
        .expect("bridge surface");
    let opts = VoxelizeOptions {
        resolution: 160,
        material: Material::new("bridge", 1000.0, 1e7, 0.45),
        ..VoxelizeOptions::default()
    };
    let vox = voxelize(&surface, &opts, &NoProgress).expect("voxelize bridge");
    hex_to_tets(&vox.mesh)
}

fn bench_tets(c: &mut Criterion) {
    let mesh = bridge_tets();
    assert!(
        mesh.num_elements() >= 20_000,
        "only {} tets",
        mesh.num_elements()
    );
    let model = FemModel::new(&mesh, MaterialLaw::StVK).expect("tet model");
    let edge = EdgeStvk::new(&model).expect("edge kernel");
    let u = displacement(model.num_dofs(), 0.01);
    let mut f = vec![0.0; model.num_dofs()];
    let mut k = model.new_matrix();
    let name = format!(
        "assembly/bridge_tets_{}_edges_{}_tseps_{}",
        mesh.num_elements(),
        edge.num_edges(),
        edge.num_tseps()
    );
    let mut g = c.benchmark_group(name);
    g.bench_function("force+stiffness TL", |b| {
        b.iter(|| model.forces_and_stiffness(&u, &mut f, &mut k))
    });
    let mut scratch = edge.scratch();
    g.bench_function("force+stiffness edge-based", |b| {
        b.iter(|| {
            edge.forces_and_stiffness_with(&model.rest_positions, &u, &mut f, &mut k, &mut scratch)
        })
    });
    g.bench_function("force only TL", |b| {
        b.iter(|| model.internal_forces(&u, &mut f))
    });
    g.bench_function("force only edge-based", |b| {
        b.iter(|| edge.internal_forces(&model.rest_positions, &u, &mut f))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench_bridge_hex, bench_tets
}
criterion_main!(benches);
