//! No import circle in any crate: no source file reaches, through any chain of imports, a file
//! that reaches it back. A circle means two modules that can only be understood, tested and
//! changed together; the layers the tree shows (ARCHITECTURE.md) hold only without them.
//!
//! The check reads the sources as text, the way a reader follows them: every `use` path (with
//! its `{...}` groups and `as` names), every `crate::`, `super::` and `self::` path in the code,
//! and every path that starts with a module a `use` brought in (`use crate::routes;` then
//! `routes::admin::f`) or a child module declares (`mod config_cas;` then `config_cas::run()`). A path is resolved to the longest prefix that is a file of the crate
//! (`a/b.rs` or `a/b/mod.rs`). A `mod` declaration by itself is no import, and code after the first
//! `#[cfg(test)]` of a file (its unit tests) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`["routes", "admin"]`) → its file, and each file's source.
struct Crate {
    root: PathBuf,
    modules: BTreeMap<Vec<String>, PathBuf>,
    sources: BTreeMap<PathBuf, String>,
    /// Per file, the names it re-exports (`pub use x::Y;`) and the paths they stand for.
    reexports: BTreeMap<PathBuf, BTreeMap<String, Vec<String>>>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs`/`main.rs` root.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    } else if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn is_dir_module(file: &Path) -> bool {
    matches!(
        file.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    )
}

impl Crate {
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules = BTreeMap::new();
        let mut sources = BTreeMap::new();
        for file in files {
            // Binaries under src/bin are crates of their own.
            if file.strip_prefix(src).is_ok_and(|r| r.starts_with("bin")) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            modules.insert(module_of(src, &file), file.clone());
            sources.insert(file, code_of(&text));
        }
        Crate::with(src.to_path_buf(), modules, sources)
    }

    fn from_sources(files: &[(&str, &str)]) -> Self {
        let root = PathBuf::from("/virtual/src");
        let mut modules = BTreeMap::new();
        let mut sources = BTreeMap::new();
        for (name, text) in files {
            let file = root.join(name);
            modules.insert(module_of(&root, &file), file.clone());
            sources.insert(file, code_of(text));
        }
        Crate::with(root, modules, sources)
    }

    fn with(
        root: PathBuf,
        modules: BTreeMap<Vec<String>, PathBuf>,
        sources: BTreeMap<PathBuf, String>,
    ) -> Self {
        let reexports = sources
            .iter()
            .map(|(file, code)| (file.clone(), reexports_of(code)))
            .collect();
        Crate {
            root,
            modules,
            sources,
            reexports,
        }
    }

    /// Each file and the files of the crate it imports.
    fn graph(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let mut graph = BTreeMap::new();
        for (file, code) in &self.sources {
            let here = module_of(&self.root, file);
            let mut targets = BTreeSet::new();
            for path in referenced_paths(code) {
                if let Some(target) = self.resolve(&here, is_dir_module(file), &path) {
                    if &target != file {
                        targets.insert(target);
                    }
                }
            }
            graph.insert(file.clone(), targets);
        }
        graph
    }

    /// The file `path` (segments, from `crate`, `super` or `self`) names, if it is in this crate.
    fn resolve(&self, here: &[String], dir_module: bool, path: &[String]) -> Option<PathBuf> {
        self.resolve_at(here, dir_module, path, 0)
    }

    fn resolve_at(
        &self,
        here: &[String],
        dir_module: bool,
        path: &[String],
        depth: usize,
    ) -> Option<PathBuf> {
        let (mut base, rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here.to_vec(), &path[1..]),
            "super" => {
                let mut base = here.to_vec();
                if !dir_module {
                    base.pop();
                }
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                (base, rest)
            }
            _ => return None,
        };
        base.extend(rest.iter().cloned());
        let (n, file) = (1..=base.len())
            .rev()
            .find_map(|n| self.modules.get(&base[..n]).map(|f| (n, f.clone())))?;
        // A name the file only re-exports is imported from where it is defined.
        if let Some(origin) = base
            .get(n)
            .and_then(|name| self.reexports.get(&file)?.get(name))
        {
            if depth < 8 {
                let at = module_of(&self.root, &file);
                if let Some(found) = self.resolve_at(&at, is_dir_module(&file), origin, depth + 1) {
                    return Some(found);
                }
            }
        }
        Some(file)
    }
}

/// The names `code` re-exports (`pub use a::b::C;`, `pub(crate) use a::{B, C as D};`) and the
/// paths they stand for; a relative path (`pub use context::X`, a child module) is made `self::`.
fn reexports_of(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for marker in ["pub use ", "pub(crate) use ", "pub(super) use "] {
        let mut rest = code;
        while let Some(at) = rest.find(marker) {
            let after = &rest[at + marker.len()..];
            let Some(end) = after.find(';') else { break };
            let marked = after[..end].replace(" as ", "@");
            let tree: String = marked.chars().filter(|c| !c.is_whitespace()).collect();
            for item in expand(&tree) {
                let (path, name) = match item.split_once('@') {
                    Some((p, a)) => (p.to_string(), a.to_string()),
                    None => (
                        item.clone(),
                        item.rsplit("::").next().unwrap_or("").to_string(),
                    ),
                };
                let mut segments: Vec<String> = path.split("::").map(str::to_string).collect();
                if !matches!(segments[0].as_str(), "crate" | "super" | "self") {
                    segments.insert(0, "self".to_string());
                }
                if !name.is_empty() && name != "*" && name != "self" {
                    out.insert(name, segments);
                }
            }
            rest = &after[end..];
        }
    }
    out
}

/// The code of a file: line comments removed, and nothing from its first `#[cfg(test)]` on.
fn code_of(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (whitespace already removed).
fn expand(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0, String::new());
    for c in inner.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand(&p))
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every `a::b::c` path written in `code` (identifiers joined by `::`).
fn paths_in(code: &str) -> Vec<(usize, Vec<String>)> {
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        let preceded = i > 0 && (is_ident(chars[i - 1].1) || chars[i - 1].1 == ':');
        if !is_ident(c) || preceded {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let mut segment = String::new();
            while j < chars.len() && is_ident(chars[j].1) {
                segment.push(chars[j].1);
                j += 1;
            }
            segments.push(segment);
            if j + 2 < chars.len()
                && chars[j].1 == ':'
                && chars[j + 1].1 == ':'
                && is_ident(chars[j + 2].1)
            {
                j += 2;
            } else {
                break;
            }
        }
        // `a::b::{...}` and `a::b::*` are `use` trees, read whole by the `use` parser.
        let opens_group = code[chars.get(j).map_or(code.len(), |c| c.0)..]
            .trim_start()
            .starts_with("::{")
            || code[chars.get(j).map_or(code.len(), |c| c.0)..].starts_with("::*");
        if segments.len() > 1 && !opens_group {
            out.push((start, segments));
        }
        i = j.max(i + 1);
    }
    out
}

/// The paths `code` refers to: its `use` trees, its `crate::`/`super::`/`self::` paths, and the
/// paths that start with a module a `use` named (resolved through that `use`).
fn referenced_paths(code: &str) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let boundary = at == 0 || !is_ident(rest[..at].chars().last().unwrap_or(' '));
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if boundary {
            // `as` marked before whitespace goes: `a::b as c` → `a::b@c`.
            let marked = after[..end].replace(" as ", "@").replace("\nas ", "@");
            let tree: String = marked.chars().filter(|c| !c.is_whitespace()).collect();
            for item in expand(&tree) {
                let (path, alias) = match item.split_once('@') {
                    Some((p, a)) => (p.to_string(), a.to_string()),
                    None => {
                        let last = item.rsplit("::").next().unwrap_or("").to_string();
                        (item.clone(), last)
                    }
                };
                let mut segments: Vec<String> = path.split("::").map(str::to_string).collect();
                if segments.last().is_some_and(|s| s == "self" || s == "*") {
                    segments.pop();
                }
                let alias = if alias == "self" || alias == "*" {
                    segments.last().cloned().unwrap_or_default()
                } else {
                    alias
                };
                if !alias.is_empty() {
                    aliases.insert(alias, segments.clone());
                }
                found.push(segments);
            }
        }
        rest = &after[end..];
    }
    // Child modules are in scope by their names (`mod config_cas;` then `config_cas::run()`).
    for (at, _) in code.match_indices("mod ") {
        let boundary = at == 0 || !is_ident(code[..at].chars().last().unwrap_or(' '));
        let name: String = code[at + 4..]
            .chars()
            .take_while(|c| is_ident(*c))
            .collect();
        let declared = code[at + 4 + name.len()..].trim_start().starts_with(';');
        if boundary && declared && !name.is_empty() {
            aliases
                .entry(name.clone())
                .or_insert_with(|| vec!["self".to_string(), name]);
        }
    }
    for (_, segments) in paths_in(code) {
        found.push(segments);
    }
    // Paths through a name a `use` brought in (`routes::admin::f`, or `use routes::{admin}`).
    let mut resolved = Vec::new();
    for segments in found {
        let first = segments[0].as_str();
        match aliases.get(first) {
            Some(target)
                if !matches!(first, "crate" | "super" | "self")
                    && matches!(
                        target.first().map(String::as_str),
                        Some("crate" | "super" | "self")
                    )
                    && target != &segments =>
            {
                let mut full = target.clone();
                full.extend(segments[1..].iter().cloned());
                resolved.push(full);
            }
            _ => resolved.push(segments),
        }
    }
    resolved
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let Some((w, _)) = self.graph.get_key_value(w) else {
                    continue;
                };
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every crate of the workspace: each `src/` beside a `Cargo.toml`, outside build output.
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            out.push(dir.join("src"));
        }
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() && !name.starts_with('.') && name != "target" && name != "src" {
                walk(&path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out.sort();
    out
}

fn describe(krate: &Crate, circle: &[PathBuf]) -> String {
    let graph = krate.graph();
    let inside: BTreeSet<&PathBuf> = circle.iter().collect();
    let rel = |p: &PathBuf| {
        p.strip_prefix(&krate.root)
            .unwrap_or(p)
            .display()
            .to_string()
    };
    circle
        .iter()
        .map(|f| {
            let to: Vec<String> = graph[f]
                .iter()
                .filter(|t| inside.contains(t))
                .map(rel)
                .collect();
            format!("  {} -> {}", rel(f), to.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    let crates = crate_sources(root);
    assert!(
        crates.len() >= 8,
        "expected the workspace's crates under {root:?}, found {crates:?}"
    );
    let mut problems = Vec::new();
    for src in &crates {
        let krate = Crate::read(src);
        for circle in circles(&krate.graph()) {
            problems.push(format!(
                "{}: {} files import each other in a circle:\n{}",
                src.display(),
                circle.len(),
                describe(&krate, &circle)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_check_finds_a_circle_through_groups_aliases_and_super() {
    let krate = Crate::from_sources(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod c; pub mod d;"),
        // a -> b through a group, b -> c through a module alias, c -> a through `super` in d's
        // folder, d is outside the circle.
        ("a.rs", "use crate::{b::{B1, B2}, d};\nfn f() { d::x(); }"),
        ("b.rs", "use crate::c;\nfn g() { c::inner::h(); }"),
        ("c/mod.rs", "pub mod inner;"),
        ("c/inner.rs", "fn h() { super::super::a::f(); }"),
        (
            "d.rs",
            "// use crate::a; (a comment, not an import)\npub fn x() {}",
        ),
    ]);
    let found = circles(&krate.graph());
    assert_eq!(found.len(), 1, "{found:?}");
    let names: Vec<String> = found[0]
        .iter()
        .map(|p| p.strip_prefix(&krate.root).unwrap().display().to_string())
        .collect();
    assert_eq!(names, ["a.rs", "b.rs", "c/inner.rs"]);

    // A name a parent only re-exports is imported from its own file: `p/a.rs` taking
    // `crate::p::Ctx` (defined in `p/ctx.rs`) while `p/mod.rs` calls into `p/a.rs` is no circle.
    let krate = Crate::from_sources(&[
        ("lib.rs", "pub mod p;"),
        (
            "p/mod.rs",
            "mod a; mod ctx;\npub(crate) use ctx::{Ctx, Other as O};\nfn f() { a::g(); }",
        ),
        ("p/a.rs", "use crate::p::{Ctx, O};\npub fn g() {}"),
        ("p/ctx.rs", "pub struct Ctx; pub struct Other;"),
    ]);
    assert!(circles(&krate.graph()).is_empty(), "{:?}", krate.graph());

    // Unit tests may reach back up: they are not the module's imports.
    let krate = Crate::from_sources(&[
        ("lib.rs", "pub mod a; pub mod b;"),
        ("a.rs", "use crate::b::B;"),
        (
            "b.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests { use crate::a; }",
        ),
    ]);
    assert!(circles(&krate.graph()).is_empty());
}
