//! API keys made in the dashboard: seen once, revoked, and ended with their maker's access.

use super::*;

#[tokio::test]
async fn an_admin_makes_a_key_seen_once_and_revokes_it() {
    for (api, t) in apis("dash-keys").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "eve@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ada@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/keys").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        let csrf = page.csrf();
        let made = admin
            .post(
                "/o/acme/keys",
                &[
                    ("csrf", &csrf),
                    ("name", "Newsletter sync"),
                    ("domain", "s.example"),
                ],
            )
            .await;
        assert_eq!(
            made.status,
            StatusCode::CREATED,
            "{} {}",
            t.kind(),
            made.html
        );
        let token = made
            .html
            .split("aria-label=\"The new key\" readonly value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("the token, shown once")
            .to_owned();
        assert!(token.starts_with("hop_"));
        assert!(made.html.contains("<td>s.example</td>"), "{}", made.html);
        let listed = api.call_as(&token, "GET", "/v1/links").await;
        assert_eq!(
            listed.status,
            StatusCode::OK,
            "the key works: {}",
            listed.text
        );
        let again = admin.get("/o/acme/keys").await;
        assert!(
            !again.html.contains(&token),
            "the token is never shown again"
        );
        let refused = admin
            .post(
                "/o/acme/keys",
                &[("csrf", &csrf), ("name", "x"), ("domain", "other.example")],
            )
            .await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        // Whether another domain is registered at all is none of an owner's business.
        assert!(
            refused
                .html
                .contains("other.example is not a domain of acme"),
            "{}",
            refused.html
        );
        assert!(!refused.html.contains("registered"), "{}", refused.html);

        let key_id = token.split('_').nth(1).expect("key id").to_owned();
        // Nobody else revokes it: an editor is told, another owner's admin finds nothing.
        let mut eve = Browser::new(&api);
        eve.sign_in("eve@acme.example", PASSWORD).await;
        assert_eq!(eve.get("/o/acme/keys").await.status, StatusCode::FORBIDDEN);
        let mut gil = Browser::new(&api);
        gil.sign_in("gil@globex.example", PASSWORD).await;
        let gil_csrf = gil.get("/o/globex/keys").await.csrf();
        let path = format!("/o/globex/keys/{key_id}/revoke");
        assert_eq!(
            gil.post(&path, &[("csrf", &gil_csrf)]).await.status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.call_as(&token, "GET", "/v1/links").await.status,
            StatusCode::OK
        );

        let path = format!("/o/acme/keys/{key_id}/revoke");
        let revoked = admin.post(&path, &[("csrf", &csrf)]).await;
        assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.html);
        assert_eq!(
            api.call_as(&token, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED
        );
        assert!(admin.get("/o/acme/keys").await.html.contains("revoked "));
        t.cleanup().await;
    }
}

/// A key made in the dashboard ends when its maker loses access: removed from the
/// owner, their keys for it stop (a departing member may have kept a copy), the other
/// admins' go on; disabled, every key they made stops.
#[tokio::test]
async fn keys_made_in_the_dashboard_end_when_their_maker_loses_access() {
    for (api, t) in apis_with("dash-key-makers", &["--key-hold", "0"]).await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "bo@acme.example", "acme", Role::Admin).await;
        let mut ada = Browser::new(&api);
        ada.sign_in("ada@acme.example", PASSWORD).await;
        let adas = dashboard_key(&mut ada, "acme", "Ada's sync").await;
        let mut bo = Browser::new(&api);
        bo.sign_in("bo@acme.example", PASSWORD).await;
        let bos = dashboard_key(&mut bo, "acme", "Bo's sync").await;
        for token in [&adas, &bos] {
            assert_eq!(
                api.call_as(token, "GET", "/v1/links").await.status,
                StatusCode::OK
            );
        }
        let accounts = api.state.accounts.clone();
        accounts
            .remove_member("acme", "ada@acme.example")
            .await
            .expect("removed");
        assert_eq!(
            api.call_as(&adas, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED,
            "{}",
            t.kind()
        );
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::OK
        );
        let bo_user = accounts.user("bo@acme.example").await.expect("bo");
        accounts.disable(&bo_user).await.expect("disabled");
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED
        );
        t.cleanup().await;
    }
}

/// The keys of a member removed on the members page stop at once in this origin, though
/// it holds verified keys (`--key-hold`, 10 s by default) so they need no read: the
/// removal tells the holder, not only the database.
#[tokio::test]
async fn a_removed_members_keys_stop_at_once_though_the_origin_holds_them() {
    for (api, t) in apis("dash-key-held").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "bo@acme.example", "acme", Role::Admin).await;
        let mut bo = Browser::new(&api);
        bo.sign_in("bo@acme.example", PASSWORD).await;
        let bos = dashboard_key(&mut bo, "acme", "Bo's sync").await;
        // Verified once, so held.
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::OK
        );
        let mut ada = Browser::new(&api);
        ada.sign_in("ada@acme.example", PASSWORD).await;
        let csrf = ada.get("/o/acme/members").await.csrf();
        let removed = ada
            .set_role("acme", &csrf, "bo@acme.example", "remove")
            .await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER, "{}", removed.html);
        assert_eq!(
            api.call_as(&bos, "GET", "/v1/links").await.status,
            StatusCode::UNAUTHORIZED,
            "{}",
            t.kind()
        );
        t.cleanup().await;
    }
}
