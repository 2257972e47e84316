//! The Rust each feature needs, as Cargo.toml declares it: `rust-version` for the crate with any
//! feature except those in `[package.metadata.breakwater.feature-rust-version]`, which need the
//! version named there; the Worker's crate (worker/) declares what its features need.
//!
//! Checked against the dependencies: for each feature alone (and for none), the highest
//! `rust-version` among the packages that feature builds — normal and build dependencies, for
//! every platform, at the versions of Cargo.lock — is at most what is declared for it, and an
//! entry of the table is exactly that highest version, so that it is dropped or lowered when the
//! dependencies allow.
//!
//! What this does not prove: that the crate's own code builds with that Rust (clippy's
//! `incompatible_msrv` lint flags standard library APIs newer than `rust-version`, and
//! scripts/test-rust.sh compiles the crate with Rust 1.85 where Debian's packages provide it), nor
//! that a dependent resolving afresh, without this lock file, gets versions as old.
//! A repository check: not in the published crate (it reads the workspace).

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

const PACKAGE: &str = "breakwater-llm";
const WORKER: &str = "breakwater-worker";

type Version = (u64, u64, u64);

fn parse(v: &str) -> Version {
    let mut parts = v
        .split('.')
        .map(|p| p.parse::<u64>().expect("a numeric rust-version"));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

fn show(v: Version) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

fn cargo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

struct Workspace {
    /// Every package any feature builds, by `name version`, with its `rust-version` if it has one.
    rust_versions: BTreeMap<String, Option<Version>>,
    /// The workspace's packages by name.
    members: BTreeMap<String, Value>,
}

fn workspace() -> Workspace {
    let metadata: Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--all-features",
    ]))
    .unwrap();
    let mut rust_versions = BTreeMap::new();
    let mut members = BTreeMap::new();
    let ids: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let key = format!("{name} {}", package["version"].as_str().unwrap());
        rust_versions.insert(key, package["rust_version"].as_str().map(parse));
        if ids.contains(&package["id"].as_str().unwrap()) {
            members.insert(name.to_string(), package.clone());
        }
    }
    Workspace {
        rust_versions,
        members,
    }
}

impl Workspace {
    /// The packages `package` builds with `features` and no default features (itself excluded),
    /// and the highest `rust-version` among them, with the package that declares it.
    fn needs(&self, package: &str, features: &str) -> (Version, String) {
        let mut args = vec![
            "tree",
            "--locked",
            "-p",
            package,
            "--no-default-features",
            "-e",
            "normal,build",
            "--target",
            "all",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ];
        if !features.is_empty() {
            args.extend(["--features", features]);
        }
        let tree = cargo(&args);
        let mut highest = ((0, 0, 0), String::from("no dependency"));
        for line in tree.lines().skip(1) {
            let mut words = line.split_whitespace();
            let (Some(name), Some(version)) = (words.next(), words.next()) else {
                continue;
            };
            let key = format!("{name} {}", version.trim_start_matches('v'));
            let rv = self
                .rust_versions
                .get(&key)
                .unwrap_or_else(|| panic!("{key}: not among the packages of cargo metadata"));
            if let Some(rv) = *rv {
                if rv > highest.0 {
                    highest = (rv, key);
                }
            }
        }
        highest
    }

    fn rust_version(&self, package: &str) -> Version {
        parse(self.members[package]["rust_version"].as_str().unwrap())
    }
}

#[test]
fn every_feature_builds_with_the_rust_declared_for_it() {
    let ws = workspace();
    let crate_rv = ws.rust_version(PACKAGE);
    let package = &ws.members[PACKAGE];
    let table = package["metadata"]["breakwater"]["feature-rust-version"]
        .as_object()
        .expect("[package.metadata.breakwater.feature-rust-version]");
    let features: Vec<&str> = package["features"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for name in table.keys() {
        assert!(features.contains(&name.as_str()), "`{name}` is no feature");
    }

    let mut failures = Vec::new();
    for feature in std::iter::once("").chain(features.iter().copied()) {
        let (needed, by) = ws.needs(PACKAGE, feature);
        let listed = table.get(feature).map(|v| parse(v.as_str().unwrap()));
        let declared = listed.unwrap_or(crate_rv);
        let shown = if feature.is_empty() {
            "no feature"
        } else {
            feature
        };
        if needed > declared {
            failures.push(format!(
                "{shown}: {by} needs Rust {}, more than the {} declared",
                show(needed),
                show(declared)
            ));
        }
        if let Some(listed) = listed {
            let exact = needed.max(crate_rv);
            if listed != exact {
                failures.push(format!(
                    "{shown}: the table says {}, its dependencies need {} ({by})",
                    show(listed),
                    show(exact)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_worker_crate_declares_what_its_features_need() {
    let ws = workspace();
    let declared = ws.rust_version(WORKER);
    for features in ["", "demo"] {
        let (needed, by) = ws.needs(WORKER, features);
        assert!(
            needed <= declared,
            "{WORKER} with `{features}`: {by} needs Rust {}, more than the {} declared",
            show(needed),
            show(declared)
        );
    }
}
