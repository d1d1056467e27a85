//! The link form's fields: read from what the browser posts (every value text, some
//! repeated), filled from a link, and turned into the API's own bodies (`CreateLink`,
//! `UpdateLink`) so that the services judge the form as they judge the API.
//!
//! Rules and variants are rows named by their index (`rule-0-target`); a blank row is
//! no row. The form says it carries the link's options (`options=1`): only then do an
//! unticked box and a missing row mean "none", so a form of an older page that lacks
//! them never clears what it did not show.

use crate::error::AppError;
use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::ShortUrls;
use crate::model::{Link, LinkState};
use crate::views::link_fields;
use crate::views::links::{AccessMode, CreateLink, Password, UpdateLink};
use shared::access::Access;
use shared::preview::Preview;
use shared::split::Variant;
use shared::targeting::{Conditions, Device, QueryTest, Rule, MAX_RULES};
use std::collections::BTreeMap;

/// The UTM parameters the builder offers, in the order shown.
pub(super) const UTM: [&str; 5] = [
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
];

/// Variant rows read at most: a split has at most this many.
const MAX_VARIANT_ROWS: usize = shared::split::MAX_VARIANTS;

/// The fields of the link form, as the browser posts them.
#[derive(Debug, Default, Clone)]
pub(super) struct LinkForm {
    pub(super) csrf: String,
    /// The target without the UTM parameters the builder holds.
    pub(super) target_url: String,
    /// Values of [`UTM`], in its order.
    pub(super) utm: [String; 5],
    pub(super) domain: String,
    pub(super) code: String,
    /// The fields the table gives the form as text inputs of their own
    /// ([`link_fields::in_form`]: the title, the team's note), by name: only those the
    /// browser posted, so that a page made before a field existed never clears it.
    pub(super) texts: BTreeMap<&'static str, String>,
    /// Comma-separated.
    pub(super) tags: String,
    /// `YYYY-MM-DDTHH:MM` in UTC (an `<input type=datetime-local>`), or empty.
    pub(super) expires_at: String,
    pub(super) redirect: String,
    /// `active` or `disabled` (changing only).
    pub(super) status: String,
    /// The version the form was filled from (changing only).
    pub(super) version: String,
    /// Whether the form carries the options below (`options=1`).
    pub(super) options: bool,
    pub(super) expired_url: String,
    pub(super) max_visits: String,
    /// `public`, `password` or `signed`; and what it was when the form was filled, so
    /// that saving an unchanged signed link does not revoke its tokens.
    pub(super) access: String,
    pub(super) access_was: String,
    /// A new password, typed: never shown again.
    pub(super) password: String,
    pub(super) interstitial: bool,
    pub(super) record_clicks: bool,
    /// Scanners' visits count as bots' (the API's `scanner_check`).
    pub(super) scanner_check: bool,
    pub(super) forward_query: bool,
    pub(super) preview_title: String,
    pub(super) preview_description: String,
    pub(super) preview_image: String,
    pub(super) rules: Vec<RuleRow>,
    pub(super) variants: Vec<VariantRow>,
    /// `rule` or `variant` when the form was sent to get one more row, not to be saved.
    pub(super) adding: Option<String>,
}

/// A targeting rule as the form shows it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct RuleRow {
    pub(super) target: String,
    /// Values of [`Device`], lowercase.
    pub(super) devices: Vec<String>,
    /// Comma-separated two-letter codes.
    pub(super) countries: String,
    /// Comma-separated language tags.
    pub(super) languages: String,
    /// `name=value` (equals), `name` (present) or `!name` (absent), joined by `&`.
    pub(super) query: String,
    /// `datetime-local` values, UTC.
    pub(super) after: String,
    pub(super) before: String,
}

/// A split's variant as the form shows it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct VariantRow {
    pub(super) target: String,
    pub(super) weight: String,
}

impl RuleRow {
    fn is_blank(&self) -> bool {
        *self == RuleRow::default()
    }
}

impl VariantRow {
    fn is_blank(&self) -> bool {
        self.target.trim().is_empty() && self.weight.trim().is_empty()
    }
}

/// The devices a rule may name, as `(value, label)`.
pub(super) fn device_choices() -> Vec<(String, &'static str)> {
    Device::ALL
        .iter()
        .map(|d| {
            let label = match d {
                Device::Ios => "iOS",
                Device::Android => "Android",
                Device::Mobile => "Any phone",
                Device::Desktop => "Any computer",
                Device::Windows => "Windows",
                Device::Macos => "macOS",
                Device::Linux => "Linux",
                Device::Chromeos => "ChromeOS",
            };
            (device_name(*d), label)
        })
        .collect()
}

fn device_name(d: Device) -> String {
    serde_json::to_value(d)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl LinkForm {
    /// The form from the pairs a browser posted, in order (a repeated name is a list).
    pub(super) fn from_pairs(pairs: &[(String, String)]) -> LinkForm {
        let mut form = LinkForm::default();
        let mut rules: Vec<RuleRow> = vec![RuleRow::default(); MAX_RULES];
        let mut variants: Vec<VariantRow> = vec![VariantRow::default(); MAX_VARIANT_ROWS];
        for (name, value) in pairs {
            let value = value.clone();
            match name.as_str() {
                "csrf" => form.csrf = value,
                "target_url" => form.target_url = value,
                "domain" => form.domain = value,
                "code" => form.code = value,
                "tags" => form.tags = value,
                "expires_at" => form.expires_at = value,
                "redirect" => form.redirect = value,
                "status" => form.status = value,
                "version" => form.version = value,
                "options" => form.options = value == "1",
                "expired_url" => form.expired_url = value,
                "max_visits" => form.max_visits = value,
                "access" => form.access = value,
                "access_was" => form.access_was = value,
                "password" => form.password = value,
                "interstitial" => form.interstitial = true,
                "record_clicks" => form.record_clicks = true,
                "scanner_check" => form.scanner_check = true,
                "forward_query" => form.forward_query = true,
                "preview_title" => form.preview_title = value,
                "preview_description" => form.preview_description = value,
                "preview_image" => form.preview_image = value,
                "add" => form.adding = Some(value),
                other => {
                    if let Some(field) = link_fields::in_form().find(|f| f.name == other) {
                        // A browser sends a textarea's line breaks as CR LF; the link
                        // keeps LF, and a comparison must not see a change in that.
                        form.texts.insert(field.name, value.replace("\r\n", "\n"));
                    } else if let Some(i) = UTM.iter().position(|u| *u == other) {
                        form.utm[i] = value;
                    } else if let Some((i, field)) = row_field(other, "rule-", MAX_RULES) {
                        let row = &mut rules[i];
                        match field {
                            "target" => row.target = value,
                            "device" => row.devices.push(value),
                            "country" => row.countries = value,
                            "language" => row.languages = value,
                            "query" => row.query = value,
                            "after" => row.after = value,
                            "before" => row.before = value,
                            _ => {}
                        }
                    } else if let Some((i, field)) = row_field(other, "variant-", MAX_VARIANT_ROWS)
                    {
                        match field {
                            "target" => variants[i].target = value,
                            "weight" => variants[i].weight = value,
                            _ => {}
                        }
                    }
                }
            }
        }
        form.rules = rules.into_iter().filter(|r| !r.is_blank()).collect();
        form.variants = variants.into_iter().filter(|v| !v.is_blank()).collect();
        form
    }

    /// The form filled from `link`.
    pub(super) fn of(link: &Link) -> Self {
        let (target_url, utm) = without_utm(&link.target_url);
        let o = &link.options;
        let access = match o.access {
            None => "public",
            Some(Access::Password { .. }) => "password",
            Some(Access::Signed { .. }) => "signed",
        };
        let preview = o.preview.clone().unwrap_or_default();
        // The table reads the link as the API shows it; no short URL is needed here.
        let view = link.view(&ShortUrls::new(&[]));
        LinkForm {
            target_url,
            utm,
            domain: link.domain.clone(),
            code: link.code.clone(),
            texts: link_fields::in_form()
                .map(|f| (f.name, f.text(&view)))
                .collect(),
            tags: link.tags.join(", "),
            expires_at: link.expires_at.map(datetime_local).unwrap_or_default(),
            redirect: link.redirect.code().to_string(),
            status: link.status.as_str().to_owned(),
            version: link.version.to_string(),
            options: true,
            expired_url: o.expired_url.clone().unwrap_or_default(),
            max_visits: o.max_visits.map(|n| n.to_string()).unwrap_or_default(),
            access: access.into(),
            access_was: access.into(),
            interstitial: o.interstitial,
            record_clicks: !o.no_clicks,
            scanner_check: !o.no_scanner_check,
            forward_query: link.forward_query,
            preview_title: preview.title.unwrap_or_default(),
            preview_description: preview.description.unwrap_or_default(),
            preview_image: preview.image_url.unwrap_or_default(),
            rules: o.rules.iter().map(rule_row).collect(),
            variants: o
                .split
                .iter()
                .flat_map(|s| s.variants())
                .map(|v| VariantRow {
                    target: v.target_url.clone(),
                    weight: v.weight.to_string(),
                })
                .collect(),
            ..LinkForm::default()
        }
    }

    /// A new link's form: its boxes as the API's defaults are.
    pub(super) fn blank() -> Self {
        LinkForm {
            texts: link_fields::in_form()
                .map(|f| (f.name, String::new()))
                .collect(),
            options: true,
            access: "public".into(),
            access_was: "public".into(),
            record_clicks: true,
            scanner_check: true,
            forward_query: true,
            ..LinkForm::default()
        }
    }

    /// The text of the table's field `name` as typed (empty when not posted).
    pub(super) fn text(&self, name: &str) -> &str {
        self.texts.get(name).map_or("", String::as_str)
    }

    pub(super) fn tags(&self) -> Vec<String> {
        self.tags
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The target with the builder's UTM parameters set (each replacing the same one in
    /// the typed URL); the typed URL as it is when it cannot be read, for the services
    /// to refuse in their words.
    pub(super) fn target(&self) -> String {
        let typed = self.target_url.trim();
        if self.utm.iter().all(|v| v.trim().is_empty()) {
            return typed.to_owned();
        }
        let Ok(mut url) = url::Url::parse(typed) else {
            return typed.to_owned();
        };
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| {
                UTM.iter()
                    .zip(&self.utm)
                    .all(|(name, v)| k != name || v.trim().is_empty())
            })
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        {
            let mut query = url.query_pairs_mut();
            query.clear();
            query.extend_pairs(&kept);
            for (name, value) in UTM.iter().zip(&self.utm) {
                if !value.trim().is_empty() {
                    query.append_pair(name, value.trim());
                }
            }
        }
        url.to_string()
    }

    /// The expiry as RFC 3339, or `None` when the field is empty.
    fn expiry(&self) -> Result<Option<String>, AppError> {
        instant("expires_at", &self.expires_at).map(|ms| ms.map(rfc3339))
    }

    fn redirect(&self) -> Result<Option<u16>, AppError> {
        match self.redirect.trim() {
            "" => Ok(None),
            r => r
                .parse()
                .map(Some)
                .map_err(|_| AppError::invalid("redirect", "301, 302, 307 or 308")),
        }
    }

    pub(super) fn version(&self) -> Result<u64, AppError> {
        self.version
            .trim()
            .parse()
            .map_err(|_| AppError::invalid("version", "reload the page"))
    }

    /// The options as the form says them, typed as the API's bodies take them.
    fn options(&self) -> Result<Options, AppError> {
        let rules = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| rule_of(i, r))
            .collect::<Result<Vec<Rule>, _>>()?;
        let split = self
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let weight: u32 = v.weight.trim().parse().map_err(|_| {
                    AppError::invalid(
                        "split",
                        format!("variant {}: a whole number for its weight", i + 1),
                    )
                })?;
                Ok(Variant {
                    target_url: v.target.trim().to_owned(),
                    weight,
                })
            })
            .collect::<Result<Vec<Variant>, AppError>>()?;
        let preview = Preview {
            title: text(&self.preview_title),
            description: text(&self.preview_description),
            image_url: text(&self.preview_image),
        };
        let max_visits = match self.max_visits.trim() {
            "" => None,
            n => Some(n.parse::<u64>().map_err(|_| {
                AppError::invalid(
                    "max_visits",
                    "a whole number of visits, or empty for no limit",
                )
            })?),
        };
        Ok(Options {
            rules,
            split: Some(split).filter(|s| !s.is_empty()),
            preview: Some(preview).filter(|p| *p != Preview::default()),
            expired_url: text(&self.expired_url),
            max_visits,
            interstitial: self.interstitial,
            record_clicks: self.record_clicks,
            scanner_check: self.scanner_check,
            forward_query: self.forward_query,
        })
    }

    /// The access and password to send: only a change (saving a signed link again
    /// would give it a new secret and end every token issued), or a new password.
    fn access_change(&self) -> Result<Option<(AccessMode, Option<Password>)>, AppError> {
        let access = match self.access.trim() {
            "" => return Ok(None),
            "public" => AccessMode::Public,
            "password" => AccessMode::Password,
            "signed" => AccessMode::Signed,
            _ => return Err(AppError::invalid("access", "public, password or signed")),
        };
        let password = Some(self.password.clone()).filter(|p| !p.is_empty());
        if self.access.trim() == self.access_was && password.is_none() {
            return Ok(None);
        }
        if access != AccessMode::Password && password.is_some() {
            return Err(AppError::invalid(
                "password",
                "a password is for a link whose access is \"password\"",
            ));
        }
        Ok(Some((access, password.map(Password::new))))
    }

    /// The API's create body: what the form says, and nothing it leaves empty.
    pub(super) fn to_create(&self) -> Result<CreateLink, AppError> {
        let tags = self.tags();
        let mut body = CreateLink {
            target_url: self.target(),
            domain: text(&self.domain),
            code: text(&self.code),
            tags: Some(tags).filter(|t| !t.is_empty()),
            expires_at: self.expiry()?,
            redirect: self.redirect()?,
            ..CreateLink::default()
        };
        for field in link_fields::in_form() {
            if let (Some(write), Some(value)) = (field.write, text(self.text(field.name))) {
                write(&mut body, value).map_err(|e| AppError::invalid(field.name, e))?;
            }
        }
        if self.options {
            // A new link has nothing to clear: only what is set.
            let o = self.options()?;
            body.rules = Some(o.rules);
            body.split = o.split;
            body.preview = o.preview;
            body.expired_url = o.expired_url;
            body.max_visits = o.max_visits;
            body.interstitial = Some(o.interstitial);
            body.record_clicks = Some(o.record_clicks);
            body.scanner_check = Some(o.scanner_check);
            body.forward_query = Some(o.forward_query);
            if let Some((access, password)) = self.access_change()? {
                body.access = Some(access);
                body.password = password;
            }
        }
        Ok(body)
    }

    /// The API's change body: every field of the form, an empty one clearing what it
    /// may clear (the title, the expiry, and the options when the form carries them).
    pub(super) fn to_update(&self) -> Result<UpdateLink, AppError> {
        let mut body = UpdateLink {
            target_url: Some(self.target()),
            tags: Some(self.tags()),
            expires_at: Some(self.expiry()?),
            redirect: self.redirect()?,
            status: LinkState::parse(self.status.trim()),
            ..UpdateLink::default()
        };
        for field in link_fields::in_form() {
            if let (Some(change), Some(value)) = (field.change, self.texts.get(field.name)) {
                change(&mut body, text(value));
            }
        }
        if self.options {
            let o = self.options()?;
            body.rules = Some(Some(o.rules));
            body.split = Some(o.split);
            body.preview = Some(o.preview);
            body.expired_url = Some(o.expired_url);
            body.max_visits = Some(o.max_visits);
            body.interstitial = Some(o.interstitial);
            body.record_clicks = Some(o.record_clicks);
            body.scanner_check = Some(o.scanner_check);
            body.forward_query = Some(o.forward_query);
            if let Some((access, password)) = self.access_change()? {
                body.access = Some(access);
                body.password = password;
            }
        }
        Ok(body)
    }

    /// One more blank row of what `adding` names, as a button without JavaScript asks.
    pub(super) fn rows_to_show(&self) -> (Vec<RuleRow>, Vec<VariantRow>) {
        let mut rules = self.rules.clone();
        let mut variants = self.variants.clone();
        let extra_rule = usize::from(self.adding.as_deref() == Some("rule"));
        for _ in 0..(1 + extra_rule) {
            if rules.len() < MAX_RULES {
                rules.push(RuleRow::default());
            }
        }
        let extra_variant = usize::from(self.adding.as_deref() == Some("variant"));
        let wanted = (variants.len() + 1 + extra_variant).max(2);
        while variants.len() < wanted.min(MAX_VARIANT_ROWS) {
            variants.push(VariantRow::default());
        }
        (rules, variants)
    }
}

/// `rule-3-target` → `(3, "target")`, for an index below `max`.
fn row_field<'n>(name: &'n str, prefix: &str, max: usize) -> Option<(usize, &'n str)> {
    let (index, field) = name.strip_prefix(prefix)?.split_once('-')?;
    let i: usize = index.parse().ok()?;
    (i < max).then_some((i, field))
}

/// A URL without its UTM parameters, and their values in [`UTM`]'s order.
fn without_utm(target: &str) -> (String, [String; 5]) {
    let mut utm: [String; 5] = Default::default();
    let Ok(mut url) = url::Url::parse(target) else {
        return (target.to_owned(), utm);
    };
    let mut kept = Vec::new();
    for (k, v) in url.query_pairs() {
        match UTM.iter().position(|u| *u == k) {
            // A parameter given twice stays in the URL after the first.
            Some(i) if utm[i].is_empty() => utm[i] = v.into_owned(),
            _ => kept.push((k.into_owned(), v.into_owned())),
        }
    }
    if utm.iter().all(String::is_empty) {
        return (target.to_owned(), utm);
    }
    if kept.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(&kept);
    }
    (url.to_string(), utm)
}

fn rule_row(rule: &Rule) -> RuleRow {
    let when = &rule.when;
    RuleRow {
        target: rule.target_url.clone(),
        devices: when.device.iter().map(|d| device_name(*d)).collect(),
        countries: when.country.join(", "),
        languages: when.language.join(", "),
        query: when
            .query
            .iter()
            .map(|q| match (&q.equals, q.present) {
                (Some(v), _) => format!("{}={v}", q.name),
                (None, Some(false)) => format!("!{}", q.name),
                (None, _) => q.name.clone(),
            })
            .collect::<Vec<_>>()
            .join("&"),
        after: when.after.map(datetime_local).unwrap_or_default(),
        before: when.before.map(datetime_local).unwrap_or_default(),
    }
}

/// Rule `index` of the form as the API's rule; its field named when it cannot be read.
fn rule_of(index: usize, row: &RuleRow) -> Result<Rule, AppError> {
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let query = row
        .query
        .split('&')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((name, value)) => QueryTest {
                name: name.to_owned(),
                equals: Some(value.to_owned()),
                present: None,
            },
            None => match t.strip_prefix('!') {
                Some(name) => QueryTest {
                    name: name.to_owned(),
                    equals: None,
                    present: Some(false),
                },
                None => QueryTest {
                    name: t.to_owned(),
                    equals: None,
                    present: Some(true),
                },
            },
        })
        .collect();
    let device = row
        .devices
        .iter()
        .map(|name| {
            Device::ALL
                .into_iter()
                .find(|d| device_name(*d) == *name)
                .ok_or_else(|| {
                    AppError::invalid(
                        "rules",
                        format!("rule {}: {name:?} is not a device offered", index + 1),
                    )
                })
        })
        .collect::<Result<Vec<Device>, AppError>>()?;
    let when_at = |name: &str, raw: &str| {
        instant("rules", raw).map_err(|_| {
            AppError::invalid(
                "rules",
                format!(
                    "rule {}: {name} is a date and time, YYYY-MM-DDTHH:MM (UTC)",
                    index + 1
                ),
            )
        })
    };
    Ok(Rule {
        when: Conditions {
            device,
            country: list(&row.countries),
            language: list(&row.languages),
            query,
            after: when_at("after", &row.after)?,
            before: when_at("before", &row.before)?,
        },
        target_url: row.target.trim().to_owned(),
    })
}

/// What the form's options say, whole: [`LinkForm::to_create`] sends what is set,
/// [`LinkForm::to_update`] all of it (an empty one clears).
#[derive(Debug)]
struct Options {
    rules: Vec<Rule>,
    split: Option<Vec<Variant>>,
    preview: Option<Preview>,
    expired_url: Option<String>,
    max_visits: Option<u64>,
    interstitial: bool,
    record_clicks: bool,
    scanner_check: bool,
    forward_query: bool,
}

/// A text field trimmed; `None` when it is empty.
fn text(s: &str) -> Option<String> {
    Some(s.trim()).filter(|t| !t.is_empty()).map(str::to_owned)
}

/// A `datetime-local` value (UTC) as Unix ms; `None` when empty.
fn instant(field: &'static str, raw: &str) -> Result<Option<i64>, AppError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    // The input sends minutes, sometimes seconds; the form says UTC.
    let candidate = match raw.len() {
        16 => format!("{raw}:00Z"),
        _ => format!("{raw}Z"),
    };
    parse_rfc3339(&candidate)
        .map(Some)
        .ok_or_else(|| AppError::invalid(field, "a date and time, YYYY-MM-DDTHH:MM (UTC)"))
}

/// `YYYY-MM-DDTHH:MM` in UTC, as a `datetime-local` input shows it.
pub(super) fn datetime_local(ms: i64) -> String {
    rfc3339(ms).chars().take(16).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_utm_builder_sets_its_parameters_and_keeps_the_rest() {
        let form = LinkForm::from_pairs(&pairs(&[
            (
                "target_url",
                "https://shop.example/spring?ref=tv&utm_source=old",
            ),
            ("utm_source", "newsletter"),
            ("utm_campaign", "spring sale"),
        ]));
        assert_eq!(
            form.target(),
            "https://shop.example/spring?ref=tv&utm_source=newsletter&utm_campaign=spring+sale"
        );
        // Filled from a link, the builder holds them and the target shows the rest.
        let (rest, utm) = without_utm(&form.target());
        assert_eq!(rest, "https://shop.example/spring?ref=tv");
        assert_eq!(utm[0], "newsletter");
        assert_eq!(utm[2], "spring sale");
        let (plain, none) = without_utm("https://shop.example/?a=1");
        assert_eq!(plain, "https://shop.example/?a=1");
        assert!(none.iter().all(String::is_empty));
    }

    #[test]
    fn rows_are_read_by_index_and_blank_ones_are_none() {
        let form = LinkForm::from_pairs(&pairs(&[
            ("options", "1"),
            ("rule-0-target", "https://apps.example/ios"),
            ("rule-0-device", "ios"),
            ("rule-0-device", "android"),
            ("rule-0-country", "nl, de"),
            ("rule-0-query", "ref=tv&!debug&promo"),
            ("rule-1-target", ""),
            ("rule-25-target", "https://ignored.example/"),
            ("variant-0-target", "https://a.example/"),
            ("variant-0-weight", "30"),
            ("variant-1-target", "https://b.example/"),
            ("variant-1-weight", "70"),
            ("variant-2-target", ""),
            ("variant-2-weight", ""),
        ]));
        assert_eq!(form.rules.len(), 1);
        assert_eq!(form.variants.len(), 2);
        let options = form.options().expect("options");
        let test = |name: &str, equals: Option<&str>, present: Option<bool>| QueryTest {
            name: name.into(),
            equals: equals.map(str::to_owned),
            present,
        };
        assert_eq!(
            options.rules,
            [Rule {
                when: Conditions {
                    device: vec![Device::Ios, Device::Android],
                    country: vec!["nl".into(), "de".into()],
                    query: vec![
                        test("ref", Some("tv"), None),
                        test("debug", None, Some(false)),
                        test("promo", None, Some(true)),
                    ],
                    ..Conditions::default()
                },
                target_url: "https://apps.example/ios".into(),
            }]
        );
        assert_eq!(options.split.expect("split")[1].weight, 70);
        // Unticked boxes are off when the form carries its options.
        assert!(!options.record_clicks);
        assert!(!options.scanner_check);
        assert_eq!(options.max_visits, None);
    }

    #[test]
    fn a_form_that_does_not_carry_the_options_leaves_them_alone() {
        let form = LinkForm::from_pairs(&pairs(&[
            ("target_url", "https://shop.example/"),
            ("version", "3"),
        ]));
        let update = form.to_update().expect("update");
        // `None` leaves a field as it is; `Some(None)` would clear it.
        assert_eq!(update.rules, None);
        assert_eq!(update.split, None);
        assert_eq!(update.max_visits, None);
        assert_eq!(update.record_clicks, None);
        assert_eq!(update.scanner_check, None);
        assert_eq!(update.access, None);
        // Nor do the table's text inputs it did not post.
        assert_eq!(update.title, None);
        assert_eq!(update.note, None);
        assert_eq!(update.target_url.as_deref(), Some("https://shop.example/"));
    }

    #[test]
    fn saving_a_signed_link_again_keeps_its_secret_and_a_password_needs_its_access() {
        let mut form = LinkForm::blank();
        form.access = "signed".into();
        form.access_was = "signed".into();
        assert_eq!(form.access_change().expect("same"), None);
        form.access_was = "public".into();
        assert_eq!(
            form.access_change().expect("changed"),
            Some((AccessMode::Signed, None))
        );
        form.access = "password".into();
        form.access_was = "password".into();
        form.password = "correct horse".into();
        assert_eq!(
            form.access_change().expect("new password"),
            Some((AccessMode::Password, Some(Password::new("correct horse"))))
        );
        form.access = "public".into();
        assert!(matches!(
            form.access_change(),
            Err(AppError::Invalid {
                field: "password",
                ..
            })
        ));
    }

    #[test]
    fn bad_numbers_and_times_name_their_field() {
        for (field, value, named) in [
            ("max_visits", "ten", "max_visits"),
            ("variant-0-weight", "half", "split"),
            ("rule-0-after", "tomorrow", "rules"),
        ] {
            let mut list = pairs(&[
                ("options", "1"),
                ("variant-0-target", "https://a.example/"),
                ("variant-0-weight", "100"),
                ("rule-0-target", "https://r.example/"),
            ]);
            list.push((field.into(), value.into()));
            match LinkForm::from_pairs(&list).to_create() {
                Err(AppError::Invalid { field, .. }) => assert_eq!(field, named, "{value}"),
                other => panic!("{field}={value}: {other:?}"),
            }
        }
    }

    #[test]
    fn one_more_row_is_shown_when_asked_and_never_past_the_limit() {
        let mut form = LinkForm::blank();
        let (rules, variants) = form.rows_to_show();
        assert_eq!((rules.len(), variants.len()), (1, 2));
        form.adding = Some("rule".into());
        assert_eq!(form.rows_to_show().0.len(), 2);
        form.rules = vec![
            RuleRow {
                target: "x".into(),
                ..RuleRow::default()
            };
            MAX_RULES
        ];
        assert_eq!(form.rows_to_show().0.len(), MAX_RULES);
    }
}
