//! `animal-store config`: every setting of `serve`, its value and where it came from, so that
//! an operator checks a configuration before deploying it.

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};

use crate::cli::{Cli, DatabaseUrl, ServeArgs};

/// Prints the settings on stdout, one per line: `name = value (source)`, passwords masked.
/// Then checks them as `serve` would before listening: exit status 2, with one line on
/// stderr, when one is invalid.
pub fn run(cli: &Cli, args: &ServeArgs, matches: &ArgMatches) -> ExitCode {
    let settings = matches.subcommand_matches("config").unwrap_or(matches);
    let mut command = Cli::command();
    command.build();
    let Some(config) = command.find_subcommand("config") else {
        return ExitCode::from(2);
    };
    for arg in config.get_arguments().filter(|a| !a.is_hide_set()) {
        let id = arg.get_id().as_str();
        let Some(long) = arg.get_long() else {
            continue;
        };
        if matches!(id, "help" | "version") {
            continue;
        }
        let value = settings.get_raw(id).map(|values| {
            values.map(|v| v.to_string_lossy().into_owned()).collect::<Vec<_>>().join(",")
        });
        let value = match (id, value) {
            ("database_url", Some(url)) => {
                url.parse::<DatabaseUrl>().map_or(url, |url| url.to_string())
            }
            ("redis_url", Some(url)) => animal_store_infra::redact::redact(&url).into_owned(),
            (_, Some(value)) => value,
            ("max_connections", None) => {
                "(10000, or the file descriptor limit less 64 when lower)".to_owned()
            }
            (_, None) => "(none)".to_owned(),
        };
        let source = match settings.value_source(id) {
            Some(ValueSource::CommandLine) => "flag",
            Some(ValueSource::EnvVariable) => "environment",
            Some(ValueSource::DefaultValue) => "default",
            _ => "unset",
        };
        println!("{long} = {value} ({source})");
    }
    match crate::serve::check(cli, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", crate::failure::one_line(&err));
            ExitCode::from(2)
        }
    }
}
