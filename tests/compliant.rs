//! The compliant check's equilibrium (`haptics::check::compliant`) on the shipped
//! hose-disassembly scene: the energy's gradient against finite differences, the
//! equilibrium's residual, and the symmetry of the two hoses.

use std::path::Path;

use haptics::check::compliant::CompliantSolver;
use haptics::progress::NoProgress;
use haptics::scene::load_scene;
use nalgebra::{Isometry3, Vector3};

fn scene() -> haptics::scene::Scene {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("haptics-cache");
    load_scene(
        &root.join("assets/scenes/hose-disassembly.toml"),
        &cache,
        &NoProgress,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The plate in the middle of the gap, at the height of the hoses' axes.
fn middle() -> Isometry3<f64> {
    Isometry3::translation(0.0, 1.5, 0.0)
}

/// The gradient of `W(q) + k/2 sum d^2` is its derivative: central differences with a
/// step of 1e-5 of q's size agree to 1e-7 relative (measured: 5e-12). The bound leaves
/// room for the distance field's trilinear cells: a point whose step straddles a cell
/// face sees the gradient jump there, an O(step) error; at 1e-4 such crossings and
/// points entering contact show up (3e-4 relative).
#[test]
fn the_energy_gradient_matches_finite_differences() {
    let scene = scene();
    let mut solver = CompliantSolver::new(&scene, 1).expect("hose right is deformable");
    let r = scene.environment[1].shell.r();
    let q0 = solver.solve(&middle(), &vec![0.0; r]).q;
    // Part of the way there: in contact, not at equilibrium.
    let q: Vec<f64> = q0.iter().map(|x| 0.8 * x).collect();
    let e = solver.energy(&middle(), &q, None);
    assert!(e.depth > 0.0, "in contact");
    let scale = q.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let h = 1e-5 * scale;
    for i in 0..r {
        let mut qp = q.clone();
        let mut qm = q.clone();
        qp[i] += h;
        qm[i] -= h;
        let fd = (solver.energy(&middle(), &qp, None).value
            - solver.energy(&middle(), &qm, None).value)
            / (2.0 * h);
        let g = e.gradient[i];
        assert!(
            (fd - g).abs() <= 1e-7 * e.gradient.norm(),
            "q[{i}]: {g} vs {fd} (|gradient| {})",
            e.gradient.norm()
        );
    }
}

/// At the solved equilibrium the residual is within the solver's tolerance; the two
/// hoses, mirror images about x = 0, push the plate with mirrored forces (equal
/// magnitude to 1%: the pointshells are sampled independently of the mirror), and the
/// plate is held from both sides.
#[test]
fn the_equilibrium_is_balanced_and_symmetric() {
    let scene = scene();
    let forces: Vec<Vector3<f64>> = [0, 1]
        .iter()
        .map(|&i| {
            let mut solver = CompliantSolver::new(&scene, i).unwrap();
            let r = scene.environment[i].shell.r();
            let e = solver.solve(&middle(), &vec![0.0; r]);
            assert!(e.converged, "object {i}: {} iterations", e.iterations);
            let check = solver.energy(&middle(), &e.q, None);
            assert!(
                check.gradient.norm() <= haptics::check::compliant::TOL * check.size,
                "object {i}: residual {}",
                check.gradient.norm()
            );
            e.force
        })
        .collect();
    let (left, right) = (forces[0], forces[1]);
    // The left hose pushes the plate towards +x, the right one towards -x.
    assert!(left.x > 1.0 && right.x < -1.0, "{left} {right}");
    assert!(
        (left.x + right.x).abs() <= 0.01 * left.x.abs(),
        "{left} {right}"
    );
}
