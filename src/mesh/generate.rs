//! Structured meshes for tests and benchmarks (temporary; replaced by the voxel branch).

use nalgebra::{Point3, Vector3};

use super::volume::{ElementKind, Material, VolumeMesh, HEX_CORNERS};

pub fn box_hex_mesh(size: Vector3<f64>, cells: [usize; 3], origin: Point3<f64>, material: Material) -> VolumeMesh {
    let [nx, ny, nz] = cells;
    let idx = |i: usize, j: usize, k: usize| (i * (ny + 1) + j) * (nz + 1) + k;
    let mut vertices = Vec::new();
    for i in 0..=nx {
        for j in 0..=ny {
            for k in 0..=nz {
                vertices.push(origin + Vector3::new(size.x * i as f64 / nx as f64, size.y * j as f64 / ny as f64, size.z * k as f64 / nz as f64));
            }
        }
    }
    let mut connectivity = Vec::new();
    for i in 0..nx {
        for j in 0..ny {
            for k in 0..nz {
                for c in HEX_CORNERS {
                    connectivity.push(idx(i + c[0] as usize, j + c[1] as usize, k + c[2] as usize));
                }
            }
        }
    }
    let ne = nx * ny * nz;
    VolumeMesh { vertices, kind: ElementKind::Hex, connectivity, materials: vec![material], element_material: vec![0; ne] }
}

pub fn box_tet_mesh(size: Vector3<f64>, cells: [usize; 3], origin: Point3<f64>, material: Material) -> VolumeMesh {
    hex_to_tets(&box_hex_mesh(size, cells, origin, material))
}

pub fn hex_to_tets(mesh: &VolumeMesh) -> VolumeMesh {
    // Kuhn subdivision along the v0-v6 diagonal: paths 0 -> 6 through the cube edges.
    const TETS: [[usize; 4]; 6] = [[0, 1, 2, 6], [0, 2, 3, 6], [0, 3, 7, 6], [0, 7, 4, 6], [0, 4, 5, 6], [0, 5, 1, 6]];
    let mut connectivity = Vec::new();
    let mut element_material = Vec::new();
    for (e, el) in mesh.elements().enumerate() {
        for t in TETS {
            let mut tet = t.map(|a| el[a]);
            let v = super::volume::tet_signed_volume(&mesh.vertices[tet[0]], &mesh.vertices[tet[1]], &mesh.vertices[tet[2]], &mesh.vertices[tet[3]]);
            if v < 0.0 {
                tet.swap(1, 2);
            }
            connectivity.extend_from_slice(&tet);
            element_material.push(mesh.element_material[e]);
        }
    }
    VolumeMesh { vertices: mesh.vertices.clone(), kind: ElementKind::Tet, connectivity, materials: mesh.materials.clone(), element_material }
}

pub fn vertices_where(mesh: &VolumeMesh, pred: impl Fn(&Point3<f64>) -> bool) -> Vec<usize> {
    (0..mesh.vertices.len()).filter(|&v| pred(&mesh.vertices[v])).collect()
}
