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

/// The public docs: the README, the package's README, the guides, the starters' READMEs and the
/// notes beside the dashboard and the scenarios (those that exist: a repository check).
fn public_docs() -> Vec<String> {
    let mut docs: Vec<String> = [
        "README.md",
        "js/README.md",
        "ARCHITECTURE.md",
        "dashboards/README.md",
        "scenarios/README.md",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for dir in ["docs", "starters"] {
        let Ok(entries) = fs::read_dir(Path::new(ROOT).join(dir)) else {
            continue;
        };
        let mut found: Vec<String> = entries
            .filter_map(Result::ok)
            .flat_map(|e| {
                let p = e.path();
                if p.is_dir() {
                    vec![p.join("README.md")]
                } else {
                    vec![p]
                }
            })
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.exists())
            .filter_map(|p| {
                p.strip_prefix(ROOT)
                    .ok()
                    .map(|r| r.to_string_lossy().into_owned())
            })
            .collect();
        found.sort();
        docs.extend(found);
    }
    docs.retain(|d| Path::new(ROOT).join(d).exists());
    docs
}

#[test]
fn links_to_repository_files_are_absolute_and_name_existing_files() {
    let repository = manifest_value("repository");
    assert_eq!(
        manifest_value("homepage"),
        repository,
        "homepage and repository"
    );
    // Files are linked under blob/main, pictures under raw/main.
    let prefixes = [
        format!("{repository}/blob/main/"),
        format!("{repository}/raw/main/"),
        format!("{repository}/tree/main/"),
    ];
    let mut wrong = Vec::new();
    let mut links = 0;
    for doc in public_docs() {
        let targets = link_targets(&read(&doc));
        links += targets.len();
        for target in &targets {
            if target.starts_with('#') {
                continue;
            } else if let Some(path) = prefixes
                .iter()
                .find_map(|p| target.strip_prefix(p.as_str()))
            {
                let path = path.split('#').next().unwrap_or_default();
                if !Path::new(ROOT).join(path).exists() {
                    wrong.push(format!("{doc}: {target}: no file {path}"));
                }
            } else if target.contains("/breakwater/") && target.contains("github.com") {
                wrong.push(format!("{doc}: {target}: not under {}", prefixes[0]));
            } else if !target.starts_with("https://") && !target.starts_with("http://") {
                wrong.push(format!(
                    "{doc}: {target}: relative, so nothing outside the repository"
                ));
            }
        }
    }
    assert!(links >= 10, "only {links} links found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Words that mean something only to the people who wrote breakwater (the articles it came
/// from are "seeds" in its history) stay out of what users read.
#[test]
fn public_docs_speak_no_private_jargon() {
    let mut found = Vec::new();
    for doc in public_docs() {
        for (i, line) in read(&doc).lines().enumerate() {
            let lower = line.to_lowercase();
            let seed = lower.match_indices("seed").any(|(at, _)| {
                let rest = lower[at + 4..].trim_start_matches([' ', '-', '_']);
                rest.starts_with("00") || rest.starts_with("s 00")
            });
            if seed {
                found.push(format!("{doc}:{}: {line}", i + 1));
            }
        }
    }
    assert!(found.is_empty(), "private jargon:\n{}", found.join("\n"));
}

/// Every `BREAKERS = '''…'''` a doc shows in a ```toml block is one the core accepts.
#[test]
fn every_breakers_block_is_one_the_core_accepts() {
    let mut checked = 0;
    for doc in public_docs() {
        let text = read(&doc);
        for block in text.split("```toml\n").skip(1) {
            let block = block.split("```").next().unwrap_or_default();
            let Some(rest) = block.split_once("BREAKERS = '''") else {
                continue;
            };
            let json = rest.1.split("'''").next().unwrap_or_default();
            if let Err(e) = breakwater::shared::spec::parse_breakers(json) {
                panic!("{doc}: its BREAKERS block is refused: {e}");
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no BREAKERS block found");
}
