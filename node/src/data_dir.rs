//! The data directory's permissions: readable and writable by the node's own user only.
//!
//! Why: the data directory holds the Raft log and the state (RocksDB), snapshots and the
//! generated secrets, and message bodies (patient data) sit in plain bytes in the log's and the
//! state's files unless encryption at rest is on. RocksDB creates its files with mode 0644 minus
//! the process umask and has no setting for it, so with the usual umask 022 every local user
//! could read them. Three measures close that, whatever umask the node was started with:
//!
//! 1. [`restrict_umask`]: the process umask becomes 0o077 before anything is written, so every
//!    file and directory created afterwards (by RocksDB's threads too) is the owner's only;
//! 2. [`secure`] creates a missing data directory with mode 0700;
//! 3. [`secure`] checks what is already there (written by an older build, or under a wider
//!    umask): every file and directory readable, writable or searchable by group or others
//!    loses those permissions, with a warning; one whose mode cannot be changed (it belongs to
//!    another user, a read-only mount) stops the node with [`DataDirError::TooOpen`], since it
//!    would go on exposing what the node writes.
//!
//! The secret files inside it (`admin.token`, a dev cluster's `cluster.secret`) are also
//! written 0600 by [`crate::secret_file`] on their own.

use std::path::{Path, PathBuf};

/// The permissions of group and others: none of them may be set on anything in a data
/// directory.
pub const GROUP_OTHER_BITS: u32 = 0o077;

/// The process umask a node runs with: new files 0600, new directories 0700.
pub const NODE_UMASK: u32 = 0o077;

/// The data directory cannot be made private.
#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error("cannot create the data directory {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the data directory {} is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot read {} to check its permissions: {source}", path.display())]
    Inspect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing to start: {} (in the data directory) has mode {mode:04o}, open to other users, \
         and its mode cannot be restricted to {wanted:04o}: {source}. The data directory holds \
         message bodies; make it and everything in it belong to the node's user with no \
         permissions for group or others (chmod -R go-rwx DIR), or fix the mount",
        path.display()
    )]
    TooOpen {
        path: PathBuf,
        mode: u32,
        wanted: u32,
        #[source]
        source: std::io::Error,
    },
}

/// What [`secure`] changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tightened {
    /// Whether the data directory itself was created now.
    pub created: bool,
    /// Each file or directory whose group and other permissions were removed, with its former
    /// mode.
    pub paths: Vec<(PathBuf, u32)>,
}

/// Set the process umask to [`NODE_UMASK`] and return the former one. Process-wide, so it
/// covers files that RocksDB's background threads create later; called by `raftlane node` and
/// `raftlane dev` before anything is written, and by [`crate::server::start_on`] for every
/// program that starts nodes through this library (tests, the demo, the bench).
#[cfg(unix)]
pub fn restrict_umask() -> u32 {
    use rustix::fs::Mode;
    rustix::process::umask(Mode::from_bits_truncate(NODE_UMASK)).bits()
}

#[cfg(not(unix))]
pub fn restrict_umask() -> u32 {
    0
}

/// Create `data_dir` (mode 0700) if missing, and remove group and other permissions from it
/// and from everything under it (see the module documentation). Symbolic links inside are
/// neither followed nor changed (RocksDB makes none); the data directory itself may be one.
pub fn secure(data_dir: &Path) -> Result<Tightened, DataDirError> {
    let mut report = Tightened::default();
    match std::fs::metadata(data_dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(DataDirError::NotADirectory {
                path: data_dir.to_path_buf(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(data_dir)?;
            report.created = true;
        }
        Err(source) => {
            return Err(DataDirError::Inspect {
                path: data_dir.to_path_buf(),
                source,
            })
        }
    }
    // An empty directory exposed nothing yet: a fresh Docker volume is 0755 (the image's
    // /data cannot be made 0700 by the classic builder), so its first start is no incident.
    let was_empty = std::fs::read_dir(data_dir)
        .map(|mut entries| entries.next().is_none())
        .map_err(|source| DataDirError::Inspect {
            path: data_dir.to_path_buf(),
            source,
        })?;
    tighten_tree(data_dir, &mut report)?;
    if was_empty {
        if let Some((_, mode)) = report.paths.first() {
            tracing::info!(
                data_dir = %data_dir.display(),
                former_mode = format!("{mode:04o}"),
                "made the empty data directory private (0700)"
            );
        }
    } else if let Some((first, mode)) = report.paths.first() {
        tracing::warn!(
            data_dir = %data_dir.display(),
            count = report.paths.len(),
            example = %first.display(),
            example_mode = format!("{mode:04o}"),
            "files in the data directory were open to other users; removed the permissions of \
             group and others (files 0600, directories 0700)"
        );
        for (path, mode) in &report.paths {
            tracing::debug!(path = %path.display(), mode = format!("{mode:04o}"), "restricted");
        }
    }
    Ok(report)
}

#[cfg(unix)]
fn create_private_dir(path: &Path) -> Result<(), DataDirError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| DataDirError::Create {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(not(unix))]
fn create_private_dir(path: &Path) -> Result<(), DataDirError> {
    std::fs::create_dir_all(path).map_err(|source| DataDirError::Create {
        path: path.to_path_buf(),
        source,
    })
}

/// Tighten `root` (followed if it is a link) and walk everything under it without following
/// links. Iterative, so a deep tree cannot overflow the stack.
#[cfg(unix)]
fn tighten_tree(root: &Path, report: &mut Tightened) -> Result<(), DataDirError> {
    let meta = std::fs::metadata(root).map_err(|source| DataDirError::Inspect {
        path: root.to_path_buf(),
        source,
    })?;
    tighten_one(root, &meta, report)?;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| DataDirError::Inspect {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| DataDirError::Inspect {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(m) => m,
                // Removed meanwhile (RocksDB deletes obsolete files): nothing to protect.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(DataDirError::Inspect { path, source }),
            };
            if meta.file_type().is_symlink() {
                continue;
            }
            tighten_one(&path, &meta, report)?;
            if meta.is_dir() {
                dirs.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten_tree(_root: &Path, _report: &mut Tightened) -> Result<(), DataDirError> {
    Ok(())
}

/// Remove group and other permissions from one file or directory (its owner's and the special
/// bits stay as they are).
#[cfg(unix)]
fn tighten_one(
    path: &Path,
    meta: &std::fs::Metadata,
    report: &mut Tightened,
) -> Result<(), DataDirError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & GROUP_OTHER_BITS == 0 {
        return Ok(());
    }
    let wanted = mode & !GROUP_OTHER_BITS;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted)).map_err(|source| {
        DataDirError::TooOpen {
            path: path.to_path_buf(),
            mode,
            wanted,
            source,
        }
    })?;
    report.paths.push((path.to_path_buf(), mode));
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path)
            .expect("stat")
            .permissions()
            .mode()
            & 0o7777
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn a_missing_data_directory_is_created_private() {
        let root = tempfile::tempdir().expect("tempdir");
        let data = root.path().join("a").join("data");
        let report = secure(&data).expect("secured");
        assert!(report.created);
        assert_eq!(mode(&data), 0o700);
        assert!(report.paths.is_empty(), "{report:?}");
    }

    #[test]
    fn files_and_directories_open_to_others_are_tightened() {
        let root = tempfile::tempdir().expect("tempdir");
        let data = root.path().join("data");
        std::fs::create_dir_all(data.join("log")).expect("mkdir");
        std::fs::write(data.join("log").join("000001.log"), b"MSH|patient").expect("write");
        std::fs::write(data.join("CURRENT"), b"x").expect("write");
        std::fs::write(data.join("private"), b"x").expect("write");
        set_mode(&data, 0o755);
        set_mode(&data.join("log"), 0o775);
        set_mode(&data.join("log").join("000001.log"), 0o644);
        set_mode(&data.join("CURRENT"), 0o666);
        set_mode(&data.join("private"), 0o600);
        // A link to something outside is neither followed nor changed.
        let outside = root.path().join("outside");
        std::fs::write(&outside, b"not ours").expect("write");
        set_mode(&outside, 0o644);
        std::os::unix::fs::symlink(&outside, data.join("link")).expect("symlink");

        let report = secure(&data).expect("secured");
        assert!(!report.created);
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join("log")), 0o700);
        assert_eq!(mode(&data.join("log").join("000001.log")), 0o600);
        assert_eq!(mode(&data.join("CURRENT")), 0o600);
        assert_eq!(mode(&data.join("private")), 0o600);
        assert_eq!(mode(&outside), 0o644, "a link's target is left alone");
        assert_eq!(report.paths.len(), 4, "{report:?}");
        assert!(report.paths.contains(&(data.join("CURRENT"), 0o666)));

        // A second pass finds nothing to do.
        assert_eq!(secure(&data).expect("secured"), Tightened::default());
    }

    #[test]
    fn an_empty_open_data_directory_is_made_private() {
        let root = tempfile::tempdir().expect("tempdir");
        let data = root.path().join("data");
        std::fs::create_dir(&data).expect("mkdir");
        set_mode(&data, 0o755);
        let report = secure(&data).expect("secured");
        assert_eq!(report.paths, vec![(data.clone(), 0o755)]);
        assert_eq!(mode(&data), 0o700);
    }

    #[test]
    fn a_data_directory_that_is_a_file_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let file = root.path().join("data");
        std::fs::write(&file, b"x").expect("write");
        let err = secure(&file).expect_err("a file is no data directory");
        assert!(matches!(err, DataDirError::NotADirectory { .. }), "{err}");
    }

    #[test]
    fn the_refusal_names_the_file_and_its_mode() {
        let err = DataDirError::TooOpen {
            path: PathBuf::from("/data/log/000001.log"),
            mode: 0o644,
            wanted: 0o600,
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let text = err.to_string();
        assert!(text.starts_with("refusing to start"), "{text}");
        assert!(
            text.contains("/data/log/000001.log") && text.contains("0644"),
            "{text}"
        );
        assert!(
            text.contains("0600") && text.contains("chmod -R go-rwx"),
            "{text}"
        );
    }
}
