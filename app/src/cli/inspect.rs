//! `haptics inspect FILE`: counts, bounding box, materials, volume, mass and element
//! quality of any supported mesh file.

use super::range;
use std::path::PathBuf;

use clap::Args;

use haptics::mesh::{read::read_any, read::AnyMesh, volume::VolumeMesh, SurfaceMesh};

#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// Mesh file: .dae, .obj, .stl, .gltf, .glb (surfaces), .veg, .node/.ele (volumes). For a surface
    /// it also prints the origin OMPL.app gives the part as a robot (the mean of the
    /// vertices assimp imports) and the part's radius about it.
    pub file: PathBuf,
    /// How many defective elements to list (0 to 10^6).
    #[arg(long, default_value_t = 20, value_parser = range::count(0, 1_000_000))]
    pub max_listed: usize,
}

pub fn run(args: &InspectArgs) -> anyhow::Result<()> {
    let ext = args
        .file
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if matches!(ext.as_str(), "dae" | "obj" | "stl" | "gltf" | "glb") {
        let (mesh, origin) = super::check::read_mesh(&args.file)?;
        print!("{}", describe_surface(&mesh));
        print!("{}", describe_origin(&mesh, &origin));
        return Ok(());
    }
    match read_any(&args.file)? {
        AnyMesh::Surface(m) => print!("{}", describe_surface(&m)),
        AnyMesh::Volume(m) => print!("{}", describe_volume(&m, args.max_listed)),
    }
    Ok(())
}

fn bbox_lines(b: &haptics::mesh::Aabb) -> String {
    let e = b.extent();
    format!(
        "bounding box: min ({:.6}, {:.6}, {:.6}) max ({:.6}, {:.6}, {:.6})\n  extent ({:.6}, {:.6}, {:.6})\n",
        b.min.x, b.min.y, b.min.z, b.max.x, b.max.y, b.max.z, e.x, e.y, e.z
    )
}

/// The report for a triangle mesh.
pub fn describe_surface(m: &SurfaceMesh) -> String {
    let (boundary, nonmanifold) = m.boundary_and_nonmanifold_edges();
    let mut s = format!(
        "surface mesh\nvertices: {}\ntriangles: {}\n",
        m.vertices.len(),
        m.triangles.len()
    );
    s += &bbox_lines(&m.bounding_box());
    s += &format!(
        "area: {:.6}\nconnected components: {}\n",
        m.area(),
        m.connected_components()
    );
    if boundary == 0 && nonmanifold == 0 {
        s += &format!(
            "closed: yes (every edge joins exactly two triangles)\nenclosed volume: {:.6} (components that intersect each other are counted twice)\n",
            m.signed_volume()
        );
    } else {
        s += &format!(
            "closed: no ({boundary} boundary edges, {nonmanifold} non-manifold edges): a polygon soup; enclosed volume undefined\n"
        );
    }
    let degenerate = (0..m.triangles.len())
        .filter(|&t| {
            let [a, b, c] = m.triangle(t);
            (b - a).cross(&(c - a)).norm() == 0.0
        })
        .count();
    s += &format!("degenerate (zero-area) triangles: {degenerate}\n");
    s
}

/// OMPL.app's robot origin for the mesh and the mesh's radius about it.
pub fn describe_origin(m: &SurfaceMesh, origin: &nalgebra::Point3<f64>) -> String {
    let radius = m
        .vertices
        .iter()
        .map(|v| (v - origin).norm())
        .fold(0.0, f64::max);
    format!(
        "robot origin (OMPL.app: the mean of the vertices assimp imports): ({:.6}, {:.6}, {:.6})\nradius about the origin: {:.6}\n",
        origin.x, origin.y, origin.z, radius
    )
}

/// The report for a volumetric mesh.
pub fn describe_volume(m: &VolumeMesh, max_listed: usize) -> String {
    let mut s = format!(
        "volumetric mesh\nvertices: {}\nelements: {} ({})\nboundary faces (triangles): {}\n",
        m.vertices.len(),
        m.num_elements(),
        m.kind.name(),
        m.boundary_triangles().len()
    );
    let unused = m.unused_vertices();
    if unused > 0 {
        s += &format!("unused vertices: {unused}\n");
    }
    s += &bbox_lines(&m.bounding_box());
    s += "materials:\n";
    for (i, mat) in m.materials.iter().enumerate() {
        let count = m.element_material.iter().filter(|&&k| k == i).count();
        s += &format!(
            "  {}: density {} kg/m^3, E {} Pa, nu {} ({} elements)\n",
            mat.name, mat.density, mat.youngs_modulus, mat.poisson_ratio, count
        );
    }
    let st = m.volume_stats();
    s += &format!(
        "total volume: {:.6e} m^3\ntotal mass: {:.6e} kg\nelement volume: min {:.6e}, max {:.6e}\n",
        st.total_volume, st.total_mass, st.min_element_volume, st.max_element_volume
    );
    let defects = m.element_defects();
    if defects.is_empty() {
        s += "inverted or degenerate elements: none\n";
    } else {
        s += &format!("inverted or degenerate elements: {}\n", defects.len());
        for d in defects.iter().take(max_listed) {
            s += &format!(
                "  element {} (0-based {}): {}, measure {:.3e}\n",
                d.element + 1,
                d.element,
                d.kind,
                d.measure
            );
        }
        if defects.len() > max_listed {
            s += &format!("  ... and {} more\n", defects.len() - max_listed);
        }
    }
    s
}
