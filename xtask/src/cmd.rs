//! Helpers for running child processes with uniform headers and error messages.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Output};

use anyhow::{Context, Result, bail};

/// The workspace root: the parent of this crate's manifest directory.
///
/// Taken at compile time so the binary works no matter which directory
/// `cargo xtask` is invoked from.
pub fn workspace_root() -> Result<PathBuf> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("{} has no parent directory", manifest_dir.display()))
}

/// A `cargo` command running in the workspace root.
///
/// Uses `$CARGO` (set by `cargo run`) so nested builds use the same toolchain as
/// the one that launched xtask.
pub fn cargo(root: &Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(root);
    command
}

/// A human-readable rendering of a command line, for headers and error messages.
///
/// Only the program's file name is shown: `$CARGO` is usually a long toolchain path
/// that adds noise without information.
pub fn describe(command: &Command) -> String {
    let program = command.get_program();
    let program = Path::new(program).file_name().unwrap_or(program);
    std::iter::once(program)
        .chain(command.get_args())
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints the one-line header that announces a step.
///
/// Goes to stderr, like cargo's own progress output, so that the stdout of the
/// commands we run stays clean (e.g. `cargo xtask postgres -- psql ...`).
pub fn header(text: &str) {
    eprintln!("==> {text}");
}

/// Prints an error with its chain of causes, one per line.
///
/// Not `{:?}`: with `RUST_BACKTRACE` set, anyhow would append a backtrace of
/// xtask itself, which only buries the message.
pub fn print_error(level: &str, err: &anyhow::Error) {
    eprintln!("{level}: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
}

/// Runs a command with inherited stdio and fails unless it exits successfully.
pub fn run(command: &mut Command) -> Result<()> {
    let description = describe(command);
    let status = command.status().with_context(|| format!("could not run `{description}`"))?;
    if !status.success() {
        bail!("`{description}` failed ({status})");
    }
    Ok(())
}

/// Runs a command with captured output, failing (with that output in the error)
/// unless it exits successfully. For tools that are noisy when all is well.
pub fn run_quiet(command: &mut Command) -> Result<Output> {
    let description = describe(command);
    let output = command.output().with_context(|| format!("could not run `{description}`"))?;
    if !output.status.success() {
        bail!(
            "`{description}` failed ({})\n--- stdout ---\n{}--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }
    Ok(output)
}

/// Converts a child's exit status into ours, so wrappers are transparent to
/// scripts that check the status.
pub fn exit_code(status: ExitStatus) -> ExitCode {
    if status.success() {
        return ExitCode::SUCCESS;
    }
    if let Some(code) = status.code() {
        // Unix exit codes fit in a byte; anything else still has to mean failure.
        return ExitCode::from(u8::try_from(code).ok().filter(|&c| c != 0).unwrap_or(1));
    }
    signal_exit_code(status)
}

/// A child killed by a signal: report it the way shells do, as 128 + signal.
#[cfg(unix)]
fn signal_exit_code(status: ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    let code = status.signal().and_then(|signal| u8::try_from(128 + signal).ok()).unwrap_or(1);
    ExitCode::from(code)
}

#[cfg(not(unix))]
fn signal_exit_code(_status: ExitStatus) -> ExitCode {
    ExitCode::FAILURE
}

/// Issues an API key with the server binary `server`'s `keys create ARGS` on the database
/// `database_url`, and returns it.
pub fn issue_key(server: &Path, database_url: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(server)
        .env_clear()
        .args(["--database-url", database_url, "keys", "create"])
        .args(args)
        .output()
        .context("could not run keys create")?;
    if !out.status.success() {
        bail!("keys create failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8(out.stdout).context("the key is not UTF-8")?.trim().to_owned())
}
