//! The docker backend: faults on the compose cluster (services `n1`..`n3`, API on
//! 127.0.0.1:7001-7003; `docker compose` or `docker-compose`) with `docker kill`/`start`,
//! `docker pause`/`unpause` and `docker network disconnect`/`connect`. Per-link cuts, latency and clock skew need tools the
//! containers may not have, so they are reported as unsupported and skipped.

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::path::PathBuf;
use tokio::process::Command;

pub struct DockerCluster {
    /// `docker compose` (v2 plugin) or `docker-compose` (v1), whichever is installed.
    compose_cmd: Vec<String>,
    pub compose_file: Option<PathBuf>,
    pub project: Option<String>,
    pub api_addrs: Vec<String>,
    /// node id → container id.
    containers: BTreeMap<u64, String>,
    /// Networks each container was attached to (for reconnecting).
    networks: BTreeMap<u64, Vec<String>>,
    disconnected: BTreeMap<u64, Vec<String>>,
}

async fn run(cmd: &mut Command) -> anyhow::Result<String> {
    let out = cmd.output().await.context("cannot run docker")?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.as_std(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl DockerCluster {
    /// Find the containers of services n1..n`n`.
    pub async fn connect(
        compose_file: Option<PathBuf>,
        project: Option<String>,
        n: u64,
        base_port: u16,
    ) -> anyhow::Result<Self> {
        let v2 = Command::new("docker")
            .args(["compose", "version"])
            .output()
            .await
            .map(|o| o.status.success())
            .unwrap_or(false);
        let compose_cmd = if v2 {
            vec!["docker".to_string(), "compose".to_string()]
        } else {
            vec!["docker-compose".to_string()]
        };
        let mut me = Self {
            compose_cmd,
            compose_file,
            project,
            api_addrs: (0..n)
                .map(|i| format!("127.0.0.1:{}", base_port + i as u16))
                .collect(),
            containers: BTreeMap::new(),
            networks: BTreeMap::new(),
            disconnected: BTreeMap::new(),
        };
        for id in 1..=n {
            let cid = run(me.compose().args(["ps", "-a", "-q", &format!("n{id}")])).await?;
            let cid = cid.lines().next().unwrap_or("").trim().to_string();
            if cid.is_empty() {
                bail!("service n{id} has no container (is the compose cluster up?)");
            }
            let nets = run(Command::new("docker").args([
                "inspect",
                "-f",
                "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}",
                &cid,
            ]))
            .await?;
            me.networks
                .insert(id, nets.split_whitespace().map(str::to_string).collect());
            me.containers.insert(id, cid);
        }
        Ok(me)
    }

    fn compose(&self) -> Command {
        let mut c = Command::new(
            self.compose_cmd
                .first()
                .map(String::as_str)
                .unwrap_or("docker-compose"),
        );
        c.args(self.compose_cmd.iter().skip(1));
        if let Some(f) = &self.compose_file {
            c.arg("-f").arg(f);
        }
        if let Some(p) = &self.project {
            c.arg("-p").arg(p);
        }
        c
    }

    fn cid(&self, id: u64) -> anyhow::Result<&str> {
        self.containers
            .get(&id)
            .map(String::as_str)
            .with_context(|| format!("no container for node {id}"))
    }

    pub async fn kill(&mut self, id: u64) -> anyhow::Result<()> {
        run(Command::new("docker").args(["kill", "--signal", "KILL", self.cid(id)?]))
            .await
            .map(|_| ())
    }

    pub async fn start(&mut self, id: u64) -> anyhow::Result<()> {
        run(Command::new("docker").args(["start", self.cid(id)?]))
            .await
            .map(|_| ())
    }

    pub async fn pause(&mut self, id: u64) -> anyhow::Result<()> {
        run(Command::new("docker").args(["pause", self.cid(id)?]))
            .await
            .map(|_| ())
    }

    pub async fn resume(&mut self, id: u64) -> anyhow::Result<()> {
        run(Command::new("docker").args(["unpause", self.cid(id)?]))
            .await
            .map(|_| ())
    }

    /// Disconnect a node from every network it is on (it keeps its published API port
    /// unreachable only if the network carries it; peers lose it either way).
    pub async fn isolate(&mut self, id: u64) -> anyhow::Result<()> {
        let cid = self.cid(id)?.to_string();
        let nets = self.networks.get(&id).cloned().unwrap_or_default();
        for net in &nets {
            run(Command::new("docker").args(["network", "disconnect", "--force", net, &cid]))
                .await?;
        }
        self.disconnected.insert(id, nets);
        Ok(())
    }

    pub async fn heal_network(&mut self) -> anyhow::Result<()> {
        let pending: Vec<(u64, Vec<String>)> =
            std::mem::take(&mut self.disconnected).into_iter().collect();
        for (id, nets) in pending {
            let cid = self.cid(id)?.to_string();
            for net in nets {
                // Use the service name as alias so peers resolve it again.
                run(Command::new("docker").args([
                    "network",
                    "connect",
                    "--alias",
                    &format!("n{id}"),
                    &net,
                    &cid,
                ]))
                .await?;
            }
        }
        Ok(())
    }

    /// Is the container running (not exited)?
    pub async fn running(&self, id: u64) -> bool {
        match self.cid(id) {
            Ok(cid) => {
                run(Command::new("docker").args(["inspect", "-f", "{{.State.Running}}", cid]))
                    .await
                    .map(|s| s == "true")
                    .unwrap_or(false)
            }
            Err(_) => false,
        }
    }

    pub async fn paused(&self, id: u64) -> bool {
        match self.cid(id) {
            Ok(cid) => {
                run(Command::new("docker").args(["inspect", "-f", "{{.State.Paused}}", cid]))
                    .await
                    .map(|s| s == "true")
                    .unwrap_or(false)
            }
            Err(_) => false,
        }
    }
}
