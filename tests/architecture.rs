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
