//! Private links: signed ones and password ones, and the answers to a posted password.

use super::*;

#[test]
fn a_private_link_shows_nothing_of_its_target_until_let_in() {
    let rec = private("https://secret.example/plans?x=1");
    for client in [ua(DESKTOP), ua(SLACKBOT), Client::default()] {
        let d = run_private(&rec, Some("t=1.abc"), client, false);
        assert_eq!((d.status, d.outcome), (403, Outcome::Private));
        assert_eq!(d.header("location"), None);
        let body = d.body.text().unwrap_or_default();
        assert!(!body.contains("secret.example"), "{body}");
        assert!(!body.contains("og:"), "{body}");
    }
    // Let in: the target, with the visitor's query but not the token.
    let d = run_private(&rec, Some("a=1&t=1800000100.abc&b=2"), ua(DESKTOP), true);
    assert_eq!(d.status, 302);
    assert_eq!(
        d.header("location"),
        Some("https://secret.example/plans?x=1&a=1&b=2")
    );
    // Even let in, a crawler gets no preview of a private link.
    let d = run_private(&rec, None, ua(SLACKBOT), true);
    assert_eq!(d.status, 302);
    // A refused visit is not a click (it would use up a visit limit).
    let refused = run_private(&rec, None, ua(DESKTOP), false);
    assert!(!crate::clicks::counts_as_click(
        Method::Get,
        refused.outcome
    ));
    // A public link ignores what the caller says of access.
    let d = run_private(&active("https://e.example/"), None, ua(DESKTOP), false);
    assert_eq!(d.status, 302);
    // Bans and ends still come first.
    let gone = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..rec.clone()
    };
    assert_eq!(run_private(&gone, None, ua(DESKTOP), false).status, 410);
}

#[test]
fn a_password_link_shows_its_form_and_takes_posts_only_to_it() {
    let rec = password_link("https://secret.example/plans");
    let route = route();
    let at = |method, granted| {
        let v = Visit {
            access_granted: granted,
            legacy_known: false,
            ..visit(&route, method, Some("a=1"))
        };
        let settings = DomainSettings::default();
        let d = decide(&v, Some(&rec), &Denylist::default(), &settings);
        let prepared = PreparedRecord::new(rec.clone());
        assert_eq!(
            decide_prepared(&v, Some(&prepared), &Denylist::default(), &settings),
            d
        );
        d
    };
    for method in [Method::Get, Method::Post] {
        let d = at(method, false);
        assert_eq!((d.status, d.outcome), (403, Outcome::Private));
        let form = crate::password::form(&route, Form::First);
        assert_eq!(d.body, Body::Page(form));
        assert_eq!(
            d.header("content-security-policy"),
            Some(crate::password::FORM_POLICY)
        );
        assert_eq!(d.header("location"), None);
        assert_eq!(
            d.asks_password(method, rec.access.as_ref()),
            method == Method::Post
        );
    }
    assert_eq!(at(Method::Head, false).body, Body::Empty);
    // Let in by the cookie: a `GET` goes on, a `POST` is sent to look again.
    let d = at(Method::Get, true);
    assert_eq!(
        d.header("location"),
        Some("https://secret.example/plans?a=1")
    );
    let d = at(Method::Post, true);
    assert_eq!(
        (d.status, d.header("location")),
        (303, Some("/7Fk3aQx?a=1"))
    );
    assert!(!d.asks_password(Method::Post, rec.access.as_ref()));
    // A `POST` to any other link, or to no link, is 405 as before.
    for record in [
        Some(active("https://e.example/")),
        Some(private("https://e.example/")),
        None,
    ] {
        let d = run(record.as_ref(), Method::Post, None, &Denylist::default());
        assert_eq!(d.status, 405, "{record:?}");
    }
    assert_eq!(reject_early(Method::Post, "7Fk3aQx"), None);
    assert_eq!(
        decide_root(
            Method::Post,
            Some((&DomainSettings::default(), &Denylist::default()))
        )
        .status,
        405
    );
    // Gone or banned, the form is not shown, nor a password taken.
    let gone = EdgeRecord {
        status: EdgeStatus::Deleted,
        ..rec.clone()
    };
    let d = run(Some(&gone), Method::Post, None, &Denylist::default());
    assert_eq!(d.status, 410);
    assert!(!d.asks_password(Method::Post, gone.access.as_ref()));
}

#[test]
fn the_answer_to_a_posted_password_never_names_the_target() {
    let route = route();
    let right = Decision::password_tried(&route, Some("a=1"), Tried::Right("hop_pass=x".into()));
    assert_eq!(right.status, 303);
    assert_eq!(right.header("location"), Some("/7Fk3aQx?a=1"));
    assert_eq!(right.header("set-cookie"), Some("hop_pass=x"));
    assert_eq!(right.header("cache-control"), Some("no-store"));
    let wrong = Decision::password_tried(&route, None, Tried::Wrong);
    assert_eq!(
        (wrong.status, wrong.body.clone()),
        (403, Body::Page(crate::password::form(&route, Form::Wrong)))
    );
    let limited = Decision::password_tried(&route, None, Tried::Limited(7));
    assert_eq!(
        (limited.status, limited.header("retry-after")),
        (429, Some("7"))
    );
    assert_eq!(
        Decision::password_tried(&route, None, Tried::Missing).status,
        400
    );
    for d in [right, wrong, limited] {
        assert!(!crate::clicks::counts_as_click(Method::Post, d.outcome));
        assert_eq!(d.outcome, Outcome::Private);
    }
}
