//! The engine's modules import one another in one direction: no two modules depend on
//! each other, directly or through others, at any level of the tree (two files of one
//! folder, or two top-level modules through any of their files). A module may use its
//! parent and its children freely; what is checked is every pair of siblings, with each
//! file's references lifted to the children of the two modules' lowest common ancestor.
//!
//! The references are read from the source text: the `crate::` and `super::` paths
//! outside comments and outside `#[cfg(test)] mod tests` blocks (tests may reach
//! anywhere). A path names the longest module it starts with.
//!
//! And no source file is longer than 1,200 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`; with `libraries_only`, not a binary's `main.rs` (a
/// crate of its own, which uses the library).
fn rust_files(dir: &Path, libraries_only: bool, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, libraries_only, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !(libraries_only && path.ends_with("main.rs"))
        {
            out.push(path);
        }
    }
}

/// The module a file defines, as its path from the crate root (`[]` for `lib.rs`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file that counts: before its test module, without comment lines.
fn code(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests"))
        {
            break;
        }
        if !t.starts_with("//") {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// The paths that follow each occurrence of `prefix` (`crate::`, `super::`) in `code`,
/// split at `::`.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path: Vec<String> = rest[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        out.push(path);
    }
    out
}

/// The longest module among `modules` that `path` starts with.
fn longest_module(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|m| modules.contains(m))
}

/// For each module, the modules its code refers to.
fn references(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(src, true, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut refs = BTreeMap::new();
    for file in &files {
        let m = module_of(src, file);
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let code = code(&text);
        let parent = m[..m.len().saturating_sub(1)].to_vec();
        let mut to = BTreeSet::new();
        let crate_paths = paths_after(&code, "crate::");
        let super_paths = paths_after(&code, "super::").into_iter().map(|p| {
            let mut full = parent.clone();
            full.extend(p);
            full
        });
        for path in crate_paths.into_iter().chain(super_paths) {
            if let Some(d) = longest_module(&modules, &path) {
                if d != m {
                    to.insert(d);
                }
            }
        }
        refs.insert(m, to);
    }
    refs
}

/// The edges between siblings: each reference from `a` to `b` lifted to the children
/// of their lowest common ancestor (none when one contains the other).
fn sibling_edges(
    refs: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (a, to) in refs {
        for b in to {
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue;
            }
            edges
                .entry(a[..=common].to_vec())
                .or_default()
                .insert(b[..=common].to_vec());
        }
    }
    edges
}

/// A cycle of `edges`, as the modules along it, if there is one.
fn find_cycle(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        done: &mut BTreeSet<Vec<String>>,
        path: &mut Vec<Vec<String>>,
    ) -> Option<Vec<String>> {
        if let Some(k) = path.iter().position(|p| p == n) {
            let mut cycle: Vec<String> = path[k..].iter().map(|m| m.join("::")).collect();
            cycle.push(n.join("::"));
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.clone());
        for next in edges.get(n).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, done, path) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(n.clone());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut done, &mut Vec::new()))
}

/// Each crate of the workspace on its own (between crates, Cargo forbids cycles).
#[test]
fn no_two_modules_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (krate, least) in [("src", 100), ("app/src", 20), ("devices/src", 10)] {
        let refs = references(&root.join(krate));
        assert!(refs.len() >= least, "{krate}: {} modules read", refs.len());
        let edges = sibling_edges(&refs);
        if let Some(cycle) = find_cycle(&edges) {
            panic!("an import cycle in {krate}: {}", cycle.join(" -> "));
        }
    }
}

/// The reader finds what it must: the references of a module to its sibling, through
/// `super::` and `crate::`, and not those in comments or test modules; and a cycle of
/// three siblings is reported.
#[test]
fn the_reader_sees_imports_and_cycles() {
    let text = "use super::bvh::Bvh;\n// crate::plan is only named here\nfn f() { crate::check::path::x(); }\n#[cfg(test)]\nmod tests {\n    use crate::plan;\n}\n";
    let c = code(text);
    let supers = paths_after(&c, "super::");
    let crates = paths_after(&c, "crate::");
    assert_eq!(supers, [vec!["bvh".to_string(), "Bvh".to_string()]]);
    assert_eq!(
        crates,
        [vec![
            "check".to_string(),
            "path".to_string(),
            "x".to_string()
        ]]
    );
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    let refs: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = [
        (m("a::x"), [m("b::y")].into()),
        (m("b::y"), [m("c")].into()),
        (m("c"), [m("a")].into()),
        (m("a"), [m("a::x")].into()),
    ]
    .into();
    let cycle = find_cycle(&sibling_edges(&refs)).expect("a -> b -> c -> a");
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    let without: BTreeMap<_, _> = refs.into_iter().filter(|(k, _)| *k != m("c")).collect();
    assert_eq!(find_cycle(&sibling_edges(&without)), None);
}

/// No source file of the workspace's crates grows past 1,200 lines: a file that long
/// holds more than one concept, and is split by concept instead.
#[test]
fn no_source_file_is_over_1200_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for krate in [
        "src",
        "app/src",
        "devices/src",
        "python/src",
        "tests",
        "app/tests",
    ] {
        rust_files(&root.join(krate), false, &mut files);
    }
    assert!(files.len() > 200, "{} files read", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f)
                .expect("a readable file")
                .lines()
                .count();
            (lines > 1200).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "files over 1,200 lines: {long:?}");
}
