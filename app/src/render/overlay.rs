//! Line and point geometry of the overlays: the floor grid, contact force arrows, the
//! traversed BD spheres (thesis Fig. 3.11) and the pointshell debug view.
//!
//! Everything here is plain CPU geometry (world-space vertices with a colour) that the
//! renderer uploads each frame; the functions append to caller-owned vectors so a frame
//! reuses its buffers.

use nalgebra::{Isometry3, Point3, Vector3};

use haptics::contact::ContactShell;

/// One vertex of a line or point overlay: world position and linear RGBA colour.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ColorVertex {
    pub position: [f32; 3],
    pub color: [f32; 4],
}

impl ColorVertex {
    pub fn new(p: Point3<f32>, color: [f32; 4]) -> Self {
        ColorVertex {
            position: [p.x, p.y, p.z],
            color,
        }
    }
}

/// Grid spacing: the power of ten that gives about ten lines across `extent`.
pub fn grid_spacing(extent: f32) -> f32 {
    10f32.powf((extent.max(1e-6) / 10.0).log10().floor())
}

/// A square floor grid at height `y`, centred on `(cx, cz)`, covering at least
/// `half_extent` in x and z. Every tenth line is brighter. Appends line-list vertices.
pub fn floor_grid(cx: f32, cz: f32, y: f32, half_extent: f32, out: &mut Vec<ColorVertex>) {
    let step = grid_spacing(2.0 * half_extent);
    let n = (half_extent / step).ceil() as i32;
    let (x0, z0) = ((cx / step).round() * step, (cz / step).round() * step);
    let extent = n as f32 * step;
    // Every tenth line (counted from the world origin) is brighter.
    let color = |origin: f32, i: i32| {
        if ((origin / step).round() as i32 + i) % 10 == 0 {
            [0.55, 0.57, 0.6, 0.9]
        } else {
            [0.35, 0.36, 0.38, 0.6]
        }
    };
    for i in -n..=n {
        let c = color(x0, i);
        let x = x0 + i as f32 * step;
        out.push(ColorVertex::new(Point3::new(x, y, z0 - extent), c));
        out.push(ColorVertex::new(Point3::new(x, y, z0 + extent), c));
        let c = color(z0, i);
        let z = z0 + i as f32 * step;
        out.push(ColorVertex::new(Point3::new(x0 - extent, y, z), c));
        out.push(ColorVertex::new(Point3::new(x0 + extent, y, z), c));
    }
}

/// Any unit vector perpendicular to `v` (which must be non-zero).
fn perpendicular(v: &Vector3<f32>) -> Vector3<f32> {
    let a = if v.x.abs() < 0.6 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    v.cross(&a).normalize()
}

/// An arrow from `from` along `vector`: a shaft and four head strokes (20% of the
/// length). Zero-length arrows add nothing.
pub fn arrow(from: Point3<f32>, vector: Vector3<f32>, color: [f32; 4], out: &mut Vec<ColorVertex>) {
    let len = vector.norm();
    if len.is_nan() || len <= 1e-9 || !len.is_finite() {
        return;
    }
    let tip = from + vector;
    out.push(ColorVertex::new(from, color));
    out.push(ColorVertex::new(tip, color));
    let dir = vector / len;
    let a = perpendicular(&dir);
    let b = dir.cross(&a);
    let back = tip - dir * (0.2 * len);
    for side in [a, -a, b, -b] {
        out.push(ColorVertex::new(tip, color));
        out.push(ColorVertex::new(back + side * (0.08 * len), color));
    }
}

/// A small three-axis cross of half-size `size` at `p` (contact point markers).
pub fn cross(p: Point3<f32>, size: f32, color: [f32; 4], out: &mut Vec<ColorVertex>) {
    for axis in [Vector3::x(), Vector3::y(), Vector3::z()] {
        out.push(ColorVertex::new(p - axis * size, color));
        out.push(ColorVertex::new(p + axis * size, color));
    }
}

/// A wire sphere: three great circles of `segments` segments each.
pub fn wire_sphere(
    center: Point3<f32>,
    radius: f32,
    segments: usize,
    color: [f32; 4],
    out: &mut Vec<ColorVertex>,
) {
    let segments = segments.max(3);
    let axes = [
        (Vector3::x(), Vector3::y()),
        (Vector3::y(), Vector3::z()),
        (Vector3::z(), Vector3::x()),
    ];
    for (u, v) in axes {
        let at = |k: usize| {
            let t = k as f32 / segments as f32 * std::f32::consts::TAU;
            center + (u * t.cos() + v * t.sin()) * radius
        };
        for k in 0..segments {
            out.push(ColorVertex::new(at(k), color));
            out.push(ColorVertex::new(at(k + 1), color));
        }
    }
}

/// Colour of pointshell level `level` (0 = coarsest) for the debug views: a ramp from
/// red through yellow to cyan, as in thesis Fig. 3.11's level colouring.
pub fn level_color(level: usize, levels: usize) -> [f32; 4] {
    let t = if levels <= 1 {
        0.0
    } else {
        level as f32 / (levels - 1) as f32
    };
    [
        1.0 - 0.8 * t,
        0.35 + 0.6 * (1.0 - (2.0 * t - 1.0).abs()),
        0.15 + 0.85 * t,
        1.0,
    ]
}

/// The deformed world positions of the pointshell points of levels `0..levels`, as
/// point-list vertices coloured by level.
pub fn pointshell_points(
    shell: &ContactShell,
    pose: &Isometry3<f64>,
    q: &[f64],
    levels: usize,
    out: &mut Vec<ColorVertex>,
) {
    let total = shell.level_offsets.len().saturating_sub(1);
    let end = shell.level_offsets[levels.min(total)];
    for s in 0..end {
        let p = pose * shell.position(s, q);
        out.push(ColorVertex::new(
            p.cast(),
            level_color(shell.point_level[s] as usize, total),
        ));
    }
}

/// Wire spheres of the BD-tree nodes a traversal visited and descended (see
/// [`haptics::contact::Traversal::set_recording`]): the nodes whose bounding sphere
/// reached the other object's surface, in their depth's colour, as in thesis Fig. 3.11.
/// Visited nodes whose sphere was clear of the surface are not drawn (they are most of
/// the visits and would hide the picture).
pub fn bd_spheres(
    shell: &ContactShell,
    pose: &Isometry3<f64>,
    q: &[f64],
    visited: &[(u32, bool)],
    out: &mut Vec<ColorVertex>,
) {
    let total = shell.tree.depths();
    let q_abs: Vec<f64> = q.iter().map(|x| x.abs()).collect();
    for &(node, overlapped) in visited {
        if !overlapped {
            continue;
        }
        let node = node as usize;
        let depth = shell.tree.depth_offsets.partition_point(|&o| o <= node) - 1;
        let s = shell.tree.node_point[node] as usize;
        let center = pose * shell.position(s, q);
        let radius = shell.tree.radius(node, &q_abs) as f32;
        wire_sphere(center.cast(), radius, 16, level_color(depth, total), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_spacing_is_a_power_of_ten_giving_ten_to_a_hundred_lines() {
        for extent in [0.05f32, 1.0, 3.7, 20.0, 250.0] {
            let s = grid_spacing(extent);
            let lines = extent / s;
            assert!((10.0..=100.0 + 1e-3).contains(&lines), "{extent}: {s}");
            assert!((s.log10() - s.log10().round()).abs() < 1e-5);
        }
    }

    #[test]
    fn grid_covers_the_extent_at_the_floor_height() {
        let mut v = Vec::new();
        floor_grid(1.0, -2.0, -0.5, 12.0, &mut v);
        assert!(v.len().is_multiple_of(2) && v.len() >= 4 * 21);
        assert!(v.iter().all(|p| p.position[1] == -0.5));
        let max_x = v.iter().map(|p| p.position[0]).fold(f32::MIN, f32::max);
        let min_z = v.iter().map(|p| p.position[2]).fold(f32::MAX, f32::min);
        assert!(max_x >= 1.0 + 12.0 - 1e-3 && min_z <= -2.0 - 12.0 + 1e-3);
    }

    #[test]
    fn arrow_shaft_ends_at_the_tip_and_head_points_back() {
        let mut v = Vec::new();
        let from = Point3::new(1.0, 2.0, 3.0);
        let vec = Vector3::new(0.0, -2.0, 0.0);
        arrow(from, vec, [1.0; 4], &mut v);
        assert_eq!(v.len(), 10);
        assert_eq!(v[1].position, [1.0, 0.0, 3.0]);
        for stroke in v[2..].chunks(2) {
            assert_eq!(stroke[0].position, [1.0, 0.0, 3.0]);
            // Head strokes go back up the shaft (toward `from`).
            assert!(stroke[1].position[1] > 0.0);
        }
        let before = v.len();
        arrow(from, Vector3::zeros(), [1.0; 4], &mut v);
        arrow(from, Vector3::new(f32::NAN, 0.0, 0.0), [1.0; 4], &mut v);
        assert_eq!(v.len(), before);
    }

    #[test]
    fn wire_sphere_vertices_lie_on_the_sphere() {
        let mut v = Vec::new();
        let c = Point3::new(0.5, -1.0, 2.0);
        wire_sphere(c, 0.25, 12, [1.0; 4], &mut v);
        assert_eq!(v.len(), 3 * 12 * 2);
        for p in &v {
            let d = (Point3::from(p.position) - c).norm();
            assert!((d - 0.25).abs() < 1e-6);
        }
    }

    #[test]
    fn level_colors_are_distinct_and_in_range() {
        let c: Vec<_> = (0..5).map(|l| level_color(l, 5)).collect();
        for (i, a) in c.iter().enumerate() {
            assert!(a.iter().all(|x| (0.0..=1.0).contains(x)));
            for b in &c[i + 1..] {
                assert!(a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f32>() > 0.1);
            }
        }
    }
}
