//! u = U q and dynamic normals on the GPU (thesis 2.7), with a CPU reference.
//!
//! Layout shared by the GPU and the CPU paths (all f32):
//! - the render basis `U` is stored row-major, `3 n` rows of `r` floats, row `3 v + c`
//!   holding the coordinate `c` of vertex `v` (a Vega `.URendering.float` matrix,
//!   transposed out of its column-major file order);
//! - the normal basis `dN` has the same shape; the rest normals `N` are unit vectors;
//! - outputs are tightly packed `[x, y, z]` per vertex (vertex format `Float32x3`).
//!
//! Dynamic normals use the same first-order formula as the contact module's pointshell
//! normals (`contact::shell_modes`): `n_v(q) = normalize(N_v + dN_v q)`, evaluated in the
//! same compute pass as `u`. For a render mesh, [`normal_basis`] builds `N` and `dN`
//! from the triangles: the area-weighted vertex normal `A_v = sum_f (b - a) x (c - a)`
//! over the faces around `v` is quadratic in the positions, its exact derivative along
//! basis column `j` is `dA_v e_j = sum_f (U_b - U_a) x (c - a) + (b - a) x (U_c - U_a)`,
//! and dividing both by `|A_v|` gives `normalize(N + dN q) = normalize(A + dA q)`. This
//! is exact to first order in `q` and costs `3 r` multiply-adds per vertex, like `u`;
//! recomputing normals from the deformed triangles would need a second pass with
//! scattered (atomic) accumulation over faces.

use wgpu::util::DeviceExt;

use super::{GpuContext, RenderError};
use haptics::mesh::SurfaceMesh;

/// Workgroup size of the deformation shader (one invocation per render vertex).
pub const WORKGROUP_SIZE: u32 = 64;

/// The compute shader: u = U q and the first-order normals, one invocation per render
/// vertex (the equations are in this module's doc).
const SHADER: &str = include_str!("deform.wgsl");

/// The rest normals and the normal basis of a render mesh: `n_v(q) = normalize(N_v +
/// dN_v q)`.
#[derive(Debug, Clone)]
pub struct NormalBasis {
    /// Unit rest normals `N_v` (zero for vertices on no triangle).
    pub normals: Vec<[f32; 3]>,
    /// `dN`, row-major `3 n x r` like `U`.
    pub rows: Vec<f32>,
}

/// Build the normal basis of `mesh` for the render basis `u_rows` (row-major `3 n x r`,
/// `n` = mesh vertices): area-weighted vertex normals and their exact first derivative
/// along each basis column (module docs). Accumulates in f64.
pub fn normal_basis(
    mesh: &SurfaceMesh,
    u_rows: &[f32],
    r: usize,
) -> Result<NormalBasis, RenderError> {
    let n = mesh.vertices.len();
    check_basis(u_rows.len(), n, r)?;
    let mut area = vec![[0.0f64; 3]; n];
    let mut darea = vec![0.0f64; 3 * n * r];
    let col = |v: usize, j: usize| -> [f64; 3] {
        [
            f64::from(u_rows[(3 * v) * r + j]),
            f64::from(u_rows[(3 * v + 1) * r + j]),
            f64::from(u_rows[(3 * v + 2) * r + j]),
        ]
    };
    for (t, tri) in mesh.triangles.iter().enumerate() {
        let [a, b, c] = *tri;
        if a >= n || b >= n || c >= n {
            return Err(RenderError::Shape(format!(
                "triangle {t} references vertex beyond {n}"
            )));
        }
        let pa = mesh.vertices[a].coords;
        let e1 = mesh.vertices[b].coords - pa;
        let e2 = mesh.vertices[c].coords - pa;
        let e1 = [e1.x, e1.y, e1.z];
        let e2 = [e2.x, e2.y, e2.z];
        let f = cross(e1, e2);
        let mut dfs = Vec::with_capacity(r);
        for j in 0..r {
            let (ua, ub, uc) = (col(a, j), col(b, j), col(c, j));
            let d1 = sub(ub, ua);
            let d2 = sub(uc, ua);
            dfs.push(add(cross(d1, e2), cross(e1, d2)));
        }
        for &v in &[a, b, c] {
            for k in 0..3 {
                area[v][k] += f[k];
            }
            for (j, df) in dfs.iter().enumerate() {
                for k in 0..3 {
                    darea[(3 * v + k) * r + j] += df[k];
                }
            }
        }
    }
    let mut normals = vec![[0.0f32; 3]; n];
    let mut rows = vec![0.0f32; 3 * n * r];
    for v in 0..n {
        let len = (area[v][0].powi(2) + area[v][1].powi(2) + area[v][2].powi(2)).sqrt();
        if len > 0.0 {
            for k in 0..3 {
                normals[v][k] = (area[v][k] / len) as f32;
                for j in 0..r {
                    let i = (3 * v + k) * r + j;
                    rows[i] = (darea[i] / len) as f32;
                }
            }
        }
    }
    Ok(NormalBasis { normals, rows })
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn check_basis(len: usize, n: usize, r: usize) -> Result<(), RenderError> {
    if r == 0 || len != 3 * n * r {
        return Err(RenderError::Shape(format!(
            "basis has {len} floats, expected 3 x {n} vertices x r = {r} (r > 0)"
        )));
    }
    Ok(())
}

/// CPU reference of the GPU pass: `X + U q` per vertex (or `U q` when `rest` is `None`),
/// with `U` row-major `3 n x r` and `n = u_rows.len() / (3 r)`. Accumulates in f32 like
/// the shader.
///
/// # Panics
/// If `u_rows.len()` is not a multiple of `3 r`, `q.len() != r`, or `rest` has a length
/// other than `n`.
pub fn deform_cpu(u_rows: &[f32], r: usize, q: &[f32], rest: Option<&[[f32; 3]]>) -> Vec<[f32; 3]> {
    assert!(
        r > 0 && u_rows.len().is_multiple_of(3 * r),
        "U is not 3 n x r"
    );
    assert_eq!(q.len(), r, "q has the wrong length");
    let n = u_rows.len() / (3 * r);
    if let Some(rest) = rest {
        assert_eq!(rest.len(), n, "rest positions do not match U");
    }
    let mut out = Vec::with_capacity(n);
    for (v, rows) in u_rows.chunks_exact(3 * r).enumerate() {
        let mut p = match rest {
            Some(x) => x[v],
            None => [0.0; 3],
        };
        for (k, row) in rows.chunks_exact(r).enumerate() {
            let mut s = 0.0f32;
            for (a, b) in row.iter().zip(q) {
                s += a * b;
            }
            p[k] += s;
        }
        out.push(p);
    }
    out
}

/// CPU reference of the dynamic normals: `normalize(N_v + dN_v q)` (zero where that
/// vector is zero).
///
/// # Panics
/// If `q.len() != r` or the basis shapes disagree.
pub fn deform_normals_cpu(basis: &NormalBasis, r: usize, q: &[f32]) -> Vec<[f32; 3]> {
    assert_eq!(q.len(), r, "q has the wrong length");
    assert_eq!(
        basis.rows.len(),
        3 * basis.normals.len() * r,
        "dN is not 3 n x r"
    );
    basis
        .rows
        .chunks_exact(3 * r)
        .zip(&basis.normals)
        .map(|(rows, n0)| {
            let mut m = *n0;
            for (k, row) in rows.chunks_exact(r).enumerate() {
                let mut s = 0.0f32;
                for (a, b) in row.iter().zip(q) {
                    s += a * b;
                }
                m[k] += s;
            }
            let len2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
            if len2 > 0.0 {
                let inv = 1.0 / len2.sqrt();
                [m[0] * inv, m[1] * inv, m[2] * inv]
            } else {
                [0.0; 3]
            }
        })
        .collect()
}

/// Which output buffer of a [`GpuDeformer`] to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeformOutput {
    /// `u = U q`.
    Displacements,
    /// `X + u` (equal to `u` when no rest positions were given).
    Positions,
    /// `normalize(N + dN q)` (zeros when no normal basis was given).
    Normals,
}

/// Evaluates `u = U q`, `X + u` and the dynamic normals of one render mesh on the GPU.
///
/// The bases live in GPU storage buffers, uploaded once; [`GpuDeformer::update`] uploads
/// only `q` and records one compute dispatch. The outputs are storage buffers with
/// `VERTEX` usage, ready to be bound as vertex buffers (`Float32x3`) by a render pass.
#[derive(Debug)]
pub struct GpuDeformer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    q: wgpu::Buffer,
    displacements: wgpu::Buffer,
    positions: wgpu::Buffer,
    normals: wgpu::Buffer,
    n: usize,
    r: usize,
    has_normals: bool,
}

impl GpuDeformer {
    /// [`GpuDeformer::new`] on a [`GpuContext`]'s device and queue.
    pub fn from_context(
        ctx: &GpuContext,
        u_rows: &[f32],
        r: usize,
        rest: Option<&[[f32; 3]]>,
        normals: Option<&NormalBasis>,
    ) -> Result<GpuDeformer, RenderError> {
        GpuDeformer::new(&ctx.device, &ctx.queue, u_rows, r, rest, normals)
    }

    /// Upload the render basis `u_rows` (row-major `3 n x r`), optionally the rest
    /// positions (`n`) and a normal basis (`n` normals, `3 n x r` rows), and build the
    /// compute pipeline. `q` starts at zero (outputs are undefined until the first
    /// [`GpuDeformer::update`]).
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        u_rows: &[f32],
        r: usize,
        rest: Option<&[[f32; 3]]>,
        normals: Option<&NormalBasis>,
    ) -> Result<GpuDeformer, RenderError> {
        let n = check_shapes(u_rows, r, rest, normals)?;
        let limits = device.limits();
        check_workgroups(&limits, n)?;
        let basis = pack_basis(&limits, u_rows, normals)?;
        let frame = rest_frame(n, rest, normals);
        let (n32, r32) = (u32_of(n)?, u32_of(r)?);
        let params = [n32, r32, u32::from(normals.is_some()), 0];

        let buffers = DeformBuffers::new(device, &params, r, &basis, &frame, n);
        let layout = create_bind_group_layout(device);
        let bind_group = buffers.bind_group(device, &layout);
        let pipeline = create_pipeline(device, &layout);
        let DeformBuffers {
            q,
            displacements,
            positions,
            normals: normals_buf,
            ..
        } = buffers;
        Ok(GpuDeformer {
            device: device.clone(),
            queue: queue.clone(),
            pipeline,
            bind_group,
            q,
            displacements,
            positions,
            normals: normals_buf,
            n,
            r,
            has_normals: normals.is_some(),
        })
    }

    /// Number of render vertices `n`.
    pub fn num_vertices(&self) -> usize {
        self.n
    }

    /// Number of reduced coordinates `r`.
    pub fn rank(&self) -> usize {
        self.r
    }

    /// Whether dynamic normals are computed.
    pub fn has_normals(&self) -> bool {
        self.has_normals
    }

    /// The per-frame path: upload `q` (`r` floats) and submit one dispatch that writes
    /// all outputs. Does not wait; later submissions on the same queue (a render pass
    /// reading the outputs) are ordered after it. Use [`GpuDeformer::wait`] to block.
    pub fn update(&self, q: &[f32]) -> Result<wgpu::SubmissionIndex, RenderError> {
        if q.len() != self.r {
            return Err(RenderError::Shape(format!(
                "q has {} entries, the basis {}",
                q.len(),
                self.r
            )));
        }
        self.queue.write_buffer(&self.q, 0, bytemuck::cast_slice(q));
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("deform"),
            });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("deform pass"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            // Checked against the device limit in `new`.
            pass.dispatch_workgroups(self.n.div_ceil(WORKGROUP_SIZE as usize) as u32, 1, 1);
        }
        Ok(self.queue.submit([encoder.finish()]))
    }

    /// Block until all submitted GPU work is done.
    pub fn wait(&self) -> Result<(), RenderError> {
        self.device.poll(wgpu::PollType::wait_indefinitely())?;
        Ok(())
    }

    /// The output buffer (`STORAGE | VERTEX | COPY_SRC`, 3 f32 per vertex).
    pub fn buffer(&self, which: DeformOutput) -> &wgpu::Buffer {
        match which {
            DeformOutput::Displacements => &self.displacements,
            DeformOutput::Positions => &self.positions,
            DeformOutput::Normals => &self.normals,
        }
    }

    /// Copy an output to the CPU (tests and screenshots only: it allocates a staging
    /// buffer and blocks on the device until the copy is mapped).
    pub fn read_back(&self, which: DeformOutput) -> Result<Vec<[f32; 3]>, RenderError> {
        let size = (12 * self.n) as u64;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("deform read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("deform read-back"),
            });
        encoder.copy_buffer_to_buffer(self.buffer(which), 0, &staging, 0, size);
        self.queue.submit([encoder.finish()]);
        super::map_read_blocking(&self.device, &staging)?;
        let floats: Vec<f32> = {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| RenderError::Map(format!("{e}")))?;
            bytemuck::pod_collect_to_vec(&view)
        };
        staging.unmap();
        Ok(floats.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
    }
}

fn u32_of(x: usize) -> Result<u32, RenderError> {
    u32::try_from(x).map_err(|_| RenderError::Limits(format!("{x} does not fit in u32")))
}

/// Checks the shapes of `U`, the rest positions and the normal basis; returns `n`.
fn check_shapes(
    u_rows: &[f32],
    r: usize,
    rest: Option<&[[f32; 3]]>,
    normals: Option<&NormalBasis>,
) -> Result<usize, RenderError> {
    if r == 0 || u_rows.is_empty() || !u_rows.len().is_multiple_of(3 * r) {
        return Err(RenderError::Shape(format!(
            "U has {} floats, not a non-empty 3 n x r with r = {r}",
            u_rows.len()
        )));
    }
    let n = u_rows.len() / (3 * r);
    if let Some(x) = rest {
        if x.len() != n {
            return Err(RenderError::Shape(format!(
                "{} rest positions for {n} basis vertices",
                x.len()
            )));
        }
    }
    if let Some(nb) = normals {
        if nb.normals.len() != n || nb.rows.len() != u_rows.len() {
            return Err(RenderError::Shape(format!(
                "normal basis has {} normals and {} floats, expected {n} and {}",
                nb.normals.len(),
                nb.rows.len(),
                u_rows.len()
            )));
        }
    }
    Ok(n)
}

/// Checks that one dispatch over `n` vertices fits the device's workgroup limit.
fn check_workgroups(limits: &wgpu::Limits, n: usize) -> Result<(), RenderError> {
    let groups = n.div_ceil(WORKGROUP_SIZE as usize);
    if groups > limits.max_compute_workgroups_per_dimension as usize {
        return Err(RenderError::Limits(format!(
            "{n} vertices need {groups} workgroups, the device allows {}",
            limits.max_compute_workgroups_per_dimension
        )));
    }
    Ok(())
}

/// Concatenates `U` and, when given, `dN` into one storage array the device can bind.
fn pack_basis(
    limits: &wgpu::Limits,
    u_rows: &[f32],
    normals: Option<&NormalBasis>,
) -> Result<Vec<f32>, RenderError> {
    let mut basis = Vec::with_capacity(u_rows.len() * if normals.is_some() { 2 } else { 1 });
    basis.extend_from_slice(u_rows);
    if let Some(nb) = normals {
        basis.extend_from_slice(&nb.rows);
    }
    let basis_bytes = (basis.len() * 4) as u64;
    if basis_bytes > limits.max_storage_buffer_binding_size || basis_bytes > limits.max_buffer_size
    {
        return Err(RenderError::Limits(format!(
            "basis of {basis_bytes} bytes, the device binds at most {}",
            limits
                .max_storage_buffer_binding_size
                .min(limits.max_buffer_size)
        )));
    }
    Ok(basis)
}

/// Interleaves rest positions and rest normals, 6 floats per vertex (zeros if absent).
fn rest_frame(n: usize, rest: Option<&[[f32; 3]]>, normals: Option<&NormalBasis>) -> Vec<f32> {
    let mut frame = vec![0.0f32; 6 * n];
    for (v, f) in frame.chunks_exact_mut(6).enumerate() {
        if let Some(x) = rest {
            f[..3].copy_from_slice(&x[v]);
        }
        if let Some(nb) = normals {
            f[3..].copy_from_slice(&nb.normals[v]);
        }
    }
    frame
}

/// The deformer's buffers, in binding order.
struct DeformBuffers {
    params: wgpu::Buffer,
    q: wgpu::Buffer,
    basis: wgpu::Buffer,
    frame: wgpu::Buffer,
    displacements: wgpu::Buffer,
    positions: wgpu::Buffer,
    normals: wgpu::Buffer,
}

impl DeformBuffers {
    /// Uploads the inputs (with `q` at zero) and allocates the outputs of `n` vertices.
    fn new(
        device: &wgpu::Device,
        params: &[u32; 4],
        r: usize,
        basis: &[f32],
        frame: &[f32],
        n: usize,
    ) -> Self {
        let storage = wgpu::BufferUsages::STORAGE;
        let init = |label: &str, contents: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let params_buf = init(
            "deform params",
            bytemuck::cast_slice(params),
            wgpu::BufferUsages::UNIFORM,
        );
        let q_buf = init(
            "deform q",
            bytemuck::cast_slice(&vec![0.0f32; r]),
            storage | wgpu::BufferUsages::COPY_DST,
        );
        let basis_buf = init("deform basis (U, dN)", bytemuck::cast_slice(basis), storage);
        let frame_buf = init("deform rest frame", bytemuck::cast_slice(frame), storage);
        let out = |label: &str| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (12 * n) as u64,
                usage: storage | wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            })
        };
        DeformBuffers {
            params: params_buf,
            q: q_buf,
            basis: basis_buf,
            frame: frame_buf,
            displacements: out("deform displacements"),
            positions: out("deform positions"),
            normals: out("deform normals"),
        }
    }

    /// The bind group of every buffer, binding `i` the `i`-th in declaration order.
    fn bind_group(&self, device: &wgpu::Device, layout: &wgpu::BindGroupLayout) -> wgpu::BindGroup {
        let buffers = [
            &self.params,
            &self.q,
            &self.basis,
            &self.frame,
            &self.displacements,
            &self.positions,
            &self.normals,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("deform bind group"),
            layout,
            entries: &entries,
        })
    }
}

/// The layout of the uniform parameters, three read-only and three writable buffers.
fn create_bind_group_layout(device: &wgpu::Device) -> wgpu::BindGroupLayout {
    let entry = |binding: u32, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let read = wgpu::BufferBindingType::Storage { read_only: true };
    let write = wgpu::BufferBindingType::Storage { read_only: false };
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("deform layout"),
        entries: &[
            entry(0, wgpu::BufferBindingType::Uniform),
            entry(1, read),
            entry(2, read),
            entry(3, read),
            entry(4, write),
            entry(5, write),
            entry(6, write),
        ],
    })
}

/// Compiles the deformation shader into a compute pipeline over `layout`.
fn create_pipeline(device: &wgpu::Device, layout: &wgpu::BindGroupLayout) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("deform.wgsl"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("deform pipeline layout"),
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("deform pipeline"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("deform"),
        compilation_options: Default::default(),
        cache: None,
    })
}
