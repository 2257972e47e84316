//! `breakwater-worker-config check [wrangler.toml]`: checks the Worker's `BREAKERS` (in `[vars]`
//! and in every `[env.<name>.vars]`) the way the Worker and its Durable Object will, before a
//! build or a deploy: every name valid, every breaker's settings valid, nothing the shared mode
//! cannot honour. Prints each breaker with its lease and settings fingerprint; on a mistake,
//! names the breaker, the field and the value, and exits with status 2.

use std::process::ExitCode;

use breakwater::shared::spec::{breakers_from_value, Breakers};

fn breakers_of(vars: &toml::Value, whence: &str) -> Result<Option<Breakers>, String> {
    let Some(value) = vars.get("BREAKERS") else {
        return Ok(None);
    };
    let json = match value {
        toml::Value::String(text) => serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| format!("{whence}: BREAKERS is not valid JSON: {e}"))?,
        other => serde_json::to_value(other).map_err(|e| format!("{whence}: BREAKERS: {e}"))?,
    };
    breakers_from_value(json)
        .map(Some)
        .map_err(|e| format!("{whence}: {e}"))
}

fn check(path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let doc: toml::Value = toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut places = Vec::new();
    if let Some(vars) = doc.get("vars") {
        places.push(("[vars]".to_string(), vars.clone()));
    }
    if let Some(envs) = doc.get("env").and_then(toml::Value::as_table) {
        for (name, env) in envs {
            if let Some(vars) = env.get("vars") {
                places.push((format!("[env.{name}.vars]"), vars.clone()));
            }
        }
    }
    let mut found = 0;
    for (whence, vars) in &places {
        if let Some(map) = breakers_of(vars, whence)? {
            found += 1;
            for (name, spec) in &map {
                println!(
                    "{whence} {name}: lease {} ms, settings {:013x}",
                    spec.lease_ms,
                    spec.fingerprint()
                );
            }
        }
    }
    if found == 0 {
        return Err(format!("{path}: no BREAKERS in [vars] or [env.*.vars]"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = match args.as_slice() {
        [cmd] if cmd == "check" => "wrangler.toml",
        [cmd, path] if cmd == "check" => path.as_str(),
        _ => {
            eprintln!("usage: breakwater-worker-config check [wrangler.toml]");
            return ExitCode::from(2);
        }
    };
    match check(path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("breakwater-worker-config: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use breakwater::{TripRule, Window};

    fn vars(text: &str) -> toml::Value {
        let doc: toml::Value = toml::from_str(text).unwrap();
        doc.get("vars").unwrap().clone()
    }

    #[test]
    fn a_toml_table_and_a_json_string_are_read_alike() {
        let table = vars(
            r#"[vars]
BREAKERS = { a = { lease_ms = 500, breaker = { trip = { kind = "failure_rate", threshold_percent = 50, minimum_calls = 20, window = { millis = 60000 } } } } }
"#,
        );
        let string = vars(
            r#"[vars]
BREAKERS = '{"a": {"lease_ms": 500, "breaker": {"trip": {"kind": "failure_rate", "threshold_percent": 50, "minimum_calls": 20, "window": {"millis": 60000}}}}}'
"#,
        );
        let from_table = breakers_of(&table, "[vars]").unwrap().unwrap();
        let from_string = breakers_of(&string, "[vars]").unwrap().unwrap();
        assert_eq!(from_table, from_string);
        let a = from_table.get("a").unwrap();
        assert_eq!(a.lease_ms, 500);
        assert_eq!(
            a.breaker.trip,
            TripRule::FailureRate {
                threshold_percent: 50.0,
                minimum_calls: 20,
                window: Window::Millis(60_000),
            }
        );
    }

    #[test]
    fn a_mistake_names_the_place_the_breaker_and_the_field() {
        let untagged = vars(
            "[vars]\nBREAKERS = { a = { breaker = { trip = { consecutive_failures = { threshold = 5 } } } } }\n",
        );
        let e = breakers_of(&untagged, "[env.staging.vars]").unwrap_err();
        assert!(
            e.starts_with("[env.staging.vars]: BREAKERS[\"a\"] is not valid") && e.contains("kind"),
            "{e}"
        );
        let slow = vars(
            "[vars]\nBREAKERS = { b = { breaker = { trip = { kind = \"slow_call_rate\", threshold_percent = 50, slow_call_ms = 100, minimum_calls = 5, window = { calls = 10 } } } } }\n",
        );
        let e = breakers_of(&slow, "[vars]").unwrap_err();
        assert!(
            e.contains("BREAKERS[\"b\"]") && e.contains("slow_call_rate"),
            "{e}"
        );
    }

    #[test]
    fn the_wrangler_toml_of_this_crate_passes() {
        check(concat!(env!("CARGO_MANIFEST_DIR"), "/wrangler.toml")).unwrap();
    }

    #[test]
    fn the_example_in_the_readme_passes() {
        let readme = include_str!("../../README.md");
        let example = readme
            .split("```toml\n")
            .skip(1)
            .filter_map(|block| block.split("```").next())
            .find(|block| block.contains("BREAKERS"))
            .expect("README.md shows BREAKERS in a toml block");
        let map = breakers_of(&vars(example), "README.md").unwrap().unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["openai"]);
    }
}
