//! Bans: trust & safety blocks one code, or every link whose target host is (or is
//! under) a host. A ban travels two ways: the denylist snapshot (fast lane, small, read
//! by every edge location within seconds) and the affected links' records, re-published
//! marked `banned` (normal lane), so the two channels converge.

use crate::cache::RedirectCache;
use crate::db::Db;
use crate::error::AppError;
use crate::model::{Ban, BanTarget};
use crate::principal::Principal;
use crate::store;
use crate::store::LiftOutcome;
use crate::views::bans::{CreateBan, MAX_REASON_CHARS};
use shared::codes::is_plausible_code;

impl CreateBan {
    /// Validates the request; a code ban without a domain is on `default_domain`.
    pub fn target(&self, default_domain: &str) -> Result<BanTarget, AppError> {
        let reason = self.reason.trim();
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(AppError::invalid(
                "reason",
                format!("say why, in 1 to {MAX_REASON_CHARS} characters"),
            ));
        }
        match self.kind.as_str() {
            "code" => {
                if self.host.is_some() {
                    return Err(AppError::invalid(
                        "host",
                        "a code ban names a domain and a code, not a host",
                    ));
                }
                let domain = match &self.domain {
                    Some(d) => {
                        shared::normalize_domain(d).map_err(|e| AppError::invalid("domain", e))?
                    }
                    None => default_domain.to_owned(),
                };
                let code = self
                    .code
                    .clone()
                    .ok_or_else(|| AppError::invalid("code", "a code ban needs the code"))?;
                if !is_plausible_code(&code) {
                    return Err(AppError::invalid(
                        "code",
                        format!("{code:?} cannot be a short code"),
                    ));
                }
                Ok(BanTarget::Code { domain, code })
            }
            "host" => {
                if self.domain.is_some() || self.code.is_some() {
                    return Err(AppError::invalid("host", "a host ban names only a host"));
                }
                let host = self
                    .host
                    .as_deref()
                    .ok_or_else(|| AppError::invalid("host", "a host ban needs the host"))?;
                let host =
                    shared::normalize_domain(host).map_err(|e| AppError::invalid("host", e))?;
                if !host.contains('.') && !host.starts_with('[') {
                    return Err(AppError::invalid(
                        "host",
                        format!("{host:?} is a top-level name; ban a registrable host"),
                    ));
                }
                Ok(BanTarget::Host { host })
            }
            other => Err(AppError::invalid(
                "kind",
                format!("{other:?}: use \"code\" or \"host\""),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: &str, domain: Option<&str>, code: Option<&str>, host: Option<&str>) -> CreateBan {
        CreateBan {
            kind: kind.into(),
            domain: domain.map(Into::into),
            code: code.map(Into::into),
            host: host.map(Into::into),
            reason: "phishing".into(),
        }
    }

    #[test]
    fn targets_are_validated_and_normalized() {
        assert_eq!(
            req("host", None, None, Some("WWW.Evil.Example."))
                .target("s.example")
                .unwrap(),
            BanTarget::Host {
                host: "www.evil.example".into()
            }
        );
        assert_eq!(
            req("code", None, Some("abc1234"), None)
                .target("s.example")
                .unwrap(),
            BanTarget::Code {
                domain: "s.example".into(),
                code: "abc1234".into()
            }
        );
        assert!(req("host", None, None, Some("com")).target("s").is_err());
        assert!(req("host", Some("s.example"), None, Some("evil.example"))
            .target("s")
            .is_err());
        assert!(req("code", None, Some("a/b"), None).target("s").is_err());
        assert!(req("code", None, None, None).target("s").is_err());
        assert!(req("url", None, None, None).target("s").is_err());
        let mut blank = req("host", None, None, Some("evil.example"));
        blank.reason = "  ".into();
        assert!(blank.target("s").is_err());
    }
}

/// Who may ban: whoever speaks for the whole instance (an admin key, an operator, a
/// feed); a key that is not an admin's is told so.
const OPERATORS_ONLY: &str = "bans need an admin key (keys create --admin)";

/// Bans: made, listed and lifted by operators, who are the only ones the service lets
/// (whichever door they come through). Each change reaches this origin's redirect at
/// once (the cache forgets its denylist) and the edge through the outbox.
#[derive(Debug)]
pub struct Bans {
    db: Db,
    cache: RedirectCache,
    /// What a code ban names when it names no domain.
    default_domain: String,
}

impl Bans {
    pub fn new(db: Db, cache: RedirectCache, default_domain: String) -> Self {
        Bans {
            db,
            cache,
            default_domain,
        }
    }

    /// Bans what `req` names for `who`, shown as made by `created_by` (a key's owner and
    /// id, a user's email, a feed's name).
    pub async fn create(
        &self,
        who: &Principal,
        req: &CreateBan,
        created_by: &str,
    ) -> Result<Ban, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        let actor = who.actor();
        let target = req.target(&self.default_domain)?;
        let ban = store::bans::insert(
            &self.db,
            &target,
            req.reason.trim(),
            created_by,
            actor,
            crate::model::time::now_ms(),
        )
        .await?;
        self.cache.bans_changed();
        Ok(ban)
    }

    /// The active bans, or all of them.
    pub async fn list(&self, who: &Principal, all: bool) -> Result<Vec<Ban>, AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        Ok(store::bans::list(&self.db, all).await?)
    }

    /// Lifts ban `id` (lifting a lifted one changes nothing).
    pub async fn lift(&self, who: &Principal, id: i64) -> Result<(), AppError> {
        who.require_operator(OPERATORS_ONLY)?;
        let outcome =
            store::bans::lift(&self.db, id, who.actor(), crate::model::time::now_ms()).await?;
        self.cache.bans_changed();
        match outcome {
            LiftOutcome::Lifted(_) | LiftOutcome::AlreadyLifted => Ok(()),
            LiftOutcome::NotFound => Err(AppError::BanNotFound),
        }
    }
}
