//! The numeric layouts of the wasm boundary and the codes in them are named twice, once per
//! language: `src/wasm/layout.rs` (`breakwater::wasm::layout`) and `js/src/codes/layout.ts` (one
//! `const enum` per group). This checks that both sides name the same positions and codes with
//! the same values; that the TypeScript tables indexed by a code (`STATES`, `REASONS`, …) list
//! the group's names in the group's order; and that the TypeScript calls into the core pass their
//! codes by name, never as bare numbers.
#![cfg(feature = "wasm")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use breakwater::wasm::layout::{self, ALL};

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

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `Name = value,` of every `export const enum Group { … }` in the TypeScript file.
fn typescript() -> BTreeMap<(String, String), f64> {
    let source = read(&root().join("js/src/codes/layout.ts"));
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

/// The TypeScript sources (`js/src`, recursively), as (path relative to the crate, text).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "ts") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("js/src"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(root()).expect("under the crate").display();
            (rel.to_string(), read(&p))
        })
        .collect()
}

/// The value of `Group.Name` (TypeScript spelling) in src/wasm/layout.rs.
fn value_of(group: &str, name: &str) -> Option<f64> {
    ALL.iter()
        .find(|&&(g, n, _)| g == group && camel(n) == name)
        .map(|&(_, _, v)| v)
}

#[test]
fn every_layout_constant_has_the_same_value_in_typescript() {
    let ts = typescript();
    let rust: BTreeMap<(String, String), f64> = ALL
        .iter()
        .map(|&(group, name, value)| ((group.to_string(), camel(name)), value))
        .collect();
    assert!(
        rust.len() >= 150,
        "only {} constants in src/wasm/layout.rs",
        rust.len()
    );
    for (key, value) in &rust {
        assert_eq!(
            ts.get(key),
            Some(value),
            "{}.{} in js/src/codes/layout.ts",
            key.0,
            key.1
        );
    }
    for key in ts.keys() {
        assert!(
            rust.contains_key(key),
            "{}.{} is in js/src/codes/layout.ts but not in src/wasm/layout.rs",
            key.0,
            key.1
        );
    }
}

#[test]
fn no_two_names_of_a_group_share_a_value() {
    let mut seen = BTreeMap::new();
    for &(group, name, value) in ALL {
        // `Limit` holds bounds, not codes: two limits may be the same number.
        if name == "LEN" || group == "Limit" {
            continue;
        }
        if let Some(other) = seen.insert((group, value.to_bits()), name) {
            panic!("{group}: {name} and {other} are both {value}");
        }
    }
    for &(group, name, value) in ALL {
        if let Some(&(_, _, len)) = ALL.iter().find(|&&(g, n, _)| g == group && n == "LEN") {
            assert!(
                name == "LEN" || (0.0..len).contains(&value),
                "{group}.{name} = {value} is not a position below LEN {len}"
            );
        }
    }
}

#[test]
fn the_codes_are_the_cores() {
    use breakwater::{Ending, FastPath};
    use layout::{ending, fast};
    for (e, code) in [
        (Ending::Complete, ending::COMPLETE),
        (Ending::Truncated, ending::TRUNCATED),
        (Ending::Declined, ending::DECLINED),
        (Ending::Failed, ending::FAILED),
        (Ending::Unknown, ending::UNKNOWN),
    ] {
        assert_eq!(e as u32, code, "{e:?}");
    }
    for (bits, code) in [
        (FastPath::ADMIT, fast::ADMIT),
        (FastPath::TIMED, fast::TIMED),
    ] {
        assert_eq!(bits.bits(), code, "{bits:?}");
    }
}

// A permit's number stays an exact integer: 2^20 generations above the kind's bits.
const _: () = assert!(layout::permit::KIND.is_power_of_two());
const _: () = assert!(layout::permit::KIND << 20 <= 1 << 53);
// Every refusal (at most -SCALE) is below every other negative answer of the lease client.
const _: () = assert!(
    layout::decision::ACQUIRE > 0
        && layout::decision::REFRESH > 0
        && layout::decision::AGAIN > 0
        && layout::decision::REPORT > 0
        && layout::decision::IDLE > 0
        && (layout::decision::ACQUIRE as i64) < layout::reject::SCALE
        && (layout::decision::REFRESH as i64) < layout::reject::SCALE
        && (layout::decision::AGAIN as i64) < layout::reject::SCALE
        && (layout::decision::REPORT as i64) < layout::reject::SCALE
        && (layout::decision::IDLE as i64) < layout::reject::SCALE
);

/// `'half-open-full'` → `HalfOpenFull`, `'CLOSED'` → `Closed`.
fn name_of(entry: &str) -> String {
    camel(&entry.to_ascii_uppercase().replace('-', "_"))
}

/// The quoted strings of the array literal assigned at or after `from` in `text`.
fn array_at(text: &str, from: usize) -> Vec<String> {
    let from = from + text[from..].find(" = ").expect("an assignment");
    let open = from + text[from..].find('[').expect("an array literal");
    let close = open
        + text[open..]
            .find(']')
            .expect("the end of the array literal");
    text[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn tables_indexed_by_a_code_list_its_names_in_its_order() {
    let mut checked = Vec::new();
    for (path, text) in sources() {
        let mut at = 0;
        while let Some(i) = text[at..].find("ndexed by `") {
            let start = at + i + "ndexed by `".len();
            at = start;
            let group = &text[start..start + text[start..].find('`').expect("a closing `")];
            let group = group.trim_end_matches("'s");
            // The comment ends the line; the table is the next `const`.
            let line_end = start + text[start..].find('\n').expect("a line end");
            let comment = &text[start..line_end];
            let offset = match comment.find("less `") {
                Some(j) => {
                    let rest = &comment[j + "less `".len()..];
                    let (g, n) = rest[..rest.find('`').expect("a closing `")]
                        .split_once('.')
                        .expect("less `Group.Name`");
                    value_of(g, n).unwrap_or_else(|| panic!("{path}: no {g}.{n}"))
                }
                None => 0.0,
            };
            let decl = line_end + text[line_end..].find("const ").expect("a table");
            let table = &text[decl + 6..decl + 6 + text[decl + 6..].find([':', ' ']).unwrap()];
            let entries = array_at(&text, decl);
            assert!(!entries.is_empty(), "{path}: {table} is empty");
            for (i, entry) in entries.iter().enumerate() {
                let want = name_of(entry);
                assert_eq!(
                    value_of(group, &want),
                    Some(i as f64 + offset),
                    "{path}: {table}[{i}] is '{entry}', but {group}.{want} is not {}",
                    i as f64 + offset
                );
            }
            checked.push(format!("{path} {table}"));
        }
    }
    // The tables this layer has: a comment lost is a table no longer checked.
    for table in [
        "js/src/codes/names.ts STATES",
        "js/src/codes/names.ts MODES",
        "js/src/codes/names.ts REASONS",
        "js/src/codes/names.ts OUTCOMES",
        "js/src/classify.ts CLASSES",
        "js/src/classify.ts ENDINGS",
        "js/src/breakers/retry.ts REASONS",
        "js/src/breakers/retry.ts JITTERS",
    ] {
        assert!(
            checked.iter().any(|c| c == table),
            "{table}: not found, or no longer says which codes index it (checked: {checked:?})"
        );
    }
}

/// The arguments of the call whose `(` is at `open` in `text`, split at the top-level commas
/// (`None` when the call does not close).
fn arguments(text: &str, open: usize) -> Option<Vec<String>> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    let mut args = Vec::new();
    let mut current = String::new();
    let mut chars = text[open + 1..].chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            current.push(c);
            if c == '\\' {
                current.extend(chars.next());
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => {
                args.push(current.trim().to_string());
                return Some(args);
            }
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    None
}

/// Whether `expr` is a number, or chooses between numbers (`a ? 2 : 4`).
fn bare_number(expr: &str) -> bool {
    let number = |s: &str| {
        let s = s.trim().trim_start_matches('-').replace('_', "");
        !s.is_empty() && s.parse::<f64>().is_ok()
    };
    if number(expr) {
        return true;
    }
    match expr.rsplit_once(':') {
        Some((head, tail)) if head.contains('?') => {
            number(tail) || head.rsplit_once('?').is_some_and(|(_, yes)| number(yes))
        }
        _ => false,
    }
}

/// Where `text` passes a code as a bare number: calls into the core by the position of their
/// code, and writes of a code into a configuration array.
fn bare_codes(path: &str, text: &str) -> Vec<String> {
    // (function, position of its code argument)
    const CALLS: &[(&str, usize)] = &[
        ("report", 4),
        ("control", 2),
        ("#control", 0),
        ("queue", 2),
        ("budget_op", 2),
        ("read_text", 1),
        ("readText", 1),
        ("record", 2),
        ("record_untracked", 1),
        ("admin_target", 1),
        ("classify", 3),
    ];
    const WRITES: &[&str] = &["[Cfg.Trip] =", "[Cfg.WindowKind] =", "[Retry.Jitter] ="];
    let mut found = Vec::new();
    let line_of = |i: usize| text[..i].matches('\n').count() + 1;
    for &(name, position) in CALLS {
        let call = format!("{name}(");
        for (i, _) in text.match_indices(&call) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '#') {
                continue;
            }
            // A declaration (`#control(op: Control)`, `report(h: number, …)`) is not a call.
            let Some(args) = arguments(text, i + call.len() - 1) else {
                continue;
            };
            if args.iter().any(|a| a.contains(": ")) && !args.iter().any(|a| a.contains('?')) {
                continue;
            }
            if let Some(arg) = args.get(position).filter(|a| bare_number(a)) {
                found.push(format!("{path}:{}: {name}(…{arg}…)", line_of(i)));
            }
        }
    }
    for write in WRITES {
        for (i, _) in text.match_indices(write) {
            let rest = &text[i + write.len()..];
            let value = &rest[..rest.find(';').unwrap_or(rest.len())];
            if bare_number(value) {
                found.push(format!("{path}:{}: {write} {}", line_of(i), value.trim()));
            }
        }
    }
    found
}

#[test]
fn calls_into_the_core_pass_codes_by_name() {
    let mut found = Vec::new();
    for (path, text) in sources() {
        found.extend(bare_codes(&path, &text));
    }
    assert!(found.is_empty(), "codes as bare numbers: {found:#?}");
}

#[test]
fn the_check_for_bare_codes_finds_them() {
    let text = "x.report(h, now, at, p, 1);\nthis.#control(2);\nx.queue(h, 0, Queue.Adopt, 0);\n\
                cfg[Retry.Jitter] = 4;\ncfg[Cfg.Trip] = slow ? 3 : Trip.FailureRate;\n\
                readText(s, 0);\nx.budget_op(h, now, BudgetOp.Available);\n\
                #control(op: Control): void {}\n";
    let found = bare_codes("t.ts", text);
    assert_eq!(
        found,
        [
            "t.ts:1: report(…1…)",
            "t.ts:2: #control(…2…)",
            "t.ts:6: readText(…0…)",
            "t.ts:5: [Cfg.Trip] = slow ? 3 : Trip.FailureRate",
            "t.ts:4: [Retry.Jitter] = 4",
        ],
        "{found:#?}"
    );
}
