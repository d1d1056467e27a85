//! An owner's API keys, for its admins: the keys a script uses, each made here with an
//! optional limit to some of the owner's domains and its token shown once (the browser
//! itself never holds a key), and revoked here. Instance-wide admin keys are an
//! operator's, made and revoked with `hop-origin keys`.

use super::page_error::{failed, failure, not_found_for, refusal, PageError};
use super::render::{capitalized, message, refused_post, render, utc, Nav};
use super::session::Signed;
use crate::accounts::SignedIn;
use crate::api_keys::{ApiKeys, Grant, KeyError, KeysError, MAX_NAME_CHARS};
use crate::error::AppError;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use std::sync::Arc;

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
    keys: &ApiKeys,
    signed: &SignedIn,
    owner: &str,
    status: StatusCode,
    made: Option<(String, String)>,
    error: Option<String>,
) -> Response {
    let found = match keys.of_owner(&signed.principal(Some(owner)), owner).await {
        Ok(found) => found,
        Err(e) => return keys_refusal(signed, owner, e),
    };
    render(
        status,
        &KeysPage {
            nav: Nav::of(signed, Some(owner)),
            owner: owner.to_owned(),
            csrf: signed.csrf_token.clone(),
            keys: found
                .keys
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
            domains: found.domains.into_iter().map(|d| d.domain).collect(),
            made,
            error,
        },
    )
}

/// What the keys service refused, as a page: nothing of an owner the user is not a
/// member of, and what only its admins do said so.
fn keys_refusal(signed: &SignedIn, owner: &str, e: KeysError) -> Response {
    match e {
        KeysError::App(AppError::Forbidden(_)) => message(
            StatusCode::FORBIDDEN,
            Nav::of(signed, Some(owner)),
            "Admins only",
            "Only an admin of this owner manages its API keys.",
        ),
        KeysError::App(e) => refusal(signed, e),
        KeysError::NoLiveKey(_) => not_found_for(signed),
        KeysError::Key(e) => failure(&e.to_string()),
        e => failed(PageError::Refused {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            nav: Nav::of(signed, Some(owner)),
            text: e.to_string(),
            retry_after_s: None,
        }),
    }
}

/// `GET /o/{owner}/keys`.
pub(super) async fn list(
    Signed(signed): Signed,
    State(keys): State<Arc<ApiKeys>>,
    Path(owner): Path<String>,
) -> Response {
    page(&keys, &signed, &owner, StatusCode::OK, None, None).await
}

/// `POST /o/{owner}/keys`: a new key, its token shown once.
pub(super) async fn create(
    Signed(signed): Signed,
    State(keys): State<Arc<ApiKeys>>,
    Path(owner): Path<String>,
    Form(posted): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| super::render::posted(&posted, name);
    if !signed.csrf_matches(field("csrf")) {
        return refused_post();
    }
    let grant = Grant {
        admin: false,
        domains: posted
            .iter()
            .filter(|(k, _)| k == "domain")
            .map(|(_, v)| v.clone())
            .collect(),
    };
    let who = signed.principal(Some(&owner));
    match keys.issue(&who, &owner, field("name"), &grant).await {
        Ok(made) => {
            page(
                &keys,
                &signed,
                &owner,
                StatusCode::CREATED,
                Some((made.key.name, made.token)),
                None,
            )
            .await
        }
        Err(e @ (KeysError::App(_) | KeysError::Key(KeyError::Random(_)))) => {
            keys_refusal(&signed, &owner, e)
        }
        Err(e) => {
            let why = match &e {
                KeysError::BadName => format!(
                    "Name: 1 to {MAX_NAME_CHARS} characters, to tell the key's script later."
                ),
                KeysError::NotTheOwners { .. }
                | KeysError::NotRegistered(_)
                | KeysError::Domain(_) => {
                    format!("Domains: {e}.")
                }
                e => capitalized(&e.to_string()),
            };
            let status = StatusCode::UNPROCESSABLE_ENTITY;
            page(&keys, &signed, &owner, status, None, Some(why)).await
        }
    }
}

#[derive(serde::Deserialize)]
pub(super) struct RevokeForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /o/{owner}/keys/{key_id}/revoke`.
pub(super) async fn revoke(
    Signed(signed): Signed,
    State(keys): State<Arc<ApiKeys>>,
    Path((owner, key_id)): Path<(String, String)>,
    Form(form): Form<RevokeForm>,
) -> Response {
    if !signed.csrf_matches(&form.csrf) {
        return refused_post();
    }
    match keys.revoke(&signed.principal(Some(&owner)), &key_id).await {
        Ok(_) => {
            Redirect::to(&format!("/o/{}/keys", super::pages::path_segment(&owner))).into_response()
        }
        Err(KeysError::AdminKeyNeedsOperator) => {
            let why = Some("An admin key reaches every owner: only an operator revokes it (hop-origin keys revoke).".to_owned());
            page(&keys, &signed, &owner, StatusCode::FORBIDDEN, None, why).await
        }
        Err(e) => keys_refusal(&signed, &owner, e),
    }
}
