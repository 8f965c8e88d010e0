//! GPU rendering of reduced deformable objects (thesis 2.7, "GPU rendering").
//!
//! The haptic thread advances the reduced coordinates `q` (r numbers per object); the
//! render thread needs the deformed render mesh. Its displacements are the linear map
//!
//! ```text
//! u = U q            (U: 3 n x r render basis, n render vertices)
//! x = X + u          (X: rest positions)
//! n_v = normalize(N_v + dN_v q)     (dynamic normals, dN_v: 3 x r per vertex)
//! ```
//!
//! evaluated on the GPU, so each frame uploads only the r floats of `q` and the deformed
//! vertex data never leaves GPU memory: the deformer's outputs are bound directly as the
//! vertex buffers of the lit render pass.
//!
//! - [`deform`]: the compute pass ([`GpuDeformer`]) and its CPU reference;
//! - [`renderer`]: the scene pass ([`SceneRenderer`]): lit objects, the manipulandum
//!   ghost, the floor grid and overlays;
//! - `pipelines` and `uploads` (private): the scene pass's render pipelines, and its
//!   GPU buffers (uniforms, mesh buffers, overlay vertex lists) with their writes;
//! - [`overlay`]: the overlay geometry (arrows, BD spheres, pointshell points);
//! - [`camera`]: the orbit camera;
//! - [`offscreen`]: frames rendered to a texture and written as PNG.
//!
//! [`GpuContext::headless`] opens any wgpu adapter (hardware, or software Vulkan via
//! mesa lavapipe) without a window; the interactive application opens one for its
//! window's surface.

pub mod camera;
pub mod deform;
pub mod offscreen;
pub mod overlay;
mod pipelines;
pub mod renderer;
mod uploads;

pub use camera::OrbitCamera;
pub use deform::{
    deform_cpu, deform_normals_cpu, normal_basis, DeformOutput, GpuDeformer, NormalBasis,
};
pub use offscreen::{render_image, Image, OFFSCREEN_FORMAT};
pub use renderer::{ContactMarker, FrameState, Overlays, SceneRenderer};
pub use uploads::RenderObject;

use thiserror::Error;

/// Errors of the render module.
#[derive(Debug, Error)]
pub enum RenderError {
    /// No wgpu adapter (GPU or software rasterizer) could be opened.
    #[error(
        "no GPU adapter available ({0}); install a Vulkan driver, e.g. software Vulkan \
         (mesa lavapipe: `apt-get install mesa-vulkan-drivers`)"
    )]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("could not create a GPU device: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
    /// Waiting for the GPU failed (device lost or timeout).
    #[error("GPU poll failed: {0}")]
    Poll(#[from] wgpu::PollError),
    /// Mapping a read-back buffer failed.
    #[error("GPU buffer mapping failed: {0}")]
    Map(String),
    /// Inconsistent input sizes.
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// The data does not fit the device's limits.
    #[error("exceeds device limits: {0}")]
    Limits(String),
    /// No colour format the renderer supports.
    #[error("unsupported texture format: {0}")]
    UnsupportedFormat(String),
    /// A frame could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// Device limits for rendering a scene on `adapter`: WebGPU's defaults, with the
/// storage-buffer and buffer sizes raised to the adapter's (render bases of large meshes
/// are big).
pub fn required_limits(adapter: &wgpu::Adapter) -> wgpu::Limits {
    let adapter_limits = adapter.limits();
    wgpu::Limits {
        max_storage_buffer_binding_size: adapter_limits.max_storage_buffer_binding_size,
        max_buffer_size: adapter_limits.max_buffer_size,
        ..wgpu::Limits::default()
    }
}

/// Maps `buffer` (`MAP_READ`, its copy already submitted) for reading and blocks until
/// the device has finished and the mapping is ready: the read-back path of tests and
/// offscreen frames, never of the frame loop.
pub(crate) fn map_read_blocking(
    device: &wgpu::Device,
    buffer: &wgpu::Buffer,
) -> Result<(), RenderError> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.slice(..).map_async(wgpu::MapMode::Read, move |res| {
        // The receiver lives until after the poll below; a failed send only means it is
        // gone, and then nobody needs the result.
        let _ = tx.send(res);
    });
    device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()
        .map_err(|_| RenderError::Map("map callback never ran".into()))?
        .map_err(|e| RenderError::Map(format!("{e}")))
}

/// A wgpu device and queue opened without a window (tests, benchmarks, screenshots).
#[derive(Debug, Clone)]
pub struct GpuContext {
    /// The adapter the device was opened on (name, backend, device type).
    pub adapter_info: wgpu::AdapterInfo,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

impl GpuContext {
    /// Open any adapter (all backends; `WGPU_BACKEND` etc. from the environment are
    /// honoured), falling back to a software adapter if no hardware one is found, and
    /// create a device with default limits, raised to the adapter's storage-buffer and
    /// buffer-size limits (render bases of large meshes are big).
    pub fn headless() -> Result<GpuContext, RenderError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter =
            match pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })) {
                Ok(a) => a,
                Err(first) => {
                    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                        force_fallback_adapter: true,
                        ..Default::default()
                    }))
                    .map_err(|e| RenderError::NoAdapter(format!("{first}; fallback: {e}")))?
                }
            };
        let required_limits = required_limits(&adapter);
        let (device, queue) =
            pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
                label: Some("haptics headless device"),
                required_limits,
                ..Default::default()
            }))?;
        Ok(GpuContext {
            adapter_info: adapter.get_info(),
            device,
            queue,
        })
    }

    /// One line naming the adapter: name, backend, device type.
    pub fn adapter_summary(&self) -> String {
        format!(
            "{} ({:?}, {:?}, driver {} {})",
            self.adapter_info.name,
            self.adapter_info.backend,
            self.adapter_info.device_type,
            self.adapter_info.driver,
            self.adapter_info.driver_info
        )
    }
}
