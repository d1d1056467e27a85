"""Drives a running origin of a previous release, for scripts/make-upgrade-fixture: the
data an upgrade must keep, and what each link must answer afterwards (written to the file
named by the first argument). Environment: ORIGIN, ADMIN, USER_KEY, EDGE (tokens)."""
import json
import os
import sys
import time
import urllib.error
import urllib.request

ORIGIN = os.environ["ORIGIN"]


def call(method, path, token, body=None, headers=None):
    req = urllib.request.Request(ORIGIN + path, method=method)
    req.add_header("Authorization", "Bearer " + token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, data) as res:
            text = res.read().decode()
            return res.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{method} {path}: {e.code} {e.read().decode()}")


admin, user, edge = os.environ["ADMIN"], os.environ["USER_KEY"], os.environ["EDGE"]
links = []


def create(body):
    status, link = call("POST", "/v1/links", user, body)
    assert status == 201, (status, link)
    return link


def expect(link, status, location=None):
    links.append({"domain": link["domain"], "code": link["code"], "status": status,
                  "location": location})


call("POST", "/v1/domains", admin,
     {"domain": "t.example", "shared": True, "alphabet": "base36", "code_length": 6})
for i in range(5):
    target = f"https://dest.example/generated/{i}"
    expect(create({"target_url": target}), 302, target)
other = create({"target_url": "https://dest.example/other", "domain": "t.example"})
expect(other, 302, "https://dest.example/other")
spring = create({"target_url": "https://dest.example/spring", "code": "spring",
                 "tags": ["campaign", "q2"], "title": "Spring"})
call("PATCH", "/v1/links/s.example/spring", user,
     {"target_url": "https://dest.example/spring-v2"}, {"If-Match": '"1"'})
expect(spring, 302, "https://dest.example/spring-v2")
later = create({"target_url": "https://dest.example/later", "expires_at": "2099-01-01T00:00:00Z"})
expect(later, 302, "https://dest.example/later")
gone = create({"target_url": "https://dest.example/gone"})
status, _ = call("DELETE", f"/v1/links/s.example/{gone['code']}", user)
expect(gone, 410)
evil = create({"target_url": "https://evil.example/phish"})
call("POST", "/v1/bans", admin, {"kind": "host", "host": "evil.example", "reason": "phishing"})
expect(evil, 403)

now = int(time.time() * 1000)
events = [{"event_id": f"fixture-{i}", "link": "s.example/spring", "version": 2, "at": now,
           "country": "DE", "referrer_host": "news.example",
           "device": "other" if i == 0 else "mobile", "bot": i == 0, "status": 302}
          for i in range(4)]
status, receipt = call("POST", "/v1/edge/clicks", edge, {"events": events})
assert receipt["counted"] == 4, receipt

with open(sys.argv[1], "w") as f:
    json.dump({"admin": admin, "user": user, "links": links,
               "spring": {"visits": 3, "bots": 1}}, f, indent=1)
    f.write("\n")
