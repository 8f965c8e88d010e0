//! Modal derivatives against finite differences of the static response (thesis 2.8.4)
//! and the mass-orthonormality of the mass-PCA basis.

use haptics::dynamics::{FullSimParams, FullSimulator};
use haptics::fem::{FemModel, MassKind, MaterialLaw};
use haptics::mesh::{box_hex_mesh, vertices_where, Material};
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
