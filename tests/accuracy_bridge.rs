//! Thesis Fig. 2.3 on Barbic's bridge: a short downward push on the middle of the deck,
//! full space (11,769 dofs, about 100 s) against reduced bases of r = 20. Writes the plot
//! to the test output directory.

use haptics::dynamics::accuracy::{run_accuracy_experiment, AccuracyConfig};
use haptics::mesh::{bou::read_bou, veg::read_veg};
use nalgebra::{Point3, Vector3};
use std::path::PathBuf;

#[test]
fn bridge_modal_derivative_basis_tracks_the_full_simulation() {
    let dir = haptics::assets::model("simpleBridge");
    let mesh = read_veg(&dir.join("simpleBridge_resol92-b1.155_enlarged.veg")).unwrap();
    let fixed = read_bou(
        &dir.join("simpleBridge_resol92-b1.155_enlarged.bou"),
        Some(mesh.vertices.len()),
    )
    .unwrap();
    // The top of the deck at mid-span.
    let top = mesh
        .vertices
        .iter()
        .filter(|p| p.x.abs() < 0.3 && p.z.abs() < 0.3)
        .map(|p| p.y)
        .fold(f64::NEG_INFINITY, f64::max);
    let centre = Point3::new(0.0, top, 0.0);
    let load: Vec<usize> = (0..mesh.vertices.len())
        .filter(|&v| (mesh.vertices[v] - centre).norm() < 0.8)
        .collect();
    let observed = *load
        .iter()
        .min_by(|&&a, &&b| {
            (mesh.vertices[a] - centre)
                .norm()
                .total_cmp(&(mesh.vertices[b] - centre).norm())
        })
        .unwrap();
    let cfg = AccuracyConfig {
        observed_vertex: observed,
        load_vertices: load,
        fixed_vertices: fixed,
        mesh,
        force: Vector3::new(0.0, -6.0e4, 0.0),
        load_duration: 0.1,
        dt: 0.01,
        steps: 400,
        linear_modes: 10,
        r: 20,
        damping_stiffness: 0.0,
    };
    let report = run_accuracy_experiment(&cfg).unwrap();
    eprintln!("{}", report.table());
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("accuracy-bridge.png");
    report
        .plot(
            &out,
            "bridge: mid-span after a 0.1 s push, full space vs reduced (r = 20)",
        )
        .unwrap();
    eprintln!("plot: {}", out.display());
    let (lin, md) = (&report.reduced[0].1, &report.reduced[1].1);
    eprintln!("linear {lin:?}, derivatives {md:?}");
    // The deck sags by half a metre: large for a 20 m span of this soft material.
    assert!(
        report.full_amplitude > 0.5,
        "amplitude {}",
        report.full_amplitude
    );
    // The bridge's slow vertical mode has a period longer than the 4 s simulated, so the
    // frequency is measured by the time of the largest excursion (a quarter period):
    // modal derivatives within 10%, as required.
    assert!(
        md.peak_time < 0.10,
        "modal-derivative peak-time error {:.1}%",
        100.0 * md.peak_time
    );
    assert!(
        md.amplitude < 0.10,
        "modal-derivative amplitude error {:.1}%",
        100.0 * md.amplitude
    );
    // Linear modes alone miss the large deflection (RMS 50% measured against 5%).
    assert!(
        md.rms < 0.5 * lin.rms,
        "RMS: derivatives {:.3} vs linear modes {:.3}",
        md.rms,
        lin.rms
    );
}
