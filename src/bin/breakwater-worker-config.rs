//! `breakwater-worker-config check [wrangler.toml]`: checks the Worker's `BREAKERS` (in `[vars]`
//! and in every `[env.<name>.vars]`) the way the Worker and its Durable Object will, before a
//! build or a deploy: every name valid, every breaker's settings valid, nothing the shared mode
//! cannot honour. Prints each breaker with its lease and settings fingerprint; on a mistake,
//! names the breaker, the field and the value, and exits with status 2.

use std::process::ExitCode;

use breakwater::shared::spec::{check_breakers, Breakers};

fn breakers_of(vars: &toml::Value, whence: &str) -> Result<Option<Breakers>, String> {
    let Some(value) = vars.get("BREAKERS") else {
        return Ok(None);
    };
    let json = match value {
        toml::Value::String(text) => serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| format!("{whence}: BREAKERS is not valid JSON: {e}"))?,
        other => serde_json::to_value(other).map_err(|e| format!("{whence}: BREAKERS: {e}"))?,
    };
    let map: Breakers = serde_json::from_value(json)
        .map_err(|e| format!("{whence}: BREAKERS is not valid: {e}"))?;
    check_breakers(&map).map_err(|e| format!("{whence}: {e}"))?;
    Ok(Some(map))
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
