//! The links API's bodies: what `POST /v1/links`, `PATCH`, the list and a bulk create
//! take and answer. Plain data with its JSON form and its description; the rules that
//! judge them are the links service's ([`crate::links`]).

use super::present;
use crate::model::time::rfc3339;
use crate::model::{AccessKind, Condition, Feature, Link, LinkState, ShortUrls, KV_PROPAGATION_MS};
use serde::{Deserialize, Serialize};
use shared::preview::Preview;
use shared::split::Variant;
use shared::targeting::Rule;
use shared::CodeKind;

impl Link {
    /// The link as the API shows it, its short URL written by `urls`.
    pub fn view(&self, urls: &ShortUrls) -> LinkView {
        LinkView {
            short_url: urls.of(&self.domain, &self.code),
            domain: self.domain.clone(),
            code: self.code.clone(),
            target_url: self.target_url.clone(),
            status: self.status,
            redirect: self.redirect.code(),
            expires_at: self.expires_at.map(rfc3339),
            title: self.title.clone(),
            tags: self.tags.clone(),
            forward_query: self.forward_query,
            rules: self.options.rules.clone(),
            split: self.options.split.clone().map(Vec::from),
            preview: self.options.preview.clone(),
            expired_url: self.options.expired_url.clone(),
            interstitial: self.options.interstitial,
            record_clicks: !self.options.no_clicks,
            scanner_check: !self.options.no_scanner_check,
            max_visits: self.options.max_visits,
            exhausted: self.options.exhausted,
            note: self.options.note.clone(),
            access: match self.options.access {
                None => AccessMode::Public,
                Some(shared::access::Access::Signed { .. }) => AccessMode::Signed,
                Some(shared::access::Access::Password { .. }) => AccessMode::Password,
            },
            imported: self.options.imported.as_ref().map(|i| ImportedView {
                from: i.from.clone(),
                clicks: i.clicks,
                created_at: i.created_at.map(rfc3339),
            }),
            code_kind: self.code_kind,
            version: self.version,
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
            edge: match self.published {
                // Published means this version (or a newer one) reached the edge.
                Some(p) if p.version >= self.version => EdgeView {
                    state: EdgeState::Published,
                    published_at: Some(rfc3339(p.at)),
                    visible_everywhere_by: Some(rfc3339(p.at + KV_PROPAGATION_MS)),
                },
                _ => EdgeView {
                    state: EdgeState::Pending,
                    published_at: None,
                    visible_everywhere_by: None,
                },
            },
        }
    }
}

/// The JSON form of a link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct LinkView {
    /// What visitors are given: `https://{domain}/{code}`, or the base the operator
    /// serves the domain on (`--short-url-base`). Absent from a create's answer stored
    /// before this field existed, so an idempotent replay fills it in.
    #[serde(default)]
    #[schema(example = "https://go.example/summer")]
    pub short_url: String,
    pub domain: String,
    pub code: String,
    pub target_url: String,
    pub status: LinkState,
    /// 301, 302, 307 or 308.
    pub redirect: u16,
    /// RFC 3339, UTC.
    pub expires_at: Option<String>,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub forward_query: bool,
    /// Targeting rules, in order: the first whose conditions all hold picks the target.
    pub rules: Vec<Rule>,
    /// An A/B split of the visits no rule claims; `null` for none.
    pub split: Option<Vec<Variant>>,
    /// What link-preview crawlers are shown; `null` for none.
    pub preview: Option<Preview>,
    /// Where the link sends visitors once it has expired (else its domain's page, else
    /// 410).
    pub expired_url: Option<String>,
    /// Show the destination and a link to it instead of redirecting at once.
    pub interstitial: bool,
    /// Whether visits are recorded for the link's stats.
    pub record_clicks: bool,
    /// Whether visits from scanners (networks that serve no people browsing, mail
    /// gateways, prefetches) count as bots' (`true`, the default) or as people's: then
    /// they use up `max_visits` (docs/scanners.md).
    pub scanner_check: bool,
    /// People's visits after which the link ends; `null` for no limit.
    pub max_visits: Option<u64>,
    /// The visit limit was reached: the link answers as an expired one (410, or its
    /// `expired_url`) until `max_visits` is raised or cleared.
    pub exhausted: bool,
    /// Who may follow the link: anyone with its code, only visits carrying a token
    /// issued for it (`POST …/tokens`), or visitors who give its password. Neither the
    /// secret nor the password (nor its hash) is ever shown.
    pub access: AccessMode,
    /// The team's note on the link: for its people only (the API, the dashboard, an
    /// export, its history and webhooks), never sent to the edge nor shown to visitors.
    #[serde(default)]
    pub note: Option<String>,
    /// Where an import brought the link from, with the source's own count of visits
    /// (`imported.clicks`, kept apart from Hop's); `null` for a link made in Hop.
    #[serde(default)]
    pub imported: Option<ImportedView>,
    /// `generated` or `custom` (an imported code is `custom`, whatever its shape).
    #[schema(value_type = String, example = "generated")]
    pub code_kind: CodeKind,
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
    pub edge: EdgeView,
}

/// Where an imported link came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct ImportedView {
    /// `bitly`, `shlink`, `yourls`, `kutt` or `dub`.
    pub from: String,
    /// The source's count of visits when imported (its bots counted its own way).
    pub clicks: Option<u64>,
    /// When the source made it, RFC 3339.
    pub created_at: Option<String>,
}

/// Where the link stands at the edge.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct EdgeView {
    pub state: EdgeState,
    pub published_at: Option<String>,
    pub visible_everywhere_by: Option<String>,
}

/// Whether the edge has this version of the link.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EdgeState {
    /// Not pushed yet: visible through the origin only (and through the edge's
    /// activation window for new links).
    Pending,
    /// Pushed; visible everywhere by `visible_everywhere_by`.
    Published,
}

/// The body of `POST /v1/links` (and each item of a bulk create).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateLink {
    #[schema(min_length = 1, max_length = 2048)]
    pub target_url: String,
    #[serde(default)]
    pub domain: Option<String>,
    /// A custom alias; without it a code is generated.
    #[serde(default)]
    pub code: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    #[schema(minimum = 301, maximum = 308)]
    pub redirect: Option<u16>,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub title: Option<String>,
    #[serde(default)]
    #[schema(max_items = 20)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub forward_query: Option<bool>,
    /// Targeting rules (at most 20), in order: the first whose conditions all hold
    /// picks the target; none, the link's own `target_url`.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub rules: Option<Vec<Rule>>,
    /// An A/B split: 2 to 10 variants whose weights sum to 100. A visit no rule claims
    /// goes to a variant picked by weight (visitors are not kept on one).
    #[serde(default)]
    #[schema(min_items = 2, max_items = 10)]
    pub split: Option<Vec<Variant>>,
    /// What link-preview crawlers (Slack, WhatsApp, ...) are shown.
    #[serde(default)]
    pub preview: Option<Preview>,
    /// Where visitors go once the link has expired, before the domain's page.
    #[serde(default)]
    pub expired_url: Option<String>,
    /// Show the destination and a link to it instead of redirecting at once.
    #[serde(default)]
    pub interstitial: Option<bool>,
    /// `false`: visits are not recorded (default `true`).
    #[serde(default)]
    pub record_clicks: Option<bool>,
    /// `false`: scanners' visits count as people's and use up `max_visits` (default
    /// `true`: as bots'). Not written when absent: the CLI import's idempotency keys
    /// hash the body, and a resumed import must send the bytes it sent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scanner_check: Option<bool>,
    /// People's visits after which the link ends (410, or `expired_url`); bots are
    /// never counted.
    #[serde(default)]
    #[schema(minimum = 1)]
    pub max_visits: Option<u64>,
    /// `signed`: only visits carrying a token issued for the link get through;
    /// `password`: only visitors who give `password` (default `public`).
    #[serde(default)]
    pub access: Option<AccessMode>,
    /// The password of a link with `"access": "password"`: 8 characters to 256 bytes.
    /// Kept only as a slow hash (PBKDF2-HMAC-SHA256, 100,000 rounds); never shown.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Password)]
    pub password: Option<Password>,
    /// `true`: if the owner already has a live public link on this domain to the same
    /// target (as normalized), answer it (200, `Hop-Deduplicated: true`) instead of
    /// creating another; the request's other fields are then not applied. Not with
    /// `code`, nor in a bulk create.
    #[serde(default)]
    pub dedupe: Option<bool>,
    /// A note for the link's team, up to 1,000 characters (line breaks kept); never
    /// shown to visitors. Not written when absent, as `scanner_check`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

/// Who may follow a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessMode {
    /// Anyone with its code.
    Public,
    /// Only visits with a valid, unexpired token (`?t=…`) issued for the link. Setting
    /// it again replaces the link's secret: every token issued before stops working.
    Signed,
    /// Only visitors who type the link's password into the form it shows; they are let
    /// in for an hour by a cookie for that link alone. A new password lets in only
    /// those who give it.
    Password,
}

impl AccessMode {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::Public => "public",
            AccessMode::Signed => "signed",
            AccessMode::Password => "password",
        }
    }
}

/// A link's password as a request carries it: never written to a log.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(String);

impl Password {
    pub fn new(password: impl Into<String>) -> Self {
        Password(password.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

/// Limits on free-text fields, so one link cannot bloat every copy of it.
pub const MAX_TITLE_CHARS: usize = 200;
/// See [`MAX_TITLE_CHARS`].
pub const MAX_TAGS: usize = 20;
/// See [`MAX_TITLE_CHARS`]: a note is a few sentences, not a document.
pub const MAX_NOTE_CHARS: usize = 1000;
/// See [`MAX_TITLE_CHARS`].
pub const MAX_TAG_CHARS: usize = 64;

/// The longest text a search of links takes.
pub const MAX_SEARCH_CHARS: usize = 100;

/// Links per page unless the caller asks otherwise.
pub const DEFAULT_PAGE: u32 = 50;

/// The largest page.
pub const MAX_PAGE: u32 = 1000;

/// The query of `GET /v1/links`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    #[param(min_length = 1)]
    pub domain: Option<String>,
    #[param(min_length = 1, max_length = 64)]
    pub tag: Option<String>,
    /// Without it, tombstones are left out.
    pub status: Option<LinkState>,
    /// Text found in the code, the target URL or the title, whatever its case: 1 to
    /// 100 characters.
    #[param(min_length = 1, max_length = 100)]
    pub q: Option<String>,
    /// `expired` (its expiry passed), `expiring` (active, expiring within 7 days),
    /// `exhausted` (its visit limit was reached) or `banned` (an active ban matches its
    /// code or the host of any of its targets).
    pub condition: Option<Condition>,
    /// Who may follow it: `public`, `password` or `signed`.
    pub access: Option<AccessKind>,
    /// What it carries: `rules` or a `split`.
    pub has: Option<Feature>,
    /// RFC 3339: links created at or after this instant.
    #[param(format = DateTime)]
    pub created_after: Option<String>,
    /// RFC 3339: links created before this instant.
    #[param(format = DateTime)]
    pub created_before: Option<String>,
    /// The `next_cursor` of the page before.
    #[param(min_length = 1)]
    pub cursor: Option<String>,
    /// Links per page: 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// One page.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// The body of `PATCH /v1/links/{domain}/{code}`. Absent fields stay as they are;
/// `expires_at`, `title`, `rules`, `split`, `preview` and `expired_url` may be set to
/// `null` to clear them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateLink {
    #[serde(default)]
    pub target_url: Option<String>,
    /// RFC 3339; `null` removes the expiry.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub expires_at: Option<Option<String>>,
    #[serde(default)]
    pub redirect: Option<u16>,
    /// `active` or `disabled`; deleting is `DELETE`.
    #[serde(default)]
    pub status: Option<LinkState>,
    /// `null` removes the title.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub title: Option<Option<String>>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    pub forward_query: Option<bool>,
    /// The whole list, replacing the link's; `null` or `[]` removes every rule.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<Rule>>)]
    pub rules: Option<Option<Vec<Rule>>>,
    /// `null` removes the split.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<Variant>>)]
    pub split: Option<Option<Vec<Variant>>>,
    /// `null` removes the preview.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Preview>)]
    pub preview: Option<Option<Preview>>,
    /// `null` removes the link's own page for when it has expired.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub expired_url: Option<Option<String>>,
    #[serde(default)]
    pub interstitial: Option<bool>,
    #[serde(default)]
    pub record_clicks: Option<bool>,
    #[serde(default)]
    pub scanner_check: Option<bool>,
    /// `null` removes the limit. Raising it past the visits counted (or removing it)
    /// brings an exhausted link back.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>)]
    pub max_visits: Option<Option<u64>>,
    /// `signed` (again) gives the link a new secret, revoking every token issued
    /// before; `password` (with `password`) asks visitors for a password; `public` opens
    /// it to anyone with its code.
    #[serde(default)]
    pub access: Option<AccessMode>,
    /// A new password, for a link that has or is given `"access": "password"`: visitors
    /// let in under the old one must give it.
    #[serde(default)]
    #[schema(value_type = Option<String>, format = Password)]
    pub password: Option<Password>,
    /// The team's note; `null` or `""` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 1000)]
    pub note: Option<Option<String>>,
}

/// The most links one bulk call may carry.
pub const MAX_BULK: usize = 10_000;

/// Links with a password one bulk call may carry (each costs a PBKDF2).
pub const MAX_BULK_PASSWORDS: usize = 100;

impl CreateLink {
    /// The first limit of the published description (`CreateLink`'s schema) this body
    /// breaks, if any: lengths, counts and ranges the description states. A bulk create
    /// refuses a batch with such an item whole, as every other endpoint refuses a body
    /// that breaks its schema; what a schema cannot state (a URL's host, an alias taken)
    /// is still judged item by item.
    pub fn beyond_schema(&self) -> Option<String> {
        let chars = |s: &str| s.chars().count();
        let max_target = shared::target::MAX_TARGET_LEN;
        Some(if !(1..=max_target).contains(&chars(&self.target_url)) {
            format!("target_url: 1 to {max_target} characters")
        } else if self.redirect.is_some_and(|r| !(301..=308).contains(&r)) {
            "redirect: from 301 to 308".to_owned()
        } else if self
            .title
            .as_deref()
            .is_some_and(|t| chars(t) > MAX_TITLE_CHARS)
        {
            format!("title: at most {MAX_TITLE_CHARS} characters")
        } else if self.tags.as_ref().is_some_and(|t| t.len() > MAX_TAGS) {
            format!("tags: at most {MAX_TAGS}")
        } else if self
            .rules
            .as_ref()
            .is_some_and(|r| r.len() > shared::targeting::MAX_RULES)
        {
            format!("rules: at most {}", shared::targeting::MAX_RULES)
        } else if self.split.as_ref().is_some_and(|s| {
            !(shared::split::MIN_VARIANTS..=shared::split::MAX_VARIANTS).contains(&s.len())
        }) {
            format!(
                "split: {} to {} variants",
                shared::split::MIN_VARIANTS,
                shared::split::MAX_VARIANTS
            )
        } else if self
            .split
            .iter()
            .flatten()
            .any(|v| i32::try_from(v.weight).is_err())
        {
            // The description's integers are int32 unless it says int64.
            "split: a weight is a 32-bit integer".to_owned()
        } else if self
            .max_visits
            .is_some_and(|n| n == 0 || i64::try_from(n).is_err())
        {
            "max_visits: from 1 to 2^63 - 1".to_owned()
        } else if self
            .note
            .as_deref()
            // Counted as kept: trimmed, CR LF as LF (`links::fields::note`).
            .is_some_and(|n| chars(n.replace("\r\n", "\n").trim()) > MAX_NOTE_CHARS)
        {
            format!("note: at most {MAX_NOTE_CHARS} characters")
        } else {
            return None;
        })
    }
}

/// The body of `POST /v1/links/bulk`. Items are parsed one by one, so that one bad item
/// is reported in its place instead of refusing the batch.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkCreate {
    /// 1 to 10,000 create bodies.
    #[schema(value_type = Vec<CreateLink>)]
    #[schema(min_items = 1, max_items = 10000)]
    pub links: Vec<BulkItem>,
}

/// One item of a bulk create, parsed straight into its type as the body is read: only
/// the item's own text is held meanwhile, never the batch as a tree of JSON values
/// (which took 5 to 10 times the body's size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkItem {
    /// Boxed: a create body is a few hundred bytes, and most of a batch's items are
    /// valid; the list holds pointers.
    Valid(Box<CreateLink>),
    /// Why the item does not fit a create body.
    Invalid(String),
}

impl<'de> Deserialize<'de> for BulkItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Ok(match serde_json::from_str::<CreateLink>(raw.get()) {
            // serde reads a struct from a JSON array too (its fields in order): the
            // description says object, so such an item is no create body. Only an item
            // with an array in it is looked at again.
            Ok(link) if raw.get().contains('[') => match array_for_object(raw.get(), &link) {
                Some(path) => BulkItem::Invalid(format!("{path}: an object, not an array")),
                None => BulkItem::Valid(Box::new(link)),
            },
            Ok(link) => BulkItem::Valid(Box::new(link)),
            Err(e) => {
                // The position is within the item, not the body: say only what is wrong.
                let text = e.to_string();
                let what = text.rfind(" at line ").map_or(&*text, |i| &text[..i]);
                BulkItem::Invalid(what.to_owned())
            }
        })
    }
}

/// Where `raw` has an array in a place `link`, as read from it, has an object (`link`
/// for the item itself, `preview`, `rules[0].when`, …).
fn array_for_object(raw: &str, link: &CreateLink) -> Option<String> {
    fn walk(sent: &serde_json::Value, read: &serde_json::Value, path: String) -> Option<String> {
        use serde_json::Value;
        match (sent, read) {
            (Value::Array(_), Value::Object(_)) => Some(path),
            (Value::Object(sent), Value::Object(read)) => read.iter().find_map(|(k, v)| {
                let inner = match path.is_empty() {
                    true => k.clone(),
                    false => format!("{path}.{k}"),
                };
                walk(sent.get(k)?, v, inner)
            }),
            (Value::Array(sent), Value::Array(read)) => sent
                .iter()
                .zip(read)
                .enumerate()
                .find_map(|(i, (s, r))| walk(s, r, format!("{path}[{i}]"))),
            _ => None,
        }
    }
    let sent: serde_json::Value = serde_json::from_str(raw).ok()?;
    let read = serde_json::to_value(link).ok()?;
    walk(&sent, &read, String::new()).map(|p| {
        if p.is_empty() {
            "the item".to_owned()
        } else {
            p
        }
    })
}

impl Serialize for BulkItem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BulkItem::Valid(link) => link.serialize(s),
            BulkItem::Invalid(why) => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("invalid", why)?;
                map.end()
            }
        }
    }
}

/// One item's outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BulkResult {
    Ok {
        ok: bool,
        link: Box<LinkView>,
    },
    Err {
        ok: bool,
        #[schema(value_type = super::problem::Problem)]
        error: serde_json::Value,
    },
}

/// The answer to a bulk call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct BulkResponse {
    pub results: Vec<BulkResult>,
}

/// The body of `POST /v1/links/{domain}/{code}/tokens`: when the token stops opening
/// the link, as an instant or a time to live (default one day).
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueToken {
    /// RFC 3339, in the future, at most 366 days ahead.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    /// Seconds from now, 1 to 31,622,400 (366 days).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 31622400)]
    pub ttl_s: Option<u64>,
}

/// An issued token, and the link that carries it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct IssuedToken {
    pub token: String,
    /// `https://{domain}/{code}?t={token}`: what to share.
    pub url: String,
    /// RFC 3339, to the second.
    pub expires_at: String,
}

/// The query of `GET /v1/links/{domain}/{code}/qr`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QrParams {
    /// `svg` (default) or `png`.
    pub format: Option<QrFormat>,
    /// Side in pixels, 64 to 4096 (default 512): the PNG's (at most this, a whole number
    /// of pixels per module), the SVG's displayed width and height.
    #[param(minimum = 64, maximum = 4096)]
    pub size: Option<u32>,
    /// Quiet zone around the code, in modules: 0 to 32 (default 4, as the standard asks).
    #[param(minimum = 0, maximum = 32)]
    pub margin: Option<u32>,
    /// Error correction: `L` (7%), `M` (15%, default), `Q` (25%) or `H` (30%).
    pub ecc: Option<Ecc>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum QrFormat {
    Svg,
    Png,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub enum Ecc {
    L,
    M,
    Q,
    H,
}
