//! The scene's GPU buffers and what writes them: the camera and object uniforms with
//! their bind groups, each object's mesh buffers (a [`GpuDeformer`] for a deformable
//! surface, flat-shaded vertices for a rigid one), the overlay vertex lists rewritten
//! every frame, and the per-frame writes of reduced coordinates and model matrices.

use nalgebra::{Isometry3, Matrix4, Vector3};
use wgpu::util::DeviceExt;

use super::deform::{normal_basis, GpuDeformer};
use super::overlay::ColorVertex;
use super::RenderError;
use haptics::mesh::SurfaceMesh;

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

/// Uniforms of the whole frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(super) struct CameraUniform {
    pub(super) view_proj: [[f32; 4]; 4],
    pub(super) eye: [f32; 4],
    pub(super) light: [f32; 4],
}

/// Uniforms of one draw.
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ObjectUniform {
    model: [[f32; 4]; 4],
    color: [f32; 4],
}

/// `m` as the four columns of a WGSL `mat4x4<f32>`.
pub(super) fn mat(m: &Matrix4<f32>) -> [[f32; 4]; 4] {
    (*m).into()
}

/// The two uniform bind-group layouts (camera, object) and the helpers that make
/// uniform buffers and their bind groups.
pub(super) struct Uniforms<'a> {
    device: &'a wgpu::Device,
    pub(super) camera_layout: wgpu::BindGroupLayout,
    pub(super) object_layout: wgpu::BindGroupLayout,
}

impl<'a> Uniforms<'a> {
    pub(super) fn new(device: &'a wgpu::Device) -> Self {
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
    pub(super) fn buffer(&self, label: &str, contents: &[u8]) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// A bind group of one uniform buffer.
    pub(super) fn group(
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
    pub(super) fn object(
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

/// Writes an object's uniform: model matrix `m` and `color`.
pub(super) fn write_object(
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    m: Matrix4<f32>,
    color: [f32; 4],
) {
    let u = ObjectUniform {
        model: mat(&m),
        color,
    };
    queue.write_buffer(buffer, 0, bytemuck::bytes_of(&u));
}

/// Vertex data of one render mesh on the GPU.
#[derive(Debug)]
pub(super) enum MeshBuffers {
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
pub(super) struct DrawObject {
    pub(super) mesh: MeshBuffers,
    pub(super) uniform: wgpu::Buffer,
    pub(super) bind_group: wgpu::BindGroup,
    pub(super) color: [f32; 4],
}

/// Colours of the environment objects, in scene order.
const ENVIRONMENT_PALETTE: [[f32; 4]; 3] = [
    [0.62, 0.64, 0.68, 1.0],
    [0.35, 0.55, 0.75, 1.0],
    [0.55, 0.7, 0.45, 1.0],
];

/// Colour of the haptic object.
const HAPTIC_COLOR: [f32; 4] = [0.9, 0.55, 0.2, 1.0];

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
pub(super) fn upload_objects(
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

/// Flat-shaded triangles of a rigid mesh: three vertices per triangle, each
/// `[position, face normal]`.
fn flat_vertices(mesh: &SurfaceMesh) -> Vec<[f32; 6]> {
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

/// Deforms a deformable object by `q` (kept as is when `q` is empty or it is rigid).
pub(super) fn update_deformer(object: &DrawObject, q: &[f32]) -> Result<(), RenderError> {
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

/// A line or point list rewritten every frame.
#[derive(Debug)]
pub(super) struct DynamicVertices {
    pub(super) buffer: wgpu::Buffer,
    capacity: usize,
    pub(super) count: u32,
    label: &'static str,
}

impl DynamicVertices {
    /// An empty list with room for 4096 vertices.
    pub(super) fn new(device: &wgpu::Device, label: &'static str) -> Self {
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

    /// Writes `data`, first growing the buffer to the next power of two that holds it.
    pub(super) fn upload(
        &mut self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        data: &[ColorVertex],
    ) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Point3;

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
