//! Where `raftlane ctl` sends its calls and with what credentials: the global flags (and their
//! environment variables), a context file, and the local dev cluster's defaults, in that order.
//!
//! A context file names a cluster once, so an operator switches clusters with `--context FILE`
//! (or `RAFTLANE_CONTEXT`) instead of repeating endpoints, token and CA on every command. It
//! holds file names, never a token itself: a context can be shared or committed, the token
//! file it points at stays the operator's.
//!
//! ```toml
//! endpoints = ["https://n1:7001", "https://n2:7001", "https://n3:7001"]
//! token_file = "~/.raftlane/prod.token"   # relative paths: from the context file's folder
//! ca = "ca.pem"                           # the cluster's CA: every node is dialled over TLS
//! cert = "client.pem"                     # mutual TLS (both or neither)
//! key = "client.key"
//! ```

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What `raftlane dev` serves: three nodes on 127.0.0.1:7001-7003, plain HTTP.
pub const DEV_ENDPOINTS: [&str; 3] = [
    "http://127.0.0.1:7001",
    "http://127.0.0.1:7002",
    "http://127.0.0.1:7003",
];

/// Where `raftlane dev` (run from the same folder, default `--data-dir`) keeps its admin token.
pub const DEV_TOKEN_FILE: &str = ".raftlane/dev/admin.token";

/// A context file could not be used, or a file it or a flag names could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid context file: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("{} holds no token", path.display())]
    EmptyToken { path: PathBuf },
    #[error("a client certificate needs its key and the key its certificate (cert, key)")]
    HalfIdentity,
    #[error("no endpoints: give --endpoints, RAFTLANE_ENDPOINTS or a context's endpoints")]
    NoEndpoints,
}

/// The members of a context file; every one optional.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// The nodes' API addresses (`host:port` or URLs).
    #[serde(default)]
    pub endpoints: Vec<String>,
    /// A file holding the bearer token (its surrounding whitespace ignored).
    pub token_file: Option<PathBuf>,
    /// The cluster's CA (PEM).
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM) for nodes that demand one.
    pub cert: Option<PathBuf>,
    /// The private key of `cert`.
    pub key: Option<PathBuf>,
}

impl ContextFile {
    /// Parse `text`, the context file at `path`; relative paths in it become relative to the
    /// file's folder, and `~/` the home folder, so a context works from any working directory.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ContextError> {
        let mut ctx: ContextFile = toml::from_str(text).map_err(|e| ContextError::Parse {
            path: path.to_path_buf(),
            reason: e.message().to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new(""));
        for p in [
            &mut ctx.token_file,
            &mut ctx.ca,
            &mut ctx.cert,
            &mut ctx.key,
        ]
        .into_iter()
        .flatten()
        {
            *p = resolve(base, p);
        }
        Ok(ctx)
    }

    pub fn load(path: &Path) -> Result<Self, ContextError> {
        let text = std::fs::read_to_string(path).map_err(|source| ContextError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }
}

/// `~/x` under `$HOME`, a relative path under `base`, an absolute path as it is.
fn resolve(base: &Path, p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// What the flags (and their environment variables) say; `None`/empty: not given.
#[derive(Debug, Default, Clone)]
pub struct Given {
    pub endpoints: Vec<String>,
    pub token: Option<String>,
    pub token_file: Option<PathBuf>,
    pub ca: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// Where to call and how: the flags over the context file over the dev defaults.
#[derive(Debug, PartialEq, Eq)]
pub struct Settings {
    pub endpoints: Vec<String>,
    /// `None`: no token anywhere; calls go without one (the API answers 401 but to probes).
    pub token: Option<String>,
    pub ca: Option<PathBuf>,
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl Settings {
    /// Resolve `given` over `context`. The token: `--token`, else `--token-file`, else the
    /// context's `token_file`, else, when the endpoints are the dev cluster's defaults, the dev
    /// cluster's token file in the working directory if there is one.
    pub fn resolve(given: Given, context: Option<ContextFile>) -> Result<Self, ContextError> {
        let context = context.unwrap_or_default();
        let endpoints: Vec<String> = if !given.endpoints.is_empty() {
            given.endpoints
        } else if !context.endpoints.is_empty() {
            context.endpoints
        } else {
            DEV_ENDPOINTS.iter().map(|s| s.to_string()).collect()
        };
        let endpoints: Vec<String> = endpoints
            .iter()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        if endpoints.is_empty() {
            return Err(ContextError::NoEndpoints);
        }
        let on_dev = endpoints
            .iter()
            .all(|e| DEV_ENDPOINTS.contains(&e.as_str()));
        let token = match (given.token, given.token_file.or(context.token_file)) {
            (Some(t), _) if !t.trim().is_empty() => Some(t.trim().to_string()),
            (_, Some(file)) => Some(read_token(&file)?),
            _ if on_dev && Path::new(DEV_TOKEN_FILE).is_file() => {
                Some(read_token(Path::new(DEV_TOKEN_FILE))?)
            }
            _ => None,
        };
        let cert = given.cert.or(context.cert);
        let key = given.key.or(context.key);
        let identity = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err(ContextError::HalfIdentity),
        };
        Ok(Settings {
            endpoints,
            token,
            ca: given.ca.or(context.ca),
            identity,
        })
    }
}

/// The token in `path`, without surrounding whitespace.
pub fn read_token(path: &Path) -> Result<String, ContextError> {
    let text = std::fs::read_to_string(path).map_err(|source| ContextError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(ContextError::EmptyToken {
            path: path.to_path_buf(),
        });
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_file_resolves_its_paths_from_its_own_folder() {
        let text = r#"
            endpoints = ["https://n1:7001", "n2:7001"]
            token_file = "prod.token"
            ca = "/etc/raftlane/ca.pem"
            cert = "certs/client.pem"
            key = "certs/client.key"
        "#;
        let ctx = ContextFile::parse(text, Path::new("/home/op/.raftlane/prod.toml")).unwrap();
        assert_eq!(ctx.endpoints, ["https://n1:7001", "n2:7001"]);
        assert_eq!(
            ctx.token_file.as_deref(),
            Some(Path::new("/home/op/.raftlane/prod.token"))
        );
        assert_eq!(ctx.ca.as_deref(), Some(Path::new("/etc/raftlane/ca.pem")));
        assert_eq!(
            ctx.cert.as_deref(),
            Some(Path::new("/home/op/.raftlane/certs/client.pem"))
        );
    }

    #[test]
    fn an_empty_context_file_is_valid_and_an_unknown_member_is_refused() {
        assert_eq!(
            ContextFile::parse("", Path::new("c.toml")).unwrap(),
            ContextFile::default()
        );
        // A token in the file itself is refused: a context names files, never secrets.
        let err = ContextFile::parse("token = \"secret\"", Path::new("c.toml")).unwrap_err();
        assert!(err.to_string().contains("unknown field `token`"), "{err}");
        let err = ContextFile::parse("endpoints = \"n1:7001\"", Path::new("c.toml")).unwrap_err();
        assert!(matches!(err, ContextError::Parse { .. }), "{err}");
    }

    #[test]
    fn flags_win_over_the_context_and_the_context_over_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("t");
        std::fs::write(&token_file, "  from-file\n").unwrap();
        let ctx = || ContextFile {
            endpoints: vec!["ctx:7001".into()],
            token_file: Some(token_file.clone()),
            ca: Some("ctx-ca.pem".into()),
            cert: None,
            key: None,
        };

        let s = Settings::resolve(Given::default(), Some(ctx())).unwrap();
        assert_eq!(s.endpoints, ["ctx:7001"]);
        assert_eq!(s.token.as_deref(), Some("from-file"));
        assert_eq!(s.ca.as_deref(), Some(Path::new("ctx-ca.pem")));

        let given = Given {
            endpoints: vec!["flag:7001".into(), " ".into()],
            token: Some("from-flag".into()),
            ca: Some("flag-ca.pem".into()),
            ..Given::default()
        };
        let s = Settings::resolve(given, Some(ctx())).unwrap();
        assert_eq!(s.endpoints, ["flag:7001"]);
        assert_eq!(s.token.as_deref(), Some("from-flag"));
        assert_eq!(s.ca.as_deref(), Some(Path::new("flag-ca.pem")));
    }

    #[test]
    fn without_anything_given_the_dev_cluster_is_the_target() {
        let s = Settings::resolve(Given::default(), None).unwrap();
        assert_eq!(s.endpoints, DEV_ENDPOINTS);
        assert_eq!(s.ca, None);
        assert_eq!(s.identity, None);
    }

    #[test]
    fn an_unreadable_or_empty_token_file_and_half_an_identity_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Given {
            token_file: Some(dir.path().join("absent")),
            ..Given::default()
        };
        assert!(matches!(
            Settings::resolve(missing, None),
            Err(ContextError::Read { .. })
        ));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let given = Given {
            token_file: Some(empty),
            ..Given::default()
        };
        assert!(matches!(
            Settings::resolve(given, None),
            Err(ContextError::EmptyToken { .. })
        ));
        let half = Given {
            cert: Some("c.pem".into()),
            ..Given::default()
        };
        assert!(matches!(
            Settings::resolve(half, None),
            Err(ContextError::HalfIdentity)
        ));
        let blank = Given {
            endpoints: vec![" ".into()],
            ..Given::default()
        };
        assert!(matches!(
            Settings::resolve(blank, None),
            Err(ContextError::NoEndpoints)
        ));
    }
}
