// The small toolkit the dashboard scenarios are written with: configuration from the
// environment, Chromium launch, a JSON API client, named steps, and checks that fail with
// a message saying what was expected and what was seen. playwright-core has no assertion
// library (that lives in @playwright/test, which would also want its own browsers), so the
// few checks needed are here.
import { chromium } from 'playwright-core';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// How long one page action or expectation may take, and how long a live update (a worker
// starting up, a task running) may take to show. Generous: they bound a failure, they do
// not measure speed.
export const ACTION_TIMEOUT_MS = 10_000;
export const LIVE_TIMEOUT_MS = 30_000;

export class CheckFailed extends Error {}

export function fail(message) {
  throw new CheckFailed(message);
}

export function check(condition, message) {
  if (!condition) fail(message);
}

export function log(message) {
  console.log(`  ${message}`);
}

function required(name) {
  const v = process.env[name];
  if (!v) fail(`${name} is not set (see e2e/dashboard_test.go for how the test is run)`);
  return v;
}

export function loadConfig() {
  // A relative ROTA_ARTIFACTS_DIR is read from the repository's root, as the Go test does.
  const artifacts = path.resolve(repoRoot, process.env.ROTA_ARTIFACTS_DIR || 'artifacts');
  return {
    url: required('ROTA_URL').replace(/\/$/, ''),
    token: required('ROTA_TOKEN'),
    fixtureURL: required('ROTA_FIXTURE_URL').replace(/\/$/, ''),
    screenshotDir: path.join(artifacts, 'dashboard'),
    chromium: process.env.ROTA_CHROMIUM || '/usr/bin/chromium',
  };
}

// step runs one named part of the scenario and logs it, so a failure's output says where.
export async function step(name, fn) {
  console.log(`- ${name}`);
  const started = Date.now();
  await fn();
  log(`ok (${Date.now() - started} ms)`);
}

// launchBrowser starts Chromium with a fresh, empty profile. The background-networking
// flags matter on a machine without internet: without them Chromium keeps opening
// connections that are refused.
export async function launchBrowser(cfg) {
  const profile = await mkdtemp(path.join(tmpdir(), 'rota-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: cfg.chromium,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox', // tests run as root in CI
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(ACTION_TIMEOUT_MS);
  return {
    context,
    async close() {
      await context.close().catch(() => {});
      await rm(profile, { recursive: true, force: true });
    },
  };
}

// apiClient calls the JSON API with the bearer token; call() fails the run when the
// answer's status is not the one wanted.
export function apiClient(cfg) {
  async function call(method, urlPath, body, wantStatus = 200) {
    const res = await fetch(cfg.url + urlPath, {
      method,
      headers: {
        Authorization: `Bearer ${cfg.token}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    check(res.status === wantStatus, `API ${method} ${urlPath}: status ${res.status}, want ${wantStatus}: ${text}`);
    return text ? JSON.parse(text) : null;
  }
  return {
    call,
    get: (p) => call('GET', p),
    task: (id) => call('GET', `/api/tasks/${id}`),
    attempts: async (id) => (await call('GET', `/api/tasks/${id}/attempts`)).attempts,
    schedule: (name) => call('GET', `/api/schedules/${encodeURIComponent(name)}`),
  };
}

// waitUntil polls fn until it returns a truthy value, which it returns. describe() says
// what was last seen when time runs out.
export async function waitUntil(what, fn, { timeout = LIVE_TIMEOUT_MS, interval = 200, describe } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) {
      const last = describe ? await describe() : '';
      fail(`timed out after ${timeout} ms waiting for ${what}${last ? ` (last seen: ${last})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

// textOf reads an element's trimmed text, or null when it is not on the page.
export async function textOf(page, selector) {
  return page.evaluate((sel) => document.querySelector(sel)?.textContent.trim() ?? null, selector);
}

// waitForText waits until the first element matching selector reads one of wanted.
export async function waitForText(page, selector, wanted, { timeout = ACTION_TIMEOUT_MS } = {}) {
  const list = [].concat(wanted);
  try {
    await page.waitForFunction(
      ([sel, want]) => want.includes(document.querySelector(sel)?.textContent.trim()),
      [selector, list],
      { timeout, polling: 100 },
    );
  } catch (err) {
    if (err instanceof CheckFailed || !/Timeout/i.test(String(err))) throw err;
    const seen = await textOf(page, selector).catch(() => '?');
    fail(`${selector} reads ${JSON.stringify(seen)} after ${timeout} ms, want ${list.map((w) => JSON.stringify(w)).join(' or ')} (page ${page.url()})`);
  }
}

// expectVisible fails unless selector shows up on the page.
export async function expectVisible(page, selector, what) {
  try {
    await page.locator(selector).first().waitFor({ state: 'visible' });
  } catch {
    fail(`${what}: no visible ${selector} on ${page.url()}`);
  }
}

export async function screenshot(cfg, page, name) {
  await mkdir(cfg.screenshotDir, { recursive: true });
  const file = path.join(cfg.screenshotDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  log(`screenshot ${path.relative(repoRoot, file) || file}`);
}

// pathOf is a page URL's path and query, for comparing where a page ended up.
export function pathOf(page) {
  const u = new URL(page.url());
  return { path: u.pathname, next: u.searchParams.get('next') };
}
