//! Invitations and roles: who joins an owner, and an owner never left without an admin.

use super::*;

#[tokio::test]
async fn an_admin_invites_a_new_member_who_joins_once() {
    for (api, t) in apis("dash-invite-new").await {
        member(&api, "ana@acme.example", "acme", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ana@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/members").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        let csrf = page.csrf();
        let made = admin
            .post(
                "/o/acme/invitations",
                &[
                    ("csrf", &csrf),
                    ("email", "Bob@Acme.example"),
                    ("role", "editor"),
                ],
            )
            .await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.html);
        let link = invitation_path(&made);
        assert!(
            made.html.contains("https://dash.example/invite/"),
            "{}",
            made.html
        );

        let mut bob = Browser::new(&api);
        let form = bob.get(&link).await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.html);
        assert!(form.html.contains("Choose a password"));
        let short = bob
            .post(&link, &[("csrf", &form.csrf()), ("password", "short")])
            .await;
        assert_eq!(
            short.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            short.html
        );
        let joined = bob
            .post(
                &link,
                &[
                    ("csrf", &short.csrf()),
                    ("password", "bob's long passphrase"),
                ],
            )
            .await;
        assert_eq!(
            joined.status,
            StatusCode::SEE_OTHER,
            "{} {}",
            t.kind(),
            joined.html
        );
        assert_eq!(joined.location(), "/o/acme/links");
        assert_eq!(
            bob.get("/o/acme/links/new").await.status,
            StatusCode::OK,
            "an editor"
        );

        // Once: the link joins nobody else.
        let mut eve = Browser::new(&api);
        assert_eq!(eve.get(&link).await.status, StatusCode::GONE);
        let members = admin.get("/o/acme/members").await;
        assert!(
            members.html.contains("bob@acme.example"),
            "{}",
            members.html
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_existing_user_joins_with_their_own_password_and_links_expire() {
    for (api, t) in apis("dash-invite-existing").await {
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let accounts = api.state.accounts.clone();
        let new = accounts
            .invite("acme", Role::Viewer, "gil@globex.example", "cli")
            .await
            .expect("invite");
        let link = format!("/invite/{}", new.token);
        let mut gil = Browser::new(&api);
        let form = gil.get(&link).await;
        assert!(
            form.html.contains("The password of your account"),
            "{}",
            form.html
        );
        let wrong = gil
            .post(
                &link,
                &[("csrf", &form.csrf()), ("password", "not it at all")],
            )
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED, "{}", t.kind());
        let joined = gil
            .post(&link, &[("csrf", &wrong.csrf()), ("password", PASSWORD)])
            .await;
        assert_eq!(joined.status, StatusCode::SEE_OTHER, "{}", joined.html);
        let links = gil.get("/o/acme/links").await;
        assert_eq!(links.status, StatusCode::OK);
        assert!(
            links.html.contains("href=\"/o/globex\""),
            "both owners in the bar"
        );
        assert_eq!(
            gil.get("/o/acme/links/new").await.status,
            StatusCode::NOT_FOUND,
            "a viewer"
        );

        let late = accounts
            .invite("acme", Role::Admin, "gil@globex.example", "cli")
            .await
            .expect("invite");
        api.exec("UPDATE invitations SET expires_at = 0 WHERE used_at IS NULL")
            .await;
        assert_eq!(
            gil.get(&format!("/invite/{}", late.token)).await.status,
            StatusCode::GONE
        );
        t.cleanup().await;
    }
}

#[tokio::test]
async fn only_an_owners_admins_see_and_invite_its_members() {
    for (api, t) in apis("dash-invite-who").await {
        member(&api, "ed@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut editor = Browser::new(&api);
        editor.sign_in("ed@acme.example", PASSWORD).await;
        assert_eq!(
            editor.get("/o/acme/members").await.status,
            StatusCode::FORBIDDEN
        );
        let csrf = editor.get("/account").await.csrf();
        let refused = editor
            .post(
                "/o/acme/invitations",
                &[
                    ("csrf", &csrf),
                    ("email", "x@acme.example"),
                    ("role", "admin"),
                ],
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", t.kind());
        let mut outsider = Browser::new(&api);
        outsider.sign_in("gil@globex.example", PASSWORD).await;
        assert_eq!(
            outsider.get("/o/acme/members").await.status,
            StatusCode::NOT_FOUND
        );
        let rows: Vec<(i64,)> = api.rows("SELECT COUNT(*) FROM invitations").await;
        assert_eq!(rows, [(0,)]);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn an_admin_changes_roles_and_never_leaves_the_owner_without_an_admin() {
    for (api, t) in apis("dash-roles").await {
        member(&api, "ada@acme.example", "acme", Role::Admin).await;
        member(&api, "vic@acme.example", "acme", Role::Viewer).await;
        member(&api, "eve@acme.example", "acme", Role::Editor).await;
        member(&api, "gil@globex.example", "globex", Role::Admin).await;
        let mut admin = Browser::new(&api);
        admin.sign_in("ada@acme.example", PASSWORD).await;
        let page = admin.get("/o/acme/members").await;
        let csrf = page.csrf();
        let promoted = admin
            .set_role("acme", &csrf, "vic@acme.example", "editor")
            .await;
        assert_eq!(
            promoted.status,
            StatusCode::SEE_OTHER,
            "{} {}",
            t.kind(),
            promoted.html
        );
        // The member's next page already has the new role: roles are read per request.
        let mut vic = Browser::new(&api);
        vic.sign_in("vic@acme.example", PASSWORD).await;
        assert_eq!(vic.get("/o/acme/links/new").await.status, StatusCode::OK);
        let removed = admin
            .set_role("acme", &csrf, "vic@acme.example", "remove")
            .await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert_eq!(vic.get("/o/acme/links").await.status, StatusCode::NOT_FOUND);

        // The last admin can neither leave nor step down.
        for role in ["remove", "editor"] {
            let refused = admin
                .set_role("acme", &csrf, "ada@acme.example", role)
                .await;
            assert_eq!(
                refused.status,
                StatusCode::CONFLICT,
                "{role}: {}",
                refused.html
            );
            assert!(refused.html.contains("at least one admin"));
        }
        // With a second admin, the first may step down.
        let second = admin
            .set_role("acme", &csrf, "eve@acme.example", "admin")
            .await;
        assert_eq!(second.status, StatusCode::SEE_OTHER);
        let down = admin
            .set_role("acme", &csrf, "ada@acme.example", "viewer")
            .await;
        assert_eq!(down.status, StatusCode::SEE_OTHER);
        assert_eq!(
            admin.get("/o/acme/members").await.status,
            StatusCode::FORBIDDEN
        );

        // Another owner's admin reaches nothing of acme's, and nobody outside it.
        let mut gil = Browser::new(&api);
        gil.sign_in("gil@globex.example", PASSWORD).await;
        let csrf = gil.get("/o/globex/members").await.csrf();
        let foreign = gil
            .set_role("acme", &csrf, "eve@acme.example", "viewer")
            .await;
        assert_eq!(foreign.status, StatusCode::NOT_FOUND);
        let outsider = gil
            .set_role("globex", &csrf, "eve@acme.example", "viewer")
            .await;
        assert_eq!(outsider.status, StatusCode::NOT_FOUND, "{}", outsider.html);
        t.cleanup().await;
    }
}

/// An account an owner's invitation made had its password chosen by whoever opened the
/// link (that owner's admin, say, for anyone's email): the operator's grant of another
/// owner's rights to it is refused, naming where it came from, unless the operator says
/// they know who holds it. Within the inviting owner, and for accounts an operator
/// made, grants go on as before.
#[tokio::test]
async fn an_account_another_owners_invitation_made_is_not_granted_by_a_slip() {
    for (api, t) in apis("dash-squatting").await {
        let accounts = api.state.accounts.clone();
        let admin = member(&api, "mallory@acme.example", "acme", Role::Admin).await;
        // Acme's admin invites the CFO of globex and opens the link himself.
        let invited = accounts
            .invite("acme", Role::Viewer, "cfo@globex.example", &admin.user_id)
            .await
            .expect("invited");
        accounts
            .accept(&invited.token, "mallorys own passphrase", None)
            .await
            .expect("accepted");
        let cfo = accounts.user("cfo@globex.example").await.expect("made");
        let refused = accounts
            .grant(&cfo, "globex", Role::Admin, false)
            .await
            .expect_err("refused");
        let said = refused.to_string();
        assert!(
            said.contains("invitation of acme") && said.contains(&admin.user_id),
            "{said}"
        );
        assert!(
            api.count("memberships WHERE owner_id = 'globex'").await == 0,
            "{}",
            t.kind()
        );
        // Its own owner may change its role; an operator who knows may grant it.
        accounts
            .grant(&cfo, "acme", Role::Editor, false)
            .await
            .expect("the inviting owner");
        accounts
            .grant(&cfo, "globex", Role::Admin, true)
            .await
            .expect("trusted");
        // An account an operator made carries no such record.
        let made = accounts
            .create_user("ops@globex.example", PASSWORD, false)
            .await
            .expect("made");
        accounts
            .grant(&made, "globex", Role::Admin, false)
            .await
            .expect("an operator's account");
        t.cleanup().await;
    }
}
