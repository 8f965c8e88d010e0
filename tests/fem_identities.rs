//! Identities every finite element kernel must satisfy: stiffness and Hessian against
//! finite differences, exact cubic dependence of the StVK force, zero force under rigid
//! motion, vanishing net force and torque, agreement of the Total Lagrangian, edge-based
//! and FVM tet kernels, and mass totals.

use haptics::fem::edge::EdgeStvk;
use haptics::fem::fvm::FvmTets;
use haptics::fem::{model::FemModel, model::HexQuadrature, model::MassKind, model::MaterialLaw};
use haptics::mesh::box_hex_mesh;
use haptics::mesh::box_tet_mesh;
use haptics::mesh::{volume::Material, volume::VolumeMesh};
use haptics_devices::rng::SplitMix64;
use nalgebra::{Point3, Rotation3, Vector3};

/// A deterministic pseudo-random number in [-1, 1).
fn signed(rng: &mut SplitMix64) -> f64 {
    rng.next_f64() * 2.0 - 1.0
}

/// `n` deterministic pseudo-random numbers in [-scale, scale).
fn signed_vec(rng: &mut SplitMix64, n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|_| scale * signed(rng)).collect()
}

fn material() -> Material {
    Material::new("rubber", 1100.0, 2.0e6, 0.42)
}

/// A slightly irregular 2x3x2 block (perturbed vertices, so hexes are not parallelepipeds).
fn meshes() -> Vec<(&'static str, VolumeMesh)> {
    let size = Vector3::new(0.2, 0.3, 0.2);
    let mut hex = box_hex_mesh(size, [2, 3, 2], Point3::origin(), material());
    let mut rng = SplitMix64::new(7);
    for p in &mut hex.vertices {
        *p += Vector3::new(signed(&mut rng), signed(&mut rng), signed(&mut rng)) * 0.01;
    }
    let mut tet = box_tet_mesh(size, [2, 3, 2], Point3::origin(), material());
    tet.vertices = hex.vertices.clone();
    vec![("hex", hex), ("tet", tet)]
}

fn norm(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn stiffness_matches_finite_differences_of_forces() {
    for (name, mesh) in meshes() {
        for law in [MaterialLaw::StVK, MaterialLaw::Linear] {
            let model = FemModel::new(&mesh, law).unwrap();
            let n = model.num_dofs();
            let mut rng = SplitMix64::new(11);
            // Large deformation: displacements up to 20% of the element size.
            let u = signed_vec(&mut rng, n, 0.02);
            let mut k = model.new_matrix();
            let mut f = vec![0.0; n];
            model.forces_and_stiffness(&u, &mut f, &mut k);
            let dir = signed_vec(&mut rng, n, 1.0);
            let h = 1e-6;
            let (mut fp, mut fm) = (vec![0.0; n], vec![0.0; n]);
            let up: Vec<f64> = u.iter().zip(&dir).map(|(a, b)| a + h * b).collect();
            let um: Vec<f64> = u.iter().zip(&dir).map(|(a, b)| a - h * b).collect();
            model.internal_forces(&up, &mut fp);
            model.internal_forces(&um, &mut fm);
            let fd: Vec<f64> = fp
                .iter()
                .zip(&fm)
                .map(|(a, b)| (a - b) / (2.0 * h))
                .collect();
            let mut kd = vec![0.0; n];
            k.mul_vec(&dir, &mut kd);
            // R is cubic: the central-difference truncation error is h^2/6 |R'''| ~ 1e-12
            // relative, and rounding contributes eps |R| / h ~ 1e-10 relative to K dir.
            let err = max_abs_diff(&fd, &kd) / norm(&kd);
            assert!(err < 1e-7, "{name} {law:?}: K vs FD relative error {err:e}");
            // The stiffness matrix is symmetric.
            let d = k.to_dense();
            let asym = (&d - d.transpose()).abs().max() / d.abs().max();
            assert!(asym < 1e-14, "{name}: asymmetry {asym:e}");
        }
    }
}

#[test]
fn forces_are_the_energy_gradient() {
    for (name, mesh) in meshes() {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let n = model.num_dofs();
        let mut rng = SplitMix64::new(5);
        let u = signed_vec(&mut rng, n, 0.02);
        let mut f = vec![0.0; n];
        model.internal_forces(&u, &mut f);
        let dir = signed_vec(&mut rng, n, 1.0);
        let h = 1e-6;
        let up: Vec<f64> = u.iter().zip(&dir).map(|(a, b)| a + h * b).collect();
        let um: Vec<f64> = u.iter().zip(&dir).map(|(a, b)| a - h * b).collect();
        let fd = (model.strain_energy(&up) - model.strain_energy(&um)) / (2.0 * h);
        let an: f64 = f.iter().zip(&dir).map(|(a, b)| a * b).sum();
        // Energy is quartic: truncation h^2 W''''/6 is negligible; rounding eps W / h.
        assert!((fd - an).abs() < 1e-7 * an.abs(), "{name}: {fd} vs {an}");
    }
}

#[test]
fn hessian_contraction_matches_finite_differences_of_stiffness() {
    for (name, mesh) in meshes() {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let n = model.num_dofs();
        let mut rng = SplitMix64::new(3);
        for u in [vec![0.0; n], signed_vec(&mut rng, n, 0.02)] {
            let v = signed_vec(&mut rng, n, 1.0);
            let w = signed_vec(&mut rng, n, 1.0);
            let mut hvw = vec![0.0; n];
            model.hessian_contraction(&u, &v, &w, &mut hvw);
            let h = 1e-4;
            let mut kp = model.new_matrix();
            let mut km = model.new_matrix();
            let up: Vec<f64> = u.iter().zip(&v).map(|(a, b)| a + h * b).collect();
            let um: Vec<f64> = u.iter().zip(&v).map(|(a, b)| a - h * b).collect();
            model.tangent_stiffness(&up, &mut kp);
            model.tangent_stiffness(&um, &mut km);
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            kp.mul_vec(&w, &mut a);
            km.mul_vec(&w, &mut b);
            let fd: Vec<f64> = a.iter().zip(&b).map(|(x, y)| (x - y) / (2.0 * h)).collect();
            // K is quadratic in u, so the central difference is exact up to rounding
            // (eps |K w| / h ~ 1e-12 relative).
            let err = max_abs_diff(&fd, &hvw) / norm(&hvw);
            assert!(err < 1e-9, "{name}: Hessian vs FD relative error {err:e}");
            // Symmetric in v and w.
            let mut hwv = vec![0.0; n];
            model.hessian_contraction(&u, &w, &v, &mut hwv);
            assert!(max_abs_diff(&hvw, &hwv) < 1e-12 * norm(&hvw));
        }
    }
}

#[test]
fn stvk_force_is_exactly_cubic() {
    for (name, mesh) in meshes() {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let n = model.num_dofs();
        let mut rng = SplitMix64::new(17);
        let u = signed_vec(&mut rng, n, 0.02);
        let dir = signed_vec(&mut rng, n, 1.0);
        // A large step: the fourth difference of a cubic vanishes for any h.
        let h = 0.02;
        let eval = |s: f64| {
            let x: Vec<f64> = u.iter().zip(&dir).map(|(a, b)| a + s * h * b).collect();
            let mut f = vec![0.0; n];
            model.internal_forces(&x, &mut f);
            f
        };
        let (f2m, f1m, f0, f1p, f2p) = (eval(-2.0), eval(-1.0), eval(0.0), eval(1.0), eval(2.0));
        let d4: Vec<f64> = (0..n)
            .map(|i| f2p[i] - 4.0 * f1p[i] + 6.0 * f0[i] - 4.0 * f1m[i] + f2m[i])
            .collect();
        let scale = norm(&f2p).max(norm(&f2m));
        // Pure rounding: 16 terms of size |R| at eps 2.2e-16.
        assert!(
            norm(&d4) < 1e-13 * scale,
            "{name}: fourth difference {:e}",
            norm(&d4) / scale
        );
        // The third difference does not vanish (the force really is cubic, not quadratic).
        let d3: Vec<f64> = (0..n)
            .map(|i| f2p[i] - 3.0 * f1p[i] + 3.0 * f0[i] - f1m[i])
            .collect();
        assert!(norm(&d3) > 1e-6 * scale);
    }
}

#[test]
fn rigid_motions_give_zero_force_and_net_force_torque_vanish() {
    for (name, mesh) in meshes() {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let n = model.num_dofs();
        let rot = Rotation3::from_euler_angles(0.9, -2.1, 1.3);
        let shift = Vector3::new(0.3, -1.0, 2.0);
        let mut u = vec![0.0; n];
        for (v, p) in mesh.vertices.iter().enumerate() {
            let q = rot * p + shift;
            for i in 0..3 {
                u[3 * v + i] = q[i] - p[i];
            }
        }
        let mut f = vec![0.0; n];
        model.internal_forces(&u, &mut f);
        // Compare with the force of a 1% stretch, the natural scale.
        let stretch: Vec<f64> = mesh
            .vertices
            .iter()
            .flat_map(|p| [0.01 * p.x, 0.0, 0.0])
            .collect();
        let mut fs = vec![0.0; n];
        model.internal_forces(&stretch, &mut fs);
        assert!(
            norm(&f) < 1e-12 * norm(&fs),
            "{name}: rigid force {:e}",
            norm(&f) / norm(&fs)
        );

        let mut rng = SplitMix64::new(23);
        let u = signed_vec(&mut rng, n, 0.03);
        model.internal_forces(&u, &mut f);
        let mut net = Vector3::zeros();
        let mut torque = Vector3::zeros();
        for (v, p) in mesh.vertices.iter().enumerate() {
            let fv = Vector3::new(f[3 * v], f[3 * v + 1], f[3 * v + 2]);
            let x = p.coords + Vector3::new(u[3 * v], u[3 * v + 1], u[3 * v + 2]);
            net += fv;
            torque += x.cross(&fv);
        }
        let fscale = norm(&f);
        assert!(
            net.norm() < 1e-12 * fscale,
            "{name}: net force {:e}",
            net.norm() / fscale
        );
        assert!(
            torque.norm() < 1e-12 * fscale,
            "{name}: net torque {:e}",
            torque.norm() / fscale
        );
    }
}

#[test]
fn total_lagrangian_edge_based_and_fvm_tet_kernels_agree() {
    let mesh = meshes().remove(1).1;
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let edge = EdgeStvk::new(&model).unwrap();
    let fvm = FvmTets::new(&model).unwrap();
    let n = model.num_dofs();
    let mut rng = SplitMix64::new(29);
    for trial in 0..4 {
        // A large rotation (different per trial) plus a random deformation.
        let rot = Rotation3::from_euler_angles(1.0 + trial as f64, -0.7 * trial as f64, 2.5);
        let noise = signed_vec(&mut rng, n, 0.03);
        let u: Vec<f64> = mesh
            .vertices
            .iter()
            .enumerate()
            .flat_map(|(v, p)| {
                let q = rot * p;
                let nz = &noise;
                (0..3).map(move |i| q[i] - p[i] + nz[3 * v + i])
            })
            .collect();
        let (mut f_tl, mut f_e, mut f_v) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let mut k_tl = model.new_matrix();
        let mut k_e = edge.new_matrix();
        model.forces_and_stiffness(&u, &mut f_tl, &mut k_tl);
        edge.forces_and_stiffness(&model.rest_positions, &u, &mut f_e, &mut k_e);
        fvm.internal_forces(&model.rest_positions, &u, &mut f_v);
        let fs = norm(&f_tl);
        // Three algebraically equal formulas: differences are rounding (~1e-15 relative per
        // term, summed over a few dozen terms).
        assert!(max_abs_diff(&f_tl, &f_e) < 1e-12 * fs, "edge force");
        assert!(max_abs_diff(&f_tl, &f_v) < 1e-12 * fs, "fvm force");
        let ks = k_tl.values.iter().map(|v| v.abs()).fold(0.0, f64::max);
        assert!(
            max_abs_diff(&k_tl.values, &k_e.values) < 1e-12 * ks,
            "edge stiffness"
        );
        let mut fe_only = vec![0.0; n];
        edge.internal_forces(&model.rest_positions, &u, &mut fe_only);
        assert!(max_abs_diff(&f_e, &fe_only) < 1e-14 * fs);
    }
}

#[test]
fn mass_totals_equal_density_times_volume() {
    for (name, mesh) in meshes() {
        let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
        let vol = mesh.volume_stats().total_volume;
        let expected = material().density * vol;
        for kind in [MassKind::Consistent, MassKind::Lumped] {
            let m = model.mass_matrix(kind);
            // Total mass along one axis: 1^T M 1 over the x dofs.
            let ones: Vec<f64> = (0..model.num_dofs())
                .map(|d| if d % 3 == 0 { 1.0 } else { 0.0 })
                .collect();
            let mut mo = vec![0.0; ones.len()];
            m.mul_vec(&ones, &mut mo);
            let total: f64 = mo.iter().zip(&ones).map(|(a, b)| a * b).sum();
            assert!(
                (total - expected).abs() < 1e-12 * expected,
                "{name} {kind:?}: {total} vs {expected}"
            );
        }
        let lumped: f64 = model.lumped_vertex_masses().iter().sum();
        assert!((lumped - expected).abs() < 1e-12 * expected);
        assert!((model.rest_volume() - vol).abs() < 1e-12 * vol);
    }
}

#[test]
fn hex_quadrature_2x2x2_is_inexact_for_stvk_but_exact_for_linear() {
    let mesh = box_hex_mesh(
        Vector3::new(0.2, 0.3, 0.2),
        [2, 3, 2],
        Point3::origin(),
        material(),
    );
    let n = 3 * mesh.vertices.len();
    let u = signed_vec(&mut SplitMix64::new(41), n, 0.02);
    for (law, should_match) in [(MaterialLaw::Linear, true), (MaterialLaw::StVK, false)] {
        let g3 = FemModel::with_quadrature(&mesh, law, HexQuadrature::Gauss3).unwrap();
        let g2 = FemModel::with_quadrature(&mesh, law, HexQuadrature::Gauss2).unwrap();
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        g3.internal_forces(&u, &mut a);
        g2.internal_forces(&u, &mut b);
        let rel = max_abs_diff(&a, &b) / norm(&a);
        if should_match {
            assert!(rel < 1e-13, "linear law: 2x2x2 and 3x3x3 differ by {rel:e}");
        } else {
            assert!(
                rel > 1e-8,
                "StVK: 2x2x2 should be inexact, differs by only {rel:e}"
            );
        }
    }
}

#[test]
fn inverted_element_is_named() {
    let mut mesh = box_tet_mesh(
        Vector3::new(1.0, 1.0, 1.0),
        [1, 1, 1],
        Point3::origin(),
        material(),
    );
    mesh.connectivity.swap(5, 6); // swap two nodes of element 1
    let err = FemModel::new(&mesh, MaterialLaw::StVK)
        .unwrap_err()
        .to_string();
    assert!(err.contains("element 2 (0-based 1) is inverted"), "{err}");
}
