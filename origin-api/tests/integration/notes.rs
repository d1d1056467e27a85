//! A team's note on a link (the option issue 55 added through the table of a link's
//! fields): kept, changed and cleared through the API, told by the history and to
//! webhooks, carried by export and import, and never sent to the edge nor shown to a
//! visitor.

use crate::common::{apis, Api, Reply};
use axum::http::StatusCode;
use serde_json::{json, Value};

const LINK: &str = "/v1/links/s.example/spring";

/// A change of the link at the version it is at.
async fn patch(api: &Api, key: &str, body: Value) -> Reply {
    let version = api.read(key, "s.example", "spring").await.body["version"].clone();
    api.patch_json(key, LINK, Some(&format!("\"{version}\"")), body)
        .await
}

#[tokio::test]
async fn a_note_is_kept_for_the_team_told_by_history_and_webhooks_and_never_published() {
    for (api, t) in apis("team-note").await {
        let key = api.key("acme", false).await;
        // An endpoint, so that events are kept (none is written for nobody).
        let hook = api
            .post_json(
                &key,
                "/v1/webhooks",
                &json!({"url": "https://hooks.example.com/hop"}),
            )
            .await;
        assert_eq!(hook.status, StatusCode::CREATED, "{}", hook.text);

        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/spring", "code": "spring",
                       "note": "  Approved by legal\r\nuntil June, ask Ana  "}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        // Trimmed, a browser's CR LF kept as a line break.
        let note = "Approved by legal\nuntil June, ask Ana";
        assert_eq!(made.body["note"], note, "{}", t.kind());
        assert_eq!(
            api.read(&key, "s.example", "spring").await.body["note"],
            note
        );

        let changed = patch(&api, &key, json!({"note": "Legal: approved for Q3"})).await;
        assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
        assert_eq!(changed.body["note"], "Legal: approved for Q3");
        // Changing something else leaves it alone.
        let other = patch(&api, &key, json!({"title": "Spring"})).await;
        assert_eq!(
            other.body["note"], "Legal: approved for Q3",
            "{}",
            other.text
        );

        let history = api.call_as(&key, "GET", &format!("{LINK}/history")).await;
        assert_eq!(history.status, StatusCode::OK, "{}", history.text);
        let entries = history.body["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let edit = entries
            .iter()
            .find(|e| e["version"] == 2)
            .unwrap_or_else(|| panic!("no v2 in {}", history.text));
        assert_eq!(
            edit["changes"],
            json!({"note": {"from": note, "to": "Legal: approved for Q3"}}),
            "{edit}"
        );
        assert_eq!(edit["fields"]["note"], "Legal: approved for Q3", "{edit}");

        // The owner's own systems are told; the edge never is.
        let events: Vec<(String, String)> = api
            .rows("SELECT type, data FROM webhook_events ORDER BY seq")
            .await;
        let told: Vec<Value> = events
            .iter()
            .map(|(_, data)| serde_json::from_str(data).expect("event data"))
            .collect();
        assert_eq!(told.len(), 3, "{events:?}");
        assert_eq!(told[0]["note"], note, "{events:?}");
        assert_eq!(told[1]["note"], "Legal: approved for Q3", "{events:?}");
        let published: Vec<(String,)> = api.rows("SELECT payload FROM outbox").await;
        assert!(!published.is_empty());
        for (payload,) in &published {
            assert!(
                !payload.contains("legal") && !payload.contains("Legal"),
                "a note reached the edge's record: {payload}"
            );
        }

        // Emptied, it is gone; its history says so.
        let cleared = patch(&api, &key, json!({"note": ""})).await;
        assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.text);
        assert_eq!(cleared.body["note"], Value::Null, "{}", cleared.text);
        let again = patch(&api, &key, json!({"note": "back"})).await;
        assert_eq!(again.body["note"], "back");
        let nulled = patch(&api, &key, json!({"note": null})).await;
        assert_eq!(nulled.body["note"], Value::Null, "{}", nulled.text);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_note_too_long_or_hiding_characters_is_refused_and_changes_nothing() {
    for (api, t) in apis("team-note-refused").await {
        let key = api.key("acme", false).await;
        let made = api
            .create(
                &key,
                json!({"target_url": "https://shop.example/spring", "code": "spring", "note": "kept"}),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
        for (bad, why) in [
            ("x".repeat(1001), "at most 1000"),
            ("bell \u{7}".to_owned(), "control"),
            ("swap \u{202E}txt.exe".to_owned(), "bidirectional"),
        ] {
            let r = patch(&api, &key, json!({"note": bad})).await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{}: {}",
                t.kind(),
                r.text
            );
            assert!(
                r.text.contains("note") && r.text.contains(why),
                "{}",
                r.text
            );
            let r = api
                .create(
                    &key,
                    json!({"target_url": "https://shop.example/other", "note": bad}),
                )
                .await;
            assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        }
        // A thousand characters, and tabs and line breaks, are a note.
        for fine in ["z".repeat(1000), "a\tb\nc".to_owned()] {
            let r = patch(&api, &key, json!({"note": fine})).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        }
        let read = api.read(&key, "s.example", "spring").await;
        assert_eq!(read.body["note"], "a\tb\nc");
        assert_eq!(read.body["version"], 3, "each refusal changed nothing");
        t.cleanup().await;
    }
}
