//! Thin routes: every `async fn` under `api/src/routes/` (each handler, and each async helper
//! beside it) is at most [`MAX_LINES`] lines, counted from its `async fn` line to its closing
//! brace. A handler parses, authorizes, calls and answers; a workflow that needs more belongs
//! to the write layer (`api/src/write/`), or beside the reads it helps.
//!
//! The count is made on the source with comments and literals blanked out (so a `{` in a
//! format string or a comment moves nothing), and it cannot pass by finding nothing: every
//! handler the route table mounts must be among the functions it measured.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most lines an `async fn` of a route module may take.
const MAX_LINES: usize = 40;

/// `code` with every comment, string and character literal replaced by spaces (newlines
/// kept), so braces and words inside them are not seen and line numbers do not move.
fn blank_literals(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let start = i;
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            i = end;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            out.push(c);
            i += 1;
            continue;
        }
        let end = i.min(chars.len());
        out.extend(chars[start..end].iter().map(|&c| blank(c)));
    }
    out.into_iter().collect()
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br"…"`) that starts at `i` ends, if one does.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    // Not the tail of an identifier (`for`, `bar"` cannot occur, but `r` in `writer` can).
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"'
            && chars[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// Whether the `'` at `i` opens a character literal (`'{'`, `'\n'`) rather than a lifetime.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Each `async fn` of `code` (literals blanked) with its length in lines, from the line of
/// `async fn` to the line of its body's closing brace.
fn async_fns(code: &str) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("async fn ").map(|a| a + from) {
        from = at + "async fn ".len();
        let before = at.checked_sub(1).map(|b| bytes[b]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let name: String = code[from..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens at the first `{` outside the signature's parentheses.
        let mut parens = 0i32;
        let mut open = None;
        for (k, &b) in bytes.iter().enumerate().skip(from) {
            match b {
                b'(' | b'[' => parens += 1,
                b')' | b']' => parens -= 1,
                b'{' if parens == 0 => {
                    open = Some(k);
                    break;
                }
                b';' if parens == 0 => break,
                _ => {}
            }
        }
        let Some(open) = open else {
            continue; // a declaration without a body (a trait's)
        };
        let mut depth = 0i32;
        let mut close = None;
        for (k, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.unwrap_or_else(|| panic!("`async fn {name}` has no closing brace"));
        found.push((name, line_of(close) - line_of(at) + 1));
        from = close;
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `async fn` under `api/src/routes/`, by `module::name`, with its length in lines.
fn measured() -> BTreeMap<String, usize> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/routes");
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut all = BTreeMap::new();
    for file in files {
        let module = file
            .strip_prefix(&dir)
            .expect("under the routes folder")
            .with_extension("")
            .to_string_lossy()
            .replace(std::path::MAIN_SEPARATOR, "::");
        let text = std::fs::read_to_string(&file).expect("readable source");
        for (name, lines) in async_fns(&blank_literals(&text)) {
            all.insert(format!("{module}::{name}"), lines);
        }
    }
    all
}

/// The handlers of route modules the route table mounts, as `module::name`: the last argument
/// of each `r(Verb, path, summary, messages::list)` entry.
fn mounted() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/route_table.rs");
    let table = blank_literals(&std::fs::read_to_string(path).expect("the route table"));
    let mut handlers = Vec::new();
    for verb in ["Get", "Post", "Put", "Delete", "Patch"] {
        let opening = format!("r({verb},");
        let mut rest = table.as_str();
        while let Some(at) = rest.find(&opening) {
            rest = &rest[at + opening.len()..];
            let Some(close) = rest.find(')') else { break };
            let Some(last) = rest[..close].rsplit(',').next() else {
                continue;
            };
            let path = last.trim();
            // A route module's handler (`messages::list`); the few pages mounted from elsewhere
            // (`crate::ui::page`) are not route modules.
            if path.matches("::").count() == 1
                && path
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                handlers.push(path.to_string());
            }
        }
    }
    handlers.sort();
    handlers.dedup();
    handlers
}

#[test]
fn every_route_handler_is_at_most_forty_lines() {
    let all = measured();
    let handlers = mounted();
    // The API mounts about a hundred routes: finding far fewer means the scan is broken.
    assert!(
        handlers.len() >= 90,
        "the route table mounts only {handlers:?}"
    );
    let unmeasured: Vec<&String> = handlers.iter().filter(|h| !all.contains_key(*h)).collect();
    assert!(
        unmeasured.is_empty(),
        "handlers the route table mounts that the scan did not find as `async fn`: {unmeasured:?}"
    );
    let too_long: Vec<String> = all
        .iter()
        .filter(|(_, &lines)| lines > MAX_LINES)
        .map(|(name, lines)| format!("{name}: {lines} lines"))
        .collect();
    assert!(
        too_long.is_empty(),
        "route functions longer than {MAX_LINES} lines (move the workflow to the write layer \
         or a helper beside the reads): {too_long:?}"
    );
}

#[test]
fn the_count_runs_from_async_fn_to_its_closing_brace() {
    let code = r##"
/// A doc comment { with a brace.
pub async fn short(a: (u8, u8)) -> Result<(), ()> {
    let s = "}";
    let c = '{';
    let r = r#"{ "a": 1 }"#;
    // }
    Ok(())
}

async fn nested<'a>(x: &'a str) {
    if true {
        match x { _ => {} }
    }
}

trait T {
    async fn declared(&self);
}
"##;
    let fns = async_fns(&blank_literals(code));
    assert_eq!(
        fns,
        vec![("short".to_string(), 7), ("nested".to_string(), 5)]
    );
    // A function is measured whole: one line longer is one more.
    let longer = code.replace("    Ok(())", "    let _ = 1;\n    Ok(())");
    assert_eq!(async_fns(&blank_literals(&longer))[0].1, 8);
}
