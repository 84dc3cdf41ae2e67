//! Engine coordination (docs/SPEC.md §15): the registry of engine processes, one leadership
//! lease per group, shared counters. A node id is its principal's (`rules::lease_owner`,
//! docs/SPEC.md §9.8): bound by the first heartbeat or campaign that names it; another
//! principal's heartbeat, campaign, resignation or leave under it is refused (an operator's
//! resignation or leave is its override, audited). The lease rule lives on [`LeaderLease`]: held until
//! `expires_at`, so a deposed leader that stopped renewing is replaced only once its lease ran out.

use crate::apply::{Apply, ApplyResult, Ctx};
use crate::model::coordination::{LeaderLease, NodeRecord, NodeStatus};
use crate::model::ids::Fence;
use crate::rules::validate;
use crate::tables::coordination;
use crate::wire::command::{
    BumpCounter, CampaignLeadership, NodeHeartbeat, NodeLeave, ResignLeadership,
};
use crate::wire::outcome::Outcome;

impl Apply for NodeHeartbeat {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        validate::name("node_id", &self.node_id)?;
        validate::opt_name("host", self.host.as_deref())?;
        // The node id is its principal's from its first heartbeat (rules::lease_owner).
        cx.bind_owner("node_id", &self.node_id)?;
        let t = cx.t;
        let record = match coordination::node(cx.txn, &self.node_id)? {
            Some(old) if old.status == NodeStatus::Active => NodeRecord {
                host: self.host.clone().or(old.host),
                pid: self.pid.or(old.pid),
                last_seen: t.max(old.last_seen),
                ..old
            },
            // New, or back after a clean stop: a new incarnation.
            _ => NodeRecord {
                node_id: self.node_id.clone(),
                host: self.host.clone(),
                pid: self.pid,
                started_at: t,
                last_seen: t,
                status: NodeStatus::Active,
            },
        };
        coordination::put_node(cx, &record);
        Ok(Outcome::Done)
    }
}

impl Apply for NodeLeave {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        validate::name("node_id", &self.node_id)?;
        cx.check_owner_or_override("node_id", &self.node_id, "node_leave")?;
        let Some(old) = coordination::node(cx.txn, &self.node_id)? else {
            return Ok(Outcome::Count(0));
        };
        let t = cx.t;
        coordination::put_node(
            cx,
            &NodeRecord {
                status: NodeStatus::Left,
                last_seen: t.max(old.last_seen),
                ..old
            },
        );
        // Whatever it led, it leads no more: a successor need not wait out its lease.
        for group in coordination::groups_led_by(cx.txn, &self.node_id)? {
            coordination::drop_leader(cx, &group);
        }
        Ok(Outcome::Count(1))
    }
}

impl Apply for CampaignLeadership {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        validate::name("group", &self.group)?;
        validate::name("node_id", &self.node_id)?;
        validate::ttl("ttl_ms", self.ttl_ms)?;
        cx.bind_owner("node_id", &self.node_id)?;
        let t = cx.t;
        let current = coordination::leader(cx.txn, &self.group)?;
        let lease = match current {
            // Someone else's live lease stands.
            Some(l) if l.owner != self.node_id && l.is_live(t) => l,
            // Ours: renewed, same fence, never shortened.
            Some(l) if l.owner == self.node_id => LeaderLease {
                expires_at: l.expires_at.max(t.saturating_add(self.ttl_ms)),
                ..l
            },
            // Free or expired: taken, with a new fence.
            _ => LeaderLease {
                owner: self.node_id.clone(),
                expires_at: t.saturating_add(self.ttl_ms),
                fence: Fence(cx.index),
            },
        };
        coordination::put_leader(cx, &self.group, &lease);
        Ok(Outcome::Leader(lease))
    }
}

impl Apply for ResignLeadership {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        validate::name("group", &self.group)?;
        validate::name("node_id", &self.node_id)?;
        cx.check_owner_or_override("node_id", &self.node_id, "resign_leadership")?;
        match coordination::leader(cx.txn, &self.group)? {
            Some(l) if l.owner == self.node_id => {
                coordination::drop_leader(cx, &self.group);
                Ok(Outcome::Count(1))
            }
            _ => Ok(Outcome::Count(0)),
        }
    }
}

impl Apply for BumpCounter {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        validate::name("name", &self.name)?;
        let next = coordination::counter(cx.txn, &self.name)?.saturating_add(1);
        coordination::set_counter(cx, &self.name, next);
        Ok(Outcome::Count(next))
    }
}
