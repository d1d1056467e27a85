//! Races between writers of one link, run many times on every database available: the
//! copy the edge gets (the newest outbox row of a key) must always be what the database
//! row says, and no two copies of a key may carry the same version.

use crate::common::TestDb;
use origin_api::links;
use origin_api::model::history::Actor;
use origin_api::model::time::now_ms;
use origin_api::model::BanTarget;
use origin_api::model::Creator;
use origin_api::model::Link;

use origin_api::views;
use origin_api::AppState;
use serde_json::{json, Value};
use shared::{EdgeRecord, EdgeStatus};

/// Rounds of each race. Each is a few milliseconds; the interleavings that lose an
/// update show up within a few dozen rounds on PostgreSQL.
const ROUNDS: usize = 200;

async fn create(state: &AppState, code: &str, target: &str) -> Link {
    let req: views::links::CreateLink =
        serde_json::from_value(json!({ "target_url": target, "code": code })).expect("body");
    links::create_link(&state.links, &Creator::owner("acme"), req)
        .await
        .expect("create")
}

/// PATCHes the link's target at the version last read; a refusal (412, or 422 because
/// the ban landed first) is part of the race, not a failure.
async fn retarget(state: &AppState, code: &str, target: &str) {
    let acme = Creator::owner("acme");
    let Ok(current) =
        links::owned_link(state.db(), &acme, "s.example", code, links::Intent::Change).await
    else {
        return;
    };
    let changes: views::links::UpdateLink =
        serde_json::from_value(json!({ "target_url": target })).expect("changes");
    let version = current.version;
    let _ = links::update_link(&state.links, current, version, changes, Actor::System).await;
}

/// The newest outbox row of `s.example/{code}`, and every version the key's rows carry.
async fn copies(state: &AppState, code: &str) -> (EdgeRecord, Vec<i64>) {
    let key = format!("s.example/{code}");
    let rows: Vec<(i64, String)> = state
        .db()
        .read_all(
            "SELECT version, payload FROM outbox WHERE kind = 'link' AND route_key = $1 ORDER BY seq",
            &[(&key).into()],
        )
        .await
        .expect("outbox");
    let newest = rows.last().expect("a row").1.clone();
    (
        EdgeRecord::from_json(&newest).expect("record"),
        rows.iter().map(|(v, _)| *v).collect(),
    )
}

/// Checks what the edge would end with against the database row.
async fn check(state: &AppState, code: &str, round: usize, kind: &str) {
    let row = origin_api::store::links::get(state.db(), "s.example", code)
        .await
        .expect("read")
        .expect("link");
    let (edge, versions) = copies(state, code).await;
    let host = row.target_host();
    let bans = origin_api::store::bans::list(state.db(), false)
        .await
        .expect("bans");
    let banned = origin_api::model::denylist(&bans).blocks_host(&host);
    let context = format!(
        "{kind} round {round}: row v{} {}",
        row.version, row.target_url
    );
    assert_eq!(
        edge.version, row.version,
        "{context}: the newest copy's version"
    );
    assert_eq!(
        edge.target, row.target_url,
        "{context}: the newest copy's target"
    );
    assert_eq!(
        edge.status == EdgeStatus::Banned,
        banned,
        "{context}: the newest copy's ban mark (host {host} banned: {banned})"
    );
    let mut sorted = versions.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        versions.len(),
        "{context}: two copies share a version: {versions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_edit_racing_a_host_ban_and_its_lift_never_loses_a_version_or_a_ban_mark() {
    for t in TestDb::all("race-ban-edit").await {
        let state = crate::common::app_state(&t);
        let code = "race-link";
        create(&state, code, "https://good.example/0").await;
        for round in 0..ROUNDS {
            let evil = format!("evil{round}.example");
            let host = BanTarget::Host { host: evil.clone() };
            // The edit moves the link onto the host being banned, at the same moment.
            let onto = format!("https://{evil}/{round}");
            let (ban, ()) = tokio::join!(
                origin_api::store::bans::insert(
                    state.db(),
                    &host,
                    "race",
                    "ops/t",
                    Actor::System,
                    now_ms()
                ),
                retarget(&state, code, &onto),
            );
            let ban = ban.expect("ban");
            check(&state, code, round, t.kind()).await;
            // The edit moves it back while the ban is lifted.
            let back = format!("https://good.example/{round}");
            let (lift, ()) = tokio::join!(
                origin_api::store::bans::lift(state.db(), ban.ban_id, Actor::System, now_ms()),
                retarget(&state, code, &back),
            );
            lift.expect("lift");
            check(&state, code, round, t.kind()).await;
        }
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_create_racing_a_ban_of_its_host_is_marked_or_refused() {
    for t in TestDb::all("race-ban-create").await {
        let state = crate::common::app_state(&t);
        let acme = Creator::owner("acme");
        for round in 0..ROUNDS {
            let evil = format!("fresh{round}.example");
            let host = BanTarget::Host { host: evil.clone() };
            let code = format!("race-new-{round}");
            let req: views::links::CreateLink = serde_json::from_value::<views::links::CreateLink>(
                json!({ "target_url": format!("https://{evil}/"), "code": code }),
            )
            .expect("body");
            let (ban, created) = tokio::join!(
                origin_api::store::bans::insert(
                    state.db(),
                    &host,
                    "race",
                    "ops/t",
                    Actor::System,
                    now_ms()
                ),
                links::create_link(&state.links, &acme, req),
            );
            ban.expect("ban");
            match created {
                // Created: its copy must carry the ban, whichever committed first.
                Ok(_) => check(&state, &code, round, t.kind()).await,
                // Refused because the ban was seen first: nothing was stored.
                Err(e) => {
                    let problem: Value = e.problem();
                    assert_eq!(problem["status"], 422, "{}: {problem}", t.kind());
                    assert!(
                        origin_api::store::links::get(state.db(), "s.example", &code)
                            .await
                            .expect("read")
                            .is_none()
                    );
                }
            }
        }
        t.cleanup().await;
    }
}

/// A domain's code shape is fixed once it holds a link, and a domain that holds links
/// cannot be removed: a first link created while an operator changes or removes the
/// domain must lose, or the change must, or come after it. Never a link whose code no
/// longer matches its domain's case rule, nor a link on a domain that is gone.
#[tokio::test]
async fn a_first_link_and_a_change_of_its_domain_never_both_win() {
    for t in TestDb::all("race-domain").await {
        let state = crate::common::app_state(&t);
        let acme = Creator::owner("acme");
        let mut both = Vec::new();
        for round in 0..ROUNDS {
            let name = format!("d{round}.example");
            crate::common::register(&t.db, &name).await;
            let req: views::links::CreateLink = serde_json::from_value(json!({
                "domain": name, "target_url": "https://e.example/", "code": "MixedCase"
            }))
            .expect("body");
            let change: origin_api::views::domains::UpdateDomain =
                serde_json::from_value(json!({"alphabet": "base36", "case_insensitive": true}))
                    .expect("change");
            let removed = round % 2 == 1;
            let (created, changed) =
                tokio::join!(links::create_link(&state.links, &acme, req), async {
                    if removed {
                        origin_api::domains::delete_domain(&state.domains, &name, None)
                            .await
                            .map(|_| ())
                    } else {
                        origin_api::domains::update_domain(&state.domains, &name, 1, change)
                            .await
                            .map(|_| ())
                    }
                });
            // Both may succeed only in that order: a link created after the case rule
            // changed has its code folded.
            if let (Ok(link), Ok(())) = (&created, &changed) {
                if removed || link.code != "mixedcase" {
                    both.push(format!("{}/{}", link.domain, link.code));
                }
            }
        }
        assert!(both.is_empty(), "{}: both won on {both:?}", t.kind());
        t.cleanup().await;
    }
}
