//! GPU u = U q and dynamic normals against the CPU reference, on Vega's real-time bridge
//! render basis (r = 20, 16K render vertices). Needs a wgpu adapter: CI installs software
//! Vulkan (mesa lavapipe); without one these tests fail, they do not skip.

use std::path::PathBuf;

use haptics::mesh::{read_obj, SurfaceMesh};
use haptics::reduction::vega::{read_matrix, Precision};
use haptics_app::render::{
    deform_cpu, deform_normals_cpu, normal_basis, DeformOutput, GpuContext, GpuDeformer,
};

fn bridge_dir() -> PathBuf {
    haptics::assets::model("vega-realtime-bridge")
}

/// The render basis, row-major 3 n x r f32, r, and the render mesh.
fn bridge() -> (Vec<f32>, usize, SurfaceMesh) {
    let dir = bridge_dir();
    let u = read_matrix(&dir.join("simpleBridge.URendering.float"), Precision::F32)
        .expect("read simpleBridge.URendering.float");
    let mesh = read_obj(&dir.join("simpleBridge.obj")).expect("read simpleBridge.obj");
    assert_eq!(
        u.nrows(),
        3 * mesh.vertices.len(),
        "basis rows vs render vertices"
    );
    let r = u.ncols();
    let mut rows = vec![0.0f32; u.nrows() * r];
    for i in 0..u.nrows() {
        for j in 0..r {
            rows[i * r + j] = u[(i, j)] as f32;
        }
    }
    (rows, r, mesh)
}

fn context() -> GpuContext {
    match GpuContext::headless() {
        Ok(ctx) => {
            eprintln!("GPU adapter: {}", ctx.adapter_summary());
            ctx
        }
        Err(e) => panic!(
            "GPU deformation tests need a wgpu adapter (CI installs mesa-vulkan-drivers): {e}"
        ),
    }
}

/// Deterministic pseudo-random q in [-1, 1]^r, scaled so that max |U q| is `frac` of the
/// mesh's bounding-box diagonal (a visibly large, realistic deformation).
fn random_q(u_rows: &[f32], r: usize, mesh: &SurfaceMesh, seed: u64, frac: f64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut q: Vec<f32> = (0..r)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32
        })
        .collect();
    let umax = max_norm(&deform_cpu(u_rows, r, &q, None));
    let bb = mesh.bounding_box();
    let diag = (bb.max - bb.min).norm();
    let scale = (frac * diag / umax) as f32;
    q.iter_mut().for_each(|x| *x *= scale);
    q
}

fn max_norm(v: &[[f32; 3]]) -> f64 {
    v.iter()
        .map(|p| f64::from(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt())
        .fold(0.0, f64::max)
}

fn max_diff(a: &[[f32; 3]], b: &[[f32; 3]]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| (0..3).map(move |k| f64::from((x[k] - y[k]).abs())))
        .fold(0.0, f64::max)
}

#[test]
fn gpu_matches_cpu_on_vega_bridge() {
    let (u_rows, r, mesh) = bridge();
    assert_eq!(r, 20);
    let rest: Vec<[f32; 3]> = mesh
        .vertices
        .iter()
        .map(|p| [p.x as f32, p.y as f32, p.z as f32])
        .collect();
    let nb = normal_basis(&mesh, &u_rows, r).expect("normal basis");
    let ctx = context();
    let gpu =
        GpuDeformer::from_context(&ctx, &u_rows, r, Some(&rest), Some(&nb)).expect("deformer");
    assert_eq!(gpu.num_vertices(), mesh.vertices.len());

    // Several frames: each overwrites the previous one's outputs.
    for seed in 1..=3u64 {
        let q = random_q(&u_rows, r, &mesh, seed, 0.05);
        gpu.update(&q).expect("update");

        let u_cpu = deform_cpu(&u_rows, r, &q, None);
        let u_gpu = gpu.read_back(DeformOutput::Displacements).expect("read u");
        let umax = max_norm(&u_cpu);
        let rel = max_diff(&u_gpu, &u_cpu) / umax;
        eprintln!("frame {seed}: max |u| = {umax:.4}, u rel. error {rel:.2e}");
        assert!(rel < 1e-5, "u: relative error {rel:e}");

        let x_cpu = deform_cpu(&u_rows, r, &q, Some(&rest));
        let x_gpu = gpu.read_back(DeformOutput::Positions).expect("read x");
        let rel_x = max_diff(&x_gpu, &x_cpu) / umax;
        assert!(rel_x < 1e-5, "X + u: error {rel_x:e} relative to max |u|");

        let n_cpu = deform_normals_cpu(&nb, r, &q);
        let n_gpu = gpu.read_back(DeformOutput::Normals).expect("read normals");
        let err_n = max_diff(&n_gpu, &n_cpu);
        eprintln!("frame {seed}: normals max abs error {err_n:.2e}");
        assert!(
            err_n < 1e-5,
            "normals: max abs error {err_n:e} (unit vectors)"
        );
    }
}

/// The normal basis is the exact first derivative of the area-weighted vertex normals:
/// for a small q, normalize(N + dN q) matches the normals recomputed from the deformed
/// triangles to second order.
#[test]
fn normal_basis_is_first_order_exact() {
    let (u_rows, r, mesh) = bridge();
    let nb = normal_basis(&mesh, &u_rows, r).expect("normal basis");
    let mut errs = Vec::new();
    for frac in [1e-3, 5e-4] {
        let q = random_q(&u_rows, r, &mesh, 7, frac);
        let u = deform_cpu(&u_rows, r, &q, None);
        let mut deformed = mesh.clone();
        for (p, d) in deformed.vertices.iter_mut().zip(&u) {
            p.x += f64::from(d[0]);
            p.y += f64::from(d[1]);
            p.z += f64::from(d[2]);
        }
        // Recomputed area-weighted normals; a zero basis gives the plain unit normals.
        let exact = normal_basis(&deformed, &vec![0.0; u_rows.len()], r)
            .expect("normals")
            .normals;
        let lin = deform_normals_cpu(&nb, r, &q);
        errs.push(max_diff(&lin, &exact));
    }
    eprintln!("first-order normal errors: {errs:?}");
    assert!(errs[0] < 1e-2, "linearized normals off by {}", errs[0]);
    // Halving q should cut the error by about 4 (second order), f32 noise aside.
    assert!(errs[1] < errs[0] * 0.5 || errs[1] < 1e-5, "{errs:?}");
}

#[test]
fn shape_errors_are_typed() {
    let ctx = context();
    let err = GpuDeformer::from_context(&ctx, &[0.0; 7], 2, None, None);
    assert!(matches!(
        err,
        Err(haptics_app::render::RenderError::Shape(_))
    ));
    let gpu = GpuDeformer::from_context(&ctx, &[1.0; 6], 2, None, None).expect("deformer");
    assert!(gpu.update(&[1.0]).is_err());
    gpu.update(&[1.0, 2.0]).expect("update");
    let u = gpu.read_back(DeformOutput::Displacements).expect("read");
    assert_eq!(u, vec![[3.0, 3.0, 3.0]]);
}
