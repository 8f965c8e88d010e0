//! Full-space statics against beam theory and rigid-motion invariance.
//!
//! - A slender cantilever (L/h = 10), clamped at x = 0, with a small tip load: the static
//!   tip deflection converges to the Euler-Bernoulli value P L^3 / (3 E I) as hex and tet
//!   meshes are refined, and the finest of three meshes is within 3%.
//! - Rotating the clamped support of a StVK cantilever by 90 degrees (no load) gives a
//!   rigidly rotated beam with no spurious deformation.

use haptics::dynamics::{full::FullSimParams, full::FullSimulator};
use haptics::fem::{model::FemModel, model::MaterialLaw};
use haptics::mesh::box_hex_mesh;
use haptics::mesh::box_tet_mesh;
use haptics::mesh::vertices_where;
use haptics::mesh::{volume::Material, volume::VolumeMesh};
use nalgebra::{Point3, Rotation3, Vector3};

const L: f64 = 1.0;
const H: f64 = 0.1;

fn material() -> Material {
    // Poisson's ratio 0: beam theory's uniaxial stress state holds exactly away from the
    // clamp, so the remaining gap to Euler-Bernoulli is discretization (and the ~0.6%
    // shear deformation of Timoshenko theory at L/h = 10).
    Material::new("steel-like", 1000.0, 1.0e7, 0.0)
}

/// Static tip deflection of a clamped cantilever under a tip load P along -z, spread over
/// the tip face with area weights.
fn tip_deflection(mesh: VolumeMesh, p: f64) -> f64 {
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
    let tip = vertices_where(&mesh, |x| (x.x - L).abs() < 1e-9);
    let mut sim = FullSimulator::new(model, &clamped, FullSimParams::default()).unwrap();
    // Area weights of the tip-face vertices: a vertex on an edge of the square face
    // carries half, a corner a quarter.
    let on_edge = |c: f64| c.abs() < 1e-9 || (c - H).abs() < 1e-9;
    let weights: Vec<f64> = tip
        .iter()
        .map(|&v| {
            let q = mesh.vertices[v];
            0.5f64.powi(on_edge(q.y) as i32 + on_edge(q.z) as i32)
        })
        .collect();
    let wsum: f64 = weights.iter().sum();
    let mut f = vec![0.0; sim.num_dofs()];
    for (&v, w) in tip.iter().zip(&weights) {
        f[3 * v + 2] = -p * w / wsum;
    }
    let report = sim.solve_static(&f).unwrap();
    assert!(report.relative_residual < 1e-8);
    // Weighted mean tip displacement.
    -tip.iter()
        .zip(&weights)
        .map(|(&v, w)| sim.u[3 * v + 2] * w)
        .sum::<f64>()
        / wsum
}

fn euler_bernoulli(p: f64) -> f64 {
    let i = H * H * H * H / 12.0;
    p * L * L * L / (3.0 * material().youngs_modulus * i)
}

fn check_convergence(name: &str, deflections: &[f64], exact: f64) {
    let errors: Vec<f64> = deflections
        .iter()
        .map(|d| (d - exact).abs() / exact)
        .collect();
    eprintln!("{name}: deflections {deflections:?}, Euler-Bernoulli {exact:.6e}, relative errors {errors:?}");
    for w in errors.windows(2) {
        assert!(
            w[1] < w[0],
            "{name}: error does not decrease with refinement: {errors:?}"
        );
    }
    let finest = *errors.last().unwrap();
    assert!(
        finest < 0.03,
        "{name}: finest mesh is {:.2}% from Euler-Bernoulli",
        100.0 * finest
    );
}

#[test]
fn hex_cantilever_converges_to_euler_bernoulli() {
    // Load for a tip deflection of about L/1000: the linear regime, where beam theory holds.
    let p = 0.25;
    let exact = euler_bernoulli(p);
    let d: Vec<f64> = [1, 2, 4]
        .iter()
        .map(|&k| {
            let mesh = box_hex_mesh(
                Vector3::new(L, H, H),
                [20 * k, k, k],
                Point3::origin(),
                material(),
            );
            tip_deflection(mesh, p)
        })
        .collect();
    check_convergence("hex", &d, exact);
}

#[test]
fn tet_cantilever_converges_to_euler_bernoulli() {
    let p = 0.25;
    let exact = euler_bernoulli(p);
    let d: Vec<f64> = [2, 4, 8]
        .iter()
        .map(|&k| {
            let mesh = box_tet_mesh(
                Vector3::new(L, H, H),
                [40 * k, k, k],
                Point3::origin(),
                material(),
            );
            tip_deflection(mesh, p)
        })
        .collect();
    check_convergence("tet", &d, exact);
}

#[test]
fn rotating_the_support_by_90_degrees_gives_a_rigid_rotation() {
    let mat = Material::new("rubber", 1000.0, 1.0e6, 0.4);
    for mesh in [
        box_hex_mesh(
            Vector3::new(L, H, H),
            [10, 1, 1],
            Point3::origin(),
            mat.clone(),
        ),
        box_tet_mesh(
            Vector3::new(L, H, H),
            [10, 1, 1],
            Point3::origin(),
            mat.clone(),
        ),
    ] {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
        let mut sim = FullSimulator::new(model, &clamped, FullSimParams::default()).unwrap();
        let zero = vec![0.0; sim.num_dofs()];
        // Rotate the support about the z axis through the origin in 9-degree increments
        // (load stepping); each increment is solved by Newton to 1e-8.
        let steps = 10;
        let mut rot = Rotation3::identity();
        for s in 1..=steps {
            rot = Rotation3::from_axis_angle(
                &Vector3::z_axis(),
                std::f64::consts::FRAC_PI_2 * s as f64 / steps as f64,
            );
            let mut presc = vec![0.0; sim.num_dofs()];
            for &v in &clamped {
                let x = mesh.vertices[v];
                let y = rot * x;
                for i in 0..3 {
                    presc[3 * v + i] = y[i] - x[i];
                }
            }
            sim.set_prescribed(&presc);
            sim.solve_static(&zero).unwrap();
        }
        // Every vertex ends at its rigidly rotated position: StVK is invariant under
        // rotation, so the only error is the Newton tolerance (1e-8 relative residual).
        let mut worst: f64 = 0.0;
        for (v, x) in mesh.vertices.iter().enumerate() {
            let y = rot * x;
            let u = Vector3::new(sim.u[3 * v], sim.u[3 * v + 1], sim.u[3 * v + 2]);
            worst = worst.max((x.coords + u - y.coords).norm());
        }
        assert!(worst < 1e-9 * L, "spurious deformation {worst:e} m");
        // The tip really moved: it swung from (L, ., .) to (0, L, .).
        assert!(sim.u.iter().map(|v| v.abs()).fold(0.0, f64::max) > 0.9 * L);
    }
}
