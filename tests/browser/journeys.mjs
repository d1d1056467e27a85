// The dashboard's journeys in a real browser: Debian's Chromium driven by playwright-core
// against a running Hop (scripts/dev: the origin with its dashboard, the edge under
// `wrangler dev`). Run by tests/tests/e2e/dashboard_browser.rs, which starts Hop and
// passes where it answers:
//
//   HOP_DASHBOARD   the dashboard's URL          HOP_EDGE      the edge's URL
//   HOP_EMAIL       an operator, admin of HOP_OWNER, and HOP_PASSWORD its password
//   HOP_CHROMIUM    the browser to drive          HOP_SHOTS     where screenshots go
//
// Every page is checked by axe-core (no serious or critical violation) and must load
// without a Content-Security-Policy violation or a script error. Exits non-zero, saying
// which step failed, at the first broken promise.

import { chromium } from "playwright-core";
import { createRequire } from "node:module";
import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const DASH = env("HOP_DASHBOARD");
const EDGE = env("HOP_EDGE");
const OWNER = env("HOP_OWNER");
const SHOTS = env("HOP_SHOTS");
mkdirSync(SHOTS, { recursive: true });

const IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1";
const MARKETER = "marketer@example.com";
const VIEWER = "viewer@example.com";
const NEW_PASSWORD = "a long marketing password";

let step = "starting";
function check(condition, what) {
  if (!condition) throw new Error(`${step}: ${what}`);
}

const browser = await chromium.launch({
  executablePath: env("HOP_CHROMIUM"),
  // Root in CI: Chromium's sandbox needs an unprivileged user.
  args: ["--no-sandbox"],
});

/** A browser of its own (cookies apart), whose pages fail the run on a CSP violation or
 * a script error. */
async function person(name) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") page.problems.push(`${name}: console: ${m.text()}`);
  });
  page.on("pageerror", (e) => page.problems.push(`${name}: script: ${e.message}`));
  return { context, page };
}

function clean(page) {
  check(page.problems.length === 0, `the page reported problems:\n${page.problems.join("\n")}`);
}

// axe runs in the very page the person sees (a POST's answer included): evaluated
// through the DevTools protocol, which the page's CSP does not govern.
const checked = new Set();
async function accessible(page, label) {
  if (checked.has(label)) return;
  checked.add(label);
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(
    bad.length === 0,
    `axe on ${label} (${new URL(page.url()).pathname}):\n` +
      bad.map((v) => `  ${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`).join("\n"),
  );
}

async function signIn(page, email, password) {
  await page.goto(`${DASH}/login`);
  await accessible(page, "sign-in");
  // By keyboard alone: the first Tab reaches "skip to content", which moves focus to
  // the main content; from there the form is filled and sent with keys.
  await page.keyboard.press("Tab");
  check(await page.evaluate(() => document.activeElement.classList.contains("skip")), "the first Tab reaches the skip link");
  await page.keyboard.press("Enter");
  await page.keyboard.press("Tab");
  check(await page.evaluate(() => document.activeElement.id === "email"), "after skipping, Tab reaches the email field");
  await page.keyboard.type(email);
  await page.keyboard.press("Tab");
  await page.keyboard.type(password);
  await page.keyboard.press("Enter");
  await page.waitForLoadState("load");
  check(!page.url().endsWith("/login"), `${email} is not signed in: ${await page.textContent("main")}`);
}

/** An invitation link made on the members page for `email` as `role`. */
async function invite(page, email, role) {
  await page.goto(`${DASH}/o/${OWNER}/members`);
  await accessible(page, "members");
  await page.fill("#email", email);
  await page.selectOption("#role", role);
  await page.click("text=Make an invitation link");
  const link = await page.inputValue("input[aria-label='Invitation link']");
  check(link.includes("/invite/"), `no invitation link shown: ${link}`);
  return link;
}

async function accept(link, email) {
  const { context, page } = await person(email);
  await page.goto(link);
  await accessible(page, "invitation");
  await page.fill("#password", NEW_PASSWORD);
  await page.click("button[type=submit]");
  await page.waitForLoadState("load");
  check((await page.textContent("body")).includes(OWNER), `${email} did not join ${OWNER}`);
  return { context, page };
}

/** Polls `probe` until it returns true, for at most `seconds`: for what happens on its
 * own time (a click travelling from the edge's queue to the origin's rollups). */
async function eventually(seconds, what, probe) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${step}: ${what} within ${seconds}s`);
}

try {
  step = "the admin signs in and invites a marketer and a viewer";
  const admin = await person("admin");
  await signIn(admin.page, env("HOP_EMAIL"), env("HOP_PASSWORD"));
  check(new URL(admin.page.url()).pathname === `/o/${OWNER}`, `signed in to ${admin.page.url()}`);
  await accessible(admin.page, "overview");
  const marketerLink = await invite(admin.page, MARKETER, "editor");
  const viewerLink = await invite(admin.page, VIEWER, "viewer");
  await admin.page.goto(`${DASH}/o/${OWNER}/keys`);
  await admin.page.fill("#name", "A script");
  await admin.page.click("button:text('Make the key')");
  await admin.page.waitForLoadState("load");
  check((await admin.page.inputValue("input[aria-label='The new key']")).startsWith("hop_"), "the new key is shown");
  await accessible(admin.page, "API keys");
  for (const [path, label] of [["/admin", "administration"], ["/admin/bans", "bans"], ["/admin/domains", "domains"], ["/admin/users", "users"]]) {
    await admin.page.goto(`${DASH}${path}`);
    await accessible(admin.page, label);
  }
  clean(admin.page);

  step = "the marketer joins and creates a link with a rule and a split";
  const marketer = await accept(marketerLink, MARKETER);
  const m = marketer.page;
  await m.goto(`${DASH}/o/${OWNER}/links/new`);
  await accessible(m, "new link");
  await m.fill("#target_url", "https://shop.example/spring");
  await m.fill("#code", "spring-launch");
  // The alias check answers as it is typed (htmx).
  await m.waitForSelector("#alias-state .notice");
  await m.fill("#rule-0-target", "https://apps.example/ios");
  await m.check("#rule-0-device-ios");
  await m.fill("#variant-0-target", "https://shop.example/a");
  await m.fill("#variant-0-weight", "50");
  await m.fill("#variant-1-target", "https://shop.example/b");
  await m.fill("#variant-1-weight", "50");
  await m.click("button:text('Create')");
  await m.waitForLoadState("load");
  check(m.url().endsWith("/links/localhost/spring-launch"), `not on the new link's page: ${m.url()}`);
  await accessible(m, "link page");
  check(await m.isChecked("#rule-0-device-ios"), "the rule's device is not shown back");

  step = "the tester says what an iPhone gets";
  await m.click("text=What would a visit get?");
  await m.waitForLoadState("load");
  await accessible(m, "tester");
  await m.selectOption("#agent", "iphone");
  await m.click("button:text('Try it')");
  await m.waitForSelector("#tested h2");
  check((await m.textContent("#tested")).includes("Sent to https://apps.example/ios"), "the tester's verdict");

  step = "an iPhone visiting at the edge follows the rule";
  await eventually(90, "the edge to send an iPhone to the rule's target", async () => {
    const res = await fetch(`${EDGE}/spring-launch`, { redirect: "manual", headers: { "user-agent": IPHONE } });
    return res.status === 302 && res.headers.get("location") === "https://apps.example/ios";
  });

  step = "the pages visitors see are styled and accessible";
  for (const [code, fields] of [
    ["leave-check", async () => m.check("#interstitial")],
    ["pass-check", async () => { await m.check("#access-password"); await m.fill("#password", "correct horse battery"); }],
  ]) {
    await m.goto(`${DASH}/o/${OWNER}/links/new`);
    await m.fill("#target_url", "https://shop.example/visitor");
    await m.fill("#code", code);
    await fields();
    await m.click("button:text('Create')");
    await m.waitForLoadState("load");
    check(m.url().endsWith(`/links/localhost/${code}`), `${code} was not created: ${await m.textContent("main")}`);
  }
  const visitor = await person("visitor");
  for (const [code, label, heading] of [
    ["no-such-link-here", "visitor: not found", "Not found"],
    ["leave-check", "visitor: interstitial", "You are about to leave"],
    ["pass-check", "visitor: password form", "Password required"],
  ]) {
    await eventually(90, `the edge's page for ${code}`, async () => {
      await visitor.page.goto(`${EDGE}/${code}`);
      return (await visitor.page.textContent("h1")) === heading;
    });
    await accessible(visitor.page, label);
  }
  await visitor.page.screenshot({ path: join(SHOTS, "visitor-password.png") });
  await visitor.context.close();

  step = "the click shows in the link's analytics";
  await eventually(120, "the edge's click to be counted", async () => {
    await m.goto(`${DASH}/o/${OWNER}/links/localhost/spring-launch/stats?range=24h`);
    const people = await m.textContent(".totals div:first-child dd");
    return Number(people) >= 1;
  });
  await accessible(m, "analytics");
  check((await m.$$("svg rect")).length > 0, "the chart has bars");
  await m.screenshot({ path: join(SHOTS, "dashboard-analytics.png"), fullPage: true });

  step = "a bulk tag of three links reports the one changed meanwhile";
  for (const code of ["bulk-one", "bulk-two"]) {
    await m.goto(`${DASH}/o/${OWNER}/links/new`);
    await m.fill("#target_url", `https://shop.example/${code}`);
    await m.fill("#code", code);
    await m.click("button:text('Create')");
    await m.waitForLoadState("load");
  }
  await m.goto(`${DASH}/o/${OWNER}/links`);
  await accessible(m, "links");
  for (const code of ["spring-launch", "bulk-one", "bulk-two"]) {
    await m.check(`input[name=select][value^='localhost/${code}@']`);
  }
  // Meanwhile, the admin changes one of them.
  await admin.page.goto(`${DASH}/o/${OWNER}/links/localhost/bulk-two`);
  await admin.page.fill("#title", "Changed by the admin");
  await admin.page.click("button:text('Save')");
  await admin.page.waitForLoadState("load");
  await m.selectOption("#action", "add_tag");
  await m.fill("#bulk-tag", "spring");
  await m.click("#bulk button[type=submit]");
  await m.waitForLoadState("load");
  const summary = await m.textContent("[role=status]");
  check(summary.startsWith("2 changed, 1 changed by someone else meanwhile"), `the summary: ${summary}`);
  check((await m.textContent("tr.result.conflict")).includes("localhost/bulk-two"), "the conflict's row");
  await accessible(m, "bulk result");
  clean(m);

  step = "the history says who changed a link, and a revert undoes it";
  await m.goto(`${DASH}/o/${OWNER}/links/localhost/bulk-two/history`);
  await accessible(m, "history");
  const changed = await m.textContent("tbody tr:first-child");
  check(changed.includes("Changed by the admin"), `the newest change: ${changed}`);
  await m.click("button:text('Revert to version 1')");
  await m.waitForLoadState("load");
  const reverted = await m.textContent("tbody tr:first-child");
  check(reverted.includes("reverted") && reverted.includes("to version 1"), `the revert: ${reverted}`);
  clean(m);

  step = "a viewer reads but cannot edit";
  const viewer = await accept(viewerLink, VIEWER);
  const v = viewer.page;
  await v.goto(`${DASH}/o/${OWNER}/links/localhost/spring-launch`);
  check((await v.$("button:text('Save')")) === null, "a viewer is offered Save");
  check(await v.isDisabled("#rule-0-target"), "a viewer's rule fields are not disabled");
  clean(v);

  step = "with JavaScript off, sign in, find, create, edit and delete a link";
  {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const p = await context.newPage();
    await p.goto(`${DASH}/login`);
    await p.fill("#email", env("HOP_EMAIL"));
    await p.fill("#password", env("HOP_PASSWORD"));
    await p.click("button[type=submit]");
    await p.waitForLoadState("load");
    await p.goto(`${DASH}/o/${OWNER}/links/new`);
    await p.fill("#target_url", "https://shop.example/no-js");
    await p.fill("#code", "no-js-link");
    await p.fill("#rule-0-target", "https://apps.example/no-js");
    await p.check("#rule-0-device-android");
    // "Add a rule" without JavaScript: the form comes back with one more row.
    await p.click("button[name=add][value=rule]");
    await p.waitForLoadState("load");
    check(await p.isVisible("#rule-1-target"), "no second rule row after Add a rule");
    await p.click("button:text('Create')");
    await p.waitForLoadState("load");
    check(p.url().endsWith("/links/localhost/no-js-link"), `not created without JavaScript: ${p.url()}`);
    await p.goto(`${DASH}/o/${OWNER}/links?q=no-js`);
    check((await p.textContent("table.links")).includes(`${EDGE}/no-js-link`), "the search finds it, by the short URL visitors follow");
    await p.goto(`${DASH}/o/${OWNER}/links/localhost/no-js-link`);
    await p.fill("#title", "Edited without scripts");
    await p.click("button:text('Save')");
    await p.waitForLoadState("load");
    check((await p.textContent("[role=status]")).includes("Saved."), "not saved without JavaScript");
    await p.click("button:text('Delete this link')");
    await p.waitForLoadState("load");
    check(p.url().endsWith(`/o/${OWNER}/links`), `not deleted without JavaScript: ${p.url()}`);
    await context.close();
  }

  step = "the screenshot of the links page";
  await admin.page.goto(`${DASH}/o/${OWNER}/links`);
  await admin.page.screenshot({ path: join(SHOTS, "dashboard-links.png") });

  step = "signing out ends the session";
  await m.click("button:text('Sign out')");
  await m.waitForLoadState("load");
  check(m.url().endsWith("/login"), `after signing out: ${m.url()}`);
  await m.goto(`${DASH}/o/${OWNER}/links`);
  check(m.url().endsWith("/login"), "the links page opens after signing out");
  clean(admin.page);
  console.log(`journeys: every step passed; axe checked ${checked.size} pages`);
} catch (e) {
  console.error(`journeys: FAILED at "${step}"\n${e.stack || e}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
