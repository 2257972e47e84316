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
