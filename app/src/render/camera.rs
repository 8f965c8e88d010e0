//! The orbit camera: a target point, a distance and two angles, and the matrices the
//! shaders need.
//!
//! The view is the usual right-handed look-at; the projection is a perspective map with
//! wgpu's depth range `[0, 1]` (not OpenGL's `[-1, 1]`), so nalgebra's `Perspective3`
//! is not used directly:
//!
//! ```text
//! P = [ f/a  0   0            0          ]      f = 1 / tan(fovy / 2)
//!     [ 0    f   0            0          ]      a = width / height
//!     [ 0    0   far/(near-far)  near*far/(near-far) ]
//!     [ 0    0  -1            0          ]
//! ```
//!
//! which sends view depth `-near` to 0 and `-far` to 1.

use nalgebra::{Matrix4, Point3, Vector3};

/// An orbit camera around `target`, y up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrbitCamera {
    /// The point looked at and orbited around.
    pub target: Point3<f32>,
    /// Distance from the eye to the target.
    pub distance: f32,
    /// Rotation about the world y axis (radians; 0 looks along -z).
    pub yaw: f32,
    /// Elevation above the horizontal plane (radians, clamped to +-89 degrees).
    pub pitch: f32,
    /// Vertical field of view (radians).
    pub fov_y: f32,
}

const MAX_PITCH: f32 = 89.0 * std::f32::consts::PI / 180.0;

impl OrbitCamera {
    /// A camera that frames the axis-aligned box `[lo, hi]` from the front, slightly
    /// above and to the side.
    pub fn framing(lo: Point3<f32>, hi: Point3<f32>) -> OrbitCamera {
        let center = nalgebra::center(&lo, &hi);
        let radius = ((hi - lo).norm() * 0.5).max(1e-3);
        let fov_y = 40f32.to_radians();
        OrbitCamera {
            target: center,
            distance: radius / (fov_y * 0.5).sin(),
            yaw: 25f32.to_radians(),
            pitch: 25f32.to_radians(),
            fov_y,
        }
    }

    /// Eye position.
    pub fn eye(&self) -> Point3<f32> {
        self.target + self.backward() * self.distance
    }

    /// Unit vector from the target to the eye.
    pub fn backward(&self) -> Vector3<f32> {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        Vector3::new(sy * cp, sp, cy * cp)
    }

    /// Unit vector pointing right on the screen.
    pub fn right(&self) -> Vector3<f32> {
        let (sy, cy) = self.yaw.sin_cos();
        Vector3::new(cy, 0.0, -sy)
    }

    /// Unit vector pointing up on the screen.
    pub fn up(&self) -> Vector3<f32> {
        self.backward().cross(&self.right())
    }

    /// Rotates the eye about the target by angles (radians).
    pub fn orbit(&mut self, d_yaw: f32, d_pitch: f32) {
        self.yaw = (self.yaw + d_yaw).rem_euclid(std::f32::consts::TAU);
        self.pitch = (self.pitch + d_pitch).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Moves the target in the view plane by `(dx, dy)` in units of the distance.
    pub fn pan(&mut self, dx: f32, dy: f32) {
        self.target += (self.right() * dx + self.up() * dy) * self.distance;
    }

    /// Multiplies the distance by `factor` (clamped to a sane range).
    pub fn zoom(&mut self, factor: f32) {
        self.distance = (self.distance * factor).clamp(1e-3, 1e5);
    }

    /// Near and far planes, from the distance (so that depth precision follows zoom).
    pub fn clip_planes(&self) -> (f32, f32) {
        (self.distance * 0.01, self.distance * 20.0)
    }

    /// World to view.
    pub fn view(&self) -> Matrix4<f32> {
        Matrix4::look_at_rh(&self.eye(), &self.target, &Vector3::y())
    }

    /// View to clip, depth in `[0, 1]`.
    pub fn projection(&self, aspect: f32) -> Matrix4<f32> {
        let (near, far) = self.clip_planes();
        perspective_zo(self.fov_y, aspect, near, far)
    }

    /// World to clip.
    pub fn view_projection(&self, aspect: f32) -> Matrix4<f32> {
        self.projection(aspect) * self.view()
    }

    /// World length of one pixel at the target depth, for a viewport `height` pixels
    /// high (mouse drags in the view plane use it).
    pub fn pixel_size(&self, height: f32) -> f32 {
        2.0 * self.distance * (self.fov_y * 0.5).tan() / height.max(1.0)
    }
}

/// Right-handed perspective projection with depth in `[0, 1]` (see the module doc).
pub fn perspective_zo(fov_y: f32, aspect: f32, near: f32, far: f32) -> Matrix4<f32> {
    let f = 1.0 / (fov_y * 0.5).tan();
    let mut m = Matrix4::zeros();
    m[(0, 0)] = f / aspect;
    m[(1, 1)] = f;
    m[(2, 2)] = far / (near - far);
    m[(2, 3)] = near * far / (near - far);
    m[(3, 2)] = -1.0;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(m: &Matrix4<f32>, p: Point3<f32>) -> Vector3<f32> {
        let h = m * p.to_homogeneous();
        Vector3::new(h.x / h.w, h.y / h.w, h.z / h.w)
    }

    #[test]
    fn depth_range_is_zero_to_one() {
        let p = perspective_zo(1.0, 1.5, 0.1, 100.0);
        assert!((project(&p, Point3::new(0.0, 0.0, -0.1)).z).abs() < 1e-6);
        assert!((project(&p, Point3::new(0.0, 0.0, -100.0)).z - 1.0).abs() < 1e-5);
        let mid = project(&p, Point3::new(0.0, 0.0, -1.0)).z;
        assert!(mid > 0.0 && mid < 1.0);
    }

    #[test]
    fn target_projects_to_the_center_and_axes_are_orthonormal() {
        let mut c = OrbitCamera::framing(Point3::new(-1.0, 0.0, -2.0), Point3::new(3.0, 1.0, 2.0));
        c.orbit(0.7, -0.3);
        let ndc = project(&c.view_projection(16.0 / 9.0), c.target);
        assert!(ndc.x.abs() < 1e-5 && ndc.y.abs() < 1e-5, "{ndc:?}");
        assert!(ndc.z > 0.0 && ndc.z < 1.0);
        let (r, u, b) = (c.right(), c.up(), c.backward());
        for v in [r, u, b] {
            assert!((v.norm() - 1.0).abs() < 1e-6);
        }
        assert!(r.dot(&u).abs() < 1e-6 && r.dot(&b).abs() < 1e-6 && u.dot(&b).abs() < 1e-6);
        // Screen right projects to +x in NDC, screen up to +y.
        let right = project(&c.view_projection(1.0), c.target + r * 0.1);
        let up = project(&c.view_projection(1.0), c.target + u * 0.1);
        assert!(right.x > 0.0 && right.y.abs() < 1e-5);
        assert!(up.y > 0.0 && up.x.abs() < 1e-5);
    }

    #[test]
    fn framing_keeps_the_box_on_screen() {
        let (lo, hi) = (Point3::new(-10.0, 0.0, -1.25), Point3::new(10.0, 3.0, 1.25));
        let c = OrbitCamera::framing(lo, hi);
        let m = c.view_projection(16.0 / 9.0);
        for i in 0..8 {
            let p = Point3::new(
                if i & 1 == 0 { lo.x } else { hi.x },
                if i & 2 == 0 { lo.y } else { hi.y },
                if i & 4 == 0 { lo.z } else { hi.z },
            );
            let ndc = project(&m, p);
            assert!(ndc.x.abs() <= 1.0 && ndc.y.abs() <= 1.0, "{p:?} -> {ndc:?}");
            assert!(ndc.z > 0.0 && ndc.z < 1.0);
        }
    }

    #[test]
    fn pan_moves_the_target_in_the_view_plane_and_pitch_is_clamped() {
        let mut c = OrbitCamera::framing(Point3::origin(), Point3::new(1.0, 1.0, 1.0));
        let before = c.target;
        c.pan(0.1, -0.2);
        let d = c.target - before;
        assert!(d.dot(&c.backward()).abs() < 1e-6);
        assert!((d.norm() - c.distance * (0.05f32).sqrt()).abs() < 1e-5);
        c.orbit(0.0, 10.0);
        assert!(c.pitch <= MAX_PITCH);
    }
}
