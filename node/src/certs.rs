//! `raftlane certs`: a CA and one certificate per node for a cluster's TLS (docs/SPEC.md §9.6,
//! docs/DOCKER.md). Written with rcgen (ring), so neither the host nor the (scratch) image needs
//! openssl. Keys are written 0600 (through [`crate::secret_file::write`]); certificates 0644,
//! whatever the process umask (they are public, and tools on the host read the CA's).
//!
//! What each certificate may do, so that one stolen key buys as little as possible:
//! - a **node** certificate names its node only (`n1`, ...) and is valid for server and client
//!   authentication: a node serves with it and presents it when it dials its peers (mutual
//!   TLS). Other names (`localhost`, an IP address, a public host name) are added only when
//!   asked for, per node (`--extra-names n1=db1.example`) or, knowingly, for every node (a bare
//!   name): a name every node certificate carries lets any node's key answer for it, so a
//!   client dialling that name cannot tell the nodes apart;
//! - a **client** certificate (`--client NAME`) is valid for client authentication only, so its
//!   key cannot pose as a node to anyone dialling one.
//!
//! With `--per-node-dirs` each node's files go to a folder of their own, `OUT/NODE/` (`ca.pem`,
//! `NODE.pem`, `NODE.key`): what one node mounts, and nothing else; the CA key stays in `OUT`
//! (docker-compose.yml mounts `OUT/n1` into `n1`, and so on).

use anyhow::{bail, Context};
use clap::Args;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `raftlane certs` flags (also built directly by tests, which is why the layout options are
/// in [`CertsCommand`]).
#[derive(Args, Debug, Clone)]
pub struct CertsArgs {
    /// Folder to write ca.pem, ca.key and, per node NAME, NAME.pem and NAME.key.
    #[arg(long, default_value = "certs")]
    pub out: PathBuf,
    /// The node names (each also a DNS name in its certificate).
    #[arg(long, value_delimiter = ',', default_value = "n1,n2,n3")]
    pub nodes: Vec<String>,
    /// More names (DNS names or IP addresses) for node certificates: NODE=NAME gives NAME to
    /// that node only (n1=localhost,n1=127.0.0.1); a bare NAME goes into every node's
    /// certificate, so that any node's key can answer for it. Default: none.
    #[arg(long, value_delimiter = ',')]
    pub extra_names: Vec<String>,
    /// Also write a client certificate CLIENT.pem/CLIENT.key (for tools, with mutual TLS),
    /// valid for client authentication only.
    #[arg(long)]
    pub client: Option<String>,
    /// Validity in days.
    #[arg(long, default_value_t = 825)]
    pub days: u32,
}

/// `raftlane certs` as the command line gives it: the certificates and where their files go.
#[derive(Args, Debug, Clone)]
pub struct CertsCommand {
    #[command(flatten)]
    pub args: CertsArgs,
    /// Write each node's files to OUT/NODE/ (ca.pem, NODE.pem, NODE.key): what that node
    /// mounts, without the CA key or the other nodes' keys.
    #[arg(long)]
    pub per_node_dirs: bool,
}

/// Where [`generate_into`] writes a node's certificate and key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Everything in one folder: `OUT/NODE.pem`, `OUT/NODE.key`.
    #[default]
    Flat,
    /// `OUT/NODE/{ca.pem, NODE.pem, NODE.key}` per node; `OUT` keeps the CA and client files.
    PerNodeDirs,
}

impl CertsCommand {
    /// Write the certificates as the flags say.
    pub fn run(&self) -> anyhow::Result<()> {
        let layout = if self.per_node_dirs {
            Layout::PerNodeDirs
        } else {
            Layout::Flat
        };
        generate_into(&self.args, layout)
    }
}

/// Valid from an hour ago (clocks of the hosts that use it may lag) for `days` days.
fn validity(params: &mut CertificateParams, days: u32) {
    let start = time_now();
    params.not_before = start;
    params.not_after = start + std::time::Duration::from_secs(u64::from(days) * 86_400);
}

fn time_now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() - std::time::Duration::from_secs(3_600)
}

/// A certificate file: public, 0644 whatever the umask (the node's umask is 0o077, and the
/// host's tools must read the CA's).
fn write_cert(path: &Path, pem: &str) -> anyhow::Result<()> {
    std::fs::write(path, pem).with_context(|| format!("cannot write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
            .with_context(|| format!("cannot set the mode of {}", path.display()))?;
    }
    Ok(())
}

fn write_pair(dir: &Path, name: &str, cert_pem: &str, key: &KeyPair) -> anyhow::Result<()> {
    write_cert(&dir.join(format!("{name}.pem")), cert_pem)?;
    crate::secret_file::write(&dir.join(format!("{name}.key")), &key.serialize_pem())?;
    Ok(())
}

/// A node's folder: created 0700 (it holds a private key). One that exists keeps its mode:
/// whoever made it chose it (scripts/compose-certs.sh makes the folders on the host, writable
/// for the container's user during the run), and its owner may not be this process's user.
fn node_dir(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(path)
        .with_context(|| format!("cannot create {}", path.display()))
}

/// The names each node certificate carries: the node's own, then the extra names given for it
/// (`NODE=NAME`) and those given for every node (a bare `NAME`). A `NODE=` naming no node is an
/// error (a typo would silently leave the name out).
pub fn names_per_node(
    nodes: &[String],
    extra_names: &[String],
) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for node in nodes {
        let node = node.trim();
        if node.is_empty() {
            bail!("--nodes has an empty name");
        }
        if node.contains(['/', '\\']) || node == "." || node == ".." || node == "ca" {
            bail!("--nodes: {node:?} cannot name a node (it names the files written)");
        }
        if names
            .insert(node.to_string(), vec![node.to_string()])
            .is_some()
        {
            bail!("--nodes names {node} twice");
        }
    }
    for entry in extra_names
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
    {
        match entry.split_once('=') {
            Some((node, name)) => {
                let (node, name) = (node.trim(), name.trim());
                let Some(list) = names.get_mut(node) else {
                    bail!("--extra-names {entry}: {node} is not one of --nodes");
                };
                if name.is_empty() {
                    bail!("--extra-names {entry}: the name is empty");
                }
                if !list.iter().any(|n| n == name) {
                    list.push(name.to_string());
                }
            }
            None => {
                eprintln!(
                    "note: {entry} goes into every node certificate: any node's key can answer \
                     for it (give it to one node with NODE={entry})"
                );
                for list in names.values_mut() {
                    if !list.iter().any(|n| n == entry) {
                        list.push(entry.to_string());
                    }
                }
            }
        }
    }
    Ok(names)
}

/// Generate the CA and the certificates into `args.out`, all in that one folder (created if
/// missing; existing files are replaced).
pub fn generate(args: &CertsArgs) -> anyhow::Result<()> {
    generate_into(args, Layout::Flat)
}

/// A certificate for `names`, signed by the CA, for the given purposes.
fn leaf(
    names: Vec<String>,
    common_name: &str,
    usages: Vec<ExtendedKeyUsagePurpose>,
    days: u32,
    ca: (&Certificate, &KeyPair),
) -> anyhow::Result<(Certificate, KeyPair)> {
    let mut params = CertificateParams::new(names)
        .with_context(|| format!("invalid name in the certificate of {common_name}"))?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = usages;
    validity(&mut params, days);
    let key =
        KeyPair::generate().with_context(|| format!("cannot generate {common_name}'s key"))?;
    let cert = params
        .signed_by(&key, ca.0, ca.1)
        .with_context(|| format!("cannot sign {common_name}'s certificate"))?;
    Ok((cert, key))
}

/// Generate the CA and the certificates into `args.out` in `layout`.
pub fn generate_into(args: &CertsArgs, layout: Layout) -> anyhow::Result<()> {
    let names = names_per_node(&args.nodes, &args.extra_names)?;
    if let Some(client) = &args.client {
        if names.contains_key(client.trim()) || client.trim() == "ca" {
            bail!("--client {client}: a node or the CA already has that name");
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let ca_key = KeyPair::generate().context("cannot generate the CA key")?;
    let mut ca_params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "raftlane cluster CA");
    ca_params.distinguished_name = dn;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut ca_params, args.days);
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .context("cannot sign the CA certificate")?;
    write_pair(&args.out, "ca", &ca_cert.pem(), &ca_key)?;

    for (node, node_names) in names {
        let (cert, key) = leaf(
            node_names,
            &node,
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            args.days,
            (&ca_cert, &ca_key),
        )?;
        match layout {
            Layout::Flat => write_pair(&args.out, &node, &cert.pem(), &key)?,
            Layout::PerNodeDirs => {
                let dir = args.out.join(&node);
                node_dir(&dir)?;
                write_cert(&dir.join("ca.pem"), &ca_cert.pem())?;
                write_pair(&dir, &node, &cert.pem(), &key)?;
            }
        }
    }
    if let Some(client) = &args.client {
        let client = client.trim();
        let (cert, key) = leaf(
            vec![client.to_string()],
            client,
            vec![ExtendedKeyUsagePurpose::ClientAuth],
            args.days,
            (&ca_cert, &ca_key),
        )?;
        write_pair(&args.out, client, &cert.pem(), &key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(out: &Path, extra_names: &[&str], client: Option<&str>) -> CertsArgs {
        CertsArgs {
            out: out.to_path_buf(),
            nodes: vec!["n1".into(), "n2".into()],
            extra_names: extra_names.iter().map(|s| s.to_string()).collect(),
            client: client.map(str::to_string),
            days: 1,
        }
    }

    /// The DER of the (first) certificate in a PEM file.
    fn parsed(path: &Path) -> Vec<u8> {
        let certs = raftlane_client::tls::load_certs(path).expect("a PEM certificate");
        certs.first().expect("one certificate").to_vec()
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    /// DER of the extended-key-usage OIDs (1.3.6.1.5.5.7.3.1 and .2).
    const SERVER_AUTH: &[u8] = &[0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01];
    const CLIENT_AUTH: &[u8] = &[0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];

    #[test]
    fn node_certificates_name_their_node_only_by_default() {
        let names = names_per_node(&["n1".into(), "n2".into()], &[]).expect("names");
        assert_eq!(names["n1"], vec!["n1"]);
        assert_eq!(names["n2"], vec!["n2"]);
        let names = names_per_node(
            &["n1".into(), "n2".into()],
            &[
                "n1=localhost".into(),
                "n1=127.0.0.1".into(),
                "shared".into(),
            ],
        )
        .expect("names");
        assert_eq!(names["n1"], vec!["n1", "localhost", "127.0.0.1", "shared"]);
        assert_eq!(names["n2"], vec!["n2", "shared"]);
        let err = names_per_node(&["n1".into()], &["n9=host".into()]).expect_err("unknown");
        assert!(
            err.to_string().contains("n9 is not one of --nodes"),
            "{err}"
        );
        assert!(names_per_node(&["n1".into(), "n1".into()], &[]).is_err());
        assert!(names_per_node(&["../x".into()], &[]).is_err());
        assert!(names_per_node(&["ca".into()], &[]).is_err());
    }

    #[test]
    fn node_and_client_certificates_carry_their_purposes_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        generate(&args(dir.path(), &["n1=127.0.0.1"], Some("tool"))).expect("generate");
        let n1 = parsed(&dir.path().join("n1.pem"));
        let n2 = parsed(&dir.path().join("n2.pem"));
        let tool = parsed(&dir.path().join("tool.pem"));
        for node in [&n1, &n2] {
            assert!(contains(node, SERVER_AUTH) && contains(node, CLIENT_AUTH));
        }
        assert!(contains(&tool, CLIENT_AUTH));
        assert!(
            !contains(&tool, SERVER_AUTH),
            "a client certificate cannot serve"
        );
        // 127.0.0.1 as an IP address SAN (tag 0x87, 4 bytes) in n1's only.
        let loopback = [0x87, 0x04, 127, 0, 0, 1];
        assert!(contains(&n1, &loopback));
        assert!(!contains(&n2, &loopback));
        assert!(!contains(&n2, b"localhost"));
    }

    #[cfg(unix)]
    #[test]
    fn per_node_dirs_hold_one_node_and_the_ca_certificate_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        generate_into(&args(dir.path(), &[], None), Layout::PerNodeDirs).expect("generate");
        let mut top: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(top, ["ca.key", "ca.pem", "n1", "n2"]);
        let mut n1: Vec<String> = std::fs::read_dir(dir.path().join("n1"))
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        n1.sort();
        assert_eq!(n1, ["ca.pem", "n1.key", "n1.pem"]);
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("n1")), 0o700);
        assert_eq!(mode(&dir.path().join("n1").join("n1.key")), 0o600);
        assert_eq!(mode(&dir.path().join("n1").join("n1.pem")), 0o644);
        assert_eq!(mode(&dir.path().join("ca.key")), 0o600);
        assert_eq!(mode(&dir.path().join("ca.pem")), 0o644);
        assert_eq!(
            std::fs::read(dir.path().join("ca.pem")).expect("ca"),
            std::fs::read(dir.path().join("n2").join("ca.pem")).expect("copy")
        );
    }
}
