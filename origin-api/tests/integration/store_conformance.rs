//! One suite, every database: what the store promises, checked against SQLite and
//! PostgreSQL alike.

use crate::common::TestDb;
use origin_api::model::{Domain, DomainAccess, DomainStatus};
use origin_api::store::{SegmentSource, StoreError};
use shared::{Alphabet, CodeSpace, RedirectStatus};
use std::collections::BTreeMap;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_segment_advances_on_two_domains_never_overlap_within_a_domain() {
    for t in TestDb::all("segments").await {
        let db = Arc::new(t.db.clone());
        // Sixteen advances of each of two domains' code sequences and of the link
        // sequence, all at once, with steps of different sizes.
        let names = [
            ("code:a.example", 60u64),
            ("code:b.example", 10_000),
            ("links", 10_000),
        ];
        let tasks: Vec<_> = (0..16)
            .flat_map(|_| names)
            .map(|(name, step)| {
                let db = db.clone();
                tokio::spawn(async move { (name, db.next_segment(name, step).await) })
            })
            .collect();
        let mut ranges: BTreeMap<&str, Vec<std::ops::Range<u64>>> = BTreeMap::new();
        for task in tasks {
            let (name, range) = task.await.expect("task");
            ranges
                .entry(name)
                .or_default()
                .push(range.expect("segment"));
        }
        for (name, step) in names {
            let ranges = ranges.get_mut(name).expect("ranges");
            ranges.sort_by_key(|r| r.start);
            // Each sequence from 0, dense, whatever the others did meanwhile.
            assert_eq!(ranges[0].start, 0, "{}: {name}", t.kind());
            for pair in ranges.windows(2) {
                assert_eq!(
                    pair[0].end,
                    pair[1].start,
                    "{}: gap or overlap in {name}: {ranges:?}",
                    t.kind()
                );
            }
            assert!(ranges.iter().all(|r| r.end - r.start == step), "{name}");
            assert_eq!(
                db.segment_ceiling(name).await.expect("ceiling"),
                16 * step,
                "{}: {name}",
                t.kind()
            );
        }

        // A domain's code segments are each in the outbox (the edge's activation window
        // is computed from them); link ids are internal and write none.
        for (name, _) in &names[..2] {
            let rows: Vec<(String, String, i64, String)> = t
                .db
                .read_all(
                    "SELECT lane, kind, version, payload FROM outbox WHERE route_key = $1 ORDER BY seq",
                    &[(*name).into()],
                )
                .await
                .expect("outbox");
            assert_eq!(rows.len(), 16, "{}: {name}", t.kind());
            let by_end: BTreeMap<i64, &(String, String, i64, String)> =
                rows.iter().map(|r| (r.2, r)).collect();
            for range in &ranges[name] {
                let row = by_end
                    .get(&(range.end as i64))
                    .expect("an outbox row per segment");
                assert_eq!((row.0.as_str(), row.1.as_str()), ("fast", "segment"));
                let payload: serde_json::Value =
                    serde_json::from_str(&row.3).expect("payload JSON");
                assert_eq!(payload["start"], range.start);
                assert_eq!(payload["end"], range.end);
            }
        }
        let link_rows: Vec<(i64,)> =
            t.db.read_all("SELECT seq FROM outbox WHERE route_key = 'links'", &[])
                .await
                .expect("outbox");
        assert!(link_rows.is_empty(), "{}", t.kind());
        t.cleanup().await;
    }
}

/// A link's top values per dimension, as `(dimension, value, visits)`.
async fn dims_of(db: &origin_api::db::Db, bots: bool) -> Vec<(String, String, i64)> {
    use origin_api::store::ClickStore;
    db.click_dims(7, 0, 3 * 3_600_000, bots, 10)
        .await
        .expect("dims")
        .into_iter()
        .map(|d| (d.dim, d.value, d.visits))
        .collect()
}

fn dims(rows: &[(&str, &str, i64)]) -> Vec<(String, String, i64)> {
    rows.iter()
        .map(|(d, v, n)| (d.to_string(), v.to_string(), *n))
        .collect()
}

#[tokio::test]
async fn an_upgrade_moves_each_link_hours_dimensions_into_its_row_and_loses_none() {
    use origin_api::store::{ClickDims, ClickStore, Increments};
    for t in TestDb::all_at("dims-upgrade", 7).await {
        // Two hours of one link as the release before wrote them: an hour row per link,
        // hour and bot flag, and a row per dimension value.
        t.db.write(
            "INSERT INTO click_hours (link_id, hour, bot, owner_id, visits, redirects) VALUES \
             (7, 3600000, FALSE, 'ana', 3, 2), (7, 3600000, TRUE, 'ana', 1, 1), \
             (7, 7200000, FALSE, 'ana', 2, 2)",
            &[],
        )
        .await
        .expect("hours");
        t.db.write(
            "INSERT INTO click_dims (link_id, dim, hour, bot, value, visits) VALUES \
             (7, 'country', 3600000, FALSE, 'DE', 2), (7, 'country', 3600000, FALSE, '', 1), \
             (7, 'referrer', 3600000, FALSE, 'news.example', 2), \
             (7, 'referrer', 3600000, FALSE, '', 1), (7, 'device', 3600000, FALSE, 'mobile', 3), \
             (7, 'status', 3600000, FALSE, '302', 2), (7, 'status', 3600000, FALSE, '404', 1), \
             (7, 'country', 3600000, TRUE, 'US', 1), (7, 'referrer', 3600000, TRUE, '', 1), \
             (7, 'device', 3600000, TRUE, 'other', 1), (7, 'status', 3600000, TRUE, '302', 1), \
             (7, 'country', 7200000, FALSE, 'DE', 2), (7, 'referrer', 7200000, FALSE, '', 2), \
             (7, 'device', 7200000, FALSE, 'desktop', 2), (7, 'status', 7200000, FALSE, '302', 2)",
            &[],
        )
        .await
        .expect("dims");
        t.db.migrate().await.expect("upgrade");
        assert_eq!(
            dims_of(&t.db, false).await,
            dims(&[
                ("country", "DE", 4),
                ("country", "", 1),
                ("device", "mobile", 3),
                ("device", "desktop", 2),
                ("referrer", "", 3),
                ("referrer", "news.example", 2),
                ("status", "302", 4),
                ("status", "404", 1),
            ]),
            "{}",
            t.kind()
        );
        assert_eq!(
            dims_of(&t.db, true).await,
            dims(&[
                ("country", "DE", 4),
                ("country", "", 1),
                ("country", "US", 1),
                ("device", "mobile", 3),
                ("device", "desktop", 2),
                ("device", "other", 1),
                ("referrer", "", 4),
                ("referrer", "news.example", 2),
                ("status", "302", 5),
                ("status", "404", 1),
            ]),
            "{}",
            t.kind()
        );
        // A visit counted after the upgrade adds to the moved counts.
        let mut inc = Increments::new(100);
        let visit = ClickDims {
            at: 3_600_005,
            bot: false,
            status: 302,
            country: "DE",
            referrer: "news.example",
            device: "mobile",
            variant: None,
            scanner: None,
        };
        inc.add(7, "ana", &visit, 1);
        t.db.add_rollups(&inc, 0).await.expect("add");
        let after = dims_of(&t.db, false).await;
        assert_eq!(after[0], ("country".into(), "DE".into(), 5), "{}", t.kind());
        assert!(
            after.contains(&("referrer".into(), "news.example".into(), 3)),
            "{}: {after:?}",
            t.kind()
        );
        t.cleanup().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_into_one_link_hour_lose_no_dimension_counts() {
    use origin_api::store::{ClickDims, ClickStore, Increments};
    for t in TestDb::all("dims-race").await {
        let db = Arc::new(t.db.clone());
        // 8 writers, 25 writes each, all into the same link-hour, each write with
        // values of its own and values shared with every other writer.
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let db = db.clone();
                tokio::spawn(async move {
                    for i in 0..25 {
                        let mut inc = Increments::new(100);
                        let country = format!("C{w}");
                        let referrer = format!("w{w}-{}.example", i % 3);
                        for (country, referrer) in [(country.as_str(), ""), ("DE", &referrer)] {
                            let visit = ClickDims {
                                at: 3_600_000 + i,
                                bot: false,
                                status: 302,
                                country,
                                referrer,
                                device: "mobile",
                                variant: None,
                                scanner: None,
                            };
                            inc.add(9, "ana", &visit, 2);
                        }
                        db.add_rollups(&inc, 0).await.expect("add");
                    }
                })
            })
            .collect();
        for w in writers {
            w.await.expect("writer");
        }
        let dims = db
            .click_dims(9, 0, 2 * 3_600_000, false, 100)
            .await
            .expect("dims");
        for dim in ["country", "referrer", "device", "status"] {
            let sum: i64 = dims.iter().filter(|d| d.dim == dim).map(|d| d.visits).sum();
            assert_eq!(sum, 800, "{}: {dim} lost counts: {dims:?}", t.kind());
        }
        let de = dims.iter().find(|d| d.dim == "country" && d.value == "DE");
        assert_eq!(de.map(|d| d.visits), Some(400), "{}", t.kind());
        let series = db
            .click_series(9, 0, 2 * 3_600_000, 3_600_000)
            .await
            .expect("series");
        assert_eq!(series.iter().map(|r| r.visits).sum::<i64>(), 800);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn the_registry_keeps_every_setting_and_owner_and_refuses_a_second_row() {
    for t in TestDb::all("domain-registry").await {
        let db = &t.db;
        // The registry alone, without the default domain the harness registers.
        assert!(origin_api::store::domains::delete(db, "s.example", None)
            .await
            .expect("delete"));
        let mut brand = Domain::new(
            "go.acme.example",
            DomainAccess::owners(["acme".into(), "acme-eu".into()]),
            1_000,
        );
        brand.settings.codes = CodeSpace::new(Alphabet::Base36, 6).expect("space");
        brand.settings.case_insensitive = true;
        brand.settings.forward_query = true;
        brand.settings.default_redirect = RedirectStatus::TemporaryRedirect;
        brand.settings.max_age_s = 300;
        brand.settings.status = DomainStatus::Disabled;
        brand.settings.not_found_url = Some("https://acme.example/404".into());
        brand.settings.root_url = Some("https://acme.example/".into());
        brand.settings.expired_url = Some("https://acme.example/expired".into());
        brand.allowed_target_hosts = Some(vec!["acme.example".into(), "acme.test".into()]);
        origin_api::store::domains::insert(db, &brand)
            .await
            .expect("register");
        let shared = Domain::new("s.example", DomainAccess::Shared, 2_000);
        origin_api::store::domains::insert(db, &shared)
            .await
            .expect("register");
        let other = Domain::new(
            "go.other.example",
            DomainAccess::owners(["other".into()]),
            3_000,
        );
        origin_api::store::domains::insert(db, &other)
            .await
            .expect("register");

        assert_eq!(
            origin_api::store::domains::get(db, "go.acme.example")
                .await
                .expect("read"),
            Some(brand.clone()),
            "{}",
            t.kind()
        );
        assert_eq!(
            origin_api::store::domains::get(db, "nowhere.example")
                .await
                .expect("read"),
            None,
            "{}",
            t.kind()
        );
        // The hot read of the redirect sees the same settings.
        assert_eq!(
            origin_api::store::domains::settings(db, "go.acme.example")
                .await
                .expect("settings"),
            brand.settings,
            "{}",
            t.kind()
        );

        // A second registration writes nothing, not even an owner.
        let mut again = Domain::new(
            "go.acme.example",
            DomainAccess::owners(["squatter".into()]),
            4_000,
        );
        again.settings.root_url = Some("https://squatter.example/".into());
        let err = origin_api::store::domains::insert(db, &again)
            .await
            .expect_err("registered already");
        assert!(
            matches!(err, StoreError::Registered),
            "{}: {err:?}",
            t.kind()
        );
        assert_eq!(
            origin_api::store::domains::get(db, "go.acme.example")
                .await
                .expect("read"),
            Some(brand.clone()),
            "{}",
            t.kind()
        );

        let names = |ds: Vec<Domain>| ds.into_iter().map(|d| d.domain).collect::<Vec<_>>();
        assert_eq!(
            names(origin_api::store::domains::list(db).await.expect("list")),
            ["go.acme.example", "go.other.example", "s.example"],
            "{}",
            t.kind()
        );
        // An owner's keys may use the shared domains and their own, and no one else's.
        for (owner, may) in [
            ("acme", vec!["go.acme.example", "s.example"]),
            ("acme-eu", vec!["go.acme.example", "s.example"]),
            ("other", vec!["go.other.example", "s.example"]),
            ("squatter", vec!["s.example"]),
        ] {
            assert_eq!(
                names(
                    origin_api::store::domains::for_owner(db, owner)
                        .await
                        .expect("list")
                ),
                may,
                "{}: {owner}",
                t.kind()
            );
        }
        t.cleanup().await;
    }
}
