//! Rotating the permutation key (docs/deploy.md#rotating-the-permutation-key): every
//! process decodes with every key of its ring, but only the processes that hold a key
//! can tell its codes from guesses. So a new key is first given to every process without
//! making codes (`--code-key-version` names the old one), and only then made current.

use crate::common::{apis, app_state_with, Api, TEST_KEYS};
use axum::http::StatusCode;
use serde_json::json;

const RING: &str = "1:000102030405060708090a0b0c0d0e0f,2:f0e0d0c0b0a090807060504030201000";

async fn generated(api: &Api, token: &str, n: u32) -> String {
    let made = api
        .create(
            token,
            json!({ "target_url": format!("https://e.example/{n}") }),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    made.body["code"].as_str().expect("code").to_owned()
}

async fn status(api: &Api, code: &str) -> StatusCode {
    api.visit("GET", "s.example", &format!("/{code}"))
        .await
        .status
}

#[tokio::test]
async fn a_new_key_is_held_everywhere_before_it_makes_codes_and_no_code_is_lost() {
    for (old, t) in apis("key-rotation").await {
        let kind = t.kind();
        let token = old.key("ana", false).await;
        let before = generated(&old, &token, 0).await;
        let with = |flags: &[&str]| Api {
            state: app_state_with(&t, flags),
        };

        // An origin with the old ring only, that has not read the database's ceiling
        // yet (a ceiling read in the last 100 ms refuses other origins' newest codes
        // whatever their key: `ceiling::RECHECK`).
        let old_ring = || with(&["--permutation-keys", TEST_KEYS]);

        // The pitfall: an origin that makes codes with a key another origin lacks. The
        // other cannot tell them from guesses and answers 404 without a read.
        let hasty = with(&["--permutation-keys", RING]);
        let too_soon = generated(&hasty, &token, 1).await;
        assert_eq!(
            status(&old_ring(), &too_soon).await,
            StatusCode::NOT_FOUND,
            "{kind}"
        );

        // Step 1: every process gets the ring, still making codes with version 1.
        let holding = with(&["--permutation-keys", RING, "--code-key-version", "1"]);
        let during = generated(&holding, &token, 2).await;
        assert_eq!(
            status(&old_ring(), &during).await,
            StatusCode::FOUND,
            "{kind}: an old-ring origin"
        );
        // Step 2: version 2 makes codes; every process already decodes it.
        let after_origin = with(&["--permutation-keys", RING]);
        let after = generated(&after_origin, &token, 3).await;
        for (who, api) in [("holding", &holding), ("rotated", &after_origin)] {
            for code in [&before, &during, &after, &too_soon] {
                assert_eq!(
                    status(api, code).await,
                    StatusCode::FOUND,
                    "{kind}: {who} {code}"
                );
            }
        }
        // A version the ring lacks is refused at start, not at the first create.
        let bad = origin_api::config::load(
            ["hop-origin", "--code-key-version", "3", "migrate"]
                .map(std::ffi::OsString::from)
                .into(),
            |name| (name == "HOP_PERMUTATION_KEYS").then(|| RING.to_owned()),
        );
        let err = bad.map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("--code-key-version 3"), "{err}");
        t.cleanup().await;
    }
}
