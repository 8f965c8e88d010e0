//! Signed distance fields against brute force: exact distances and signs (signs checked
//! independently by the generalized winding number), the grid's interpolation error, the
//! conservative outside-box bound, and errors for open meshes and huge resolutions; the
//! fast band-and-propagation field against the exact one; the polygon-soup path; the
//! stages reported through `Progress`.

use haptics::geometry::sdf::stage;
use haptics::geometry::{
    soup::soup_offset_surface, soup::soup_signed_field, soup::SoupOptions, MeshDistance, SdfError,
    SdfMethod, SdfOptions, SignedDistanceField,
};
use haptics::mesh::{read_obj, SurfaceMesh};
use haptics::progress::{NoProgress, Recorder};
use haptics::proximity::triangle::distance_squared;
use haptics_devices::rng::SplitMix64;
use nalgebra::{Point3, Vector3};

fn model(rel: &str) -> SurfaceMesh {
    read_obj(&haptics::assets::asset("models").join(rel)).unwrap()
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
    let mut rng = SplitMix64::new(seed);
    let mut rnd = || rng.next_f64() - 0.5;
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
    let sdf = SignedDistanceField::compute(&md, 48, 1.5, &NoProgress).unwrap();
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
    let mut rng = SplitMix64::new(5);
    let mut rnd = || rng.next_f64() - 0.5;
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
    let err = SignedDistanceField::compute(&md, 100_000, 1.5, &NoProgress).unwrap_err();
    assert!(matches!(err, SdfError::TooLarge { .. }), "{err}");
}

/// The fast default (narrow band, closest-triangle propagation, local descent, sign
/// flood fill) against one exact query per node on the tube (15,840 triangles, several
/// hoses: concave, convex and saddle regions) at 64^3, every node.
///
/// - Band nodes (|d| <= 3 cells): their closest triangle was evaluated by the band pass,
///   so they equal the exact distance up to f32 storage (relative 1e-6 covers the f32
///   rounding of both fields, 6e-8 each, and ties between equally close triangles).
/// - Signs: equal at every node not on the surface (flood fill is exact, see band.rs).
/// - Far nodes: the value is the exact distance to some triangle, so it is never below
///   the true distance; it is exact whenever the true closest triangle is a neighbour's
///   or is reached from it by the descent over vertex fans, which at 64^3 is every node.
#[test]
fn fast_field_equals_the_exact_one_on_the_band_and_in_sign_everywhere() {
    let m = model("tube/tube.veg.obj");
    let md = MeshDistance::new(&m).unwrap();
    let opts = SdfOptions {
        resolution: 64,
        ..SdfOptions::default()
    };
    let fast = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap();
    let exact = SignedDistanceField::compute_with(
        &md,
        &SdfOptions {
            method: SdfMethod::Exact,
            ..opts
        },
        &NoProgress,
    )
    .unwrap();
    assert_eq!(fast.origin, exact.origin);
    let band = opts.band * fast.spacing;
    let (mut band_nodes, mut far_max) = (0, 0.0f64);
    for (&f, &e) in fast.values.iter().zip(&exact.values) {
        let (f, e) = (f as f64, e as f64);
        if e.abs() > 1e-6 {
            assert_eq!(f < 0.0, e < 0.0, "sign: fast {f}, exact {e}");
        }
        if e.abs() <= band {
            band_nodes += 1;
            assert!(
                (f - e).abs() <= 1e-6 * e.abs().max(1e-3),
                "band: {f} vs {e}"
            );
        } else {
            // Never below the true distance (up to f32 rounding).
            assert!(f.abs() >= e.abs() * (1.0 - 1e-6), "far: {f} below {e}");
            far_max = far_max.max(f.abs() - e.abs());
        }
    }
    assert!(band_nodes > 10_000, "{band_nodes} band nodes");
    // Measured: 0 (every far node exact at 64^3); f32 rounding of values up to ~10.
    assert!(far_max < 1e-5, "far-field error {far_max}");
}

/// Far-field error at 128^3 on a subsample of nodes (every 7th) against exact queries.
/// Measured on the tube (all nodes): max 0.031 h, mean 1.7e-6 h over all nodes (1852 of
/// 2.1 million nodes not exact: ones near concave creases whose true closest triangle is
/// neither a neighbour's nor downhill from it over the mesh). Asserted: max <= 0.1 h and
/// mean <= 1e-3 h, about 3x and 500x margins; errors are never negative.
#[test]
fn far_field_error_at_128_is_small_and_one_sided() {
    let m = model("tube/tube.veg.obj");
    let md = MeshDistance::new(&m).unwrap();
    let f = SignedDistanceField::compute_with(
        &md,
        &SdfOptions {
            resolution: 128,
            ..SdfOptions::default()
        },
        &NoProgress,
    )
    .unwrap();
    let h = f.spacing;
    let n = f.cells[0] + 1;
    let (mut max, mut sum, mut count) = (0.0f64, 0.0, 0);
    for idx in (0..f.values.len()).step_by(7) {
        let (i, j, k) = (idx % n, (idx / n) % n, idx / (n * n));
        let e = md.signed_distance(&f.node_point(i, j, k));
        let v = f.values[idx] as f64;
        if e.abs() > 1e-6 {
            assert_eq!(v < 0.0, e < 0.0, "sign at ({i}, {j}, {k})");
        }
        let err = v.abs() - e.abs();
        assert!(err >= -1e-6 * (1.0 + e.abs()), "below exact: {v} vs {e}");
        max = max.max(err);
        sum += err.max(0.0);
        count += 1;
    }
    let mean = sum / count as f64;
    println!(
        "far-field error: max {:.3e} h, mean {:.3e} h",
        max / h,
        mean / h
    );
    assert!(max <= 0.1 * h, "max far-field error {max} (h = {h})");
    assert!(mean <= 1e-3 * h, "mean far-field error {mean} (h = {h})");
}

#[test]
fn bad_options_are_refused_with_typed_errors() {
    let md = MeshDistance::new(&model("beam3/beam3.obj")).unwrap();
    for opts in [
        SdfOptions {
            band: 0.5,
            ..SdfOptions::default()
        },
        SdfOptions {
            enlarge: f64::NAN,
            ..SdfOptions::default()
        },
    ] {
        let e = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap_err();
        assert!(matches!(e, SdfError::InvalidOption { .. }), "{e}");
    }
    let e = SignedDistanceField::compute_with(
        &md,
        &SdfOptions {
            resolution: 0,
            ..SdfOptions::default()
        },
        &NoProgress,
    )
    .unwrap_err();
    assert!(matches!(e, SdfError::ZeroResolution));
}

/// The bridge is 39 closed pieces pushed into each other: every edge has two triangles,
/// but the pieces cross, so the pseudonormal sign is wrong inside the overlaps. The
/// closed-mesh path refuses it and points to the soup path.
#[test]
fn intersecting_closed_pieces_are_refused_as_a_soup() {
    let m = model("simpleBridge/simpleBridge.obj");
    assert_eq!(m.boundary_and_nonmanifold_edges(), (0, 0));
    let md = MeshDistance::new(&m).unwrap();
    let e = SignedDistanceField::compute(&md, 16, 1.5, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::NotSolid { .. }), "{e}");
    assert!(e.to_string().contains("--soup"), "{e}");
    // The tube's hoses and the beam are single solids.
    for name in ["tube/tube.veg.obj", "beam3/beam3.obj"] {
        MeshDistance::new(&model(name))
            .unwrap()
            .check_solid()
            .unwrap();
    }
}

/// The soup path on the bridge: the offset surface is closed and encloses positive
/// volume; the signed field is negative on the soup (at every triangle centroid) and
/// positive far from it.
#[test]
fn bridge_soup_gives_a_closed_offset_surface_and_a_field_negative_on_the_soup() {
    let m = model("simpleBridge/simpleBridge.obj");
    let opts = SoupOptions {
        resolution: 96,
        ..SoupOptions::default()
    };
    let soup = soup_signed_field(&m, &opts, &NoProgress).unwrap();
    let s = &soup.surface;
    assert_eq!(s.boundary_and_nonmanifold_edges(), (0, 0));
    assert!(s.signed_volume() > 0.0);
    // The offset surface encloses the soup, so it holds more than the pieces' volume
    // (7.98, counting overlaps twice) less their overlaps; and it lies within
    // offset + 1 cell of the soup, so inside the soup's bounding box grown by that much.
    let v = s.signed_volume();
    let grow = (opts.offset + 1.0) * soup.field.spacing;
    let e = m.bounding_box().extent().add_scalar(2.0 * grow);
    assert!(v > 5.0 && v < e.x * e.y * e.z, "volume {v}");
    let f = &soup.field;
    // Every soup point lies at least (offset - 0.95) cells = 0.55 h inside the offset
    // surface (module docs of soup.rs), and trilinear lookup of the 1-Lipschitz field
    // on the same grid errs by less at the soup's sample points in practice; assert
    // the sign only.
    let mut worst = f64::NEG_INFINITY;
    for t in 0..m.triangles.len() {
        let [a, b, c] = m.triangle(t);
        let p = Point3::from((a.coords + b.coords + c.coords) / 3.0);
        worst = worst.max(f.lookup(&p));
    }
    assert!(worst < 0.0, "largest field value on the soup {worst}");
    let b = m.bounding_box();
    for p in [
        b.max + b.extent() * 0.2,
        b.min - b.extent() * 0.2,
        b.max + b.extent() * 5.0,
    ] {
        assert!(f.lookup(&p) > 0.0);
    }
    // The public offset-surface entry point gives the same surface.
    let again = soup_offset_surface(&m, 96, 1.5, &NoProgress).unwrap();
    assert_eq!(again.triangles.len(), s.triangles.len());
}

/// A unit cube (12 triangles) with one face (2 triangles) missing, as a soup: the
/// offset surface is a closed, thick-walled open box, so the field is negative on the
/// walls and positive at the cube's centre (inside the open box, but outside the
/// solid). With the face present the inner shell is enclosed and dropped, and the
/// centre becomes inside.
#[test]
fn open_and_closed_cube_soups() {
    let vertices: Vec<Point3<f64>> = (0..8)
        .map(|c| Point3::new((c & 1) as f64, ((c >> 1) & 1) as f64, (c >> 2) as f64))
        .collect();
    let faces: [[usize; 4]; 6] = [
        [0, 2, 3, 1], // z = 0
        [4, 5, 7, 6], // z = 1
        [0, 1, 5, 4], // y = 0
        [2, 6, 7, 3], // y = 1
        [0, 4, 6, 2], // x = 0
        [1, 3, 7, 5], // x = 1 (the missing one below)
    ];
    let cube = |n: usize| SurfaceMesh {
        vertices: vertices.clone(),
        triangles: faces[..n]
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect(),
    };
    let centre = Point3::new(0.5, 0.5, 0.5);
    let opts = SoupOptions {
        resolution: 40,
        ..SoupOptions::default()
    };
    let open = soup_signed_field(&cube(5), &opts, &NoProgress).unwrap();
    assert_eq!(open.surface.boundary_and_nonmanifold_edges(), (0, 0));
    assert_eq!(open.surface.connected_components(), 1);
    let h = open.field.spacing;
    // Walls of half-thickness 1.5 h: the volume is about 5 faces x 3 h, plus the
    // rounded rims (within 40%).
    let wall = 5.0 * 3.0 * h;
    let v = open.surface.signed_volume();
    assert!(
        (v - wall).abs() < 0.4 * wall,
        "open box volume {v} vs ~{wall}"
    );
    for p in [
        Point3::new(0.5, 0.5, 0.0),
        Point3::new(0.0, 0.3, 0.6),
        Point3::new(0.2, 1.0, 0.7),
    ] {
        assert!(open.field.lookup(&p) < 0.0, "wall point {p}");
    }
    // The centre is 0.5 from the walls: outside the solid by about 0.5 - 1.5 h.
    let c = open.field.lookup(&centre);
    assert!((c - (0.5 - 1.5 * h)).abs() < h, "centre {c}");

    let closed = soup_signed_field(&cube(6), &opts, &NoProgress).unwrap();
    assert_eq!(closed.surface.connected_components(), 1);
    assert!(closed.field.lookup(&centre) < -0.4);
}

/// The stages a [`Recorder`] saw, as (name, total, units done).
fn stages_of(r: &Recorder) -> Vec<(String, u64, u64)> {
    r.take()
        .into_iter()
        .map(|s| (s.name, s.total, s.done))
        .collect()
}

#[test]
fn every_stage_is_reported_with_its_total_and_completed() {
    let m = model("beam3/beam3.obj");
    let md = MeshDistance::new(&m).unwrap();
    let stages = Recorder::default();
    let r = 32usize;
    let n = (r + 1) as u64;
    let opts = SdfOptions {
        resolution: r,
        ..SdfOptions::default()
    };
    SignedDistanceField::compute_with(&md, &opts, &stages).unwrap();
    // Slabs of 4 z-planes, two rounds of six sweeps, every node signed.
    let band = [
        (stage::BAND.to_string(), n.div_ceil(4), n.div_ceil(4)),
        (stage::PROPAGATE.to_string(), 12, 12),
    ];
    let mut expected = band.to_vec();
    expected.push((stage::SIGN.to_string(), n * n * n, n * n * n));
    assert_eq!(stages_of(&stages), expected);

    let exact = SdfOptions {
        method: SdfMethod::Exact,
        ..opts
    };
    SignedDistanceField::compute_with(&md, &exact, &stages).unwrap();
    assert_eq!(stages_of(&stages), [(stage::EXACT.to_string(), n, n)]);

    // A soup: the unsigned band, the offset surface, then the signed field.
    let soup = SoupOptions {
        resolution: r,
        ..SoupOptions::default()
    };
    soup_signed_field(&m, &soup, &stages).unwrap();
    let names: Vec<String> = stages_of(&stages).into_iter().map(|s| s.0).collect();
    assert_eq!(
        names,
        [
            stage::BAND,
            stage::PROPAGATE,
            stage::ISOSURFACE,
            stage::COMPONENTS,
            stage::BAND,
            stage::PROPAGATE,
            stage::SIGN
        ]
    );
}

/// A closed cube of side `side` (12 triangles, outward) with its minimum corner at `at`.
fn closed_cube(side: f64, at: [f64; 3]) -> SurfaceMesh {
    let vertices: Vec<Point3<f64>> = (0..8)
        .map(|c| {
            Point3::new(
                at[0] + side * (c & 1) as f64,
                at[1] + side * ((c >> 1) & 1) as f64,
                at[2] + side * (c >> 2) as f64,
            )
        })
        .collect();
    let faces: [[usize; 4]; 6] = [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ];
    SurfaceMesh {
        vertices,
        triangles: faces
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect(),
    }
}

/// Reliability: a cube with coordinates around 1e300 (finite box, but distances that
/// overflow the f32 values and their squares the f64 arithmetic), one whose box is not
/// finite, and a unit cube far from the origin (spacing below the coordinates' rounding)
/// are refused with typed errors, on both the closed and the soup path; nothing
/// non-finite is ever produced. A large but representable cube still works.
#[test]
fn huge_or_far_meshes_are_refused_not_filled_with_non_finite_values() {
    let opts = SdfOptions {
        resolution: 8,
        ..SdfOptions::default()
    };
    let soup = SoupOptions {
        resolution: 16,
        ..SoupOptions::default()
    };
    let huge = closed_cube(2e300, [-1e300; 3]);
    let md = MeshDistance::new(&huge).unwrap();
    let e = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::GridOutOfRange { .. }), "{e}");
    assert!(e.to_string().contains("overflow"), "{e}");
    let e = SignedDistanceField::compute_with(
        &md,
        &SdfOptions {
            method: SdfMethod::Exact,
            ..opts
        },
        &NoProgress,
    )
    .unwrap_err();
    assert!(matches!(e, SdfError::GridOutOfRange { .. }), "{e}");
    let e = soup_signed_field(&huge, &soup, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::GridOutOfRange { .. }), "{e}");

    // Corners at -1e308 and 0.5e308: the enlarged box is infinite.
    let infinite = closed_cube(1.5e308, [-1e308; 3]);
    let md = MeshDistance::new(&infinite).unwrap();
    let e = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap_err();
    assert!(
        matches!(
            e,
            SdfError::DegenerateBox { .. } | SdfError::GridOutOfRange { .. }
        ),
        "{e}"
    );
    let e = soup_signed_field(&infinite, &soup, &NoProgress).unwrap_err();
    assert!(
        matches!(
            e,
            SdfError::DegenerateBox { .. } | SdfError::GridOutOfRange { .. }
        ),
        "{e}"
    );

    // A cube of side 1e5 at 1e20 (ulp 16384): the nodes would barely be distinct.
    let far = closed_cube(1e5, [1e20; 3]);
    let md = MeshDistance::new(&far).unwrap();
    let e = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::GridOutOfRange { .. }), "{e}");
    assert!(e.to_string().contains("spacing"), "{e}");

    // Squared distances of a 1e30 cube overflow the f32 working values.
    let md = MeshDistance::new(&closed_cube(2e30, [-1e30; 3])).unwrap();
    let e = SignedDistanceField::compute_with(&md, &opts, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::GridOutOfRange { .. }), "{e}");

    // Large but representable: every value finite, the centre at minus half the side.
    let big = closed_cube(2e12, [-1e12; 3]);
    let md = MeshDistance::new(&big).unwrap();
    for method in [SdfMethod::BandAndPropagate, SdfMethod::Exact] {
        let f = SignedDistanceField::compute_with(&md, &SdfOptions { method, ..opts }, &NoProgress)
            .unwrap();
        assert!(f.values.iter().all(|v| v.is_finite()));
        let c = f.lookup(&Point3::origin());
        assert!((c + 1e12).abs() < 1e-3 * 1e12, "{c}");
    }
}

/// Reliability: exact queries at non-finite points, or so far away that the squared
/// distance overflows, are typed errors (`try_*`) or NaN, never a panic.
#[test]
fn non_finite_and_overflowing_queries_do_not_panic() {
    let md = MeshDistance::new(&closed_cube(1.0, [0.0; 3])).unwrap();
    for p in [
        Point3::new(f64::NAN, 0.0, 0.0),
        Point3::new(0.0, f64::INFINITY, 0.0),
        Point3::new(0.0, 0.0, 1e308),
        Point3::new(-1e200, 1e200, 0.0),
    ] {
        let e = md.try_closest_point(&p).unwrap_err();
        assert!(matches!(e, SdfError::BadQuery { .. }), "{e}");
        assert!(md.try_signed_distance(&p).is_err());
        assert!(md.signed_distance(&p).is_nan());
        assert!(md.closest_point(&p).distance.is_nan());
        assert!(md.signed_distance_bounded(&p, 1.0).is_none());
    }
    let inside = md.try_signed_distance(&Point3::new(0.5, 0.5, 0.5)).unwrap();
    assert!((inside + 0.5).abs() < 1e-12, "{inside}");
}

/// Reliability: the default memory budget is 2 GiB, so `haptics sdf -r 1024` (about
/// 12 GiB) is refused before anything is allocated, with a message that says what is
/// needed, the budget and how to raise it; the budget is an option.
#[test]
fn memory_budget_defaults_to_2_gib_and_is_overridable() {
    use haptics::geometry::sdf::{estimate_bytes, MAX_SDF_BYTES};
    assert_eq!(MAX_SDF_BYTES, 2 << 30);
    assert_eq!(SdfOptions::default().memory_budget_bytes, MAX_SDF_BYTES);
    assert_eq!(SoupOptions::default().memory_budget_bytes, MAX_SDF_BYTES);
    let md = MeshDistance::new(&closed_cube(1.0, [0.0; 3])).unwrap();
    let need = estimate_bytes(1024, SdfMethod::BandAndPropagate, 12);
    assert!(need > MAX_SDF_BYTES);
    let e = SignedDistanceField::compute_with(
        &md,
        &SdfOptions {
            resolution: 1024,
            ..SdfOptions::default()
        },
        &NoProgress,
    )
    .unwrap_err();
    match &e {
        SdfError::TooLarge {
            resolution,
            bytes,
            limit,
        } => {
            assert_eq!((*resolution, *bytes, *limit), (1024, need, MAX_SDF_BYTES));
        }
        other => panic!("expected TooLarge, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains(&need.to_string()), "{msg}");
    assert!(msg.contains(&MAX_SDF_BYTES.to_string()), "{msg}");
    assert!(msg.contains("--max-memory"), "{msg}");
    // A tiny budget refuses a small grid; a larger one lets it through.
    let small = SdfOptions {
        resolution: 8,
        memory_budget_bytes: 1000,
        ..SdfOptions::default()
    };
    let e = SignedDistanceField::compute_with(&md, &small, &NoProgress).unwrap_err();
    assert!(matches!(e, SdfError::TooLarge { limit: 1000, .. }), "{e}");
    let e = soup_signed_field(
        &closed_cube(1.0, [0.0; 3]),
        &SoupOptions {
            resolution: 16,
            memory_budget_bytes: 1000,
            ..SoupOptions::default()
        },
        &NoProgress,
    )
    .unwrap_err();
    assert!(matches!(e, SdfError::TooLarge { limit: 1000, .. }), "{e}");
    let enough = SdfOptions {
        memory_budget_bytes: 1 << 20,
        ..small
    };
    SignedDistanceField::compute_with(&md, &enough, &NoProgress).unwrap();
}
