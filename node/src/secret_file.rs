//! Secrets kept in the data directory (the generated admin token, a dev cluster's cluster
//! secret): readable by their owner only. One place writes and reads them, so every secret file
//! gets mode 0600, and one found readable by others (written by an older build) is tightened
//! when it is read, with a warning.

use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// The trimmed secret stored at `path`, if the file exists and is not empty.
pub fn read(path: &Path) -> anyhow::Result<Option<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    tighten(path)?;
    let secret = text.trim();
    Ok((!secret.is_empty()).then(|| secret.to_string()))
}

/// Write `secret` to a new or truncated `path`, readable and writable by the owner only.
pub fn write(path: &Path, secret: &str) -> anyhow::Result<()> {
    let mut file =
        open_private(path).with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(secret.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    // The file may have existed with a wider mode: `mode` applies only on creation.
    tighten(path)
}

/// Create or truncate `path` with mode 0600 (on creation; a file that existed keeps its mode
/// until [`write`] tightens it). Also what `raftlane ctl snapshot save` writes a backup to.
#[cfg(unix)]
pub fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
pub fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

/// Remove every permission of group and others from `path`. A file that cannot be changed (a
/// read-only mount of a secret) is only warned about.
#[cfg(unix)]
fn tighten(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot stat {}", path.display()))?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = format!("{:o}", mode & 0o777),
            "secret file was readable by others; setting its mode to 0600"
        );
        if let Err(e) =
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot restrict the secret file's mode");
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_written_secret_is_the_owners_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.token");
        write(&path, "s3cret").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(read(&path).unwrap().as_deref(), Some("s3cret"));
    }

    #[test]
    fn a_secret_readable_by_others_is_tightened_when_read_or_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.secret");
        std::fs::write(&path, "old\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some("old"));
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        write(&path, "new").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(read(&dir.path().join("missing")).unwrap(), None);
    }
}
