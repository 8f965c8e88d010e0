//! `haptics sdf` driven as a user drives it: a field of the beam written as .dist and
//! read back against exact distances, and readable refusals for a polygon soup without
//! --soup and for a resolution that does not fit in memory.

#[path = "common/cli.rs"]
mod cli;

use cli::haptics;

use std::path::PathBuf;

use haptics::geometry::dist::read_dist;
use haptics::geometry::MeshDistance;
use haptics::mesh::read_obj;

fn model(rel: &str) -> PathBuf {
    haptics::assets::asset("models").join(rel)
}

#[test]
fn beam_field_is_written_as_dist_and_reads_back_exact() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam.dist");
    let beam = model("beam3/beam3.obj");
    let o = haptics(&[
        "sdf",
        beam.to_str().unwrap(),
        "--resolution",
        "24",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for s in ["resolution 24^3", "spacing", "box", "computed in", "bytes"] {
        assert!(stdout.contains(s), "summary lacks '{s}':\n{stdout}");
    }
    let f = read_dist(&out).unwrap();
    assert_eq!(f.cells, [24; 3]);
    // 25^3 f32 values after the 60-byte header.
    assert_eq!(
        std::fs::metadata(&out).unwrap().len(),
        60 + 4 * 25 * 25 * 25
    );
    let md = MeshDistance::new(&read_obj(&beam).unwrap()).unwrap();
    // The box is the beam's bounding box enlarged 1.5x about its centre.
    let b = md.bounding_box();
    assert!((f.spacing * 24.0 - 1.5 * b.extent().max()).abs() < 1e-9);
    // Every node of the beam (a box, 412 triangles) is exact: band nodes by
    // construction, far nodes because the closest face's triangle propagates; the
    // header's f64 corners reproduce node positions to 1e-15, f32 values round at 6e-8.
    for idx in (0..f.values.len()).step_by(37) {
        let n = 25;
        let p = f.node_point(idx % n, (idx / n) % n, idx / (n * n));
        let e = md.signed_distance(&p);
        let v = f.values[idx] as f64;
        assert!((v - e).abs() <= 1e-6 * (1.0 + e.abs()), "{v} vs {e}");
    }
    // The centre of the box is inside the beam.
    assert!(f.lookup(&b.center()) < 0.0);
}

#[test]
fn soup_without_flag_and_huge_resolution_are_refused_readably() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.dist");
    let bridge = model("simpleBridge/simpleBridge.obj");
    let o = haptics(&[
        "sdf",
        bridge.to_str().unwrap(),
        "-r",
        "32",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("simpleBridge.obj"), "{err}");
    assert!(err.contains("--soup"), "{err}");
    assert!(!out.exists());

    // Within the flag's range but beyond the memory budget: refused before allocating,
    // saying how much and how to raise the limit.
    let beam = model("beam3/beam3.obj");
    let o = haptics(&[
        "sdf",
        beam.to_str().unwrap(),
        "-r",
        "2048",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("resolution 2048"), "{err}");
    assert!(
        err.contains("limit") && err.contains("--max-memory"),
        "{err}"
    );
    assert!(!out.exists());
    // Beyond the flag's range: a usage error naming the flag and the range.
    let o = haptics(&[
        "sdf",
        beam.to_str().unwrap(),
        "-r",
        "100000",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--resolution") && err.contains("2..=4096"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn help_explains_the_options() {
    let o = haptics(&["sdf", "--help"]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for opt in [
        "--resolution",
        "--out",
        "--soup",
        "--offset",
        "--exact",
        "--band",
    ] {
        assert!(s.contains(opt), "help lacks {opt}:\n{s}");
    }
}
