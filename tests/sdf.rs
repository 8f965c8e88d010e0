//! Signed distance fields against brute force: exact distances and signs (signs checked
//! independently by the generalized winding number), the grid's interpolation error, the
//! conservative outside-box bound, and errors for open meshes and huge resolutions.

use haptics::geometry::triangle::distance_squared;
use haptics::geometry::{MeshDistance, SdfError, SignedDistanceField};
use haptics::mesh::{read_obj, SurfaceMesh};
use nalgebra::{Point3, Vector3};
use std::path::PathBuf;

fn model(rel: &str) -> SurfaceMesh {
    read_obj(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/models")
            .join(rel),
    )
    .unwrap()
}

fn brute_distance(m: &SurfaceMesh, p: &Point3<f64>) -> f64 {
    (0..m.triangles.len())
        .map(|t| {
            let [a, b, c] = m.triangle(t);
            distance_squared(p, &a, &b, &c)
        })
        .fold(f64::INFINITY, f64::min)
        .sqrt()
}

/// Generalized winding number: 1 inside a closed outward-oriented mesh, 0 outside.
fn winding_number(m: &SurfaceMesh, p: &Point3<f64>) -> f64 {
    let mut total = 0.0;
    for t in 0..m.triangles.len() {
        let [a, b, c] = m.triangle(t).map(|v| v - p);
        let (la, lb, lc) = (a.norm(), b.norm(), c.norm());
        let det = a.dot(&b.cross(&c));
        let den = la * lb * lc + a.dot(&b) * lc + a.dot(&c) * lb + b.dot(&c) * la;
        total += 2.0 * det.atan2(den);
    }
    total / (4.0 * std::f64::consts::PI)
}

fn random_points(m: &SurfaceMesh, count: usize, enlarge: f64, seed: u64) -> Vec<Point3<f64>> {
    let b = m.bounding_box();
    let (c, e) = (b.center(), b.extent() * enlarge);
    let mut s = seed;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    (0..count)
        .map(|_| c + Vector3::new(rnd() * e.x, rnd() * e.y, rnd() * e.z))
        .collect()
}

#[test]
fn exact_signed_distance_matches_brute_force_and_winding_numbers() {
    for (name, count) in [("beam3/beam3.obj", 400), ("tube/tube.veg.obj", 60)] {
        let m = model(name);
        let md = MeshDistance::new(&m).unwrap();
        for p in random_points(&m, count, 1.4, 17) {
            let d = md.signed_distance(&p);
            let exact = brute_distance(&m, &p);
            // The tree returns the same triangle distance as the brute-force scan.
            assert!(
                (d.abs() - exact).abs() < 1e-12 * (1.0 + exact),
                "{name}: {d} vs {exact}"
            );
            if exact > 1e-9 {
                let w = winding_number(&m, &p);
                assert_eq!(
                    d < 0.0,
                    w > 0.5,
                    "{name}: sign at {p:?}: d = {d}, winding {w}"
                );
            }
        }
    }
}

#[test]
fn grid_field_interpolates_within_its_spacing_and_bounds_outside_conservatively() {
    let m = model("beam3/beam3.obj");
    let md = MeshDistance::new(&m).unwrap();
    let sdf = SignedDistanceField::compute(&md, 48, 1.5, &|_| {}).unwrap();
    let h = sdf.spacing;
    // Nodes hold the exact value (f32 rounding).
    let n = sdf.cells[0] + 1;
    for &(i, j, k) in &[(0, 0, 0), (10, 20, 30), (24, 24, 24), (47, 3, 11)] {
        let p = sdf.origin + Vector3::new(i as f64, j as f64, k as f64) * h;
        let v = sdf.values[(k * n + j) * n + i] as f64;
        assert!((v - md.signed_distance(&p)).abs() < 1e-6 * (1.0 + v.abs()));
    }
    // Inside the box: trilinear interpolation of a 1-Lipschitz function is within
    // sqrt(3) h of it; the sign is right wherever the distance exceeds that.
    let tol = 3f64.sqrt() * h;
    let half = sdf.spacing * sdf.cells[0] as f64 / 2.0;
    let centre = sdf.origin + Vector3::repeat(half);
    let mut s = 5u64;
    let mut rnd = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    };
    for _ in 0..2000 {
        let p = centre + Vector3::new(rnd(), rnd(), rnd()) * (1.98 * half);
        let (l, e) = (sdf.lookup(&p), md.signed_distance(&p));
        assert!(
            (l - e).abs() <= tol,
            "lookup {l} vs exact {e} (tolerance {tol})"
        );
        if e.abs() > tol {
            assert_eq!(l < 0.0, e < 0.0);
        }
    }
    // Outside the box the bound never exceeds the true distance (safe for culling).
    let mut outside = 0;
    while outside < 500 {
        let p = centre + Vector3::new(rnd(), rnd(), rnd()) * (8.0 * half);
        if (p - centre).amax() <= half {
            continue;
        }
        outside += 1;
        let (l, e) = (sdf.lookup(&p), md.signed_distance(&p));
        assert!(l <= e + 1e-6, "outside bound {l} above the distance {e}");
    }
}

#[test]
fn open_meshes_and_huge_resolutions_are_refused() {
    let mut m = model("beam3/beam3.obj");
    m.triangles.pop();
    match MeshDistance::new(&m) {
        Err(e @ SdfError::NotClosed { .. }) => {
            assert!(e.to_string().contains("polygon-soup"), "{e}")
        }
        other => panic!("expected NotClosed, got {other:?}"),
    }
    let md = MeshDistance::new(&model("beam3/beam3.obj")).unwrap();
    let err = SignedDistanceField::compute(&md, 100_000, 1.5, &|_| {}).unwrap_err();
    assert!(matches!(err, SdfError::TooLarge { .. }), "{err}");
}
