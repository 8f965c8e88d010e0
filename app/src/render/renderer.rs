//! The scene renderer: draws one frame of a [`Scene`] into any colour target (a window's
//! surface texture or an offscreen texture).
//!
//! What a frame shows:
//! - every object's surface, lit (a key light from above the camera, a fill light and
//!   ambient, Blinn-Phong specular; two-sided, since render meshes may be polygon soups
//!   with mixed winding);
//! - deformable objects at `x = X + U q`, with dynamic normals `normalize(N + dN q)`,
//!   both evaluated by [`GpuDeformer`] on the GPU (thesis 2.7): per frame only `q` is
//!   uploaded, and the deformer's output buffers are bound directly as vertex buffers;
//! - rigid objects through their model matrices (flat shaded: they are usually boxes and
//!   CAD parts whose sharp edges vertex normals would round off);
//! - the virtual coupling (thesis 4.4): the simulated haptic object solid, the
//!   manipulandum (where the device holds it) as a transparent ghost;
//! - overlays (see [`super::overlay`]): a floor grid, contact points and force arrows,
//!   the pointshell and the traversed BD spheres.

use bytemuck::Zeroable;
use nalgebra::{Isometry3, Matrix4, Point3, Vector3};
use wgpu::util::DeviceExt;

use super::camera::OrbitCamera;
use super::deform::{normal_basis, DeformOutput, GpuDeformer};
use super::overlay::{arrow, cross, floor_grid, ColorVertex};
use super::RenderError;
use haptics::mesh::SurfaceMesh;
use haptics::scene::Scene;

/// Depth buffer format of every pass.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// Background colour (linear).
pub const BACKGROUND: wgpu::Color = wgpu::Color {
    r: 0.045,
    g: 0.05,
    b: 0.06,
    a: 1.0,
};

/// Colour of the manipulandum ghost (linear RGB, alpha).
const GHOST_COLOR: [f32; 4] = [0.4, 0.8, 1.0, 0.28];

/// One point in contact, for the overlay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactMarker {
    /// World position of the pointshell point.
    pub position: Point3<f32>,
    /// Penalty force on the pointshell object at that point (world, simulation units).
    pub force: Vector3<f32>,
}

/// The state to draw: poses, reduced coordinates and overlay geometry.
#[derive(Debug, Clone, Default)]
pub struct FrameState {
    /// World pose of the simulated haptic object's body frame (drawn solid).
    pub haptic_pose: Isometry3<f32>,
    /// World pose of the manipulandum's body frame (drawn as a ghost), if known.
    pub manipulandum_pose: Option<Isometry3<f32>>,
    /// Reduced coordinates of a deformable haptic object (empty if rigid).
    pub haptic_q: Vec<f32>,
    /// Reduced coordinates of every environment object (empty for rigid ones).
    pub environment_q: Vec<Vec<f32>>,
    /// Points in contact with their penalty forces.
    pub contacts: Vec<ContactMarker>,
    /// Extra line-list geometry (BD spheres, ...), world space.
    pub lines: Vec<ColorVertex>,
    /// Extra point-list geometry (pointshell view), world space.
    pub points: Vec<ColorVertex>,
}

/// Which overlays to draw. Contact markers are drawn over everything: a red cross per
/// point, a yellow arrow per point force and a cyan arrow for their sum at the points'
/// centroid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlays {
    pub grid: bool,
    pub ghost: bool,
    pub contacts: bool,
    /// Arrow length per unit force (simulation length units per newton).
    pub force_scale: f32,
}

impl Default for Overlays {
    fn default() -> Self {
        Overlays {
            grid: true,
            ghost: true,
            contacts: true,
            force_scale: 0.05,
        }
    }
}

impl Overlays {
    /// Defaults for `scene`: arrows scaled so that a point force equal to the device's
    /// largest force spans 15% of the scene's diagonal.
    pub fn for_scene(scene: &Scene) -> Self {
        let (lo, hi) = scene_bounds(scene);
        let max_force = scene.coupling.device_max_force;
        let force_scale = if max_force.is_finite() && max_force > 0.0 {
            0.15 * (hi - lo).norm() / max_force as f32
        } else {
            Overlays::default().force_scale
        };
        Overlays {
            force_scale,
            ..Overlays::default()
        }
    }
}

/// Uniforms of the whole frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CameraUniform {
    view_proj: [[f32; 4]; 4],
    eye: [f32; 4],
    light: [f32; 4],
}

/// Uniforms of one draw.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ObjectUniform {
    model: [[f32; 4]; 4],
    color: [f32; 4],
}

/// Vertex data of one render mesh on the GPU.
#[derive(Debug)]
enum MeshBuffers {
    /// Deformed every frame by the GPU deformer (positions and normals are its outputs).
    Deformable {
        deformer: GpuDeformer,
        indices: wgpu::Buffer,
        index_count: u32,
    },
    /// Flat-shaded, un-indexed triangles (position, normal interleaved).
    Rigid {
        vertices: wgpu::Buffer,
        vertex_count: u32,
    },
}

/// One drawable: mesh buffers and its uniform slot.
#[derive(Debug)]
struct DrawObject {
    mesh: MeshBuffers,
    uniform: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    color: [f32; 4],
}

/// A line or point list rewritten every frame.
#[derive(Debug)]
struct DynamicVertices {
    buffer: wgpu::Buffer,
    capacity: usize,
    count: u32,
    label: &'static str,
}

impl DynamicVertices {
    fn new(device: &wgpu::Device, label: &'static str) -> Self {
        let capacity = 4096;
        DynamicVertices {
            buffer: Self::allocate(device, label, capacity),
            capacity,
            count: 0,
            label,
        }
    }

    fn allocate(device: &wgpu::Device, label: &str, capacity: usize) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: (capacity * std::mem::size_of::<ColorVertex>()) as u64,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn upload(&mut self, device: &wgpu::Device, queue: &wgpu::Queue, data: &[ColorVertex]) {
        if data.len() > self.capacity {
            self.capacity = data.len().next_power_of_two();
            self.buffer = Self::allocate(device, self.label, self.capacity);
        }
        if !data.is_empty() {
            queue.write_buffer(&self.buffer, 0, bytemuck::cast_slice(data));
        }
        self.count = data.len() as u32;
    }
}

/// Draws frames of one scene. Built once per scene and colour format.
#[derive(Debug)]
pub struct SceneRenderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    mesh_pipeline: wgpu::RenderPipeline,
    ghost_pipeline: wgpu::RenderPipeline,
    rigid_pipeline: wgpu::RenderPipeline,
    rigid_ghost_pipeline: wgpu::RenderPipeline,
    line_pipeline: wgpu::RenderPipeline,
    point_pipeline: wgpu::RenderPipeline,
    /// Lines drawn over everything (contact markers and force arrows).
    marker_pipeline: wgpu::RenderPipeline,
    camera_buffer: wgpu::Buffer,
    camera_group: wgpu::BindGroup,
    environment: Vec<DrawObject>,
    haptic: DrawObject,
    ghost_uniform: wgpu::Buffer,
    ghost_group: wgpu::BindGroup,
    identity_group: wgpu::BindGroup,
    lines: DynamicVertices,
    points: DynamicVertices,
    markers: DynamicVertices,
    depth: Option<(wgpu::TextureView, (u32, u32))>,
    bounds: (Point3<f32>, Point3<f32>),
    scratch: Vec<ColorVertex>,
    show_ghost: bool,
    viewport: [f32; 4],
    color_format: wgpu::TextureFormat,
}

const SHADER: &str = r#"
struct Camera { view_proj: mat4x4<f32>, eye: vec4<f32>, light: vec4<f32> };
struct Object { model: mat4x4<f32>, color: vec4<f32> };
@group(0) @binding(0) var<uniform> camera: Camera;
@group(1) @binding(0) var<uniform> object: Object;

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
};

@vertex
fn vs_mesh(@location(0) position: vec3<f32>, @location(1) normal: vec3<f32>) -> MeshOut {
    var out: MeshOut;
    let world = object.model * vec4<f32>(position, 1.0);
    out.clip = camera.view_proj * world;
    out.world = world.xyz;
    out.normal = (object.model * vec4<f32>(normal, 0.0)).xyz;
    return out;
}

@fragment
fn fs_mesh(in: MeshOut) -> @location(0) vec4<f32> {
    let v = normalize(camera.eye.xyz - in.world);
    var n = in.normal;
    let len = length(n);
    if (len > 1e-12) { n = n / len; } else { n = v; }
    // Two-sided: soups have mixed winding, so face the viewer.
    if (dot(n, v) < 0.0) { n = -n; }
    let l = normalize(camera.light.xyz);
    let fill = normalize(vec3<f32>(-l.x, 0.3, -l.z));
    let diffuse = max(dot(n, l), 0.0) * 0.75 + max(dot(n, fill), 0.0) * 0.2 + 0.12;
    let h = normalize(l + v);
    let specular = pow(max(dot(n, h), 0.0), 48.0) * 0.25;
    return vec4<f32>(object.color.rgb * diffuse + vec3<f32>(specular), object.color.a);
}

struct LineOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) color: vec4<f32>,
};

@vertex
fn vs_line(@location(0) position: vec3<f32>, @location(1) color: vec4<f32>) -> LineOut {
    var out: LineOut;
    out.clip = camera.view_proj * object.model * vec4<f32>(position, 1.0);
    out.color = color;
    return out;
}

@fragment
fn fs_line(in: LineOut) -> @location(0) vec4<f32> {
    return in.color;
}
"#;

fn mat(m: &Matrix4<f32>) -> [[f32; 4]; 4] {
    (*m).into()
}

/// Flat-shaded triangles of a rigid mesh: three vertices per triangle, each
/// `[position, face normal]`.
pub fn flat_vertices(mesh: &SurfaceMesh) -> Vec<[f32; 6]> {
    let mut out = Vec::with_capacity(3 * mesh.triangles.len());
    for t in 0..mesh.triangles.len() {
        let [a, b, c] = mesh.triangle(t);
        let n = (b - a).cross(&(c - a));
        let n = if n.norm() > 0.0 {
            n.normalize()
        } else {
            Vector3::zeros()
        };
        for p in [a, b, c] {
            out.push([
                p.x as f32, p.y as f32, p.z as f32, n.x as f32, n.y as f32, n.z as f32,
            ]);
        }
    }
    out
}

/// An object to draw: its surface, its render basis and rank (empty and 0 for a rigid
/// one), and its pose.
#[derive(Debug, Clone, Copy)]
pub struct RenderObject<'a> {
    /// A label (for GPU debugging).
    pub name: &'a str,
    /// The surface, in the object's frame.
    pub mesh: &'a SurfaceMesh,
    /// The render basis (rows of U at the surface vertices), empty for a rigid object.
    pub basis: &'a [f32],
    /// Its rank.
    pub r: usize,
    /// The pose of the object's frame.
    pub pose: Isometry3<f64>,
}

/// World-space bounding box of the scene's surfaces at rest.
pub fn scene_bounds(scene: &Scene) -> (Point3<f32>, Point3<f32>) {
    let mut objects: Vec<RenderObject> = scene
        .environment
        .iter()
        .map(|e| RenderObject {
            name: &e.name,
            mesh: &e.surface,
            basis: &[],
            r: 0,
            pose: e.pose,
        })
        .collect();
    objects.push(RenderObject {
        name: "haptic object",
        mesh: &scene.haptic.surface,
        basis: &[],
        r: 0,
        pose: scene.haptic.pose,
    });
    objects_bounds(objects.iter())
}

/// World-space bounding box of objects' surfaces at their poses.
pub fn objects_bounds<'a>(
    objects: impl Iterator<Item = &'a RenderObject<'a>>,
) -> (Point3<f32>, Point3<f32>) {
    let mut lo = Point3::new(f32::MAX, f32::MAX, f32::MAX);
    let mut hi = Point3::new(f32::MIN, f32::MIN, f32::MIN);
    for o in objects {
        for v in &o.mesh.vertices {
            let p: Point3<f32> = (o.pose * v).cast();
            lo = lo.inf(&p);
            hi = hi.sup(&p);
        }
    }
    if lo.x > hi.x {
        (Point3::new(-1.0, -1.0, -1.0), Point3::new(1.0, 1.0, 1.0))
    } else {
        (lo, hi)
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

/// Colours of the environment objects, in scene order.
const ENVIRONMENT_PALETTE: [[f32; 4]; 3] = [
    [0.62, 0.64, 0.68, 1.0],
    [0.35, 0.55, 0.75, 1.0],
    [0.55, 0.7, 0.45, 1.0],
];

/// Colour of the haptic object.
const HAPTIC_COLOR: [f32; 4] = [0.9, 0.55, 0.2, 1.0];

/// The two uniform bind-group layouts (camera, object) and the helpers that make
/// uniform buffers and their bind groups.
struct Uniforms<'a> {
    device: &'a wgpu::Device,
    camera_layout: wgpu::BindGroupLayout,
    object_layout: wgpu::BindGroupLayout,
}

impl<'a> Uniforms<'a> {
    fn new(device: &'a wgpu::Device) -> Self {
        let layout = |label: &str| {
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(label),
                entries: &[wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                }],
            })
        };
        Uniforms {
            device,
            camera_layout: layout("camera layout"),
            object_layout: layout("object layout"),
        }
    }

    /// A uniform buffer holding `contents`.
    fn buffer(&self, label: &str, contents: &[u8]) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// A bind group of one uniform buffer.
    fn group(
        &self,
        label: &str,
        layout: &wgpu::BindGroupLayout,
        buffer: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(label),
            layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: buffer.as_entire_binding(),
            }],
        })
    }

    /// An object's uniform (model matrix and colour) with its bind group.
    fn object(
        &self,
        label: &str,
        model: Matrix4<f32>,
        color: [f32; 4],
    ) -> (wgpu::Buffer, wgpu::BindGroup) {
        let u = ObjectUniform {
            model: mat(&model),
            color,
        };
        let buffer = self.buffer(label, bytemuck::bytes_of(&u));
        let bind_group = self.group(label, &self.object_layout, &buffer);
        (buffer, bind_group)
    }
}

/// Every render pipeline of the scene pass, from one shader module.
struct Pipelines {
    /// Deformable meshes: positions and normals in separate buffers (the deformer's).
    mesh: wgpu::RenderPipeline,
    /// The same, transparent (the manipulandum ghost of a deformable object).
    ghost: wgpu::RenderPipeline,
    /// Rigid meshes: interleaved flat-shaded positions and normals.
    rigid: wgpu::RenderPipeline,
    /// The same, transparent.
    rigid_ghost: wgpu::RenderPipeline,
    /// Coloured overlay lines (grid, BD spheres, arrows).
    line: wgpu::RenderPipeline,
    /// Coloured overlay points (pointshell levels).
    point: wgpu::RenderPipeline,
    /// Contact markers, drawn over everything.
    marker: wgpu::RenderPipeline,
}

impl Pipelines {
    fn new(device: &wgpu::Device, uniforms: &Uniforms, color_format: wgpu::TextureFormat) -> Self {
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

/// What is drawn of one object: its surface, its render basis (3 x r rows per vertex,
/// row-major, f32; empty for a rigid object) and its model matrix and colour.
struct ObjectSource<'a> {
    mesh: &'a SurfaceMesh,
    basis: &'a [f32],
    r: usize,
    model: Matrix4<f32>,
    color: [f32; 4],
}

/// Uploads one object: a GPU deformer (u = U q and dynamic normals) for a deformable
/// surface, flat-shaded vertices for a rigid one, and its uniform.
fn upload_object(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    uniforms: &Uniforms,
    label: &str,
    o: ObjectSource,
) -> Result<DrawObject, RenderError> {
    let mesh_buffers = if o.r > 0 && !o.basis.is_empty() {
        let normals = normal_basis(o.mesh, o.basis, o.r)?;
        let rest: Vec<[f32; 3]> = o
            .mesh
            .vertices
            .iter()
            .map(|p| [p.x as f32, p.y as f32, p.z as f32])
            .collect();
        let deformer = GpuDeformer::new(device, queue, o.basis, o.r, Some(&rest), Some(&normals))?;
        deformer.update(&vec![0.0; o.r])?;
        let indices: Vec<u32> = o
            .mesh
            .triangles
            .iter()
            .flat_map(|t| t.map(|i| i as u32))
            .collect();
        MeshBuffers::Deformable {
            deformer,
            indices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(&indices),
                usage: wgpu::BufferUsages::INDEX,
            }),
            index_count: indices.len() as u32,
        }
    } else {
        let flat = flat_vertices(o.mesh);
        MeshBuffers::Rigid {
            vertices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(&flat),
                usage: wgpu::BufferUsages::VERTEX,
            }),
            vertex_count: flat.len() as u32,
        }
    };
    let (uniform, bind_group) = uniforms.object(label, o.model, o.color);
    Ok(DrawObject {
        mesh: mesh_buffers,
        uniform,
        bind_group,
        color: o.color,
    })
}

/// Uploads the environment's objects (in the palette's colours) and then the haptic one.
fn upload_objects(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    uniforms: &Uniforms,
    environment: &[RenderObject],
    haptic: &RenderObject,
) -> Result<(Vec<DrawObject>, DrawObject), RenderError> {
    let environment = environment
        .iter()
        .enumerate()
        .map(|(i, e)| {
            upload_object(
                device,
                queue,
                uniforms,
                &format!("environment {}", e.name),
                ObjectSource {
                    mesh: e.mesh,
                    basis: e.basis,
                    r: e.r,
                    model: e.pose.cast::<f32>().to_homogeneous(),
                    color: ENVIRONMENT_PALETTE[i % ENVIRONMENT_PALETTE.len()],
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let haptic = upload_object(
        device,
        queue,
        uniforms,
        haptic.name,
        ObjectSource {
            mesh: haptic.mesh,
            basis: haptic.basis,
            r: haptic.r,
            model: haptic.pose.cast::<f32>().to_homogeneous(),
            color: HAPTIC_COLOR,
        },
    )?;
    Ok((environment, haptic))
}

/// `viewport` clamped to a `w` x `h` target, or the whole target if `None`.
fn clamp_viewport(viewport: Option<[f32; 4]>, w: u32, h: u32) -> [f32; 4] {
    viewport
        .map(|[x, y, vw, vh]| {
            let x = x.clamp(0.0, w as f32 - 1.0);
            let y = y.clamp(0.0, h as f32 - 1.0);
            [
                x,
                y,
                vw.clamp(1.0, w as f32 - x),
                vh.clamp(1.0, h as f32 - y),
            ]
        })
        .unwrap_or([0.0, 0.0, w as f32, h as f32])
}

/// Writes an object's uniform: model matrix `m` and `color`.
fn write_object(queue: &wgpu::Queue, buffer: &wgpu::Buffer, m: Matrix4<f32>, color: [f32; 4]) {
    let u = ObjectUniform {
        model: mat(&m),
        color,
    };
    queue.write_buffer(buffer, 0, bytemuck::bytes_of(&u));
}

/// Deforms a deformable object by `q` (kept as is when `q` is empty or it is rigid).
fn update_deformer(object: &DrawObject, q: &[f32]) -> Result<(), RenderError> {
    if let MeshBuffers::Deformable { deformer, .. } = &object.mesh {
        if q.len() == deformer.rank() {
            deformer.update(q)?;
        } else if !q.is_empty() {
            return Err(RenderError::Shape(format!(
                "frame has {} reduced coordinates for a basis of rank {}",
                q.len(),
                deformer.rank()
            )));
        }
    }
    Ok(())
}

/// Appends a cross and a force arrow per contact and the total force's arrow to `lines`.
fn contact_markers(
    contacts: &[ContactMarker],
    marker: f32,
    force_scale: f32,
    lines: &mut Vec<ColorVertex>,
) {
    for c in contacts {
        cross(c.position, marker, [1.0, 0.25, 0.2, 1.0], lines);
        arrow(
            c.position,
            c.force * force_scale,
            [1.0, 0.85, 0.2, 1.0],
            lines,
        );
    }
    // The total contact force, at the centroid of the contact points.
    if !contacts.is_empty() {
        let n = contacts.len() as f32;
        let total: Vector3<f32> = contacts.iter().map(|c| c.force).sum();
        let centroid = contacts
            .iter()
            .fold(Vector3::zeros(), |a, c| a + c.position.coords)
            / n;
        arrow(
            Point3::from(centroid),
            total * force_scale,
            [0.3, 0.9, 1.0, 1.0],
            lines,
        );
    }
}

impl SceneRenderer {
    /// Uploads the scene's render meshes and bases and builds the pipelines for colour
    /// targets of `color_format`.
    pub fn new(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        scene: &Scene,
        color_format: wgpu::TextureFormat,
    ) -> Result<SceneRenderer, RenderError> {
        let environment: Vec<RenderObject> = scene
            .environment
            .iter()
            .map(|e| RenderObject {
                name: &e.name,
                mesh: &e.surface,
                basis: &e.render_basis,
                r: e.dynamics.as_ref().map_or(0, |d| d.r()),
                pose: e.pose,
            })
            .collect();
        let haptic = RenderObject {
            name: "haptic object",
            mesh: &scene.haptic.surface,
            basis: &scene.haptic.render_basis,
            r: scene.haptic.field.r(),
            pose: scene.haptic.pose,
        };
        SceneRenderer::from_objects(device, queue, &environment, &haptic, color_format)
    }

    /// A renderer for any set of objects: the environment's (drawn in the palette's
    /// colours, at their poses) and the moving one (drawn as the haptic object, placed
    /// by [`FrameState::haptic_pose`] each frame). `haptics check --screenshot` draws
    /// an OMPL problem's world and robot this way.
    pub fn from_objects(
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        environment: &[RenderObject],
        haptic: &RenderObject,
        color_format: wgpu::TextureFormat,
    ) -> Result<SceneRenderer, RenderError> {
        let uniforms = Uniforms::new(device);
        let pipelines = Pipelines::new(device, &uniforms, color_format);
        let camera_buffer = uniforms.buffer(
            "camera uniform",
            bytemuck::bytes_of(&CameraUniform::zeroed()),
        );
        let camera_group = uniforms.group("camera group", &uniforms.camera_layout, &camera_buffer);
        let bounds = objects_bounds(environment.iter().chain(std::iter::once(haptic)));
        let (environment, haptic) = upload_objects(device, queue, &uniforms, environment, haptic)?;
        let (ghost_uniform, ghost_group) =
            uniforms.object("manipulandum ghost", Matrix4::identity(), GHOST_COLOR);
        let (_identity, identity_group) =
            uniforms.object("identity", Matrix4::identity(), [1.0; 4]);
        let Pipelines {
            mesh: mesh_pipeline,
            ghost: ghost_pipeline,
            rigid: rigid_pipeline,
            rigid_ghost: rigid_ghost_pipeline,
            line: line_pipeline,
            point: point_pipeline,
            marker: marker_pipeline,
        } = pipelines;
        Ok(SceneRenderer {
            device: device.clone(),
            queue: queue.clone(),
            mesh_pipeline,
            ghost_pipeline,
            rigid_pipeline,
            rigid_ghost_pipeline,
            line_pipeline,
            point_pipeline,
            marker_pipeline,
            camera_buffer,
            camera_group,
            environment,
            haptic,
            ghost_uniform,
            ghost_group,
            identity_group,
            lines: DynamicVertices::new(device, "overlay lines"),
            points: DynamicVertices::new(device, "overlay points"),
            markers: DynamicVertices::new(device, "contact markers"),
            depth: None,
            bounds,
            scratch: Vec::new(),
            show_ghost: false,
            viewport: [0.0, 0.0, 1.0, 1.0],
            color_format,
        })
    }

    /// The colour format the pipelines were built for.
    pub fn color_format(&self) -> wgpu::TextureFormat {
        self.color_format
    }

    /// World bounding box of the scene at rest (for framing the camera).
    pub fn bounds(&self) -> (Point3<f32>, Point3<f32>) {
        self.bounds
    }

    /// Uploads one frame's state: `q` of every deformable (one small write and one
    /// compute dispatch each), the uniforms and the overlay geometry, and sizes the depth
    /// buffer to the target (`size` pixels). The scene is drawn into `viewport` (x, y,
    /// width, height in pixels; the whole target if `None`).
    pub fn prepare(
        &mut self,
        frame: &FrameState,
        camera: &OrbitCamera,
        size: (u32, u32),
        viewport: Option<[f32; 4]>,
        overlays: &Overlays,
    ) -> Result<(), RenderError> {
        let (w, h) = (size.0.max(1), size.1.max(1));
        self.viewport = clamp_viewport(viewport, w, h);
        self.write_camera(camera);
        self.update_objects(frame, overlays)?;
        self.upload_overlays(frame, overlays);
        self.resize_depth(w, h);
        Ok(())
    }

    /// Writes the camera uniform for the current viewport's aspect ratio.
    fn write_camera(&self, camera: &OrbitCamera) {
        let viewport = self.viewport;
        let aspect = viewport[2] / viewport[3];
        let eye = camera.eye();
        let light = camera.up() * 1.2 + camera.right() * 0.5 + camera.backward();
        let cam = CameraUniform {
            view_proj: mat(&camera.view_projection(aspect)),
            eye: [eye.x, eye.y, eye.z, 1.0],
            light: [light.x, light.y, light.z, 0.0],
        };
        self.queue
            .write_buffer(&self.camera_buffer, 0, bytemuck::bytes_of(&cam));
    }

    /// Deforms the objects by the frame's `q` and writes the haptic and ghost uniforms.
    fn update_objects(
        &mut self,
        frame: &FrameState,
        overlays: &Overlays,
    ) -> Result<(), RenderError> {
        update_deformer(&self.haptic, &frame.haptic_q)?;
        write_object(
            &self.queue,
            &self.haptic.uniform,
            frame.haptic_pose.to_homogeneous(),
            self.haptic.color,
        );
        for (i, object) in self.environment.iter().enumerate() {
            if let Some(q) = frame.environment_q.get(i) {
                update_deformer(object, q)?;
            }
        }
        // Environment poses are fixed: their uniforms were written in `new`.
        self.show_ghost = overlays.ghost && frame.manipulandum_pose.is_some();
        if let Some(m) = &frame.manipulandum_pose {
            write_object(
                &self.queue,
                &self.ghost_uniform,
                m.to_homogeneous(),
                GHOST_COLOR,
            );
        }
        Ok(())
    }

    /// Uploads the overlay lines (grid and the frame's), contact markers and points.
    fn upload_overlays(&mut self, frame: &FrameState, overlays: &Overlays) {
        let mut lines = std::mem::take(&mut self.scratch);
        lines.clear();
        if overlays.grid {
            let (lo, hi) = self.bounds;
            let half = 0.5 * (hi.x - lo.x).max(hi.z - lo.z) * 1.3;
            floor_grid(
                0.5 * (lo.x + hi.x),
                0.5 * (lo.z + hi.z),
                lo.y,
                half,
                &mut lines,
            );
        }
        lines.extend_from_slice(&frame.lines);
        self.lines.upload(&self.device, &self.queue, &lines);
        lines.clear();
        if overlays.contacts {
            let marker = 0.004 * (self.bounds.1 - self.bounds.0).norm();
            contact_markers(&frame.contacts, marker, overlays.force_scale, &mut lines);
        }
        self.markers.upload(&self.device, &self.queue, &lines);
        self.scratch = lines;
        self.points.upload(&self.device, &self.queue, &frame.points);
    }

    /// Recreates the depth buffer when the target is not `w` x `h` pixels.
    fn resize_depth(&mut self, w: u32, h: u32) {
        if self.depth.as_ref().map(|d| d.1) != Some((w, h)) {
            let texture = self.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("depth"),
                size: wgpu::Extent3d {
                    width: w,
                    height: h,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: DEPTH_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                view_formats: &[],
            });
            self.depth = Some((texture.create_view(&Default::default()), (w, h)));
        }
    }

    /// Records the frame's render pass into `encoder`, clearing `target` (which must
    /// have the size given to [`SceneRenderer::prepare`]).
    pub fn draw(&self, encoder: &mut wgpu::CommandEncoder, target: &wgpu::TextureView) {
        let Some((depth, _)) = &self.depth else {
            return;
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("scene"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(BACKGROUND),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Store,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        let [x, y, w, h] = self.viewport;
        pass.set_viewport(x, y, w, h, 0.0, 1.0);
        pass.set_bind_group(0, &self.camera_group, &[]);
        for object in &self.environment {
            self.draw_mesh(&mut pass, object, false, &object.bind_group);
        }
        self.draw_mesh(&mut pass, &self.haptic, false, &self.haptic.bind_group);
        self.draw_overlay(&mut pass, &self.line_pipeline, &self.lines);
        self.draw_overlay(&mut pass, &self.point_pipeline, &self.points);
        if self.show_ghost {
            self.draw_mesh(&mut pass, &self.haptic, true, &self.ghost_group);
        }
        self.draw_overlay(&mut pass, &self.marker_pipeline, &self.markers);
    }

    /// Draws one object's mesh with its uniform `group`, as a ghost or solid.
    fn draw_mesh(
        &self,
        pass: &mut wgpu::RenderPass,
        object: &DrawObject,
        ghost: bool,
        group: &wgpu::BindGroup,
    ) {
        pass.set_bind_group(1, group, &[]);
        match &object.mesh {
            MeshBuffers::Deformable {
                deformer,
                indices,
                index_count,
            } => {
                pass.set_pipeline(if ghost {
                    &self.ghost_pipeline
                } else {
                    &self.mesh_pipeline
                });
                pass.set_vertex_buffer(0, deformer.buffer(DeformOutput::Positions).slice(..));
                pass.set_vertex_buffer(1, deformer.buffer(DeformOutput::Normals).slice(..));
                pass.set_index_buffer(indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..*index_count, 0, 0..1);
            }
            MeshBuffers::Rigid {
                vertices,
                vertex_count,
            } => {
                pass.set_pipeline(if ghost {
                    &self.rigid_ghost_pipeline
                } else {
                    &self.rigid_pipeline
                });
                pass.set_vertex_buffer(0, vertices.slice(..));
                pass.draw(0..*vertex_count, 0..1);
            }
        }
    }

    /// Draws an overlay vertex list with `pipeline`, unless it is empty.
    fn draw_overlay(
        &self,
        pass: &mut wgpu::RenderPass,
        pipeline: &wgpu::RenderPipeline,
        vertices: &DynamicVertices,
    ) {
        if vertices.count > 0 {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(1, &self.identity_group, &[]);
            pass.set_vertex_buffer(0, vertices.buffer.slice(..));
            pass.draw(0..vertices.count, 0..1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_vertices_carry_unit_face_normals() {
        let mesh = SurfaceMesh {
            vertices: vec![
                Point3::new(0.0, 0.0, 0.0),
                Point3::new(2.0, 0.0, 0.0),
                Point3::new(0.0, 0.0, -3.0),
            ],
            triangles: vec![[0, 1, 2]],
        };
        let v = flat_vertices(&mesh);
        assert_eq!(v.len(), 3);
        for x in &v {
            assert_eq!(&x[3..], &[0.0, 1.0, 0.0]);
        }
        assert_eq!(&v[1][..3], &[2.0, 0.0, 0.0]);
    }
}
