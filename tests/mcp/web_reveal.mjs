// The reviewer's page in headless Chromium (Debian's, driven by playwright-core) on a held
// gated call whose view masks secrets (issue 28): the card says first that it masks, each
// mark gives its length, the secrets are nowhere on the page until the reviewer presses
// "Reveal the exact call", which shows the exact arguments with the ledger seq of the
// `reveal` entry. Prints TAP, numbered from FIRST (view_exact.py goes on counting after it).
// Then a held file edit's card (EDIT_SID) shows its edits again as a diff.
// Usage: node web_reveal.mjs REVIEW_BASE REVIEWER_TOKEN SESSION_ID SECRET FIRST EDIT_SID
import { chromium } from "playwright-core";
import { must, tap } from "./tap.mjs";

const [base, token, sid, secret, first, editSid] = process.argv.slice(2);
const WAIT = 30000; // generous: a condition, never a duration, is what is checked
const T = tap(Number(first) - 1), { ok, step } = T;

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
  args: process.getuid?.() === 0 ? ["--no-sandbox"] : [] });
const page = await (await browser.newContext()).newPage();
const pageErrors = [];
page.on("pageerror", (e) => pageErrors.push(e.message));
const card = page.locator(`article.request[data-sid="${sid}"]`);
try {
  await step("the reviewer logs in with a token and sees the held call's card", async () => {
    await page.goto(`${base}/review`);
    await page.locator("#login").waitFor({ timeout: WAIT });
    await page.fill('#login input[name="token"]', token);
    await page.press('#login input[name="token"]', "Enter");
    await card.waitFor({ timeout: WAIT });
  });
  await step("the card says first that its view masks, how much, and offers the reveal", async () => {
    const firstChild = card.locator(":scope > *").first();
    must(await firstChild.evaluate((e) => e.classList.contains("masked")), "the card's first element is not the masked note");
    const note = await firstChild.innerText();
    must(/hides 8 characters of secrets in 1 marked span/.test(note), `note: ${note}`);
    must(await firstChild.locator("button.reveal").isVisible(), "no Reveal button");
    return note.split("\n")[0].slice(0, 90);
  });
  await step("the marked span gives its length; the text around it is shown as it will run", async () => {
    const t = await card.innerText();
    must(t.includes("--password=[secret: 8 chars] --to prod"), `card: ${t.slice(0, 400)}`);
  });
  await step("the secret is nowhere on the page before the reveal", async () => {
    must(!(await page.content()).includes(secret), "the secret is in the page's HTML");
  });
  await step("Reveal shows the exact arguments and the reveal entry's ledger seq", async () => {
    await card.locator("button.reveal").click();
    const pre = card.locator(".revealed pre.exact");
    await pre.waitFor({ timeout: WAIT });
    const exact = await pre.innerText();
    must(exact.includes(`--password=${secret} --to prod`), `revealed: ${exact}`);
    const label = await card.locator(".revealed p.meta").innerText();
    const seq = /ledger seq (\d+)/.exec(label);
    must(seq, `label: ${label}`);
    must(await card.locator("button.reveal").count() === 0, "the button is still there");
    return `seq ${seq[1]}`;
  });
  await step("a file edit's card shows its edits as a diff (removed and added lines) after the arguments", async () => {
    const c = page.locator(`article.request[data-sid="${editSid}"]`);
    await c.waitFor({ timeout: WAIT });
    const d = c.locator("pre.edits");
    const del = await d.locator("span.del").allInnerTexts(), add = await d.locator("span.add").allInnerTexts();
    must(del.join("|") === "-replicas: 2|-port: 80" && add.join("|") === "+replicas: 9|+port: 80", `del ${del} add ${add}`);
    must((await d.locator("span.file").allInnerTexts()).join("|").includes("/srv/app/config.yml (after the call)"), "no file header");
  });
  ok(pageErrors.length === 0, `no script errors on the page (${pageErrors.join("; ").slice(0, 200)})`);
} finally {
  await browser.close();
}
process.exit(T.failed ? 1 : 0);
