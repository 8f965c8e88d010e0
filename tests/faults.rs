//! Fault injection for every cache and output the core writes: a full disk (ENOSPC after
//! 0 bytes, a few bytes, and part way through), a read-only directory (EROFS) and a
//! failed rename (EIO), injected through `haptics::io::fault`.
//!
//! What must hold after each fault: the call fails with a message naming the file and the
//! system's reason; the file that was there before is byte for byte intact (or still
//! absent); no temporary or partial file is left; and once the fault is gone the same
//! call succeeds. For the scene cache: a failed load leaves nothing that a later load
//! would trust, and a later load rebuilds and then reuses the cache.

use std::path::Path;

use haptics::fem::model::MassKind;
use haptics::geometry::dist::write_dist;
use haptics::geometry::{
    pointshell::sample_pointshell, pointshell::PointshellParams, MeshDistance, SignedDistanceField,
};
use haptics::io::fault::{inject, WriteFault};
use haptics::mesh::{read_obj, stl::write_stl_binary, veg::write_veg, write_obj};
use haptics::progress::NoProgress;
use haptics::reduction::bake::{bake, load_baked, BakeInput, BakeParams, BasisKind};
use haptics::reduction::vega::{write_cub, write_matrix, Precision};
use haptics::scene::load_scene_with_report;
use nalgebra::DMatrix;

/// The faults tried on every writer. `NoSpaceAfter(n)` is tried at 0, 7 bytes and half
/// the file's size (computed per file).
fn faults(size: u64) -> Vec<WriteFault> {
    vec![
        WriteFault::NoSpaceAfter(0),
        WriteFault::NoSpaceAfter(7),
        WriteFault::NoSpaceAfter(size / 2),
        WriteFault::NoSpaceAfter(size.saturating_sub(1)),
        WriteFault::ReadOnly,
        WriteFault::RenameFails,
    ]
}

/// The system's message for a fault (what the user reads).
fn reason(fault: WriteFault) -> &'static str {
    match fault {
        WriteFault::NoSpaceAfter(_) => "No space left on device",
        WriteFault::ReadOnly => "Read-only file system",
        WriteFault::RenameFails => "Input/output error",
    }
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

type Writer<'a> = Box<dyn Fn(&Path) -> Result<(), String> + 'a>;

#[test]
fn every_file_writer_fails_cleanly_and_keeps_the_previous_file() {
    let mesh = read_obj(&haptics::assets::model("beam3/beam3.obj")).unwrap();
    let distance = MeshDistance::new(&mesh).unwrap();
    let field = SignedDistanceField::compute(&distance, 16, 1.5, &NoProgress).unwrap();
    let params = PointshellParams {
        first_level_points: 64,
        levels: 2,
        iterations: 5,
        ..PointshellParams::default()
    };
    let shell = sample_pointshell(&distance, &mesh, &params, &NoProgress).unwrap();
    let volume =
        haptics::mesh::read::read_volume(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let matrix = DMatrix::from_fn(300, 10, |i, j| (i * 7 + j) as f64 * 1e-3);
    let cub = haptics::reduction::vega::read_cub(&haptics::assets::model(
        "vega-beam3-fixture/beam3_lin10.cub",
    ))
    .unwrap();
    let writers: Vec<(&str, Writer)> = vec![
        (
            "field.dist",
            Box::new(|p| write_dist(p, &field).map_err(|e| e.to_string())),
        ),
        (
            "shell.pshell",
            Box::new(|p| shell.write(p).map_err(|e| e.to_string())),
        ),
        (
            "mesh.obj",
            Box::new(|p| write_obj(p, &mesh).map_err(|e| e.to_string())),
        ),
        (
            "mesh.stl",
            Box::new(|p| write_stl_binary(p, &mesh).map_err(|e| e.to_string())),
        ),
        (
            "mesh.veg",
            Box::new(|p| write_veg(p, &volume).map_err(|e| e.to_string())),
        ),
        (
            "basis.U",
            Box::new(|p| write_matrix(p, &matrix, Precision::F64).map_err(|e| e.to_string())),
        ),
        (
            "reduced.cub",
            Box::new(|p| write_cub(p, &cub).map_err(|e| e.to_string())),
        ),
    ];
    let mut tried = 0;
    for (name, write) in &writers {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        // No file yet: a fault leaves none.
        {
            let _g = inject(WriteFault::NoSpaceAfter(3));
            write(&path).unwrap_err();
        }
        assert!(
            listing(dir.path()).is_empty(),
            "{name}: {:?}",
            listing(dir.path())
        );
        write(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        for fault in faults(good.len() as u64) {
            let e = {
                let _g = inject(fault);
                write(&path).expect_err(&format!("{name}: {fault:?} did not fail"))
            };
            tried += 1;
            assert!(
                e.contains(name),
                "{name}, {fault:?}: the message names no file: {e}"
            );
            assert!(e.contains(reason(fault)), "{name}, {fault:?}: {e}");
            assert_eq!(std::fs::read(&path).unwrap(), good, "{name}, {fault:?}");
            assert_eq!(
                listing(dir.path()),
                vec![name.to_string()],
                "{name}, {fault:?}"
            );
        }
        // And without the fault it works again.
        write(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), good);
    }
    eprintln!("{tried} faults injected into {} writers", writers.len());
}

fn beam_input() -> BakeInput {
    BakeInput {
        mesh: haptics::assets::model("beam3/beam3.veg"),
        fixed: Some(haptics::assets::model("beam3/beam3.bou")),
        basis_file: Some(haptics::assets::model("vega-beam3-fixture/beam3_lin10.U")),
        render_interp: None,
        params: BakeParams {
            linear_modes: 0,
            basis: 10,
            basis_kind: BasisKind::File,
            mass_matrix: MassKind::Consistent,
            unconstrained: false,
            voxel_resolution: None,
            material_groups: false,
        },
    }
}

#[test]
fn a_bake_that_fails_to_write_keeps_the_previous_bake_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let input = beam_input();
    // No bake yet: a failed one leaves no directory at all.
    {
        let _g = inject(WriteFault::NoSpaceAfter(1000));
        let e = bake(&input, &out, &NoProgress).unwrap_err().to_string();
        assert!(e.contains(reason(WriteFault::NoSpaceAfter(0))), "{e}");
    }
    assert!(listing(dir.path()).is_empty(), "{:?}", listing(dir.path()));
    bake(&input, &out, &NoProgress).unwrap();
    let manifest = std::fs::read(out.join("manifest.toml")).unwrap();
    let cub = std::fs::read(out.join("reduced.cub")).unwrap();
    // A re-bake with other parameters (so it does not count as up to date) that fails;
    // the sizes of its files, for the byte budgets of the full-disk faults.
    let mut other = beam_input();
    other.params.basis = 8;
    let sizing = tempfile::tempdir().unwrap();
    bake(&other, &sizing.path().join("beam"), &NoProgress).unwrap();
    // The manifest is left out: it records timings, whose printed length varies from run
    // to run, so a budget of all its bytes but one might not run out. The other outputs
    // are written before it and have fixed sizes.
    let total: u64 = std::fs::read_dir(sizing.path().join("beam"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "manifest.toml")
        .map(|e| e.metadata().unwrap().len())
        .sum();
    for fault in faults(total) {
        let e = {
            let _g = inject(fault);
            bake(&other, &out, &NoProgress)
                .expect_err(&format!("{fault:?} did not fail"))
                .to_string()
        };
        assert!(e.contains(reason(fault)), "{fault:?}: {e}");
        assert!(
            e.contains(dir.path().to_str().unwrap()),
            "{fault:?}: no path in {e}"
        );
        assert_eq!(listing(dir.path()), vec!["beam".to_string()], "{fault:?}");
        assert_eq!(std::fs::read(out.join("manifest.toml")).unwrap(), manifest);
        assert_eq!(std::fs::read(out.join("reduced.cub")).unwrap(), cub);
        load_baked(&out).unwrap();
    }
    bake(&other, &out, &NoProgress).unwrap();
    assert_ne!(std::fs::read(out.join("manifest.toml")).unwrap(), manifest);
    assert_eq!(listing(dir.path()), vec!["beam".to_string()]);
}

#[test]
fn a_scene_load_that_cannot_write_its_cache_leaves_nothing_to_trust() {
    let scene = haptics::assets::asset("scenes/peg-shaft.toml");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for fault in [
        WriteFault::NoSpaceAfter(0),
        WriteFault::NoSpaceAfter(5000),
        WriteFault::ReadOnly,
        WriteFault::RenameFails,
    ] {
        let e = {
            let _g = inject(fault);
            load_scene_with_report(&scene, &cache, &NoProgress)
                .map(drop)
                .expect_err(&format!("{fault:?} did not fail"))
                .to_string()
        };
        assert!(e.contains(reason(fault)), "{fault:?}: {e}");
        assert!(e.contains(dir.path().to_str().unwrap()), "{fault:?}: {e}");
        // Whatever is in the cache now is complete and checksummed, or absent: no
        // temporaries.
        if cache.exists() {
            let left = listing(&cache);
            assert!(
                left.iter().all(|n| !n.starts_with('.')),
                "{fault:?}: {left:?}"
            );
        }
    }
    let (_, first) = load_scene_with_report(&scene, &cache, &NoProgress).unwrap();
    assert!(
        !first.computed.is_empty() && first.rejected.is_empty(),
        "{first:?}"
    );
    // A full disk no longer matters: everything is reused, nothing written.
    let _g = inject(WriteFault::NoSpaceAfter(0));
    let (_, second) = load_scene_with_report(&scene, &cache, &NoProgress).unwrap();
    assert!(
        second.computed.is_empty() && second.rejected.is_empty(),
        "{second:?}"
    );
    assert!(!second.reused.is_empty());
}
