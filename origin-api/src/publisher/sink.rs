//! Where the publisher pushes: the edge worker's sync endpoint (and, for large
//! deployments, Cloudflare's KV bulk API).

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use shared::sync::{Refusal, SyncBatch, SyncItem, SyncReply, MAX_SYNC_ITEMS, SYNC_PATH};
use std::time::Duration;

/// The longest one push (one request to the sink) may take by default; it is abandoned
/// then ([`super::Timings::push_deadline`] says so to the publisher).
pub const PUSH_DEADLINE: Duration = Duration::from_secs(4);

/// Why a push was not acknowledged; the publisher retries it.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("the edge is unreachable: {0}")]
    Unreachable(String),
    #[error("the edge answered {status}: {body}")]
    Refused { status: u16, body: String },
    #[error("the edge did not answer within {0:?}")]
    Deadline(Duration),
}

impl SinkError {
    /// Whether the request's content is at fault (some item the sink cannot take), so
    /// that pushing its items apart isolates the bad one; otherwise the sink itself is
    /// failing (down, overloaded, misconfigured) and every item waits.
    pub fn blames_content(&self) -> bool {
        matches!(self, SinkError::Refused { status, .. } if matches!(status, 400 | 413 | 422))
    }
}

/// Takes KV writes and says which it wrote and which it refused.
#[async_trait]
pub trait Sink: Send + Sync + std::fmt::Debug + 'static {
    /// The most items one push may carry (one request).
    fn max_items(&self) -> usize;
    /// Pushes at most [`Sink::max_items`] items in one request; answers per item.
    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError>;
}

/// `POST {edge}/_hop/sync` with the sync token.
#[derive(Debug, Clone)]
pub struct WorkerSync {
    http: reqwest::Client,
    url: url::Url,
    /// Held as a secret: `Debug` shows it redacted, and it never reaches a log.
    token: SecretString,
}

impl WorkerSync {
    /// The worker at `edge` (its base URL).
    pub fn new(edge: &url::Url, token: &str) -> Result<Self, SinkError> {
        let url = edge
            .join(SYNC_PATH)
            .map_err(|e| SinkError::Unreachable(format!("{edge}: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(PUSH_DEADLINE)
            .build()
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        Ok(WorkerSync {
            http,
            url,
            token: SecretString::from(token),
        })
    }
}

#[async_trait]
impl Sink for WorkerSync {
    fn max_items(&self) -> usize {
        MAX_SYNC_ITEMS
    }

    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        let batch = SyncBatch {
            items: items.to_vec(),
        };
        let res = self
            .http
            .post(self.url.clone())
            .bearer_auth(self.token.expose_secret())
            .json(&batch)
            .send()
            .await
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        let status = res.status();
        if !status.is_success() {
            return Err(SinkError::Refused {
                status: status.as_u16(),
                body: res.text().await.unwrap_or_default(),
            });
        }
        res.json()
            .await
            .map_err(|e| SinkError::Unreachable(format!("unreadable answer: {e}")))
    }
}

/// Cloudflare's Workers KV bulk write:
/// `PUT {api}/accounts/{account}/storage/kv/namespaces/{namespace}/bulk` with a JSON
/// array of `{"key", "value", "expiration"?}` (at most 10,000 pairs) and an API token.
/// KV itself checks no versions: the publisher's one leader, coalescing to the newest
/// version and retiring rows an already delivered newer version supersedes, is the fence.
#[derive(Debug, Clone)]
pub struct KvBulk {
    http: reqwest::Client,
    url: url::Url,
    /// Held as a secret: `Debug` shows it redacted, and it never reaches a log.
    token: SecretString,
}

/// Pairs per bulk write. Cloudflare takes up to 10,000; a thousand keeps one request
/// well inside the publisher's push deadline (a push must end before the lease could).
pub const KV_BULK_ITEMS: usize = 1_000;

#[derive(serde::Serialize)]
struct KvPair<'a> {
    key: &'a str,
    value: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiration: Option<i64>,
}

#[derive(serde::Deserialize)]
struct KvAnswer {
    success: bool,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
    #[serde(default)]
    result: Option<KvResult>,
}

#[derive(serde::Deserialize)]
struct KvResult {
    #[serde(default)]
    unsuccessful_keys: Vec<String>,
}

impl KvBulk {
    /// The namespace `namespace` of `account`, through the API at `api` (normally
    /// `https://api.cloudflare.com/client/v4`).
    pub fn new(
        api: &url::Url,
        account: &str,
        namespace: &str,
        token: &str,
    ) -> Result<Self, SinkError> {
        let base = api.as_str().trim_end_matches('/');
        let url = url::Url::parse(&format!(
            "{base}/accounts/{account}/storage/kv/namespaces/{namespace}/bulk"
        ))
        .map_err(|e| SinkError::Unreachable(format!("KV bulk URL: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(PUSH_DEADLINE)
            .build()
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        Ok(KvBulk {
            http,
            url,
            token: SecretString::from(token),
        })
    }
}

#[async_trait]
impl Sink for KvBulk {
    fn max_items(&self) -> usize {
        KV_BULK_ITEMS
    }

    async fn push(&self, items: &[SyncItem]) -> Result<SyncReply, SinkError> {
        let pairs: Vec<KvPair<'_>> = items
            .iter()
            .map(|i| KvPair {
                key: &i.key,
                value: &i.value,
                expiration: i.expiration,
            })
            .collect();
        let res = self
            .http
            .put(self.url.clone())
            .bearer_auth(self.token.expose_secret())
            .json(&pairs)
            .send()
            .await
            .map_err(|e| SinkError::Unreachable(e.to_string()))?;
        let status = res.status();
        let body = res.text().await.unwrap_or_default();
        let answer: Option<KvAnswer> = serde_json::from_str(&body).ok();
        match answer {
            Some(a) if status.is_success() && a.success => {
                // KV wrote every pair but these: each is refused alone, the rest stand.
                let failed: std::collections::HashSet<String> = a
                    .result
                    .map(|r| r.unsuccessful_keys)
                    .unwrap_or_default()
                    .into_iter()
                    .collect();
                let mut reply = SyncReply::default();
                for item in items {
                    if failed.contains(&item.key) {
                        reply
                            .refused
                            .push(Refusal::failed(item, "KV did not write this key"));
                    } else {
                        reply.written.push(item.key.clone());
                    }
                }
                Ok(reply)
            }
            Some(a) => Err(SinkError::Refused {
                status: status.as_u16(),
                body: serde_json::to_string(&a.errors).unwrap_or(body),
            }),
            None => Err(SinkError::Refused {
                status: status.as_u16(),
                body,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink's token never shows in its `Debug` (which a log of the publisher's
    /// configuration would print).
    #[test]
    fn a_sink_s_debug_never_shows_its_token() {
        let token = "sync-token-0123456789abcdef";
        let edge = url::Url::parse("https://go.example/").unwrap();
        let worker = WorkerSync::new(&edge, token).unwrap();
        let kv = KvBulk::new(&edge, "account", "namespace", token).unwrap();
        for shown in [format!("{worker:?}"), format!("{kv:?}")] {
            assert!(!shown.contains(token), "{shown}");
        }
    }
}
