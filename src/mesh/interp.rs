//! Interpolation of render-mesh vertices from volumetric-mesh vertices: Vega's `.interp`.
//!
//! Each render vertex `i` is a weighted sum of `nodes_per_vertex` simulation vertices:
//! `u_render(i) = sum_k weights[i*n + k] * u[indices[i*n + k]]`. The weights are the
//! trilinear (hex) or barycentric (tet) shape functions of the element that contains the
//! vertex, so they sum to one.

use nalgebra::{Point3, Vector3};

/// Render vertex -> simulation vertex weights (the content of a Vega `.interp` file).
#[derive(Debug, Clone, PartialEq)]
pub struct Interpolation {
    /// 8 for hexes, 4 for tets.
    pub nodes_per_vertex: usize,
    /// Flat, `nodes_per_vertex` 0-based simulation-vertex indices per render vertex.
    pub indices: Vec<usize>,
    /// Flat, the matching weights.
    pub weights: Vec<f64>,
}

impl Interpolation {
    pub fn num_vertices(&self) -> usize {
        self.indices.len() / self.nodes_per_vertex.max(1)
    }

    /// Interpolates per-vertex vectors (for example displacements) to the render vertices.
    pub fn interpolate(&self, values: &[Vector3<f64>]) -> Vec<Vector3<f64>> {
        let n = self.nodes_per_vertex;
        (0..self.num_vertices())
            .map(|i| {
                (0..n)
                    .map(|k| values[self.indices[i * n + k]] * self.weights[i * n + k])
                    .sum()
            })
            .collect()
    }

    /// Interpolates positions.
    pub fn interpolate_points(&self, points: &[Point3<f64>]) -> Vec<Point3<f64>> {
        let coords: Vec<Vector3<f64>> = points.iter().map(|p| p.coords).collect();
        self.interpolate(&coords).into_iter().map(Point3::from).collect()
    }
}
