//! Requests to the origin's `/v1/edge/*`: the edge token, and a deadline past which the
//! caller stops waiting and decides without the origin.

use futures_util::future::{select, Either};
use std::time::Duration;
use worker::{Delay, Env, Fetch, Headers, Method, Request, RequestInit};

/// What the origin answered.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// `GET {ORIGIN_URL}{path}` with the edge token (and `If-None-Match` when given), within
/// `timeout`; why not, when there is no answer.
pub(crate) async fn get(
    env: &Env,
    path: &str,
    if_none_match: Option<&str>,
    timeout: Duration,
) -> Result<Answer, String> {
    let (Ok(origin), Ok(token)) = (env.var("ORIGIN_URL"), env.secret("ORIGIN_TOKEN")) else {
        return Err("ORIGIN_URL or ORIGIN_TOKEN is not set: cannot ask the origin".into());
    };
    let url = format!("{}{path}", origin.to_string().trim_end_matches('/'));
    let headers = Headers::new();
    let set = |name: &str, value: &str| {
        headers
            .set(name, value)
            .map_err(|e| format!("header {name}: {e}"))
    };
    set("authorization", &format!("Bearer {token}"))?;
    if let Some(etag) = if_none_match {
        set("if-none-match", etag)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let request = Request::new_with_init(&url, &init).map_err(|e| e.to_string())?;
    let fetcher = Fetch::Request(request);
    let fetch = fetcher.send();
    let mut response = match select(Box::pin(fetch), Box::pin(Delay::from(timeout))).await {
        Either::Left((Ok(response), _)) => response,
        Either::Left((Err(e), _)) => return Err(e.to_string()),
        Either::Right(_) => return Err(format!("no answer within {timeout:?}")),
    };
    let status = response.status_code();
    let body = match status {
        304 => String::new(),
        _ => response.text().await.map_err(|e| e.to_string())?,
    };
    Ok(Answer { status, body })
}
