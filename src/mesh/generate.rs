//! Structured volumetric meshes of boxes, for tests and benchmarks: beams with known
//! analytic deflections, convergence studies, and timing of the element loops.
//!
//! Method: a regular grid of `cells[0] x cells[1] x cells[2]` hexahedra, vertices
//! numbered in lexicographic order of their grid coordinates (`k` fastest, as in Vega's
//! voxel meshes and [`crate::mesh::voxelize::voxelize`]), hex nodes in Vega's order
//! ([`crate::mesh::volume::HEX_CORNERS`]); the tet version splits every hex with
//! [`hex_to_tets`] (Kuhn subdivision), which is conforming on such a grid.

use nalgebra::{Point3, Vector3};

use super::volume::{ElementKind, Material, VolumeMesh, HEX_CORNERS};
use super::voxelize::hex_to_tets;
use crate::mesh::SurfaceMesh;

/// The closed, outward-oriented boundary of a box of `size` centred at the origin, its
/// faces split as the boundary of `cells` hexes per axis (shared corners: a closed mesh
/// that [`crate::geometry::MeshDistance`] accepts).
///
/// # Panics
/// As [`box_hex_mesh`].
pub fn box_surface_mesh(size: Vector3<f64>, cells: [usize; 3]) -> SurfaceMesh {
    let v = box_hex_mesh(
        size,
        cells,
        Point3::from(-size / 2.0),
        Material::new("box", 1000.0, 1e6, 0.3),
    );
    SurfaceMesh {
        triangles: v.boundary_triangles(),
        vertices: v.vertices,
    }
}

/// A box `[origin, origin + size]` split into `cells` hexes per axis.
///
/// # Panics
/// If a cell count is zero or a size is not positive and finite.
pub fn box_hex_mesh(
    size: Vector3<f64>,
    cells: [usize; 3],
    origin: Point3<f64>,
    material: Material,
) -> VolumeMesh {
    assert!(
        cells.iter().all(|&c| c > 0),
        "box_hex_mesh: every cell count must be positive, got {cells:?}"
    );
    assert!(
        size.iter().all(|&s| s.is_finite() && s > 0.0),
        "box_hex_mesh: every size must be positive, got {size:?}"
    );
    let [nx, ny, nz] = cells;
    let (vx, vy, vz) = (nx + 1, ny + 1, nz + 1);
    let h = size.component_div(&Vector3::new(nx as f64, ny as f64, nz as f64));
    let mut vertices = Vec::with_capacity(vx * vy * vz);
    for i in 0..vx {
        for j in 0..vy {
            for k in 0..vz {
                // The last layer lands exactly on origin + size.
                let c = |n: usize, cells: usize, h: f64, s: f64| {
                    if n == cells {
                        s
                    } else {
                        n as f64 * h
                    }
                };
                vertices.push(
                    origin
                        + Vector3::new(
                            c(i, nx, h.x, size.x),
                            c(j, ny, h.y, size.y),
                            c(k, nz, h.z, size.z),
                        ),
                );
            }
        }
    }
    let mut connectivity = Vec::with_capacity(8 * nx * ny * nz);
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                for c in HEX_CORNERS {
                    let (a, b, d) = (i + c[0] as usize, j + c[1] as usize, k + c[2] as usize);
                    connectivity.push((a * vy + b) * vz + d);
                }
            }
        }
    }
    VolumeMesh {
        vertices,
        kind: ElementKind::Hex,
        connectivity,
        materials: vec![material],
        element_material: vec![0; nx * ny * nz],
    }
}

/// The box of [`box_hex_mesh`] with every hex split into six tets (`6 * cells` tets,
/// positively oriented, conforming).
pub fn box_tet_mesh(
    size: Vector3<f64>,
    cells: [usize; 3],
    origin: Point3<f64>,
    material: Material,
) -> VolumeMesh {
    hex_to_tets(&box_hex_mesh(size, cells, origin, material))
}

/// Indices of the vertices for which `pred` holds, ascending (for example the clamped
/// end `|p| p.x == 0.0` of a beam).
pub fn vertices_where(mesh: &VolumeMesh, pred: impl Fn(&Point3<f64>) -> bool) -> Vec<usize> {
    mesh.vertices
        .iter()
        .enumerate()
        .filter(|(_, p)| pred(p))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steel() -> Material {
        Material::new("steel", 7800.0, 2e11, 0.3)
    }

    #[test]
    fn hex_box_counts_volume_and_order() {
        let size = Vector3::new(3.0, 0.5, 0.25);
        let m = box_hex_mesh(size, [6, 2, 1], Point3::new(-1.0, 0.0, 2.0), steel());
        assert_eq!(m.num_elements(), 12);
        assert_eq!(m.vertices.len(), 7 * 3 * 2);
        assert_eq!(m.unused_vertices(), 0);
        assert!(m.element_defects().is_empty());
        let s = m.volume_stats();
        assert!((s.total_volume - 0.375).abs() < 1e-14);
        assert!((s.total_mass - 0.375 * 7800.0).abs() < 1e-9);
        let bb = m.bounding_box();
        assert_eq!(bb.min, Point3::new(-1.0, 0.0, 2.0));
        assert_eq!(bb.max, Point3::new(2.0, 0.5, 2.25));
        // Node 0 at the smallest corner, node 6 at the largest, of every hex.
        for e in m.elements() {
            let d = m.vertices[e[6]] - m.vertices[e[0]];
            assert!((d - Vector3::new(0.5, 0.25, 0.25)).norm() < 1e-14);
        }
        // 6 x 2 quads on each of the 2 (x,y) faces, 6 x 1 on (x,z), 2 x 1 on (y,z).
        assert_eq!(m.boundary_triangles().len(), 2 * 2 * (12 + 6 + 2));
    }

    #[test]
    fn tet_box_and_vertices_where() {
        let m = box_tet_mesh(
            Vector3::new(1.0, 2.0, 3.0),
            [2, 3, 4],
            Point3::origin(),
            steel(),
        );
        assert_eq!(m.kind, ElementKind::Tet);
        assert_eq!(m.num_elements(), 6 * 24);
        assert!(m.element_defects().is_empty());
        assert!((m.volume_stats().total_volume - 6.0).abs() < 1e-12);
        let clamped = vertices_where(&m, |p| p.x == 0.0);
        assert_eq!(clamped.len(), 4 * 5);
        assert!(clamped.windows(2).all(|w| w[0] < w[1]));
        let far = vertices_where(&m, |p| p.x == 1.0);
        assert_eq!(far.len(), 4 * 5);
    }

    #[test]
    #[should_panic(expected = "cell count")]
    fn zero_cells_panics() {
        box_hex_mesh(Vector3::repeat(1.0), [1, 0, 1], Point3::origin(), steel());
    }
}
