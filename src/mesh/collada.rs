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
//! which OMPL.app uses as the robot's origin.
//!
//! **The vertex mean, as assimp imports the file.** OMPL.app reads meshes through assimp
//! (`GenNormals | Triangulate | JoinIdenticalVertices | SortByPType | OptimizeGraph`) and
//! shifts the robot by the mean of every vertex of every imported mesh
//! (`RigidBodyGeometry::getRobotCenter`). assimp's COLLADA importer makes one mesh per
//! primitive block, with one vertex per corner carrying the corner's position, normal
//! and texture coordinate; GenNormals gives face normals to a block that has none; then
//! JoinIdenticalVertices joins the vertices of one mesh whose positions are equal and
//! whose other attributes are equal within 1e-5 (`JoinedVertices`). A corner shared
//! by faces with different normals, as in most SketchUp exports (and in every
//! double-sided face), therefore stays several vertices, each counted in the mean.
//!
//! Why not mesh-loader: its COLLADA reader ignores `<up_axis>` (a TODO in its source),
//! keeps `f32` positions and maps each geometry to one instance, and OMPL.app's
//! conventions need all three. The XML is read with roxmltree; errors name the file and
//! the line.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use nalgebra::{Matrix4, Point3, Rotation3, Unit, Vector3};

use super::error::{Location, MeshError};
use crate::mesh::SurfaceMesh;

/// A COLLADA scene's collision geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct Collada {
    /// The triangles, in metres (after the unit scale) and Y-up.
    pub mesh: SurfaceMesh,
    /// Sum of the vertices assimp keeps of each primitive block, and how many (see the
    /// module docs).
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

/// The sum and the number of the distinct points among `points` (equal positions count
/// once: assimp's JoinIdenticalVertices on vertices that carry no other attribute).
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

    /// The vectors of a `<source>` (its `<float_array>` read by its accessor's stride;
    /// the first three components of each, zero-padded).
    fn vectors(&self, source: roxmltree::Node<'a, 'input>) -> Result<Vec<[f64; 3]>, MeshError> {
        let array = child(source, "float_array")
            .ok_or_else(|| self.err(source, "a <float_array>", "none"))?;
        let values = self.numbers(array)?;
        let stride = child(source, "technique_common")
            .and_then(|t| child(t, "accessor"))
            .and_then(|a| a.attribute("stride"))
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(3);
        if stride == 0 {
            return Err(self.err(source, "an accessor stride of at least 1", "0"));
        }
        Ok(values
            .chunks_exact(stride)
            .map(|c| {
                let mut v = [0.0; 3];
                for (k, x) in c.iter().take(3).enumerate() {
                    v[k] = *x;
                }
                v
            })
            .collect())
    }

    /// The source an `<input>` names.
    fn input_source(
        &self,
        input: roxmltree::Node<'a, 'input>,
    ) -> Result<roxmltree::Node<'a, 'input>, MeshError> {
        self.resolve(input, input.attribute("source").unwrap_or(""))
    }

    /// A `<geometry>`'s `<mesh>` `<vertices>`: its POSITION input, and its NORMAL and
    /// TEXCOORD inputs where it has them (indexed like the positions).
    fn vertices(&self, mesh: roxmltree::Node<'a, 'input>) -> Result<VertexData, MeshError> {
        let vertices = child(mesh, "vertices")
            .ok_or_else(|| self.err(mesh, "a <vertices> element", "none"))?;
        let input = |semantic: &str| {
            vertices.children().find(|n| {
                n.has_tag_name_local("input") && n.attribute("semantic") == Some(semantic)
            })
        };
        let position = input("POSITION")
            .ok_or_else(|| self.err(vertices, "an <input semantic=\"POSITION\">", "none"))?;
        let source = self.input_source(position)?;
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
        let positions = self
            .vectors(source)?
            .into_iter()
            .map(Point3::from)
            .collect();
        let normals = match input("NORMAL") {
            Some(n) => Some(self.vectors(self.input_source(n)?)?),
            None => None,
        };
        let texcoords = match input("TEXCOORD") {
            Some(n) => Some(self.vectors(self.input_source(n)?)?),
            None => None,
        };
        Ok(VertexData {
            positions,
            normals,
            texcoords,
        })
    }
}

/// The per-vertex data of a `<mesh>`'s `<vertices>`, in the geometry's own frame.
struct VertexData {
    positions: Vec<Point3<f64>>,
    normals: Option<Vec<[f64; 3]>>,
    texcoords: Option<Vec<[f64; 3]>>,
}

/// One corner of a primitive: its `<vertices>` index, and its normal and texture
/// coordinate where the primitive block or the `<vertices>` give them.
#[derive(Debug, Clone, Copy)]
struct Corner {
    vertex: usize,
    normal: Option<[f64; 3]>,
    texcoord: Option<[f64; 3]>,
}

/// A vertex's normal and texture coordinate, as `f32`.
type Attributes = ([f32; 3], [f32; 3]);

/// The vertices assimp keeps of one mesh, as its JoinIdenticalVertices step (assimp
/// 5.2, `JoinVerticesProcess.cpp`) joins them: two vertices are one when their `f32`
/// positions are equal and their normals and first texture coordinates differ by at
/// most 1e-5 (absent attributes count as zero). Vertex colours, tangents and further
/// texture sets do not enter (assimp compares them only for meshes with several UV or
/// colour sets, which the COLLADA and OBJ files here do not have).
#[derive(Debug, Default)]
struct JoinedVertices {
    /// Per exact `f32` position, the (normal, texture coordinate) pairs kept there.
    kept: HashMap<[u32; 3], Vec<Attributes>>,
}

impl JoinedVertices {
    /// Offers one vertex: whether it is kept (no equal one is).
    fn offer(&mut self, position: Point3<f64>, normal: [f64; 3], texcoord: [f64; 3]) -> bool {
        // -0.0 and 0.0 hash alike in std::hash<float> and compare equal.
        let bits = |x: f64| {
            let f = x as f32;
            if f == 0.0 {
                0
            } else {
                f.to_bits()
            }
        };
        let key = [bits(position.x), bits(position.y), bits(position.z)];
        let f3 = |v: [f64; 3]| [v[0] as f32, v[1] as f32, v[2] as f32];
        let (n, t) = (f3(normal), f3(texcoord));
        const SQUARE_EPSILON: f32 = 1e-5 * 1e-5;
        let close = |a: [f32; 3], b: [f32; 3]| {
            let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
            // NaN differences compare as "not greater", hence equal, as in assimp.
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            d2.is_nan() || d2 <= SQUARE_EPSILON
        };
        let at = self.kept.entry(key).or_default();
        if at.iter().any(|&(n2, t2)| close(n, n2) && close(t, t2)) {
            return false;
        }
        at.push((n, t));
        true
    }
}

/// The face normal assimp's GenNormals step gives the corners of a triangle of a mesh
/// without normals: the normalized cross product of its `f32` edges, zero when degenerate.
fn face_normal(a: Point3<f64>, b: Point3<f64>, c: Point3<f64>) -> [f64; 3] {
    let f = |p: Point3<f64>| [p.x as f32, p.y as f32, p.z as f32];
    let (a, b, c) = (f(a), f(b), f(c));
    let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
    let n = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if len > 0.0 {
        [
            (n[0] / len) as f64,
            (n[1] / len) as f64,
            (n[2] / len) as f64,
        ]
    } else {
        [0.0; 3]
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
    let data = cx.vertices(mesh)?;
    let positions: Vec<Point3<f64>> = data
        .positions
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
        let lists = corner_lists(cx, block, &data)?;
        let base = out.mesh.vertices.len();
        let faces = primitive_faces(cx, block, kind, &lists)?;
        for f in faces.iter().filter(|f| f.len() == 3) {
            out.mesh
                .triangles
                .push([base + f[0].vertex, base + f[1].vertex, base + f[2].vertex]);
        }
        // The vertices assimp keeps of this block (one aiMesh after SortByPType):
        // GenNormals gives face normals to a block of faces without normals.
        let mut joined = JoinedVertices::default();
        let has_normals = lists.iter().flatten().any(|c| c.normal.is_some());
        for f in &faces {
            let generated = if !has_normals && f.len() >= 3 {
                let p = |c: &Corner| data.positions[c.vertex];
                Some(face_normal(p(&f[0]), p(&f[1]), p(&f[f.len() - 1])))
            } else {
                None
            };
            for c in f {
                let kept = joined.offer(
                    data.positions[c.vertex],
                    c.normal.or(generated).unwrap_or([0.0; 3]),
                    c.texcoord.unwrap_or([0.0; 3]),
                );
                if kept {
                    out.vertex_sum += positions[c.vertex].coords;
                    out.vertex_count += 1;
                }
            }
        }
        out.mesh.vertices.extend(positions.iter().copied());
    }
    Ok(())
}

/// A primitive block's `<p>` lists as corners: each `<p>` is one list (`<polygons>`,
/// `<trifans>`, `<tristrips>`, `<linestrips>` have one per primitive; `<triangles>`,
/// `<polylist>` and `<lines>` one in all).
fn corner_lists(
    cx: &Ctx,
    block: roxmltree::Node,
    data: &VertexData,
) -> Result<Vec<Vec<Corner>>, MeshError> {
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
    // A block's own NORMAL, and its first TEXCOORD set (assimp's texture channel 0).
    let normal = match inputs
        .iter()
        .find(|n| n.attribute("semantic") == Some("NORMAL"))
    {
        Some(n) => Some((offset_of(n), cx.vectors(cx.input_source(*n)?)?)),
        None => None,
    };
    let set = |n: &roxmltree::Node| {
        n.attribute("set")
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(0)
    };
    let texcoord = match inputs
        .iter()
        .filter(|n| n.attribute("semantic") == Some("TEXCOORD"))
        .min_by_key(|n| set(n))
    {
        Some(n) => Some((offset_of(n), cx.vectors(cx.input_source(*n)?)?)),
        None => None,
    };
    let mut lists = Vec::new();
    for p in block.children().filter(|n| n.has_tag_name_local("p")) {
        let raw = cx.indices(p)?;
        let mut v = Vec::with_capacity(raw.len() / stride + 1);
        for chunk in raw.chunks(stride) {
            let at = |off: usize, len: usize, what: &str| -> Result<usize, MeshError> {
                let i = *chunk.get(off).ok_or_else(|| {
                    cx.err(p, format!("index groups of {stride}"), "a short group")
                })?;
                if i >= len {
                    return Err(cx.err(p, format!("{what} indices below {len}"), i.to_string()));
                }
                Ok(i)
            };
            let i = at(voff, data.positions.len(), "vertex")?;
            let attribute = |own: &Option<(usize, Vec<[f64; 3]>)>,
                             shared: &Option<Vec<[f64; 3]>>,
                             what: &str|
             -> Result<Option<[f64; 3]>, MeshError> {
                if let Some((off, values)) = own {
                    return Ok(Some(values[at(*off, values.len(), what)?]));
                }
                Ok(shared.as_ref().and_then(|s| s.get(i).copied()))
            };
            v.push(Corner {
                vertex: i,
                normal: attribute(&normal, &data.normals, "normal")?,
                texcoord: attribute(&texcoord, &data.texcoords, "texture coordinate")?,
            });
        }
        lists.push(v);
    }
    Ok(lists)
}

/// A block's primitives as corner lists: triangles (polygons as fans, strips
/// alternating), or the corners of its lines.
fn primitive_faces(
    cx: &Ctx,
    block: roxmltree::Node,
    kind: &str,
    lists: &[Vec<Corner>],
) -> Result<Vec<Vec<Corner>>, MeshError> {
    let mut faces: Vec<Vec<Corner>> = Vec::new();
    let fan = |poly: &[Corner], faces: &mut Vec<Vec<Corner>>| {
        if poly.len() < 3 {
            // A point or a line (assimp sorts it into a mesh of its own kind).
            faces.push(poly.to_vec());
        }
        for k in 1..poly.len().saturating_sub(1) {
            faces.push(vec![poly[0], poly[k], poly[k + 1]]);
        }
    };
    match kind {
        "triangles" => {
            for list in lists {
                faces.extend(list.chunks_exact(3).map(|t| t.to_vec()));
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
                fan(&list[at..at + n], &mut faces);
                at += n;
            }
        }
        "polygons" | "trifans" => {
            for poly in lists {
                fan(poly, &mut faces);
            }
        }
        "tristrips" => {
            for strip in lists {
                for k in 0..strip.len().saturating_sub(2) {
                    if k % 2 == 0 {
                        faces.push(vec![strip[k], strip[k + 1], strip[k + 2]]);
                    } else {
                        faces.push(vec![strip[k + 1], strip[k], strip[k + 2]]);
                    }
                }
            }
        }
        // Lines: no triangles; their corners count toward the mean.
        _ => faces.extend(lists.iter().map(|l| l.to_vec())),
    }
    Ok(faces)
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

    /// A folded quad as SketchUp writes it: two triangles sharing the edge (1, 2), their
    /// corners repeated per face with each face's normal in `<vertices>`; a third
    /// triangle coplanar with the second, sharing its corners with equal normals; and a
    /// fourth block without normals, folded likewise (GenNormals gives it face normals).
    const FOLDED: &str = r##"<?xml version="1.0"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <library_geometries>
    <geometry id="g"><mesh>
      <source id="p"><float_array id="pa" count="27">
        0 0 0  1 0 0  0 1 0
        1 0 0  0 1 0  1 1 1
        1 1 1  0 1 0  0 2 2
      </float_array><technique_common><accessor source="#pa" count="9" stride="3"/></technique_common></source>
      <source id="n"><float_array id="na" count="27">
        0 0 1  0 0 1  0 0 1
        0.57735 0.57735 -0.57735  0.57735 0.57735 -0.57735  0.57735 0.57735 -0.57735
        0.57735 0.57735 -0.57735  0.5773502 0.5773502 -0.5773502  0.57735 0.57735 -0.57735
      </float_array><technique_common><accessor source="#na" count="9" stride="3"/></technique_common></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/><input semantic="NORMAL" source="#n"/></vertices>
      <triangles count="3"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2 3 5 4 6 8 7</p></triangles>
    </mesh></geometry>
    <geometry id="h"><mesh>
      <source id="q"><float_array id="qa" count="12">10 0 0  11 0 0  10 1 0  11 1 1</float_array>
        <technique_common><accessor source="#qa" count="4" stride="3"/></technique_common></source>
      <vertices id="w"><input semantic="POSITION" source="#q"/></vertices>
      <triangles count="2"><input semantic="VERTEX" source="#w" offset="0"/><p>0 1 2 1 3 2</p></triangles>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes>
    <visual_scene id="s"><node><instance_geometry url="#g"/><instance_geometry url="#h"/></node></visual_scene>
  </library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>"##;

    /// OMPL.app's origin of [`FOLDED`], by hand. First block: the first face's three
    /// corners (normal +z); the second face's three, whose (1,0,0) and (0,1,0) differ
    /// from the first face's in normal, so stay; the third face's (1,1,1) and (0,1,0)
    /// equal the second's in position and (to 1e-5) normal, so join, and (0,2,2) is new:
    /// 7 vertices, (0,0,0) (1,0,0) (0,1,0) (1,0,0) (0,1,0) (1,1,1) (0,2,2). Second
    /// block: face normals +z and (-1, 0, 1)/sqrt 2 split the shared edge: 6 vertices.
    /// Joined by position alone, the first block would give 5 and the second 4.
    #[test]
    fn normals_split_a_shared_corner_as_assimp_does() {
        let c = parse_collada(FOLDED.as_bytes(), Path::new("folded.dae")).unwrap();
        assert_eq!(c.mesh.triangles.len(), 5);
        let first = Vector3::new(0.0, 0.0, 0.0)
            + Vector3::new(1.0, 0.0, 0.0) * 2.0
            + Vector3::new(0.0, 1.0, 0.0) * 2.0
            + Vector3::new(1.0, 1.0, 1.0)
            + Vector3::new(0.0, 2.0, 2.0);
        let second = (Vector3::new(10.0, 0.0, 0.0) + Vector3::new(11.0, 0.0, 0.0) * 2.0)
            + Vector3::new(10.0, 1.0, 0.0) * 2.0
            + Vector3::new(11.0, 1.0, 1.0);
        let expect = (first + second) / 13.0;
        let mean = c.vertex_mean();
        assert!((mean.coords - expect).norm() < 1e-12, "{mean} vs {expect}");
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
