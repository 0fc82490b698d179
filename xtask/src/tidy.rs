//! `cargo xtask tidy`: cheap source-hygiene checks that rustfmt and clippy do not do.
//!
//! Every `.rs` file must open with a `//!` comment saying what it is for, and no
//! file may still contain a placeholder `todo` or `unimplemented` macro call (clippy
//! only warns about those in code it compiles, not in docs, tests behind features,
//! or non-Rust files such as README snippets). The outside crate's `Cargo.lock` must be
//! current, since CI builds that crate `--locked`: a dependency added to the workspace
//! without it would pass here and fail there. Every repository path the docs name in
//! backticks (`crates/...`, `docs/...`) must exist, so that a moved file cannot leave a
//! doc pointing at nothing. A migration that drops or renames a table or a column cannot
//! call itself `Expand`: the binary before it would not run on the schema it leaves.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Directories (relative to the workspace root) whose files are checked.
const CHECKED_DIRS: [&str; 3] = ["crates", "xtask", "tests"];

/// Text that must not appear anywhere. Built with `concat!` so that this file does
/// not trip its own check.
const FORBIDDEN: [&str; 2] = [concat!("todo", "!("), concat!("unimplemented", "!(")];

/// Runs the checks, printing every problem and failing if there was any.
pub fn check(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    for dir in CHECKED_DIRS {
        let dir = root.join(dir);
        if dir.is_dir() {
            collect_files(&dir, &mut files)?;
        }
    }
    files.sort();

    let mut problems = Vec::new();
    for file in &files {
        let contents = match fs::read(file) {
            Ok(contents) => contents,
            // Someone may be editing the tree while we walk it; a vanished file
            // has nothing left to check.
            Err(err) if err.kind() == ErrorKind::NotFound => continue,
            Err(err) => {
                return Err(err).with_context(|| format!("could not read {}", file.display()));
            }
        };
        let shown = file.strip_prefix(root).unwrap_or(file).display();
        if file.extension().is_some_and(|ext| ext == "rs") && !starts_with_module_doc(&contents) {
            problems.push(format!("{shown}: does not start with a `//!` doc comment"));
        }
        for needle in FORBIDDEN {
            if contains(&contents, needle.as_bytes()) {
                problems.push(format!("{shown}: contains `{needle}`"));
            }
        }
    }

    problems.extend(missing_paths(root)?);
    problems.extend(migration_problems(root)?);

    if !outside_lock_is_current(root)? {
        problems.push(format!(
            "{OUTSIDE}/Cargo.lock is stale: run `cargo metadata --manifest-path {OUTSIDE}/Cargo.toml` and commit it"
        ));
    }

    if problems.is_empty() {
        eprintln!("tidy: {} files OK", files.len());
        return Ok(());
    }
    for problem in &problems {
        eprintln!("  {problem}");
    }
    bail!("tidy found {} problem(s), listed above", problems.len());
}

/// The Markdown files whose paths are checked: the README, the contributors' guide, and
/// everything under `docs/`.
fn documents(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    collect_files(&root.join("docs"), &mut files)?;
    files.retain(|file| file.extension().is_some_and(|ext| ext == "md"));
    for top in ["README.md", "CONTRIBUTING.md"] {
        if root.join(top).is_file() {
            files.push(root.join(top));
        }
    }
    files.sort();
    Ok(files)
}

/// The top folders of the repository that a path in a doc starts with.
const PATH_ROOTS: [&str; 7] =
    ["crates/", "docs/", "tests/", "xtask/", "examples/", ".cargo/", ".ci/"];

/// Every path in backticks in the docs that names nothing in the repository.
fn missing_paths(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for doc in documents(root)? {
        let text = fs::read_to_string(&doc)
            .with_context(|| format!("could not read {}", doc.display()))?;
        let shown = doc.strip_prefix(root).unwrap_or(&doc).display().to_string();
        for (number, line) in text.lines().enumerate() {
            for path in line.split('`').skip(1).step_by(2).filter_map(repository_path) {
                if !root.join(path).exists() {
                    problems.push(format!(
                        "{shown}:{}: names `{path}`, which does not exist",
                        number + 1
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// The repository path a piece of inline code names, if it is one: it starts with a top
/// folder, holds no space, pattern or placeholder, and loses a `:line` or `#anchor` suffix.
fn repository_path(code: &str) -> Option<&str> {
    if !PATH_ROOTS.iter().any(|root| code.starts_with(root))
        || code.contains([' ', '*', '<', '>', '{', '}', '$', '='])
        || code.contains("...")
    {
        return None;
    }
    let code = code.split('#').next()?;
    let code = code.split_once(':').map_or(code, |(path, _)| path);
    Some(code.trim_end_matches(['.', ',', ')']))
}

/// Where the migrations are, one file each.
const MIGRATIONS: &str = "crates/infra/src/sql/schema/migration";

/// What, in a migration's `up`, removes or renames something the binary before it reads.
const CONTRACTING: [&str; 8] = [
    "drop_table",
    "drop_column",
    "rename_table",
    "rename_column",
    "Table::drop",
    "DROP TABLE",
    "DROP COLUMN",
    "RENAME ",
];

/// Every migration that declares no compatibility, or calls itself `Expand` while its `up`
/// drops or renames a table or a column.
fn migration_problems(root: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    collect_files(&root.join(MIGRATIONS), &mut files)?;
    // The migrations' files are named for their day: `m20261122_000001_create_pets.rs`.
    files.retain(|file| {
        file.file_name().is_some_and(|name| name.to_string_lossy().starts_with("m2"))
    });
    files.sort();
    let mut problems = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file)
            .with_context(|| format!("could not read {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        problems.extend(migration_problem(&text).map(|problem| format!("{shown}: {problem}")));
    }
    Ok(problems)
}

/// What is wrong with the migration whose source is `text`, if anything.
fn migration_problem(text: &str) -> Option<String> {
    let declared = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("pub const COMPATIBILITY: Compatibility = "));
    let Some(declared) = declared else {
        return Some("declares no `pub const COMPATIBILITY` (`Expand` or `Contract`)".to_owned());
    };
    let up = text.split("fn up(").nth(1)?;
    let up = up.split("fn down(").next().unwrap_or(up);
    let contracting = CONTRACTING.iter().find(|word| up.contains(*word));
    match contracting {
        Some(word) if declared.contains("Expand") => Some(format!(
            "its `up` uses `{}`, yet it declares itself `Expand`: the binary before it would not \
             run on the schema it leaves; declare it `Contract`",
            word.trim()
        )),
        _ => None,
    }
}

/// The crate that uses the project from outside its workspace.
const OUTSIDE: &str = "examples/outside-tester";

/// Whether the outside crate's lock file needs no change.
fn outside_lock_is_current(root: &Path) -> Result<bool> {
    let status = crate::cmd::cargo(root)
        .args(["metadata", "--locked", "--format-version", "1", "--manifest-path"])
        .arg(root.join(OUTSIDE).join("Cargo.toml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("could not run cargo metadata on the outside crate")?;
    Ok(status.success())
}

/// Recursively lists the regular files under `dir`.
fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries = fs::read_dir(dir).with_context(|| format!("could not list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("could not list {}", dir.display()))?;
        // `DirEntry::file_type` does not follow symlinks, so a link cannot make
        // us walk outside the tree or loop forever.
        let file_type = entry
            .file_type()
            .with_context(|| format!("could not stat {}", entry.path().display()))?;
        let path = entry.path();
        if file_type.is_dir() {
            // Build output and tool metadata are not our sources.
            let name = entry.file_name();
            let skip = name == "target" || name.to_string_lossy().starts_with('.');
            if !skip {
                collect_files(&path, files)?;
            }
        } else if file_type.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

/// Whether the first non-blank line is a `//!` inner doc comment.
fn starts_with_module_doc(contents: &[u8]) -> bool {
    let text = String::from_utf8_lossy(contents);
    text.trim_start_matches('\u{feff}')
        .lines()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim_start().starts_with("//!"))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::migration_problem;

    fn migration(compatibility: &str, up: &str) -> String {
        format!(
            "pub const COMPATIBILITY: Compatibility = {compatibility};\n\
             async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {{ {up} }}\n\
             async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {{ \
             manager.drop_table(Table::drop().table(Pets::Table).to_owned()).await }}"
        )
    }

    #[test]
    fn a_migration_that_drops_or_renames_cannot_call_itself_expand() {
        let drop = "manager.alter_table(Table::alter().table(Pets::Table).drop_column(Pets::Name))";
        let rename = "manager.alter_table(Table::alter().rename_column(Pets::Name, Pets::Title))";
        for up in [drop, rename, "manager.get_connection().execute_unprepared(\"DROP TABLE pets\")"]
        {
            assert!(migration_problem(&migration("Compatibility::Expand;", up)).is_some(), "{up}");
            assert_eq!(migration_problem(&migration("Compatibility::Contract;", up)), None);
        }
        let add = "manager.create_table(Table::create().table(Orders::Table))";
        assert_eq!(migration_problem(&migration("Compatibility::Expand;", add)), None);
        assert!(migration_problem("async fn up() {}").is_some_and(|p| p.contains("declares no")));
    }
}
