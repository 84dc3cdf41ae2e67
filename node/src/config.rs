//! Node configuration: command-line flags, `RAFTLANE_*` environment variables and an optional
//! TOML file, in that order of precedence.

use crate::listener::ConnLimits;
use crate::server::NodeOptions;
use crate::tls::TlsFiles;
use anyhow::{bail, Context};
use clap::Args;
use raftlane_raft::Tuning;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `raftlane node` flags. Each can also be set by its environment variable or in `--config`.
#[derive(Args, Debug, Clone, Default)]
pub struct NodeArgs {
    /// This node's id (a positive integer, unique in the cluster).
    #[arg(long, env = "RAFTLANE_ID")]
    pub id: Option<u64>,
    /// Address to serve the API and the Raft transport on, e.g. 0.0.0.0:7001.
    #[arg(long, env = "RAFTLANE_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Address peers and clients use to reach this node (default: the --peers entry for --id,
    /// else --listen).
    #[arg(long, env = "RAFTLANE_ADVERTISE")]
    pub advertise: Option<String>,
    /// The initial voters as id=host:port pairs, e.g. 1=n1:7001,2=n2:7001,3=n3:7001.
    #[arg(long, env = "RAFTLANE_PEERS")]
    pub peers: Option<String>,
    /// Directory for the Raft log, the state and snapshots.
    #[arg(long, env = "RAFTLANE_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Initialize the cluster from --peers on first start (set on one node; harmless on restart).
    #[arg(long, env = "RAFTLANE_BOOTSTRAP")]
    pub bootstrap: Option<bool>,
    /// Shared secret that authenticates node-to-node traffic (required; same on every node).
    #[arg(long, env = "RAFTLANE_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// A file holding the cluster secret (preferred to --cluster-secret, which `ps` shows).
    #[arg(
        long,
        env = "RAFTLANE_CLUSTER_SECRET_FILE",
        conflicts_with = "cluster_secret"
    )]
    pub cluster_secret_file: Option<PathBuf>,
    /// The bootstrap admin token; give every node the same one. When unset, one is generated
    /// on first start, stored in the data directory (admin.token) and printed once; it is then
    /// valid on this node only (use it to create cluster-wide tokens with POST /v1/tokens).
    #[arg(long, env = "RAFTLANE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// A file holding the bootstrap admin token (preferred to --admin-token, which `ps` shows).
    #[arg(
        long,
        env = "RAFTLANE_ADMIN_TOKEN_FILE",
        conflicts_with = "admin_token"
    )]
    pub admin_token_file: Option<PathBuf>,
    /// Largest accepted request body in bytes (default 1048576); larger bodies get 413.
    #[arg(long, env = "RAFTLANE_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// FOR TESTS ONLY: a request may set the time of its proposals (applied at exactly that
    /// time) and time-dependent reads with the header Raftlane-Client-Time-Ms, and the leader's
    /// housekeeping timers (lease reclaim, record expiry, retention) are off. Never in
    /// production: clients control the cluster's clock and nothing reclaims expired leases.
    #[arg(long, env = "RAFTLANE_TEST_CLIENT_CLOCK")]
    pub test_client_clock: bool,
    /// Wipe this node's state, raft log and snapshots (keeping its vote) and catch up from the
    /// leader: the remedy for STATE DAMAGED or RAFT LOG DAMAGED. Refused (exit 75, nothing
    /// removed) unless a majority of the voters in --peers, this node left out, answer ready
    /// with another leader: otherwise this node may hold the last copy. An operator's one-off:
    /// never put it in a supervisor's command line.
    #[arg(long)]
    pub rejoin: bool,
    /// GET /metrics answers only a token that may read every channel (its totals span every
    /// channel); without it Prometheus scrapes it with no token.
    #[arg(long, env = "RAFTLANE_METRICS_TOKEN_REQUIRED")]
    pub metrics_token_required: bool,
    // --- per-token request rate limit (docs/SPEC.md §10.5) ---
    /// Requests per second each token may send to this node (0, the default, is off); a token
    /// over it is answered 429 rate_limited with Retry-After. Fractions allowed (0.5 = one
    /// request every 2 s).
    #[arg(long, env = "RAFTLANE_RATE_LIMIT_PER_TOKEN")]
    pub rate_limit_per_token: Option<f64>,
    /// Requests a token may send at once after being idle (default: the per-second rate, at
    /// least 1).
    #[arg(long, env = "RAFTLANE_RATE_LIMIT_BURST")]
    pub rate_limit_burst: Option<u32>,
    /// Serve HTTPS (API, Raft RPCs and node-to-node calls) with this PEM certificate chain;
    /// needs --tls-key. Peers are then dialled over TLS too. Default: plain HTTP.
    #[arg(long, env = "RAFTLANE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = "RAFTLANE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: every client must present a certificate signed by this CA (PEM). Nodes
    /// present their own --tls-cert when they dial each other.
    #[arg(long, env = "RAFTLANE_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// The CA (PEM) that peers' certificates are verified against when this node dials them
    /// (default: --tls-client-ca).
    #[arg(long, env = "RAFTLANE_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Seconds a client has to finish the TLS handshake and to send each request's headers
    /// (also how long a kept-alive connection may wait for its next request). Default 10.
    #[arg(long, env = "RAFTLANE_HTTP_HEADER_TIMEOUT")]
    pub http_header_timeout: Option<u64>,
    /// Seconds a connection may stay without any byte read or written while no request is
    /// being handled. Default 60.
    #[arg(long, env = "RAFTLANE_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,
    /// Seconds a client has to send a request's whole body once its headers have arrived;
    /// later, the request is answered 408 body_timeout and its connection closed. Default 30.
    #[arg(long, env = "RAFTLANE_BODY_TIMEOUT")]
    pub body_timeout: Option<u64>,
    // --- learners (docs/SPEC.md §9.5) ---
    /// How many log entries behind the leader a learner may be and count as caught up (default
    /// 1000): adding a learner waits for it, only a caught-up learner can be made a voter, and
    /// a voter set needs a majority of caught-up members. Same as [tuning]
    /// learner_lag_threshold.
    #[arg(long, env = "RAFTLANE_LEARNER_MAX_LAG", value_name = "ENTRIES")]
    pub learner_max_lag: Option<u64>,
    /// Seconds a learner has to catch up (default 60): POST /v1/cluster/learners waits this
    /// long, and a learner still (or again) behind after it is removed from the cluster, with
    /// a log line and an entry under removed_learners in GET /v1/cluster. Applies on the
    /// leader. Same as [tuning] learner_catchup_timeout_ms / 1000.
    #[arg(long, env = "RAFTLANE_LEARNER_CATCHUP_TIMEOUT", value_name = "SECONDS")]
    pub learner_catchup_timeout: Option<u64>,
    // --- slow storage (docs/SPEC.md §11.7) ---
    /// Milliseconds: the raft log's synced writes count as slow when they take this long on
    /// average over 3 s (or one has waited this long); a leader slow for 3 s hands leadership
    /// to a healthy, caught-up voter and stays out of elections for 30 s. Default 100; 0 turns
    /// it off. Same as [tuning] slow_storage_handoff_ms.
    #[arg(long, env = "RAFTLANE_SLOW_STORAGE_HANDOFF_MS", value_name = "MS")]
    pub slow_storage_handoff_ms: Option<u64>,
    /// As the leader, send each batch of entries to the other voters while writing it, so
    /// their fsyncs overlap this node's (default true; docs/SPEC.md §11.1). Same as [tuning]
    /// eager_replication.
    #[arg(long, env = "RAFTLANE_EAGER_REPLICATION", value_name = "BOOL", action = clap::ArgAction::Set)]
    pub eager_replication: Option<bool>,
    /// A TOML file with any of these settings (keys as the flag names with underscores), plus a
    /// [tuning] table (heartbeat_ms, election_timeout_min_ms, snapshot_logs_since_last, ...).
    #[arg(long, env = "RAFTLANE_CONFIG")]
    pub config: Option<PathBuf>,
}

/// The TOML file's shape.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    id: Option<u64>,
    listen: Option<SocketAddr>,
    advertise: Option<String>,
    peers: Option<String>,
    data_dir: Option<PathBuf>,
    bootstrap: Option<bool>,
    cluster_secret: Option<String>,
    cluster_secret_file: Option<PathBuf>,
    admin_token: Option<String>,
    admin_token_file: Option<PathBuf>,
    max_body_bytes: Option<usize>,
    // --- per-token request rate limit ---
    rate_limit_per_token: Option<f64>,
    rate_limit_burst: Option<u32>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    tls_client_ca: Option<PathBuf>,
    tls_ca: Option<PathBuf>,
    http_header_timeout: Option<u64>,
    idle_timeout: Option<u64>,
    body_timeout: Option<u64>,
    learner_max_lag: Option<u64>,
    learner_catchup_timeout: Option<u64>,
    slow_storage_handoff_ms: Option<u64>,
    eager_replication: Option<bool>,
    tuning: Option<Tuning>,
}

/// A secret given directly, or through a file (read with [`crate::secret_file::read`]).
fn secret_from(
    value: Option<String>,
    file: Option<PathBuf>,
    what: &str,
) -> anyhow::Result<Option<String>> {
    match (value.filter(|v| !v.is_empty()), file) {
        (Some(v), _) => Ok(Some(v)),
        (None, Some(path)) => match crate::secret_file::read(&path)? {
            Some(v) => Ok(Some(v)),
            None => bail!("the {what} file {} is missing or empty", path.display()),
        },
        (None, None) => Ok(None),
    }
}

/// Parse `1=host:port,2=host:port`.
pub fn parse_peers(s: &str) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut peers = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .with_context(|| format!("peer '{part}' is not id=host:port"))?;
        let id: u64 = id
            .trim()
            .parse()
            .with_context(|| format!("peer id '{id}' is not a number"))?;
        if addr.trim().is_empty() {
            bail!("peer {id} has an empty address");
        }
        peers.insert(id, addr.trim().to_string());
    }
    Ok(peers)
}

/// Read the stored admin token or create one (printed once, on creation).
pub fn admin_token_for(data_dir: &Path) -> anyhow::Result<String> {
    let path = data_dir.join("admin.token");
    if let Some(t) = crate::secret_file::read(&path)? {
        return Ok(t);
    }
    std::fs::create_dir_all(data_dir)?;
    let token = generate_token();
    crate::secret_file::write(&path, &token)?;
    // The bootstrap token is a node-local credential (its hash is not replicated), so a token
    // generated here works on this node only. Say so where the operator will see it.
    println!(
        "Generated admin token (stored in {}): {token}\n\
         It is valid on this node only. Give every node the same RAFTLANE_ADMIN_TOKEN, or use \
         this one here to create cluster-wide tokens with POST /v1/tokens.",
        path.display()
    );
    Ok(token)
}

pub fn generate_token() -> String {
    use rand::RngCore;
    let mut raw = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut raw);
    format!("rl_{}", hex::encode(raw))
}

impl NodeArgs {
    /// Merge flags/env over the file and check that everything needed is there.
    pub fn resolve(self) -> anyhow::Result<NodeOptions> {
        let file: FileConfig = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                toml::from_str(&text)
                    .with_context(|| format!("invalid config file {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let id = self
            .id
            .or(file.id)
            .context("--id is required (or RAFTLANE_ID)")?;
        if id == 0 {
            bail!("--id must be a positive integer");
        }
        let listen = self
            .listen
            .or(file.listen)
            .context("--listen is required (or RAFTLANE_LISTEN)")?;
        let peers = match self.peers.or(file.peers) {
            Some(p) => parse_peers(&p)?,
            None => BTreeMap::new(),
        };
        let advertise = self
            .advertise
            .or(file.advertise)
            .or_else(|| peers.get(&id).cloned())
            .unwrap_or_else(|| listen.to_string());
        let data_dir = self
            .data_dir
            .or(file.data_dir)
            .context("--data-dir is required (or RAFTLANE_DATA_DIR)")?;
        let cluster_secret = secret_from(
            self.cluster_secret.or(file.cluster_secret),
            self.cluster_secret_file.or(file.cluster_secret_file),
            "cluster secret",
        )?
        .context("a cluster secret is required: --cluster-secret-file, --cluster-secret or RAFTLANE_CLUSTER_SECRET(_FILE) (same on every node)")?;
        let admin_token = match secret_from(
            self.admin_token.or(file.admin_token),
            self.admin_token_file.or(file.admin_token_file),
            "admin token",
        )? {
            Some(t) => t,
            None => admin_token_for(&data_dir)?,
        };
        let rate_limit = rate_limit(
            self.rate_limit_per_token.or(file.rate_limit_per_token),
            self.rate_limit_burst.or(file.rate_limit_burst),
        )?;
        let tls = match (
            self.tls_cert.or(file.tls_cert),
            self.tls_key.or(file.tls_key),
        ) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert,
                key,
                client_ca: self.tls_client_ca.or(file.tls_client_ca),
                ca: self.tls_ca.or(file.tls_ca),
            }),
            (None, None) => {
                if self.tls_client_ca.is_some() || file.tls_client_ca.is_some() {
                    bail!("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
                }
                None
            }
            _ => bail!("--tls-cert and --tls-key go together"),
        };
        let seconds = |flag: &str, value: Option<u64>, default: Duration| match value {
            Some(0) => bail!("{flag} must be at least 1 second"),
            Some(s) => Ok(Duration::from_secs(s)),
            None => Ok(default),
        };
        let conn_limits = ConnLimits {
            header_timeout: seconds(
                "--http-header-timeout",
                self.http_header_timeout.or(file.http_header_timeout),
                crate::listener::DEFAULT_HEADER_TIMEOUT,
            )?,
            idle_timeout: seconds(
                "--idle-timeout",
                self.idle_timeout.or(file.idle_timeout),
                crate::listener::DEFAULT_IDLE_TIMEOUT,
            )?,
            body_timeout: seconds(
                "--body-timeout",
                self.body_timeout.or(file.body_timeout),
                raftlane_api::body_deadline::DEFAULT_BODY_TIMEOUT,
            )?,
        };
        let mut tuning = file.tuning.unwrap_or_default();
        if let Some(lag) = self.learner_max_lag.or(file.learner_max_lag) {
            tuning.learner_lag_threshold = lag;
        }
        if let Some(s) = self
            .learner_catchup_timeout
            .or(file.learner_catchup_timeout)
        {
            if s == 0 {
                bail!("--learner-catchup-timeout must be at least 1 second");
            }
            tuning.learner_catchup_timeout_ms = s.saturating_mul(1000);
        }
        if let Some(ms) = self
            .slow_storage_handoff_ms
            .or(file.slow_storage_handoff_ms)
        {
            tuning.slow_storage_handoff_ms = ms;
        }
        if let Some(on) = self.eager_replication.or(file.eager_replication) {
            tuning.eager_replication = on;
        }
        let bootstrap = self.bootstrap.or(file.bootstrap).unwrap_or(false);
        if bootstrap && !peers.contains_key(&id) {
            bail!("--bootstrap needs --peers to include this node ({id})");
        }
        Ok(NodeOptions {
            id,
            listen,
            advertise,
            peers,
            data_dir,
            bootstrap,
            cluster_secret,
            admin_token,
            max_body_bytes: self
                .max_body_bytes
                .or(file.max_body_bytes)
                .unwrap_or(1024 * 1024),
            tuning,
            test_client_clock: self.test_client_clock,
            metrics_token_required: self.metrics_token_required,
            rate_limit,
            tls,
            conn_limits,
        })
    }
}

/// The per-token rate limit from its two settings: off unless a positive rate is given.
fn rate_limit(
    per_second: Option<f64>,
    burst: Option<u32>,
) -> anyhow::Result<raftlane_api::rate_limit::RateLimit> {
    let per_second = per_second.unwrap_or(0.0);
    if !per_second.is_finite() || per_second < 0.0 {
        bail!(
            "--rate-limit-per-token must be a number of requests per second, 0 or more (0 = off)"
        );
    }
    Ok(raftlane_api::rate_limit::RateLimit {
        per_second,
        burst: burst.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limit_is_off_by_default_and_checked() {
        let off = rate_limit(None, None).expect("valid");
        assert_eq!(off, raftlane_api::rate_limit::RateLimit::default());
        let on = rate_limit(Some(2.5), Some(10)).expect("valid");
        assert_eq!((on.per_second, on.burst), (2.5, 10));
        assert!(rate_limit(Some(-1.0), None).is_err());
        assert!(rate_limit(Some(f64::INFINITY), None).is_err());
    }

    #[test]
    fn peers_parse() {
        let p = parse_peers("1=a:1, 2=b:2,3=c:3").unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[&2], "b:2");
        assert!(parse_peers("1a:1").is_err());
        assert!(parse_peers("x=a:1").is_err());
        assert!(parse_peers("1=").is_err());
    }

    #[test]
    fn resolve_requires_a_secret_and_defaults_advertise_to_the_peer_entry() {
        let dir = std::env::temp_dir().join(format!("raftlane-cfg-{}", std::process::id()));
        let args = NodeArgs {
            id: Some(2),
            listen: Some("127.0.0.1:7002".parse().unwrap()),
            peers: Some("1=h1:7001,2=h2:7002".into()),
            data_dir: Some(dir.clone()),
            admin_token: Some("t".into()),
            ..Default::default()
        };
        assert!(
            args.clone().resolve().is_err(),
            "no secret must be an error"
        );
        let opts = NodeArgs {
            cluster_secret: Some("s".into()),
            ..args
        }
        .resolve()
        .unwrap();
        assert_eq!(opts.advertise, "h2:7002");
        assert!(!opts.bootstrap);
    }

    #[test]
    fn learner_bounds_are_node_flags() {
        let dir = tempfile::tempdir().unwrap();
        let args = NodeArgs {
            id: Some(1),
            listen: Some("127.0.0.1:7001".parse().unwrap()),
            data_dir: Some(dir.path().to_path_buf()),
            cluster_secret: Some("s".into()),
            admin_token: Some("t".into()),
            ..Default::default()
        };
        let defaults = args.clone().resolve().unwrap().tuning;
        assert_eq!(defaults.learner_lag_threshold, 1000);
        assert_eq!(defaults.learner_catchup_timeout_ms, 60_000);
        let set = NodeArgs {
            learner_max_lag: Some(50),
            learner_catchup_timeout: Some(7),
            ..args.clone()
        }
        .resolve()
        .unwrap()
        .tuning;
        assert_eq!(set.learner_lag_threshold, 50);
        assert_eq!(set.learner_catchup_timeout_ms, 7_000);
        assert_eq!(defaults.slow_storage_handoff_ms, 100);
        let off = NodeArgs {
            slow_storage_handoff_ms: Some(0),
            ..args.clone()
        };
        assert_eq!(off.resolve().unwrap().tuning.slow_storage_handoff_ms, 0);
        assert!(defaults.eager_replication);
        let not_eager = NodeArgs {
            eager_replication: Some(false),
            ..args.clone()
        };
        assert!(!not_eager.resolve().unwrap().tuning.eager_replication);
        let zero = NodeArgs {
            learner_catchup_timeout: Some(0),
            ..args
        };
        let err = zero.resolve().unwrap_err().to_string();
        assert!(err.contains("--learner-catchup-timeout"), "{err}");
    }

    #[test]
    fn secrets_can_come_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("cluster.secret");
        let token = dir.path().join("admin.token");
        std::fs::write(&secret, "from-a-file\n").unwrap();
        std::fs::write(&token, "token-from-a-file").unwrap();
        let args = NodeArgs {
            id: Some(1),
            listen: Some("127.0.0.1:7001".parse().unwrap()),
            data_dir: Some(dir.path().join("data")),
            cluster_secret_file: Some(secret.clone()),
            admin_token_file: Some(token),
            ..Default::default()
        };
        let opts = args.clone().resolve().unwrap();
        assert_eq!(opts.cluster_secret, "from-a-file");
        assert_eq!(opts.admin_token, "token-from-a-file");
        // An empty or missing file is an error naming it, not a silently generated secret.
        std::fs::write(&secret, "").unwrap();
        let err = args.clone().resolve().unwrap_err().to_string();
        assert!(err.contains("cluster secret file"), "{err}");
        let missing = NodeArgs {
            cluster_secret_file: Some(dir.path().join("nope")),
            ..args
        };
        assert!(missing.resolve().is_err());
    }

    #[test]
    fn test_client_clock_turns_the_leader_timers_off() {
        let dir = std::env::temp_dir().join(format!("raftlane-cfg-clock-{}", std::process::id()));
        let args = NodeArgs {
            id: Some(1),
            listen: Some("127.0.0.1:7001".parse().unwrap()),
            data_dir: Some(dir),
            admin_token: Some("t".into()),
            cluster_secret: Some("s".into()),
            ..Default::default()
        };
        let normal = args.clone().resolve().unwrap();
        assert!(!normal.test_client_clock);
        let tuning = normal.effective_tuning();
        assert!(tuning.reclaim_interval_ms > 0 && tuning.expire_interval_ms > 0);
        assert!(tuning.retention_interval_ms > 0);
        let test = NodeArgs {
            test_client_clock: true,
            ..args
        }
        .resolve()
        .unwrap();
        assert!(test.test_client_clock);
        let tuning = test.effective_tuning();
        assert_eq!(
            (
                tuning.reclaim_interval_ms,
                tuning.expire_interval_ms,
                tuning.retention_interval_ms
            ),
            (0, 0, 0)
        );
        // Everything else is as configured.
        assert_eq!(tuning.heartbeat_ms, test.tuning.heartbeat_ms);
    }

    #[test]
    fn tls_and_timeouts_resolve_from_flags_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let toml = dir.path().join("node.toml");
        std::fs::write(
            &toml,
            "tls_cert = \"/c/n1.pem\"\ntls_key = \"/c/n1.key\"\ntls_client_ca = \"/c/ca.pem\"\n\
             http_header_timeout = 3\nbody_timeout = 9\n",
        )
        .unwrap();
        let args = NodeArgs {
            id: Some(1),
            listen: Some("127.0.0.1:7001".parse().unwrap()),
            data_dir: Some(dir.path().join("data")),
            admin_token: Some("t".into()),
            cluster_secret: Some("s".into()),
            ..Default::default()
        };
        let plain = args.clone().resolve().unwrap();
        assert_eq!(plain.tls, None);
        assert_eq!(plain.conn_limits, ConnLimits::default());
        let from_file = NodeArgs {
            config: Some(toml),
            idle_timeout: Some(7),
            ..args.clone()
        }
        .resolve()
        .unwrap();
        let tls = from_file.tls.unwrap();
        assert_eq!(tls.cert, PathBuf::from("/c/n1.pem"));
        assert_eq!(tls.client_ca, Some(PathBuf::from("/c/ca.pem")));
        assert_eq!(tls.ca, None);
        assert_eq!(from_file.conn_limits.header_timeout, Duration::from_secs(3));
        assert_eq!(from_file.conn_limits.idle_timeout, Duration::from_secs(7));
        assert_eq!(from_file.conn_limits.body_timeout, Duration::from_secs(9));
        let half = NodeArgs {
            tls_cert: Some("/c/n1.pem".into()),
            ..args.clone()
        };
        assert!(half.resolve().is_err(), "a certificate without its key");
        let zero = NodeArgs {
            http_header_timeout: Some(0),
            ..args
        };
        assert!(zero.resolve().is_err());
    }
}
