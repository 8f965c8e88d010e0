//! Modal derivatives against finite differences of the static response (thesis 2.8.4)
//! and the mass-orthonormality of the mass-PCA basis.

use haptics::dynamics::{full::FullSimParams, full::FullSimulator};
use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::{box_hex_mesh, vertices_where, volume::Material};
use haptics::reduction::basis::{mass_pca, modal_derivatives, scaled_modes_and_derivatives};
use haptics::reduction::modes::{linear_modes, ModesOptions};
use nalgebra::{DMatrix, DVector, Point3, Vector3};

#[test]
fn modal_derivatives_are_second_derivatives_of_the_static_response_and_pca_is_mass_orthonormal() {
    let mesh = box_hex_mesh(
        Vector3::new(1.0, 0.15, 0.1),
        [10, 2, 1],
        Point3::origin(),
        Material::new("m", 1000.0, 1e6, 0.3),
    );
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let clamped = vertices_where(&mesh, |x| x.x.abs() < 1e-9);
    let n = model.num_dofs();
    let mut fixed = vec![false; n];
    for &v in &clamped {
        fixed[3 * v..3 * v + 3].iter_mut().for_each(|f| *f = true);
    }
    let mut k0 = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; n], &mut k0);
    let m = model.mass_matrix(MassKind::Consistent);
    let k = 3;
    let modes = linear_modes(
        &k0,
        &m,
        &fixed,
        &model.rest_positions,
        &ModesOptions {
            count: k,
            unconstrained: false,
            tolerance: 1e-12,
        },
    )
    .unwrap();
    let phis = modal_derivatives(&model, &k0, &fixed, &modes.vectors).unwrap();
    assert_eq!(phis.len(), k * (k + 1) / 2);

    // Static response u(p) to the load M U_lin Lambda p, by Newton to 1e-10 (relative
    // residual; its effect on the second differences below is ~1e-6).
    let mut sim = FullSimulator::new(
        model.clone(),
        &clamped,
        FullSimParams {
            tolerance: 1e-10,
            ..FullSimParams::default()
        },
    )
    .unwrap();
    let mut mu = DMatrix::zeros(n, k);
    for j in 0..k {
        let mut out = vec![0.0; n];
        m.mul_vec(modes.vectors.column(j).as_slice(), &mut out);
        mu.set_column(j, &(DVector::from_vec(out) * modes.eigenvalues[j]));
    }
    let mut response = |p: &DVector<f64>| {
        sim.u.iter_mut().for_each(|x| *x = 0.0);
        let f = &mu * p;
        sim.solve_static(f.as_slice()).unwrap();
        DVector::from_vec(sim.u.clone())
    };
    // Second differences at amplitude h (displacements of ~1% of the beam length) have
    // an O(h^2) error; Richardson extrapolation over h and h/2 cancels it, leaving
    // O(h^4) and the ~1e-6 effect of the Newton tolerance.
    let e = |a: usize, s: f64| {
        let mut v = DVector::zeros(k);
        v[a] = s;
        v
    };
    let mut second_difference = |i: usize, j: usize, h: f64| {
        if i == j {
            (response(&e(i, h)) - response(&DVector::zeros(k)) * 2.0 + response(&e(i, -h)))
                / (h * h)
        } else {
            (response(&(e(i, h) + e(j, h)))
                - response(&(e(i, h) - e(j, h)))
                - response(&(e(j, h) - e(i, h)))
                + response(&(-e(i, h) - e(j, h))))
                / (4.0 * h * h)
        }
    };
    let h = 0.01;
    let mut c = 0;
    for i in 0..k {
        for j in i..k {
            let coarse = second_difference(i, j, h);
            let fine = second_difference(i, j, h / 2.0);
            let richardson = (&fine * 4.0 - &coarse) / 3.0;
            let err = (&richardson - &phis[c]).norm() / phis[c].norm();
            let err_plain = (&fine - &phis[c]).norm() / phis[c].norm();
            eprintln!("Phi_{i}{j}: relative difference {err_plain:e} (h/2), {err:e} (Richardson)");
            assert!(err < 1e-4, "Phi_{i}{j}: {err:e}");
            c += 1;
        }
    }

    let y = scaled_modes_and_derivatives(&modes.eigenvalues, &modes.vectors, &phis);
    let (u, kept) = mass_pca(&m, &y, 5).unwrap();
    let utmu = u.transpose() * m.to_dense() * &u;
    let err = (utmu - DMatrix::identity(5, 5)).abs().max();
    assert!(err < 1e-12, "U^T M U - I: {err:e}");
    assert!(kept > 0.0 && kept <= 1.0 + 1e-12);
    // The basis contains the linear modes' span (the first scaled mode dominates).
    let proj = u.transpose() * m.to_dense() * modes.vectors.column(0);
    assert!(
        (proj.norm() - 1.0).abs() < 1e-8,
        "first mode outside the PCA basis: {}",
        proj.norm()
    );
    assert!(mass_pca(&m, &y, 50).is_err());
}

/// Mass-normalized eigenpairs of K(u) psi = lambda M psi (dense), ascending.
fn dense_eigenpairs(model: &FemModel, u: &[f64], m: &DMatrix<f64>) -> (Vec<f64>, DMatrix<f64>) {
    let mut k = model.new_matrix();
    model.tangent_stiffness(u, &mut k);
    let l = m.clone().cholesky().unwrap().l();
    let linv = l.clone().try_inverse().unwrap();
    let a = &linv * k.to_dense() * linv.transpose();
    let a = (&a + a.transpose()) * 0.5;
    let eig = a.symmetric_eigen();
    let mut order: Vec<usize> = (0..eig.eigenvalues.len()).collect();
    order.sort_by(|&x, &y| eig.eigenvalues[x].total_cmp(&eig.eigenvalues[y]));
    let vals = order.iter().map(|&i| eig.eigenvalues[i]).collect();
    let vecs = DMatrix::from_columns(
        &order
            .iter()
            .map(|&i| linv.transpose() * eig.eigenvectors.column(i))
            .collect::<Vec<_>>(),
    );
    (vals, vecs)
}

#[test]
fn unconstrained_modal_derivatives_are_derivatives_of_the_eigenvectors() {
    use haptics::mesh::box_tet_mesh;
    use haptics::reduction::basis::modal_derivatives_unconstrained;
    // A free block with three different side lengths (simple eigenvalues).
    let mesh = box_tet_mesh(
        Vector3::new(0.5, 0.2, 0.1),
        [4, 2, 1],
        Point3::origin(),
        Material::new("m", 1000.0, 1e6, 0.35),
    );
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let n = model.num_dofs();
    let mut k0 = model.new_matrix();
    model.tangent_stiffness(&vec![0.0; n], &mut k0);
    let m = model.mass_matrix(MassKind::Consistent);
    let md = m.to_dense();
    let k = 3;
    let modes = linear_modes(
        &k0,
        &m,
        &vec![false; n],
        &model.rest_positions,
        &ModesOptions {
            count: k,
            unconstrained: true,
            tolerance: 1e-12,
        },
    )
    .unwrap();
    let phis = modal_derivatives_unconstrained(&model, &k0, &m, &modes.vectors, &modes.eigenvalues)
        .unwrap();
    assert_eq!(phis.len(), k * k);
    // Eq. 2.60 comes from differentiating K(u) psi_i(u) = lambda_i(u) M psi_i(u) along
    // u = p_j psi_j: so Phi_ij = d psi_i / d p_j, with psi_i^T M Phi_ij = 0. Check against
    // central differences of dense eigenvectors of K(+-h psi_j) (the six rigid modes come
    // first, so elastic mode i is eigenpair 6 + i).
    let h = 1e-4;
    for i in 0..k {
        let psi = modes.vectors.column(i).into_owned();
        for j in 0..k {
            let pick = |s: f64| {
                let u: Vec<f64> = modes.vectors.column(j).iter().map(|x| s * x).collect();
                let (_, vecs) = dense_eigenpairs(&model, &u, &md);
                let mut v = vecs.column(6 + i).into_owned();
                if v.dot(&(&md * &psi)) < 0.0 {
                    v = -v;
                }
                v
            };
            // Richardson extrapolation of central differences at h and h/2: O(h^4).
            let coarse = (pick(h) - pick(-h)) / (2.0 * h);
            let fine = (pick(h / 2.0) - pick(-h / 2.0)) / h;
            let d = (&fine * 4.0 - &coarse) / 3.0;
            // Project out psi_i (the normalization direction).
            let d = &d - &psi * psi.dot(&(&md * &d));
            let phi = &phis[i * k + j];
            assert!(
                psi.dot(&(&md * phi)).abs() < 1e-9 * phi.norm(),
                "Phi_{i}{j} not M-orthogonal to psi_{i}"
            );
            let err = (&d - phi).norm() / phi.norm();
            eprintln!(
                "unconstrained Phi_{i}{j}: relative difference to eigenvector differences {err:e}"
            );
            // Richardson leaves O(h^4) truncation and the dense eigensolver's rounding
            // divided by h (4e-8 measured at worst): 1e-6 allowed.
            assert!(err < 1e-6, "Phi_{i}{j}: {err:e}");
        }
    }
}
