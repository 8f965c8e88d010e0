//! Reduced StVK: the polynomial equals the projected full forces and stiffness, the
//! reduced Newmark step conserves energy without damping, divergence is caught, and
//! Vega's precomputed real-time bridge simulates.

use haptics::dynamics::{NewmarkParams, ReducedNewmark, ReducedParams, StepEvent};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{box_tet_mesh, vertices_where, volume::Material};
use haptics::reduction::evaluator::ReducedForces;
use haptics::reduction::modes::{linear_modes, ModesOptions};
use haptics::reduction::precompute::reduced_polynomial;
use haptics::reduction::vega::read_cub;
use haptics_devices::rng::SplitMix64;
use nalgebra::{DMatrix, DVector, Point3, Vector3};

/// A clamped tet beam and its first r mass-orthonormal linear modes.
fn beam_and_modes(r: usize) -> (FemModel, DMatrix<f64>) {
    let mesh = box_tet_mesh(
        Vector3::new(1.0, 0.2, 0.1),
        [10, 2, 1],
        Point3::origin(),
        Material::new("m", 1000.0, 1e6, 0.4),
    );
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
    let mut fixed = vec![false; model.num_dofs()];
    for v in clamped {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let modes = linear_modes(
        &k,
        &m,
        &fixed,
        &model.rest_positions,
        &ModesOptions {
            count: r,
            unconstrained: false,
            tolerance: 1e-10,
        },
    )
    .unwrap();
    (model, modes.vectors)
}

#[test]
fn reduced_forces_and_stiffness_equal_projected_full_ones() {
    let r = 8;
    let (model, u) = beam_and_modes(r);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    let ev = ReducedForces::new(&poly, r).unwrap();
    let n = model.num_dofs();
    let mut rng = SplitMix64::new(5);
    let mut rnd = || rng.next_f64() - 0.5;
    for trial in 0..5 {
        // Scale q so the largest vertex displacement is 30% of the beam length: large
        // deformation, where the cubic and quadratic terms dominate.
        let mut q = DVector::from_fn(r, |_, _| rnd());
        let x = &u * &q;
        let max_disp = (0..n / 3)
            .map(|v| x.fixed_rows::<3>(3 * v).norm())
            .fold(0.0, f64::max);
        q *= 0.3 / max_disp;
        let x = &u * &q;
        let mut f = vec![0.0; n];
        let mut k = model.new_matrix();
        model.forces_and_stiffness(x.as_slice(), &mut f, &mut k);
        let rf = u.transpose() * DVector::from_vec(f);
        let kd = k.to_dense();
        let rk = u.transpose() * kd * &u;
        let (mut fr, mut kr) = (vec![0.0; r], vec![0.0; r * r]);
        ev.evaluate(q.as_slice(), &mut fr, &mut kr, &mut ev.scratch());
        let ferr = (DVector::from_vec(fr) - &rf).norm() / rf.norm();
        let kerr = (DMatrix::from_column_slice(r, r, &kr) - &rk).norm() / rk.norm();
        // Exact polynomial identities; rounding of sums over ~400 elements: 1e-10 allowed.
        assert!(ferr < 1e-10, "trial {trial}: force relative error {ferr:e}");
        assert!(
            kerr < 1e-10,
            "trial {trial}: stiffness relative error {kerr:e}"
        );
    }
}

#[test]
fn undamped_reduced_motion_conserves_energy() {
    let r = 6;
    let (model, u) = beam_and_modes(r);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        newton_iterations: 8,
        ..ReducedParams::default()
    };
    let mut sim = ReducedNewmark::new(ReducedForces::new(&poly, r).unwrap(), params);
    // Small amplitude: an initial velocity in the first mode.
    sim.qvel[0] = 0.01;
    let e0 = sim.energy();
    let zero = vec![0.0; r];
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        assert_eq!(sim.step(&zero), StepEvent::Ok);
        worst = worst.max((sim.energy() - e0).abs() / e0);
    }
    eprintln!("relative energy drift {worst:e}");
    // The average-acceleration rule is exactly conservative for linear systems; at small
    // amplitude the cubic terms perturb that slightly (2e-9 measured): 1e-6 allowed.
    assert!(worst < 1e-6, "energy drift {worst:e}");
}

#[test]
fn divergence_is_detected_and_the_object_reset() {
    let r = 4;
    let (model, u) = beam_and_modes(r);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    let mut sim = ReducedNewmark::new(
        ReducedForces::new(&poly, r).unwrap(),
        ReducedParams::default(),
    );
    let huge = vec![1e30; r];
    let mut events = Vec::new();
    for _ in 0..5 {
        events.push(sim.step(&huge));
    }
    assert!(events.contains(&StepEvent::DivergedAndReset), "{events:?}");
    assert!(sim.q.iter().all(|x| x.is_finite()));
    assert!(sim.resets > 0);
    let nan = vec![f64::NAN; r];
    assert_eq!(sim.step(&nan), StepEvent::DivergedAndReset);
    assert!(sim.q.iter().all(|x| *x == 0.0));
}

#[test]
fn vegas_realtime_bridge_simulates_stably() {
    let cub = read_cub(&haptics::assets::model(
        "vega-realtime-bridge/simpleBridge.cub",
    ))
    .unwrap();
    let r = cub.r;
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        damping_stiffness: 0.01,
        ..ReducedParams::default()
    };
    let mut sim = ReducedNewmark::new(ReducedForces::new(&cub, r).unwrap(), params);
    // Push along the first mode for 100 ms, then let go.
    let mut f = vec![0.0; r];
    let stiffness0 = cub.linear[0];
    let energy = |sim: &ReducedNewmark| sim.energy();
    let mut after_release = 0.0;
    for s in 0..2000 {
        f[0] = if s < 100 { 0.5 * stiffness0 } else { 0.0 };
        assert_eq!(sim.step(&f), StepEvent::Ok, "step {s}");
        if s == 100 {
            after_release = energy(&sim);
        }
    }
    assert!(sim.q.iter().all(|x| x.is_finite()));
    assert!(after_release > 0.0);
    // Stiffness damping (0.01) removes energy from the free motion: over 1.9 s more
    // than half of it is gone (without damping the energy would stay constant).
    let end = energy(&sim);
    eprintln!("energy after release {after_release:e}, at 2 s {end:e}");
    assert!(end < 0.5 * after_release, "{end} vs {after_release}");
}

#[test]
fn evaluating_vegas_cub_equals_direct_term_by_term_evaluation() {
    let cub = read_cub(&haptics::assets::model(
        "vega-realtime-bridge/simpleBridge.cub",
    ))
    .unwrap();
    let r = cub.r;
    let ev = ReducedForces::new(&cub, r).unwrap();
    let mut scratch = ev.scratch();
    // Amplitudes reached in the simulation test above (|q| of a few units).
    for trial in 0..5 {
        let q: Vec<f64> = (0..r)
            .map(|i| 2.0 * ((i * 7 + trial * 3) as f64).sin())
            .collect();
        let (mut f, mut k) = (vec![0.0; r], vec![0.0; r * r]);
        ev.evaluate(&q, &mut f, &mut k, &mut scratch);
        let direct = cub.evaluate_direct(&q);
        let scale = direct.iter().map(|v| v * v).sum::<f64>().sqrt();
        let err = f
            .iter()
            .zip(&direct)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
            / scale;
        // The evaluator rebuilds the symmetric energy tensors from Vega's packed force
        // coefficients; Vega's polynomial is a gradient up to its rounding, so only
        // rounding separates the two.
        assert!(err < 1e-10, "trial {trial}: relative difference {err:e}");
    }
}

#[test]
fn material_group_polynomials_combine_to_the_full_one_and_follow_material_edits() {
    use haptics::reduction::precompute::MaterialGroupPolynomials;
    // Two material groups: the first and second halves of the beam.
    let r = 5;
    let (model, u) = beam_and_modes(r);
    let mut mesh = box_tet_mesh(
        Vector3::new(1.0, 0.2, 0.1),
        [10, 2, 1],
        Point3::origin(),
        Material::new("soft", 1000.0, 1e6, 0.4),
    );
    mesh.materials.push(Material::new("hard", 1000.0, 5e6, 0.3));
    for (e, el) in mesh.connectivity.chunks_exact(4).enumerate() {
        let cx: f64 = el.iter().map(|&v| mesh.vertices[v].x).sum::<f64>() / 4.0;
        mesh.element_material[e] = usize::from(cx > 0.5);
    }
    let two = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let groups = MaterialGroupPolynomials::compute(&two, &u, faer::Par::Seq).unwrap();
    assert_eq!(groups.names, vec!["soft".to_string(), "hard".to_string()]);
    let lame: Vec<(f64, f64)> = mesh
        .materials
        .iter()
        .map(|m| (m.lambda(), m.mu()))
        .collect();
    let combined = groups.combine(&lame);
    let (direct, _) = reduced_polynomial(&two, &u, faer::Par::Seq).unwrap();
    let close = |a: &haptics::reduction::polynomial::CubicPolynomial,
                 b: &haptics::reduction::polynomial::CubicPolynomial| {
        let scale = b
            .cubic
            .iter()
            .chain(&b.linear)
            .map(|v| v.abs())
            .fold(0.0, f64::max);
        a.linear
            .iter()
            .chain(&a.quadratic)
            .chain(&a.cubic)
            .zip(b.linear.iter().chain(&b.quadratic).chain(&b.cubic))
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
            / scale
    };
    // Linear in (lambda, mu) per element: exact up to rounding.
    assert!(close(&combined, &direct) < 1e-12);
    // Editing the hard group's Young's modulus at run time equals re-baking.
    mesh.materials[1].youngs_modulus = 2e7;
    let edited = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let (rebaked, _) = reduced_polynomial(&edited, &u, faer::Par::Seq).unwrap();
    let lame: Vec<(f64, f64)> = mesh
        .materials
        .iter()
        .map(|m| (m.lambda(), m.mu()))
        .collect();
    assert!(close(&groups.combine(&lame), &rebaked) < 1e-12);
    let _ = model;
}

#[test]
fn render_basis_interpolates_the_simulation_basis() {
    use haptics::geometry::embed::embed;
    use haptics::reduction::basis::render_basis;
    let r = 4;
    let (model, u) = beam_and_modes(r);
    let mesh = box_tet_mesh(
        Vector3::new(1.0, 0.2, 0.1),
        [10, 2, 1],
        Point3::origin(),
        Material::new("m", 1000.0, 1e6, 0.4),
    );
    let points: Vec<Point3<f64>> = (0..50)
        .map(|i| Point3::new(0.02 * i as f64, 0.1 + 0.05 * (i as f64).sin(), 0.05))
        .collect();
    let e = embed(&points, &mesh).unwrap();
    let ur = render_basis(&e.interpolation, &u);
    let q = DVector::from_vec(vec![0.3, -0.2, 0.1, 0.05]);
    let full = &u * &q;
    let rendered = &ur * &q;
    let disp: Vec<Vector3<f64>> = (0..model.num_vertices())
        .map(|v| Vector3::new(full[3 * v], full[3 * v + 1], full[3 * v + 2]))
        .collect();
    let expected = e.interpolation.interpolate(&disp);
    for (i, d) in expected.iter().enumerate() {
        assert!((rendered.fixed_rows::<3>(3 * i) - d).norm() < 1e-14);
    }
}

/// Runs a heavily damped reduced beam under a constant force until it settles.
fn settle(sim: &mut ReducedNewmark, f: &[f64]) {
    for _ in 0..6000 {
        assert_eq!(sim.step(f), StepEvent::Ok);
    }
}

#[test]
fn material_scale_scales_the_equilibrium_like_youngs_modulus() {
    let r = 4;
    let (model, u) = beam_and_modes(r);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    let forces = ReducedForces::new(&poly, r).unwrap();
    let params = ReducedParams {
        newmark: NewmarkParams::average_acceleration(1e-3),
        damping_mass: 40.0,
        newton_iterations: 4,
        ..ReducedParams::default()
    };
    // A load giving a large (nonlinear) deflection of the first mode.
    let f: Vec<f64> = (0..r)
        .map(|i| if i == 0 { 0.3 * poly.linear[0] } else { 0.0 })
        .collect();
    let half: Vec<f64> = f.iter().map(|x| 0.5 * x).collect();
    let mut stiff = ReducedNewmark::new(
        forces.clone(),
        ReducedParams {
            material_scale: 2.0,
            ..params
        },
    );
    let mut soft = ReducedNewmark::new(forces, params);
    settle(&mut stiff, &f);
    settle(&mut soft, &half);
    // 2 R(q) = f and R(q) = f / 2 have the same root; both runs settle to it (the
    // residual motion after 6 s at damping 40/s is far below 1e-9 relative).
    let scale = soft.q.iter().map(|x| x.abs()).fold(0.0, f64::max);
    assert!(scale > 1e-3, "the load deflects the beam: {scale}");
    for (a, b) in stiff.q.iter().zip(&soft.q) {
        assert!(
            (a - b).abs() <= 1e-9 * scale,
            "{:?} vs {:?}",
            stiff.q,
            soft.q
        );
    }
}

#[test]
fn inactive_modes_stay_at_zero_and_active_ones_move() {
    let r = 6;
    let (model, u) = beam_and_modes(r);
    let (poly, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    let mut sim = ReducedNewmark::new(
        ReducedForces::new(&poly, r).unwrap(),
        ReducedParams {
            active_modes: 2,
            damping_mass: 5.0,
            ..ReducedParams::default()
        },
    );
    // linear[i * r + i] is the squared natural frequency of mode i.
    let f: Vec<f64> = (0..r).map(|i| 0.05 * poly.linear[i * r + i]).collect();
    for _ in 0..500 {
        assert_eq!(sim.step(&f), StepEvent::Ok);
    }
    assert!(sim.q[..2].iter().all(|x| x.abs() > 1e-6), "{:?}", sim.q);
    assert!(sim.q[2..].iter().all(|x| *x == 0.0), "{:?}", sim.q);
    // Turning the modes back on lets them respond.
    sim.params.active_modes = r;
    for _ in 0..50 {
        assert_eq!(sim.step(&f), StepEvent::Ok);
    }
    assert!(sim.q[2..].iter().all(|x| x.abs() > 0.0), "{:?}", sim.q);
}
