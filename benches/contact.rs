//! Contact traversal shaped like thesis Table 3.1: for each configuration, one haptic
//! cycle of tree traversal with temporal coherence on and off, and the tree-less pass over
//! every point; nodes traversed, lookups, contacts and the level of detail reached are
//! printed once per configuration (stderr) for docs/performance.md.
//!
//! Configurations (all on the shared models):
//! - `rigid`: the hoses (tube.veg.obj) as a rigid pointshell of 256K points in 6 levels
//!   (250 roots), lying across the rigid bridge (simpleBridge.obj, a polygon soup: signed
//!   field of its offset surface, 256^3), 3 cm deep where they rest on it (on its arches,
//!   which cross under the hoses 0.6 m above the deck);
//! - `deformable`: the bridge as a deformable pointshell (85K points in 5 levels, 333
//!   roots, r = 20 modal-derivative basis) under the rigid hoses (signed field 256^3);
//! - `two-deformable`: the same deformable bridge under deformable hoses (deformed
//!   distance field, 40 proxies, r = 10 linear modes of the voxelized tube);
//! - `worst-case`: the deformable configuration pressed 0.3 m deep into the arches, where the default
//!   node budget binds (graceful degradation).
//!
//! The first run builds the fields, pointshells and bakes (minutes) and caches them in
//! `target/bench-cache`; later runs load them.

mod common;

use common::*;
use criterion::{criterion_group, criterion_main, Criterion};
use haptics::contact::{
    deformed_field::DeformedDistanceField, distance::DistanceQuery, params::ContactParams,
    shell_modes, ContactOutput, ContactShell, Poses, Traversal,
};
use haptics::mesh::read_obj;
use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

/// Reduced coordinates that move the bridge by about `amplitude` at most.
fn bridge_q(shell: &ContactShell, amplitude: f64) -> Vec<f64> {
    let r = shell.r();
    let q: Vec<f64> = (0..r)
        .map(|j| ((j * 7 + 3) % 11) as f64 / 11.0 - 0.4)
        .collect();
    let max = (0..shell.len())
        .map(|s| (shell.position(s, &q) - shell.points[s]).norm())
        .fold(0.0, f64::max);
    q.iter().map(|v| v * amplitude / max).collect()
}

/// One contact configuration: the shell, the field, and the poses along a small circle
/// (radius 5 mm, one step per cycle) around a pressing pose.
struct Config<'a, D: DistanceQuery> {
    name: &'a str,
    shell: &'a ContactShell,
    field: &'a D,
    base: Poses,
    shell_moves: bool,
    q: Vec<f64>,
    field_r: usize,
}

impl<D: DistanceQuery> Config<'_, D> {
    fn poses(&self, cycle: usize) -> Poses {
        let t = cycle as f64 * 1e-3;
        let wobble = Isometry3::from_parts(
            Translation3::new(0.005 * (6.0 * t).cos(), 0.0, 0.005 * (6.0 * t).sin()),
            UnitQuaternion::from_scaled_axis(Vector3::y() * 0.02 * t.sin()),
        );
        let mut p = self.base;
        if self.shell_moves {
            p.shell = wobble * p.shell;
        } else {
            p.field = wobble * p.field;
            p.grasp = wobble * p.grasp;
        }
        p
    }

    fn run(&self, c: &mut Criterion, budget: usize) {
        let params = |tc| ContactParams {
            stiffness: 1000.0,
            warm_budget: budget,
            temporal_coherence: tc,
            ..ContactParams::default()
        };
        let stats = |out: &ContactOutput| {
            format!(
                "traversed {} lookups {} contacts {} LOD {}",
                out.traversed,
                out.lookups,
                out.contacts.len(),
                out.deepest_level + 1
            )
        };
        let mut group = c.benchmark_group(format!("contact/{}", self.name));
        for tc in [true, false] {
            let mut tr = Traversal::for_field(self.shell, params(tc), self.field);
            let mut out = Traversal::output(self.shell, self.field_r);
            let mut cycle = 0;
            // Warm up the temporal-coherence cache and the warm depth.
            for _ in 0..200 {
                cycle += 1;
                tr.run(
                    self.shell,
                    self.field,
                    &self.poses(cycle),
                    &self.q,
                    &mut out,
                );
            }
            eprintln!(
                "{} TC {}: {}",
                self.name,
                if tc { "on" } else { "off" },
                stats(&out)
            );
            group.bench_function(if tc { "tree TC on" } else { "tree TC off" }, |b| {
                b.iter(|| {
                    cycle += 1;
                    tr.run(
                        self.shell,
                        self.field,
                        &self.poses(cycle),
                        &self.q,
                        &mut out,
                    );
                    out.contact.force.x
                })
            });
        }
        let mut tr = Traversal::for_field(self.shell, params(false), self.field);
        let mut out = Traversal::output(self.shell, self.field_r);
        let levels = self.shell.level_offsets.len() - 1;
        tr.run_treeless(
            self.shell,
            self.field,
            &self.poses(0),
            &self.q,
            levels,
            &mut out,
        );
        eprintln!("{} tree-less: {}", self.name, stats(&out));
        group.bench_function("tree-less", |b| {
            b.iter(|| {
                tr.run_treeless(
                    self.shell,
                    self.field,
                    &self.poses(0),
                    &self.q,
                    levels,
                    &mut out,
                );
                out.contact.force.x
            })
        });
        group.finish();
    }
}

fn contact_benches(c: &mut Criterion) {
    eprintln!(
        "preparing fields, pointshells and bakes (cached in {:?})",
        cache_dir()
    );
    let tube_sdf = tube_field();
    let (bridge_sdf, bridge_surface) = bridge_field_and_surface();
    let tube_mesh = read_obj(&haptics::assets::model("tube/tube.veg.obj")).unwrap();
    let bridge_ps = pointshell("bridge-85k-5", &bridge_surface, 333, 5);
    // The hoses lie across the bridge (their axis, body y, along world z; their lowest
    // point, body z = 1.5, down), `pen` into it where they rest on it: on its arches,
    // which cross under them above the deck (3 cm is half a field cell).
    let resting = hoses_resting_height(&tube_sdf, &bridge_ps.points);
    let lying = |pen: f64| hoses_lying(resting - pen);
    let tube_centre = Point3::new(0.0, resting, 0.0);
    let budget = ContactParams::default().warm_budget;

    // Rigid against rigid, 256K points.
    let tube_ps = pointshell("tube-256k-6", &tube_mesh, 250, 6);
    let tube_shell = shell_from(&tube_ps, None);
    Config {
        name: "rigid",
        shell: &tube_shell,
        field: &bridge_sdf,
        base: Poses {
            shell: lying(0.03),
            field: Isometry3::identity(),
            grasp: tube_centre,
        },
        shell_moves: true,
        q: vec![],
        field_r: 0,
    }
    .run(c, budget);

    // The deformable bridge (r = 20, 85K points) under the rigid hoses.
    let (bridge_mesh, bridge) = bridge_model();
    let bridge_u = bridge.basis;
    let modes = timed("bridge pointshell modes", || {
        shell_modes(
            &bridge_ps.points,
            &bridge_ps.normals,
            &bridge_mesh,
            &bridge_u,
            0.5,
        )
        .unwrap()
    });
    let bridge_shell = shell_from(&bridge_ps, Some(modes));
    let q = bridge_q(&bridge_shell, 0.02);
    let pressing = |pen: f64| Poses {
        shell: Isometry3::identity(),
        field: lying(pen),
        grasp: tube_centre,
    };
    Config {
        name: "deformable",
        shell: &bridge_shell,
        field: &tube_sdf,
        base: pressing(0.03),
        shell_moves: false,
        q: q.clone(),
        field_r: 0,
    }
    .run(c, budget);

    // Worst case: pressed deep, the budget binds.
    Config {
        name: "worst-case",
        shell: &bridge_shell,
        field: &tube_sdf,
        base: pressing(0.3),
        shell_moves: false,
        q: q.clone(),
        field_r: 0,
    }
    .run(c, budget);

    // Two deformable objects: the hoses' deformed distance field.
    let (tube_vox, tube_u) = tube_basis();
    let mut deformed = DeformedDistanceField::new(
        tube_sdf.clone(),
        &tube_vox,
        &tube_u,
        std::slice::from_ref(&tube_mesh.vertices),
        40,
        5,
    )
    .unwrap();
    let qt: Vec<f64> = (0..tube_u.ncols())
        .map(|j| if j == 6 { 0.05 } else { 0.0 })
        .collect();
    deformed.update(&qt);
    let two = Config {
        name: "two-deformable",
        shell: &bridge_shell,
        field: &deformed,
        base: pressing(0.03),
        shell_moves: false,
        q,
        field_r: tube_u.ncols(),
    };
    // The deformed field's defaults keep the full budget (until 2026-11-28 a quarter of
    // it, measured here as a fifth configuration).
    two.run(c, ContactParams::deformed_field().warm_budget);
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = contact_benches
}
criterion_main!(benches);
