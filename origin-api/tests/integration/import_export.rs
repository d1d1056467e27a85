//! `import` and `export` against a served origin, on SQLite and PostgreSQL: rows become
//! links exactly once however often the import runs, and the export gives them back.

use crate::common::{app_state_with, TestDb};
use indicatif::ProgressBar;
use origin_api::api_keys;
use origin_api::cli::api_client::ApiClient;
use origin_api::cli::export::{export, ExportOptions};
use origin_api::cli::import::{import, ImportError, ImportOptions, Summary};
use origin_api::config::ExportFormat;
use origin_api::model::time::now_ms;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// A served origin and a client of it with a fresh key.
pub(crate) struct Served {
    pub(crate) client: ApiClient,
    pub(crate) origin: String,
    server: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Runs an import through this origin.
    async fn import(&self, options: &ImportOptions) -> Result<Summary, ImportError> {
        import(&self.client, &self.origin, options, &ProgressBar::hidden()).await
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn serve(t: &TestDb, owner: &str) -> Served {
    serve_with(t, owner, &[]).await
}

/// [`serve`], the origin given `flags`.
pub(crate) async fn serve_with(t: &TestDb, owner: &str, flags: &[&str]) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("test setup");
    let origin = format!("http://{}/", listener.local_addr().expect("test setup"));
    let state = app_state_with(t, flags);
    let (key, token) = api_keys::issue(owner, "import", &api_keys::Grant::default(), now_ms())
        .expect("test setup");
    origin_api::store::api_keys::insert(state.db(), &key)
        .await
        .expect("test setup");
    let server = tokio::spawn(async move {
        origin_api::serve(listener, state, std::future::pending())
            .await
            .expect("test setup");
    });
    let client = ApiClient::new(
        origin.parse().expect("test setup"),
        &token,
        Duration::from_secs(5),
    )
    .expect("test setup");
    Served {
        client,
        origin,
        server,
    }
}

fn options(file: &Path) -> ImportOptions {
    ImportOptions {
        file: file.to_owned(),
        journal: None,
        domain: None,
        batch_size: 1000,
        retry_failed: false,
    }
}

async fn export_all(client: &ApiClient, format: ExportFormat) -> String {
    let mut out = Vec::new();
    let opts = ExportOptions {
        format,
        domain: None,
        tag: None,
        include_deleted: true,
    };
    export(client, &opts, &mut out, &ProgressBar::hidden())
        .await
        .expect("test setup");
    String::from_utf8(out).expect("test setup")
}

/// The export as target → (code, title, tags), checking no target appears twice.
fn by_target(csv_text: &str) -> HashMap<String, (String, String, String)> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().expect("test setup").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).expect("test setup");
    let (t, c, ti, ta) = (col("target_url"), col("code"), col("title"), col("tags"));
    let mut map = HashMap::new();
    for record in reader.records() {
        let r = record.expect("test setup");
        let previous = map.insert(
            r[t].to_owned(),
            (r[c].to_owned(), r[ti].to_owned(), r[ta].to_owned()),
        );
        assert!(previous.is_none(), "{} exported twice", &r[t]);
    }
    map
}

#[tokio::test]
async fn an_import_creates_each_row_once_however_often_it_runs_and_export_gives_them_back() {
    for t in TestDb::all("import").await {
        let served = serve(&t, "marketing").await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("links.csv");
        let mut csv_text = String::from("target_url,code,title,tags,expires_at\n");
        for i in 0..2500u32 {
            let code = if i.is_multiple_of(100) {
                format!("promo-{i}")
            } else {
                String::new()
            };
            csv_text.push_str(&format!(
                "https://dest.example/{i},{code},\"Row, {i}\",\"spring,row{i}\",\n"
            ));
        }
        // Refused rows: by the origin (bad URL, past expiry) and before sending (empty URL).
        csv_text.push_str("ftp://dest.example/x,,,,\n");
        csv_text.push_str("https://dest.example/old,,,,2001-01-01T00:00:00Z\n");
        csv_text.push_str(",,,,\n");
        std::fs::write(&file, &csv_text).unwrap();

        let first = served.import(&options(&file)).await.unwrap();
        assert_eq!(
            (first.rows, first.created, first.already, first.failed),
            (2503, 2500, 0, 3),
            "{}",
            t.kind()
        );
        let reasons: Vec<_> = first
            .failures
            .iter()
            .map(|(row, e)| (*row, e.as_str()))
            .collect();
        assert_eq!(reasons.len(), 3);
        assert_eq!(reasons[0].0, 2501);
        assert!(reasons[0].1.contains("target_url"), "{reasons:?}");
        assert!(reasons[1].1.contains("expires_at"), "{reasons:?}");
        assert!(reasons[2].1.contains("empty"), "{reasons:?}");

        let again = served.import(&options(&file)).await.unwrap();
        assert_eq!((again.created, again.already, again.failed), (0, 2500, 3));

        let exported = by_target(&export_all(&served.client, ExportFormat::Csv).await);
        assert_eq!(exported.len(), 2500, "{}", t.kind());
        let codes: HashSet<_> = exported.values().map(|(code, _, _)| code).collect();
        assert_eq!(codes.len(), 2500);
        for i in [0u32, 1, 999, 1000, 2499] {
            let (code, title, tags) = &exported[&format!("https://dest.example/{i}")];
            if i.is_multiple_of(100) {
                assert_eq!(code, &format!("promo-{i}"));
            }
            assert_eq!(title, &format!("Row, {i}"));
            assert_eq!(tags, &format!("spring,row{i}"));
        }
        let lines = export_all(&served.client, ExportFormat::Jsonl).await;
        assert_eq!(lines.lines().count(), 2500);
        let first_line: serde_json::Value =
            serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(
            first_line["target_url"], "https://dest.example/2499",
            "newest first"
        );

        // A fixed row is sent on the next run; nothing else is.
        std::fs::write(
            &file,
            csv_text.replace("ftp://dest.example/x", "https://dest.example/fixed"),
        )
        .unwrap();
        let fixed = served.import(&options(&file)).await.unwrap();
        assert_eq!((fixed.created, fixed.already, fixed.failed), (1, 2500, 2));
        drop(served);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_call_whose_answer_was_lost_is_replayed_not_repeated() {
    for t in TestDb::all("import-replay").await {
        let served = serve(&t, "marketing").await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("links.csv");
        let rows: String = (0..300)
            .map(|i| format!("https://dest.example/{i}\n"))
            .collect();
        std::fs::write(&file, format!("target_url\n{rows}")).unwrap();
        let mut opts = options(&file);
        opts.batch_size = 100;
        served.import(&opts).await.unwrap();

        // As if the importer died after the origin committed the last call but before the
        // journal recorded it: drop that line, and cut the one before it in half.
        let journal = dir.path().join("links.csv.hop-import");
        let text = std::fs::read_to_string(&journal).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "a header and three calls");
        let cut = &lines[2][..lines[2].len() / 2];
        std::fs::write(&journal, format!("{}\n{}\n{cut}", lines[0], lines[1])).unwrap();

        let resumed = served.import(&opts).await.unwrap();
        assert_eq!((resumed.already, resumed.failed), (100, 0));
        let exported = by_target(&export_all(&served.client, ExportFormat::Csv).await);
        assert_eq!(exported.len(), 300, "{}: no row created twice", t.kind());
        drop(served);
        t.cleanup().await;
    }
}

#[tokio::test]
async fn a_changed_row_or_a_malformed_file_is_refused_before_anything_is_sent() {
    let t = TestDb::sqlite().await;
    let served = serve(&t, "marketing").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("links.csv");
    std::fs::write(
        &file,
        "target_url\nhttps://a.example/\nhttps://b.example/\n",
    )
    .unwrap();
    served.import(&options(&file)).await.unwrap();

    std::fs::write(
        &file,
        "target_url\nhttps://a.example/\nhttps://changed.example/\nhttps://c.example/\n",
    )
    .unwrap();
    let changed = served.import(&options(&file)).await;
    assert!(
        matches!(changed, Err(ImportError::RowChanged { row: 2, .. })),
        "{changed:?}"
    );

    let other = dir.path().join("other.csv");
    std::fs::write(
        &other,
        "target_url,expires\nhttps://d.example/,2030-01-01T00:00:00Z\n",
    )
    .unwrap();
    let malformed = served.import(&options(&other)).await;
    let message = malformed.unwrap_err().to_string();
    assert!(
        message.contains("unknown column \"expires\"") && message.contains("nothing was sent"),
        "{message}"
    );

    assert_eq!(
        by_target(&export_all(&served.client, ExportFormat::Csv).await).len(),
        2
    );
    drop(served);
    t.cleanup().await;
}

#[tokio::test]
async fn export_shows_only_the_keys_owner_and_tombstones_on_request() {
    let t = TestDb::sqlite().await;
    let mine = serve(&t, "mine").await;
    let theirs = serve(&t, "theirs").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("links.csv");
    std::fs::write(
        &file,
        "target_url,code\nhttps://a.example/,gone\nhttps://b.example/,kept\n",
    )
    .unwrap();
    mine.import(&options(&file)).await.unwrap();
    let state = crate::common::app_state(&t);
    let link = origin_api::store::links::get(state.db(), "s.example", "gone")
        .await
        .unwrap()
        .unwrap();
    origin_api::links::delete_link(
        &state.links,
        link,
        None,
        origin_api::model::history::Actor::System,
    )
    .await
    .unwrap();

    assert_eq!(export_all(&theirs.client, ExportFormat::Jsonl).await, "");
    let mut live = Vec::new();
    let opts = ExportOptions {
        format: ExportFormat::Jsonl,
        domain: Some("s.example".into()),
        tag: None,
        include_deleted: false,
    };
    export(&mine.client, &opts, &mut live, &ProgressBar::hidden())
        .await
        .unwrap();
    let live = String::from_utf8(live).unwrap();
    assert_eq!(live.lines().count(), 1);
    assert!(live.contains("\"code\":\"kept\""));
    let all = export_all(&mine.client, ExportFormat::Jsonl).await;
    assert_eq!(all.lines().count(), 2);
    assert!(all
        .lines()
        .nth(1)
        .unwrap()
        .contains("\"status\":\"deleted\""));
    drop((mine, theirs));
    t.cleanup().await;
}

/// An import onto a domain the registry does not hold creates nothing, and each row's
/// reason names the domain.
#[tokio::test]
async fn an_import_onto_an_unregistered_domain_creates_nothing_and_says_why() {
    let t = TestDb::sqlite().await;
    let served = serve(&t, "marketing").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("links.csv");
    std::fs::write(
        &file,
        "target_url,code\nhttps://dest.example/a,\nhttps://dest.example/b,promo\n",
    )
    .unwrap();
    let mut opts = options(&file);
    opts.domain = Some("nowhere.example".into());
    let summary = served.import(&opts).await.unwrap();
    assert_eq!((summary.created, summary.failed), (0, 2));
    for (_, reason) in &summary.failures {
        assert!(
            reason.contains("nowhere.example is not a registered domain"),
            "{reason}"
        );
    }
    assert_eq!(export_all(&served.client, ExportFormat::Jsonl).await, "");
    drop(served);
    t.cleanup().await;
}

/// Issue 17's fields travel both ways: a row's JSON cells (rules, split, preview) and
/// its plain ones become the link's, and the export writes them back as they are kept.
#[tokio::test]
async fn rules_splits_previews_limits_and_access_are_imported_and_exported() {
    for t in TestDb::all("import rich").await {
        let served = serve(&t, "marketing").await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rich.csv");
        let rules = r#"[{"when":{"device":["ios"]},"target_url":"https://apps.example/ios"}]"#;
        let split = r#"[{"target_url":"https://a.example/","weight":50},{"target_url":"https://b.example/","weight":50}]"#;
        let preview = r#"{"title":"Spring","description":"Sale"}"#;
        let mut w = csv::Writer::from_path(&file).unwrap();
        w.write_record([
            "target_url",
            "code",
            "rules",
            "split",
            "preview",
            "expired_url",
            "interstitial",
            "record_clicks",
            "max_visits",
            "access",
        ])
        .unwrap();
        w.write_record([
            "https://shop.example/",
            "rich-link",
            rules,
            split,
            preview,
            "https://shop.example/ended",
            "true",
            "false",
            "100",
            "signed",
        ])
        .unwrap();
        w.write_record([
            "https://shop.example/plain",
            "plain-link",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ])
        .unwrap();
        w.flush().unwrap();
        let summary = served.import(&options(&file)).await.expect("import");
        assert_eq!(summary.created, 2, "{}: {summary:?}", t.kind());

        let link = origin_api::store::links::get(&t.db, "s.example", "rich-link")
            .await
            .unwrap()
            .expect("imported");
        let o = &link.options;
        assert_eq!(o.rules.len(), 1);
        assert_eq!(o.split.as_ref().map(|s| s.variants().len()), Some(2));
        assert_eq!(
            o.preview.as_ref().and_then(|p| p.title.as_deref()),
            Some("Spring")
        );
        assert_eq!(o.expired_url.as_deref(), Some("https://shop.example/ended"));
        assert!(o.interstitial && o.no_clicks && o.access.is_some());
        assert_eq!(o.max_visits, Some(100));
        let plain = origin_api::store::links::get(&t.db, "s.example", "plain-link")
            .await
            .unwrap()
            .expect("imported");
        assert_eq!(plain.options, origin_api::model::LinkOptions::default());

        let exported = export_all(&served.client, ExportFormat::Csv).await;
        let mut reader = csv::Reader::from_reader(exported.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let rows: Vec<HashMap<String, String>> = reader
            .records()
            .map(|r| {
                headers
                    .iter()
                    .zip(r.unwrap().iter())
                    .map(|(h, v)| (h.to_owned(), v.to_owned()))
                    .collect()
            })
            .collect();
        let rich = rows
            .iter()
            .find(|r| r["code"] == "rich-link")
            .expect("exported");
        assert_eq!(rich["rules"], rules);
        assert_eq!(rich["split"], split);
        assert_eq!(rich["preview"], preview);
        assert_eq!(
            (
                rich["interstitial"].as_str(),
                rich["record_clicks"].as_str(),
                rich["max_visits"].as_str(),
                rich["access"].as_str()
            ),
            ("true", "false", "100", "signed")
        );
        let plain = rows
            .iter()
            .find(|r| r["code"] == "plain-link")
            .expect("exported");
        assert_eq!(
            (plain["rules"].as_str(), plain["access"].as_str()),
            ("", "public")
        );
        drop(served);
        t.cleanup().await;
    }
}

/// The team's note is a column like any other (added last, so an export's earlier
/// columns keep their places): imported as typed, exported as text a spreadsheet never
/// runs.
#[tokio::test]
async fn a_note_is_imported_and_exported_as_text_never_as_a_formula() {
    for t in TestDb::all("import note").await {
        let served = serve(&t, "marketing").await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.csv");
        let formula = "=HYPERLINK(\"https://evil.example\",\"legal ok\")";
        let mut w = csv::Writer::from_path(&file).unwrap();
        w.write_record(["target_url", "code", "Note"]).unwrap();
        // As an export writes it: neutralized.
        w.write_record(["https://shop.example/a", "noted-a", &format!("'{formula}")])
            .unwrap();
        w.write_record(["https://shop.example/b", "noted-b", "Legal ok\nask Ana"])
            .unwrap();
        w.write_record(["https://shop.example/c", "noted-c", ""])
            .unwrap();
        w.flush().unwrap();
        let summary = served.import(&options(&file)).await.expect("import");
        assert_eq!(summary.created, 3, "{}: {summary:?}", t.kind());
        let note = |code: &'static str| {
            let db = &t.db;
            async move {
                origin_api::store::links::get(db, "s.example", code)
                    .await
                    .unwrap()
                    .expect("imported")
                    .options
                    .note
            }
        };
        assert_eq!(note("noted-a").await.as_deref(), Some(formula));
        assert_eq!(note("noted-b").await.as_deref(), Some("Legal ok\nask Ana"));
        assert_eq!(note("noted-c").await, None);

        let exported = export_all(&served.client, ExportFormat::Csv).await;
        let mut reader = csv::Reader::from_reader(exported.as_bytes());
        let headers = reader.headers().unwrap().clone();
        assert_eq!(headers.iter().next_back(), Some("note"), "{exported}");
        assert_eq!(headers.iter().next(), Some("short_url"), "{exported}");
        let cells: HashMap<String, String> = reader
            .records()
            .map(|r| r.unwrap())
            .map(|r| (r[2].to_owned(), r[headers.len() - 1].to_owned()))
            .collect();
        assert_eq!(cells["noted-a"], format!("'{formula}"), "{exported}");
        assert_eq!(cells["noted-b"], "Legal ok\nask Ana");
        assert_eq!(cells["noted-c"], "");
        drop(served);
        t.cleanup().await;
    }
}
