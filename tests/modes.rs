//! Linear modes: agreement with a dense generalized eigensolver on small meshes
//! (constrained with repeated eigenvalues, and unconstrained), mass-orthonormality, and
//! convergence of cantilever frequencies to Euler-Bernoulli.

use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{
    box_hex_mesh, box_tet_mesh, vertices_where, volume::Material, volume::VolumeMesh,
};
use haptics::reduction::modes::{linear_modes, ModesOptions};
use nalgebra::{DMatrix, Point3, Vector3};

fn dense_eigenvalues(model: &FemModel, fixed: &[bool]) -> Vec<f64> {
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let free: Vec<usize> = (0..model.num_dofs()).filter(|&d| !fixed[d]).collect();
    let sub =
        |a: &DMatrix<f64>| DMatrix::from_fn(free.len(), free.len(), |i, j| a[(free[i], free[j])]);
    let (kf, mf) = (sub(&k.to_dense()), sub(&m.to_dense()));
    let l = mf.cholesky().unwrap().l();
    let linv = l.try_inverse().unwrap();
    let a = &linv * kf * linv.transpose();
    let mut ev: Vec<f64> = a.symmetric_eigen().eigenvalues.iter().copied().collect();
    ev.sort_by(f64::total_cmp);
    ev
}

fn modes_of(
    mesh: &VolumeMesh,
    fixed_vertices: &[usize],
    count: usize,
    unconstrained: bool,
) -> (FemModel, Vec<bool>, haptics::reduction::modes::LinearModes) {
    let model = FemModel::new(mesh, MaterialLaw::StVK).unwrap();
    let mut fixed = vec![false; model.num_dofs()];
    for &v in fixed_vertices {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; model.num_dofs()], &mut k);
    let m = model.mass_matrix(MassKind::Consistent);
    let opts = ModesOptions {
        count,
        unconstrained,
        tolerance: 1e-10,
    };
    let modes = linear_modes(&k, &m, &fixed, &model.rest_positions, &opts).unwrap();
    // Mass-orthonormal: U^T M U = I.
    let md = m.to_dense();
    let utmu = modes.vectors.transpose() * md * &modes.vectors;
    let err = (utmu - DMatrix::identity(count, count)).abs().max();
    assert!(err < 1e-10, "U^T M U - I = {err:e}");
    (model, fixed, modes)
}

#[test]
fn constrained_square_beam_modes_match_dense_solver_including_repeated_ones() {
    // A square cross-section: the two bending directions have equal eigenvalues.
    let mesh = box_hex_mesh(
        Vector3::new(1.0, 0.1, 0.1),
        [8, 2, 2],
        Point3::origin(),
        Material::new("m", 1000.0, 1e7, 0.3),
    );
    let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
    let (model, fixed, modes) = modes_of(&mesh, &clamped, 10, false);
    let dense = dense_eigenvalues(&model, &fixed);
    for (i, (a, b)) in modes.eigenvalues.iter().zip(&dense).enumerate() {
        // Lanczos Ritz values converge to the working precision of the factorization.
        assert!((a - b).abs() < 1e-8 * b, "mode {i}: {a} vs dense {b}");
    }
    assert!(
        (modes.eigenvalues[0] - modes.eigenvalues[1]).abs() < 1e-8 * modes.eigenvalues[0],
        "the first bending pair is repeated"
    );
}

#[test]
fn unconstrained_modes_skip_the_six_rigid_modes() {
    let mesh = box_tet_mesh(
        Vector3::new(0.5, 0.2, 0.1),
        [5, 2, 1],
        Point3::origin(),
        Material::new("m", 1000.0, 1e6, 0.4),
    );
    let (model, fixed, modes) = modes_of(&mesh, &[], 8, true);
    let dense = dense_eigenvalues(&model, &fixed);
    // The dense spectrum starts with six (numerically) zero eigenvalues.
    assert!(dense[5].abs() < 1e-8 * dense[6]);
    for (i, (a, b)) in modes.eigenvalues.iter().zip(&dense[6..]).enumerate() {
        assert!((a - b).abs() < 1e-8 * b, "mode {i}: {a} vs dense {b}");
    }
}

#[test]
fn cantilever_frequencies_converge_to_euler_bernoulli() {
    // f1 = (1.8751^2 / 2 pi) sqrt(E I / (rho A L^4)) for a clamped-free beam; nu = 0.
    let (e, rho, l, h): (f64, f64, f64, f64) = (1.0e7, 1000.0, 1.0, 0.1);
    let exact = 1.875104f64.powi(2) / (2.0 * std::f64::consts::PI)
        * (e * h.powi(4) / 12.0 / (rho * h * h * l.powi(4))).sqrt();
    let mut errors = Vec::new();
    for k in [1usize, 2, 4] {
        let mesh = box_hex_mesh(
            Vector3::new(l, h, h),
            [20 * k, k, k],
            Point3::origin(),
            Material::new("m", rho, e, 0.0),
        );
        let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
        let (_, _, modes) = modes_of(&mesh, &clamped, 2, false);
        let f = modes.frequencies_hz()[0];
        errors.push((f - exact).abs() / exact);
    }
    eprintln!("first bending frequency, Euler-Bernoulli {exact:.4} Hz: relative errors {errors:?}");
    assert!(errors[1] < errors[0] && errors[2] < errors[1], "{errors:?}");
    // As for the static deflection, the finest hex mesh is within about 1% (shear
    // locking of trilinear hexes decays with the element length squared).
    assert!(errors[2] < 0.02, "{errors:?}");
}
