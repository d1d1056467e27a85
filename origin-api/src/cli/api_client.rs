//! A client of the origin's own REST API, for the `import` and `export` commands.
//!
//! It retries what may succeed later — a refused connection, a timeout, a 5xx, a 429
//! (after its `Retry-After`) — with exponential backoff and jitter for as long as the
//! caller allows. Retrying a create is safe only because every create it sends carries an
//! `Idempotency-Key`; anything else the origin refuses is reported as it said it.

use crate::views::imports::{ImportReport, ImportRequest};
use crate::views::links::{BulkResponse, LinkView, Page};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{RequestBuilder, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use std::time::{Duration, Instant};

/// How long one request may take; a 10,000-link bulk call on a busy origin is the longest.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The first backoff; it doubles per attempt up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest wait between two attempts of our own choosing.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The longest `Retry-After` honoured as given; longer ones are cut to this.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Why a call failed for good.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{url} did not answer successfully for {waited:?} (last: {last}); is the origin running? Re-run the same command to resume")]
    Unreachable {
        url: String,
        waited: Duration,
        last: String,
    },
    #[error("the origin refused the request ({status}): {detail}")]
    Refused { status: StatusCode, detail: String },
    #[error("the origin answered something this client does not understand: {0}")]
    BadResponse(String),
    #[error("cannot build an HTTP client: {0}")]
    Setup(String),
}

/// One origin, one API key.
#[derive(Debug, Clone)]
pub struct ApiClient {
    http: reqwest::Client,
    base: url::Url,
    /// The API key, held as a secret: `Debug` shows it redacted.
    key: SecretString,
    retry_for: Duration,
}

impl ApiClient {
    /// A client of the origin at `base` (e.g. `http://127.0.0.1:3000`) that keeps
    /// retrying a failing call for up to `retry_for`.
    pub fn new(base: url::Url, key: &str, retry_for: Duration) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .user_agent(concat!("hop-origin/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Setup(e.to_string()))?;
        Ok(ApiClient {
            http,
            base,
            key: SecretString::from(key),
            retry_for,
        })
    }

    fn url(&self, path: &str) -> Result<url::Url, ClientError> {
        self.base
            .join(path)
            .map_err(|e| ClientError::Setup(format!("{path}: {e}")))
    }

    /// `POST /v1/links/bulk` with `body` (JSON) under `idempotency_key`.
    pub async fn create_bulk(
        &self,
        body: String,
        idempotency_key: &str,
    ) -> Result<BulkResponse, ClientError> {
        let url = self.url("/v1/links/bulk")?;
        let response = self
            .send(|| {
                self.http
                    .post(url.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .header("idempotency-key", idempotency_key)
                    .body(body.clone())
            })
            .await?;
        response
            .json()
            .await
            .map_err(|e| ClientError::BadResponse(e.to_string()))
    }

    /// `POST /v1/imports`: safe to send again, since an import finds the links it made
    /// by their codes.
    pub async fn import(&self, body: &ImportRequest) -> Result<ImportReport, ClientError> {
        let url = self.url("/v1/imports")?;
        let body = serde_json::to_string(body).map_err(|e| ClientError::Setup(e.to_string()))?;
        let response = self
            .send(|| {
                self.http
                    .post(url.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?;
        response
            .json()
            .await
            .map_err(|e| ClientError::BadResponse(e.to_string()))
    }

    /// One page of `GET /v1/links` with `query`.
    pub async fn list(&self, query: &[(&str, &str)]) -> Result<Page<LinkView>, ClientError> {
        let url = self.url("/v1/links")?;
        let response = self
            .send(|| self.http.get(url.clone()).query(query))
            .await?;
        response
            .json()
            .await
            .map_err(|e| ClientError::BadResponse(e.to_string()))
    }

    /// Sends the request `build` makes until it succeeds, fails for good, or the retry
    /// budget is spent.
    async fn send(
        &self,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let request = build().header(
                AUTHORIZATION,
                format!("Bearer {}", self.key.expose_secret()),
            );
            let (last, wait) = match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let retry_after = response
                        .headers()
                        .get(RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let detail = problem_detail(response).await;
                    if !retryable(status) {
                        return Err(ClientError::Refused { status, detail });
                    }
                    (format!("{status}: {detail}"), retry_after)
                }
                Err(e) => (describe(&e), None),
            };
            let wait = wait
                .unwrap_or_else(|| crate::retry::jittered(backoff))
                .min(MAX_RETRY_AFTER);
            if started.elapsed() + wait > self.retry_for {
                return Err(ClientError::Unreachable {
                    url: self.base.to_string(),
                    waited: started.elapsed(),
                    last,
                });
            }
            tracing::warn!("{last}; retrying in {wait:?}");
            tokio::time::sleep(wait).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// Statuses that may turn into a success if asked again.
fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// The `detail` of a problem document, or the body as text.
async fn problem_detail(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(str::to_owned))
        .unwrap_or(text)
}

/// A transport error with its cause chain (reqwest's own message says little).
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_client_s_debug_never_shows_its_key() {
        let key = "hop_0123456789abcdef_00112233445566778899aabbccddeeff";
        let base = url::Url::parse("http://127.0.0.1:3000").unwrap();
        let client = ApiClient::new(base, key, Duration::from_secs(1)).unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains(key), "{shown}");
    }

    use super::*;

    #[test]
    fn only_transient_failures_are_retried() {
        assert!(retryable(StatusCode::SERVICE_UNAVAILABLE));
        assert!(retryable(StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!retryable(StatusCode::UNPROCESSABLE_ENTITY));
        assert!(!retryable(StatusCode::UNAUTHORIZED));
        assert!(!retryable(StatusCode::PAYLOAD_TOO_LARGE));
    }
}
