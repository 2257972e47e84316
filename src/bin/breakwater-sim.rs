//! `breakwater-sim`: replay an outage scenario against four ways of calling the upstream and
//! print the comparison.
//!
//! ```text
//! breakwater-sim run hung-llm                  # a built-in scenario
//! breakwater-sim run my-outage.toml --svg timeline.svg
//! breakwater-sim run my-outage.json --json    # the report as JSON
//! breakwater-sim list                         # the built-in scenarios
//! breakwater-sim show agent-tool                 # a built-in scenario's TOML, to start from
//! breakwater-sim plot recording.json --svg out/live.svg   # draw recorded per-second series
//! ```
//!
//! `plot` draws the same timeline from series recorded elsewhere (the live demo, demo/live.mjs,
//! writes them): a JSON object with `title`, `bucket_ms`, `instances`, `requests`,
//! `outage_start_ms`, `recovered_at_ms` and `strategies`, a list of objects with `strategy`
//! (`no_protection`, `retry_only`, `breaker_per_instance`, `shared_breaker`), `upstream_calls`,
//! `failed_fast` (requests the breaker refused before any upstream call; default: as
//! `rejected_attempts`), `rejected_attempts` (attempts the breaker refused, retries included;
//! default: the sum of `rejected`), and the per-bucket series `calls` (upstream calls), `rejected` (attempts rejected
//! by the breaker) and `breaker_open` (0 closed, 0.5 half-open, 1 open; empty without a breaker).
//! Output files go where they are asked, their missing parent folders created.
//! Exit status: 0 on success, 2 on a usage error, an unreadable or invalid scenario, or an
//! unwritable output file.

use std::process::ExitCode;

use breakwater::sim::{self, Format, Report, Scenario, Strategy, StrategyReport, Timeline};
use serde_json::Value;

const USAGE: &str = "\
usage: breakwater-sim run <scenario> [--json] [--svg <out.svg>] [--seed <n>]
       breakwater-sim list
       breakwater-sim show <builtin>
       breakwater-sim plot <recording.json> --svg <out.svg>

<scenario> is a built-in name (hung-llm, agent-tool, rate-limited, degraded, overloaded) or a .toml / .json file.
  --json        print the report as JSON instead of the table
  --svg <file>  also write the timeline (calls/s and breaker state per strategy) as SVG;
                missing parent folders are created
  --seed <n>    override the scenario's seed
plot draws the timeline of per-second series recorded elsewhere (e.g. by demo/live.mjs).";

struct Args {
    scenario: String,
    json: bool,
    svg: Option<String>,
    seed: Option<u64>,
}

fn parse_run(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        scenario: String::new(),
        json: false,
        svg: None,
        seed: None,
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => args.json = true,
            "--svg" => args.svg = Some(it.next().ok_or("--svg needs a file name")?),
            "--seed" => {
                let v = it.next().ok_or("--seed needs a number")?;
                args.seed = Some(
                    v.parse()
                        .map_err(|_| format!("--seed: not a number: {v}"))?,
                );
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ if args.scenario.is_empty() => args.scenario = a,
            _ => return Err(format!("unexpected argument {a}")),
        }
    }
    if args.scenario.is_empty() {
        return Err("which scenario? give a built-in name or a file".into());
    }
    Ok(args)
}

fn load(name: &str) -> Result<Scenario, String> {
    if let Some(source) = sim::builtin_source(name) {
        return Scenario::parse(source, Format::Toml).map_err(|e| format!("{name}: {e}"));
    }
    let text = std::fs::read_to_string(name).map_err(|e| {
        let builtins: Vec<&str> = sim::BUILTINS.iter().map(|(n, _)| *n).collect();
        format!(
            "cannot read {name}: {e} (built-in scenarios: {})",
            builtins.join(", ")
        )
    })?;
    Scenario::parse(&text, Format::from_path(name)).map_err(|e| format!("{name}: {e}"))
}

/// Writes to stdout. A reader that went away (`| head`, `| grep -q`) ends the output quietly
/// instead of a panic.
fn say(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to stdout: {e}"))
        }
        _ => Ok(()),
    }
}

/// Writes an output file, creating its missing parent folders first.
fn write_output(path: &str, contents: &str) -> Result<(), String> {
    let parent = std::path::Path::new(path).parent();
    if let Some(dir) = parent.filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the folder {}: {e}", dir.display()))?;
    }
    std::fs::write(path, contents).map_err(|e| format!("cannot write {path}: {e}"))
}

fn run(args: Args) -> Result<(), String> {
    let mut scenario = load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    let report = sim::run(&scenario).map_err(|e| e.to_string())?;
    if args.json {
        say(&format!("{}\n", report.to_json()))?;
    } else {
        say(&report.to_string())?;
    }
    if let Some(path) = args.svg {
        let svg = sim::render_svg(&report).map_err(|e| e.to_string())?;
        write_output(&path, &svg)?;
        if !args.json {
            say(&format!("\ntimeline written to {path}\n"))?;
        }
    }
    Ok(())
}

/// `plot <recording.json> --svg <out.svg>`.
fn plot(mut it: impl Iterator<Item = String>) -> Result<(), String> {
    let (mut input, mut svg) = (None, None);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--svg" => svg = Some(it.next().ok_or("--svg needs a file name")?),
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ if input.is_none() => input = Some(a),
            _ => return Err(format!("unexpected argument {a}")),
        }
    }
    let input = input.ok_or("plot: which recording? give a JSON file")?;
    let svg = svg.ok_or("plot: give the output file with --svg <out.svg>")?;
    let text = std::fs::read_to_string(&input).map_err(|e| format!("cannot read {input}: {e}"))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| format!("{input}: not valid JSON: {e}"))?;
    let report = recording(&value).map_err(|e| format!("{input}: {e}"))?;
    let out = sim::render_svg(&report).map_err(|e| e.to_string())?;
    write_output(&svg, &out)?;
    say(&format!("timeline written to {svg}\n"))?;
    Ok(())
}

fn field_u64(v: &Value, path: &str, name: &str) -> Result<u64, String> {
    v.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("{path}{name}: expected a non-negative integer"))
}

fn field_opt_u64(v: &Value, path: &str, name: &str) -> Result<Option<u64>, String> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{path}{name}: expected a non-negative integer or null")),
    }
}

fn series<T>(
    v: &Value,
    path: &str,
    name: &str,
    get: impl Fn(&Value) -> Option<T>,
) -> Result<Vec<T>, String> {
    let Some(items) = v.get(name) else {
        return Ok(Vec::new());
    };
    let items = items
        .as_array()
        .ok_or_else(|| format!("{path}{name}: expected a list of numbers"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, x)| get(x).ok_or_else(|| format!("{path}{name}[{i}]: not a valid number")))
        .collect()
}

/// A [`Report`] holding recorded series, for [`sim::render_svg`].
fn recording(v: &Value) -> Result<Report, String> {
    let bucket_ms = field_opt_u64(v, "", "bucket_ms")?.unwrap_or(1_000).max(1);
    let outage_start_ms = field_opt_u64(v, "", "outage_start_ms")?;
    let recovered_at_ms = field_opt_u64(v, "", "recovered_at_ms")?;
    let list = v
        .get("strategies")
        .and_then(Value::as_array)
        .ok_or("strategies: expected a list")?;
    if list.is_empty() {
        return Err("strategies: the list is empty".into());
    }
    let strategies = list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let path = format!("strategies[{i}].");
            recorded_strategy(s, &path, bucket_ms, outage_start_ms, recovered_at_ms)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Report {
        scenario: v
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or("recording")
            .to_string(),
        description: String::new(),
        seed: 0,
        instances: u32::try_from(field_u64(v, "", "instances")?)
            .map_err(|_| "instances: too large".to_string())?,
        composition: Default::default(),
        duration_ms: 0,
        requests: field_opt_u64(v, "", "requests")?.unwrap_or(0),
        requests_per_instance: Vec::new(),
        affected_latency_ms: 0,
        strategies,
        // The live demo's hedging column (demo/hedging.mjs), in the simulator's table's fields.
        hedging: match v.get("hedging") {
            None | Some(Value::Null) => None,
            Some(h) => {
                Some(serde_json::from_value(h.clone()).map_err(|e| format!("hedging: {e}"))?)
            }
        },
    })
}

/// One strategy of a recording (`path` names it in errors): its series, and its totals (those
/// not given are summed from the series). What only the simulator measures is left at zero.
fn recorded_strategy(
    s: &Value,
    path: &str,
    bucket_ms: u64,
    outage_start_ms: Option<u64>,
    recovered_at_ms: Option<u64>,
) -> Result<StrategyReport, String> {
    let strategy: Strategy = s
        .get("strategy")
        .cloned()
        .and_then(|x| serde_json::from_value(x).ok())
        .ok_or_else(|| {
            let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.as_str()).collect();
            format!("{path}strategy: expected one of {}", names.join(", "))
        })?;
    let timeline = recorded_timeline(s, path, bucket_ms)?;
    let total = |series: &[u32]| series.iter().map(|c| u64::from(*c)).sum();
    let upstream_calls =
        field_opt_u64(s, path, "upstream_calls")?.unwrap_or_else(|| total(&timeline.calls));
    let rejected_attempts =
        field_opt_u64(s, path, "rejected_attempts")?.unwrap_or_else(|| total(&timeline.rejected));
    let failed_fast = field_opt_u64(s, path, "failed_fast")?.unwrap_or(rejected_attempts);
    Ok(StrategyReport {
        strategy,
        requests: field_opt_u64(s, path, "requests")?.unwrap_or(0),
        upstream_calls,
        upstream_calls_during_outage: field_opt_u64(s, path, "upstream_calls_during_outage")?
            .unwrap_or(0),
        peak_upstream_calls_per_s: timeline.peak_calls(),
        wasted_calls: 0,
        rejected_attempts,
        throttled_attempts: 0,
        upstream_failures: 0,
        refused_healthy: 0,
        succeeded: 0,
        failed: 0,
        failed_fast,
        unfinished: 0,
        latency_p50_ms: 0,
        latency_p99_ms: 0,
        outage_start_ms,
        recovered_at_ms,
        affected_after_recovery_ms: None,
        still_affected_at_end: false,
        breaker_opened: 0,
        timeline,
    })
}

/// A strategy's per-bucket series: upstream calls, attempts rejected, and the breaker's state.
fn recorded_timeline(s: &Value, path: &str, bucket_ms: u64) -> Result<Timeline, String> {
    let count = |x: &Value| x.as_u64().and_then(|n| u32::try_from(n).ok());
    Ok(Timeline {
        bucket_ms,
        calls: series(s, path, "calls", count)?,
        rejected: series(s, path, "rejected", count)?,
        breaker_open: series(s, path, "breaker_open", |x| {
            x.as_f64().filter(|f| (0.0..=1.0).contains(f))
        })?,
    })
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let result = match argv.next().as_deref() {
        Some("run") => parse_run(argv).and_then(run),
        Some("plot") => plot(argv),
        Some("list") => sim::BUILTINS.iter().try_for_each(|(name, source)| {
            let description = Scenario::parse(source, Format::Toml)
                .map(|s| s.description)
                .unwrap_or_default();
            say(&format!("{name:<12} {description}\n"))
        }),
        Some("show") => match argv.next().as_deref().and_then(sim::builtin_source) {
            Some(source) => say(source),
            None => Err("show: give a built-in scenario name (see `list`)".into()),
        },
        Some("-h" | "--help" | "help") => {
            let _ = say(&format!("{USAGE}\n"));
            return ExitCode::SUCCESS;
        }
        Some(other) if !other.starts_with('-') => {
            // `breakwater-sim hung-llm` is `breakwater-sim run hung-llm`.
            parse_run(std::iter::once(other.to_string()).chain(argv)).and_then(run)
        }
        _ => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("breakwater-sim: {e}");
            ExitCode::from(2)
        }
    }
}
