//! TetGen `.node` / `.ele` tetrahedral meshes (reader).
//!
//! Hand-written because the project requires typed [`MeshError`]s with the file and the
//! 1-based line. Grammar (`#` starts a comment anywhere on a line; blank lines skipped):
//!
//! ```text
//! node file := n dim(=3) nattr nbm(0|1) NL  (i x y z attr{nattr} [marker if nbm=1] NL){n}
//! ele file  := m nodes(4|10) nattr NL       (i v0 v1 v2 v3 attr{nattr} NL){m}
//! ```
//!
//! The first node (element) index, 0 or 1, sets the numbering of the file; indices must
//! then be consecutive, and the element files' vertex indices use the node numbering.
//! Quadratic (10-node) tetrahedra are `Unsupported`.
//!
//! Materials: with no element attribute every element gets `material`; with attributes,
//! the first one is TetGen's region number and each distinct value gets a clone of
//! `material` named `region<attr>` (in order of first appearance).
//!
//! Orientation: Vega's positive tet has `(v1-v0) . ((v2-v0) x (v3-v0)) > 0`. TetGen
//! versions differ in the sign convention of their output, so when *every* element has
//! a negative signed volume the mesh is taken to use the opposite convention and nodes 1
//! and 2 of every element are swapped. A mesh with mixed orientations is left as it is
//! (`check_elements` reports the inverted elements).

use std::collections::HashMap;
use std::path::Path;

use nalgebra::Point3;

use super::error::{excerpt, Location, MeshError};
use super::text::{
    as_utf8, numbered_lines, parse_f64, parse_i64, parse_index, parse_usize, read_bytes,
    strip_comment,
};
use super::volume::{tet_signed_volume, ElementKind, Material, VolumeMesh};

/// Non-comment, non-blank lines as `(line number, tokens)`.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    numbered_lines(text).filter_map(|(ln, l)| {
        let body = strip_comment(l);
        if body.is_empty() {
            None
        } else {
            Some((ln, body.split_ascii_whitespace().collect()))
        }
    })
}

fn last_line(text: &str) -> usize {
    numbered_lines(text).count()
}

fn tokens_count(
    path: &Path,
    ln: usize,
    toks: &[&str],
    n: usize,
    what: &str,
) -> Result<(), MeshError> {
    if toks.len() != n {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("{n} numbers: {what}"),
            format!("{} numbers", toks.len()),
        ));
    }
    Ok(())
}

/// Checks the running index of a list entry; the first one (0 or 1) sets the base.
fn check_running_index(
    path: &Path,
    ln: usize,
    tok: &str,
    k: usize,
    base: &mut usize,
) -> Result<(), MeshError> {
    let idx = parse_i64(tok, path, ln, "an index")?;
    if k == 0 && (idx == 0 || idx == 1) {
        *base = idx as usize;
        return Ok(());
    }
    if idx != (*base + k) as i64 {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("index {}", *base + k),
            excerpt(tok),
        ));
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String, MeshError> {
    let bytes = read_bytes(path)?;
    Ok(as_utf8(&bytes, path)?.to_string())
}

/// Reads a TetGen `.node` / `.ele` pair (see the module documentation).
pub fn read_tetgen(
    node_path: &Path,
    ele_path: &Path,
    material: &Material,
) -> Result<VolumeMesh, MeshError> {
    let node_text = read_text(node_path)?;
    let ele_text = read_text(ele_path)?;
    parse_tetgen(&node_text, node_path, &ele_text, ele_path, material)
}

/// Parses TetGen `.node` and `.ele` text; the paths are only used in error messages.
pub fn parse_tetgen(
    node_text: &str,
    node_path: &Path,
    ele_text: &str,
    ele_path: &Path,
    material: &Material,
) -> Result<VolumeMesh, MeshError> {
    let nodes = parse_nodes(node_text, node_path)?;
    let elements = parse_elements(ele_text, ele_path, &nodes)?;
    let materials = region_materials(&elements.regions, material);
    let mut connectivity = elements.connectivity;
    orient_consistently(&nodes.vertices, &mut connectivity);
    Ok(VolumeMesh {
        vertices: nodes.vertices,
        kind: ElementKind::Tet,
        connectivity,
        materials,
        element_material: elements.element_material,
    })
}

/// The nodes of a `.node` file, and the base of their running index (0 or 1).
struct Nodes {
    vertices: Vec<Point3<f64>>,
    base: usize,
}

/// The tetrahedra of an `.ele` file: 0-based node indices, and each element's region
/// (an index into `regions`, the distinct region attributes' bits in order of first use).
struct Elements {
    connectivity: Vec<usize>,
    element_material: Vec<usize>,
    regions: Vec<u64>,
}

/// The first content line, which holds the header `what`; `Truncated` when there is none.
fn header_line<'a>(
    lines: &mut impl Iterator<Item = (usize, Vec<&'a str>)>,
    text: &str,
    path: &Path,
    what: &str,
) -> Result<(usize, Vec<&'a str>), MeshError> {
    lines
        .next()
        .ok_or_else(|| MeshError::truncated(path, Location::Line(last_line(text) + 1), what))
}

/// The content line of entry `k` of the `count` entries (`what`) declared on line `hl`;
/// `Truncated` when the file ends before it.
fn entry_line<'a>(
    lines: &mut impl Iterator<Item = (usize, Vec<&'a str>)>,
    text: &str,
    path: &Path,
    (count, what, hl): (usize, &str, usize),
    k: usize,
) -> Result<(usize, Vec<&'a str>), MeshError> {
    lines.next().ok_or_else(|| {
        MeshError::truncated(
            path,
            Location::Line(last_line(text) + 1),
            format!("{count} {what} as declared on line {hl} (found {k})"),
        )
    })
}

/// Checks that no content line follows the `count` entries (`what`) declared on line `hl`.
fn expect_end<'a>(
    lines: &mut impl Iterator<Item = (usize, Vec<&'a str>)>,
    path: &Path,
    (count, what, hl): (usize, &str, usize),
) -> Result<(), MeshError> {
    if let Some((ln, t)) = lines.next() {
        return Err(MeshError::syntax(
            path,
            Location::Line(ln),
            format!("the end of the file after the {count} {what} declared on line {hl}"),
            excerpt(&t.join(" ")),
        ));
    }
    Ok(())
}

/// The header field at position `i` of `h` as a count, or `default` when it is absent.
fn optional_field(
    h: &[&str],
    i: usize,
    path: &Path,
    hl: usize,
    what: &str,
    default: usize,
) -> Result<usize, MeshError> {
    Ok(h.get(i)
        .map(|t| parse_usize(t, path, hl, what))
        .transpose()?
        .unwrap_or(default))
}

/// The `.node` header `n 3 nattr nbm` on line `hl`: the node count, the number of
/// attributes and the boundary marker flag.
fn parse_node_header(
    h: &[&str],
    path: &Path,
    hl: usize,
) -> Result<(usize, usize, usize), MeshError> {
    let n = parse_usize(
        h.first().copied().unwrap_or(""),
        path,
        hl,
        "the number of nodes",
    )?;
    let dim = optional_field(h, 1, path, hl, "the dimension 3", 3)?;
    if dim != 3 {
        return Err(MeshError::syntax(
            path,
            Location::Line(hl),
            "dimension 3",
            dim.to_string(),
        ));
    }
    let nattr = optional_field(h, 2, path, hl, "the number of attributes", 0)?;
    let nbm = optional_field(h, 3, path, hl, "the boundary marker flag 0 or 1", 0)?;
    if nbm > 1 {
        return Err(MeshError::syntax(
            path,
            Location::Line(hl),
            "boundary marker flag 0 or 1",
            nbm.to_string(),
        ));
    }
    Ok((n, nattr, nbm))
}

/// The position of node `k` from its line `t` (`per_node` tokens), checking its running
/// index against `base` and that its attributes and marker are numbers.
fn parse_node_line(
    t: &[&str],
    path: &Path,
    ln: usize,
    k: usize,
    per_node: usize,
    base: &mut usize,
) -> Result<Point3<f64>, MeshError> {
    tokens_count(
        path,
        ln,
        t,
        per_node,
        "index x y z, attributes and marker as in the header",
    )?;
    check_running_index(path, ln, t.first().copied().unwrap_or(""), k, base)?;
    let mut c = [0.0; 3];
    for (ck, tok) in c.iter_mut().zip(t.iter().skip(1)) {
        *ck = parse_f64(tok, path, ln, "a node coordinate")?;
    }
    for tok in t.iter().skip(4) {
        parse_f64(tok, path, ln, "a node attribute or marker")?;
    }
    Ok(Point3::new(c[0], c[1], c[2]))
}

/// Parses the `.node` text: the header `n 3 nattr nbm`, then `n` lines of index,
/// coordinates, attributes and marker.
fn parse_nodes(node_text: &str, path: &Path) -> Result<Nodes, MeshError> {
    let mut lines = content_lines(node_text);
    let (hl, h) = header_line(&mut lines, node_text, path, "the header 'n 3 nattr nbm'")?;
    let (n, nattr, nbm) = parse_node_header(&h, path, hl)?;
    let per_node = 4 + nattr.min(1 << 16) + nbm;
    let mut vertices = Vec::with_capacity(n.min(1 << 20));
    let mut node_base = 0;
    for k in 0..n {
        let (ln, t) = entry_line(&mut lines, node_text, path, (n, "nodes", hl), k)?;
        vertices.push(parse_node_line(&t, path, ln, k, per_node, &mut node_base)?);
    }
    expect_end(&mut lines, path, (n, "nodes", hl))?;
    Ok(Nodes {
        vertices,
        base: node_base,
    })
}

/// The `.ele` header `m 4 nattr` on line `hl`: the element count, the nodes per element
/// (always 4) and the number of attributes.
fn parse_ele_header(
    h: &[&str],
    path: &Path,
    hl: usize,
) -> Result<(usize, usize, usize), MeshError> {
    let m = parse_usize(
        h.first().copied().unwrap_or(""),
        path,
        hl,
        "the number of tetrahedra",
    )?;
    let npt = optional_field(h, 1, path, hl, "nodes per tetrahedron (4)", 4)?;
    if npt == 10 {
        return Err(MeshError::Unsupported {
            path: path.to_path_buf(),
            what: format!(
                "line {hl}: quadratic 10-node tetrahedra (only linear 4-node tetrahedra)"
            ),
        });
    }
    if npt != 4 {
        return Err(MeshError::syntax(
            path,
            Location::Line(hl),
            "4 (or 10) nodes per tetrahedron",
            npt.to_string(),
        ));
    }
    let eattr = optional_field(h, 2, path, hl, "the number of attributes", 0)?;
    Ok((m, npt, eattr))
}

/// The region index of the attribute `a`: its position among the distinct attributes'
/// bits in `regions`, appending it when it is new.
fn region_index(a: f64, regions: &mut Vec<u64>, region_of: &mut HashMap<u64, usize>) -> usize {
    let key = (a + 0.0).to_bits();
    let next = regions.len();
    let mat = *region_of.entry(key).or_insert(next);
    if mat == next {
        regions.push(key);
    }
    mat
}

/// Parses the `.ele` text: the header `m 4 nattr`, then `m` lines of index, four node
/// indices (of `nodes`) and attributes (the first is the region).
fn parse_elements(ele_text: &str, path: &Path, nodes: &Nodes) -> Result<Elements, MeshError> {
    let (node_base, n) = (nodes.base, nodes.vertices.len());
    let mut lines = content_lines(ele_text);
    let (hl, h) = header_line(&mut lines, ele_text, path, "the header 'm 4 nattr'")?;
    let (m, npt, eattr) = parse_ele_header(&h, path, hl)?;
    let per_ele = 1 + npt + eattr.min(1 << 16);
    let mut connectivity = Vec::with_capacity(m.saturating_mul(4).min(1 << 22));
    let mut regions: Vec<u64> = Vec::new();
    let mut region_of: HashMap<u64, usize> = HashMap::new();
    let mut element_material = Vec::with_capacity(m.min(1 << 20));
    let mut ele_base = 0;
    for k in 0..m {
        let (ln, t) = entry_line(&mut lines, ele_text, path, (m, "tetrahedra", hl), k)?;
        tokens_count(
            path,
            ln,
            &t,
            per_ele,
            "index, 4 node indices and the attributes as in the header",
        )?;
        check_running_index(path, ln, t.first().copied().unwrap_or(""), k, &mut ele_base)?;
        for tok in t.iter().skip(1).take(4) {
            connectivity.push(parse_index(tok, node_base, n, path, ln, "a node index")?);
        }
        let mut mat = 0;
        if eattr > 0 {
            let a = parse_f64(
                t.get(5).copied().unwrap_or(""),
                path,
                ln,
                "a region attribute",
            )?;
            mat = region_index(a, &mut regions, &mut region_of);
        }
        element_material.push(mat);
    }
    expect_end(&mut lines, path, (m, "tetrahedra", hl))?;
    Ok(Elements {
        connectivity,
        element_material,
        regions,
    })
}

/// One material per region (named `region<attribute>`), or `material` alone when the
/// file has no region attribute.
fn region_materials(regions: &[u64], material: &Material) -> Vec<Material> {
    if regions.is_empty() {
        vec![material.clone()]
    } else {
        regions
            .iter()
            .map(|&bits| {
                let mut mat = material.clone();
                mat.name = format!("region{}", f64::from_bits(bits));
                mat
            })
            .collect()
    }
}

/// Flips every tetrahedron when all of them are negatively oriented (TetGen's files
/// are consistent one way or the other); a mixed mesh is left for the checks to report.
fn orient_consistently(vertices: &[Point3<f64>], connectivity: &mut [usize]) {
    let volume = |c: &[usize]| -> f64 {
        let g = |i: usize| {
            c.get(i)
                .and_then(|&v| vertices.get(v))
                .copied()
                .unwrap_or_else(Point3::origin)
        };
        tet_signed_volume(&g(0), &g(1), &g(2), &g(3))
    };
    let all_negative =
        !connectivity.is_empty() && connectivity.chunks_exact(4).all(|c| volume(c) < 0.0);
    if all_negative {
        for c in connectivity.chunks_exact_mut(4) {
            c.swap(1, 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::assert_at_line;

    fn mat() -> Material {
        Material::new("m", 1000.0, 1e6, 0.3)
    }

    const NODE0: &str = "# cube corner\n5 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 1 1 1\n";

    #[test]
    fn zero_based_positive() {
        let ele = "2 4 0\n0 0 1 2 3\n1 1 2 3 4 # positive? \n";
        let m = parse_tetgen(NODE0, Path::new("a.node"), ele, Path::new("a.ele"), &mat());
        let m = m.unwrap();
        assert_eq!(m.num_elements(), 2);
        assert_eq!(m.element(0), &[0, 1, 2, 3]);
    }

    #[test]
    fn one_based_negative_with_regions_is_flipped() {
        let node = "4 3 1 1\n1 0 0 0 7 1\n2 1 0 0 7 1\n3 0 1 0 7 1\n4 0 0 1 7 1\n5 1 1 1 7 0\n";
        let node = node.replacen("4 3 1 1", "5 3 1 1", 1);
        let ele = "2 4 1\n1 1 3 2 4 1\n2 2 3 5 4 2\n";
        let m = parse_tetgen(&node, Path::new("b.node"), ele, Path::new("b.ele"), &mat()).unwrap();
        assert_eq!(m.element(0), &[0, 1, 2, 3]);
        assert!(m.element_defects().is_empty());
        assert_eq!(m.materials.len(), 2);
        assert_eq!(m.materials[0].name, "region1");
        assert_eq!(m.materials[1].name, "region2");
        assert_eq!(m.element_material, vec![0, 1]);
    }

    #[test]
    fn errors() {
        let (np, ep) = (Path::new("c.node"), Path::new("c.ele"));
        let e = parse_tetgen(NODE0, np, "1 10 0\n0 0 1 2 3 4 4 4 4 4 4\n", ep, &mat()).unwrap_err();
        assert!(matches!(e, MeshError::Unsupported { .. }));
        let e = parse_tetgen(NODE0, np, "1 4 0\n0 0 1 2 5\n", ep, &mat()).unwrap_err();
        assert!(matches!(
            e,
            MeshError::IndexOutOfRange {
                index: 5,
                count: 5,
                ..
            }
        ));
        assert_at_line(&e, 2);
        let e = parse_tetgen(NODE0, np, "2 4 0\n0 0 1 2 3\n", ep, &mat()).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 3);
        let e = parse_tetgen(
            &NODE0.replace("2 0 1 0", "2 0 inf 0"),
            np,
            "1 4 0\n0 0 1 2 3\n",
            ep,
            &mat(),
        )
        .unwrap_err();
        assert!(matches!(e, MeshError::NonFinite { .. }));
        assert_at_line(&e, 5);
        assert!(e.to_string().contains("c.node"));
        let e = parse_tetgen(
            NODE0,
            np,
            "4611686018427387904 4 0\n0 0 1 2 3\n",
            ep,
            &mat(),
        )
        .unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
    }
}
