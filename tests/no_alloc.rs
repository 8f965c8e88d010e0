//! The reduced step allocates nothing (the haptic thread's rule): a counting global
//! allocator sees zero allocations over many steps, after construction.

#[path = "common/alloc.rs"]
mod alloc;

use alloc::{allocations, Counting};

use haptics::dynamics::{ReducedNewmark, ReducedParams, StepEvent};
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::vega::read_cub;

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn reduced_newmark_step_allocates_nothing() {
    let path = haptics::assets::model("vega-realtime-bridge/simpleBridge.cub");
    let cub = read_cub(&path).unwrap();
    let r = cub.r;
    for newton in [1usize, 3] {
        let params = ReducedParams {
            damping_stiffness: 0.01,
            newton_iterations: newton,
            ..ReducedParams::default()
        };
        let mut sim = ReducedNewmark::new(ReducedForces::new(&cub, r).unwrap(), params);
        let mut f = vec![0.0; r];
        let before = allocations();
        for s in 0..500 {
            f[0] = if s < 50 { 1000.0 } else { 0.0 };
            assert_eq!(sim.step(&f), StepEvent::Ok);
        }
        let after = allocations();
        assert_eq!(
            after - before,
            0,
            "{} allocations in 500 steps ({newton} Newton iterations)",
            after - before
        );
    }
}

/// A ring of points of radius 3 cm in three levels (20, 60 and 240 points), with inward
/// normals and the level offsets.
fn ring() -> (
    Vec<nalgebra::Point3<f64>>,
    Vec<nalgebra::Vector3<f64>>,
    Vec<usize>,
) {
    let mut points = Vec::new();
    let mut offsets = vec![0];
    for count in [20, 60, 240] {
        for i in 0..count {
            let t = i as f64 / count as f64 * std::f64::consts::TAU + count as f64;
            points.push(nalgebra::Point3::new(0.03 * t.cos(), 0.03 * t.sin(), 0.0));
        }
        offsets.push(points.len());
    }
    let normals = points.iter().map(|p| -p.coords.normalize()).collect();
    (points, normals, offsets)
}

/// One contact cycle (tree traversal, lookups, forces, gradients, reduced forces)
/// allocates nothing after construction, with and without temporal coherence.
#[test]
fn contact_traversal_allocates_nothing() {
    use haptics::contact::{params::ContactParams, ContactShell, Poses, ShellModes, Traversal};
    use haptics::geometry::{MeshDistance, SignedDistanceField};
    use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

    let path = haptics::assets::model("beam3/beam3.obj");
    let mesh = haptics::mesh::read_obj(&path).unwrap();
    let sdf = SignedDistanceField::compute(
        &MeshDistance::new(&mesh).unwrap(),
        32,
        1.5,
        &haptics::progress::NoProgress,
    )
    .unwrap();
    // A deformable ring of points in three levels.
    let (points, normals, offsets) = ring();
    let r = 3;
    let modes = ShellModes {
        r,
        u: (0..points.len() * 3 * r)
            .map(|i| (i % 7) as f32 * 1e-3)
            .collect(),
        dn: (0..points.len() * 3 * r)
            .map(|i| (i % 5) as f32 * 1e-2)
            .collect(),
    };
    let shell = ContactShell::new(points, normals, offsets, Some(modes)).unwrap();
    for tc in [false, true] {
        let params = ContactParams {
            temporal_coherence: tc,
            warm_budget: 200,
            ..ContactParams::default()
        };
        let mut traversal = Traversal::new(&shell, params);
        let mut out = Traversal::output(&shell, 0);
        let before = allocations();
        let mut contacts = 0;
        for i in 0..500 {
            let s = i as f64 / 500.0;
            let poses = Poses {
                shell: Isometry3::from_parts(
                    Translation3::new(0.09 - 0.05 * (3.0 * s).sin(), 0.5, 0.0),
                    UnitQuaternion::from_scaled_axis(Vector3::new(s, 0.0, 2.0 * s)),
                ),
                field: Isometry3::identity(),
                grasp: Point3::origin(),
            };
            let q = [s.sin(), s.cos(), 0.1];
            traversal.run(&shell, &sdf, &poses, &q, &mut out);
            contacts += out.contacts.len();
        }
        let after = allocations();
        assert!(contacts > 0, "the path should touch the beam");
        assert_eq!(
            after - before,
            0,
            "{} allocations in 500 cycles",
            after - before
        );
    }
}

/// Contact against a deformed distance field (thesis 3.12), as the haptic thread makes
/// it: the field deformed to new q, the traversal with its proxy caches and one-lookup
/// culling, and the continuous sweep with a slide, all allocate nothing after
/// construction.
#[test]
fn deformed_field_contact_allocates_nothing() {
    use haptics::contact::continuous::{slide, CycleMotion, ShellSweep, SweepParams};
    use haptics::contact::{
        deformed_field::DeformedDistanceField, params::ContactParams, ContactShell, Poses,
        Traversal,
    };
    use haptics::geometry::{MeshDistance, SignedDistanceField};
    use nalgebra::{DMatrix, Isometry3, Point3, Translation3, UnitQuaternion, Vector3};

    let mesh = haptics::mesh::veg::read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let surf = haptics::mesh::read_obj(&haptics::assets::model("beam3/beam3.obj")).unwrap();
    let sdf = SignedDistanceField::compute(
        &MeshDistance::new(&surf).unwrap(),
        32,
        1.5,
        &haptics::progress::NoProgress,
    )
    .unwrap();
    // Two smooth displacement fields (a bend and a twist along the beam's y axis).
    let n = mesh.vertices.len();
    let basis = DMatrix::from_fn(3 * n, 2, |row, j| {
        let v = mesh.vertices[row / 3];
        match (j, row % 3) {
            (0, 0) => 0.05 * v.y * v.y,
            (1, 0) => -0.2 * v.y * v.z,
            (1, 2) => 0.2 * v.y * v.x,
            _ => 0.0,
        }
    });
    let mut field = DeformedDistanceField::new(
        sdf,
        &mesh,
        &basis,
        std::slice::from_ref(&surf.vertices),
        40,
        5,
    )
    .unwrap();
    // The ring, rolled along the beam's x = 0.06 face.
    let (points, normals, offsets) = ring();
    let shell = ContactShell::new(points, normals, offsets, None).unwrap();
    let params = ContactParams {
        temporal_coherence: false,
        ..ContactParams::default()
    };
    let mut traversal = Traversal::for_field(&shell, params, &field);
    let mut sweep = ShellSweep::for_field(&shell, &field);
    let mut out = Traversal::output(&shell, 2);
    let sweep_params = SweepParams::with_limit(1e-3);
    let grasp = Point3::new(0.0, 0.5, 0.0);
    let (mut contacts, mut blocked) = (0, 0);
    let before = allocations();
    for i in 0..500 {
        let s = i as f64 / 500.0;
        field.update(&[(3.0 * s).sin(), 0.5 * s]);
        let ring = Isometry3::from_parts(
            Translation3::new(0.09 - 0.05 * (3.0 * s).sin(), 0.2 + 0.6 * s, 0.0),
            UnitQuaternion::from_scaled_axis(Vector3::new(s, 0.0, 2.0 * s)),
        );
        let motion = CycleMotion {
            from: Isometry3::translation(grasp.x, grasp.y, grasp.z),
            dx: Vector3::new(0.004, 0.0, 0.0),
            dw: Vector3::new(0.0, 0.01, 0.0),
            grasp,
        };
        let poses = Poses {
            shell: ring,
            field: motion.body_at(0.0),
            grasp,
        };
        traversal.run(&shell, &field, &poses, &[], &mut out);
        contacts += out.contacts.len();
        let r = sweep.first_contact(
            &shell,
            &field,
            &ring,
            &[],
            &motion,
            &sweep_params,
            Some(&traversal),
        );
        if let Some(b) = r.blocking {
            blocked += 1;
            let slid = slide(&motion, r.t, &[b]);
            sweep.continue_contact(&shell, &field, &ring, &[], &slid, &sweep_params);
        }
    }
    let after = allocations();
    assert!(
        contacts > 0 && blocked > 0,
        "{contacts} contacts, {blocked} blocked sweeps"
    );
    assert_eq!(
        after - before,
        0,
        "{} allocations in 500 cycles",
        after - before
    );
}
