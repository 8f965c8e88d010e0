//! The bake pipeline, driven through the library: Vega's beam3 polynomial reproduced
//! through a bake with its basis, cache behaviour, atomic writes, and readable errors for
//! bad input (the `haptics bake` command line is tested in the application crate).

use haptics::fem::{model::FemModel, model::MassKind, model::MaterialLaw};
use haptics::mesh::veg::read_veg;
use haptics::progress::NoProgress;
use haptics::reduction::bake::{
    bake, load_baked, mass_orthonormality_error, BakeError, BakeInput, BakeOutcome, BakeParams,
    BasisKind,
};
use haptics::reduction::vega::{read_cub, read_matrix, write_matrix, Precision};
use haptics_devices::rng::SplitMix64;

fn beam_input(kind: BasisKind, k: usize, r: usize) -> BakeInput {
    BakeInput {
        mesh: haptics::assets::model("beam3/beam3.veg"),
        fixed: Some(haptics::assets::model("beam3/beam3.bou")),
        basis_file: (kind == BasisKind::File)
            .then(|| haptics::assets::model("vega-beam3-fixture/beam3_lin10.U")),
        render_interp: None,
        params: BakeParams {
            linear_modes: k,
            basis: r,
            basis_kind: kind,
            mass_matrix: MassKind::Consistent,
            unconstrained: false,
            voxel_resolution: None,
            material_groups: false,
        },
    }
}

#[test]
fn baking_beam3_with_vegas_basis_reproduces_vegas_cub() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let outcome = bake(&beam_input(BasisKind::File, 0, 10), &out, &NoProgress).unwrap();
    assert!(matches!(outcome, BakeOutcome::Baked(_)));
    let ours = read_cub(&out.join("reduced.cub")).unwrap();
    let vega = read_cub(&haptics::assets::model(
        "vega-beam3-fixture/beam3_lin10.cub",
    ))
    .unwrap();
    for (a, b) in [
        (&ours.linear, &vega.linear),
        (&ours.quadratic, &vega.quadratic),
        (&ours.cubic, &vega.cubic),
    ] {
        let scale = b.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let err = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
            / scale;
        // Exact integrals on both sides: rounding only (1.5e-13 measured).
        assert!(err < 1e-10, "{err:e}");
    }
}

#[test]
fn modal_derivative_bake_is_mass_orthonormal_cached_and_rebaked_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let input = beam_input(BasisKind::ModalDerivatives, 6, 12);
    let m1 = match bake(&input, &out, &NoProgress).unwrap() {
        BakeOutcome::Baked(m) => m,
        other => panic!("expected a bake, got {other:?}"),
    };
    assert_eq!(m1.r, 12);
    assert_eq!(m1.linear_frequencies_hz.len(), 6);
    assert!(m1.linear_frequencies_hz.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(m1.mass_matrix, MassKind::Consistent);
    // The manifest names the mass matrix as text, as it always has.
    let text = std::fs::read_to_string(out.join("manifest.toml")).unwrap();
    assert!(text.contains("mass_matrix = \"consistent\""), "{text}");
    let baked = load_baked(&out).unwrap();
    let mesh = read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    let m = model.mass_matrix(MassKind::Consistent);
    assert!(mass_orthonormality_error(&m, &baked.basis) < 1e-10);
    // Unchanged inputs: nothing is re-baked.
    assert!(matches!(
        bake(&input, &out, &NoProgress).unwrap(),
        BakeOutcome::UpToDate(_)
    ));
    // A changed parameter re-bakes.
    let mut changed = input.clone();
    changed.params.basis = 10;
    assert!(matches!(
        bake(&changed, &out, &NoProgress).unwrap(),
        BakeOutcome::Baked(_)
    ));
    assert_eq!(load_baked(&out).unwrap().basis.ncols(), 10);
    // No temporary directories are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
}

#[test]
fn corrupt_or_mismatched_caches_are_refused_and_rebaked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    let input = beam_input(BasisKind::LinearModes, 6, 6);
    bake(&input, &out, &NoProgress).unwrap();
    // Corrupt the polynomial: loading names the file and says it changed.
    let cub = out.join("reduced.cub");
    let mut bytes = std::fs::read(&cub).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&cub, &bytes).unwrap();
    let err = load_baked(&out).unwrap_err();
    assert!(matches!(err, BakeError::Mismatch { .. }), "{err}");
    assert!(err.to_string().contains("reduced.cub"), "{err}");
    // The next bake does not trust the corrupt cache.
    assert!(matches!(
        bake(&input, &out, &NoProgress).unwrap(),
        BakeOutcome::Baked(_)
    ));
    load_baked(&out).unwrap();
    // A garbled manifest is a typed error naming it.
    std::fs::write(out.join("manifest.toml"), "format_version = \"two\"\n").unwrap();
    let err = load_baked(&out).unwrap_err();
    assert!(err.to_string().contains("manifest.toml"), "{err}");
}

#[test]
fn bad_bake_inputs_get_clear_errors_and_leave_no_cache() {
    let dir = tempfile::tempdir().unwrap();
    // An unconstrained object passed as constrained: no .bou.
    let mut input = beam_input(BasisKind::ModalDerivatives, 6, 10);
    input.fixed = None;
    let out = dir.path().join("a");
    let err = bake(&input, &out, &NoProgress).unwrap_err().to_string();
    assert!(err.contains("--unconstrained"), "{err}");
    assert!(!out.exists());
    // k larger than the free dofs.
    let input = beam_input(BasisKind::LinearModes, 5000, 10);
    let err = bake(&input, &out, &NoProgress).unwrap_err().to_string();
    assert!(err.contains("free degrees of freedom"), "{err}");
    // r larger than the span of modes and derivatives.
    let input = beam_input(BasisKind::ModalDerivatives, 2, 10);
    let err = bake(&input, &out, &NoProgress).unwrap_err().to_string();
    assert!(err.contains("independent"), "{err}");
    // A basis that is not mass-orthonormal.
    let u = read_matrix(
        &haptics::assets::model("vega-beam3-fixture/beam3_lin10.U"),
        Precision::F64,
    )
    .unwrap();
    let bad = dir.path().join("scaled.U");
    write_matrix(&bad, &(u * 2.0), Precision::F64).unwrap();
    let mut input = beam_input(BasisKind::File, 0, 10);
    input.basis_file = Some(bad);
    let err = bake(&input, &out, &NoProgress).unwrap_err();
    assert!(matches!(err, BakeError::NotMassOrthonormal { .. }), "{err}");
    assert!(!out.exists());
}

#[test]
fn snapshot_basis_render_basis_and_material_groups_are_written() {
    use haptics::geometry::embed::embed;
    use haptics::mesh::{interp::write_interp, read_obj};
    let dir = tempfile::tempdir().unwrap();
    // Snapshots: the fixture's modes scaled and mixed (any displacement fields work).
    let u = read_matrix(
        &haptics::assets::model("vega-beam3-fixture/beam3_lin10.U"),
        Precision::F64,
    )
    .unwrap();
    let mut rng = SplitMix64::new(11);
    let mix = nalgebra::DMatrix::from_fn(10, 14, |_, _| rng.next_f64() - 0.5);
    let snaps = dir.path().join("snaps.U");
    write_matrix(&snaps, &(&u * mix), Precision::F64).unwrap();
    // A render mesh embedded in the beam: the beam's own surface.
    let mesh = read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let surface = read_obj(&haptics::assets::model("beam3/beam3.obj")).unwrap();
    let emb = embed(&surface.vertices, &mesh).unwrap();
    let interp = dir.path().join("beam.interp");
    write_interp(&interp, &emb.interpolation).unwrap();
    let mut input = beam_input(BasisKind::Snapshots, 0, 8);
    input.basis_file = Some(snaps);
    input.render_interp = Some(interp);
    input.params.material_groups = true;
    let out = dir.path().join("beam");
    let m = match bake(&input, &out, &NoProgress).unwrap() {
        BakeOutcome::Baked(m) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(m.r, 8);
    let names: Vec<&str> = m.outputs.iter().map(|f| f.path.as_str()).collect();
    assert!(names.contains(&"render.URendering.float"), "{names:?}");
    assert!(
        names.contains(&"material_0_BODY_lambda.cub") && names.contains(&"material_0_BODY_mu.cub"),
        "{names:?}"
    );
    let ur = read_matrix(&out.join("render.URendering.float"), Precision::F32).unwrap();
    assert_eq!((ur.nrows(), ur.ncols()), (3 * surface.vertices.len(), 8));
    let baked = load_baked(&out).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    assert!(
        mass_orthonormality_error(&model.mass_matrix(MassKind::Consistent), &baked.basis) < 1e-10
    );
}

#[test]
fn unconstrained_objects_bake_with_their_rigid_modes_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = beam_input(BasisKind::ModalDerivatives, 4, 8);
    input.fixed = None;
    input.params.unconstrained = true;
    let out = dir.path().join("free");
    let m = match bake(&input, &out, &NoProgress).unwrap() {
        BakeOutcome::Baked(m) => m,
        other => panic!("{other:?}"),
    };
    // The lowest reported frequency is elastic (rigid modes would be ~0 Hz).
    assert!(
        m.linear_frequencies_hz[0] > 1.0,
        "{:?}",
        m.linear_frequencies_hz
    );
    let baked = load_baked(&out).unwrap();
    let mesh = read_veg(&haptics::assets::model("beam3/beam3.veg")).unwrap();
    let model = FemModel::new(&mesh, MaterialLaw::StVK).unwrap();
    assert!(
        mass_orthonormality_error(&model.mass_matrix(MassKind::Consistent), &baked.basis) < 1e-10
    );
}

/// The names in `dir` that start with a dot (staging `.NAME.partial-N`, moved-aside
/// `.NAME.old-N`).
fn hidden_entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn an_existing_file_or_foreign_directory_is_refused_and_never_moved() {
    let dir = tempfile::tempdir().unwrap();
    let input = beam_input(BasisKind::File, 0, 10);
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "my notes").unwrap();
    let e = bake(&input, &file, &NoProgress).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("notes.txt"), "{msg}");
    assert!(msg.contains("not a baked directory"), "{msg}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my notes");
    // A directory of other files is refused too.
    let foreign = dir.path().join("photos");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("a.jpg"), "x").unwrap();
    let e = bake(&input, &foreign, &NoProgress).unwrap_err();
    assert!(e.to_string().contains("not a baked directory"), "{e}");
    assert!(foreign.join("a.jpg").exists());
    assert!(
        hidden_entries(dir.path()).is_empty(),
        "{:?}",
        hidden_entries(dir.path())
    );
    // An empty directory and an older bake are replaced.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    bake(&input, &empty, &NoProgress).unwrap();
    load_baked(&empty).unwrap();
    let other = beam_input(BasisKind::ModalDerivatives, 4, 6);
    assert!(matches!(
        bake(&other, &empty, &NoProgress).unwrap(),
        BakeOutcome::Baked(_)
    ));
    assert_eq!(load_baked(&empty).unwrap().polynomial.r, 6);
    assert!(
        hidden_entries(dir.path()).is_empty(),
        "{:?}",
        hidden_entries(dir.path())
    );
}

#[test]
fn concurrent_bakes_to_one_output_leave_a_valid_bake_and_no_leftovers() {
    // Several rounds of racing threads, each round on a fresh output (an existing,
    // older bake there, so the moves aside race too).
    let older = beam_input(BasisKind::File, 0, 10);
    let input = beam_input(BasisKind::ModalDerivatives, 4, 6);
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("beam");
        if round > 0 {
            bake(&older, &out, &NoProgress).unwrap();
        }
        let threads = 4;
        let barrier = std::sync::Barrier::new(threads);
        let results: Vec<Result<BakeOutcome, BakeError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        bake(&input, &out, &NoProgress)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            results.iter().any(|r| r.is_ok()),
            "no bake succeeded: {results:?}"
        );
        let lost = results.iter().filter(|r| r.is_err()).count();
        eprintln!("round {round}: {lost} of {threads} bakes lost the race");
        for r in &results {
            if let Err(e) = r {
                // A loser says so, naming the output.
                let msg = e.to_string();
                assert!(msg.contains("beam"), "{msg}");
            }
        }
        assert!(
            hidden_entries(dir.path()).is_empty(),
            "round {round}: leftovers {:?}",
            hidden_entries(dir.path())
        );
        let baked = load_baked(&out).unwrap();
        assert_eq!(baked.polynomial.r, 6);
        // The result is the current bake of these inputs.
        assert!(matches!(
            bake(&input, &out, &NoProgress).unwrap(),
            BakeOutcome::UpToDate(_)
        ));
    }
}

/// Asks to stop after a given number of stages have started.
struct StopAfter {
    stages: std::sync::atomic::AtomicUsize,
    allowed: usize,
}

impl haptics::progress::Progress for StopAfter {
    fn stage(&self, _: &str, _: u64) {
        self.stages
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    fn advance(&self, _: u64) {}
    fn set(&self, _: u64) {}
    fn finish(&self) {}
    fn cancelled(&self) -> bool {
        self.stages.load(std::sync::atomic::Ordering::Relaxed) >= self.allowed
    }
}

#[test]
fn a_cancelled_bake_stops_at_the_next_stage_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("beam");
    // Cancelled after the FEM model, before the linear modes: nothing is written, not
    // even a staging directory.
    let stop = StopAfter {
        stages: 0.into(),
        allowed: 1,
    };
    let e = bake(&beam_input(BasisKind::LinearModes, 4, 4), &out, &stop).unwrap_err();
    assert!(matches!(e, BakeError::Cancelled), "{e}");
    assert_eq!(stop.stages.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // The same bake, not cancelled, completes.
    let go = StopAfter {
        stages: 0.into(),
        allowed: usize::MAX,
    };
    assert!(bake(&beam_input(BasisKind::LinearModes, 4, 4), &out, &go).is_ok());
}
