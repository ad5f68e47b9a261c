//! Gossip among several nodes on the simulated network under a manual clock: deterministic, so a
//! failing run replays exactly.

use std::sync::Arc;
use std::time::Duration;

use helenus_types::ManualClock;
use tokio::sync::mpsc;
use uuid::Uuid;

use super::*;
use crate::locator::NodeId;
use crate::messaging::{Envelope, SimulatedNetwork, SimulatedTransport, Transport};

fn node(n: usize) -> NodeId {
    NodeId(Uuid::from_u128(n as u128 + 1))
}

struct Sim {
    clock: Arc<ManualClock>,
    net: SimulatedNetwork,
    nodes: Vec<(Gossiper, SimulatedTransport, mpsc::Receiver<Envelope>)>,
}

impl Sim {
    fn new(n: usize, seed: u64) -> Sim {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000_000));
        let net = SimulatedNetwork::new(seed);
        let mut sim = Sim {
            clock,
            net,
            nodes: Vec::new(),
        };
        for i in 0..n {
            sim.add(i, 1, seed);
        }
        sim
    }

    fn config(seed: u64) -> GossipConfig {
        GossipConfig {
            seeds: vec![node(0)],
            random_seed: seed,
            ..GossipConfig::default()
        }
    }

    /// Starts node `i` (again, if it was running) with a generation and its tokens.
    fn add(&mut self, i: usize, generation: i64, seed: u64) {
        let mut g = Gossiper::new(
            node(i),
            generation,
            Self::config(seed + i as u64),
            self.clock.clone(),
        );
        g.set_local(AppKey::Status, status::NORMAL);
        g.set_local(AppKey::Tokens, format!("{}", i * 100 + generation as usize));
        g.set_local(AppKey::Dc, "dc1");
        let (t, rx) = self.net.join(node(i), 10_000);
        let entry = (g, t, rx);
        if i < self.nodes.len() {
            self.nodes[i] = entry;
        } else {
            self.nodes.push(entry);
        }
    }

    /// One second: every node gossips, then messages are exchanged until none is left.
    fn round(&mut self) {
        self.clock.advance(Duration::from_secs(1));
        for (g, t, _) in &mut self.nodes {
            for (to, e) in g.tick() {
                let _ = t.send(to, e);
            }
        }
        loop {
            let mut moved = false;
            for (g, t, rx) in &mut self.nodes {
                while let Ok(e) = rx.try_recv() {
                    moved = true;
                    if let Ok(replies) = g.handle(&e) {
                        for (to, r) in replies {
                            let _ = t.send(to, r);
                        }
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn rounds(&mut self, n: usize) {
        for _ in 0..n {
            self.round();
        }
    }

    fn knows_everyone(&self) -> bool {
        let n = self.nodes.len();
        self.nodes.iter().all(|(g, _, _)| {
            (0..n).all(|j| {
                g.is_alive(node(j))
                    && g.states()
                        .get(&node(j))
                        .and_then(|s| s.get(AppKey::Tokens))
                        .is_some()
            })
        })
    }
}

#[test]
fn five_nodes_learn_each_others_tokens_through_one_seed() {
    let mut sim = Sim::new(5, 11);
    let mut rounds = 0;
    while !sim.knows_everyone() && rounds < 15 {
        sim.round();
        rounds += 1;
    }
    assert!(sim.knows_everyone(), "not converged after {rounds} rounds");
    let tokens = sim.nodes[3].0.states()[&node(4)].get(AppKey::Tokens);
    assert_eq!(tokens, Some("401"));
}

#[test]
fn a_partitioned_node_is_seen_down_and_comes_back_after_the_heal() {
    let mut sim = Sim::new(4, 3);
    sim.rounds(10);
    assert!(sim.knows_everyone());
    let others: Vec<NodeId> = (0..3).map(node).collect();
    sim.net.partition(&[node(3)], &others);
    // Phi 8 with one-second heartbeats: about 18 s of silence.
    sim.rounds(12);
    assert!(sim.nodes[0].0.is_alive(node(3)), "not convicted this early");
    // Phi's mean interval is over relayed heartbeats too, which arrive less regularly than one a
    // second (up to the initial 2 s sample's 37 s).
    sim.rounds(25);
    for i in 0..3 {
        assert!(
            !sim.nodes[i].0.is_alive(node(3)),
            "node {i} still sees node 3 up"
        );
        assert!(sim.nodes[i].0.is_alive(node((i + 1) % 3)));
    }
    assert!(
        !sim.nodes[3].0.is_alive(node(0)),
        "the isolated node sees the others down"
    );
    let events = sim.nodes[1].0.drain_events();
    assert!(events.contains(&GossipEvent::Down(node(3))));
    sim.net.heal();
    sim.rounds(10);
    assert!(sim.knows_everyone(), "the heal restores the view");
    assert!(sim.nodes[1]
        .0
        .drain_events()
        .contains(&GossipEvent::Up(node(3))));
}

#[test]
fn a_restart_with_a_new_generation_replaces_the_old_state() {
    let mut sim = Sim::new(3, 5);
    sim.rounds(8);
    sim.nodes[0].0.drain_events();
    sim.add(2, 2, 5);
    sim.rounds(8);
    let seen = sim.nodes[0].0.states()[&node(2)].clone();
    assert_eq!(seen.generation, 2);
    assert_eq!(seen.get(AppKey::Tokens), Some("202"));
    assert!(sim.nodes[0]
        .0
        .drain_events()
        .contains(&GossipEvent::Restarted(node(2))));
}

#[test]
fn gossip_converges_when_a_fifth_of_messages_are_lost() {
    let mut sim = Sim::new(5, 21);
    sim.net.set_drop_rate(0.2);
    sim.rounds(25);
    assert!(sim.knows_everyone());
    assert!(sim.net.dropped() > 0);
}

#[test]
fn a_node_of_another_cluster_is_ignored() {
    let clock = Arc::new(ManualClock::new(0));
    let mut a = Gossiper::new(node(0), 1, GossipConfig::default(), clock.clone());
    let other = GossipConfig {
        cluster_name: "Other".into(),
        ..GossipConfig::default()
    };
    let mut b = Gossiper::new(node(1), 1, other, clock);
    b.set_local(AppKey::Dc, "dc9");
    let syn = b.tick();
    assert!(syn.is_empty(), "no partners yet");
    let digest = Syn {
        cluster_name: "Other".into(),
        digests: vec![],
    };
    let e = Envelope {
        verb: crate::messaging::Verb::GossipDigestSyn,
        flags: 0,
        id: 0,
        from: node(1),
        payload: digest.encode(),
    };
    assert!(matches!(a.handle(&e), Err(GossipError::ClusterName { .. })));
    assert_eq!(a.states().len(), 1);
}

#[test]
fn a_clean_shutdown_is_seen_at_once_and_a_restart_revives_the_node() {
    let mut sim = Sim::new(3, 9);
    sim.rounds(8);
    assert!(sim.knows_everyone());
    sim.nodes[2].0.set_local(AppKey::Status, status::SHUTDOWN);
    sim.rounds(3);
    assert!(
        !sim.nodes[0].0.is_alive(node(2)),
        "down without waiting for conviction"
    );
    sim.add(2, 2, 9);
    sim.rounds(6);
    assert!(sim.knows_everyone());
}

#[test]
fn a_node_removed_on_its_behalf_stays_removed_everywhere_even_when_it_restarts() {
    let mut sim = Sim::new(4, 13);
    sim.rounds(8);
    assert!(sim.knows_everyone());
    let others: Vec<NodeId> = (0..3).map(node).collect();
    sim.net.partition(&[node(3)], &others);
    sim.rounds(30);
    assert!(!sim.nodes[1].0.is_alive(node(3)));
    // Node 1 speaks for the dead node, from its own (possibly older) copy of its state.
    assert!(sim.nodes[1]
        .0
        .set_on_behalf(node(3), AppKey::Status, status::REMOVED));
    assert!(!sim.nodes[1]
        .0
        .set_on_behalf(node(9), AppKey::Status, status::REMOVED));
    sim.rounds(6);
    let removed = |sim: &Sim, i: usize| {
        sim.nodes[i].0.states()[&node(3)].get(AppKey::Status) == Some(status::REMOVED)
    };
    for i in 0..3 {
        assert!(removed(&sim, i), "node {i} did not learn the removal");
    }
    // The removed node comes back with its old identity: nobody takes it back.
    sim.net.heal();
    sim.add(3, 2, 13);
    sim.rounds(8);
    for i in 0..3 {
        assert!(removed(&sim, i), "node {i} resurrected the removed node");
        assert!(!sim.nodes[i].0.is_alive(node(3)));
    }
    assert!(
        sim.nodes[3].0.removed_by_peers(),
        "the removed node is told"
    );
    assert!(!sim.nodes[0].0.removed_by_peers());
}

impl Sim {
    /// Starts node `i` at `address` without tokens: a node still learning the ring, or a start
    /// that will be refused.
    fn add_without_tokens(&mut self, i: usize, generation: i64, seed: u64, address: &str) {
        self.add(i, generation, seed);
        let g = &mut self.nodes[i].0;
        g.set_local(AppKey::Tokens, "");
        g.set_local(AppKey::Status, status::JOINING);
        g.set_local(AppKey::InternalAddress, address);
    }

    fn anyone_knows(&self, n: NodeId) -> bool {
        self.nodes
            .iter()
            .any(|(g, _, _)| g.local() != n && g.states().contains_key(&n))
    }
}

#[test]
fn a_dead_node_without_tokens_is_never_up_on_a_node_that_learns_it_late_and_is_dropped() {
    let mut sim = Sim::new(4, 31);
    sim.add_without_tokens(4, 1, 31, "127.0.0.84:7000");
    sim.rounds(6);
    assert!(sim.nodes[1].0.is_alive(node(4)), "it spoke for itself");
    // It dies (a refused start exits), then node 0 restarts and learns of it from the others.
    let others: Vec<NodeId> = (0..4).map(node).collect();
    sim.net.partition(&[node(4)], &others);
    sim.rounds(2);
    sim.add(0, 2, 31);
    for round in 0..20 {
        sim.round();
        if round > 2 {
            assert!(
                sim.nodes[0].0.states().contains_key(&node(4)),
                "not learned"
            );
        }
        assert!(
            !sim.nodes[0].0.is_alive(node(4)),
            "third-party news of a dead node made it up (round {round})"
        );
    }
    assert!(sim.nodes[0].0.is_alive(node(2)), "live peers are up");
    // Fat-client timeout (30 s of silence) everywhere; the quarantine keeps it from coming back.
    sim.rounds(25);
    assert!(
        !sim.anyone_knows(node(4)),
        "the silent node stayed in gossip"
    );
    assert!(sim.nodes[1]
        .0
        .drain_events()
        .contains(&GossipEvent::Evicted(node(4))));
    for _ in 0..100 {
        sim.round();
        assert!(!sim.anyone_knows(node(4)), "a peer gossiped it back");
    }
    assert!((0..4).all(|i| sim.nodes[i].0.states().len() == 4));
}

#[test]
fn a_newer_node_at_the_address_of_a_dead_one_without_tokens_replaces_it_at_once() {
    let mut sim = Sim::new(3, 41);
    sim.add_without_tokens(3, 1, 41, "127.0.0.84:7000");
    sim.rounds(6);
    let others: Vec<NodeId> = (0..3).map(node).collect();
    sim.net.partition(&[node(3)], &others);
    sim.rounds(20);
    assert!(
        sim.anyone_knows(node(3)),
        "still within the fat-client timeout"
    );
    // Another host id starts at the same address, later (a new generation) and with tokens.
    sim.add(4, 2, 41);
    sim.nodes[4]
        .0
        .set_local(AppKey::InternalAddress, "127.0.0.84:7000");
    sim.rounds(6);
    assert!(
        !sim.anyone_knows(node(3)),
        "the superseded node is still known"
    );
    let members = [0, 1, 2, 4];
    let all_up = |sim: &Sim| {
        members
            .iter()
            .all(|&i| members.iter().all(|&j| sim.nodes[i].0.is_alive(node(j))))
    };
    assert!(all_up(&sim));
    // A live member keeps its state however long another node at its address is silent.
    sim.rounds(40);
    assert!(all_up(&sim));
    assert!(!sim.anyone_knows(node(3)));
}
