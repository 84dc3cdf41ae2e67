//! Which node opened a TCP connection to the fault proxy.
//!
//! Every node dials its peers at the addresses stored in the Raft membership (one proxy address
//! per target node), and all of them connect from 127.0.0.1, so the proxy cannot tell the source
//! from the address alone. On Linux it can ask the kernel: `/proc/net/tcp` maps the connecting
//! socket (local port = the peer's ephemeral port, remote port = the proxy's port) to an inode,
//! and exactly one node process holds a descriptor `socket:[inode]` in `/proc/<pid>/fd`.

use std::collections::HashMap;
use std::path::Path;

/// The inode of the IPv4/IPv6 TCP socket whose local port is `local_port` and whose remote port
/// is `remote_port`, from the kernel's socket tables.
pub fn socket_inode(local_port: u16, remote_port: u16) -> Option<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            find_inode(&text, local_port, remote_port)
        })
}

/// Parse one `/proc/net/tcp`-format table.
pub fn find_inode(table: &str, local_port: u16, remote_port: u16) -> Option<u64> {
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(remote), Some(inode)) =
            (fields.get(1), fields.get(2), fields.get(9))
        else {
            continue;
        };
        if port_of(local) == Some(local_port) && port_of(remote) == Some(remote_port) {
            if let Ok(inode) = inode.parse::<u64>() {
                if inode != 0 {
                    return Some(inode);
                }
            }
        }
    }
    None
}

fn port_of(addr: &str) -> Option<u16> {
    let (_, port) = addr.rsplit_once(':')?;
    u16::from_str_radix(port, 16).ok()
}

/// The node (by id) whose process holds socket `inode`, among `pids` (pid → node id).
pub fn owner_of(inode: u64, pids: &HashMap<u32, u64>) -> Option<u64> {
    let wanted = format!("socket:[{inode}]");
    for (pid, node) in pids {
        let dir = Path::new("/proc").join(pid.to_string()).join("fd");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Ok(target) = std::fs::read_link(entry.path()) {
                if target.as_os_str() == wanted.as_str() {
                    return Some(*node);
                }
            }
        }
    }
    None
}

/// Both steps: the node that connected from `peer_port` to the proxy listening on `proxy_port`.
pub fn identify(peer_port: u16, proxy_port: u16, pids: &HashMap<u32, u64>) -> Option<u64> {
    let inode = socket_inode(peer_port, proxy_port)?;
    owner_of(inode, pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:C350 0100007F:1F91 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F91 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
";

    #[test]
    fn parses_the_connecting_side() {
        // 0xC350 = 50000 (the peer's ephemeral port), 0x1F91 = 8081 (the proxy).
        assert_eq!(find_inode(TABLE, 50000, 8081), Some(2222));
        assert_eq!(find_inode(TABLE, 8081, 50000), Some(3333));
        assert_eq!(find_inode(TABLE, 50001, 8081), None);
    }

    #[test]
    fn finds_our_own_socket() {
        // A real connection inside this process: the connecting socket belongs to our pid.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_port = listener.local_addr().unwrap().port();
        let stream = std::net::TcpStream::connect(("127.0.0.1", proxy_port)).unwrap();
        let (_accepted, peer) = listener.accept().unwrap();
        let pids: HashMap<u32, u64> = [(std::process::id(), 7)].into();
        if std::path::Path::new("/proc/net/tcp").exists() {
            assert_eq!(identify(peer.port(), proxy_port, &pids), Some(7));
        }
        drop(stream);
    }
}
