//! The shared breaker's conformance file (tests/conformance/shared.json), run against the core's
//! coordinator natively. tests/js/conformance.test.mjs runs the same file against the built
//! package's wasm, so both hosts of the coordinator answer alike.
#![cfg(feature = "serde")]

use breakwater::shared::json::{self, Wire};
use breakwater::shared::protocol::Exchange;
use breakwater::shared::protocol::ExchangeOp;
use breakwater::shared::{Coordinator, SharedSpec};
use breakwater::Timestamp;
use serde_json::{json, Value};

/// `value` as the crate's codec writes it, read back as a generic document.
fn document<T: Wire>(value: &T) -> Value {
    serde_json::from_str(&json::to_string(value)).unwrap()
}

/// Every key of `expected` is in `actual` with that value (objects recursively, arrays whole).
fn matches(actual: &Value, expected: &Value, path: &str) -> Result<(), String> {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => {
            for (k, v) in e {
                let got = a.get(k).unwrap_or(&Value::Null);
                matches(got, v, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (a, e) if a == e => Ok(()),
        (a, e) => Err(format!("{path}: expected {e}, got {a}")),
    }
}

#[test]
fn the_coordinator_answers_every_exchange_of_the_conformance_file() {
    let file: Value = serde_json::from_str(include_str!("conformance/shared.json")).unwrap();
    let spec: SharedSpec = serde_json::from_value(file["spec"].clone()).unwrap();
    let name = file["name"].as_str().unwrap();
    let mut co = Coordinator::fresh(name, spec).unwrap();
    let steps = file["steps"].as_array().unwrap();
    assert!(steps.len() >= 15);
    for step in steps {
        let at = Timestamp(step["at"].as_u64().unwrap());
        let what = step["what"].as_str().unwrap();
        let actual = match step["op"].as_str().unwrap() {
            op @ ("acquire" | "report") => {
                let req: Exchange = json::from_str(&step["request"].to_string()).unwrap();
                match co.exchange(at, &req, ExchangeOp::acquire_if(op == "acquire")) {
                    Ok((reply, _)) => document(&reply),
                    Err(e) => json!({ "error": "bad_request", "message": e.to_string() }),
                }
            }
            "isolate" => {
                let _ = co.isolate(at);
                document(&co.view(at))
            }
            "reset" => {
                let _ = co.reset(at);
                document(&co.view(at))
            }
            "state" => document(&co.view(at)),
            other => panic!("unknown op {other}"),
        };
        if let Err(e) = matches(&actual, &step["expect"], "") {
            panic!("{what}: {e}\nreply: {actual}");
        }
    }
}
