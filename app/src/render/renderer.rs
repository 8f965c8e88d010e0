//! The scene renderer: draws one frame of a [`Scene`] into any colour target (a window's
//! surface texture or an offscreen texture).
//!
//! What a frame shows:
//! - every object's surface, lit (a key light from above the camera, a fill light and
//!   ambient, Blinn-Phong specular; two-sided, since render meshes may be polygon soups
//!   with mixed winding);
//! - deformable objects at `x = X + U q`, with dynamic normals `normalize(N + dN q)`,
//!   both evaluated by [`GpuDeformer`](super::GpuDeformer) on the GPU (thesis 2.7): per frame only `q` is
//!   uploaded, and the deformer's output buffers are bound directly as vertex buffers;
//! - rigid objects through their model matrices (flat shaded: they are usually boxes and
//!   CAD parts whose sharp edges vertex normals would round off);
//! - the virtual coupling (thesis 4.4): the simulated haptic object solid, the
//!   manipulandum (where the device holds it) as a transparent ghost;
//! - overlays (see [`super::overlay`]): a floor grid, contact points and force arrows,
//!   the pointshell and the traversed BD spheres.
//!
//! The renderer's pipelines are built by the `pipelines` module and its GPU buffers
//! (uniforms, mesh buffers, overlay vertex lists) made and written by `uploads`; this
//! module holds what a frame is made of and its steps: [`SceneRenderer::prepare`]
//! uploads the frame's state, [`SceneRenderer::draw`] records its render pass.

use bytemuck::Zeroable;
use nalgebra::{Isometry3, Matrix4, Point3, Vector3};

use super::camera::OrbitCamera;
use super::deform::DeformOutput;
use super::overlay::{arrow, cross, floor_grid, ColorVertex};
use super::pipelines::{Pipelines, DEPTH_FORMAT};
use super::uploads::{
    mat, update_deformer, upload_objects, write_object, CameraUniform, DrawObject, DynamicVertices,
    MeshBuffers, RenderObject, Uniforms,
};
use super::RenderError;
use haptics::scene::Scene;

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

/// Draws frames of one scene. Built once per scene and colour format.
#[derive(Debug)]
pub struct SceneRenderer {
    device: wgpu::Device,
    queue: wgpu::Queue,
    pipelines: Pipelines,
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
        Ok(SceneRenderer {
            device: device.clone(),
            queue: queue.clone(),
            pipelines,
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
        self.draw_overlay(&mut pass, &self.pipelines.line, &self.lines);
        self.draw_overlay(&mut pass, &self.pipelines.point, &self.points);
        if self.show_ghost {
            self.draw_mesh(&mut pass, &self.haptic, true, &self.ghost_group);
        }
        self.draw_overlay(&mut pass, &self.pipelines.marker, &self.markers);
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
                    &self.pipelines.ghost
                } else {
                    &self.pipelines.mesh
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
                    &self.pipelines.rigid_ghost
                } else {
                    &self.pipelines.rigid
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
