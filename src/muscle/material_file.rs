//! The muscle material file: TOML with the top-level keys `sigma_max`, `lambda_opt`,
//! `mu`, `kappa`, `p1`, `p2`, `lambda_star` (any subset; the rest take the
//! defaults of [`FibreParams::default`]), and an optional `[tendon]` table with the same
//! keys for the tendon group (defaults [`FibreParams::tendon`]). Errors name the file and
//! the line of the offending key.

use std::path::Path;

use super::MuscleError;
use crate::fem::blemker::FibreParams;

/// A parsed and validated material file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialFile {
    /// The muscle group (active).
    pub muscle: FibreParams,
    /// The tendon and aponeurosis group (passive).
    pub tendon: FibreParams,
}

impl Default for MaterialFile {
    fn default() -> Self {
        MaterialFile {
            muscle: FibreParams::default(),
            tendon: FibreParams::tendon(),
        }
    }
}

const KEYS: [&str; 7] = [
    "sigma_max",
    "lambda_opt",
    "mu",
    "kappa",
    "p1",
    "p2",
    "lambda_star",
];

fn slot<'a>(p: &'a mut FibreParams, key: &str) -> Option<&'a mut f64> {
    Some(match key {
        "sigma_max" => &mut p.sigma_max,
        "lambda_opt" => &mut p.lambda_opt,
        "mu" => &mut p.mu,
        "kappa" => &mut p.kappa,
        "p1" => &mut p.p1,
        "p2" => &mut p.p2,
        "lambda_star" => &mut p.lambda_star,
        _ => return None,
    })
}

/// 1-based line of `key = ...` in `text`, inside table `table` (None: top level), or 0.
fn key_line(text: &str, table: Option<&str>, key: &str) -> usize {
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            current = Some(name.trim().to_string());
            continue;
        }
        let in_table = match (table, &current) {
            (None, None) => true,
            (Some(a), Some(b)) => a == b,
            _ => false,
        };
        if in_table {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim() == key {
                    return i + 1;
                }
            }
        }
    }
    0
}

/// Parses a material file's text (`path` names it in errors).
pub(crate) fn parse_material(text: &str, path: &Path) -> Result<MaterialFile, MuscleError> {
    let syntax = |line: usize, message: String| MuscleError::Syntax {
        path: path.to_path_buf(),
        line,
        message,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
            .unwrap_or(0);
        syntax(line, e.message().to_string())
    })?;
    let mut muscle = FibreParams::default();
    let mut tendon = FibreParams::tendon();
    let fill = |params: &mut FibreParams,
                entries: &toml::Table,
                section: Option<&str>|
     -> Result<(), MuscleError> {
        for (key, value) in entries {
            let line = key_line(text, section, key);
            let Some(dst) = slot(params, key) else {
                return Err(syntax(
                    line,
                    format!(
                        "unknown key `{key}`: expected one of {}{}",
                        KEYS.join(", "),
                        if section.is_none() { ", [tendon]" } else { "" }
                    ),
                ));
            };
            *dst = match value {
                toml::Value::Float(v) => *v,
                toml::Value::Integer(v) => *v as f64,
                other => {
                    return Err(syntax(
                        line,
                        format!("`{key}` must be a number, found {}", other.type_str()),
                    ))
                }
            };
        }
        Ok(())
    };
    let mut top = table.clone();
    if let Some(t) = top.remove("tendon") {
        match t {
            toml::Value::Table(t) => fill(&mut tendon, &t, Some("tendon"))?,
            _ => {
                return Err(syntax(
                    key_line(text, None, "tendon"),
                    "`tendon` must be a table".into(),
                ))
            }
        }
    }
    fill(&mut muscle, &top, None)?;
    for (params, table) in [(&muscle, None), (&tendon, Some("tendon"))] {
        params.validate().map_err(|source| MuscleError::Param {
            path: path.to_path_buf(),
            line: key_line(text, table, source.key),
            source,
        })?;
    }
    Ok(MaterialFile { muscle, tendon })
}

/// Reads and validates a material file.
pub fn read_material(path: &Path) -> Result<MaterialFile, MuscleError> {
    let text = std::fs::read_to_string(path).map_err(|source| MuscleError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_material(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MaterialFile, MuscleError> {
        parse_material(text, Path::new("m.toml"))
    }

    #[test]
    fn subsets_take_defaults() {
        let m = parse("sigma_max = 2.0e5\nlambda_opt = 1.1\n").unwrap();
        assert_eq!(m.muscle.sigma_max, 2.0e5);
        assert_eq!(m.muscle.lambda_opt, 1.1);
        assert_eq!(m.muscle.mu, 1.0e3);
        assert_eq!(m.tendon, FibreParams::tendon());
        assert_eq!(parse("").unwrap(), MaterialFile::default());
        let m = parse("mu = 2e3\n[tendon]\nmu = 1e5\n").unwrap();
        assert_eq!((m.muscle.mu, m.tendon.mu), (2e3, 1e5));
    }

    #[test]
    fn bad_values_name_the_line_and_key() {
        let e = parse("sigma_max = 3e5\nmu = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.toml:2") && e.contains("`mu`") && e.contains("> 0"),
            "{e}"
        );
        let e = parse("kappa = nan\n").unwrap_err().to_string();
        assert!(e.contains("m.toml:1") && e.contains("kappa"), "{e}");
        let e = parse("[tendon]\np2 = -3\n").unwrap_err().to_string();
        assert!(e.contains("m.toml:2") && e.contains("p2"), "{e}");
        let e = parse("lambda_star = 0.8\n").unwrap_err().to_string();
        assert!(e.contains("lambda_star") && e.contains("lambda_opt"), "{e}");
        let e = parse("mu = 1e3\nshear = 4\n").unwrap_err().to_string();
        assert!(e.contains("m.toml:2") && e.contains("shear"), "{e}");
        let e = parse("mu = \"soft\"\n").unwrap_err().to_string();
        assert!(e.contains("m.toml:1"), "{e}");
    }
}
