//! Hex StVK forces projected on Vega's beam3 basis reproduce the cubic polynomial that
//! Vega FEM 4.0 computed for that basis (assets/models/vega-beam3-fixture).

use haptics::fem::{model::FemModel, model::MaterialLaw};
use haptics::mesh::veg::read_veg;
use haptics::reduction::vega::{read_cub, read_matrix, Precision};
use haptics_devices::rng::SplitMix64;
use nalgebra::DVector;

#[test]
fn projected_hex_forces_reproduce_vega_cub() {
    let dir = haptics::assets::model("vega-beam3-fixture");
    let u = read_matrix(&dir.join("beam3_lin10.U"), Precision::F64).unwrap();
    let cub = read_cub(&dir.join("beam3_lin10.cub")).unwrap();
    assert_eq!((u.nrows(), u.ncols(), cub.r), (624, 10, 10));
    let mesh = read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let mut rng = SplitMix64::new(1);
    let mut rnd = || rng.next_f64() * 2.0 - 1.0;
    let mut worst: f64 = 0.0;
    for _ in 0..10 {
        let q = DVector::from_fn(10, |_, _| rnd() * 2.0);
        let x = &u * &q;
        let mut f = vec![0.0; 624];
        model.internal_forces(x.as_slice(), &mut f);
        let projected = u.transpose() * DVector::from_vec(f);
        let poly = cub.evaluate_direct(q.as_slice());
        let err = (&projected - DVector::from_vec(poly)).norm();
        worst = worst.max(err / projected.norm());
    }
    eprintln!("worst relative error {worst:e}");
    // Both sides integrate the same polynomial exactly (3x3x3 Gauss vs Vega's closed-form
    // cube integrals), so only rounding separates them: ~1e-13 measured, 1e-10 allowed
    // (the bound).
    assert!(worst < 1e-10);
}

#[test]
fn baking_beam3_with_vegas_basis_reproduces_vegas_cub_coefficientwise() {
    use haptics::reduction::precompute::reduced_polynomial;
    let dir = haptics::assets::model("vega-beam3-fixture");
    let u = read_matrix(&dir.join("beam3_lin10.U"), Precision::F64).unwrap();
    let vega = read_cub(&dir.join("beam3_lin10.cub")).unwrap();
    let mesh = read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let (ours, _) = reduced_polynomial(&model, &u, faer::Par::Seq).unwrap();
    // Compare each block relative to its largest coefficient: the blocks differ in scale
    // by orders of magnitude, and both sides are exact integrals (rounding only).
    for (name, a, b) in [
        ("linear", &ours.linear, &vega.linear),
        ("quadratic", &ours.quadratic, &vega.quadratic),
        ("cubic", &ours.cubic, &vega.cubic),
    ] {
        assert_eq!(a.len(), b.len(), "{name} size");
        let scale = b.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let err = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
            / scale;
        eprintln!("{name}: max coefficient error {err:e} relative to the block's largest");
        assert!(err < 1e-10, "{name}: {err:e}");
    }
}
