//! Channels checked against the configuration (docs/SPEC.md §6.1): an empty `channels` section
//! takes any channel; one that names channels takes only those (or any, with `"*"`), and every
//! path that puts a message or a row on a channel refuses another by name, changing nothing.

use crate::harness::*;
use raftlane_statemachine::model::config::ChannelConfig;
use raftlane_statemachine::rules::channels::ANY_CHANNEL;

fn channels(names: &[&str]) -> ConfigDoc {
    ConfigDoc {
        channels: names
            .iter()
            .map(|n| ((*n).to_string(), ChannelConfig::default()))
            .collect(),
        ..config_with(&["api"], &[])
    }
}

fn configure(h: &mut Harness, doc: ConfigDoc) {
    let current = h.sm.read().config().unwrap().version;
    h.ok_as("admin", put_config(current, doc));
}

fn unknown(field: &str, channel: &str) -> Rejection {
    Rejection::UnknownChannel {
        field: field.into(),
        channel: channel.into(),
    }
}

fn received(channel: &str) -> Command {
    Command::RecordReceived(RecordReceived {
        channel: channel.into(),
        raw: "raw".into(),
        fields: MessageFields::default(),
        status: ReceivedStatus::Filtered,
        error: None,
    })
}

fn routed(channel: &str) -> Command {
    Command::EnqueueMessage(EnqueueMessage {
        channel: channel.into(),
        raw: "raw".into(),
        fields: MessageFields::default(),
        deliveries: vec![delivery("api", "p")],
        idempotency_key: None,
    })
}

#[test]
fn an_unconfigured_cluster_takes_any_channel() {
    let mut h = Harness::new();
    h.enqueue("anything", "a");
    h.ok(received("else"));
    h.ok(routed("more"));
    assert_eq!(h.sm.meta().next_message_id, 3);
}

#[test]
fn a_configured_cluster_refuses_other_channels_on_every_enqueue() {
    let mut h = Harness::new();
    configure(&mut h, channels(&["orders"]));
    h.enqueue("orders", "a");
    h.reject(enqueue_cmd("lab", "b", None), unknown("channel", "lab"));
    h.reject(
        enqueue_cmd("lab", "b", Some("key-1")),
        unknown("channel", "lab"),
    );
    h.reject(received("lab"), unknown("channel", "lab"));
    h.reject(routed("lab"), unknown("channel", "lab"));
    h.ok(received("orders"));
    h.ok(routed("orders"));
    assert_eq!(h.sm.meta().next_message_id, 3);
    // The refusal names the channel and says how to take it.
    let text = unknown("channel", "lab").to_string();
    assert!(text.contains("'lab'") && text.contains("\"*\""), "{text}");
}

#[test]
fn a_star_entry_takes_any_channel_again() {
    let mut h = Harness::new();
    configure(&mut h, channels(&["orders"]));
    h.reject(enqueue_cmd("lab", "b", None), unknown("channel", "lab"));
    configure(&mut h, channels(&["orders", ANY_CHANNEL]));
    h.enqueue("lab", "b");
    // Emptying the section lifts the check too.
    configure(&mut h, channels(&[]));
    h.enqueue("elsewhere", "c");
}

#[test]
fn a_response_is_not_reingested_to_an_unconfigured_channel() {
    let mut h = Harness::new();
    configure(&mut h, channels(&["orders", "loop"]));
    let row = h.outbound_claimed("orders", "api");
    h.reject(
        respond(&row, "b", Some("elsewhere")),
        unknown("reingress_to", "elsewhere"),
    );
    assert_eq!(h.ok(respond(&row, "b", Some("loop"))), Outcome::Done);
}

#[test]
fn an_ingress_handoff_refuses_an_unconfigured_loopback_channel() {
    let mut h = Harness::new();
    let row = h.outbound_claimed("orders", "api");
    assert_eq!(h.ok(respond(&row, "b", Some("loop"))), Outcome::Done);
    let resp = h.claim_one(Stage::Response);
    configure(&mut h, channels(&["orders", "loop"]));
    h.reject(
        ingress_handoff(&resp, "elsewhere", 3),
        unknown("loopback_channel", "elsewhere"),
    );
    h.ok(ingress_handoff(&resp, "loop", 3));
}
