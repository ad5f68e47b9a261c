//! The ring as nodetool prints it: `status`, `ring`, `describecluster`, `gossipinfo` and
//! `getendpoints`, laid out as Cassandra 5.0's nodetool does (recorded in
//! `crates/cluster/tests/golden/cassandra_nodetool_*.txt`). Rendered here, where the ring is
//! known, and printed by `helenus nodetool` as it comes.

use crate::node::NodeState;
use crate::topology::ClusterView;
use helenus_cluster::locator::NodeId;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::IpAddr;

/// One node as the reports list it.
struct Row {
    id: NodeId,
    address: IpAddr,
    datacenter: String,
    rack: String,
    up: bool,
    state: char,
    load: Option<u64>,
    tokens: Vec<i64>,
}

fn rows(node: &NodeState, cluster: Option<&dyn ClusterView>) -> Vec<Row> {
    let cfg = &node.config;
    let local_load = node
        .schema()
        .user_keyspaces()
        .flat_map(|k| k.tables.values())
        .map(|t| {
            node.engine
                .table_stats(*t.id.as_bytes())
                .live_disk_space_bytes
        })
        .sum();
    let mut out = vec![Row {
        id: NodeId(node.identity.host_id),
        address: cfg.listen_address,
        datacenter: cfg.data_center.clone(),
        rack: cfg.rack.clone(),
        up: true,
        // In a ring but not yet an owner: still streaming its ranges (bootstrap).
        state: match cluster {
            Some(c) if c.ring().tokens_of(c.local()).is_empty() => 'J',
            _ => 'N',
        },
        load: Some(local_load),
        tokens: match cluster {
            Some(c) => c.ring().tokens_of(c.local()),
            None => node.identity.tokens.clone(),
        },
    }];
    if let Some(c) = cluster {
        for p in c
            .peers()
            .into_iter()
            // Nodes with tokens, as Cassandra lists its token metadata: one still choosing
            // them, or one that died before it had any (a refused start), owns nothing and may
            // share its address with a real member.
            .filter(|p| {
                !helenus_cluster::gossip::status::is_gone(&p.status) && !p.tokens.is_empty()
            })
        {
            let Some(address) = p.address else { continue };
            out.push(Row {
                id: p.host_id,
                address: address.ip(),
                datacenter: p.location.datacenter.clone(),
                rack: p.location.rack.clone(),
                up: p.alive,
                state: match p.status.as_str() {
                    "BOOT" | "BOOT_REPLACE" => 'J',
                    "LEAVING" | "removing" => 'L',
                    _ => 'N',
                },
                load: p.load,
                tokens: p.tokens,
            });
        }
    }
    out.sort_by_key(|r| r.address);
    out
}

/// Cassandra's `FileUtils.stringifyFileSize`.
pub fn file_size(bytes: u64) -> String {
    let b = bytes as f64;
    const KIB: f64 = 1024.0;
    if b >= KIB * KIB * KIB * KIB {
        format!("{:.2} TiB", b / (KIB * KIB * KIB * KIB))
    } else if b >= KIB * KIB * KIB {
        format!("{:.2} GiB", b / (KIB * KIB * KIB))
    } else if b >= KIB * KIB {
        format!("{:.2} MiB", b / (KIB * KIB))
    } else if b >= KIB {
        format!("{:.2} KiB", b / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// Columns padded to their widest cell, two spaces apart (nodetool's TableBuilder).
fn table(out: &mut String, lines: &[Vec<String>]) {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            lines
                .iter()
                .filter_map(|l| l.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  "));
    }
}

/// `nodetool status [KEYSPACE]`.
pub fn status(node: &NodeState, keyspace: Option<&str>) -> Result<String, String> {
    let cluster = node.cluster().map(|c| c.as_ref());
    let ks = match keyspace {
        Some(k) => Some(
            node.keyspace(k)
                .ok_or_else(|| format!("The keyspace {k}, does not exist"))?,
        ),
        None => None,
    };
    let ownership: BTreeMap<NodeId, f64> = match (cluster, &ks) {
        (Some(c), Some(k)) => c.ownership(Some(k)),
        _ => BTreeMap::new(),
    };
    let all = rows(node, cluster);
    let mut by_dc: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &all {
        by_dc.entry(r.datacenter.as_str()).or_default().push(r);
    }
    let mut out = String::new();
    for (dc, members) in by_dc {
        let title = format!("Datacenter: {dc}");
        let _ = writeln!(out, "{title}\n{}", "=".repeat(title.len()));
        let _ = writeln!(
            out,
            "Status=Up/Down\n|/ State=Normal/Leaving/Joining/Moving"
        );
        let owns_header = if ks.is_some() {
            "Owns (effective)"
        } else {
            "Owns"
        };
        let mut lines = vec![vec![
            "--".to_string(),
            "Address".into(),
            "Load".into(),
            "Tokens".into(),
            owns_header.into(),
            "Host ID".into(),
            "Rack".into(),
        ]];
        for r in members {
            let owns = match (&ks, ownership.get(&r.id)) {
                (Some(_), Some(o)) => format!("{:.1}%", o * 100.0),
                (Some(_), None) => "0.0%".into(),
                (None, _) => "?".into(),
            };
            lines.push(vec![
                format!("{}{}", if r.up { 'U' } else { 'D' }, r.state),
                r.address.to_string(),
                r.load.map_or_else(|| "?".to_string(), file_size),
                r.tokens.len().to_string(),
                owns,
                r.id.0.to_string(),
                r.rack.clone(),
            ]);
        }
        table(&mut out, &lines);
        out.push('\n');
    }
    if ks.is_none() {
        out.push_str("Note: Non-system keyspaces don't have the same replication settings, effective ownership information is meaningless\n");
    }
    Ok(out)
}

/// `nodetool describecluster`.
pub fn describecluster(node: &NodeState) -> String {
    let cluster = node.cluster().map(|c| c.as_ref());
    let cfg = &node.config;
    let mut out = String::new();
    let _ = writeln!(out, "Cluster Information:\n\tName: {}", cfg.cluster_name);
    let _ = writeln!(
        out,
        "\tSnitch: org.apache.cassandra.locator.SimpleSnitch\n\tDynamicEndPointSnitch: enabled\n\tPartitioner: org.apache.cassandra.dht.Murmur3Partitioner\n\tSchema versions:"
    );
    let versions = match cluster {
        Some(c) => c.schema_versions(),
        None => BTreeMap::from([(node.schema().version.to_string(), vec![cfg.listen_address])]),
    };
    for (version, addresses) in &versions {
        let list: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
        let _ = writeln!(out, "\t\t{version}: [{}]", list.join(", "));
    }
    let all = rows(node, cluster);
    let down = all.iter().filter(|r| !r.up).count();
    let joining = all.iter().filter(|r| r.state == 'J').count();
    let leaving = all.iter().filter(|r| r.state == 'L').count();
    let _ = writeln!(
        out,
        "\nStats for all nodes:\n\tLive: {}\n\tJoining: {joining}\n\tMoving: 0\n\tLeaving: {leaving}\n\tUnreachable: {down}",
        all.len() - down
    );
    let mut dcs: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &all {
        let e = dcs.entry(r.datacenter.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(!r.up);
    }
    let _ = writeln!(out, "\nData Centers: ");
    for (dc, (n, d)) in dcs {
        let _ = writeln!(out, "\t{dc} #Nodes: {n} #Down: {d}");
    }
    let endpoints: Vec<String> = all
        .iter()
        .map(|r| format!("{}:{}", r.address, cfg.storage_port))
        .collect();
    let _ = writeln!(
        out,
        "\nDatabase versions:\n\t{}: [{}]",
        crate::RELEASE_VERSION,
        endpoints.join(", ")
    );
    let _ = writeln!(out, "\nKeyspaces:");
    for ks in node.schema().keyspaces.values() {
        let mut options: Vec<String> = ks
            .replication
            .iter()
            .filter(|(k, _)| k.as_str() != "class")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        options.sort();
        let class = helenus_schema::short_replication_class(
            ks.replication.get("class").map_or("", String::as_str),
        );
        let _ = writeln!(
            out,
            "\t{} -> Replication class: {class} {{{}}}",
            ks.name,
            options.join(", ")
        );
    }
    out
}

/// `nodetool getendpoints KEYSPACE TABLE KEY`: the replicas of the key, one address a line.
pub fn getendpoints(
    node: &NodeState,
    keyspace: &str,
    table: &str,
    key: &str,
) -> Result<String, String> {
    let ks = node
        .keyspace(keyspace)
        .ok_or_else(|| format!("The keyspace {keyspace}, does not exist"))?;
    let t = ks
        .tables
        .get(table)
        .ok_or_else(|| format!("Table {table} does not exist in keyspace {keyspace}"))?;
    let token = crate::keys::token_of_key_text(t, key)?;
    let cluster = node.cluster();
    let replicas: Vec<NodeId> = match cluster {
        Some(c) => c.replicas(&ks, token),
        None => vec![NodeId(node.identity.host_id)],
    };
    let all = rows(node, cluster.map(|c| c.as_ref()));
    let mut out = String::new();
    for id in replicas {
        if let Some(r) = all.iter().find(|r| r.id == id) {
            let _ = writeln!(out, "{}", r.address);
        }
    }
    Ok(out)
}

/// `nodetool ring [KEYSPACE]`: every token with its owner.
pub fn ring(node: &NodeState) -> String {
    let cluster = node.cluster().map(|c| c.as_ref());
    let all = rows(node, cluster);
    let mut tokens: Vec<(i64, &Row)> = all
        .iter()
        .flat_map(|r| r.tokens.iter().map(move |t| (*t, r)))
        .collect();
    tokens.sort_by_key(|(t, _)| *t);
    let mut out = String::new();
    let mut lines = vec![vec![
        "Address".to_string(),
        "Rack".into(),
        "Status".into(),
        "State".into(),
        "Load".into(),
        "Owns".into(),
        "Token".into(),
    ]];
    if let Some((last, _)) = tokens.last() {
        lines.push(vec![
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            last.to_string(),
        ]);
    }
    for (token, r) in &tokens {
        lines.push(vec![
            r.address.to_string(),
            r.rack.clone(),
            if r.up { "Up" } else { "Down" }.into(),
            match r.state {
                'J' => "Joining",
                'L' => "Leaving",
                _ => "Normal",
            }
            .into(),
            r.load.map_or_else(|| "?".to_string(), file_size),
            "?".into(),
            token.to_string(),
        ]);
    }
    let dc = &node.config.data_center;
    let title = format!("Datacenter: {dc}");
    let _ = writeln!(out, "\n{title}\n{}", "=".repeat(title.len()));
    table(&mut out, &lines);
    out
}

/// `nodetool gossipinfo`: what gossip knows of each node.
pub fn gossipinfo(node: &NodeState) -> String {
    let cluster = node.cluster().map(|c| c.as_ref());
    let mut out = String::new();
    for r in rows(node, cluster) {
        let _ = writeln!(out, "/{}", r.address);
        let _ = writeln!(
            out,
            "  STATUS:{}\n  LOAD:{}\n  DC:{}\n  RACK:{}\n  HOST_ID:{}\n  TOKENS:<hidden>",
            match r.state {
                'J' => "BOOT",
                'L' => "LEAVING",
                _ => "NORMAL",
            },
            r.load.unwrap_or(0),
            r.datacenter,
            r.rack,
            r.id.0
        );
        let _ = writeln!(out, "  STATE:{}", if r.up { "UP" } else { "DOWN" });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn sizes_read_as_nodetool_prints_them() {
        assert_eq!(file_size(116_674), "113.94 KiB");
        assert_eq!(file_size(512), "512 bytes");
        assert_eq!(file_size(3 * 1024 * 1024 + 1024 * 512), "3.50 MiB");
    }

    /// The recorded layout: columns padded to their widest cell, two spaces apart, the last
    /// one too (hence the space after "Rack").
    #[test]
    fn status_table_matches_the_recorded_layout() {
        let golden = include_str!("../../cluster/tests/golden/cassandra_nodetool_status.txt");
        let lines: Vec<Vec<String>> = golden
            .lines()
            .skip(4)
            .take(4)
            .map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        let mut out = String::new();
        table(&mut out, &lines);
        let expected: Vec<&str> = golden.lines().skip(4).take(4).collect();
        assert_eq!(out.lines().collect::<Vec<_>>(), expected);
    }
}
