//! The engine's users and roles (docs/SPEC.md §13): CreateUser, UpdateUser, DeleteUser,
//! UpsertRole, SetUserRoles and SetAdGroupMap. Secrets arrive hashed or sealed by the proposer;
//! nothing here is audited (the engine records its own auth events with RecordAudit).

use crate::apply::{Apply, ApplyError, ApplyResult, Ctx};
use crate::model::ids::Millis;
use crate::model::user::{AdGroupMap, AuthRole, RoleAssignment, User};
use crate::rules::{ad_groups, principal_name, validate};
use crate::tables::{sessions, users};
use crate::wire::command::{
    CreateUser, DeleteUser, SetAdGroupMap, SetUserRoles, UpdateUser, UpsertRole, UserChange,
};
use crate::wire::outcome::Outcome;
use crate::wire::rejection::Rejection;
use std::collections::BTreeSet;

impl Apply for CreateUser {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let CreateUser {
            user_id,
            username,
            auth_provider,
            display_name,
            email,
            password_hash,
            must_change_password,
        } = self;
        validate::name("user_id", user_id)?;
        principal_name::check_username_form("username", username)?;
        if users::get(cx.txn, user_id)?.is_some() {
            return Err(already_exists("user_id", user_id));
        }
        if users::id_of(cx.txn, username)?.is_some() {
            return Err(already_exists("username", username));
        }
        // One username per look (docs/SPEC.md §9.1): audit rows name users by it.
        let taken = users::usernames(cx.txn)?;
        principal_name::check_distinct("username", username, taken.iter().map(String::as_str))?;
        let t = cx.t;
        let user = User {
            id: user_id.clone(),
            username: username.clone(),
            auth_provider: *auth_provider,
            display_name: display_name.clone(),
            email: email.clone(),
            disabled: false,
            created_at: t,
            updated_at: t,
            last_login_at: None,
            password_hash: password_hash.clone(),
            password_changed_at: password_hash.as_ref().map(|_| t),
            must_change_password: *must_change_password,
            failed_attempts: 0,
            locked_until: None,
            channel_scope: None,
            totp_secret: None,
            totp_enabled: false,
            totp_enrolled_at: None,
            recovery_code_hashes: Vec::new(),
            last_totp_step: None,
        };
        users::put(cx, &user);
        users::put_username(cx, username, user_id);
        Ok(Outcome::Done)
    }
}

fn already_exists(field: &str, value: &str) -> ApplyError {
    Rejection::AlreadyExists {
        field: field.to_string(),
        value: value.to_string(),
    }
    .into()
}

impl Apply for UpdateUser {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let UpdateUser { user_id, change } = self;
        // An unknown user is updated nowhere: Count(0), like an UPDATE matching no row.
        let Some(mut user) = users::get(cx.txn, user_id)? else {
            return Ok(Outcome::Count(0));
        };
        let t = cx.t;
        if !change_user(&mut user, change, t) {
            return Ok(Outcome::Count(0));
        }
        users::put(cx, &user);
        Ok(Outcome::Count(1))
    }
}

/// Apply `change` to `user` at `t`; `false` when it changed nothing (a consume that found
/// nothing to consume).
fn change_user(user: &mut User, change: &UserChange, t: Millis) -> bool {
    match change {
        UserChange::Password {
            password_hash,
            must_change_password,
        } => {
            user.password_hash = Some(password_hash.clone());
            user.password_changed_at = Some(t);
            user.must_change_password = *must_change_password;
            user.failed_attempts = 0;
            user.locked_until = None;
        }
        UserChange::Disabled(disabled) => user.disabled = *disabled,
        UserChange::Profile {
            display_name,
            email,
        } => {
            user.display_name = display_name.clone();
            user.email = email.clone();
        }
        UserChange::TotpSecret(secret) => user.totp_secret = secret.clone(),
        UserChange::EnableTotp {
            recovery_code_hashes,
        } => {
            user.totp_enabled = true;
            user.totp_enrolled_at = Some(t);
            user.recovery_code_hashes = recovery_code_hashes.clone();
        }
        UserChange::DisableTotp => {
            user.totp_secret = None;
            user.totp_enabled = false;
            user.totp_enrolled_at = None;
            user.recovery_code_hashes = Vec::new();
        }
        UserChange::ConsumeRecoveryCode { code_hash } => {
            let Some(at) = user
                .recovery_code_hashes
                .iter()
                .position(|h| h == code_hash)
            else {
                return false;
            };
            user.recovery_code_hashes.remove(at);
        }
        UserChange::ConsumeTotpStep { step } => {
            if user.last_totp_step.is_some_and(|last| last >= *step) {
                return false;
            }
            user.last_totp_step = Some(*step);
            // The only change that leaves `updated_at` alone.
            return true;
        }
        UserChange::LoginSuccess => {
            user.last_login_at = Some(t);
            user.failed_attempts = 0;
            user.locked_until = None;
        }
        UserChange::LoginFailure {
            failed_attempts,
            locked_until,
        } => {
            user.failed_attempts = *failed_attempts;
            user.locked_until = *locked_until;
        }
        UserChange::ChannelScope(scope) => user.channel_scope = scope.clone(),
    }
    user.updated_at = t;
    true
}

impl Apply for DeleteUser {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let DeleteUser { user_id } = self;
        let Some(user) = users::get(cx.txn, user_id)? else {
            return Ok(Outcome::Count(0));
        };
        users::clear_assignments(cx, user_id)?;
        for session in sessions::of_user(cx.txn, user_id)? {
            sessions::remove(cx, &session);
        }
        users::delete(cx, &user);
        Ok(Outcome::Count(1))
    }
}

impl Apply for UpsertRole {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let UpsertRole {
            role_id,
            display_name,
            description,
            builtin,
        } = self;
        validate::name("role_id", role_id)?;
        users::put_role(
            cx,
            &AuthRole {
                id: role_id.clone(),
                display_name: display_name.clone(),
                description: description.clone(),
                builtin: *builtin,
            },
        );
        Ok(Outcome::Done)
    }
}

impl Apply for SetUserRoles {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SetUserRoles {
            user_id,
            role_ids,
            assigned_by,
        } = self;
        if users::get(cx.txn, user_id)?.is_none() {
            return Err(Rejection::UnknownUser(user_id.clone()).into());
        }
        // A role named twice is assigned once.
        let role_ids: BTreeSet<&String> = role_ids.iter().collect();
        for role_id in &role_ids {
            if !users::role_exists(cx.txn, role_id)? {
                return Err(Rejection::UnknownRole((*role_id).clone()).into());
            }
        }
        users::clear_assignments(cx, user_id)?;
        let t = cx.t;
        for role_id in &role_ids {
            users::put_assignment(
                cx,
                user_id,
                &RoleAssignment {
                    role_id: (*role_id).clone(),
                    assigned_at: t,
                    assigned_by: assigned_by.clone(),
                },
            );
        }
        Ok(Outcome::Count(role_ids.len() as u64))
    }
}

impl Apply for SetAdGroupMap {
    fn apply(&self, cx: &mut Ctx<'_, '_>) -> ApplyResult<Outcome> {
        let SetAdGroupMap { map, entries } = self;
        let entries = ad_groups::normalize_entries(*map, entries);
        if *map == AdGroupMap::Roles {
            let roles: BTreeSet<&String> = entries.iter().map(|(_, role)| role).collect();
            for role_id in roles {
                if !users::role_exists(cx.txn, role_id)? {
                    return Err(Rejection::UnknownRole(role_id.clone()).into());
                }
            }
        }
        users::replace_map(cx, *map, &entries)?;
        Ok(Outcome::Count(entries.len() as u64))
    }
}
