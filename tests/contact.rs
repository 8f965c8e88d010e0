//! The contact engine against its identities and references (thesis 3.9-3.12, 4.3):
//! tree traversal equals the tree-less pass over the same levels; BD spheres hold their
//! subtrees for random q; temporal coherence never changes a result; the budget is never
//! exceeded; contact gradients match finite differences of the mirror model exactly and
//! differ from the world-frame derivative by the stated terms; the deformed distance
//! field is continuous and close to the exact distance to the deformed mesh.

use haptics::contact::{
    deformed_field::DeformedDistanceField, distance::DistanceQuery, distance::HalfSpace,
    distance::Lookup, params::ContactParams, ContactOutput, ContactShell, Poses, ShellModes,
    Traversal,
};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::geometry::embed::embed;
use haptics::geometry::{MeshDistance, SignedDistanceField};
use haptics::mesh::{bou::read_bou, read_obj, veg::read_veg, volume::VolumeMesh, SurfaceMesh};
use haptics::reduction::modes::{linear_modes, ModesOptions};
use haptics_devices::rng::SplitMix64;
use nalgebra::{DMatrix, Isometry3, Point3, Translation3, UnitQuaternion, Vector3};
use std::path::PathBuf;

fn model_path(rel: &str) -> PathBuf {
    haptics::assets::asset("models").join(rel)
}

/// A uniform number in [-1, 1).
fn sym(rng: &mut SplitMix64) -> f64 {
    2.0 * rng.next_f64() - 1.0
}

/// A random unit vector (a uniform point of the unit ball, away from its centre, normalized).
fn unit(rng: &mut SplitMix64) -> Vector3<f64> {
    loop {
        let v = Vector3::new(sym(rng), sym(rng), sym(rng));
        if v.norm() > 0.1 && v.norm() < 1.0 {
            return v.normalize();
        }
    }
}

/// Points on a sphere of `radius`, sorted by level: level 0 has `n0` Fibonacci points,
/// each next level 3x the previous total more (cumulative 4x), randomly rotated
/// Fibonacci lattices. Inward normals.
fn sphere_shell_points(
    n0: usize,
    levels: usize,
    radius: f64,
    seed: u64,
) -> (Vec<Point3<f64>>, Vec<Vector3<f64>>, Vec<usize>) {
    let mut rng = SplitMix64::new(seed);
    let mut pts = Vec::new();
    let mut offsets = vec![0];
    let mut add = n0;
    for _ in 0..levels {
        let rot = UnitQuaternion::from_scaled_axis(unit(&mut rng) * 3.0 * rng.next_f64());
        let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
        for i in 0..add {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / add as f64;
            let rho = (1.0 - z * z).sqrt();
            let t = golden * i as f64;
            pts.push(Point3::from(
                rot * Vector3::new(rho * t.cos(), rho * t.sin(), z) * radius,
            ));
        }
        offsets.push(pts.len());
        add = 3 * pts.len();
    }
    let normals = pts.iter().map(|p| -p.coords.normalize()).collect();
    (pts, normals, offsets)
}

fn beam_sdf(resolution: usize) -> (SurfaceMesh, SignedDistanceField) {
    let m = read_obj(&model_path("beam3/beam3.obj")).unwrap();
    let md = MeshDistance::new(&m).unwrap();
    let sdf =
        SignedDistanceField::compute(&md, resolution, 1.5, &haptics::progress::NoProgress).unwrap();
    (m, sdf)
}

fn pose(t: Vector3<f64>, w: Vector3<f64>) -> Isometry3<f64> {
    Isometry3::from_parts(Translation3::from(t), UnitQuaternion::from_scaled_axis(w))
}

fn same(a: &ContactOutput, b: &ContactOutput) -> bool {
    a.contact == b.contact
        && a.contacts == b.contacts
        && a.scale == b.scale
        && a.reduced_force == b.reduced_force
        && a.field_reduced_force == b.field_reduced_force
}

/// A ball of radius 0.03 rolling against the beam at random poses: the tree traversal
/// with an unlimited budget equals the tree-less pass over all points (bit for bit:
/// contacts are summed in point order), and a budgeted traversal that stopped at level n
/// equals the tree-less pass over levels 0..=n.
#[test]
fn tree_traversal_equals_treeless_traversal() {
    let (_, sdf) = beam_sdf(48);
    let (p, n, off) = sphere_shell_points(40, 4, 0.03, 1);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let mut rng = SplitMix64::new(7);
    let mut checked_partial = 0;
    let mut total_contacts = 0;
    for trial in 0..60 {
        // Centres near the beam's surface (x = 0.06 face), so some points touch.
        let c = Vector3::new(
            0.06 + 0.03 * sym(&mut rng),
            rng.next_f64(),
            0.02 * sym(&mut rng),
        );
        let poses = Poses {
            shell: pose(c, unit(&mut rng) * rng.next_f64()),
            field: Isometry3::identity(),
            grasp: Point3::new(0.0, 0.5, 0.0),
        };
        for budget in [usize::MAX / 2, 400, 900, 2500] {
            let params = ContactParams {
                stiffness: 500.0,
                warm_budget: budget,
                temporal_coherence: false,
                ..ContactParams::default()
            };
            let mut tr = Traversal::new(&shell, params);
            let mut out = Traversal::output(&shell, 0);
            // Two cycles, so the second runs with the warm depth of the first.
            tr.run(&shell, &sdf, &poses, &[], &mut out);
            tr.run(&shell, &sdf, &poses, &[], &mut out);
            let mut reference = Traversal::output(&shell, 0);
            let mut tl = Traversal::new(&shell, params);
            tl.run_treeless(
                &shell,
                &sdf,
                &poses,
                &[],
                out.deepest_level + 1,
                &mut reference,
            );
            assert!(
                same(&out, &reference),
                "trial {trial}, budget {budget}: tree {:?} ({} contacts, depth {}) vs tree-less {:?} ({} contacts)",
                out.contact.force,
                out.contacts.len(),
                out.deepest_level,
                reference.contact.force,
                reference.contacts.len()
            );
            if out.deepest_level + 1 < shell.tree.depths() {
                checked_partial += 1;
            }
            total_contacts += out.contacts.len();
        }
    }
    assert!(
        checked_partial > 20,
        "budgets should cut the traversal short sometimes"
    );
    assert!(total_contacts > 500, "the poses should produce contact");
}

/// Random smooth-ish basis on the beam's hex mesh: for random q, every subtree point of
/// every node lies in the node's BD sphere R(q) = R0 + sum a_j |q_j| (positions computed
/// from the same f32 rows the traversal uses; the radii are rounded up).
#[test]
fn bd_spheres_hold_their_subtrees_for_random_q() {
    let mesh = read_veg(&model_path("beam3/beam3.veg")).unwrap();
    let surf = read_obj(&model_path("beam3/beam3.obj")).unwrap();
    let (points, normals, offsets) = surface_shell(&surf, 30, 3, 5);
    let r = 6;
    let mut rng = SplitMix64::new(11);
    let coeffs: Vec<[f64; 6]> = (0..3 * r)
        .map(|_| std::array::from_fn(|_| sym(&mut rng)))
        .collect();
    let basis = DMatrix::from_fn(mesh.num_dofs(), r, |row, j| {
        let x = mesh.vertices[row / 3];
        let c = &coeffs[(row % 3) * r + j];
        0.05 * (c[0] * x.y * x.y
            + c[1] * x.x
            + c[2] * (7.0 * x.y).sin()
            + c[3] * x.z
            + c[4] * x.x * x.y
            + c[5])
    });
    let modes = haptics::contact::shell_modes(&points, &normals, &mesh, &basis, 1e-9).unwrap();
    let shell = ContactShell::new(points, normals, offsets, Some(modes)).unwrap();
    let tree = &shell.tree;
    for _ in 0..20 {
        let q: Vec<f64> = (0..r).map(|_| 3.0 * sym(&mut rng)).collect();
        let qa: Vec<f64> = q.iter().map(|x| x.abs()).collect();
        let mut worst: f64 = 0.0;
        for node in 0..tree.depth_offsets[tree.depths() - 1] {
            let c = shell.position(tree.node_point[node] as usize, &q);
            let radius = tree.radius(node, &qa);
            for k in tree.subtree_points(node) {
                let d = (shell.position(k as usize, &q) - c).norm();
                assert!(
                    d <= radius * (1.0 + 1e-12),
                    "node {node}: point {k} at {d} > R {radius}"
                );
                worst = worst.max(d / radius.max(1e-300));
            }
        }
        // The bound is not vacuous: some subtree point comes close to its sphere.
        assert!(worst > 0.5, "loosest fit {worst}");
    }
}

/// Points on a closed surface mesh: area-weighted random samples per level (cumulative
/// 4x), with inward normals of their triangles. (The particle-repulsion pointshell is
/// tested in tests/pointshell.rs; the tree needs only level-sorted points.)
fn surface_shell(
    m: &SurfaceMesh,
    n0: usize,
    levels: usize,
    seed: u64,
) -> (Vec<Point3<f64>>, Vec<Vector3<f64>>, Vec<usize>) {
    let mut rng = SplitMix64::new(seed);
    let areas: Vec<f64> = (0..m.triangles.len())
        .map(|t| {
            let [a, b, c] = m.triangle(t);
            (b - a).cross(&(c - a)).norm() / 2.0
        })
        .collect();
    let total: f64 = areas.iter().sum();
    let mut pts = Vec::new();
    let mut normals = Vec::new();
    let mut offsets = vec![0];
    let mut add = n0;
    for _ in 0..levels {
        for _ in 0..add {
            let mut x = rng.next_f64() * total;
            let mut t = 0;
            while t + 1 < areas.len() && x > areas[t] {
                x -= areas[t];
                t += 1;
            }
            let [a, b, c] = m.triangle(t);
            let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
            if u + v > 1.0 {
                u = 1.0 - u;
                v = 1.0 - v;
            }
            pts.push(a + (b - a) * u + (c - a) * v);
            normals.push(-(b - a).cross(&(c - a)).normalize());
        }
        offsets.push(pts.len());
        add = 3 * pts.len();
    }
    (pts, normals, offsets)
}

/// A recorded path: the ball approaches the beam from 0.2 m away, slides along it,
/// rotates and leaves.
fn recorded_path(steps: usize) -> Vec<Isometry3<f64>> {
    (0..steps)
        .map(|i| {
            let s = i as f64 / steps as f64;
            let x = 0.3 - 0.28 * (std::f64::consts::PI * s).sin();
            pose(
                Vector3::new(x, 0.2 + 0.5 * s, 0.01 * (9.0 * s).sin()),
                Vector3::new(0.0, 0.0, 4.0 * s),
            )
        })
        .collect()
}

/// Temporal coherence on and off give identical outputs at every step of a recorded
/// path, with an unlimited and with a binding budget (skipped nodes count toward the
/// budget, so depth decisions agree too), and it saves lookups.
#[test]
fn temporal_coherence_never_changes_the_result() {
    let (_, sdf) = beam_sdf(48);
    let (p, n, off) = sphere_shell_points(40, 4, 0.03, 3);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    // 3000 cycles: about 0.2 mm and 1.3 mrad per cycle, a brisk hand at 1 kHz.
    let path = recorded_path(3000);
    for budget in [usize::MAX / 2, 1200] {
        let mk = |tc| {
            let params = ContactParams {
                stiffness: 500.0,
                warm_budget: budget,
                temporal_coherence: tc,
                ..ContactParams::default()
            };
            (Traversal::new(&shell, params), Traversal::output(&shell, 0))
        };
        let (mut on, mut out_on) = mk(true);
        let (mut off, mut out_off) = mk(false);
        let (mut lookups_on, mut lookups_off, mut contacts) = (0, 0, 0);
        // The first 15% of the path stays clear of the beam.
        let (mut approach_on, mut approach_off) = (0, 0);
        for (i, p) in path.iter().enumerate() {
            let poses = Poses {
                shell: *p,
                field: Isometry3::identity(),
                grasp: Point3::origin(),
            };
            on.run(&shell, &sdf, &poses, &[], &mut out_on);
            off.run(&shell, &sdf, &poses, &[], &mut out_off);
            assert!(same(&out_on, &out_off), "step {i}, budget {budget}");
            assert_eq!(out_on.traversed, out_off.traversed);
            lookups_on += out_on.lookups;
            lookups_off += out_off.lookups;
            if i < path.len() * 15 / 100 {
                approach_on += out_on.lookups;
                approach_off += out_off.lookups;
            }
            contacts += out_on.contacts.len();
        }
        assert!(
            contacts > 3000,
            "the path should touch the beam ({contacts})"
        );
        // Away from contact most root spheres are skipped for many cycles; in contact
        // only the culled fringe can be skipped, so the overall saving is smaller.
        assert!(
            (approach_on as f64) < 0.5 * approach_off as f64,
            "approach: {approach_on} lookups with TC vs {approach_off} without"
        );
        assert!(lookups_on < lookups_off);
        println!(
            "budget {budget}: lookups with TC {lookups_on}, without {lookups_off}; approach {approach_on} vs {approach_off}"
        );
    }
}

/// Deformable pointshell: TC identity holds while q changes too (the motion bound
/// includes |U| |dq| and the radius growth).
#[test]
fn temporal_coherence_with_deformation() {
    let (_, sdf) = beam_sdf(40);
    let (p, n, off) = sphere_shell_points(30, 3, 0.03, 5);
    // A synthetic basis on the points: smooth fields of the rest position.
    let r = 4;
    let mut u = Vec::new();
    for x in &p {
        for i in 0..3 {
            for j in 0..r {
                u.push(
                    (0.01 * ((j + 1) as f64 * 40.0 * x[i]).sin() + 0.002 * (i + j) as f64) as f32,
                );
            }
        }
    }
    let modes = ShellModes {
        r,
        dn: vec![0.0; u.len()],
        u,
    };
    let shell = ContactShell::new(p, n, off, Some(modes)).unwrap();
    let path = recorded_path(500);
    let mk = |tc| {
        let params = ContactParams {
            stiffness: 500.0,
            warm_budget: 1000,
            temporal_coherence: tc,
            ..ContactParams::default()
        };
        (Traversal::new(&shell, params), Traversal::output(&shell, 0))
    };
    let (mut on, mut out_on) = mk(true);
    let (mut off, mut out_off) = mk(false);
    let mut contacts = 0;
    for (i, p) in path.iter().enumerate() {
        let t = i as f64 * 0.05;
        let q = [t.sin(), (1.3 * t).cos(), 0.5 * (0.7 * t).sin(), 0.2];
        let poses = Poses {
            shell: *p,
            field: Isometry3::identity(),
            grasp: Point3::origin(),
        };
        on.run(&shell, &sdf, &poses, &q, &mut out_on);
        off.run(&shell, &sdf, &poses, &q, &mut out_off);
        assert!(same(&out_on, &out_off), "step {i}");
        contacts += out_on.contacts.len();
        assert!(out_on.reduced_force.iter().all(|f| f.is_finite()));
    }
    assert!(contacts > 100);
}

/// The node budget is never exceeded (beyond the roots, which are always traversed), and
/// the cold budget applies to levels deeper than last cycle's deepest.
#[test]
fn node_budget_is_never_exceeded() {
    let (_, sdf) = beam_sdf(40);
    let (p, n, off) = sphere_shell_points(50, 4, 0.04, 9);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let roots = shell.tree.depth_offsets[1];
    let mut rng = SplitMix64::new(5);
    for budget in [10, 50, 200, 700, 3000] {
        let params = ContactParams {
            warm_budget: budget,
            ..ContactParams::default()
        };
        let mut tr = Traversal::new(&shell, params);
        let mut out = Traversal::output(&shell, 0);
        let mut prev_deepest = 0;
        for _ in 0..200 {
            let poses = Poses {
                shell: pose(
                    Vector3::new(
                        0.06 + 0.04 * sym(&mut rng),
                        rng.next_f64(),
                        0.03 * sym(&mut rng),
                    ),
                    unit(&mut rng),
                ),
                field: Isometry3::identity(),
                grasp: Point3::origin(),
            };
            tr.run(&shell, &sdf, &poses, &[], &mut out);
            assert!(
                out.traversed <= budget.max(roots),
                "{} > {budget}",
                out.traversed
            );
            if out.deepest_level > prev_deepest {
                let cold = ((budget.max(roots) as f64) * 0.8) as usize;
                assert!(out.traversed <= cold.max(roots));
            }
            prev_deepest = out.deepest_level;
        }
    }
}

/// Contact on a plane through the full traversal: the analytic gradients (4.11-4.12)
/// equal central differences of the mirror model (the shell moved by the inverse motion,
/// forces read in the field frame) to 1e-6 k; the world-frame derivative (the field moved,
/// the grasp point with it) differs from them by exactly [F]x in dF/dw and [T]x in dT/dw;
/// on a curved field (a ball) the extra error from dd/dp != N is reported and bounded.
#[test]
fn contact_gradients_against_finite_differences() {
    // A flat patch whose inward normal is the plane's normal, so dd/dp = N exactly.
    let mut rng = SplitMix64::new(13);
    let plane_n = Vector3::new(0.1, 0.2, 1.0).normalize();
    let (mut p, mut off) = (Vec::new(), vec![0]);
    for count in [30, 90, 360] {
        for _ in 0..count {
            p.push(Point3::new(0.05 * sym(&mut rng), 0.05 * sym(&mut rng), 0.0));
        }
        off.push(p.len());
    }
    let n = vec![Vector3::z(); p.len()];
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let k = 800.0;
    let params = ContactParams {
        stiffness: k,
        max_unscaled_contacts: 1_000_000,
        warm_budget: usize::MAX / 2,
        temporal_coherence: false,
        ..ContactParams::default()
    };
    let plane = HalfSpace {
        normal: nalgebra::Unit::new_normalize(Vector3::new(0.1, 0.2, 1.0)),
        offset: 0.0,
    };
    // Body z turned onto the plane normal, the patch 2 mm below the plane, spun about it.
    let align = UnitQuaternion::rotation_between(&Vector3::z(), &plane_n).unwrap();
    let shell_pose = Isometry3::from_parts(
        Translation3::from(-0.002 * plane_n + Vector3::new(0.01, -0.02, 0.0)),
        align * UnitQuaternion::from_scaled_axis(Vector3::z() * 0.7),
    );
    let grasp = Point3::new(0.02, 0.01, -0.1);
    let eval = |field: &dyn DistanceQuery,
                shell_pose: Isometry3<f64>,
                field_pose: Isometry3<f64>,
                grasp: Point3<f64>| {
        let mut tr = Traversal::new(&shell, params);
        let mut out = Traversal::output(&shell, 0);
        let poses = Poses {
            shell: shell_pose,
            field: field_pose,
            grasp,
        };
        tr.run(&shell, &field, &poses, &[], &mut out);
        out
    };
    let base = eval(&plane, shell_pose, Isometry3::identity(), grasp);
    let l = base.contacts.len();
    assert!(l > 20, "{l} contacts");
    let h = 1e-7;
    // Field moved by (dx, dw) about the grasp point.
    let field_motion = |dx: Vector3<f64>, dw: Vector3<f64>| {
        Isometry3::translation(dx.x, dx.y, dx.z)
            * Isometry3::translation(grasp.x, grasp.y, grasp.z)
            * pose(Vector3::zeros(), dw)
            * Isometry3::translation(-grasp.x, -grasp.y, -grasp.z)
    };
    let c = &base.contact;
    let cw = base.contact.world_frame();
    let mut mirror_err: f64 = 0.0;
    let mut world_err: f64 = 0.0;
    for a in 0..3 {
        let e = Vector3::ith(a, h);
        for (dx, dw, is_rot) in [(e, Vector3::zeros(), false), (Vector3::zeros(), e, true)] {
            let fd = |sign: f64| {
                let m = field_motion(dx * sign, dw * sign);
                // Mirror: the shell moves by the inverse motion, the field stays; forces are
                // then read in the field's frame.
                let mirror = eval(
                    &plane,
                    m.inverse() * shell_pose,
                    Isometry3::identity(),
                    grasp,
                );
                // World: the field moves, the grasp point with it.
                let world = eval(&plane, shell_pose, m, m * grasp);
                assert_eq!(
                    mirror.contacts.len(),
                    l,
                    "contact set changed under the perturbation"
                );
                assert_eq!(world.contacts.len(), l);
                (mirror.contact, world.contact)
            };
            let ((mp, wp), (mm, wm)) = (fd(1.0), fd(-1.0));
            let dfm = (mp.force - mm.force) / (2.0 * h);
            let dtm = (mp.torque - mm.torque) / (2.0 * h);
            let dfw = (wp.force - wm.force) / (2.0 * h);
            let dtw = (wp.torque - wm.torque) / (2.0 * h);
            let (af, at) = if is_rot {
                (
                    c.dforce_dw.column(a).into_owned(),
                    c.dtorque_dw.column(a).into_owned(),
                )
            } else {
                (
                    c.dforce_dx.column(a).into_owned(),
                    c.dtorque_dx.column(a).into_owned(),
                )
            };
            mirror_err = mirror_err.max((dfm - af).norm()).max((dtm - at).norm());
            // World frame: the force does not turn with the field.
            let (wf, wt) = if is_rot {
                (
                    cw.dforce_dw.column(a).into_owned(),
                    cw.dtorque_dw.column(a).into_owned(),
                )
            } else {
                (
                    cw.dforce_dx.column(a).into_owned(),
                    cw.dtorque_dx.column(a).into_owned(),
                )
            };
            world_err = world_err.max((dfw - wf).norm()).max((dtw - wt).norm());
        }
    }
    // Entries are of order k |r| ~ 100; FD error ~ 1e-16 |F| / h ~ 1e-8 plus h k ~ 1e-4
    // from the second derivative in rotations; 1e-6 k = 8e-4.
    assert!(mirror_err < 1e-6 * k, "mirror model FD error {mirror_err}");
    assert!(world_err < 1e-6 * k, "world-frame FD error {world_err}");
    println!("plane: mirror FD error {mirror_err:.2e}, world-frame FD error {world_err:.2e}");

    // A curved field: a ball of radius 0.2, where dd/dp (radial) differs from the
    // pointshell normals. The approximation error relative to |dF/dx| is reported and
    // must stay modest for shallow contact.
    struct Ball(f64);
    impl DistanceQuery for Ball {
        fn distance(&self, p: &Point3<f64>) -> f64 {
            p.coords.norm() - self.0
        }
    }
    let ball = Ball(0.2);
    let (p, n, off) = sphere_shell_points(60, 3, 0.05, 13);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let eval = |field: &dyn DistanceQuery, shell_pose: Isometry3<f64>| {
        let mut tr = Traversal::new(&shell, params);
        let mut out = Traversal::output(&shell, 0);
        let poses = Poses {
            shell: shell_pose,
            field: Isometry3::identity(),
            grasp,
        };
        tr.run(&shell, &field, &poses, &[], &mut out);
        out
    };
    let shell_pose = pose(Vector3::new(0.0, 0.0, 0.245), Vector3::new(0.2, 0.1, 0.0));
    let base = eval(&ball, shell_pose);
    assert!(base.contacts.len() > 5);
    let mut worst: f64 = 0.0;
    for a in 0..3 {
        let e = Vector3::ith(a, 1e-7);
        let p = eval(
            &ball,
            field_motion(e, Vector3::zeros()).inverse() * shell_pose,
        );
        let m = eval(
            &ball,
            field_motion(-e, Vector3::zeros()).inverse() * shell_pose,
        );
        let fd = (p.contact.force - m.contact.force) / 2e-7;
        worst = worst
            .max((fd - base.contact.dforce_dx.column(a)).norm() / base.contact.dforce_dx.norm());
    }
    println!("ball: relative error of dF/dx from dd/dp ~ N: {worst:.3}");
    // The model takes dd/dp as the pointshell normal N and drops the field's curvature.
    // Here N turns up to 29 degrees from the ball's radial gradient, at the rim of the
    // contact patch, where the depth and so the force vanish; the curvature term is
    // depth / R = 0.005 / 0.2 = 0.025 relative. Force-weighted, the two come to 0.059;
    // 0.1 holds that with margin, while a wrong sign or a missing term (an error of
    // order 1) fails.
    assert!(worst < 0.1, "dF/dx relative error {worst}");
}

/// Linear modes of the cantilevered beam, and the beam's rest SDF.
fn beam_modes(r: usize) -> (VolumeMesh, SurfaceMesh, DMatrix<f64>) {
    let mesh = read_veg(&model_path("beam3/beam3.veg")).unwrap();
    let surf = read_obj(&model_path("beam3/beam3.obj")).unwrap();
    let fixed_vertices =
        read_bou(&model_path("beam3/beam3.bou"), Some(mesh.vertices.len())).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let mut fixed = vec![false; model.num_dofs()];
    for &v in &fixed_vertices {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let opts = ModesOptions {
        count: r,
        unconstrained: false,
        tolerance: 1e-10,
    };
    let modes = linear_modes(&k, &m, &fixed, &model.rest_positions, &opts).unwrap();
    (mesh, surf, modes.vectors)
}

/// The beam's r = 4 modes and its deformed distance field (rest field of `resolution`
/// cells, 40 proxies, k = 5), with the simulation mesh and the surface.
fn beam_field(resolution: usize) -> (VolumeMesh, SurfaceMesh, DMatrix<f64>, DeformedDistanceField) {
    let (mesh, surf, basis) = beam_modes(4);
    let (_, sdf) = beam_sdf(resolution);
    let field = DeformedDistanceField::new(
        sdf,
        &mesh,
        &basis,
        std::slice::from_ref(&surf.vertices),
        40,
        5,
    )
    .unwrap();
    (mesh, surf, basis, field)
}

/// The deformed distance field of the bent beam: continuous along lines in x and in q
/// (no jumps when the nearest proxies change), and close to the exact distance to the
/// deformed surface mesh near it.
#[test]
fn deformed_distance_field_is_continuous_and_accurate() {
    let (mesh, surf, basis, mut field) = beam_field(64);
    // A moderate bend: tip displacement about 10% of the length.
    let emb = embed(&surf.vertices, &mesh).unwrap();
    let disp_of = |q: &[f64]| -> Vec<Vector3<f64>> {
        let u: Vec<Vector3<f64>> = (0..mesh.vertices.len())
            .map(|v| {
                Vector3::from_fn(|i, _| (0..q.len()).map(|j| basis[(3 * v + i, j)] * q[j]).sum())
            })
            .collect();
        emb.interpolation.interpolate(&u)
    };
    let mut q = vec![0.0; 4];
    let unit_tip = disp_of(&[1.0, 0.0, 0.0, 0.0])
        .iter()
        .map(|d| d.norm())
        .fold(0.0, f64::max);
    q[0] = 0.1 / unit_tip;
    q[1] = 0.3 * q[0];
    field.update(&q);
    let disp = disp_of(&q);
    let max_disp = disp.iter().map(|d| d.norm()).fold(0.0, f64::max);
    assert!(
        max_disp > 0.08 && max_disp < 0.2,
        "max displacement {max_disp}"
    );
    let deformed = SurfaceMesh {
        vertices: surf
            .vertices
            .iter()
            .zip(&disp)
            .map(|(p, d)| p + d)
            .collect(),
        triangles: surf.triangles.clone(),
    };
    let exact = MeshDistance::new(&deformed).unwrap();

    // Accuracy near the deformed surface: points at +-5 mm along the exact normal.
    let mut rng = SplitMix64::new(21);
    let (mut worst, mut sum, mut count) = (0f64, 0.0, 0);
    for _ in 0..400 {
        let v =
            (rng.next_f64() * deformed.vertices.len() as f64) as usize % deformed.vertices.len();
        let x = deformed.vertices[v] + unit(&mut rng) * 0.005;
        let e = exact.signed_distance(&x);
        let a = field.distance(&x);
        worst = worst.max((a - e).abs());
        sum += (a - e).abs();
        count += 1;
    }
    println!(
        "deformed field: max error {worst:.2e} m, mean {:.2e} m, max displacement {max_disp:.3} m",
        sum / count as f64
    );
    // Grid spacing of the rest field is 1.5/64 m ~ 0.023 m; the pull-back through a
    // local affine map is first-order in the strain, and the beam's strains are small:
    // 9.3 mm at worst and 3.0 mm on average within 5 mm of the 0.104 m deflected surface,
    // under half a grid cell. Held to a tenth of the displacement at worst and 4% on
    // average (a field that ignored the deformation would be off by the displacement).
    assert!(worst < 0.1 * max_disp, "max error {worst}");
    assert!(
        sum / (count as f64) < 0.04 * max_disp,
        "mean error {}",
        sum / count as f64
    );

    // Continuity along a line through the beam (in x) and along a path in q.
    let a = Point3::new(-0.1, 0.7, 0.0);
    let b = Point3::new(0.15, 0.95, 0.03);
    let steps = 20_000;
    let step = (b - a).norm() / steps as f64;
    let mut prev = field.distance(&a);
    let mut max_jump: f64 = 0.0;
    for i in 1..=steps {
        let x = a + (b - a) * (i as f64 / steps as f64);
        let d = field.distance(&x);
        max_jump = max_jump.max((d - prev).abs());
        prev = d;
    }
    // A jump (the k-nearest set changing with nonzero weight) would be of order of the
    // proxies' distance differences, ~1e-2; a continuous field moves by at most a few
    // times the step (1.8e-5 m) per step.
    assert!(max_jump < 5.0 * step, "jump {max_jump:e} for step {step:e}");
    let x = Point3::new(0.05, 0.8, 0.01);
    let mut prev = field.distance(&x);
    let mut max_jump_q: f64 = 0.0;
    for i in 1..=5000 {
        let s = i as f64 / 5000.0;
        let qs: Vec<f64> = q.iter().map(|v| v * (1.0 - 2.0 * s)).collect();
        field.update(&qs);
        let d = field.distance(&x);
        max_jump_q = max_jump_q.max((d - prev).abs());
        prev = d;
    }
    // The whole path moves the tip by 0.2 m in 5000 steps: 4e-5 m per step.
    assert!(max_jump_q < 2e-4, "jump in q {max_jump_q:e}");
}

/// The deformed field's proxy-free culling bound (the rest field at the query point,
/// less the proxies' largest displacement and inverse-gradient deviation times the k-th
/// proxy distance) is a lower bound of the distance wherever the point and the object
/// have moved since its cache was filled (200 points, 300 steps from 10 um to 10 cm,
/// bends up to a tenth of the beam's length and jolts), equals the rest field (to 1e-8)
/// on the undeformed object, and is tight enough to cull: while the beam is slightly
/// bent it is within 1 mm of the distance at 90% of the points.
#[test]
fn proxy_free_bound_is_a_lower_bound() {
    let (.., mut field) = beam_field(48);
    let mut rng = SplitMix64::new(17);
    let mut points: Vec<Point3<f64>> = (0..200)
        .map(|_| {
            Point3::new(
                0.5 * sym(&mut rng),
                -0.3 + 2.1 * rng.next_f64(),
                0.5 * sym(&mut rng),
            )
        })
        .collect();
    let mut caches = vec![haptics::contact::distance::ProxyCache::default(); points.len()];
    // Undeformed, a fresh cache: the rest field, less the rounding margin.
    field.update(&[0.0; 4]);
    for (x, cache) in points.iter().zip(&mut caches) {
        assert!(field.proxy_free_bound(x, cache).is_none(), "an empty cache");
        field.distance_cached(x, cache);
        let b = field.proxy_free_bound(x, cache).unwrap();
        let rest = field.rest_field().lookup(x);
        // The bound keeps a rounding margin of 1e-9 of the distance, the k-th proxy
        // distance and a cell (a few units here).
        assert!(b <= rest && rest - b < 1e-8, "{b} vs {rest}");
    }
    let mut q = [0.0f64; 4];
    let (mut checked, mut tight, mut gaps) = (0usize, 0usize, Vec::new());
    for step in 0..300 {
        // A slight bend for 100 steps (tip motion of micrometres), then bends of up to a
        // tenth of the beam's length, with jolts.
        let jolt = match step {
            0..100 => 1e-6,
            _ if step % 61 == 0 => 0.5,
            _ => 0.002,
        };
        for v in q.iter_mut() {
            *v = (*v + jolt * sym(&mut rng)).clamp(-3.0, 3.0);
        }
        field.update(&q);
        for (x, cache) in points.iter_mut().zip(&mut caches) {
            *x += unit(&mut rng) * 10f64.powf(-5.0 + 4.0 * rng.next_f64());
            let d = field.distance(x);
            let b = field.proxy_free_bound(x, cache).unwrap();
            assert!(
                b <= d,
                "step {step}: bound {b} above the distance {d} at {x}"
            );
            checked += 1;
            if step < 100 {
                gaps.push(d - b);
                if d - b < 1e-3 {
                    tight += 1;
                }
            }
            // Refill now and then, as the traversal's exact lookups do.
            if rng.next_f64() < 0.1 {
                field.distance_cached(x, cache);
            }
        }
    }
    gaps.sort_by(f64::total_cmp);
    println!(
        "proxy-free bound: {checked} checked; slightly bent: {tight} of {} within 1 mm, median gap {:e}",
        gaps.len(),
        gaps[gaps.len() / 2]
    );
    assert!(
        tight * 10 > gaps.len() * 9,
        "{tight} of {} within 1 mm",
        gaps.len()
    );
}

/// The proxy cache answers bit for bit what the scan of every proxy answers, while
/// points wander (steps from 10 um to 10 cm, so many caches are used and many expire)
/// and the beam deforms between queries, and the traversal with caches equals the one
/// without at every cycle of a recorded path over the bending beam.
#[test]
fn proxy_cache_answers_bit_for_bit() {
    let (.., mut field) = beam_field(48);
    assert!(field.uses_proxy_cache());
    let mut rng = SplitMix64::new(5);
    let mut points: Vec<Point3<f64>> = (0..200)
        .map(|_| {
            Point3::new(
                0.1 * sym(&mut rng),
                1.5 * rng.next_f64(),
                0.1 * sym(&mut rng),
            )
        })
        .collect();
    let mut caches = vec![haptics::contact::distance::ProxyCache::default(); points.len()];
    let mut q = [0.0f64; 4];
    let (mut hits, mut scans, mut bounded) = (0usize, 0usize, 0usize);
    for step in 0..400 {
        // The beam bends slowly, with an occasional jolt.
        let jolt = if step % 97 == 0 { 0.5 } else { 0.001 };
        for v in q.iter_mut() {
            *v = (*v + jolt * sym(&mut rng)).clamp(-3.0, 3.0);
        }
        field.update(&q);
        for (x, cache) in points.iter_mut().zip(&mut caches) {
            let size = 10f64.powf(-5.0 + 4.0 * rng.next_f64());
            *x += unit(&mut rng) * size;
            let before = cache.anchor();
            let d = field.distance_cached(x, cache);
            assert_eq!(
                d.to_bits(),
                field.distance(x).to_bits(),
                "step {step} at {x}"
            );
            // The one-lookup lower bound: below the distance, above what was asked.
            let above = d - 10f64.powf(-5.0 + 4.0 * rng.next_f64());
            match field.distance_above_cached(x, above, cache) {
                Lookup::Exact(e) => assert_eq!(e.to_bits(), d.to_bits()),
                Lookup::Above(b) => {
                    assert!(
                        b > above && b <= d,
                        "bound {b}, distance {d}, above {above}"
                    );
                    bounded += 1;
                }
            }
            if before.is_some() && cache.anchor() == before {
                hits += 1;
            } else {
                scans += 1;
            }
            let f = unit(&mut rng);
            let (mut a, mut b) = (vec![0.0; 4], vec![0.0; 4]);
            field.add_reduced_force_cached(x, &f, &mut a, cache);
            field.add_reduced_force(x, &f, &mut b);
            assert_eq!(a, b, "reduced force, step {step}");
        }
    }
    println!("proxy cache: {hits} hits, {scans} scans; {bounded} answered by the bound");
    assert!(bounded > 5_000, "{bounded} answered by the bound");
    // Both paths are exercised: most small steps keep their proxies, large ones do not.
    assert!(
        hits > 20_000 && scans > 10_000,
        "{hits} hits, {scans} scans"
    );

    // The traversal with caches (and a clone of the field: its caches are its own).
    let (p, n, off) = sphere_shell_points(40, 4, 0.03, 9);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let params = ContactParams {
        stiffness: 500.0,
        temporal_coherence: false,
        ..ContactParams::default()
    };
    let mut cached = Traversal::for_field(&shell, params, &field);
    let mut plain = Traversal::new(&shell, params);
    let (mut out_c, mut out_p) = (Traversal::output(&shell, 4), Traversal::output(&shell, 4));
    let mut contacts = 0;
    for (i, p) in recorded_path(1500).iter().enumerate() {
        let s = i as f64 / 1500.0;
        field.update(&[1.5 * (7.0 * s).sin(), 0.5 * s, 0.0, 0.2]);
        let poses = Poses {
            shell: *p,
            field: Isometry3::identity(),
            grasp: Point3::new(0.0, 0.5, 0.0),
        };
        let clone = field.clone();
        let f: &DeformedDistanceField = if i % 300 == 150 { &clone } else { &field };
        cached.run(&shell, f, &poses, &[], &mut out_c);
        plain.run(&shell, f, &poses, &[], &mut out_p);
        assert!(same(&out_c, &out_p), "cycle {i}");
        contacts += out_c.contacts.len();
    }
    assert!(
        contacts > 1000,
        "the path should touch the beam ({contacts})"
    );
}

/// The continuous sweep's candidate search takes the distances the traversal of the same
/// cycle looked up (same pose, same q) instead of looking them up again: the result is
/// the same, bit for bit and evaluation for evaluation, as a sweep that looks up all of
/// its points itself, against a rigid and a deformed field, over random motions near the
/// beam.
#[test]
fn sweep_shares_the_traversals_lookups_bit_for_bit() {
    use haptics::contact::continuous::{slide, CycleMotion, ShellSweep, SweepParams, SweepResult};
    let (.., mut deformed) = beam_field(48);
    let sdf = deformed.rest_field().clone();
    deformed.update(&[0.005, -0.002, 0.001, 0.0]);
    let (p, n, off) = sphere_shell_points(40, 4, 0.03, 11);
    let shell = ContactShell::new(p, n, off, None).unwrap();
    let params = ContactParams {
        stiffness: 500.0,
        temporal_coherence: false,
        ..ContactParams::default()
    };
    fn check<D: DistanceQuery>(
        field: &D,
        shell: &ContactShell,
        params: ContactParams,
        seed: u64,
    ) -> (usize, usize) {
        let mut rng = SplitMix64::new(seed);
        let mut slides = 0;
        let mut tr = Traversal::for_field(shell, params, field);
        let mut out = Traversal::output(shell, field.reduced_dim());
        let (mut shared, mut own) = (ShellSweep::for_field(shell, field), ShellSweep::new(shell));
        let sweep_params = SweepParams::with_limit(0.002);
        let mut total_shared = 0;
        for trial in 0..300 {
            // The held beam's body at `from`, the ball near its x = 0.06 face.
            let from = pose(
                Vector3::new(0.01 * sym(&mut rng), 0.5 + 0.01 * sym(&mut rng), 0.0),
                unit(&mut rng) * 0.02 * rng.next_f64(),
            );
            let ball = pose(
                Vector3::new(0.085 + 0.01 * sym(&mut rng), 0.5 + 0.3 * sym(&mut rng), 0.0),
                Vector3::zeros(),
            );
            let grasp = Point3::new(0.0, 0.5, 0.0);
            let motion = CycleMotion {
                from: from * Translation3::from(grasp.coords),
                dx: unit(&mut rng) * 0.02 * rng.next_f64(),
                dw: unit(&mut rng) * 0.2 * rng.next_f64(),
                grasp,
            };
            let poses = Poses {
                shell: ball,
                field: motion.body_at(0.0),
                grasp: Point3::from(motion.from.translation.vector),
            };
            tr.run(shell, field, &poses, &[], &mut out);
            let a =
                shared.first_contact(shell, field, &ball, &[], &motion, &sweep_params, Some(&tr));
            let b = own.first_contact(shell, field, &ball, &[], &motion, &sweep_params, None);
            assert_eq!(b.shared, 0);
            total_shared += a.shared;
            assert_eq!(SweepResult { shared: 0, ..a }, b, "trial {trial}");
            // A slide of the rest: from where it stopped (often at once, where the kept
            // distances and normals are reused), against the same sweep made afresh.
            // Up to three slides, as the haptic loop makes.
            let (mut last, mut current, mut met) = (a, motion, Vec::new());
            for _ in 0..3 {
                let Some(blocking) = last.blocking else {
                    break;
                };
                met.push(blocking);
                current = slide(&current, last.t, &met);
                let a = shared.continue_contact(shell, field, &ball, &[], &current, &sweep_params);
                own.forget_distances();
                let b = own.continue_contact(shell, field, &ball, &[], &current, &sweep_params);
                assert_eq!(b.shared, 0);
                total_shared += a.shared;
                slides += usize::from(a.shared > 0);
                assert_eq!(
                    SweepResult { shared: 0, ..a },
                    b,
                    "slide, trial {trial}, seed {seed}"
                );
                last = a;
            }
        }
        (total_shared, slides)
    }
    let rigid = check(&sdf, &shell, params, 3);
    let soft = check(&deformed, &shell, params, 4);
    println!("shared lookups and reusing slides: rigid {rigid:?}, deformed {soft:?}");
    assert!(
        rigid.0 > 1000 && soft.0 > 1000,
        "rigid {rigid:?}, deformed {soft:?}"
    );
    assert!(
        rigid.1 > 10 && soft.1 > 10,
        "rigid {rigid:?}, deformed {soft:?}"
    );
}
