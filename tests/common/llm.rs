//! The LLM transcript corpus of tests/fixtures/llm (ES modules; each transcript names its
//! source), read with Node: every transcript as JSON, with its name, its provider API (`api`) and,
//! for a stream transcript with `expect`, the outcome the corpus documents (`documented`: `fail`,
//! `ignored`, `cut` or `success`; tests/fixtures/llm/index.mjs says what each means).

use serde_json::Value;

/// Every transcript of the corpus.
pub fn corpus() -> Vec<Value> {
    let script = "import { corpus, documented } from './tests/fixtures/llm/index.mjs';\n\
        const out = [];\n\
        for (const [api, m] of Object.entries(corpus)) for (const [name, t] of Object.entries(m))\n\
          out.push({ ...t, name, api, documented: t.expect ? documented(t) : null });\n\
        console.log(JSON.stringify(out));";
    let out = std::process::Command::new("node")
        .args(["--input-type=module", "-e", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("node runs (the transcripts are ES modules)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Value = serde_json::from_slice(&out.stdout).expect("the corpus as JSON");
    let all = all.as_array().expect("a list").clone();
    for t in &all {
        assert!(
            t["source"].as_str().is_some_and(|s| !s.is_empty()),
            "{} names its source",
            t["name"]
        );
    }
    all
}
