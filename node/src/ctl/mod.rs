//! `raftlane ctl`: the operator's command line, like `etcdctl` or `nats`. Each subcommand is a
//! thin call of an existing route (docs/SPEC.md §10.1), printed as a table for people or as the
//! API's JSON for scripts (`--json`), ending with an exit status that says what happened
//! ([`EXIT_STATUSES`]). Calls go through the Rust client (`raftlane_client::Client`: leader
//! following, one `Request-Id` per write across retries, TLS); per-node probes (`status`) go
//! through its transport, one node at a time.
//!
//! One module per group of subcommands: [`cluster`] (status, members, leader), [`pipeline`] (channels,
//! destinations, lanes), [`messages`] (messages, dead letters), [`admin`] (tokens, config,
//! approvals, audit), [`backup`] (snapshot save and take); [`context`] resolves where to call,
//! [`output`] prints.

/// `println!` that ignores a closed stdout (`raftlane ctl ... | head`): the reader has what it
/// wanted, which is no reason to panic.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pub mod admin;
pub mod backup;
pub mod cluster;
pub mod context;
pub mod messages;
pub mod output;
pub mod pipeline;

use clap::{Args, Subcommand};
use hyper::{Method, StatusCode};
use raftlane_client::tls::ClientTls;
use raftlane_client::transport::{base_url, PeerClient};
use raftlane_client::{Client, ClientError};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// The exit statuses, as `--help` prints them.
pub const EXIT_STATUSES: &str = "\
Exit status:
  0  done
  1  the API refused or answered an error (its status, code and message are printed),
     or a check failed (audit verify, a refused membership change)
  2  usage: a bad flag or argument, or a context, token, TLS or input file that cannot be used
  3  no node answered (unreachable, timed out, or every node unavailable)
  4  unauthorized or forbidden (401/403: a missing, wrong or revoked token, or too small a role)";

const CONTEXT_HELP: &str = "\
Context file (--context FILE, RAFTLANE_CONTEXT), TOML; every member optional, flags win:
  endpoints = [\"https://n1:7001\", \"https://n2:7001\"]
  token_file = \"prod.token\"     # relative paths are read from the context file's folder
  ca = \"ca.pem\"                 # the cluster's CA: every node is dialled over TLS
  cert = \"client.pem\"           # mutual TLS: cert and key together
  key = \"client.key\"
Without endpoints anywhere, ctl calls the `raftlane dev` cluster (http://127.0.0.1:7001-7003)
and, without a token, reads the dev cluster's .raftlane/dev/admin.token when present.";

/// `raftlane ctl` and its global options (accepted before or after the subcommand).
#[derive(Args, Debug)]
#[command(after_help = after_help())]
pub struct CtlArgs {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// `--help`'s text after the options: the exit statuses and the context file's format.
fn after_help() -> String {
    format!("{EXIT_STATUSES}\n\n{CONTEXT_HELP}")
}

/// The options every subcommand takes.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// The nodes' API addresses, comma-separated (host:port or URLs).
    #[arg(
        long,
        global = true,
        env = "RAFTLANE_ENDPOINTS",
        value_delimiter = ',',
        value_name = "ADDRS"
    )]
    pub endpoints: Vec<String>,
    /// The bearer token (prefer --token-file: a flag shows in the process list).
    #[arg(long, global = true, env = "RAFTLANE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A file holding the bearer token.
    #[arg(long, global = true, env = "RAFTLANE_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The cluster's CA (PEM): verify the nodes against it and dial them over TLS. The same
    /// variable the Python client reads.
    #[arg(long, global = true, env = "RAFTLANE_CA_FILE", value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// A client certificate (PEM) for nodes with mutual TLS; needs --key and a CA.
    #[arg(long, global = true, env = "RAFTLANE_CLIENT_CERT", value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert.
    #[arg(long, global = true, env = "RAFTLANE_CLIENT_KEY", value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// A context file naming the cluster (format below).
    #[arg(long, global = true, env = "RAFTLANE_CONTEXT", value_name = "FILE")]
    pub context: Option<PathBuf>,
    /// Print the API's JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// How long a call keeps trying other nodes before giving up (exit 3).
    #[arg(long, global = true, default_value_t = 10.0, value_name = "SECONDS")]
    pub timeout: f64,
}

#[derive(Subcommand, Debug)]
pub enum CtlCommand {
    /// Every node as it answers: role, term, log and applied index, lag, readiness, clock.
    Status,
    /// Add a learner, promote it to voter, or remove a voter.
    #[command(subcommand)]
    Member(cluster::MemberCommand),
    /// Hand leadership to another voter.
    #[command(subcommand)]
    Leader(cluster::LeaderCommand),
    /// The log format the cluster writes; raise it once every node runs the new build (the
    /// last step of a rolling upgrade, docs/OPERATIONS.md).
    #[command(name = "log-format")]
    LogFormat {
        #[command(subcommand)]
        action: Option<cluster::LogFormatCommand>,
    },
    /// Channels: configured ones and those with traffic, with their counts.
    Channels,
    /// Destinations: configured ones and those with rows, with depth, dead letters and whether
    /// they are paused; pause or resume one.
    Destinations {
        #[command(subcommand)]
        action: Option<pipeline::DestinationCommand>,
    },
    /// FIFO lanes: depth, oldest row, holder and lease (GET /v1/lanes).
    Lanes,
    /// Dead outbound rows: list, count, replay, purge.
    #[command(subcommand, name = "dead-letters")]
    DeadLetters(messages::DeadLetterCommand),
    /// Messages: show one, or search.
    #[command(subcommand)]
    Messages(messages::MessageCommand),
    /// API principals: list, create, revoke.
    #[command(subcommand)]
    Tokens(admin::TokenCommand),
    /// The configuration document: get, put (compare-and-set), diff.
    #[command(subcommand)]
    Config(admin::ConfigCommand),
    /// Approvals of dual control: list pending, decide.
    #[command(subcommand)]
    Approvals(admin::ApprovalCommand),
    /// An org's audit chain: verify it, show its last rows.
    #[command(subcommand)]
    Audit(admin::AuditCommand),
    /// Backups: save the cluster's state to a file (restore it with `raftlane restore`), or
    /// have nodes snapshot now.
    #[command(subcommand)]
    Snapshot(backup::SnapshotCommand),
    /// Print shell completions for `raftlane` (e.g. `raftlane ctl completion bash >
    /// /etc/bash_completion.d/raftlane`).
    Completion { shell: clap_complete::Shell },
}

/// Why a subcommand failed; each cause has its exit status ([`CtlError::exit_status`]).
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// A local problem: a context, token, TLS or input file, an argument's value.
    #[error("{0}")]
    Usage(String),
    /// The API answered an error.
    #[error("{status} {code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
    },
    /// No node answered.
    #[error("no node answered: {0}")]
    Unreachable(String),
    /// An answer that is not what the route documents, or a check that failed.
    #[error("{0}")]
    Failed(String),
}

impl CtlError {
    pub fn exit_status(&self) -> i32 {
        match self {
            CtlError::Usage(_) => 2,
            CtlError::Api {
                status: 401 | 403, ..
            } => 4,
            CtlError::Api { .. } | CtlError::Failed(_) => 1,
            CtlError::Unreachable(_) => 3,
        }
    }
}

impl From<ClientError> for CtlError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Api {
                status,
                code,
                message,
                ..
            } => CtlError::Api {
                status,
                code,
                message,
            },
            ClientError::Unavailable(why) => CtlError::Unreachable(why),
            ClientError::Decode(why) => CtlError::Failed(format!("unexpected answer: {why}")),
        }
    }
}

impl From<context::ContextError> for CtlError {
    fn from(e: context::ContextError) -> Self {
        CtlError::Usage(e.to_string())
    }
}

/// A connection to the cluster the options name.
pub struct Conn {
    /// Base URLs, in the order given.
    pub endpoints: Vec<String>,
    token: Option<String>,
    client: Client,
    /// For one-node probes: no failover.
    http: PeerClient,
    pub json: bool,
    timeout: Duration,
}

impl Conn {
    pub fn open(global: &Global) -> Result<Self, CtlError> {
        let context = global
            .context
            .as_deref()
            .map(context::ContextFile::load)
            .transpose()?;
        let given = context::Given {
            endpoints: global.endpoints.clone(),
            token: global.token.clone(),
            token_file: global.token_file.clone(),
            ca: global.ca.clone(),
            cert: global.cert.clone(),
            key: global.key.clone(),
        };
        let settings = context::Settings::resolve(given, context)?;
        if !(global.timeout.is_finite() && global.timeout > 0.0) {
            return Err(CtlError::Usage(
                "--timeout must be a positive number".into(),
            ));
        }
        let timeout = Duration::from_secs_f64(global.timeout.min(3600.0));
        let tls = match &settings.ca {
            Some(ca) => {
                let identity = settings
                    .identity
                    .as_ref()
                    .map(|(c, k)| (c.as_path(), k.as_path()));
                Some(
                    ClientTls::from_files(ca, identity)
                        .map_err(|e| CtlError::Usage(e.to_string()))?,
                )
            }
            None if settings.identity.is_some() => {
                return Err(CtlError::Usage(
                    "a client certificate needs the cluster's CA (--ca)".into(),
                ))
            }
            None => None,
        };
        let mut client = Client::new(
            settings.endpoints.clone(),
            settings.token.clone().unwrap_or_default(),
        )
        .with_deadline(timeout);
        if let Some(tls) = &tls {
            client = client.with_tls(tls);
        }
        Ok(Self {
            endpoints: settings.endpoints.iter().map(|e| base_url(e)).collect(),
            token: settings.token,
            client,
            http: PeerClient::with_tls(timeout.min(Duration::from_secs(10)), tls.as_ref()),
            json: global.json,
            timeout,
        })
    }

    /// `GET path` from whichever node answers.
    pub async fn get(&self, path: &str) -> Result<Value, CtlError> {
        Ok(self.client.request(Method::GET, path, None).await?)
    }

    /// `POST path` with `body` (one `Request-Id` across retries).
    pub async fn post(&self, path: &str, body: Value) -> Result<Value, CtlError> {
        Ok(self.client.request(Method::POST, path, Some(body)).await?)
    }

    pub async fn delete(&self, path: &str) -> Result<Value, CtlError> {
        Ok(self.client.request(Method::DELETE, path, None).await?)
    }

    /// The client, for the calls it has typed methods for; `patience` extends the deadline for
    /// calls that may take long (a learner catching up).
    pub fn client(&self, patience: Option<Duration>) -> Client {
        match patience {
            Some(p) => self.client.clone().with_deadline(self.timeout.max(p)),
            None => self.client.clone(),
        }
    }

    /// The token's `Authorization` header, when there is a token.
    fn auth_header(&self) -> Vec<(&'static str, String)> {
        self.token
            .iter()
            .map(|t| ("authorization", format!("Bearer {t}")))
            .collect()
    }

    /// `GET url` (one node, no retry) with the token, a 2xx body streamed into `sink`; see
    /// `PeerClient::download`. The wait for each part of the answer is `--timeout`.
    pub async fn download(
        &self,
        url: &str,
        sink: &mut (dyn std::io::Write + Send),
    ) -> Result<(StatusCode, hyper::HeaderMap, hyper::body::Bytes, u64), String> {
        PeerClient::clone(&self.http)
            .with_timeout(self.timeout)
            .download(url, &self.auth_header(), sink)
            .await
            .map_err(|e| e.to_string())
    }

    /// `POST url` with an empty body at one node, no retry; its JSON answer, or its error.
    pub async fn post_to(&self, url: &str) -> Result<Value, CtlError> {
        let (status, _, body) = self
            .http
            .call(Method::POST, url, &self.auth_header(), Vec::new())
            .await
            .map_err(|e| CtlError::Unreachable(format!("{url}: {e}")))?;
        if !status.is_success() {
            return Err(api_error(status.as_u16(), &body));
        }
        serde_json::from_slice(&body)
            .map_err(|e| CtlError::Failed(format!("unexpected answer from {url}: {e}")))
    }

    /// One call to one node, no retry: its status, headers and JSON body (`Null` when empty or
    /// not JSON). `auth`: send the token.
    pub async fn probe(
        &self,
        endpoint: &str,
        path: &str,
        auth: bool,
    ) -> Result<(StatusCode, hyper::HeaderMap, Value), String> {
        let headers = if auth { self.auth_header() } else { Vec::new() };
        let url = format!("{endpoint}{path}");
        let (status, head, body) = self
            .http
            .call(Method::GET, &url, &headers, Vec::new())
            .await
            .map_err(|e| e.to_string())?;
        let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok((status, head, value))
    }
}

/// Run `raftlane ctl`; the process's exit status. `cli` builds the whole `raftlane` command
/// (for `completion`, whose script must cover every subcommand of the binary).
pub async fn run(args: CtlArgs, cli: fn() -> clap::Command) -> i32 {
    if let CtlCommand::Completion { shell } = args.command {
        let mut command = cli();
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command, "raftlane", &mut script);
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(&script);
        return 0;
    }
    let outcome = match Conn::open(&args.global) {
        Ok(conn) => dispatch(&conn, args.command).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            if let CtlError::Api { status: 401, .. } = e {
                eprintln!("hint: give a token with --token-file, --token or a context file");
            }
            e.exit_status()
        }
    }
}

async fn dispatch(conn: &Conn, command: CtlCommand) -> Result<(), CtlError> {
    match command {
        CtlCommand::Status => cluster::status(conn).await,
        CtlCommand::Member(c) => cluster::member(conn, c).await,
        CtlCommand::Leader(c) => cluster::leader(conn, c).await,
        CtlCommand::LogFormat { action } => cluster::log_format(conn, action).await,
        CtlCommand::Channels => pipeline::channels(conn).await,
        CtlCommand::Destinations { action } => pipeline::destinations(conn, action).await,
        CtlCommand::Lanes => pipeline::lanes(conn).await,
        CtlCommand::DeadLetters(c) => messages::dead_letters(conn, c).await,
        CtlCommand::Messages(c) => messages::messages(conn, c).await,
        CtlCommand::Tokens(c) => admin::tokens(conn, c).await,
        CtlCommand::Config(c) => admin::config(conn, c).await,
        CtlCommand::Approvals(c) => admin::approvals(conn, c).await,
        CtlCommand::Audit(c) => admin::audit(conn, c).await,
        CtlCommand::Snapshot(c) => backup::snapshot(conn, c).await,
        CtlCommand::Completion { .. } => Ok(()),
    }
}

/// The error an API answer with a non-success `status` and `body` stands for.
pub fn api_error(status: u16, body: &[u8]) -> CtlError {
    CtlError::from(ClientError::from_response(status, body))
}

/// `key=value` pairs as a query string (values percent-encoded), `""` when there are none.
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| format!("{k}={}", raftlane_client::contract::path::encode_segment(v)))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// A duration such as `90s`, `15m`, `12h`, `7d` or `500ms` (a bare number: seconds), in ms.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 90s, 15m, 12h, 7d)"))?;
    let scale = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{text:?}: the unit must be ms, s, m, h or d")),
    };
    n.checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_exit_status() {
        let api = |status| CtlError::Api {
            status,
            code: "x".into(),
            message: "m".into(),
        };
        assert_eq!(api(401).exit_status(), 4);
        assert_eq!(api(403).exit_status(), 4);
        assert_eq!(api(409).exit_status(), 1);
        assert_eq!(api(404).exit_status(), 1);
        assert_eq!(CtlError::Unreachable("n".into()).exit_status(), 3);
        assert_eq!(CtlError::Usage("u".into()).exit_status(), 2);
        assert_eq!(CtlError::Failed("f".into()).exit_status(), 1);
        assert!(EXIT_STATUSES.contains("4  unauthorized"));
        assert!(after_help().starts_with(EXIT_STATUSES));
        assert!(after_help().ends_with(CONTEXT_HELP));
    }

    #[test]
    fn durations_take_a_unit_and_a_bare_number_means_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("90"), Ok(90_000));
        assert_eq!(parse_duration("15m"), Ok(900_000));
        assert_eq!(parse_duration("7d"), Ok(604_800_000));
        assert!(parse_duration("7w").is_err());
        assert!(parse_duration("d").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }

    #[test]
    fn query_strings_encode_values_and_skip_absent_ones() {
        assert_eq!(query(&[("a", None)]), "");
        assert_eq!(
            query(&[
                ("channel", Some("lab/1 x".into())),
                ("x", None),
                ("limit", Some("5".into()))
            ]),
            "?channel=lab%2F1%20x&limit=5"
        );
    }
}
