//! `serve --ready-file PATH`: a JSON file written once the server listens, with its address
//! and the keys it issued, for harnesses that start it (`docs/testing.md`).

/// Removes the ready file, if there is one.
pub(crate) fn remove(path: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(anyhow::Error::new(err)
            .context(format!("cannot remove the stale ready file {}", path.display()))),
        _ => Ok(()),
    }
}

/// Refuses a ready file whose directory does not exist, before anything listens.
pub(crate) fn check_directory(path: &std::path::Path) -> anyhow::Result<()> {
    let directory = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    if directory.is_dir() {
        Ok(())
    } else {
        anyhow::bail!(
            "cannot write the ready file {}: the directory {} does not exist",
            path.display(),
            directory.display()
        )
    }
}

/// Writes the ready file, whole or not at all: a reader never sees a half written file.
pub(crate) fn write(
    path: &std::path::Path,
    address: std::net::SocketAddr,
    keys: &[(String, String)],
) -> std::io::Result<()> {
    let keys: serde_json::Map<String, serde_json::Value> =
        keys.iter().map(|(name, key)| (name.clone(), key.clone().into())).collect();
    let ready = serde_json::json!({ "address": format!("http://{address}"), "keys": keys });
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, format!("{ready}\n"))?;
    std::fs::rename(&partial, path)
}
