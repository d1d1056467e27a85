//! The purge on every database available: links expired longer than the retention and
//! tombstones past their restore window become bare tombstones, a few at a time, whose
//! codes are never given out again; what the caches hold follows; old click rollups go
//! when a retention is set; the id gauges say what each sequence gave out against what
//! links hold.

use crate::common::{apis_with, Api};
use axum::http::StatusCode;
use origin_api::model::time::now_ms;
use origin_api::store::purge::Purgeable;
use serde_json::{json, Value};

const DAY_MS: i64 = 86_400_000;

fn rfc3339(ms: i64) -> String {
    origin_api::model::time::rfc3339(ms)
}

async fn made(api: &Api, key: &str, body: Value) {
    let r = api.create(key, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

async fn link(api: &Api, code: &str) -> origin_api::model::Link {
    origin_api::store::links::get(api.state.db(), "s.example", code)
        .await
        .expect("read")
        .expect("the row stays")
}

async fn live_links(api: &Api, key: &str) -> i64 {
    let me = api.call_as(key, "GET", "/v1/owners/me").await;
    assert_eq!(me.status, StatusCode::OK, "{}", me.text);
    me.body["links"]["used"]
        .as_i64()
        .unwrap_or_else(|| panic!("{}", me.text))
}

#[tokio::test]
async fn expired_links_and_old_tombstones_become_bare_codes_a_few_at_a_time() {
    for (api, t) in apis_with("retention", &["--purge-rate", "1"]).await {
        let key = api.key("acme", false).await;
        let now = now_ms();
        let soon = rfc3339(now + DAY_MS);
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/sale", "code": "old-sale", "expires_at": soon,
                   "title": "Sale", "tags": ["q1"], "access": "password", "password": "hunter2-hunter2",
                   "rules": [{"when": {"device": ["ios"]}, "target_url": "https://fr.shop.example/"}]}),
        )
        .await;
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/later", "code": "later-sale",
                   "expires_at": rfc3339(now + 2 * DAY_MS), "max_visits": 10}),
        )
        .await;
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/", "code": "evergreen"}),
        )
        .await;
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/gone", "code": "gone-page"}),
        )
        .await;
        let edit = api
            .patch_json(
                &key,
                "/v1/links/s.example/old-sale",
                Some(&format!("\"{}\"", link(&api, "old-sale").await.version)),
                json!({"title": "Big sale"}),
            )
            .await;
        assert_eq!(edit.status, StatusCode::OK, "{}", edit.text);
        let deleted = api
            .call_as(&key, "DELETE", "/v1/links/s.example/gone-page")
            .await;
        assert!(deleted.status.is_success(), "{}", deleted.text);
        // The origin holds `evergreen` and `later-sale` in its cache, answering 302.
        for code in ["later-sale", "evergreen"] {
            let visit = api.visit("GET", "s.example", &format!("/{code}")).await;
            assert_eq!(visit.status, StatusCode::FOUND, "{code}");
        }
        assert_eq!(live_links(&api, &key).await, 3);

        // 91 days after the expiries: one link a step (--purge-rate 1), oldest first.
        let later = now + 93 * DAY_MS;
        let step = api.state.purge.step(later).await.expect("step");
        assert_eq!((step.expired, step.tombstones), (1, 0), "{}", t.kind());
        let purged = link(&api, "old-sale").await;
        assert!(purged.is_purged(), "{purged:?}");
        assert_eq!(purged.target_url, "");
        assert_eq!(purged.title, None);
        assert!(purged.tags.is_empty());
        assert_eq!(
            purged.options,
            Default::default(),
            "rules and password gone"
        );
        assert_eq!(purged.expires_at, None);
        assert!(!link(&api, "later-sale").await.is_purged());

        // Its visit limit counted people: a carried count and one of today's.
        let id = link(&api, "later-sale").await.link_id;
        api.exec(&format!(
            "INSERT INTO visit_limit_people (link_id, day, person, n) VALUES ({id}, 0, 0, 4), ({id}, {}, 77, 1)",
            now / DAY_MS * DAY_MS
        ))
        .await;
        let step = api.state.purge.step(later).await.expect("step");
        assert_eq!((step.expired, step.tombstones), (1, 0));
        assert_eq!(
            api.count(&format!("visit_limit_people WHERE link_id = {id}"))
                .await,
            0,
            "{}: who visited a purged link goes with it",
            t.kind()
        );
        // The cache held `later-sale` as a live link; it is a tombstone now, at once.
        let visit = api.visit("GET", "s.example", "/later-sale").await;
        assert_eq!(visit.status, StatusCode::GONE, "{}", visit.text);
        let step = api.state.purge.step(later).await.expect("step");
        assert_eq!((step.expired, step.tombstones), (0, 1));
        assert!(link(&api, "gone-page").await.is_purged());
        let step = api.state.purge.step(later).await.expect("step");
        assert_eq!(step, Default::default(), "nothing left: evergreen stays");
        assert_eq!(
            link(&api, "evergreen").await.target_url,
            "https://shop.example/"
        );

        // The owner's quota got its two live links back; the tombstone gave its back
        // when it was deleted.
        assert_eq!(live_links(&api, &key).await, 1);
        // The codes are never given out again, and a purged tombstone cannot be restored.
        let again = api
            .create(
                &key,
                json!({"target_url": "https://other.example/", "code": "old-sale"}),
            )
            .await;
        assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text);
        let restore = api
            .call_as(&key, "POST", "/v1/links/s.example/gone-page/restore")
            .await;
        assert_eq!(restore.status, StatusCode::GONE, "{}", restore.text);
        // The history holds no target any more: one entry says what happened.
        let history = api
            .call_as(&key, "GET", "/v1/links/s.example/old-sale/history")
            .await;
        assert_eq!(history.status, StatusCode::OK, "{}", history.text);
        assert!(!history.text.contains("shop.example"), "{}", history.text);
        let entries = history.body["items"].as_array().expect("items");
        assert_eq!(entries.len(), 1, "{}", history.text);
        assert_eq!(entries[0]["action"], "deleted");
        assert_eq!(entries[0]["actor"], "system");
        assert!(
            entries[0]["note"]
                .as_str()
                .is_some_and(|n| n.starts_with("purged: expired on")),
            "{}",
            history.text
        );
        // The edge is told: the newest record of the code is a bare tombstone.
        let rows: Vec<(String,)> = api
            .state
            .db()
            .read_all(
                "SELECT payload FROM outbox WHERE route_key = 's.example/old-sale' \
                 ORDER BY version DESC LIMIT 1",
                &[],
            )
            .await
            .expect("outbox");
        let record: Value = serde_json::from_str(&rows[0].0).expect("json");
        assert_eq!(record["s"], "deleted", "{record}");
        assert_eq!(record["t"], "", "{record}");
    }
}

#[tokio::test]
async fn only_links_past_the_cutoff_are_purged_at_the_version_they_have_now() {
    for (api, _t) in apis_with("retention-race", &[]).await {
        let key = api.key("acme", false).await;
        let now = now_ms();
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/a", "code": "race-link",
                   "expires_at": rfc3339(now + DAY_MS)}),
        )
        .await;
        // Only purges of what is older than the cutoff: a day after the expiry, nothing.
        let early =
            origin_api::store::purge::purge_links(api.state.db(), Purgeable::Expired, now, 10, now)
                .await
                .expect("purge");
        assert!(early.is_empty());
        // A link changed since it was made is purged at its version now, its new
        // version past that (a change between the read and the write: the next test).
        api.exec("UPDATE links SET version = version + 1 WHERE code = 'race-link'")
            .await;
        let purged = origin_api::store::purge::purge_links(
            api.state.db(),
            Purgeable::Expired,
            now + 2 * DAY_MS,
            10,
            now + 2 * DAY_MS,
        )
        .await
        .expect("purge");
        assert_eq!(purged.len(), 1, "read again, at its new version");
        assert!(purged[0].is_purged());
    }
}

/// The purge reads its candidates on a reader and writes each at the version it read:
/// an owner who extends a link's expiry between the two keeps the link. Without the
/// version in the write, the link would lose its target though it is live.
#[tokio::test]
async fn a_link_extended_between_the_purges_read_and_its_write_is_left_alone() {
    for (api, t) in apis_with("retention-interleaved", &[]).await {
        let key = api.key("acme", false).await;
        let now = now_ms();
        made(
            &api,
            &key,
            json!({"target_url": "https://shop.example/a", "code": "extended",
                   "expires_at": rfc3339(now + DAY_MS)}),
        )
        .await;
        let later = now + 2 * DAY_MS;
        let read = origin_api::store::purge::purge_candidates(
            api.state.db(),
            Purgeable::Expired,
            later,
            10,
        )
        .await
        .expect("read");
        assert_eq!(read.len(), 1, "{}", t.kind());
        let r = api
            .patch_json(
                &key,
                "/v1/links/s.example/extended",
                Some("\"1\""),
                json!({"expires_at": rfc3339(now + 30 * DAY_MS)}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let written =
            origin_api::store::purge::purge_read(api.state.db(), Purgeable::Expired, &read, later)
                .await
                .expect("purge");
        assert!(written.is_empty(), "{}: {written:?}", t.kind());
        let link = api.read(&key, "s.example", "extended").await;
        assert_eq!(
            link.body["target_url"], "https://shop.example/a",
            "{}",
            link.text
        );
        assert_eq!(link.body["version"], 2);
    }
}

#[tokio::test]
async fn click_rollups_go_after_their_retention_and_are_kept_by_default() {
    for (api, t) in apis_with("retention-clicks", &["--click-rollup-retention", "30d"]).await {
        let now = now_ms();
        let hour = |days: i64| (now - days * DAY_MS) / 3_600_000 * 3_600_000;
        let day = |days: i64| (now - days * DAY_MS) / DAY_MS * DAY_MS;
        for (i, age) in [40, 35, 10].iter().enumerate() {
            api.exec(&format!(
                "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects) \
                 VALUES ({i}, {}, FALSE, 'acme', 5, 5)",
                hour(*age)
            ))
            .await;
            api.exec(&format!(
                "INSERT INTO click_days (owner_id, day, link_id, bot, visits, redirects) \
                 VALUES ('acme', {}, {i}, FALSE, 5, 5)",
                day(*age)
            ))
            .await;
        }
        let step = api.state.purge.step(now).await.expect("step");
        assert_eq!(step.click_rows, 4, "{}", t.kind());
        let left: Vec<(i64,)> = api
            .state
            .db()
            .read_all("SELECT link_id FROM click_hours ORDER BY link_id", &[])
            .await
            .expect("read");
        assert_eq!(left, vec![(2,)]);
        let left: Vec<(i64,)> = api
            .state
            .db()
            .read_all("SELECT link_id FROM click_days ORDER BY link_id", &[])
            .await
            .expect("read");
        assert_eq!(left, vec![(2,)]);
    }
    for (api, _t) in apis_with("retention-clicks-kept", &[]).await {
        api.exec(
            "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects) \
             VALUES (1, 0, FALSE, 'acme', 5, 5)",
        )
        .await;
        let step = api.state.purge.step(now_ms()).await.expect("step");
        assert_eq!(step.click_rows, 0);
    }
}

/// The value of the series `series ` (name and labels) in the metrics.
async fn metric(api: &Api, series: &str) -> f64 {
    let text = api.metrics().await;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn the_gauges_say_how_many_ids_were_given_out_and_how_full_each_code_space_is() {
    for (api, t) in apis_with("retention-gauges", &[]).await {
        let admin = api.key("ops", true).await;
        let r = api
            .post_json(
                &admin,
                "/v1/domains",
                &json!({"domain": "tiny.example", "shared": true, "alphabet": "base36", "code_length": 4}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let key = api.key("acme", false).await;
        for i in 0..3 {
            made(
                &api,
                &key,
                json!({"target_url": format!("https://e.example/{i}"), "domain": "tiny.example"}),
            )
            .await;
        }
        made(
            &api,
            &key,
            json!({"target_url": "https://e.example/", "code": "an-alias"}),
        )
        .await;
        api.state.purge.measure().await.expect("measure");

        let marks: Vec<(String, i64)> = api
            .state
            .db()
            .read_all("SELECT name, max_id FROM id_segments", &[])
            .await
            .expect("read");
        let mark = |name: &str| {
            marks
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, m)| *m)
                .expect(name)
        };
        let links = mark("links");
        assert_eq!(
            metric(&api, "hop_id_sequence_high_water{sequence=\"links\"}").await,
            links as f64,
            "{}",
            t.kind()
        );
        assert_eq!(
            metric(&api, "hop_id_sequence_used{sequence=\"links\"}").await,
            4.0
        );
        assert_eq!(
            metric(&api, "hop_id_sequence_used{sequence=\"code:tiny.example\"}").await,
            3.0
        );
        // The ratio is the domain's high-water mark over its 36^4 codes, as read then.
        let tiny = metric(
            &api,
            "hop_id_sequence_high_water{sequence=\"code:tiny.example\"}",
        )
        .await;
        assert!(
            tiny >= 3.0 && tiny <= mark("code:tiny.example") as f64,
            "{tiny}"
        );
        let ratio = metric(&api, "hop_code_space_used_ratio{domain=\"tiny.example\"}").await;
        let expected = tiny / 36f64.powi(4);
        assert!(
            (ratio - expected).abs() < 1e-12,
            "{ratio} against {expected}"
        );
        assert!(ratio > 0.0);
    }
}
