//! Transport security (docs/SPEC.md §9.6) against real three-node clusters: with TLS on, writes
//! through a follower are forwarded and replicated over TLS (the Raft RPCs and the forwarded
//! writes share the node's one HTTPS listener); a client that does not trust the cluster's CA,
//! or speaks plain HTTP, gets nothing; with mutual TLS a client without a certificate, or with
//! one from another CA, is refused too.

use raftlane_client::tls::ClientTls;
use raftlane_client::Client;
use raftlane_node::certs::{generate, CertsArgs};
use raftlane_testkit::node::{ClusterOptions, NodeCluster, TlsMode};
use std::path::Path;
use std::time::Duration;

async fn start(tls: TlsMode) -> NodeCluster {
    NodeCluster::start_with(ClusterOptions {
        tls,
        ..ClusterOptions::default()
    })
    .await
    .expect("a TLS cluster")
}

/// Another CA and a client certificate it signed, in `dir`.
fn foreign_ca(dir: &Path) {
    generate(&CertsArgs {
        out: dir.to_path_buf(),
        nodes: vec!["n1".into()],
        extra_names: vec!["127.0.0.1".into()],
        client: Some("client".into()),
        days: 1,
    })
    .expect("certificates");
}

/// A client of `cluster` that gives up fast.
fn client_with(cluster: &NodeCluster, tls: Option<&ClientTls>) -> Client {
    let client = Client::new(cluster.addrs.clone(), cluster.admin_token.clone())
        .with_deadline(Duration::from_secs(2));
    match tls {
        Some(tls) => client.with_tls(tls),
        None => client,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_through_a_follower_replicates_over_tls() {
    let cluster = start(TlsMode::Server).await;
    let follower = cluster.follower_client().await.unwrap();
    let m = follower.enqueue("lab", "MSH|tls", None).await.unwrap();
    assert!(!m.duplicate);
    // Every node answers over TLS with the same digest at the same index: the entry reached
    // all three through the TLS transport.
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();
    // The raw HTTP helper (with the cluster's CA) sees the message on every node.
    for id in 1..=3 {
        let reply = cluster
            .http(id)
            .get(
                &format!("/v1/messages/{}", m.message_id.0),
                Some(&cluster.admin_token),
            )
            .await;
        assert_eq!(reply.status, 200, "node {id}: {}", reply.text);
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_does_not_trust_the_cluster_ca_is_refused() {
    let cluster = start(TlsMode::Server).await;
    let other = tempfile::tempdir().unwrap();
    foreign_ca(other.path());
    let wrong = ClientTls::from_files(&other.path().join("ca.pem"), None).unwrap();
    let err = client_with(&cluster, Some(&wrong))
        .cluster()
        .await
        .expect_err("a certificate from an unknown CA was accepted");
    let text = err.to_string();
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    // Plain HTTP to a TLS node gets no answer either.
    assert!(client_with(&cluster, None).cluster().await.is_err());
    // The right CA works.
    let right = cluster.client_tls().unwrap().expect("TLS is on");
    client_with(&cluster, Some(&right)).cluster().await.unwrap();
    // So does `raftlane health --ca-file` (and it refuses the wrong CA).
    let ready = format!("https://{}/readyz", cluster.addrs[0]);
    raftlane_node::health::check_with(&ready, Some(&right))
        .await
        .unwrap();
    assert!(raftlane_node::health::check_with(&ready, Some(&wrong))
        .await
        .is_err());
    assert!(raftlane_node::health::check(&ready).await.is_err());
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mutual_tls_refuses_clients_without_a_certificate_from_the_cluster_ca() {
    let cluster = start(TlsMode::Mutual).await;
    let dir = cluster.certs_dir().expect("TLS is on");
    let ca = dir.join("ca.pem");
    // The nodes present their own certificates to each other: a write through a follower
    // (forwarded, replicated) works.
    let follower = cluster.follower_client().await.unwrap();
    follower.enqueue("lab", "MSH|mtls", None).await.unwrap();
    cluster
        .wait_for_equal_digests(Duration::from_secs(20))
        .await
        .unwrap();

    // The right CA but no client certificate.
    let anonymous = ClientTls::from_files(&ca, None).unwrap();
    assert!(client_with(&cluster, Some(&anonymous))
        .cluster()
        .await
        .is_err());
    // A client certificate from another CA.
    let other = tempfile::tempdir().unwrap();
    foreign_ca(other.path());
    let foreign = ClientTls::from_files(
        &ca,
        Some((
            &other.path().join("client.pem"),
            &other.path().join("client.key"),
        )),
    )
    .unwrap();
    assert!(client_with(&cluster, Some(&foreign))
        .cluster()
        .await
        .is_err());
    // The cluster's own client certificate.
    let own = cluster.client_tls().unwrap().expect("TLS is on");
    client_with(&cluster, Some(&own)).cluster().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test]
async fn certificate_keys_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    foreign_ca(dir.path());
    for key in ["ca.key", "n1.key", "client.key"] {
        let mode = std::fs::metadata(dir.path().join(key))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{key}");
    }
    assert!(dir.path().join("n1.pem").exists());
}

/// A certificate's purpose is checked, not only its CA and its name (docs/SPEC.md §9.6): a
/// client certificate (client authentication only) cannot serve, even one naming the very
/// address it is served at, where a node certificate of the same CA and name can. Node 3 is
/// restarted on each in turn; a client that trusts their CA asks it for `/healthz`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_certificate_cannot_serve() {
    let mut cluster = start(TlsMode::Server).await;
    let dir = cluster.certs_dir().expect("TLS is on");
    let other = tempfile::tempdir().unwrap();
    generate(&CertsArgs {
        out: other.path().to_path_buf(),
        nodes: vec!["n1".into()],
        extra_names: vec!["127.0.0.1".into()],
        client: Some("127.0.0.1".into()),
        days: 1,
    })
    .expect("certificates");
    let trusts_other = ClientTls::from_files(&other.path().join("ca.pem"), None).unwrap();
    let node3 = cluster.addrs[2].clone();
    for (certificate, serves) in [("n1", true), ("127.0.0.1", false)] {
        cluster.stop(3).await;
        for ext in ["pem", "key"] {
            std::fs::copy(
                other.path().join(format!("{certificate}.{ext}")),
                dir.join(format!("n3.{ext}")),
            )
            .unwrap();
        }
        cluster.restart(3).await.unwrap();
        let client = Client::new(vec![node3.clone()], cluster.admin_token.clone())
            .with_deadline(Duration::from_secs(2))
            .with_tls(&trusts_other);
        let answer = client.request(hyper::Method::GET, "/healthz", None).await;
        assert_eq!(
            answer.is_ok(),
            serves,
            "node 3 serving the {certificate} certificate: {answer:?}"
        );
    }
    cluster.shutdown().await;
}
