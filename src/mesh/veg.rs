//! Vega FEM `.veg` volumetric meshes (reader and writer).
//!
//! Hand-written because the project requires typed [`MeshError`]s with the file and the
//! 1-based line of every problem (and no crate reads `.veg`). Grammar, as read by Vega's
//! `VolumetricMesh::loadFromAscii`:
//!
//! ```text
//! file      := (comment | blank | section)*
//! comment   := "#" ...                         (a line whose first non-blank is '#')
//! section   := vertices | elements | material | set | region | include
//! vertices  := "*VERTICES" NL  n [3 [0 [0]]] NL  (index x y z NL){n}
//! elements  := "*ELEMENTS" NL  ("TET" | "CUBIC") NL  m k [0] NL  (index v1 .. vk NL){m}
//!                                              (k = 4 for TET, 8 for CUBIC)
//! material  := "*MATERIAL" name NL  "ENU," density "," E "," nu NL
//! set       := "*SET" name NL  (element-index ("," | blank)* NL)*
//!                                              (ends at a blank line or the next '*')
//! region    := "*REGION" NL  setName "," materialName NL
//! include   := "*INCLUDE" filename NL         (relative to the including file)
//! ```
//!
//! Numbers on data lines may be separated by blanks, tabs or commas. Indices are 1-based
//! (as Vega, a vertex or element list whose first index is 0 is read as 0-based) and must
//! be consecutive. The set `allElements` is implicit. Names have their blanks removed, as
//! Vega does. The element node order is Vega's, kept as is (see [`super::volume`]).
//! `*INCLUDE`d text is read in place; errors inside it name the included file and its
//! line; include cycles are errors.
//!
//! Materials: every element must get one. Regions are applied in file order (a later
//! region overrides an earlier one for the elements they share). A file without
//! `*REGION` but with exactly one material gives it to all elements; otherwise an element
//! no region covers is `MissingMaterial` (Vega would silently use a default material).
//! Only Vega's isotropic `ENU` material is supported; `ORTHOTROPIC*` and `MOONEYRIVLIN`
//! are `Unsupported`.
//!
//! Element types: Vega accepts `TET` and `CUBIC` (by prefix: it would also read `TETS`);
//! this reader accepts exactly `TET` and `CUBIC`.
//!
//! The reader does not reject inverted or degenerate elements (`haptics inspect` reports
//! them); [`check_elements`] does, for the finite element stage.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use nalgebra::Point3;

use super::error::{excerpt, Location, MeshError};
use super::text::{
    as_utf8, numbered_lines, parse_f64, parse_i64, parse_index, parse_usize, read_bytes,
    write_bytes,
};
use super::volume::{ElementKind, Material, VolumeMesh};

/// Deepest `*INCLUDE` nesting accepted.
const MAX_INCLUDE_DEPTH: usize = 32;

/// One line of the flattened (include-expanded) input.
#[derive(Clone, Copy)]
struct Line<'a> {
    path: &'a Path,
    no: usize,
    text: &'a str,
}

impl<'a> Line<'a> {
    fn loc(&self) -> Location {
        Location::Line(self.no)
    }
    fn is_blank(&self) -> bool {
        self.text.trim().is_empty()
    }
    fn is_comment(&self) -> bool {
        self.text.trim_start().starts_with('#')
    }
    fn is_section(&self) -> bool {
        self.text.trim_start().starts_with('*')
    }
    fn syntax(&self, expected: impl Into<String>) -> MeshError {
        MeshError::syntax(self.path, self.loc(), expected, excerpt(self.text))
    }
    /// Tokens separated by blanks, tabs or commas.
    fn tokens(&self) -> impl Iterator<Item = &'a str> {
        self.text
            .split(|c: char| c == ',' || c.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
    }
}

/// Reads a `.veg` file (see the module documentation).
pub fn read_veg(path: &Path) -> Result<VolumeMesh, MeshError> {
    let mut sources: Vec<(PathBuf, String)> = Vec::new();
    let mut spans: Vec<(usize, usize, usize, usize)> = Vec::new(); // source, line no, start, end
    let mut stack: Vec<PathBuf> = Vec::new();
    load(path, &mut stack, &mut sources, &mut spans)?;
    let lines: Vec<Line> = spans
        .iter()
        .filter_map(|&(s, no, a, b)| {
            let (p, text) = sources.get(s)?;
            Some(Line {
                path: p.as_path(),
                no,
                text: text.get(a..b)?,
            })
        })
        .collect();
    parse_lines(&lines, path)
}

/// Parses `.veg` text that has no `*INCLUDE`s (an `*INCLUDE` is an `Unsupported` error
/// here); `path` is only used in error messages.
pub fn parse_veg(text: &str, path: &Path) -> Result<VolumeMesh, MeshError> {
    let lines: Vec<Line> = numbered_lines(text)
        .map(|(no, text)| Line { path, no, text })
        .collect();
    parse_lines(&lines, path)
}

fn include_target(text: &str) -> Option<&str> {
    text.trim_start().strip_prefix("*INCLUDE").map(str::trim)
}

/// Reads `path` and, recursively, the files it includes, recording every line in order.
fn load(
    path: &Path,
    stack: &mut Vec<PathBuf>,
    sources: &mut Vec<(PathBuf, String)>,
    spans: &mut Vec<(usize, usize, usize, usize)>,
) -> Result<(), MeshError> {
    let bytes = read_bytes(path)?;
    let text = as_utf8(&bytes, path)?.to_string();
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    stack.push(canonical);
    let me = sources.len();
    sources.push((path.to_path_buf(), text));
    let base = sources.get(me).map(|s| s.1.as_ptr() as usize).unwrap_or(0);
    let mut includes: Vec<(usize, usize, PathBuf)> = Vec::new(); // (position in own lines, line no, target)
    let mut own: Vec<(usize, usize, usize, usize)> = Vec::new();
    if let Some((_, text)) = sources.get(me) {
        for (no, line) in numbered_lines(text) {
            let start = line.as_ptr() as usize - base;
            if let Some(target) = include_target(line) {
                if target.is_empty() {
                    return Err(MeshError::syntax(
                        path,
                        Location::Line(no),
                        "a file name after *INCLUDE",
                        "nothing",
                    ));
                }
                let dir = path.parent().unwrap_or(Path::new(""));
                includes.push((own.len(), no, dir.join(target)));
                continue;
            }
            own.push((me, no, start, start + line.len()));
        }
    }
    let mut next = 0;
    for (pos, no, target) in includes {
        spans.extend(own.get(next..pos).unwrap_or(&[]).iter().copied());
        next = pos;
        let canonical = std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
        if stack.contains(&canonical) || stack.len() >= MAX_INCLUDE_DEPTH {
            let chain: Vec<String> = stack.iter().map(|p| p.display().to_string()).collect();
            return Err(MeshError::syntax(
                path,
                Location::Line(no),
                format!(
                    "an *INCLUDE that does not form a cycle (at most {MAX_INCLUDE_DEPTH} deep)"
                ),
                format!("{} -> {}", chain.join(" -> "), canonical.display()),
            ));
        }
        load(&target, stack, sources, spans)?;
    }
    spans.extend(own.get(next..).unwrap_or(&[]).iter().copied());
    stack.pop();
    Ok(())
}

/// A cursor over the flattened lines.
struct Cursor<'l, 'a> {
    lines: &'l [Line<'a>],
    pos: usize,
    top: &'a Path,
}

impl<'l, 'a> Cursor<'l, 'a> {
    /// The next line that is neither blank nor a comment, without consuming it.
    fn peek_content(&mut self) -> Option<Line<'a>> {
        while let Some(l) = self.lines.get(self.pos) {
            if l.is_blank() || l.is_comment() {
                self.pos += 1;
            } else {
                return Some(*l);
            }
        }
        None
    }

    fn next_content(&mut self) -> Option<Line<'a>> {
        let l = self.peek_content()?;
        self.pos += 1;
        Some(l)
    }

    /// The next content line, which must be data (not a section): `Truncated` at the end
    /// of input or at a section line.
    fn data_line(&mut self, expected: &str) -> Result<Line<'a>, MeshError> {
        match self.peek_content() {
            Some(l) if !l.is_section() => {
                self.pos += 1;
                Ok(l)
            }
            Some(l) => Err(MeshError::truncated(l.path, l.loc(), expected)),
            None => Err(self.at_end(expected)),
        }
    }

    fn at_end(&self, expected: &str) -> MeshError {
        match self.lines.last() {
            Some(l) => MeshError::truncated(l.path, Location::Line(l.no + 1), expected),
            None => MeshError::truncated(self.top, Location::Line(1), expected),
        }
    }

    /// After a counted list, the next content line must start a section.
    fn expect_section_after(&mut self, what: &str) -> Result<(), MeshError> {
        match self.peek_content() {
            Some(l) if !l.is_section() => Err(l.syntax(format!("a '*' section after {what}"))),
            _ => Ok(()),
        }
    }
}

/// The `*ELEMENTS` section: the element type, the 0-based connectivity and the first
/// element index (0 or 1, for the indices in `*SET`s).
struct Elements {
    kind: ElementKind,
    connectivity: Vec<usize>,
    base: usize,
}

impl Elements {
    fn count(&self) -> usize {
        self.connectivity.len() / self.kind.nodes()
    }
}

fn name_without_blanks(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// What a line that is not a known section header is expected to be.
const SECTION: &str = "a section (*VERTICES, *ELEMENTS, *MATERIAL, *SET, *REGION, *INCLUDE)";

/// The sections read so far, before sets are resolved and materials assigned.
struct Sections<'a> {
    vertices: Option<Vec<Point3<f64>>>,
    /// The first vertex index (0 or 1), for the element connectivity.
    vertex_base: usize,
    elements: Option<Elements>,
    materials: Vec<Material>,
    material_index: HashMap<String, usize>,
    /// Set name -> its element indices as written (1-based unless the elements are
    /// 0-based), each with its line.
    sets: HashMap<String, Vec<(i64, Line<'a>)>>,
    /// `(set, material, line)` in file order.
    regions: Vec<(String, String, Line<'a>)>,
}

/// Parses the include-expanded lines: reads every section, then resolves the sets and
/// gives every element its material.
fn parse_lines(lines: &[Line], top: &Path) -> Result<VolumeMesh, MeshError> {
    let mut cur = Cursor { lines, pos: 0, top };
    let s = read_sections(&mut cur)?;
    let vertices = s
        .vertices
        .ok_or_else(|| cur.at_end("a *VERTICES section"))?;
    let el = s
        .elements
        .ok_or_else(|| cur.at_end("an *ELEMENTS section"))?;
    let sets = resolve_sets(&s.sets, &el)?;
    let element_material = assign_materials(
        &s.regions,
        &sets,
        &s.material_index,
        s.materials.len(),
        el.count(),
        top,
    )?;
    Ok(VolumeMesh {
        vertices,
        kind: el.kind,
        connectivity: el.connectivity,
        materials: s.materials,
        element_material,
    })
}

/// Reads every section up to the end of the input, dispatching on the section keyword
/// (`*INCLUDE`s were expanded by [`load`]; one left here, from [`parse_veg`], is an
/// unknown section).
fn read_sections<'a>(cur: &mut Cursor<'_, 'a>) -> Result<Sections<'a>, MeshError> {
    let mut s = Sections {
        vertices: None,
        vertex_base: 1,
        elements: None,
        materials: Vec::new(),
        material_index: HashMap::new(),
        sets: HashMap::new(),
        regions: Vec::new(),
    };
    while let Some(l) = cur.next_content() {
        let (keyword, rest) = section_header(&l)?;
        match keyword {
            "*VERTICES" => s.read_vertices(cur, &l)?,
            "*ELEMENTS" => s.read_elements(cur, &l)?,
            "*MATERIAL" => s.read_material(cur, &l, rest)?,
            "*SET" => s.read_set(cur, &l, rest)?,
            "*REGION" => s.regions.push(read_region(cur)?),
            _ => return Err(l.syntax(SECTION)),
        }
    }
    Ok(s)
}

/// The keyword of a section line (`*MATERIAL`) and the rest of the line (its name).
fn section_header<'a>(l: &Line<'a>) -> Result<(&'a str, &'a str), MeshError> {
    if !l.is_section() {
        return Err(l.syntax(SECTION));
    }
    let text = l.text.trim_start();
    let keyword = text
        .split(|c: char| c == ',' || c.is_ascii_whitespace())
        .next()
        .unwrap_or(text);
    let rest = text
        .get(keyword.len()..)
        .unwrap_or("")
        .trim()
        .trim_start_matches(',');
    Ok((keyword, rest))
}

impl<'a> Sections<'a> {
    /// `*VERTICES`: the count line `n 3 0 0`, then n lines `index x y z` with consecutive
    /// indices from 0 or 1.
    fn read_vertices(&mut self, cur: &mut Cursor<'_, 'a>, l: &Line<'a>) -> Result<(), MeshError> {
        if self.vertices.is_some() {
            return Err(l.syntax("only one *VERTICES section"));
        }
        let h = cur.data_line("the vertex count line 'n 3 0 0' after *VERTICES")?;
        let mut t = h.tokens();
        let n = parse_usize(
            t.next().unwrap_or(""),
            h.path,
            h.no,
            "the number of vertices",
        )?;
        if let Some(d) = t.next() {
            if d != "3" {
                return Err(h.syntax("dimension 3 in 'n 3 0 0'"));
            }
        }
        let mut v = Vec::with_capacity(n.min(1 << 20));
        for k in 0..n {
            let expected = format!("{n} vertices as declared on line {} (found {k})", h.no);
            let d = cur.data_line(&expected)?;
            let mut t = d.tokens();
            let idx = parse_i64(t.next().unwrap_or(""), d.path, d.no, "a vertex index")?;
            if k == 0 && (idx == 0 || idx == 1) {
                self.vertex_base = idx as usize;
            } else if idx != (self.vertex_base + k) as i64 {
                return Err(MeshError::syntax(
                    d.path,
                    d.loc(),
                    format!("vertex index {}", self.vertex_base + k),
                    excerpt(&idx.to_string()),
                ));
            }
            let mut c = [0.0; 3];
            for ck in &mut c {
                let tok = t.next().ok_or_else(|| d.syntax("'index x y z'"))?;
                *ck = parse_f64(tok, d.path, d.no, "a vertex coordinate")?;
            }
            if t.next().is_some() {
                return Err(d.syntax("'index x y z' (four numbers)"));
            }
            v.push(Point3::new(c[0], c[1], c[2]));
        }
        cur.expect_section_after(&format!("the {n} vertices declared on line {}", h.no))?;
        self.vertices = Some(v);
        Ok(())
    }

    /// `*ELEMENTS` (after `*VERTICES`): the type line `TET` or `CUBIC`, the count line
    /// `m k 0`, then m lines `index v1 .. vk` with consecutive indices from 0 or 1.
    fn read_elements(&mut self, cur: &mut Cursor<'_, 'a>, l: &Line<'a>) -> Result<(), MeshError> {
        let Some(verts) = self.vertices.as_ref() else {
            return Err(l.syntax("*VERTICES before *ELEMENTS"));
        };
        if self.elements.is_some() {
            return Err(l.syntax("only one *ELEMENTS section"));
        }
        let tl = cur.data_line("the element type (TET or CUBIC) after *ELEMENTS")?;
        let kind = match tl.text.trim() {
            "TET" => ElementKind::Tet,
            "CUBIC" => ElementKind::Hex,
            _ => return Err(tl.syntax("element type TET or CUBIC")),
        };
        let h = cur.data_line("the element count line 'm k 0'")?;
        let mut t = h.tokens();
        let m = parse_usize(
            t.next().unwrap_or(""),
            h.path,
            h.no,
            "the number of elements",
        )?;
        let k = parse_usize(
            t.next().unwrap_or(""),
            h.path,
            h.no,
            "the number of nodes per element",
        )?;
        if k != kind.nodes() {
            return Err(h.syntax(format!(
                "{} nodes per element for {}",
                kind.nodes(),
                tl.text.trim()
            )));
        }
        let mut conn = Vec::with_capacity(m.saturating_mul(k).min(1 << 22));
        let mut base = 1;
        for e in 0..m {
            let expected = format!("{m} elements as declared on line {} (found {e})", h.no);
            let d = cur.data_line(&expected)?;
            let mut t = d.tokens();
            let idx = parse_i64(t.next().unwrap_or(""), d.path, d.no, "an element index")?;
            if e == 0 && (idx == 0 || idx == 1) {
                base = idx as usize;
            } else if idx != (base + e) as i64 {
                return Err(MeshError::syntax(
                    d.path,
                    d.loc(),
                    format!("element index {}", base + e),
                    excerpt(&idx.to_string()),
                ));
            }
            for _ in 0..k {
                let tok = t
                    .next()
                    .ok_or_else(|| d.syntax(format!("'index' and {k} vertex indices")))?;
                conn.push(parse_index(
                    tok,
                    self.vertex_base,
                    verts.len(),
                    d.path,
                    d.no,
                    "a vertex index",
                )?);
            }
            if t.next().is_some() {
                return Err(d.syntax(format!("'index' and {k} vertex indices (no more)")));
            }
        }
        cur.expect_section_after(&format!("the {m} elements declared on line {}", h.no))?;
        self.elements = Some(Elements {
            kind,
            connectivity: conn,
            base,
        });
        Ok(())
    }

    /// `*MATERIAL name`, then `ENU, density, E, nu` (Vega's other material types are
    /// `Unsupported`).
    fn read_material(
        &mut self,
        cur: &mut Cursor<'_, 'a>,
        l: &Line<'a>,
        rest: &str,
    ) -> Result<(), MeshError> {
        let name = name_without_blanks(rest);
        if name.is_empty() {
            return Err(l.syntax("'*MATERIAL name'"));
        }
        if self.material_index.contains_key(&name) {
            return Err(l.syntax("a material name not defined before"));
        }
        let d = cur.data_line(&format!(
            "the parameters of material '{name}' ('ENU, density, E, nu')"
        ))?;
        let fields: Vec<&str> = d.text.split(',').map(str::trim).collect();
        let ty = fields.first().copied().unwrap_or("");
        if ty == "ENU" {
            if fields.len() != 4 {
                return Err(d.syntax("'ENU, density, E, nu'"));
            }
            let mut p = [0.0; 3];
            for (pk, f) in p.iter_mut().zip(fields.iter().skip(1)) {
                *pk = parse_f64(f, d.path, d.no, "a material parameter")?;
            }
            let mat = Material::new(&name, p[0], p[1], p[2]);
            if let Err(reason) = mat.validate() {
                return Err(MeshError::InvalidMaterial {
                    path: d.path.to_path_buf(),
                    location: d.loc(),
                    name,
                    reason,
                });
            }
            self.material_index.insert(name, self.materials.len());
            self.materials.push(mat);
            Ok(())
        } else if ty.starts_with("ORTHOTROPIC") || ty.starts_with("MOONEYRIVLIN") {
            Err(MeshError::Unsupported {
                path: d.path.to_path_buf(),
                what: format!(
                    "line {}: material type {ty} of material '{name}' (only Vega's isotropic ENU materials are supported)",
                    d.no
                ),
            })
        } else {
            Err(d.syntax("a material type (ENU; ORTHOTROPIC and MOONEYRIVLIN are not supported)"))
        }
    }

    /// `*SET name`, then element indices separated by blanks or commas, up to a blank
    /// line or the next section.
    fn read_set(
        &mut self,
        cur: &mut Cursor<'_, 'a>,
        l: &Line<'a>,
        rest: &str,
    ) -> Result<(), MeshError> {
        let name = name_without_blanks(rest);
        if name.is_empty() {
            return Err(l.syntax("'*SET name'"));
        }
        if name == "allElements" || self.sets.contains_key(&name) {
            return Err(l.syntax("a set name not defined before (allElements is implicit)"));
        }
        let mut members = Vec::new();
        while let Some(d) = cur.lines.get(cur.pos) {
            if d.is_blank() || d.is_section() {
                if d.is_blank() {
                    cur.pos += 1;
                }
                break;
            }
            cur.pos += 1;
            if d.is_comment() {
                continue;
            }
            for tok in d.tokens() {
                members.push((parse_i64(tok, d.path, d.no, "an element index")?, *d));
            }
        }
        self.sets.insert(name, members);
        Ok(())
    }
}

/// `*REGION`, then `setName, materialName`; returns both names and the line.
fn read_region<'a>(cur: &mut Cursor<'_, 'a>) -> Result<(String, String, Line<'a>), MeshError> {
    let d = cur.data_line("a line 'setName, materialName' after *REGION")?;
    let Some((set, mat)) = d.text.split_once(',') else {
        return Err(d.syntax("'setName, materialName'"));
    };
    let (set, mat) = (name_without_blanks(set), name_without_blanks(mat));
    if set.is_empty() || mat.is_empty() {
        return Err(d.syntax("'setName, materialName'"));
    }
    Ok((set, mat, d))
}

/// The sets as 0-based element indices; an index outside the elements is an error at
/// its line.
fn resolve_sets<'s>(
    sets: &'s HashMap<String, Vec<(i64, Line)>>,
    el: &Elements,
) -> Result<HashMap<&'s str, Vec<usize>>, MeshError> {
    let nel = el.count();
    let mut resolved = HashMap::new();
    for (name, members) in sets {
        let mut v = Vec::with_capacity(members.len());
        for (i, d) in members {
            let z = i.checked_sub(el.base as i64).unwrap_or(-1);
            if z < 0 || z as u64 >= nel as u64 {
                return Err(MeshError::syntax(
                    d.path,
                    d.loc(),
                    format!(
                        "an element index of set '{name}' between {} and {}",
                        el.base,
                        el.base + nel.saturating_sub(1)
                    ),
                    excerpt(&i.to_string()),
                ));
            }
            v.push(z as usize);
        }
        resolved.insert(name.as_str(), v);
    }
    Ok(resolved)
}

/// The material of each of the `nel` elements: the regions in file order (a later one
/// overrides), or the only material when there are no regions. An undefined set or
/// material is an error at its region's line; an element left without a material is
/// `MissingMaterial`.
fn assign_materials(
    regions: &[(String, String, Line)],
    sets: &HashMap<&str, Vec<usize>>,
    material_index: &HashMap<String, usize>,
    num_materials: usize,
    nel: usize,
    top: &Path,
) -> Result<Vec<usize>, MeshError> {
    let mut assigned: Vec<Option<usize>> = vec![None; nel];
    if regions.is_empty() && num_materials == 1 {
        assigned.iter_mut().for_each(|a| *a = Some(0));
    }
    for (set, mat, d) in regions {
        let undefined = |what: &'static str, name: &str| MeshError::Undefined {
            path: d.path.to_path_buf(),
            location: d.loc(),
            what,
            name: name.to_string(),
        };
        let &m = material_index
            .get(mat)
            .ok_or_else(|| undefined("material", mat))?;
        if set == "allElements" {
            assigned.iter_mut().for_each(|a| *a = Some(m));
        } else {
            let members = sets
                .get(set.as_str())
                .ok_or_else(|| undefined("set", set))?;
            for &e in members {
                if let Some(a) = assigned.get_mut(e) {
                    *a = Some(m);
                }
            }
        }
    }
    let missing: Vec<usize> = (0..nel)
        .filter(|&e| assigned.get(e).is_some_and(|a| a.is_none()))
        .collect();
    if let Some(&first) = missing.first() {
        return Err(MeshError::MissingMaterial {
            path: top.to_path_buf(),
            count: missing.len(),
            first,
            first_one_based: first + 1,
        });
    }
    Ok(assigned.into_iter().map(|a| a.unwrap_or(0)).collect())
}

/// The first inverted or degenerate element of `mesh` (by
/// [`VolumeMesh::element_defects`]) as a `BadElement` error; `path` names the mesh file.
pub fn check_elements(mesh: &VolumeMesh, path: &Path) -> Result<(), MeshError> {
    match mesh.element_defects().first() {
        Some(d) => Err(MeshError::BadElement {
            path: path.to_path_buf(),
            index: d.element,
            one_based: d.element + 1,
            kind: d.kind,
            volume: d.measure,
        }),
        None => Ok(()),
    }
}

fn writable_name(path: &Path, what: &str, name: &str) -> Result<(), MeshError> {
    if name.is_empty()
        || name.contains(|c: char| c.is_whitespace() || c == ',')
        || name == "allElements"
    {
        return Err(MeshError::Unsupported {
            path: path.to_path_buf(),
            what: format!("{what} name '{name}' cannot be written to .veg (empty, blank, comma or 'allElements')"),
        });
    }
    Ok(())
}

/// Checks that `mesh` can be written: its node indices are in range, each element has a
/// valid material, and every material name is writable.
fn check_writable(path: &Path, mesh: &VolumeMesh) -> Result<(), MeshError> {
    let n = mesh.vertices.len();
    let nel = mesh.num_elements();
    if let Some(&bad) = mesh.connectivity.iter().find(|&&v| v >= n) {
        return Err(MeshError::IndexOutOfRange {
            path: path.to_path_buf(),
            location: Location::File,
            index: bad as i64,
            count: n,
        });
    }
    if mesh.element_material.len() != nel
        || mesh
            .element_material
            .iter()
            .any(|&m| m >= mesh.materials.len())
    {
        return Err(MeshError::Unsupported {
            path: path.to_path_buf(),
            what: "a mesh whose element_material does not match its elements and materials".into(),
        });
    }
    for m in &mesh.materials {
        writable_name(path, "material", &m.name)?;
    }
    Ok(())
}

/// Appends the file header and the `*VERTICES` section (1-based indices).
fn write_vertices(s: &mut String, mesh: &VolumeMesh) {
    let n = mesh.vertices.len();
    let nel = mesh.num_elements();
    let _ = writeln!(
        s,
        "# Vega mesh file.\n# {n} vertices, {nel} elements\n\n*VERTICES\n{n} 3 0 0"
    );
    for (i, p) in mesh.vertices.iter().enumerate() {
        let _ = writeln!(s, "{} {} {} {}", i + 1, p.x, p.y, p.z);
    }
}

/// Appends the `*ELEMENTS` section (1-based element and node indices).
fn write_elements(s: &mut String, mesh: &VolumeMesh) {
    let k = mesh.kind.nodes();
    let nel = mesh.num_elements();
    let ty = match mesh.kind {
        ElementKind::Tet => "TET",
        ElementKind::Hex => "CUBIC",
    };
    let _ = writeln!(s, "\n*ELEMENTS\n{ty}\n{nel} {k} 0");
    for (e, el) in mesh.elements().enumerate() {
        let _ = write!(s, "{}", e + 1);
        for v in el {
            let _ = write!(s, " {}", v + 1);
        }
        s.push('\n');
    }
}

/// Appends one `*MATERIAL` section per material.
fn write_materials(s: &mut String, mesh: &VolumeMesh) {
    for m in &mesh.materials {
        let _ = writeln!(
            s,
            "\n*MATERIAL {}\nENU, {}, {}, {}",
            m.name, m.density, m.youngs_modulus, m.poisson_ratio
        );
    }
}

/// Appends the `*SET` of elements using material `mi` (`<material>_elements`), eight
/// 1-based indices a line.
fn write_material_set(s: &mut String, mesh: &VolumeMesh, mi: usize) {
    let Some(m) = mesh.materials.get(mi) else {
        return;
    };
    let _ = writeln!(s, "\n*SET {}_elements", m.name);
    let members: Vec<usize> = (0..mesh.num_elements())
        .filter(|&e| mesh.element_material.get(e) == Some(&mi))
        .collect();
    for chunk in members.chunks(8) {
        for e in chunk {
            let _ = write!(s, "{}, ", e + 1);
        }
        s.push('\n');
    }
}

/// Appends the `*REGION`s: `allElements` when elements use one material, otherwise a
/// `*SET` and a `*REGION` per used material.
fn write_regions(s: &mut String, mesh: &VolumeMesh) {
    let used: Vec<usize> = (0..mesh.materials.len())
        .filter(|m| mesh.element_material.contains(m))
        .collect();
    if let [only] = used.as_slice() {
        if let Some(m) = mesh.materials.get(*only) {
            let _ = writeln!(s, "\n*REGION\nallElements, {}", m.name);
        }
    } else {
        for &mi in &used {
            write_material_set(s, mesh, mi);
        }
        for &mi in &used {
            if let Some(m) = mesh.materials.get(mi) {
                let _ = writeln!(s, "\n*REGION\n{0}_elements, {0}", m.name);
            }
        }
    }
}

/// Writes `mesh` as `.veg`: one `*MATERIAL` per material and, when elements use more than
/// one material, a `*SET` per material (`<material>_elements`) and a `*REGION` for each.
/// Numbers use shortest round-trip formatting, so [`read_veg`] gives the mesh back exactly.
pub fn write_veg(path: &Path, mesh: &VolumeMesh) -> Result<(), MeshError> {
    check_writable(path, mesh)?;
    let (n, nel) = (mesh.vertices.len(), mesh.num_elements());
    let mut s = String::with_capacity(60 * (n + nel) + 256);
    write_vertices(&mut s, mesh);
    write_elements(&mut s, mesh);
    write_materials(&mut s, mesh);
    write_regions(&mut s, mesh);
    write_bytes(path, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::error::{assert_at_line, ElementDefectKind};

    const TET: &str = "# test\n*VERTICES\n4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n\n\
                       *ELEMENTS\nTET\n1 4 0\n1 1 2 3 4\n\n*MATERIAL M\nENU, 1000, 1e6, 0.3\n\n*REGION\nallElements, M\n";

    fn p() -> &'static Path {
        Path::new("t.veg")
    }

    #[test]
    fn reads_minimal_tet() {
        let m = parse_veg(TET, p()).unwrap();
        assert_eq!(m.vertices.len(), 4);
        assert_eq!(m.kind, ElementKind::Tet);
        assert_eq!(m.connectivity, vec![0, 1, 2, 3]);
        assert_eq!(m.materials, vec![Material::new("M", 1000.0, 1e6, 0.3)]);
        assert_eq!(m.element_material, vec![0]);
        check_elements(&m, p()).unwrap();
    }

    #[test]
    fn errors_have_lines_and_variants() {
        let e = parse_veg(&TET.replace("2 1 0 0", "2 1 abc 0"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 5);
        let e = parse_veg(&TET.replace("2 1 0 0", "2 1 nan 0"), p()).unwrap_err();
        assert!(matches!(e, MeshError::NonFinite { .. }), "{e}");
        assert_at_line(&e, 5);
        let e = parse_veg(&TET.replace("1 1 2 3 4", "1 1 2 3 5"), p()).unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::IndexOutOfRange {
                    index: 5,
                    count: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert_at_line(&e, 12);
        let e = parse_veg(&TET.replace("1 4 0", "2 4 0"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        assert_at_line(&e, 14);
        let e = parse_veg(&TET.replace("allElements, M", "allElements, N"), p()).unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::Undefined {
                    what: "material",
                    ..
                }
            ),
            "{e}"
        );
        assert_at_line(&e, 18);
        let e = parse_veg(&TET.replace("allElements, M", "S, M"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Undefined { what: "set", .. }), "{e}");
        let e = parse_veg(&TET.replace("0.3", "0.5"), p()).unwrap_err();
        assert!(matches!(e, MeshError::InvalidMaterial { .. }), "{e}");
        assert_at_line(&e, 15);
        let e = parse_veg(
            &TET.replace("ENU, 1000, 1e6, 0.3", "MOONEYRIVLIN, 1000, 1, 1, 1"),
            p(),
        )
        .unwrap_err();
        assert!(matches!(e, MeshError::Unsupported { .. }), "{e}");
        let e = parse_veg(&TET.replace("TET", "CUBIC"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 11);
        let two = TET.replace("*REGION\nallElements, M\n", "*MATERIAL N\nENU, 1, 1, 0\n");
        let e = parse_veg(&two, p()).unwrap_err();
        assert!(
            matches!(
                e,
                MeshError::MissingMaterial {
                    count: 1,
                    first: 0,
                    first_one_based: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("t.veg"));
    }

    #[test]
    fn huge_declared_counts_are_errors_not_panics() {
        let e = parse_veg(&TET.replace("1 4 0", "4611686018427387904 4 0"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
        let e = parse_veg(&TET.replace("4 3 0 0", "18446744073709551615 3 0 0"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
    }

    #[test]
    fn single_material_without_region_and_sets() {
        let m = parse_veg(&TET.replace("*REGION\nallElements, M\n", ""), p()).unwrap();
        assert_eq!(m.element_material, vec![0]);
        let t = TET.replace(
            "*REGION\nallElements, M\n",
            "*MATERIAL N\nENU, 2000, 1e6, 0.3\n*SET s\n1,\n\n*REGION\nallElements, M\n*REGION\ns, N\n",
        );
        let m = parse_veg(&t, p()).unwrap();
        assert_eq!(m.element_material, vec![1]);
        let e = parse_veg(&t.replace("*SET s\n1,", "*SET s\n2,"), p()).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 20);
    }

    #[test]
    fn inverted_elements_are_read_but_checked() {
        let m = parse_veg(&TET.replace("1 1 2 3 4", "1 1 3 2 4"), p()).unwrap();
        let e = check_elements(&m, p()).unwrap_err();
        assert!(matches!(
            e,
            MeshError::BadElement {
                index: 0,
                one_based: 1,
                kind: ElementDefectKind::Inverted,
                ..
            }
        ));
    }

    #[test]
    fn include_in_place_and_cycles() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(
            sub.join("mat.veg"),
            "# m\n*MATERIAL M\nENU, 1000, 1e6, 0.3\n",
        )
        .unwrap();
        let main = dir.path().join("main.veg");
        std::fs::write(
            &main,
            TET.replace(
                "*MATERIAL M\nENU, 1000, 1e6, 0.3\n",
                "*INCLUDE sub/mat.veg\n",
            ),
        )
        .unwrap();
        let m = read_veg(&main).unwrap();
        assert_eq!(m.materials[0].density, 1000.0);
        std::fs::write(sub.join("mat.veg"), "# m\n*MATERIAL M\nENU, -1, 1e6, 0.3\n").unwrap();
        let e = read_veg(&main).unwrap_err();
        match &e {
            MeshError::InvalidMaterial { path, .. } => {
                assert!(path.ends_with("sub/mat.veg"));
                assert_at_line(&e, 3);
            }
            _ => panic!("{e}"),
        }
        std::fs::write(sub.join("mat.veg"), "*INCLUDE ../main.veg\n").unwrap();
        let e = read_veg(&main).unwrap_err();
        assert!(matches!(e, MeshError::Syntax { .. }), "{e}");
        assert_at_line(&e, 1);
        assert!(e.to_string().contains("cycle"), "{e}");
    }

    #[test]
    fn write_read_round_trip_multi_material() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.veg");
        let mut m = parse_veg(TET, p()).unwrap();
        m.vertices.push(Point3::new(1.0 / 3.0, 1.0, 1.0));
        m.connectivity.extend([1, 2, 3, 4]);
        m.materials.push(Material::new("soft", 1100.5, 2.5e5, 0.49));
        m.element_material.push(1);
        write_veg(&path, &m).unwrap();
        assert_eq!(read_veg(&path).unwrap(), m);
        m.element_material = vec![1, 1];
        write_veg(&path, &m).unwrap();
        assert_eq!(read_veg(&path).unwrap(), m);
    }
}
