//! Offscreen frames: render a [`FrameState`] into a texture, read it back and write a
//! PNG (`haptics screenshot`, the headless demo, the tests).

use std::path::Path;

use super::camera::OrbitCamera;
use super::renderer::{FrameState, Overlays, SceneRenderer};
use super::{GpuContext, RenderError};

/// The colour format of offscreen frames: 8-bit sRGB, which every WebGPU adapter can
/// render to and which PNG stores directly.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

/// An RGBA8 (sRGB) image read back from the GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    /// Row-major, 4 bytes per pixel, no padding.
    pub rgba: Vec<u8>,
}

impl Image {
    /// The pixel at `(x, y)` (y down).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }

    /// For every pixel, whether it differs from `background` by more than `tolerance`
    /// in any channel (the silhouette of everything drawn).
    pub fn mask(&self, background: [u8; 4], tolerance: u8) -> Vec<bool> {
        self.rgba
            .chunks_exact(4)
            .map(|p| {
                p.iter()
                    .zip(background)
                    .any(|(&a, b)| a.abs_diff(b) > tolerance)
            })
            .collect()
    }

    /// Writes the image as an 8-bit RGBA PNG (sRGB), atomically: a temporary file in
    /// the same folder, then a rename.
    pub fn write_png(&self, path: &Path) -> Result<(), RenderError> {
        let io = |e: std::io::Error| RenderError::Io {
            path: path.to_path_buf(),
            source: e,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let png_err = |e: png::EncodingError| std::io::Error::other(e.to_string());
        haptics::io::write_atomic(path, |file| {
            let mut encoder = png::Encoder::new(file, self.width, self.height);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
            let mut writer = encoder.write_header().map_err(png_err)?;
            writer.write_image_data(&self.rgba).map_err(png_err)?;
            writer.finish().map_err(png_err)
        })
        .map_err(io)
    }
}

/// Renders one frame offscreen at `width x height` and reads it back. The renderer must
/// have been built for [`OFFSCREEN_FORMAT`].
pub fn render_image(
    ctx: &GpuContext,
    renderer: &mut SceneRenderer,
    frame: &FrameState,
    camera: &OrbitCamera,
    overlays: &Overlays,
    (width, height): (u32, u32),
) -> Result<Image, RenderError> {
    check_target(ctx, renderer, width, height)?;
    renderer.prepare(frame, camera, (width, height), None, overlays)?;
    let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("offscreen colour"),
        size: extent(width, height),
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: OFFSCREEN_FORMAT,
        usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let view = texture.create_view(&Default::default());
    let rows = RowLayout::new(width, height);
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("offscreen read-back"),
        size: u64::from(rows.padded) * u64::from(height),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("offscreen frame"),
        });
    renderer.draw(&mut encoder, &view);
    encoder.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture: &texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &staging,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(rows.padded),
                rows_per_image: Some(height),
            },
        },
        extent(width, height),
    );
    ctx.queue.submit([encoder.finish()]);
    super::map_read_blocking(&ctx.device, &staging)?;
    let rgba = rows.read(&staging)?;
    Ok(Image {
        width,
        height,
        rgba,
    })
}

/// Fails unless the renderer draws [`OFFSCREEN_FORMAT`] and the device renders a
/// `width x height` texture.
fn check_target(
    ctx: &GpuContext,
    renderer: &SceneRenderer,
    width: u32,
    height: u32,
) -> Result<(), RenderError> {
    if renderer.color_format() != OFFSCREEN_FORMAT {
        return Err(RenderError::UnsupportedFormat(format!(
            "offscreen frames are {OFFSCREEN_FORMAT:?}, the renderer was built for {:?}",
            renderer.color_format()
        )));
    }
    let max = ctx.device.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(RenderError::Limits(format!(
            "a {width}x{height} frame; the device renders 1 to {max} pixels a side"
        )));
    }
    Ok(())
}

/// A single-layer extent of `width x height`.
fn extent(width: u32, height: u32) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width,
        height,
        depth_or_array_layers: 1,
    }
}

/// The rows of a frame in a read-back buffer, padded to 256 bytes as texture-to-buffer
/// copies require.
struct RowLayout {
    row: u32,
    padded: u32,
    height: u32,
}

impl RowLayout {
    /// The layout of a `width x height` RGBA8 frame.
    fn new(width: u32, height: u32) -> Self {
        let row = 4 * width;
        let padded =
            row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        Self {
            row,
            padded,
            height,
        }
    }

    /// Copies the rows out of the mapped `staging` buffer without padding, then unmaps it.
    fn read(&self, staging: &wgpu::Buffer) -> Result<Vec<u8>, RenderError> {
        let mut rgba = Vec::with_capacity((self.row * self.height) as usize);
        {
            let mapped = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| RenderError::Map(format!("{e}")))?;
            for y in 0..self.height as usize {
                let start = y * self.padded as usize;
                rgba.extend_from_slice(&mapped[start..start + self.row as usize]);
            }
        }
        staging.unmap();
        Ok(rgba)
    }
}

/// The background colour as it appears in an offscreen frame (sRGB bytes).
pub fn background_srgb() -> [u8; 4] {
    let c = super::renderer::BACKGROUND;
    let encode = |x: f64| {
        let s = if x <= 0.003_130_8 {
            12.92 * x
        } else {
            1.055 * x.powf(1.0 / 2.4) - 0.055
        };
        (s * 255.0).round().clamp(0.0, 255.0) as u8
    };
    [encode(c.r), encode(c.g), encode(c.b), 255]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_marks_pixels_off_the_background() {
        let img = Image {
            width: 2,
            height: 1,
            rgba: vec![10, 10, 10, 255, 10, 40, 10, 255],
        };
        assert_eq!(img.mask([10, 10, 10, 255], 3), vec![false, true]);
        assert_eq!(img.pixel(1, 0), [10, 40, 10, 255]);
    }

    #[test]
    fn png_round_trip_keeps_size_and_pixels() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/frame.png");
        let img = Image {
            width: 3,
            height: 2,
            rgba: (0..24).map(|i| (i * 10) as u8).collect(),
        };
        img.write_png(&path).unwrap();
        let decoder =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (3, 2));
        assert_eq!(&buf[..info.buffer_size()], &img.rgba[..]);
        assert!(!path.with_extension("png.tmp").exists());
    }
}
