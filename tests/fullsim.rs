//! The full-space reference simulator: energy conservation of the average-acceleration
//! Newmark rule, dissipation by Rayleigh damping, the free-vibration period against the
//! generalized eigenvalue of (K, M), and time-windowed loads.

use haptics::dynamics::full::assemble_loads;
use haptics::dynamics::{full::FullSimParams, full::FullSimulator, full::Load, NewmarkParams};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{
    box_hex_mesh, box_tet_mesh, vertices_where, volume::Material, volume::VolumeMesh,
};
use nalgebra::{DMatrix, Point3, Vector3};

fn beam(tets: bool) -> VolumeMesh {
    beam_with(tets, 1.0e6)
}

fn beam_with(tets: bool, youngs_modulus: f64) -> VolumeMesh {
    let mat = Material::new("m", 1000.0, youngs_modulus, 0.3);
    let size = Vector3::new(1.0, 0.1, 0.1);
    if tets {
        box_tet_mesh(size, [10, 1, 1], Point3::origin(), mat)
    } else {
        box_hex_mesh(size, [10, 1, 1], Point3::origin(), mat)
    }
}

fn simulator(mesh: &VolumeMesh, law: MaterialLaw, params: FullSimParams) -> FullSimulator {
    let model = FemModel::new(mesh, law).unwrap();
    let clamped = vertices_where(mesh, |x| x.x.abs() < 1e-9);
    FullSimulator::new(model, &clamped, params).unwrap()
}

/// Statically deflects the beam under a tip load, then releases it (with the
/// acceleration of the released state).
fn deflect(sim: &mut FullSimulator, mesh: &VolumeMesh, load: f64) {
    let tip = vertices_where(mesh, |x| (x.x - 1.0).abs() < 1e-9);
    let mut f = vec![0.0; sim.num_dofs()];
    for &v in &tip {
        f[3 * v + 2] = -load / tip.len() as f64;
    }
    sim.solve_static(&f).unwrap();
    sim.initialize_acceleration(&vec![0.0; sim.num_dofs()])
        .unwrap();
}

#[test]
fn undamped_linear_motion_conserves_energy() {
    for tets in [false, true] {
        let mesh = beam(tets);
        let params = FullSimParams {
            newmark: NewmarkParams::average_acceleration(2e-3),
            tolerance: 1e-12,
            ..FullSimParams::default()
        };
        let mut sim = simulator(&mesh, MaterialLaw::Linear, params);
        deflect(&mut sim, &mesh, 1.0);
        let e0 = sim.energy();
        assert!(e0 > 0.0);
        let zero = vec![0.0; sim.num_dofs()];
        let mut worst: f64 = 0.0;
        for _ in 0..300 {
            sim.step(&zero).unwrap();
            worst = worst.max((sim.energy() - e0).abs() / e0);
        }
        // The trapezoidal rule conserves the quadratic energy of a linear system exactly;
        // what remains is the linear solve's rounding (~1e-12 per step).
        assert!(worst < 1e-8, "tets={tets}: energy drift {worst:e}");
    }
}

#[test]
fn rayleigh_damping_dissipates_energy_monotonically() {
    let mesh = beam(false);
    let params = FullSimParams {
        newmark: NewmarkParams::average_acceleration(2e-3),
        damping_mass: 2.0,
        damping_stiffness: 1e-3,
        ..FullSimParams::default()
    };
    let mut sim = simulator(&mesh, MaterialLaw::StVK, params);
    deflect(&mut sim, &mesh, 1.0);
    let zero = vec![0.0; sim.num_dofs()];
    let mut last = sim.energy();
    let e0 = last;
    for _ in 0..300 {
        sim.step(&zero).unwrap();
        let e = sim.energy();
        // Allow rounding-level increases only.
        assert!(e <= last * (1.0 + 1e-10), "energy grew from {last} to {e}");
        last = e;
    }
    // Mass damping alone would decay the energy as exp(-alpha t) = 0.30 after 0.6 s.
    assert!(
        last < 0.35 * e0,
        "damping removed too little: {last} of {e0}"
    );
}

#[test]
fn free_vibration_period_matches_the_lowest_eigenfrequency() {
    // E = 1e8 Pa: a first period of about 0.2 s, so 3 s of simulation hold 15 periods.
    let mesh = beam_with(false, 1.0e8);
    let dt = 1e-3;
    let params = FullSimParams {
        newmark: NewmarkParams::average_acceleration(dt),
        ..FullSimParams::default()
    };
    let mut sim = simulator(&mesh, MaterialLaw::Linear, params);
    // Lowest generalized eigenvalue of (K, M) on the free dofs, densely: with M = L L^T,
    // the eigenvalues of L^-1 K L^-T.
    let model = FemModel::new(&mesh, MaterialLaw::Linear).unwrap();
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let free: Vec<usize> = (0..model.num_dofs())
        .filter(|&d| !sim.is_fixed(d))
        .collect();
    let sub =
        |a: &DMatrix<f64>| DMatrix::from_fn(free.len(), free.len(), |i, j| a[(free[i], free[j])]);
    let (kf, mf) = (sub(&k.to_dense()), sub(&m.to_dense()));
    let l = mf.cholesky().unwrap().l();
    let linv = l.clone().try_inverse().unwrap();
    let a = &linv * kf * linv.transpose();
    let lambda_min = a.symmetric_eigen().eigenvalues.min();
    let omega = lambda_min.sqrt();
    // Average acceleration lengthens the period: omega_h dt = 2 atan(omega dt / 2).
    let omega_h = 2.0 * (omega * dt / 2.0).atan() / dt;
    let expected_period = 2.0 * std::f64::consts::PI / omega_h;

    deflect(&mut sim, &mesh, 1e-3);
    let tip = vertices_where(&mesh, |x| (x.x - 1.0).abs() < 1e-9)[0];
    let zero = vec![0.0; sim.num_dofs()];
    let mut crossings = Vec::new();
    let mut prev = sim.u[3 * tip + 2];
    for s in 1..=3000 {
        sim.step(&zero).unwrap();
        let z = sim.u[3 * tip + 2];
        if prev < 0.0 && z >= 0.0 {
            // Linear interpolation of the upward zero crossing.
            crossings.push((s as f64 - z / (z - prev)) * dt);
        }
        prev = z;
    }
    assert!(crossings.len() >= 3, "too few oscillations: {crossings:?}");
    let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    // The tip release excites higher modes too (a few percent of the amplitude), which
    // shift zero crossings slightly: 1% covers that.
    let rel = (period - expected_period).abs() / expected_period;
    assert!(
        rel < 0.01,
        "period {period} vs {expected_period} (rel {rel:e})"
    );
}

#[test]
fn loads_act_only_inside_their_time_window() {
    let mesh = beam(true);
    let tip = vertices_where(&mesh, |x| (x.x - 1.0).abs() < 1e-9);
    let loads = vec![
        Load::Gravity(Vector3::new(0.0, 0.0, -9.81)),
        Load::Vertex {
            vertex: tip[0],
            force: Vector3::new(0.0, 2.0, 0.0),
            start: 0.01,
            end: 0.02,
        },
        Load::Point {
            vertices: tip.clone(),
            weights: vec![1.0 / tip.len() as f64; tip.len()],
            force: Vector3::new(1.0, 0.0, 0.0),
            start: 0.0,
            end: 0.015,
        },
    ];
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let masses = model.lumped_vertex_masses();
    let total_mass: f64 = masses.iter().sum();
    let mut f = vec![0.0; model.num_dofs()];
    let sum = |f: &[f64], i: usize| f.iter().skip(i).step_by(3).sum::<f64>();
    assemble_loads(&loads, &masses, 0.005, &mut f);
    assert!((sum(&f, 2) + 9.81 * total_mass).abs() < 1e-12);
    assert!((sum(&f, 0) - 1.0).abs() < 1e-12 && sum(&f, 1).abs() < 1e-12);
    assemble_loads(&loads, &masses, 0.012, &mut f);
    assert!((sum(&f, 0) - 1.0).abs() < 1e-12 && (sum(&f, 1) - 2.0).abs() < 1e-12);
    assemble_loads(&loads, &masses, 0.02, &mut f);
    assert!(sum(&f, 0).abs() < 1e-12 && sum(&f, 1).abs() < 1e-12);
    // Simulations with and without the vertex load agree bit for bit until it starts
    // (at 10 ms) and differ after.
    let run = |loads: &[Load]| {
        let mut sim = simulator(&mesh, MaterialLaw::StVK, FullSimParams::default());
        let mut f = vec![0.0; sim.num_dofs()];
        let mut tips = Vec::new();
        for s in 1..=20 {
            assemble_loads(loads, sim.vertex_masses(), s as f64 * 1e-3, &mut f);
            sim.step(&f).unwrap();
            tips.push(sim.u[3 * tip[0] + 1]);
        }
        tips
    };
    let with = run(&loads);
    let without = run(&[loads[0].clone(), loads[2].clone()]);
    // Step s ends at t = s ms; the load is first evaluated at t = 10 ms (step index 9).
    assert_eq!(with[..9], without[..9]);
    assert!(
        with[19] - without[19] > 1e-6,
        "the vertex load had no effect"
    );
}
