//! `breakwater-sim`: replay an outage scenario against four ways of calling the upstream and
//! print the comparison.
//!
//! ```text
//! breakwater-sim run seed000                  # a built-in scenario
//! breakwater-sim run my-outage.toml --svg timeline.svg
//! breakwater-sim run my-outage.json --json    # the report as JSON
//! breakwater-sim list                         # the built-in scenarios
//! breakwater-sim show seed003                 # a built-in scenario's TOML, to start from
//! ```
//! Exit status: 0 on success, 2 on a usage error, an unreadable or invalid scenario, or an
//! unwritable output file.

use std::process::ExitCode;

use breakwater::sim::{self, Format, Scenario};

const USAGE: &str = "\
usage: breakwater-sim run <scenario> [--json] [--svg <out.svg>] [--seed <n>]
       breakwater-sim list
       breakwater-sim show <builtin>

<scenario> is a built-in name (seed000, seed003) or a .toml / .json file.
  --json        print the report as JSON instead of the table
  --svg <file>  also write the timeline (calls/s and breaker state per strategy) as SVG
  --seed <n>    override the scenario's seed";

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

fn run(args: Args) -> Result<(), String> {
    let mut scenario = load(&args.scenario)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    let report = sim::run(&scenario).map_err(|e| e.to_string())?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{report}");
    }
    if let Some(path) = args.svg {
        let svg = sim::render_svg(&report).map_err(|e| e.to_string())?;
        std::fs::write(&path, svg).map_err(|e| format!("cannot write {path}: {e}"))?;
        if !args.json {
            println!("\ntimeline written to {path}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let result = match argv.next().as_deref() {
        Some("run") => parse_run(argv).and_then(run),
        Some("list") => {
            for (name, source) in sim::BUILTINS {
                let description = Scenario::parse(source, Format::Toml)
                    .map(|s| s.description)
                    .unwrap_or_default();
                println!("{name:<10} {description}");
            }
            Ok(())
        }
        Some("show") => match argv.next().as_deref().and_then(sim::builtin_source) {
            Some(source) => {
                print!("{source}");
                Ok(())
            }
            None => Err("show: give a built-in scenario name (see `list`)".into()),
        },
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) if !other.starts_with('-') => {
            // `breakwater-sim seed000` is `breakwater-sim run seed000`.
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
