//! `--name value` / `--name=value` / `-name value` flags of the example binaries, and
//! `--help`.
use std::collections::HashMap;

/// Parses the command line; every flag needs a value and must be one of `known`
/// (`(name, help)`). `--help` (or `-h`) prints `about` and the flags, then exits 0.
pub fn parse(about: &str, known: &[(&str, &str)]) -> Result<HashMap<String, String>, String> {
    let names: Vec<&str> = known.iter().map(|(name, _)| *name).collect();
    let mut out = HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let name = arg.trim_start_matches('-');
        if arg.starts_with('-') && (name == "help" || name == "h") {
            println!("{about}\n\nFlags:");
            for (flag, help) in known {
                println!("  --{flag:<12} {help}");
            }
            std::process::exit(0);
        }
        let (name, value) = match name.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if arg.starts_with('-') && names.contains(&name) => {
                (name.to_string(), args.next().ok_or(format!("{arg} needs a value"))?)
            }
            None => (name.to_string(), String::new()),
        };
        if !arg.starts_with('-') || !names.contains(&name.as_str()) {
            return Err(format!("unknown argument {arg}; flags: --{} (--help)", names.join(" --")));
        }
        out.insert(name, value);
    }
    Ok(out)
}
