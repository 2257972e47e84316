//! README.md is also the crate's page on crates.io and docs.rs, and travels in the published
//! crate without the rest of the repository: its links to the repository's files are absolute,
//! under Cargo.toml's `repository`, and name files that exist. A repository check: not in the
//! published crate.

use std::fs;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(name: &str) -> String {
    fs::read_to_string(Path::new(ROOT).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The value of a `key = "…"` line of Cargo.toml's [package].
fn manifest_value(key: &str) -> String {
    let manifest = read("Cargo.toml");
    let prefix = format!("{key} = \"");
    manifest
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.strip_suffix('"'))
        .unwrap_or_else(|| panic!("Cargo.toml has no {key}"))
        .to_string()
}

/// The targets of the README's `[text](target)` links, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Inline code can hold `](` too: drop it.
        let prose: String = line.split('`').step_by(2).collect();
        let mut rest = prose.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn links_to_repository_files_are_absolute_and_name_existing_files() {
    let repository = manifest_value("repository");
    assert_eq!(
        manifest_value("homepage"),
        repository,
        "homepage and repository"
    );
    let files = format!("{repository}/blob/main/");
    let targets = link_targets(&read("README.md"));
    assert!(!targets.is_empty(), "no links found");
    let mut wrong = Vec::new();
    for target in &targets {
        if target.starts_with('#') {
            continue;
        } else if let Some(path) = target.strip_prefix(&files) {
            let path = path.split('#').next().unwrap_or_default();
            if !Path::new(ROOT).join(path).exists() {
                wrong.push(format!("{target}: no file {path}"));
            }
        } else if target.contains("/breakwater/") && target.contains("github.com") {
            wrong.push(format!("{target}: not under {files}"));
        } else if !target.starts_with("https://") && !target.starts_with("http://") {
            wrong.push(format!(
                "{target}: relative, so nothing outside the repository"
            ));
        }
    }
    assert!(wrong.is_empty(), "README.md:\n{}", wrong.join("\n"));
}
