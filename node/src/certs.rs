//! `raftlane certs`: a CA and one certificate per node for a cluster's TLS (docs/SPEC.md §9.6,
//! docs/DOCKER.md). Written with rcgen (ring), so neither the host nor the (scratch) image needs
//! openssl. Keys are written 0600 (through [`crate::secret_file::write`]); certificates 0644.
//!
//! Each node's certificate names the node (`n1`, `n2`, ...) plus `localhost` and `127.0.0.1`,
//! so the same files serve a compose cluster (containers dial each other by service name) and
//! tools on the host (which dial the published ports on loopback). It is valid for client
//! authentication too: with mutual TLS a node presents it when it dials its peers.

use anyhow::Context;
use clap::Args;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// `raftlane certs` flags.
#[derive(Args, Debug, Clone)]
pub struct CertsArgs {
    /// Folder to write ca.pem, ca.key and, per node NAME, NAME.pem and NAME.key.
    #[arg(long, default_value = "certs")]
    pub out: PathBuf,
    /// The node names (each also a DNS name in its certificate).
    #[arg(long, value_delimiter = ',', default_value = "n1,n2,n3")]
    pub nodes: Vec<String>,
    /// Names every certificate carries besides its node's (DNS names or IP addresses).
    #[arg(long, value_delimiter = ',', default_value = "localhost,127.0.0.1")]
    pub extra_names: Vec<String>,
    /// Also write a client certificate CLIENT.pem/CLIENT.key (for tools, with mutual TLS).
    #[arg(long)]
    pub client: Option<String>,
    /// Validity in days.
    #[arg(long, default_value_t = 825)]
    pub days: u32,
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

fn write_pair(dir: &Path, name: &str, cert_pem: &str, key: &KeyPair) -> anyhow::Result<()> {
    let cert_path = dir.join(format!("{name}.pem"));
    std::fs::write(&cert_path, cert_pem)
        .with_context(|| format!("cannot write {}", cert_path.display()))?;
    crate::secret_file::write(&dir.join(format!("{name}.key")), &key.serialize_pem())?;
    Ok(())
}

/// Generate the CA and the certificates into `args.out` (created if missing; existing files
/// are replaced).
pub fn generate(args: &CertsArgs) -> anyhow::Result<()> {
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

    let leaves = args
        .nodes
        .iter()
        .map(|n| (n.as_str(), true))
        .chain(args.client.iter().map(|c| (c.as_str(), false)));
    for (name, is_node) in leaves {
        let mut names = vec![name.to_string()];
        if is_node {
            names.extend(args.extra_names.iter().cloned());
        }
        let mut params = CertificateParams::new(names)
            .with_context(|| format!("invalid name in the certificate of {name}"))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        validity(&mut params, args.days);
        let key = KeyPair::generate().with_context(|| format!("cannot generate {name}'s key"))?;
        let cert = params
            .signed_by(&key, &ca_cert, &ca_key)
            .with_context(|| format!("cannot sign {name}'s certificate"))?;
        write_pair(&args.out, name, &cert.pem(), &key)?;
    }
    Ok(())
}
