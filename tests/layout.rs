//! The numeric layouts of the wasm boundary are named twice, once per language:
//! `src/wasm/layout.rs` (`breakwater::wasm::layout`) and `js/src/layout.ts` (one `const enum` per
//! layout). This checks that both sides name the same positions with the same values.
#![cfg(feature = "wasm")]

use std::collections::BTreeMap;

use breakwater::wasm::layout::ALL;

/// `OPEN_DURATION` → `OpenDuration`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| {
                f.to_string() + &c.as_str().to_ascii_lowercase()
            })
        })
        .collect()
}

/// Every `Name = value,` of every `export const enum Group { … }` in the TypeScript file.
fn typescript() -> BTreeMap<(String, String), usize> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/js/src/layout.ts");
    let source = std::fs::read_to_string(path).expect("js/src/layout.ts");
    let mut out = BTreeMap::new();
    let mut group: Option<String> = None;
    for line in source.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("export const enum ") {
            group = Some(rest.trim_end_matches('{').trim().to_string());
        } else if line == "}" {
            group = None;
        } else if let (Some(g), Some((name, value))) = (&group, line.split_once('=')) {
            let value = value.trim().trim_end_matches(',');
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("{g}.{} = {value}: not a number", name.trim()));
            out.insert((g.clone(), name.trim().to_string()), value);
        }
    }
    out
}

#[test]
fn every_layout_constant_has_the_same_value_in_typescript() {
    let ts = typescript();
    let rust: BTreeMap<(String, String), usize> = ALL
        .iter()
        .map(|&(group, name, value)| ((group.to_string(), camel(name)), value))
        .collect();
    assert!(
        rust.len() >= 50,
        "only {} constants in src/wasm/layout.rs",
        rust.len()
    );
    for (key, value) in &rust {
        assert_eq!(
            ts.get(key),
            Some(value),
            "{}.{} in js/src/layout.ts",
            key.0,
            key.1
        );
    }
    for key in ts.keys() {
        assert!(
            rust.contains_key(key),
            "{}.{} is in js/src/layout.ts but not in src/wasm/layout.rs",
            key.0,
            key.1
        );
    }
}

#[test]
fn no_two_fields_of_a_layout_share_a_position() {
    let mut seen = BTreeMap::new();
    for &(group, name, value) in ALL {
        if name == "LEN" {
            continue;
        }
        if let Some(other) = seen.insert((group, value), name) {
            panic!("{group}: {name} and {other} are both {value}");
        }
    }
    for &(group, name, value) in ALL {
        if let Some(&(_, _, len)) = ALL.iter().find(|&&(g, n, _)| g == group && n == "LEN") {
            assert!(
                name == "LEN" || value < len,
                "{group}.{name} = {value} ≥ LEN {len}"
            );
        }
    }
}
