//! Render path: u = U q, X + u and dynamic normals for Vega's real-time bridge render mesh
//! (16,085 vertices, r = 20), on the GPU (upload q, dispatch, wait for the device; no
//! read-back) against the single-threaded CPU reference. Needs a wgpu adapter (software
//! Vulkan is enough; its timings are those of a CPU rasterizer, not of a GPU).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use haptics::mesh::read_obj;
use haptics::reduction::vega::{read_matrix, Precision};
use haptics_app::render::{deform_cpu, deform_normals_cpu, normal_basis, GpuContext, GpuDeformer};

fn render(c: &mut Criterion) {
    let dir = haptics::assets::model("vega-realtime-bridge");
    let u = read_matrix(&dir.join("simpleBridge.URendering.float"), Precision::F32)
        .expect("render basis");
    let mesh = read_obj(&dir.join("simpleBridge.obj")).expect("render mesh");
    let r = u.ncols();
    let mut rows = vec![0.0f32; u.nrows() * r];
    for i in 0..u.nrows() {
        for j in 0..r {
            rows[i * r + j] = u[(i, j)] as f32;
        }
    }
    let rest: Vec<[f32; 3]> = mesh
        .vertices
        .iter()
        .map(|p| [p.x as f32, p.y as f32, p.z as f32])
        .collect();
    let nb = normal_basis(&mesh, &rows, r).expect("normal basis");
    let q: Vec<f32> = (0..r).map(|j| 0.01 * ((j as f32 * 0.7).sin())).collect();

    let ctx = GpuContext::headless().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    eprintln!("adapter: {}", ctx.adapter_summary());
    let gpu = GpuDeformer::from_context(&ctx, &rows, r, Some(&rest), Some(&nb)).expect("deformer");

    let mut g = c.benchmark_group("render/bridge_16k_r20");
    g.sample_size(50);
    g.bench_function("gpu_uq_normals", |b| {
        b.iter(|| {
            gpu.update(black_box(&q)).expect("update");
            gpu.wait().expect("wait");
        })
    });
    g.bench_function("cpu_uq_normals", |b| {
        b.iter(|| {
            let x = deform_cpu(&rows, r, black_box(&q), Some(&rest));
            let n = deform_normals_cpu(&nb, r, black_box(&q));
            black_box((x, n))
        })
    });
    g.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
