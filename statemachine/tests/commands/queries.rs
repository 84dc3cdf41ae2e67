//! The reads a messagefoundry store needs: a row with its claim, counts of messages and dead
//! letters, dead letters newest first, namespaces and reference sets listed.

use crate::harness::*;
use raftlane_statemachine::query::{DeadLetterFilter, MessageFilter, NamespaceVersion};

fn dead(h: &mut Harness, channel: &str, destination: &str) -> ClaimedRow {
    let row = h.outbound_claimed(channel, destination);
    assert_eq!(
        h.run(mark_failed(
            &row,
            "boom",
            retry(Some(1), 1_000, 2_000, 60_000)
        )),
        Ok(Outcome::Failed {
            dead: true,
            next_attempt_at: h.clock(),
        })
    );
    row
}

fn dead_filter(channel: Option<&str>, destination: Option<&str>) -> DeadLetterFilter {
    DeadLetterFilter {
        stages: vec![Stage::Outbound],
        channel: channel.map(Into::into),
        destination: destination.map(Into::into),
        allowed_channels: None,
        limit: 100,
        offset: 0,
    }
}

#[test]
fn a_row_read_by_id_carries_its_claim_status_fence_and_message() {
    // messagefoundry test_claim_ready_stamps_owner_and_lease (its _queue_row helper).
    let mut h = Harness::new();
    let id = h.enqueue_message("IB", &[("OB1", "p")]);
    let claimed = h.claim_one(Stage::Outbound);
    let row = h.sm.read().row(claimed.row_id).unwrap().expect("row");
    assert_eq!(row.message_id, id);
    assert_eq!(row.status, RowStatus::Inflight);
    assert_eq!(
        row.claim,
        Some(Claim {
            owner: "worker".into(),
            lease_expires_at: T0 + 30_000,
            fence: claimed.fence,
        })
    );
    assert_eq!(h.mark_done(&claimed), Ok(Outcome::Done));
    let row = h.sm.read().row(claimed.row_id).unwrap().expect("row");
    assert_eq!((row.status, row.claim), (RowStatus::Done, None));
    assert_eq!(row.last_fence, Some(claimed.fence));
    assert_eq!(h.sm.read().row(RowId(99)).unwrap(), None);
}

#[test]
fn messages_are_counted_with_the_filters_of_the_list() {
    let mut h = Harness::new();
    h.enqueue("a", "1");
    h.enqueue("b", "2");
    h.enqueue_message("a", &[("d", "p")]);
    h.enqueue_message("a", &[]);
    let read = h.sm.read();
    let count = |f: MessageFilter| read.count_messages(&f).unwrap();
    assert_eq!(count(MessageFilter::default()), 4);
    let by_channel = MessageFilter {
        channel: Some("a".into()),
        ..MessageFilter::default()
    };
    assert_eq!(count(by_channel.clone()), 3);
    assert_eq!(
        count(MessageFilter {
            status: Some(MessageStatus::Received),
            ..by_channel.clone()
        }),
        1
    );
    assert_eq!(
        count(MessageFilter {
            allowed_channels: Some(vec!["b".into()]),
            ..MessageFilter::default()
        }),
        1
    );
    // Limit and offset do not bound a count.
    assert_eq!(
        count(MessageFilter {
            limit: 1,
            offset: 2,
            ..by_channel.clone()
        }),
        3
    );
    let listed = read
        .list_messages_page(&MessageFilter {
            limit: 1000,
            ..by_channel
        })
        .unwrap();
    assert_eq!(listed.messages.len(), 3);
    assert_eq!(listed.next_cursor, None, "the list is done");
}

/// A page ends at its limit with a cursor; the next page starts below it, and the pages
/// together are the list, newest first, each message once.
#[test]
fn the_message_list_pages_by_cursor() {
    let mut h = Harness::new();
    let ids: Vec<MessageId> = (0..7).map(|i| h.enqueue("a", &format!("m{i}"))).collect();
    h.enqueue("b", "other");
    let read = h.sm.read();
    let mut filter = MessageFilter {
        channel: Some("a".into()),
        limit: 3,
        ..MessageFilter::default()
    };
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = read.list_messages_page(&filter).unwrap();
        pages += 1;
        assert!(page.messages.len() <= 3);
        seen.extend(page.messages.iter().map(|m| m.message.id));
        match page.next_cursor {
            Some(cursor) => filter.before = Some(cursor),
            None => break,
        }
    }
    let newest_first: Vec<MessageId> = ids.iter().rev().copied().collect();
    assert_eq!(seen, newest_first);
    assert_eq!(pages, 3);
}

#[test]
fn dead_letters_are_counted_and_listed_newest_first_with_their_message_fields() {
    // messagefoundry test_list_count_and_replay_dead.
    let mut h = Harness::new();
    let first = dead(&mut h, "IB", "OB1");
    h.advance(100);
    let second = dead(&mut h, "IB2", "OB2");
    h.advance(100);
    // A live outbound row is no dead letter.
    h.enqueue_message("IB", &[("OB3", "p")]);
    h.claim_one(Stage::Outbound);
    let read = h.sm.read();
    assert_eq!(
        read.count_dead_letters(&dead_filter(None, None)).unwrap(),
        2
    );
    assert_eq!(
        read.count_dead_letters(&dead_filter(None, Some("OB1")))
            .unwrap(),
        1
    );
    assert_eq!(
        read.count_dead_letters(&dead_filter(Some("IB2"), None))
            .unwrap(),
        1
    );
    let list = read.dead_letters_newest(&dead_filter(None, None)).unwrap();
    let ids: Vec<RowId> = list.iter().map(|d| d.row.id).collect();
    assert_eq!(ids, vec![second.row_id, first.row_id]);
    assert_eq!(list[0].row.attempts, 1);
    assert_eq!(list[0].row.last_error.as_deref(), Some("boom"));
    assert_eq!(list[0].received_at, T0 + 100);
    let page = read
        .dead_letters_newest(&DeadLetterFilter {
            offset: 1,
            limit: 1,
            ..dead_filter(None, None)
        })
        .unwrap();
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].row.id, first.row_id);
    drop(read);
    // A replayed dead letter leaves the list and the count.
    assert_eq!(
        h.ok(Command::ReplayDead(ReplayDead {
            channel: None,
            destination: Some("OB1".into()),
        })),
        Outcome::Count(1)
    );
    let read = h.sm.read();
    assert_eq!(
        read.count_dead_letters(&dead_filter(None, None)).unwrap(),
        1
    );
    let list = read.dead_letters_newest(&dead_filter(None, None)).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].row.destination_name.as_deref(), Some("OB2"));
    assert_eq!(
        read.dead_letters_newest(&DeadLetterFilter {
            allowed_channels: Some(vec!["IB".into()]),
            ..dead_filter(None, None)
        })
        .unwrap(),
        vec![]
    );
}

#[test]
fn dead_letters_in_the_same_millisecond_are_listed_by_row_id_descending() {
    let mut h = Harness::new();
    let a = dead(&mut h, "IB", "OB1");
    let b = dead(&mut h, "IB", "OB2");
    let list =
        h.sm.read()
            .dead_letters_newest(&dead_filter(Some("IB"), None))
            .unwrap();
    let ids: Vec<RowId> = list.iter().map(|d| d.row.id).collect();
    assert_eq!(ids, vec![b.row_id, a.row_id]);
}

#[test]
fn namespaces_entries_and_reference_sets_are_listed_with_their_versions() {
    let mut h = Harness::new();
    h.enqueue("IB", "m");
    let ingress = h.claim_one(Stage::Ingress);
    assert_eq!(
        h.ok(route(&ingress, &[("H1", "r")])),
        Outcome::HandedOff(true)
    );
    let routed = h.claim_one(Stage::Routed);
    assert_eq!(
        h.ok(transform(
            &routed,
            &[("OB1", "x")],
            &[
                ("ns", "mrn", r#"{"anon":"A1"}"#),
                ("ns", "b", "1"),
                ("zz", "k", "2")
            ]
        )),
        Outcome::HandedOff(true)
    );
    for (name, version) in [("providers", 2), ("codes", 7)] {
        h.ok(Command::WriteReferenceSnapshot(WriteReferenceSnapshot {
            name: name.into(),
            version: ReferenceVersion::Number(version),
            rows: BTreeMap::from([("P1".to_string(), r#"{"n":1}"#.to_string())]),
        }));
    }
    let read = h.sm.read();
    assert_eq!(
        read.state_namespaces().unwrap(),
        vec![
            NamespaceVersion {
                namespace: "ns".into(),
                version: 1,
            },
            NamespaceVersion {
                namespace: "zz".into(),
                version: 1,
            },
        ]
    );
    let entries = read.state_entries("ns").unwrap();
    let keys: Vec<(&str, &str)> = entries
        .iter()
        .map(|(k, e)| (k.as_str(), e.value.as_str()))
        .collect();
    assert_eq!(keys, vec![("b", "1"), ("mrn", r#"{"anon":"A1"}"#)]);
    assert_eq!(read.state_entries("nope").unwrap(), vec![]);
    let sets: Vec<(String, u64)> = read
        .reference_sets()
        .unwrap()
        .into_iter()
        .map(|r| (r.name, r.snapshot.version))
        .collect();
    assert_eq!(
        sets,
        vec![("codes".to_string(), 7), ("providers".to_string(), 2)]
    );
}

/// The connections dashboard (docs/SPEC.md §14.11): inbound per channel since a time, outbound
/// per (channel, destination) now and since a time.
#[test]
fn connection_metrics_count_traffic_per_channel_and_destination() {
    let mut h = Harness::new();
    h.enqueue_message("ib", &[("ob1", "a"), ("ob2", "b")]);
    h.advance(100);
    h.enqueue_message("ib", &[("ob1", "c")]);
    let since = h.clock();
    h.enqueue_message("ib2", &[("ob1", "d")]);
    let rows = h.claim_ready(Stage::Outbound, 10, "w", 60_000);
    let ob2 = rows
        .iter()
        .find(|r| r.destination_name.as_deref() == Some("ob2"))
        .expect("ob2 row")
        .clone();
    h.advance(50);
    h.ok(mark_done(&ob2));
    let m = h.sm.read().connection_metrics(since, since).unwrap();
    let inbound: Vec<_> = m
        .inbound
        .iter()
        .map(|i| (i.channel.as_str(), i.read, i.last_at))
        .collect();
    assert_eq!(
        inbound,
        [("ib", 1, Some(since)), ("ib2", 1, Some(since))],
        "read counts messages since `since`; last_at is the newest ever"
    );
    let dest: Vec<_> = m
        .destinations
        .iter()
        .map(|d| {
            (
                d.channel.as_str(),
                d.destination.as_str(),
                d.queue_depth,
                d.written,
            )
        })
        .collect();
    assert_eq!(
        dest,
        [
            ("ib", "ob1", 2, 0),
            ("ib", "ob2", 0, 1),
            ("ib2", "ob1", 1, 0)
        ]
    );
    let ob2_metrics = &m.destinations[1];
    assert_eq!(ob2_metrics.recent_done, 1);
    assert_eq!(ob2_metrics.last_done_at, Some(h.clock()));
}

#[test]
fn storage_stats_count_events_and_grow_with_the_state() {
    let mut h = Harness::new();
    let empty = h.sm.read().storage_stats().unwrap();
    assert_eq!(empty.events, 0);
    let id = h.enqueue_message("ib", &[("ob1", "payload")]);
    let one = h.sm.read().storage_stats().unwrap();
    assert_eq!(one.events, h.view(id).events.len() as u64);
    assert!(one.bytes > empty.bytes);
}
