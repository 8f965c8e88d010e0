//! The render pipelines of the scene pass, all built from one shader module
//! (`scene.wgsl`) and one pipeline layout (the camera and object uniform groups): lit
//! meshes (deformable and rigid, solid and ghost) and the coloured overlay lines, points
//! and contact markers.

use super::overlay::ColorVertex;
use super::uploads::Uniforms;

/// Depth buffer format of every pass.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The scene's vertex and fragment shaders: lit triangles and flat-coloured lines and
/// points.
const SHADER: &str = include_str!("scene.wgsl");

/// Every render pipeline of the scene pass, from one shader module.
#[derive(Debug)]
pub(super) struct Pipelines {
    /// Deformable meshes: positions and normals in separate buffers (the deformer's).
    pub(super) mesh: wgpu::RenderPipeline,
    /// The same, transparent (the manipulandum ghost of a deformable object).
    pub(super) ghost: wgpu::RenderPipeline,
    /// Rigid meshes: interleaved flat-shaded positions and normals.
    pub(super) rigid: wgpu::RenderPipeline,
    /// The same, transparent.
    pub(super) rigid_ghost: wgpu::RenderPipeline,
    /// Coloured overlay lines (grid, BD spheres, arrows).
    pub(super) line: wgpu::RenderPipeline,
    /// Coloured overlay points (pointshell levels).
    pub(super) point: wgpu::RenderPipeline,
    /// Contact markers, drawn over everything.
    pub(super) marker: wgpu::RenderPipeline,
}

impl Pipelines {
    /// Builds every pipeline for colour targets of `color_format`.
    pub(super) fn new(
        device: &wgpu::Device,
        uniforms: &Uniforms,
        color_format: wgpu::TextureFormat,
    ) -> Self {
        let builder = PipelineBuilder::new(device, uniforms, color_format);
        let [mesh, ghost, rigid, rigid_ghost] = builder.mesh_pipelines();
        let [line, point, marker] = builder.overlay_pipelines();
        Pipelines {
            mesh,
            ghost,
            rigid,
            rigid_ghost,
            line,
            point,
            marker,
        }
    }
}

/// A colour-target description for `format`, optionally alpha-blended.
fn target(format: wgpu::TextureFormat, blend: bool) -> Option<wgpu::ColorTargetState> {
    Some(wgpu::ColorTargetState {
        format,
        blend: blend.then_some(wgpu::BlendState::ALPHA_BLENDING),
        write_mask: wgpu::ColorWrites::ALL,
    })
}

/// A `Float32x3` vertex attribute at `location`, `offset` bytes into the vertex.
fn f3(location: u32, offset: u64) -> wgpu::VertexAttribute {
    wgpu::VertexAttribute {
        format: wgpu::VertexFormat::Float32x3,
        offset,
        shader_location: location,
    }
}

/// What every scene pipeline shares: layout, shader module and colour format.
struct PipelineBuilder<'a> {
    device: &'a wgpu::Device,
    layout: wgpu::PipelineLayout,
    module: wgpu::ShaderModule,
    color_format: wgpu::TextureFormat,
}

impl<'a> PipelineBuilder<'a> {
    /// Creates the pipeline layout of the two uniform groups and compiles the shader.
    fn new(
        device: &'a wgpu::Device,
        uniforms: &Uniforms,
        color_format: wgpu::TextureFormat,
    ) -> Self {
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("scene pipeline layout"),
            bind_group_layouts: &[Some(&uniforms.camera_layout), Some(&uniforms.object_layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("scene.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        PipelineBuilder {
            device,
            layout,
            module,
            color_format,
        }
    }

    /// The surface pipelines, in the order mesh, ghost, rigid, rigid ghost.
    fn mesh_pipelines(&self) -> [wgpu::RenderPipeline; 4] {
        let separate = [
            Some(wgpu::VertexBufferLayout {
                array_stride: 12,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &[f3(0, 0)],
            }),
            Some(wgpu::VertexBufferLayout {
                array_stride: 12,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &[f3(1, 0)],
            }),
        ];
        let interleaved_attributes = [f3(0, 0), f3(1, 12)];
        let interleaved = [Some(wgpu::VertexBufferLayout {
            array_stride: 24,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &interleaved_attributes,
        })];
        let mesh_entries = ("vs_mesh", "fs_mesh");
        use wgpu::PrimitiveTopology::TriangleList;
        let mesh = self.pipeline(
            "deformable mesh",
            &separate,
            mesh_entries,
            TriangleList,
            false,
            false,
        );
        let ghost = self.pipeline(
            "deformable ghost",
            &separate,
            mesh_entries,
            TriangleList,
            true,
            false,
        );
        let rigid = self.pipeline(
            "rigid mesh",
            &interleaved,
            mesh_entries,
            TriangleList,
            false,
            false,
        );
        let rigid_ghost = self.pipeline(
            "rigid ghost",
            &interleaved,
            mesh_entries,
            TriangleList,
            true,
            false,
        );
        [mesh, ghost, rigid, rigid_ghost]
    }

    /// The overlay pipelines, in the order lines, points, markers.
    fn overlay_pipelines(&self) -> [wgpu::RenderPipeline; 3] {
        let color_attributes = [
            f3(0, 0),
            wgpu::VertexAttribute {
                format: wgpu::VertexFormat::Float32x4,
                offset: 12,
                shader_location: 1,
            },
        ];
        let colored = [Some(wgpu::VertexBufferLayout {
            array_stride: std::mem::size_of::<ColorVertex>() as u64,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &color_attributes,
        })];
        let line_entries = ("vs_line", "fs_line");
        use wgpu::PrimitiveTopology::{LineList, PointList};
        let line = self.pipeline("lines", &colored, line_entries, LineList, true, false);
        let point = self.pipeline("points", &colored, line_entries, PointList, true, false);
        let marker = self.pipeline("markers", &colored, line_entries, LineList, true, true);
        [line, point, marker]
    }

    /// One pipeline: (vertex, fragment) entry points, transparent if `blend`, over all if `on_top`.
    fn pipeline(
        &self,
        label: &str,
        buffers: &[Option<wgpu::VertexBufferLayout>],
        (vs, fs): (&str, &str),
        topology: wgpu::PrimitiveTopology,
        blend: bool,
        on_top: bool,
    ) -> wgpu::RenderPipeline {
        self.device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(&self.layout),
                vertex: wgpu::VertexState {
                    module: &self.module,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    // Transparent geometry is tested against, but does not write, depth.
                    depth_write_enabled: Some(!blend),
                    // Markers drawn on top are seen through the objects they sit in.
                    depth_compare: Some(if on_top {
                        wgpu::CompareFunction::Always
                    } else {
                        wgpu::CompareFunction::LessEqual
                    }),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &self.module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[target(self.color_format, blend)],
                }),
                multiview_mask: None,
                cache: None,
            })
    }
}
