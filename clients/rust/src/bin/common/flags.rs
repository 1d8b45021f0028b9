//! `--name value` / `--name=value` / `-name value` flags of the example binaries.
use std::collections::HashMap;

/// Parses the command line; every flag needs a value and must be one of `known`.
pub fn parse(known: &[&str]) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let name = arg.trim_start_matches('-');
        let (name, value) = match name.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => (name.to_string(), args.next().ok_or(format!("{arg} needs a value"))?),
        };
        if !arg.starts_with('-') || !known.contains(&name.as_str()) {
            return Err(format!("unknown argument {arg}; flags: --{}", known.join(" --")));
        }
        out.insert(name, value);
    }
    Ok(out)
}
