//! COLLADA (`.dae`) meshes with OMPL.app's conventions (it reads them through assimp).
//!
//! What enters: the triangles of every `<instance_geometry>` reachable from the scene's
//! `<instance_visual_scene>` (through `<node>` children and `<instance_node>`), in world
//! coordinates: each node's transform elements (`<matrix>`, row-major; `<translate>`,
//! `<rotate>` in degrees, `<scale>`) composed in order, and node transforms composed
//! parent * child; then the document's `<unit meter>` scale and its `<up_axis>` converted
//! to Y-up as assimp does (`Z_UP`: (x, y, z) -> (x, z, -y); `X_UP`: (x, y, z) -> (-y, x, z)).
//! Primitive blocks `<triangles>`, `<polylist>`, `<polygons>` (triangulated as fans),
//! `<trifans>` and `<tristrips>` give triangles; `<lines>` and `<linestrips>` give no
//! triangles, but their vertices count toward the vertex mean ([`Collada::vertex_mean`]),
//! which OMPL.app uses as the robot's origin: the mean over primitive blocks of each
//! block's distinct vertices (assimp joins identical vertices per block).
//!
//! Why not mesh-loader: its COLLADA reader ignores `<up_axis>` (a TODO in its source),
//! keeps `f32` positions and maps each geometry to one instance, and OMPL.app's
//! conventions need all three. The XML is read with roxmltree; errors name the file and
//! the line.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use nalgebra::{Matrix4, Point3, Rotation3, Unit, Vector3};

use super::error::{Location, MeshError};
use super::surface::SurfaceMesh;

/// A COLLADA scene's collision geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct Collada {
    /// The triangles, in metres (after the unit scale) and Y-up.
    pub mesh: SurfaceMesh,
    /// Sum of each primitive block's distinct vertices, and how many (see the module docs).
    vertex_sum: Vector3<f64>,
    vertex_count: usize,
}

impl Collada {
    /// The mean of the imported vertices, OMPL.app's robot origin.
    pub fn vertex_mean(&self) -> Point3<f64> {
        if self.vertex_count == 0 {
            Point3::origin()
        } else {
            Point3::from(self.vertex_sum / self.vertex_count as f64)
        }
    }
}

/// The sum and the number of the distinct points among `points` (assimp's
/// JoinIdenticalVertices: equal positions count once).
pub fn distinct_vertex_sum(points: impl Iterator<Item = Point3<f64>>) -> (Vector3<f64>, usize) {
    let distinct: BTreeSet<[u64; 3]> = points
        .map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()])
        .collect();
    let sum = distinct.iter().fold(Vector3::zeros(), |s, b| {
        s + Vector3::new(
            f64::from_bits(b[0]),
            f64::from_bits(b[1]),
            f64::from_bits(b[2]),
        )
    });
    (sum, distinct.len())
}

/// Largest number of primitives, nodes or values accepted (against absurd files).
const MAX_ITEMS: usize = 50_000_000;

/// Reads a `.dae` file.
pub fn read_collada(path: &Path) -> Result<Collada, MeshError> {
    let bytes = std::fs::read(path).map_err(|source| MeshError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_collada(&bytes, path)
}

struct Ctx<'a, 'input> {
    doc: &'a roxmltree::Document<'input>,
    path: &'a Path,
    by_id: HashMap<&'a str, roxmltree::Node<'a, 'input>>,
}

impl<'a, 'input> Ctx<'a, 'input> {
    fn err(
        &self,
        node: roxmltree::Node,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> MeshError {
        let line = self.doc.text_pos_at(node.range().start).row as usize;
        MeshError::Syntax {
            path: self.path.to_path_buf(),
            location: Location::Line(line),
            expected: expected.into(),
            found: found.into(),
        }
    }

    fn resolve(
        &self,
        node: roxmltree::Node,
        url: &str,
    ) -> Result<roxmltree::Node<'a, 'input>, MeshError> {
        let id = url.strip_prefix('#').unwrap_or(url);
        self.by_id.get(id).copied().ok_or_else(|| {
            self.err(
                node,
                "a reference to an element of this file",
                format!("'{url}'"),
            )
        })
    }

    fn numbers(&self, node: roxmltree::Node) -> Result<Vec<f64>, MeshError> {
        let text = node.text().unwrap_or("");
        let mut v = Vec::new();
        for tok in text.split_ascii_whitespace() {
            if v.len() >= MAX_ITEMS {
                return Err(self.err(node, format!("at most {MAX_ITEMS} numbers"), "more"));
            }
            match tok.parse::<f64>() {
                Ok(x) if x.is_finite() => v.push(x),
                _ => return Err(self.err(node, "finite numbers", format!("'{tok}'"))),
            }
        }
        Ok(v)
    }

    fn indices(&self, node: roxmltree::Node) -> Result<Vec<usize>, MeshError> {
        let text = node.text().unwrap_or("");
        let mut v = Vec::new();
        for tok in text.split_ascii_whitespace() {
            if v.len() >= MAX_ITEMS {
                return Err(self.err(node, format!("at most {MAX_ITEMS} indices"), "more"));
            }
            v.push(
                tok.parse::<usize>().map_err(|_| {
                    self.err(node, "non-negative integer indices", format!("'{tok}'"))
                })?,
            );
        }
        Ok(v)
    }

    /// The positions of a `<geometry>`'s `<mesh>`, by the `<vertices>` POSITION input.
    fn positions(&self, mesh: roxmltree::Node<'a, 'input>) -> Result<Vec<Point3<f64>>, MeshError> {
        let vertices = child(mesh, "vertices")
            .ok_or_else(|| self.err(mesh, "a <vertices> element", "none"))?;
        let input = vertices
            .children()
            .find(|n| n.has_tag_name_local("input") && n.attribute("semantic") == Some("POSITION"))
            .ok_or_else(|| self.err(vertices, "an <input semantic=\"POSITION\">", "none"))?;
        let source = self.resolve(input, input.attribute("source").unwrap_or(""))?;
        let array = child(source, "float_array")
            .ok_or_else(|| self.err(source, "a <float_array>", "none"))?;
        let values = self.numbers(array)?;
        let stride = child(source, "technique_common")
            .and_then(|t| child(t, "accessor"))
            .and_then(|a| a.attribute("stride"))
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(3);
        if stride < 3 {
            return Err(self.err(
                source,
                "an accessor stride of at least 3 for positions",
                stride.to_string(),
            ));
        }
        Ok(values
            .chunks_exact(stride)
            .map(|c| Point3::new(c[0], c[1], c[2]))
            .collect())
    }
}

/// `roxmltree` helpers on local names (COLLADA files use a default namespace).
trait LocalName {
    fn has_tag_name_local(&self, name: &str) -> bool;
}

impl LocalName for roxmltree::Node<'_, '_> {
    fn has_tag_name_local(&self, name: &str) -> bool {
        self.is_element() && self.tag_name().name() == name
    }
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name_local(name))
}

/// Parses the bytes of a `.dae` file (see the module docs).
pub fn parse_collada(bytes: &[u8], path: &Path) -> Result<Collada, MeshError> {
    let text = super::text::as_utf8(bytes, path)?;
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: 50_000_000,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, opts).map_err(|e| {
        let p = e.pos();
        MeshError::Syntax {
            path: path.to_path_buf(),
            location: Location::Line(p.row as usize),
            expected: "well-formed XML".into(),
            found: e.to_string(),
        }
    })?;
    let root = doc.root_element();
    let by_id: HashMap<&str, roxmltree::Node> = doc
        .descendants()
        .filter_map(|n| n.attribute("id").map(|id| (id, n)))
        .collect();
    let cx = Ctx {
        doc: &doc,
        path,
        by_id,
    };
    if !root.has_tag_name_local("COLLADA") {
        return Err(cx.err(
            root,
            "a <COLLADA> document",
            format!("<{}>", root.tag_name().name()),
        ));
    }
    // Unit and up axis (assimp: root = up-axis rotation * unit scale).
    let asset = child(root, "asset");
    let unit = match asset.and_then(|a| child(a, "unit")) {
        Some(u) => match u.attribute("meter").map(str::parse::<f64>) {
            Some(Ok(m)) if m.is_finite() && m > 0.0 => m,
            None => 1.0,
            Some(_) => {
                return Err(cx.err(
                    u,
                    "a positive <unit meter>",
                    format!("'{}'", u.attribute("meter").unwrap_or("")),
                ))
            }
        },
        None => 1.0,
    };
    let up = match asset.and_then(|a| child(a, "up_axis")) {
        Some(u) => match u.text().map(str::trim) {
            Some("Y_UP") | None => Matrix4::identity(),
            // (x, y, z) -> (x, z, -y)
            Some("Z_UP") => Matrix4::new(
                1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0,
            ),
            // (x, y, z) -> (-y, x, z)
            Some("X_UP") => Matrix4::new(
                0.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
            ),
            Some(other) => return Err(cx.err(u, "X_UP, Y_UP or Z_UP", format!("'{other}'"))),
        },
        None => Matrix4::identity(),
    };
    let base = up * Matrix4::new_scaling(unit);
    let scene = child(root, "scene")
        .and_then(|s| child(s, "instance_visual_scene"))
        .ok_or_else(|| cx.err(root, "a <scene> with an <instance_visual_scene>", "none"))?;
    let visual = cx.resolve(scene, scene.attribute("url").unwrap_or(""))?;
    let mut out = Collada {
        mesh: SurfaceMesh::default(),
        vertex_sum: Vector3::zeros(),
        vertex_count: 0,
    };
    let mut budget = MAX_ITEMS;
    for node in visual.children().filter(|n| n.has_tag_name_local("node")) {
        walk(&cx, node, &base, &mut out, 0, &mut budget)?;
    }
    Ok(out)
}

/// The transform of a node's transform elements, composed in document order.
fn node_transform(cx: &Ctx, node: roxmltree::Node) -> Result<Matrix4<f64>, MeshError> {
    let mut m = Matrix4::identity();
    for t in node.children().filter(|n| n.is_element()) {
        let name = t.tag_name().name();
        if !matches!(name, "matrix" | "translate" | "rotate" | "scale") {
            continue;
        }
        let v = cx.numbers(t)?;
        let want = match name {
            "matrix" => 16,
            "rotate" => 4,
            _ => 3,
        };
        if v.len() != want {
            return Err(cx.err(
                t,
                format!("{want} numbers in <{name}>"),
                format!("{}", v.len()),
            ));
        }
        let step = match name {
            // Row-major in the file.
            "matrix" => Matrix4::from_row_slice(&v),
            "translate" => Matrix4::new_translation(&Vector3::new(v[0], v[1], v[2])),
            "scale" => Matrix4::new_nonuniform_scaling(&Vector3::new(v[0], v[1], v[2])),
            _ => {
                let axis = Vector3::new(v[0], v[1], v[2]);
                if axis.norm() == 0.0 {
                    Matrix4::identity()
                } else {
                    Rotation3::from_axis_angle(&Unit::new_normalize(axis), v[3].to_radians())
                        .to_homogeneous()
                }
            }
        };
        m *= step;
    }
    Ok(m)
}

fn walk(
    cx: &Ctx,
    node: roxmltree::Node,
    parent: &Matrix4<f64>,
    out: &mut Collada,
    depth: usize,
    budget: &mut usize,
) -> Result<(), MeshError> {
    if depth > 64 {
        return Err(cx.err(
            node,
            "nodes nested at most 64 deep (no instance cycles)",
            "deeper",
        ));
    }
    if *budget == 0 {
        return Err(cx.err(node, format!("at most {MAX_ITEMS} node instances"), "more"));
    }
    *budget -= 1;
    let world = parent * node_transform(cx, node)?;
    for c in node.children().filter(|n| n.is_element()) {
        match c.tag_name().name() {
            "node" => walk(cx, c, &world, out, depth + 1, budget)?,
            "instance_node" => {
                let target = cx.resolve(c, c.attribute("url").unwrap_or(""))?;
                walk(cx, target, &world, out, depth + 1, budget)?;
            }
            "instance_geometry" => {
                let geometry = cx.resolve(c, c.attribute("url").unwrap_or(""))?;
                if let Some(mesh) = child(geometry, "mesh") {
                    add_mesh(cx, mesh, &world, out)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Adds one geometry's primitive blocks under `world`.
fn add_mesh(
    cx: &Ctx,
    mesh: roxmltree::Node,
    world: &Matrix4<f64>,
    out: &mut Collada,
) -> Result<(), MeshError> {
    let positions: Vec<Point3<f64>> = cx
        .positions(mesh)?
        .iter()
        .map(|p| world.transform_point(p))
        .collect();
    for block in mesh.children().filter(|n| n.is_element()) {
        let kind = block.tag_name().name();
        if !matches!(
            kind,
            "triangles"
                | "polylist"
                | "polygons"
                | "trifans"
                | "tristrips"
                | "lines"
                | "linestrips"
        ) {
            continue;
        }
        // The VERTEX input's offset and the number of inputs per vertex.
        let inputs: Vec<roxmltree::Node> = block
            .children()
            .filter(|n| n.has_tag_name_local("input"))
            .collect();
        let offset_of = |n: &roxmltree::Node| {
            n.attribute("offset")
                .and_then(|o| o.parse::<usize>().ok())
                .unwrap_or(0)
        };
        let stride = inputs.iter().map(|n| offset_of(n) + 1).max().unwrap_or(1);
        let vertex = inputs
            .iter()
            .find(|n| n.attribute("semantic") == Some("VERTEX"))
            .ok_or_else(|| cx.err(block, "an <input semantic=\"VERTEX\">", "none"))?;
        let voff = offset_of(vertex);
        // Each <p> is one primitive list (polygons, trifans, tristrips, linestrips have
        // one <p> per primitive; triangles, polylist and lines one in all).
        let mut lists: Vec<Vec<usize>> = Vec::new();
        for p in block.children().filter(|n| n.has_tag_name_local("p")) {
            let raw = cx.indices(p)?;
            let mut v = Vec::with_capacity(raw.len() / stride + 1);
            for chunk in raw.chunks(stride) {
                let i = *chunk.get(voff).ok_or_else(|| {
                    cx.err(p, format!("index groups of {stride}"), "a short group")
                })?;
                if i >= positions.len() {
                    return Err(cx.err(
                        p,
                        format!("vertex indices below {}", positions.len()),
                        i.to_string(),
                    ));
                }
                v.push(i);
            }
            lists.push(v);
        }
        let base = out.mesh.vertices.len();
        let mut used = BTreeSet::new();
        let tri = |a: usize, b: usize, c: usize, out: &mut Collada| {
            out.mesh.triangles.push([base + a, base + b, base + c]);
        };
        match kind {
            "triangles" => {
                for list in &lists {
                    for t in list.chunks_exact(3) {
                        tri(t[0], t[1], t[2], out);
                    }
                    used.extend(list.iter().copied());
                }
            }
            "polylist" => {
                let vcount = child(block, "vcount")
                    .map(|v| cx.indices(v))
                    .transpose()?
                    .unwrap_or_default();
                let list = lists.concat();
                let mut at = 0;
                for n in vcount {
                    if at + n > list.len() {
                        return Err(cx.err(
                            block,
                            "<vcount> matching the indices of <p>",
                            "more vertices than given",
                        ));
                    }
                    let poly = &list[at..at + n];
                    for k in 1..n.saturating_sub(1) {
                        tri(poly[0], poly[k], poly[k + 1], out);
                    }
                    at += n;
                }
                used.extend(list.iter().copied());
            }
            "polygons" | "trifans" => {
                for poly in &lists {
                    for k in 1..poly.len().saturating_sub(1) {
                        tri(poly[0], poly[k], poly[k + 1], out);
                    }
                    used.extend(poly.iter().copied());
                }
            }
            "tristrips" => {
                for strip in &lists {
                    for k in 0..strip.len().saturating_sub(2) {
                        if k % 2 == 0 {
                            tri(strip[k], strip[k + 1], strip[k + 2], out);
                        } else {
                            tri(strip[k + 1], strip[k], strip[k + 2], out);
                        }
                    }
                    used.extend(strip.iter().copied());
                }
            }
            // Lines: no triangles; their vertices count toward the mean.
            _ => {
                for l in &lists {
                    used.extend(l.iter().copied());
                }
            }
        }
        // Distinct vertices of this block (assimp joins identical ones per mesh).
        let (sum, count) = distinct_vertex_sum(used.iter().map(|&i| positions[i]));
        out.vertex_sum += sum;
        out.vertex_count += count;
        out.mesh.vertices.extend(positions.iter().copied());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit triangle in a geometry instanced by a nested node: the parent translates
    /// by (10, 0, 0) and the child rotates 90 degrees about z; the document is Z_UP in
    /// centimetres. Child first: (1, 0, 0) -> (0, 1, 0); parent: (10, 1, 0); centimetres:
    /// (0.1, 0.01, 0); Z_UP -> Y_UP: (x, z, -y) = (0.1, 0, -0.01).
    const DAE: &str = r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit meter="0.01" name="centimeter"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="tri"><mesh>
      <source id="tri-pos"><float_array id="tri-arr" count="9">0 0 0 1 0 0 0 1 0</float_array>
        <technique_common><accessor source="#tri-arr" count="3" stride="3"/></technique_common></source>
      <vertices id="tri-v"><input semantic="POSITION" source="#tri-pos"/></vertices>
      <triangles count="1"><input semantic="VERTEX" source="#tri-v" offset="0"/><p>0 1 2</p></triangles>
      <lines count="1"><input semantic="VERTEX" source="#tri-v" offset="0"/><p>0 1</p></lines>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="scene">
      <node id="parent"><translate>10 0 0</translate>
        <node id="child"><rotate>0 0 1 90</rotate><instance_geometry url="#tri"/></node>
      </node>
    </visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#scene"/></scene>
</COLLADA>"##;

    #[test]
    fn z_up_nested_transforms_and_units() {
        let c = parse_collada(DAE.as_bytes(), Path::new("t.dae")).unwrap();
        assert_eq!(c.mesh.triangles.len(), 1);
        let [a, b, d] = c.mesh.triangle(0);
        let close = |p: Point3<f64>, q: [f64; 3]| (p - Point3::from(q)).norm() < 1e-12;
        assert!(close(a, [0.1, 0.0, 0.0]), "{a}");
        assert!(close(b, [0.1, 0.0, -0.01]), "{b}");
        // (0, 1, 0) -> child (-1, 0, 0) -> (9, 0, 0) -> (0.09, 0, 0).
        assert!(close(d, [0.09, 0.0, 0.0]), "{d}");
        // The triangle block's three vertices and the line block's two.
        let mean = c.vertex_mean();
        let expect = (Vector3::new(0.1, 0.0, 0.0) * 2.0
            + Vector3::new(0.1, 0.0, -0.01) * 2.0
            + Vector3::new(0.09, 0.0, 0.0))
            / 5.0;
        assert!((mean.coords - expect).norm() < 1e-12, "{mean}");
    }

    #[test]
    fn errors_name_the_line() {
        let bad = DAE.replace("0 0 0 1 0 0 0 1 0", "0 0 0 1 x 0 0 1 0");
        let e = parse_collada(bad.as_bytes(), Path::new("t.dae"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.dae:line 6: expected finite numbers, found 'x'"),
            "{e}"
        );
        let bad = DAE.replace("<p>0 1 2</p>", "<p>0 1 7</p>");
        let e = parse_collada(bad.as_bytes(), Path::new("t.dae"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.dae:line 9: expected vertex indices below 3"),
            "{e}"
        );
        let e = parse_collada(b"<COLLADA>", Path::new("t.dae"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("well-formed XML"), "{e}");
        let bad = DAE.replace("url=\"#tri\"", "url=\"#nope\"");
        let e = parse_collada(bad.as_bytes(), Path::new("t.dae"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'#nope'"), "{e}");
    }
}
