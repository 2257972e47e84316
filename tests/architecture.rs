//! ARCHITECTURE.md stays true to the tree: every repository path it names exists, every package
//! entry it names is exported, and every type or function it names is defined.

use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The top-level folders a backticked path may start with.
const FOLDERS: [&str; 6] = ["src", "js", "tests", "scripts", "benches", "examples"];

fn doc() -> String {
    fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is there")
}

/// The text between backticks, in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn is_repo_path(token: &str) -> bool {
    let first = token.split('/').next().unwrap_or_default();
    let root_file = !token.contains('/')
        && [".toml", ".md", ".json", ".lock"]
            .iter()
            .any(|ext| token.ends_with(ext));
    (token.contains('/') && FOLDERS.contains(&first)) || root_file
}

/// Whether `pattern` (a name, possibly with `*` wildcards) matches `name`.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            name.starts_with(head)
                && (head.len()..=name.len())
                    .any(|i| name.is_char_boundary(i) && matches(rest, &name[i..]))
        }
    }
}

/// Whether a repository path exists: a trailing `/` asks for a folder, `*` in the last
/// component for at least one match.
fn exists(token: &str) -> bool {
    let path = token.trim_end_matches('/');
    let full = Path::new(ROOT).join(path);
    if token.ends_with('/') {
        return full.is_dir();
    }
    let name = full
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if !name.contains('*') {
        return full.exists();
    }
    let parent = full.parent().unwrap_or(Path::new(ROOT));
    fs::read_dir(parent).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_str().is_some_and(|n| matches(name, n)))
    })
}

/// Every file under `dir` whose name ends with one of `exts`.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            if entry.file_name() != "node_modules" {
                files(&path, exts, out);
            }
        } else if exts.iter().any(|ext| path.to_string_lossy().ends_with(ext)) {
            out.push(path);
        }
    }
}

/// The text of every Rust file under src/ and every TypeScript or JavaScript file under js/.
fn sources() -> (String, String) {
    let read = |dir: &str, exts: &[&str]| {
        let mut paths = Vec::new();
        files(&Path::new(ROOT).join(dir), exts, &mut paths);
        paths
            .iter()
            .filter_map(|p| fs::read_to_string(p).ok())
            .collect::<Vec<_>>()
            .join("\n")
    };
    (read("src", &[".rs"]), read("js", &[".ts", ".mjs"]))
}

/// A type name: an identifier starting with a capital and holding a lower-case letter
/// (`Coordinator`, not `BREAKERS` or `CLOSED`).
fn is_type_name(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_uppercase())
        && token.chars().any(|c| c.is_ascii_lowercase())
        && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A function named with its parentheses: `glue()`, `breaker_config()`.
fn function_name(token: &str) -> Option<&str> {
    let name = token.strip_suffix("()")?;
    let ident = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ident.then_some(name)
}

/// Whether `word` occurs in `text` right after `prefix` and followed by a non-identifier char.
fn defined(text: &str, prefix: &str, word: &str) -> bool {
    let needle = format!("{prefix}{word}");
    text.match_indices(&needle).any(|(i, _)| {
        let after = text[i + needle.len()..].chars().next();
        !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn type_defined(rust: &str, js: &str, name: &str) -> bool {
    ["pub struct ", "pub enum ", "pub trait ", "pub type "]
        .iter()
        .any(|p| defined(rust, p, name))
        || [
            "export class ",
            "export interface ",
            "export type ",
            "export function ",
        ]
        .iter()
        .any(|p| defined(js, p, name))
}

fn function_defined(rust: &str, js: &str, name: &str) -> bool {
    defined(rust, "fn ", name)
        || defined(js, "function ", name)
        // A method: `  execute<T>(`, `  toJSON(): …`, `  async flush(`.
        || js.lines().any(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("async ").unwrap_or(line);
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('(') || rest.starts_with('<'))
        })
}

#[test]
fn every_path_it_names_exists() {
    let doc = doc();
    let paths: Vec<&str> = backticked(&doc)
        .into_iter()
        .filter(|t| is_repo_path(t))
        .collect();
    assert!(
        paths.len() >= 40,
        "only {} paths found in ARCHITECTURE.md: {paths:?}",
        paths.len()
    );
    let missing: Vec<&&str> = paths.iter().filter(|p| !exists(p)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn every_package_entry_it_names_is_exported() {
    let doc = doc();
    // The package's subpaths are the rows of js/build.mjs's table (`path: './store'`), which
    // writes the exports map.
    let manifest =
        fs::read_to_string(Path::new(ROOT).join("js/build.mjs")).expect("js/build.mjs is there");
    let entries: Vec<&str> = backticked(&doc)
        .into_iter()
        .filter(|t| *t == "breakwater" || t.starts_with("breakwater/"))
        .collect();
    assert!(entries.len() >= 4, "package entries found: {entries:?}");
    for entry in entries {
        let key = match entry.strip_prefix("breakwater/") {
            Some(sub) => format!("path: './{sub}'"),
            None => "path: '.'".to_string(),
        };
        assert!(
            manifest.contains(&key),
            "ARCHITECTURE.md names `{entry}`, which js/build.mjs does not export"
        );
    }
}

#[test]
fn every_type_and_function_it_names_is_defined() {
    let doc = doc();
    let (rust, js) = sources();
    let tokens = backticked(&doc);
    let types: Vec<&str> = tokens.iter().copied().filter(|t| is_type_name(t)).collect();
    let functions: Vec<&str> = tokens.iter().filter_map(|t| function_name(t)).collect();
    assert!(types.len() >= 20, "type names found: {types:?}");
    assert!(functions.len() >= 8, "function names found: {functions:?}");
    let missing_types: Vec<&&str> = types
        .iter()
        .filter(|n| !type_defined(&rust, &js, n))
        .collect();
    let missing_functions: Vec<&&str> = functions
        .iter()
        .filter(|n| !function_defined(&rust, &js, n))
        .collect();
    assert!(
        missing_types.is_empty() && missing_functions.is_empty(),
        "ARCHITECTURE.md names undefined types {missing_types:?} and functions {missing_functions:?}"
    );
}

#[test]
fn paths_are_recognised_and_globs_need_a_match() {
    assert!(is_repo_path("src/shared/"));
    assert!(is_repo_path("wrangler.toml"));
    assert!(!is_repo_path("breakwater/store"));
    assert!(!is_repo_path("/v1/acquire"));
    assert!(exists("js/entry/*"));
    assert!(exists("js/entry/shared-*.mjs"));
    assert!(!exists("js/entry/nothing-*.mjs"));
    assert!(!exists("src/nowhere.rs"));
    assert!(!exists("src/lib.rs/"), "a trailing slash asks for a folder");
    assert!(matches("shared-*", "shared-node.mjs"));
    assert!(!matches("shared-*.mjs", "shared-node.cjs"));
}

// ----- TypeScript import rules -----
// ARCHITECTURE.md's `### TypeScript` table under `## Import rules` gives every file of js/src/ a
// layer (the row whose path is its longest prefix) and each layer the layers it may import. Every
// import counts: static, `import type`, `export … from` and `import('…')`; the package's own
// subpaths (`breakwater/internal`…) as the files js/tsconfig.json maps them to.

/// A row of the TypeScript import rules.
struct TsLayer {
    name: String,
    /// Files (`js/src/x.ts`) or folders (`js/src/shared/`).
    paths: Vec<String>,
    /// The layers its files may import.
    may_import: Vec<String>,
}

/// One import of a file: where it is, what it says, and the repository file it names (None:
/// outside the package, as `cloudflare:workers`).
struct TsImport {
    line: usize,
    specifier: String,
    target: Option<String>,
}

/// The rows of the table under `### TypeScript` in `## Import rules`.
fn ts_rules(doc: &str) -> Vec<TsLayer> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Import rules"))
        .expect("ARCHITECTURE.md has a section `## Import rules`");
    let sub = section
        .split("\n### ")
        .find(|s| s.starts_with("TypeScript"))
        .expect("`## Import rules` has a `### TypeScript` table");
    let mut rows = Vec::new();
    for line in sub.lines().map(str::trim).filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [name, paths, may] = cells[..] else {
            panic!("a row of the TypeScript import rules has three cells: {line}");
        };
        if name == "layer" || name.starts_with('-') {
            continue;
        }
        let may_import = if may == "—" {
            Vec::new()
        } else {
            may.split(',').map(|l| l.trim().to_string()).collect()
        };
        let paths = backticked(paths).iter().map(|p| p.to_string()).collect();
        rows.push(TsLayer {
            name: name.to_string(),
            paths,
            may_import,
        });
    }
    assert!(!rows.is_empty(), "the TypeScript import rules have no rows");
    rows
}

/// The layer of `file`: the row holding its longest prefix (a folder ends with `/`).
fn ts_layer_of<'a>(rules: &'a [TsLayer], file: &str) -> Option<&'a TsLayer> {
    rules
        .iter()
        .flat_map(|r| r.paths.iter().map(move |p| (r, p)))
        .filter(|(_, p)| file == p.as_str() || (p.ends_with('/') && file.starts_with(p.as_str())))
        .max_by_key(|(_, p)| p.len())
        .map(|(r, _)| r)
}

/// Every TypeScript file under js/src/, as a repository path.
fn ts_files() -> Vec<String> {
    let mut paths = Vec::new();
    files(&Path::new(ROOT).join("js/src"), &[".ts"], &mut paths);
    let mut out: Vec<String> = paths
        .iter()
        .filter_map(|p| p.strip_prefix(ROOT).ok())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    out.sort();
    out
}

/// The package's own subpaths, as js/tsconfig.json's `paths` map them to files
/// (`"breakwater/internal": ["./src/internal.ts"]`).
fn ts_aliases() -> Vec<(String, String)> {
    let text =
        fs::read_to_string(Path::new(ROOT).join("js/tsconfig.json")).expect("js/tsconfig.json");
    text.lines()
        .filter_map(|l| {
            let (key, value) = l.trim().split_once("\": [\"")?;
            let key = key.strip_prefix('"')?;
            let value = value.split('"').next()?;
            let file = ts_join("js/tsconfig.json", value)?;
            Some((key.to_string(), file))
        })
        .collect()
}

/// `specifier` relative to the file `from`, `.js` read as `.ts` (None when it climbs out of the
/// repository).
fn ts_join(from: &str, specifier: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in specifier.split('/') {
        match part {
            "." | "" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    let path = parts.join("/");
    Some(match path.strip_suffix(".js") {
        Some(stem) => format!("{stem}.ts"),
        None => path,
    })
}

/// The quoted string at the start of `text` (after spaces), `'…'` or `"…"`.
fn ts_quoted(text: &str) -> Option<&str> {
    let text = text.trim_start();
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    text[1..].split(quote).next()
}

/// The module a whole `import`/`export` statement names, if it names one.
fn ts_statement_specifier(statement: &str) -> Option<&str> {
    if let Some(rest) = statement.strip_prefix("import") {
        if let Some(s) = ts_quoted(rest) {
            return Some(s); // import './side-effect.js'
        }
    }
    let at = statement.rfind(" from")?;
    ts_quoted(&statement[at + " from".len()..])
}

/// Whether a line begins an `import` or a re-export (`export … from`, possibly on later lines).
fn ts_starts_statement(line: &str) -> bool {
    let import = line.starts_with("import ")
        || line.starts_with("import{")
        || line.starts_with("import'")
        || line.starts_with("import\"");
    let reexport = [
        "export {",
        "export{",
        "export *",
        "export type {",
        "export type{",
        "export type *",
    ]
    .iter()
    .any(|p| line.starts_with(p));
    import || reexport
}

/// Every import of `text` (the file `file`), with the file each names: static imports,
/// `import type`, `export … from` and `import('…')`, outside comments.
fn ts_imports(file: &str, text: &str, aliases: &[(String, String)]) -> Vec<TsImport> {
    let mut specifiers: Vec<(usize, String)> = Vec::new();
    let mut in_comment = false;
    let mut statement: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if in_comment {
            in_comment = !line.contains("*/");
            continue;
        }
        if line.starts_with("/*") && !line.contains("*/") {
            in_comment = true;
            continue;
        }
        if line.starts_with("//") || line.starts_with('*') || line.starts_with("/*") {
            continue;
        }
        let code = line.split(" //").next().unwrap_or_default();
        if statement.is_none() && ts_starts_statement(code) {
            statement = Some((i + 1, String::new()));
        }
        if let Some((start, mut text)) = statement.take() {
            text.push_str(code);
            text.push(' ');
            if let Some(s) = ts_statement_specifier(&text) {
                specifiers.push((start, s.to_string()));
            } else if !code.ends_with(';') {
                statement = Some((start, text));
            }
        }
        let mut rest = code;
        while let Some(at) = rest.find("import(") {
            rest = &rest[at + "import(".len()..];
            if let Some(s) = ts_quoted(rest) {
                specifiers.push((i + 1, s.to_string()));
            }
        }
    }
    specifiers
        .into_iter()
        .map(|(line, specifier)| {
            let target = if specifier.starts_with("./") || specifier.starts_with("../") {
                ts_join(file, &specifier)
            } else {
                aliases
                    .iter()
                    .find(|(alias, _)| *alias == specifier)
                    .map(|(_, f)| f.clone())
            };
            TsImport {
                line,
                specifier,
                target,
            }
        })
        .collect()
}

/// Every js/src file with its imports.
fn ts_graph() -> Vec<(String, Vec<TsImport>)> {
    let aliases = ts_aliases();
    ts_files()
        .into_iter()
        .map(|f| {
            let text = fs::read_to_string(Path::new(ROOT).join(&f)).expect("a js/src file");
            let imports = ts_imports(&f, &text, &aliases);
            (f, imports)
        })
        .collect()
}

/// The first import circle of `graph`, as the files around it (the first one again at the end).
fn ts_circle(graph: &[(String, Vec<String>)]) -> Option<Vec<String>> {
    fn visit(
        node: usize,
        graph: &[(String, Vec<String>)],
        state: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<String>> {
        state[node] = 1;
        stack.push(node);
        for target in &graph[node].1 {
            let Some(next) = graph.iter().position(|(f, _)| f == target) else {
                continue;
            };
            if state[next] == 1 {
                let from = stack.iter().position(|&n| n == next).unwrap_or(0);
                let mut circle: Vec<String> =
                    stack[from..].iter().map(|&n| graph[n].0.clone()).collect();
                circle.push(graph[next].0.clone());
                return Some(circle);
            }
            if state[next] == 0 {
                if let Some(c) = visit(next, graph, state, stack) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        state[node] = 2;
        None
    }
    let mut state = vec![0u8; graph.len()];
    (0..graph.len()).find_map(|n| {
        if state[n] == 0 {
            visit(n, graph, &mut state, &mut Vec::new())
        } else {
            None
        }
    })
}

#[test]
fn ts_every_file_has_one_layer_and_every_rule_names_layers() {
    let rules = ts_rules(&doc());
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let mut problems = Vec::new();
    for r in &rules {
        for p in &r.paths {
            if !p.starts_with("js/src/") || !exists(p) {
                problems.push(format!(
                    "layer {}: `{p}` is not a file or folder under js/src/",
                    r.name
                ));
            }
            // The folders are the layers: a row names folders of js/src/ whole, or its top files.
            let rest = p.strip_prefix("js/src/").unwrap_or(p);
            let whole_folder = rest.ends_with('/') && rest.matches('/').count() == 1;
            if !whole_folder && rest.contains('/') {
                problems.push(format!(
                    "layer {}: `{p}` is a file inside a folder; a layer names its folder whole (or a file at the top of js/src/)",
                    r.name
                ));
            }
        }
        for l in &r.may_import {
            if !names.contains(&l.as_str()) {
                problems.push(format!(
                    "layer {} may import {l:?}, which is no layer",
                    r.name
                ));
            }
        }
        if names.iter().filter(|n| **n == r.name).count() > 1 {
            problems.push(format!("layer {} has two rows", r.name));
        }
    }
    for f in ts_files() {
        if ts_layer_of(&rules, &f).is_none() {
            problems.push(format!("{f} is in no layer of the TypeScript import rules"));
        }
    }
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's TypeScript import rules: {problems:#?}"
    );
}

#[test]
fn ts_each_layer_imports_only_what_its_rule_allows() {
    let rules = ts_rules(&doc());
    let mut broken = Vec::new();
    for (file, imports) in ts_graph() {
        let Some(layer) = ts_layer_of(&rules, &file) else {
            continue; // reported by ts_every_file_has_one_layer_and_every_rule_names_layers
        };
        for i in imports {
            let Some(target) = &i.target else {
                if i.specifier.starts_with("breakwater") {
                    broken.push(format!(
                        "{file}:{}: imports {:?}, which js/tsconfig.json does not map to a file",
                        i.line, i.specifier
                    ));
                }
                continue;
            };
            if !Path::new(ROOT).join(target).is_file() {
                broken.push(format!(
                    "{file}:{}: imports {:?}: no such file {target}",
                    i.line, i.specifier
                ));
                continue;
            }
            let Some(theirs) = ts_layer_of(&rules, target) else {
                continue;
            };
            if !layer.may_import.contains(&theirs.name) {
                let allowed = if layer.may_import.is_empty() {
                    "nothing".to_string()
                } else {
                    layer.may_import.join(", ")
                };
                broken.push(format!(
                    "{file}:{}: imports {:?} ({target}, layer {}), but layer {} may import {allowed}",
                    i.line, i.specifier, theirs.name, layer.name
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports against ARCHITECTURE.md's TypeScript import rules: {broken:#?}"
    );
}

#[test]
fn ts_no_import_circle() {
    let graph: Vec<(String, Vec<String>)> = ts_graph()
        .into_iter()
        .map(|(f, imports)| (f, imports.into_iter().filter_map(|i| i.target).collect()))
        .collect();
    if let Some(circle) = ts_circle(&graph) {
        panic!("an import circle in js/src: {}", circle.join(" → "));
    }
}

#[test]
fn ts_imports_are_read_in_every_form() {
    let aliases = vec![(
        "breakwater/internal".to_string(),
        "js/src/internal.ts".to_string(),
    )];
    let text = [
        "// import { no } from './comment.js';",
        "/**",
        " * import { no } from './doc.js';",
        " */",
        "import { a } from './a.js';",
        "import type { B } from '../b.js';",
        "import {",
        "  c,",
        "  type D,",
        "} from \"./c.js\";",
        "import './side.js';",
        "export * from './e.js';",
        "export { f } from 'breakwater/internal';",
        "export type { G };",
        "import { DurableObject } from 'cloudflare:workers';",
        "  const body = await import('./body.js');",
        "const s = `needs breakwater/adaptive: import { X } from 'breakwater/adaptive'`;",
    ]
    .join("\n");
    let found: Vec<(usize, String, Option<String>)> =
        ts_imports("js/src/shared/x.ts", &text, &aliases)
            .into_iter()
            .map(|i| (i.line, i.specifier, i.target))
            .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        found,
        vec![
            (5, "./a.js".to_string(), some("js/src/shared/a.ts")),
            (6, "../b.js".to_string(), some("js/src/b.ts")),
            (7, "./c.js".to_string(), some("js/src/shared/c.ts")),
            (11, "./side.js".to_string(), some("js/src/shared/side.ts")),
            (12, "./e.js".to_string(), some("js/src/shared/e.ts")),
            (
                13,
                "breakwater/internal".to_string(),
                some("js/src/internal.ts")
            ),
            (15, "cloudflare:workers".to_string(), None),
            (16, "./body.js".to_string(), some("js/src/shared/body.ts")),
        ]
    );
    let circle = ts_circle(&[
        ("a".to_string(), vec!["b".to_string()]),
        ("b".to_string(), vec!["c".to_string()]),
        ("c".to_string(), vec!["a".to_string()]),
    ]);
    assert_eq!(
        circle,
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        ts_circle(&[
            ("a".to_string(), vec!["b".to_string()]),
            ("b".to_string(), vec![])
        ]),
        None
    );
}
// ----- end of the TypeScript import rules -----

// ---------------------------------------------------------------------------------------------
// The Rust import rules: `## Import rules` / `### Rust` in ARCHITECTURE.md, checked against every
// `crate::` (and `breakwater::` in the binaries, and `super::` that leaves a module's folder)
// path under src/. Everything below is prefixed `rust_`.
// ---------------------------------------------------------------------------------------------

/// One row of the table: a layer, its modules (paths under src/), the layers it may use.
#[derive(Debug)]
struct RustLayer {
    name: String,
    modules: Vec<String>,
    may_use: Vec<String>,
}

/// The rows of the `| layer | modules | may use |` table under `### Rust` of `## Import rules`.
fn rust_rules(doc: &str) -> Result<Vec<RustLayer>, String> {
    let section = doc
        .split("\n## Import rules\n")
        .nth(1)
        .ok_or("ARCHITECTURE.md has no `## Import rules` section")?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let rust = section
        .split("\n### Rust\n")
        .nth(1)
        .ok_or("`## Import rules` has no `### Rust` subsection")?;
    let rust = rust.split("\n### ").next().unwrap_or_default();
    let rows: Vec<Vec<&str>> = rust
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect()
        })
        .collect();
    match rows.first().map(Vec::as_slice) {
        Some(["layer", "modules", "may use"]) => {}
        other => return Err(format!("the Rust table's header is {other:?}")),
    }
    let mut layers = Vec::new();
    for row in rows.iter().skip(2) {
        let [name, modules, may_use] = row.as_slice() else {
            return Err(format!(
                "a row of the Rust table has {} cells: {row:?}",
                row.len()
            ));
        };
        let modules: Vec<String> = backticked(modules).into_iter().map(String::from).collect();
        if modules.is_empty() || modules.iter().any(|m| !m.starts_with("src/")) {
            return Err(format!(
                "layer {name}: modules must be backticked paths under src/"
            ));
        }
        let may_use = match *may_use {
            "—" => Vec::new(),
            list => list.split(',').map(|l| l.trim().to_string()).collect(),
        };
        layers.push(RustLayer {
            name: name.to_string(),
            modules,
            may_use,
        });
    }
    for layer in &layers {
        for used in &layer.may_use {
            if !layers.iter().any(|l| &l.name == used) {
                return Err(format!(
                    "layer {} may use {used:?}, which is no layer",
                    layer.name
                ));
            }
        }
    }
    Ok(layers)
}

/// The module path (`["shared", "json"]`) of a table entry or of a file under src/.
fn rust_module_of(path: &str) -> Vec<String> {
    let path = path.strip_prefix("src/").unwrap_or(path);
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".rs").unwrap_or(path);
    let path = path.strip_suffix("/mod").unwrap_or(path);
    if path == "lib" {
        return Vec::new();
    }
    path.split('/').map(String::from).collect()
}

/// The entry (`src/breaker/`, `src/error.rs`) a file belongs to: the longest that is its prefix.
fn rust_entry_of_file<'a>(layers: &'a [RustLayer], file: &str) -> Option<(&'a str, &'a str)> {
    layers
        .iter()
        .flat_map(|l| l.modules.iter().map(move |m| (l.name.as_str(), m.as_str())))
        .filter(|(_, m)| {
            if m.ends_with('/') {
                file.starts_with(m)
            } else {
                file == *m
            }
        })
        .max_by_key(|(_, m)| m.len())
}

/// The entry a module path belongs to: the longest whose module path is its prefix (the crate
/// root's is empty).
fn rust_entry_of_module<'a>(
    layers: &'a [RustLayer],
    module: &[String],
) -> Option<(&'a str, &'a str)> {
    layers
        .iter()
        .flat_map(|l| l.modules.iter().map(move |m| (l.name.as_str(), m.as_str())))
        .filter(|(_, m)| !m.starts_with("src/bin/"))
        .filter(|(_, m)| module.starts_with(&rust_module_of(m)))
        .max_by_key(|(_, m)| rust_module_of(m).len())
}

/// The text with comments and the contents of string and character literals blanked (lines
/// kept), so that only code is read.
fn rust_code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if !ident_before && (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r')) && {
            let start = if at(0) == 'r' { 1 } else { 2 };
            let hashes = (start..).take_while(|&k| at(k) == '#').count();
            at(start + hashes) == '"'
        } {
            // A raw string: `r"…"`, `r#"…"#`, `br"…"`.
            let start = if at(0) == 'r' { 1 } else { 2 };
            let hashes = (start..).take_while(|&k| at(k) == '#').count();
            let close: String = core::iter::once('"')
                .chain(core::iter::repeat_n('#', hashes))
                .collect();
            for _ in 0..start + hashes + 1 {
                out.push(' ');
                i += 1;
            }
            while i < c.len() && !c[i..].iter().take(close.len()).copied().eq(close.chars()) {
                out.push(blank(c[i]));
                i += 1;
            }
            for _ in 0..close.len().min(c.len() - i) {
                out.push(' ');
                i += 1;
            }
        } else if at(0) == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if at(0) == '\'' && (at(1) == '\\' || at(2) == '\'') {
            // A character literal (a lifetime has no closing quote).
            let end = (i + 2..c.len())
                .find(|&k| c[k] == '\'')
                .unwrap_or(c.len() - 1);
            while i <= end {
                out.push(' ');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// One path a file names: its line, the path as written, the module path it resolves to, and,
/// when it goes through a re-export of the crate root (`crate::Breaker`, not
/// `crate::breaker::Breaker`), that name and its path from the module that defines it
/// (`breaker::Breaker`).
#[derive(Debug)]
struct RustUse {
    line: usize,
    written: String,
    target: Vec<String>,
    via_root: Option<(String, String)>,
}

fn rust_ident(c: &[char], mut i: usize) -> (String, usize) {
    let start = i;
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
        i += 1;
    }
    (c[start..i].iter().collect(), i)
}

fn rust_skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Reads a use tree (or a path in code) after `prefix::`: every full path it names.
fn rust_use_tree(c: &[char], i: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut segs = prefix;
    let mut i = rust_skip_ws(c, i);
    loop {
        match c.get(i) {
            Some('{') => {
                let mut paths = Vec::new();
                i += 1;
                loop {
                    i = rust_skip_ws(c, i);
                    match c.get(i) {
                        Some('}') => return (paths, i + 1),
                        Some(',') => i += 1,
                        None => return (paths, i),
                        _ => {
                            let (mut sub, next) = rust_use_tree(c, i, segs.clone());
                            if next == i {
                                return (paths, i);
                            }
                            paths.append(&mut sub);
                            i = next;
                        }
                    }
                }
            }
            Some('*') => return (vec![segs], i + 1),
            Some(ch) if ch.is_alphabetic() || *ch == '_' => {
                let (word, next) = rust_ident(c, i);
                i = next;
                if word != "self" {
                    segs.push(word);
                }
                let after = rust_skip_ws(c, i);
                if c.get(after) == Some(&':') && c.get(after + 1) == Some(&':') {
                    i = rust_skip_ws(c, after + 2);
                    continue;
                }
                let (word, next) = rust_ident(c, after);
                if word == "as" {
                    let (_, next) = rust_ident(c, rust_skip_ws(c, next));
                    i = next;
                }
                return (vec![segs], i);
            }
            _ => return (vec![segs], i),
        }
    }
}

/// Every path `file` (under src/) names in the crate, resolved to module paths: `crate::…`
/// through the crate root's re-exports (`roots`: a name to the module it comes from), `super::`
/// from the file's module and its inline modules, and `breakwater::…` in the binaries.
fn rust_uses(
    file: &str,
    text: &str,
    roots: &std::collections::BTreeMap<String, Vec<String>>,
) -> Result<Vec<RustUse>, String> {
    let bin = file.starts_with("src/bin/");
    let code = rust_code_only(text);
    let c: Vec<char> = code.chars().collect();
    // Inline modules open at an indentation (rustfmt's), by line.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut inline_at_line: Vec<Vec<String>> = Vec::new();
    for line in code.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if !trimmed.is_empty() {
            inline.retain(|(at, _)| *at < indent || (*at == indent && !trimmed.starts_with('}')));
        }
        inline_at_line.push(inline.iter().map(|(_, m)| m.clone()).collect());
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "mod") {
            let opens = words.last() == Some(&"{");
            if opens && words.len() == k + 3 && words[..k].iter().all(|w| w.starts_with("pub")) {
                inline.push((indent, words[k + 1].to_string()));
            }
        }
    }
    let own = rust_module_of(file);
    let mut found = Vec::new();
    let mut line = 0;
    let mut i = 0;
    while i < c.len() {
        if c[i] == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        let starts_word = i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if !starts_word || !(c[i].is_alphabetic() || c[i] == '_') {
            i += 1;
            continue;
        }
        let (word, next) = rust_ident(&c, i);
        let dollar = i > 0 && c[i - 1] == '$';
        let colons = c.get(next) == Some(&':') && c.get(next + 1) == Some(&':');
        let kind = match word.as_str() {
            "crate" if colons && !bin => Some("crate"),
            "breakwater" if colons && bin && !dollar => Some("crate"),
            "super" if colons && !bin => Some("super"),
            _ => None,
        };
        let Some(kind) = kind else {
            i = next;
            continue;
        };
        let start = i;
        let mut base = Vec::new();
        let mut j = next + 2;
        if kind == "super" {
            let mut module = own.clone();
            module.extend(inline_at_line.get(line).cloned().unwrap_or_default());
            module.pop();
            loop {
                let (w, n) = rust_ident(&c, j);
                if w == "super" && c.get(n) == Some(&':') && c.get(n + 1) == Some(&':') {
                    module.pop();
                    j = n + 2;
                } else {
                    break;
                }
            }
            base = module;
        }
        let (paths, end) = rust_use_tree(&c, j, Vec::new());
        let written: String = c[start..end.max(start)].iter().collect();
        let written = written.split_whitespace().collect::<Vec<_>>().join(" ");
        for path in paths {
            let via_root = match (kind, path.first().and_then(|f| Some((f, roots.get(f)?)))) {
                ("crate", Some((first, module))) if module[..] != [first.as_str()] => {
                    Some((first.clone(), format!("{}::{first}", module.join("::"))))
                }
                _ => None,
            };
            let target = if kind == "super" {
                base.iter().cloned().chain(path).collect()
            } else {
                match path.first() {
                    None => Vec::new(),
                    Some(first) => match roots.get(first) {
                        Some(module) => module
                            .iter()
                            .cloned()
                            .chain(path.into_iter().skip(1))
                            .collect(),
                        None => {
                            return Err(format!(
                                "{file}:{}: `{written}`: {first:?} is neither a module nor a name \
                                 the crate root re-exports",
                                line + 1
                            ))
                        }
                    },
                }
            };
            found.push(RustUse {
                line: line + 1,
                written: written.clone(),
                target,
                via_root,
            });
        }
        line += c[start..end.max(start)]
            .iter()
            .filter(|&&ch| ch == '\n')
            .count();
        i = end.max(next);
    }
    Ok(found)
}

/// The crate root's modules (each to itself) and re-exported names (each to its module).
fn rust_roots(lib: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut roots = std::collections::BTreeMap::new();
    let code = rust_code_only(lib);
    let c: Vec<char> = code.chars().collect();
    for statement in code.split(';') {
        let words: Vec<&str> = statement.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "mod") {
            if let Some(name) = words.get(k + 1) {
                roots.insert(name.to_string(), vec![name.to_string()]);
            }
        }
    }
    let mut i = 0;
    while let Some(at) = code[i..].find("pub use ") {
        let start = code[..i + at].chars().count() + "pub use ".len();
        let (paths, end) = rust_use_tree(&c, start, Vec::new());
        for mut path in paths {
            if let Some(name) = path.pop() {
                roots.insert(name, path);
            }
        }
        i = c[..end].iter().map(|ch| ch.len_utf8()).sum();
    }
    roots
}

/// Every Rust file under src/, as (path from the root, text).
fn rust_files() -> Vec<(String, String)> {
    let mut paths = Vec::new();
    files(&Path::new(ROOT).join("src"), &[".rs"], &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(ROOT)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            let rel = rel.trim_start_matches('/').to_string();
            let text = fs::read_to_string(&p).unwrap_or_default();
            (rel, text)
        })
        .collect()
}

/// The edges between entries (`src/shared/` → `src/breaker/`) with where each is first seen,
/// and the failures: files in no layer, paths that resolve nowhere, uses the table forbids.
type RustEdges = std::collections::BTreeMap<(String, String), String>;

fn rust_check(layers: &[RustLayer], files: &[(String, String)]) -> (RustEdges, Vec<String>) {
    let mut failures = Vec::new();
    let mut edges = RustEdges::new();
    let lib = files
        .iter()
        .find(|(f, _)| f == "src/lib.rs")
        .map(|(_, t)| t.as_str())
        .unwrap_or_default();
    let roots = rust_roots(lib);
    for (file, text) in files {
        let Some((layer, entry)) = rust_entry_of_file(layers, file) else {
            failures.push(format!(
                "{file} belongs to no layer of the Rust import rules"
            ));
            continue;
        };
        let uses = match rust_uses(file, text, &roots) {
            Ok(u) => u,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let rule = layers.iter().find(|l| l.name == layer);
        for u in uses {
            let Some((used_layer, used_entry)) = rust_entry_of_module(layers, &u.target) else {
                failures.push(format!(
                    "{file}:{}: `{}` names crate::{}, in no layer",
                    u.line,
                    u.written,
                    u.target.join("::")
                ));
                continue;
            };
            if used_entry == entry {
                continue;
            }
            edges
                .entry((entry.to_string(), used_entry.to_string()))
                .or_insert_with(|| format!("{file}:{}: `{}`", u.line, u.written));
            let allowed = used_layer == layer
                || rule.is_some_and(|r| r.may_use.iter().any(|m| m == used_layer));
            if !allowed {
                let may = rule.map(|r| r.may_use.join(", ")).unwrap_or_default();
                let may = if may.is_empty() {
                    "—".to_string()
                } else {
                    may
                };
                failures.push(format!(
                    "{file}:{}: `{}`: the {layer} layer may not use the {used_layer} layer \
                     ({used_entry}); it may use: {may}",
                    u.line, u.written
                ));
            }
        }
    }
    (edges, failures)
}

/// A circle in `edges` (each node to those it uses), as the nodes in order, if there is one.
fn rust_circle(edges: &[(String, String)]) -> Option<Vec<String>> {
    let nodes: std::collections::BTreeSet<&String> =
        edges.iter().flat_map(|(a, b)| [a, b]).collect();
    // 0: not seen, 1: on the path, 2: done.
    let mut mark: std::collections::BTreeMap<&String, u8> = nodes.iter().map(|n| (*n, 0)).collect();
    fn visit<'a>(
        n: &'a String,
        edges: &'a [(String, String)],
        mark: &mut std::collections::BTreeMap<&'a String, u8>,
        path: &mut Vec<&'a String>,
    ) -> Option<Vec<String>> {
        mark.insert(n, 1);
        path.push(n);
        for (_, to) in edges.iter().filter(|(from, _)| from == n) {
            match mark.get(to) {
                Some(1) => {
                    let from = path.iter().position(|p| *p == to).unwrap_or(0);
                    let mut circle: Vec<String> =
                        path[from..].iter().map(|s| s.to_string()).collect();
                    circle.push(to.clone());
                    return Some(circle);
                }
                Some(0) => {
                    if let Some(c) = visit(to, edges, mark, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        mark.insert(n, 2);
        None
    }
    for n in &nodes {
        if mark.get(n) == Some(&0) {
            if let Some(c) = visit(n, edges, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The circles among modules, then among layers, each worded with where its edges are.
fn rust_circles(layers: &[RustLayer], edges: &RustEdges) -> Vec<String> {
    let mut failures = Vec::new();
    let describe = |circle: &[String], at: &dyn Fn(&str, &str) -> String| {
        let steps: Vec<String> = circle.windows(2).map(|w| at(&w[0], &w[1])).collect();
        format!("{}\n  {}", circle.join(" → "), steps.join("\n  "))
    };
    let modules: Vec<(String, String)> = edges.keys().cloned().collect();
    if let Some(circle) = rust_circle(&modules) {
        let at = |a: &str, b: &str| {
            edges
                .get(&(a.to_string(), b.to_string()))
                .cloned()
                .unwrap_or_default()
        };
        failures.push(format!(
            "modules import each other in a circle: {}",
            describe(&circle, &at)
        ));
    }
    let layer_of = |entry: &str| {
        layers
            .iter()
            .find(|l| l.modules.iter().any(|m| m == entry))
            .map(|l| l.name.clone())
            .unwrap_or_default()
    };
    let mut by_layer: std::collections::BTreeMap<(String, String), String> = Default::default();
    for ((a, b), at) in edges {
        let (la, lb) = (layer_of(a), layer_of(b));
        if la != lb {
            by_layer.entry((la, lb)).or_insert_with(|| at.clone());
        }
    }
    let layer_edges: Vec<(String, String)> = by_layer.keys().cloned().collect();
    if let Some(circle) = rust_circle(&layer_edges) {
        let at = |a: &str, b: &str| {
            by_layer
                .get(&(a.to_string(), b.to_string()))
                .cloned()
                .unwrap_or_default()
        };
        failures.push(format!(
            "layers import each other in a circle: {}",
            describe(&circle, &at)
        ));
    }
    failures
}

/// Each file in a layer with its layer, its entry and its uses (a file in no layer, or whose
/// paths do not resolve, is `rust_check`'s to report).
fn rust_file_uses<'a>(
    layers: &'a [RustLayer],
    files: &'a [(String, String)],
) -> Vec<(&'a str, &'a str, &'a str, Vec<RustUse>)> {
    let lib = files
        .iter()
        .find(|(f, _)| f == "src/lib.rs")
        .map(|(_, t)| t.as_str())
        .unwrap_or_default();
    let roots = rust_roots(lib);
    files
        .iter()
        .filter_map(|(file, text)| {
            let (layer, entry) = rust_entry_of_file(layers, file)?;
            let uses = rust_uses(file, text, &roots).ok()?;
            Some((file.as_str(), layer, entry, uses))
        })
        .collect()
}

/// The edges between the modules of one entry (`src/worker/client.rs` → `src/worker/routes/`),
/// which the edges between entries do not show. A use is an edge between the two modules just
/// below the innermost module holding both the file and what it names: to its siblings a
/// folder's files are the folder (`src/worker/routes/demo.rs` using the client is
/// `src/worker/routes/` using it), and a module naming what an ancestor or a descendant of its
/// own holds is no edge.
fn rust_inner_edges(layers: &[RustLayer], files: &[(String, String)]) -> RustEdges {
    let modules: Vec<Vec<String>> = files.iter().map(|(f, _)| rust_module_of(f)).collect();
    // A module by its path: its folder if files lie below it, else its file.
    let node = |m: &[String]| {
        if modules
            .iter()
            .any(|o| o.len() > m.len() && o.starts_with(m))
        {
            format!("src/{}/", m.join("/"))
        } else {
            format!("src/{}.rs", m.join("/"))
        }
    };
    let mut edges = RustEdges::new();
    for (file, _, entry, uses) in rust_file_uses(layers, files) {
        let from = rust_module_of(file);
        for u in uses {
            if rust_entry_of_module(layers, &u.target).map(|(_, e)| e) != Some(entry) {
                continue;
            }
            let Some(to) = modules
                .iter()
                .filter(|m| u.target.starts_with(m))
                .max_by_key(|m| m.len())
            else {
                continue;
            };
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common >= from.len() || common >= to.len() {
                continue;
            }
            edges
                .entry((node(&from[..=common]), node(&to[..=common])))
                .or_insert_with(|| format!("{file}:{}: `{}`", u.line, u.written));
        }
    }
    edges
}

/// A circle among the modules of one entry (`rust_inner_edges`), worded with where its edges are.
fn rust_inner_circles(edges: &RustEdges) -> Vec<String> {
    let keys: Vec<(String, String)> = edges.keys().cloned().collect();
    let Some(circle) = rust_circle(&keys) else {
        return Vec::new();
    };
    let steps: Vec<String> = circle
        .windows(2)
        .map(|w| {
            edges
                .get(&(w[0].clone(), w[1].clone()))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    vec![format!(
        "modules within an entry import each other in a circle: {}\n  {}",
        circle.join(" → "),
        steps.join("\n  ")
    )]
}

/// Every path by which a module of a layer that may use nothing (the core) names an item
/// through the crate root's re-exports (`crate::Breaker`): an arrow up to the crate root, whose
/// `pub use`s are the public API; the core names the module that defines it
/// (`crate::breaker::Breaker`).
fn rust_arrows_up(layers: &[RustLayer], files: &[(String, String)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (file, layer, _, uses) in rust_file_uses(layers, files) {
        if !layers
            .iter()
            .any(|l| l.name == layer && l.may_use.is_empty())
        {
            continue;
        }
        for u in uses {
            if let Some((name, defined)) = &u.via_root {
                failures.push(format!(
                    "{file}:{}: `{}`: the {layer} layer names {name} through the crate root's \
                     re-export; name its module: crate::{defined}",
                    u.line, u.written
                ));
            }
        }
    }
    // A group naming two items of one re-export (`crate::E::{A, B}`) is one arrow.
    failures.dedup();
    failures
}

#[test]
fn rust_every_file_uses_only_the_layers_its_import_rules_allow() {
    let layers = rust_rules(&doc()).unwrap_or_else(|e| panic!("{e}"));
    let files = rust_files();
    assert!(
        files.len() > 50,
        "the sources are read ({} files)",
        files.len()
    );
    let (edges, failures) = rust_check(&layers, &files);
    assert!(
        failures.is_empty(),
        "ARCHITECTURE.md's Rust import rules are broken:\n{}",
        failures.join("\n")
    );
    // The table is not vacuous: the core is used, and uses nothing else.
    assert!(edges.keys().any(|(_, to)| to == "src/breaker/"));
}

#[test]
fn rust_no_modules_nor_layers_import_each_other_in_a_circle() {
    let layers = rust_rules(&doc()).unwrap_or_else(|e| panic!("{e}"));
    let (edges, _) = rust_check(&layers, &rust_files());
    let failures = rust_circles(&layers, &edges);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rust_no_modules_within_an_entry_import_each_other_in_a_circle() {
    let layers = rust_rules(&doc()).unwrap_or_else(|e| panic!("{e}"));
    let edges = rust_inner_edges(&layers, &rust_files());
    // Not vacuous: the Worker's modules use each other.
    assert!(
        edges
            .keys()
            .any(|(from, _)| from.starts_with("src/worker/")),
        "{edges:?}"
    );
    let failures = rust_inner_circles(&edges);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rust_the_core_names_nothing_through_the_crate_roots_re_exports() {
    let layers = rust_rules(&doc()).unwrap_or_else(|e| panic!("{e}"));
    let failures = rust_arrows_up(&layers, &rust_files());
    assert!(
        failures.is_empty(),
        "arrows up to the crate root (src/lib.rs's `pub use`s):\n{}",
        failures.join("\n")
    );
}

/// The checks fail, naming the file, the line and the rule: a core module that uses the Rust
/// host, a file in no layer, a circle of two core modules.
#[test]
fn rust_rules_name_a_forbidden_use_a_stray_file_and_a_circle() {
    let doc = "\n## Import rules\n\n### Rust\n\n| layer | modules | may use |\n| --- | --- | --- |\n\
               | core | `src/a.rs`, `src/b/` | — |\n| host | `src/host.rs` | core |\n\
               | crate root | `src/lib.rs` | core, host |\n\n### TypeScript\n\n| layer | files | may import |\n";
    let layers = rust_rules(doc).unwrap();
    assert_eq!(layers.len(), 3);
    assert_eq!(layers[1].may_use, ["core"]);
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file(
            "src/lib.rs",
            "mod a;\nmod b;\npub mod host;\npub use host::{Host, Guard as G};\n",
        ),
        file(
            "src/a.rs",
            "//! Not a use: crate::host::Host.\nuse core::fmt;\n\nfn f() -> crate::Host {\n    \
             let s = \"crate::host\";\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        file("src/b/mod.rs", "mod c;\npub use c::C;\n"),
        file(
            "src/b/c.rs",
            "use super::super::a::f;\nuse crate::{b::C, host::Guard};\n",
        ),
        file("src/host.rs", "use crate::a::{f, self};\n"),
        file("src/stray.rs", ""),
    ];
    let (edges, failures) = rust_check(&layers, &files);
    assert_eq!(
        failures,
        [
            "src/a.rs:4: `crate::Host`: the core layer may not use the host layer (src/host.rs); \
             it may use: —",
            "src/b/c.rs:2: `crate::{b::C, host::Guard}`: the core layer may not use the host \
             layer (src/host.rs); it may use: —",
            "src/stray.rs belongs to no layer of the Rust import rules",
        ]
    );
    let circles = rust_circles(&layers, &edges);
    assert_eq!(circles.len(), 2, "{circles:?}");
    assert!(
        circles[0].starts_with(
            "modules import each other in a circle: src/a.rs → src/host.rs → src/a.rs"
        ),
        "{}",
        circles[0]
    );
    assert!(
        circles[0].contains("src/host.rs:1: `crate::a::{f, self}`"),
        "{}",
        circles[0]
    );
    assert!(
        circles[1].starts_with("layers import each other in a circle: core → host → core"),
        "{}",
        circles[1]
    );
    // `super::` inside a file's inline module stays in the file; in the folder's files, it
    // stays in the folder, and `super::super::` leaves it.
    assert!(edges.contains_key(&("src/b/".to_string(), "src/a.rs".to_string())));
    assert!(!edges.keys().any(|(from, to)| from == to));
}

/// A circle between the modules of one entry is named, which the circles between entries do not
/// show: `src/b/c.rs` uses `src/b/d/e.rs` (its folder `src/b/d/` to its sibling), which uses
/// `src/b/c.rs`. A file naming its folder's `mod.rs` is no edge.
#[test]
fn rust_rules_name_a_circle_between_the_modules_of_an_entry() {
    let doc =
        "\n## Import rules\n\n### Rust\n\n| layer | modules | may use |\n| --- | --- | --- |\n\
               | core | `src/a.rs`, `src/b/` | — |\n| crate root | `src/lib.rs` | core |\n";
    let layers = rust_rules(doc).unwrap();
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file("src/lib.rs", "mod a;\nmod b;\n"),
        file("src/a.rs", "use crate::b::f;\n"),
        file(
            "src/b/mod.rs",
            "mod c;\nmod d;\npub use c::C;\npub(crate) fn f() {}\n",
        ),
        file(
            "src/b/c.rs",
            "use super::d::e::E;\nuse super::f;\npub struct C;\n",
        ),
        file("src/b/d/mod.rs", "mod e;\n"),
        file("src/b/d/e.rs", "pub struct E;\nuse crate::b::c::C;\n"),
    ];
    let (edges, failures) = rust_check(&layers, &files);
    assert!(failures.is_empty(), "{failures:?}");
    assert!(rust_circles(&layers, &edges).is_empty());
    let inner = rust_inner_edges(&layers, &files);
    let pairs: Vec<(&str, &str)> = inner
        .keys()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("src/b/c.rs", "src/b/d/"), ("src/b/d/", "src/b/c.rs")]
    );
    let circles = rust_inner_circles(&inner);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(
        circles[0].starts_with(
            "modules within an entry import each other in a circle: src/b/c.rs → src/b/d/ → \
             src/b/c.rs"
        ),
        "{}",
        circles[0]
    );
    assert!(
        circles[0].contains("src/b/d/e.rs:2: `crate::b::c::C`"),
        "{}",
        circles[0]
    );
}

/// A core file naming an item through the crate root's re-exports is named, with the path to
/// name instead; naming the defining module is not, nor is another layer's use of a re-export.
/// The layer rules alone do not see it (the re-export resolves to a core module).
#[test]
fn rust_rules_name_a_core_use_through_the_crate_roots_re_exports() {
    let doc =
        "\n## Import rules\n\n### Rust\n\n| layer | modules | may use |\n| --- | --- | --- |\n\
               | core | `src/a.rs`, `src/b/` | — |\n| host | `src/host.rs` | core |\n\
               | crate root | `src/lib.rs` | core, host |\n";
    let layers = rust_rules(doc).unwrap();
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let files = [
        file(
            "src/lib.rs",
            "mod a;\nmod b;\nmod host;\npub use a::A;\npub use b::{c::C, B};\n",
        ),
        file(
            "src/a.rs",
            "pub struct A;\nfn f() -> crate::b::B {\n    let _ = crate::A;\n}\n",
        ),
        file(
            "src/b/mod.rs",
            "mod c;\npub struct B;\nuse crate::{a::A, C};\n",
        ),
        file("src/b/c.rs", "pub struct C;\n"),
        file("src/host.rs", "use crate::{A, B};\n"),
    ];
    let (_, failures) = rust_check(&layers, &files);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(
        rust_arrows_up(&layers, &files),
        [
            "src/a.rs:3: `crate::A`: the core layer names A through the crate root's re-export; \
             name its module: crate::a::A",
            "src/b/mod.rs:3: `crate::{a::A, C}`: the core layer names C through the crate root's \
             re-export; name its module: crate::b::c::C",
        ]
    );
}

/// The most lines a function outside the simulator may take, from its `fn` line to its closing
/// brace: a screen. (js/src has its twin in tests/js/function-length.test.mjs.)
const MAX_FUNCTION_LINES: usize = 80;

/// Every function of `code` (as [`rust_code_only`] gives it) longer than `max` lines, as
/// `name:line (n lines)`.
fn long_functions(code: &str, max: usize) -> Vec<String> {
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut long = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("fn ").map(|k| from + k) {
        from = i + 3;
        if i > 0 && ident(b[i - 1]) {
            continue;
        }
        let name: String = code[i + 3..]
            .trim_start()
            .chars()
            .take_while(|&c| c.is_alphanumeric() || c == '_')
            .collect();
        // The body opens at the first `{` before any `;` (a declaration has none).
        let Some(open) = code[i..].find(['{', ';']).map(|k| i + k) else {
            break;
        };
        if name.is_empty() || b[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let close = (open..b.len()).find(|&k| {
            match b[k] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => return false,
            }
            depth == 0
        });
        let Some(close) = close else { break };
        let lines = line_of(close) - line_of(i) + 1;
        if lines > max {
            long.push(format!("{name}:{} ({lines} lines)", line_of(i)));
        }
    }
    long
}

#[test]
fn no_function_outside_the_simulator_is_longer_than_a_screen() {
    let mut long = Vec::new();
    for (path, text) in rust_files() {
        if path.starts_with("src/sim/") {
            continue;
        }
        for f in long_functions(&rust_code_only(&text), MAX_FUNCTION_LINES) {
            long.push(format!("{path}: {f}"));
        }
    }
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
}

/// The measure finds a long function, a long one nested in a short one's neighbour, and a long
/// method; it passes a function of exactly the limit, a declaration without a body, and braces
/// in strings and comments.
#[test]
fn the_function_measure_finds_long_bodies_and_passes_the_rest() {
    let body = |n: usize| "    x += 1;\n".repeat(n);
    let text = format!(
        "fn fits() {{\n{}}}\n\
         trait T {{ fn declared(&self); }}\n\
         pub(crate) fn long<T: Into<u8>>(t: T) -> u8 where T: Copy {{\n{}    let s = \"{{{{\"; // }}\n}}\n\
         impl S {{\n    pub async fn method(&self) {{\n{}    }}\n}}\n",
        body(78),
        body(80),
        body(79),
    );
    let long = long_functions(&rust_code_only(&text), MAX_FUNCTION_LINES);
    assert_eq!(long.len(), 2, "{long:?}");
    assert!(
        long[0].starts_with("long:") && long[0].ends_with("(83 lines)"),
        "{long:?}"
    );
    assert!(
        long[1].starts_with("method:") && long[1].ends_with("(81 lines)"),
        "{long:?}"
    );
}
