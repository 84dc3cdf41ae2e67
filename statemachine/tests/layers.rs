//! The layers of `statemachine/src`, enforced: every module refers only to its own layer and the
//! layers below it.
//!
//! | rank | layer                         | holds                                                 |
//! |------|-------------------------------|-------------------------------------------------------|
//! | 0    | `model/`                      | the plain types the state is made of                  |
//! | 1    | `wire/`                       | commands, outcomes, rejections, the codec             |
//! | 2    | `storage/`                    | the store, tables, keys, the write overlay, digest    |
//! | 3    | `tables/`                     | typed access to each table (key layouts)              |
//! | 4    | `rules/`                      | the invariants: FIFO, fences, finalizer, retry, ...   |
//! | 5    | `apply/`                      | the apply context, each command's `Apply`, dispatch   |
//! | 6    | `query/`                      | the read side                                         |
//! | 7    | `lib.rs`, `machine.rs` (top)  | the crate root and the state machine                  |
//!
//! A reference is any `crate::<name>` path in code (`use crate::a::b`, `use crate::{a, b}`,
//! `crate::a::f()`), and `super::` paths resolved to the module they name. `<name>` is a layer
//! folder, or else something of the crate root (a root re-export, `machine`): the top layer. So a
//! lower layer may not go through the root's re-exports either. Comments and string literals are
//! not code and are skipped (a doc link may point anywhere). Every file must sit in a layer
//! folder or be one of the top files.

use std::fs;
use std::path::{Path, PathBuf};

const LAYERS: [&str; 7] = [
    "model", "wire", "storage", "tables", "rules", "apply", "query",
];
const TOP_FILES: [&str; 2] = ["lib.rs", "machine.rs"];
const TOP: usize = LAYERS.len();

fn layer_name(rank: usize) -> &'static str {
    LAYERS.get(rank).copied().unwrap_or("top (lib/machine)")
}

/// The rank of the module a path of the crate starts with (`None`: the crate itself).
fn rank_of(first: &str) -> usize {
    LAYERS.iter().position(|l| *l == first).unwrap_or(TOP)
}

/// The module path of a file under `src/` (`apply/claim.rs` → `["apply", "claim"]`).
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let file = parts.pop().unwrap_or_default();
    match file.as_str() {
        "lib.rs" | "mod.rs" => {}
        f => parts.push(f.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The rank of a file under `src/`, or `None` when it belongs to no layer.
fn file_rank(rel: &str) -> Option<usize> {
    match rel.split_once('/') {
        Some((dir, _)) => LAYERS.iter().position(|l| *l == dir),
        None => TOP_FILES.contains(&rel).then_some(TOP),
    }
}

/// `src` with comments and string/char literals blanked out (newlines kept, so line numbers
/// stay), keeping only code.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &str| {
        for c in s.chars() {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &src[i..];
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let end = if rest.starts_with("//") {
            Some(rest.find('\n').unwrap_or(rest.len()))
        } else if rest.starts_with("/*") {
            let mut depth = 0usize;
            let mut j = 0;
            let rb = rest.as_bytes();
            loop {
                if j >= rb.len() {
                    break Some(rb.len());
                }
                if rest[j..].starts_with("/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with("*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break Some(j);
                    }
                } else {
                    j += 1;
                }
            }
        } else if !prev_ident && (rest.starts_with("r\"") || rest.starts_with("r#")) {
            let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
            if rest[1 + hashes..].starts_with('"') {
                let close = format!("\"{}", "#".repeat(hashes));
                let body = 2 + hashes;
                Some(
                    rest[body..]
                        .find(&close)
                        .map_or(rest.len(), |p| body + p + close.len()),
                )
            } else {
                None
            }
        } else if rest.starts_with('"') {
            let rb = rest.as_bytes();
            let mut j = 1;
            while j < rb.len() && rb[j] != b'"' {
                j += if rb[j] == b'\\' { 2 } else { 1 };
            }
            Some((j + 1).min(rb.len()))
        } else if let Some(inner) = rest.strip_prefix('\'') {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            if let Some(escaped) = inner.strip_prefix('\\') {
                escaped.find('\'').map(|p| p + 3)
            } else {
                let c = inner.chars().next().map_or(0, char::len_utf8);
                inner[c..].starts_with('\'').then_some(2 + c)
            }
        } else {
            None
        };
        match end {
            Some(n) => {
                blank(&mut out, &rest[..n]);
                i += n;
            }
            None => {
                let c = rest.chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let n = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..n]
}

/// The first names of the paths in a `{ a::b, c, d::{e, f} }` group starting at `s[0] == '{'`.
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut at_item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                at_item_start = depth == 1;
            }
            '}' => {
                if depth <= 1 {
                    break;
                }
                depth -= 1;
            }
            ',' if depth == 1 => at_item_start = true,
            c if at_item_start && depth == 1 && !c.is_whitespace() => {
                heads.push(ident_at(&s[i..]).to_string());
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// One reference of a lower layer to a higher one.
#[derive(Debug)]
struct Violation {
    line: usize,
    from: usize,
    to: usize,
    target: String,
}

/// The references of the file `rel` (path under `src/`) to higher layers.
fn check_source(rel: &str, src: &str) -> Result<Vec<Violation>, String> {
    let rank = file_rank(rel).ok_or_else(|| {
        format!("src/{rel}: not in a layer folder ({LAYERS:?}) and not a top file {TOP_FILES:?}")
    })?;
    let code = code_only(src);
    let file_module = module_path(rel);
    // Inline modules (`mod tests { .. }`) open at a brace depth and add to the module path.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut out = Vec::new();
    let cb = code.as_bytes();
    let mut i = 0;
    while i < cb.len() {
        let rest = &code[i..];
        let prev = if i > 0 { cb[i - 1] } else { b' ' };
        let boundary =
            !(prev.is_ascii_alphanumeric() || prev == b'_' || prev == b'$' || prev == b':');
        match cb[i] {
            b'\n' => line += 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        if boundary && rest.starts_with("mod ") {
            let name = ident_at(rest[4..].trim_start());
            let after = rest[4..].trim_start()[name.len()..].trim_start();
            if after.starts_with('{') {
                inline.push((name.to_string(), depth + 1));
            }
        }
        let resolved: Option<(Vec<String>, usize)> = if boundary && rest.starts_with("crate::") {
            Some((Vec::new(), "crate::".len()))
        } else if boundary && rest.starts_with("super::") {
            let mut module: Vec<String> = file_module.clone();
            module.extend(inline.iter().map(|(n, _)| n.clone()));
            let mut n = 0;
            while rest[n..].starts_with("super::") {
                module.pop();
                n += "super::".len();
            }
            Some((module, n))
        } else {
            None
        };
        if let Some((base, n)) = resolved {
            let after = &rest[n..];
            let heads = match base.first() {
                // Relative to a module inside a layer: that layer, whatever follows.
                Some(first) => vec![first.clone()],
                None if after.starts_with('{') => group_heads(after),
                None => vec![ident_at(after).to_string()],
            };
            for head in heads {
                if head.is_empty() || head == "self" || head == "*" {
                    continue;
                }
                let to = rank_of(&head);
                if to > rank {
                    out.push(Violation {
                        line,
                        from: rank,
                        to,
                        target: head,
                    });
                }
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    Ok(out)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn lower_layers_never_refer_to_higher_ones() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.len() > 20,
        "found only {} files under src/",
        files.len()
    );
    let mut errors = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        match check_source(&rel, &text) {
            Err(e) => errors.push(e),
            Ok(violations) => {
                for v in violations {
                    let source = text.lines().nth(v.line - 1).unwrap_or("").trim();
                    errors.push(format!(
                        "src/{rel}:{}: layer `{}` (rank {}) refers to `{}`, \
                         layer `{}` (rank {}): {source}",
                        v.line,
                        layer_name(v.from),
                        v.from,
                        v.target,
                        layer_name(v.to),
                        v.to
                    ));
                }
            }
        }
    }
    assert!(
        errors.is_empty(),
        "imports must flow down the layers ({}); found:\n{}",
        (0..=TOP).map(layer_name).collect::<Vec<_>>().join(" < "),
        errors.join("\n")
    );
}

/// The checker itself catches what it must, and only that.
#[test]
fn the_checker_finds_upward_references() {
    let lines = |rel: &str, src: &str| -> Vec<usize> {
        check_source(rel, src)
            .expect("a layer file")
            .into_iter()
            .map(|v| v.line)
            .collect()
    };
    // Down and sideways are fine.
    assert!(lines(
        "tables/rows.rs",
        "use crate::model::row::WorkRow;\nuse crate::tables::lanes;\n"
    )
    .is_empty());
    assert!(lines(
        "machine.rs",
        "use crate::apply::entry;\nuse crate::query::Reader;\n"
    )
    .is_empty());
    // Up is not: a use, a path in code, a group, a root re-export, a super chain.
    assert_eq!(
        lines(
            "tables/rows.rs",
            "use crate::model::ids::RowId;\nuse crate::apply::Ctx;\n"
        ),
        [2]
    );
    assert_eq!(
        lines(
            "rules/fifo.rs",
            "fn f() {\n    crate::query::Reader::new();\n}\n"
        ),
        [2]
    );
    assert_eq!(
        lines(
            "wire/command.rs",
            "use crate::{model::ids::RowId, storage::Table};\n"
        ),
        [1]
    );
    assert_eq!(lines("storage/txn.rs", "use crate::Command;\n"), [1]);
    assert_eq!(
        lines("model/row.rs", "use crate::machine::MetaState;\n"),
        [1]
    );
    assert_eq!(
        lines("rules/fence.rs", "use super::super::apply::Ctx;\n"),
        [1]
    );
    assert_eq!(lines("apply/mod.rs", "use super::query::Reader;\n"), [1]);
    // Inside a layer, `super` stays in the layer, also from an inline module.
    assert!(lines(
        "apply/request.rs",
        "fn f() { super::command(); }\nmod tests {\n    use super::*;\n}\n"
    )
    .is_empty());
    // Comments and strings are not references.
    assert!(lines(
        "model/message.rs",
        "/// See [`crate::apply::enqueue`].\n// crate::query\nconst S: &str = \"crate::apply\";\n"
    )
    .is_empty());
    // A file outside every layer is an error.
    assert!(check_source("helpers.rs", "").is_err());
}
