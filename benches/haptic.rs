//! The full haptic cycle (device pose -> coupling -> traversal -> 6x6 solve -> device
//! force -> reduced contact forces -> implicit Newmark step) on the target
//! configuration: the deformable bridge (r = 20, a pointshell of 85K points) under the
//! rigid hoses (signed field 256^3) held through the device, pressed onto the bridge's
//! arches (which cross under the hoses above the deck) and slid along them, up their
//! slope. Criterion reports the median; the distribution (p50, p99.9, max) of
//! 20,000 consecutive cycles is printed for docs/performance.md, measured with the same clock.
//!
//! `two deformable`: the same, with the hoses deformable too (r = 10 free linear modes of
//! the voxelized tube, a deformed distance field of 40 proxies, k = 5) at the full
//! default node budget: both objects' Newmark steps and the deformed-field traversal.

mod common;

use std::time::Instant;

use common::*;
use criterion::{criterion_group, criterion_main, Criterion};
use haptics::contact::{deformed_field::DeformedDistanceField, params::ContactParams, shell_modes};
use haptics::coupling::CouplingParams;
use haptics::dynamics::{ReducedNewmark, ReducedParams};
use haptics::haptic::{CycleStats, HapticSimulation};
use haptics::mesh::read_obj;
use haptics::reduction::evaluator::ReducedForces;
use haptics::scene::{EnvironmentObject, HapticField, HapticObject, Scene};
use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

/// The hoses as a deformable held object: the deformed distance field of the tube
/// (40 proxies, k = 5) and its r = 10 reduced dynamics.
fn deformable_hoses(rest: haptics::geometry::SignedDistanceField) -> HapticField {
    let (vox, model) = tube_model();
    let surface = read_obj(&haptics::assets::model("tube/tube.veg.obj")).unwrap();
    let field = DeformedDistanceField::new(
        rest,
        &vox,
        &model.basis,
        std::slice::from_ref(&surface.vertices),
        40,
        5,
    )
    .unwrap();
    HapticField::Deformable {
        field: Box::new(field),
        dynamics: Box::new(reduced_dynamics(&model)),
    }
}

/// The reduced implicit Newmark integrator of a baked model (damping 0.01 x stiffness).
fn reduced_dynamics(
    model: &haptics::reduction::bake::BakedModel,
) -> haptics::dynamics::object::ObjectDynamics {
    let r = model.basis.ncols();
    ReducedNewmark::new(
        haptics::dynamics::object::ObjectForces::from(
            ReducedForces::new(&model.polynomial, r).unwrap(),
        ),
        ReducedParams {
            damping_stiffness: 0.01,
            ..ReducedParams::default()
        },
    )
}

fn bridge_under_hoses() -> Scene {
    let tube_sdf = tube_field();
    let (_, bridge_surface) = bridge_field_and_surface();
    let bridge_ps = pointshell("bridge-85k-5", &bridge_surface, 333, 5);
    let (mesh, model) = bridge_model();
    let modes = shell_modes(
        &bridge_ps.points,
        &bridge_ps.normals,
        &mesh,
        &model.basis,
        0.5,
    )
    .unwrap();
    let shell = shell_from(&bridge_ps, Some(modes));
    let dynamics = reduced_dynamics(&model);
    // The hoses lie across the bridge, 2 cm above where they would rest on it (on its
    // arches); the grasp point at their centre.
    let hoses = hoses_lying(hoses_resting_height(&tube_sdf, &bridge_ps.points) + 0.02);
    Scene {
        name: "bridge-hoses".into(),
        description: "the rigid hoses pressed into and slid along the deformable bridge".into(),
        haptic: HapticObject {
            name: "hoses".into(),
            field: HapticField::Rigid(tube_sdf),
            grasp: Point3::new(0.0, 5.0, 0.0),
            pose: hoses,
            surface: read_obj(&haptics::assets::model("tube/tube.veg.obj")).unwrap(),
            render_basis: vec![],
            min_half_thickness: None,
        },
        environment: vec![EnvironmentObject {
            name: "bridge".into(),
            shell,
            pose: Isometry3::identity(),
            dynamics: Some(dynamics),
            surface: bridge_surface,
            render_basis: vec![],
        }],
        contact: ContactParams {
            stiffness: 2e4,
            ..ContactParams::default()
        },
        coupling: CouplingParams {
            stiffness: 2e3,
            torque_stiffness: 2e3,
            saturation_force: Some(200.0),
            device_max_force: 8.5,
            ..CouplingParams::default()
        },
        workspace_scale: 1.0,
        rate_hz: 1000.0,
    }
}

/// The device path: down 6 cm in 1 s (the hoses start 2 cm above the arches, so the
/// coupling presses them 4 cm in), then a 1 m slide and back along the bridge every
/// 4 s.
///
/// Until 2026-11-28 the hoses started 0.56 m below their resting height (placed by the deck's
/// height alone), and this path was given in the device frame without turning it into the
/// grasp frame's orientation, so "down" moved the hoses along their own axis: the
/// configuration measured before then was the hoses pushed out of the arches at the start
/// and sliding against them 17 cm deep, every pointshell point deeper than the sweep's
/// limit.
fn device_pose(cycle: u64) -> Isometry3<f64> {
    let t = (cycle % 9000) as f64 * 1e-3;
    let down = -0.06 * t.min(1.0);
    let slide = 0.5 * (1.0 - (std::f64::consts::PI * ((t - 1.0).max(0.0) / 4.0)).cos());
    // The device frame is the grasp frame at the start (the workspace's index): the
    // world motion expressed in it.
    Isometry3::from_parts(
        Translation3::from(hoses_rotation().inverse() * Vector3::new(slide, down, 0.0)),
        UnitQuaternion::identity(),
    )
}

/// Each regression scene replayed on its recorded trajectory: the distribution of the
/// full cycle's time, for the table in docs/performance.md.
fn regression_scenes(c: &mut Criterion) {
    use haptics::progress::NoProgress;
    use haptics::scene::load_scene;
    use haptics_devices::trajectory::read_trajectory;
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cases = [
        ("bridge-probe", "bridge-probe-poke"),
        ("bridge-probe", "bridge-probe-fast"),
        ("peg-shaft", "peg-shaft-insert"),
        ("hoses-gap", "hoses-gap-through"),
    ];
    for (scene, traj) in cases {
        let path = root.join(format!("assets/scenes/{scene}.toml"));
        let scene = load_scene(&path, &cache_dir().join("scenes"), &NoProgress).unwrap();
        let t = read_trajectory(&root.join(format!("assets/trajectories/{traj}.csv"))).unwrap();
        let poses: Vec<Isometry3<f64>> = t.samples.iter().map(|s| s.pose.isometry()).collect();
        let mut stats = CycleStats::new(1_000_000);
        // Five passes over the trajectory, each on a fresh simulation.
        for _ in 0..5 {
            let mut sim = HapticSimulation::new(scene.clone());
            for p in &poses {
                let t0 = Instant::now();
                sim.cycle(p, false);
                stats.record(t0.elapsed().as_nanos() as u64);
            }
        }
        let s = stats.summary();
        eprintln!(
            "{traj}: {} cycles, p50 {:.1} us, p99.9 {:.1} us, max {:.1} us, overruns {}",
            s.cycles, s.p50_us, s.p999_us, s.max_us, s.overruns
        );
        let mut sim = HapticSimulation::new(scene);
        let mut i = 0;
        c.bench_function(&format!("haptic cycle/replay {traj}"), |b| {
            b.iter(|| {
                if i == poses.len() {
                    i = 0;
                }
                i += 1;
                sim.cycle(&poses[i - 1], false).force.x
            })
        });
    }
}

fn haptic_cycle(c: &mut Criterion) {
    let rigid = bridge_under_hoses();
    let mut two = rigid.clone();
    two.name = "bridge-deformable-hoses".into();
    if let HapticField::Rigid(sdf) = &two.haptic.field {
        two.haptic.field = deformable_hoses(sdf.clone());
    }
    // The same without continuous contact (the thesis's discrete contact): the sweep's
    // cost.
    let mut discrete = rigid.clone();
    discrete.contact.max_penetration = 0.0;
    cycle_distribution(c, rigid, "haptic cycle/bridge r=20 85K under rigid hoses");
    cycle_distribution(
        c,
        discrete,
        "haptic cycle/bridge r=20 85K under rigid hoses, discrete contact",
    );
    cycle_distribution(
        c,
        two,
        "haptic cycle/two deformable: bridge r=20 85K under hoses r=10",
    );
}

/// Settles `scene` into contact along the device path, prints the distribution of
/// 20,000 cycles, then lets criterion time more.
fn cycle_distribution(c: &mut Criterion, scene: Scene, name: &str) {
    let mut sim = HapticSimulation::new(scene);
    // Settle into contact, then record the distribution of 20,000 cycles.
    for _ in 0..1500 {
        let p = device_pose(sim.cycle);
        sim.cycle(&p, false);
    }
    let mut stats = CycleStats::new(1_000_000);
    let (mut contacts, mut traversed, mut lod) = (0usize, 0usize, 0usize);
    for _ in 0..20_000 {
        let p = device_pose(sim.cycle);
        let t0 = Instant::now();
        let r = sim.cycle(&p, false);
        stats.record(t0.elapsed().as_nanos() as u64);
        contacts = contacts.max(r.contacts);
        traversed = traversed.max(r.traversed);
        lod = lod.max(r.level_of_detail);
    }
    let s = stats.summary();
    eprintln!(
        "{name}: full cycle over {} cycles: p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us, overruns {}; up to {contacts} contacts, {traversed} nodes, LOD {lod}",
        s.cycles, s.p50_us, s.p99_us, s.p999_us, s.max_us, s.overruns
    );
    c.bench_function(name, |b| {
        b.iter(|| {
            let p = device_pose(sim.cycle);
            sim.cycle(&p, false).force.y
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = haptic_cycle, regression_scenes
}
criterion_main!(benches);
