//! A link's fields, once: the name every door uses for each (the API's JSON key, the
//! history's key, the CSV column, the form input), what a person calls it, and how it
//! is written as text and read back. The history, `export`, `import` and the dashboard's
//! form all go through this table, so a new field is its model, its validation, a row
//! here and its place in the form's template (docs/architecture.md, D-282).
//!
//! Text is what a CSV cell and a form's input hold: a flag `true`/`false`, a number in
//! digits, a list comma-separated, a structured field as compact JSON, nothing as an
//! empty string. The readers take a value as the API shows it ([`LinkView`]); the
//! writers set the API's own bodies ([`CreateLink`], [`UpdateLink`]), whose rules the
//! links service applies as to any request.

use super::links::{AccessMode, CreateLink, LinkView, Password, UpdateLink};
use shared::CodeKind;

/// A reader: the field of a link as text.
pub type Read = fn(&LinkView) -> String;
/// A writer: the field set on a create body from its text (never empty), or why the
/// text is not a value of the field.
pub type Write = fn(&mut CreateLink, String) -> Result<(), String>;
/// A change: the field set on a change body from a form's text; `None` (empty) clears.
pub type Change = fn(&mut UpdateLink, Option<String>);

/// One field of a link.
#[derive(Debug, Clone, Copy)]
pub struct LinkField {
    /// The API's name, which is also the history's key, the CSV column and the form
    /// input's name.
    pub name: &'static str,
    /// What a person is shown for it.
    pub label: &'static str,
    /// A link's history shows it, and what each version changed of it.
    pub history: bool,
    /// Text a person typed, which a spreadsheet could take for a formula: a CSV cell
    /// of it is [`neutralized`].
    pub typed: bool,
    /// `export` writes it (in this table's order); `None`: not a column of an export.
    pub read: Option<Read>,
    /// `import` reads it; `None`: a file with its column is refused.
    pub write: Option<Write>,
    /// The dashboard's form shows it as one text input (a textarea) filled by `read`,
    /// sent by `write` on a create and by this on a change; `None`: the form has its own
    /// widget for it, or none.
    pub change: Option<Change>,
}

impl LinkField {
    const fn named(name: &'static str, label: &'static str) -> LinkField {
        LinkField {
            name,
            label,
            history: false,
            typed: false,
            read: None,
            write: None,
            change: None,
        }
    }

    const fn in_history(self) -> LinkField {
        LinkField {
            history: true,
            ..self
        }
    }

    const fn typed(self) -> LinkField {
        LinkField {
            typed: true,
            ..self
        }
    }

    const fn read(self, read: Read) -> LinkField {
        LinkField {
            read: Some(read),
            ..self
        }
    }

    const fn write(self, write: Write) -> LinkField {
        LinkField {
            write: Some(write),
            ..self
        }
    }

    const fn change(self, change: Change) -> LinkField {
        LinkField {
            change: Some(change),
            ..self
        }
    }

    /// `link`'s value as text; empty when the field is not read.
    pub fn text(&self, link: &LinkView) -> String {
        self.read.map(|read| read(link)).unwrap_or_default()
    }
}

/// Every field, in the order `export` writes them (a new column goes last: spreadsheets
/// and scripts read an export by position).
pub const LINK_FIELDS: &[LinkField] = &[
    LinkField::named("short_url", "Short URL").read(|l| l.short_url.clone()),
    LinkField::named("domain", "Domain")
        .read(|l| l.domain.clone())
        .write(|b, v| {
            b.domain = Some(v);
            Ok(())
        }),
    LinkField::named("code", "Code")
        .read(|l| l.code.clone())
        .write(|b, v| {
            b.code = Some(v);
            Ok(())
        }),
    LinkField::named("target_url", "Target URL")
        .in_history()
        .read(|l| l.target_url.clone())
        .write(|b, v| {
            b.target_url = v;
            Ok(())
        }),
    LinkField::named("status", "Status")
        .in_history()
        .read(|l| l.status.as_str().to_owned()),
    LinkField::named("redirect", "Redirect")
        .in_history()
        .read(|l| l.redirect.to_string())
        .write(|b, v| {
            b.redirect = Some(
                v.parse()
                    .map_err(|_| format!("redirect: {v:?} is not one of 301, 302, 307, 308"))?,
            );
            Ok(())
        }),
    LinkField::named("expires_at", "Expires")
        .in_history()
        .read(|l| l.expires_at.clone().unwrap_or_default())
        .write(|b, v| {
            b.expires_at = Some(v);
            Ok(())
        }),
    LinkField::named("title", "Title")
        .in_history()
        .typed()
        .read(|l| l.title.clone().unwrap_or_default())
        .write(|b, v| {
            b.title = Some(v);
            Ok(())
        })
        .change(|b, v| b.title = Some(v)),
    LinkField::named("tags", "Tags")
        .in_history()
        .typed()
        .read(|l| l.tags.join(","))
        .write(|b, v| {
            b.tags = Some(list(&v));
            Ok(())
        }),
    LinkField::named("forward_query", "Query passed on")
        .in_history()
        .read(|l| l.forward_query.to_string())
        .write(|b, v| {
            b.forward_query = Some(flag("forward_query", &v)?);
            Ok(())
        }),
    LinkField::named("code_kind", "Code kind").read(|l| {
        match l.code_kind {
            CodeKind::Generated => "generated",
            CodeKind::Custom => "custom",
        }
        .to_owned()
    }),
    LinkField::named("version", "Version").read(|l| l.version.to_string()),
    LinkField::named("created_at", "Created").read(|l| l.created_at.clone()),
    LinkField::named("updated_at", "Updated").read(|l| l.updated_at.clone()),
    LinkField::named("rules", "Rules")
        .in_history()
        .read(|l| json(&l.rules, l.rules.is_empty()))
        .write(|b, v| {
            b.rules = Some(from_json("rules", &v)?);
            Ok(())
        }),
    LinkField::named("split", "Split")
        .in_history()
        .read(|l| json(&l.split, l.split.is_none()))
        .write(|b, v| {
            b.split = Some(from_json("split", &v)?);
            Ok(())
        }),
    LinkField::named("preview", "Preview")
        .in_history()
        .read(|l| json(&l.preview, l.preview.is_none()))
        .write(|b, v| {
            b.preview = Some(from_json("preview", &v)?);
            Ok(())
        }),
    LinkField::named("expired_url", "Page once expired")
        .in_history()
        .read(|l| l.expired_url.clone().unwrap_or_default())
        .write(|b, v| {
            b.expired_url = Some(v);
            Ok(())
        }),
    LinkField::named("interstitial", "Interstitial")
        .in_history()
        .read(|l| l.interstitial.to_string())
        .write(|b, v| {
            b.interstitial = Some(flag("interstitial", &v)?);
            Ok(())
        }),
    LinkField::named("record_clicks", "Clicks recorded")
        .in_history()
        .read(|l| l.record_clicks.to_string())
        .write(|b, v| {
            b.record_clicks = Some(flag("record_clicks", &v)?);
            Ok(())
        }),
    LinkField::named("max_visits", "Visit limit")
        .in_history()
        .read(|l| l.max_visits.map(|n| n.to_string()).unwrap_or_default())
        .write(|b, v| {
            b.max_visits = Some(
                v.parse()
                    .map_err(|_| format!("max_visits: {v:?} is not a whole number"))?,
            );
            Ok(())
        }),
    LinkField::named("exhausted", "Visit limit reached")
        .in_history()
        .read(|l| l.exhausted.to_string()),
    LinkField::named("access", "Access")
        .in_history()
        .read(|l| l.access.as_str().to_owned())
        .write(|b, v| {
            b.access = Some(match v.to_ascii_lowercase().as_str() {
                "public" => AccessMode::Public,
                "signed" => AccessMode::Signed,
                "password" => AccessMode::Password,
                _ => {
                    return Err(format!(
                        "access: {v:?} is neither public, signed nor password"
                    ))
                }
            });
            Ok(())
        }),
    LinkField::named("scanner_check", "Scanners counted as bots")
        .in_history()
        .read(|l| l.scanner_check.to_string())
        .write(|b, v| {
            b.scanner_check = Some(flag("scanner_check", &v)?);
            Ok(())
        }),
    LinkField::named("note", "Team note")
        .in_history()
        .typed()
        .read(|l| l.note.clone().unwrap_or_default())
        .write(|b, v| {
            b.note = Some(v);
            Ok(())
        })
        .change(|b, v| b.note = Some(v)),
    // Never shown, never exported: a file may carry a link's password for `import`.
    LinkField::named("password", "Password").write(|b, v| {
        b.password = Some(Password::new(v));
        Ok(())
    }),
];

/// The field called `name`.
pub fn field(name: &str) -> Option<&'static LinkField> {
    LINK_FIELDS.iter().find(|f| f.name == name)
}

/// The fields a link's history shows.
pub fn in_history() -> impl Iterator<Item = &'static LinkField> {
    LINK_FIELDS.iter().filter(|f| f.history)
}

/// The fields `export` writes, in order.
pub fn exported() -> impl Iterator<Item = &'static LinkField> {
    LINK_FIELDS.iter().filter(|f| f.read.is_some())
}

/// The fields `import` reads.
pub fn imported() -> impl Iterator<Item = &'static LinkField> {
    LINK_FIELDS.iter().filter(|f| f.write.is_some())
}

/// The fields the dashboard's form shows as text inputs of their own.
pub fn in_form() -> impl Iterator<Item = &'static LinkField> {
    LINK_FIELDS.iter().filter(|f| f.change.is_some())
}

/// `link`'s fields as the cells of one `export` row.
pub fn csv_row(link: &LinkView) -> Vec<String> {
    exported()
        .map(|f| {
            let text = f.text(link);
            if f.typed {
                neutralized(&text)
            } else {
                text
            }
        })
        .collect()
}

/// A cell a spreadsheet would run as a formula (`=HYPERLINK(…)`, `+`, `-`, `@`, or a
/// leading tab or carriage return) gets a leading `'`, which spreadsheets show as text
/// and `import` takes off again (OWASP's advice for CSV injection).
pub fn neutralized(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_owned()
    }
}

/// What `import` makes of a cell `export` wrote: [`neutralized`] undone.
pub fn unneutralized(cell: String) -> String {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest.to_owned(),
        _ => cell,
    }
}

/// Comma-separated values, each trimmed, empty ones left out.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

fn flag(name: &str, text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("{name}: {text:?} is neither true nor false")),
    }
}

/// A structured field as compact JSON, empty when the link has none.
fn json<T: serde::Serialize>(value: &T, none: bool) -> String {
    if none {
        String::new()
    } else {
        serde_json::to_string(value).unwrap_or_default()
    }
}

fn from_json<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_exported_as_text_and_imported_as_they_were() {
        for formula in [
            "=HYPERLINK(\"http://evil\",\"x\")",
            "+1",
            "-2",
            "@SUM(A1)",
            "\tx",
        ] {
            let cell = neutralized(formula);
            assert!(cell.starts_with('\''), "{cell}");
            assert_eq!(unneutralized(cell), formula);
        }
        assert_eq!(neutralized("Spring sale"), "Spring sale");
        assert_eq!(unneutralized("'quoted".into()), "'quoted");
    }

    #[test]
    fn every_name_is_one_field_and_an_export_can_be_read_back() {
        let mut names: Vec<&str> = LINK_FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LINK_FIELDS.len(), "a name given twice");
        // What the form edits as text it can also create with, and export shows.
        for f in in_form() {
            assert!(f.write.is_some() && f.read.is_some(), "{}", f.name);
        }
        // Every field `import` reads but the password is one `export` writes.
        for f in imported().filter(|f| f.name != "password") {
            assert!(f.read.is_some(), "{}", f.name);
        }
    }

    /// Spreadsheets and scripts read an export by position, and a link's history shows
    /// the same fields release after release: a new field goes last.
    #[test]
    fn the_exports_columns_and_the_historys_fields_keep_their_places() {
        let exported: Vec<&str> = exported().map(|f| f.name).collect();
        assert_eq!(
            exported,
            [
                "short_url",
                "domain",
                "code",
                "target_url",
                "status",
                "redirect",
                "expires_at",
                "title",
                "tags",
                "forward_query",
                "code_kind",
                "version",
                "created_at",
                "updated_at",
                "rules",
                "split",
                "preview",
                "expired_url",
                "interstitial",
                "record_clicks",
                "max_visits",
                "exhausted",
                "access",
                "scanner_check",
                "note",
            ]
        );
        let history: Vec<&str> = in_history().map(|f| f.name).collect();
        assert_eq!(
            history,
            [
                "target_url",
                "status",
                "redirect",
                "expires_at",
                "title",
                "tags",
                "forward_query",
                "rules",
                "split",
                "preview",
                "expired_url",
                "interstitial",
                "record_clicks",
                "max_visits",
                "exhausted",
                "access",
                "scanner_check",
                "note",
            ]
        );
    }

    #[test]
    fn bad_text_names_its_field() {
        for (name, text) in [
            ("redirect", "moved"),
            ("forward_query", "yes"),
            ("max_visits", "ten"),
            ("access", "friends"),
            ("rules", "[{"),
        ] {
            let write = field(name).and_then(|f| f.write).expect(name);
            let refused = write(&mut CreateLink::default(), text.into()).expect_err(name);
            assert!(refused.starts_with(&format!("{name}: ")), "{refused}");
        }
    }
}
