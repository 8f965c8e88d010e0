//! The window's GPU side: the wgpu surface and the device that presents to it, the scene
//! renderer with its camera, and egui; and the steps of a frame through them: the
//! panels' egui pass, the surface's next texture (reconfiguring or recreating a surface
//! that is outdated or lost), and drawing the scene and the panels before presenting.

use std::sync::Arc;

use winit::event_loop::ActiveEventLoop;
use winit::window::Window;

use super::headless::default_camera;
use super::panels::{self, Action, UiState};
use super::AppError;
use crate::render::{FrameState, OrbitCamera, RenderError, SceneRenderer};
use haptics::scene::Scene;

/// The GPU side of the window.
pub(super) struct Gfx {
    pub(super) window: Arc<Window>,
    instance: wgpu::Instance,
    surface: wgpu::Surface<'static>,
    adapter: wgpu::Adapter,
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) config: wgpu::SurfaceConfiguration,
    pub(super) renderer: SceneRenderer,
    pub(super) camera: OrbitCamera,
    pub(super) egui: egui::Context,
    pub(super) egui_state: egui_winit::State,
    pub(super) egui_renderer: egui_wgpu::Renderer,
    pub(super) adapter_name: String,
}

/// Surface formats the renderer accepts, best first (sRGB so that shading is linear).
const FORMATS: [wgpu::TextureFormat; 4] = [
    wgpu::TextureFormat::Bgra8UnormSrgb,
    wgpu::TextureFormat::Rgba8UnormSrgb,
    wgpu::TextureFormat::Bgra8Unorm,
    wgpu::TextureFormat::Rgba8Unorm,
];

/// Picks the surface format: the first the surface offers of `Bgra8UnormSrgb`,
/// `Rgba8UnormSrgb`, `Bgra8Unorm`, `Rgba8Unorm`.
fn choose_format(offered: &[wgpu::TextureFormat]) -> Result<wgpu::TextureFormat, RenderError> {
    FORMATS
        .iter()
        .find(|f| offered.contains(f))
        .copied()
        .ok_or_else(|| {
            RenderError::UnsupportedFormat(format!(
                "the window surface offers {offered:?}; the renderer needs one of {FORMATS:?}"
            ))
        })
}

/// An adapter that can present to `surface`, and a device on it with the limits of
/// [`crate::render::required_limits`].
fn open_device(
    instance: &wgpu::Instance,
    surface: &wgpu::Surface,
) -> Result<(wgpu::Adapter, wgpu::Device, wgpu::Queue), RenderError> {
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        compatible_surface: Some(surface),
        ..Default::default()
    }))
    .map_err(|e| RenderError::NoAdapter(format!("none can present to this window: {e}")))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("haptics window device"),
        required_limits: crate::render::required_limits(&adapter),
        ..Default::default()
    }))?;
    Ok((adapter, device, queue))
}

/// The configuration of a surface with capabilities `caps` in a window of `size`: the
/// format [`choose_format`] picks, vsync, at most two frames in flight.
fn surface_config(
    caps: &wgpu::SurfaceCapabilities,
    size: winit::dpi::PhysicalSize<u32>,
) -> Result<wgpu::SurfaceConfiguration, RenderError> {
    Ok(wgpu::SurfaceConfiguration {
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
        format: choose_format(&caps.formats)?,
        color_space: wgpu::SurfaceColorSpace::Auto,
        width: size.width.max(1),
        height: size.height.max(1),
        present_mode: wgpu::PresentMode::AutoVsync,
        desired_maximum_frame_latency: 2,
        alpha_mode: caps
            .alpha_modes
            .first()
            .copied()
            .unwrap_or(wgpu::CompositeAlphaMode::Auto),
        view_formats: vec![],
    })
}

impl Gfx {
    /// Opens the window for `scene` and everything that draws into it: its surface, a
    /// device that presents to it, the scene renderer, the camera framing the scene, and
    /// egui.
    pub(super) fn new(
        event_loop: &ActiveEventLoop,
        display: &winit::event_loop::OwnedDisplayHandle,
        scene: &Scene,
    ) -> Result<Gfx, AppError> {
        let attributes = Window::default_attributes()
            .with_title(format!("haptics — {}", scene.name))
            .with_inner_size(winit::dpi::LogicalSize::new(1440.0, 900.0));
        let window = Arc::new(
            event_loop
                .create_window(attributes)
                .map_err(|e| AppError::NoDisplay(e.to_string()))?,
        );
        let instance = wgpu::Instance::new(
            wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(display.clone())),
        );
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| RenderError::NoAdapter(format!("cannot create a window surface: {e}")))?;
        let (adapter, device, queue) = open_device(&instance, &surface)?;
        let config = surface_config(&surface.get_capabilities(&adapter), window.inner_size())?;
        surface.configure(&device, &config);
        let format = config.format;
        let renderer = SceneRenderer::new(&device, &queue, scene, format)?;
        let camera = default_camera(&renderer);
        let egui = egui::Context::default();
        let egui_state = egui_winit::State::new(
            egui.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(device.limits().max_texture_dimension_2d as usize),
        );
        let egui_renderer = egui_wgpu::Renderer::new(&device, format, Default::default());
        let info = adapter.get_info();
        Ok(Gfx {
            adapter_name: format!("{} ({:?})", info.name, info.backend),
            window,
            instance,
            surface,
            adapter,
            device,
            queue,
            config,
            renderer,
            camera,
            egui,
            egui_state,
            egui_renderer,
        })
    }

    /// Reconfigures the surface for a window of `width` x `height` pixels (a zero size,
    /// as a minimized window has, keeps the old configuration).
    pub(super) fn resize(&mut self, width: u32, height: u32) {
        if width > 0 && height > 0 {
            self.config.width = width;
            self.config.height = height;
            self.surface.configure(&self.device, &self.config);
        }
    }

    /// Recreates a lost surface.
    fn recreate_surface(&mut self) -> Result<(), RenderError> {
        self.surface = self
            .instance
            .create_surface(self.window.clone())
            .map_err(|e| {
                RenderError::NoAdapter(format!("cannot recreate the window surface: {e}"))
            })?;
        let caps = self.surface.get_capabilities(&self.adapter);
        self.config.format = choose_format(&caps.formats)?;
        self.surface.configure(&self.device, &self.config);
        Ok(())
    }
}

/// The egui pass of one frame, tessellated, with its texture uploads applied.
pub(super) struct PanelFrame {
    /// What the user asked for.
    pub(super) actions: Vec<Action>,
    /// The rectangle left for the 3D view (points).
    view_rect: egui::Rect,
    /// Pixels per point.
    ppp: f32,
    /// The tessellated panels.
    jobs: Vec<egui::ClippedPrimitive>,
    /// Textures egui no longer uses, to free after the frame.
    pub(super) freed: Vec<egui::TextureId>,
}

/// Runs the panels and applies egui's font and image uploads (they must be applied even
/// when the frame is then skipped).
pub(super) fn run_panels(g: &mut Gfx, ui: &mut UiState) -> PanelFrame {
    let raw = g.egui_state.take_egui_input(&g.window);
    let mut actions = Vec::new();
    let mut view_rect = egui::Rect::NOTHING;
    let output = g.egui.run_ui(raw, |root| {
        let (a, rect) = panels::draw(root, ui);
        actions = a;
        view_rect = rect;
    });
    g.egui_state
        .handle_platform_output(&g.window, output.platform_output);
    let ppp = output.pixels_per_point;
    let jobs = g.egui.tessellate(output.shapes, ppp);
    let mut textures = output.textures_delta;
    for (id, deltas) in textures.set.drain() {
        for delta in &deltas {
            g.egui_renderer
                .update_texture(&g.device, &g.queue, id, delta);
        }
    }
    PanelFrame {
        actions,
        view_rect,
        ppp,
        jobs,
        freed: textures.free.drain().collect(),
    }
}

/// The window surface's next texture, or `None` when this frame must be skipped (the
/// surface timed out, is occluded, outdated or lost: it is reconfigured or recreated
/// for the next frame).
pub(super) fn acquire_surface(g: &mut Gfx) -> Result<Option<wgpu::SurfaceTexture>, AppError> {
    Ok(match g.surface.get_current_texture() {
        wgpu::CurrentSurfaceTexture::Success(t) => Some(t),
        wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
            // Draw this one; reconfigure for the next.
            g.surface.configure(&g.device, &g.config);
            Some(t)
        }
        wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => None,
        wgpu::CurrentSurfaceTexture::Outdated => {
            let size = g.window.inner_size();
            g.resize(size.width, size.height);
            None
        }
        wgpu::CurrentSurfaceTexture::Lost => {
            g.recreate_surface()?;
            None
        }
        wgpu::CurrentSurfaceTexture::Validation => {
            return Err(AppError::Render(RenderError::Map(
                "the window surface reported a validation error".into(),
            )))
        }
    })
}

/// Draws the scene into the part of the window the panels leave, then the panels over
/// it, and presents.
pub(super) fn draw_and_present(
    g: &mut Gfx,
    frame: &FrameState,
    ui: &UiState,
    panels: &PanelFrame,
    texture: wgpu::SurfaceTexture,
) -> Result<(), AppError> {
    let view = texture.texture.create_view(&Default::default());
    let size = (g.config.width, g.config.height);
    let ppp = panels.ppp;
    let r = panels.view_rect;
    let viewport = r.is_positive().then(|| {
        [
            r.min.x * ppp,
            r.min.y * ppp,
            r.width() * ppp,
            r.height() * ppp,
        ]
    });
    g.renderer
        .prepare(frame, &g.camera, size, viewport, &ui.overlays)?;
    let screen = egui_wgpu::ScreenDescriptor {
        size_in_pixels: [size.0, size.1],
        pixels_per_point: ppp,
    };
    let mut encoder = g
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("frame"),
        });
    g.renderer.draw(&mut encoder, &view);
    let extra =
        g.egui_renderer
            .update_buffers(&g.device, &g.queue, &mut encoder, &panels.jobs, &screen);
    {
        let pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("egui"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        g.egui_renderer
            .render(&mut pass.forget_lifetime(), &panels.jobs, &screen);
    }
    g.queue
        .submit(extra.into_iter().chain(std::iter::once(encoder.finish())));
    g.window.pre_present_notify();
    g.queue.present(texture);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_format_prefers_srgb_and_rejects_unsupported_ones() {
        use wgpu::TextureFormat as F;
        assert_eq!(
            choose_format(&[F::Rgba8Unorm, F::Bgra8UnormSrgb]).unwrap(),
            F::Bgra8UnormSrgb
        );
        assert_eq!(choose_format(&[F::Rgba8Unorm]).unwrap(), F::Rgba8Unorm);
        let e = choose_format(&[F::Rgba16Float, F::Rgb10a2Unorm]).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("unsupported texture format") && msg.contains("Rgba16Float"),
            "{msg}"
        );
    }
}
