//! Integration tests of the mesh readers and writers on the shared Vega models, on
//! truncated and garbled copies of them, and on small generated TetGen / STL files.

use std::path::{Path, PathBuf};

use haptics::mesh::{
    bou::read_bou, bou::write_bou, error::Location, error::MeshError, interp::read_interp,
    read::default_material, read::read_any, read::read_surface, read::read_volume, read::AnyMesh,
    read_obj, stl::read_stl, stl::write_stl_ascii, stl::write_stl_binary, tetgen::read_tetgen,
    veg::check_elements, veg::read_veg, veg::write_veg, volume::ElementKind, volume::Material,
    write_obj, SurfaceMesh,
};
use haptics_devices::rng::SplitMix64;

const BRIDGE: &str = "simpleBridge/simpleBridge_resol92-b1.155_enlarged";

fn model(rel: &str) -> PathBuf {
    haptics::assets::model(rel)
}

fn read_text(rel: &str) -> String {
    std::fs::read_to_string(model(rel)).unwrap()
}

fn put(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// 1-based number of the first line equal to `line`.
fn line_of(text: &str, line: &str) -> usize {
    text.lines().position(|l| l == line).unwrap() + 1
}

/// `text` with 1-based line `n` replaced by `f(line)`.
fn edit_line(text: &str, n: usize, f: impl Fn(&str) -> String) -> String {
    let mut out: Vec<String> = text.lines().map(str::to_string).collect();
    out[n - 1] = f(&out[n - 1]);
    out.join("\n") + "\n"
}

/// Replaces the `k`-th whitespace token of a line.
fn set_token(line: &str, k: usize, value: &str) -> String {
    let mut t: Vec<&str> = line.split_whitespace().collect();
    t[k] = value;
    t.join(" ")
}

/// Asserts that `e` points at 1-based line `line` and names the file `path`.
#[track_caller]
fn assert_at(e: &MeshError, path: &Path, line: usize) {
    assert_at_line(e, line);
    assert_names(e, path);
}

/// Asserts that `e` points at 1-based line `line`; a failure shows the error (file,
/// location and reason) next to the expected line. (The unit tests in src/mesh use the
/// same helper from src/mesh/error.rs, which is test-only and so not visible here.)
#[track_caller]
fn assert_at_line(e: &MeshError, line: usize) {
    assert_location(e, Location::Line(line));
}

/// Asserts that `e` points at 0-based byte `offset`; a failure shows the error next to the
/// expected offset.
#[track_caller]
fn assert_at_offset(e: &MeshError, offset: u64) {
    assert_location(e, Location::Offset(offset));
}

#[track_caller]
fn assert_location(e: &MeshError, expected: Location) {
    assert_eq!(
        e.location(),
        Some(&expected),
        "expected an error at {expected}, got: {e}"
    );
}

fn assert_names(e: &MeshError, path: &Path) {
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        e.to_string().contains(name),
        "message does not name {name}: {e}"
    );
}

/// `# Number of vertices: N` / `# Number of faces: M` header comments.
fn header_count(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .take(20)
        .find_map(|l| l.strip_prefix(&format!("# Number of {key}: ")))
        .map(|n| n.trim().parse().unwrap())
}

/// Triangles of a fan triangulation of all `f` lines, counted independently.
fn fan_triangles(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with("f "))
        .map(|l| l.split_whitespace().count() - 3)
        .sum()
}

// ------------------------------------------------------------------ the models

#[test]
fn veg_models_have_expected_counts_and_materials() {
    let m = read_veg(&model("beam3/beam3.veg")).unwrap();
    assert_eq!(
        (m.vertices.len(), m.num_elements(), m.kind),
        (208, 75, ElementKind::Hex)
    );
    assert_eq!(m.materials, vec![Material::new("BODY", 1000.0, 1e7, 0.45)]);
    assert!(m.element_material.iter().all(|&i| i == 0));
    check_elements(&m, &model("beam3/beam3.veg")).unwrap();

    let m = read_veg(&model("beam3/beam3_tet.veg")).unwrap();
    assert_eq!(
        (m.vertices.len(), m.num_elements(), m.kind),
        (208, 450, ElementKind::Tet)
    );
    check_elements(&m, &model("beam3/beam3_tet.veg")).unwrap();

    let m = read_veg(&model(&format!("{BRIDGE}.veg"))).unwrap();
    assert_eq!(
        (m.vertices.len(), m.num_elements(), m.kind),
        (3923, 1736, ElementKind::Hex)
    );
    assert_eq!(m.materials, vec![Material::new("EL", 1000.0, 1e7, 0.45)]);
    check_elements(&m, &model(&format!("{BRIDGE}.veg"))).unwrap();
}

#[test]
fn bou_models_read_in_range() {
    let b = read_bou(&model("beam3/beam3.bou"), Some(208)).unwrap();
    assert_eq!(b, vec![50, 51, 102, 103, 154, 155, 206, 207]);
    let b = read_bou(&model(&format!("{BRIDGE}.bou")), Some(3923)).unwrap();
    assert_eq!(b.len(), 44);
    // simpleBridge.bou belongs to no mesh in the set (its indices do not select the
    // bridge ends of the enlarged .veg), but all of them lie within its 3923 vertices.
    let b = read_bou(&model("simpleBridge/simpleBridge.bou"), Some(3923)).unwrap();
    assert_eq!((b.len(), b.last().copied()), (121, Some(3843)));
    // tube.bou: the tube's .veg is not in the set; the indices fit the 25620 vertices of
    // tube.veg.obj (generated from it).
    let tube = read_obj(&model("tube/tube.veg.obj")).unwrap();
    let b = read_bou(&model("tube/tube.bou"), Some(tube.vertices.len())).unwrap();
    assert_eq!((b.len(), b.last().copied()), (840, Some(25619)));
}

#[test]
fn bridge_interp_maps_veg_to_render_mesh() {
    let veg = read_veg(&model(&format!("{BRIDGE}.veg"))).unwrap();
    let render = read_obj(&model("simpleBridge/simpleBridge.obj")).unwrap();
    let render2 = read_obj(&model("vega-realtime-bridge/simpleBridge.obj")).unwrap();
    assert_eq!(render.vertices.len(), 16085);
    assert_eq!(render2.vertices.len(), 16085);
    let it = read_interp(
        &model(&format!("{BRIDGE}.interp")),
        Some(render.vertices.len()),
        Some(veg.vertices.len()),
    )
    .unwrap();
    assert_eq!((it.num_vertices(), it.nodes_per_vertex), (16085, 8));
    for w in it.weights.chunks(8) {
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-5);
    }
    // The interpolation reproduces the render mesh from the .veg vertices (up to the six
    // printed decimals of the weights), so it maps simpleBridge.obj, not the enlarged OBJ
    // (which has the .veg's 3923 vertices).
    let x = it.interpolate_points(&veg.vertices);
    let worst = x
        .iter()
        .zip(&render.vertices)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    eprintln!("worst interpolation error vs simpleBridge.obj: {worst:e}");
    assert!(worst < 1e-4, "worst interpolation error {worst}");
}

#[test]
fn every_obj_model_parses_with_header_counts() {
    for rel in [
        "beam3/beam3.obj",
        "beam3/beam3_tet.obj",
        "simpleBridge/simpleBridge.obj",
        &format!("{BRIDGE}.obj"),
        "tube/tube.veg.obj",
        "vega-realtime-bridge/simpleBridge.obj",
    ] {
        let text = read_text(rel);
        let t0 = std::time::Instant::now();
        let m = read_obj(&model(rel)).unwrap();
        let dt = t0.elapsed();
        eprintln!("{rel}: {dt:?}");
        assert!(dt.as_secs_f64() < 2.0, "{rel} took {dt:?}");
        assert_eq!(m.triangles.len(), fan_triangles(&text), "{rel}");
        match (
            header_count(&text, "vertices"),
            header_count(&text, "faces"),
        ) {
            (Some(v), Some(f)) => {
                assert_eq!(m.vertices.len(), v, "{rel}");
                assert_eq!(
                    text.lines().filter(|l| l.starts_with("f ")).count(),
                    f,
                    "{rel}"
                );
            }
            _ => assert_eq!(rel, "simpleBridge/simpleBridge.obj"),
        }
    }
    let m = read_obj(&model("simpleBridge/simpleBridge.obj")).unwrap();
    assert_eq!((m.vertices.len(), m.triangles.len()), (16085, 32014));
    let m = read_obj(&model(&format!("{BRIDGE}.obj"))).unwrap();
    assert_eq!((m.vertices.len(), m.triangles.len()), (3923, 2 * 3848));
    let m = read_obj(&model("beam3/beam3.obj")).unwrap();
    assert_eq!((m.vertices.len(), m.triangles.len()), (208, 412));
}

#[test]
fn read_any_dispatches_on_the_models() {
    for rel in ["beam3/beam3.obj", "beam3/beam3.veg", "tube/tube.veg.obj"] {
        match (read_any(&model(rel)).unwrap(), rel.ends_with(".obj")) {
            (AnyMesh::Surface(_), true) | (AnyMesh::Volume(_), false) => {}
            _ => panic!("{rel}"),
        }
    }
    assert!(read_surface(&model("beam3/beam3.obj")).is_ok());
    assert!(read_volume(&model("beam3/beam3_tet.veg")).is_ok());
    let e = read_any(&model("beam3/beam3.bou")).unwrap_err();
    assert!(matches!(e, MeshError::Unsupported { .. }), "{e}");
}

// ------------------------------------------------------------------ truncation

/// Cut positions: 10 %, 50 %, 90 % of the file, and a byte in the middle of the line
/// that contains the 50 % point.
fn cuts(len: usize, text: &str) -> Vec<usize> {
    let mut v = vec![len / 10, len / 2, len * 9 / 10];
    let half = len / 2;
    let start = text[..half].rfind('\n').map_or(0, |i| i + 1);
    let end = text[half..].find('\n').map_or(len, |i| half + i);
    v.push((start + end) / 2);
    v
}

#[test]
fn truncated_veg_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "beam3/beam3.veg",
        "beam3/beam3_tet.veg",
        &format!("{BRIDGE}.veg"),
    ] {
        let text = read_text(rel);
        for cut in cuts(text.len(), &text) {
            let p = put(dir.path(), "cut.veg", &text.as_bytes()[..cut]);
            let e = read_veg(&p).expect_err(&format!("{rel} cut at {cut}"));
            assert!(
                matches!(e, MeshError::Truncated { .. } | MeshError::Syntax { .. }),
                "{rel} {cut}: {e}"
            );
            assert_names(&e, &p);
        }
        // A cut at a line end in the middle of the element list: counts mismatch, reported
        // at the line after the last one.
        let el = line_of(&text, "*ELEMENTS");
        let keep: String = text
            .lines()
            .take(el + 10)
            .map(|l| format!("{l}\n"))
            .collect();
        let p = put(dir.path(), "cut.veg", &keep);
        let e = read_veg(&p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at(&e, &p, el + 11);
        assert!(e.to_string().contains("found 8"), "{e}");
    }
}

#[test]
fn truncated_obj_with_count_header_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "beam3/beam3.obj",
        "beam3/beam3_tet.obj",
        &format!("{BRIDGE}.obj"),
        "tube/tube.veg.obj",
    ] {
        let text = read_text(rel);
        for cut in cuts(text.len(), &text) {
            let p = put(dir.path(), "cut.obj", &text.as_bytes()[..cut]);
            let e = read_obj(&p).expect_err(&format!("{rel} cut at {cut}"));
            assert_names(&e, &p);
        }
    }
    // Without the count header a cut at a line end is a valid, smaller mesh.
    let text = read_text("simpleBridge/simpleBridge.obj");
    let cut = text[..text.len() * 19 / 20].rfind('\n').unwrap() + 1;
    let p = put(dir.path(), "cut.obj", &text.as_bytes()[..cut]);
    assert!(read_obj(&p).unwrap().triangles.len() < 32014);
}

#[test]
fn truncated_interp_is_an_error_when_the_count_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let text = read_text(&format!("{BRIDGE}.interp"));
    for cut in cuts(text.len(), &text) {
        let p = put(dir.path(), "cut.interp", &text.as_bytes()[..cut]);
        let e = read_interp(&p, Some(16085), Some(3923)).expect_err(&format!("cut at {cut}"));
        assert!(
            matches!(e, MeshError::Truncated { .. } | MeshError::Syntax { .. }),
            "{e}"
        );
        assert_names(&e, &p);
    }
}

#[test]
fn truncated_bou_reads_the_vertices_before_the_cut() {
    // .bou has no count, and a prefix of a list of positive integers is one: a cut reads
    // as the vertices before it, the last perhaps cut short ("1234" read as "12"), and
    // never as the whole list. The reader sorts and deduplicates, so the vertices read
    // are those of the file but at most one (the cut-short number).
    let dir = tempfile::tempdir().unwrap();
    for rel in ["beam3/beam3.bou", &format!("{BRIDGE}.bou"), "tube/tube.bou"] {
        let text = read_text(rel);
        let full = read_bou(&model(rel), None).unwrap();
        for cut in cuts(text.len(), &text) {
            let p = put(dir.path(), "cut.bou", &text.as_bytes()[..cut]);
            let v = read_bou(&p, None).unwrap_or_else(|e| panic!("{rel} cut at {cut}: {e}"));
            assert!(v != full, "{rel} cut at {cut} read as the whole list");
            assert!(
                v.len() <= full.len(),
                "{rel} cut at {cut}: {} vertices",
                v.len()
            );
            let foreign: Vec<_> = v
                .iter()
                .filter(|i| full.binary_search(i).is_err())
                .collect();
            assert!(
                foreign.len() <= 1,
                "{rel} cut at {cut}: not in the file {foreign:?}"
            );
        }
    }
}

// ------------------------------------------------------------------ garbling

#[test]
fn garbled_veg_errors_point_at_the_line() {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["beam3/beam3.veg", &format!("{BRIDGE}.veg")] {
        let text = read_text(rel);
        let p = dir.path().join("g.veg");
        let read = |t: &str| {
            std::fs::write(&p, t).unwrap();
            read_veg(&p).unwrap_err()
        };
        let e = read(&edit_line(&text, 8, |l| set_token(l, 2, "abc")));
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at(&e, &p, 8);

        let e = read(&edit_line(&text, 9, |l| set_token(l, 1, "nan")));
        assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
        assert_at(&e, &p, 9);

        let nv = read_veg(&model(rel)).unwrap().vertices.len();
        let first_el = line_of(&text, "*ELEMENTS") + 3;
        let e = read(&edit_line(&text, first_el, |l| set_token(l, 2, "99999")));
        assert!(
            matches!(e, MeshError::IndexOutOfRange { index: 99999, count, .. } if count == nv),
            "{e}"
        );
        assert_at(&e, &p, first_el);

        // Delete the *MATERIAL section: the region names a missing material.
        let mat = text
            .lines()
            .position(|l| l.starts_with("*MATERIAL"))
            .unwrap()
            + 1;
        let name = text.lines().nth(mat - 1).unwrap()["*MATERIAL".len()..]
            .trim()
            .to_string();
        let without: String = text
            .lines()
            .enumerate()
            .filter(|(i, _)| *i + 1 != mat && *i + 1 != mat + 1)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let region = line_of(&without, "*REGION") + 1;
        let e = read(&without);
        assert!(
            matches!(&e, MeshError::Undefined { what: "material", name: n, .. } if *n == name),
            "{e}"
        );
        assert_at(&e, &p, region);

        let region = line_of(&text, "*REGION") + 1;
        let e = read(&edit_line(&text, region, |_| format!("top, {name}")));
        assert!(
            matches!(&e, MeshError::Undefined { what: "set", name: n, .. } if n == "top"),
            "{e}"
        );
        assert_at(&e, &p, region);

        let e = read(&edit_line(&text, mat + 1, |_| {
            "ENU, 1000, 10000000, 0.5".into()
        }));
        assert!(matches!(e, MeshError::InvalidMaterial { .. }), "{e}");
        assert_at(&e, &p, mat + 1);

        // One element too many declared: the list is cut short before *MATERIAL.
        let header = first_el - 1;
        let e = read(&edit_line(&text, header, |l| {
            let m: usize = l.split_whitespace().next().unwrap().parse().unwrap();
            set_token(l, 0, &(m + 1).to_string())
        }));
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at(&e, &p, mat);

        // Not UTF-8 on line 20.
        let mut bytes = text.clone().into_bytes();
        let off = text.lines().take(19).map(|l| l.len() + 1).sum::<usize>() + 2;
        bytes.insert(off, 0xff);
        std::fs::write(&p, &bytes).unwrap();
        let e = read_veg(&p).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at(&e, &p, 20);
    }
}

#[test]
fn missing_region_coverage_is_missing_material() {
    let dir = tempfile::tempdir().unwrap();
    let text = read_text("beam3/beam3.veg");
    let t = text.replace(
        "*REGION\nallElements, BODY\n",
        "*MATERIAL SOFT\nENU, 1000, 1000000, 0.45\n\n*SET left\n1, 2, 3,\n4,\n\n*REGION\nleft, SOFT\n",
    );
    let p = put(dir.path(), "m.veg", t);
    let e = read_veg(&p).unwrap_err();
    assert!(
        matches!(
            e,
            MeshError::MissingMaterial {
                count: 71,
                first: 4,
                first_one_based: 5,
                ..
            }
        ),
        "{e}"
    );
    assert_names(&e, &p);
}

#[test]
fn include_errors_name_the_included_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = read_text("beam3/beam3.veg");
    let el = line_of(&text, "*ELEMENTS");
    let lines: Vec<&str> = text.lines().collect();
    let verts = lines[..el - 1].join("\n") + "\n";
    let rest = lines[el - 1..].join("\n") + "\n";
    put(dir.path(), "verts.veg", &verts);
    let main = put(
        dir.path(),
        "main.veg",
        format!("# main\n*INCLUDE verts.veg\n{rest}"),
    );
    assert_eq!(
        read_veg(&main).unwrap(),
        read_veg(&model("beam3/beam3.veg")).unwrap()
    );
    let inc = put(
        dir.path(),
        "verts.veg",
        edit_line(&verts, 12, |l| set_token(l, 3, "abc")),
    );
    let e = read_veg(&main).unwrap_err();
    assert_at(&e, &inc, 12);
    assert!(!e.to_string().contains("main.veg"), "{e}");
}

#[test]
fn garbled_obj_errors_point_at_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = read_text("beam3/beam3.obj");
    let p = dir.path().join("g.obj");
    let read = |t: &str| {
        std::fs::write(&p, t).unwrap();
        read_obj(&p).unwrap_err()
    };
    let v = text.lines().position(|l| l.starts_with("v ")).unwrap() + 1 + 5;
    let f = text.lines().position(|l| l.starts_with("f ")).unwrap() + 1 + 3;
    let e = read(&edit_line(&text, v, |l| set_token(l, 2, "abc")));
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, v);
    let e = read(&edit_line(&text, v, |l| set_token(l, 1, "nan")));
    assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
    assert_at(&e, &p, v);
    let e = read(&edit_line(&text, f, |l| set_token(l, 2, "99999//3")));
    assert!(
        matches!(
            e,
            MeshError::IndexOutOfRange {
                index: 99999,
                count: 208,
                ..
            }
        ),
        "{e}"
    );
    assert_at(&e, &p, f);
    let e = read(&edit_line(&text, f, |l| set_token(l, 1, "0")));
    assert!(
        matches!(e, MeshError::IndexOutOfRange { index: 0, .. }),
        "{e}"
    );
    assert_at(&e, &p, f);
    let e = read(&edit_line(&text, f, |l| {
        l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    }));
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, f);
}

#[test]
fn garbled_bou_and_interp_errors_point_at_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let bou = read_text(&format!("{BRIDGE}.bou"));
    let p = put(
        dir.path(),
        "g.bou",
        edit_line(&bou, 3, |l| l.replacen("19", "abc", 1)),
    );
    let e = read_bou(&p, Some(3923)).unwrap_err();
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, 3);
    let p = put(
        dir.path(),
        "g.bou",
        edit_line(&bou, 4, |l| l.replacen("3904", "99999", 1)),
    );
    let e = read_bou(&p, Some(3923)).unwrap_err();
    assert!(
        matches!(
            e,
            MeshError::IndexOutOfRange {
                index: 99999,
                count: 3923,
                ..
            }
        ),
        "{e}"
    );
    assert_at(&e, &p, 4);

    let interp = read_text(&format!("{BRIDGE}.interp"));
    let p = dir.path().join("g.interp");
    let read = |t: &str| {
        std::fs::write(&p, t).unwrap();
        read_interp(&p, Some(16085), Some(3923)).unwrap_err()
    };
    let e = read(&edit_line(&interp, 100, |l| set_token(l, 2, "abc")));
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, 100);
    let e = read(&edit_line(&interp, 200, |l| set_token(l, 4, "nan")));
    assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
    assert_at(&e, &p, 200);
    let e = read(&edit_line(&interp, 300, |l| set_token(l, 1, "99999")));
    assert!(
        matches!(
            e,
            MeshError::IndexOutOfRange {
                index: 99999,
                count: 3923,
                ..
            }
        ),
        "{e}"
    );
    assert_at(&e, &p, 300);
    let e = read(&edit_line(&interp, 400, |l| set_token(l, 0, "7")));
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, 400);
    let e = read(&edit_line(&interp, 500, |l| {
        l.split_whitespace().take(15).collect::<Vec<_>>().join(" ")
    }));
    assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
    assert_at(&e, &p, 500);
}

// ------------------------------------------------------------------ STL

fn corners(m: &SurfaceMesh) -> Vec<[[f64; 3]; 3]> {
    (0..m.triangles.len())
        .map(|t| m.triangle(t).map(|p| [p.x, p.y, p.z]))
        .collect()
}

#[test]
fn stl_round_trips_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let m = read_obj(&model("beam3/beam3.obj")).unwrap();

    let a = dir.path().join("beam.stl");
    write_stl_ascii(&a, &m).unwrap();
    let back = read_stl(&a).unwrap();
    assert_eq!(corners(&back), corners(&m));
    assert_eq!(back.vertices.len(), 208);

    let b = dir.path().join("beam_bin.stl");
    write_stl_binary(&b, &m).unwrap();
    let back = read_surface(&b).unwrap();
    let as_f32 = |c: Vec<[[f64; 3]; 3]>| -> Vec<[[f32; 3]; 3]> {
        c.iter().map(|t| t.map(|p| p.map(|x| x as f32))).collect()
    };
    assert_eq!(as_f32(corners(&back)), as_f32(corners(&m)));
    assert_eq!(back.vertices.len(), 208);

    let bytes = std::fs::read(&b).unwrap();
    assert_eq!(bytes.len(), 84 + 50 * 412);
    for cut in [0, 50, 83, 84, 84 + 49, bytes.len() / 2, bytes.len() - 1] {
        let p = put(dir.path(), "cut.stl", &bytes[..cut]);
        let e = read_stl(&p).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "cut {cut}: {e}");
        assert_at_offset(&e, cut as u64);
        assert_names(&e, &p);
    }
    let mut nan = bytes.clone();
    nan[84 + 50 * 7 + 20..84 + 50 * 7 + 24].copy_from_slice(&f32::NAN.to_le_bytes());
    let p = put(dir.path(), "nan.stl", &nan);
    let e = read_stl(&p).unwrap_err();
    assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
    assert_at_offset(&e, 454);

    let text = std::fs::read_to_string(&a).unwrap();
    let p = put(dir.path(), "cut_ascii.stl", &text[..text.len() / 2]);
    assert!(read_stl(&p).is_err());
}

// ------------------------------------------------------------------ writers

#[test]
fn veg_obj_bou_writers_round_trip_on_models() {
    let dir = tempfile::tempdir().unwrap();
    for rel in [
        "beam3/beam3.veg",
        "beam3/beam3_tet.veg",
        &format!("{BRIDGE}.veg"),
    ] {
        let m = read_veg(&model(rel)).unwrap();
        let p = dir.path().join("w.veg");
        write_veg(&p, &m).unwrap();
        assert_eq!(read_veg(&p).unwrap(), m, "{rel}");
    }
    let mut m = read_veg(&model("beam3/beam3.veg")).unwrap();
    m.materials.push(Material::new("SOFT", 500.0, 1e5, 0.3));
    for e in (0..m.num_elements()).step_by(3) {
        m.element_material[e] = 1;
    }
    let p = dir.path().join("two.veg");
    write_veg(&p, &m).unwrap();
    assert_eq!(read_veg(&p).unwrap(), m);

    let s = read_obj(&model("tube/tube.veg.obj")).unwrap();
    let p = dir.path().join("w.obj");
    write_obj(&p, &s).unwrap();
    assert_eq!(read_obj(&p).unwrap(), s);

    let b = read_bou(&model("tube/tube.bou"), None).unwrap();
    let p = dir.path().join("w.bou");
    write_bou(&p, &b).unwrap();
    assert_eq!(read_bou(&p, None).unwrap(), b);
}

// ------------------------------------------------------------------ TetGen

#[test]
fn tetgen_pairs_zero_and_one_based_with_orientation_fix() {
    let dir = tempfile::tempdir().unwrap();
    let mat = Material::new("rubber", 1100.0, 2e6, 0.4);
    // Unit cube corners; two tets, written with TetGen's opposite orientation.
    let node0 = "# 0-based\n5 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n";
    let ele0 = "2 4 0\n0 0 2 1 3\n1 1 3 2 4\n";
    let n = put(dir.path(), "a.node", node0);
    let e = put(dir.path(), "a.ele", ele0);
    let m = read_tetgen(&n, &e, &mat).unwrap();
    assert_eq!((m.vertices.len(), m.num_elements()), (5, 2));
    assert_eq!(m.element(0), &[0, 1, 2, 3]);
    assert_eq!(m.element(1), &[1, 2, 3, 4]);
    assert!(m.element_defects().is_empty());
    assert_eq!(m.materials, vec![mat.clone()]);

    // 1-based, attributes and boundary markers, positively oriented: kept as is.
    let node1 =
        "5 3 1 1\n1 0 0 0 0.5 1\n2 1 0 0 0.5 1\n3 0 1 0 0.5 1\n4 0 0 1 0.5 1\n5 1 1 1 0.5 1\n";
    let ele1 = "# regions\n2 4 1\n1 1 2 3 4 -3\n2 2 4 3 5 7\n";
    let n = put(dir.path(), "b.node", node1);
    put(dir.path(), "b.ele", ele1);
    let m = read_volume(&n).unwrap();
    assert_eq!(m.element(0), &[0, 1, 2, 3]);
    assert_eq!(m.element(1), &[1, 3, 2, 4]);
    let names: Vec<&str> = m.materials.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["region-3", "region7"]);
    assert_eq!(m.materials[0].density, default_material().density);
    assert_eq!(m.element_material, vec![0, 1]);

    // Mixed orientation is not "fixed"; check_elements reports the inverted one.
    put(dir.path(), "c.node", node0);
    let e = put(dir.path(), "c.ele", "2 4 0\n0 0 1 2 3\n1 1 3 2 4\n");
    let m = read_volume(&e).unwrap();
    let err = check_elements(&m, &e).unwrap_err();
    assert!(
        matches!(
            err,
            MeshError::BadElement {
                index: 1,
                one_based: 2,
                ..
            }
        ),
        "{err}"
    );

    // Errors name the file and line.
    let e = put(dir.path(), "d.ele", "2 4 0\n0 0 1 2 3\n1 1 3 2 9\n");
    put(dir.path(), "d.node", node0);
    let err = read_volume(&e).unwrap_err();
    assert!(
        matches!(
            err,
            MeshError::IndexOutOfRange {
                index: 9,
                count: 5,
                ..
            }
        ),
        "{err}"
    );
    assert_at(&err, &e, 3);
}

// ------------------------------------------------------------------ fuzz

/// A uniform index in [0, n) from the project's seeded generator (0 when n is 0).
fn below(rng: &mut SplitMix64, n: usize) -> usize {
    rng.below(n as u64) as usize
}

fn mutate(rng: &mut SplitMix64, bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let pos = below(rng, b.len());
    match below(rng, 5) {
        0 => b[pos] ^= 1 << below(rng, 8),
        1 => b.truncate(pos),
        2 => b[pos] = b"0123456789-+.,*#eE \n\r/naif\xff"[below(rng, 24)],
        3 => b.insert(pos, rng.next_u64() as u8),
        _ => {
            let end = (pos + below(rng, 64)).min(b.len());
            b.drain(pos..end);
        }
    }
    b
}

#[test]
fn fuzzed_inputs_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64::new(0x5eed);
    let mut outcomes = [0usize; 2];
    let stl = dir.path().join("f.stl");
    write_stl_binary(&stl, &read_obj(&model("beam3/beam3.obj")).unwrap()).unwrap();
    let stl_bytes = std::fs::read(&stl).unwrap();
    for (rel, ext) in [
        ("beam3/beam3.veg", "veg"),
        ("beam3/beam3.obj", "obj"),
        ("beam3/beam3.bou", "bou"),
        ("", "stl"),
    ] {
        let orig = if rel.is_empty() {
            stl_bytes.clone()
        } else {
            std::fs::read(model(rel)).unwrap()
        };
        for _ in 0..200 {
            let mut b = mutate(&mut rng, &orig);
            if below(&mut rng, 4) == 0 {
                b = mutate(&mut rng, &b);
            }
            let p = put(dir.path(), &format!("f.{ext}"), &b);
            let ok = match ext {
                "veg" => read_veg(&p).is_ok(),
                "obj" => read_obj(&p).is_ok(),
                "bou" => read_bou(&p, Some(208)).is_ok(),
                _ => read_stl(&p).is_ok(),
            };
            outcomes[ok as usize] += 1;
        }
    }
    // Both outcomes occur: the mutations are neither all harmless nor all fatal.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

/// Runs `f` on a thread and waits at most `secs` seconds for it, so a read that never
/// ends fails the test instead of hanging it.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .expect("the read did not finish in time (unbounded read?)")
}

/// Reliability: a `.veg` whose `*INCLUDE` names `/dev/zero` used to read forever. The
/// readers refuse anything that is not a regular file (naming it), and bound the size
/// of what they read.
#[test]
fn include_of_a_device_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let main = put(dir.path(), "zero.veg", "# main\n*INCLUDE /dev/zero\n");
    let e = within(30, move || read_veg(&main).unwrap_err());
    assert!(matches!(e, MeshError::NotRegularFile { .. }), "{e}");
    assert!(e.to_string().contains("/dev/zero"), "{e}");
    // Directly, and through the other readers (a directory is not a file either).
    let e = within(30, || read_any(Path::new("/dev/zero")).unwrap_err());
    assert!(
        matches!(
            e,
            MeshError::NotRegularFile { .. } | MeshError::Unsupported { .. }
        ),
        "{e}"
    );
    let e = within(30, || read_obj(Path::new("/dev/zero")).unwrap_err());
    assert!(matches!(e, MeshError::NotRegularFile { .. }), "{e}");
    let d = dir.path().to_path_buf();
    let e = within(30, move || read_veg(&d).unwrap_err());
    assert!(matches!(e, MeshError::NotRegularFile { .. }), "{e}");
    assert_eq!(haptics::mesh::MAX_MESH_FILE_BYTES, 1 << 30);
}

/// Reliability: an `.interp` weight of 1e308 used to give an infinite basis; weights
/// beyond [-1e3, 1e3] are refused with the file, line and column.
#[test]
fn absurd_interp_weights_are_refused_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = put(dir.path(), "w.interp", "0 0 0.25 1 0.75\n1 0 0.5 1 1e308\n");
    let e = read_interp(&p, Some(2), Some(2)).unwrap_err();
    match &e {
        MeshError::WeightOutOfRange {
            path,
            location,
            column,
            value,
            limit,
        } => {
            assert_eq!(path, &p);
            assert_eq!(location, &Location::Line(2));
            assert_eq!(*column, 11);
            assert_eq!(value, "1e308");
            assert_eq!(*limit, haptics::mesh::interp::MAX_INTERP_WEIGHT);
        }
        other => panic!("expected WeightOutOfRange, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("w.interp"), "{msg}");
    assert!(msg.contains("line 2, column 11"), "{msg}");
    let p = put(dir.path(), "ok.interp", "0 0 -0.5 1 1.5\n");
    assert_eq!(
        read_interp(&p, Some(1), Some(2)).unwrap().weights,
        [-0.5, 1.5]
    );
}
