//! The secrets that docker-compose.yml falls back to when none are given. Anyone who has read
//! the compose file knows them, so a node running with one says so loudly at start (it still
//! runs: they are meant for a local try-out).

/// docker-compose.yml's default `RAFTLANE_CLUSTER_SECRET`.
pub const COMPOSE_CLUSTER_SECRET: &str = "dev-cluster-secret";
/// docker-compose.yml's default `RAFTLANE_ADMIN_TOKEN`.
pub const COMPOSE_ADMIN_TOKEN: &str = "dev-admin-token";

/// The warning for a node configured with `cluster_secret` and `admin_token`, when either is
/// a published default.
pub fn warning(cluster_secret: &str, admin_token: &str) -> Option<String> {
    let mut known = Vec::new();
    if cluster_secret == COMPOSE_CLUSTER_SECRET {
        known.push("the cluster secret (RAFTLANE_CLUSTER_SECRET)");
    }
    if admin_token == COMPOSE_ADMIN_TOKEN {
        known.push("the admin token (RAFTLANE_ADMIN_TOKEN)");
    }
    if known.is_empty() {
        return None;
    }
    Some(format!(
        "INSECURE: {} is docker-compose.yml's published default; anyone who has read that file \
         can {}. Set your own (docs/DOCKER.md) for anything but a local try-out.",
        known.join(" and "),
        if known.len() == 2 {
            "sign node-to-node calls and administer this cluster"
        } else if cluster_secret == COMPOSE_CLUSTER_SECRET {
            "sign node-to-node calls (write anything)"
        } else {
            "administer this cluster"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compose_defaults_are_named_and_others_pass() {
        let both = warning(COMPOSE_CLUSTER_SECRET, COMPOSE_ADMIN_TOKEN).unwrap();
        assert!(
            both.contains("cluster secret") && both.contains("admin token"),
            "{both}"
        );
        let secret = warning(COMPOSE_CLUSTER_SECRET, "mine").unwrap();
        assert!(secret.contains("RAFTLANE_CLUSTER_SECRET") && !secret.contains("admin token"));
        let token = warning("mine-too", COMPOSE_ADMIN_TOKEN).unwrap();
        assert!(token.contains("RAFTLANE_ADMIN_TOKEN"));
        assert_eq!(warning("mine", "also-mine"), None);
    }

    #[test]
    fn the_defaults_are_the_compose_files() {
        // The warning is only as good as its copy of the defaults: read them from the file.
        let compose = include_str!("../../docker-compose.yml");
        assert!(
            compose.contains(&format!(
                "${{RAFTLANE_CLUSTER_SECRET:-{COMPOSE_CLUSTER_SECRET}}}"
            )),
            "docker-compose.yml's default cluster secret changed"
        );
        assert!(
            compose.contains(&format!("${{RAFTLANE_ADMIN_TOKEN:-{COMPOSE_ADMIN_TOKEN}}}")),
            "docker-compose.yml's default admin token changed"
        );
    }
}
