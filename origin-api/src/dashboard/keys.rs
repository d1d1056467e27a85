//! An owner's API keys, for its admins: the keys a script uses, each made here with an
//! optional limit to some of the owner's domains and its token shown once (the browser
//! itself never holds a key), and revoked here. Instance-wide admin keys are an
//! operator's, made and revoked with `hop-origin keys`.

use super::render::{capitalized, failure, message, not_found_for, refused_post, render, utc, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::api_keys::{issue, Grant};
use crate::links::Links;
use crate::model::time::now_ms;
use crate::model::Role;
use crate::store;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use std::sync::Arc;

/// The longest name a key is given.
const MAX_NAME_CHARS: usize = 100;

#[derive(Template)]
#[template(path = "dashboard/keys.html")]
struct KeysPage {
    nav: Option<Nav>,
    owner: String,
    csrf: String,
    keys: Vec<KeyRow>,
    domains: Vec<String>,
    /// The token just made, shown this once.
    made: Option<(String, String)>,
    error: Option<String>,
}

struct KeyRow {
    key_id: String,
    name: String,
    /// "every domain of the owner", or the list.
    reach: String,
    admin: bool,
    created: String,
    revoked: Option<String>,
}

async fn page(
    links: &Links,
    signed: &SignedIn,
    owner: &str,
    status: StatusCode,
    made: Option<(String, String)>,
    error: Option<String>,
) -> Response {
    let found = tokio::try_join!(
        store::api_keys::of_owner(&links.db, owner),
        store::domains::for_owner(&links.db, owner)
    );
    let (keys, domains) = match found {
        Ok(found) => found,
        Err(e) => return failure(&e.to_string()),
    };
    render(
        status,
        &KeysPage {
            nav: Nav::of(signed, Some(owner)),
            owner: owner.to_owned(),
            csrf: signed.csrf_token.clone(),
            keys: keys
                .iter()
                .map(|k| KeyRow {
                    key_id: k.key_id.clone(),
                    name: k.name.clone(),
                    reach: k
                        .domains()
                        .map_or("every domain of the owner".into(), |d| d.join(", ")),
                    admin: k.is_admin(),
                    created: utc(k.created_at),
                    revoked: k.revoked_at.map(utc),
                })
                .collect(),
            domains: domains.into_iter().map(|d| d.domain).collect(),
            made,
            error,
        },
    )
}

/// Only the owner's admins reach these pages; anyone else finds nothing or is told.
fn admins_only(signed: &SignedIn, owner: &str) -> Option<Response> {
    match signed.allows(owner, Role::Admin) {
        None => Some(not_found_for(signed)),
        Some(false) => Some(message(
            StatusCode::FORBIDDEN,
            Nav::of(signed, Some(owner)),
            "Admins only",
            "Only an admin of this owner manages its API keys.",
        )),
        Some(true) => None,
    }
}

/// `GET /o/{owner}/keys`.
pub(super) async fn list(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
) -> Response {
    if let Some(refused) = admins_only(&signed, &owner) {
        return refused;
    }
    page(&links, &signed, &owner, StatusCode::OK, None, None).await
}

/// `POST /o/{owner}/keys`: a new key, its token shown once.
pub(super) async fn create(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    Path(owner): Path<String>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| super::render::posted(&posted, name);
    if !signed.csrf_matches(field("csrf")) {
        return refused_post();
    }
    if let Some(refused) = admins_only(&signed, &owner) {
        return refused;
    }
    let refuse = |why: &str| {
        let why = Some(why.to_owned());
        page(
            &links,
            &signed,
            &owner,
            StatusCode::UNPROCESSABLE_ENTITY,
            None,
            why,
        )
    };
    let name = field("name").trim();
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return refuse(&format!(
            "Name: 1 to {MAX_NAME_CHARS} characters, to tell the key's script later."
        ))
        .await;
    }
    let chosen: Vec<String> = posted
        .iter()
        .filter(|(k, _)| k == "domain")
        .map(|(_, v)| v.clone())
        .collect();
    // Only the owner's own domains: a key reaches nothing its owner may not.
    let theirs = match store::domains::for_owner(&links.db, &owner).await {
        Ok(found) => found,
        Err(e) => return failure(&e.to_string()),
    };
    if let Some(other) = chosen
        .iter()
        .find(|d| !theirs.iter().any(|t| t.domain == **d))
    {
        return refuse(&format!("Domains: {other} is not a domain of {owner}.")).await;
    }
    let grant = Grant {
        admin: false,
        domains: chosen,
    };
    let (key, token) = match issue(&owner, name, &grant, now_ms()) {
        Ok(made) => made,
        Err(e) => return refuse(&capitalized(&e.to_string())).await,
    };
    if let Err(e) = store::api_keys::insert_made_by(&links.db, &key, &signed.user.user_id).await {
        return failure(&e.to_string());
    }
    tracing::info!(owner = %owner, key_id = %key.key_id, by = %signed.user.user_id, "API key made in the dashboard");
    page(
        &links,
        &signed,
        &owner,
        StatusCode::CREATED,
        Some((key.name, token)),
        None,
    )
    .await
}

#[derive(serde::Deserialize)]
pub(super) struct RevokeForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /o/{owner}/keys/{key_id}/revoke`.
pub(super) async fn revoke(
    Signed(signed): Signed,
    State(links): State<Arc<Links>>,
    State(auth): State<Arc<crate::auth::Auth>>,
    Path((owner, key_id)): Path<(String, String)>,
    Form(form): Form<RevokeForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    if let Some(refused) = admins_only(&signed, &owner) {
        return refused;
    }
    let key = match store::api_keys::find(&links.db, &key_id).await {
        Ok(Some(key)) if key.owner_id == owner => key,
        Ok(_) => return not_found_for(&signed),
        Err(e) => return failure(&e.to_string()),
    };
    if key.is_admin() && !signed.user.operator {
        let why = Some("An admin key reaches every owner: only an operator revokes it (hop-origin keys revoke).".to_owned());
        return page(&links, &signed, &owner, StatusCode::FORBIDDEN, None, why).await;
    }
    match store::api_keys::revoke(&links.db, &key.key_id, now_ms()).await {
        Ok(_) => {
            auth.guard.forget(&key.key_id);
            tracing::info!(owner = %owner, key_id = %key.key_id, by = %signed.user.user_id, "API key revoked in the dashboard");
            Redirect::to(&format!("/o/{}/keys", super::pages::path_segment(&owner))).into_response()
        }
        Err(e) => failure(&e.to_string()),
    }
}
